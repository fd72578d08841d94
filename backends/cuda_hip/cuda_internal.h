/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_internal.h - state and helpers shared by the CUDA
 * and HIP backend plugins' files (one file per vtable, see cuda_backend.c),
 * those of this folder and each plugin's own (backends/cuda, backends/hip).
 *
 * Conventions:
 * - every failing CUDA call becomes host->set_error with
 *   "<call>: <cudaGetErrorName>: <cudaGetErrorString>" (xc_fail);
 * - a slot that needs a current device uses xc_guard_begin/end, which
 *   always restores the caller's CUDA device;
 * - a device's default stream is the legacy one (XC_STREAM_LEGACY, see
 *   cuda_stream.c): like NULL and cudaStreamPerThread it means "the current
 *   device's", so work on it runs under a guard; created streams carry
 *   their device.
 * The same sources build the HIP plugin (XC_VENDOR_HIP): CUDA's names, mapped
 * by vendor/hip_vendor.h; what differs in meaning is in vendor/xc_vendor.h. */
#ifndef XDEV_CUDA_INTERNAL_H
#define XDEV_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "xdev/backend_support.h"
#include "vendor/xc_vendor.h"

/* Most CUDA devices this backend handles (matches the core's limit). */
#define XC_MAX_DEVICES 64

/* Per physical device; filled lazily (under its lock) except `index`. It is
 * the backend's device context (xdev_backend_device_t, device.open), so slots
 * receive it directly. */
typedef struct xdev_backend_device {
    int index;
    pthread_mutex_t lock;
    bool props_ready;
    xdev_device_properties_t props;
    bool ext_ready; /* ext: device.get_properties_ext's answer, under lock */
    xdev_device_properties_ext_t ext;
    bool prio_ready;
    int prio_least, prio_greatest; /* cudaDeviceGetStreamPriorityRange */
    int sms; /* multiprocessors, 0 until asked (xc_multiprocessors; __atomic access) */
    bool pool_ready;
    cudaMemPool_t pool; /* default pool, release threshold raised (backend:async) */
    int captures;       /* captures begun by the graph table, under way (cuda_graph.c; __atomic) */
} xc_device_t;

typedef struct xc_state {
    const xdev_host_services_t *host;
    int count;
    xc_device_t devices[XC_MAX_DEVICES];
} xc_state_t;

extern xc_state_t xc_state;

extern const xdev_device_vtable_t xc_device_vtable;
extern const xdev_stream_vtable_t xc_stream_vtable;
extern const xdev_event_vtable_t xc_event_vtable;
extern const xdev_memory_vtable_t xc_memory_vtable;
extern const xdev_trace_vtable_t xc_trace_vtable;
extern const xdev_ipc_vtable_t xc_ipc_vtable;
extern const xdev_kernel_vtable_t xc_kernel_vtable; /* cuda_kernel.c: modules, launches */
extern const xdev_graph_vtable_t xc_graph_vtable;   /* cuda_graph.c: capture, replay */
#if XC_HAVE_RTC
/* Run-time compilation (cuda_rtc.c: NVRTC, or hiprtc for HIP, opened at run
 * time): the kernel table's compile_target and compile slots, and the same
 * for a code target given by name ("sm_90", "gfx90a"), which needs no device
 * (tried where only the toolkit is). */
xdev_status_t xc_rtc_compile_target(xc_device_t *dev, char *id, size_t len,
                                    xdev_image_format_t *format);
xdev_status_t xc_rtc_compile(xc_device_t *dev, const xdev_compile_desc_t *desc,
                             xdev_compiled_t *out);
xdev_status_t xc_rtc_target_for(const char *arch, char *id, size_t len,
                                xdev_image_format_t *format);
xdev_status_t xc_rtc_compile_for(const char *arch, const xdev_compile_desc_t *desc,
                                 xdev_compiled_t *out);
#endif
#ifdef XC_HAVE_NCCL
extern const xdev_comm_vtable_t xc_comm_vtable; /* cuda_nccl.c */
#endif

/* Report through the host (printf format); returns status. */
xdev_status_t xc_error(xdev_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Report a failed CUDA call: "<what>: <name>: <string>". `what` is a printf
 * format naming the call (and its arguments where they help). Maps
 * cudaErrorMemoryAllocation to XDEV_ERROR_OUT_OF_MEMORY, everything else to
 * XDEV_ERROR_BACKEND, and clears a non-sticky error from cudaGetLastError. */
xdev_status_t xc_fail(cudaError_t err, const char *what, ...) __attribute__((format(printf, 2, 3)));

/* Check a CUDA call, returning the mapped status from the enclosing function. */
#define XC_CALL(call, ...)                                                                         \
    do {                                                                                           \
        cudaError_t xc_err_ = (call);                                                              \
        if (xc_err_ != cudaSuccess) return xc_fail(xc_err_, __VA_ARGS__);                          \
    } while (0)

#if !defined(XC_VENDOR_HIP)
/* The CUDA plugin links only the static runtime: the driver's own calls
 * (modules, cuda_kernel.c; virtual memory, cuda_vmm.c) are found at run time
 * through cudaGetDriverEntryPointByVersion. xc_driver_entry: one call as of
 * the driver API `version` (12000 for 12.0), NULL where the driver lacks it.
 * xc_driver_lookup: each of syms (as of 12.0) into `table` at its offset;
 * the name of the first the driver lacks (the rest left unset), or NULL. */
typedef struct xc_driver_sym {
    const char *name;
    size_t offset;
} xc_driver_sym_t;
void *xc_driver_entry(const char *name, unsigned version);
const char *xc_driver_lookup(const xc_driver_sym_t *syms, size_t n, void *table);
#endif

/* The caller's CUDA device, switched to `device` until xc_guard_end. */
typedef struct xc_guard {
    int previous;
    bool switched;
} xc_guard_t;

xdev_status_t xc_guard_begin(xc_guard_t *guard, int device);
void xc_guard_end(const xc_guard_t *guard);

/* The device's multiprocessor count, asked once (the kernels' grids are a
 * few waves of them). */
cudaError_t xc_multiprocessors(xc_device_t *dev, int *out);

/* True for the stream handles that mean "the current device's" stream. */
static inline bool xc_stream_implicit(const void *stream) {
    return stream == NULL || stream == (const void *)XC_STREAM_LEGACY ||
           stream == (const void *)cudaStreamPerThread;
}

/* The guard of a call on `stream`, the one way every stream-ordered call
 * takes it: an implicit stream means the current device's, so `device` is
 * made current until xc_guard_end; a created stream names its device itself
 * and needs none (the guard stays unswitched, and xc_guard_end does
 * nothing). */
static inline xdev_status_t xc_stream_guard_begin(xc_guard_t *guard, int device,
                                                  const void *stream) {
    guard->switched = false;
    return xc_stream_implicit(stream) ? xc_guard_begin(guard, device) : XDEV_SUCCESS;
}

/* The device's lazily filled state (no CUDA call). */
static inline xc_device_t *xc_device(int device) {
    return &xc_state.devices[device];
}

/* Stream capture (cuda_graph.c). xc_capturing: whether a capture begun by
 * the graph table is under way on the device (one relaxed load: the BLAS hot
 * path asks it). xc_capture_workspace: with the device current, the cuBLAS
 * workspace for work enqueued on `stream` now - the capture's own for that
 * stream when it records into such a capture (*bytes its size), else NULL
 * (the library's default workspace). xc_capture_error: whether err is one of
 * the runtime's stream-capture errors (reported as XDEV_ERROR_CAPTURE). */
static inline bool xc_capturing(const xc_device_t *dev) {
    return __atomic_load_n(&dev->captures, __ATOMIC_RELAXED) != 0;
}
xdev_status_t xc_capture_workspace(xc_device_t *dev, void *stream, void **mem, size_t *bytes);
bool xc_capture_error(cudaError_t err);
/* cudaMalloc with this thread's capture mode relaxed meanwhile: the mode of
 * a global or thread-local capture forbids it (cudaErrorStreamCaptureUnsupported),
 * but a graph's pool needs new memory during its capture (torch's allocator
 * does the same). The core refuses such allocations outside a pool itself. */
static inline cudaError_t xc_malloc_any_mode(void **out, size_t bytes) {
    xc_capture_mode_t mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t err = cudaMalloc(out, bytes);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return err;
}

/* Copies through pinned staging buffers (cuda_staging.c): host side pageable. */
bool xc_staging_wanted(const xdev_copy_desc_t *copy);
xdev_status_t xc_staged_copy(const xdev_copy_desc_t *copy, int device, cudaStream_t stream);
/* XDEV_ERROR_ENV for a malformed XDEV_CUDA_STAGING / XDEV_CUDA_STAGE_CHUNK_KB /
 * XDEV_CUDA_COPY_THREADS (checked at plugin init, before the driver). */
xdev_status_t xc_staging_check_env(void);
xdev_status_t xc_hostcopy_check_env(void);
/* A decimal integer in [lo, hi]: no sign, no spaces, nothing after it. */
bool xc_env_int(const char *v, long lo, long hi, long *out);

#if XC_HAVE_VMM
/* Virtual memory slots (cuda_vmm.c), and the note that
 * `device` enabled peer access to `peer`'s memory (new mappings on peer
 * include it). */
xdev_status_t xc_va_granularity(xc_device_t *dev, size_t *out);
xdev_status_t xc_va_reserve(xc_device_t *dev, size_t bytes, void **base);
xdev_status_t xc_va_release(xc_device_t *dev, void *base, size_t bytes);
xdev_status_t xc_va_map(xc_device_t *dev, void *addr, size_t bytes);
xdev_status_t xc_va_map_whole(xc_device_t *dev, void *addr, size_t bytes);
xdev_status_t xc_va_unmap_whole(xc_device_t *dev, void *addr, size_t bytes);
xdev_status_t xc_va_unmap(xc_device_t *dev, void *addr, size_t bytes);
void xc_vmm_note_peer(int device, int peer);
#endif

/* Host memcpy spread over a few worker threads (cuda_hostcopy.c). */
void xc_parallel_memcpy(void *dst, const void *src, size_t bytes);
void xc_hostcopy_shutdown(void);

/* The vendor's management library: device.list_processes and
 * device.utilization (NVML in backends/cuda/cuda_nvml.c, rocm-smi in
 * backends/hip/hip_smi.c). */
xdev_status_t xc_smi_list_processes(int device, xdev_gpu_process_t *out, size_t cap, size_t *count);
xdev_status_t xc_smi_utilization(int device, xdev_device_utilization_t *out);
/* device.telemetry: one reading (xdev/system.h's kinds and units). */
xdev_status_t xc_smi_telemetry(int device, xdev_telemetry_t what, uint64_t *value);
/* Is the device whose UUID is "GPU-<uuid_hex>" a MIG instance? (NVML knows
 * it as "MIG-<uuid_hex>"); false where the library cannot tell. */
bool xc_smi_is_mig(const char *uuid_hex);

/* cuBLAS (cuda_blas.c) and cuFFT (cuda_fft.c), built when CMake finds them
 * (XC_HAVE_CUBLAS, XC_HAVE_CUFFT; hipBLAS and hipFFT for the HIP plugin).
 * Nothing releases their handles at exit: at_exit makes no CUDA call (the
 * driver may be unloading) and the process's end frees them. Device code
 * (cuda_rng.cu, cuda_ops.cu, cuda_fft_scale.cu) is built where a device
 * compiler is (XC_HAVE_KERNELS: nvcc, or hipcc for the HIP plugin). */
extern const xdev_blas_vtable_t xc_blas_vtable;
extern const xdev_fft_vtable_t xc_fft_vtable;
extern const xdev_rng_vtable_t xc_rng_vtable; /* cuda_rng.cu */
extern const xdev_ops_vtable_t xc_ops_vtable; /* cuda_ops.cu */
/* Parallel primitives (cuda_prim.cu over CUB, or over rocPRIM in the HIP
 * plugin; XC_HAVE_PRIM: built, with nvcc or with hipcc and rocPRIM). */
extern const xdev_prim_vtable_t xc_prim_vtable;
/* Multiply the output of an exec of the plan `d` by `scale` on `stream`
 * (cuda_fft_scale.cu, XC_HAVE_KERNELS). */
xdev_status_t xc_fft_scale(const xdev_fft_plan_desc_t *d, void *out, double scale,
                           cudaStream_t stream);

#endif
