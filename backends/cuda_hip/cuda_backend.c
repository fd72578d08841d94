/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_backend.c - the CUDA backend plugin libxdev-cuda.so
 * (and, built with XC_VENDOR_HIP, libxdev-hip.so): its entry point and ABI
 * table, init/shutdown, error reporting and the device guard. The vtables
 * live beside it in cuda_device.c, cuda_stream.c, cuda_event.c,
 * cuda_memory.c (+ cuda_staging.c, cuda_hostcopy.c), cuda_trace.c,
 * cuda_ipc.c, cuda_blas.c (cuBLAS) and cuda_fft.c (+ cuda_fft_scale.cu;
 * cuFFT), cuda_nccl.c (NCCL), cuda_kernel.c (modules and launches),
 * cuda_graph.c (stream capture and replay), device code in cuda_rng.cu,
 * cuda_ops.cu and cuda_prim.cu (parallel primitives over CUB, rocPRIM on HIP),
 * cuda_vmm.c (virtual memory); each plugin's own files in its folder: cuda_nvml.c
 * (backends/cuda), hip_smi.c (backends/hip).
 *
 * The CUDA runtime is linked statically, so the plugin needs only the driver
 * (libcuda.so.1) at run time. Without a driver or a GPU, init fails with the
 * runtime's reason (e.g. "cudaGetDeviceCount: cudaErrorInsufficientDriver")
 * and what to do (init_hint: no driver, an old one, no GPU), which
 * XDEV_BACKEND=cuda reports and auto skips. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

#if !defined(XC_VENDOR_HIP)
#include <cuda.h>
#endif

xc_state_t xc_state;
static bool g_initialized;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;

xdev_status_t xc_error(xdev_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    xdev_status_t st = xdev_support_fail_v(xc_state.host, status, fmt, ap);
    va_end(ap);
    return st;
}

/* The one formatting of a CUDA failure: the core writes "<what>: <name>:
 * <string>" straight into the thread's message (host set_vendor_error). */
/* The errors a faulting kernel leaves (sticky: the context is lost), which
 * xdev reports as XDEV_ERROR_LAUNCH_FAILURE wherever they surface. */
static bool xc_is_kernel_fault(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
#if !defined(XC_VENDOR_HIP)
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
#endif
        return true;
    default:
        return false;
    }
}

xdev_status_t xc_fail(cudaError_t err, const char *what, ...) {
    /* A non-sticky error stays as the thread's "last error" and would show
     * up in unrelated cudaGetLastError checks (kernel launches): clear it.
     * A sticky one cannot be cleared and keeps failing later calls. */
    (void)cudaGetLastError();
    xdev_status_t status =
        err == cudaErrorMemoryAllocation ? XDEV_ERROR_OUT_OF_MEMORY : XDEV_ERROR_BACKEND;
    if (xc_is_kernel_fault(err)) status = XDEV_ERROR_LAUNCH_FAILURE;
    if (xc_capture_error(err)) status = XDEV_ERROR_CAPTURE; /* an op met an invalid capture */
    va_list ap;
    va_start(ap, what);
    xdev_status_t st = xdev_support_vendor_fail_v(xc_state.host, status, cudaGetErrorName(err),
                                                  cudaGetErrorString(err), what, ap);
    va_end(ap);
    return st;
}

#if !defined(XC_VENDOR_HIP)
/* The guard's fast path. When the calling thread's current context is
 * `device`'s primary context, cudaGetDevice would answer `device`, so
 * nothing is switched. The driver says which context is current in one
 * cuCtxGetCurrent (a thread-local read), where cudaGetDevice cost 36 ns on
 * an H200's host: a tenth of an FFT exec's overhead over cufftExec. Each
 * device's primary context is retained once, when the guard finds it active
 * (a retain never creates one), and never released, so its handle cannot be
 * reused for another device's context. */
static _Atomic(CUcontext) g_primary_ctx[XC_MAX_DEVICES]; /* set after guard_lookup ran */
static _Atomic bool g_primary_refused[XC_MAX_DEVICES];   /* its retain failed: not tried again */

/* The driver calls note_primary makes, looked up once (xc_driver_lookup);
 * `complete` only when the driver has all of them. */
static struct {
    pthread_once_t once;
    bool complete;
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxGetState)(CUdevice, unsigned *, int *);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
} g_guard_drv = {.once = PTHREAD_ONCE_INIT};

static void guard_lookup(void) {
    static const xc_driver_sym_t syms[] = {
#define SYM(name) {#name, offsetof(__typeof__(g_guard_drv), name)}
        SYM(cuDeviceGet),
        SYM(cuDevicePrimaryCtxGetState),
        SYM(cuDevicePrimaryCtxRetain),
        SYM(cuDevicePrimaryCtxRelease),
        SYM(cuCtxGetCurrent),
#undef SYM
    };
    g_guard_drv.complete =
        xc_driver_lookup(syms, sizeof syms / sizeof syms[0], &g_guard_drv) == NULL;
}

/* A primary context noted (acquire) means this thread sees guard_lookup's
 * table: the noting thread filled it before its compare-and-swap. */
static bool primary_current(int device) {
    if ((unsigned)device >= XC_MAX_DEVICES) return false;
    CUcontext want = atomic_load_explicit(&g_primary_ctx[device], memory_order_acquire), cur = NULL;
    return want != NULL && g_guard_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == want;
}

/* Retain `device`'s primary context for primary_current, once it is active.
 * A driver without the calls, or a retain that fails, leaves the fast path
 * off for the device (the guard still works, as before). */
static void note_primary(int device) {
    if ((unsigned)device >= XC_MAX_DEVICES ||
        atomic_load_explicit(&g_primary_ctx[device], memory_order_acquire) != NULL ||
        atomic_load_explicit(&g_primary_refused[device], memory_order_relaxed))
        return;
    pthread_once(&g_guard_drv.once, guard_lookup);
    CUdevice dev;
    CUcontext ctx = NULL, none = NULL;
    unsigned flags = 0;
    int active = 0;
    if (!g_guard_drv.complete || g_guard_drv.cuDeviceGet(&dev, device) != CUDA_SUCCESS) {
        atomic_store_explicit(&g_primary_refused[device], true, memory_order_relaxed);
        return;
    }
    if (g_guard_drv.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return; /* not made yet (a user's own context may be current): not made here */
    if (g_guard_drv.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) {
        atomic_store_explicit(&g_primary_refused[device], true, memory_order_relaxed);
        return;
    }
    if (!atomic_compare_exchange_strong(&g_primary_ctx[device], &none, ctx))
        (void)g_guard_drv.cuDevicePrimaryCtxRelease(dev); /* another thread retained it first */
}
#endif

xdev_status_t xc_guard_begin(xc_guard_t *guard, int device) {
    guard->switched = false;
#if !defined(XC_VENDOR_HIP)
    if (primary_current(device)) {
        guard->previous = device;
        return XDEV_SUCCESS;
    }
#endif
    XC_CALL(cudaGetDevice(&guard->previous), XC_STR(cudaGetDevice));
    if (guard->previous != device) {
        XC_CALL(cudaSetDevice(device), XC_STR(cudaSetDevice) "(%d)", device);
        guard->switched = true;
    }
#if !defined(XC_VENDOR_HIP)
    note_primary(device);
#endif
    return XDEV_SUCCESS;
}

void xc_guard_end(const xc_guard_t *guard) {
    if (guard->switched) (void)cudaSetDevice(guard->previous);
}

#if !defined(XC_VENDOR_HIP)
void *xc_driver_entry(const char *name, unsigned version) {
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t err = cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q);
    if (err != cudaSuccess || q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return fn;
}

const char *xc_driver_lookup(const xc_driver_sym_t *syms, size_t n, void *table) {
    for (size_t i = 0; i < n; i++) {
        void *fn = xc_driver_entry(syms[i].name, 12000);
        if (fn == NULL) return syms[i].name;
        memcpy((char *)table + syms[i].offset, &fn, sizeof fn);
    }
    return NULL;
}
#endif

/* What to do when the runtime cannot count the devices: the two common
 * causes and the way out, after the error's name, in place of the
 * runtime's own description ("" for another error; buf: room for it). */
static const char *init_hint(cudaError_t err, char *buf, size_t len) {
#if !defined(XC_VENDOR_HIP)
    /* The runtime says "insufficient driver" for no driver at all too (it
     * could not load libcuda.so.1): tell the two apart by loading it. */
    void *driver = err == cudaErrorInsufficientDriver ? dlopen("libcuda.so.1", RTLD_LAZY) : NULL;
    if (err == cudaErrorInsufficientDriver && driver == NULL) {
        const char *why = dlerror();
        snprintf(buf, len,
                 " (no NVIDIA driver was found: libcuda.so.1 does not load%s%s; install the "
                 "NVIDIA driver, one that supports " XC_RUNTIME_NAME
                 " %d.%d or later (nvidia-smi then shows the GPU), or choose another backend, "
                 "e.g. XDEV_BACKEND=cpu)",
                 why ? ": " : "", why ? why : "", (int)XC_RUNTIME_MAJOR, (int)XC_RUNTIME_MINOR);
        return buf;
    }
    int version = 0; /* the CUDA version the installed driver supports, 12040 for 12.4 */
    if (driver != NULL) {
        (void)cudaDriverGetVersion(&version);
        dlclose(driver);
    }
    if (err == cudaErrorInsufficientDriver && version > 0) {
        snprintf(buf, len,
                 " (the installed " XC_DRIVER_NAME " driver supports " XC_RUNTIME_NAME
                 " %d.%d, older than " XC_RUNTIME_NAME
                 " %d.%d, which this plugin was built with: install a newer driver, or choose "
                 "another backend, e.g. XDEV_BACKEND=cpu)",
                 version / 1000, (version % 1000) / 10, (int)XC_RUNTIME_MAJOR,
                 (int)XC_RUNTIME_MINOR);
        return buf;
    }
#endif
    if (err == cudaErrorInsufficientDriver)
        snprintf(buf, len,
                 " (the installed " XC_DRIVER_NAME " driver is older than the runtime this "
                 "plugin was built with, " XC_RUNTIME_NAME " %d.%d: install a newer driver, "
                 "or choose another backend, e.g. XDEV_BACKEND=cpu)",
                 (int)XC_RUNTIME_MAJOR, (int)XC_RUNTIME_MINOR);
    else if (err == cudaErrorNoDevice)
        snprintf(buf, len,
                 " (the driver sees no GPU for this process: check " XC_VISIBLE_VAR
                 " and the driver's own tool, " XC_SMI_TOOL "; XDEV_BACKEND=cpu runs on the CPU)");
    else
        buf[0] = '\0';
    return buf;
}

static xdev_status_t xc_init(const xdev_host_services_t *host) {
    if (host == NULL) return XDEV_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_init_lock);
    xdev_status_t st = XDEV_SUCCESS;
    if (!g_initialized) {
        xc_state.host = host;
        int n = 0;
        st = xc_staging_check_env();
        if (st == XDEV_SUCCESS) st = xc_hostcopy_check_env();
        cudaError_t err = st == XDEV_SUCCESS ? cudaGetDeviceCount(&n) : cudaSuccess;
        if (st != XDEV_SUCCESS) {
            /* reported as it is: a malformed variable, not a driver problem */
        } else if (err != cudaSuccess) {
            char hint[640];
            if (init_hint(err, hint, sizeof hint)[0] != '\0') { /* the hint says it better */
                (void)cudaGetLastError();
                st = xc_error(XDEV_ERROR_BACKEND, XC_STR(cudaGetDeviceCount) ": %s%s",
                              cudaGetErrorName(err), hint);
            } else {
                st = xc_fail(err, XC_STR(cudaGetDeviceCount));
            }
        } else {
            if (n > XC_MAX_DEVICES) n = XC_MAX_DEVICES;
            for (int i = 0; i < n; i++) {
                xc_state.devices[i].index = i;
                pthread_mutex_init(&xc_state.devices[i].lock, NULL);
            }
            xc_state.count = n;
            g_initialized = true;
        }
    }
    pthread_mutex_unlock(&g_init_lock);
    return st;
}

/* at_exit (process exit, after the CUDA runtime's own atexit teardown): stop
 * the host-copy worker threads the plugin owns, so none is inside a copy
 * while the process unwinds. No CUDA, cuBLAS, cuFFT or NVML call here: the
 * driver state may already be gone, and the process releases it anyway. */
static void xc_at_exit(void) {
    pthread_mutex_lock(&g_init_lock);
    if (g_initialized) xc_hostcopy_shutdown();
    pthread_mutex_unlock(&g_init_lock);
}

static const xdev_backend_api_t xc_api = {
    .size = sizeof(xdev_backend_api_t),
    .abi_major = XDEV_BACKEND_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .name = XC_NAME,
    .type = XC_DEVICE_TYPE,
    .init = xc_init,
    .at_exit = xc_at_exit,
    .device = &xc_device_vtable,
    .stream = &xc_stream_vtable,
    .event = &xc_event_vtable,
    .memory = &xc_memory_vtable,
#ifdef XC_HAVE_CUBLAS
    .blas = &xc_blas_vtable,
#endif
#ifdef XC_HAVE_CUFFT
    .fft = &xc_fft_vtable,
#endif
#ifdef XC_HAVE_KERNELS
    .rng = &xc_rng_vtable,
#endif
#ifdef XC_HAVE_TRACE
    .trace = &xc_trace_vtable,
#endif
    .ipc = &xc_ipc_vtable,
#ifdef XC_HAVE_KERNELS /* the device code: random fills, typed fills, conversions */
    .ops = &xc_ops_vtable,
#endif
#ifdef XC_HAVE_NCCL
    .comm = &xc_comm_vtable,
#endif
    .kernel = &xc_kernel_vtable,
    .graph = &xc_graph_vtable,
#ifdef XC_HAVE_PRIM /* cuda_prim.cu: CUB, or rocPRIM (HIP: vendor/hip_prim.h) */
    .prim = &xc_prim_vtable,
#endif
};

XDEV_API const xdev_backend_api_t *xdev_backend_entry(void);

const xdev_backend_api_t *xdev_backend_entry(void) {
    return &xc_api;
}
