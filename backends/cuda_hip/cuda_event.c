/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_event.c - the event vtable. Flags map as torch maps
 * them: timing is off (cudaEventDisableTiming) unless XDEV_EVENT_TIMING;
 * XDEV_EVENT_BLOCKING_SYNC adds cudaEventBlockingSync; XDEV_EVENT_INTERPROCESS
 * is cudaEventInterprocess | cudaEventDisableTiming. Events belong to the
 * device current at creation, so create runs under a guard; record on the
 * legacy default stream does too (see cuda_stream.c). */
#include "xdev/event.h"

#include "cuda_internal.h"

static xdev_status_t event_create(xc_device_t *dev, unsigned flags, void **out) {
    int device = dev->index;
    unsigned cf = cudaEventDefault;
    if (!(flags & XDEV_EVENT_TIMING)) cf |= cudaEventDisableTiming;
    if (flags & XDEV_EVENT_BLOCKING_SYNC) cf |= cudaEventBlockingSync;
    if (flags & XDEV_EVENT_INTERPROCESS) cf |= cudaEventInterprocess | cudaEventDisableTiming;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaEvent_t e = NULL;
    cudaError_t err = cudaEventCreateWithFlags(&e, cf);
    xc_guard_end(&g);
    if (err != cudaSuccess)
        return xc_fail(err, XC_STR(cudaEventCreateWithFlags) "(0x%x) on device %d", cf, device);
    *out = e;
    return XDEV_SUCCESS;
}

static xdev_status_t event_destroy(xc_device_t *dev, void *event) {
    XC_CALL(cudaEventDestroy((cudaEvent_t)event), XC_STR(cudaEventDestroy));
    return XDEV_SUCCESS;
}

/* The guard of xc_stream_guard_begin, taken only where it does something:
 * a created stream names its device, so the record on it is the runtime's
 * call alone (no guard to set up or end), the call issue 50 times against
 * a bare cudaEventRecord. An implicit stream means the current device's,
 * so `dev` is made current around it. */
static xdev_status_t event_record(xc_device_t *dev, void *event, void *stream) {
    cudaError_t err;
    if (__builtin_expect(!xc_stream_implicit(stream), 1)) {
        err = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
    } else {
        xc_guard_t g;
        xdev_status_t st = xc_guard_begin(&g, dev->index);
        if (st != XDEV_SUCCESS) return st;
        err = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
        xc_guard_end(&g);
    }
    return err == cudaSuccess ? XDEV_SUCCESS : xc_fail(err, XC_STR(cudaEventRecord));
}

static xdev_status_t event_query(xc_device_t *dev, void *event) {
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);
    if (err == cudaSuccess) return XDEV_SUCCESS;
    if (err == cudaErrorNotReady) return XDEV_ERROR_NOT_READY;
    return xc_fail(err, XC_STR(cudaEventQuery));
}

static xdev_status_t event_synchronize(xc_device_t *dev, void *event) {
    XC_CALL(cudaEventSynchronize((cudaEvent_t)event), XC_STR(cudaEventSynchronize));
    return XDEV_SUCCESS;
}

static xdev_status_t event_elapsed_time(xc_device_t *dev, void *start, void *end, float *ms) {
    XC_CALL(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end),
            XC_STR(cudaEventElapsedTime));
    return XDEV_SUCCESS;
}

const xdev_event_vtable_t xc_event_vtable = {
    .size = sizeof(xdev_event_vtable_t),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_time = event_elapsed_time,
};
