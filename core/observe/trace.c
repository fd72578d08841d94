/* SPDX-License-Identifier: Apache-2.0 */
/* trace.c - profiler markers: the default backend's trace table (NVTX on
 * CUDA), or successful no-ops when it has none. The core keeps each thread's
 * range depth itself so that push/pop report the same depths with or without
 * a profiler attached (NVTX answers -2 when no tool is loaded). */
#include "base/error_internal.h"
#include "runtime/dispatch.h"
#include "observe/tracer.h"
#include "xdev/trace.h"

static _Thread_local int tls_depth;

/* The default backend: its trace slots, or successful no-ops without them. */
static xdev_status_t trace_backend(xdev_backend_t **out) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    return xdev_backend_acquire(xdev_core_default_type(), out);
}

xdev_status_t xdev_trace_mark(const char *msg) {
    XDEV_REQUIRE_ARG(msg);
    xdev_backend_t *be;
    XDEV_CHECK(trace_backend(&be));
    if (XDEV_HAS(be, trace, mark)) XDEV_CHECK(xdev_be_trace_mark(be, msg));
    if (XDEV_UNLIKELY(xdev_tracer_active())) xdev_tracer_marker('i', msg);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_trace_range_push(const char *msg, int *depth) {
    XDEV_REQUIRE_ARG(msg);
    xdev_backend_t *be;
    XDEV_CHECK(trace_backend(&be));
    if (XDEV_HAS(be, trace, range_push)) XDEV_CHECK(xdev_be_trace_range_push(be, msg));
    if (depth != NULL) *depth = tls_depth;
    tls_depth++;
    if (XDEV_UNLIKELY(xdev_tracer_active())) xdev_tracer_marker('B', msg);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_trace_range_pop(int *depth) {
    if (tls_depth == 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "no range is open on this thread (xdev_trace_range_push first)");
    xdev_backend_t *be;
    XDEV_CHECK(trace_backend(&be));
    if (XDEV_HAS(be, trace, range_pop)) XDEV_CHECK(xdev_be_trace_range_pop(be));
    tls_depth--;
    if (depth != NULL) *depth = tls_depth;
    if (XDEV_UNLIKELY(xdev_tracer_active())) xdev_tracer_marker('E', NULL);
    return XDEV_SUCCESS;
}
