/* SPDX-License-Identifier: Apache-2.0 */
/* stream_internal.h - the core's stream object behind xdev_stream_t. */
#ifndef XDEV_CORE_STREAM_INTERNAL_H
#define XDEV_CORE_STREAM_INTERNAL_H

#include "base/handle_arena.h"
#include "runtime/process.h"
#include "runtime/registry.h"
#include "runtime/thread_state.h"

struct xdev_stream {
    xdev_handle_header_t hdr;
    xdev_device_record_t *rec; /* the device: backend, its context, state */
    xdev_backend_t *be;        /* = rec->be */
    xdev_device_t device;      /* = rec->id (logical, resolved) */
    void *native;
    int priority;
    bool owned;           /* false for xdev_stream_wrap_native */
    bool is_default;      /* owned by xdev */
    _Atomic bool closing; /* xdev_stream_destroy has begun: no new use */
    /* The capture it records into (runtime/capture.h), NULL when it runs its work. */
    _Atomic(struct xdev_capture *) capture;
    uint32_t order_id; /* the stream-order sanitizer's id, 0 until its first use (stream_order.c) */
    /* math/fft.c: an FFT plan may be cached for it (set before its exec reads
     * `closing`), so its destroy sweeps the plan cache only then */
    _Atomic bool fft_plans;
};

extern xdev_handle_arena_t xdev_stream_arena;
#define XDEV_STREAM_MAGIC 0x5354524du /* "STRM" */
#define XDEV_STREAM_SLOT ((sizeof(struct xdev_stream) + 63) / 64 * 64)

/* Announce that this thread is about to use s (a hazard pointer), then
 * confirm s is live and not being destroyed. While announced, a concurrent
 * xdev_stream_destroy defers freeing the native queue, so the caller may use
 * s->native until its next few stream checks. False: s is dead, don't use.
 * Inline (always: GCC would otherwise outline it where a file calls it
 * often): every stream-ordered call runs it. The protocol, and why the
 * seq_cst store is skipped when the newest hazard is s already, are in
 * stream.c's opening comment. */
static inline __attribute__((always_inline)) bool xdev_core_stream_acquire(xdev_stream_t s) {
    xdev_thread_state_t *t = xdev_thread_state();
    unsigned last = (t->hazard_next - 1) % XDEV_HAZARDS;
    if (atomic_load_explicit(&t->hazard[last], memory_order_relaxed) != (const void *)s ||
        t->shared) {
        unsigned i = t->hazard_next++ % XDEV_HAZARDS;
        atomic_store_explicit(&t->hazard[i], (const void *)s, memory_order_seq_cst);
    }
    return xdev_handle_is_live_as(&xdev_stream_arena, s, XDEV_STREAM_MAGIC, XDEV_STREAM_SLOT) &&
           !atomic_load_explicit(&s->closing, memory_order_seq_cst);
}

/* XDEV_ERROR_INVALID_HANDLE naming `arg` unless s is a live stream. On
 * success s is also protected (xdev_core_stream_acquire). Inline for a live
 * stream; the slow function says what is wrong. */
xdev_status_t xdev_stream_check_slow(xdev_stream_t s, const char *arg);
static inline __attribute__((always_inline)) xdev_status_t xdev_stream_check(xdev_stream_t s,
                                                                             const char *arg) {
    if (__builtin_expect(
            atomic_load_explicit(&xdev_process_state, memory_order_relaxed) == 0 && s != NULL, 1) &&
        __builtin_expect(xdev_core_stream_acquire(s), 1))
        return XDEV_SUCCESS;
    return xdev_stream_check_slow(s, arg);
}

/* The default stream of a device. */
xdev_status_t xdev_core_default_stream(xdev_device_record_t *rec, xdev_stream_t *out);

/* This thread's current stream of a device. Inline for its common case
 * (the thread never set one: the device's default stream, already made),
 * which every stream-taking call with a NULL stream and
 * xdev_stream_current pay; the rest (a set stream to confirm alive, the
 * default stream to create) is the slow function. */
xdev_status_t xdev_core_current_stream_slow(xdev_device_record_t *rec, xdev_stream_ref_t *ref,
                                            xdev_stream_t *out);
static inline xdev_status_t xdev_core_current_stream(xdev_device_record_t *rec,
                                                     xdev_stream_t *out) {
    xdev_stream_ref_t *ref = &xdev_thread_state()->streams[rec->id.type][rec->id.index];
    if (ref->stream == NULL) {
        xdev_stream_t s = atomic_load_explicit(&rec->default_stream, memory_order_acquire);
        if (s != NULL) {
            *out = s;
            return XDEV_SUCCESS;
        }
    }
    return xdev_core_current_stream_slow(rec, ref, out);
}

/* This thread's current stream of the default type's current device. */
xdev_status_t xdev_core_current_stream_default(xdev_stream_t *out);

/* After enqueuing work on s: with XDEV_LAUNCH_BLOCKING, wait for it so that
 * errors surface at the call. Inline: without it (the common case), one
 * load and a branch on every enqueue. */
xdev_status_t xdev_core_after_enqueue_slow(xdev_stream_t s);
static inline xdev_status_t xdev_core_after_enqueue(xdev_stream_t s) {
    if (__builtin_expect(!xdev_core_launch_blocking, 1)) return XDEV_SUCCESS;
    return xdev_core_after_enqueue_slow(s);
}

/* xdev_stream_synchronize without the sync debug mode's check, unprefixed:
 * for waits inside a free that must happen whatever the mode (the
 * allocator's fallbacks when it cannot order memory after a stream). */
xdev_status_t xdev_core_stream_synchronize_always(xdev_stream_t stream);

/* The backend's query of a checked stream (XDEV_SUCCESS / NOT_READY / error),
 * without setting this thread's message for NOT_READY. */
xdev_status_t xdev_core_stream_query(xdev_stream_t s);

/* Later work on `stream` waits for what is queued on `other` now (both checked). */
xdev_status_t xdev_core_stream_wait_stream(xdev_stream_t stream, xdev_stream_t other);

/* Enqueue fn on a stream without the public checks. */
xdev_status_t xdev_core_launch_host_func(xdev_stream_t s, xdev_host_fn_t fn, void *user);

#endif
