/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_device.c - the device vtable: count, properties
 * (cudaGetDeviceProperties, cached per device), synchronize, peer access,
 * and the processes/utilisation slots (NVML: backends/cuda/cuda_nvml.c;
 * rocm-smi: backends/hip/hip_smi.c). Device indices are the runtime's, so
 * CUDA_VISIBLE_DEVICES applies as the driver applies it; the core adds
 * XDEV_VISIBLE_DEVICES on top. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static xdev_status_t device_count(int *count) {
    *count = xc_state.count;
    return XDEV_SUCCESS;
}

static xdev_status_t device_get_properties(xc_device_t *dev, xdev_device_properties_t *props) {
    int device = dev->index;
    xc_device_t *d = xc_device(device);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!d->props_ready) {
        struct cudaDeviceProp p;
        cudaError_t err = cudaGetDeviceProperties(&p, device);
        if (err != cudaSuccess) {
            st = xc_fail(err, XC_STR(cudaGetDeviceProperties) "(%d)", device);
        } else {
            memset(&d->props, 0, sizeof d->props);
            snprintf(d->props.name, sizeof d->props.name, "%s", p.name);
            d->props.capability_major = p.major;
            d->props.capability_minor = p.minor;
            d->props.total_memory = p.totalGlobalMem;
            d->props.multiprocessor_count = p.multiProcessorCount;
            d->props.physical_index = device;
            d->props.integrated = p.integrated != 0;
            d->props_ready = true;
        }
    }
    if (st == XDEV_SUCCESS) *props = d->props;
    pthread_mutex_unlock(&d->lock);
    return st;
}

static xdev_status_t device_synchronize(xc_device_t *dev) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaDeviceSynchronize();
    xc_guard_end(&g);
    return err == cudaSuccess ? XDEV_SUCCESS
                              : xc_fail(err, XC_STR(cudaDeviceSynchronize) "(%d)", device);
}

static xdev_status_t device_can_access_peer(xc_device_t *dev, xc_device_t *peer_dev, bool *out) {
    int device = dev->index, peer = peer_dev->index;
    if (device == peer) { /* as cudaDeviceCanAccessPeer: not its own peer */
        *out = false;
        return XDEV_SUCCESS;
    }
    int can = 0;
    XC_CALL(cudaDeviceCanAccessPeer(&can, device, peer), XC_STR(cudaDeviceCanAccessPeer) "(%d, %d)",
            device, peer);
    *out = can != 0;
    return XDEV_SUCCESS;
}

static xdev_status_t device_enable_peer_access(xc_device_t *dev, xc_device_t *peer_dev) {
    int device = dev->index, peer = peer_dev->index;
    if (device == peer) return XDEV_SUCCESS;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
    xc_guard_end(&g);
    if (err == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError(); /* not an error for xdev: enabling is idempotent */
        err = cudaSuccess;
    }
    if (err != cudaSuccess)
        return xc_fail(err, XC_STR(cudaDeviceEnablePeerAccess) "(peer %d) on device %d", peer,
                       device);
#if XC_HAVE_VMM
    xc_vmm_note_peer(device, peer); /* expandable segments map peer's memory for it too */
#endif
    return XDEV_SUCCESS;
}

/* NVML / rocm-smi answer by physical index (cuda_nvml.c, hip_smi.c). */
static xdev_status_t device_list_processes(xc_device_t *dev, xdev_gpu_process_t *out, size_t cap,
                                           size_t *count) {
    return xc_smi_list_processes(dev->index, out, cap, count);
}

static xdev_status_t device_utilization(xc_device_t *dev, xdev_device_utilization_t *out) {
    return xc_smi_utilization(dev->index, out);
}

cudaError_t xc_multiprocessors(xc_device_t *dev, int *out) {
    int sms = __atomic_load_n(&dev->sms, __ATOMIC_RELAXED);
    if (sms == 0) {
        cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev->index);
        if (err != cudaSuccess) return err;
        __atomic_store_n(&dev->sms, sms, __ATOMIC_RELAXED);
    }
    *out = sms;
    return cudaSuccess;
}

/* The context is the device's state entry (filled lazily; no CUDA call). */
static xdev_status_t device_open(int index, xdev_backend_device_t **out) {
    if (index < 0 || index >= xc_state.count)
        return xc_error(XDEV_ERROR_INVALID_DEVICE, XC_NAME ":%d: no such device (%d present)",
                        index, xc_state.count);
    *out = &xc_state.devices[index];
    return XDEV_SUCCESS;
}

const xdev_device_vtable_t xc_device_vtable = {
    .size = sizeof(xdev_device_vtable_t),
    .count = device_count,
    .open = device_open,
    .get_properties = device_get_properties,
    .synchronize = device_synchronize,
    .can_access_peer = device_can_access_peer,
    .enable_peer_access = device_enable_peer_access,
    .list_processes = device_list_processes,
    .utilization = device_utilization,
};
