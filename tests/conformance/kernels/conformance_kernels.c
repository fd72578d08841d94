/* SPDX-License-Identifier: Apache-2.0 */
/* conformance_kernels.c - the kernels of the `kernel` conformance suite
 * (tests/conformance/test_kernel.c), in xdev's kernel dialect: built for the
 * host, CUDA and HIP by xdev_add_kernels. Integer kernels give bit-identical
 * results on every device; the float ones are exact by construction (sums of
 * small integers). */
#include <xdev/kernel_lang.h>

XDEV_KERNEL(saxpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),
            XDEV_PTR(float, y)) {
    long i = xdev_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}

XDEV_KERNEL(empty, XDEV_NO_PARAMS) {}

/* One partial sum per block: a tree in shared memory, a barrier per level;
 * in the block form (regions of work-items between xdev_block_sync(), the
 * level loop outside them, uniform), which the CPU runs as loops. */
XDEV_KERNEL_BLOCK(block_sum, XDEV_PARAM(int, n), XDEV_PTR(const int, x), XDEV_PTR(long long, out)) {
    XDEV_SHARED(long long, part, 1024);
    XDEV_FOR_ITEMS {
        long i = xdev_global_id(0);
        part[xdev_local_id(0)] = i < n ? x[i] : 0;
    }
    xdev_block_sync();
    for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {
        XDEV_FOR_ITEMS_BELOW(s) {
            int t = xdev_local_id(0);
            part[t] += part[t + s];
        }
        xdev_block_sync();
    }
    XDEV_FOR_ITEMS_BELOW(1) {
        out[xdev_group_id(0)] = part[0];
    }
}

/* The same tree as one work-item's program with xdev_barrier() (the CPU
 * runs each work-item as a fiber): results must equal block_sum's. */
XDEV_KERNEL_SYNC(block_sum_fiber, XDEV_PARAM(int, n), XDEV_PTR(const int, x),
                 XDEV_PTR(long long, out)) {
    XDEV_SHARED(long long, part, 1024);
    int t = xdev_local_id(0);
    long i = xdev_global_id(0);
    part[t] = i < n ? x[i] : 0;
    xdev_barrier();
    for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        xdev_barrier();
    }
    if (t == 0) out[xdev_group_id(0)] = part[0];
}

/* Reverse each block's slice through dynamic shared memory (block form),
 * staged in a static array first: on the CPU that one is a local of the
 * block's body, the dynamic one the block's memory; neither may clobber
 * the other. */
XDEV_KERNEL_BLOCK(block_reverse, XDEV_PTR(const int, x), XDEV_PTR(int, y)) {
    XDEV_SHARED(int, stage, 1024);
    XDEV_DYNAMIC_SHARED(int, tile);
    XDEV_FOR_ITEMS {
        stage[xdev_local_id(0)] = x[xdev_global_id(0)];
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        tile[xdev_local_id(0)] = stage[xdev_local_id(0)];
        stage[xdev_local_id(0)] = -1;
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        y[xdev_global_id(0)] = tile[xdev_local_size(0) - 1 - xdev_local_id(0)];
    }
}

/* The same with fibers. */
XDEV_KERNEL_SYNC(block_reverse_fiber, XDEV_PTR(const int, x), XDEV_PTR(int, y)) {
    XDEV_DYNAMIC_SHARED(int, tile);
    int t = xdev_local_id(0), b = xdev_local_size(0);
    long base = (long)xdev_group_id(0) * b;
    tile[t] = x[base + t];
    xdev_barrier();
    y[base + t] = tile[b - 1 - t];
}

/* Every atomic of the dialect, on one slot each (stats) or many (bins). */
XDEV_KERNEL(atomics, XDEV_PARAM(int, n), XDEV_PTR(const int, x), XDEV_PTR(unsigned, bins),
            XDEV_PARAM(int, nbins), XDEV_PTR(int, i32), XDEV_PTR(unsigned, u32),
            XDEV_PTR(long long, i64), XDEV_PTR(unsigned long long, u64), XDEV_PTR(float, f32),
            XDEV_PTR(double, f64)) {
    long i = xdev_global_id(0);
    if (i >= n) return;
    int v = x[i];
    xdev_atomic_add_u32(&bins[(unsigned)v % (unsigned)nbins], 1u);
    xdev_atomic_add_i32(&i32[0], v);
    xdev_atomic_min_i32(&i32[1], v);
    xdev_atomic_max_i32(&i32[2], v);
    xdev_atomic_min_u32(&u32[0], (unsigned)v);
    xdev_atomic_max_u32(&u32[1], (unsigned)v);
    xdev_atomic_add_i64(&i64[0], (long long)v * 1000000007ll);
    xdev_atomic_min_i64(&i64[1], -(long long)v * 4294967296ll);
    xdev_atomic_max_i64(&i64[2], (long long)v * 4294967296ll);
    xdev_atomic_add_u64(&u64[0], (unsigned long long)v);
    xdev_atomic_min_u64(&u64[1], (unsigned long long)v + 4294967296ull);
    xdev_atomic_max_u64(&u64[2], (unsigned long long)v + 4294967296ull);
    xdev_atomic_add_f32(&f32[0], 1.0f);
    xdev_atomic_min_f32(&f32[1], (float)v - 0.5f);
    xdev_atomic_max_f32(&f32[2], (float)v + 0.5f);
    xdev_atomic_add_f64(&f64[0], (double)v);
    xdev_atomic_min_f64(&f64[1], (double)v - 0.25);
    xdev_atomic_max_f64(&f64[2], (double)v + 0.25);
}

/* 5-point Laplacian on an nx x ny grid (interior points), a 2-D launch. */
XDEV_KERNEL(stencil, XDEV_PARAM(int, nx), XDEV_PARAM(int, ny), XDEV_PTR(const float, u),
            XDEV_PTR(float, out)) {
    long x = xdev_global_id(0), y = xdev_global_id(1);
    if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
    long c = y * nx + x;
    out[c] = u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] - 4.0f * u[c];
}

/* Where each work-item of a 3-D launch thinks it is. */
XDEV_KERNEL(ids3d, XDEV_PTR(int, out)) {
    long gx = xdev_global_id(0), gy = xdev_global_id(1), gz = xdev_global_id(2);
    long sx = xdev_global_size(0), sy = xdev_global_size(1);
    long at = (gz * sy + gy) * sx + gx;
    out[4 * at + 0] = (int)gx;
    out[4 * at + 1] = (int)gy;
    out[4 * at + 2] = (int)gz;
    out[4 * at + 3] = xdev_local_id(0) + 10 * xdev_local_id(1) + 100 * xdev_local_id(2) +
                      1000 * (xdev_group_id(0) + 10 * xdev_group_id(1) + 100 * xdev_group_id(2)) +
                      1000000 * (xdev_num_groups(0) * xdev_local_size(0));
}

/* The same in the block form: the local part kept per work-item across a
 * barrier (XDEV_PRIVATE), in a 3-D block. */
XDEV_KERNEL_BLOCK(ids3d_block, XDEV_PTR(int, out)) {
    XDEV_PRIVATE(int, local);
    XDEV_FOR_ITEMS {
        xdev_priv(local) = xdev_local_id(0) + 10 * xdev_local_id(1) + 100 * xdev_local_id(2);
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        long gx = xdev_global_id(0), gy = xdev_global_id(1), gz = xdev_global_id(2);
        long at = (gz * xdev_global_size(1) + gy) * xdev_global_size(0) + gx;
        out[4 * at + 0] = (int)gx;
        out[4 * at + 1] = (int)gy;
        out[4 * at + 2] = (int)gz;
        out[4 * at + 3] =
            xdev_priv(local) +
            1000 * (xdev_group_id(0) + 10 * xdev_group_id(1) + 100 * xdev_group_id(2)) +
            1000000 * (xdev_num_groups(0) * xdev_local_size(0));
    }
}

typedef struct conf_pod {
    int a;
    double b;
    float c[3];
} conf_pod_t;

/* Every kind of argument, written back for the host to compare. */
XDEV_KERNEL(arg_types, XDEV_PARAM(signed char, i8), XDEV_PARAM(short, i16), XDEV_PARAM(int, i32),
            XDEV_PARAM(unsigned, u32), XDEV_PARAM(long long, i64),
            XDEV_PARAM(unsigned long long, u64), XDEV_PARAM(float, f32), XDEV_PARAM(double, f64),
            XDEV_PARAM(uint16_t, f16bits), XDEV_PARAM(conf_pod_t, pod), XDEV_PTR(double, out)) {
    if (xdev_global_id(0) != 0) return;
    out[0] = i8;
    out[1] = i16;
    out[2] = i32;
    out[3] = u32;
    out[4] = (double)i64;
    out[5] = (double)u64;
    out[6] = f32;
    out[7] = f64;
    out[8] = xdev_load_f16(&f16bits);
    out[9] = pod.a;
    out[10] = pod.b;
    out[11] = pod.c[0] + pod.c[1] + pod.c[2];
}

/* f32 -> f16 / bf16 -> f32 through the dialect's helpers. */
XDEV_KERNEL(half_round_trip, XDEV_PARAM(int, n), XDEV_PTR(const float, x), XDEV_PTR(uint16_t, h),
            XDEV_PTR(uint16_t, b)) {
    long i = xdev_global_id(0);
    if (i >= n) return;
    xdev_store_f16(&h[i], x[i]);
    xdev_store_bf16(&b[i], x[i]);
}

/* Stops when asked to: the launch fails at the next synchronisation. */
XDEV_KERNEL(trap_if, XDEV_PARAM(int, flag), XDEV_PTR(int, out)) {
    if (flag) xdev_trap();
    out[xdev_global_id(0)] = 1;
}

/* A barrier in a kernel declared without XDEV_KERNEL_SYNC (the CPU refuses it). */
XDEV_KERNEL(undeclared_barrier, XDEV_PTR(int, out)) {
    out[xdev_global_id(0)] = 1;
    xdev_barrier();
}

/* Busy work for ordering tests: out[i] = i after `spins` rounds of an LCG
 * whose value lands in out[n + i] (so the loop is not optimised away). */
XDEV_KERNEL(slow_fill, XDEV_PARAM(int, n), XDEV_PARAM(int, spins), XDEV_PTR(int, out)) {
    long i = xdev_global_id(0);
    if (i >= n) return;
    unsigned v = (unsigned)i;
    for (int k = 0; k < spins; k++)
        v = v * 1664525u + 1013904223u;
    out[n + i] = (int)v;
    out[i] = (int)i;
}
