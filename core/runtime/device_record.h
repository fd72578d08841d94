/* SPDX-License-Identifier: Apache-2.0 */
/* device_record.h - the one resolver from a public xdev_device_t to the
 * device's record (backend, backend context, core state).
 *
 * Every public call that names a device goes through xdev_device_lookup. Its
 * fast path - initialised, backend loaded, index in range - is inline: one
 * gate load, one table load, the thread's current index when the caller
 * passed -1, and a bounds check. Everything else (first call, loading a
 * backend, errors with their messages) is the out-of-line slow path. */
#ifndef XDEV_CORE_DEVICE_RECORD_H
#define XDEV_CORE_DEVICE_RECORD_H

#include "base/error_internal.h"
#include "runtime/registry.h"
#include "runtime/thread_state.h"

/* The slow path: initialise, load the backend, report what is wrong. */
xdev_status_t xdev_device_lookup_slow(xdev_device_t device, xdev_device_record_t **out);

/* The record of `device`; index -1 means this thread's current device of
 * its type. Errors: unknown type, backend unusable, index out of range. */
static inline xdev_status_t xdev_device_lookup(xdev_device_t device, xdev_device_record_t **out) {
    *out = NULL; /* set on every path; GCC at -O3 cannot see that the slow path sets it */
    if (__builtin_expect(atomic_load_explicit(&xdev_core_ready, memory_order_acquire) != 0, 1) &&
        (unsigned)device.type < XDEV_MAX_DEVICE_TYPES) {
        xdev_backend_t *be =
            atomic_load_explicit(&xdev_core_loaded[device.type], memory_order_acquire);
        if (be != NULL) {
            int index = device.index;
            if (index == -1) index = xdev_thread_state()->current[device.type];
            if ((unsigned)index < (unsigned)be->device_count) {
                *out = &be->devices[index];
                return XDEV_SUCCESS;
            }
        }
    }
    return xdev_device_lookup_slow(device, out);
}

/* "cuda:1" for messages. */
#define XDEV_REC_FMT "%s:%d"
#define XDEV_REC_ARGS(rec) (rec)->be->name, (rec)->id.index

#endif
