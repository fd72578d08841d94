/* SPDX-License-Identifier: Apache-2.0 */
/* sanitizer_probe.h - where code that enqueues work on device memory tells
 * the stream-order sanitizer (xdev/sanitizer.h) what it read and wrote.
 * The sanitizer (observe/stream_sanitizer.c) sits above every folder that
 * calls these, as the tracer does (runtime/trace_probe.h): it fills in the
 * probes when libxdev loads (xdev_san_probes_set), and the folders below it
 * reach it only through them: the enqueue path (runtime/enqueue.h: the
 * operands of every stream-ordered call), runtime/stream_order.c (the
 * ordering streams and events make), alloc/ (frees, xdev_record_stream),
 * interop/ (foreign memory unregistered) and comm/ (communicator tasks).
 *
 * Call after the call's checks passed, before or after enqueuing, with the
 * stream the work runs on:
 *
 *     xdev_san_access(s, dst, n, XDEV_SAN_WRITE, "memcpy");
 *
 * Off (the default), each is one relaxed load and a branch. On, the
 * pointer's allocation is looked up, the use is checked against the uses
 * recorded for it (runtime/stream_order.h decides what is ordered), a
 * conflict is reported, and the use is recorded. Pointers into memory that
 * xdev did not allocate, and streams that capture, are skipped. */
#ifndef XDEV_CORE_SANITIZER_PROBE_H
#define XDEV_CORE_SANITIZER_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/enqueue.h"
#include "runtime/stream_order.h"
#include "xdev/stream.h"

/* One operand of a call: [p, p + n) read or written (n past the end of the
 * allocation means up to its end; p NULL or n 0: skipped). The enqueue path
 * (runtime/enqueue.h) hands the sanitizer its operands in this form. */
typedef xdev_op_access_t xdev_san_mode_t;
#define XDEV_SAN_READ XDEV_OP_READ
#define XDEV_SAN_WRITE XDEV_OP_WRITE
typedef xdev_op_use_t xdev_san_use_t;

/* At most this many uses per call (a kernel's pointer parameters fit). */
#define XDEV_SAN_MAX_USES XDEV_OP_MAX_USES

/* The sanitizer's side of each probe below (observe/stream_sanitizer.c). */
typedef struct xdev_san_probes {
    void (*uses)(xdev_stream_t s, const xdev_san_use_t *uses, int n, const char *op);
    void (*record_stream)(const void *p, xdev_stream_t s);
    void (*free)(const void *p, xdev_stream_t owner, bool check);
} xdev_san_probes_t;

extern xdev_san_probes_t xdev_san_probes;

/* The sanitizer registers its probes (from xdev_stream_sanitizer_wire,
 * which core/wiring.c calls when libxdev loads, before XDEV_SANITIZE can
 * turn it on). */
void xdev_san_probes_set(const xdev_san_probes_t *probes);

/* The sanitizer is on: the work one call enqueued on s uses uses[0..n). */
static inline void xdev_san_uses_slow(xdev_stream_t s, const xdev_san_use_t *uses, int n,
                                      const char *op) {
    xdev_san_probes.uses(s, uses, n, op);
}

/* The work one call enqueued on s uses uses[0..n) (one epoch, one stack
 * walk for all of them); op names the call ("memcpy"). */
static inline void xdev_san_uses(xdev_stream_t s, const xdev_san_use_t *uses, int n,
                                 const char *op) {
    if (xdev_sanitizing()) xdev_san_uses_slow(s, uses, n, op);
}

/* The same for a call with one operand. */
static inline void xdev_san_access(xdev_stream_t s, const void *p, size_t n, xdev_san_mode_t mode,
                                   const char *op) {
    if (xdev_sanitizing()) {
        xdev_san_use_t u = {p, n, mode, 0};
        xdev_san_uses_slow(s, &u, 1, op);
    }
}

/* xdev_record_stream(p, s) succeeded: s's uses are ordered before the free. */
static inline void xdev_san_record_stream(const void *p, xdev_stream_t s) {
    if (xdev_sanitizing()) xdev_san_probes.record_stream(p, s);
}

/* The allocation at p (its start) is being freed; owner is the stream it
 * returns to for reuse. check: the allocator hands it out again without a
 * device-wide wait (caching and stream-ordered modes), so every use on
 * another stream must be ordered before the free or recorded. */
static inline void xdev_san_free(const void *p, xdev_stream_t owner, bool check) {
    if (xdev_sanitizing()) xdev_san_probes.free(p, owner, check);
}

#endif
