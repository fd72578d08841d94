/* SPDX-License-Identifier: Apache-2.0 */
/* capture.h - the state of a stream capture (xdev/graph.h) that the layers
 * below graph/ consult: which streams record into it (origin and forked
 * ones), its mode and thread for the rule against unrecordable calls, its
 * pool for allocations, the generators its random fills draw from, and
 * whether a call has invalidated it.
 *
 * A capture is owned by its graph (graph/graph.c); runtime keeps the list of
 * captures under way so that an unrecordable call on any thread can find
 * the ones its mode covers. The hot paths pay one relaxed load of
 * xdev_captures_active (zero when nothing captures). */
#ifndef XDEV_CORE_CAPTURE_H
#define XDEV_CORE_CAPTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/registry.h"

#define XDEV_CAPTURE_MAX_STREAMS 32
#define XDEV_CAPTURE_MAX_RNG 8

/* A generator that the capture's random fills draw from (math/rng.c). */
typedef struct xdev_capture_rng {
    void *generator; /* the xdev_generator_t, or NULL for the device's default one */
    uint64_t *cell;  /* device memory: key, base offset, the graph's total, 0 */
    uint64_t total;  /* words the capture draws from it */
    /* Replays (under the generator's lock): what the cell holds once the
     * last replay has run, and whether the total was written. */
    bool known, total_written;
    uint64_t key, next_offset;
} xdev_capture_rng_t;

typedef struct xdev_capture {
    uint64_t id;     /* the graph's */
    uint64_t serial; /* this capture's, unique in the process (observers tell captures apart) */
    void *owner;     /* the graph (graph/graph.c), for the thread-exit hook */
    xdev_device_record_t *rec;
    struct xdev_stream *origin;
    int mode; /* xdev_capture_mode_t */
    pthread_t thread;
    void *pool; /* alloc/'s xdev_mempool the capture allocates from */
    pthread_mutex_t lock;
    /* Under lock: */
    struct xdev_stream *streams[XDEV_CAPTURE_MAX_STREAMS]; /* origin first */
    int nstreams;
    xdev_status_t invalid; /* the first unrecordable call's status, else XDEV_SUCCESS */
    char reason[512];
    xdev_capture_rng_t rng[XDEV_CAPTURE_MAX_RNG];
    int nrng;
    void *deferred; /* alloc/: blocks freed during the capture, kept for the graph */
    bool active;
    struct xdev_capture *next; /* the list of captures under way */
} xdev_capture_t;

/* The serial of the capture graph q->ctx holds (XDEV_OP_GRAPH_REPLAY's step
 * 5, the graph locked by its replay), 0 if none (graph/graph.c). */
uint64_t xdev_graph_capture_serial(const void *graph);

/* Captures under way in the process (any device). */
extern _Atomic int xdev_captures_active;

/* Make c (zeroed but for id, rec, mode, pool) the capture of `origin`:
 * XDEV_ERROR_CAPTURE when origin already captures. */
xdev_status_t xdev_capture_start(xdev_capture_t *c, struct xdev_stream *origin);
/* Stop recording: every stream of c records no more; c leaves the list. */
void xdev_capture_stop(xdev_capture_t *c);
/* Mark c invalid (the first reason wins). */
void xdev_capture_invalidate(xdev_capture_t *c, xdev_status_t st, const char *reason);
/* Stream s waits on work recorded in capture `id`: s records into it from
 * now on (a fork), unless it already does. Nothing happens when the capture
 * has ended; an error when s captures another graph, is of another device,
 * or the capture spans too many streams. */
xdev_status_t xdev_capture_join_id(uint64_t id, struct xdev_stream *s);
/* The capture that `id` names while it is under way, else NULL (under the list lock: a
 * short-lived answer, for messages and checks). */
bool xdev_capture_is_active(uint64_t id);

/* The call `what` acts on capture c (a synchronize or query of a capturing
 * stream, or of an event recorded in it): invalidate c and fail. */
xdev_status_t xdev_capture_refuse(xdev_capture_t *c, const char *what);

/* The rule against unrecordable calls (device synchronize, blocking and
 * pageable copies, empty_cache, new backend memory outside a capture's
 * pool): XDEV_ERROR_CAPTURE naming `what`, and the captures whose mode
 * covers this thread invalidated, when there are any. */
xdev_status_t xdev_capture_unsafe_slow(const char *what);
static inline xdev_status_t xdev_capture_check_unsafe(const char *what) {
    if (atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) == 0) return XDEV_SUCCESS;
    return xdev_capture_unsafe_slow(what);
}
/* Every capture under way on device rec (at most cap), each lock held. */
int xdev_capture_lock_all_on_device(const xdev_device_record_t *rec, xdev_capture_t **out, int cap);
/* A wait on an event whose last record is in capture `id` (`what` names the
 * call): the capture is invalidated and the call fails; nothing happens
 * when the capture has ended. */
xdev_status_t xdev_capture_refuse_id(uint64_t id, const char *what);
/* The owners of the global and thread_local captures under way that the
 * calling thread began (at most cap): its exit ends them (graph/graph.c),
 * since only that thread may (xdev/graph.h, as cudaStreamEndCapture). */
int xdev_capture_owned_by_self(void **owners, int cap);
/* True when some capture is under way on device rec (its memory must not
 * go back to the backend meanwhile). */
bool xdev_capture_on_device(const xdev_device_record_t *rec);

#endif
