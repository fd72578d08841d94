/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels of the install test's consumer, built by the installed
 * xdev_add_kernels(): one plain kernel and one that synchronises its block
 * (XDEV_KERNEL_SYNC, shared memory and barriers). */
#include <xdev/kernel_lang.h>

XDEV_KERNEL(consumer_axpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),
            XDEV_PTR(float, y)) {
    long i = xdev_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}

/* Sums x into *out: each block reduces its 64 values in shared memory. */
XDEV_KERNEL_SYNC(consumer_sum, XDEV_PARAM(long, n), XDEV_PTR(const float, x),
                 XDEV_PTR(float, out)) {
    XDEV_SHARED(float, part, 64);
    int l = xdev_local_id(0);
    long i = xdev_global_id(0);
    part[l] = i < n ? x[i] : 0.0f;
    xdev_barrier();
    for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {
        if (l < s) part[l] += part[l + s];
        xdev_barrier();
    }
    if (l == 0) xdev_atomic_add_f32(out, part[0]);
}
