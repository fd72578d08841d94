/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_oom.h - what happens when a device allocation fails for lack of
 * memory (alloc_oom.c): the message, and the observers the application
 * (xdev_memory_add_oom_observer) and observe/ (the XDEV_OOM_SNAPSHOT writer,
 * registered from its wire function: no upward call) want called. */
#ifndef XDEV_CORE_ALLOC_OOM_H
#define XDEV_CORE_ALLOC_OOM_H

#include <stddef.h>

#include "xdev/allocator.h"

struct xdev_device_allocator;

/* After an allocation on the device of `primary` failed with
 * XDEV_ERROR_OUT_OF_MEMORY (its message set), with no allocator lock held:
 * call every observer once, keeping the thread's error state. A failure
 * inside an observer (its own allocation running out) calls none again. */
void xdev_alloc_oom_notify(struct xdev_device_allocator *primary, size_t requested);

/* The one internal observer, called after the application's (observe/'s
 * snapshot writer, set from its wire function before any xdev call). */
void xdev_alloc_oom_internal_set(xdev_oom_observer_t fn);

#endif
