/* SPDX-License-Identifier: Apache-2.0 */
/* backends/hip/hip_smi.c - device.list_processes, device.utilization and
 * device.telemetry (edge or junction temperature, average power, system
 * clock, VRAM used) of the HIP plugin through rocm-smi, AMD's counterpart of NVML (the CUDA build
 * uses cuda_nvml.c). librocm_smi64.so.1 is opened at run time, as NVML is:
 * the plugin loads without it and these two calls then say why they cannot
 * answer. rocm-smi numbers devices its own way; a HIP device is matched to
 * its rocm-smi index by PCI location (hipDeviceGetPCIBusId vs
 * rsmi_dev_pci_id_get). */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocm_smi/rocm_smi.h>

#include "cuda_internal.h"

#define SMI_LIB "librocm_smi64.so.1"

static struct {
    void *lib;
    char why[512]; /* set when rocm-smi cannot be used */
    rsmi_status_t (*init)(uint64_t);
    rsmi_status_t (*status_string)(rsmi_status_t, const char **);
    rsmi_status_t (*num_devices)(uint32_t *);
    rsmi_status_t (*pci_id)(uint32_t, uint64_t *);
    rsmi_status_t (*busy)(uint32_t, uint32_t *);
    rsmi_status_t (*memory_busy)(uint32_t, uint32_t *);
    rsmi_status_t (*processes)(rsmi_process_info_t *, uint32_t *);
    rsmi_status_t (*process_gpus)(uint32_t, uint32_t *, uint32_t *);
} g_smi;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *sym(const char *name) {
    void *p = dlsym(g_smi.lib, name);
    if (p == NULL && g_smi.why[0] == '\0')
        snprintf(g_smi.why, sizeof g_smi.why, SMI_LIB " lacks %s", name);
    return p;
}

static const char *smi_string(rsmi_status_t r) {
    const char *s = NULL;
    if (g_smi.status_string == NULL || g_smi.status_string(r, &s) != RSMI_STATUS_SUCCESS || !s)
        return "unknown rocm-smi status";
    return s;
}

static void load(void) {
    g_smi.lib = dlopen(SMI_LIB, RTLD_NOW | RTLD_LOCAL);
    if (g_smi.lib == NULL) {
        const char *e = dlerror();
        snprintf(g_smi.why, sizeof g_smi.why, "dlopen(" SMI_LIB ") failed: %s",
                 e ? e : "unknown error");
        return;
    }
    *(void **)&g_smi.init = sym("rsmi_init");
    *(void **)&g_smi.status_string = sym("rsmi_status_string");
    *(void **)&g_smi.num_devices = sym("rsmi_num_monitor_devices");
    *(void **)&g_smi.pci_id = sym("rsmi_dev_pci_id_get");
    *(void **)&g_smi.busy = sym("rsmi_dev_busy_percent_get");
    *(void **)&g_smi.memory_busy = sym("rsmi_dev_memory_busy_percent_get");
    *(void **)&g_smi.processes = sym("rsmi_compute_process_info_get");
    *(void **)&g_smi.process_gpus = sym("rsmi_compute_process_gpus_get");
    if (g_smi.why[0] != '\0') return;
    rsmi_status_t r = g_smi.init(0);
    if (r != RSMI_STATUS_SUCCESS)
        snprintf(g_smi.why, sizeof g_smi.why, "rsmi_init failed: %s (%d)", smi_string(r), (int)r);
}

/* rocm-smi's index of HIP device `device`, found by PCI location. */
static xdev_status_t smi_device(int device, uint32_t *out) {
    pthread_once(&g_once, load);
    if (g_smi.why[0] != '\0')
        return xc_error(XDEV_ERROR_NOT_SUPPORTED, "rocm-smi is not available: %s", g_smi.why);
    char bus[64];
    XC_CALL(cudaDeviceGetPCIBusId(bus, sizeof bus, device), XC_STR(cudaDeviceGetPCIBusId) "(%d)",
            device);
    unsigned dom = 0, b = 0, d = 0, f = 0;
    if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &f) != 4)
        return xc_error(XDEV_ERROR_BACKEND, "hip:%d: unreadable PCI bus id '%s'", device, bus);
    uint64_t want = ((uint64_t)dom << 32) | ((uint64_t)(b & 0xff) << 8) |
                    ((uint64_t)(d & 0x1f) << 3) | (uint64_t)(f & 0x7);
    uint32_t n = 0;
    rsmi_status_t r = g_smi.num_devices(&n);
    if (r != RSMI_STATUS_SUCCESS)
        return xc_error(XDEV_ERROR_BACKEND, "rsmi_num_monitor_devices: %s (%d)", smi_string(r),
                        (int)r);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t id = 0;
        if (g_smi.pci_id(i, &id) == RSMI_STATUS_SUCCESS && id == want) {
            *out = i;
            return XDEV_SUCCESS;
        }
    }
    return xc_error(XDEV_ERROR_BACKEND, "rocm-smi has no device at PCI %s (hip:%d)", bus, device);
}

/* Does process `pid` use rocm-smi device `index`? */
static bool uses_device(uint32_t pid, uint32_t index) {
    uint32_t devs[64];
    uint32_t n = 64;
    if (g_smi.process_gpus(pid, devs, &n) != RSMI_STATUS_SUCCESS) return false;
    for (uint32_t i = 0; i < n && i < 64; i++)
        if (devs[i] == index) return true;
    return false;
}

xdev_status_t xc_smi_list_processes(int device, xdev_gpu_process_t *out, size_t cap,
                                    size_t *count) {
    uint32_t index = 0;
    xdev_status_t st = smi_device(device, &index);
    if (st != XDEV_SUCCESS) return st;
    /* rocm-smi lists every process on every device: ask for them all, then
     * keep those on this device (vram_usage is over all of a process's devices). */
    uint32_t n = 0;
    rsmi_status_t r = g_smi.processes(NULL, &n);
    if (r != RSMI_STATUS_SUCCESS)
        return xc_error(XDEV_ERROR_BACKEND, "rsmi_compute_process_info_get: %s (%d)", smi_string(r),
                        (int)r);
    rsmi_process_info_t *procs = calloc((size_t)n + 16, sizeof *procs);
    if (procs == NULL) return xc_error(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for rocm-smi");
    uint32_t got = n + 16;
    r = g_smi.processes(procs, &got);
    if (r != RSMI_STATUS_SUCCESS && r != RSMI_STATUS_INSUFFICIENT_SIZE) {
        free(procs);
        return xc_error(XDEV_ERROR_BACKEND, "rsmi_compute_process_info_get: %s (%d)", smi_string(r),
                        (int)r);
    }
    size_t found = 0;
    for (uint32_t i = 0; i < got && i < n + 16; i++) {
        if (!uses_device(procs[i].process_id, index)) continue;
        if (found < cap) {
            out[found].pid = procs[i].process_id;
            out[found].used_memory = procs[i].vram_usage;
        }
        found++;
    }
    free(procs);
    *count = found;
    return XDEV_SUCCESS;
}

xdev_status_t xc_smi_utilization(int device, xdev_device_utilization_t *out) {
    uint32_t index = 0;
    xdev_status_t st = smi_device(device, &index);
    if (st != XDEV_SUCCESS) return st;
    uint32_t gpu = 0, mem = 0;
    rsmi_status_t r = g_smi.busy(index, &gpu);
    if (r != RSMI_STATUS_SUCCESS)
        return xc_error(XDEV_ERROR_BACKEND, "rsmi_dev_busy_percent_get(%" PRIu32 "): %s (%d)",
                        index, smi_string(r), (int)r);
    r = g_smi.memory_busy(index, &mem);
    if (r != RSMI_STATUS_SUCCESS)
        return xc_error(XDEV_ERROR_BACKEND,
                        "rsmi_dev_memory_busy_percent_get(%" PRIu32 "): %s (%d)", index,
                        smi_string(r), (int)r);
    out->gpu_percent = gpu;
    out->memory_percent = mem;
    return XDEV_SUCCESS;
}

/* The optional readings: a rocm-smi without one answers NOT_SUPPORTED. */
typedef rsmi_status_t (*temp_fn)(uint32_t, uint32_t, rsmi_temperature_metric_t, int64_t *);
typedef rsmi_status_t (*power_fn)(uint32_t, uint32_t, uint64_t *);
typedef rsmi_status_t (*clock_fn)(uint32_t, rsmi_clk_type_t, rsmi_frequencies_t *);
typedef rsmi_status_t (*memory_fn)(uint32_t, rsmi_memory_type_t, uint64_t *);

static xdev_status_t smi_failed(const char *call, uint32_t index, rsmi_status_t r) {
    if (r == RSMI_STATUS_NOT_SUPPORTED)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED, "%s(%" PRIu32 "): the device does not support it",
                        call, index);
    return xc_error(XDEV_ERROR_BACKEND, "%s(%" PRIu32 "): %s (%d)", call, index, smi_string(r),
                    (int)r);
}

xdev_status_t xc_smi_telemetry(int device, xdev_telemetry_t what, uint64_t *value) {
    uint32_t index = 0;
    xdev_status_t st = smi_device(device, &index);
    if (st != XDEV_SUCCESS) return st;
    const char *call = what == XDEV_TELEMETRY_TEMPERATURE  ? "rsmi_dev_temp_metric_get"
                       : what == XDEV_TELEMETRY_POWER_DRAW ? "rsmi_dev_power_ave_get"
                       : what == XDEV_TELEMETRY_CLOCK_RATE ? "rsmi_dev_gpu_clk_freq_get"
                                                           : "rsmi_dev_memory_usage_get";
    void *fn = dlsym(g_smi.lib, call);
    if (fn == NULL) return xc_error(XDEV_ERROR_NOT_SUPPORTED, SMI_LIB " lacks %s", call);
    rsmi_status_t r;
    switch (what) {
    case XDEV_TELEMETRY_TEMPERATURE: {
        int64_t milli = 0; /* edge, else junction (MI300 has no edge sensor) */
        r = ((temp_fn)fn)(index, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &milli);
        if (r != RSMI_STATUS_SUCCESS)
            r = ((temp_fn)fn)(index, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CURRENT, &milli);
        if (r != RSMI_STATUS_SUCCESS) return smi_failed(call, index, r);
        *value = milli > 0 ? (uint64_t)(milli + 500) / 1000 : 0;
        return XDEV_SUCCESS;
    }
    case XDEV_TELEMETRY_POWER_DRAW: {
        uint64_t uw = 0;
        r = ((power_fn)fn)(index, 0, &uw);
        if (r != RSMI_STATUS_SUCCESS) return smi_failed(call, index, r);
        *value = uw / 1000; /* microwatts to milliwatts */
        return XDEV_SUCCESS;
    }
    case XDEV_TELEMETRY_CLOCK_RATE: {
        rsmi_frequencies_t f;
        memset(&f, 0, sizeof f);
        r = ((clock_fn)fn)(index, RSMI_CLK_TYPE_SYS, &f);
        if (r != RSMI_STATUS_SUCCESS) return smi_failed(call, index, r);
        if (f.current >= RSMI_MAX_NUM_FREQUENCIES || f.current >= f.num_supported)
            return xc_error(XDEV_ERROR_BACKEND, "%s(%" PRIu32 "): no current level", call, index);
        *value = f.frequency[f.current] / 1000000u; /* Hz to MHz */
        return XDEV_SUCCESS;
    }
    case XDEV_TELEMETRY_MEMORY_USED:
        r = ((memory_fn)fn)(index, RSMI_MEM_TYPE_VRAM, value);
        return r == RSMI_STATUS_SUCCESS ? XDEV_SUCCESS : smi_failed(call, index, r);
    default:
        return xc_error(XDEV_ERROR_INVALID_VALUE, "telemetry kind %d", (int)what);
    }
}

/* rocm-smi has no MIG: an AMD device is a whole GPU (or a partition HIP
 * numbers as a device of its own). */
bool xc_smi_is_mig(const char *uuid_hex) {
    (void)uuid_hex;
    return false;
}
