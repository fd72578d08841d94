/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_memory.c - the memory vtable: raw device memory
 * (cudaMalloc/cudaFree), pinned host memory (cudaHostAlloc, portable to
 * every device), stream-ordered copies in every direction (peer copies with
 * cudaMemcpyPeerAsync; large pageable host copies through pinned staging
 * buffers, cuda_staging.c), memset, memory info, and the stream-ordered
 * allocator (cudaMallocFromPoolAsync on the device's default pool, whose
 * release threshold is raised so that freed memory stays cached, as torch's
 * cudaMallocAsync backend does) for XDEV_ALLOC_CONF=backend:async. */
#include <stdint.h>

#include "cuda_internal.h"
#include "xdev/memory.h"

static xdev_status_t memory_malloc(xc_device_t *dev, size_t bytes, void **out) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = xc_malloc_any_mode(out, bytes);
    xc_guard_end(&g);
    if (err != cudaSuccess) {
        *out = NULL;
        return xc_fail(err, XC_STR(cudaMalloc) "(%zu bytes) on device %d", bytes, device);
    }
    return XDEV_SUCCESS;
}

static xdev_status_t memory_free(xc_device_t *dev, void *ptr) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaFree(ptr);
    xc_guard_end(&g);
    return err == cudaSuccess ? XDEV_SUCCESS
                              : xc_fail(err, XC_STR(cudaFree) "(%p) on device %d", ptr, device);
}

static xdev_status_t memory_host_alloc(size_t bytes, void **out) {
    cudaError_t err = cudaHostAlloc(out, bytes, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        *out = NULL;
        return xc_fail(err, XC_STR(cudaHostAlloc) "(%zu bytes, portable)", bytes);
    }
    return XDEV_SUCCESS;
}

static xdev_status_t memory_host_free(void *ptr) {
    XC_CALL(cudaFreeHost(ptr), XC_STR(cudaFreeHost) "(%p)", ptr);
    return XDEV_SUCCESS;
}

/* torch's pin_memory of an existing buffer: page-locked for every device. */
static xdev_status_t memory_host_register(void *ptr, size_t bytes) {
    XC_CALL(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable),
            XC_STR(cudaHostRegister) "(%p, %zu bytes, portable)", ptr, bytes);
    return XDEV_SUCCESS;
}

static xdev_status_t memory_host_unregister(void *ptr) {
    XC_CALL(cudaHostUnregister(ptr), XC_STR(cudaHostUnregister) "(%p)", ptr);
    return XDEV_SUCCESS;
}

static const char *kind_name(xdev_copy_kind_t kind) {
    switch (kind) {
    case XDEV_COPY_HOST_TO_HOST:
        return "host to host";
    case XDEV_COPY_HOST_TO_DEVICE:
        return "host to device";
    case XDEV_COPY_DEVICE_TO_HOST:
        return "device to host";
    case XDEV_COPY_DEVICE_TO_DEVICE:
        return "device to device";
    case XDEV_COPY_PEER:
        return "peer";
    }
    return "unknown";
}

/* One copy, the right device current. */
static xdev_status_t copy_on(const xdev_copy_desc_t *c, int device, cudaStream_t s) {
    if (xc_staging_wanted(c)) return xc_staged_copy(c, device, s);
    cudaError_t err;
    switch (c->kind) {
    case XDEV_COPY_PEER:
        err = cudaMemcpyPeerAsync(c->dst, c->dst_device->index, c->src, c->src_device->index,
                                  c->bytes, s);
        if (err != cudaSuccess)
            return xc_fail(err, XC_STR(cudaMemcpyPeerAsync) "(%zu bytes, device %d to %d)",
                           c->bytes, c->src_device->index, c->dst_device->index);
        return XDEV_SUCCESS;
    case XDEV_COPY_HOST_TO_HOST:
        err = cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyHostToHost, s);
        break;
    case XDEV_COPY_HOST_TO_DEVICE:
        err = cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyHostToDevice, s);
        break;
    case XDEV_COPY_DEVICE_TO_HOST:
        err = cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToHost, s);
        break;
    case XDEV_COPY_DEVICE_TO_DEVICE:
        err = cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, s);
        break;
    default:
        return xc_error(XDEV_ERROR_INVALID_VALUE, XC_NAME ": unknown copy kind %d", (int)c->kind);
    }
    if (err != cudaSuccess)
        return xc_fail(err, XC_STR(cudaMemcpyAsync) "(%zu bytes, %s) on device %d", c->bytes,
                       kind_name(c->kind), device);
    return XDEV_SUCCESS;
}

static xdev_status_t memory_memcpy_async(xc_device_t *dev, const xdev_copy_desc_t *copy,
                                         void *stream) {
    int device = dev->index;
    if (copy->bytes == 0) return XDEV_SUCCESS;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    st = copy_on(copy, device, (cudaStream_t)stream);
    xc_guard_end(&g);
    return st;
}

static xdev_status_t memory_memset_async(xc_device_t *dev, void *dst, int value, size_t bytes,
                                         void *stream) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaMemsetAsync(dst, value, bytes, (cudaStream_t)stream);
    xc_guard_end(&g);
    return err == cudaSuccess
               ? XDEV_SUCCESS
               : xc_fail(err, XC_STR(cudaMemsetAsync) "(%zu bytes) on device %d", bytes, device);
}

static xdev_status_t memory_get_info(xc_device_t *dev, size_t *free_bytes, size_t *total_bytes) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaMemGetInfo(free_bytes, total_bytes);
    xc_guard_end(&g);
    return err == cudaSuccess ? XDEV_SUCCESS
                              : xc_fail(err, XC_STR(cudaMemGetInfo) " on device %d", device);
}

/* The device's default memory pool, its release threshold raised once. */
static xdev_status_t default_pool(int device, cudaMemPool_t *out) {
    xc_device_t *d = xc_device(device);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!d->pool_ready) {
        cudaError_t err = cudaDeviceGetDefaultMemPool(&d->pool, device);
        if (err != cudaSuccess) {
            st = xc_fail(err, XC_STR(cudaDeviceGetDefaultMemPool) "(%d)", device);
        } else {
            uint64_t keep = UINT64_MAX;
            err = cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &keep);
            if (err != cudaSuccess)
                st =
                    xc_fail(err, XC_STR(cudaMemPoolSetAttribute) "(release threshold) on device %d",
                            device);
            else
                d->pool_ready = true;
        }
    }
    *out = d->pool;
    pthread_mutex_unlock(&d->lock);
    return st;
}

static xdev_status_t memory_malloc_async(xc_device_t *dev, size_t bytes, void *stream, void **out) {
    int device = dev->index;
    cudaMemPool_t pool;
    xdev_status_t st = default_pool(device, &pool);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err;
    xc_guard_t g;
    st = xc_stream_guard_begin(&g, device, stream);
    if (st != XDEV_SUCCESS) return st;
    err = cudaMallocFromPoolAsync(out, bytes, pool, (cudaStream_t)stream);
    xc_guard_end(&g);
    if (err != cudaSuccess) {
        *out = NULL;
        return xc_fail(err, XC_STR(cudaMallocFromPoolAsync) "(%zu bytes) on device %d", bytes,
                       device);
    }
    return XDEV_SUCCESS;
}

static xdev_status_t memory_free_async(xc_device_t *dev, void *ptr, void *stream) {
    int device = dev->index;
    cudaError_t err;
    xc_guard_t g;
    xdev_status_t st = xc_stream_guard_begin(&g, device, stream);
    if (st != XDEV_SUCCESS) return st;
    err = cudaFreeAsync(ptr, (cudaStream_t)stream);
    xc_guard_end(&g);
    return err == cudaSuccess
               ? XDEV_SUCCESS
               : xc_fail(err, XC_STR(cudaFreeAsync) "(%p) on device %d", ptr, device);
}

/* ---------------------------------------------------------------- managed memory
 * cudaMallocManaged / hipMallocManaged; freed with cudaFree (the core has
 * waited for the device); prefetch and advice through the vendor's
 * signature (vendor/xc_vendor.h). */
static xdev_status_t memory_malloc_managed(xc_device_t *dev, size_t bytes, unsigned flags,
                                           void **out) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    unsigned attach = flags == XDEV_MEM_ATTACH_HOST ? cudaMemAttachHost : cudaMemAttachGlobal;
    cudaError_t err = cudaMallocManaged(out, bytes, attach);
    xc_guard_end(&g);
    if (err != cudaSuccess) {
        *out = NULL;
        return xc_fail(err, XC_STR(cudaMallocManaged) "(%zu bytes) on device %d", bytes, device);
    }
    return XDEV_SUCCESS;
}

static xdev_status_t memory_mem_prefetch(xc_device_t *dev, const void *ptr, size_t bytes,
                                         xc_device_t *target, void *stream) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    int to = target != NULL ? target->index : -1;
    cudaError_t err = xc_vendor_mem_prefetch(ptr, bytes, to, (cudaStream_t)stream);
    xc_guard_end(&g);
    if (err == cudaSuccess) return XDEV_SUCCESS;
    char where[32] = "the host";
    if (to >= 0) snprintf(where, sizeof where, "device %d", to);
    return xc_fail(err, XC_PREFETCH_CALL "(%p, %zu bytes, to %s) on device %d", ptr, bytes, where,
                   device);
}

static xdev_status_t memory_mem_advise(xc_device_t *dev, const void *ptr, size_t bytes, int advice,
                                       xc_device_t *target) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    int to = target != NULL ? target->index : -1;
    cudaError_t err = xc_vendor_mem_advise(ptr, bytes, advice, to);
    xc_guard_end(&g);
    return err == cudaSuccess
               ? XDEV_SUCCESS
               : xc_fail(err, XC_ADVISE_CALL "(%p, %zu bytes, advice %d, location %d)", ptr, bytes,
                         advice, to);
}

const xdev_memory_vtable_t xc_memory_vtable = {
    .size = sizeof(xdev_memory_vtable_t),
    .malloc = memory_malloc,
    .free = memory_free,
    .host_alloc = memory_host_alloc,
    .host_free = memory_host_free,
    .host_register = memory_host_register,
    .host_unregister = memory_host_unregister,
    .memcpy_async = memory_memcpy_async,
    .memset_async = memory_memset_async,
    .mem_get_info = memory_get_info,
    .malloc_async = memory_malloc_async,
    .free_async = memory_free_async,
#if XC_HAVE_VMM
    .va_granularity = xc_va_granularity,
    .va_reserve = xc_va_reserve,
    .va_release = xc_va_release,
    .va_map = xc_va_map,
    .va_unmap = xc_va_unmap,
    .va_map_whole = xc_va_map_whole,
    .va_unmap_whole = xc_va_unmap_whole,
#endif
    .malloc_managed = memory_malloc_managed,
    .free_managed = memory_free,
    .mem_prefetch = memory_mem_prefetch,
    .mem_advise = memory_mem_advise,
};
