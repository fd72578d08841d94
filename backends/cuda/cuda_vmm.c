/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda/cuda_vmm.c - the memory table's virtual memory slots
 * (memory.va_*) over CUDA's virtual memory management API, for expandable
 * segments (core/alloc/expandable.c).
 *
 * Those calls are the driver's (cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemSetAccess, cuMemUnmap); the plugin links only the static runtime, so
 * they are looked up once through cudaGetDriverEntryPointByVersion. Memory
 * is mapped one granularity unit per physical allocation, and each handle is
 * released as soon as it is mapped: then unmapping any unit-aligned range
 * frees exactly that memory, with no handle to keep. New mappings are made
 * accessible to the device and to every device that has enabled peer access
 * to it (xc_vmm_note_peer); a peer enabled later sees later mappings only.
 * CUDA only: the HIP build has its own, backends/hip/hip_vmm.c. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

typedef CUresult (*fn_granularity_t)(size_t *, const CUmemAllocationProp *,
                                     CUmemAllocationGranularity_flags);
typedef CUresult (*fn_reserve_t)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*fn_free_t)(CUdeviceptr, size_t);
typedef CUresult (*fn_create_t)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                unsigned long long);
typedef CUresult (*fn_map_t)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                             unsigned long long);
typedef CUresult (*fn_set_access_t)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*fn_unmap_t)(CUdeviceptr, size_t);
typedef CUresult (*fn_release_t)(CUmemGenericAllocationHandle);
typedef CUresult (*fn_error_t)(CUresult, const char **);

static struct {
    pthread_once_t once;
    xdev_status_t status; /* of the lookup */
    fn_granularity_t granularity;
    fn_reserve_t reserve;
    fn_free_t free;
    fn_create_t create;
    fn_map_t map;
    fn_set_access_t set_access;
    fn_unmap_t unmap;
    fn_release_t release;
    fn_error_t error_name, error_string;
    char missing[64];
} g = {.once = PTHREAD_ONCE_INIT};

/* Bit d set in accessed_by[i]: device d enabled peer access to device i. */
static unsigned long long g_accessed_by[XC_MAX_DEVICES];

static void lookup(void) {
    static const struct {
        const char *name;
        size_t offset;
    } syms[] = {
#define SYM(name, field) {#name, offsetof(__typeof__(g), field)}
        SYM(cuMemGetAllocationGranularity, granularity),
        SYM(cuMemAddressReserve, reserve),
        SYM(cuMemAddressFree, free),
        SYM(cuMemCreate, create),
        SYM(cuMemMap, map),
        SYM(cuMemSetAccess, set_access),
        SYM(cuMemUnmap, unmap),
        SYM(cuMemRelease, release),
        SYM(cuGetErrorName, error_name),
        SYM(cuGetErrorString, error_string),
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *fn = NULL;
        enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        cudaError_t err =
            cudaGetDriverEntryPointByVersion(syms[i].name, &fn, 12000, cudaEnableDefault, &q);
        if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == NULL) {
            (void)cudaGetLastError();
            snprintf(g.missing, sizeof g.missing, "%s", syms[i].name);
            g.status = XDEV_ERROR_NOT_SUPPORTED;
            return;
        }
        memcpy((char *)&g + syms[i].offset, &fn, sizeof fn);
    }
    g.status = XDEV_SUCCESS;
}

static xdev_status_t ready(void) {
    pthread_once(&g.once, lookup);
    if (g.status != XDEV_SUCCESS)
        return xc_error(g.status, "the CUDA driver has no %s (virtual memory management)",
                        g.missing);
    return XDEV_SUCCESS;
}

/* A failed driver call: "<what>: CUDA_ERROR_...: text"; out of memory as such. */
static xdev_status_t drv_fail(CUresult r, const char *what, size_t bytes, int device) {
    const char *name = "CUDA_ERROR_UNKNOWN", *text = "";
    (void)g.error_name(r, &name);
    (void)g.error_string(r, &text);
    return xc_error(r == CUDA_ERROR_OUT_OF_MEMORY ? XDEV_ERROR_OUT_OF_MEMORY : XDEV_ERROR_BACKEND,
                    "%s(%zu bytes) on device %d: %s: %s", what, bytes, device, name, text);
}

static CUmemAllocationProp prop_of(int device) {
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = device;
    return p;
}

void xc_vmm_note_peer(int device, int peer) {
    if (device >= 0 && device < 64 && peer >= 0 && peer < XC_MAX_DEVICES)
        __atomic_fetch_or(&g_accessed_by[peer], 1ull << device, __ATOMIC_RELAXED);
}

xdev_status_t xc_va_granularity(xc_device_t *dev, size_t *out) {
    xdev_status_t st = ready();
    if (st != XDEV_SUCCESS) return st;
    CUmemAllocationProp p = prop_of(dev->index);
    CUresult r = g.granularity(out, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS
                             : drv_fail(r, "cuMemGetAllocationGranularity", 0, dev->index);
}

xdev_status_t xc_va_reserve(xc_device_t *dev, size_t bytes, void **base) {
    xdev_status_t st = ready();
    if (st != XDEV_SUCCESS) return st;
    xc_guard_t guard;
    if ((st = xc_guard_begin(&guard, dev->index)) != XDEV_SUCCESS) return st;
    CUdeviceptr p = 0;
    CUresult r = g.reserve(&p, bytes, 0, 0, 0);
    xc_guard_end(&guard);
    if (r != CUDA_SUCCESS) return drv_fail(r, "cuMemAddressReserve", bytes, dev->index);
    *base = (void *)(uintptr_t)p;
    return XDEV_SUCCESS;
}

xdev_status_t xc_va_release(xc_device_t *dev, void *base, size_t bytes) {
    xdev_status_t st = ready();
    if (st != XDEV_SUCCESS) return st;
    CUresult r = g.free((CUdeviceptr)(uintptr_t)base, bytes);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS : drv_fail(r, "cuMemAddressFree", bytes, dev->index);
}

/* Unmap `bytes` from addr, one granularity unit at a time (each unit is its
 * own mapping). */
static CUresult unmap_units(CUdeviceptr addr, size_t bytes, size_t unit) {
    CUresult first = CUDA_SUCCESS;
    for (size_t off = 0; off < bytes; off += unit) {
        CUresult r = g.unmap(addr + off, unit);
        if (first == CUDA_SUCCESS) first = r;
    }
    return first;
}

xdev_status_t xc_va_map(xc_device_t *dev, void *addr, size_t bytes) {
    size_t unit = 0;
    xdev_status_t st = xc_va_granularity(dev, &unit);
    if (st != XDEV_SUCCESS) return st;
    xc_guard_t guard;
    if ((st = xc_guard_begin(&guard, dev->index)) != XDEV_SUCCESS) return st;
    CUmemAllocationProp p = prop_of(dev->index);
    CUmemAccessDesc access[XC_MAX_DEVICES];
    size_t n_access = 0;
    unsigned long long peers = __atomic_load_n(&g_accessed_by[dev->index], __ATOMIC_RELAXED);
    for (int d = 0; d < xc_state.count && d < 64; d++) {
        if (d != dev->index && !(peers & (1ull << d))) continue;
        access[n_access].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access[n_access].location.id = d;
        access[n_access].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        n_access++;
    }
    CUdeviceptr base = (CUdeviceptr)(uintptr_t)addr;
    size_t done = 0;
    CUresult r = CUDA_SUCCESS;
    const char *what = "cuMemCreate";
    while (done < bytes && r == CUDA_SUCCESS) {
        CUmemGenericAllocationHandle h;
        r = g.create(&h, unit, &p, 0);
        if (r != CUDA_SUCCESS) break;
        r = g.map(base + done, unit, 0, h, 0);
        (void)g.release(h); /* the mapping keeps the memory until it is unmapped */
        if (r != CUDA_SUCCESS) {
            what = "cuMemMap";
            break;
        }
        done += unit;
        r = g.set_access(base + done - unit, unit, access, n_access);
        if (r != CUDA_SUCCESS) what = "cuMemSetAccess";
    }
    if (r != CUDA_SUCCESS) (void)unmap_units(base, done, unit);
    xc_guard_end(&guard);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS : drv_fail(r, what, bytes, dev->index);
}

xdev_status_t xc_va_unmap(xc_device_t *dev, void *addr, size_t bytes) {
    size_t unit = 0;
    xdev_status_t st = xc_va_granularity(dev, &unit);
    if (st != XDEV_SUCCESS) return st;
    CUresult r = unmap_units((CUdeviceptr)(uintptr_t)addr, bytes, unit);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS : drv_fail(r, "cuMemUnmap", bytes, dev->index);
}
