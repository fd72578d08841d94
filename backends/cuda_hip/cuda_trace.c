/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_trace.c - the trace vtable: NVTX markers and ranges
 * through the header-only nvtx3 of the toolkit (it loads a profiler's
 * injection library when one is attached, and is a cheap no-op otherwise);
 * roctx in the HIP plugin (vendor/hip_trace.h). */
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

const xdev_trace_vtable_t xc_trace_vtable = {
    .size = sizeof(xdev_trace_vtable_t),
    .mark = trace_mark,
    .range_push = trace_range_push,
    .range_pop = trace_range_pop,
};
