/* SPDX-License-Identifier: Apache-2.0 */
/* bench/kernels/graph_kernels.c - the kernels of the graph benchmarks' step
 * (bench/graph_step.h), in the dialect of xdev/kernel_lang.h: one file
 * gives the CPU backend's host code and the fatbin that both graph_bench
 * (through xdev_module_load) and bench/gpu/graph_raw_bench (cuModuleLoadData
 * of the same bundle's fatbin) launch, so both sides run the same code.
 *
 *   gk_lerp    y[i] += w * (x[i] - y[i])   (torch's lerp_ with a scalar weight)
 *   gk_scale   y[i] *= s                   (torch's mul_ by a scalar)
 *   gk_philox_uniform
 *              the raw side's random fill: uniform f32 from Philox4x32-10
 *              by xdev's rule (xdev/rng.h: element i takes word p0 + i of
 *              stream `seed`), one work-item per 4-word block. The key and
 *              p0 come from `state` (two uint64_t in device memory, read when
 *              the kernel runs: what a hand-built graph advances after each
 *              replay) or, when state is NULL, from seed and offset. xdev's
 *              own sides use xdev_rng_uniform instead.
 *   gk_advance the raw graph's last node: state[1] += words, so the next
 *              replay draws new numbers with no host work (as xdev's
 *              captured fills do, core/math/rng_capture.c). */
#include <xdev/kernel_lang.h>
#include <xdev/support/philox.h>

XDEV_KERNEL(gk_lerp, XDEV_PARAM(long, n), XDEV_PARAM(float, w), XDEV_PTR(const float, x),
            XDEV_PTR(float, y)) {
    long i = xdev_global_id(0);
    if (i < n) y[i] = y[i] + w * (x[i] - y[i]);
}

XDEV_KERNEL(gk_scale, XDEV_PARAM(long, n), XDEV_PARAM(float, s), XDEV_PTR(float, y)) {
    long i = xdev_global_id(0);
    if (i < n) y[i] = s * y[i];
}

/* Launch at least (n + 3) / 4 + 1 work-items: p0 need not be a multiple of 4. */
XDEV_KERNEL(gk_philox_uniform, XDEV_PARAM(long, n), XDEV_PARAM(uint64_t, seed),
            XDEV_PARAM(uint64_t, offset), XDEV_PTR(const uint64_t, state), XDEV_PTR(float, out)) {
    long t = xdev_global_id(0);
    uint64_t key = state != 0 ? state[0] : seed;
    uint64_t p0 = state != 0 ? state[1] : offset;
    uint64_t b = p0 / 4 + (uint64_t)t;
    if (4 * b >= p0 + (uint64_t)n) return;
    uint32_t w[4];
    xdev_philox_block(key, b, w);
    for (int k = 0; k < 4; k++) {
        uint64_t q = 4 * b + (uint64_t)k;
        if (q >= p0 && q < p0 + (uint64_t)n) out[q - p0] = xdev_philox_uniform_f32(w[k]);
    }
}

XDEV_KERNEL(gk_advance, XDEV_PARAM(uint64_t, words), XDEV_PTR(uint64_t, state)) {
    if (xdev_global_id(0) == 0) state[1] += words;
}
