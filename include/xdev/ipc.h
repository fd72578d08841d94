/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/ipc.h - sharing device memory and events with other processes
 * (torch's CUDA IPC: Storage._share_cuda_, Event.ipc_handle, ipc_collect).
 *
 * A memory handle describes the device allocation (segment) that holds a
 * pointer plus the pointer's offset in it, so any pointer xdev handed out,
 * interior ones included, can be shared. Handles are plain bytes: send them
 * through a pipe, a socket or shared memory. The exporting process must keep
 * the memory allocated until every importer has closed it. Device indices in
 * a handle are the exporter's; the importer must see the same devices under
 * the same indices (same CUDA_VISIBLE_DEVICES / XDEV_VISIBLE_DEVICES).
 * Backends without IPC (cpu) return XDEV_ERROR_NOT_SUPPORTED. */
#ifndef XDEV_IPC_H
#define XDEV_IPC_H

#include <stddef.h>

#include "xdev/event.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XDEV_IPC_HANDLE_SIZE 128

typedef struct xdev_ipc_mem_handle {
    unsigned char bytes[XDEV_IPC_HANDLE_SIZE];
} xdev_ipc_mem_handle_t;

typedef struct xdev_ipc_event_handle {
    unsigned char bytes[XDEV_IPC_HANDLE_SIZE];
} xdev_ipc_event_handle_t;

/* Handle for the device memory at ptr (from xdev_malloc*, possibly interior,
 * but inside the bytes its allocation requested: a pointer in the
 * allocator's rounding is XDEV_ERROR_INVALID_VALUE). The handle shares the
 * bytes from ptr to the end of that allocation, nothing else of the segment
 * around it. Memory from XDEV_ALLOC_CONF=backend:async pools cannot be
 * shared this way (the backend says so). */
XDEV_API XDEV_RESULT xdev_status_t xdev_ipc_get_mem_handle(const void *ptr,
                                                           xdev_ipc_mem_handle_t *out);

/* What a handle describes: the exporter's device, the bytes usable from the
 * pointer to the end of its allocation. Any argument but handle may be NULL. */
XDEV_API XDEV_RESULT xdev_status_t xdev_ipc_mem_handle_info(const xdev_ipc_mem_handle_t *handle,
                                                            xdev_device_t *device, size_t *bytes);

/* Map a handle from another process; *ptr is the shared pointer. The
 * memory counts as device memory of the handle's device for copies,
 * memset and device_of. Every call on it (copies, memset, kernels, BLAS,
 * collectives) is checked against the exported extent - *ptr to the end of
 * the exporter's allocation, the handle's `bytes` - though the mapping
 * covers the exporter's whole segment; xdev_pointer_get_info reports that
 * extent (base = *ptr). Opening a segment that is already open reuses the
 * mapping (reference counted); each open keeps its own extent, so handles to
 * two allocations of one segment reach one allocation each. Opening in the
 * exporting process itself is XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_ipc_open_mem_handle(const xdev_ipc_mem_handle_t *handle,
                                                            void **ptr);

/* Drop one reference taken by xdev_ipc_open_mem_handle (ptr as it returned),
 * and its extent: calls on the pointer are refused afterwards (unless another
 * open covers it). The mapping itself stays cached until xdev_ipc_collect
 * releases it. */
XDEV_API XDEV_RESULT xdev_status_t xdev_ipc_close_mem_handle(void *ptr);

/* Handle for an event created with XDEV_EVENT_INTERPROCESS. An event never
 * recorded is first created on the current device of the default type. */
XDEV_API XDEV_RESULT xdev_status_t xdev_ipc_get_event_handle(xdev_event_t event,
                                                             xdev_ipc_event_handle_t *out);

/* Open an event of another process: the new xdev event (destroy it with
 * xdev_event_destroy) can be waited on, queried and synchronized; recording
 * it here is seen by the exporter. */
XDEV_API XDEV_RESULT xdev_status_t xdev_ipc_open_event_handle(const xdev_ipc_event_handle_t *handle,
                                                              xdev_event_t *out);

/* torch.cuda.ipc_collect: release the mappings of closed memory handles
 * (closing keeps them cached so that reopening a segment is cheap). */
XDEV_API XDEV_RESULT xdev_status_t xdev_ipc_collect(void);

#ifdef __cplusplus
}
#endif
#endif
