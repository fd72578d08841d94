/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_lookup.c - find the live allocation behind a pointer (see
 * alloc_lookup.h), so copies, memset, BLAS, FFT and RNG check the bytes the
 * caller owns, not the 2 MiB segment around them, and refuse freed memory;
 * for memory opened from an IPC handle, the allocation that handle exported. */
#include "alloc/alloc_lookup.h"

#include <stdio.h>

#include "alloc/alloc_internal.h"
#include "base/error_internal.h"
#include "runtime/thread_state.h"

/* The active block of a device allocation containing ptr; the device lock
 * is held. `e` was looked up before the lock: look again under it, since
 * segments come and go only under this lock. NULL: freed (or, *gone, the
 * range left xdev between the two lookups: host memory now). A block freed
 * during a graph capture is still active, kept for the graph's replays
 * (mempool.c), but the caller freed it: NULL too, with *kept set. It is
 * never returned, so never marked looked_up, so no thread's cache holds it
 * (take_live counted the free of any that did). */
static xdev_block_t *device_block(xdev_device_allocator_t *da, uintptr_t ptr, bool *gone,
                                  bool *kept) {
    *gone = *kept = false;
    xdev_block_t *b = xdev_ptrtab_find(&da->live, ptr); /* a block's start: the common case */
    if (b != NULL) return b;
    xdev_ptr_entry_t e;
    if (!xdev_ptr_lookup((const void *)ptr, &e) || e.kind != XDEV_MEMORY_DEVICE) {
        *gone = true;
        return NULL;
    }
    if (e.owner != da) return NULL; /* released and reused by another arena meanwhile */
    if (e.origin == XDEV_PTR_DIRECT || e.origin == XDEV_PTR_MANAGED)
        return xdev_ptrtab_find(&da->live, e.base);
    const xdev_segment_t *seg = e.data;
    for (b = seg->first; b != NULL; b = b->next) {
        if (ptr < b->addr || ptr - b->addr >= b->size) continue;
        if (b->state != XDEV_BLOCK_ACTIVE) return NULL;
        *kept = b->kept; /* freed: the graph's, not the caller's */
        return *kept ? NULL : b;
    }
    return NULL;
}

/* The use-after-free error; `kept`: device memory freed during a graph
 * capture, still reserved for the graph's replays (device_block). */
static xdev_status_t freed(const void *ptr, const char *arg, const xdev_ptr_entry_t *e, bool kept) {
    const char *where = e->kind == XDEV_MEMORY_PINNED_HOST ? "pinned host memory" : "memory";
    if (kept)
        return XDEV_FAIL(
            XDEV_ERROR_INVALID_VALUE,
            "'%s' (%p) points into %s:%d memory that was freed (use after free): "
            "xdev_free ran during a graph capture, so the memory is kept for the "
            "graph's replays until the graph is reset or destroyed, but it is no longer "
            "the caller's",
            arg, ptr, e->be->name, e->index);
    if (e->kind == XDEV_MEMORY_DEVICE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p) points into %s:%d memory that is not allocated: it was freed "
                         "(use after free) or never handed out",
                         arg, ptr, e->be->name, e->index);
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                     "'%s' (%p) points into %s that was freed with xdev_host_free (use after "
                     "free)",
                     arg, ptr, where);
}

xdev_status_t xdev_live_lookup(const void *ptr, const char *arg, xdev_live_ref_t *out) {
    out->owner = NULL;
    out->asleep = false;
    out->known = xdev_ptr_lookup(ptr, &out->e);
    if (!out->known) return XDEV_SUCCESS;
    const xdev_ptr_entry_t *e = &out->e;
    switch (e->origin) {
    case XDEV_PTR_IPC: { /* the exporter's whole segment: the opens say what is ours */
        int live =
            xdev_ptr_origin_ops(XDEV_PTR_IPC)->live_extent(e->data, ptr, &out->base, &out->size);
        if (live > 0) {
            out->block_size = out->size;
            return XDEV_SUCCESS;
        }
        if (live < 0) { /* unmapped by xdev_ipc_collect meanwhile */
            out->known = false;
            return XDEV_SUCCESS;
        }
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p) points into memory mapped from another process's IPC handle "
                         "but into no allocation opened there now: past the exported allocation "
                         "(the rest of the exporter's segment), or its handle was closed",
                         arg, ptr);
    }
    case XDEV_PTR_FOREIGN: /* another library's memory: live while registered */
        out->base = e->base;
        out->size = out->block_size = e->size;
        return XDEV_SUCCESS;
    case XDEV_PTR_PINNED: {
        int live = xdev_host_live_extent(ptr, &out->base, &out->size, &out->block_size);
        if (live > 0) return XDEV_SUCCESS;
        if (live < 0) return freed(ptr, arg, e, false);
        out->known = false; /* released meanwhile */
        return XDEV_SUCCESS;
    }
    case XDEV_PTR_SEGMENT:
    case XDEV_PTR_EXPANDABLE:
    case XDEV_PTR_DIRECT:
    case XDEV_PTR_MANAGED:
        break;
    }
    xdev_device_allocator_t *da = xdev_alloc_owner(e);
    if (da == NULL) return freed(ptr, arg, e, false);
    bool gone, kept;
    const char *sleep_tag = NULL;
    xdev_spin_lock(&da->lock);
    xdev_block_t *b = device_block(da, (uintptr_t)ptr, &gone, &kept);
    if (b != NULL) {
        out->base = b->addr;
        out->size = b->requested;
        out->block_size = b->size;
        out->owner = da;
        b->looked_up = true; /* its free now moves da->frees: a cache may hold it */
        out->epoch = atomic_load_explicit(&da->frees, memory_order_relaxed);
        out->asleep = b->segment != NULL && b->segment->sleep_state != XDEV_SEG_AWAKE;
        if (out->asleep) sleep_tag = b->segment->pool->tag;
    }
    xdev_spin_unlock(&da->lock);
    if (b != NULL && out->asleep) {
        char what[240];
        snprintf(what, sizeof what, "'%s'", arg);
        return xdev_alloc_asleep_error(da, sleep_tag, what, ptr);
    }
    if (b != NULL) return XDEV_SUCCESS;
    if (gone) {
        out->known = false;
        return XDEV_SUCCESS;
    }
    return freed(ptr, arg, e, kept);
}

xdev_status_t xdev_live_check_extent(const xdev_live_ref_t *ref, const void *ptr, size_t n,
                                     const char *arg) {
    size_t offset = (size_t)((uintptr_t)ptr - ref->base);
    if (offset <= ref->size && n <= ref->size - offset) return XDEV_SUCCESS;
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                     "%s: %zu bytes at %p run past the end of its allocation (%zu bytes at %p)",
                     arg, n, ptr, ref->size, (void *)ref->base);
}

xdev_status_t xdev_live_lookup_cached(const void *ptr, xdev_live_label_fn label, const void *ctx,
                                      xdev_live_ref_t *out) {
    xdev_thread_state_t *t = xdev_thread_state();
    xdev_live_cache_entry_t *c = xdev_live_cache_find(t, ptr);
    if (c != NULL && atomic_load_explicit(c->frees, memory_order_acquire) != c->epoch) {
        c->owner = NULL; /* its arena freed something since: look again */
    } else if (c != NULL) {
        out->known = true;
        out->e = (xdev_ptr_entry_t){.base = c->base,
                                    .size = c->block_size,
                                    .kind = XDEV_MEMORY_DEVICE,
                                    .be = (xdev_backend_t *)c->be,
                                    .index = c->index};
        out->base = c->base;
        out->size = c->size;
        out->block_size = c->block_size;
        out->owner = c->owner;
        out->epoch = c->epoch;
        return XDEV_SUCCESS;
    }
    xdev_status_t st = xdev_live_lookup(ptr, "", out);
    if (st != XDEV_SUCCESS) { /* again, for the message naming the argument */
        char arg[192];
        label(ctx, arg, sizeof arg);
        return xdev_live_lookup(ptr, arg, out);
    }
    if (out->known && out->owner != NULL && !t->shared) {
        xdev_live_cache_entry_t *slot = &t->live_cache[t->live_cache_next++ % XDEV_LIVE_CACHE];
        const xdev_device_allocator_t *da = out->owner;
        *slot = (xdev_live_cache_entry_t){.base = out->base,
                                          .size = out->size,
                                          .block_size = out->block_size,
                                          .owner = da,
                                          .frees = &da->frees,
                                          .epoch = out->epoch,
                                          .be = out->e.be,
                                          .index = out->e.index};
    }
    return XDEV_SUCCESS;
}
