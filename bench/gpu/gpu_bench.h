/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/gpu_bench.h - what the CUDA benchmarks (copy_bench, gemm_bench,
 * fft_overhead_bench, tf32_bench, the graph and launch benches) add to
 * bench_util.h's harness: a CUDA call check, --evict's cache-emptying writes,
 * the pair sides' orders, the cuda device under test and a deterministic
 * fill. */
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

/* --evict KIB (graph_raw_bench's pair side, fft_overhead_bench): one byte
 * of every 64-byte line of a host buffer written before a timed call, so
 * that the call starts with its code and data pushed out of the caches the
 * buffer covers (the state a busy host leaves them in). */
static inline void gb_evict(volatile unsigned char *buf, size_t bytes) {
    for (size_t at = 0; at < bytes; at += 64)
        buf[at]++;
}

/* The six orders of three sides that the one-process pair sides
 * (graph_raw_bench, kernel_launch_bench) take in turn: each side holds each
 * place and follows each other side equally often (a side right after
 * another may find the caches that one left). */
static const int gb_pair_order[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1},
                                        {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};

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
