/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/vendor/hip_vendor.h - the HIP side of xc_vendor.h (beside
 * it): maps every CUDA runtime name the shared backend sources use to its
 * HIP twin, so that the .c and .cu files of backends/cuda_hip build
 * libxdev-hip.so unchanged (ggml's vendors/hip.h pattern). Besides names,
 * only HIP's side of the macros and inline functions that xc_vendor.h lists
 * goes here: where HIP differs in meaning (host functions, capture info,
 * the BLAS workspace, kernel images, the device's code target). Checked
 * against HIP 5.2.3 (Debian 12's libamdhip64-dev). Plain C sources include
 * it with the C compiler (-D__HIP_PLATFORM_AMD__); device code with hipcc.
 * HIP's NVIDIA platform (-D__HIP_PLATFORM_NVIDIA__, backends/hip/nvidia.cmake:
 * hip* calls are inline wrappers over CUDA, device code compiled by nvcc)
 * differs where marked __HIP_PLATFORM_NVIDIA__: the CUDA headers are
 * included there, so names CUDA defines as macros are left alone, and the
 * calls HIP 5.2 offers only to C++ or not at all go to CUDA directly. */
#ifndef XDEV_HIP_VENDOR_H
#define XDEV_HIP_VENDOR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__HIPCC__) || defined(__CUDACC__) /* hipcc; nvcc on HIP's NVIDIA platform */
#include <hip/hip_runtime.h>                  /* device code: launches, threadIdx */
#else
#include <hip/hip_runtime_api.h>
#endif

/* ------------------------------------------------------------ types and constants */
typedef hipStreamCaptureMode xc_capture_mode_t;
typedef hipStreamCaptureStatus xc_capture_status_t;
typedef hipMemcpyKind xc_copy_kind_t;

#define cudaError_t hipError_t
#define cudaStream_t hipStream_t
#define cudaEvent_t hipEvent_t
#define cudaMemPool_t hipMemPool_t
#define cudaMemcpyKind hipMemcpyKind
#define cudaDeviceProp hipDeviceProp_t
#define cudaPointerAttributes hipPointerAttribute_t
#define cudaIpcMemHandle_t hipIpcMemHandle_t
#define cudaIpcEventHandle_t hipIpcEventHandle_t
#define cudaHostFn_t hipHostFn_t
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaStreamCaptureMode hipStreamCaptureMode
#define cudaStreamCaptureStatus hipStreamCaptureStatus

#define cudaSuccess hipSuccess
#define cudaErrorNotReady hipErrorNotReady
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaErrorIllegalAddress hipErrorIllegalAddress
#define cudaErrorLaunchFailure hipErrorLaunchFailure
#define cudaErrorAssert hipErrorAssert
#define cudaErrorLaunchTimeout hipErrorLaunchTimeOut
#define cudaErrorInvalidValue hipErrorInvalidValue
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define cudaErrorIllegalState hipErrorIllegalState
#define cudaErrorStreamCaptureUnsupported hipErrorStreamCaptureUnsupported
#define cudaErrorStreamCaptureInvalidated hipErrorStreamCaptureInvalidated
#define cudaErrorStreamCaptureMerge hipErrorStreamCaptureMerge
#define cudaErrorStreamCaptureUnmatched hipErrorStreamCaptureUnmatched
#define cudaErrorStreamCaptureUnjoined hipErrorStreamCaptureUnjoined
#define cudaErrorStreamCaptureIsolation hipErrorStreamCaptureIsolation
#define cudaErrorStreamCaptureImplicit hipErrorStreamCaptureImplicit
#define cudaErrorCapturedEvent hipErrorCapturedEvent
#define cudaErrorStreamCaptureWrongThread hipErrorStreamCaptureWrongThread

/* Flags the CUDA headers define as macros of the same value: HIP's NVIDIA
 * platform includes them (its hip* flags are those macros), so there the
 * CUDA name stays as it is (mapping it to the hip name would loop back). */
#if !defined(__HIP_PLATFORM_NVIDIA__)
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamPerThread hipStreamPerThread
#define cudaEventDefault hipEventDefault
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventBlockingSync hipEventBlockingSync
#define cudaEventInterprocess hipEventInterprocess
#define cudaHostAllocPortable hipHostMallocPortable
#define cudaHostRegisterPortable hipHostRegisterPortable
#define cudaIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#endif
#if !defined(__HIP_PLATFORM_NVIDIA__) /* HIP 5.2 names no pool attribute there: CUDA's stays */
#define cudaMemPoolAttrReleaseThreshold hipMemPoolAttrReleaseThreshold
#endif
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDeviceAttr hipDeviceAttribute_t
#define cudaDevAttrMaxThreadsPerBlock hipDeviceAttributeMaxThreadsPerBlock
#define cudaDevAttrMaxBlockDimX hipDeviceAttributeMaxBlockDimX
#define cudaDevAttrMaxBlockDimY hipDeviceAttributeMaxBlockDimY
#define cudaDevAttrMaxBlockDimZ hipDeviceAttributeMaxBlockDimZ
#define cudaDevAttrMaxGridDimX hipDeviceAttributeMaxGridDimX
#define cudaDevAttrMaxGridDimY hipDeviceAttributeMaxGridDimY
#define cudaDevAttrMaxGridDimZ hipDeviceAttributeMaxGridDimZ
#define cudaDevAttrMaxSharedMemoryPerBlock hipDeviceAttributeMaxSharedMemoryPerBlock
#define cudaDevAttrWarpSize hipDeviceAttributeWarpSize
#define cudaStreamCaptureModeGlobal hipStreamCaptureModeGlobal
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define cudaStreamCaptureStatusNone hipStreamCaptureStatusNone
#define cudaStreamCaptureStatusActive hipStreamCaptureStatusActive
#define cudaStreamCaptureStatusInvalidated hipStreamCaptureStatusInvalidated

/* CUDA's driver API for modules and launches (cuda_kernel.c): libamdhip64
 * exports the twins, so the HIP plugin calls them directly. */
#define CUresult hipError_t
#define CUmodule hipModule_t
#define CUfunction hipFunction_t
#define CUstream hipStream_t
#define CUjit_option hipJitOption
#define CUDA_SUCCESS hipSuccess
#define CUDA_ERROR_NOT_FOUND hipErrorNotFound
#define CUDA_ERROR_OUT_OF_MEMORY hipErrorOutOfMemory
#define CUDA_ERROR_NO_BINARY_FOR_GPU hipErrorNoBinaryForGpu
#define CU_JIT_ERROR_LOG_BUFFER hipJitOptionErrorLogBuffer
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES hipJitOptionErrorLogBufferSizeBytes
#define CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES

#define cudaMemcpyHostToHost hipMemcpyHostToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice

/* ------------------------------------------------------------ calls */
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError

#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDevice hipGetDevice
#define cudaSetDevice hipSetDevice
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaDeviceCanAccessPeer hipDeviceCanAccessPeer
#define cudaDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define cudaDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define cudaDeviceGetPCIBusId hipDeviceGetPCIBusId
#define cudaDeviceGetDefaultMemPool hipDeviceGetDefaultMemPool

#define cudaStreamCreateWithPriority hipStreamCreateWithPriority
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamQuery hipStreamQuery
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamWaitEvent hipStreamWaitEvent
#if !defined(__HIP_PLATFORM_NVIDIA__)
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaThreadExchangeStreamCaptureMode hipThreadExchangeStreamCaptureMode
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamIsCapturing hipStreamIsCapturing
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphDestroy hipGraphDestroy
#else
/* HIP's NVIDIA platform (HIP 5.2) has these only for nvcc-compiled C++
 * (its header's __CUDACC__ part, which also uses what CUDA 13 removed) and
 * no hipThreadExchangeStreamCaptureMode at all: the shared sources' capture
 * calls go to CUDA's own there, whose types hip's are (hipStream_t is
 * cudaStream_t, hipGraph_t cudaGraph_t, ...), through HIP's error mapping
 * (a message names xc_nv_<the CUDA call>). */
static inline hipError_t xc_nv_cudaStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode) {
    return hipCUDAErrorTohipError(cudaStreamBeginCapture(s, mode));
}
static inline hipError_t xc_nv_cudaThreadExchangeStreamCaptureMode(hipStreamCaptureMode *mode) {
    return hipCUDAErrorTohipError(cudaThreadExchangeStreamCaptureMode(mode));
}
static inline hipError_t xc_nv_cudaStreamEndCapture(hipStream_t s, hipGraph_t *graph) {
    return hipCUDAErrorTohipError(cudaStreamEndCapture(s, graph));
}
static inline hipError_t xc_nv_cudaStreamIsCapturing(hipStream_t s,
                                                     hipStreamCaptureStatus *status) {
    return hipCUDAErrorTohipError(cudaStreamIsCapturing(s, status));
}
static inline hipError_t xc_nv_cudaGraphInstantiateWithFlags(hipGraphExec_t *exec, hipGraph_t graph,
                                                             unsigned long long flags) {
    return hipCUDAErrorTohipError(cudaGraphInstantiateWithFlags(exec, graph, flags));
}
static inline hipError_t xc_nv_cudaGraphLaunch(hipGraphExec_t exec, hipStream_t s) {
    return hipCUDAErrorTohipError(cudaGraphLaunch(exec, s));
}
static inline hipError_t xc_nv_cudaGraphExecDestroy(hipGraphExec_t exec) {
    return hipCUDAErrorTohipError(cudaGraphExecDestroy(exec));
}
static inline hipError_t xc_nv_cudaGraphDestroy(hipGraph_t graph) {
    return hipCUDAErrorTohipError(cudaGraphDestroy(graph));
}
static inline hipError_t xc_nv_cudaStreamGetCaptureInfo(hipStream_t s,
                                                        hipStreamCaptureStatus *status,
                                                        unsigned long long *id) {
#if CUDART_VERSION >= 13000
    return hipCUDAErrorTohipError(cudaStreamGetCaptureInfo(s, status, id, NULL, NULL, NULL, NULL));
#else
    return hipCUDAErrorTohipError(cudaStreamGetCaptureInfo(s, status, id));
#endif
}
#define cudaStreamBeginCapture xc_nv_cudaStreamBeginCapture
#define cudaThreadExchangeStreamCaptureMode xc_nv_cudaThreadExchangeStreamCaptureMode
#define cudaStreamEndCapture xc_nv_cudaStreamEndCapture
#define cudaStreamIsCapturing xc_nv_cudaStreamIsCapturing
#define cudaGraphInstantiateWithFlags xc_nv_cudaGraphInstantiateWithFlags
#define cudaGraphLaunch xc_nv_cudaGraphLaunch
#define cudaGraphExecDestroy xc_nv_cudaGraphExecDestroy
#define cudaGraphDestroy xc_nv_cudaGraphDestroy
#define hipStreamGetCaptureInfo xc_nv_cudaStreamGetCaptureInfo
#endif

#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventQuery hipEventQuery
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime

#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaHostAlloc hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaHostRegister hipHostRegister
#define cudaHostUnregister hipHostUnregister
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyPeerAsync hipMemcpyPeerAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaPointerGetAttributes hipPointerGetAttributes
#define cudaMallocManaged hipMallocManaged
#if !defined(__HIP_PLATFORM_NVIDIA__) /* macros of CUDA's own headers there */
#define cudaMemAttachGlobal hipMemAttachGlobal
#define cudaMemAttachHost hipMemAttachHost
#endif
#define cudaMallocAsync hipMallocAsync
#define cudaMallocFromPoolAsync hipMallocFromPoolAsync
#define cudaFreeAsync hipFreeAsync
#define cudaMemPoolSetAttribute hipMemPoolSetAttribute

#define cudaIpcGetMemHandle hipIpcGetMemHandle
#define cudaIpcOpenMemHandle hipIpcOpenMemHandle
#define cudaIpcCloseMemHandle hipIpcCloseMemHandle
#define cudaIpcGetEventHandle hipIpcGetEventHandle
#define cudaIpcOpenEventHandle hipIpcOpenEventHandle

#define cuModuleLoadDataEx hipModuleLoadDataEx /* options are accepted and unused */
#define cuModuleUnload hipModuleUnload
#define cuModuleGetFunction hipModuleGetFunction
#define cuFuncGetAttribute hipFuncGetAttribute
#define cuLaunchKernel hipModuleLaunchKernel
/* cuda.h (HIP's NVIDIA platform includes it) maps these two to their _v2. */
#undef cuModuleGetGlobal
#undef cuMemcpyDtoH
#define cuModuleGetGlobal hipModuleGetGlobal
#define cuMemcpyDtoH hipMemcpyDtoH
#define CUdeviceptr hipDeviceptr_t
/* CUDA's driver API for virtual memory (cuda_vmm.c): the runtime's twins,
 * declared since HIP 5.2; HIP's NVIDIA platform wraps none (XC_HAVE_VMM). */
#if !defined(__HIP_PLATFORM_NVIDIA__)
#define CUmemAllocationProp hipMemAllocationProp
#define CUmemAccessDesc hipMemAccessDesc
#define CUmemGenericAllocationHandle hipMemGenericAllocationHandle_t
#define CU_MEM_ALLOCATION_TYPE_PINNED hipMemAllocationTypePinned
#define CU_MEM_LOCATION_TYPE_DEVICE hipMemLocationTypeDevice
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE hipMemAccessFlagsProtReadWrite
#define CU_MEM_ALLOC_GRANULARITY_RECOMMENDED hipMemAllocationGranularityRecommended
#define cuMemGetAllocationGranularity hipMemGetAllocationGranularity
#define cuMemAddressReserve hipMemAddressReserve
#define cuMemAddressFree hipMemAddressFree
#define cuMemCreate hipMemCreate
#define cuMemMap hipMemMap
#define cuMemSetAccess hipMemSetAccess
#define cuMemUnmap hipMemUnmap
#define cuMemRelease hipMemRelease
#endif

/* NVRTC's names for hiprtc's (cuda_rtc.c), where its header is: hiprtc is
 * opened at run time (libhiprtc, or libamdhip64 itself before ROCm 6). On
 * HIP's NVIDIA platform hiprtc is inline wrappers over NVRTC
 * (hip/nvidia_detail/nvidia_hiprtc.h, which includes nvrtc.h: included here,
 * before the names are mapped), which the plugin links (XC_RTC_LINKED). */
#if defined(__has_include)
#if defined(__HIP_PLATFORM_NVIDIA__) && __has_include(<hip/hiprtc.h>)
#include <hip/hiprtc.h>
#define XC_RTC_LINKED 1
#endif
#if __has_include(<hip/hiprtc.h>)
#define XC_HAVE_RTC 1
#define nvrtcResult hiprtcResult
#define nvrtcProgram hiprtcProgram
#define NVRTC_SUCCESS HIPRTC_SUCCESS
#define NVRTC_ERROR_OUT_OF_MEMORY HIPRTC_ERROR_OUT_OF_MEMORY
#define NVRTC_ERROR_INVALID_OPTION HIPRTC_ERROR_INVALID_OPTION
#define NVRTC_ERROR_COMPILATION HIPRTC_ERROR_COMPILATION
#define nvrtcGetErrorString hiprtcGetErrorString
#define nvrtcVersion hiprtcVersion
#define nvrtcCreateProgram hiprtcCreateProgram
#define nvrtcCompileProgram hiprtcCompileProgram
#define nvrtcDestroyProgram hiprtcDestroyProgram
#define nvrtcGetProgramLogSize hiprtcGetProgramLogSize
#define nvrtcGetProgramLog hiprtcGetProgramLog
#endif
#endif

/* ------------------------------------------------------------ what differs in meaning */
#define XC_NAME "hip"
/* virtual memory slots (cuda_vmm.c) over the runtime's hipMem* calls; HIP
 * 5.2's NVIDIA platform has no hipMem* wrappers, so none there */
#if !defined(__HIP_PLATFORM_NVIDIA__)
#define XC_HAVE_VMM 1
#endif
#define XC_DEVICE_TYPE XDEV_DEVICE_HIP
/* for the messages of an init that finds no usable GPU (cuda_backend.c) */
#if defined(__HIP_PLATFORM_NVIDIA__)
#define XC_DRIVER_NAME "NVIDIA (HIP's NVIDIA platform, over CUDA)"
#else
#define XC_DRIVER_NAME "AMD GPU (amdgpu)"
#endif
#define XC_RUNTIME_NAME "HIP"
#define XC_RUNTIME_MAJOR HIP_VERSION_MAJOR
#define XC_RUNTIME_MINOR HIP_VERSION_MINOR
#if defined(__HIP_PLATFORM_NVIDIA__)
#define XC_VISIBLE_VAR "CUDA_VISIBLE_DEVICES"
#else
#define XC_VISIBLE_VAR "HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES"
#endif
#define XC_SMI_TOOL "rocm-smi"
#define XC_ENV(suffix) "XDEV_HIP_" suffix
/* ROCm's libraries under the CUDA libraries' names (built where found). */
#define XC_BLAS_HEADER "vendor/hip_blas.h"
#define XC_FFT_HEADER "vendor/hip_fft.h"
#define XC_TRACE_HEADER "vendor/hip_trace.h"
/* RCCL is NCCL's API for AMD GPUs (same names and ncclUniqueId). */
#define XC_CCL "RCCL"
#define XC_CCL_HEADER <rccl/rccl.h>
#define XC_CCL_LIB "librccl.so.1"
#define XC_CCL_ENV "XDEV_RCCL_PATH"
#define XC_CCL_HINT "e.g. /opt/rocm/lib/librccl.so.1"
/* HIP has no hipStreamLegacy: its NULL stream is the legacy default stream
 * (it synchronises with the device's blocking streams), and like CUDA's it
 * means "the current device's". */
#define XC_STREAM_LEGACY ((hipStream_t)0)
/* Device code of the prim table (cuda_prim_det.cuh, xc_vendor.h): its
 * "warps" are 32-lane groups; an AMD wavefront is 64 lanes, so the shuffle
 * stays within 32 (width 32; HIP 5.2 has no *_sync shuffles), and a block
 * of one 32-lane warp synchronises with __syncthreads (HIP 5.2 has no
 * __syncwarp). HIP's NVIDIA platform: CUDA's own. */
#if defined(__HIP_PLATFORM_NVIDIA__)
#define XC_SHFL_DOWN32(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#define XC_SYNCWARP() __syncwarp()
#else
#define XC_SHFL_DOWN32(v, d) __shfl_down((v), (d), 32)
#define XC_SYNCWARP() __syncthreads()
#endif

#if defined(__HIP_PLATFORM_NVIDIA__)
/* HIP 5.2's NVIDIA platform has no hipLaunchHostFunc, and its
 * hipStreamAddCallback is cudaStreamAddCallback, which a stream capture
 * refuses (and the trampoline below, freed after its first run, could not
 * be replayed): CUDA's own call, as CUDA's plugin makes it. */
#define XC_HOST_FUNC_CALL "cudaLaunchHostFunc"
static inline hipError_t xc_vendor_launch_host_func(hipStream_t s, void (*fn)(void *), void *arg) {
    return hipCUDAErrorTohipError(cudaLaunchHostFunc(s, fn, arg));
}
#else
/* HIP 5.2 declares hipLaunchHostFunc but libamdhip64 does not export it:
 * the function runs from a stream callback instead, through a small
 * trampoline freed when it has run. */
typedef struct xc_hip_host_call {
    void (*fn)(void *);
    void *arg;
} xc_hip_host_call_t;

static inline void xc_hip_host_trampoline(hipStream_t s, hipError_t status, void *user) {
    (void)s;
    (void)status; /* as cudaLaunchHostFunc: the function runs in stream order regardless */
    xc_hip_host_call_t *call = (xc_hip_host_call_t *)user;
    void (*fn)(void *) = call->fn;
    void *arg = call->arg;
    free(call);
    fn(arg);
}

#define XC_HOST_FUNC_CALL "hipStreamAddCallback"
static inline hipError_t xc_vendor_launch_host_func(hipStream_t s, void (*fn)(void *), void *arg) {
    xc_hip_host_call_t *call = (xc_hip_host_call_t *)malloc(sizeof *call);
    if (call == NULL) return hipErrorOutOfMemory;
    call->fn = fn;
    call->arg = arg;
    hipError_t err = hipStreamAddCallback(s, xc_hip_host_trampoline, call, 0);
    if (err != hipSuccess) free(call);
    return err;
}
#endif

/* hipStreamGetCaptureInfo keeps CUDA 12's three arguments (cuda_graph.c). */
#define XC_CAPTURE_INFO_CALL "hipStreamGetCaptureInfo"
static inline hipError_t xc_vendor_capture_info(hipStream_t s, hipStreamCaptureStatus *status,
                                                unsigned long long *id) {
    return hipStreamGetCaptureInfo(s, status, id);
}

/* hipBLAS documents no workspace size: the largest cuBLAS recommends. */
static inline size_t xc_vendor_blas_workspace_bytes(int device) {
    (void)device;
    return (size_t)32 << 20;
}

#if defined(__HIP_PLATFORM_NVIDIA__)
/* On HIP's NVIDIA platform hipModuleLoadData is cuModuleLoadData: it takes
 * what the CUDA plugin takes (PTX, cubin, fatbin), never AMD code objects. */
#define XC_IMAGE_TAKES(format)                                                                     \
    ((format) == XDEV_IMAGE_PTX || (format) == XDEV_IMAGE_CUBIN || (format) == XDEV_IMAGE_FATBIN)
#define XC_IMAGE_KINDS "PTX, cubin and fatbin images (HIP's NVIDIA platform)"
#else
/* Kernel images hipModuleLoadData takes: code objects and offload bundles. */
#define XC_IMAGE_TAKES(format) ((format) == XDEV_IMAGE_HIP_CODE)
#define XC_IMAGE_KINDS "HIP code objects (hipcc --genco)"
#endif

/* "gfx90a:sramecc+:xnack-": the code a device runs, for messages; "sm_90"
 * on HIP's NVIDIA platform, whose hipGetDeviceProperties leaves gcnArchName
 * unwritten (it was read from an uninitialised struct there). */
static inline void xc_vendor_arch_name(int device, char *buf, size_t len) {
    hipDeviceProp_t p;
    memset(&p, 0, sizeof p);
    if (hipGetDeviceProperties(&p, device) != hipSuccess) {
        (void)hipGetLastError();
        snprintf(buf, len, "this device");
        return;
    }
#if defined(__HIP_PLATFORM_NVIDIA__)
    snprintf(buf, len, "sm_%d%d", p.major, p.minor);
#else
    size_t n = strnlen(p.gcnArchName, sizeof p.gcnArchName); /* a copy, cut to fit */
    if (n >= len) n = len - 1;
    memcpy(buf, p.gcnArchName, n);
    buf[n] = '\0';
#endif
}

/* HIP answers hipErrorInvalidValue for host memory it does not know
 * (unregistered, pageable); pinned and registered memory it reports as host
 * memory the DMA engine can use directly. */
static inline bool xc_vendor_host_is_pageable(const void *host) {
    hipPointerAttribute_t a;
    hipError_t err = hipPointerGetAttributes(&a, host);
    if (err != hipSuccess) {
        (void)hipGetLastError();
        return true;
    }
    return false;
}

/* Managed memory's prefetch and advice to device `device` or (negative)
 * the host (xc_vendor.h). */
#define XC_PREFETCH_CALL "hipMemPrefetchAsync"
#define XC_ADVISE_CALL "hipMemAdvise"
static inline hipError_t xc_vendor_mem_prefetch(const void *p, size_t n, int device,
                                                hipStream_t s) {
    return hipMemPrefetchAsync(p, n, device < 0 ? hipCpuDeviceId : device, s);
}
static inline hipError_t xc_vendor_mem_advise(const void *p, size_t n, int advice, int device) {
    return hipMemAdvise(p, n, (hipMemoryAdvise)advice, device < 0 ? hipCpuDeviceId : device);
}

#endif
