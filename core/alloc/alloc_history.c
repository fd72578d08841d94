/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_history.c - what the allocator records for its observers: the
 * optional history ring of alloc/free/segment events per device
 * (xdev_memory_record_history), fed to the stream tracer while it runs
 * (runtime/trace_probe.h), and the locked walk over every segment that the
 * snapshots take (observe/alloc_snapshot.c, alloc_snapshot_torch.c). */
#include <stdlib.h>
#include <time.h>

#include "base/error_internal.h"
#include "alloc/alloc_internal.h"
#include "runtime/device_record.h"
#include "runtime/stream_internal.h"
#include "runtime/trace_probe.h"

/* The stream tracer's device counters: this arena's figures (lock held)
 * plus the other arenas' as they last traced them. */
static void feed_tracer(xdev_device_allocator_t *da, const char *action, uintptr_t addr,
                        size_t size, const void *stream, const char *tag) {
    int64_t allocated = da->stats.allocated_bytes[XDEV_STAT_ALL].current;
    if (da->stash_uncounted) allocated -= (int64_t)da->stash->size; /* its free, not counted yet */
    int64_t reserved = da->stats.reserved_bytes[XDEV_STAT_ALL].current;
    atomic_store_explicit(&da->traced_allocated, allocated, memory_order_relaxed);
    atomic_store_explicit(&da->traced_reserved, reserved, memory_order_relaxed);
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n = xdev_alloc_arenas(da->primary, arenas);
    for (int i = 0; i < n; i++)
        if (arenas[i] != da) {
            allocated += atomic_load_explicit(&arenas[i]->traced_allocated, memory_order_relaxed);
            reserved += atomic_load_explicit(&arenas[i]->traced_reserved, memory_order_relaxed);
        }
    xdev_tracer_memory(da->rec, stream, action, addr, size, tag, allocated, reserved);
}

void xdev_alloc_history_record(xdev_device_allocator_t *da, xdev_memory_history_action_t action,
                               uintptr_t addr, size_t size, const void *stream, const char *tag) {
    if (XDEV_UNLIKELY(xdev_tracer_active()))
        feed_tracer(da, xdev_alloc_history_action_name(action), addr, size, stream, tag);
    xdev_device_allocator_t *p = da->primary;
    if (!atomic_load_explicit(&p->recording, memory_order_relaxed)) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    xdev_spin_lock(&p->trace_lock);
    if (p->trace != NULL) {
        xdev_memory_history_entry_t *e = &p->trace[p->trace_next];
        e->action = action;
        e->addr = addr;
        e->size = size;
        e->stream = stream;
        e->tag = tag;
        e->time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        p->trace_next = (p->trace_next + 1) % p->trace_cap;
        if (p->trace_len < p->trace_cap) p->trace_len++;
    }
    xdev_spin_unlock(&p->trace_lock);
}

xdev_status_t xdev_memory_record_history(xdev_device_t device, bool enabled, size_t max_entries) {
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_device_allocator_t *da;
    XDEV_CHECK(xdev_alloc_get(rec->be, rec->id.index, &da));
    if (max_entries == 0) max_entries = XDEV_TRACE_RING_DEFAULT;
    if (max_entries > ((size_t)1 << 26))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "max_entries %zu is above 2^26",
                             max_entries);
    xdev_memory_history_entry_t *ring = NULL;
    if (enabled) {
        ring = calloc(max_entries, sizeof *ring);
        if (ring == NULL)
            return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for %zu history entries",
                                 max_entries);
    }
    xdev_spin_lock(&da->trace_lock);
    xdev_memory_history_entry_t *old = da->trace;
    da->trace = ring;
    da->trace_cap = enabled ? max_entries : 0;
    da->trace_len = 0;
    da->trace_next = 0;
    atomic_store_explicit(&da->recording, enabled, memory_order_relaxed);
    xdev_spin_unlock(&da->trace_lock);
    free(old);
    return XDEV_SUCCESS;
}

const char *xdev_alloc_history_action_name(xdev_memory_history_action_t a) {
    switch (a) {
    case XDEV_MEMORY_HISTORY_ALLOC:
        return "alloc";
    case XDEV_MEMORY_HISTORY_FREE_REQUESTED:
        return "free_requested";
    case XDEV_MEMORY_HISTORY_FREE_COMPLETED:
        return "free_completed";
    case XDEV_MEMORY_HISTORY_SEGMENT_ALLOC:
        return "segment_alloc";
    case XDEV_MEMORY_HISTORY_SEGMENT_FREE:
        return "segment_free";
    case XDEV_MEMORY_HISTORY_OOM:
        return "oom";
    }
    return "unknown";
}

void xdev_alloc_each_segment(xdev_device_allocator_t *primary, xdev_segment_fn fn, void *ctx) {
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n = xdev_alloc_lock_all(primary, arenas); /* one moment for the whole device */
    for (int i = 0; i < n; i++) {
        xdev_caching_stash_flush(arenas[i]); /* its blocks as the bins have them */
        const xdev_device_allocator_t *da = arenas[i];
        for (const xdev_segment_t *s = da->segments; s != NULL; s = s->next)
            fn(ctx, da, s->base, s->size, s->pool_kind, s->pool->native, s->first, s);
        for (const xdev_block_t *b = da->direct_blocks; b != NULL; b = b->next)
            fn(ctx, da, b->addr, b->size,
               b->size <= XDEV_SMALL_SIZE ? XDEV_POOL_SMALL : XDEV_POOL_LARGE,
               b->stream ? b->stream->native : NULL, b, NULL);
        for (const xdev_block_t *b = da->managed_blocks; b != NULL; b = b->next)
            fn(ctx, da, b->addr, b->size, XDEV_SEGMENT_MANAGED,
               b->stream ? b->stream->native : NULL, b, NULL);
    }
    xdev_alloc_unlock_all(arenas, n);
}

const xdev_memory_history_entry_t *xdev_alloc_history_entry(const xdev_device_allocator_t *da,
                                                            size_t k) {
    size_t start = (da->trace_next + da->trace_cap - da->trace_len) % da->trace_cap;
    return &da->trace[(start + k) % da->trace_cap];
}
