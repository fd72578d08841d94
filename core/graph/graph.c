/* SPDX-License-Identifier: Apache-2.0 */
/* graph.c - graphs (xdev/graph.h): capture a stream's work through the
 * backend's graph table, replay it, reset it.
 *
 * The graph owns its capture (runtime/capture.h: streams, mode, pool,
 * random-number cells, blocks kept) from capture_begin until reset. Replays
 * and the destroy of one graph meet on the graph's mutex, and a destroy
 * first waits for calls already inside the graph (`users`), so a replay
 * racing a destroy either runs whole before it or fails cleanly after.
 *
 * Only the thread that began a global or thread_local capture may end it
 * (graph.h, CUDA's rule), so when that thread exits first its exit hook
 * ends the capture there, invalidated (the backend's capture ends on the
 * thread CUDA requires), and leaves the graph empty with the reason, which
 * the next capture_end on any thread reports. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/handle_arena.h"
#include "base/spin_lock.h"
#include "math/rng_internal.h"
#include "alloc/mempool.h"
#include "runtime/capture.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/process.h"
#include "runtime/stream_internal.h"
#include "runtime/thread_state.h"
#include "runtime/enqueue.h"
#include "xdev/graph.h"

/* RESETTING: a reset waits for the device without the graph's lock (a host
 * function on one of its streams may use the graph meanwhile: it is
 * refused, where it used to wait for the lock, which the reset held while
 * it waited for that host function). */
enum { GRAPH_EMPTY = 0, GRAPH_CAPTURING = 1, GRAPH_READY = 2, GRAPH_RESETTING = 3 };

struct xdev_graph {
    xdev_handle_header_t hdr;
    /* Not a pthread mutex: a replay takes it on every call, and the spin
     * lock's uncontended pair is one atomic exchange and a store (~5
     * instructions against ~55 for pthread_mutex_lock + unlock). It sleeps
     * once spinning fails, so a reset holding it across a device
     * synchronize burns no core. Zeroed storage (a new slot) is unlocked. */
    xdev_spin_lock_t lock;
    _Atomic int users;    /* calls inside the graph (a destroy waits for them) */
    _Atomic bool closing; /* a destroy has begun */
    uint64_t id;
    /* Under lock: */
    int state;
    xdev_device_record_t *rec;
    xdev_capture_t *cap; /* CAPTURING and READY */
    void *native;        /* READY: the backend's graph */
    xdev_mempool_t pool; /* CAPTURING and READY: held */
    /* EMPTY: why the last capture ended when its thread exited ("" if it
     * did not), for the next capture_end to report. */
    char abandoned[320];
};

#define GRAPH_MAGIC 0x48505247u /* "GRPH" */
#define GRAPH_SLOT ((sizeof(struct xdev_graph) + 63) / 64 * 64)

static xdev_handle_arena_t g_graph_arena = XDEV_HANDLE_ARENA_INIT("graph", GRAPH_MAGIC, GRAPH_SLOT);
static _Atomic uint64_t g_next_id = 1;

/* What is wrong with g (graph_check's failures, out of line). */
static __attribute__((noinline, cold)) xdev_status_t graph_check_slow(xdev_graph_t g) {
    xdev_status_t pst = xdev_process_check();
    if (pst != XDEV_SUCCESS) return pst;
    if (g == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "graph argument 'g' is NULL");
    if (xdev_handle_is_live(&g_graph_arena, g)) return XDEV_SUCCESS;
    if (xdev_handle_is_slot(&g_graph_arena, g))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "graph %p has been destroyed", (void *)g);
    return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "'g' (%p) is not an xdev graph", (void *)g);
}

/* Inline for a live graph, with the arena's magic and slot size as
 * constants (xdev_handle_is_live_as); the slow function names the fault. */
static inline __attribute__((always_inline)) xdev_status_t graph_check(xdev_graph_t g) {
    if (__builtin_expect(
            atomic_load_explicit(&xdev_process_state, memory_order_relaxed) == 0 && g != NULL, 1) &&
        __builtin_expect(xdev_handle_is_live_as(&g_graph_arena, g, GRAPH_MAGIC, GRAPH_SLOT), 1))
        return XDEV_SUCCESS;
    return graph_check_slow(g);
}

/* Check g and count this call inside it; graph_leave undoes. After the
 * count, g is known to be a slot of the arena (slots stay slots), so only
 * its magic is read again: a destroy that freed it in between cleared it. */
static inline xdev_status_t graph_enter(xdev_graph_t g) {
    xdev_status_t st = graph_check(g);
    if (st != XDEV_SUCCESS) return st;
    atomic_fetch_add(&g->users, 1);
    if (atomic_load(&g->closing) ||
        atomic_load_explicit(&g->hdr.magic, memory_order_acquire) != GRAPH_MAGIC) {
        atomic_fetch_sub(&g->users, 1);
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "graph %p is being destroyed", (void *)g);
    }
    return XDEV_SUCCESS;
}

static void graph_leave(xdev_graph_t g) {
    atomic_fetch_sub(&g->users, 1);
}

/* Inline: the replay's stream check is on every call. */
static inline __attribute__((always_inline)) xdev_status_t resolve_stream(xdev_device_record_t *rec,
                                                                          xdev_stream_t *s) {
    if (*s != NULL) return xdev_stream_check(*s, "stream");
    return rec != NULL ? xdev_core_current_stream(rec, s) : xdev_core_current_stream_default(s);
}

/* Free what a capture holds once nothing can run it any more (lock held). */
static void drop_capture(xdev_graph_t g) {
    xdev_capture_t *cap = g->cap;
    if (cap != NULL) {
        xdev_rng_capture_release(cap);
        xdev_mempool_drop_deferred(cap);
        pthread_mutex_destroy(&cap->lock);
        free(cap);
    }
    if (g->pool != NULL) xdev_mempool_release_graph(g->pool);
    g->cap = NULL;
    g->pool = NULL;
    g->native = NULL;
    g->state = GRAPH_EMPTY;
}

static const char *mode_name(int mode) {
    return mode == XDEV_CAPTURE_GLOBAL         ? "global"
           : mode == XDEV_CAPTURE_THREAD_LOCAL ? "thread_local"
                                               : "relaxed";
}

/* The thread that began g's global or thread_local capture is exiting
 * (lock held, on that thread): end the capture, invalidated, and drop it;
 * g is empty and remembers why. */
static void abandon_locked(xdev_graph_t g) {
    xdev_capture_t *cap = g->cap;
    if (g->state != GRAPH_CAPTURING || cap->mode == XDEV_CAPTURE_RELAXED ||
        !pthread_equal(cap->thread, pthread_self()))
        return;
    char why[sizeof g->abandoned];
    snprintf(why, sizeof why,
             "the thread that began graph %llu's capture (mode %s, which only that thread may "
             "end) exited before capture_end; the capture was ended then and recorded nothing",
             (unsigned long long)g->id, mode_name(cap->mode));
    xdev_capture_invalidate(cap, XDEV_ERROR_CAPTURE, why);
    void *native = NULL;
    if (xdev_be_graph_capture_end(g->rec, cap->origin->native, &native) == XDEV_SUCCESS)
        (void)xdev_be_graph_destroy(g->rec, native);
    xdev_capture_stop(cap);
    drop_capture(g);
    memcpy(g->abandoned, why, sizeof why);
}

/* Thread exit (runtime/hooks.h): end the captures only this thread could
 * have ended. A graph capturing cannot be destroyed (reset refuses) and
 * only this thread can end its capture, so each owner found stays valid. */
static void thread_exit(void) {
    void *owners[16];
    int n;
    while ((n = xdev_capture_owned_by_self(owners, 16)) > 0) {
        for (int i = 0; i < n; i++) {
            xdev_graph_t g = owners[i];
            xdev_spin_lock(&g->lock);
            abandon_locked(g);
            xdev_spin_unlock(&g->lock);
        }
        if (n < 16) break;
    }
}

void xdev_graph_wire(void) {
    xdev_hook_thread_exit_add(thread_exit);
}

/* Reset a READY graph (lock held on entry and return, dropped while the
 * device is waited for): wait for its replays, free it. */
static xdev_status_t reset_locked(xdev_graph_t g) {
    if (g->state == GRAPH_RESETTING)
        return XDEV_FAIL(XDEV_ERROR_NOT_READY,
                         "graph %llu is being reset or destroyed by another thread: try again",
                         (unsigned long long)g->id);
    if (g->state == GRAPH_CAPTURING)
        return XDEV_FAIL(XDEV_ERROR_CAPTURE,
                         "graph %llu is capturing: end the capture (capture_end) first",
                         (unsigned long long)g->id);
    g->abandoned[0] = '\0';
    if (g->state == GRAPH_EMPTY) return XDEV_SUCCESS;
    xdev_status_t st = xdev_capture_check_unsafe("resetting or destroying a graph (it waits for "
                                                 "the device)");
    if (st == XDEV_SUCCESS && xdev_capture_on_device(g->rec))
        st = XDEV_FAIL(XDEV_ERROR_CAPTURE,
                       "resetting or destroying graph %llu waits for " XDEV_REC_FMT
                       ", on which another capture is under way: wait for its capture_end",
                       (unsigned long long)g->id, XDEV_REC_ARGS(g->rec));
    if (st != XDEV_SUCCESS) return st;
    g->state = GRAPH_RESETTING; /* no replay enqueues it from now on */
    xdev_spin_unlock(&g->lock);
    st = xdev_be_device_synchronize(g->rec);
    xdev_spin_lock(&g->lock);
    if (st != XDEV_SUCCESS) {
        g->state = GRAPH_READY; /* kept whole: replays may still run it */
        return st;
    }
    (void)xdev_be_graph_destroy(g->rec, g->native);
    drop_capture(g);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- public API */

xdev_status_t xdev_graph_create(xdev_graph_t *out) {
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_graph_t g = xdev_handle_alloc(&g_graph_arena);
    if (g == NULL) return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for a graph handle");
    g->id = atomic_fetch_add(&g_next_id, 1);
    *out = g;
    return XDEV_SUCCESS;
}

/* capture_begin's work (g entered and locked). */
static xdev_status_t begin_locked(xdev_graph_t g, xdev_stream_t stream, xdev_capture_mode_t mode,
                                  xdev_mempool_t pool) {
    if (g->state != GRAPH_EMPTY)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         g->state == GRAPH_CAPTURING ? "graph %llu is already capturing (capture "
                                                       "begun twice)"
                         : g->state == GRAPH_RESETTING
                             ? "graph %llu is being reset by another thread: capture into it "
                               "once that returns"
                             : "graph %llu already holds a capture: reset it first",
                         (unsigned long long)g->id);
    xdev_device_record_t *rec = stream->rec;
    if (!XDEV_HAS(rec->be, graph, capture_begin)) /* the group graph.capture, whole */
        return xdev_backend_not_supported(rec->be,
                                          "graph.capture_begin/capture_end/launch/destroy");
    xdev_status_t st = xdev_mempool_supported(rec);
    if (st != XDEV_SUCCESS) return st;
    if (pool != NULL) {
        if ((st = xdev_mempool_check(pool, "pool")) != XDEV_SUCCESS) return st;
        if (pool->rec != rec)
            return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "the pool belongs to " XDEV_REC_FMT " but the stream to " XDEV_REC_FMT,
                             XDEV_REC_ARGS(pool->rec), XDEV_REC_ARGS(rec));
        xdev_mempool_retain_graph(pool);
    } else {
        if ((st = xdev_mempool_new(rec, NULL, &pool)) != XDEV_SUCCESS) return st;
        xdev_mempool_retain_graph(pool);
        xdev_mempool_drop_user(pool); /* the graph's reference only */
    }
    xdev_capture_t *cap = calloc(1, sizeof *cap);
    if (cap == NULL) {
        xdev_mempool_release_graph(pool);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a capture");
    }
    cap->id = g->id;
    cap->owner = g;
    cap->rec = rec;
    cap->mode = (int)mode;
    cap->pool = pool;
    g->rec = rec;
    g->cap = cap;
    g->pool = pool;
    st = xdev_capture_start(cap, stream);
    if (st == XDEV_SUCCESS) {
        st = xdev_be_graph_capture_begin(rec, stream->native, (int)mode);
        if (st != XDEV_SUCCESS) xdev_capture_stop(cap);
    }
    if (st != XDEV_SUCCESS) {
        drop_capture(g);
        return st;
    }
    g->state = GRAPH_CAPTURING;
    g->abandoned[0] = '\0';
    return XDEV_SUCCESS;
}

xdev_status_t xdev_graph_capture_begin(xdev_graph_t g, xdev_stream_t stream,
                                       xdev_capture_mode_t mode, xdev_mempool_t pool) {
    if ((unsigned)mode > XDEV_CAPTURE_RELAXED)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "mode %d is not an xdev_capture_mode_t (GLOBAL 0, THREAD_LOCAL 1, "
                             "RELAXED 2)",
                             (int)mode);
    XDEV_CHECK(resolve_stream(NULL, &stream));
    XDEV_CHECK(graph_enter(g));
    (void)xdev_thread_state(); /* its release at thread exit runs thread_exit */
    xdev_spin_lock(&g->lock);
    xdev_status_t st = begin_locked(g, stream, mode, pool);
    xdev_spin_unlock(&g->lock);
    graph_leave(g);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

static xdev_status_t end_locked(xdev_graph_t g) {
    if (g->state == GRAPH_EMPTY && g->abandoned[0] != '\0') {
        xdev_status_t st =
            XDEV_FAIL(XDEV_ERROR_CAPTURE, "the capture of graph %llu was invalidated: %s",
                      (unsigned long long)g->id, g->abandoned);
        g->abandoned[0] = '\0';
        return st;
    }
    if (g->state != GRAPH_CAPTURING)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "graph %llu is not capturing (capture_end without capture_begin)",
                         (unsigned long long)g->id);
    xdev_capture_t *cap = g->cap;
    xdev_stream_t origin = cap->origin;
    if (cap->mode != XDEV_CAPTURE_RELAXED && !pthread_equal(cap->thread, pthread_self()))
        return XDEV_FAIL(XDEV_ERROR_CAPTURE,
                         "graph %llu's capture (mode %s) must end on the thread that began it "
                         "(CUDA keeps such a capture going); it is still under way, and ends "
                         "when that thread exits",
                         (unsigned long long)g->id, mode_name(cap->mode));
    pthread_mutex_lock(&cap->lock);
    bool valid = cap->invalid == XDEV_SUCCESS;
    pthread_mutex_unlock(&cap->lock);
    xdev_status_t fst = valid ? xdev_rng_capture_finish(cap) : XDEV_SUCCESS;
    void *native = NULL;
    xdev_status_t st = xdev_be_graph_capture_end(g->rec, origin->native, &native);
    xdev_capture_stop(cap);
    pthread_mutex_lock(&cap->lock);
    xdev_status_t inv = cap->invalid;
    char reason[sizeof cap->reason];
    memcpy(reason, cap->reason, sizeof reason);
    pthread_mutex_unlock(&cap->lock);
    if (st == XDEV_SUCCESS && (inv != XDEV_SUCCESS || fst != XDEV_SUCCESS))
        (void)xdev_be_graph_destroy(g->rec, native);
    if (inv != XDEV_SUCCESS) {
        drop_capture(g);
        return XDEV_FAIL(inv, "the capture of graph %llu was invalidated: %s",
                         (unsigned long long)g->id, reason);
    }
    if (st != XDEV_SUCCESS || fst != XDEV_SUCCESS) {
        xdev_status_t bad = st != XDEV_SUCCESS ? st : fst;
        drop_capture(g);
        return bad; /* the backend's message */
    }
    g->native = native;
    g->state = GRAPH_READY;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_graph_capture_end(xdev_graph_t g) {
    XDEV_CHECK(graph_enter(g));
    xdev_spin_lock(&g->lock);
    xdev_status_t st = end_locked(g);
    xdev_spin_unlock(&g->lock);
    graph_leave(g);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

/* The enqueue path's steps of a replay (runtime/enqueue.h), q->ctx the
 * graph, locked. Graphs do not nest. */
static xdev_status_t replay_capture(xdev_enqueue_t *q) {
    if (atomic_load_explicit(&q->stream->capture, memory_order_acquire) != NULL)
        return XDEV_FAIL(XDEV_ERROR_CAPTURE,
                         "replaying graph %llu on a capturing stream is not supported (graphs do "
                         "not nest)",
                         (unsigned long long)((xdev_graph_t)q->ctx)->id);
    return XDEV_SUCCESS;
}

/* The random-number cells brought up to date, then the backend's launch; a
 * failure enqueues nothing (its span is cancelled). */
static __attribute__((noinline)) xdev_status_t replay_call_rng(xdev_enqueue_t *q) {
    xdev_graph_t g = q->ctx;
    xdev_status_t st = xdev_rng_capture_replay(g->cap, q->stream);
    if (st == XDEV_SUCCESS) {
        st = xdev_be_graph_launch(g->rec, g->native, q->stream->native);
        if (st != XDEV_SUCCESS) xdev_rng_capture_forget(g->cap);
    }
    q->cancel = st != XDEV_SUCCESS;
    return st;
}

/* Without random-number cells (the common graph) the launch alone, kept
 * apart from the cells' path so that it saves no registers for it
 * (xdev_enqueue cleared q->cancel before the call). */
static xdev_status_t replay_call(xdev_enqueue_t *q) {
    xdev_graph_t g = q->ctx;
    if (g->cap->nrng > 0) return replay_call_rng(q);
    xdev_status_t st = xdev_be_graph_launch(g->rec, g->native, q->stream->native);
    if (__builtin_expect(st != XDEV_SUCCESS, 0)) q->cancel = true;
    return st;
}

static void replay_trace_args(xdev_enqueue_t *q) {
    xdev_enqueue_span_args(q, "\"graph\":%lld", (long long)((xdev_graph_t)q->ctx)->id);
}

static xdev_status_t replay_locked(xdev_graph_t g, xdev_stream_t stream) {
    if (g->state != GRAPH_READY)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         g->state == GRAPH_CAPTURING ? "graph %llu is still capturing: end the "
                                                       "capture first"
                         : g->state == GRAPH_RESETTING
                             ? "graph %llu is being reset or destroyed (by another thread, which "
                               "waits for the device)"
                             : "graph %llu holds nothing to replay (never captured, or reset: its "
                               "pool was released)",
                         (unsigned long long)g->id);
    if (stream->rec != g->rec)
        return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                         "graph %llu was captured on " XDEV_REC_FMT
                         " and cannot be replayed on a stream of " XDEV_REC_FMT,
                         (unsigned long long)g->id, XDEV_REC_ARGS(g->rec),
                         XDEV_REC_ARGS(stream->rec));
    xdev_status_t st = xdev_mempool_check_awake(g->pool, g->id); /* its pool slept with all */
    if (st != XDEV_SUCCESS) return st;
    xdev_enqueue_t q; /* set field by field: an initializer clears it with rep stos */
    xdev_enqueue_set(&q, XDEV_OP_GRAPH_REPLAY, "graph_replay", stream, g, replay_call);
    q.flags = XDEV_ENQUEUE_WAIT_LATER; /* xdev_graph_replay waits, the graph unlocked */
    q.capture = replay_capture;
    q.trace_args = replay_trace_args;
    return xdev_enqueue(&q);
}

xdev_status_t xdev_graph_replay(xdev_graph_t g, xdev_stream_t stream) {
    XDEV_CHECK(graph_enter(g));
    xdev_status_t st = XDEV_SUCCESS;
    xdev_spin_lock(&g->lock);
    xdev_device_record_t *rec = g->rec;
    if (stream == NULL && rec == NULL)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "graph %llu holds nothing to replay",
                       (unsigned long long)g->id);
    if (st == XDEV_SUCCESS) st = resolve_stream(rec, &stream);
    if (st == XDEV_SUCCESS) st = replay_locked(g, stream);
    xdev_spin_unlock(&g->lock);
    graph_leave(g);
    XDEV_CHECK(st);
    XDEV_CHECK(xdev_core_after_enqueue(stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_graph_reset(xdev_graph_t g) {
    XDEV_CHECK(graph_enter(g));
    xdev_spin_lock(&g->lock);
    xdev_status_t st = reset_locked(g);
    xdev_spin_unlock(&g->lock);
    graph_leave(g);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_graph_destroy(xdev_graph_t g) {
    XDEV_CHECK(graph_check(g));
    bool was = false;
    if (!atomic_compare_exchange_strong(&g->closing, &was, true))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE,
                             "graph %p is already being destroyed by another thread", (void *)g);
    while (atomic_load(&g->users) != 0)
        sched_yield();
    xdev_spin_lock(&g->lock);
    xdev_status_t st = reset_locked(g);
    xdev_spin_unlock(&g->lock);
    if (st != XDEV_SUCCESS) {
        atomic_store(&g->closing, false);
        XDEV_CHECK(st);
    }
    xdev_handle_free(&g_graph_arena, g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_graph_pool(xdev_graph_t g, xdev_mempool_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(graph_enter(g));
    xdev_spin_lock(&g->lock);
    *out = g->pool;
    xdev_spin_unlock(&g->lock);
    graph_leave(g);
    return XDEV_SUCCESS;
}

/* The serial of the capture g holds, 0 if none (an observer's, from the
 * replay's step 5: g->lock held by the replay). */
uint64_t xdev_graph_capture_serial(const void *graph) {
    const struct xdev_graph *g = graph;
    return g->state == GRAPH_READY && g->cap != NULL ? g->cap->serial : 0;
}

xdev_status_t xdev_graph_id(xdev_graph_t g, uint64_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(graph_check(g));
    *out = g->id;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_is_capturing(xdev_stream_t stream, bool *out) {
    XDEV_REQUIRE_ARG(out);
    *out = false;
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(resolve_stream(NULL, &stream));
    *out = atomic_load_explicit(&stream->capture, memory_order_acquire) != NULL;
    return XDEV_SUCCESS;
}
