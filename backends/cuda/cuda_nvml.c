/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda/cuda_nvml.c - device.list_processes, device.utilization,
 * device.telemetry (temperature, power, SM clock, memory used: the NVML
 * calls torch.cuda's readings make) and the MIG test of device.get_
 * properties_ext, through NVML, loaded with dlopen("libnvidia-ml.so.1") on first use (the
 * driver installs it; the plugin does not link it). A CUDA device maps to
 * its NVML device by PCI bus id, so CUDA_VISIBLE_DEVICES renumbering holds.
 * Without NVML both slots return XDEV_ERROR_NOT_SUPPORTED saying why. The
 * few NVML types used are declared here (stable ABI; the toolkit has no
 * nvml.h). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"

typedef int nvml_return_t;
typedef struct nvml_device *nvml_device_t;
#define NVML_OK 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7

/* nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it. */
typedef struct {
    unsigned pid;
    unsigned long long used_gpu_memory; /* (unsigned long long)-1: not available */
    unsigned gpu_instance_id;
    unsigned compute_instance_id;
} nvml_process_t;

typedef struct {
    unsigned gpu, memory;
} nvml_utilization_t;

typedef struct {
    unsigned long long total, free, used;
} nvml_memory_t;

#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1

static struct {
    void *lib;
    char why[512]; /* set when NVML cannot be used */
    nvml_return_t (*init)(void);
    const char *(*error_string)(nvml_return_t);
    nvml_return_t (*by_pci)(const char *, nvml_device_t *);
    nvml_return_t (*processes)(nvml_device_t, unsigned *, nvml_process_t *);
    nvml_return_t (*utilization)(nvml_device_t, nvml_utilization_t *);
    /* optional: a driver without one answers that reading NOT_SUPPORTED */
    nvml_return_t (*temperature)(nvml_device_t, int, unsigned *);
    nvml_return_t (*power)(nvml_device_t, unsigned *);
    nvml_return_t (*clock)(nvml_device_t, int, unsigned *);
    nvml_return_t (*memory)(nvml_device_t, nvml_memory_t *);
    nvml_return_t (*by_uuid)(const char *, nvml_device_t *);
} g_nvml;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *sym(const char *name) {
    void *p = dlsym(g_nvml.lib, name);
    if (p == NULL && g_nvml.why[0] == '\0')
        snprintf(g_nvml.why, sizeof g_nvml.why, "libnvidia-ml.so.1 lacks %s", name);
    return p;
}

static void load(void) {
    g_nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (g_nvml.lib == NULL) {
        const char *e = dlerror();
        snprintf(g_nvml.why, sizeof g_nvml.why, "dlopen(libnvidia-ml.so.1) failed: %s",
                 e ? e : "unknown error");
        return;
    }
    *(void **)&g_nvml.init = sym("nvmlInit_v2");
    *(void **)&g_nvml.error_string = sym("nvmlErrorString");
    *(void **)&g_nvml.by_pci = sym("nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&g_nvml.processes = sym("nvmlDeviceGetComputeRunningProcesses_v3");
    *(void **)&g_nvml.utilization = sym("nvmlDeviceGetUtilizationRates");
    *(void **)&g_nvml.temperature = dlsym(g_nvml.lib, "nvmlDeviceGetTemperature");
    *(void **)&g_nvml.power = dlsym(g_nvml.lib, "nvmlDeviceGetPowerUsage");
    *(void **)&g_nvml.clock = dlsym(g_nvml.lib, "nvmlDeviceGetClockInfo");
    *(void **)&g_nvml.memory = dlsym(g_nvml.lib, "nvmlDeviceGetMemoryInfo");
    *(void **)&g_nvml.by_uuid = dlsym(g_nvml.lib, "nvmlDeviceGetHandleByUUID");
    if (g_nvml.why[0] != '\0') return;
    nvml_return_t r = g_nvml.init();
    if (r != NVML_OK)
        snprintf(g_nvml.why, sizeof g_nvml.why, "nvmlInit_v2 failed: %s (%d)",
                 g_nvml.error_string(r), r);
}

/* NVML's handle for CUDA device `device`, or the error status. */
static xdev_status_t nvml_device(int device, nvml_device_t *out) {
    pthread_once(&g_once, load);
    if (g_nvml.why[0] != '\0')
        return xc_error(XDEV_ERROR_NOT_SUPPORTED, "NVML is not available: %s", g_nvml.why);
    char bus[64];
    XC_CALL(cudaDeviceGetPCIBusId(bus, sizeof bus, device), XC_STR(cudaDeviceGetPCIBusId) "(%d)",
            device);
    nvml_return_t r = g_nvml.by_pci(bus, out);
    if (r != NVML_OK)
        return xc_error(XDEV_ERROR_BACKEND, "nvmlDeviceGetHandleByPciBusId_v2(%s): %s (%d)", bus,
                        g_nvml.error_string(r), r);
    return XDEV_SUCCESS;
}

xdev_status_t xc_smi_list_processes(int device, xdev_gpu_process_t *out, size_t cap,
                                    size_t *count) {
    nvml_device_t h;
    xdev_status_t st = nvml_device(device, &h);
    if (st != XDEV_SUCCESS) return st;
    /* Ask with room for cap (+ slack); NVML says how many there are when short. */
    unsigned n = (unsigned)(cap < 1024 ? cap : 1024) + 16;
    for (int attempt = 0; attempt < 4; attempt++) {
        nvml_process_t *procs = calloc(n, sizeof *procs);
        if (procs == NULL) return xc_error(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for NVML");
        unsigned got = n;
        nvml_return_t r = g_nvml.processes(h, &got, procs);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
            free(procs);
            n = got + 16;
            continue;
        }
        if (r != NVML_OK) {
            free(procs);
            return xc_error(XDEV_ERROR_BACKEND, "nvmlDeviceGetComputeRunningProcesses_v3: %s (%d)",
                            g_nvml.error_string(r), r);
        }
        for (unsigned i = 0; i < got && i < cap; i++) {
            out[i].pid = procs[i].pid;
            out[i].used_memory = procs[i].used_gpu_memory == (unsigned long long)-1
                                     ? UINT64_MAX
                                     : (uint64_t)procs[i].used_gpu_memory;
        }
        *count = got;
        free(procs);
        return XDEV_SUCCESS;
    }
    return xc_error(XDEV_ERROR_BACKEND,
                    "nvmlDeviceGetComputeRunningProcesses_v3: the process list kept growing");
}

xdev_status_t xc_smi_utilization(int device, xdev_device_utilization_t *out) {
    nvml_device_t h;
    xdev_status_t st = nvml_device(device, &h);
    if (st != XDEV_SUCCESS) return st;
    nvml_utilization_t u;
    nvml_return_t r = g_nvml.utilization(h, &u);
    if (r != NVML_OK)
        return xc_error(XDEV_ERROR_BACKEND, "nvmlDeviceGetUtilizationRates: %s (%d)",
                        g_nvml.error_string(r), r);
    out->gpu_percent = u.gpu;
    out->memory_percent = u.memory;
    return XDEV_SUCCESS;
}

xdev_status_t xc_smi_telemetry(int device, xdev_telemetry_t what, uint64_t *value) {
    nvml_device_t h;
    xdev_status_t st = nvml_device(device, &h);
    if (st != XDEV_SUCCESS) return st;
    nvml_return_t r = NVML_OK;
    const char *call = NULL;
    unsigned u = 0;
    switch (what) {
    case XDEV_TELEMETRY_TEMPERATURE:
        call = "nvmlDeviceGetTemperature";
        if (g_nvml.temperature != NULL) r = g_nvml.temperature(h, NVML_TEMPERATURE_GPU, &u);
        *value = u;
        break;
    case XDEV_TELEMETRY_POWER_DRAW:
        call = "nvmlDeviceGetPowerUsage";
        if (g_nvml.power != NULL) r = g_nvml.power(h, &u);
        *value = u;
        break;
    case XDEV_TELEMETRY_CLOCK_RATE:
        call = "nvmlDeviceGetClockInfo";
        if (g_nvml.clock != NULL) r = g_nvml.clock(h, NVML_CLOCK_SM, &u);
        *value = u;
        break;
    case XDEV_TELEMETRY_MEMORY_USED: {
        call = "nvmlDeviceGetMemoryInfo";
        nvml_memory_t m = {0, 0, 0};
        if (g_nvml.memory != NULL) r = g_nvml.memory(h, &m);
        *value = m.used;
        break;
    }
    default:
        return xc_error(XDEV_ERROR_INVALID_VALUE, "telemetry kind %d", (int)what);
    }
    void *fn = what == XDEV_TELEMETRY_TEMPERATURE  ? (void *)g_nvml.temperature
               : what == XDEV_TELEMETRY_POWER_DRAW ? (void *)g_nvml.power
               : what == XDEV_TELEMETRY_CLOCK_RATE ? (void *)g_nvml.clock
                                                   : (void *)g_nvml.memory;
    if (fn == NULL) return xc_error(XDEV_ERROR_NOT_SUPPORTED, "libnvidia-ml.so.1 lacks %s", call);
    if (r == 3 /* NVML_ERROR_NOT_SUPPORTED */)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED, "%s: the device does not support it (%s)", call,
                        g_nvml.error_string(r));
    if (r != NVML_OK)
        return xc_error(XDEV_ERROR_BACKEND, "%s: %s (%d)", call, g_nvml.error_string(r), r);
    return XDEV_SUCCESS;
}

/* NVML knows a MIG instance by "MIG-<uuid>" and a whole GPU by "GPU-<uuid>"
 * (the same 16 bytes CUDA reports). */
bool xc_smi_is_mig(const char *uuid_hex) {
    pthread_once(&g_once, load);
    if (g_nvml.why[0] != '\0' || g_nvml.by_uuid == NULL) return false;
    char name[96];
    nvml_device_t h;
    snprintf(name, sizeof name, "GPU-%s", uuid_hex);
    if (g_nvml.by_uuid(name, &h) == NVML_OK) return false;
    snprintf(name, sizeof name, "MIG-%s", uuid_hex);
    return g_nvml.by_uuid(name, &h) == NVML_OK;
}
