/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/vendor/hip_trace.h - roctx under NVTX's names, for
 * backends/cuda_hip/cuda_trace.c in the HIP plugin (XC_TRACE_HEADER): markers
 * and ranges a ROCm profiler (rocprof, Omnitrace) shows. Built only where
 * CMake finds roctx (roctracer's roctx.h and libroctx64; Debian 12 has
 * none). Not run: no AMD GPU. */
#ifndef XDEV_HIP_TRACE_H
#define XDEV_HIP_TRACE_H

#include <roctracer/roctx.h>

#define nvtxMarkA roctxMarkA
#define nvtxRangePushA roctxRangePushA
#define nvtxRangePop roctxRangePop

#endif
