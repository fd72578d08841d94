/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_ipc.c - the ipc vtable over cudaIpc*: memory handles
 * of raw cudaMalloc allocations (the core adds segment offsets), opened with
 * cudaIpcMemLazyEnablePeerAccess on the requested device, and event handles
 * of cudaEventInterprocess events. */
#include <string.h>

#include "cuda_internal.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) <= XDEV_IPC_NATIVE_SIZE,
               XC_STR(cudaIpcMemHandle_t) " too large");
_Static_assert(sizeof(cudaIpcEventHandle_t) <= XDEV_IPC_NATIVE_SIZE,
               XC_STR(cudaIpcEventHandle_t) " too large");

static xdev_status_t ipc_get_mem_handle(xc_device_t *dev, void *base, void *handle) {
    int device = dev->index;
    cudaIpcMemHandle_t h;
    XC_CALL(cudaIpcGetMemHandle(&h, base), XC_STR(cudaIpcGetMemHandle) "(%p) on device %d", base,
            device);
    memset(handle, 0, XDEV_IPC_NATIVE_SIZE);
    memcpy(handle, &h, sizeof h);
    return XDEV_SUCCESS;
}

static xdev_status_t ipc_open_mem_handle(xc_device_t *dev, const void *handle, void **base) {
    int device = dev->index;
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof h);
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess);
    xc_guard_end(&g);
    if (err != cudaSuccess)
        return xc_fail(err, XC_STR(cudaIpcOpenMemHandle) " on device %d", device);
    return XDEV_SUCCESS;
}

static xdev_status_t ipc_close_mem_handle(xc_device_t *dev, void *base) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaIpcCloseMemHandle(base);
    xc_guard_end(&g);
    if (err != cudaSuccess) return xc_fail(err, XC_STR(cudaIpcCloseMemHandle) "(%p)", base);
    return XDEV_SUCCESS;
}

static xdev_status_t ipc_get_event_handle(xc_device_t *dev, void *event, void *handle) {
    cudaIpcEventHandle_t h;
    XC_CALL(cudaIpcGetEventHandle(&h, (cudaEvent_t)event), XC_STR(cudaIpcGetEventHandle));
    memset(handle, 0, XDEV_IPC_NATIVE_SIZE);
    memcpy(handle, &h, sizeof h);
    return XDEV_SUCCESS;
}

static xdev_status_t ipc_open_event_handle(xc_device_t *dev, const void *handle, void **event) {
    int device = dev->index;
    cudaIpcEventHandle_t h;
    memcpy(&h, handle, sizeof h);
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaEvent_t e = NULL;
    cudaError_t err = cudaIpcOpenEventHandle(&e, h);
    xc_guard_end(&g);
    if (err != cudaSuccess)
        return xc_fail(err, XC_STR(cudaIpcOpenEventHandle) " on device %d", device);
    *event = e;
    return XDEV_SUCCESS;
}

const xdev_ipc_vtable_t xc_ipc_vtable = {
    .size = sizeof(xdev_ipc_vtable_t),
    .get_mem_handle = ipc_get_mem_handle,
    .open_mem_handle = ipc_open_mem_handle,
    .close_mem_handle = ipc_close_mem_handle,
    .get_event_handle = ipc_get_event_handle,
    .open_event_handle = ipc_open_event_handle,
};
