/* SPDX-License-Identifier: Apache-2.0 */
/* system.c - processes on a device and its utilisation, through the
 * backend's optional device.list_processes / device.utilization slots (NVML
 * on CUDA); torch.cuda.list_gpu_processes' text is built here. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "xdev/system.h"

static xdev_status_t not_supported(const xdev_backend_t *be, const char *what) {
    return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                     "the %s backend cannot report %s (it has no device management library)",
                     be->name, what);
}

/* The device's process list; a backend without the slot (the CPU) says
 * what it cannot do in words users search for. */
static xdev_status_t processes(xdev_device_record_t *rec, xdev_gpu_process_t *out, size_t cap,
                               size_t *count) {
    if (!XDEV_HAS(rec->be, device, list_processes))
        return not_supported(rec->be, "the processes using a device");
    return xdev_be_device_list_processes(rec, out, cap, count);
}

xdev_status_t xdev_device_processes(xdev_device_t device, xdev_gpu_process_t *out, size_t cap,
                                    size_t *count) {
    XDEV_REQUIRE_ARG(count);
    if (cap > 0) XDEV_REQUIRE_ARG(out);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(processes(rec, out, cap, count));
    return XDEV_SUCCESS;
}

/* Append to buf[*used..len) like snprintf; *used counts what was needed. */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t len, size_t *used, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*used < len ? buf + *used : NULL, *used < len ? len - *used : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *used += (size_t)n;
}

xdev_status_t xdev_list_gpu_processes(xdev_device_t device, char *buf, size_t len) {
    XDEV_REQUIRE_ARG(buf);
    if (len == 0) return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "len is 0");
    buf[0] = '\0';
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    size_t total = 0;
    XDEV_CHECK(processes(rec, NULL, 0, &total));
    xdev_gpu_process_t *procs = NULL;
    size_t n = 0;
    /* The list may grow between the two calls: ask again with room to spare. */
    for (int attempt = 0; attempt < 4; attempt++) {
        free(procs);
        size_t cap = total + 8;
        procs = calloc(cap, sizeof *procs);
        if (procs == NULL)
            return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a process list");
        xdev_status_t st = processes(rec, procs, cap, &total);
        if (st != XDEV_SUCCESS) {
            free(procs);
            XDEV_CHECK(st);
        }
        n = total < cap ? total : cap;
        if (total <= cap) break;
    }
    size_t used = 0;
    append(buf, len, &used, XDEV_REC_FMT "\n", XDEV_REC_ARGS(rec));
    if (n == 0) append(buf, len, &used, "no processes are running\n");
    for (size_t i = 0; i < n; i++) {
        if (procs[i].used_memory == UINT64_MAX)
            append(buf, len, &used, "process %10u uses an unknown amount of GPU memory\n",
                   (unsigned)procs[i].pid);
        else
            append(buf, len, &used, "process %10u uses %12.3f MB GPU memory\n",
                   (unsigned)procs[i].pid, (double)procs[i].used_memory / (1024.0 * 1024.0));
    }
    free(procs);
    if (used >= len)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the buffer of %zu bytes is too small: the list needs %zu", len,
                             used + 1);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_utilization(xdev_device_t device, xdev_device_utilization_t *out) {
    XDEV_REQUIRE_ARG(out);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    if (!XDEV_HAS(rec->be, device, utilization)) XDEV_CHECK(not_supported(rec->be, "utilisation"));
    XDEV_CHECK(xdev_be_device_utilization(rec, out));
    return XDEV_SUCCESS;
}
