/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_event.c - CPU events: positions in a stream's queue.
 *
 * Each record gets a sequence number (1, 2, ...) at the call and enqueues a
 * RECORD op; the worker that reaches it marks that seq reached and, for
 * timing events, stores CLOCK_MONOTONIC. As in CUDA, the event's state is
 * that of its latest record: query/synchronize look at the latest seq, and a
 * wait_event captures the latest seq at the call and waits for that record.
 *
 * Records of one event may sit on several streams and be reached out of
 * order, so "reached" is not a counter: the event keeps the small set of
 * seqs recorded but not yet reached (`pending`, usually 0 or 1 entries).
 *
 * Queued ops hold a reference, so an event may be destroyed while records
 * or waits on it are still queued; the last reference frees it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_clock.h"
#include "cpu/cpu_internal.h"
#include "xdev/event.h"

#define XDEV_CPU_EVENT_INLINE_PENDING 4

struct xdev_cpu_event {
    atomic_int refs; /* the handle + one per queued record/wait op */
    int device;
    unsigned flags;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* synchronize and queue waits sleep here */
    /* Under mu: */
    uint64_t recorded;                    /* seq of the latest record; 0 = never recorded */
    const xdev_cpu_stream_t *recorded_on; /* its stream (compared, never dereferenced) */
    uint64_t *pending;                    /* recorded, not yet reached */
    size_t npending, cap;
    uint64_t time_seq; /* seq whose time is in time_ns */
    int64_t time_ns;
    int waiters;
    /* latest_done() mirrored for lock-free query: written under mu, release. */
    atomic_bool idle;
    uint64_t inline_pending[XDEV_CPU_EVENT_INLINE_PENDING];
    /* The latest record was captured (cpu_graph.c): the graph's id, the
     * stream and the record's number in the capture; 0 after a plain record. Under mu. */
    uint64_t captured_graph;
    const xdev_cpu_stream_t *captured_on;
    uint64_t captured_count;
};

void xdev_cpu_event_set_captured(xdev_cpu_event_t *e, uint64_t graph_id, const xdev_cpu_stream_t *s,
                                 uint64_t count) {
    pthread_mutex_lock(&e->mu);
    e->captured_graph = graph_id;
    e->captured_on = s;
    e->captured_count = count;
    pthread_mutex_unlock(&e->mu);
}

uint64_t xdev_cpu_event_captured(xdev_cpu_event_t *e, const xdev_cpu_stream_t **s,
                                 uint64_t *count) {
    pthread_mutex_lock(&e->mu);
    uint64_t id = e->captured_graph;
    *s = e->captured_on;
    *count = e->captured_count;
    pthread_mutex_unlock(&e->mu);
    return id;
}

static bool is_pending(const xdev_cpu_event_t *e, uint64_t seq) {
    for (size_t i = 0; i < e->npending; i++)
        if (e->pending[i] == seq) return true;
    return false;
}

/* Latest record reached (or never recorded). Under mu. */
static bool latest_done(const xdev_cpu_event_t *e) {
    return e->recorded == 0 || !is_pending(e, e->recorded);
}

static void free_event(xdev_cpu_event_t *e) {
    if (e->pending != e->inline_pending) free(e->pending);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

void xdev_cpu_event_release(xdev_cpu_event_t *e) {
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) free_event(e);
}

void xdev_cpu_event_reached(xdev_cpu_event_t *e, uint64_t seq) {
    int64_t now = 0;
    if (e->flags & XDEV_EVENT_TIMING) now = xdev_cpu_now_ns();
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->npending; i++) {
        if (e->pending[i] == seq) {
            e->pending[i] = e->pending[--e->npending];
            break;
        }
    }
    if (seq == e->recorded) atomic_store_explicit(&e->idle, true, memory_order_release);
    /* A record reached late must not overwrite a newer record's time. */
    if (seq > e->time_seq) {
        e->time_seq = seq;
        e->time_ns = now;
    }
    if (e->waiters > 0) pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Block until record `seq` is reached (or is it already). */
static void wait_seq_locked(xdev_cpu_event_t *e, uint64_t seq) {
    if (!is_pending(e, seq)) return;
    e->waiters++;
    while (is_pending(e, seq))
        pthread_cond_wait(&e->cv, &e->mu);
    e->waiters--;
}

void xdev_cpu_event_wait_seq(xdev_cpu_event_t *e, uint64_t seq) {
    pthread_mutex_lock(&e->mu);
    wait_seq_locked(e, seq);
    pthread_mutex_unlock(&e->mu);
}

uint64_t xdev_cpu_event_capture(xdev_cpu_event_t *e) {
    if (atomic_load_explicit(&e->idle, memory_order_acquire)) return 0;
    pthread_mutex_lock(&e->mu);
    uint64_t seq = latest_done(e) ? 0 : e->recorded;
    pthread_mutex_unlock(&e->mu);
    if (seq != 0) atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    return seq;
}

/* Add seq to the pending set; false when out of memory. Under mu. */
static bool add_pending(xdev_cpu_event_t *e, uint64_t seq) {
    if (e->npending == e->cap) {
        size_t cap = e->cap * 2;
        uint64_t *grown;
        if (e->pending == e->inline_pending) {
            grown = malloc(cap * sizeof *grown);
            if (grown != NULL) memcpy(grown, e->pending, e->npending * sizeof *grown);
        } else {
            grown = realloc(e->pending, cap * sizeof *grown);
        }
        if (grown == NULL) return false;
        e->pending = grown;
        e->cap = cap;
    }
    e->pending[e->npending++] = seq;
    return true;
}

/* ------------------------------------------------------------ the vtable */

static xdev_status_t event_create(xdev_cpu_device_t *dev, unsigned flags, void **out) {
    int device = dev->index;
    xdev_cpu_event_t *e = calloc(1, sizeof *e);
    if (e == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d cannot allocate an event: out of host memory", device);
    int rc = pthread_mutex_init(&e->mu, NULL);
    if (rc == 0) {
        rc = pthread_cond_init(&e->cv, NULL);
        if (rc != 0) pthread_mutex_destroy(&e->mu);
    }
    if (rc != 0) {
        free(e);
        return xdev_cpu_error(XDEV_ERROR_BACKEND,
                              "cpu:%d cannot create an event: pthread init failed (%s)", device,
                              strerror(rc));
    }
    atomic_init(&e->refs, 1);
    atomic_init(&e->idle, true);
    e->device = device;
    e->flags = flags;
    e->pending = e->inline_pending;
    e->cap = XDEV_CPU_EVENT_INLINE_PENDING;
    *out = e;
    return XDEV_SUCCESS;
}

static xdev_status_t event_destroy(xdev_cpu_device_t *dev, void *event) {
    int device = dev->index;
    (void)device;
    if (event != NULL) xdev_cpu_event_release(event);
    return XDEV_SUCCESS;
}

/* The seq is taken under the stream's lock, so records and waits issued on
 * one stream by racing threads still get queue positions in seq order. */
static xdev_status_t event_record(xdev_cpu_device_t *dev, void *event, void *stream) {
    int device = dev->index;
    xdev_cpu_event_t *e = event;
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(device, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    if (xdev_cpu_stream_capturing(s)) return xdev_cpu_graph_record(s, e);
    xdev_cpu_op_t *op;
    st = xdev_cpu_stream_begin_op(s, &op);
    if (st != XDEV_SUCCESS) return st;
    pthread_mutex_lock(&e->mu);
    e->captured_graph = 0;
    uint64_t seq = e->recorded + 1;
    if (!add_pending(e, seq)) {
        pthread_mutex_unlock(&e->mu);
        xdev_cpu_stream_cancel_unlock(s, op);
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d cannot record an event: out of host memory", device);
    }
    e->recorded = seq;
    e->recorded_on = s;
    atomic_store_explicit(&e->idle, false, memory_order_relaxed);
    pthread_mutex_unlock(&e->mu);
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    op->kind = XDEV_CPU_OP_RECORD;
    op->u.mark.event = e;
    op->u.mark.seq = seq;
    xdev_cpu_stream_push_unlock(s, op);
    return XDEV_SUCCESS;
}

static xdev_status_t event_query(xdev_cpu_device_t *dev, void *event) {
    int device = dev->index;
    (void)device;
    xdev_cpu_event_t *e = event;
    return atomic_load_explicit(&e->idle, memory_order_acquire) ? XDEV_SUCCESS
                                                                : XDEV_ERROR_NOT_READY;
}

/* Waits for the record that was latest at the call; later re-records are
 * not waited for. Always sleeps (BLOCKING_SYNC or not). */
static xdev_status_t event_synchronize(xdev_cpu_device_t *dev, void *event) {
    int device = dev->index;
    (void)device;
    xdev_cpu_event_t *e = event;
    if (atomic_load_explicit(&e->idle, memory_order_acquire)) return XDEV_SUCCESS;
    pthread_mutex_lock(&e->mu);
    if (!latest_done(e) && e->recorded_on == xdev_cpu_stream_self()) {
        pthread_mutex_unlock(&e->mu);
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d: a host function cannot wait for an event recorded later "
                              "on its own stream (it would wait for itself)",
                              device);
    }
    if (e->recorded != 0) wait_seq_locked(e, e->recorded);
    pthread_mutex_unlock(&e->mu);
    return XDEV_SUCCESS;
}

/* Time of the latest record; the status says why there is none. */
static xdev_status_t event_time(int device, xdev_cpu_event_t *e, const char *which, int64_t *ns) {
    if (!(e->flags & XDEV_EVENT_TIMING))
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d %s event was created without XDEV_EVENT_TIMING", device,
                              which);
    pthread_mutex_lock(&e->mu);
    uint64_t recorded = e->recorded;
    bool done = latest_done(e);
    *ns = e->time_ns;
    pthread_mutex_unlock(&e->mu);
    if (recorded == 0)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu:%d %s event was never recorded",
                              device, which);
    if (!done)
        return xdev_cpu_error(XDEV_ERROR_NOT_READY, "cpu:%d %s event has not completed yet", device,
                              which);
    return XDEV_SUCCESS;
}

static xdev_status_t event_elapsed_time(xdev_cpu_device_t *dev, void *start, void *end, float *ms) {
    int device = dev->index;
    int64_t t0 = 0, t1 = 0;
    xdev_status_t st = event_time(device, start, "start", &t0);
    if (st != XDEV_SUCCESS) return st;
    st = event_time(device, end, "end", &t1);
    if (st != XDEV_SUCCESS) return st;
    *ms = (float)((double)(t1 - t0) / 1e6);
    return XDEV_SUCCESS;
}

const xdev_event_vtable_t xdev_cpu_event_vtable = {
    .size = sizeof(xdev_event_vtable_t),
    .create = event_create,
    .destroy = event_destroy,
    .record = event_record,
    .query = event_query,
    .synchronize = event_synchronize,
    .elapsed_time = event_elapsed_time,
};
