/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_vmm.c - the memory table's virtual memory slots
 * (memory.va_*), for expandable segments (core/alloc/expandable.c) and so
 * for sleep and wake by tag (core/alloc/alloc_sleep.c).
 *
 * Layout: memory is mapped one granularity unit per physical allocation, and
 * each handle is released as soon as it is mapped: then unmapping any
 * unit-aligned range frees exactly that memory, with no handle to keep. New
 * mappings are made accessible to the device and to every device that has
 * enabled peer access to it (xc_vmm_note_peer); a peer enabled later sees
 * later mappings only.
 *
 * Written in the names of CUDA's driver API (cuMemAddressReserve,
 * cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease), as
 * cuda_kernel.c is; the vendor section says how each plugin reaches them:
 * - CUDA: the plugin links only the static runtime, so the driver's calls
 *   are looked up once through cudaGetDriverEntryPointByVersion; a driver
 *   without one makes every slot XDEV_ERROR_NOT_SUPPORTED naming it.
 * - HIP: the runtime's own twins (hipMemAddressReserve, ...), declared since
 *   HIP 5.2, which vendor/hip_vendor.h maps the names to. A runtime that
 *   declares but does not implement them (before ROCm 5.7 they answered
 *   hipErrorNotSupported) makes the first call fail with
 *   XDEV_ERROR_NOT_SUPPORTED naming the call, and expandable segments (and
 *   so sleep) are refused with that message. HIP's NVIDIA platform
 *   (backends/hip/nvidia.cmake) wraps none of them: there XC_HAVE_VMM is 0,
 *   this file builds nothing and expandable segments are refused. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

#if XC_HAVE_VMM

/* ============================================================ vendor section */
#ifndef XC_VENDOR_HIP
#include <cuda.h>

/* The driver's calls this file makes, found once (lookup). */
static struct {
    pthread_once_t once;
    char missing[64]; /* the first call the driver lacks, "" when all were found */
    CUresult (*cuMemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *,
                                              CUmemAllocationGranularity_flags);
    CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
    CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                            unsigned long long);
    CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                         unsigned long long);
    CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
    CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
} g_drv = {.once = PTHREAD_ONCE_INIT};

/* A driver call through its pointer. */
#define XV(call) g_drv.call

static void lookup(void) {
    static const xc_driver_sym_t syms[] = {
#define SYM(name) {#name, offsetof(__typeof__(g_drv), name)}
        SYM(cuMemGetAllocationGranularity),
        SYM(cuMemAddressReserve),
        SYM(cuMemAddressFree),
        SYM(cuMemCreate),
        SYM(cuMemMap),
        SYM(cuMemSetAccess),
        SYM(cuMemUnmap),
        SYM(cuMemRelease),
        SYM(cuGetErrorName),
        SYM(cuGetErrorString),
#undef SYM
    };
    const char *missing = xc_driver_lookup(syms, sizeof syms / sizeof syms[0], &g_drv);
    if (missing != NULL) snprintf(g_drv.missing, sizeof g_drv.missing, "%s", missing);
}

/* XDEV_ERROR_NOT_SUPPORTED naming the call a driver too old lacks. */
static xdev_status_t vmm_ready(void) {
    pthread_once(&g_drv.once, lookup);
    if (g_drv.missing[0] != '\0')
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "the CUDA driver has no %s (virtual memory management)", g_drv.missing);
    return XDEV_SUCCESS;
}

/* A failed driver call: "<what>(<n> bytes) on device <d>: CUDA_ERROR_...:
 * text"; out of memory as such. */
static xdev_status_t vmm_fail(CUresult r, const char *what, size_t bytes, int device) {
    const char *name = "CUDA_ERROR_UNKNOWN", *text = "";
    (void)g_drv.cuGetErrorName(r, &name);
    (void)g_drv.cuGetErrorString(r, &text);
    return xc_error(r == CUDA_ERROR_OUT_OF_MEMORY ? XDEV_ERROR_OUT_OF_MEMORY : XDEV_ERROR_BACKEND,
                    "%s(%zu bytes) on device %d: %s: %s", what, bytes, device, name, text);
}

#else /* XC_VENDOR_HIP: the runtime's own calls, under the driver names */

#define XV(call) call

static xdev_status_t vmm_ready(void) {
    return XDEV_SUCCESS;
}

/* A failed call: hipErrorNotSupported as NOT_SUPPORTED (a runtime without
 * virtual memory), out of memory as such, the rest as backend errors. */
static xdev_status_t vmm_fail(CUresult err, const char *what, size_t bytes, int device) {
    if (err == hipErrorNotSupported) {
        (void)hipGetLastError();
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s on device %d: this HIP runtime has no virtual memory management "
                        "(hipErrorNotSupported; ROCm 5.7 or later has it)",
                        what, device);
    }
    return xc_fail(err, "%s(%zu bytes) on device %d", what, bytes, device);
}
#endif /* vendor section */

/* ============================================================ shared */

/* Bit d set in accessed_by[i]: device d enabled peer access to device i. */
static unsigned long long g_accessed_by[XC_MAX_DEVICES];

/* The address off bytes past addr, as the calls take it (a number on CUDA,
 * a pointer on HIP). */
static CUdeviceptr va_at(void *addr, size_t off) {
    return (CUdeviceptr)((uintptr_t)addr + off);
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
    xdev_status_t st = vmm_ready();
    if (st != XDEV_SUCCESS) return st;
    CUmemAllocationProp p = prop_of(dev->index);
    CUresult r = XV(cuMemGetAllocationGranularity)(out, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS
                             : vmm_fail(r, XC_STR(cuMemGetAllocationGranularity), 0, dev->index);
}

xdev_status_t xc_va_reserve(xc_device_t *dev, size_t bytes, void **base) {
    xdev_status_t st = vmm_ready();
    if (st != XDEV_SUCCESS) return st;
    xc_guard_t guard;
    if ((st = xc_guard_begin(&guard, dev->index)) != XDEV_SUCCESS) return st;
    CUdeviceptr p = 0;
    CUresult r = XV(cuMemAddressReserve)(&p, bytes, 0, 0, 0);
    xc_guard_end(&guard);
    if (r != CUDA_SUCCESS) return vmm_fail(r, XC_STR(cuMemAddressReserve), bytes, dev->index);
    *base = (void *)(uintptr_t)p;
    return XDEV_SUCCESS;
}

xdev_status_t xc_va_release(xc_device_t *dev, void *base, size_t bytes) {
    xdev_status_t st = vmm_ready();
    if (st != XDEV_SUCCESS) return st;
    CUresult r = XV(cuMemAddressFree)(va_at(base, 0), bytes);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS
                             : vmm_fail(r, XC_STR(cuMemAddressFree), bytes, dev->index);
}

/* Unmap `bytes` from addr, one mapping of `unit` bytes at a time; the first
 * failure. A rollback (keep_going) tries every unit; otherwise the first
 * failure stops it, and *done (where not NULL) is what was unmapped. */
static CUresult unmap_units(void *addr, size_t bytes, size_t unit, bool keep_going, size_t *done) {
    CUresult first = CUDA_SUCCESS;
    size_t off = 0;
    for (; off < bytes; off += unit) {
        CUresult r = XV(cuMemUnmap)(va_at(addr, off), unit);
        if (first == CUDA_SUCCESS) first = r;
        if (r != CUDA_SUCCESS && !keep_going) break;
    }
    if (done != NULL) *done = off;
    return first;
}

/* Who may read and write new memory of `dev`: itself and the peers that
 * enabled access to it. Returns the count. */
static size_t access_of(const xc_device_t *dev, CUmemAccessDesc access[XC_MAX_DEVICES]) {
    size_t n_access = 0;
    unsigned long long peers = __atomic_load_n(&g_accessed_by[dev->index], __ATOMIC_RELAXED);
    for (int d = 0; d < xc_state.count && d < 64; d++) {
        if (d != dev->index && !(peers & (1ull << d))) continue;
        access[n_access].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access[n_access].location.id = d;
        access[n_access].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        n_access++;
    }
    return n_access;
}

/* Back [addr, addr + bytes) with new memory of `dev`, one physical
 * allocation and mapping per `chunk` bytes, and one access call for the
 * range (setting access is the costly step, and a range over several
 * mappings is allowed). A failure leaves nothing mapped. */
static xdev_status_t map_chunks(xc_device_t *dev, void *addr, size_t bytes, size_t chunk) {
    xc_guard_t guard;
    xdev_status_t st = xc_guard_begin(&guard, dev->index);
    if (st != XDEV_SUCCESS) return st;
    CUmemAllocationProp p = prop_of(dev->index);
    CUmemAccessDesc access[XC_MAX_DEVICES];
    size_t n_access = access_of(dev, access);
    size_t done = 0;
    CUresult r = CUDA_SUCCESS;
    const char *what = XC_STR(cuMemCreate);
    while (done < bytes && r == CUDA_SUCCESS) {
        CUmemGenericAllocationHandle h;
        r = XV(cuMemCreate)(&h, chunk, &p, 0);
        if (r != CUDA_SUCCESS) break;
        r = XV(cuMemMap)(va_at(addr, done), chunk, 0, h, 0);
        (void)XV(cuMemRelease)(h); /* the mapping keeps the memory until it is unmapped */
        if (r != CUDA_SUCCESS) {
            what = XC_STR(cuMemMap);
            break;
        }
        done += chunk;
    }
    if (r == CUDA_SUCCESS) {
        r = XV(cuMemSetAccess)(va_at(addr, 0), bytes, access, n_access);
        if (r != CUDA_SUCCESS) what = XC_STR(cuMemSetAccess);
    }
    if (r != CUDA_SUCCESS) (void)unmap_units(addr, done, chunk, true, NULL);
    xc_guard_end(&guard);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS : vmm_fail(r, what, bytes, dev->index);
}

/* A mapping per granularity unit, so that any unit can be unmapped alone. */
xdev_status_t xc_va_map(xc_device_t *dev, void *addr, size_t bytes) {
    size_t unit = 0;
    xdev_status_t st = xc_va_granularity(dev, &unit);
    return st != XDEV_SUCCESS ? st : map_chunks(dev, addr, bytes, unit);
}

/* One mapping for the range: the driver's cost is per call and per mapping,
 * not per byte (about 12 us to create, 27 us to set access on an H200), so
 * a 32 MiB piece maps about 30 times faster a byte than 16 units. The
 * range can only be unmapped whole (cuMemUnmap takes whole mappings). */
xdev_status_t xc_va_map_whole(xc_device_t *dev, void *addr, size_t bytes) {
    xdev_status_t st = vmm_ready();
    return st != XDEV_SUCCESS ? st : map_chunks(dev, addr, bytes, bytes);
}

xdev_status_t xc_va_unmap_whole(xc_device_t *dev, void *addr, size_t bytes) {
    xdev_status_t st = vmm_ready();
    if (st != XDEV_SUCCESS) return st;
    CUresult r = XV(cuMemUnmap)(va_at(addr, 0), bytes);
    return r == CUDA_SUCCESS ? XDEV_SUCCESS : vmm_fail(r, XC_STR(cuMemUnmap), bytes, dev->index);
}

/* Unit by unit; a failure leaves the range mapped, as the core counts it
 * (core/alloc/segment_map.c: a failed call's range is still mapped, and it
 * hands that memory out again): the units already unmapped are mapped back,
 * with new memory - the core unmaps only memory it no longer uses or whose
 * contents it has copied away. Where even that fails, the message says the
 * range is left partly unmapped. */
xdev_status_t xc_va_unmap(xc_device_t *dev, void *addr, size_t bytes) {
    size_t unit = 0;
    xdev_status_t st = xc_va_granularity(dev, &unit);
    if (st != XDEV_SUCCESS) return st;
    size_t done = 0;
    CUresult r = unmap_units(addr, bytes, unit, false, &done);
    if (r == CUDA_SUCCESS) return XDEV_SUCCESS;
    if (done > 0 && map_chunks(dev, addr, done, unit) != XDEV_SUCCESS)
        return vmm_fail(r,
                        XC_STR(cuMemUnmap) " (mapping back the units it had unmapped failed too: "
                                           "the range is left partly unmapped)",
                        bytes, dev->index);
    return vmm_fail(r, XC_STR(cuMemUnmap), bytes, dev->index);
}

#endif /* XC_HAVE_VMM */
