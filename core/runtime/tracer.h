/* tracer.h - the stream tracer behind xdev_trace_start / XDEV_TRACE_FILE:
 * what each stream ran, as Trace Event Format JSON (Perfetto,
 * chrome://tracing).
 *
 * A call that enqueues work brackets it with a span:
 *
 *     xdev_trace_span_t span;
 *     bool traced = xdev_tracer_active();          one relaxed load
 *     if (XDEV_UNLIKELY(traced)) xdev_tracer_span_begin(&span, s);
 *     ... enqueue on s ...
 *     if (XDEV_UNLIKELY(traced)) xdev_tracer_span_end(&span, s, "memcpy", "\"bytes\":%zu", n);
 *
 * so that a process not tracing pays one predictable branch per call. While
 * tracing, a span records the host's enqueue interval and, where the backend
 * has timing events, a pair of events around the work: the device interval,
 * mapped onto the host clock (tracer_device_time.c). */
#ifndef XDEV_CORE_TRACER_H
#define XDEV_CORE_TRACER_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/registry.h"

#define XDEV_UNLIKELY(x) __builtin_expect(!!(x), 0)

extern _Atomic bool xdev_tracer_flag;

#ifdef XDEV_NO_TRACER
static inline bool xdev_tracer_active(void) {
    return false;
}
#else
static inline bool xdev_tracer_active(void) {
    return atomic_load_explicit(&xdev_tracer_flag, memory_order_relaxed);
}
#endif

struct xdev_calib;

typedef struct xdev_trace_span {
    uint64_t host_begin; /* CLOCK_MONOTONIC ns */
    uint64_t session;    /* the tracing session it began in (a stop ends the span) */
    void *ev_begin;      /* backend timing event recorded before the work, or NULL */
    struct xdev_calib *calib;
} xdev_trace_span_t;

struct xdev_stream;

/* Before enqueuing on s (checked, live). */
void xdev_tracer_span_begin(xdev_trace_span_t *sp, struct xdev_stream *s);

/* After enqueuing on s: name (a static string) and the span's arguments as
 * JSON members without braces (printf format; values already escaped). */
void xdev_tracer_span_end(xdev_trace_span_t *sp, struct xdev_stream *s, const char *name,
                          const char *args_fmt, ...) __attribute__((format(printf, 4, 5)));

/* Enqueue a host function through the tracer's timing trampoline and
 * record it (only while tracing: the caller tests xdev_tracer_active). */
xdev_status_t xdev_tracer_host_func(struct xdev_stream *s, xdev_host_fn_t fn, void *user);

/* A span whose work was not enqueued after all: give its event back. */
void xdev_tracer_span_cancel(xdev_trace_span_t *sp, struct xdev_stream *s);

/* An allocator event on a device's stream track (from the history hook),
 * with the device's allocated and reserved bytes after it as a counter. */
void xdev_tracer_memory(xdev_device_record_t *rec, const void *native_stream, const char *action,
                        uintptr_t addr, size_t size, const char *tag, int64_t allocated,
                        int64_t reserved);

/* A marker on this thread's host track: 'B' range begin, 'E' range end,
 * 'i' instant (msg NULL for 'E'). */
void xdev_tracer_marker(char phase, const char *msg);

/* XDEV_TRACE_FILE (initialisation): start tracing into that file, written
 * at exit or by xdev_trace_stop. XDEV_ERROR_ENV when it cannot be opened. */
xdev_status_t xdev_tracer_env_start(void);

#endif
