/* SPDX-License-Identifier: Apache-2.0 */
/* backends/hip/hip_vmm.c - the memory table's virtual memory slots
 * (memory.va_*) over HIP's virtual memory management API, for expandable
 * segments (core/alloc/expandable.c) and so for sleep and wake by tag
 * (core/alloc/alloc_sleep.c): HIP's side of backends/cuda/cuda_vmm.c, with
 * the same layout - one physical allocation per granularity unit, its handle
 * released as soon as it is mapped, so unmapping any unit-aligned range
 * frees exactly that memory; new mappings open to the device and to every
 * device that enabled peer access to it.
 *
 * The calls (hipMemAddressReserve, hipMemCreate, hipMemMap, hipMemSetAccess,
 * hipMemUnmap, hipMemRelease) are the HIP runtime's own, declared since HIP
 * 5.2. A runtime that declares but does not implement them (before ROCm
 * 5.7 they answered hipErrorNotSupported) makes the first call here fail with
 * XDEV_ERROR_NOT_SUPPORTED naming the call, and expandable segments (and so
 * sleep) are refused with that message. HIP 5.2's NVIDIA platform
 * (backends/hip/nvidia.cmake) wraps none of these calls: there XC_HAVE_VMM
 * is 0, this file builds nothing and expandable segments are refused as
 * before. */
#include <stdint.h>
#include <string.h>

#include "cuda_internal.h"

#if XC_HAVE_VMM

/* Bit d set in accessed_by[i]: device d enabled peer access to device i. */
static unsigned long long g_accessed_by[XC_MAX_DEVICES];

/* A failed call: hipErrorNotSupported as NOT_SUPPORTED (a runtime without
 * virtual memory), out of memory as such, the rest as backend errors. */
static xdev_status_t vmm_fail(hipError_t err, const char *what, size_t bytes, int device) {
    if (err == hipErrorNotSupported) {
        (void)hipGetLastError();
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s on device %d: this HIP runtime has no virtual memory management "
                        "(hipErrorNotSupported; ROCm 5.7 or later has it)",
                        what, device);
    }
    return xc_fail(err, "%s(%zu bytes) on device %d", what, bytes, device);
}

static hipMemAllocationProp prop_of(int device) {
    hipMemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = hipMemAllocationTypePinned;
    p.location.type = hipMemLocationTypeDevice;
    p.location.id = device;
    return p;
}

void xc_vmm_note_peer(int device, int peer) {
    if (device >= 0 && device < 64 && peer >= 0 && peer < XC_MAX_DEVICES)
        __atomic_fetch_or(&g_accessed_by[peer], 1ull << device, __ATOMIC_RELAXED);
}

xdev_status_t xc_va_granularity(xc_device_t *dev, size_t *out) {
    hipMemAllocationProp p = prop_of(dev->index);
    hipError_t err =
        hipMemGetAllocationGranularity(out, &p, hipMemAllocationGranularityRecommended);
    return err == hipSuccess ? XDEV_SUCCESS
                             : vmm_fail(err, "hipMemGetAllocationGranularity", 0, dev->index);
}

xdev_status_t xc_va_reserve(xc_device_t *dev, size_t bytes, void **base) {
    xc_guard_t guard;
    xdev_status_t st = xc_guard_begin(&guard, dev->index);
    if (st != XDEV_SUCCESS) return st;
    void *p = NULL;
    hipError_t err = hipMemAddressReserve(&p, bytes, 0, NULL, 0);
    xc_guard_end(&guard);
    if (err != hipSuccess) return vmm_fail(err, "hipMemAddressReserve", bytes, dev->index);
    *base = p;
    return XDEV_SUCCESS;
}

xdev_status_t xc_va_release(xc_device_t *dev, void *base, size_t bytes) {
    hipError_t err = hipMemAddressFree(base, bytes);
    return err == hipSuccess ? XDEV_SUCCESS : vmm_fail(err, "hipMemAddressFree", bytes, dev->index);
}

/* Unmap `bytes` from addr, one granularity unit at a time (each unit is its
 * own mapping). */
static hipError_t unmap_units(char *addr, size_t bytes, size_t unit) {
    hipError_t first = hipSuccess;
    for (size_t off = 0; off < bytes; off += unit) {
        hipError_t err = hipMemUnmap(addr + off, unit);
        if (first == hipSuccess) first = err;
    }
    return first;
}

xdev_status_t xc_va_map(xc_device_t *dev, void *addr, size_t bytes) {
    size_t unit = 0;
    xdev_status_t st = xc_va_granularity(dev, &unit);
    if (st != XDEV_SUCCESS) return st;
    xc_guard_t guard;
    if ((st = xc_guard_begin(&guard, dev->index)) != XDEV_SUCCESS) return st;
    hipMemAllocationProp p = prop_of(dev->index);
    hipMemAccessDesc access[XC_MAX_DEVICES];
    size_t n_access = 0;
    unsigned long long peers = __atomic_load_n(&g_accessed_by[dev->index], __ATOMIC_RELAXED);
    for (int d = 0; d < xc_state.count && d < 64; d++) {
        if (d != dev->index && !(peers & (1ull << d))) continue;
        access[n_access].location.type = hipMemLocationTypeDevice;
        access[n_access].location.id = d;
        access[n_access].flags = hipMemAccessFlagsProtReadWrite;
        n_access++;
    }
    char *base = addr;
    size_t done = 0;
    hipError_t err = hipSuccess;
    const char *what = "hipMemCreate";
    while (done < bytes && err == hipSuccess) {
        hipMemGenericAllocationHandle_t h;
        err = hipMemCreate(&h, unit, &p, 0);
        if (err != hipSuccess) break;
        err = hipMemMap(base + done, unit, 0, h, 0);
        (void)hipMemRelease(h); /* the mapping keeps the memory until it is unmapped */
        if (err != hipSuccess) {
            what = "hipMemMap";
            break;
        }
        done += unit;
        err = hipMemSetAccess(base + done - unit, unit, access, n_access);
        if (err != hipSuccess) what = "hipMemSetAccess";
    }
    if (err != hipSuccess) (void)unmap_units(base, done, unit);
    xc_guard_end(&guard);
    return err == hipSuccess ? XDEV_SUCCESS : vmm_fail(err, what, bytes, dev->index);
}

xdev_status_t xc_va_unmap(xc_device_t *dev, void *addr, size_t bytes) {
    size_t unit = 0;
    xdev_status_t st = xc_va_granularity(dev, &unit);
    if (st != XDEV_SUCCESS) return st;
    hipError_t err = unmap_units(addr, bytes, unit);
    return err == hipSuccess ? XDEV_SUCCESS : vmm_fail(err, "hipMemUnmap", bytes, dev->index);
}

#endif /* XC_HAVE_VMM */
