/* SPDX-License-Identifier: Apache-2.0 */
/* caching_release.c - the caching allocator's segments: their list, and
 * their going back to the backend (caching_allocator.c allocates and frees
 * inside them): wholly free segments released after the device passed
 * their work, empty_cache and the out-of-memory retry's release of every
 * arena, and the two policies that release while allocating (the
 * garbage-collection threshold, xdev's trim before growing). All functions
 * here run with the arena's lock held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "base/error_internal.h"
#include "alloc/mempool.h"
#include "alloc/pointer_registry.h"
#include "runtime/capture.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "runtime/sync_debug.h"
#include "runtime/trace_probe.h"

/* The growth policy's age rule (xdev_caching_trim_before_grow): a wholly free
 * segment goes back only once the arena has grown this many times since it
 * became free. */
#define XDEV_TRIM_MIN_AGE 2

/* ---------------------------------------------------------------- releasing segments
 *
 * A segment goes back to the backend only after the device has passed the
 * work queued so far: a block the user freed may still be used by work on
 * its stream. That wait runs WITHOUT the device lock, because a host
 * function on one of the device's streams may call xdev_malloc/xdev_free and
 * need the lock. So: under the lock, detach the wholly free segments (out of
 * the segment list and the bins: no allocation can take them); drop the
 * lock; synchronize; take their ranges out of the pointer registry (lock
 * held), give them to the backend (lock dropped), and do the bookkeeping
 * (lock held). A synchronize that fails - it was called from a host function
 * of this device, which cannot wait for its own stream - puts them back:
 * nothing is lost, nothing is released. Entry and exit: lock held.
 *
 * The policy releases (trim_before_grow, the garbage-collection threshold)
 * run inside xdev_malloc, where torch's allocator never waits for the
 * device: they take only segments whose stream has already passed all its
 * queued work (a free segment's blocks were only ever used on that stream,
 * or on streams whose record_stream events have passed), and need no wait
 * at all. empty_cache and the out-of-memory retry take everything and wait. */

typedef struct release_list {
    xdev_segment_t *head;
    size_t bytes;
} release_list_t;

void xdev_caching_segment_unlink(xdev_device_allocator_t *da, xdev_segment_t *seg) {
    if (seg->prev)
        seg->prev->next = seg->next;
    else
        da->segments = seg->next;
    if (seg->next) seg->next->prev = seg->prev;
    seg->prev = seg->next = NULL;
}

static void segment_link(xdev_device_allocator_t *da, xdev_segment_t *seg) {
    seg->prev = NULL;
    seg->next = da->segments;
    if (da->segments) da->segments->prev = seg;
    da->segments = seg;
}

/* True when the stream of a segment's pool has no queued work (a query,
 * never a wait). */
bool xdev_caching_pool_idle(const xdev_stream_pool_t *pool) {
    if (!xdev_core_stream_acquire(pool->stream)) return false; /* destroyed: don't know */
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    bool idle = xdev_core_stream_query(pool->stream) == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    return idle;
}

/* Detach the wholly free segments of pool `kind` (-1: both) until `goal`
 * bytes are collected (SIZE_MAX: all); with idle_only, only those whose
 * stream is idle (see above). */
static void collect_free_segments(xdev_device_allocator_t *da, int kind,
                                  const xdev_stream_pool_t *only, size_t goal, bool idle_only,
                                  uint64_t min_age, release_list_t *list) {
    xdev_caching_stash_bin(da);
    if (da->pending_head != NULL) xdev_caching_process_events(da);
    for (xdev_segment_t *seg = da->segments, *next; seg != NULL && list->bytes < goal; seg = next) {
        next = seg->next;
        if (seg->expandable) continue; /* shrunk at its end instead (expandable.c) */
        xdev_block_t *b = seg->first;
        if (b->next != NULL || b->state != XDEV_BLOCK_FREE) continue;
        if (kind >= 0 && seg->pool_kind != kind) continue;
        if (only != NULL && seg->pool != only) continue;
        if (seg->pool->mempool != 0 && !seg->pool->mempool_dead) continue; /* the pool's */
        if (min_age != 0 && da->growths - seg->free_since < min_age) continue;
        if (idle_only && !xdev_caching_pool_idle(seg->pool)) continue;
        xdev_caching_bins_del(da, b);
        xdev_caching_segment_unlink(da, seg);
        seg->next = list->head; /* the list reuses the link */
        list->head = seg;
        list->bytes += seg->size;
    }
}

/* The backend's device synchronize, called without the device lock. Its
 * failure is handled here (nothing is released), so it leaves no error
 * behind in the thread's state. */
xdev_status_t xdev_caching_sync_unlocked(xdev_device_allocator_t *da) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_status_t st = xdev_be_device_synchronize(da->rec);
    xdev_core_error_restore(&saved);
    return st;
}

/* Give the collected segments back (see above), after waiting for the
 * device unless they were collected idle_only; returns the bytes released. */
static size_t release_collected(xdev_device_allocator_t *da, release_list_t *list, bool wait) {
    if (list->head == NULL) return 0;
    xdev_status_t st = XDEV_SUCCESS;
    if (wait) {
        xdev_spin_unlock(&da->lock);
        st = xdev_caching_sync_unlocked(da);
        xdev_spin_lock(&da->lock);
        da->stats.num_sync_all_streams++;
    }
    xdev_segment_t *seg, *next;
    if (st != XDEV_SUCCESS) {
        for (seg = list->head; seg != NULL; seg = next) {
            next = seg->next;
            segment_link(da, seg);
            xdev_caching_bins_add(da, seg->first);
        }
        list->head = NULL;
        list->bytes = 0;
        return 0;
    }
    xdev_ptr_entry_t e;
    for (seg = list->head; seg != NULL; seg = seg->next)
        (void)xdev_ptr_remove((void *)seg->base, XDEV_MEMORY_DEVICE, &e);
    xdev_spin_unlock(&da->lock);
    for (seg = list->head; seg != NULL; seg = seg->next)
        xdev_caching_segment_free(da, seg->pool, (void *)seg->base, seg->size);
    xdev_spin_lock(&da->lock);
    for (seg = list->head; seg != NULL; seg = next) {
        next = seg->next;
        int kind = seg->pool_kind;
        xdev_caching_unreserve(da, seg->size);
        xdev_stat_update(da->stats.segment, kind, -1);
        xdev_stat_update(da->stats.reserved_bytes, kind, -(int64_t)seg->size);
        if (seg->size >= xdev_alloc_settings()->max_split_size)
            xdev_stat_add(&da->stats.oversize_segments, -1);
        da->stats.num_device_free++;
        xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_SEGMENT_FREE, seg->base, seg->size,
                                  seg->pool->native, NULL);
        xdev_caching_block_delete(da, seg->first);
        free(seg);
    }
    size_t released = list->bytes;
    list->head = NULL;
    list->bytes = 0;
    return released;
}

/* Release wholly free segments of pool `kind` (-1: both) up to `goal`
 * bytes: all of them, waiting for the device, or (idle_only) those whose
 * stream is idle, without waiting. */
size_t xdev_caching_release_free_segments(xdev_device_allocator_t *da, int kind,
                                          const xdev_stream_pool_t *only, size_t goal,
                                          bool idle_only, uint64_t min_age) {
    /* nothing goes back (or waits) while the device captures: CUDA cannot
     * free memory or synchronize then */
    if (XDEV_UNLIKELY(xdev_capture_on_device(da->rec))) return 0;
    release_list_t list = {NULL, 0};
    collect_free_segments(da, kind, only, goal, idle_only, min_age, &list);
    return release_collected(da, &list, !idle_only);
}

/* Release everything that can be: first wait (unlocked) for the device, so
 * that blocks waiting for record_stream events become free too. */
size_t xdev_caching_release_all(xdev_device_allocator_t *da) {
    if (XDEV_UNLIKELY(xdev_capture_on_device(da->rec))) return 0;
    if (da->pending_head != NULL) {
        xdev_spin_unlock(&da->lock);
        (void)xdev_caching_sync_unlocked(da);
        xdev_spin_lock(&da->lock);
    }
    size_t released = xdev_caching_release_free_segments(da, -1, NULL, SIZE_MAX, false, 0);
    return released + xdev_expandable_shrink(da);
}

/* empty_cache also restarts the growth policy: the high-water mark becomes
 * what is still reserved, so what a program does after emptying the cache
 * is judged on its own (peak resets leave the mark alone: they restart
 * statistics, not the allocator). */

xdev_status_t xdev_caching_empty_cache(xdev_device_allocator_t *da) {
    (void)xdev_caching_release_all(da);
    xdev_caching_prune_dead_pools(da);
    da->high_water = (size_t)da->stats.reserved_bytes[XDEV_STAT_ALL].current;
    return XDEV_SUCCESS;
}

size_t xdev_alloc_release_other_arenas(xdev_device_allocator_t *da) {
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n = xdev_alloc_arenas(da->primary, arenas);
    if (n < 2) return 0;
    size_t released = 0;
    xdev_spin_unlock(&da->lock); /* one arena lock at a time: no order to keep */
    for (int i = 0; i < n; i++) {
        if (arenas[i] == da) continue;
        xdev_spin_lock(&arenas[i]->lock);
        released += xdev_caching_release_all(arenas[i]);
        xdev_spin_unlock(&arenas[i]->lock);
    }
    xdev_spin_lock(&da->lock);
    return released;
}

void xdev_caching_segment_add(xdev_device_allocator_t *da, xdev_segment_t *seg, uintptr_t base,
                              size_t size, int kind, xdev_stream_pool_t *pool) {
    seg->base = base;
    seg->size = size;
    seg->pool_kind = kind;
    seg->pool = pool;
    seg->serial = atomic_fetch_add(&da->primary->segment_serial, 1);
    segment_link(da, seg);
}

void xdev_caching_garbage_collect(xdev_device_allocator_t *da, size_t incoming) {
    double t = xdev_alloc_settings()->gc_threshold;
    if (t <= 0.0) return;
    size_t cap = da->limit != SIZE_MAX ? da->limit : da->total_memory;
    if (cap == 0) return;
    size_t threshold = (size_t)(t * (double)cap);
    size_t reserved = (size_t)atomic_load(&da->primary->device_reserved);
    if (reserved + incoming <= threshold) return;
    xdev_caching_release_free_segments(da, -1, NULL, reserved + incoming - threshold, true, 0);
}

/* xdev's growth policy, beyond torch's: reserved memory may grow freely up
 * to its earlier high-water mark, but before it grows past that mark the
 * requesting stream's own wholly free segments (of the pool kind it needs)
 * go back to the backend first - those that stayed free while the arena grew
 * at least XDEV_TRIM_MIN_AGE times since (its growth count is the clock).
 * A segment left whole and free across growths is memory none of the
 * stream's requests could use, so keeping it only raises the peak; one
 * freed just now is often the working set of the next phase (a layer of a
 * training step), and giving it back made a GPT-2 step re-grow a 1.5 GiB
 * segment (11906 against torch's 10534 MiB). Other streams' segments are
 * never taken: a stream's cached segments are what its next iteration
 * needs, and taking them when another stream grows made the two trade
 * segments with the backend on every iteration (242 backend calls per warm
 * pass of a 4-stream inference trace). Replaying the PyTorch traces
 * (bench/traces, ../shared/traces) this keeps the whole run's peak reserved
 * at or below torch's on every trace with no backend call in any warm pass
 * (tests/check_replay.py). trim_before_grow:false in XDEV_ALLOC_CONF
 * restores torch's behaviour. (Another stream's free segment may still be
 * adopted, without a backend call, when that stream is idle: alloc_adopt.c.) */
void xdev_caching_trim_before_grow(xdev_device_allocator_t *da, int kind, xdev_stream_pool_t *pool,
                                   size_t incoming) {
    if (!xdev_alloc_settings()->trim_before_grow) return;
    size_t reserved = (size_t)da->stats.reserved_bytes[XDEV_STAT_ALL].current;
    if (reserved + incoming > da->high_water)
        xdev_caching_release_free_segments(da, kind, pool, SIZE_MAX, true, XDEV_TRIM_MIN_AGE);
}
