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

/* The primitives the GPU run times (bench/prim_bench_gpu.c says what each
 * computes on which data; --prims names them as prim_names there). */
enum prim_kind {
    PRIM_REDUCE,         /* f32 sum */
    PRIM_SCAN,           /* f32 inclusive sum */
    PRIM_SORT_KEYS,      /* u32 keys, every bit, ascending */
    PRIM_SORT_PAIRS,     /* u32 keys carrying u32 values */
    PRIM_SEG_REDUCE,     /* f32 sum per segment (int64 offsets) */
    PRIM_SEG_SORT,       /* u32 keys per segment */
    PRIM_HISTOGRAM,      /* f32 samples, even bins over [lower, upper), int64 counts */
    PRIM_SELECT_FLAGGED, /* u32 items, u8 flags, int64 count */
    PRIM_SELECT_IF,      /* f32 items where x > 0.5f, int64 count */
    PRIM_UNIQUE,         /* u32, int64 count */
    PRIM_RLE,            /* u32: uniques, int64 lengths, int64 count */
    PRIM_COUNT
};

/* One size's inputs in host memory, made from the index alone (the same for
 * every side); a primitive reads only its own arrays (the others may be NULL). */
typedef struct prim_data {
    size_t n;
    const float *f32;       /* reduce, scan, seg_reduce, histogram, select_if */
    const uint32_t *keys;   /* sort_keys, sort_pairs, seg_sort, select_flagged's items */
    const uint32_t *vals;   /* sort_pairs' values */
    const uint8_t *flags;   /* select_flagged */
    const uint32_t *runs;   /* unique, rle (sorted, with runs) */
    const int64_t *offsets; /* seg_reduce, seg_sort: num_segments + 1 */
    size_t num_segments;
    int num_bins; /* histogram: num_bins bins over [lower, upper) */
    double lower, upper;
} prim_data_t;

/* What prim_cub_fetch copies back: the output (reduce: one float; scan,
 * sorts, selects: n items; seg_reduce: num_segments floats; histogram:
 * num_bins counts), the second output (sort_pairs' values, rle's lengths),
 * or the int64 count of a select, unique or rle. */
enum prim_out { PRIM_OUT_MAIN, PRIM_OUT_AUX, PRIM_OUT_COUNT };

/* Device 0: a copy of prim's inputs, its outputs and CUB's temporaries for
 * it (sized once here, outside the timing), a stream. */
int prim_cub_setup(int prim, const prim_data_t *d);
int prim_cub_run(void);  /* one call of the set-up primitive, enqueued */
int prim_cub_sync(void); /* cudaStreamSynchronize */
int prim_cub_fetch(int which, void *host, size_t bytes); /* a prim_out to the host */
void prim_cub_teardown(void);

/* keys[0 .. n) sorted ascending in place with __gnu_parallel::sort on
 * OpenMP's threads (OMP_NUM_THREADS). */
int prim_gnu_sort_u32(uint32_t *keys, size_t n);

#ifdef __cplusplus
}
#endif

#endif
