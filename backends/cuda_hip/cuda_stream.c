/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_stream.c - the stream vtable.
 *
 * Default stream: each device's default stream is the runtime's legacy
 * default stream, which is what torch's default stream is: on CUDA handed to
 * the core as cudaStreamLegacy ((cudaStream_t)0x1; not NULL, so it also works
 * with xdev_stream_wrap_native), on HIP as the NULL stream (HIP has no
 * hipStreamLegacy). It names "the current device's" legacy stream, so every
 * slot given it (or NULL / cudaStreamPerThread from wrap_native) makes the
 * right device current first and restores the caller's afterwards.
 *
 * Created streams are cudaStreamNonBlocking (no implicit sync with the
 * legacy stream, as torch's pool streams) with NORMAL = the least priority
 * and HIGH = the greatest of cudaDeviceGetStreamPriorityRange. */
#include "cuda_internal.h"

/* The device's priority range, read once. */
static xdev_status_t priority_range(int device, int *least, int *greatest) {
    xc_device_t *d = xc_device(device);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!d->prio_ready) {
        cudaError_t err = cudaDeviceGetStreamPriorityRange(&d->prio_least, &d->prio_greatest);
        if (err == cudaSuccess)
            d->prio_ready = true;
        else
            st = xc_fail(err, XC_STR(cudaDeviceGetStreamPriorityRange) " on device %d", device);
    }
    *least = d->prio_least;
    *greatest = d->prio_greatest;
    pthread_mutex_unlock(&d->lock);
    return st;
}

static xdev_status_t stream_create(xc_device_t *dev, int priority, void **out) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    int least = 0, greatest = 0;
    st = priority_range(device, &least, &greatest);
    if (st == XDEV_SUCCESS) {
        int prio = priority == XDEV_STREAM_PRIORITY_HIGH ? greatest : least;
        cudaStream_t s = NULL;
        cudaError_t err = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, prio);
        if (err == cudaSuccess)
            *out = s;
        else
            st = xc_fail(err, XC_STR(cudaStreamCreateWithPriority) "(priority %d) on device %d",
                         prio, device);
    }
    xc_guard_end(&g);
    return st;
}

static xdev_status_t stream_destroy(xc_device_t *dev, void *stream) {
    if (xc_stream_implicit(stream)) return XDEV_SUCCESS; /* not ours to destroy */
    cudaError_t err = cudaStreamSynchronize((cudaStream_t)stream);
    if (err != cudaSuccess) return xc_fail(err, XC_STR(cudaStreamSynchronize) " before destroy");
    XC_CALL(cudaStreamDestroy((cudaStream_t)stream), XC_STR(cudaStreamDestroy));
    return XDEV_SUCCESS;
}

static xdev_status_t stream_get_default(xc_device_t *dev, void **out) {
    *out = (void *)XC_STREAM_LEGACY;
    return XDEV_SUCCESS;
}

static xdev_status_t stream_query(xc_device_t *dev, void *stream) {
    int device = dev->index;
    cudaError_t err;
    xc_guard_t g;
    xdev_status_t st = xc_stream_guard_begin(&g, device, stream);
    if (st != XDEV_SUCCESS) return st;
    err = cudaStreamQuery((cudaStream_t)stream);
    xc_guard_end(&g);
    if (err == cudaSuccess) return XDEV_SUCCESS;
    if (err == cudaErrorNotReady) return XDEV_ERROR_NOT_READY;
    return xc_fail(err, XC_STR(cudaStreamQuery));
}

static xdev_status_t stream_synchronize(xc_device_t *dev, void *stream) {
    int device = dev->index;
    cudaError_t err;
    xc_guard_t g;
    xdev_status_t st = xc_stream_guard_begin(&g, device, stream);
    if (st != XDEV_SUCCESS) return st;
    err = cudaStreamSynchronize((cudaStream_t)stream);
    xc_guard_end(&g);
    return err == cudaSuccess ? XDEV_SUCCESS : xc_fail(err, XC_STR(cudaStreamSynchronize));
}

static xdev_status_t stream_wait_event(xc_device_t *dev, void *stream, void *event) {
    int device = dev->index;
    cudaError_t err;
    xc_guard_t g;
    xdev_status_t st = xc_stream_guard_begin(&g, device, stream);
    if (st != XDEV_SUCCESS) return st;
    err = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
    xc_guard_end(&g);
    return err == cudaSuccess ? XDEV_SUCCESS : xc_fail(err, XC_STR(cudaStreamWaitEvent));
}

static xdev_status_t stream_launch_host_func(xc_device_t *dev, void *stream, xdev_host_fn_t fn,
                                             void *user) {
    int device = dev->index;
    cudaError_t err;
    xc_guard_t g;
    xdev_status_t st = xc_stream_guard_begin(&g, device, stream);
    if (st != XDEV_SUCCESS) return st;
    err = xc_vendor_launch_host_func((cudaStream_t)stream, fn, user);
    xc_guard_end(&g);
    return err == cudaSuccess ? XDEV_SUCCESS : xc_fail(err, XC_HOST_FUNC_CALL);
}

const xdev_stream_vtable_t xc_stream_vtable = {
    .size = sizeof(xdev_stream_vtable_t),
    .create = stream_create,
    .destroy = stream_destroy,
    .get_default = stream_get_default,
    .query = stream_query,
    .synchronize = stream_synchronize,
    .wait_event = stream_wait_event,
    .launch_host_func = stream_launch_host_func,
};
