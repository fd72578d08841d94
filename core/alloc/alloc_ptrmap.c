/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_ptrmap.c - address -> live block, one table per device allocator.
 *
 * The table lives under the device allocator's lock, so xdev_free and
 * xdev_malloc take one lock each, as torch's allocator does (atomic
 * read-modify-writes dominate these calls on large hosts). Which device a
 * freed pointer belongs to is first guessed from the thread's last device
 * (device_allocator.c), else found in the segment registry. Chained hash
 * through hash_next; doubles when the load passes 1. The lookups, inserts
 * and removals are inline (alloc_internal.h): every malloc and free makes
 * one; the growth is here. */
#include <stdlib.h>

#include "alloc/alloc_internal.h"

void xdev_ptrtab_grow(xdev_ptrtab_t *t) {
    size_t n = t->buckets ? (t->mask + 1) * 2 : 256;
    xdev_block_t **nb = calloc(n, sizeof *nb);
    if (nb == NULL) return; /* keep the longer chains */
    xdev_ptrtab_t bigger = {nb, n - 1, t->count};
    for (size_t i = 0; t->buckets != NULL && i <= t->mask; i++)
        for (xdev_block_t *b = t->buckets[i], *next; b != NULL; b = next) {
            next = b->hash_next;
            size_t j = xdev_ptrtab_slot(&bigger, b->addr);
            b->hash_next = nb[j];
            nb[j] = b;
        }
    free(t->buckets);
    *t = bigger;
}
