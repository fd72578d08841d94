/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/graph.h - graphs (capture a stream's work once, replay it cheaply)
 * after torch.cuda.CUDAGraph. The pools a capture allocates from are
 * xdev/mempool.h's (included here).
 *
 * Capture. xdev_graph_capture_begin(g, stream, mode, pool) starts recording
 * on `stream`: from then on, work enqueued on it - copies, memsets, fills and
 * conversions, kernels, GEMM and the vector BLAS, FFT, random fills, host
 * functions, collectives - is recorded instead of run, and so is the work of
 * every other stream that waits on an event recorded on a capturing stream
 * (fork), until a capturing stream waits on an event recorded after that
 * work (join). xdev_graph_capture_end(g) stops, checks that every forked
 * stream joined back, and makes the graph. xdev_graph_replay(g, stream) then
 * enqueues all of it, in one step, on any stream of the graph's device, as
 * often as wanted; the work sees the memory as it is when the replay runs
 * (pointers are fixed at capture: update inputs in place).
 *
 * Work that cannot be recorded fails with XDEV_ERROR_CAPTURE naming the
 * call, and makes the capture invalid (capture_end then fails too, naming
 * the first such call, and the graph stays empty): a synchronize (device,
 * stream, event) or a query of a capturing stream or of an event recorded in
 * the capture, a blocking copy (xdev_memcpy), an asynchronous copy with
 * pageable host memory, xdev_empty_cache, a wait on an event recorded outside
 * the capture, destroying a capturing stream, and an allocation on another
 * stream of the device that would need new memory from the backend. Which
 * threads the rule covers is the mode's, as in CUDA:
 * - XDEV_CAPTURE_GLOBAL: such calls fail on every thread while the capture
 *   is under way (torch's default);
 * - XDEV_CAPTURE_THREAD_LOCAL: on the thread that began the capture;
 * - XDEV_CAPTURE_RELAXED: only calls that act on the capture itself (a
 *   synchronize or query of a capturing stream, or of an event recorded in
 *   it) fail.
 * capture_end itself is not such a call: a thread ends its capture (and the
 * graph is made) while other threads' captures, global ones included, are
 * under way, on every backend. (CUDA counts instantiating a graph unsafe
 * during another thread's global capture; the CUDA backend relaxes the
 * ending thread's capture mode for that call only, which is safe: it
 * enqueues nothing, waits for nothing captured, and what it allocates
 * belongs to the new graph, not to the capture under way.)
 *
 * Ending a capture, and threads. A global or thread_local capture must end
 * on the thread that began it (CUDA's rule: cudaStreamEndCapture from
 * another thread fails with cudaErrorStreamCaptureWrongThread): capture_end
 * elsewhere fails with XDEV_ERROR_CAPTURE and the capture goes on. If that
 * thread exits first, the capture ends as it exits, invalidated: its
 * streams stop recording (and, in global mode, other threads' calls are no
 * longer refused), nothing recorded is kept, the graph is empty again, and
 * the next capture_end on g, from any thread, fails with XDEV_ERROR_CAPTURE
 * saying so (a capture_begin, reset or destroy instead is fine). A relaxed
 * capture may end on any thread, and so outlives the thread that began it.
 *
 * Memory. Allocations on a capturing stream come from the graph's pool:
 * memory that stays reserved for the graph's replays until the graph is
 * reset or destroyed (and no allocation of the pool is live), never handed
 * to allocations outside the pool. Blocks freed during the capture return to
 * the pool and may serve later allocations of the same capture (the replay
 * repeats the same order). Graphs may share a pool (pass the same pool to
 * several captures, as torch's graph_pool_handle()), which is safe when they
 * are replayed in the order they were captured. A block allocated outside
 * the pool and freed during the capture is kept until the graph is reset or
 * destroyed (the graph may use it), but it is freed for the caller: every
 * checked call and a second xdev_free refuse the pointer. Memory the graph
 * uses must otherwise stay allocated
 * while the graph is replayed: freeing it and replaying writes freed memory,
 * as with torch.
 *
 * Random numbers. A fill captured in a graph draws new numbers on each
 * replay: a replay starts where the generator's offset stands (rounded up to
 * a multiple of 4 words) and advances it by everything the graph draws
 * (rounded up to 4 words as well), so replays produce exactly what the same
 * fills run eagerly from that state would, bit for bit, on every backend.
 * The generator's state reaches the graph through a small device cell that
 * a replay rewrites, on its stream, only when the generator moved since the
 * last replay (eager fills, a reseed): replays of one graph on several
 * streams that draw random numbers must then be ordered (events), as
 * replays sharing any memory must be. Replays of one graph run in the order
 * they were launched, one at a time (CUDA's rule; the CPU backend keeps it).
 *
 * Threads: a graph may be replayed from several threads; reset and destroy
 * wait for pending replays and fail cleanly for a replay that comes after. */
#ifndef XDEV_GRAPH_H
#define XDEV_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "xdev/mempool.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xdev_graph *xdev_graph_t;

/* Which threads the capture's rule against unrecordable calls covers (see above). */
typedef enum xdev_capture_mode {
    XDEV_CAPTURE_GLOBAL = 0,
    XDEV_CAPTURE_THREAD_LOCAL = 1,
    XDEV_CAPTURE_RELAXED = 2,
} xdev_capture_mode_t;

/* ----------------------------------------------------------------- graphs */

/* A new, empty graph (torch.cuda.CUDAGraph()). */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_create(xdev_graph_t *out);

/* Start capturing the work of `stream` (NULL: the current stream of the
 * current device) into g, which must be empty (new or reset). `pool`: the
 * pool its allocations come from, NULL for a new private one; a pool of
 * another device is XDEV_ERROR_CROSS_DEVICE. A stream already capturing is
 * XDEV_ERROR_CAPTURE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_capture_begin(xdev_graph_t g, xdev_stream_t stream,
                                                            xdev_capture_mode_t mode,
                                                            xdev_mempool_t pool);

/* Stop capturing and make the graph, ready to replay. Fails (the graph stays
 * empty, its pool released) when the capture was invalidated or a forked
 * stream did not join back; either way the stream records no more. A fork
 * joins back when the capturing stream waits on an event recorded on it
 * after its last work - directly, or through another stream that joins
 * back itself. A fork with no work has nothing to join (as on CUDA, whose
 * capture ends with such a stream's dependencies already in the capturing
 * stream's past); work joined only into a fork that never joins back is
 * unjoined (CUDA's cudaErrorStreamCaptureUnjoined). On a thread other
 * than the one that began a global or thread_local capture:
 * XDEV_ERROR_CAPTURE, the capture goes on (see "Ending a capture" above);
 * after that thread exited: XDEV_ERROR_CAPTURE, once. */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_capture_end(xdev_graph_t g);

/* Enqueue one replay of g on `stream` (NULL: the current stream of g's
 * device); another device's stream is XDEV_ERROR_CROSS_DEVICE, a graph not
 * captured (or reset) is XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_replay(xdev_graph_t g, xdev_stream_t stream);

/* Wait for g's pending replays, then free what was captured and release its
 * pool reference; g is empty again (torch's reset()). While it waits, other
 * threads and host functions may use g: a replay or a capture into it is
 * refused (XDEV_ERROR_INVALID_VALUE, "being reset"), another reset gets
 * XDEV_ERROR_NOT_READY. A failed wait leaves g as it was. */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_reset(xdev_graph_t g);

/* Reset, then free the handle. */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_destroy(xdev_graph_t g);

/* The pool g allocates from (NULL when g has none): pass it to another
 * capture to share it (torch's graph.pool()). Valid while g holds it. */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_pool(xdev_graph_t g, xdev_mempool_t *out);

/* A number that names g in traces and snapshots (unique in the process). */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_id(xdev_graph_t g, uint64_t *out);

/* Whether `stream` (NULL: the current stream of the current device) is
 * capturing, itself or as a forked stream (torch.cuda.is_current_stream_capturing). */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_is_capturing(xdev_stream_t stream, bool *out);

#ifdef __cplusplus
}
#endif

#endif
