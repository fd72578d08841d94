/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.h - one typed helper per backend slot.
 *
 * Call sites never spell a slot's signature or test it for NULL: they call
 * xdev_be_<table>_<slot>(record, ...), which passes the device's backend
 * context and reports XDEV_ERROR_NOT_SUPPORTED ("the cuda backend does not
 * implement fft.exec") when the backend leaves the slot out (or is an older
 * minor whose table ends before it). Slots that concern no device (host
 * memory, markers, communicator handles) take the backend. The helpers are
 * generated from the slot list (xdev/backend_slots.h). */
#ifndef XDEV_CORE_DISPATCH_H
#define XDEV_CORE_DISPATCH_H

#include "runtime/fault.h"
#include "runtime/registry.h"

/* The body of every helper: the slot or NOT_SUPPORTED, then the call (or,
 * while a test has armed the fault injector, maybe its injected failure).
 * An injected failure of a wait (a synchronize slot) comes after the wait,
 * as a backend reports an earlier asynchronous error when it synchronizes:
 * a wait that failed without waiting would let work the caller believes
 * finished or abandoned (a blocking copy into its stack) run after it. */
#define XDEV_DISPATCH(be, table, slot, ...)                                                        \
    do {                                                                                           \
        __typeof__((be)->api->table->slot) xdev_fn_ = XDEV_BACKEND_SLOT((be)->api->table, slot);   \
        if (xdev_fn_ == NULL) return xdev_backend_not_supported((be), #table "." #slot);           \
        if (__builtin_expect(atomic_load_explicit(&xdev_fault_armed, memory_order_relaxed), 0) &&  \
            xdev_fault_trip(#table "." #slot)) {                                                   \
            if (__builtin_strcmp(#slot, "synchronize") == 0) (void)xdev_fn_(__VA_ARGS__);          \
            return xdev_fault_fail((be), #table "." #slot);                                        \
        }                                                                                          \
        return xdev_fn_(__VA_ARGS__);                                                              \
    } while (0)

/* True when the backend implements the slot (for fallbacks). Only an
 * OPTIONAL slot can be tested: a REQUIRED one is set in every backend that
 * loaded (a test of it is a compile error); of a group (XDEV_SLOT_GROUPS),
 * checked whole when the backend loaded, one slot tells for all. */
#define XDEV_HAS(be, table, slot)                                                                  \
    ((void)sizeof(struct {                                                                         \
         _Static_assert(xdev_optional_##table##_##slot,                                            \
                        #table "." #slot " is REQUIRED: every loaded backend has it");             \
         int unused_;                                                                              \
     }),                                                                                           \
     XDEV_BACKEND_SLOT((be)->api->table, slot) != NULL)
/* xdev_optional_<table>_<slot>: 1 for an OPTIONAL slot, 0 for a REQUIRED one. */
#define XDEV_OPTIONAL_REQUIRED 0
#define XDEV_OPTIONAL_OPTIONAL 1
#define XDEV_NEED(table, slot, need, kind, since, p, a)                                            \
    xdev_optional_##table##_##slot = XDEV_OPTIONAL_##need,
#define XDEV_NEEDS_OF(table, list) list(XDEV_NEED)
enum { XDEV_BACKEND_TABLES(XDEV_NEEDS_OF) };

/* One helper per slot, generated from xdev/backend_slots.h, by the slot's
 * kind: DEV and DEV0 slots take the device record (its context is passed
 * first), DESC slots the record whose backend is called, HOST and HOST0
 * slots the backend. */
#define XDEV_HELPER(table, slot, need, kind, since, p, a) XDEV_HELPER_##kind(table, slot, p, a)
#define XDEV_HELPER_DEV(t, s, p, a)                                                                \
    static inline xdev_status_t xdev_be_##t##_##s(xdev_device_record_t *r, XDEV_SLOT_STRIP p) {    \
        XDEV_DISPATCH(r->be, t, s, r->ctx, XDEV_SLOT_STRIP a);                                     \
    }
#define XDEV_HELPER_DEV0(t, s, p, a)                                                               \
    static inline xdev_status_t xdev_be_##t##_##s(xdev_device_record_t *r) {                       \
        XDEV_DISPATCH(r->be, t, s, r->ctx);                                                        \
    }
#define XDEV_HELPER_DESC(t, s, p, a)                                                               \
    static inline xdev_status_t xdev_be_##t##_##s(xdev_device_record_t *r, XDEV_SLOT_STRIP p) {    \
        XDEV_DISPATCH(r->be, t, s, XDEV_SLOT_STRIP a);                                             \
    }
#define XDEV_HELPER_HOST(t, s, p, a)                                                               \
    static inline xdev_status_t xdev_be_##t##_##s(xdev_backend_t *be, XDEV_SLOT_STRIP p) {         \
        XDEV_DISPATCH(be, t, s, XDEV_SLOT_STRIP a);                                                \
    }
#define XDEV_HELPER_HOST0(t, s, p, a)                                                              \
    static inline xdev_status_t xdev_be_##t##_##s(xdev_backend_t *be) {                            \
        XDEV_DISPATCH(be, t, s);                                                                   \
    }
#define XDEV_HELPERS_OF(table, list) list(XDEV_HELPER)
XDEV_BACKEND_TABLES(XDEV_HELPERS_OF)

/* axpy, dot, nrm2, scal by routine (one descriptor type). */
static inline xdev_status_t xdev_be_blas_vec(xdev_device_record_t *r, xdev_blas_routine_t routine,
                                             const xdev_blas_vec_desc_t *d) {
    switch (routine) {
    case XDEV_BLAS_AXPY:
        return xdev_be_blas_axpy(r, d);
    case XDEV_BLAS_DOT:
        return xdev_be_blas_dot(r, d);
    case XDEV_BLAS_NRM2:
        return xdev_be_blas_nrm2(r, d);
    case XDEV_BLAS_SCAL:
        return xdev_be_blas_scal(r, d);
    default:
        return xdev_backend_not_supported(r->be, "blas (unknown routine)");
    }
}

#endif
