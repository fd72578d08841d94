/* backends/cuda/cuda_backend.c - the CUDA backend plugin libxdev-cuda.so:
 * its entry point and ABI table, init/shutdown, error reporting and the
 * device guard. The vtables live in cuda_device.c, cuda_stream.c,
 * cuda_event.c, cuda_memory.c (+ cuda_staging.c, cuda_hostcopy.c),
 * cuda_trace.c, cuda_ipc.c, cuda_nvml.c, cuda_blas.c (cuBLAS) and
 * cuda_fft.c (+ cuda_fft_scale.c; cuFFT).
 *
 * The CUDA runtime is linked statically, so the plugin needs only the driver
 * (libcuda.so.1) at run time. Without a driver or a GPU, init fails with the
 * runtime's reason (e.g. "cudaGetDeviceCount: cudaErrorInsufficientDriver:
 * ..."), which XDEV_BACKEND=cuda reports and auto skips. */
#include <stdarg.h>
#include <stdio.h>

#include "cuda_internal.h"

xc_state_t xc_state;
static bool g_initialized;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;

xdev_status_t xc_error(xdev_status_t status, const char *fmt, ...) {
    const xdev_host_services_t *host = xc_state.host;
    if (host == NULL || !XDEV_BACKEND_HAS_SLOT(host, set_error) || host->set_error == NULL)
        return status;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host->set_error(status, "%s", msg);
}

xdev_status_t xc_fail(cudaError_t err, const char *what, ...) {
    char call[512];
    va_list ap;
    va_start(ap, what);
    vsnprintf(call, sizeof call, what, ap);
    va_end(ap);
    /* A non-sticky error stays as the thread's "last error" and would show
     * up in unrelated cudaGetLastError checks (kernel launches): clear it.
     * A sticky one cannot be cleared and keeps failing later calls. */
    (void)cudaGetLastError();
    xdev_status_t status =
        err == cudaErrorMemoryAllocation ? XDEV_ERROR_OUT_OF_MEMORY : XDEV_ERROR_BACKEND;
    return xc_error(status, "%s: %s: %s", call, cudaGetErrorName(err), cudaGetErrorString(err));
}

xdev_status_t xc_guard_begin(xc_guard_t *guard, int device) {
    guard->switched = false;
    XC_CALL(cudaGetDevice(&guard->previous), "cudaGetDevice");
    if (guard->previous != device) {
        XC_CALL(cudaSetDevice(device), "cudaSetDevice(%d)", device);
        guard->switched = true;
    }
    return XDEV_SUCCESS;
}

void xc_guard_end(const xc_guard_t *guard) {
    if (guard->switched) (void)cudaSetDevice(guard->previous);
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
            st = xc_fail(err, "cudaGetDeviceCount");
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

/* Releases the plugin's own resources (staging buffers, worker threads,
 * NVML); device memory and streams belong to the core and the application. */
static void xc_shutdown(void) {
    pthread_mutex_lock(&g_init_lock);
    if (g_initialized) {
        xc_staging_shutdown();
        xc_hostcopy_shutdown();
        xc_nvml_shutdown();
#ifdef XC_HAVE_CUBLAS
        xc_blas_shutdown();
#endif
#ifdef XC_HAVE_CUFFT
        xc_fft_shutdown();
#endif
        for (int i = 0; i < xc_state.count; i++)
            pthread_mutex_destroy(&xc_state.devices[i].lock);
        xc_state.count = 0;
        g_initialized = false;
    }
    pthread_mutex_unlock(&g_init_lock);
}

static const xdev_backend_api_t xc_api = {
    .size = sizeof(xdev_backend_api_t),
    .abi_major = XDEV_BACKEND_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .name = "cuda",
    .type = XDEV_DEVICE_CUDA,
    .init = xc_init,
    .shutdown = xc_shutdown,
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
#ifdef XC_HAVE_RNG_KERNELS
    .rng = &xc_rng_vtable,
#endif
    .trace = &xc_trace_vtable,
    .ipc = &xc_ipc_vtable,
};

XDEV_API const xdev_backend_api_t *xdev_backend_entry(void);

const xdev_backend_api_t *xdev_backend_entry(void) {
    return &xc_api;
}
