/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/vendor/hip_fft.h - hipFFT under cuFFT's names, for
 * backends/cuda_hip/cuda_fft.c in the HIP plugin (XC_FFT_HEADER). Built only
 * where CMake finds hipFFT (ROCm's own packages; Debian 12 has none).
 * hipFFT mirrors cuFFT's plan API (MakePlanMany64, work areas, streams),
 * so this is names only; the output scaling is cuda_fft_scale.cu, compiled
 * by hipcc. Checked by compiling cuda_fft.c against hipFFT's own header;
 * not run: no AMD GPU. */
#ifndef XDEV_HIP_FFT_H
#define XDEV_HIP_FFT_H

#include <hipfft/hipfft.h>

#define cufftHandle hipfftHandle
#define cufftResult hipfftResult
#define cufftType hipfftType

#define CUFFT_SUCCESS HIPFFT_SUCCESS
#define CUFFT_INVALID_PLAN HIPFFT_INVALID_PLAN
#define CUFFT_ALLOC_FAILED HIPFFT_ALLOC_FAILED
#define CUFFT_INVALID_TYPE HIPFFT_INVALID_TYPE
#define CUFFT_INVALID_VALUE HIPFFT_INVALID_VALUE
#define CUFFT_INTERNAL_ERROR HIPFFT_INTERNAL_ERROR
#define CUFFT_EXEC_FAILED HIPFFT_EXEC_FAILED
#define CUFFT_SETUP_FAILED HIPFFT_SETUP_FAILED
#define CUFFT_INVALID_SIZE HIPFFT_INVALID_SIZE
#define CUFFT_UNALIGNED_DATA HIPFFT_UNALIGNED_DATA
#define CUFFT_INVALID_DEVICE HIPFFT_INVALID_DEVICE
#define CUFFT_NO_WORKSPACE HIPFFT_NO_WORKSPACE
#define CUFFT_NOT_IMPLEMENTED HIPFFT_NOT_IMPLEMENTED
#define CUFFT_NOT_SUPPORTED HIPFFT_NOT_SUPPORTED
#define CUFFT_C2C HIPFFT_C2C
#define CUFFT_R2C HIPFFT_R2C
#define CUFFT_C2R HIPFFT_C2R
#define CUFFT_Z2Z HIPFFT_Z2Z
#define CUFFT_D2Z HIPFFT_D2Z
#define CUFFT_Z2D HIPFFT_Z2D
#define CUFFT_FORWARD HIPFFT_FORWARD
#define CUFFT_INVERSE HIPFFT_BACKWARD

#define cufftCreate hipfftCreate
#define cufftDestroy hipfftDestroy
#define cufftSetAutoAllocation hipfftSetAutoAllocation
#define cufftMakePlanMany64 hipfftMakePlanMany64
#define cufftSetStream hipfftSetStream
#define cufftSetWorkArea hipfftSetWorkArea
#define cufftExecC2C hipfftExecC2C
#define cufftExecR2C hipfftExecR2C
#define cufftExecC2R hipfftExecC2R
#define cufftExecZ2Z hipfftExecZ2Z
#define cufftExecD2Z hipfftExecD2Z
#define cufftExecZ2D hipfftExecZ2D

#endif
