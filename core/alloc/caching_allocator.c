/* SPDX-License-Identifier: Apache-2.0 */
/* caching_allocator.c - torch's caching allocator algorithm over any
 * backend's raw malloc/free and events.
 *
 * Sizes round to 512 B (or to power-of-two divisions); requests up to 1 MiB
 * come from 2 MiB small segments, larger ones from 20 MiB segments below
 * 10 MiB and from 2 MiB-rounded segments above. A block is reused only on
 * the stream it was allocated on; streams named by record_stream get an
 * event at free time and the block stays unusable until those complete. Out
 * of memory releases every cached segment (of every arena of the device)
 * and retries once; segments going back to the backend are
 * caching_release.c's. All functions here run with the arena's lock held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc/alloc_bins.h"
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

/* ---------------------------------------------------------------- helpers */

static size_t max_split(void) {
    return xdev_alloc_settings()->max_split_size;
}

static int floor_log2(size_t v) {
    return 63 - __builtin_clzll((unsigned long long)v);
}

#define round_size xdev_caching_round

/* torch's round_size with power-of-two divisions (xdev_caching_round's
 * path when some are set). */
size_t xdev_caching_round_divided(size_t size) {
    int interval = floor_log2(size) - 20;
    if (interval < 0) interval = 0;
    if (interval >= XDEV_ROUNDUP_INTERVALS) interval = XDEV_ROUNDUP_INTERVALS - 1;
    unsigned div = xdev_alloc_settings()->roundup_divisions[interval];
    if (div > 1 && size > XDEV_MIN_BLOCK * div) {
        size_t floor2 = (size_t)1 << floor_log2(size);
        size_t step = floor2 / div;
        size_t down = size & ~(step - 1);
        return down == size ? size : down + step;
    }
    return (size + XDEV_MIN_BLOCK - 1) / XDEV_MIN_BLOCK * XDEV_MIN_BLOCK;
}

/* Size of a new segment for a (rounded) request. */
static size_t segment_size(size_t size) {
    if (size <= XDEV_SMALL_SIZE) return XDEV_SMALL_BUFFER;
    if (size < XDEV_MIN_LARGE_ALLOC) return XDEV_LARGE_BUFFER;
    return (size + XDEV_ROUND_LARGE - 1) / XDEV_ROUND_LARGE * XDEV_ROUND_LARGE;
}

/* Block structs are recycled per device (a split on the hot path then costs
 * no malloc). */
xdev_block_t *xdev_caching_block_new(xdev_device_allocator_t *da) {
    xdev_block_t *b = da->spare_blocks;
    if (b != NULL)
        da->spare_blocks = b->bin_next;
    else if ((b = malloc(sizeof *b)) == NULL)
        return NULL;
    *b = (xdev_block_t){.bin = -1, .owner = da}; /* stores, not a call to memset */
    return b;
}

void xdev_caching_block_delete(xdev_device_allocator_t *da, xdev_block_t *b) {
    if (XDEV_UNLIKELY(b->more_used_streams != NULL)) { /* a merge deletes one: no call */
        free(b->more_used_streams);
        b->more_used_streams = NULL;
    }
    b->bin_next = da->spare_blocks;
    da->spare_blocks = b;
}

/* The tag a new allocation's pool is keyed by: with expandable segments
 * each top-level tag (the first component of the thread's tag path) has
 * pools (and so segments) of its own, which is what lets its memory sleep
 * (alloc_sleep.c); otherwise none. Only the top level, so that the phases
 * a program tags below it ("step/forward", "step/backward") still share
 * cached blocks and address ranges. */
static const char *pool_tag(void) {
    return xdev_alloc_settings()->expandable_segments ? xdev_alloc_tag_root_current() : NULL;
}

static xdev_stream_pool_t *get_pool(xdev_device_allocator_t *da, xdev_stream_t stream,
                                    const struct xdev_mempool *mp) {
    uint64_t id = mp != NULL ? mp->id : 0;
    const char *tag = pool_tag();
    for (xdev_stream_pool_t *p = da->pools; p != NULL; p = p->next)
        if (p->stream == stream && p->mempool == id && p->tag == tag) return p;
    xdev_stream_pool_t *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->stream = stream;
    p->native = stream->native;
    p->mempool = id;
    p->tag = tag;
    if (mp != NULL && mp->has_custom) {
        p->has_custom = true;
        p->custom = mp->custom;
    }
    p->next = da->pools;
    da->pools = p;
    return p;
}

/* ---------------------------------------------------------------- events */

static xdev_status_t event_get(xdev_device_allocator_t *da, void **out) {
    if (da->event_cache_len > 0) {
        *out = da->event_cache[--da->event_cache_len];
        return XDEV_SUCCESS;
    }
    return xdev_be_event_create(da->rec, 0, out);
}

static void event_put(xdev_device_allocator_t *da, void *ev) {
    if (da->event_cache_len == da->event_cache_cap) {
        int cap = da->event_cache_cap ? da->event_cache_cap * 2 : 16;
        void **n = realloc(da->event_cache, (size_t)cap * sizeof *n);
        if (n == NULL) {
            (void)xdev_be_event_destroy(da->rec, ev);
            return;
        }
        da->event_cache = n;
        da->event_cache_cap = cap;
    }
    da->event_cache[da->event_cache_len++] = ev;
}

static void free_block(xdev_device_allocator_t *da, xdev_block_t *b);

/* Complete pending frees whose events have passed. Never waits: the device
 * lock is held, and the work an event marks may be a host function that
 * needs this lock (xdev_malloc inside a host function). */
void xdev_caching_process_events(xdev_device_allocator_t *da) {
    if (XDEV_UNLIKELY(xdev_capture_on_device(da->rec))) return; /* no query may run meanwhile */
    xdev_pending_event_t **link = &da->pending_head, *prev = NULL;
    while (*link != NULL) {
        xdev_pending_event_t *pe = *link;
        xdev_status_t st = XDEV_SUCCESS;
        if (pe->event != NULL)
            st = xdev_be_event_query(da->rec, pe->event);
        else if (xdev_core_stream_acquire(pe->stream))
            st = xdev_core_stream_query(pe->stream);
        if (st == XDEV_ERROR_NOT_READY) {
            prev = pe;
            link = &pe->next;
            continue;
        }
        /* any other status (a failed stream) still releases the block */
        *link = pe->next;
        if (da->pending_tail == pe) da->pending_tail = prev;
        if (pe->event != NULL) event_put(da, pe->event);
        xdev_block_t *b = pe->block;
        free(pe);
        if (--b->pending_events == 0) free_block(da, b);
    }
}

bool xdev_caching_reserve(xdev_device_allocator_t *da, size_t bytes) {
    _Atomic int64_t *r = &da->primary->device_reserved;
    int64_t before = atomic_fetch_add(r, (int64_t)bytes);
    if (da->limit != SIZE_MAX && (size_t)before + bytes > da->limit) {
        atomic_fetch_sub(r, (int64_t)bytes);
        return false;
    }
    return true;
}

void xdev_caching_unreserve(xdev_device_allocator_t *da, size_t bytes) {
    atomic_fetch_sub(&da->primary->device_reserved, (int64_t)bytes);
}

/* Get a new segment from the backend; on success *out is its single free
 * block (not in a bin). */
static xdev_status_t new_segment(xdev_device_allocator_t *da, size_t size, int kind,
                                 xdev_stream_pool_t *pool, xdev_block_t **out) {
    /* the cap is on the device: count the segment in before asking for it */
    if (!xdev_caching_reserve(da, size))
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                         "the per-process memory fraction caps reserved memory");
    void *p = NULL;
    xdev_status_t st = xdev_caching_segment_malloc(da, pool, size, &p);
    if (st != XDEV_SUCCESS) {
        xdev_caching_unreserve(da, size);
        return st;
    }
    xdev_segment_t *seg = calloc(1, sizeof *seg);
    xdev_block_t *b = seg ? xdev_caching_block_new(da) : NULL;
    xdev_ptr_entry_t e = {(uintptr_t)p, size, XDEV_MEMORY_DEVICE, da->be,
                          da->index,    seg,  XDEV_PTR_SEGMENT,   da};
    if (b == NULL || xdev_ptr_insert(&e) != XDEV_SUCCESS) {
        free(seg);
        if (b) xdev_caching_block_delete(da, b);
        xdev_caching_segment_free(da, pool, p, size);
        xdev_caching_unreserve(da, size);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for allocator bookkeeping");
    }
    xdev_caching_segment_add(da, seg, (uintptr_t)p, size, kind, pool);
    seg->first = b;
    b->addr = (uintptr_t)p;
    b->size = size;
    b->segment = seg;
    b->pool = pool;
    b->state = XDEV_BLOCK_FREE;
    xdev_stat_update(da->stats.segment, kind, 1);
    xdev_stat_update(da->stats.reserved_bytes, kind, (int64_t)size);
    if (size >= max_split()) xdev_stat_add(&da->stats.oversize_segments, 1);
    da->stats.num_device_alloc++;
    xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_SEGMENT_ALLOC, seg->base, size, pool->native,
                              NULL);
    *out = b;
    return XDEV_SUCCESS;
}

/* ---------------------------------------------------------------- malloc/free */

/* Memory for a request no cached block fits: the pool's expandable segment
 * grows, or a new segment. *out is a free block (out of the bins). */
static xdev_status_t get_memory(xdev_device_allocator_t *da, xdev_stream_pool_t *pool, int kind,
                                size_t rsize, xdev_block_t **out) {
    if (xdev_alloc_settings()->expandable_segments && !pool->has_custom) {
        xdev_status_t st = xdev_expandable_grow(da, pool, kind, rsize);
        if (st == XDEV_SUCCESS) {
            xdev_block_t *b = xdev_bins_best_fit(&pool->bins[kind], rsize, max_split());
            if (b != NULL) {
                xdev_caching_bins_del_fast(da, b);
                *out = b;
                return XDEV_SUCCESS;
            }
        } else if (st != XDEV_ERROR_NOT_READY) {
            return st;
        }
        /* being shrunk by another thread, or max_split_size keeps the grown
         * tail from this request: an ordinary segment */
    }
    return new_segment(da, segment_size(rsize), kind, pool, out);
}

/* No cached block fits: the growth policy, then memory from the backend,
 * with one retry after releasing every cache when the device is full. */
static xdev_status_t grow(xdev_device_allocator_t *da, xdev_stream_pool_t *pool, int kind,
                          size_t rsize, size_t size, xdev_stream_t stream, xdev_block_t **out) {
    if (XDEV_UNLIKELY(atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) != 0) &&
        pool->mempool == 0) {
        xdev_status_t cst = xdev_capture_unsafe_slow(
            "an allocation that needs new memory from the backend outside the capture's pool");
        if (cst != XDEV_SUCCESS) return cst;
    }
    if (!xdev_alloc_settings()->expandable_segments) {
        if (xdev_alloc_settings()->trim_before_grow &&
            (*out = xdev_caching_adopt_segment(da, pool, kind, rsize)) != NULL)
            return XDEV_SUCCESS;
        size_t seg = segment_size(rsize);
        xdev_caching_garbage_collect(da, seg);
        xdev_caching_trim_before_grow(da, kind, pool, seg);
    }
    xdev_status_t st = get_memory(da, pool, kind, rsize, out);
    char backend_msg[512] = "";
    if (st == XDEV_ERROR_OUT_OF_MEMORY) {
        snprintf(backend_msg, sizeof backend_msg, "%s", xdev_last_error());
        /* the retry waits for the device before it frees cached memory */
        if (!xdev_capture_on_device(da->rec)) {
            xdev_status_t dst = xdev_sync_debug_wait(
                "an allocation", da->rec,
                "out of memory: the retry waits for the device to free cached memory");
            if (dst != XDEV_SUCCESS) return dst;
        }
        if (xdev_caching_release_all(da) + xdev_alloc_release_other_arenas(da) > 0) {
            da->stats.num_alloc_retries++;
            st = get_memory(da, pool, kind, rsize, out);
        }
    }
    if (st == XDEV_ERROR_OUT_OF_MEMORY) {
        da->stats.num_ooms++;
        xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_OOM, 0, size, stream->native,
                                  xdev_alloc_tag_current());
        return xdev_caching_oom_error(da, size, st, backend_msg);
    }
    if (st != XDEV_SUCCESS) return st;
    da->growths++;
    size_t res = (size_t)da->stats.reserved_bytes[XDEV_STAT_ALL].current;
    if (res > da->high_water) da->high_water = res;
    return XDEV_SUCCESS;
}

/* torch's rule: is a free block of block_size cut to serve `size`? */
static bool should_split_size(int pool_kind, size_t block_size, size_t size) {
    size_t remaining = block_size - size;
    if (pool_kind == XDEV_POOL_SMALL) return remaining >= XDEV_MIN_BLOCK;
    return size < max_split() && remaining > XDEV_SMALL_SIZE;
}

static bool should_split(const xdev_block_t *b, size_t size) {
    return should_split_size(b->segment->pool_kind, b->size, size);
}

static xdev_status_t take_block(xdev_device_allocator_t *da, size_t rsize, size_t size,
                                xdev_stream_t stream, const struct xdev_mempool *mp,
                                xdev_block_t **out);

/* Would the allocator without a stash hand out the stash (same address,
 * same size) for a request of its size? Then taking it changes nothing but
 * the cost. Unbinned, the stash would merge with its free neighbours; best
 * fit would take the merged block (and cut the stash's size off its start)
 * unless the bins hold a smaller block, or one as small at a lower address.
 * A free block before it would move the start: no. max_split_size set: no
 * (its rules are not repeated here). */
bool xdev_caching_stash_is_best_slow(xdev_device_allocator_t *da, const xdev_block_t *b) {
    if (max_split() != SIZE_MAX || (b->prev && b->prev->state == XDEV_BLOCK_FREE)) return false;
    size_t merged = b->size + (b->next && b->next->state == XDEV_BLOCK_FREE ? b->next->size : 0);
    if (merged != b->size && !should_split_size(b->segment->pool_kind, merged, b->size))
        return false; /* the merged block would be handed out whole */
    /* the free neighbour after it would be part of the merged block */
    if (xdev_bins_fit_before(&b->pool->bins[b->segment->pool_kind], b->size, merged, b->addr,
                             b->next))
        return false;
    da->stash_checked = b;
    da->stash_checked_at = da->bins_changes;
    return true;
}

static void activate(xdev_device_allocator_t *da, xdev_block_t *b, size_t size,
                     xdev_stream_t stream, bool counted);

#define history_on xdev_caching_history_on
#define stash_is_best xdev_caching_stash_is_best

xdev_status_t xdev_caching_malloc(xdev_device_allocator_t *da, size_t size, xdev_stream_t stream,
                                  struct xdev_mempool *mp, xdev_block_t **out) {
    if (da->pending_head != NULL) xdev_caching_process_events(da);
    size_t rsize = round_size(size);
    xdev_block_t *b = da->stash;
    bool counted = false;
    if (b != NULL && b->size == rsize && b->pool->stream == stream &&
        b->pool->mempool == (mp != NULL ? mp->id : 0) && b->pool->tag == pool_tag() &&
        b->pool->asleep == 0 && stash_is_best(da, b)) {
        da->stash = NULL;          /* the hot pair: the block just freed */
        if (da->stash_uncounted) { /* its free and this allocation as one */
            da->stash_uncounted = false;
            xdev_caching_count_hot_pair(da, b, size);
            counted = true;
        }
    } else {
        xdev_caching_stash_bin(da);
        xdev_status_t st = take_block(da, rsize, size, stream, mp, &b);
        if (st != XDEV_SUCCESS) return st;
    }
    activate(da, b, size, stream, counted);
    *out = b;
    return XDEV_SUCCESS;
}

/* A free block of at least rsize bytes on `stream` (out of the bins), cut
 * to rsize where the rules allow. */
static xdev_status_t take_block(xdev_device_allocator_t *da, size_t rsize, size_t size,
                                xdev_stream_t stream, const struct xdev_mempool *mp,
                                xdev_block_t **out) {
    int kind = rsize <= XDEV_SMALL_SIZE ? XDEV_POOL_SMALL : XDEV_POOL_LARGE;
    xdev_stream_pool_t *pool = get_pool(da, stream, mp);
    if (pool == NULL)
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a stream pool");
    if (pool->asleep != 0) return xdev_alloc_asleep_error(da, pool->tag, "an allocation", NULL);
    xdev_block_t *b = xdev_bins_best_fit(&pool->bins[kind], rsize, max_split());
    if (b != NULL) {
        xdev_caching_bins_del_fast(da, b);
    } else {
        xdev_status_t st = grow(da, pool, kind, rsize, size, stream, &b);
        if (st != XDEV_SUCCESS) return st;
    }
    if (should_split(b, rsize)) {
        xdev_block_t *rest = xdev_caching_block_new(da);
        if (rest != NULL) { /* no memory for the struct: hand out the whole block */
            rest->addr = b->addr + rsize;
            rest->size = b->size - rsize;
            rest->segment = b->segment;
            rest->pool = b->pool;
            rest->state = XDEV_BLOCK_FREE;
            rest->prev = b;
            rest->next = b->next;
            if (b->next) b->next->prev = rest;
            b->next = rest;
            b->size = rsize;
            xdev_caching_bins_add_fast(da, rest);
        }
    }
    *out = b;
    return XDEV_SUCCESS;
}

/* The statistics of an allocation of block b (`size` requested): the
 * current values now, the totals owed (alloc_due). */
static void count_alloc(xdev_device_allocator_t *da, const xdev_block_t *b, size_t size) {
    int k = b->segment->pool_kind;
    xdev_stat_up(da->stats.allocation, k, 1);
    xdev_stat_up(da->stats.allocated_bytes, k, (int64_t)b->size);
    xdev_stat_up(da->stats.requested_bytes, k, (int64_t)size);
    xdev_stat_up(da->stats.active, k, 1);
    xdev_stat_up(da->stats.active_bytes, k, (int64_t)b->size);
    xdev_alloc_due_t *d = &da->alloc_due[k];
    d->n++;
    d->bytes += (int64_t)b->size;
    d->requested += (int64_t)size;
}

/* The statistics of the free of block b (active, requested b->requested),
 * but oversize_allocations, which the free counts at once. */
static void count_free(xdev_device_allocator_t *da, const xdev_block_t *b) {
    int k = b->segment->pool_kind;
    xdev_stat_down(da->stats.allocation, k, 1);
    xdev_stat_down(da->stats.allocated_bytes, k, (int64_t)b->size);
    xdev_stat_down(da->stats.requested_bytes, k, (int64_t)b->requested);
    xdev_stat_down(da->stats.active, k, 1);
    xdev_stat_down(da->stats.active_bytes, k, (int64_t)b->size);
    xdev_alloc_due_t *d = &da->free_due[k];
    d->n++;
    d->bytes += (int64_t)b->size;
    d->requested += (int64_t)b->requested;
}

/* Hand a free block to the user; `counted`: its statistics are done
 * (count_hot_pair). */
static void activate(xdev_device_allocator_t *da, xdev_block_t *b, size_t size,
                     xdev_stream_t stream, bool counted) {
    if (!counted) count_alloc(da, b, size);
    b->state = XDEV_BLOCK_ACTIVE;
    b->stream = stream;
    b->requested = size;
    b->n_used_streams = 0;
    if (b->size >= max_split()) xdev_stat_add(&da->stats.oversize_allocations, 1);
    b->tag = xdev_alloc_tag_current();
    if (history_on(da))
        xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_ALLOC, b->addr, b->size, stream->native,
                                  b->tag);
}

/* Merge `b` with a free neighbour `n` (which is removed). */
static inline __attribute__((always_inline)) void merge(xdev_device_allocator_t *da,
                                                        xdev_block_t *b, xdev_block_t *n) {
    xdev_caching_bins_del_fast(da, n);
    if (n == b->prev) {
        b->addr = n->addr;
        b->prev = n->prev;
        if (b->prev)
            b->prev->next = b;
        else
            b->segment->first = b;
    } else {
        b->next = n->next;
        if (b->next) b->next->prev = b;
    }
    b->size += n->size;
    xdev_caching_block_delete(da, n);
}

/* A free block (state set) into the bins, merged with free neighbours. */
static void bin_block(xdev_device_allocator_t *da, xdev_block_t *b) {
    if (b->prev && b->prev->state == XDEV_BLOCK_FREE) merge(da, b, b->prev);
    if (b->next && b->next->state == XDEV_BLOCK_FREE) merge(da, b, b->next);
    if (b->prev == NULL && b->next == NULL) b->segment->free_since = da->growths;
    xdev_caching_bins_add_fast(da, b);
}

/* The last freed block is kept out of the bins (the "stash"): a framework
 * frees a tensor and allocates one of the same size on the same stream
 * right after, and that pair then costs no merge, bin insert, best-fit
 * search, bin removal or split. Any other operation of the arena first puts
 * the stash in the bins as the free would have, so nothing else sees it:
 * statistics, snapshots, releases and merges find the state they would
 * without it. Only which of two equally good blocks a request gets can
 * differ (the stash, where best fit might take another of the same size). */
/* Add the totals owed (alloc_internal.h: hot_pairs, alloc_due) to a
 * stat's "all" and pool k figures. */
static void owe(xdev_stat_t stat[3], int k, int64_t allocated, int64_t freed) {
    stat[XDEV_STAT_ALL].allocated += allocated;
    stat[XDEV_STAT_ALL].freed += freed;
    stat[k].allocated += allocated;
    stat[k].freed += freed;
}

/* The hot pairs' and the deferred totals into the statistics. */
static void fold_totals(xdev_device_allocator_t *da) {
    for (int kind = 0; kind < XDEV_POOL_KINDS; kind++) {
        int k = kind == XDEV_POOL_LARGE ? XDEV_STAT_LARGE_POOL : XDEV_STAT_SMALL_POOL;
        const xdev_alloc_due_t *a = &da->alloc_due[kind], *f = &da->free_due[kind];
        const xdev_alloc_due_t *si = &da->split_in_due[kind], *so = &da->split_out_due[kind];
        int64_t pairs = da->hot_pairs[kind], bytes = da->hot_bytes[kind];
        owe(da->stats.allocation, k, pairs + a->n, pairs + f->n);
        owe(da->stats.active, k, pairs + a->n, pairs + f->n);
        owe(da->stats.allocated_bytes, k, bytes + a->bytes, bytes + f->bytes);
        owe(da->stats.active_bytes, k, bytes + a->bytes, bytes + f->bytes);
        owe(da->stats.requested_bytes, k, da->hot_requested[kind] + a->requested,
            da->hot_requested[kind] + f->requested);
        owe(da->stats.inactive_split, k, si->n, so->n);
        owe(da->stats.inactive_split_bytes, k, si->bytes, so->bytes);
        da->hot_pairs[kind] = da->hot_bytes[kind] = da->hot_requested[kind] = 0;
        memset(&da->alloc_due[kind], 0, sizeof da->alloc_due[kind]);
        memset(&da->free_due[kind], 0, sizeof da->free_due[kind]);
        memset(&da->split_in_due[kind], 0, sizeof da->split_in_due[kind]);
        memset(&da->split_out_due[kind], 0, sizeof da->split_out_due[kind]);
    }
}

void xdev_caching_stash_bin(xdev_device_allocator_t *da) {
    xdev_block_t *b = da->stash;
    if (b == NULL) return;
    da->stash = NULL;
    if (da->stash_uncounted) {
        da->stash_uncounted = false;
        count_free(da, b);
    }
    bin_block(da, b);
}

void xdev_caching_stash_flush(xdev_device_allocator_t *da) {
    xdev_caching_stash_bin(da);
    fold_totals(da);
}

/* An active (or pending) block stops counting as active (its other
 * statistics are xdev_caching_free's). */
static void retire(xdev_device_allocator_t *da, xdev_block_t *b) {
    int k = b->segment->pool_kind;
    xdev_stat_update(da->stats.active, k, -1);
    xdev_stat_update(da->stats.active_bytes, k, -(int64_t)b->size);
    if (history_on(da))
        xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_FREE_COMPLETED, b->addr, b->size,
                                  b->pool->native, b->tag);
    b->state = XDEV_BLOCK_FREE;
}

/* Make an active (or pending) block free and cached. */
static void free_block(xdev_device_allocator_t *da, xdev_block_t *b) {
    xdev_caching_stash_bin(da); /* before b is FREE: merges must not meet the stash */
    retire(da, b);
    bin_block(da, b);
}

static xdev_stream_t used_stream(const xdev_block_t *b, int i) {
    return i < XDEV_BLOCK_INLINE_STREAMS ? b->used_streams[i]
                                         : b->more_used_streams[i - XDEV_BLOCK_INLINE_STREAMS];
}

void xdev_caching_free(xdev_device_allocator_t *da, xdev_block_t *b) {
    if (b->size >= max_split()) xdev_stat_add(&da->stats.oversize_allocations, -1);
    int n = b->n_used_streams;
    if (n == 0 && b->pending_events == 0) { /* the common case: into the stash */
        xdev_caching_stash_bin(da);
        if (XDEV_UNLIKELY(history_on(da))) {
            /* the history and the tracer's counters see each free as it
             * happens: counted now */
            count_free(da, b);
            da->stash = b;
            b->state = XDEV_BLOCK_FREE;
            xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_FREE_COMPLETED, b->addr, b->size,
                                      b->pool->native, b->tag);
            return;
        }
        b->state = XDEV_BLOCK_FREE;
        da->stash = b;
        da->stash_uncounted = true; /* counted when binned, or with the next allocation */
        return;
    }
    xdev_caching_stash_bin(da); /* the history below sees every earlier free counted */
    int k = b->segment->pool_kind;
    xdev_stat_update(da->stats.allocation, k, -1);
    xdev_stat_update(da->stats.allocated_bytes, k, -(int64_t)b->size);
    xdev_stat_update(da->stats.requested_bytes, k, -(int64_t)b->requested);
    /* Streams that used the block: it becomes reusable after their work so far. */
    b->n_used_streams = 0;
    for (int i = 0; i < n; i++) {
        xdev_stream_t s = used_stream(b, i);
        if (!xdev_core_stream_acquire(s)) continue; /* destroyed: work done */
        xdev_pending_event_t *pe = malloc(sizeof *pe);
        if (pe == NULL) {
            /* No way to know when s passes its use: the block is never
             * reused (a leak under host memory exhaustion, not a race; no
             * waiting here - the lock is held). */
            b->pending_events++;
            continue;
        }
        void *ev = NULL;
        xdev_error_state_t saved; /* a failure here only changes how we wait */
        xdev_core_error_save(&saved);
        if (event_get(da, &ev) != XDEV_SUCCESS) {
            ev = NULL;
        } else if (xdev_be_event_record(s->rec, ev, s->native) != XDEV_SUCCESS) {
            event_put(da, ev);
            ev = NULL;
        }
        xdev_core_error_restore(&saved);
        pe->event = ev; /* NULL: process_events polls the stream itself */
        pe->stream = ev == NULL ? s : NULL;
        pe->block = b;
        pe->next = NULL;
        if (da->pending_tail)
            da->pending_tail->next = pe;
        else
            da->pending_head = pe;
        da->pending_tail = pe;
        b->pending_events++;
    }
    if (b->pending_events > 0) {
        b->state = XDEV_BLOCK_PENDING_FREE;
        xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_FREE_REQUESTED, b->addr, b->size,
                                  b->pool->native, b->tag);
        return;
    }
    free_block(da, b);
}

xdev_status_t xdev_caching_record_stream(xdev_device_allocator_t *da, xdev_block_t *b,
                                         xdev_stream_t stream) {
    (void)da; /* the block's bookkeeping is all there is; the lock is the caller's */
    if (stream == b->stream) return XDEV_SUCCESS;
    for (int i = 0; i < b->n_used_streams; i++)
        if (used_stream(b, i) == stream) return XDEV_SUCCESS;
    int i = b->n_used_streams;
    if (i < XDEV_BLOCK_INLINE_STREAMS) {
        b->used_streams[i] = stream;
    } else {
        int j = i - XDEV_BLOCK_INLINE_STREAMS;
        if (j == b->more_cap) {
            int cap = b->more_cap ? b->more_cap * 2 : 4;
            xdev_stream_t *m = realloc(b->more_used_streams, (size_t)cap * sizeof *m);
            if (m == NULL)
                return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to record the stream");
            b->more_used_streams = m;
            b->more_cap = cap;
        }
        b->more_used_streams[j] = stream;
    }
    b->n_used_streams++;
    return XDEV_SUCCESS;
}

/* Free the stream pools of dead memory pools that hold no segment any more
 * (their last block went back with its segment), so that pools made and
 * dropped by the thousand (a graph per step) leave nothing behind. */
void xdev_caching_prune_dead_pools(xdev_device_allocator_t *da) {
    xdev_caching_stash_flush(da);
    for (xdev_stream_pool_t **link = &da->pools; *link != NULL;) {
        xdev_stream_pool_t *p = *link;
        bool empty = p->mempool_dead && p->expandable[0] == NULL && p->expandable[1] == NULL;
        for (const xdev_segment_t *seg = da->segments; seg != NULL && empty; seg = seg->next)
            empty = seg->pool != p;
        if (empty) {
            *link = p->next;
            free(p);
        } else {
            link = &p->next;
        }
    }
}

void xdev_caching_release_mempool(xdev_device_allocator_t *da, uint64_t id) {
    for (xdev_stream_pool_t *p = da->pools; p != NULL; p = p->next)
        if (p->mempool == id) p->mempool_dead = true;
    for (xdev_stream_pool_t *p = da->pools; p != NULL; p = p->next)
        if (p->mempool == id)
            (void)xdev_caching_release_free_segments(da, -1, p, SIZE_MAX, false, 0);
    xdev_caching_prune_dead_pools(da);
}
