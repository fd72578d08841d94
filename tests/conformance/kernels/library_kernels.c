/* SPDX-License-Identifier: Apache-2.0 */
/* library_kernels.c - a host kernel library (xdev_add_kernel_library) that
 * the kernel suite opens at run time with XDEV_IMAGE_HOST_LIBRARY. */
#include <xdev/kernel_lang.h>

/* out[i] = i * k */
XDEV_KERNEL(lib_iota, XDEV_PARAM(int, n), XDEV_PARAM(int, k), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    if (i < n) out[i] = (int)i * k;
}

/* out[i] = i, but block `bad` writes `off` elements away (a wild pointer:
 * the kernel_faults suite's fault in a kernel library). */
XDEV_KERNEL(lib_wild_write, XDEV_PARAM(int, bad), XDEV_PARAM(long, off), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    if (xdev_group_id(0) == bad)
        out[i + off] = 1;
    else
        out[i] = (int)i;
}
