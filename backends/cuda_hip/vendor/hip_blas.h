/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/vendor/hip_blas.h - hipBLAS under cuBLAS's names, for
 * backends/cuda_hip/cuda_blas.c in the HIP plugin (XC_BLAS_HEADER). Built only
 * where CMake finds hipBLAS (ROCm's own packages; Debian 12 has none).
 *
 * hipBLAS 2.x with HIPBLAS_V2 takes hipDataType and hipblasComputeType_t,
 * which mirror cuBLAS's cudaDataType and cublasComputeType_t, and has the
 * _64 entry points; so the mapping is names only, except TF32:
 * XC_BLAS_COMPUTE_TF32 is plain 32F here, since hipBLAS takes
 * HIPBLAS_COMPUTE_32F_FAST_TF32 on its cuBLAS backend only (an f32 GEMM that
 * may use TF32 may also run in full f32). Checked by compiling
 * cuda_blas.c against hipBLAS's own header (hipblas.h, hipblas-common.h);
 * not run: no AMD GPU. */
#ifndef XDEV_HIP_BLAS_H
#define XDEV_HIP_BLAS_H

#define HIPBLAS_V2
#include <hipblas/hipblas.h>

#define cublasHandle_t hipblasHandle_t
#define cublasStatus_t hipblasStatus_t
#define cublasOperation_t hipblasOperation_t
#define cublasPointerMode_t hipblasPointerMode_t
#define cublasComputeType_t hipblasComputeType_t
#define cudaDataType hipDataType

#define CUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define CUBLAS_STATUS_ALLOC_FAILED HIPBLAS_STATUS_ALLOC_FAILED
#define CUBLAS_STATUS_NOT_SUPPORTED HIPBLAS_STATUS_NOT_SUPPORTED
#define CUBLAS_STATUS_ARCH_MISMATCH HIPBLAS_STATUS_ARCH_MISMATCH
#define CUBLAS_OP_N HIPBLAS_OP_N
#define CUBLAS_OP_T HIPBLAS_OP_T
#define CUBLAS_OP_C HIPBLAS_OP_C
#define CUBLAS_POINTER_MODE_HOST HIPBLAS_POINTER_MODE_HOST
#define CUBLAS_POINTER_MODE_DEVICE HIPBLAS_POINTER_MODE_DEVICE
#define CUBLAS_COMPUTE_32F HIPBLAS_COMPUTE_32F
#define CUBLAS_COMPUTE_32F_FAST_TF32 HIPBLAS_COMPUTE_32F_FAST_TF32
#define CUBLAS_COMPUTE_64F HIPBLAS_COMPUTE_64F
#define CUBLAS_GEMM_DEFAULT HIPBLAS_GEMM_DEFAULT
#define CUDA_R_16F HIP_R_16F
#define CUDA_R_16BF HIP_R_16BF
#define CUDA_R_32F HIP_R_32F
#define CUDA_R_64F HIP_R_64F
#define CUDA_C_32F HIP_C_32F
#define CUDA_C_64F HIP_C_64F
#define cudaDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor

#define cublasCreate hipblasCreate
#define cublasSetStream hipblasSetStream
#define cublasSetPointerMode hipblasSetPointerMode
#define cublasGetStatusName hipblasStatusToString
#define cublasGetStatusString(s) "hipBLAS status" /* hipBLAS has one string: the name */
#define cublasGemmEx hipblasGemmEx
#define cublasGemmEx_64 hipblasGemmEx_64
#define cublasGemmStridedBatchedEx hipblasGemmStridedBatchedEx
#define cublasGemmStridedBatchedEx_64 hipblasGemmStridedBatchedEx_64
#define cublasAxpyEx_64 hipblasAxpyEx_64
#define cublasDotEx_64 hipblasDotEx_64
#define cublasNrm2Ex_64 hipblasNrm2Ex_64
#define cublasScalEx_64 hipblasScalEx_64

#define XC_BLAS_COMPUTE_TF32 HIPBLAS_COMPUTE_32F

/* A workspace of the caller's (cuda_blas.c sets one in captures):
 * hipblasSetWorkspace came with hipBLAS 3.0 (ROCm 7.0); before it rocBLAS
 * keeps its own, and captures of hipBLAS calls use that. */
#if defined(hipblasVersionMajor) && hipblasVersionMajor >= 3
#define XC_BLAS_WORKSPACE 1
#define cublasSetWorkspace hipblasSetWorkspace
#else
#define XC_BLAS_WORKSPACE 0
#endif

#endif
