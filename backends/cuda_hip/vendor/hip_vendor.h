/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/vendor/hip_vendor.h - the HIP side of xc_vendor.h (beside
 * it): maps every CUDA runtime name the shared backend sources use to its
 * HIP twin, so that the .c and .cu files of backends/cuda_hip build
 * libxdev-hip.so unchanged (ggml's vendors/hip.h pattern). Besides names,
 * only HIP's side of the macros and inline functions that xc_vendor.h lists
 * goes here: where HIP differs in meaning (host functions, capture info,
 * the BLAS workspace, kernel images, the device's code target). Checked
 * against HIP 5.2.3 (Debian 12's libamdhip64-dev). Plain C sources include
 * it with the C compiler (-D__HIP_PLATFORM_AMD__); device code with hipcc. */
#ifndef XDEV_HIP_VENDOR_H
#define XDEV_HIP_VENDOR_H

#include <stdio.h>
#include <stdlib.h>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h> /* device code: launches, threadIdx */
#else
#include <hip/hip_runtime_api.h>
#endif

/* ------------------------------------------------------------ types and constants */
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

#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamPerThread hipStreamPerThread
#define cudaEventDefault hipEventDefault
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventBlockingSync hipEventBlockingSync
#define cudaEventInterprocess hipEventInterprocess
#define cudaHostAllocPortable hipHostMallocPortable
#define cudaHostRegisterPortable hipHostRegisterPortable
#define cudaIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define cudaMemPoolAttrReleaseThreshold hipMemPoolAttrReleaseThreshold
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
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaThreadExchangeStreamCaptureMode hipThreadExchangeStreamCaptureMode
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamIsCapturing hipStreamIsCapturing
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphDestroy hipGraphDestroy

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
#define cuModuleGetGlobal hipModuleGetGlobal
#define cuMemcpyDtoH hipMemcpyDtoH
#define CUdeviceptr hipDeviceptr_t

/* NVRTC's names for hiprtc's (cuda_rtc.c), where its header is: hiprtc is
 * opened at run time (libhiprtc, or libamdhip64 itself before ROCm 6). */
#if defined(__has_include)
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
/* virtual memory slots: backends/hip/hip_vmm.c, over the runtime's hipMem* calls */
#define XC_HAVE_VMM 1
#define XC_DEVICE_TYPE XDEV_DEVICE_HIP
/* for the messages of an init that finds no usable GPU (cuda_backend.c) */
#define XC_DRIVER_NAME "AMD GPU (amdgpu)"
#define XC_RUNTIME_NAME "HIP"
#define XC_RUNTIME_MAJOR HIP_VERSION_MAJOR
#define XC_RUNTIME_MINOR HIP_VERSION_MINOR
#define XC_VISIBLE_VAR "HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES"
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

/* Kernel images hipModuleLoadData takes: code objects and offload bundles. */
#define XC_IMAGE_TAKES(format) ((format) == XDEV_IMAGE_HIP_CODE)
#define XC_IMAGE_KINDS "HIP code objects (hipcc --genco)"

/* "gfx90a:sramecc+:xnack-": the code a device runs, for messages. */
static inline void xc_vendor_arch_name(int device, char *buf, size_t len) {
    hipDeviceProp_t p;
    if (hipGetDeviceProperties(&p, device) != hipSuccess) {
        (void)hipGetLastError();
        snprintf(buf, len, "this device");
        return;
    }
    size_t n = strnlen(p.gcnArchName, sizeof p.gcnArchName); /* a copy, cut to fit */
    if (n >= len) n = len - 1;
    memcpy(buf, p.gcnArchName, n);
    buf[n] = '\0';
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

#endif
