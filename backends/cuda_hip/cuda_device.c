/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_device.c - the device vtable: count, properties
 * (cudaGetDeviceProperties, cached per device), synchronize, peer access,
 * and the processes/utilisation slots (NVML: backends/cuda/cuda_nvml.c;
 * rocm-smi: backends/hip/hip_smi.c). Device indices are the runtime's, so
 * CUDA_VISIBLE_DEVICES applies as the driver applies it; the core adds
 * XDEV_VISIBLE_DEVICES on top. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static xdev_status_t device_count(int *count) {
    *count = xc_state.count;
    return XDEV_SUCCESS;
}

static xdev_status_t device_get_properties(xc_device_t *dev, xdev_device_properties_t *props) {
    int device = dev->index;
    xc_device_t *d = xc_device(device);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!d->props_ready) {
        struct cudaDeviceProp p;
        cudaError_t err = cudaGetDeviceProperties(&p, device);
        if (err != cudaSuccess) {
            st = xc_fail(err, XC_STR(cudaGetDeviceProperties) "(%d)", device);
        } else {
            memset(&d->props, 0, sizeof d->props);
            snprintf(d->props.name, sizeof d->props.name, "%s", p.name);
            d->props.capability_major = p.major;
            d->props.capability_minor = p.minor;
            d->props.total_memory = p.totalGlobalMem;
            d->props.multiprocessor_count = p.multiProcessorCount;
            d->props.physical_index = device;
            d->props.integrated = p.integrated != 0;
            d->props_ready = true;
        }
    }
    if (st == XDEV_SUCCESS) *props = d->props;
    pthread_mutex_unlock(&d->lock);
    return st;
}

static xdev_status_t device_synchronize(xc_device_t *dev) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaDeviceSynchronize();
    xc_guard_end(&g);
    return err == cudaSuccess ? XDEV_SUCCESS
                              : xc_fail(err, XC_STR(cudaDeviceSynchronize) "(%d)", device);
}

static xdev_status_t device_can_access_peer(xc_device_t *dev, xc_device_t *peer_dev, bool *out) {
    int device = dev->index, peer = peer_dev->index;
    if (device == peer) { /* as cudaDeviceCanAccessPeer: not its own peer */
        *out = false;
        return XDEV_SUCCESS;
    }
    int can = 0;
    XC_CALL(cudaDeviceCanAccessPeer(&can, device, peer), XC_STR(cudaDeviceCanAccessPeer) "(%d, %d)",
            device, peer);
    *out = can != 0;
    return XDEV_SUCCESS;
}

static xdev_status_t device_enable_peer_access(xc_device_t *dev, xc_device_t *peer_dev) {
    int device = dev->index, peer = peer_dev->index;
    if (device == peer) return XDEV_SUCCESS;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
    xc_guard_end(&g);
    if (err == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError(); /* not an error for xdev: enabling is idempotent */
        err = cudaSuccess;
    }
    if (err != cudaSuccess)
        return xc_fail(err, XC_STR(cudaDeviceEnablePeerAccess) "(peer %d) on device %d", peer,
                       device);
#if XC_HAVE_VMM
    xc_vmm_note_peer(device, peer); /* expandable segments map peer's memory for it too */
#endif
    return XDEV_SUCCESS;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 bytes, as
 * nvidia-smi -L writes it. */
static void format_uuid(const unsigned char *b, char *out, size_t len) {
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* torch 2.x's properties, read once: the UUID (a MIG instance's as "MIG-",
 * asked of NVML), the PCI location, L2, bf16/tf32 (CUDA: compute capability
 * 8.0 and later; HIP: the targets with the instructions) and the target. */
static xdev_status_t fill_ext(int device, xdev_device_properties_ext_t *e) {
    struct cudaDeviceProp p;
    XC_CALL(cudaGetDeviceProperties(&p, device), XC_STR(cudaGetDeviceProperties) "(%d)", device);
    memset(e, 0, sizeof *e);
    e->size = sizeof *e;
#if defined(XC_VENDOR_HIP)
    hipUUID u;
    XC_CALL(hipDeviceGetUuid(&u, device), "hipDeviceGetUuid(%d)", device);
    /* ROCm's 16 bytes are the characters of the unique id ("GPU-" + 16 hex
     * digits, as rocm-smi and HIP_VISIBLE_DEVICES write it) */
    bool text = true;
    for (int i = 0; i < 16; i++)
        text = text && isxdigit((unsigned char)u.bytes[i]);
    if (text)
        snprintf(e->uuid, sizeof e->uuid, "GPU-%.16s", (const char *)u.bytes);
    else
        format_uuid((const unsigned char *)u.bytes, e->uuid, sizeof e->uuid);
#if defined(__HIP_PLATFORM_NVIDIA__)
    /* the platform leaves gcnArchName empty: the compute capability */
    snprintf(e->arch, sizeof e->arch, "sm_%d%d", p.major, p.minor);
    e->bf16_supported = p.major >= 8;
    e->tf32_supported = p.major >= 8;
#else
    char arch[sizeof p.gcnArchName];
    snprintf(arch, sizeof arch, "%s", p.gcnArchName);
    arch[strcspn(arch, ":")] = '\0'; /* "gfx90a:sramecc+:xnack-" */
    snprintf(e->arch, sizeof e->arch, "%.31s", arch);
    static const char *const bf16[] = {"gfx90a", "gfx94", "gfx95", "gfx11", "gfx12", NULL};
    for (int i = 0; bf16[i] != NULL; i++)
        if (strncmp(arch, bf16[i], strlen(bf16[i])) == 0) e->bf16_supported = true;
    e->tf32_supported = strncmp(arch, "gfx94", 5) == 0 || strncmp(arch, "gfx95", 5) == 0;
#endif
#else
    format_uuid((const unsigned char *)p.uuid.bytes, e->uuid, sizeof e->uuid);
    if (xc_smi_is_mig(e->uuid + 4)) {
        e->is_mig = true;
        memcpy(e->uuid, "MIG-", 4);
    }
    snprintf(e->arch, sizeof e->arch, "sm_%d%d", p.major, p.minor);
    e->bf16_supported = p.major >= 8;
    e->tf32_supported = p.major >= 8;
#endif
    snprintf(e->pci_bus_id, sizeof e->pci_bus_id, "%04x:%02x:%02x.0", (unsigned)p.pciDomainID,
             (unsigned)p.pciBusID, (unsigned)p.pciDeviceID);
    e->l2_cache_size = p.l2CacheSize > 0 ? (size_t)p.l2CacheSize : 0;
    return XDEV_SUCCESS;
}

static xdev_status_t device_get_properties_ext(xc_device_t *dev,
                                               xdev_device_properties_ext_t *ext) {
    xc_device_t *d = xc_device(dev->index);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&d->lock);
    if (!d->ext_ready) {
        st = fill_ext(dev->index, &d->ext);
        d->ext_ready = st == XDEV_SUCCESS;
    }
    if (st == XDEV_SUCCESS) {
        size_t n = ext->size < sizeof d->ext ? ext->size : sizeof d->ext;
        memcpy((char *)ext + sizeof ext->size, (char *)&d->ext + sizeof d->ext.size,
               n - sizeof ext->size);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

static xdev_status_t device_telemetry(xc_device_t *dev, xdev_telemetry_t what, uint64_t *value) {
    if (what == XDEV_TELEMETRY_LOAD) {
        xdev_device_utilization_t u;
        xdev_status_t st = xc_smi_utilization(dev->index, &u);
        if (st == XDEV_SUCCESS) *value = u.gpu_percent;
        return st;
    }
    return xc_smi_telemetry(dev->index, what, value);
}

/* What the plugin's device code was built for (the build's target list,
 * XC_ARCH_LIST: CMake writes it); "" without device code. */
static xdev_status_t device_arch_list(char *buf, size_t len) {
#ifdef XC_ARCH_LIST
    snprintf(buf, len, "%s", XC_ARCH_LIST);
#else
    snprintf(buf, len, "%s", "");
#endif
    return XDEV_SUCCESS;
}

/* NVML / rocm-smi answer by physical index (cuda_nvml.c, hip_smi.c). */
static xdev_status_t device_list_processes(xc_device_t *dev, xdev_gpu_process_t *out, size_t cap,
                                           size_t *count) {
    return xc_smi_list_processes(dev->index, out, cap, count);
}

static xdev_status_t device_utilization(xc_device_t *dev, xdev_device_utilization_t *out) {
    return xc_smi_utilization(dev->index, out);
}

cudaError_t xc_multiprocessors(xc_device_t *dev, int *out) {
    int sms = __atomic_load_n(&dev->sms, __ATOMIC_RELAXED);
    if (sms == 0) {
        cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev->index);
        if (err != cudaSuccess) return err;
        __atomic_store_n(&dev->sms, sms, __ATOMIC_RELAXED);
    }
    *out = sms;
    return cudaSuccess;
}

/* The context is the device's state entry (filled lazily; no CUDA call). */
static xdev_status_t device_open(int index, xdev_backend_device_t **out) {
    if (index < 0 || index >= xc_state.count)
        return xc_error(XDEV_ERROR_INVALID_DEVICE, XC_NAME ":%d: no such device (%d present)",
                        index, xc_state.count);
    *out = &xc_state.devices[index];
    return XDEV_SUCCESS;
}

const xdev_device_vtable_t xc_device_vtable = {
    .size = sizeof(xdev_device_vtable_t),
    .count = device_count,
    .open = device_open,
    .get_properties = device_get_properties,
    .synchronize = device_synchronize,
    .can_access_peer = device_can_access_peer,
    .enable_peer_access = device_enable_peer_access,
    .list_processes = device_list_processes,
    .utilization = device_utilization,
    .get_properties_ext = device_get_properties_ext,
    .telemetry = device_telemetry,
    .arch_list = device_arch_list,
};
