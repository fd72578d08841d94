/* SPDX-License-Identifier: Apache-2.0 */
/* bench/kernels/bench_kernels.c - the kernels the kernel benchmarks launch,
 * in the dialect of xdev/kernel_lang.h, so one file gives the CPU backend's
 * host code and the fatbin that bench/gpu/kernel_launch_bench.c loads on
 * both of its sides (xdev and raw cuLaunchKernel of the same image):
 *
 *   kb_empty   no parameters, no work: the launch path alone
 *   kb_saxpy   4 arguments, 2 of them pointers (xdev checks each at launch)
 *   kb_fill    a[i] = v (first touch and initial values)
 *   kb_triad   STREAM triad, a[i] = b[i] + s * c[i]: memory-bound
 *   kb_poly    `iters` dependent multiply-adds on each value: compute-bound
 *
 * One element per work-item, the GPU idiom, for every kernel: the CPU
 * backend runs a block as a loop over its work-items, which is what the CPU
 * benchmark measures against a hand-written OpenMP loop. */
#include <xdev/kernel_lang.h>

XDEV_KERNEL(kb_empty, XDEV_NO_PARAMS) {}

XDEV_KERNEL(kb_saxpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),
            XDEV_PTR(float, y)) {
    long i = xdev_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}

XDEV_KERNEL(kb_fill, XDEV_PARAM(long, n), XDEV_PTR(float, a), XDEV_PARAM(float, v)) {
    long i = xdev_global_id(0);
    if (i < n) a[i] = v;
}

XDEV_KERNEL(kb_triad, XDEV_PARAM(long, n), XDEV_PARAM(float, s), XDEV_PTR(float, a),
            XDEV_PTR(const float, b), XDEV_PTR(const float, c)) {
    long i = xdev_global_id(0);
    if (i < n) a[i] = b[i] + s * c[i];
}

/* The same arithmetic as kernel_cpu_bench.c's OpenMP loop (poly_omp), so
 * both give bit-identical values: a chain of `iters` multiply-adds that
 * converges towards 1 and never overflows or goes subnormal. */
XDEV_KERNEL(kb_poly, XDEV_PARAM(long, n), XDEV_PARAM(int, iters), XDEV_PTR(float, x)) {
    long i = xdev_global_id(0);
    if (i < n) {
        float v = x[i];
        for (int k = 0; k < iters; k++)
            v = v * 0.999f + 0.001f;
        x[i] = v;
    }
}
