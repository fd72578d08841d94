/* SPDX-License-Identifier: Apache-2.0 */
/* enqueue.c - the out-of-line steps of the enqueue path (enqueue.h): the
 * trace span's ends, the sanitizer's record and the observers. They run
 * only while tracing, sanitizing or observing, so the common path never
 * calls into this file. */
#include "runtime/enqueue.h"

#include <pthread.h>

#include "base/error_internal.h"
#include "runtime/sanitizer_probe.h"

_Atomic bool xdev_enqueue_observed_flag;

/* The observers: a fixed table read without a lock (an entry is published
 * by its count's release store; a removal clears the function, which the
 * reader checks), written under g_lock. */
typedef struct {
    _Atomic(xdev_enqueue_observer_t) fn;
    void *_Atomic user;
} observer_t;
static observer_t g_observers[XDEV_ENQUEUE_MAX_OBSERVERS];
static _Atomic int g_nobservers;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

void xdev_enqueue_span_begin(xdev_enqueue_t *q) {
    xdev_tracer_span_begin(&q->span_state, q->stream);
}

static void span_end_v(xdev_enqueue_t *q, const char *fmt, va_list ap) {
    xdev_trace_probes.span_end(&q->span_state, q->stream, q->span != NULL ? q->span : q->name, fmt,
                               ap);
}

/* Without arguments: an empty format, passed through a va_list. */
static void span_end_plain(xdev_enqueue_t *q, ...) {
    va_list ap;
    va_start(ap, q);
    span_end_v(q, "", ap);
    va_end(ap);
}

void xdev_enqueue_span_end(xdev_enqueue_t *q) {
    if (q->cancel)
        xdev_tracer_span_cancel(&q->span_state, q->stream);
    else if (q->trace_args != NULL)
        q->trace_args(q);
    else
        span_end_plain(q);
}

void xdev_enqueue_span_args(xdev_enqueue_t *q, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    span_end_v(q, fmt, ap);
    va_end(ap);
}

void xdev_enqueue_observe(const xdev_enqueue_t *q) {
    xdev_op_use_t local[XDEV_OP_MAX_USES];
    const xdev_op_use_t *uses = q->uses;
    int n = q->nuses;
    if (q->get_uses != NULL) {
        n = q->get_uses(q, local, XDEV_OP_MAX_USES);
        uses = local;
    }
    if (n > XDEV_OP_MAX_USES) n = XDEV_OP_MAX_USES;
    if (xdev_sanitizing()) {
        if (q->order != NULL) q->order(q);
        if (n > 0) xdev_san_uses_slow(q->stream, uses, n, q->name);
    }
    int count = atomic_load_explicit(&g_nobservers, memory_order_acquire);
    for (int i = 0; i < count; i++) {
        xdev_enqueue_observer_t fn = atomic_load_explicit(&g_observers[i].fn, memory_order_acquire);
        if (fn != NULL)
            fn(q, uses, n, atomic_load_explicit(&g_observers[i].user, memory_order_relaxed));
    }
}

xdev_status_t xdev_enqueue_observer_add(xdev_enqueue_observer_t fn, void *user) {
    if (fn == NULL) return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'fn' is NULL");
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    int n = atomic_load_explicit(&g_nobservers, memory_order_relaxed), slot = -1;
    for (int i = 0; i < n && slot < 0; i++) /* reuse a removed entry */
        if (atomic_load_explicit(&g_observers[i].fn, memory_order_relaxed) == NULL) slot = i;
    if (slot < 0 && n < XDEV_ENQUEUE_MAX_OBSERVERS) slot = n;
    if (slot < 0) {
        st = XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "%d enqueue observers are registered already",
                           XDEV_ENQUEUE_MAX_OBSERVERS);
    } else {
        atomic_store_explicit(&g_observers[slot].user, user, memory_order_relaxed);
        atomic_store_explicit(&g_observers[slot].fn, fn, memory_order_release);
        if (slot == n) atomic_store_explicit(&g_nobservers, n + 1, memory_order_release);
        atomic_store_explicit(&xdev_enqueue_observed_flag, true, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

xdev_status_t xdev_enqueue_observer_remove(xdev_enqueue_observer_t fn, void *user) {
    bool found = false, any = false;
    pthread_mutex_lock(&g_lock);
    int n = atomic_load_explicit(&g_nobservers, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        xdev_enqueue_observer_t f = atomic_load_explicit(&g_observers[i].fn, memory_order_relaxed);
        if (!found && f == fn &&
            atomic_load_explicit(&g_observers[i].user, memory_order_relaxed) == user) {
            atomic_store_explicit(&g_observers[i].fn, NULL, memory_order_release);
            found = true;
        } else if (f != NULL) {
            any = true;
        }
    }
    atomic_store_explicit(&xdev_enqueue_observed_flag, any, memory_order_relaxed);
    pthread_mutex_unlock(&g_lock);
    if (!found)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the observer %p (user %p) is not registered", (void *)fn, user);
    return XDEV_SUCCESS;
}
