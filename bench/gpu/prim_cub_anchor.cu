/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/prim_cub_anchor.cu - prim_bench's CUB side (bench/prim_anchor.h):
 * every primitive the GPU run times, as CUB called directly the way an
 * application would, on memory and a stream of its own; the temporaries are
 * sized and allocated once per primitive and size, outside the timing
 * (xdev's come from its caching allocator, a hit after the first call).
 *
 * Each call is the one backends/cuda_hip/cuda_prim*.cu makes for xdev's
 * call, or the one an application would make for the same result:
 *   reduce          DeviceReduce::Sum (f32)                     = xdev's
 *   scan            DeviceScan::InclusiveSum (f32)              = xdev's
 *   sort_keys       DeviceRadixSort::SortKeys (u32, bits 0..32) = xdev's
 *   sort_pairs      DeviceRadixSort::SortPairs (u32 -> u32)     = xdev's
 *   seg_reduce      DeviceSegmentedReduce::Sum over the int64 offsets (xdev:
 *                   Reduce with + over clamped bounds)
 *   seg_sort        DeviceSegmentedRadixSort::SortKeys over the int64 offsets
 *                   (xdev: the same sort over int bounds it first clamps)
 *   histogram       DeviceHistogram::HistogramEven of f32 samples with double
 *                   levels and 64-bit counters (xdev: a kernel of its own
 *                   computing the bin in double, int64 counts; double levels
 *                   make CUB's bins exactly xdev's and the host's)
 *   select_flagged  DeviceSelect::Flagged (u32 items, u8 flags) = xdev's
 *   select_if       DeviceSelect::If with x > 0.5f (xdev: the predicate
 *                   "in0 > 0.5f" read as a comparison, the select_compare
 *                   slot: If with {op, value} = xdev's, ABI 3.9)
 *   unique          DeviceSelect::Unique (u32)                  = xdev's
 *   rle             DeviceRunLengthEncode::Encode (u32, int64 lengths) = xdev's
 * Counts of selected items are int64 in device memory, as xdev's. */
#include <cstdio>

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cuda_runtime.h>

#include "prim_anchor.h"

namespace {

/* select_if's predicate: xdev_prim_select_if's "in0 > 0.5f" */
struct above_half {
    __host__ __device__ bool operator()(const float &x) const {
        return x > 0.5f;
    }
};

struct state {
    int prim = -1;
    size_t n = 0, ns = 0, out_bytes = 0, aux_bytes = 0;
    int nb = 0;
    double lower = 0, upper = 0;
    void *in = nullptr, *in2 = nullptr, *out = nullptr, *aux = nullptr;
    int64_t *off = nullptr, *num = nullptr;
    void *temp = nullptr;
    size_t temp_bytes = 0;
    cudaStream_t s = nullptr;
} g;

int fail(cudaError_t err, const char *what) {
    if (err == cudaSuccess) return 0;
    fprintf(stderr, "prim_bench cub side: %s: %s\n", what, cudaGetErrorString(err));
    return 1;
}

/* The set-up primitive on temp (nullptr: the size query into tb). */
cudaError_t call(void *t, size_t &tb) {
    const size_t n = g.n;
    const float *f = static_cast<const float *>(g.in);
    const uint32_t *k = static_cast<const uint32_t *>(g.in);
    switch (g.prim) {
    case PRIM_REDUCE:
        return cub::DeviceReduce::Sum(t, tb, f, static_cast<float *>(g.out), n, g.s);
    case PRIM_SCAN:
        return cub::DeviceScan::InclusiveSum(t, tb, f, static_cast<float *>(g.out), n, g.s);
    case PRIM_SORT_KEYS:
        return cub::DeviceRadixSort::SortKeys(t, tb, k, static_cast<uint32_t *>(g.out), n, 0, 32,
                                              g.s);
    case PRIM_SORT_PAIRS:
        return cub::DeviceRadixSort::SortPairs(t, tb, k, static_cast<uint32_t *>(g.out),
                                               static_cast<const uint32_t *>(g.in2),
                                               static_cast<uint32_t *>(g.aux), n, 0, 32, g.s);
    case PRIM_SEG_REDUCE:
        return cub::DeviceSegmentedReduce::Sum(t, tb, f, static_cast<float *>(g.out), (int64_t)g.ns,
                                               g.off, g.off + 1, g.s);
    case PRIM_SEG_SORT:
        return cub::DeviceSegmentedRadixSort::SortKeys(t, tb, k, static_cast<uint32_t *>(g.out),
                                                       (int)n, (int)g.ns, g.off, g.off + 1, 0, 32,
                                                       g.s);
    case PRIM_HISTOGRAM:
        return cub::DeviceHistogram::HistogramEven(t, tb, f,
                                                   static_cast<unsigned long long *>(g.out),
                                                   g.nb + 1, g.lower, g.upper, (int64_t)n, g.s);
    case PRIM_SELECT_FLAGGED:
        return cub::DeviceSelect::Flagged(t, tb, k, static_cast<const uint8_t *>(g.in2),
                                          static_cast<uint32_t *>(g.out), g.num, (int64_t)n, g.s);
    case PRIM_SELECT_IF:
        return cub::DeviceSelect::If(t, tb, f, static_cast<float *>(g.out), g.num, (int64_t)n,
                                     above_half{}, g.s);
    case PRIM_UNIQUE:
        return cub::DeviceSelect::Unique(t, tb, k, static_cast<uint32_t *>(g.out), g.num,
                                         (int64_t)n, g.s);
    case PRIM_RLE:
        return cub::DeviceRunLengthEncode::Encode(t, tb, k, static_cast<uint32_t *>(g.out),
                                                  static_cast<int64_t *>(g.aux), g.num, (int)n,
                                                  g.s);
    default:
        return cudaErrorInvalidValue;
    }
}

/* cudaMalloc of bytes (at least 1) and, with src, a copy of it. */
int alloc(void **p, size_t bytes, const void *src, const char *what) {
    if (fail(cudaMalloc(p, bytes > 0 ? bytes : 1), what)) return 1;
    if (src != nullptr && fail(cudaMemcpy(*p, src, bytes, cudaMemcpyHostToDevice), what)) return 1;
    return 0;
}

} // namespace

extern "C" int prim_cub_setup(int prim, const prim_data_t *d) {
    g.prim = prim;
    g.n = d->n;
    g.ns = d->num_segments;
    g.nb = d->num_bins;
    g.lower = d->lower;
    g.upper = d->upper;
    const size_t n = d->n;
    if (prim < 0 || prim >= PRIM_COUNT) return fail(cudaErrorInvalidValue, "unknown primitive");
    if ((prim == PRIM_SEG_SORT || prim == PRIM_RLE) && n > 0x7fffffffull)
        return fail(cudaErrorInvalidValue, "more than 2^31 - 1 items (CUB counts them in int)");
    if (fail(cudaSetDevice(0), "cudaSetDevice(0)") ||
        fail(cudaStreamCreateWithFlags(&g.s, cudaStreamNonBlocking), "cudaStreamCreate"))
        return 1;
    const bool f32_in = prim == PRIM_REDUCE || prim == PRIM_SCAN || prim == PRIM_SEG_REDUCE ||
                        prim == PRIM_HISTOGRAM || prim == PRIM_SELECT_IF;
    const bool pairs = prim == PRIM_SORT_PAIRS, flagged = prim == PRIM_SELECT_FLAGGED;
    const bool rle = prim == PRIM_RLE, seg = prim == PRIM_SEG_REDUCE || prim == PRIM_SEG_SORT;
    const bool counted = flagged || prim == PRIM_SELECT_IF || prim == PRIM_UNIQUE || rle;
    const void *src = f32_in                       ? (const void *)d->f32
                      : prim == PRIM_UNIQUE || rle ? (const void *)d->runs
                                                   : (const void *)d->keys;
    if (src == nullptr || (pairs && d->vals == nullptr) || (flagged && d->flags == nullptr) ||
        (seg && d->offsets == nullptr))
        return fail(cudaErrorInvalidValue, "an input of the primitive is missing");
    g.out_bytes = prim == PRIM_REDUCE       ? 4
                  : prim == PRIM_SEG_REDUCE ? g.ns * 4
                  : prim == PRIM_HISTOGRAM  ? (size_t)g.nb * 8
                                            : n * 4;
    g.aux_bytes = pairs ? n * 4 : rle ? n * 8 : 0;
    if (alloc(&g.in, n * 4, src, "input") || alloc(&g.out, g.out_bytes, nullptr, "output") ||
        (pairs && alloc(&g.in2, n * 4, d->vals, "values")) ||
        (flagged && alloc(&g.in2, n, d->flags, "flags")) ||
        ((pairs || rle) && alloc(&g.aux, g.aux_bytes, nullptr, "values out or lengths")) ||
        (seg && alloc(reinterpret_cast<void **>(&g.off), (g.ns + 1) * 8, d->offsets, "offsets")) ||
        (counted && alloc(reinterpret_cast<void **>(&g.num), 8, nullptr, "count")))
        return 1;
    /* A pageable cudaMemcpy may return before its DMA is done, and the
     * stream is non-blocking: the inputs are on the device before any call. */
    if (fail(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 1;
    size_t tb = 0;
    if (fail(call(nullptr, tb), "the temporaries' size query")) return 1;
    g.temp_bytes = tb;
    return alloc(&g.temp, tb, nullptr, "temporaries");
}

extern "C" int prim_cub_run(void) {
    size_t b = g.temp_bytes;
    return fail(call(g.temp, b), "the primitive's call");
}

extern "C" int prim_cub_sync(void) {
    return fail(cudaStreamSynchronize(g.s), "cudaStreamSynchronize");
}

extern "C" int prim_cub_fetch(int which, void *host, size_t bytes) {
    const void *src = which == PRIM_OUT_MAIN ? g.out : which == PRIM_OUT_AUX ? g.aux : g.num;
    const size_t have = which == PRIM_OUT_MAIN  ? g.out_bytes
                        : which == PRIM_OUT_AUX ? g.aux_bytes
                        : g.num != nullptr      ? 8
                                                : 0;
    if (src == nullptr || bytes > have) return fail(cudaErrorInvalidValue, "fetch past an output");
    return fail(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(result)");
}

extern "C" void prim_cub_teardown(void) {
    cudaFree(g.temp);
    cudaFree(g.num);
    cudaFree(g.off);
    cudaFree(g.aux);
    cudaFree(g.out);
    cudaFree(g.in2);
    cudaFree(g.in);
    if (g.s != nullptr) cudaStreamDestroy(g.s);
    g = state{};
}
