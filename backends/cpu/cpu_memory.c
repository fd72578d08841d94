/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_memory.c - CPU "device" memory, host memory, and stream-ordered copies.
 *
 * Device memory is host memory with a per-device capacity (XDEV_CPU_MEMORY)
 * so that out-of-memory paths can be tested: malloc reserves the bytes in an
 * atomic per-device counter before allocating. Each block carries a header in
 * the alignment padding just before the pointer it returns, so free knows the
 * size without a map. "Pinned" host memory is ordinary aligned memory on the
 * CPU backend: there is no DMA engine to pin for. Copies, memsets and
 * stream-ordered frees are ops on the stream's queue, so they are ordered
 * with everything else on it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu/cpu_internal.h"

#define XDEV_CPU_BLOCK_MAGIC 0x78646576u /* "xdev" */

/* Sits in the last bytes of the XDEV_CPU_ALIGNMENT padding before the block. */
typedef struct block_header {
    size_t bytes;
    int device;
    uint32_t magic;
} block_header_t;

_Static_assert(sizeof(block_header_t) <= XDEV_CPU_ALIGNMENT, "header must fit in the padding");

static block_header_t *header_of(void *ptr) {
    return (block_header_t *)((char *)ptr - sizeof(block_header_t));
}

/* Reserve `bytes` of the device's capacity; false (and the message) when
 * they do not fit. */
static bool reserve(xdev_cpu_device_t *d, size_t bytes) {
    size_t capacity = xdev_cpu_state.capacity;
    size_t used = atomic_load(&d->used);
    do {
        if (bytes > capacity || used > capacity - bytes) {
            xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                           "cpu:%d out of memory: tried to allocate %zu bytes; capacity %zu, in "
                           "use %zu",
                           d->index, bytes, capacity, used);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&d->used, &used, used + bytes));
    return true;
}

static xdev_status_t memory_malloc(xdev_cpu_device_t *dev, size_t bytes, void **out) {
    int device = dev->index;
    xdev_cpu_device_t *d = dev;
    if (bytes == 0) {
        *out = NULL;
        return XDEV_SUCCESS;
    }
    if (!reserve(d, bytes)) return XDEV_ERROR_OUT_OF_MEMORY;
    void *base = NULL;
    int rc = bytes <= SIZE_MAX - XDEV_CPU_ALIGNMENT
                 ? posix_memalign(&base, XDEV_CPU_ALIGNMENT, XDEV_CPU_ALIGNMENT + bytes)
                 : 1;
    if (rc != 0) {
        atomic_fetch_sub(&d->used, bytes);
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d out of memory: tried to allocate %zu bytes; the host could "
                              "not provide them (capacity %zu)",
                              device, bytes, xdev_cpu_state.capacity);
    }
    char *ptr = (char *)base + XDEV_CPU_ALIGNMENT;
    block_header_t *h = header_of(ptr);
    h->bytes = bytes;
    h->device = device;
    h->magic = XDEV_CPU_BLOCK_MAGIC;
    *out = ptr;
    return XDEV_SUCCESS;
}

/* The core validates pointers; the magic is a cheap second check. */
static xdev_status_t check_block(xdev_cpu_device_t *dev, void *ptr) {
    int device = dev->index;
    block_header_t *h = header_of(ptr);
    if ((uintptr_t)ptr % XDEV_CPU_ALIGNMENT != 0 || h->magic != XDEV_CPU_BLOCK_MAGIC ||
        h->device != device)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d free of %p, which is not a block of this device", device,
                              ptr);
    return XDEV_SUCCESS;
}

void xdev_cpu_block_release(int device, void *ptr) {
    block_header_t *h = header_of(ptr);
    atomic_fetch_sub(&xdev_cpu_state.devices[device].used, h->bytes);
    h->magic = 0;
    free((char *)ptr - XDEV_CPU_ALIGNMENT);
}

static xdev_status_t memory_free(xdev_cpu_device_t *dev, void *ptr) {
    int device = dev->index;
    if (ptr == NULL) return XDEV_SUCCESS;
    xdev_status_t st = check_block(dev, ptr);
    if (st == XDEV_SUCCESS) xdev_cpu_block_release(device, ptr);
    return st;
}

/* Host memory is usable by any queue at once, so the allocation itself need
 * not wait for `stream`. */
static xdev_status_t memory_malloc_async(xdev_cpu_device_t *dev, size_t bytes, void *stream,
                                         void **out) {
    (void)stream;
    return memory_malloc(dev, bytes, out);
}

/* The block (and its share of the capacity) is released when `stream`
 * reaches the free, so work queued before it may still use the memory. */
static xdev_status_t memory_free_async(xdev_cpu_device_t *dev, void *ptr, void *stream) {
    int device = dev->index;
    if (ptr == NULL) return XDEV_SUCCESS;
    xdev_status_t st = check_block(dev, ptr);
    if (st != XDEV_SUCCESS) return st;
    xdev_cpu_stream_t *s;
    st = xdev_cpu_stream_resolve(device, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    xdev_cpu_op_t *op;
    st = xdev_cpu_stream_begin_op(s, &op);
    if (st != XDEV_SUCCESS) return st;
    op->kind = XDEV_CPU_OP_FREE;
    op->u.free.device = device;
    op->u.free.ptr = ptr;
    xdev_cpu_stream_push_unlock(s, op);
    return XDEV_SUCCESS;
}

static xdev_status_t memory_host_alloc(size_t bytes, void **out) {
    if (bytes == 0) {
        *out = NULL;
        return XDEV_SUCCESS;
    }
    void *p = NULL;
    int rc = posix_memalign(&p, XDEV_CPU_ALIGNMENT, bytes);
    if (rc != 0)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu host memory: tried to allocate %zu bytes; out of host memory",
                              bytes);
    *out = p;
    return XDEV_SUCCESS;
}

static xdev_status_t memory_host_free(void *ptr) {
    free(ptr);
    return XDEV_SUCCESS;
}

static xdev_status_t memory_memcpy_async(xdev_cpu_device_t *dev, const xdev_copy_desc_t *copy,
                                         void *stream) {
    int device = dev->index;
    if (copy == NULL || copy->size < offsetof(xdev_copy_desc_t, bytes) + sizeof(copy->bytes))
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d memcpy_async: copy descriptor missing or too short", device);
    if (copy->bytes == 0) return XDEV_SUCCESS;
    xdev_cpu_op_t op = {.kind = XDEV_CPU_OP_COPY};
    op.u.copy.dst = copy->dst;
    op.u.copy.src = copy->src;
    op.u.copy.bytes = copy->bytes;
    return xdev_cpu_stream_enqueue(device, stream, &op);
}

static xdev_status_t memory_memset_async(xdev_cpu_device_t *dev, void *dst, int value, size_t bytes,
                                         void *stream) {
    if (bytes == 0) return XDEV_SUCCESS;
    xdev_cpu_op_t op = {.kind = XDEV_CPU_OP_SET};
    op.u.set.dst = dst;
    op.u.set.value = value;
    op.u.set.bytes = bytes;
    return xdev_cpu_stream_enqueue(dev->index, stream, &op);
}

static xdev_status_t memory_mem_get_info(xdev_cpu_device_t *dev, size_t *free_bytes,
                                         size_t *total_bytes) {
    xdev_cpu_device_t *d = dev;
    size_t used = atomic_load(&d->used);
    size_t capacity = xdev_cpu_state.capacity;
    if (free_bytes != NULL) *free_bytes = used < capacity ? capacity - used : 0;
    if (total_bytes != NULL) *total_bytes = capacity;
    return XDEV_SUCCESS;
}

/* ---------------------------------------------------------------- managed memory
 * The host and the CPU device address the same memory, so managed memory is
 * plain host memory, outside the device's capacity (as CUDA's may exceed the
 * device's). A prefetch has nothing to move and advice nothing to change:
 * both check what the core cannot (the stream) and succeed; a prefetch
 * orders nothing, since it changes nothing a later op could see. */
static xdev_status_t managed_malloc(xdev_cpu_device_t *dev, size_t bytes, unsigned flags,
                                    void **out) {
    (void)flags;
    void *p = NULL;
    if (posix_memalign(&p, XDEV_CPU_ALIGNMENT, bytes) != 0)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d out of memory: tried to allocate %zu bytes of managed "
                              "memory; the host could not provide them",
                              dev->index, bytes);
    *out = p;
    return XDEV_SUCCESS;
}

static xdev_status_t managed_free(xdev_cpu_device_t *dev, void *ptr) {
    (void)dev;
    free(ptr);
    return XDEV_SUCCESS;
}

static xdev_status_t managed_prefetch(xdev_cpu_device_t *dev, const void *ptr, size_t bytes,
                                      xdev_cpu_device_t *target, void *stream) {
    (void)ptr;
    (void)bytes;
    (void)target;
    xdev_cpu_stream_t *s;
    return xdev_cpu_stream_resolve(dev->index, stream, &s);
}

static xdev_status_t managed_advise(xdev_cpu_device_t *dev, const void *ptr, size_t bytes,
                                    int advice, xdev_cpu_device_t *target) {
    (void)dev;
    (void)ptr;
    (void)bytes;
    (void)target;
    if (advice < 1 || advice > 6)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: advice %d is unknown", advice);
    return XDEV_SUCCESS;
}

/* ---------------------------------------------------------------- virtual memory
 * Expandable segments on the CPU backend: an address-space reservation
 * (PROT_NONE, MAP_NORESERVE: no memory behind it), committed in chunks by
 * mapping fresh read/write pages over part of it and released by mapping
 * inaccessible pages back (the kernel drops the old ones). Mapped bytes count
 * against the device's capacity like malloc'ed ones. */
#define XDEV_CPU_VA_GRANULARITY ((size_t)2 << 20) /* as CUDA's usual granularity */

static xdev_status_t va_granularity(xdev_cpu_device_t *dev, size_t *out) {
    (void)dev;
    *out = XDEV_CPU_VA_GRANULARITY;
    return XDEV_SUCCESS;
}

static xdev_status_t va_reserve(xdev_cpu_device_t *dev, size_t bytes, void **base) {
    const size_t g = XDEV_CPU_VA_GRANULARITY;
    if (bytes == 0 || bytes % g != 0 || bytes > SIZE_MAX - g)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d: cannot reserve %zu bytes (not a multiple of %zu)",
                              dev->index, bytes, g);
    /* over-reserve by one unit, then trim to a granularity-aligned range */
    char *p = mmap(NULL, bytes + g, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: cannot reserve %zu bytes of address space: %s", dev->index,
                              bytes, strerror(errno));
    char *aligned = (char *)(((uintptr_t)p + g - 1) & ~(uintptr_t)(g - 1));
    if (aligned > p) munmap(p, (size_t)(aligned - p));
    if (aligned + bytes < p + bytes + g) munmap(aligned + bytes, (size_t)(p + g - aligned));
    *base = aligned;
    return XDEV_SUCCESS;
}

static xdev_status_t va_release(xdev_cpu_device_t *dev, void *base, size_t bytes) {
    if (munmap(base, bytes) != 0)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu:%d: munmap(%p, %zu): %s", dev->index,
                              base, bytes, strerror(errno));
    return XDEV_SUCCESS;
}

static xdev_status_t va_map(xdev_cpu_device_t *dev, void *addr, size_t bytes) {
    if (!reserve(dev, bytes)) return XDEV_ERROR_OUT_OF_MEMORY;
    void *p =
        mmap(addr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) {
        atomic_fetch_sub(&dev->used, bytes);
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d: cannot map %zu bytes at %p: %s",
                              dev->index, bytes, addr, strerror(errno));
    }
    return XDEV_SUCCESS;
}

static xdev_status_t va_unmap(xdev_cpu_device_t *dev, void *addr, size_t bytes) {
    void *p = mmap(addr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu:%d: cannot unmap %zu bytes at %p: %s",
                              dev->index, bytes, addr, strerror(errno));
    atomic_fetch_sub(&dev->used, bytes);
    return XDEV_SUCCESS;
}

const xdev_memory_vtable_t xdev_cpu_memory_vtable = {
    .size = sizeof(xdev_memory_vtable_t),
    .malloc = memory_malloc,
    .free = memory_free,
    .host_alloc = memory_host_alloc,
    .host_free = memory_host_free,
    .memcpy_async = memory_memcpy_async,
    .memset_async = memory_memset_async,
    .mem_get_info = memory_mem_get_info,
    .malloc_async = memory_malloc_async,
    .free_async = memory_free_async,
    .va_granularity = va_granularity,
    .va_reserve = va_reserve,
    .va_release = va_release,
    .va_map = va_map,
    .va_unmap = va_unmap,
    .malloc_managed = managed_malloc,
    .free_managed = managed_free,
    .mem_prefetch = managed_prefetch,
    .mem_advise = managed_advise,
    /* one mmap is one mapping either way: whole ranges map as units do */
    .va_map_whole = va_map,
    .va_unmap_whole = va_unmap,
};
