/* SPDX-License-Identifier: Apache-2.0 */
/* shadow_kernels.c - kernels of the shadow execution's tests
 * (tests/test_shadow.c), built for the host, CUDA and HIP by
 * xdev_add_kernels. `off_by_one` carries an injected fault in its device
 * build only (XDEV_KERNEL_DEVICE_COMPILE): it leaves the last element
 * unwritten on a GPU, which XDEV_SHADOW=cpu must name. On the CPU both builds
 * are the host build, so there the fault does not exist. */
#include <xdev/kernel_lang.h>

XDEV_KERNEL(off_by_one, XDEV_PARAM(int, n), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
#if XDEV_KERNEL_DEVICE_COMPILE
    if (i < n - 1) out[i] = (int)i * 3 + 1; /* the injected fault: one short */
#else
    if (i < n) out[i] = (int)i * 3 + 1;
#endif
}

XDEV_KERNEL(iota3, XDEV_PARAM(int, n), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    if (i < n) out[i] = (int)i * 3 + 1;
}

/* Writes its own output pointer's address (low and high halves, then the
 * index): the device's allocation and the shadow's mirror are different
 * memory, so the replay's bytes always differ from the device's - on every
 * backend, with one build. */
XDEV_KERNEL(own_address, XDEV_PARAM(int, n), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    unsigned long long a = (unsigned long long)out;
    if (i < n) out[i] = i == 0 ? (int)(a & 0xffffffffu) : i == 1 ? (int)(a >> 32) : (int)i;
}

/* 1 plus a few units in the 13th digit that depend on where it writes: the
 * replay's bytes differ from the device's in the last bits, well within the
 * f64 tolerance (a double pointer's outputs are compared as doubles). */
XDEV_KERNEL(near_one, XDEV_PARAM(int, n), XDEV_PTR(double, out)) {
    long i = xdev_global_id(0);
    unsigned long long a = (unsigned long long)out % 1000003ull;
    if (i < n) out[i] = 1.0 + (double)(a + 1) * 1e-19;
}

/* Each work-item reads the shared slot its block wrote for it; the device
 * build leaves slot 7 unwritten (the injected fault: uninitialised shared
 * memory read on a GPU), which XDEV_SHADOW=cpu must name. */
XDEV_KERNEL_BLOCK(unset_shared, XDEV_PARAM(int, n), XDEV_PTR(int, out)) {
    XDEV_SHARED(int, tile, 256);
    XDEV_FOR_ITEMS {
        int t = (int)xdev_local_id(0);
#if XDEV_KERNEL_DEVICE_COMPILE
        if (t != 7) tile[t] = t + 1;
#else
        tile[t] = t + 1;
#endif
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        long i = xdev_global_id(0);
        if (i < n) out[i] = tile[xdev_local_id(0)];
    }
}
