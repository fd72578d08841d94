/* SPDX-License-Identifier: Apache-2.0 */
/* enqueue.h - the one path by which a call puts work on a stream.
 *
 * Every stream-ordered call (copies, memset, fills, conversions, kernel and
 * element-wise launches, graph replays, BLAS, FFT, random fills, the
 * primitives, host functions, event records, stream waits, reduce_add's
 * adds, communicators' collectives, sends and recvs) describes its
 * work in an xdev_enqueue_t and hands it to xdev_enqueue, which runs the
 * same steps for all of them, in this order:
 *
 *   1. capture check   q->capture (optional): may the work join the stream's
 *                      capture? A failure returns before anything else.
 *   2. trace span      begun on the stream while tracing (trace_probe.h)
 *   3. backend slot    q->call: the backend call itself, with the call's own
 *                      locks and markers around it
 *   4.                 the span ends (named q->span, arguments q->trace_args),
 *                      or is cancelled when the call set q->cancel; then
 *                      q->finish (optional) releases what the call held
 *   5. observe         on success only: the stream-order sanitizer records
 *                      the operands (q->uses / q->get_uses) and the ordering
 *                      the call makes (q->order), then every registered
 *                      observer sees the op
 *   6. after-enqueue   XDEV_LAUNCH_BLOCKING waits for the stream
 *                      (xdev_core_after_enqueue), unless q->flags has
 *                      XDEV_ENQUEUE_WAIT_LATER: the caller calls it once its
 *                      own locks are released
 *
 * A new observer of every op is added in step 5, here, and nowhere else:
 * shadow execution (observe/shadow.c, XDEV_SHADOW=cpu) is one, registered
 * with xdev_enqueue_observer_add when it is on; it replays there what the
 * op's backend calls recorded and compares the op's written operands. Untraced, unsanitized and
 * unobserved, the path costs what the hand-written sequence did: xdev_enqueue is inline and its
 * callbacks are known at the call site, so the compiler calls them directly; steps 2, 4 and 5 are
 * one relaxed load and a branch each. The sanitizer sits above runtime/
 * (observe/stream_sanitizer.c): step 5 reaches it through its probes (runtime/sanitizer_probe.h),
 * as the tracer's through its own. */
#ifndef XDEV_CORE_ENQUEUE_H
#define XDEV_CORE_ENQUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/stream_internal.h"
#include "runtime/stream_order.h"
#include "runtime/trace_probe.h"

/* What kind of work an op is (observers tell them apart by it). */
typedef enum xdev_op_kind {
    XDEV_OP_COPY = 0,
    XDEV_OP_MEMSET,
    XDEV_OP_FILL,
    XDEV_OP_CONVERT,
    XDEV_OP_KERNEL,
    XDEV_OP_ELEMENTWISE,
    XDEV_OP_GRAPH_REPLAY,
    XDEV_OP_BLAS,
    XDEV_OP_FFT,
    XDEV_OP_RNG,
    XDEV_OP_HOST_FUNC,
    XDEV_OP_EVENT_RECORD,
    XDEV_OP_STREAM_WAIT,
    XDEV_OP_REDUCE_ADD,
    XDEV_OP_REDUCE,     /* xdev_prim_reduce, xdev_prim_segmented_reduce */
    XDEV_OP_SCAN,       /* xdev_prim_scan */
    XDEV_OP_COLLECTIVE, /* a communicator's collective, send or recv */
    XDEV_OP_SORT,       /* xdev_prim_sort_keys/_pairs, xdev_prim_segmented_sort */
    XDEV_OP_HISTOGRAM,  /* xdev_prim_histogram_even */
    XDEV_OP_SELECT,     /* xdev_prim_select_*, _unique, _run_length_encode */
    XDEV_OP_PREFETCH,   /* xdev_mem_prefetch_async (managed memory) */
    XDEV_OP_KINDS
} xdev_op_kind_t;

typedef enum xdev_op_access { XDEV_OP_READ = 1, XDEV_OP_WRITE = 2 } xdev_op_access_t;

/* One operand: [p, p + n) read or written (n past the end of the
 * allocation means up to its end; p NULL or n 0: none). */
typedef struct xdev_op_use {
    const void *p;
    size_t n;
    xdev_op_access_t mode;
    uint8_t fp; /* 4 or 8: floats or doubles (a kernel's float or double pointer); 0: unknown */
} xdev_op_use_t;

/* At most this many operands per op (a kernel's pointer parameters fit). */
#define XDEV_OP_MAX_USES 32

/* flags */
#define XDEV_ENQUEUE_NO_SPAN 1u    /* no trace span (the call records itself, or never had one) */
#define XDEV_ENQUEUE_WAIT_LATER 2u /* skip step 6: the caller runs xdev_core_after_enqueue */

typedef struct xdev_enqueue xdev_enqueue_t;

struct xdev_enqueue {
    xdev_op_kind_t kind;
    const char *name; /* the call as the sanitizer's reports and observers name it ("memcpy") */
    const char *span; /* the trace span's name (NULL: name) */
    xdev_stream_t stream;
    xdev_device_record_t *rec; /* the device the call runs on (operands' calls; else NULL) */
    void *ctx;                 /* the call's arguments, for the callbacks */
    unsigned flags;
    /* The operands, read only while someone observes: a fixed list, or
     * get_uses writes them (at most cap) and returns how many. */
    const xdev_op_use_t *uses;
    int nuses;
    int (*get_uses)(const xdev_enqueue_t *q, xdev_op_use_t *out, int cap);
    xdev_status_t (*capture)(xdev_enqueue_t *q); /* step 1, optional */
    xdev_status_t (*call)(xdev_enqueue_t *q);    /* step 3 */
    /* Ends the span with its arguments: calls xdev_enqueue_span_args once
     * (only while tracing; optional: no arguments). */
    void (*trace_args)(xdev_enqueue_t *q);
    /* After the span, whatever the status; returns the status to go on with. */
    xdev_status_t (*finish)(xdev_enqueue_t *q, xdev_status_t st);
    /* The ordering the call makes for the sanitizer (xdev_order_on_*). */
    void (*order)(const xdev_enqueue_t *q);
    /* Set by call: it failed without enqueuing anything (the span is
     * cancelled, not recorded). */
    bool cancel;
    /* Set by xdev_enqueue. */
    bool traced;
    xdev_trace_span_t span_state;
};

/* An observer sees each op enqueued successfully, after the sanitizer, on
 * the calling thread, with its operands. It must not enqueue work itself. */
typedef void (*xdev_enqueue_observer_t)(const xdev_enqueue_t *q, const xdev_op_use_t *uses,
                                        int nuses, void *user);

/* True while an observer is registered (xdev_enqueue_observer_add). */
extern _Atomic bool xdev_enqueue_observed_flag;

/* A test and internal hook (exported for tests/test_enqueue_observer.c, in
 * no public header): fn(op, uses, n, user) after every op from now on.
 * XDEV_ERROR_INVALID_VALUE for a NULL fn or when XDEV_ENQUEUE_MAX_OBSERVERS
 * are registered. Observers stay until xdev_enqueue_observer_remove. */
#define XDEV_ENQUEUE_MAX_OBSERVERS 8
XDEV_API xdev_status_t xdev_enqueue_observer_add(xdev_enqueue_observer_t fn, void *user);
XDEV_API xdev_status_t xdev_enqueue_observer_remove(xdev_enqueue_observer_t fn, void *user);

/* Steps 2, 4 (the span) and 5 out of line: they run only while tracing,
 * sanitizing or observing. */
void xdev_enqueue_span_begin(xdev_enqueue_t *q);
void xdev_enqueue_span_end(xdev_enqueue_t *q);
void xdev_enqueue_observe(const xdev_enqueue_t *q);

/* From q->trace_args: end q's span, its arguments JSON members without
 * braces (printf format; the tracer keeps the values and formats them when
 * it writes, so a %s must be a static string). */
void xdev_enqueue_span_args(xdev_enqueue_t *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Step 5 runs when this is true: one relaxed load each. */
static inline bool xdev_enqueue_observing(void) {
    return xdev_sanitizing() ||
           __builtin_expect(atomic_load_explicit(&xdev_enqueue_observed_flag, memory_order_relaxed),
                            0);
}

/* q as an initializer naming kind, name, stream, ctx and call would make
 * it, every other field NULL, 0 or false (span_state is left: only the
 * span's steps use it, after setting it), for hot calls (an event record):
 * the compiler clears an initialized op's ~180 bytes with a block fill
 * (rep stos), which costs more than the rest of a record's core path.
 * Set further fields after it. The size check fails when a field is added:
 * add it here too. */
static inline void xdev_enqueue_set(xdev_enqueue_t *q, xdev_op_kind_t kind, const char *name,
                                    xdev_stream_t stream, void *ctx,
                                    xdev_status_t (*call)(xdev_enqueue_t *q)) {
    _Static_assert(sizeof(void *) != 8 || sizeof(xdev_enqueue_t) == 128 + sizeof(xdev_trace_span_t),
                   "xdev_enqueue_t changed: set its new field in xdev_enqueue_set");
    q->kind = kind;
    q->name = name;
    q->span = NULL;
    q->stream = stream;
    q->rec = NULL;
    q->ctx = ctx;
    q->flags = 0;
    q->uses = NULL;
    q->nuses = 0;
    q->get_uses = NULL;
    q->capture = NULL;
    q->call = call;
    q->trace_args = NULL;
    q->finish = NULL;
    q->order = NULL;
    q->cancel = false;
    q->traced = false;
}

/* Run q's steps (above). The status is the first failure: the capture
 * check's, the call's (or finish's), or XDEV_LAUNCH_BLOCKING's wait. */
static inline xdev_status_t xdev_enqueue(xdev_enqueue_t *q) {
    /* What the steps need, read before q's address goes to any callback or
     * out-of-line step: the compiler then knows them from the caller's
     * initializer, calls (or inlines) the callbacks directly and drops the
     * tests of those left NULL, where reading them back after q escaped
     * made every call indirect. Callbacks never change these fields. */
    xdev_status_t (*capture)(xdev_enqueue_t *) = q->capture;
    xdev_status_t (*call)(xdev_enqueue_t *) = q->call;
    xdev_status_t (*finish)(xdev_enqueue_t *, xdev_status_t) = q->finish;
    unsigned flags = q->flags;
    xdev_stream_t stream = q->stream;
    if (capture != NULL) {
        xdev_status_t cst = capture(q);
        if (cst != XDEV_SUCCESS) return cst;
    }
    q->cancel = false;
    bool traced = !(flags & XDEV_ENQUEUE_NO_SPAN) && xdev_tracer_active();
    q->traced = traced;
    if (XDEV_UNLIKELY(traced)) xdev_enqueue_span_begin(q);
    xdev_status_t st = call(q);
    if (XDEV_UNLIKELY(traced)) xdev_enqueue_span_end(q);
    if (finish != NULL) st = finish(q, st);
    if (st != XDEV_SUCCESS) return st;
    if (XDEV_UNLIKELY(xdev_enqueue_observing())) xdev_enqueue_observe(q);
    if (flags & XDEV_ENQUEUE_WAIT_LATER) return XDEV_SUCCESS;
    return xdev_core_after_enqueue(stream);
}

#endif
