/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/system.h - what the vendor's management library says about a device:
 * the processes using it, its utilisation and its readings (NVML on CUDA,
 * rocm-smi on HIP; the CPU device's from /proc and /sys), and what the
 * backends were built for.
 *
 * torch.cuda.list_gpu_processes / utilization / memory_usage. The library is
 * loaded on first use; where it (or the backend's support) is missing these
 * return XDEV_ERROR_NOT_SUPPORTED with a message saying what is missing.
 * The CPU backend has no such library: its processes and utilisation are
 * XDEV_ERROR_NOT_SUPPORTED; its readings are xdev_device_telemetry's. */
#ifndef XDEV_SYSTEM_H
#define XDEV_SYSTEM_H

#include <stddef.h>
#include <stdint.h>

#include "xdev/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One process with a context on a device. */
typedef struct xdev_gpu_process {
    uint32_t pid;         /* as the driver sees it (may be another PID namespace's) */
    uint64_t used_memory; /* bytes; UINT64_MAX when the driver does not say */
} xdev_gpu_process_t;

/* Percent of the last sample period (about 1/6 s to 1 s, driver-defined). */
typedef struct xdev_device_utilization {
    unsigned gpu_percent;    /* one or more kernels were running */
    unsigned memory_percent; /* device memory was being read or written */
} xdev_device_utilization_t;

/* Processes using `device`: fills out[0 .. min(cap, *count)) and sets *count
 * to how many there are (cap may be 0 to ask for the count). */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_processes(xdev_device_t device,
                                                         xdev_gpu_process_t *out, size_t cap,
                                                         size_t *count);

/* torch.cuda.list_gpu_processes as text into buf:
 *   "cuda:0\nprocess       4242 uses     1234.000 MB GPU memory\n"
 * or "cuda:0\nno processes are running\n". A buffer too small is
 * XDEV_ERROR_INVALID_VALUE naming the size needed (buf holds a truncated text). */
XDEV_API XDEV_RESULT xdev_status_t xdev_list_gpu_processes(xdev_device_t device, char *buf,
                                                           size_t len);

/* torch.cuda.utilization (gpu_percent) and memory_usage (memory_percent). */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_utilization(xdev_device_t device,
                                                           xdev_device_utilization_t *out);

/* One reading of a device's sensors and counters (torch.cuda.temperature,
 * power_draw, clock_rate, device_memory_used). CUDA reads NVML, HIP
 * rocm-smi where found; the CPU device reports what the host honestly
 * knows (see each kind). A quantity that cannot be read is
 * XDEV_ERROR_NOT_SUPPORTED with the reason - never a made-up number. */
typedef enum xdev_telemetry {
    XDEV_TELEMETRY_TEMPERATURE = 0, /* degrees Celsius (GPU core; CPU: the package sensor in
                                       /sys/class/thermal or hwmon where the host exposes one) */
    XDEV_TELEMETRY_POWER_DRAW = 1,  /* milliwatts (NVML's power usage; CPU: not readable) */
    XDEV_TELEMETRY_CLOCK_RATE = 2,  /* MHz: the SM clock now (CPU: the mean current frequency
                                       of the cores, cpufreq or /proc/cpuinfo) */
    XDEV_TELEMETRY_MEMORY_USED = 3, /* bytes of device memory in use by every process (NVML's
                                       used; CPU: the host's MemTotal - MemAvailable) */
    XDEV_TELEMETRY_LOAD = 4,        /* percent busy over the last sample (GPU: as
                                       xdev_device_utilization; CPU: every core, /proc/stat
                                       between two calls, or 100 ms on the first) */
} xdev_telemetry_t;

/* Number of xdev_telemetry_t kinds. */
#define XDEV_TELEMETRY_COUNT 5

/* The reading `what` of `device` into *value, in the unit above. A kind
 * outside the enum is XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_telemetry(xdev_device_t device,
                                                         xdev_telemetry_t what, uint64_t *value);

/* torch.cuda's names for the same readings. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_temperature(xdev_device_t device, unsigned *celsius);
XDEV_API XDEV_RESULT xdev_status_t xdev_device_power_draw(xdev_device_t device,
                                                          unsigned *milliwatts);
XDEV_API XDEV_RESULT xdev_status_t xdev_device_clock_rate(xdev_device_t device, unsigned *mhz);
XDEV_API XDEV_RESULT xdev_status_t xdev_device_memory_used(xdev_device_t device, uint64_t *bytes);

/* The telemetry kind's name ("temperature", "power_draw", "clock_rate",
 * "memory_used", "load"); NULL outside the enum. */
XDEV_API const char *xdev_telemetry_name(xdev_telemetry_t what);

/* torch.cuda.get_arch_list: the code targets `type`'s backend was built for,
 * space-separated ("sm_80 sm_90 compute_90"; the CPU: its machine, "x86_64").
 * torch.cuda.get_gencode_flags: the nvcc flags that build them ("-gencode
 * compute=compute_80,code=sm_80 ..."; "" where the backend's targets are not
 * CUDA's). A buffer too small is XDEV_ERROR_INVALID_VALUE naming the size
 * needed. */
XDEV_API XDEV_RESULT xdev_status_t xdev_get_arch_list(xdev_device_type_t type, char *buf,
                                                      size_t len);
XDEV_API XDEV_RESULT xdev_status_t xdev_get_gencode_flags(xdev_device_type_t type, char *buf,
                                                          size_t len);

/* torch.cuda.is_bf16_supported / is_tf32_supported for one device (from
 * xdev_get_device_properties_ext). */
XDEV_API XDEV_RESULT xdev_status_t xdev_is_bf16_supported(xdev_device_t device, bool *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_is_tf32_supported(xdev_device_t device, bool *out);

#ifdef __cplusplus
}
#endif
#endif
