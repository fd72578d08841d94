/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_bins.h - the size bins' insertion, removal and best fit, inline: a warm
 * allocation or free changes the bins once or twice (a merge, a take and
 * its split) and searches them once, and as calls into alloc_bins.c each
 * paid a call's register saves besides its work.
 * Lock held throughout. */
#ifndef XDEV_CORE_ALLOC_BINS_H
#define XDEV_CORE_ALLOC_BINS_H

#include "alloc/alloc_internal.h"

/* Level l2 - 9 of a size in [2^l2, 2^(l2+1)), sub-bin its next three bits:
 * bin = 8 * (l2 - 9) + (size >> (l2 - 3)) - 8, the shifted size being in
 * [8, 16). Sizes here are blocks' and rounded requests': at least 512
 * bytes, less than 2^49 (XDEV_MAX_ALLOC_SIZE), so no clamp is needed for
 * them; smaller and larger ones are clamped all the same. */
static inline int xdev_bin_index(size_t size) {
    if (__builtin_expect(size < XDEV_MIN_BLOCK, 0)) return 0;
    int l2 = 63 - __builtin_clzll((unsigned long long)size);
    if (__builtin_expect(l2 >= XDEV_BIN_MIN_LOG2 + XDEV_BIN_LEVELS, 0)) return XDEV_BIN_COUNT - 1;
    return (l2 << XDEV_BIN_SUB_LOG2) + (int)(size >> (l2 - XDEV_BIN_SUB_LOG2)) -
           (XDEV_BIN_MIN_LOG2 << XDEV_BIN_SUB_LOG2) - XDEV_BIN_SUB;
}

/* Bin arithmetic unsigned: bin / 8 and bin % 8 are then a shift and a
 * mask, without the sign fix-ups a signed division needs. */
static inline void xdev_bins_mark(xdev_bins_t *bins, unsigned bin) {
    bins->sub_mask[bin / XDEV_BIN_SUB] |= (uint8_t)(1u << (bin % XDEV_BIN_SUB));
    bins->level_mask |= (uint64_t)1 << (bin / XDEV_BIN_SUB);
}

static inline void xdev_bins_unmark(xdev_bins_t *bins, unsigned bin) {
    unsigned level = bin / XDEV_BIN_SUB;
    bins->sub_mask[level] &= (uint8_t) ~(1u << (bin % XDEV_BIN_SUB));
    if (bins->sub_mask[level] == 0) bins->level_mask &= ~((uint64_t)1 << level);
}

static inline bool xdev_bins_before(const xdev_block_t *a, const xdev_block_t *b) {
    return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

static inline void xdev_bins_insert(xdev_bins_t *bins, xdev_block_t *b) {
    int bin = xdev_bin_index(b->size);
    b->bin = bin;
    xdev_block_t *prev = NULL, *cur = bins->head[bin];
    while (cur != NULL && xdev_bins_before(cur, b)) {
        prev = cur;
        cur = cur->bin_next;
    }
    b->bin_prev = prev;
    b->bin_next = cur;
    if (cur != NULL) cur->bin_prev = b;
    if (prev != NULL)
        prev->bin_next = b;
    else {
        bins->head[bin] = b;
        if (cur == NULL) xdev_bins_mark(bins, (unsigned)bin); /* the bin was empty */
    }
}

static inline void xdev_bins_remove(xdev_bins_t *bins, xdev_block_t *b) {
    int bin = b->bin;
    if (b->bin_prev != NULL)
        b->bin_prev->bin_next = b->bin_next;
    else
        bins->head[bin] = b->bin_next;
    if (b->bin_next != NULL) b->bin_next->bin_prev = b->bin_prev;
    if (bins->head[bin] == NULL) xdev_bins_unmark(bins, (unsigned)bin);
    b->bin_prev = b->bin_next = NULL;
    b->bin = -1;
}

/* Next non-empty bin strictly after `bin`, or -1. */
static inline int xdev_bins_next(const xdev_bins_t *bins, int bin) {
    unsigned level = (unsigned)bin / XDEV_BIN_SUB;
    unsigned sub = (unsigned)bin % XDEV_BIN_SUB;
    unsigned rest = (unsigned)bins->sub_mask[level] & ~((2u << sub) - 1u);
    if (rest != 0) return (int)(level * XDEV_BIN_SUB) + __builtin_ctz(rest);
    if (level + 1 >= XDEV_BIN_LEVELS) return -1;
    uint64_t levels = bins->level_mask & ~(((uint64_t)2 << level) - 1);
    if (levels == 0) return -1;
    int l = __builtin_ctzll(levels);
    return l * XDEV_BIN_SUB + __builtin_ctz(bins->sub_mask[l]);
}

/* torch's rules for oversize blocks (>= max_split_size): they serve only
 * requests that are themselves oversize, and only when not too much larger.
 * Returns 1 usable, 0 skip, -1 stop (every later block is worse). */
static inline int xdev_bins_usable(const xdev_block_t *b, size_t size, size_t max_split) {
    if (b->size < size) return 0;
    if (size < max_split && b->size >= max_split) return -1;
    if (size >= max_split && b->size >= size + XDEV_LARGE_BUFFER) return -1;
    return 1;
}

/* Smallest block >= size, lowest address among equals, obeying the
 * max_split_size rules; NULL if none. */
static inline xdev_block_t *xdev_bins_best_fit(xdev_bins_t *bins, size_t size, size_t max_split) {
    int bin = xdev_bin_index(size);
    for (xdev_block_t *b = bins->head[bin]; b != NULL; b = b->bin_next) {
        int u = xdev_bins_usable(b, size, max_split);
        if (u > 0) return b;
        if (u < 0) return NULL;
    }
    int nb = xdev_bins_next(bins, bin);
    if (nb < 0) return NULL;
    xdev_block_t *b = bins->head[nb];
    return xdev_bins_usable(b, size, max_split) > 0 ? b : NULL;
}

/* Bins with the inactive_split statistics kept alongside (the caching
 * allocator's insert and removal; xdev_caching_bins_add/del are the same
 * as calls). A block with a neighbour is a split one. */
static inline void xdev_caching_bins_add_fast(xdev_device_allocator_t *da, xdev_block_t *b) {
    int kind = b->segment->pool_kind;
    da->bins_changes++;
    xdev_bins_insert(&b->pool->bins[kind], b);
    if ((b->prev != NULL || b->next != NULL)) {
        xdev_stat_up(da->stats.inactive_split, kind, 1);
        xdev_stat_up(da->stats.inactive_split_bytes, kind, (int64_t)b->size);
        da->split_in_due[kind].n++; /* the totals: xdev_caching_stash_flush's */
        da->split_in_due[kind].bytes += (int64_t)b->size;
    }
}

static inline void xdev_caching_bins_del_fast(xdev_device_allocator_t *da, xdev_block_t *b) {
    int kind = b->segment->pool_kind;
    da->bins_changes++;
    xdev_bins_remove(&b->pool->bins[kind], b);
    if ((b->prev != NULL || b->next != NULL)) {
        xdev_stat_down(da->stats.inactive_split, kind, 1);
        xdev_stat_down(da->stats.inactive_split_bytes, kind, (int64_t)b->size);
        da->split_out_due[kind].n++;
        da->split_out_due[kind].bytes += (int64_t)b->size;
    }
}

#endif
