/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_ptrmap.c - address -> live block, one table per device allocator.
 *
 * The table lives under the device allocator's lock, so xdev_free and
 * xdev_malloc take one lock each, as torch's allocator does (atomic
 * read-modify-writes dominate these calls on large hosts). Which device a
 * freed pointer belongs to is first guessed from the thread's last device
 * (device_allocator.c), else found in the segment registry. Chained hash
 * through hash_next; doubles when the load passes 1. */
#include <stdlib.h>

#include "alloc/alloc_internal.h"

static size_t slot(const xdev_ptrtab_t *t, uintptr_t addr) {
    uint64_t x = (uint64_t)addr >> 9; /* blocks are 512-byte aligned */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & t->mask;
}

static void grow(xdev_ptrtab_t *t) {
    size_t n = t->buckets ? (t->mask + 1) * 2 : 256;
    xdev_block_t **nb = calloc(n, sizeof *nb);
    if (nb == NULL) return; /* keep the longer chains */
    xdev_ptrtab_t bigger = {nb, n - 1, t->count};
    for (size_t i = 0; t->buckets != NULL && i <= t->mask; i++)
        for (xdev_block_t *b = t->buckets[i], *next; b != NULL; b = next) {
            next = b->hash_next;
            size_t j = slot(&bigger, b->addr);
            b->hash_next = nb[j];
            nb[j] = b;
        }
    free(t->buckets);
    *t = bigger;
}

bool xdev_ptrtab_insert(xdev_ptrtab_t *t, xdev_block_t *b) {
    if (t->buckets == NULL || t->count > t->mask) grow(t);
    if (t->buckets == NULL) return false;
    size_t j = slot(t, b->addr);
    b->hash_next = t->buckets[j];
    t->buckets[j] = b;
    t->count++;
    return true;
}

static xdev_block_t **link_of(xdev_ptrtab_t *t, uintptr_t addr) {
    if (t->buckets == NULL) return NULL;
    xdev_block_t **link = &t->buckets[slot(t, addr)];
    while (*link != NULL && (*link)->addr != addr)
        link = &(*link)->hash_next;
    return *link != NULL ? link : NULL;
}

xdev_block_t *xdev_ptrtab_remove(xdev_ptrtab_t *t, uintptr_t addr) {
    xdev_block_t **link = link_of(t, addr);
    if (link == NULL) return NULL;
    xdev_block_t *b = *link;
    *link = b->hash_next;
    b->hash_next = NULL;
    t->count--;
    return b;
}

xdev_block_t *xdev_ptrtab_find(xdev_ptrtab_t *t, uintptr_t addr) {
    xdev_block_t **link = link_of(t, addr);
    return link != NULL ? *link : NULL;
}
