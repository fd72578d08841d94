/* SPDX-License-Identifier: Apache-2.0 */
/* bench/prim_anchor.h - the anchor sides of prim_bench (bench/prim_bench.c),
 * each in a language of its own and called by the same harness (same data,
 * timer and loop as the xdev sides):
 *   CUB called directly (bench/gpu/prim_cub_anchor.cu, built where nvcc is:
 *     PRIM_BENCH_CUB), on cudaMalloc'd memory and a stream of its own;
 *   libstdc++'s parallel mode sort (bench/prim_sort_anchor.cpp, built where
 *     C++ and OpenMP are: PRIM_BENCH_GNU_SORT).
 * Every function returns 0, or prints why it failed on stderr and returns 1. */
#ifndef XDEV_BENCH_PRIM_ANCHOR_H
#define XDEV_BENCH_PRIM_ANCHOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device 0: input (a copy of host[0 .. n)), output and CUB's temporaries
 * for both operations, a stream. */
int prim_cub_setup(const float *host, size_t n);
int prim_cub_reduce(void);       /* out[0] = f32 sum of the input (cub::DeviceReduce::Sum) */
int prim_cub_scan(void);         /* out = inclusive f32 sum (cub::DeviceScan::InclusiveSum) */
int prim_cub_sync(void);         /* cudaStreamSynchronize */
int prim_cub_result(float *sum); /* out[0] to the host */
void prim_cub_teardown(void);

/* keys[0 .. n) sorted ascending in place with __gnu_parallel::sort on
 * OpenMP's threads (OMP_NUM_THREADS). */
int prim_gnu_sort_u32(uint32_t *keys, size_t n);

#ifdef __cplusplus
}
#endif

#endif
