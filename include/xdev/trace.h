/* xdev/trace.h - profiler markers (torch.cuda.nvtx): NVTX on CUDA, nothing
 * on the CPU (roctx will serve the HIP plugin once it exists).
 *
 * Markers go to the backend of the default device type (XDEV_BACKEND). A
 * backend without a profiler interface makes these successful no-ops. The
 * core counts the open ranges of each thread, so the depths are the same
 * whether or not a profiler is attached. */
#ifndef XDEV_TRACE_H
#define XDEV_TRACE_H

#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An instantaneous event (nvtxMarkA). msg must not be NULL. */
XDEV_API xdev_status_t xdev_trace_mark(const char *msg);

/* Open a nested range (nvtxRangePushA). *depth (if depth is not NULL)
 * receives the zero-based depth of the new range, as torch returns it. */
XDEV_API xdev_status_t xdev_trace_range_push(const char *msg, int *depth);

/* Close this thread's innermost range (nvtxRangePop). *depth (if not NULL)
 * receives the depth of the range closed. With no open range on this
 * thread: XDEV_ERROR_INVALID_VALUE. */
XDEV_API xdev_status_t xdev_trace_range_pop(int *depth);

#ifdef __cplusplus
}
#endif
#endif
