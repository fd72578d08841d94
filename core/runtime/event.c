/* SPDX-License-Identifier: Apache-2.0 */
/* event.c - event objects: lazy binding to a device at first record,
 * record/query/synchronize, elapsed time with torch's error cases. */
#include <stdio.h>
#include <string.h>

#include "runtime/stream_order.h"
#include "runtime/enqueue.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/process.h"
#include "base/error_internal.h"
#include "runtime/capture.h"
#include "runtime/event_internal.h"
#include "runtime/stream_internal.h"
#include "runtime/sync_debug.h"

#define EVENT_FLAGS_ALL (XDEV_EVENT_TIMING | XDEV_EVENT_BLOCKING_SYNC | XDEV_EVENT_INTERPROCESS)

xdev_handle_arena_t xdev_event_arena =
    XDEV_HANDLE_ARENA_INIT("event", XDEV_EVENT_MAGIC, XDEV_EVENT_SLOT);

xdev_status_t xdev_event_check_slow(xdev_event_t e, const char *arg) {
    xdev_status_t pst = xdev_process_check(); /* a forked child, or exiting */
    if (pst != XDEV_SUCCESS) return pst;
    if (e == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "event argument '%s' is NULL", arg);
    if (xdev_handle_is_live(&xdev_event_arena, e)) return XDEV_SUCCESS;
    if (xdev_handle_is_slot(&xdev_event_arena, e))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "event '%s' (%p) has been destroyed", arg,
                         (void *)e);
    return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "'%s' (%p) is not an xdev event", arg, (void *)e);
}

xdev_status_t xdev_event_create(unsigned flags, xdev_event_t *out) {
    XDEV_REQUIRE_ARG(out);
    if (flags & ~(unsigned)EVENT_FLAGS_ALL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "unknown event flags 0x%x",
                             flags & ~(unsigned)EVENT_FLAGS_ALL);
    if ((flags & XDEV_EVENT_TIMING) && (flags & XDEV_EVENT_INTERPROCESS))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "XDEV_EVENT_INTERPROCESS cannot be combined with XDEV_EVENT_TIMING "
                             "(interprocess events do not time)");
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_event_t e = xdev_core_event_new(flags);
    if (e == NULL) return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for an event handle");
    *out = e;
    return XDEV_SUCCESS;
}

xdev_event_t xdev_core_event_new(unsigned flags) {
    xdev_event_t e = xdev_handle_alloc(&xdev_event_arena);
    if (e == NULL) return NULL;
    e->flags = flags;
    pthread_mutex_init(&e->lock, NULL);
    return e;
}

xdev_status_t xdev_event_destroy(xdev_event_t event) {
    XDEV_CHECK(xdev_event_check(event, "event"));
    xdev_device_record_t *rec = atomic_load(&event->rec);
    xdev_status_t st = XDEV_SUCCESS;
    if (rec != NULL) st = xdev_be_event_destroy(rec, event->native);
    xdev_order_on_event_destroy(event);
    pthread_mutex_destroy(&event->lock);
    xdev_handle_free(&xdev_event_arena, event);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

/* A record whose event is not bound to the stream's device yet (its first
 * record: make the native event, under the event's lock, once) or is bound
 * to another device (refused). Out of line: every later record on the
 * event's device skips it. On success the lock is held for the backend's
 * record (*locked); on failure the caller cancels the op. */
static __attribute__((noinline)) xdev_status_t record_bind(xdev_event_t event,
                                                           xdev_device_record_t *srec) {
    pthread_mutex_lock(&event->lock);
    xdev_device_record_t *erec = atomic_load_explicit(&event->rec, memory_order_relaxed);
    xdev_status_t st = XDEV_SUCCESS;
    if (erec == NULL) {
        st = xdev_be_event_create(srec, event->flags, &event->native);
        if (st == XDEV_SUCCESS) {
            event->device = srec->id;
            atomic_store_explicit(&event->rec, srec, memory_order_release);
        }
    } else if (erec != srec) {
        st = XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                       "the event belongs to " XDEV_REC_FMT " (its first record) and cannot "
                       "be recorded on a stream of " XDEV_REC_FMT,
                       XDEV_REC_ARGS(erec), XDEV_REC_ARGS(srec));
    }
    if (st != XDEV_SUCCESS) pthread_mutex_unlock(&event->lock);
    return st;
}

/* The enqueue path's steps of a record (enqueue.h), q->ctx the event:
 * the backend's record on the stream's device (the backends' records are
 * thread-safe), the event's native one made by its first record, under its
 * lock, once (record_bind, which keeps the lock through the backend's
 * record); then the capture the record lands in. A failure before the
 * backend's record enqueues nothing (its span is cancelled). */
static inline __attribute__((always_inline)) xdev_status_t record_call(xdev_enqueue_t *q) {
    xdev_event_t event = q->ctx;
    xdev_stream_t stream = q->stream;
    xdev_device_record_t *srec = stream->rec;
    bool locked = atomic_load_explicit(&event->rec, memory_order_acquire) != srec;
    if (__builtin_expect(locked, 0)) {
        xdev_status_t st = record_bind(event, srec);
        if (st != XDEV_SUCCESS) {
            q->cancel = true;
            return st;
        }
    }
    xdev_status_t st = xdev_be_event_record(srec, event->native, stream->native);
    if (st == XDEV_SUCCESS) {
        xdev_capture_t *cap = atomic_load_explicit(&stream->capture, memory_order_acquire);
        atomic_store_explicit(&event->capture_id, cap != NULL ? cap->id : 0, memory_order_relaxed);
    }
    if (__builtin_expect(locked, 0)) pthread_mutex_unlock(&event->lock);
    return st;
}

static void record_trace_args(xdev_enqueue_t *q) {
    xdev_enqueue_span_args(q, "\"event\":\"%p\"", q->ctx);
}

static void record_order(const xdev_enqueue_t *q) {
    xdev_order_on_event_record((xdev_event_t)q->ctx, q->stream);
}

/* The record itself, inline in both public ways to record (this file's
 * xdev_event_record and xdev_core_event_record for stream.c). The op is
 * set field by field (xdev_enqueue_set): an initializer would zero its
 * ~180 bytes first, a block fill that cost more than the rest of the op. */
static inline __attribute__((always_inline)) xdev_status_t event_record(xdev_event_t event,
                                                                        xdev_stream_t stream) {
    xdev_status_t st = xdev_event_check(event, "event");
    if (st != XDEV_SUCCESS) return st;
    st = stream == NULL ? xdev_core_current_stream_default(&stream)
                        : xdev_stream_check(stream, "stream");
    if (st != XDEV_SUCCESS) return st;
    xdev_enqueue_t q;
    xdev_enqueue_set(&q, XDEV_OP_EVENT_RECORD, "event_record", stream, event, record_call);
    q.trace_args = record_trace_args;
    q.order = record_order;
    return xdev_enqueue(&q);
}

xdev_status_t xdev_core_event_record(xdev_event_t event, xdev_stream_t stream) {
    return event_record(event, stream);
}

xdev_status_t xdev_event_record(xdev_event_t event, xdev_stream_t stream) {
    xdev_status_t st = event_record(event, stream);
    if (__builtin_expect(st != XDEV_SUCCESS, 0)) return xdev_core_blame(st, __func__);
    return XDEV_SUCCESS;
}

/* An event whose last record is in a capture under way has not happened
 * and never will before the capture ends: waiting on it is refused. */
static xdev_status_t check_captured(xdev_event_t event, const char *what) {
    if (atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) == 0) return XDEV_SUCCESS;
    pthread_mutex_lock(&event->lock);
    uint64_t id = atomic_load_explicit(&event->capture_id, memory_order_relaxed);
    pthread_mutex_unlock(&event->lock);
    return id == 0 ? XDEV_SUCCESS : xdev_capture_refuse_id(id, what);
}

/* Has the event's work finished? A failure is blamed on `api`, the public
 * call the user made (a query inside xdev_event_elapsed_time names it). */
static xdev_status_t query(xdev_event_t event, const char *api) {
    xdev_device_record_t *rec = atomic_load_explicit(&event->rec, memory_order_acquire);
    if (rec == NULL) return XDEV_SUCCESS; /* never recorded: nothing pending (torch) */
    xdev_status_t st = check_captured(event, "a query of an event recorded in the capture");
    if (st == XDEV_SUCCESS) st = xdev_be_event_query(rec, event->native);
    if (st == XDEV_SUCCESS) xdev_order_on_host_waits_event(event);
    if (st == XDEV_SUCCESS || st == XDEV_ERROR_NOT_READY) return st;
    return xdev_core_blame(st, api);
}

xdev_status_t xdev_event_query(xdev_event_t event) {
    XDEV_CHECK(xdev_event_check(event, "event"));
    return query(event, __func__);
}

xdev_status_t xdev_event_synchronize(xdev_event_t event) {
    XDEV_CHECK(xdev_event_check(event, "event"));
    xdev_device_record_t *rec = atomic_load_explicit(&event->rec, memory_order_acquire);
    if (rec == NULL) return XDEV_SUCCESS;
    XDEV_CHECK(check_captured(event, "a synchronize of an event recorded in the capture"));
    XDEV_CHECK(xdev_sync_debug_wait(__func__, rec, "an event synchronize"));
    xdev_status_t st = xdev_be_event_synchronize(rec, event->native);
    xdev_order_on_host_waits_event(event); /* waited, even for work that failed */
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_event_elapsed_time(xdev_event_t start, xdev_event_t end, float *ms) {
    XDEV_REQUIRE_ARG(ms);
    XDEV_CHECK(xdev_event_check(start, "start"));
    XDEV_CHECK(xdev_event_check(end, "end"));
    xdev_event_t ev[2] = {start, end};
    static const char *const names[2] = {"start", "end"};
    for (int i = 0; i < 2; i++) {
        if (!(ev[i]->flags & XDEV_EVENT_TIMING))
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "the %s event was created without XDEV_EVENT_TIMING", names[i]);
        if (atomic_load_explicit(&ev[i]->rec, memory_order_acquire) == NULL)
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "the %s event has not been recorded",
                                 names[i]);
    }
    xdev_device_record_t *rec = atomic_load(&start->rec), *erec = atomic_load(&end->rec);
    if (erec != rec)
        return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "the events were recorded on different devices (" XDEV_REC_FMT
                             " and " XDEV_REC_FMT ")",
                             XDEV_REC_ARGS(rec), XDEV_REC_ARGS(erec));
    for (int i = 0; i < 2; i++) {
        xdev_status_t st = query(ev[i], __func__);
        if (st == XDEV_ERROR_NOT_READY)
            return XDEV_API_FAIL(XDEV_ERROR_NOT_READY,
                                 "the %s event has not completed yet; synchronize it first",
                                 names[i]);
        XDEV_CHECK(st);
    }
    XDEV_CHECK(xdev_be_event_elapsed_time(rec, start->native, end->native, ms));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_event_get_device(xdev_event_t event, xdev_device_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_event_check(event, "event"));
    if (atomic_load_explicit(&event->rec, memory_order_acquire) == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the event has not been recorded, so it has no device yet");
    *out = event->device;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_event_get_flags(xdev_event_t event, unsigned *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_event_check(event, "event"));
    *out = event->flags;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_event_native_handle(xdev_event_t event, void **out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_event_check(event, "event"));
    if (atomic_load_explicit(&event->rec, memory_order_acquire) == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the event has not been recorded: its native event is created on "
                             "the first record");
    *out = event->native;
    return XDEV_SUCCESS;
}
