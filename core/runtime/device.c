/* SPDX-License-Identifier: Apache-2.0 */
/* device.c - device counts, the per-thread current device, guards,
 * properties, synchronisation and peer access.
 *
 * Counting and availability are probes: a backend that cannot be used
 * counts 0 devices and leaves no error behind (xdev/error.h); the bool
 * queries never change the thread's error state. xdev_synchronize, which waits
 * for every loaded backend, lives in registry.c beside the backend table. */
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"
#include "runtime/stream_order.h"
#include "runtime/capture.h"
#include "runtime/process.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/sync_debug.h"

void xdev_core_set_current_index(xdev_device_type_t type, int index) {
    xdev_thread_state()->current[type] = index;
}

xdev_status_t xdev_device_lookup_slow(xdev_device_t device, xdev_device_record_t **out) {
    if ((unsigned)device.type >= XDEV_MAX_DEVICE_TYPES)
        return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE, "unknown device type %d", (int)device.type);
    xdev_backend_t *be;
    xdev_status_t st = xdev_backend_acquire(device.type, &be);
    if (st != XDEV_SUCCESS) return st;
    int index = device.index;
    if (index == -1) index = xdev_thread_state()->current[device.type];
    if (index < 0 || index >= be->device_count)
        return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE,
                         "%s:%d: device index out of range (%d %s device%s visible)", be->name,
                         index, be->device_count, be->name, be->device_count == 1 ? "" : "s");
    *out = &be->devices[index];
    return XDEV_SUCCESS;
}

xdev_status_t xdev_default_device_type(xdev_device_type_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    *out = xdev_core_default_type();
    return XDEV_SUCCESS;
}

/* xdev initialised (so plugins found by name are registered) and a backend
 * registered for `type`: device types are registered, not enumerated. */
static xdev_status_t known_type(xdev_device_type_t type) {
    xdev_status_t st = xdev_core_ensure_init();
    return st == XDEV_SUCCESS ? xdev_core_check_type(type) : st;
}

/* torch.cuda.device_count(): 0 with success when the backend cannot be
 * used (no plugin, no vendor library, no device visible). A backend that
 * failed on a malformed variable of its own (XDEV_CPU_DEVICES=abc) is an
 * error: counting 0 would silently ignore the variable. */
xdev_status_t xdev_device_count(xdev_device_type_t type, int *count) {
    XDEV_REQUIRE_ARG(count);
    *count = 0;
    XDEV_CHECK(known_type(type));
    xdev_backend_t *be;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_status_t st = xdev_backend_acquire(type, &be);
    if (st == XDEV_ERROR_ENV) return xdev_core_blame(st, __func__);
    xdev_core_error_restore(&saved);
    if (st == XDEV_SUCCESS) *count = be->device_count;
    return XDEV_SUCCESS;
}

bool xdev_is_available(xdev_device_type_t type) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    int n = 0;
    bool yes = xdev_device_count(type, &n) == XDEV_SUCCESS && n > 0;
    xdev_core_error_restore(&saved);
    return yes;
}

xdev_status_t xdev_get_device(xdev_device_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    out->type = xdev_core_default_type();
    out->index = xdev_thread_state()->current[out->type];
    return XDEV_SUCCESS;
}

xdev_status_t xdev_get_device_index(xdev_device_type_t type, int *index) {
    XDEV_REQUIRE_ARG(index);
    XDEV_CHECK(known_type(type)); /* as xdev_get_device: refused in a forked child */
    *index = xdev_thread_state()->current[type];
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_resolve(xdev_device_t device, xdev_device_t *out) {
    XDEV_REQUIRE_ARG(out);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    *out = rec->id;
    return XDEV_SUCCESS;
}

/* The fast path of xdev_set_device and the guard: xdev_device_lookup's (an
 * explicit index of a loaded backend proves the type registered, xdev
 * initialised and the process not a forked child, whose fork handler
 * clears the ready gate). Anything else - index -1, an unknown type, an
 * index out of range - takes the checks in full, with their messages. */
static inline bool loaded_index(xdev_device_t device) {
    if (!__builtin_expect(atomic_load_explicit(&xdev_core_ready, memory_order_acquire) != 0, 1) ||
        (unsigned)device.type >= XDEV_MAX_DEVICE_TYPES || device.index < 0)
        return false;
    xdev_backend_t *be = atomic_load_explicit(&xdev_core_loaded[device.type], memory_order_acquire);
    return be != NULL && device.index < be->device_count;
}

xdev_status_t xdev_set_device(xdev_device_t device) {
    if (__builtin_expect(loaded_index(device), 1)) {
        xdev_thread_state()->current[device.type] = device.index;
        return XDEV_SUCCESS;
    }
    XDEV_CHECK(known_type(device.type));
    if (device.index < 0) return XDEV_SUCCESS; /* torch: a negative index is a no-op */
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_thread_state()->current[rec->id.type] = rec->id.index;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_guard_begin(xdev_device_guard_t *guard, xdev_device_t device) {
    XDEV_REQUIRE_ARG(guard);
    guard->active = false;
    if (__builtin_expect(loaded_index(device), 1)) {
        int *cur = &xdev_thread_state()->current[device.type];
        guard->previous.type = device.type;
        guard->previous.index = *cur;
        guard->active = true;
        *cur = device.index;
        return XDEV_SUCCESS;
    }
    XDEV_CHECK(known_type(device.type));
    if (device.index < 0) return XDEV_SUCCESS;
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    guard->previous.type = rec->id.type;
    int *cur = &xdev_thread_state()->current[rec->id.type];
    guard->previous.index = *cur;
    guard->active = true;
    *cur = rec->id.index;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_guard_end(xdev_device_guard_t *guard) {
    XDEV_REQUIRE_ARG(guard);
    if (guard->active) {
        xdev_thread_state()->current[guard->previous.type] = guard->previous.index;
        guard->active = false;
    }
    return XDEV_SUCCESS;
}

void xdev_device_guard_cleanup(xdev_device_guard_t *guard) {
    (void)xdev_device_guard_end(guard);
}

xdev_status_t xdev_get_device_properties(xdev_device_t device, xdev_device_properties_t *props) {
    XDEV_REQUIRE_ARG(props);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    memset(props, 0, sizeof *props);
    XDEV_CHECK(xdev_be_device_get_properties(rec, props));
    props->physical_index = rec->physical;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_synchronize(xdev_device_t device) {
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(xdev_capture_check_unsafe("xdev_device_synchronize"));
    XDEV_CHECK(xdev_sync_debug_wait(__func__, rec, "a device synchronize"));
    xdev_status_t st = xdev_be_device_synchronize(rec);
    xdev_order_on_host_waits_device(rec); /* waited, even for work that failed */
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

/* xdev_synchronize (every loaded backend) is in registry.c, beside the backend table. */

xdev_status_t xdev_device_can_access_peer(xdev_device_t device, xdev_device_t peer, bool *out) {
    XDEV_REQUIRE_ARG(out);
    *out = false;
    xdev_device_record_t *d, *p;
    XDEV_CHECK(xdev_device_lookup(device, &d));
    XDEV_CHECK(xdev_device_lookup(peer, &p));
    if (d->be != p->be || d == p || !XDEV_HAS(d->be, device, can_access_peer)) return XDEV_SUCCESS;
    XDEV_CHECK(xdev_be_device_can_access_peer(d, p->ctx, out));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_enable_peer_access(xdev_device_t device, xdev_device_t peer) {
    xdev_device_record_t *d, *p;
    XDEV_CHECK(xdev_device_lookup(device, &d));
    XDEV_CHECK(xdev_device_lookup(peer, &p));
    if (d->be != p->be)
        return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "peer access needs two devices of one type, not " XDEV_REC_FMT
                             " and " XDEV_REC_FMT,
                             XDEV_REC_ARGS(d), XDEV_REC_ARGS(p));
    if (d == p)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, XDEV_REC_FMT " cannot be its own peer",
                             XDEV_REC_ARGS(d));
    XDEV_CHECK(xdev_be_device_enable_peer_access(d, p->ctx));
    atomic_fetch_or(&d->peer_enabled, (uint64_t)1 << p->id.index);
    return XDEV_SUCCESS;
}

/* A bool query: never changes the thread's error state. */
bool xdev_device_peer_enabled(xdev_device_t device, xdev_device_t peer) {
    xdev_device_record_t *d = NULL, *p = NULL;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    bool found = xdev_device_lookup(device, &d) == XDEV_SUCCESS &&
                 xdev_device_lookup(peer, &p) == XDEV_SUCCESS && d->be == p->be;
    xdev_core_error_restore(&saved);
    return found && ((atomic_load(&d->peer_enabled) >> p->id.index) & 1u);
}
