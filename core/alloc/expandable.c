/* SPDX-License-Identifier: Apache-2.0 */
/* expandable.c - expandable segments (XDEV_ALLOC_CONF=expandable_segments:true).
 *
 * Instead of many fixed segments, each stream pool gets one segment per pool
 * kind: an address range as large as the device, reserved once, of which
 * only a prefix is backed by memory. When no cached block fits, the segment
 * grows at its end by mapping whole granularity units (2 MiB on CUDA) and
 * the new memory joins the free block at its end, so a request a little
 * larger than anything cached costs one map of the difference rather than a
 * new segment beside the free ones; releasing (empty_cache, out of memory)
 * unmaps the free tail. A segment never has holes: the blocks cover
 * [base, base + size) as in any segment, so splitting, merging, stream
 * rules, record_stream, statistics and snapshots are the ordinary ones.
 * Only the free tail is given back, not free blocks in the middle.
 *
 * Backends provide the mapping calls (memory.va_*: CUDA's virtual memory
 * API, mmap on the CPU backend); a segment's range is one registry entry of
 * origin XDEV_PTR_EXPANDABLE, which IPC refuses to export. A segment that
 * sleeps (alloc_sleep.c) is never shrunk. Everything here runs with the
 * arena's lock held. */
#include <stdlib.h>

#include "alloc/alloc_internal.h"
#include "base/error_internal.h"
#include "alloc/pointer_registry.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"

static size_t align_up(size_t v, size_t g) {
    return (v + g - 1) / g * g;
}

static xdev_block_t *last_block(const xdev_segment_t *seg) {
    xdev_block_t *b = seg->first;
    while (b != NULL && b->next != NULL)
        b = b->next;
    return b;
}

/* Append [addr, addr + bytes) to the segment's end: it joins a free last
 * block or becomes a new free block (`spare` where not NULL, which cannot
 * fail; a spare not needed is deleted). */
static xdev_status_t extend_tail(xdev_device_allocator_t *da, xdev_segment_t *seg,
                                 xdev_stream_pool_t *pool, uintptr_t addr, size_t bytes,
                                 xdev_block_t *spare) {
    xdev_block_t *tail = last_block(seg);
    if (tail != NULL && tail->state == XDEV_BLOCK_FREE) {
        xdev_caching_bins_del(da, tail);
        tail->size += bytes;
        xdev_caching_bins_add(da, tail);
        if (spare != NULL) xdev_caching_block_delete(da, spare);
        return XDEV_SUCCESS;
    }
    xdev_block_t *b = spare != NULL ? spare : xdev_caching_block_new(da);
    if (b == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a block");
    b->addr = addr;
    b->size = bytes;
    b->segment = seg;
    b->pool = pool;
    b->state = XDEV_BLOCK_FREE;
    b->prev = tail;
    if (tail != NULL)
        tail->next = b;
    else
        seg->first = b;
    xdev_caching_bins_add(da, b);
    return XDEV_SUCCESS;
}

/* The pool's expandable segment of `kind`: address range reserved,
 * registered, linked into the arena's segment list, nothing mapped. */
static xdev_status_t create(xdev_device_allocator_t *da, xdev_stream_pool_t *pool, int kind,
                            size_t gran, xdev_segment_t **out) {
    size_t va = align_up(da->total_memory > 0 ? da->total_memory : (size_t)64 << 30, gran);
    void *base = NULL;
    xdev_status_t st = xdev_be_memory_va_reserve(da->rec, va, &base);
    if (st != XDEV_SUCCESS) return st;
    xdev_segment_t *seg = calloc(1, sizeof *seg);
    xdev_ptr_entry_t e = {(uintptr_t)base, va,  XDEV_MEMORY_DEVICE,  da->be,
                          da->index,       seg, XDEV_PTR_EXPANDABLE, da};
    if (seg == NULL || xdev_ptr_insert(&e) != XDEV_SUCCESS) {
        free(seg);
        (void)xdev_be_memory_va_release(da->rec, base, va);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for allocator bookkeeping");
    }
    xdev_caching_segment_add(da, seg, (uintptr_t)base, 0, kind, pool);
    seg->va_size = va;
    seg->expandable = true;
    pool->expandable[kind] = seg;
    xdev_stat_update(da->stats.segment, kind, 1);
    *out = seg;
    return XDEV_SUCCESS;
}

/* Forget a wholly unmapped segment: registry, reservation, list, struct. */
static void destroy(xdev_device_allocator_t *da, xdev_segment_t *seg) {
    xdev_ptr_entry_t e;
    (void)xdev_ptr_remove((void *)seg->base, XDEV_MEMORY_DEVICE, &e);
    (void)xdev_be_memory_va_release(da->rec, (void *)seg->base, seg->va_size);
    xdev_caching_segment_unlink(da, seg);
    if (seg->pool->expandable[seg->pool_kind] == seg) seg->pool->expandable[seg->pool_kind] = NULL;
    xdev_stat_update(da->stats.segment, seg->pool_kind, -1);
    free(seg);
}

xdev_status_t xdev_expandable_grow(xdev_device_allocator_t *da, xdev_stream_pool_t *pool, int kind,
                                   size_t size) {
    size_t gran = 0;
    xdev_status_t st = xdev_be_memory_va_granularity(da->rec, &gran);
    if (st != XDEV_SUCCESS) return st;
    if (gran == 0 || (gran & (gran - 1)) != 0)
        return XDEV_FAIL(XDEV_ERROR_INTERNAL, "%s backend: mapping granularity %zu", da->be->name,
                         gran);
    xdev_caching_stash_bin(da); /* the tail's state is read below */
    xdev_segment_t *seg = pool->expandable[kind];
    if (seg != NULL && seg->shrinking) return XDEV_ERROR_NOT_READY; /* no message: not an error */
    bool created = false;
    if (seg == NULL) {
        st = create(da, pool, kind, gran, &seg);
        if (st != XDEV_SUCCESS) return st;
        created = true;
    }
    xdev_block_t *tail = last_block(seg);
    size_t have = tail != NULL && tail->state == XDEV_BLOCK_FREE ? tail->size : 0;
    size_t need = align_up(size - (have < size ? have : size), gran);
    if (need == 0) return XDEV_SUCCESS;
    uintptr_t end = seg->base + seg->size;
    if (need > seg->va_size - seg->size) {
        st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                       "the expandable segment's %zu-byte address range is full", seg->va_size);
    } else if (!xdev_caching_reserve(da, need)) {
        st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                       "the per-process memory fraction caps reserved memory");
    } else {
        st = xdev_be_memory_va_map(da->rec, (void *)end, need);
        if (st != XDEV_SUCCESS) xdev_caching_unreserve(da, need);
    }
    if (st == XDEV_SUCCESS) st = extend_tail(da, seg, pool, end, need, NULL);
    if (st != XDEV_SUCCESS) {
        if (created) destroy(da, seg);
        return st;
    }
    seg->size += need;
    xdev_stat_update(da->stats.reserved_bytes, kind, (int64_t)need);
    da->stats.num_device_alloc++;
    xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_SEGMENT_ALLOC, end, need, pool->native, NULL);
    return XDEV_SUCCESS;
}

/* A tail cut off a segment, waiting to be unmapped. Its unmapping may give
 * back only its back part (an unmap in several calls, a later one failing):
 * the front part still mapped then becomes the segment's tail again, in
 * `spare`, taken when the cut was made so that putting it back cannot fail. */
typedef struct cut {
    xdev_segment_t *seg;
    uintptr_t addr;
    size_t bytes;
    size_t unmapped; /* bytes at the cut's back */
    xdev_block_t *spare;
} cut_t;

/* Detach the granularity-aligned part of a free last block: it leaves the
 * bins and the segment, so no allocation can take it while the lock is
 * dropped. False when there is nothing to cut (or no host memory for the
 * spare block). */
static bool cut_tail(xdev_device_allocator_t *da, xdev_segment_t *seg, size_t gran, size_t piece,
                     cut_t *c) {
    xdev_block_t *tail = last_block(seg);
    if (tail == NULL || tail->state != XDEV_BLOCK_FREE) return false;
    uintptr_t end = seg->base + seg->size;
    /* a unit boundary, or past a woken segment's pieces, which unmap whole */
    uintptr_t from =
        seg->base + xdev_segment_cut_offset(seg, piece, align_up(tail->addr - seg->base, gran));
    if (from >= end) return false;
    xdev_block_t *spare = NULL;
    if (from != tail->addr && (spare = xdev_caching_block_new(da)) == NULL) return false;
    xdev_caching_bins_del(da, tail);
    if (from == tail->addr) {
        if (tail->prev)
            tail->prev->next = NULL;
        else
            seg->first = NULL;
        xdev_caching_block_delete(da, tail);
        spare = xdev_caching_block_new(da); /* the block just deleted: cannot fail */
    } else {
        tail->size = from - tail->addr;
        xdev_caching_bins_add(da, tail);
    }
    seg->size -= end - from;
    seg->shrinking = true;
    *c = (cut_t){seg, from, end - from, 0, spare};
    return true;
}

/* Bookkeeping of the cut once unmapped (lock held): its still mapped front
 * back on the segment's end, then the unmapped back given up; a segment
 * left empty goes. Returns the bytes given up. */
static size_t finish_cut(xdev_device_allocator_t *da, const cut_t *c) {
    xdev_segment_t *seg = c->seg;
    const size_t kept = c->bytes - c->unmapped;
    if (kept > 0) {
        /* with a spare block this cannot fail */
        (void)extend_tail(da, seg, seg->pool, c->addr, kept, c->spare);
        seg->size += kept;
    } else {
        xdev_caching_block_delete(da, c->spare);
    }
    if (c->unmapped == 0) return 0;
    if (seg->whole_end > seg->size) seg->whole_end = seg->size; /* the cut ended at a piece */
    xdev_caching_unreserve(da, c->unmapped);
    xdev_stat_update(da->stats.reserved_bytes, seg->pool_kind, -(int64_t)c->unmapped);
    da->stats.num_device_free++;
    xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_SEGMENT_FREE, c->addr + kept, c->unmapped,
                              seg->pool->native, NULL);
    if (seg->first == NULL) destroy(da, seg);
    return c->unmapped;
}

size_t xdev_expandable_shrink(xdev_device_allocator_t *da) {
    size_t gran = 0;
    if (!XDEV_HAS(da->be, memory, va_unmap) ||
        xdev_be_memory_va_granularity(da->rec, &gran) != XDEV_SUCCESS || gran == 0)
        return 0;
    xdev_caching_stash_flush(da);
    int n = 0, cap = 0;
    for (xdev_segment_t *s = da->segments; s != NULL; s = s->next)
        cap += s->expandable && !s->shrinking && s->sleep_state == XDEV_SEG_AWAKE;
    if (cap == 0) return 0;
    const size_t piece = xdev_segment_piece(da->rec);
    cut_t *cuts = calloc((size_t)cap, sizeof *cuts);
    if (cuts == NULL) return 0;
    for (xdev_segment_t *s = da->segments; s != NULL && n < cap; s = s->next) {
        if (s->pool->mempool != 0 && !s->pool->mempool_dead) continue; /* a live pool's */
        if (s->sleep_state != XDEV_SEG_AWAKE) continue; /* unmapped, or about to be */
        if (s->expandable && !s->shrinking && cut_tail(da, s, gran, piece, &cuts[n])) n++;
    }
    size_t released = 0;
    if (n > 0) {
        /* The work queued so far may still use the memory: wait for the
         * device without the lock (a host function may need it); a wait
         * that fails (called from a host function) unmaps nothing. Each
         * cut unmaps from its back, so that what a failing call leaves
         * mapped is its front, the segment's tail again; that memory stays
         * cached (a release, like free(), does not fail the call) and the
         * next shrink tries it again. */
        xdev_spin_unlock(&da->lock);
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        if (xdev_caching_sync_unlocked(da) == XDEV_SUCCESS)
            for (int i = 0; i < n; i++)
                (void)xdev_segment_unmap(da->rec, cuts[i].seg, cuts[i].addr - cuts[i].seg->base,
                                         cuts[i].bytes, XDEV_UNMAP_BACK, &cuts[i].unmapped);
        xdev_core_error_restore(&saved);
        xdev_spin_lock(&da->lock);
        da->stats.num_sync_all_streams++;
        for (int i = 0; i < n; i++) {
            cuts[i].seg->shrinking = false;
            released += finish_cut(da, &cuts[i]);
        }
    }
    free(cuts);
    return released;
}
