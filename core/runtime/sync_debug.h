/* SPDX-License-Identifier: Apache-2.0 */
/* sync_debug.h - the sync debug mode (xdev/runtime.h): every place in the
 * core where the host is about to wait for a device asks here first. OFF
 * costs one relaxed load. */
#ifndef XDEV_CORE_SYNC_DEBUG_H
#define XDEV_CORE_SYNC_DEBUG_H

#include <stdatomic.h>

#include "runtime/device_record.h"
#include "xdev/runtime.h"

extern _Atomic int xdev_sync_debug_flag; /* xdev_sync_debug_mode_t */

/* XDEV_SYNC_DEBUG (an initialisation step of registry.c): off|warn|error,
 * unset or empty for off; anything else is XDEV_ERROR_ENV. */
xdev_status_t xdev_sync_debug_read_env(void);

xdev_status_t xdev_sync_debug_slow(const char *call, const xdev_device_record_t *rec,
                                   const char *what);

/* Before the host waits: `call` is the public call's name, `rec` the device
 * waited for (NULL: every device), `what` the kind of wait ("a blocking
 * copy"). WARN writes its line once per call site and returns success;
 * ERROR returns XDEV_ERROR_SYNC_DEBUG with the message set (the caller then
 * waits for nothing and changes nothing). */
static inline xdev_status_t xdev_sync_debug_wait(const char *call, const xdev_device_record_t *rec,
                                                 const char *what) {
    if (__builtin_expect(atomic_load_explicit(&xdev_sync_debug_flag, memory_order_relaxed) == 0, 1))
        return XDEV_SUCCESS;
    return xdev_sync_debug_slow(call, rec, what);
}

#endif
