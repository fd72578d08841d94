/* SPDX-License-Identifier: Apache-2.0 */
/* tracer.c - recording a stream trace: sessions (xdev_trace_start / stop,
 * XDEV_TRACE_FILE), spans around enqueued work, allocator events and
 * markers, each placed on its track (a device x stream, or a host thread).
 * One mutex guards the session: tracing is a diagnostic mode, and the cost
 * per traced op (a lock, two timing events) is measured and documented. The
 * code that enqueues work calls in through runtime's probes, registered at
 * the end of this file (runtime/trace_probe.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "base/strbuf.h"
#include "base/utf8.h"
#include "observe/tracer_state.h"
#include "runtime/stream_names.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"
#include "xdev/event.h"
#include "xdev/trace.h"

xdev_tracer_state_t xdev_tracer = {.lock = PTHREAD_MUTEX_INITIALIZER, .cur = NULL};
static uint64_t g_next_session = 1;
static bool g_atexit_registered;

uint64_t xdev_tracer_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int thread_id(void) {
    static _Thread_local int tid;
    if (tid == 0) tid = (int)syscall(SYS_gettid);
    return tid;
}

/* A new record of the session (lock held), or NULL when full (counted). */
static xdev_trec_t *rec_new(xdev_trace_session_t *t) {
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        xdev_trec_t *r = cap <= XDEV_TRACE_MAX_RECORDS ? realloc(t->recs, cap * sizeof *r) : NULL;
        if (r == NULL) {
            t->dropped++;
            return NULL;
        }
        t->recs = r;
        t->cap = cap;
    }
    xdev_trec_t *r = &t->recs[t->count++];
    memset(r, 0, sizeof *r);
    return r;
}

/* The track of (pid, native) - a device's stream; or, for pid 0, the host
 * thread host_tid - created (and named) on first sight; NULL when the
 * session has XDEV_TRACE_MAX_TRACKS already. */
static xdev_track_t *track(xdev_trace_session_t *t, int pid, const void *native, int host_tid,
                           bool is_default) {
    for (int i = t->ntracks - 1; i >= 0; i--)
        if (t->tracks[i].pid == pid && t->tracks[i].native == native &&
            (pid != 0 || t->tracks[i].tid == host_tid))
            return &t->tracks[i];
    if (t->ntracks == XDEV_TRACE_MAX_TRACKS) return NULL;
    int n = 0;
    for (int i = 0; i < t->ntracks; i++)
        n += t->tracks[i].pid == pid;
    xdev_track_t *k = &t->tracks[t->ntracks++];
    memset(k, 0, sizeof *k);
    k->pid = pid;
    k->native = native;
    k->tid = pid == 0 ? host_tid : n + 1;
    if (pid == 0)
        snprintf(k->name, sizeof k->name, "thread %d", host_tid);
    else
        snprintf(k->name, sizeof k->name, "stream %p%s", native, is_default ? " (default)" : "");
    return k;
}

static xdev_track_t *stream_track(xdev_trace_session_t *t, const xdev_device_record_t *rec,
                                  const void *native, bool is_default) {
    int before = t->ntracks;
    xdev_track_t *k = track(t, xdev_tracer_pid(rec), native, 0, is_default);
    char name[XDEV_STREAM_NAME_MAX + 1];
    if (k != NULL && t->ntracks > before &&
        xdev_stream_names_by_native(rec, native, name, sizeof name))
        snprintf(k->name, sizeof k->name, "%s", name); /* named by xdev_stream_set_name */
    return k;
}

static int host_track(xdev_trace_session_t *t) {
    xdev_track_t *k = track(t, 0, NULL, thread_id(), false);
    return k ? k->tid : 0;
}

/* Queue record `index` for a later read of its device times (false: no
 * memory, the caller gives the span's events back). */
static bool pending_push(xdev_trace_session_t *t, xdev_track_t *k, size_t index) {
    if (k->len == k->cap) {
        if (k->head > 0) { /* slide the unread part down before growing */
            memmove(k->pending, k->pending + k->head, (k->len - k->head) * sizeof *k->pending);
            k->len -= k->head;
            k->head = 0;
        }
        if (k->len == k->cap) {
            size_t cap = k->cap ? k->cap * 2 : 256;
            size_t *p = realloc(k->pending, cap * sizeof *p);
            if (p == NULL) return false;
            k->pending = p;
            k->cap = cap;
        }
    }
    k->pending[k->len++] = index;
    if (++t->unresolved >= t->resolve_at) {
        xdev_tracer_resolve(t, false);
        t->resolve_at = t->unresolved + 1024;
    }
    return true;
}

/* Make c its device's current calibration, kept until the session ends. */
static void calib_install(xdev_trace_session_t *t, xdev_calib_t *c) {
    c->next_all = t->calibs;
    t->calibs = c;
    t->calib_now[c->rec->id.type][c->rec->id.index] = c;
}

/* A calibration for rec recorded on `native`; its host time is filled in
 * later, from `prev` (tracer_output.c), unless the caller synchronizes it. */
static xdev_calib_t *calib_new(xdev_trace_session_t *t, xdev_device_record_t *rec, void *native,
                               xdev_calib_t *prev) {
    void *ev = xdev_tracer_event_get(t, rec);
    if (ev == NULL) return NULL;
    xdev_calib_t *c = calloc(1, sizeof *c);
    if (c == NULL || xdev_be_event_record(rec, ev, native) != XDEV_SUCCESS) {
        free(c);
        (void)xdev_be_event_destroy(rec, ev);
        return NULL;
    }
    c->rec = rec;
    c->event = ev;
    c->made_ns = xdev_tracer_now();
    c->prev = prev;
    return c;
}

/* Host function of calib_first: the host clock at this point of the stream. */
static void stamp_fn(void *arg) {
    atomic_store_explicit((_Atomic uint64_t *)arg, xdev_tracer_now(), memory_order_release);
}

/* The first calibration of a device: host functions stamp the host clock
 * on s just before and just after the calibration event, so the event's
 * host time lies between the two stamps and is taken as their midpoint (on
 * the CPU backend one worker runs all three within a microsecond, more
 * under a sanitizer; on CUDA the stamps are the driver's notices around the
 * event). Waiting for the event on the host instead would add the waker's
 * latency - tens of microseconds on the CPU backend, whose worker spins
 * before it sleeps - to every device time. The wait happens without the
 * lock (work ahead on s may trace); a concurrent first span may win the
 * race, then this one is discarded. */
static void calib_first(uint64_t session, xdev_stream_t s) {
    xdev_device_record_t *rec = s->rec;
    void *ev = NULL;
    if (xdev_be_event_create(rec, XDEV_EVENT_TIMING, &ev) != XDEV_SUCCESS) return;
    uint64_t host = 0;
    /* heap: should a step fail, the host functions may still run later */
    _Atomic uint64_t *stamp = calloc(2, sizeof *stamp);
    bool launched = stamp != NULL && xdev_be_stream_launch_host_func(rec, s->native, stamp_fn,
                                                                     &stamp[0]) == XDEV_SUCCESS;
    if (launched && xdev_be_event_record(rec, ev, s->native) == XDEV_SUCCESS &&
        xdev_be_stream_launch_host_func(rec, s->native, stamp_fn, &stamp[1]) == XDEV_SUCCESS &&
        xdev_be_stream_synchronize(rec, s->native) == XDEV_SUCCESS) {
        uint64_t before = atomic_load_explicit(&stamp[0], memory_order_acquire);
        uint64_t after = atomic_load_explicit(&stamp[1], memory_order_acquire);
        host = before + (after - before) / 2;
        free(stamp);
    } else if (!launched) {
        free(stamp);
    }
    xdev_calib_t *c = host ? calloc(1, sizeof *c) : NULL;
    pthread_mutex_lock(&xdev_tracer.lock);
    xdev_trace_session_t *t = xdev_tracer.cur;
    if (c != NULL && t != NULL && t->id == session &&
        t->calib_now[rec->id.type][rec->id.index] == NULL) {
        c->rec = rec;
        c->event = ev;
        c->host_ns = c->made_ns = host;
        c->known = true;
        calib_install(t, c);
        c = NULL;
        ev = NULL;
    }
    pthread_mutex_unlock(&xdev_tracer.lock);
    free(c);
    if (ev != NULL) (void)xdev_be_event_destroy(rec, ev);
}

static void span_begin(xdev_trace_span_t *sp, xdev_stream_t s) {
    sp->ev_begin = NULL;
    sp->calib = NULL;
    sp->session = 0; /* no session has id 0: span_end records nothing */
    /* Work recorded into a graph does not run now: its replays are traced
     * instead (one graph_replay span each). */
    if (atomic_load_explicit(&s->capture, memory_order_acquire) != NULL) return;
    xdev_error_state_t saved; /* tracing never changes what the call reports */
    xdev_core_error_save(&saved);
    xdev_device_record_t *rec = s->rec;
    for (int attempt = 0; attempt < 2; attempt++) {
        pthread_mutex_lock(&xdev_tracer.lock);
        xdev_trace_session_t *t = xdev_tracer.cur;
        xdev_calib_t *c = t ? t->calib_now[rec->id.type][rec->id.index] : NULL;
        bool need_first = t != NULL && c == NULL && attempt == 0;
        if (t != NULL && !need_first) {
            sp->session = t->id;
            if (c != NULL && xdev_tracer_now() - c->made_ns >= 1000000000u) {
                xdev_calib_t *n = calib_new(t, rec, s->native, c);
                if (n != NULL) calib_install(t, c = n);
            }
            if (c != NULL && (sp->ev_begin = xdev_tracer_event_get(t, rec)) != NULL) {
                if (xdev_be_event_record(rec, sp->ev_begin, s->native) == XDEV_SUCCESS) {
                    sp->calib = c;
                } else {
                    (void)xdev_be_event_destroy(rec, sp->ev_begin);
                    sp->ev_begin = NULL;
                }
            }
        }
        uint64_t id = t ? t->id : 0;
        pthread_mutex_unlock(&xdev_tracer.lock);
        if (!need_first) break;
        calib_first(id, s);
    }
    sp->host_begin = xdev_tracer_now();
    xdev_core_error_restore(&saved);
}

bool xdev_tracer_capture(xdev_trec_t *r, const char *fmt, va_list ap) {
    int n = 0;
    for (const char *p = strchr(fmt, '%'); p != NULL; p = strchr(p, '%')) {
        p++;
        if (*p == '%') {
            p++;
            continue;
        }
        if (n == XDEV_TRACE_ARGS) return false;
        if (*p == 'd') {
            r->argv[n++].i = va_arg(ap, int);
        } else if (*p == 's') {
            r->argv[n++].s = va_arg(ap, const char *);
        } else if (*p == 'p') {
            r->argv[n++].p = va_arg(ap, const void *);
        } else if (p[0] == 'z' && p[1] == 'u') {
            r->argv[n++].u = va_arg(ap, size_t);
        } else if (p[0] == 'l' && p[1] == 'l' && p[2] == 'd') {
            r->argv[n++].i = va_arg(ap, long long);
        } else {
            return false;
        }
    }
    return true;
}

static void span_end(xdev_trace_span_t *sp, xdev_stream_t s, const char *name, const char *args_fmt,
                     va_list ap) {
    uint64_t host_end = xdev_tracer_now();
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_device_record_t *rec = s->rec;
    pthread_mutex_lock(&xdev_tracer.lock);
    xdev_trace_session_t *t = xdev_tracer.cur;
    xdev_trec_t *r = NULL;
    if (t != NULL && sp->session == t->id) r = rec_new(t);
    if (r == NULL) {
        /* Stopped meanwhile, or full: the begin event is nobody's now. */
        if (sp->ev_begin != NULL) (void)xdev_be_event_destroy(rec, sp->ev_begin);
        pthread_mutex_unlock(&xdev_tracer.lock);
        xdev_core_error_restore(&saved);
        return;
    }
    r->kind = XDEV_TREC_SPAN;
    r->name = name;
    r->fmt = xdev_tracer_capture(r, args_fmt, ap) ? args_fmt : NULL;
    r->pid = xdev_tracer_pid(rec);
    xdev_track_t *k = stream_track(t, rec, s->native, s->is_default);
    r->tid = k ? k->tid : 0;
    r->host_tid = host_track(t);
    r->host_begin = sp->host_begin;
    r->host_end = host_end;
    r->rec = rec;
    r->calib = sp->calib;
    r->ev_begin = sp->ev_begin;
    if (r->ev_begin != NULL) {
        r->ev_end = xdev_tracer_event_get(t, rec);
        if (r->ev_end != NULL && xdev_be_event_record(rec, r->ev_end, s->native) != XDEV_SUCCESS) {
            (void)xdev_be_event_destroy(rec, r->ev_end);
            r->ev_end = NULL;
        }
        if (r->ev_end == NULL || k == NULL || !pending_push(t, k, (size_t)(r - t->recs))) {
            (void)xdev_be_event_destroy(rec, r->ev_begin);
            if (r->ev_end != NULL) (void)xdev_be_event_destroy(rec, r->ev_end);
            r->ev_begin = r->ev_end = NULL;
        }
    }
    pthread_mutex_unlock(&xdev_tracer.lock);
    xdev_core_error_restore(&saved);
}

static void hostfn_release(xdev_trace_hostfn_t *h) {
    if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1) free(h);
}

/* Runs on the stream: the user's function between two host-clock stamps. */
static void hostfn_trampoline(void *arg) {
    xdev_trace_hostfn_t *h = arg;
    atomic_store_explicit(&h->begin, xdev_tracer_now(), memory_order_relaxed);
    h->fn(h->user);
    atomic_store_explicit(&h->end, xdev_tracer_now(), memory_order_release);
    hostfn_release(h);
}

static xdev_status_t host_func(xdev_stream_t s, xdev_host_fn_t fn, void *user) {
    /* a capturing stream records the user's function itself: the stamping
     * wrapper frees itself when it runs, which a replay would repeat */
    xdev_trace_hostfn_t *h = atomic_load_explicit(&s->capture, memory_order_acquire) != NULL
                                 ? NULL
                                 : calloc(1, sizeof *h);
    if (h == NULL) return xdev_be_stream_launch_host_func(s->rec, s->native, fn, user);
    h->fn = fn;
    h->user = user;
    atomic_init(&h->refs, 2);
    uint64_t host_begin = xdev_tracer_now();
    xdev_status_t st = xdev_be_stream_launch_host_func(s->rec, s->native, hostfn_trampoline, h);
    uint64_t host_end = xdev_tracer_now();
    if (st != XDEV_SUCCESS) {
        free(h);
        return st;
    }
    pthread_mutex_lock(&xdev_tracer.lock);
    xdev_trace_session_t *t = xdev_tracer.cur;
    xdev_trec_t *r = t != NULL ? rec_new(t) : NULL;
    xdev_track_t *k = r != NULL ? stream_track(t, s->rec, s->native, s->is_default) : NULL;
    if (k != NULL) {
        r->kind = XDEV_TREC_SPAN;
        r->name = "host_func";
        r->fmt = "\"fn\":\"%p\"";
        r->argv[0].p = user;
        r->pid = xdev_tracer_pid(s->rec);
        r->tid = k->tid;
        r->host_tid = host_track(t);
        r->host_begin = host_begin;
        r->host_end = host_end;
        r->rec = s->rec;
        r->hostfn = h;
        r->host_clock = true;
        if (pending_push(t, k, (size_t)(r - t->recs)))
            h = NULL;
        else
            r->hostfn = NULL;
    } else if (r != NULL) {
        t->count--; /* no track for it: take the record back */
    }
    pthread_mutex_unlock(&xdev_tracer.lock);
    if (h != NULL) hostfn_release(h); /* not recorded: the trampoline alone holds it */
    return XDEV_SUCCESS;
}

static void span_cancel(xdev_trace_span_t *sp, xdev_stream_t s) {
    if (sp->ev_begin == NULL) return;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    (void)xdev_be_event_destroy(s->rec, sp->ev_begin);
    sp->ev_begin = NULL;
    xdev_core_error_restore(&saved);
}

/* Take the lock and return a new record of `kind` stamped now in the
 * running session; NULL when none runs or it is full. The caller unlocks. */
static xdev_trec_t *instant_locked(xdev_trace_session_t **sess, xdev_trec_kind_t kind) {
    uint64_t now = xdev_tracer_now();
    pthread_mutex_lock(&xdev_tracer.lock);
    *sess = xdev_tracer.cur;
    xdev_trec_t *r = *sess != NULL ? rec_new(*sess) : NULL;
    if (r != NULL) {
        r->kind = (uint8_t)kind;
        r->host_begin = r->host_end = now;
    }
    return r;
}

static void memory_event(xdev_device_record_t *rec, const void *native_stream, const char *action,
                         uintptr_t addr, size_t size, const char *tag, int64_t allocated,
                         int64_t reserved) {
    xdev_trace_session_t *t;
    xdev_trec_t *r = instant_locked(&t, XDEV_TREC_MEMORY);
    if (r != NULL) {
        r->name = action;
        r->pid = xdev_tracer_pid(rec);
        r->rec = rec;
        xdev_track_t *k = stream_track(t, rec, native_stream, false);
        r->tid = k ? k->tid : 0;
        r->allocated = allocated;
        r->reserved = reserved;
        int n = snprintf(r->args, sizeof r->args, "\"addr\":\"0x%llx\",\"bytes\":%zu",
                         (unsigned long long)addr, size);
        if (tag != NULL) {
            xdev_strbuf_t sb = {0};
            xdev_strbuf_printf(&sb, ",\"tag\":");
            xdev_strbuf_json_string(&sb, tag);
            if (!sb.failed && (size_t)n + sb.len < sizeof r->args)
                memcpy(r->args + n, sb.buf, sb.len + 1);
            free(sb.buf);
        }
    }
    pthread_mutex_unlock(&xdev_tracer.lock);
}

void xdev_tracer_marker(char phase, const char *msg) {
    xdev_trace_session_t *t;
    xdev_trec_t *r = instant_locked(&t, XDEV_TREC_MARKER);
    if (r != NULL) {
        r->phase = phase;
        /* cut at a character, bad bytes as U+FFFD: the file stays UTF-8 */
        xdev_utf8_copy(r->label, sizeof r->label, msg ? msg : "");
        r->pid = 0;
        r->tid = host_track(t);
    }
    pthread_mutex_unlock(&xdev_tracer.lock);
}

/* Host work on no stream (the host_span probe, runtime/trace_probe.h). */
static void host_span(const char *name, const char *label, uint64_t begin_ns, uint64_t end_ns,
                      const char *args) {
    xdev_trace_session_t *t;
    xdev_trec_t *r = instant_locked(&t, XDEV_TREC_HOST);
    if (r != NULL) {
        r->name = name;
        xdev_utf8_copy(r->label, sizeof r->label, label);
        xdev_utf8_copy(r->args, sizeof r->args, args);
        r->host_begin = begin_ns;
        r->host_end = end_ns;
        r->pid = 0;
        r->tid = host_track(t);
    }
    pthread_mutex_unlock(&xdev_tracer.lock);
}

/* Open the file and begin a session (lock held). For XDEV_TRACE_FILE (env)
 * a failure is XDEV_ERROR_ENV and its message begins with the variable and
 * its value, the path named once: the message is formatted here, never from
 * an earlier one. */
static xdev_status_t start_locked(const char *path, bool env) {
    if (xdev_tracer.cur != NULL) {
        if (env) return XDEV_FAIL(XDEV_ERROR_ENV, "XDEV_TRACE_FILE=%s: a trace is running", path);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "a trace into '%s' is already running (xdev_trace_stop first)",
                         xdev_tracer.cur->path);
    }
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof xdev_tracer.cur->path)
        return XDEV_FAIL(env ? XDEV_ERROR_ENV : XDEV_ERROR_INVALID_VALUE,
                         "%sthe trace path's length %zu is not in 1..%zu",
                         env ? "XDEV_TRACE_FILE: " : "", len, sizeof xdev_tracer.cur->path - 1);
    xdev_trace_session_t *t = calloc(1, sizeof *t);
    if (t == NULL) {
        if (env) return XDEV_FAIL(XDEV_ERROR_ENV, "XDEV_TRACE_FILE=%s: no host memory", path);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a trace");
    }
    t->out = fopen(path, "w");
    if (t->out == NULL) {
        int err = errno;
        free(t);
        if (env)
            return XDEV_FAIL(XDEV_ERROR_ENV, "XDEV_TRACE_FILE=%s: cannot open it for writing: %s",
                             path, strerror(err));
        return XDEV_FAIL(XDEV_ERROR_IO, "cannot open '%s' for writing: %s", path, strerror(err));
    }
    memcpy(t->path, path, len + 1);
    t->id = g_next_session++;
    t->pid = (int)getpid();
    t->start_ns = xdev_tracer_now();
    t->resolve_at = 1024;
    xdev_tracer.cur = t;
    atomic_store_explicit(&xdev_tracer_flag, true, memory_order_release);
    return XDEV_SUCCESS;
}

/* End the running session: detach it under the lock, then wait for its
 * device times and write it without the lock. */
static xdev_status_t stop(void) {
    pthread_mutex_lock(&xdev_tracer.lock);
    xdev_trace_session_t *t = xdev_tracer.cur;
    xdev_tracer.cur = NULL;
    atomic_store_explicit(&xdev_tracer_flag, false, memory_order_release);
    pthread_mutex_unlock(&xdev_tracer.lock);
    if (t == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "no trace is running (xdev_trace_start or XDEV_TRACE_FILE)");
    xdev_tracer_resolve(t, true);
    return xdev_tracer_write(t);
}

/* At exit (registered after the backends loaded, so it runs before their
 * runtimes tear down): write a trace nobody stopped. A child forked while
 * tracing inherits this handler and the session; it must not touch the
 * parent's device events nor write the parent's file. */
static void stop_at_exit(void) {
    pthread_mutex_lock(&xdev_tracer.lock);
    bool mine = xdev_tracer.cur != NULL && xdev_tracer.cur->pid == (int)getpid();
    pthread_mutex_unlock(&xdev_tracer.lock);
    if (!mine) return;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    (void)stop();
    xdev_core_error_restore(&saved);
}

static xdev_status_t start(const char *path, bool env) {
    pthread_mutex_lock(&xdev_tracer.lock);
    xdev_status_t st = start_locked(path, env);
    if (st == XDEV_SUCCESS && !g_atexit_registered) g_atexit_registered = atexit(stop_at_exit) == 0;
    pthread_mutex_unlock(&xdev_tracer.lock);
    return st;
}

/* XDEV_TRACE_FILE: start tracing into that file, written at exit or by
 * xdev_trace_stop; XDEV_ERROR_ENV when it cannot be opened. An
 * initialisation step once the backends are selected (see stop_at_exit). */
static xdev_status_t env_start(void) {
    const char *path = getenv("XDEV_TRACE_FILE");
    if (path == NULL || path[0] == '\0') return XDEV_SUCCESS;
    return start(path, true);
}

/* Wired when libxdev loads (core/wiring.c): the probes through which runtime/, alloc/, memory/ and
 * math/ reach the tracer (runtime/trace_probe.h), and XDEV_TRACE_FILE's start (runtime/hooks.h);
 * those folders sit below observe/ and never call it. */
void xdev_tracer_wire(void) {
    static const xdev_trace_probes_t probes = {
        .span_begin = span_begin,
        .span_end = span_end,
        .span_cancel = span_cancel,
        .host_func = host_func,
        .memory = memory_event,
        .host_span = host_span,
    };
    xdev_trace_probes_set(&probes);
    xdev_hook_init_add(XDEV_INIT_BACKENDS_READY, env_start);
}

xdev_status_t xdev_trace_start(const char *path) {
    XDEV_REQUIRE_ARG(path);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(start(path, false));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_trace_stop(void) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(stop());
    return XDEV_SUCCESS;
}
