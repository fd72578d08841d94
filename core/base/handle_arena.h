/* SPDX-License-Identifier: Apache-2.0 */
/* handle_arena.h - storage for opaque handles that lets the core tell a
 * live handle from a foreign or destroyed one without dereferencing memory
 * it does not own. The arenas: streams (runtime/stream.c), events
 * (runtime/event.c), memory pools (alloc/mempool.c), modules and kernels
 * (kernel/module.c), random-number generators (math/rng_generator.c) and
 * graphs (graph/graph.c).
 *
 * Each arena reserves one range of address space (64 MiB, PROT_NONE) at its
 * first allocation, commits it as it grows and never returns it, so "is this
 * pointer one of ours?" is a range and alignment check, and reading a
 * destroyed handle's header is defined behaviour. Freed slots wait in a FIFO
 * quarantine (1024 of them) before reuse so a stale handle stays detectable
 * for a long while; only once the range is full is a quarantined slot
 * reused early. */
#ifndef XDEV_CORE_HANDLE_ARENA_H
#define XDEV_CORE_HANDLE_ARENA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every handle object starts with this header. */
typedef struct xdev_handle_header {
    _Atomic uint32_t magic;      /* the arena's live magic while alive, 0 after free */
    _Atomic uint32_t generation; /* bumped at each reuse of the slot */
} xdev_handle_header_t;

typedef struct xdev_handle_arena {
    const char *what; /* "stream", "event", ...: names the arena to a reader */
    uint32_t magic;
    size_t slot_size;
    pthread_mutex_t lock;
    _Atomic(uintptr_t) base; /* start of the reserved range (0 until first alloc) */
    /* slot_size = odd * 2^slot_shift; set before base is published. They let
     * xdev_handle_is_slot test "a multiple of slot_size" without a division
     * (a 64-bit divide costs more than the rest of the check): off is a
     * multiple iff its low slot_shift bits are 0 and (off >> slot_shift) *
     * slot_inv, modulo 2^64, is at most slot_lim (odd's inverse and
     * UINT64_MAX / odd). */
    unsigned slot_shift;
    uint64_t slot_inv, slot_lim;
    size_t reserved;     /* bytes reserved */
    size_t committed;    /* bytes made read/write */
    _Atomic size_t used; /* bytes handed out at least once (slots below are valid to read) */
    uint32_t *free_fifo; /* ring of free slot indices */
    size_t fifo_cap, fifo_head, fifo_len;
} xdev_handle_arena_t;

#define XDEV_HANDLE_ARENA_INIT(what_, magic_, slot_size_)                                          \
    {                                                                                              \
        .what = (what_), .magic = (magic_), .slot_size = (slot_size_),                             \
        .lock = PTHREAD_MUTEX_INITIALIZER                                                          \
    }

/* A zeroed slot with a live header, or NULL when memory is exhausted. */
void *xdev_handle_alloc(xdev_handle_arena_t *arena);

/* Mark dead and queue for reuse. */
void xdev_handle_free(xdev_handle_arena_t *arena, void *obj);

/* True when obj points at a slot of this arena (live or not). Lock-free;
 * inline, as every public call that takes a handle runs it. */
static inline bool xdev_handle_is_slot(xdev_handle_arena_t *a, const void *obj) {
    uintptr_t p = (uintptr_t)obj;
    uintptr_t base = atomic_load_explicit(&a->base, memory_order_acquire);
    if (base == 0 || p < base) return false;
    uint64_t off = (uint64_t)(p - base);
    if (off >= atomic_load_explicit(&a->used, memory_order_acquire)) return false;
    if (off & ((UINT64_C(1) << a->slot_shift) - 1)) return false;
    return (off >> a->slot_shift) * a->slot_inv <= a->slot_lim; /* off % slot_size == 0 */
}

/* True when obj is a live handle of this arena. Lock-free. */
static inline bool xdev_handle_is_live(xdev_handle_arena_t *a, const void *obj) {
    if (!xdev_handle_is_slot(a, obj)) return false;
    const xdev_handle_header_t *h = obj;
    return atomic_load_explicit(&h->magic, memory_order_acquire) == a->magic;
}

/* xdev_handle_is_live for an arena whose magic and slot size the caller
 * knows at compile time (the arena's own XDEV_HANDLE_ARENA_INIT values):
 * the hot handle checks (events, streams) then test the slot's alignment
 * with a mask or a multiply by a constant and compare the magic with an
 * immediate, instead of loading slot_shift, slot_inv, slot_lim and magic
 * from the arena on every call. Same answer as xdev_handle_is_live. */
static inline __attribute__((always_inline)) bool
xdev_handle_is_live_as(xdev_handle_arena_t *a, const void *obj, uint32_t magic, size_t slot_size) {
    uintptr_t p = (uintptr_t)obj;
    uintptr_t base = atomic_load_explicit(&a->base, memory_order_acquire);
    if (base == 0 || p < base) return false;
    uint64_t off = (uint64_t)(p - base);
    if (off >= atomic_load_explicit(&a->used, memory_order_acquire) || off % slot_size != 0)
        return false;
    const xdev_handle_header_t *h = obj;
    return atomic_load_explicit(&h->magic, memory_order_acquire) == magic;
}

#endif
