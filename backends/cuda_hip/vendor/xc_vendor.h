/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/vendor/xc_vendor.h - which GPU runtime the shared
 * backend sources are built against. The sources in backends/cuda_hip/ are
 * written in CUDA's names; they build libxdev-cuda.so as they are and
 * libxdev-hip.so with XC_VENDOR_HIP defined, where hip_vendor.h (beside this
 * file) maps every CUDA name they use to its HIP twin (cudaMalloc ->
 * hipMalloc, ...). Adding a vendor call once for both: ../README.md.
 *
 * Where the two runtimes differ in meaning rather than in name, the
 * difference is said here, once, as a macro or an inline function both
 * vendor sides define:
 *   XC_NAME, XC_DEVICE_TYPE   the backend's name and device type
 *   XC_ENV(suffix)            its environment variables (XDEV_CUDA_*, XDEV_HIP_*)
 *   XC_STREAM_LEGACY          the device's legacy default stream (CUDA has a
 *                             handle for it; HIP's is the NULL stream)
 *   xc_vendor_launch_host_func  a host function in stream order (HIP 5.2
 *                             declares hipLaunchHostFunc but does not export
 *                             it), XC_HOST_FUNC_CALL the call it makes
 *   xc_vendor_host_is_pageable  is host memory unregistered (pageable)?
 *   XC_BLAS_HEADER, XC_FFT_HEADER, XC_TRACE_HEADER  cuBLAS, cuFFT, NVTX, or
 *                             hipBLAS, hipFFT, roctx under their names
 *                             (vendor/hip_blas.h, hip_fft.h, hip_trace.h)
 *   XC_BLAS_COMPUTE_TF32      the compute type of an f32 GEMM allowed TF32
 *   XC_CCL, XC_CCL_*          the collective library under the comm table
 *                             (NCCL / RCCL: its header, file, env variable)
 *   XC_HAVE_VMM               virtual memory slots for expandable segments
 *                             and sleep/wake (cuda_vmm.c: CUDA's driver
 *                             API, HIP's runtime calls under its names)
 *   XC_IMAGE_TAKES(format), XC_IMAGE_KINDS  the kernel images the module
 *                             loader takes (cuda_kernel.c: PTX, cubin and
 *                             fatbin on CUDA, code objects on HIP) and how a
 *                             message names them
 *   xc_vendor_arch_name       the device's code target as its compiler names
 *                             it ("sm_90", "gfx90a"), for messages
 *   XC_HAVE_RTC               the run-time compiler's header is there (nvrtc.h,
 *                             hip/hiprtc.h), so cuda_rtc.c builds the
 *                             compile slots; the library itself is opened at
 *                             run time (NVRTC's names, mapped to hiprtc's);
 *                             XC_RTC_LINKED: linked instead (HIP's NVIDIA
 *                             platform, where hiprtc wraps NVRTC inline)
 *   xc_vendor_capture_info    is a stream capturing, and the capture's id
 *                             (cudaStreamGetCaptureInfo, whose arguments
 *                             CUDA 13 changed), XC_CAPTURE_INFO_CALL its name
 *   xc_vendor_mem_prefetch, xc_vendor_mem_advise  managed memory's prefetch and
 *                             advice to a device or the host (CUDA 13 takes a
 *                             cudaMemLocation, CUDA 12 and HIP a device index)
 *   xc_vendor_blas_workspace_bytes  the BLAS workspace a capture gives each
 *                             stream (cublasSetWorkspace's recommended size)
 *   XC_SHFL_DOWN32(v, d), XC_SYNCWARP()  device code of the prim table
 *                             (cuda_prim_det.cuh): a shuffle down within a
 *                             32-lane group (CUDA's warp; half of AMD's
 *                             64-lane wavefront, so HIP's __shfl_down gets
 *                             width 32), and the barrier of a block that is
 *                             one 32-lane warp (__syncwarp; HIP 5.2 has
 *                             none: __syncthreads, the block being that warp)
 *   xc_capture_mode_t, xc_capture_status_t, xc_copy_kind_t  the capture mode,
 *                             capture status and copy direction types: C
 *                             names CUDA's as `enum cudaX`, HIP's are
 *                             typedefs (on HIP's NVIDIA platform of CUDA's
 *                             enums, so `enum hipX` names no type there)
 * and the optional parts each vendor has or lacks (NVML vs rocm-smi, NVTX vs
 * roctx, cuBLAS/cuFFT vs hipBLAS/hipFFT) are chosen by the build
 * (backends/cuda/CMakeLists.txt, backends/hip/CMakeLists.txt). */
#ifndef XDEV_XC_VENDOR_H
#define XDEV_XC_VENDOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#if defined(XC_VENDOR_HIP)
#include "hip_vendor.h"
#else

#if defined(__CUDACC__)
#include <cuda_runtime.h> /* device code: launches, threadIdx */
#else
#include <cuda_runtime_api.h>
#endif

typedef enum cudaStreamCaptureMode xc_capture_mode_t;
typedef enum cudaStreamCaptureStatus xc_capture_status_t;
typedef enum cudaMemcpyKind xc_copy_kind_t;

#define XC_NAME "cuda"
/* for the messages of an init that finds no usable GPU (cuda_backend.c) */
#define XC_DRIVER_NAME "NVIDIA"
#define XC_RUNTIME_NAME "CUDA"
#define XC_RUNTIME_MAJOR (CUDART_VERSION / 1000)
#define XC_RUNTIME_MINOR ((CUDART_VERSION % 1000) / 10)
#define XC_VISIBLE_VAR "CUDA_VISIBLE_DEVICES"
#define XC_SMI_TOOL "nvidia-smi"
#define XC_HAVE_VMM 1
#define XC_BLAS_HEADER <cublas_v2.h>
#define XC_FFT_HEADER <cufft.h>
#define XC_TRACE_HEADER <nvtx3/nvToolsExt.h>
#define XC_BLAS_COMPUTE_TF32 CUBLAS_COMPUTE_32F_FAST_TF32
#define XC_CCL "NCCL"
#define XC_CCL_HEADER <nccl.h>
#define XC_CCL_LIB "libnccl.so.2"
#define XC_CCL_ENV "XDEV_NCCL_PATH"
#define XC_CCL_HINT "e.g. PyTorch's site-packages/nvidia/nccl/lib/libnccl.so.2"
#define XC_DEVICE_TYPE XDEV_DEVICE_CUDA
#define XC_ENV(suffix) "XDEV_CUDA_" suffix
#define XC_STREAM_LEGACY cudaStreamLegacy
/* device code (the prim table's deterministic kernels): all 32 lanes take part */
#define XC_SHFL_DOWN32(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#define XC_SYNCWARP() __syncwarp()

#define XC_HOST_FUNC_CALL "cudaLaunchHostFunc"
static inline cudaError_t xc_vendor_launch_host_func(cudaStream_t s, void (*fn)(void *),
                                                     void *arg) {
    return cudaLaunchHostFunc(s, fn, arg);
}

/* Unregistered (pageable) host memory: CUDA reports its type as such; when
 * it cannot say, the memory is treated as pageable (the staged path is
 * correct for any host memory). Pinned, registered (torch, cudaHostRegister)
 * or managed memory the DMA engine can use directly. */
static inline bool xc_vendor_host_is_pageable(const void *host) {
    struct cudaPointerAttributes a;
    cudaError_t err = cudaPointerGetAttributes(&a, host);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return true;
    }
    return a.type == cudaMemoryTypeUnregistered;
}

/* Whether `s` records into a capture, and that capture's sequence id (the
 * streams forked into a capture share it): cuda_graph.c. CUDA 13 gave
 * cudaStreamGetCaptureInfo the arguments of the former _v3. */
#define XC_CAPTURE_INFO_CALL "cudaStreamGetCaptureInfo"
static inline cudaError_t xc_vendor_capture_info(cudaStream_t s, xc_capture_status_t *status,
                                                 unsigned long long *id) {
#if CUDART_VERSION >= 13000
    return cudaStreamGetCaptureInfo(s, status, id, NULL, NULL, NULL, NULL);
#else
    return cudaStreamGetCaptureInfo(s, status, id);
#endif
}

/* Managed memory's prefetch and advice (cuda_memory.c) to device `device` or,
 * when it is negative, the host: CUDA 13 takes a cudaMemLocation (and the
 * prefetch flags) where CUDA 12 took a device index, cudaCpuDeviceId for the
 * host. */
#define XC_PREFETCH_CALL "cudaMemPrefetchAsync"
#define XC_ADVISE_CALL "cudaMemAdvise"
static inline cudaError_t xc_vendor_mem_prefetch(const void *p, size_t n, int device,
                                                 cudaStream_t s) {
#if CUDART_VERSION >= 13000
    struct cudaMemLocation loc = {device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice,
                                  device < 0 ? 0 : device};
    return cudaMemPrefetchAsync(p, n, loc, 0, s);
#else
    return cudaMemPrefetchAsync(p, n, device < 0 ? cudaCpuDeviceId : device, s);
#endif
}
static inline cudaError_t xc_vendor_mem_advise(const void *p, size_t n, int advice, int device) {
#if CUDART_VERSION >= 13000
    struct cudaMemLocation loc = {device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice,
                                  device < 0 ? 0 : device};
    return cudaMemAdvise(p, n, (enum cudaMemoryAdvise)advice, loc);
#else
    return cudaMemAdvise(p, n, (enum cudaMemoryAdvise)advice,
                         device < 0 ? cudaCpuDeviceId : device);
#endif
}

/* cuBLAS's recommended workspace (cublasSetWorkspace): 32 MiB from Hopper
 * (compute capability 9) on, 4 MiB before; 32 MiB when the device does not
 * say. */
static inline size_t xc_vendor_blas_workspace_bytes(int device) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        major = 9;
    }
    return (size_t)(major >= 9 ? 32 : 4) << 20;
}

/* Kernel images (xdev_image_format_t) cuModuleLoadData takes. */
#define XC_IMAGE_TAKES(format)                                                                     \
    ((format) == XDEV_IMAGE_PTX || (format) == XDEV_IMAGE_CUBIN || (format) == XDEV_IMAGE_FATBIN)
#define XC_IMAGE_KINDS "PTX, cubin and fatbin images"

/* NVRTC (cuda_rtc.c): its header comes with every toolkit. */
#if defined(__has_include)
#if __has_include(<nvrtc.h>)
#define XC_HAVE_RTC 1
#endif
#endif

/* "sm_90": the code a device runs, for messages. */
static inline void xc_vendor_arch_name(int device, char *buf, size_t len) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(buf, len, "this device");
        return;
    }
    snprintf(buf, len, "sm_%d%d", major, minor);
}

#endif /* vendor */

#ifndef XC_HAVE_VMM
#define XC_HAVE_VMM 0
#endif
#ifndef XC_HAVE_RTC
#define XC_HAVE_RTC 0
#endif
#ifndef XC_RTC_LINKED
#define XC_RTC_LINKED 0
#endif

/* "cudaMalloc" on CUDA, "hipMalloc" on HIP: the name of the call a message
 * reports, after the vendor mapping. */
#define XC_STR_(x) #x
#define XC_STR(x) XC_STR_(x)

#endif
