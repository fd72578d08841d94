/* SPDX-License-Identifier: Apache-2.0 */
/* library_kernels.c - a host kernel library (xdev_add_kernel_library) that
 * the kernel suite opens at run time with XDEV_IMAGE_HOST_LIBRARY. */
#include <xdev/kernel_lang.h>

/* out[i] = i * k */
XDEV_KERNEL(lib_iota, XDEV_PARAM(int, n), XDEV_PARAM(int, k), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    if (i < n) out[i] = (int)i * k;
}
