/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_bins.c - segregated size-class bins with exact best fit.
 *
 * A bin covers 1/8 of a power of two; its blocks stay sorted by (size,
 * address) so the first block that fits in the request's own bin is the
 * best fit there, and any later non-empty bin's head is the best fit above.
 * Two-level bitmaps find the next non-empty bin without scanning. */
#include "alloc/alloc_bins.h"

bool xdev_bins_fit_before(const xdev_bins_t *bins, size_t size, size_t limit, uintptr_t addr,
                          const xdev_block_t *skip) {
    int last = xdev_bin_index(limit);
    for (int bin = xdev_bin_index(size); bin >= 0 && bin <= last; bin = xdev_bins_next(bins, bin))
        for (const xdev_block_t *b = bins->head[bin]; b != NULL; b = b->bin_next) {
            if (b->size > limit || (b->size == limit && b->addr >= addr)) return false;
            if (b != skip && b->size >= size) return true;
        }
    return false;
}

/* The inline bin changes (alloc_bins.h) for the other files' callers. */
void xdev_caching_bins_add(xdev_device_allocator_t *da, xdev_block_t *b) {
    xdev_caching_bins_add_fast(da, b);
}

void xdev_caching_bins_del(xdev_device_allocator_t *da, xdev_block_t *b) {
    xdev_caching_bins_del_fast(da, b);
}
