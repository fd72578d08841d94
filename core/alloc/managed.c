/* SPDX-License-Identifier: Apache-2.0 */
/* managed.c - managed memory (xdev/memory.h): xdev_malloc_managed, its free
 * through xdev_free, xdev_mem_prefetch_async and xdev_mem_advise, over the
 * backend's memory.managed slots.
 *
 * A managed allocation is the backend's own (never cut from a cached
 * segment: the driver migrates it page by page, and a cache would hand
 * pages the host touched to a device), kept beside the caching allocator of
 * its device so that every check works on it unchanged: its block sits in
 * the primary arena's live table (xdev_free, bounds and use-after-free
 * checks, kernels' pointer checks find it), its range in the pointer
 * registry as device memory of that device with origin MANAGED (copies take
 * it as device memory; pointer info says managed; IPC refuses it), and the
 * arena's managed list is what the snapshots walk. Its statistics are the
 * managed_* figures, apart from the cache's. */
#include <stdlib.h>

#include "alloc/alloc_internal.h"
#include "alloc/alloc_lookup.h"
#include "alloc/alloc_oom.h"
#include "alloc/pointer_registry.h"
#include "base/error_internal.h"
#include "runtime/capture.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/enqueue.h"
#include "runtime/stream_internal.h"

static void managed_stats(xdev_device_allocator_t *da, const xdev_block_t *b, int sign) {
    xdev_stat_add(&da->stats.managed_allocation, sign);
    xdev_stat_add(&da->stats.managed_bytes, sign * (int64_t)b->size);
}

/* A managed allocation ran out of memory (its message set): counted in
 * num_ooms and told to the out-of-memory observers, as xdev_malloc's are. */
static void managed_oom(xdev_device_allocator_t *da, size_t size) {
    xdev_spin_lock(&da->lock);
    da->stats.num_ooms++;
    xdev_spin_unlock(&da->lock);
    xdev_alloc_oom_notify(da, size);
}

/* NOT_SUPPORTED naming the backend, for a backend without memory.managed. */
static xdev_status_t no_managed(const xdev_backend_t *be) {
    return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                     "the %s backend has no managed memory (its memory.malloc_managed, "
                     "free_managed, mem_prefetch and mem_advise slots)",
                     be->name);
}

xdev_status_t xdev_malloc_managed(xdev_device_t device, void **ptr, size_t size, unsigned flags) {
    XDEV_REQUIRE_ARG(ptr);
    *ptr = NULL;
    if (flags != 0 && flags != XDEV_MEM_ATTACH_GLOBAL && flags != XDEV_MEM_ATTACH_HOST)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "flags 0x%x: give 0, XDEV_MEM_ATTACH_GLOBAL or XDEV_MEM_ATTACH_HOST",
                             flags);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    if (!XDEV_HAS(rec->be, memory, malloc_managed)) XDEV_CHECK(no_managed(rec->be));
    if (size == 0) return XDEV_SUCCESS;
    XDEV_CHECK(xdev_capture_check_unsafe("xdev_malloc_managed (new backend memory)"));
    xdev_device_allocator_t *da;
    XDEV_CHECK(xdev_alloc_get(rec->be, rec->id.index, &da)); /* the primary */
    if (size > XDEV_MAX_ALLOC_SIZE) {
        xdev_status_t big = XDEV_FAIL(
            XDEV_ERROR_OUT_OF_MEMORY,
            "%s:%d out of memory: tried to allocate %zu bytes of managed memory, more than any "
            "device holds (xdev refuses requests over %zu bytes)",
            rec->be->name, rec->id.index, size, XDEV_MAX_ALLOC_SIZE);
        managed_oom(da, size);
        XDEV_CHECK(big);
    }
    xdev_stream_t stream;
    XDEV_CHECK(xdev_core_current_stream(rec, &stream));
    xdev_block_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to track the allocation");
    void *p = NULL;
    xdev_status_t st =
        xdev_be_memory_malloc_managed(rec, size, flags == 0 ? XDEV_MEM_ATTACH_GLOBAL : flags, &p);
    if (st == XDEV_SUCCESS && p == NULL)
        st = XDEV_FAIL(XDEV_ERROR_INTERNAL, "the %s backend's malloc_managed returned NULL",
                       rec->be->name);
    if (st != XDEV_SUCCESS) {
        free(b);
        if (st == XDEV_ERROR_OUT_OF_MEMORY) managed_oom(da, size);
        XDEV_CHECK(st);
    }
    *b = (xdev_block_t){.addr = (uintptr_t)p,
                        .size = size,
                        .requested = size,
                        .stream = stream,
                        .bin = -1,
                        .state = XDEV_BLOCK_ACTIVE,
                        .managed = true,
                        .owner = da,
                        .tag = xdev_alloc_tag_current()};
    xdev_ptr_entry_t e = {(uintptr_t)p,  size, XDEV_MEMORY_DEVICE, rec->be,
                          rec->id.index, NULL, XDEV_PTR_MANAGED,   da};
    st = xdev_ptr_insert(&e);
    if (st == XDEV_SUCCESS) {
        xdev_spin_lock(&da->lock); /* not da->used: an allocator may still be installed */
        if (!xdev_ptrtab_insert(&da->live, b)) {
            st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to track the allocation");
        } else {
            b->next = da->managed_blocks;
            if (b->next) b->next->prev = b;
            da->managed_blocks = b;
            managed_stats(da, b, +1);
            xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_ALLOC, b->addr, size, stream->native,
                                      b->tag);
        }
        xdev_spin_unlock(&da->lock);
        if (st != XDEV_SUCCESS) (void)xdev_ptr_remove_origin(p, XDEV_PTR_MANAGED, &e);
    }
    if (st != XDEV_SUCCESS) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        (void)xdev_be_memory_free_managed(rec, p);
        xdev_core_error_restore(&saved);
        free(b);
        XDEV_CHECK(st);
    }
    *ptr = p;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_managed_free_taken(xdev_device_allocator_t *da, xdev_block_t *b) {
    xdev_spin_unlock(&da->lock);
    /* As cudaFree: after the device has passed the work that may use it
     * (which a capture cannot record). */
    xdev_status_t st =
        xdev_capture_check_unsafe("xdev_free of managed memory (waits for the device)");
    if (st != XDEV_SUCCESS) {
        xdev_spin_lock(&da->lock);
        bool back = xdev_ptrtab_insert(&da->live, b);
        xdev_spin_unlock(&da->lock);
        (void)back; /* without host memory to track it, it stays allocated, unreachable */
        return st;
    }
    st = xdev_be_device_synchronize(da->rec);
    xdev_spin_lock(&da->lock);
    if (st != XDEV_SUCCESS) {
        bool back = xdev_ptrtab_insert(&da->live, b);
        xdev_spin_unlock(&da->lock);
        if (!back) return st; /* no host memory to track it: it stays allocated, unreachable */
        return XDEV_FAIL(st,
                         "%s:%d: freeing managed memory waits for the device, and that wait "
                         "failed: %s. The allocation %p is still live: free it once the wait can "
                         "succeed (outside the device's host functions)",
                         da->be->name, da->index, xdev_last_error(), (void *)b->addr);
    }
    if (b->prev)
        b->prev->next = b->next;
    else
        da->managed_blocks = b->next;
    if (b->next) b->next->prev = b->prev;
    managed_stats(da, b, -1);
    xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_FREE_COMPLETED, b->addr, b->size,
                              b->stream->native, b->tag);
    xdev_spin_unlock(&da->lock);
    xdev_ptr_entry_t e; /* unknown to xdev before the backend can hand it out again */
    (void)xdev_ptr_remove_origin((void *)b->addr, XDEV_PTR_MANAGED, &e);
    st = xdev_be_memory_free_managed(da->rec, (void *)b->addr);
    free(b->more_used_streams);
    free(b);
    return st;
}

/* The managed allocation [ptr, ptr + bytes) lies in (*rec its device), and
 * the record of `location` on that backend (NULL: XDEV_HOST). */
static xdev_status_t check_range(const void *ptr, size_t bytes, int location,
                                 xdev_device_record_t **rec, xdev_device_record_t **target) {
    if (ptr == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'ptr' is NULL");
    xdev_live_ref_t ref;
    xdev_status_t st = xdev_live_lookup(ptr, "ptr", &ref);
    if (st != XDEV_SUCCESS) return st;
    if (!ref.known || ref.e.origin != XDEV_PTR_MANAGED)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "ptr %p is not managed memory (from xdev_malloc_managed)%s", ptr,
                         ref.known ? ": it is memory xdev allocated otherwise" : "");
    st = xdev_live_check_extent(&ref, ptr, bytes, "ptr");
    if (st != XDEV_SUCCESS) return st;
    *rec = &ref.e.be->devices[ref.e.index];
    *target = NULL;
    if (location == XDEV_HOST) return XDEV_SUCCESS;
    if (location < 0 || location >= ref.e.be->device_count)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "location %d is no device: give XDEV_HOST (-1) or an index below %d "
                         "(the %s devices)",
                         location, ref.e.be->device_count, ref.e.be->name);
    *target = &ref.e.be->devices[location];
    return XDEV_SUCCESS;
}

/* The enqueue path's steps of a prefetch (runtime/enqueue.h). */
typedef struct {
    const void *ptr;
    size_t bytes;
    xdev_device_record_t *target; /* NULL: the host */
} prefetch_args_t;

static xdev_status_t prefetch_call(xdev_enqueue_t *q) {
    const prefetch_args_t *a = q->ctx;
    return xdev_be_memory_mem_prefetch(q->stream->rec, a->ptr, a->bytes,
                                       a->target != NULL ? a->target->ctx : NULL,
                                       q->stream->native);
}

static void prefetch_trace_args(xdev_enqueue_t *q) {
    const prefetch_args_t *a = q->ctx;
    xdev_enqueue_span_args(q, "\"bytes\":%zu,\"location\":%d", a->bytes,
                           a->target != NULL ? a->target->id.index : XDEV_HOST);
}

xdev_status_t xdev_mem_prefetch_async(const void *ptr, size_t bytes, int location,
                                      xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_device_record_t *rec, *target;
    XDEV_CHECK(check_range(ptr, bytes, location, &rec, &target));
    if (!XDEV_HAS(rec->be, memory, mem_prefetch)) XDEV_CHECK(no_managed(rec->be));
    if (stream == NULL) {
        XDEV_CHECK(xdev_core_current_stream(rec, &stream));
    } else {
        XDEV_CHECK(xdev_stream_check(stream, "stream"));
        if (stream->be != rec->be)
            return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                                 "ptr is %s managed memory but the stream belongs to %s:%d",
                                 rec->be->name, stream->be->name, stream->device.index);
    }
    if (bytes == 0) return XDEV_SUCCESS;
    prefetch_args_t a = {ptr, bytes, target};
    xdev_enqueue_t q = {
        .kind = XDEV_OP_PREFETCH,
        .name = "mem_prefetch",
        .stream = stream,
        .ctx = &a,
        .call = prefetch_call,
        .trace_args = prefetch_trace_args,
    };
    XDEV_CHECK(xdev_enqueue(&q));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_mem_advise(const void *ptr, size_t bytes, xdev_mem_advice_t advice,
                              int location) {
    XDEV_CHECK(xdev_core_ensure_init());
    if ((int)advice < XDEV_MEM_ADVISE_SET_READ_MOSTLY ||
        (int)advice > XDEV_MEM_ADVISE_UNSET_ACCESSED_BY)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "advice %d is not an xdev_mem_advice_t (1 to 6)", (int)advice);
    xdev_device_record_t *rec, *target;
    XDEV_CHECK(check_range(ptr, bytes, location, &rec, &target));
    if (!XDEV_HAS(rec->be, memory, mem_advise)) XDEV_CHECK(no_managed(rec->be));
    if (bytes == 0) return XDEV_SUCCESS;
    XDEV_CHECK(xdev_be_memory_mem_advise(rec, ptr, bytes, (int)advice,
                                         target != NULL ? target->ctx : NULL));
    return XDEV_SUCCESS;
}
