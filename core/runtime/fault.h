/* SPDX-License-Identifier: Apache-2.0 */
/* fault.h - fault injection, SQLite-style: make the n-th call into a
 * backend fail, to check that xdev survives a failure at every point a
 * program can reach (tests/test_faults.c walks every point in turn).
 *
 * Every backend slot call goes through dispatch.h's helpers; while a test
 * has armed the injector, each such call is counted, and the one numbered
 * `fail_at` returns a failure instead of reaching the backend: out of memory
 * for the slots that allocate, a backend error otherwise, with a message
 * that names the slot and the call's number. Calls that release something
 * (frees, destroys) are not failure points: like free(), nothing could be
 * done about their failure. Unarmed, the cost is one
 * relaxed load per slot call. A test hook: exported for the suite, in no
 * public header. */
#ifndef XDEV_CORE_FAULT_H
#define XDEV_CORE_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/registry.h"

extern _Atomic int xdev_fault_armed;

/* Arm the injector: count the slot calls from now on, and fail the one
 * numbered fail_at (1 = the next one; 0 = count only). */
XDEV_API void xdev_fault_inject_begin(long fail_at);

/* Disarm it: the number of slot calls counted since begin; *fired (if not
 * NULL) says whether a call was failed. */
XDEV_API long xdev_fault_inject_end(bool *fired);

/* "cpu.memory.malloc": the slot the injector failed last ("" before any). */
XDEV_API const char *xdev_fault_failed_slot(void);

/* Count one call of `slot` ("memory.malloc"; the injector is armed); true:
 * fail this one. Slots that release something are not counted (fault.c). */
bool xdev_fault_trip(const char *slot);

/* The injected failure of `slot` ("memory.malloc") of backend be. */
xdev_status_t xdev_fault_fail(const xdev_backend_t *be, const char *slot);

/* A failure point outside the slot helpers (the backend's initialisation,
 * registry.c): true when the armed injector fails this call of `slot`. */
static inline bool xdev_fault_point(const char *slot) {
    return __builtin_expect(atomic_load_explicit(&xdev_fault_armed, memory_order_relaxed), 0) &&
           xdev_fault_trip(slot);
}

#endif
