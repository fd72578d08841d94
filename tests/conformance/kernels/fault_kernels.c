/* SPDX-License-Identifier: Apache-2.0 */
/* fault_kernels.c - kernels that fault on purpose, for the kernel_faults
 * suite (test_kernel_faults.c): a write through a wild pointer (in a plain
 * and in a barrier kernel), a barrier some work-items skip, a static
 * XDEV_SHARED array that does not fit next to the launch's dynamic shared
 * memory, and a plain copy for the checks that must keep working. */
#include <xdev/kernel_lang.h>

/* out[i] = i; block `bad` writes `off` elements past its element instead
 * (off = 1 << 40: far outside any mapping). */
XDEV_KERNEL(wild_write, XDEV_PARAM(int, bad), XDEV_PARAM(long, off), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    if (xdev_group_id(0) == bad)
        out[i + off] = 1;
    else
        out[i] = (int)i;
}

/* The same from a kernel with a barrier: the fault lands on a work-item's
 * fiber, after every work-item of the block passed the barrier once. */
XDEV_KERNEL_SYNC(wild_write_sync, XDEV_PARAM(int, bad), XDEV_PARAM(long, off), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    out[i] = -1;
    xdev_barrier();
    if (xdev_group_id(0) == bad && xdev_local_id(0) == 3)
        out[i + off] = 1;
    else
        out[i] = (int)i;
}

/* out[i] = i + k: the launch that must keep working next to faults. */
XDEV_KERNEL(plus_k, XDEV_PARAM(int, n), XDEV_PARAM(int, k), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    if (i < n) out[i] = (int)i + k;
}

/* Work-item 0 returns while the others wait at the barrier. */
XDEV_KERNEL_SYNC(divergent_barrier, XDEV_PTR(int, out)) {
    if (xdev_local_id(0) == 0) return;
    xdev_barrier();
    out[xdev_global_id(0)] = 1;
}

/* A 4 KiB static shared array: with 46 KiB of dynamic shared memory it is
 * over the 48 KiB per block, so no work-item may use it. */
XDEV_KERNEL(shared_4k, XDEV_PTR(int, out)) {
    XDEV_SHARED(volatile int, s, 1024); /* volatile: a GPU compiler keeps the 4 KiB */
    int l = xdev_local_id(0);
    s[l] = l + 1;
    out[xdev_global_id(0)] = s[l];
}

/* The same in a kernel with a barrier (work-items on fibers). */
XDEV_KERNEL_SYNC(shared_4k_sync, XDEV_PTR(int, out)) {
    XDEV_SHARED(int, s, 1024);
    int l = xdev_local_id(0);
    s[l] = l + 1;
    xdev_barrier();
    out[xdev_global_id(0)] = s[(l + 1) % xdev_local_size(0)];
}
