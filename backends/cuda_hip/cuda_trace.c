/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_trace.c - the trace vtable: NVTX markers and ranges
 * through the header-only nvtx3 of the toolkit (it loads a profiler's
 * injection library when one is attached, and is a cheap no-op otherwise),
 * and stream names (nvtxNameCudaStreamA); roctx in the HIP plugin
 * (vendor/hip_trace.h), which names no streams. */
#include "cuda_internal.h"
#include XC_TRACE_HEADER

static xdev_status_t trace_mark(const char *msg) {
    nvtxMarkA(msg);
    return XDEV_SUCCESS;
}

static xdev_status_t trace_range_push(const char *msg) {
    (void)nvtxRangePushA(msg); /* depth (or -2 without a tool): the core counts */
    return XDEV_SUCCESS;
}

static xdev_status_t trace_range_pop(void) {
    (void)nvtxRangePop();
    return XDEV_SUCCESS;
}

#if !defined(XC_VENDOR_HIP) /* roctx has no way to name a stream */
#include <nvtx3/nvToolsExtCudaRt.h>

/* Nsight Systems labels the stream's row with the name. */
static xdev_status_t trace_name_stream(xc_device_t *dev, void *stream, const char *name) {
    (void)dev;
    nvtxNameCudaStreamA((cudaStream_t)stream, name);
    return XDEV_SUCCESS;
}
#endif

const xdev_trace_vtable_t xc_trace_vtable = {
    .size = sizeof(xdev_trace_vtable_t),
    .mark = trace_mark,
    .range_push = trace_range_push,
    .range_pop = trace_range_pop,
#if !defined(XC_VENDOR_HIP)
    .name_stream = trace_name_stream,
#endif
};
