/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_backend.c - the CPU backend's ABI table, init/shutdown and configuration.
 *
 * init reads XDEV_CPU_DEVICES (device count, default 1), XDEV_CPU_MEMORY
 * (per-device capacity, default the host's physical RAM) and
 * XDEV_CPU_THREADS (cpu_kernel.c) strictly: a malformed value makes the
 * backend unusable with a message naming it. The other slots live in
 * cpu_device.c, cpu_stream.c, cpu_event.c, cpu_memory.c, cpu_kernel.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_math.h"

xdev_cpu_state_t xdev_cpu_state;

xdev_status_t xdev_cpu_error(xdev_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    xdev_status_t st = xdev_support_fail_v(xdev_cpu_state.host, status, fmt, ap);
    va_end(ap);
    return st;
}

xdev_status_t xdev_cpu_parse_devices(const char *value, int *out) {
    if (value == NULL) {
        *out = 1;
        return XDEV_SUCCESS;
    }
    int n = 0;
    bool ok = value[0] != '\0';
    for (const char *p = value; ok && *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            ok = false;
        } else {
            n = n * 10 + (*p - '0');
            if (n > XDEV_CPU_MAX_DEVICES) ok = false;
        }
    }
    if (!ok || n < 1)
        return xdev_cpu_error(XDEV_ERROR_ENV,
                              "XDEV_CPU_DEVICES='%s' is not a device count (expected an integer "
                              "1..%d)",
                              value, XDEV_CPU_MAX_DEVICES);
    *out = n;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_cpu_parse_memory(const char *value, size_t fallback, size_t *out) {
    if (value == NULL) {
        *out = fallback;
        return XDEV_SUCCESS;
    }
    const char *p = value;
    size_t n = 0;
    bool overflow = false;
    for (; *p >= '0' && *p <= '9'; p++) {
        size_t digit = (size_t)(*p - '0');
        if (n > (SIZE_MAX - digit) / 10)
            overflow = true;
        else
            n = n * 10 + digit;
    }
    unsigned shift = 0;
    bool ok = p != value;
    if (ok && *p != '\0') {
        switch (*p) {
        case 'k':
        case 'K':
            shift = 10;
            break;
        case 'm':
        case 'M':
            shift = 20;
            break;
        case 'g':
        case 'G':
            shift = 30;
            break;
        case 't':
        case 'T':
            shift = 40;
            break;
        default:
            ok = false;
        }
        if (ok && p[1] != '\0') ok = false;
    }
    if (!ok)
        return xdev_cpu_error(XDEV_ERROR_ENV,
                              "XDEV_CPU_MEMORY='%s' is not a byte count (expected a positive "
                              "integer with an optional K, M, G or T suffix, e.g. 64M)",
                              value);
    if (overflow || n > (SIZE_MAX >> shift))
        return xdev_cpu_error(XDEV_ERROR_ENV, "XDEV_CPU_MEMORY='%s' is too large (over %zu bytes)",
                              value, (size_t)SIZE_MAX);
    if (n == 0)
        return xdev_cpu_error(
            XDEV_ERROR_ENV, "XDEV_CPU_MEMORY='%s' is zero (expected a positive byte count)", value);
    *out = n << shift;
    return XDEV_SUCCESS;
}

/* Physical RAM in bytes, or 0 when sysconf cannot tell. */
static size_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0;
    if ((unsigned long)pages > SIZE_MAX / (unsigned long)page) return SIZE_MAX;
    return (size_t)pages * (size_t)page;
}

static const char *plain_getenv(const char *name) {
    return getenv(name);
}

/* XDEV_CPU_SCAN_ISA: auto (default; cpu_prim_scan.c picks), baseline (the
 * scalar walk), avx2 (vector lanes wherever the CPU has AVX2) or
 * avx2-cached (the lanes, their outputs never streamed past the cache):
 * diagnostics, so the tests cover every path of cpu_prim_scan.c on any
 * machine and a machine's choice can be measured; all give the same bits. */
static xdev_status_t parse_scan_isa(const char *v, int *isa) {
    static const char *const names[] = {"auto", "baseline", "avx2", "avx2-cached"};
    *isa = 0;
    if (v == NULL || v[0] == '\0') return XDEV_SUCCESS;
    for (int i = 0; i < 4; i++)
        if (strcmp(v, names[i]) == 0) {
            *isa = i;
            return XDEV_SUCCESS;
        }
    return xdev_cpu_error(XDEV_ERROR_ENV,
                          "XDEV_CPU_SCAN_ISA='%s' is not a code path (expected auto, baseline, "
                          "avx2 or avx2-cached; unset or empty means auto)",
                          v);
}

static xdev_status_t cpu_init(const xdev_host_services_t *host) {
    if (xdev_cpu_state.initialized) return XDEV_SUCCESS;
    if (host == NULL) return XDEV_ERROR_INVALID_VALUE;
    xdev_cpu_state.host = host;
    const char *(*get_env)(const char *) = XDEV_BACKEND_SLOT(host, get_env);
    if (get_env == NULL) get_env = plain_getenv;

    int count = 0;
    xdev_status_t st = xdev_cpu_parse_devices(get_env("XDEV_CPU_DEVICES"), &count);
    if (st != XDEV_SUCCESS) return st;
    const char *mem = get_env("XDEV_CPU_MEMORY");
    size_t ram = mem == NULL ? physical_memory() : 0;
    if (mem == NULL && ram == 0)
        return xdev_cpu_error(XDEV_ERROR_BACKEND,
                              "cpu: cannot determine the host's physical memory "
                              "(sysconf(_SC_PHYS_PAGES) failed); set XDEV_CPU_MEMORY");
    size_t capacity;
    st = xdev_cpu_parse_memory(mem, ram, &capacity);
    if (st != XDEV_SUCCESS) return st;
    st = xdev_cpu_kernel_config(get_env, count, xdev_cpu_online_cores());
    if (st != XDEV_SUCCESS) return st;
    st = parse_scan_isa(get_env("XDEV_CPU_SCAN_ISA"), &xdev_cpu_state.scan_isa);
    if (st != XDEV_SUCCESS) return st;

    xdev_cpu_device_t *devices = calloc((size_t)count, sizeof *devices);
    if (devices == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu: cannot allocate %d devices: out of host memory", count);
    for (int i = 0; i < count; i++) {
        devices[i].index = i;
        atomic_init(&devices[i].used, 0);
        atomic_init(&devices[i].default_stream, NULL);
        pthread_mutex_init(&devices[i].mu, NULL);
    }
    xdev_cpu_read_model_name(xdev_cpu_state.name, sizeof xdev_cpu_state.name);
    xdev_cpu_state.cores = xdev_cpu_online_cores();
    xdev_cpu_state.count = count;
    xdev_cpu_state.capacity = capacity;
    xdev_cpu_state.devices = devices;
    xdev_cpu_state.initialized = true;
    return XDEV_SUCCESS;
}

/* at_exit: called by the core at process exit (or library unload): every stream's
 * worker finishes the op it runs, drops the rest and is joined, so no worker
 * is inside OpenBLAS or FFTW when their own destructors run. Kernel workers
 * stop claiming blocks first (a launch being run ends early) and are joined
 * last. The device table stays: a worker that did not stop in time may
 * still read it, and the process is ending anyway. */
static void cpu_at_exit(void) {
    if (!xdev_cpu_state.initialized) return;
    xdev_cpu_pools_stop();
    xdev_cpu_streams_shutdown();
    xdev_cpu_pools_join();
    xdev_cpu_fault_handlers_remove(); /* after dlclose ours would be unmapped */
}

static const xdev_backend_api_t cpu_api = {
    .size = sizeof(xdev_backend_api_t),
    .abi_major = XDEV_BACKEND_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .name = "cpu",
    .type = XDEV_DEVICE_CPU,
    .init = cpu_init,
    .at_exit = cpu_at_exit,
    .device = &xdev_cpu_device_vtable,
    .stream = &xdev_cpu_stream_vtable,
    .event = &xdev_cpu_event_vtable,
    .memory = &xdev_cpu_memory_vtable,
    .blas = &xdev_cpu_blas_vtable,
    .fft = &xdev_cpu_fft_vtable,
    .rng = &xdev_cpu_rng_vtable,
    .ops = &xdev_cpu_ops_vtable,
    .kernel = &xdev_cpu_kernel_vtable,
    .graph = &xdev_cpu_graph_vtable,
    .prim = &xdev_cpu_prim_vtable,
};

static const xdev_backend_api_t *cpu_entry(void) {
    return &cpu_api;
}

/* The CPU backend registers itself when libxdev loads (core/wiring.c, the
 * list of what libxdev starts, calls this; the declaration is written there
 * too, as the backend includes no core header), through the same public
 * call an application's own backend would use. Nothing can fail here but a
 * second registration of "cpu", which cannot happen at load time, and there
 * is nobody to report to yet: a missing registration shows later as "no
 * backend is registered for cpu". */
void xdev_cpu_backend_wire(void);
void xdev_cpu_backend_wire(void) {
    (void)xdev_backend_register(&(xdev_backend_factory_t){
        .size = sizeof(xdev_backend_factory_t),
        .name = "cpu",
        .type = XDEV_DEVICE_CPU,
        .entry = cpu_entry,
        .flags = XDEV_BACKEND_DEFAULT | XDEV_BACKEND_HOST_MEMORY,
    });
}
