/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda/cuda_nvml.c - device.list_processes and device.utilization
 * through NVML, loaded with dlopen("libnvidia-ml.so.1") on first use (the
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

static struct {
    void *lib;
    char why[512]; /* set when NVML cannot be used */
    nvml_return_t (*init)(void);
    const char *(*error_string)(nvml_return_t);
    nvml_return_t (*by_pci)(const char *, nvml_device_t *);
    nvml_return_t (*processes)(nvml_device_t, unsigned *, nvml_process_t *);
    nvml_return_t (*utilization)(nvml_device_t, nvml_utilization_t *);
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
