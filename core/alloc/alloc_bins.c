/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_bins.c - segregated size-class bins with exact best fit.
 *
 * A bin covers 1/8 of a power of two; its blocks stay sorted by (size,
 * address) so the first block that fits in the request's own bin is the
 * best fit there, and any later non-empty bin's head is the best fit above.
 * Two-level bitmaps find the next non-empty bin without scanning. */
#include "alloc/alloc_internal.h"

static int floor_log2(size_t v) {
    return 63 - __builtin_clzll((unsigned long long)v);
}

int xdev_bin_index(size_t size) {
    if (size < XDEV_MIN_BLOCK) size = XDEV_MIN_BLOCK;
    int l2 = floor_log2(size);
    int level = l2 - XDEV_BIN_MIN_LOG2;
    if (level >= XDEV_BIN_LEVELS) return XDEV_BIN_COUNT - 1;
    int sub = (int)((size >> (l2 - XDEV_BIN_SUB_LOG2)) & (XDEV_BIN_SUB - 1));
    return level * XDEV_BIN_SUB + sub;
}

static void mark(xdev_bins_t *bins, int bin) {
    bins->sub_mask[bin / XDEV_BIN_SUB] |= (uint8_t)(1u << (bin % XDEV_BIN_SUB));
    bins->level_mask |= (uint64_t)1 << (bin / XDEV_BIN_SUB);
}

static void unmark(xdev_bins_t *bins, int bin) {
    int level = bin / XDEV_BIN_SUB;
    bins->sub_mask[level] &= (uint8_t) ~(1u << (bin % XDEV_BIN_SUB));
    if (bins->sub_mask[level] == 0) bins->level_mask &= ~((uint64_t)1 << level);
}

static bool before(const xdev_block_t *a, const xdev_block_t *b) {
    return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

void xdev_bins_insert(xdev_bins_t *bins, xdev_block_t *b) {
    int bin = xdev_bin_index(b->size);
    b->bin = bin;
    xdev_block_t *prev = NULL, *cur = bins->head[bin];
    while (cur != NULL && before(cur, b)) {
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
        mark(bins, bin);
    }
}

void xdev_bins_remove(xdev_bins_t *bins, xdev_block_t *b) {
    int bin = b->bin;
    if (b->bin_prev != NULL)
        b->bin_prev->bin_next = b->bin_next;
    else
        bins->head[bin] = b->bin_next;
    if (b->bin_next != NULL) b->bin_next->bin_prev = b->bin_prev;
    if (bins->head[bin] == NULL) unmark(bins, bin);
    b->bin_prev = b->bin_next = NULL;
    b->bin = -1;
}

/* Next non-empty bin strictly after `bin`, or -1. */
static int next_bin(const xdev_bins_t *bins, int bin) {
    int level = bin / XDEV_BIN_SUB;
    int sub = bin % XDEV_BIN_SUB;
    unsigned rest = (unsigned)bins->sub_mask[level] & ~((2u << sub) - 1u);
    if (rest != 0) return level * XDEV_BIN_SUB + __builtin_ctz(rest);
    if (level + 1 >= XDEV_BIN_LEVELS) return -1;
    uint64_t levels = bins->level_mask & ~(((uint64_t)2 << level) - 1);
    if (levels == 0) return -1;
    int l = __builtin_ctzll(levels);
    return l * XDEV_BIN_SUB + __builtin_ctz(bins->sub_mask[l]);
}

/* torch's rules for oversize blocks (>= max_split_size): they serve only
 * requests that are themselves oversize, and only when not too much larger.
 * Returns 1 usable, 0 skip, -1 stop (every later block is worse). */
static int usable(const xdev_block_t *b, size_t size, size_t max_split) {
    if (b->size < size) return 0;
    if (size < max_split && b->size >= max_split) return -1;
    if (size >= max_split && b->size >= size + XDEV_LARGE_BUFFER) return -1;
    return 1;
}

xdev_block_t *xdev_bins_best_fit(xdev_bins_t *bins, size_t size, size_t max_split) {
    int bin = xdev_bin_index(size);
    for (xdev_block_t *b = bins->head[bin]; b != NULL; b = b->bin_next) {
        int u = usable(b, size, max_split);
        if (u > 0) return b;
        if (u < 0) return NULL;
    }
    int nb = next_bin(bins, bin);
    if (nb < 0) return NULL;
    xdev_block_t *b = bins->head[nb];
    return usable(b, size, max_split) > 0 ? b : NULL;
}

bool xdev_bins_fit_before(const xdev_bins_t *bins, size_t size, size_t limit, uintptr_t addr,
                          const xdev_block_t *skip) {
    int last = xdev_bin_index(limit);
    for (int bin = xdev_bin_index(size); bin >= 0 && bin <= last; bin = next_bin(bins, bin))
        for (const xdev_block_t *b = bins->head[bin]; b != NULL; b = b->bin_next) {
            if (b->size > limit || (b->size == limit && b->addr >= addr)) return false;
            if (b != skip && b->size >= size) return true;
        }
    return false;
}

/* Bins with the inactive_split statistics kept alongside (the caching
 * allocator's insert and removal: here, so that the bin operations inline
 * into them). A block with a neighbour is a split one. */
void xdev_caching_bins_add(xdev_device_allocator_t *da, xdev_block_t *b) {
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

void xdev_caching_bins_del(xdev_device_allocator_t *da, xdev_block_t *b) {
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
