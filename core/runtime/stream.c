/* SPDX-License-Identifier: Apache-2.0 */
/* stream.c - stream objects: default and per-thread current streams,
 * creation, queries, cross-stream ordering, host functions, guards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/stream_order.h"
#include "runtime/enqueue.h"
#include "base/error_internal.h"
#include "runtime/event_internal.h"
#include "runtime/process.h"
#include "runtime/capture.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"
#include "runtime/stream_names.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/thread_state.h"
#include "runtime/sync_debug.h"

xdev_handle_arena_t xdev_stream_arena =
    XDEV_HANDLE_ARENA_INIT("stream", XDEV_STREAM_MAGIC, XDEV_STREAM_SLOT);

/* Stream lifetime across threads. A thread that uses a stream announces it
 * first (a hazard pointer in its thread state, seq_cst) and then checks the
 * stream is live and not closing; xdev_stream_destroy first sets `closing`
 * (seq_cst), then scans every thread's hazards. Either the destroyer sees
 * the user's announcement, and the native queue goes to a graveyard freed
 * once nobody lists it, or the user sees `closing` and fails cleanly: a
 * native queue is never freed under a thread that is using it.
 *
 * A thread that uses the same stream call after call (the common case) has
 * announced it already: when the newest hazard is s, the seq_cst store (a
 * full fence on x86, the dearest part of a record or a launch) is skipped.
 * That is as safe as storing again: only this thread writes its hazards, so
 * s has stayed announced since that store, which precedes this closing
 * check in the seq_cst order; and the hazards kept are a superset of those a
 * store would keep (the newest slot holds s either way). The emergency
 * block that threads share when memory ran out (t->shared) always stores.
 * (xdev_core_stream_acquire, which does this, is inline in
 * stream_internal.h.) */

/* Native queues of destroyed streams that a thread was still using. */
typedef struct grave {
    const void *handle; /* what hazards name */
    xdev_device_record_t *rec;
    void *native;
    struct grave *next;
} grave_t;

static pthread_mutex_t g_grave_lock = PTHREAD_MUTEX_INITIALIZER;
static grave_t *g_graves;

/* Destroy the native queues nobody uses any more. */
static void sweep_graves(void) {
    pthread_mutex_lock(&g_grave_lock);
    grave_t *ready = NULL;
    for (grave_t **link = &g_graves; *link != NULL;) {
        grave_t *g = *link;
        if (xdev_thread_hazard_held(g->handle)) {
            link = &g->next;
            continue;
        }
        *link = g->next;
        g->next = ready;
        ready = g;
    }
    pthread_mutex_unlock(&g_grave_lock);
    xdev_error_state_t saved; /* nobody to report a late destroy's failure to */
    xdev_core_error_save(&saved);
    for (grave_t *g = ready, *next; g != NULL; g = next) {
        next = g->next;
        (void)xdev_be_stream_destroy(g->rec, g->native);
        free(g);
    }
    xdev_core_error_restore(&saved);
}

xdev_status_t xdev_stream_check_slow(xdev_stream_t s, const char *arg) {
    xdev_status_t pst = xdev_process_check(); /* a forked child, or exiting */
    if (pst != XDEV_SUCCESS) return pst;
    if (s == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "stream argument '%s' is NULL", arg);
    if (xdev_core_stream_acquire(s)) return XDEV_SUCCESS;
    if (xdev_handle_is_live(&xdev_stream_arena, s))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "stream '%s' (%p) is being destroyed", arg,
                         (void *)s);
    if (xdev_handle_is_slot(&xdev_stream_arena, s))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "stream '%s' (%p) has been destroyed", arg,
                         (void *)s);
    return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "'%s' (%p) is not an xdev stream", arg, (void *)s);
}

xdev_status_t xdev_core_default_stream(xdev_device_record_t *rec, xdev_stream_t *out) {
    xdev_stream_t s = atomic_load_explicit(&rec->default_stream, memory_order_acquire);
    if (s != NULL) {
        *out = s;
        return XDEV_SUCCESS;
    }
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&rec->be->lock);
    s = atomic_load(&rec->default_stream);
    if (s == NULL) {
        void *native = NULL;
        st = xdev_be_stream_get_default(rec, &native);
        if (st == XDEV_SUCCESS) {
            s = xdev_handle_alloc(&xdev_stream_arena);
            if (s == NULL) {
                st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for a stream handle");
            } else {
                s->rec = rec;
                s->be = rec->be;
                s->device = rec->id;
                s->native = native;
                s->priority = XDEV_STREAM_PRIORITY_NORMAL;
                s->is_default = true;
                atomic_store_explicit(&rec->default_stream, s, memory_order_release);
            }
        }
    }
    pthread_mutex_unlock(&rec->be->lock);
    *out = s;
    return st;
}

xdev_status_t xdev_core_current_stream_slow(xdev_device_record_t *rec, xdev_stream_ref_t *ref,
                                            xdev_stream_t *out) {
    xdev_stream_t s = ref->stream;
    if (s != NULL && xdev_core_stream_acquire(s) &&
        atomic_load_explicit(&s->hdr.generation, memory_order_relaxed) == ref->generation) {
        *out = s;
        return XDEV_SUCCESS;
    }
    ref->stream = NULL; /* destroyed: fall back to the default stream */
    return xdev_core_default_stream(rec, out);
}

xdev_status_t xdev_core_current_stream_default(xdev_stream_t *out) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    xdev_device_record_t *rec;
    st = xdev_device_lookup((xdev_device_t){xdev_core_default_type(), -1}, &rec);
    if (st != XDEV_SUCCESS) return st;
    return xdev_core_current_stream(rec, out);
}

static void set_current(xdev_stream_t s) {
    xdev_stream_ref_t *ref = &xdev_thread_state()->streams[s->device.type][s->device.index];
    ref->stream = s;
    ref->generation = atomic_load_explicit(&s->hdr.generation, memory_order_relaxed);
}

xdev_status_t xdev_core_after_enqueue_slow(xdev_stream_t s) {
    xdev_status_t st = xdev_be_stream_synchronize(s->rec, s->native);
    if (st == XDEV_SUCCESS) xdev_order_on_host_waits_stream(s);
    return st;
}

xdev_status_t xdev_stream_create(xdev_device_t device, int priority, xdev_stream_t *out) {
    XDEV_REQUIRE_ARG(out);
    if (priority != XDEV_STREAM_PRIORITY_NORMAL && priority != XDEV_STREAM_PRIORITY_HIGH)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "priority %d is neither XDEV_STREAM_PRIORITY_NORMAL (0) nor "
                             "XDEV_STREAM_PRIORITY_HIGH (-1)",
                             priority);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    void *native = NULL;
    XDEV_CHECK(xdev_be_stream_create(rec, priority, &native));
    xdev_stream_t s = xdev_handle_alloc(&xdev_stream_arena);
    if (s == NULL) {
        (void)xdev_be_stream_destroy(rec, native);
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for a stream handle");
    }
    s->rec = rec;
    s->be = rec->be;
    s->device = rec->id;
    s->native = native;
    s->priority = priority;
    s->owned = true;
    *out = s;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_wrap_native(xdev_device_t device, void *native, xdev_stream_t *out) {
    XDEV_REQUIRE_ARG(out);
    if (native == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "native stream is NULL; use xdev_stream_default for the default "
                             "stream");
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_stream_t s = xdev_handle_alloc(&xdev_stream_arena);
    if (s == NULL) return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for a stream handle");
    s->rec = rec;
    s->be = rec->be;
    s->device = rec->id;
    s->native = native;
    s->priority = XDEV_STREAM_PRIORITY_NORMAL;
    *out = s;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_destroy(xdev_stream_t stream) {
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    if (stream->is_default)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the default stream of %s:%d belongs to xdev and cannot be destroyed",
                             stream->be->name, stream->device.index);
    xdev_capture_t *cap = atomic_load(&stream->capture);
    if (cap != NULL) XDEV_CHECK(xdev_capture_refuse(cap, "destroying a capturing stream"));
    /* Finish the work queued so far first: once `closing` is set, the
     * allocator no longer orders frees after this stream (its events cannot
     * be recorded any more), so everything queued before must be done. From
     * the stream's own host function this fails and nothing changes. */
    bool waited = stream->owned;
    if (waited && atomic_load_explicit(&xdev_sync_debug_flag, memory_order_relaxed) != 0) {
        /* only a stream with work still queued makes the host wait */
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        bool busy = xdev_be_stream_query(stream->rec, stream->native) == XDEV_ERROR_NOT_READY;
        xdev_core_error_restore(&saved);
        if (busy)
            XDEV_CHECK(xdev_sync_debug_wait(__func__, stream->rec,
                                            "destroying a stream that has work queued"));
    }
    if (waited) XDEV_CHECK(xdev_be_stream_synchronize(stream->rec, stream->native));
    bool was = false;
    if (!atomic_compare_exchange_strong(&stream->closing, &was, true))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE,
                             "stream %p is already being destroyed by another thread",
                             (void *)stream);
    xdev_hooks_run_stream_destroy(stream); /* while its native stream exists */
    xdev_thread_hazard_clear(stream);
    sweep_graves();
    if (stream->owned && xdev_thread_hazard_held(stream)) {
        /* Another thread is inside a call on it: free the queue later. */
        grave_t *g = malloc(sizeof *g);
        if (g == NULL) {
            atomic_store(&stream->closing, false);
            return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to defer the destroy");
        }
        *g = (grave_t){stream, stream->rec, stream->native, NULL};
        pthread_mutex_lock(&g_grave_lock);
        g->next = g_graves;
        g_graves = g;
        pthread_mutex_unlock(&g_grave_lock);
    } else if (stream->owned) {
        xdev_status_t st = xdev_be_stream_destroy(stream->rec, stream->native);
        if (st != XDEV_SUCCESS) { /* e.g. from its own host function: still usable */
            atomic_store(&stream->closing, false);
            XDEV_CHECK(st);
        }
    }
    (void)xdev_stream_names_set(stream, NULL, NULL, ""); /* its name goes with it */
    if (waited) xdev_order_on_stream_destroy(stream);    /* its work is done: the sanitizer knows */
    xdev_handle_free(&xdev_stream_arena, stream);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_native_handle(xdev_stream_t stream, void **out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    *out = stream->native;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_default(xdev_device_t device, xdev_stream_t *out) {
    XDEV_REQUIRE_ARG(out);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(xdev_core_default_stream(rec, out));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_current(xdev_device_t device, xdev_stream_t *out) {
    XDEV_REQUIRE_ARG(out);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(xdev_core_current_stream(rec, out));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_set_current(xdev_stream_t stream) {
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    set_current(stream);
    xdev_core_set_current_index(stream->device.type, stream->device.index);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_get_device(xdev_stream_t stream, xdev_device_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    *out = stream->device;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_get_priority(xdev_stream_t stream, int *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    *out = stream->priority;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_query(xdev_stream_t stream) {
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    xdev_capture_t *cap = atomic_load_explicit(&stream->capture, memory_order_acquire);
    if (XDEV_UNLIKELY(cap != NULL))
        XDEV_CHECK(xdev_capture_refuse(cap, "a query of a capturing stream"));
    xdev_status_t st = xdev_be_stream_query(stream->rec, stream->native);
    if (st == XDEV_SUCCESS) xdev_order_on_host_waits_stream(stream);
    if (st == XDEV_SUCCESS || st == XDEV_ERROR_NOT_READY) return st;
    return xdev_core_blame(st, __func__);
}

/* The synchronize, with the sync debug mode's check (the public call) or
 * without it (the allocator's best-effort waits inside a free, which must
 * wait whatever the mode: refusing them would let memory be reused early). */
static xdev_status_t stream_sync(xdev_stream_t stream, bool debug_check) {
    xdev_status_t st = xdev_stream_check(stream, "stream");
    if (st != XDEV_SUCCESS) return st;
    xdev_capture_t *cap = atomic_load_explicit(&stream->capture, memory_order_acquire);
    if (XDEV_UNLIKELY(cap != NULL)) {
        st = xdev_capture_refuse(cap, "a synchronize of a capturing stream");
        if (st != XDEV_SUCCESS) return st;
    }
    if (debug_check && (st = xdev_sync_debug_wait("xdev_stream_synchronize", stream->rec,
                                                  "a stream synchronize")) != XDEV_SUCCESS)
        return st;
    st = xdev_be_stream_synchronize(stream->rec, stream->native);
    xdev_order_on_host_waits_stream(stream); /* waited, even for work that failed */
    return st;
}

xdev_status_t xdev_core_stream_synchronize_always(xdev_stream_t stream) {
    return stream_sync(stream, false);
}

xdev_status_t xdev_stream_synchronize(xdev_stream_t stream) {
    XDEV_CHECK(stream_sync(stream, true));
    return XDEV_SUCCESS;
}

/* A wait of `stream` on work that capture `id` recorded (0: work outside
 * any capture): the stream joins that capture (a fork) or, when it captures
 * and the work is outside, the capture fails (`what` names the call). */
static xdev_status_t capture_follow(xdev_stream_t stream, uint64_t id, const char *what) {
    xdev_capture_t *cap = atomic_load_explicit(&stream->capture, memory_order_acquire);
    if (id == 0 && cap == NULL) return XDEV_SUCCESS;
    if (id != 0) return xdev_capture_join_id(id, stream);
    return xdev_capture_refuse(cap, what);
}

/* The enqueue path's steps of a wait on an event (enqueue.h). */
typedef struct {
    xdev_event_t event;
    void *native; /* its backend event */
} wait_event_op_t;

static xdev_status_t wait_event_call(xdev_enqueue_t *q) {
    const wait_event_op_t *o = q->ctx;
    return xdev_be_stream_wait_event(q->stream->rec, q->stream->native, o->native);
}

static void wait_event_trace_args(xdev_enqueue_t *q) {
    xdev_enqueue_span_args(q, "\"event\":\"%p\"", (void *)((const wait_event_op_t *)q->ctx)->event);
}

static void wait_event_order(const xdev_enqueue_t *q) {
    xdev_order_on_wait_event(q->stream, ((const wait_event_op_t *)q->ctx)->event);
}

xdev_status_t xdev_stream_wait_event(xdev_stream_t stream, xdev_event_t event) {
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    XDEV_CHECK(xdev_event_check(event, "event"));
    pthread_mutex_lock(&event->lock);
    xdev_device_record_t *erec = atomic_load(&event->rec);
    void *enative = event->native;
    uint64_t ecap = atomic_load_explicit(&event->capture_id, memory_order_relaxed);
    pthread_mutex_unlock(&event->lock);
    if (erec == NULL) return XDEV_SUCCESS; /* never recorded: nothing to wait for */
    XDEV_CHECK(capture_follow(stream, ecap != 0 && xdev_capture_is_active(ecap) ? ecap : 0,
                              "a wait on an event recorded outside the capture"));
    xdev_backend_t *ebe = erec->be;
    if (ebe != stream->be)
        return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "a %s stream cannot wait for an event recorded on a %s device; "
                             "synchronize the event on the host instead",
                             stream->be->name, ebe->name);
    wait_event_op_t o = {event, enative};
    xdev_enqueue_t q = {
        .kind = XDEV_OP_STREAM_WAIT,
        .name = "wait_event",
        .stream = stream,
        .ctx = &o,
        .call = wait_event_call,
        .trace_args = wait_event_trace_args,
        .order = wait_event_order,
    };
    XDEV_CHECK(xdev_enqueue(&q));
    return XDEV_SUCCESS;
}

/* A spare marker event of rec, or NULL. Lock-free: a slot is emptied by
 * one exchange, so two threads never take the same event. */
static void *marker_take(xdev_device_record_t *rec) {
    for (int i = 0; i < XDEV_MARKER_SLOTS; i++) {
        if (atomic_load_explicit(&rec->markers[i], memory_order_relaxed) == NULL) continue;
        void *e = atomic_exchange_explicit(&rec->markers[i], NULL, memory_order_acquire);
        if (e != NULL) return e;
    }
    return NULL;
}

/* Keep e as a spare of rec; false when every slot is taken (destroy it). */
static bool marker_give(xdev_device_record_t *rec, void *e) {
    for (int i = 0; i < XDEV_MARKER_SLOTS; i++) {
        void *none = NULL;
        if (atomic_compare_exchange_strong_explicit(&rec->markers[i], &none, e,
                                                    memory_order_release, memory_order_relaxed))
            return true;
    }
    return false;
}

/* The enqueue path's steps of a wait on another stream (enqueue.h): the
 * marker already recorded on `other` (its status in `recorded`). */
typedef struct {
    xdev_stream_t other;
    void *marker;
    xdev_status_t recorded;
} wait_stream_op_t;

static xdev_status_t wait_stream_call(xdev_enqueue_t *q) {
    const wait_stream_op_t *o = q->ctx;
    if (o->recorded != XDEV_SUCCESS) return o->recorded;
    return xdev_be_stream_wait_event(q->stream->rec, q->stream->native, o->marker);
}

static void wait_stream_trace_args(xdev_enqueue_t *q) {
    xdev_enqueue_span_args(q, "\"other\":\"%p\"",
                           ((const wait_stream_op_t *)q->ctx)->other->native);
}

/* The marker back to the spares; a failed record or wait may leave it
 * half-used: not a spare. */
static xdev_status_t wait_stream_finish(xdev_enqueue_t *q, xdev_status_t st) {
    const wait_stream_op_t *o = q->ctx;
    if (st != XDEV_SUCCESS || !marker_give(o->other->rec, o->marker)) {
        xdev_status_t dst = xdev_be_event_destroy(o->other->rec, o->marker);
        if (st == XDEV_SUCCESS) st = dst;
    }
    return st;
}

static void wait_stream_order(const xdev_enqueue_t *q) {
    xdev_order_on_wait_stream(q->stream, ((const wait_stream_op_t *)q->ctx)->other);
}

xdev_status_t xdev_core_stream_wait_stream(xdev_stream_t stream, xdev_stream_t other) {
    if (stream == other) return XDEV_SUCCESS;
    xdev_capture_t *ocap = atomic_load_explicit(&other->capture, memory_order_acquire);
    xdev_status_t cst = capture_follow(stream, ocap != NULL ? ocap->id : 0,
                                       "a wait on a stream that is not capturing");
    if (cst != XDEV_SUCCESS) return cst;
    xdev_backend_t *be = stream->be;
    if (other->be != be)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "a %s stream cannot wait for a %s stream; synchronize it on the host",
                         be->name, other->be->name);
    /* A private event marks `other`'s current end, taken from the device's
     * spares (creating one costs more than the record and wait together). */
    void *marker = marker_take(other->rec);
    xdev_status_t st = XDEV_SUCCESS;
    if (marker == NULL) st = xdev_be_event_create(other->rec, XDEV_EVENT_DEFAULT, &marker);
    if (st != XDEV_SUCCESS) return st;
    wait_stream_op_t o = {other, marker, xdev_be_event_record(other->rec, marker, other->native)};
    xdev_enqueue_t q = {
        .kind = XDEV_OP_STREAM_WAIT,
        .name = "wait_stream",
        .stream = stream,
        .ctx = &o,
        .call = wait_stream_call,
        .trace_args = wait_stream_trace_args,
        .finish = wait_stream_finish,
        .order = wait_stream_order,
    };
    return xdev_enqueue(&q);
}

xdev_status_t xdev_stream_wait_stream(xdev_stream_t stream, xdev_stream_t other) {
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    XDEV_CHECK(xdev_stream_check(other, "other"));
    XDEV_CHECK(xdev_core_stream_wait_stream(stream, other));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_record_event(xdev_stream_t stream, xdev_event_t event) {
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    XDEV_CHECK(xdev_core_event_record(event, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_core_stream_query(xdev_stream_t s) {
    /* A capturing stream runs nothing: its blocks are not free to reuse yet. */
    if (atomic_load_explicit(&s->capture, memory_order_acquire) != NULL)
        return XDEV_ERROR_NOT_READY;
    return xdev_be_stream_query(s->rec, s->native);
}

/* The enqueue path's step of a host function (enqueue.h): while tracing,
 * through the tracer's timing trampoline, which records it (no span). */
typedef struct {
    xdev_host_fn_t fn;
    void *user;
} host_func_op_t;

static xdev_status_t host_func_call(xdev_enqueue_t *q) {
    const host_func_op_t *o = q->ctx;
    return XDEV_UNLIKELY(xdev_tracer_active())
               ? xdev_tracer_host_func(q->stream, o->fn, o->user)
               : xdev_be_stream_launch_host_func(q->stream->rec, q->stream->native, o->fn, o->user);
}

xdev_status_t xdev_core_launch_host_func(xdev_stream_t s, xdev_host_fn_t fn, void *user) {
    host_func_op_t o = {fn, user};
    xdev_enqueue_t q = {
        .kind = XDEV_OP_HOST_FUNC,
        .name = "host_func",
        .stream = s,
        .ctx = &o,
        .flags = XDEV_ENQUEUE_NO_SPAN,
        .call = host_func_call,
    };
    return xdev_enqueue(&q);
}

xdev_status_t xdev_launch_host_func(xdev_stream_t stream, xdev_host_fn_t fn, void *user_data) {
    XDEV_REQUIRE_ARG(fn);
    if (stream == NULL) {
        XDEV_CHECK(xdev_core_current_stream_default(&stream));
    } else {
        XDEV_CHECK(xdev_stream_check(stream, "stream"));
    }
    XDEV_CHECK(xdev_core_launch_host_func(stream, fn, user_data));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_guard_begin(xdev_stream_guard_t *guard, xdev_stream_t stream) {
    XDEV_REQUIRE_ARG(guard);
    guard->active = false;
    if (stream == NULL) return XDEV_SUCCESS; /* torch's stream(None): no-op */
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    XDEV_CHECK(xdev_core_current_stream(stream->rec, &guard->previous_stream));
    XDEV_CHECK(xdev_device_guard_begin(&guard->device_guard, stream->device));
    set_current(stream);
    guard->active = true;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_guard_end(xdev_stream_guard_t *guard) {
    XDEV_REQUIRE_ARG(guard);
    if (!guard->active) return XDEV_SUCCESS;
    guard->active = false;
    xdev_stream_t prev = guard->previous_stream;
    if (xdev_handle_is_live(&xdev_stream_arena, prev)) set_current(prev);
    XDEV_CHECK(xdev_device_guard_end(&guard->device_guard));
    return XDEV_SUCCESS;
}

void xdev_stream_guard_cleanup(xdev_stream_guard_t *guard) {
    (void)xdev_stream_guard_end(guard);
}
