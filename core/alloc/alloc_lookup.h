/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_lookup.h - the live allocation a pointer points into.
 *
 * The pointer registry knows ranges: caching-allocator segments (many
 * blocks each), single allocations of the non-caching modes, pinned host
 * blocks, IPC mappings. Bounds and use-after-free checks need the allocation
 * itself - the live block inside a segment, with the size the caller asked
 * for - which only the owning allocator knows, under its lock (for an IPC
 * mapping, ipc.c: the allocation each open's handle exported). */
#ifndef XDEV_CORE_ALLOC_LOOKUP_H
#define XDEV_CORE_ALLOC_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc/pointer_registry.h"
#include "runtime/thread_state.h"

typedef struct xdev_live_ref {
    bool known;         /* inside memory xdev manages */
    xdev_ptr_entry_t e; /* the registry's range (segment, allocation, block, mapping) */
    uintptr_t base;     /* start of the live allocation */
    size_t size;        /* bytes the caller asked for: the extent it may use */
    size_t block_size;  /* bytes set aside for it (>= size, rounding) */
    const void *owner;  /* device memory: the arena that holds it (else NULL) */
    uint64_t epoch;     /* that arena's free count when it was found live */
    bool asleep;        /* the allocation is asleep (xdev_memory_sleep): see below */
} xdev_live_ref_t;

/* SUCCESS with known = false for memory xdev does not manage (host memory),
 * or known = true and the live allocation containing ptr. A pointer into
 * memory xdev manages that is not allocated now (freed, or never handed
 * out) is XDEV_ERROR_INVALID_VALUE with a message naming `arg`; so is a
 * live allocation whose memory is asleep (xdev_memory_sleep), which no
 * stream-ordered call may use: then the ref is filled as for a live one and
 * `asleep` is set (callers that only describe the pointer accept it). */
xdev_status_t xdev_live_lookup(const void *ptr, const char *arg, xdev_live_ref_t *out);

/* xdev_live_lookup with a per-thread cache of device allocations found live
 * (kernel launches check the same few pointers again and again): a hit
 * costs a few loads while its arena has freed no block a lookup returned
 * (xdev_block_t.looked_up), and slept nothing, since. `arg` is
 * formatted only on a failure: label(ctx, buf, len) writes it. */
typedef void (*xdev_live_label_fn)(const void *ctx, char *buf, size_t len);
xdev_status_t xdev_live_lookup_cached(const void *ptr, xdev_live_label_fn label, const void *ctx,
                                      xdev_live_ref_t *out);

/* The entry of thread t's cache whose block holds ptr, NULL when none does
 * (or t is the shared emergency block, which caches nothing); whether its
 * arena has freed a looked-up block since is the caller's to check
 * (c->frees). */
static inline xdev_live_cache_entry_t *xdev_live_cache_find(xdev_thread_state_t *t,
                                                            const void *ptr) {
    if (t->shared) return NULL;
    uintptr_t p = (uintptr_t)ptr;
    for (int i = 0; i < XDEV_LIVE_CACHE; i++) {
        xdev_live_cache_entry_t *c = &t->live_cache[i];
        if (p - c->base < c->block_size && c->owner != NULL) return c;
    }
    return NULL;
}

/* xdev_live_lookup_cached's hit alone, inline, for the operand checks of
 * every math call (the call cost ~170 instructions an operand, this ~25):
 * true, with the allocation's backend and device index, when ptr lies in an
 * allocation this thread's cache holds, its arena has freed no looked-up
 * block and has not slept since, and [ptr, ptr + bytes) lies inside what was
 * asked for. False says nothing: the caller then goes the whole way
 * (xdev_live_lookup_cached), which also words every error. */
static inline bool xdev_live_hit(const void *ptr, size_t bytes, const void **be, int *index) {
    const xdev_live_cache_entry_t *c = xdev_live_cache_find(xdev_thread_state(), ptr);
    if (c == NULL || atomic_load_explicit(c->frees, memory_order_acquire) != c->epoch) return false;
    size_t off = (uintptr_t)ptr - c->base;
    if (off > c->size || bytes > c->size - off) return false; /* worded by the slow path */
    *be = c->be;
    *index = c->index;
    return true;
}

/* XDEV_ERROR_INVALID_VALUE naming `arg` when [ptr, ptr + n) runs past the
 * end of the allocation ref describes (ref->known must be true). */
xdev_status_t xdev_live_check_extent(const xdev_live_ref_t *ref, const void *ptr, size_t n,
                                     const char *arg);

/* The pinned host block containing ptr (host_allocator.c): 1 live (base,
 * requested and class size set), -1 freed and cached, 0 not a pinned block. */
int xdev_host_live_extent(const void *ptr, uintptr_t *base, size_t *size, size_t *block_size);

#endif
