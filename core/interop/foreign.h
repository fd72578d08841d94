/* SPDX-License-Identifier: Apache-2.0 */
/* foreign.h - registrations of memory xdev did not allocate (foreign.c),
 * for the allocator's record_stream and DLPack's imports (dlpack.c). */
#ifndef XDEV_CORE_FOREIGN_H
#define XDEV_CORE_FOREIGN_H

#include "alloc/alloc_lookup.h"
#include "alloc/pointer_registry.h"
#include "xdev/interop.h"

typedef struct xdev_foreign xdev_foreign_t;

/* xdev_memory_register without the public checks of device and pointer;
 * token (a DLPack tensor, or NULL) may be registered once at a time. */
xdev_status_t xdev_foreign_register(xdev_device_record_t *rec, void *ptr, size_t bytes,
                                    xdev_stream_t stream, xdev_release_fn release, void *ctx,
                                    const void *token);

/* xdev_record_stream of registered device memory (e: its registry range;
 * stream checked and on its device): unregister waits for it too. */
/* Whether [ptr, ptr + bytes) lies in one live allocation xdev made itself
 * (not registered memory, not an IPC mapping); *ref is that allocation. A
 * failed lookup is an answer here: it leaves no error behind. */
bool xdev_own_allocation(const void *ptr, size_t bytes, xdev_live_ref_t *ref);

xdev_status_t xdev_foreign_record_stream(const xdev_ptr_entry_t *e, xdev_stream_t stream);

#endif
