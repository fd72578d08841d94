/* SPDX-License-Identifier: Apache-2.0 */
/* stream_order.h - what the stream-order sanitizer (XDEV_SANITIZE=streams)
 * knows of the order between streams: a vector clock per stream, per event
 * and for the host.
 *
 * Each piece of work a sanitized call enqueues on a stream is an epoch
 * (stream id, that stream's count of such work). A stream's clock holds, for
 * every stream, the last epoch the stream's next work is ordered after:
 * recording an event copies the stream's clock into the event, a wait on
 * the event (or xdev_stream_wait_stream) merges it into the waiting stream,
 * and a synchronize merges it into the host's clock, which every stream's
 * later work is ordered after. The memory side (observe/stream_sanitizer.c)
 * records the epochs that read and wrote each allocation and asks whether
 * a new access is ordered after them.
 *
 * Everything here runs only while the sanitizer is on (xdev_sanitizing():
 * one relaxed load); it is off unless XDEV_SANITIZE=streams, read once at
 * initialisation. Captured work is not checked (the call sites skip
 * capturing streams). One lock serialises the clocks. */
#ifndef XDEV_CORE_STREAM_ORDER_H
#define XDEV_CORE_STREAM_ORDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/registry.h"
#include "xdev/event.h"
#include "xdev/stream.h"

extern _Atomic bool xdev_sanitize_flag;

static inline bool xdev_sanitizing(void) {
    return __builtin_expect(atomic_load_explicit(&xdev_sanitize_flag, memory_order_relaxed), 0);
}

/* XDEV_SANITIZE: unset, empty, "off", "none" or "0" leave it off; "streams"
 * turns it on; anything else fails initialisation with a message. */
xdev_status_t xdev_order_read_env(void);

/* One piece of work on one stream. */
typedef struct xdev_order_epoch {
    uint32_t stream; /* the stream's sanitizer id (1, 2, ...) */
    uint64_t seq;    /* its number on that stream */
} xdev_order_epoch_t;

/* A stream's clock as its next work sees it (the host's merged in). Its
 * entries live in `local` up to XDEV_ORDER_LOCAL streams (no allocation per
 * check), on the heap past that; xdev_order_view_free releases them. */
#define XDEV_ORDER_LOCAL 64
typedef struct xdev_order_view {
    uint32_t self; /* the stream's id */
    size_t n;      /* entries in v (ids 1..n) */
    uint64_t *v;   /* local, or malloc'd */
    uint64_t local[XDEV_ORDER_LOCAL];
} xdev_order_view_t;

/* New work on s: its epoch, and (when view is not NULL) the clock it runs
 * under. False when out of host memory (the access is not checked). */
bool xdev_order_tick(xdev_stream_t s, xdev_order_epoch_t *epoch, xdev_order_view_t *view);

/* s's clock without new work (a free's check); false when out of memory. */
bool xdev_order_view(xdev_stream_t s, xdev_order_view_t *view);
void xdev_order_view_free(xdev_order_view_t *view);

/* True when work e is ordered before work that runs under view. */
static inline bool xdev_order_before(const xdev_order_view_t *view, xdev_order_epoch_t e) {
    return e.stream == view->self || (e.stream <= view->n && view->v[e.stream - 1] >= e.seq);
}

/* s's id (assigned on first use); 0 when out of memory. */
uint32_t xdev_order_stream_id(xdev_stream_t s);

/* The device and name a report shows for stream id `id`. */
void xdev_order_stream_describe(uint32_t id, char *buf, size_t len);

/* The orderings the runtime makes. Each is a no-op when the sanitizer is
 * off; call after the backend call succeeded. */
void xdev_order_on_event_record(xdev_event_t e, xdev_stream_t s);
void xdev_order_on_wait_event(xdev_stream_t s, xdev_event_t e);
void xdev_order_on_wait_stream(xdev_stream_t s, xdev_stream_t other);
void xdev_order_on_host_waits_stream(xdev_stream_t s);
void xdev_order_on_host_waits_event(xdev_event_t e);
/* rec NULL: every device. */
void xdev_order_on_host_waits_device(xdev_device_record_t *rec);
void xdev_order_on_event_destroy(xdev_event_t e);
/* s is destroyed after the host waited for its work: its id may be reused. */
void xdev_order_on_stream_destroy(xdev_stream_t s);

/* A test hook (exported for tests/test_sanitizer.c, in no public header):
 * the longest vector clock kept now (the host's, a stream's or an event's),
 * in entries. Ids of destroyed streams are reused, so it stays near the most
 * streams alive at once however many were made. */
XDEV_API size_t xdev_order_clock_length(void);

#endif
