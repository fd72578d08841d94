/* bench/gpu/gpu_bench.h - small helpers shared by the cuBLAS / cuFFT
 * benchmarks (gemm_bench, fft_overhead_bench, tf32_bench): call checks that
 * exit with the library's message, a monotonic clock, medians, the cuda
 * device under test and a deterministic fill. */
#ifndef XDEV_GPU_BENCH_H
#define XDEV_GPU_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "xdev/xdev.h"

#define XCHECK(call)                                                                               \
    do {                                                                                           \
        xdev_status_t xs_ = (call);                                                                \
        if (xs_ != XDEV_SUCCESS) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,                      \
                    xdev_status_string(xs_), xdev_last_error());                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CCHECK(call)                                                                               \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        if (ce_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(ce_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline double gb_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int gb_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). */
static inline double gb_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, gb_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The default device, which must be a cuda one (XDEV_BACKEND=cuda). */
static inline xdev_device_t gb_cuda_device(const char *prog) {
    XCHECK(xdev_init());
    xdev_device_t d;
    XCHECK(xdev_get_device(&d));
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
