/* trace.c - profiler markers: the default backend's trace table (NVTX on
 * CUDA), or successful no-ops when it has none. The core keeps each thread's
 * range depth itself so that push/pop report the same depths with or without
 * a profiler attached (NVTX answers -2 when no tool is loaded). */
#include "base/error_internal.h"
#include "runtime/registry.h"
#include "xdev/trace.h"

static _Thread_local int tls_depth;

/* The default backend's trace table, or NULL (no-op). */
static xdev_status_t trace_table(const xdev_trace_vtable_t **out) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    xdev_backend_t *be;
    st = xdev_backend_acquire(xdev_core_default_type(), &be);
    if (st != XDEV_SUCCESS) return st;
    const xdev_backend_api_t *api = be->api;
    *out = XDEV_BACKEND_HAS_SLOT(api, trace) ? api->trace : NULL;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_trace_mark(const char *msg) {
    XDEV_REQUIRE_ARG(msg);
    const xdev_trace_vtable_t *t;
    XDEV_CHECK(trace_table(&t));
    xdev_status_t (*mark)(const char *) = XDEV_BACKEND_SLOT(t, mark);
    if (mark != NULL) XDEV_CHECK(mark(msg));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_trace_range_push(const char *msg, int *depth) {
    XDEV_REQUIRE_ARG(msg);
    const xdev_trace_vtable_t *t;
    XDEV_CHECK(trace_table(&t));
    xdev_status_t (*push)(const char *) = XDEV_BACKEND_SLOT(t, range_push);
    if (push != NULL) XDEV_CHECK(push(msg));
    if (depth != NULL) *depth = tls_depth;
    tls_depth++;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_trace_range_pop(int *depth) {
    if (tls_depth == 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "no range is open on this thread (xdev_trace_range_push first)");
    const xdev_trace_vtable_t *t;
    XDEV_CHECK(trace_table(&t));
    xdev_status_t (*pop)(void) = XDEV_BACKEND_SLOT(t, range_pop);
    if (pop != NULL) XDEV_CHECK(pop());
    tls_depth--;
    if (depth != NULL) *depth = tls_depth;
    return XDEV_SUCCESS;
}
