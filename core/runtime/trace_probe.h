/* SPDX-License-Identifier: Apache-2.0 */
/* trace_probe.h - where code that enqueues work tells the stream tracer what
 * it ran. The tracer (observe/tracer.c, behind xdev_trace_start and
 * XDEV_TRACE_FILE) sits above every folder that calls these: it fills in
 * the probes when libxdev loads (xdev_trace_probes_set), and the folders
 * below it reach it only through them: the enqueue path (runtime/enqueue.h,
 * which the stream-ordered calls of runtime/, memory/, kernel/, math/,
 * comm/ and graph/ go through), runtime/stream.c (host functions while
 * tracing) and alloc/alloc_history.c (allocator events).
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
 * mapped onto the host clock (observe/tracer_output.c). Only the tracer sets
 * xdev_tracer_flag, and only after registering the probes, so a probe is
 * never called unset. */
#ifndef XDEV_CORE_TRACE_PROBE_H
#define XDEV_CORE_TRACE_PROBE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/registry.h"

#define XDEV_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* True while a tracing session runs (observe/tracer.c sets it). */
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

/* The tracer's side of each probe below (observe/tracer.c). */
typedef struct xdev_trace_probes {
    void (*span_begin)(xdev_trace_span_t *sp, struct xdev_stream *s);
    void (*span_end)(xdev_trace_span_t *sp, struct xdev_stream *s, const char *name,
                     const char *args_fmt, va_list ap) __attribute__((format(printf, 4, 0)));
    void (*span_cancel)(xdev_trace_span_t *sp, struct xdev_stream *s);
    xdev_status_t (*host_func)(struct xdev_stream *s, xdev_host_fn_t fn, void *user);
    void (*memory)(xdev_device_record_t *rec, const void *native_stream, const char *action,
                   uintptr_t addr, size_t size, const char *tag, int64_t allocated,
                   int64_t reserved);
    void (*host_span)(const char *name, const char *label, uint64_t begin_ns, uint64_t end_ns,
                      const char *args);
} xdev_trace_probes_t;

extern xdev_trace_probes_t xdev_trace_probes;

/* The tracer registers its probes (xdev_tracer_wire, when libxdev loads). */
void xdev_trace_probes_set(const xdev_trace_probes_t *probes);

/* Before enqueuing on s (checked, live). */
static inline void xdev_tracer_span_begin(xdev_trace_span_t *sp, struct xdev_stream *s) {
    xdev_trace_probes.span_begin(sp, s);
}

/* After enqueuing on s: name (a static string) and the span's arguments as
 * JSON members without braces (printf format; values already escaped). */
void xdev_tracer_span_end(xdev_trace_span_t *sp, struct xdev_stream *s, const char *name,
                          const char *args_fmt, ...) __attribute__((format(printf, 4, 5)));

/* Enqueue a host function through the tracer's timing trampoline and
 * record it (only while tracing: the caller tests xdev_tracer_active). */
static inline xdev_status_t xdev_tracer_host_func(struct xdev_stream *s, xdev_host_fn_t fn,
                                                  void *user) {
    return xdev_trace_probes.host_func(s, fn, user);
}

/* A span whose work was not enqueued after all: give its event back. */
static inline void xdev_tracer_span_cancel(xdev_trace_span_t *sp, struct xdev_stream *s) {
    xdev_trace_probes.span_cancel(sp, s);
}

/* An allocator event on a device's stream track (from the history hook),
 * with the device's allocated and reserved bytes after it as a counter. */
static inline void xdev_tracer_memory(xdev_device_record_t *rec, const void *native_stream,
                                      const char *action, uintptr_t addr, size_t size,
                                      const char *tag, int64_t allocated, int64_t reserved) {
    xdev_trace_probes.memory(rec, native_stream, action, addr, size, tag, allocated, reserved);
}

/* Host work that ran on the calling thread and is on no stream (a run-time
 * compile): a span on that thread's host track from begin_ns to end_ns
 * (CLOCK_MONOTONIC), category `name` (a static string), titled `label`,
 * with `args` as JSON members without braces (values already escaped). */
static inline void xdev_tracer_host_span(const char *name, const char *label, uint64_t begin_ns,
                                         uint64_t end_ns, const char *args) {
    xdev_trace_probes.host_span(name, label, begin_ns, end_ns, args);
}

#endif
