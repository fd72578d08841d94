/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/system.h - what the vendor's management library says about a device:
 * the processes using it and its utilisation (NVML on CUDA).
 *
 * torch.cuda.list_gpu_processes / utilization / memory_usage. The library is
 * loaded on first use; where it (or the backend's support) is missing these
 * return XDEV_ERROR_NOT_SUPPORTED with a message saying what is missing.
 * The CPU backend has no such library: XDEV_ERROR_NOT_SUPPORTED. */
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

#ifdef __cplusplus
}
#endif
#endif
