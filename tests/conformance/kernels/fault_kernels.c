/* SPDX-License-Identifier: Apache-2.0 */
/* fault_kernels.c - kernels that fault on purpose, for the kernel_faults
 * suite (test_kernel_faults.c): a write through a wild pointer (in a plain
 * and in a barrier kernel), a barrier some work-items skip, a static
 * XDEV_SHARED array that does not fit next to the launch's dynamic shared
 * memory, and a plain copy for the checks that must keep working; the same
 * faults in the block form (XDEV_KERNEL_BLOCK: regions run as loops); and a
 * fiber-state check (each work-item's rounding mode across barriers). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* BUS_MCEERR_AO (host build) */
#endif
#include <xdev/kernel_lang.h>
#if !XDEV_KERNEL_DEVICE_COMPILE
#include <string.h>
#include <fenv.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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

/* out[i] = i; block 0's first work-item first sends its own thread an
 * asynchronous SIGBUS (BUS_MCEERR_AO, as the kernel reports a memory error
 * found in the background): not a fault of this kernel's (CPU only). */
XDEV_KERNEL(raise_mce_ao, XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
#if !XDEV_KERNEL_DEVICE_COMPILE
    if (i == 0) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = SIGBUS;
        si.si_code = BUS_MCEERR_AO;
        (void)syscall(SYS_rt_tgsigqueueinfo, (long)getpid(), (long)syscall(SYS_gettid), SIGBUS,
                      &si);
    }
#endif
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

/* ------------------------------------------------------ the block form */

/* wild_write in the block form: the fault is in the second region, after
 * every work-item of the block passed the barrier. */
XDEV_KERNEL_BLOCK(wild_write_block, XDEV_PARAM(int, bad), XDEV_PARAM(long, off),
                  XDEV_PTR(int, out)) {
    XDEV_FOR_ITEMS {
        out[xdev_global_id(0)] = -1;
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        long i = xdev_global_id(0);
        if (xdev_group_id(0) == bad && xdev_local_id(0) == 3)
            out[i + off] = 1;
        else
            out[i] = (int)i;
    }
}

/* shared_4k in the block form (claimed once, at the block's level). */
XDEV_KERNEL_BLOCK(shared_4k_block, XDEV_PTR(int, out)) {
    XDEV_SHARED(int, s, 1024);
    XDEV_FOR_ITEMS {
        s[xdev_local_id(0)] = xdev_local_id(0) + 1;
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        out[xdev_global_id(0)] = s[(xdev_local_id(0) + 1) % xdev_local_size(0)];
    }
}

/* xdev_barrier() inside a region: the CPU cannot honour it there. */
XDEV_KERNEL_BLOCK(barrier_in_region, XDEV_PTR(int, out)) {
    XDEV_FOR_ITEMS {
        out[xdev_global_id(0)] = 1;
        xdev_barrier();
    }
}

/* xdev_block_sync() inside a region (each work-item would pass it alone). */
XDEV_KERNEL_BLOCK(sync_in_region, XDEV_PTR(int, out)) {
    XDEV_FOR_ITEMS {
        out[xdev_global_id(0)] = 1;
        xdev_block_sync();
        out[xdev_global_id(0)] = 2;
    }
}

/* xdev_trap() by one work-item of block `bad`, in a region after a barrier. */
XDEV_KERNEL_BLOCK(trap_block, XDEV_PARAM(int, bad), XDEV_PTR(int, out)) {
    XDEV_FOR_ITEMS {
        out[xdev_global_id(0)] = 1;
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        if (xdev_group_id(0) == bad && xdev_local_id(0) == 5) xdev_trap();
        out[xdev_global_id(0)] = 2;
    }
}

/* ----------------------------------------------------- fiber state */

/* Work-item t sets rounding mode t % 4, then meets the others at barriers;
 * each then divides x[0] by x[1] (1 / 3: every mode rounds it differently)
 * twice, a barrier between, and restores round-to-nearest. A fiber switch
 * that did not keep each work-item's mode gives it its neighbour's. On
 * GPUs nothing (no fesetround there). */
XDEV_KERNEL_SYNC(rounding_per_item, XDEV_PTR(const float, x), XDEV_PTR(float, out)) {
#if !XDEV_KERNEL_DEVICE_COMPILE
    const int modes[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    int t = xdev_local_id(0);
    long i = xdev_global_id(0);
    fesetround(modes[t % 4]);
    xdev_barrier();
    volatile float a = x[0], b = x[1];
    out[2 * i] = a / b;
    xdev_barrier();
    volatile float c = x[0], d = x[1];
    out[2 * i + 1] = c / d;
    fesetround(FE_TONEAREST);
#else
    (void)x, (void)out;
#endif
}
