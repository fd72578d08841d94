/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_rtc.h - what run-time compilation's two files
 * share: cuda_rtc.c compiles (NVRTC, or hiprtc for HIP), cuda_rtc_find.c
 * finds and opens that library on the first compilation. How messages name
 * the compiler, and the environment variable that says where it is. */
#ifndef XDEV_CUDA_RTC_H
#define XDEV_CUDA_RTC_H

#include "cuda_internal.h"

#if XC_HAVE_RTC
#ifndef XC_VENDOR_HIP
#define XC_RTC_NAME "NVRTC"
#define XC_RTC_ENV "XDEV_NVRTC_PATH"
#else
#define XC_RTC_NAME "hiprtc"
#endif

#if !XC_RTC_LINKED
/* Find the compiler library in the documented order (README: "Run-time
 * compilation") and open it: XDEV_SUCCESS with its handle in *handle and
 * the path it was opened by in path; else XDEV_ERROR_NOT_SUPPORTED (not
 * found, or the one named does not open) or XDEV_ERROR_OUT_OF_MEMORY, with
 * the message, naming every place tried, in why. Sets no error state. */
xdev_status_t xc_rtc_open(void **handle, char *path, size_t path_len, char *why, size_t why_len);
#ifndef XC_VENDOR_HIP
/* The file xc_rtc_open would open NVRTC from, where its first steps find it
 * without loading it; false where only a later step would. */
bool xc_rtc_locate(char *out, size_t len);
#endif
#endif /* !XC_RTC_LINKED */
#endif /* XC_HAVE_RTC */

#endif /* XDEV_CUDA_RTC_H */
