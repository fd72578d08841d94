/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/gpu_bench.h - what the CUDA benchmarks (copy_bench, gemm_bench,
 * fft_overhead_bench, tf32_bench) add to bench_util.h's harness: a CUDA call
 * check, the cuda device under test and a deterministic fill. */
#ifndef XDEV_GPU_BENCH_H
#define XDEV_GPU_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "../bench_util.h"

#define CCHECK(call)                                                                               \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        if (ce_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(ce_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The default device, which must be a cuda one (XDEV_BACKEND=cuda). */
static inline xdev_device_t gb_cuda_device(const char *prog) {
    CHECK(xdev_init());
    xdev_device_t d;
    CHECK(xdev_get_device(&d));
    if (d.type != XDEV_DEVICE_CUDA) {
        fprintf(stderr, "%s: the default device is not cuda (set XDEV_BACKEND=cuda)\n", prog);
        exit(1);
    }
    return d;
}

/* Uniform in [-1, 1) from a 64-bit LCG state. */
static inline double gb_uniform(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) * 0x1p-52 - 1.0;
}

#endif
