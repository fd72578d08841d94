/* SPDX-License-Identifier: Apache-2.0 */
/* handle_arena.c - reserved-range handle storage; see handle_arena.h. */
#include "base/handle_arena.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_RESERVE ((size_t)64 << 20) /* address space per arena */
#define ARENA_COMMIT_STEP ((size_t)64 << 10)
#define ARENA_QUARANTINE 1024 /* freed slots kept unused before reuse */

/* The divisibility constants of xdev_handle_is_slot (see handle_arena.h). */
static void arena_slot_math(xdev_handle_arena_t *a) {
    uint64_t odd = a->slot_size;
    unsigned shift = 0;
    while ((odd & 1) == 0) {
        odd >>= 1;
        shift++;
    }
    uint64_t inv = odd; /* Newton's iteration: 3, 6, 12, 24, 48, 96 correct bits */
    for (int i = 0; i < 5; i++)
        inv *= 2 - odd * inv;
    a->slot_shift = shift;
    a->slot_inv = inv;
    a->slot_lim = UINT64_MAX / odd;
}

static bool arena_reserve(xdev_handle_arena_t *a) {
    arena_slot_math(a); /* before base is published: readers load base first */
    void *p =
        mmap(NULL, ARENA_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    atomic_store_explicit(&a->base, (uintptr_t)p, memory_order_release);
    a->reserved = ARENA_RESERVE;
    return true;
}

static char *arena_base(xdev_handle_arena_t *a) {
    return (char *)atomic_load_explicit(&a->base, memory_order_acquire);
}

/* Take a never-used slot, committing pages as needed. Called with the lock. */
static void *arena_fresh_slot(xdev_handle_arena_t *a) {
    size_t used = atomic_load_explicit(&a->used, memory_order_relaxed);
    if (used + a->slot_size > a->reserved) return NULL;
    if (used + a->slot_size > a->committed) {
        size_t grow = ARENA_COMMIT_STEP;
        if (a->committed + grow > a->reserved) grow = a->reserved - a->committed;
        if (mprotect(arena_base(a) + a->committed, grow, PROT_READ | PROT_WRITE) != 0) return NULL;
        a->committed += grow;
    }
    void *slot = arena_base(a) + used;
    atomic_store_explicit(&a->used, used + a->slot_size, memory_order_release);
    return slot;
}

static bool fifo_push(xdev_handle_arena_t *a, uint32_t idx) {
    if (a->fifo_len == a->fifo_cap) {
        size_t cap = a->fifo_cap ? a->fifo_cap * 2 : 256;
        uint32_t *ring = malloc(cap * sizeof *ring);
        if (ring == NULL) return false;
        for (size_t i = 0; i < a->fifo_len; i++)
            ring[i] = a->free_fifo[(a->fifo_head + i) % a->fifo_cap];
        free(a->free_fifo);
        a->free_fifo = ring;
        a->fifo_cap = cap;
        a->fifo_head = 0;
    }
    a->free_fifo[(a->fifo_head + a->fifo_len) % a->fifo_cap] = idx;
    a->fifo_len++;
    return true;
}

void *xdev_handle_alloc(xdev_handle_arena_t *a) {
    pthread_mutex_lock(&a->lock);
    void *slot = NULL;
    if (arena_base(a) == NULL && !arena_reserve(a)) goto out;
    if (a->fifo_len > ARENA_QUARANTINE) {
        uint32_t idx = a->free_fifo[a->fifo_head];
        a->fifo_head = (a->fifo_head + 1) % a->fifo_cap;
        a->fifo_len--;
        slot = arena_base(a) + (size_t)idx * a->slot_size;
    } else {
        slot = arena_fresh_slot(a);
        if (slot == NULL && a->fifo_len > 0) { /* address space full: reuse early */
            uint32_t idx = a->free_fifo[a->fifo_head];
            a->fifo_head = (a->fifo_head + 1) % a->fifo_cap;
            a->fifo_len--;
            slot = arena_base(a) + (size_t)idx * a->slot_size;
        }
    }
    if (slot != NULL) {
        xdev_handle_header_t *h = slot;
        uint32_t gen = atomic_load_explicit(&h->generation, memory_order_relaxed) + 1;
        memset((char *)slot + sizeof *h, 0, a->slot_size - sizeof *h);
        atomic_store_explicit(&h->generation, gen, memory_order_relaxed);
        atomic_store_explicit(&h->magic, a->magic, memory_order_release);
    }
out:
    pthread_mutex_unlock(&a->lock);
    return slot;
}

void xdev_handle_free(xdev_handle_arena_t *a, void *obj) {
    xdev_handle_header_t *h = obj;
    atomic_store_explicit(&h->magic, 0, memory_order_release);
    pthread_mutex_lock(&a->lock);
    uint32_t idx = (uint32_t)(((char *)obj - arena_base(a)) / a->slot_size);
    /* If the ring cannot grow the slot is simply never reused. */
    (void)fifo_push(a, idx);
    pthread_mutex_unlock(&a->lock);
}
