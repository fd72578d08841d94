/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/trace.h - seeing what ran: profiler markers (torch.cuda.nvtx) and
 * xdev's own stream trace.
 *
 * Markers go to the backend of the default device type (XDEV_BACKEND): NVTX
 * on CUDA; a backend without a profiler interface makes them successful
 * no-ops (the CPU; HIP until roctx is available). The core counts the open
 * ranges of each thread, so the depths are the same whether or not a
 * profiler is attached. While a stream trace runs, markers are also
 * recorded in it (on the calling thread's track): there a marker's text is
 * kept to its first 63 bytes, cut before a character that would not fit
 * whole, and bytes that are not UTF-8 are written as U+FFFD, so the trace
 * file is valid UTF-8 JSON whatever the text (the profiler gets the text as
 * given).
 *
 * The stream trace records what each stream ran: copies (direction, bytes),
 * memsets, host functions, GEMM and BLAS vector ops, FFTs, random fills,
 * typed fills and conversions, event records, stream waits; the caching
 * allocator's events with the device's allocated/reserved bytes as a
 * counter; and the markers. It is written as Trace Event Format JSON, which
 * https://ui.perfetto.dev and chrome://tracing open: a process per device
 * with one track per stream showing when the work executed (the backend's
 * timing events: the driver's on CUDA/HIP, the stream worker's clock on the
 * CPU), and a "host" process with one track per thread showing each enqueue
 * call, with flow arrows from enqueue to execution. A backend without timing
 * events gets the enqueue interval on the stream track, marked so in args.
 *
 * Not tracing costs one predictable branch per call. Tracing costs a lock
 * and two timing events per traced call, and the first traced call on a
 * device waits for its stream once (to tie the device clock to the host's).
 * At most 2^21 records are kept (the file's otherData counts the dropped). */
#ifndef XDEV_TRACE_H
#define XDEV_TRACE_H

#include <stddef.h>

#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An instantaneous event (nvtxMarkA). msg must not be NULL. */
XDEV_API XDEV_RESULT xdev_status_t xdev_trace_mark(const char *msg);

/* Open a nested range (nvtxRangePushA). *depth (if depth is not NULL)
 * receives the zero-based depth of the new range, as torch returns it. */
XDEV_API XDEV_RESULT xdev_status_t xdev_trace_range_push(const char *msg, int *depth);

/* Close this thread's innermost range (nvtxRangePop). *depth (if not NULL)
 * receives the depth of the range closed. With no open range on this
 * thread: XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_trace_range_pop(int *depth);

/* Start a stream trace into `path` (created or truncated now, so that a bad
 * path fails here with XDEV_ERROR_IO). XDEV_TRACE_FILE=path does the same
 * at initialisation. One trace at a time: starting a second is an error. */
XDEV_API XDEV_RESULT xdev_status_t xdev_trace_start(const char *path);

/* Stop the trace: wait for the traced work to finish (for its device
 * times) and write the file. Error when no trace runs. A trace still
 * running at exit() is written then. */
XDEV_API XDEV_RESULT xdev_status_t xdev_trace_stop(void);

/* A trace file's JSON (what xdev_trace_stop wrote: `len` bytes, an object
 * with "traceEvents") as one self-contained timeline page for a first look
 * where Perfetto is not at hand: one row per host thread and device stream,
 * a memory counter row per device, flow lines from enqueue to execution,
 * zoom and hover. *html (NUL-terminated, *html_len bytes) is malloc'ed:
 * free() it. Text that is not UTF-8, malformed JSON, or JSON whose
 * top-level object has no "traceEvents" array is XDEV_ERROR_INVALID_VALUE
 * naming the byte or the member. The tool `xdev-memviz --trace` writes it
 * for a file. */
XDEV_API XDEV_RESULT xdev_status_t xdev_trace_view_html(const char *trace_json, size_t len,
                                                        char **html, size_t *html_len);

#ifdef __cplusplus
}
#endif
#endif
