/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/fft.h - fast Fourier transforms on any backend, with torch's
 * per-device plan cache.
 *
 * A transform is described by an xdev_fft_desc_t (cuFFT's "advanced data
 * layout": rank 1..3, sizes, batch, embeddings, strides, distances) and run
 * with xdev_fft_exec, which finds the backend plan for the descriptor in the
 * device's plan cache or creates it. As everything else, the transform is
 * enqueued on a stream (the output's device's current stream when NULL).
 *
 * Layout (cuFFT and FFTW's plan_many): element x of batch b of the input is
 *   in[b * idist + ((x0 * inembed[1] + x1) * inembed[2] + x2) * istride]
 * for rank 3 (rank 1: in[b * idist + x0 * istride]); the same with o* for
 * the output. Sizes n[] are slowest-varying first. A zero embedding, stride
 * or distance means "contiguous": inembed[i] = the logical size of that
 * dimension, istride = 1, idist = istride times the product of inembed
 * (inembed[0] only matters through idist). Logical sizes:
 * c2c n in and out; r2c n real in, complex out with the last dimension
 * n[rank-1]/2 + 1 (Hermitian half); c2r the reverse.
 *
 * Transforms are unnormalised, like cuFFT and FFTW: forward then inverse
 * multiplies by N = n[0]*...*n[rank-1]. xdev_fft_norm_t applies torch.fft's
 * `norm` instead: BACKWARD (torch's default) scales the inverse by 1/N,
 * FORWARD scales the forward by 1/N, ORTHO scales both by 1/sqrt(N).
 *
 * c2r may overwrite its input (as in cuFFT and FFTW); c2c and r2c do not.
 * In-place transforms (in == out) are allowed; otherwise in and out must not
 * overlap (XDEV_ERROR_INVALID_VALUE says so); r2c/c2r in place need the padded layout (real rows of
 * 2*(n/2+1) elements) given through the embeddings. */
#ifndef XDEV_FFT_H
#define XDEV_FFT_H

#include <stdint.h>

#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XDEV_FFT_MAX_RANK 3

typedef enum xdev_fft_type {
    XDEV_FFT_C2C = 0, /* complex -> complex, forward or inverse */
    XDEV_FFT_R2C = 1, /* real -> Hermitian half (forward only) */
    XDEV_FFT_C2R = 2, /* Hermitian half -> real (inverse only) */
} xdev_fft_type_t;

typedef enum xdev_fft_precision {
    XDEV_FFT_F32 = 0, /* float / {float re, im} */
    XDEV_FFT_F64 = 1, /* double / {double re, im} */
} xdev_fft_precision_t;

/* The sign of the exponent, as in cuFFT and FFTW. */
typedef enum xdev_fft_direction {
    XDEV_FFT_FORWARD = -1,
    XDEV_FFT_INVERSE = 1,
} xdev_fft_direction_t;

typedef enum xdev_fft_norm {
    XDEV_FFT_NORM_NONE = 0,     /* no scaling either way (cuFFT, FFTW) */
    XDEV_FFT_NORM_BACKWARD = 1, /* torch's default: inverse * 1/N */
    XDEV_FFT_NORM_ORTHO = 2,    /* both * 1/sqrt(N) */
    XDEV_FFT_NORM_FORWARD = 3,  /* forward * 1/N */
} xdev_fft_norm_t;

/* Set size = sizeof(xdev_fft_desc_t) (xdev_fft_desc_basic does); fields are
 * only ever appended. */
typedef struct xdev_fft_desc {
    size_t size;
    xdev_fft_type_t type;
    xdev_fft_precision_t precision;
    int rank;                           /* 1..3 */
    int64_t n[XDEV_FFT_MAX_RANK];       /* logical sizes, slowest first */
    int64_t batch;                      /* transforms, >= 1 */
    int64_t inembed[XDEV_FFT_MAX_RANK]; /* input storage sizes (0 = n) */
    int64_t istride;                    /* between input elements (0 = 1) */
    int64_t idist;                      /* between input batches (0 = contiguous) */
    int64_t onembed[XDEV_FFT_MAX_RANK]; /* output storage sizes (0 = n) */
    int64_t ostride;
    int64_t odist;
} xdev_fft_desc_t;

/* A contiguous (basic layout) descriptor: n[0..rank-1], `batch` transforms
 * back to back. */
static inline xdev_fft_desc_t xdev_fft_desc_basic(xdev_fft_type_t type,
                                                  xdev_fft_precision_t precision, int rank,
                                                  const int64_t *n, int64_t batch) {
#ifdef __cplusplus
    xdev_fft_desc_t d = {}; /* {0} warns in C++ (-Wmissing-field-initializers) */
#else
    xdev_fft_desc_t d = {0};
#endif
    d.size = sizeof d;
    d.type = type;
    d.precision = precision;
    d.rank = rank;
    for (int i = 0; i < rank && i < XDEV_FFT_MAX_RANK; i++)
        d.n[i] = n[i];
    d.batch = batch;
    return d;
}

/* Run the transform `desc` from `in` to `out` (device memory of one device).
 * r2c must be XDEV_FFT_FORWARD and c2r XDEV_FFT_INVERSE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_fft_exec(const xdev_fft_desc_t *desc, void *in, void *out,
                                                 xdev_fft_direction_t direction,
                                                 xdev_fft_norm_t norm, xdev_stream_t stream);

/* The factor `norm` applies to a transform of `desc` in `direction`. */
XDEV_API XDEV_RESULT xdev_status_t xdev_fft_norm_scale(const xdev_fft_desc_t *desc,
                                                       xdev_fft_direction_t direction,
                                                       xdev_fft_norm_t norm, double *scale);

/* The plan cache of a device (torch.backends.cuda.cufft_plan_cache[i]):
 * an LRU of at most max_size plans (default 4096), keyed by everything that
 * makes plans differ (type, precision, rank, sizes, batch, embeddings,
 * strides, distances) and by the stream: cuFFT and hipFFT plans must not
 * run on two streams at once, so a transform executed on a second stream
 * gets (and caches) a plan of its own. Lowering max_size evicts least recently used plans;
 * 0 disables caching (every exec creates and destroys its plan). Each
 * device's cache is independent and thread-safe. */
XDEV_API XDEV_RESULT xdev_status_t xdev_fft_plan_cache_max_size(xdev_device_t device, int64_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_fft_plan_cache_set_max_size(xdev_device_t device,
                                                                    int64_t max_size);
XDEV_API XDEV_RESULT xdev_status_t xdev_fft_plan_cache_size(xdev_device_t device, int64_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_fft_plan_cache_clear(xdev_device_t device);

typedef struct xdev_fft_plan_cache_stats {
    int64_t size;      /* plans cached now */
    int64_t max_size;  /* the limit */
    int64_t hits;      /* execs that found their plan */
    int64_t misses;    /* execs that created a plan (an exec that could
                          not allocate its plan's work area counts
                          neither, and a plan made for it is not cached) */
    int64_t evictions; /* plans dropped for max_size (not clear) */
} xdev_fft_plan_cache_stats_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_fft_plan_cache_stats(xdev_device_t device,
                                                             xdev_fft_plan_cache_stats_t *out);
/* hits, misses and evictions restart from zero. */
XDEV_API XDEV_RESULT xdev_status_t xdev_fft_plan_cache_reset_stats(xdev_device_t device);

#ifdef __cplusplus
}
#endif
#endif
