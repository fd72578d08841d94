/* SPDX-License-Identifier: Apache-2.0 */
/* event_internal.h - the core's event object behind xdev_event_t. Its
 * backend event is created on the first record, on the stream's device. */
#ifndef XDEV_CORE_EVENT_INTERNAL_H
#define XDEV_CORE_EVENT_INTERNAL_H

#include <pthread.h>

#include "base/handle_arena.h"
#include "runtime/process.h"
#include "runtime/registry.h"
#include "xdev/event.h"

struct xdev_event {
    xdev_handle_header_t hdr;
    unsigned flags;
    pthread_mutex_t lock;                /* serialises lazy creation (the first record) */
    _Atomic(xdev_device_record_t *) rec; /* its device; NULL until first record */
    xdev_device_t device;                /* = rec->id */
    void *native;                        /* set before rec (release) */
    _Atomic uint64_t capture_id;         /* the capture its last record was recorded in (0: none) */
    struct xdev_order_clock *order; /* the sanitizer's clock of its last record (stream_order.c) */
};

extern xdev_handle_arena_t xdev_event_arena;
#define XDEV_EVENT_MAGIC 0x4556544eu /* "EVTN" */
#define XDEV_EVENT_SLOT ((sizeof(struct xdev_event) + 63) / 64 * 64)

/* XDEV_ERROR_INVALID_HANDLE naming `arg` unless e is a live event (or the
 * process's state refuses every call). Inline for a live event; the slow
 * function says what is wrong. */
xdev_status_t xdev_event_check_slow(xdev_event_t e, const char *arg);
static inline xdev_status_t xdev_event_check(xdev_event_t e, const char *arg) {
    if (__builtin_expect(
            atomic_load_explicit(&xdev_process_state, memory_order_relaxed) == 0 &&
                xdev_handle_is_live_as(&xdev_event_arena, e, XDEV_EVENT_MAGIC, XDEV_EVENT_SLOT),
            1))
        return XDEV_SUCCESS;
    return xdev_event_check_slow(e, arg);
}

/* A new event handle with validated `flags` (no backend event yet); NULL
 * when the handle arena is out of memory. */
xdev_event_t xdev_core_event_new(unsigned flags);

/* xdev_event_record without naming a public call (shared by the two
 * public ways to record). */
xdev_status_t xdev_core_event_record(xdev_event_t event, xdev_stream_t stream);

#endif
