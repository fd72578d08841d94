/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/backend_support.h - what a backend needs, beside the ABI, to honour
 * xdev's contract bit for bit; installed, so a plugin built out of tree has
 * the same tools as the backends in this repository:
 * - xdev/support/philox.h: Philox4x32-10 and the uniform/normal/integer
 *   transforms of xdev/rng.h (C11 host code and CUDA/HIP device code), so
 *   every backend writes the same random numbers;
 * - xdev/support/half.h: binary16 / bfloat16 <-> float with the rounding
 *   GPUs use;
 * - the error helpers below: report a failure (or a failed vendor call with
 *   its own error name) through the core's host services, formatted once;
 * - xdev_support_image_format_name: a kernel image format in words, the same
 *   in the core's messages and in every backend's. */
#ifndef XDEV_BACKEND_SUPPORT_H
#define XDEV_BACKEND_SUPPORT_H

#include <stdarg.h>

#include "xdev/backend.h"
#include "xdev/support/half.h"
#include "xdev/support/philox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Report `status` with a printf-style message through `host` (which may be
 * NULL or too old to have the slot: then only the status is returned). */
__attribute__((format(printf, 3, 0))) static inline xdev_status_t
xdev_support_fail_v(const xdev_host_services_t *host, xdev_status_t status, const char *fmt,
                    va_list ap) {
    xdev_status_t (*fn)(xdev_status_t, const char *, va_list) =
        XDEV_BACKEND_SLOT(host, set_error_v);
    return fn != NULL ? fn(status, fmt, ap) : status;
}

__attribute__((format(printf, 3, 4))) static inline xdev_status_t
xdev_support_fail(const xdev_host_services_t *host, xdev_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    xdev_status_t st = xdev_support_fail_v(host, status, fmt, ap);
    va_end(ap);
    return st;
}

/* A failed vendor call: "<what>: <vendor_name>: <vendor_text>", where `what`
 * (printf-style) names the call and the arguments that help, e.g.
 * xdev_support_vendor_fail_v(host, XDEV_ERROR_OUT_OF_MEMORY,
 *     "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc(%zu bytes)", ap). */
__attribute__((format(printf, 5, 0))) static inline xdev_status_t
xdev_support_vendor_fail_v(const xdev_host_services_t *host, xdev_status_t status,
                           const char *vendor_name, const char *vendor_text, const char *what,
                           va_list ap) {
    xdev_status_t (*fn)(xdev_status_t, const char *, const char *, const char *, va_list) =
        XDEV_BACKEND_SLOT(host, set_vendor_error);
    return fn != NULL ? fn(status, vendor_name, vendor_text, what, ap) : status;
}

/* A kernel image format (xdev/kernel.h) as messages name it ("a PTX image",
 * "the cuda backend does not load host kernel table images"); the core's
 * messages use it too (core/kernel/module.c). Inline: a plugin does not link
 * libxdev. */
static inline const char *xdev_support_image_format_name(xdev_image_format_t format) {
    switch (format) {
    case XDEV_IMAGE_PTX:
        return "PTX";
    case XDEV_IMAGE_CUBIN:
        return "cubin";
    case XDEV_IMAGE_FATBIN:
        return "fatbin";
    case XDEV_IMAGE_HIP_CODE:
        return "HIP code object";
    case XDEV_IMAGE_HOST_TABLE:
        return "host kernel table";
    case XDEV_IMAGE_HOST_LIBRARY:
        return "host kernel library";
    }
    return "unknown format";
}

#ifdef __cplusplus
}
#endif
#endif
