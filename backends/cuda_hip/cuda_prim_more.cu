/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_prim_more.cu - the rest of the prim table
 * (xdev/primitives.h): segmented reduce, histogram, select, unique and
 * run-length encode.
 *
 * - segmented_reduce: cub::DeviceSegmentedReduce over the clamped bounds
 *   (each bound into [0, count], an end below its begin empty), with
 *   cuda_prim.cu's operators (cuda_prim_ops.cuh): sums and products on
 *   the raw types (f16/bf16 through f32), extrema as (value, index) pairs
 *   into the temporaries and a kernel that writes each segment's index
 *   relative to its start (-1 when empty) or its element (the identity
 *   when empty). Deterministic floating sums and products: a block per
 *   segment runs the order of xdev/primitives.h from the segment's start
 *   (chunks a warp each, 8 at a time in rounds of pairs, then those
 *   level-3 nodes merged as a binary counter and folded from the right:
 *   the same tree as the rounds).
 * - histogram_even: a kernel of its own, not CUB's HistogramEven, whose bin
 *   arithmetic (a precomputed scale) is not the header's formula
 *   b = min(nb - 1, floor(((x - lower) * nb) / (upper - lower))) in double:
 *   evaluated here with explicit round-to-nearest operations, the bins are
 *   the CPU's for every sample. Counts in shared memory per block (up to
 *   8192 bins), then 64-bit atomics.
 * - select_flagged: cub::DeviceSelect::Flagged on the items as unsigned
 *   bits; flags wider than a byte are first made bytes (any bit set: kept).
 * - select_compare: cub::DeviceSelect::If with a functor holding the op and
 *   the value in the compare type (the item converted as C converts it),
 *   one instantiation per pair the core sends: f32 in float or double, f64
 *   in double, i32 and i64 in int64 (f32 against a float: one per operator
 *   too, the operator a constant). No flags, no compile.
 * - unique, run_length_encode: cub::DeviceSelect::Unique and
 *   cub::DeviceRunLengthEncode::Encode with ==: integers as unsigned bits,
 *   f32/f64 as themselves (IEEE ==: -0 == +0, NaN a run of its own), f16 and
 *   bf16 through f32 and back (exact, but that a signalling NaN comes back
 *   quiet). Encode counts in int: more than 2^31 - 1 items is refused. */
#include <stdint.h>

#include "vendor/xc_vendor.h" /* the device runtime, outside extern "C" */
extern "C" {
#include "cuda_internal.h"
}
#if defined(XC_VENDOR_HIP)
#include "vendor/hip_prim.h" /* CUB's and Thrust's names over rocPRIM */
#else
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>
#endif

#include "cuda_prim_det.cuh"
#include "cuda_prim_ops.cuh"

namespace xc_prim {
namespace {

constexpr unsigned kThreads = 256;

size_t up(size_t x) {
    return (x + 255) / 256 * 256;
}

unsigned grid_of(size_t n, size_t per_thread, unsigned cap) {
    size_t g = (n + kThreads * per_thread - 1) / (kThreads * per_thread);
    return (unsigned)(g < 1 ? 1 : g > cap ? cap : g);
}

/* Segment s's bounds, clamped (seg_bounds: both). */
__host__ __device__ inline void seg_bounds(const int64_t *off, long long count, long long s,
                                           long long *b, long long *e) {
    long long x = off[s], y = off[s + 1];
    x = x < 0 ? 0 : x > count ? count : x;
    y = y < 0 ? 0 : y > count ? count : y;
    *b = x;
    *e = y < x ? x : y;
}
struct seg_b {
    const int64_t *off;
    long long count;
    __host__ __device__ long long operator()(long long s) const {
        long long b, e;
        seg_bounds(off, count, s, &b, &e);
        return b;
    }
};
struct seg_e {
    const int64_t *off;
    long long count;
    __host__ __device__ long long operator()(long long s) const {
        long long b, e;
        seg_bounds(off, count, s, &b, &e);
        return e;
    }
};

/* ------------------------------------------------------- segmented reduce */

/* f16/bf16 segment sums: each f32 result rounded once. */
template <int DT>
__global__ void round_kernel(const float *acc, typename dt<DT>::raw *out, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = dt<DT>::store(acc[i]);
}

/* Each segment's extremum pair into its result (empty: -1 or the identity). */
template <int DT>
__global__ void ext_finish(const ext_t<typename dt<DT>::acc> *p, const typename dt<DT>::raw *in,
                           const int64_t *off, long long count, size_t nseg, void *out, bool arg,
                           bool max) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t s = (size_t)blockIdx.x * blockDim.x + threadIdx.x; s < nseg; s += stride) {
        long long b, e;
        seg_bounds(off, count, (long long)s, &b, &e);
        if (arg)
            static_cast<long long *>(out)[s] = b == e ? -1 : p[s].i - b;
        else
            static_cast<typename dt<DT>::raw *>(out)[s] =
                b == e ? dt<DT>::store(max ? dt<DT>::lo() : dt<DT>::hi()) : in[p[s].i];
    }
}

/* Deterministic sum/prod: a block per segment (see the file's comment). */
template <int DT, bool PROD>
__global__ void __launch_bounds__(kWarps * 32)
    det_segments(const typename dt<DT>::raw *in, long long count, const int64_t *off, size_t nseg,
                 typename dt<DT>::raw *out) {
    using A = typename dt<DT>::acc;
    __shared__ A ws[kWarps];
    const unsigned lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
    for (size_t s = blockIdx.x; s < nseg; s += gridDim.x) {
        long long b, e;
        seg_bounds(off, count, (long long)s, &b, &e);
        const size_t m = (size_t)(e - b + kChunk - 1) / kChunk;
        A stk[48];
        int lv[48], top = 0;
        for (size_t g0 = 0; g0 < m; g0 += kWarps) {
            const size_t c = g0 + w;
            if (c < m) {
                A acc = PROD ? A(1) : A(-0.0);
                const size_t cb = (size_t)b + c * kChunk;
                const size_t ce = (size_t)e < cb + kChunk ? (size_t)e : cb + kChunk;
                for (size_t i = cb + lane; i < ce; i += 32)
                    acc = op_rn<PROD>(acc, dt<DT>::load(in[i]));
#pragma unroll
                for (unsigned wd = 16; wd > 0; wd >>= 1)
                    acc = op_rn<PROD>(acc, XC_SHFL_DOWN32(acc, wd));
                if (lane == 0) ws[w] = acc;
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                rounds_serial<PROD>(ws, (unsigned)(m - g0 < kWarps ? m - g0 : kWarps));
                stk[top] = ws[0];
                lv[top++] = 3;
                while (top >= 2 && lv[top - 1] == lv[top - 2]) {
                    stk[top - 2] = op_rn<PROD>(stk[top - 2], stk[top - 1]);
                    lv[top - 2]++;
                    top--;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            A r = PROD ? A(1) : A(0); /* an empty segment: +0, or 1 */
            if (top > 0) {
                r = stk[top - 1];
                for (int k = top - 2; k >= 0; k--)
                    r = op_rn<PROD>(stk[k], r);
            }
            out[s] = dt<DT>::store(r);
        }
    }
}

template <int DT>
cudaError_t seg_reduce_dt(const xdev_prim_desc_t *d, void *temp, size_t bytes, size_t *need,
                          cudaStream_t s) {
    using R = typename dt<DT>::raw;
    using A = typename dt<DT>::acc;
    const long long count = (long long)d->count;
    const size_t ns = d->num_segments;
    const R *in = static_cast<const R *>(d->in);
    const bool prod = d->op == XDEV_PRIM_PROD, sum = d->op == XDEV_PRIM_SUM;
    if ((sum || prod) && dt<DT>::flt && (d->flags & XDEV_PRIM_FLAG_DETERMINISTIC)) {
        if (temp == nullptr) {
            *need = 0;
            return cudaSuccess;
        }
        const unsigned grid = (unsigned)(ns < 65535 * 4 ? ns : 65535 * 4);
        if constexpr (dt<DT>::flt) {
            if (prod)
                det_segments<DT, true><<<grid, kWarps * 32, 0, s>>>(in, count, d->offsets, ns,
                                                                    static_cast<R *>(d->out));
            else
                det_segments<DT, false><<<grid, kWarps * 32, 0, s>>>(in, count, d->offsets, ns,
                                                                     static_cast<R *>(d->out));
        }
        return cudaGetLastError();
    }
    auto bi = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                              seg_b{d->offsets, count});
    auto ei = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                              seg_e{d->offsets, count});
    const long long nsl = (long long)ns;
    if (sum || prod) {
        size_t cb = bytes;
        cudaError_t err;
        if constexpr (dt<DT>::half) { /* f32 results in the temporaries, then rounded */
            const size_t head = up(ns * sizeof(float));
            float *acc = static_cast<float *>(temp);
            void *ct = temp != nullptr ? static_cast<char *>(temp) + head : nullptr;
            cb = temp != nullptr ? bytes - head : 0;
            auto it = thrust::make_transform_iterator(in, to_acc<DT>{});
            err = sum ? cub::DeviceSegmentedReduce::Reduce(ct, cb, it, acc, nsl, bi, ei, add_op{},
                                                           0.0f, s)
                      : cub::DeviceSegmentedReduce::Reduce(ct, cb, it, acc, nsl, bi, ei, mul_op{},
                                                           1.0f, s);
            if (temp == nullptr) {
                *need = head + cb;
                return err;
            }
            if (err == cudaSuccess) {
                round_kernel<DT>
                    <<<grid_of(ns, 1, 4096), kThreads, 0, s>>>(acc, static_cast<R *>(d->out), ns);
                err = cudaGetLastError();
            }
            return err;
        } else {
            using S = typename dt<DT>::sum;
            const S *p = reinterpret_cast<const S *>(in);
            S *o = static_cast<S *>(d->out);
            err = sum ? cub::DeviceSegmentedReduce::Reduce(temp, cb, p, o, nsl, bi, ei, add_op{},
                                                           S(0), s)
                      : cub::DeviceSegmentedReduce::Reduce(temp, cb, p, o, nsl, bi, ei, mul_op{},
                                                           S(1), s);
        }
        if (temp == nullptr) *need = cb;
        return err;
    }
    /* extrema: pairs into the temporaries, then ext_finish */
    using P = ext_t<A>;
    const bool max = d->op == XDEV_PRIM_MAX || d->op == XDEV_PRIM_ARGMAX;
    const bool arg = d->op == XDEV_PRIM_ARGMIN || d->op == XDEV_PRIM_ARGMAX;
    const size_t head = up(ns * sizeof(P));
    P *pairs = temp != nullptr ? static_cast<P *>(temp) : nullptr;
    void *ct = temp != nullptr ? static_cast<char *>(temp) + head : nullptr;
    size_t cb = temp != nullptr ? bytes - head : 0;
    auto it =
        thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), ext_load<DT>{in});
    const P init = {max ? dt<DT>::lo() : dt<DT>::hi(), (long long)INT64_MAX};
    cudaError_t err = max ? cub::DeviceSegmentedReduce::Reduce(ct, cb, it, pairs, nsl, bi, ei,
                                                               ext_pick<true>{}, init, s)
                          : cub::DeviceSegmentedReduce::Reduce(ct, cb, it, pairs, nsl, bi, ei,
                                                               ext_pick<false>{}, init, s);
    if (temp == nullptr) {
        *need = head + cb;
        return err;
    }
    if (err != cudaSuccess) return err;
    ext_finish<DT><<<grid_of(ns, 1, 4096), kThreads, 0, s>>>(pairs, in, d->offsets, count, ns,
                                                             d->out, arg, max);
    return cudaGetLastError();
}

/* --------------------------------------------------------------- histogram */

/* A sample as double: integers rounded to nearest (past 2^53), f16/bf16 exact. */
template <int DT> struct smp {
    using raw = typename dt<DT>::raw;
    __device__ static double get(raw v) {
        return (double)dt<DT>::load(v);
    }
};
template <typename T> struct smp_int {
    using raw = T;
    __device__ static double get(T v) {
        return (double)v;
    }
};

template <typename S>
__global__ void hist_kernel(const typename S::raw *in, size_t n, size_t nb, double lower,
                            double upper, unsigned long long *counts, bool shared) {
    extern __shared__ unsigned sh[];
    if (shared) {
        for (size_t k = threadIdx.x; k < nb; k += blockDim.x)
            sh[k] = 0;
        __syncthreads();
    }
    const double nbd = (double)nb, width = __dsub_rn(upper, lower);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double x = S::get(in[i]);
        if (!(x >= lower && x < upper)) continue; /* NaN too */
        const double q = floor(__ddiv_rn(__dmul_rn(__dsub_rn(x, lower), nbd), width));
        const size_t b = q >= nbd - 1 ? nb - 1 : (size_t)q;
        if (shared)
            atomicAdd(&sh[b], 1u);
        else
            atomicAdd(&counts[b], 1ull);
    }
    if (shared) {
        __syncthreads();
        for (size_t k = threadIdx.x; k < nb; k += blockDim.x)
            if (sh[k] != 0) atomicAdd(&counts[k], (unsigned long long)sh[k]);
    }
}

constexpr size_t kSharedBins = 8192;

template <typename S> cudaError_t hist_run(const xdev_prim_desc_t *d, cudaStream_t s) {
    const bool shared = d->num_bins <= kSharedBins;
    hist_kernel<S><<<grid_of(d->count, 16, 2048), kThreads, shared ? d->num_bins * 4 : 0, s>>>(
        static_cast<const typename S::raw *>(d->in), d->count, d->num_bins, d->lower, d->upper,
        static_cast<unsigned long long *>(d->out), shared);
    return cudaGetLastError();
}

cudaError_t histogram(const xdev_prim_desc_t *d, cudaStream_t s) {
    cudaError_t err = cudaMemsetAsync(d->out, 0, d->num_bins * 8, s);
    if (err != cudaSuccess || d->count == 0) return err;
    switch (d->dtype) {
    case XDEV_DTYPE_U8:
        return hist_run<smp_int<uint8_t>>(d, s);
    case XDEV_DTYPE_U16:
        return hist_run<smp_int<uint16_t>>(d, s);
    case XDEV_DTYPE_U32:
        return hist_run<smp_int<uint32_t>>(d, s);
    case XDEV_DTYPE_U64:
        return hist_run<smp_int<unsigned long long>>(d, s);
    case XDEV_DTYPE_I8:
        return hist_run<smp_int<int8_t>>(d, s);
    case XDEV_DTYPE_I16:
        return hist_run<smp_int<int16_t>>(d, s);
    case XDEV_DTYPE_I32:
        return hist_run<smp_int<int32_t>>(d, s);
    case XDEV_DTYPE_I64:
        return hist_run<smp_int<long long>>(d, s);
    case XDEV_DTYPE_F16:
        return hist_run<smp<XDEV_DTYPE_F16>>(d, s);
    case XDEV_DTYPE_BF16:
        return hist_run<smp<XDEV_DTYPE_BF16>>(d, s);
    case XDEV_DTYPE_F32:
        return hist_run<smp<XDEV_DTYPE_F32>>(d, s);
    case XDEV_DTYPE_F64:
        return hist_run<smp<XDEV_DTYPE_F64>>(d, s);
    default:
        return cudaErrorInvalidValue;
    }
}

/* ------------------------------------------------------------------ select */

template <typename F> __global__ void flags_to_bytes(const F *f, uint8_t *out, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = f[i] != 0;
}

template <typename T>
cudaError_t select_t(const xdev_prim_desc_t *d, void *temp, size_t bytes, size_t *need,
                     cudaStream_t s) {
    const size_t n = d->count, fs = d->flag_size;
    const size_t head = fs == 1 ? 0 : up(n);
    uint8_t *bytes_flags = temp != nullptr && fs != 1 ? static_cast<uint8_t *>(temp) : nullptr;
    void *ct = temp != nullptr ? static_cast<char *>(temp) + head : nullptr;
    size_t cb = temp != nullptr ? bytes - head : 0;
    const uint8_t *flags = fs == 1 ? static_cast<const uint8_t *>(d->select_flags) : bytes_flags;
    if (temp != nullptr && fs != 1) {
        const unsigned g = grid_of(n, 4, 8192);
        if (fs == 2)
            flags_to_bytes<<<g, kThreads, 0, s>>>(static_cast<const uint16_t *>(d->select_flags),
                                                  bytes_flags, n);
        else if (fs == 4)
            flags_to_bytes<<<g, kThreads, 0, s>>>(static_cast<const uint32_t *>(d->select_flags),
                                                  bytes_flags, n);
        else
            flags_to_bytes<<<g, kThreads, 0, s>>>(
                static_cast<const unsigned long long *>(d->select_flags), bytes_flags, n);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return err;
    }
    cudaError_t err =
        cub::DeviceSelect::Flagged(ct, cb, static_cast<const T *>(d->in), flags,
                                   static_cast<T *>(d->out), d->num_out, (int64_t)n, s);
    if (temp == nullptr) *need = head + cb;
    return err;
}

cudaError_t select_flagged(const xdev_prim_desc_t *d, void *temp, size_t bytes, size_t *need,
                           cudaStream_t s) {
    switch (d->dtype) {
    case XDEV_DTYPE_U8:
        return select_t<uint8_t>(d, temp, bytes, need, s);
    case XDEV_DTYPE_U16:
        return select_t<uint16_t>(d, temp, bytes, need, s);
    case XDEV_DTYPE_U32:
        return select_t<uint32_t>(d, temp, bytes, need, s);
    default:
        return select_t<unsigned long long>(d, temp, bytes, need, s);
    }
}

/* ------------------------------------------------------ select_compare */

/* Keep an item when (C)item OP v: C's comparison in the compare type C
 * (IEEE for float and double: a NaN compares false but for !=). */
template <typename T, typename C> struct compare_pred {
    int op;
    C v;
    __host__ __device__ bool operator()(const T &item) const {
        const C x = static_cast<C>(item);
        switch (op) {
        case XDEV_PRIM_CMP_LT:
            return x < v;
        case XDEV_PRIM_CMP_LE:
            return x <= v;
        case XDEV_PRIM_CMP_GT:
            return x > v;
        case XDEV_PRIM_CMP_GE:
            return x >= v;
        case XDEV_PRIM_CMP_EQ:
            return x == v;
        default:
            return x != v;
        }
    }
};

template <typename T, typename C>
cudaError_t compare_t(const xdev_prim_desc_t *d, C v, void *temp, size_t bytes, size_t *need,
                      cudaStream_t s) {
    size_t cb = temp != nullptr ? bytes : 0;
    const compare_pred<T, C> pred{d->compare_op, v};
    cudaError_t err =
        cub::DeviceSelect::If(temp, cb, static_cast<const T *>(d->in), static_cast<T *>(d->out),
                              d->num_out, (int64_t)d->count, pred, s);
    if (temp == nullptr) *need = cb;
    return err;
}

/* f32 items against a float: the operator fixed at compile time, one
 * kernel per operator (with the operator switched per item, as above,
 * select_if ran at 0.86-0.87x of CUB's If with a constant comparison on
 * the H200; the common case - "in0 > 0.5f" - gets CUB's own code). */
template <int OP> struct compare_f32_pred {
    float v;
    __host__ __device__ bool operator()(const float &x) const {
        if constexpr (OP == XDEV_PRIM_CMP_LT)
            return x < v;
        else if constexpr (OP == XDEV_PRIM_CMP_LE)
            return x <= v;
        else if constexpr (OP == XDEV_PRIM_CMP_GT)
            return x > v;
        else if constexpr (OP == XDEV_PRIM_CMP_GE)
            return x >= v;
        else if constexpr (OP == XDEV_PRIM_CMP_EQ)
            return x == v;
        else
            return x != v;
    }
};

template <int OP>
cudaError_t compare_f32(const xdev_prim_desc_t *d, void *temp, size_t bytes, size_t *need,
                        cudaStream_t s) {
    size_t cb = temp != nullptr ? bytes : 0;
    const compare_f32_pred<OP> pred{(float)d->compare_value};
    cudaError_t err =
        cub::DeviceSelect::If(temp, cb, static_cast<const float *>(d->in),
                              static_cast<float *>(d->out), d->num_out, (int64_t)d->count, pred, s);
    if (temp == nullptr) *need = cb;
    return err;
}

/* The item and compare types the slot takes (compare_ok said yes). */
cudaError_t select_compare(const xdev_prim_desc_t *d, void *temp, size_t bytes, size_t *need,
                           cudaStream_t s) {
    const xdev_dtype_t t = d->dtype, c = d->compare_dtype;
    if (t == XDEV_DTYPE_F32 && c == XDEV_DTYPE_F32) {
        switch (d->compare_op) {
        case XDEV_PRIM_CMP_LT:
            return compare_f32<XDEV_PRIM_CMP_LT>(d, temp, bytes, need, s);
        case XDEV_PRIM_CMP_LE:
            return compare_f32<XDEV_PRIM_CMP_LE>(d, temp, bytes, need, s);
        case XDEV_PRIM_CMP_GT:
            return compare_f32<XDEV_PRIM_CMP_GT>(d, temp, bytes, need, s);
        case XDEV_PRIM_CMP_GE:
            return compare_f32<XDEV_PRIM_CMP_GE>(d, temp, bytes, need, s);
        case XDEV_PRIM_CMP_EQ:
            return compare_f32<XDEV_PRIM_CMP_EQ>(d, temp, bytes, need, s);
        default:
            return compare_f32<XDEV_PRIM_CMP_NE>(d, temp, bytes, need, s);
        }
    }
    if (t == XDEV_DTYPE_F32)
        return compare_t<float, double>(d, d->compare_value, temp, bytes, need, s);
    if (t == XDEV_DTYPE_F64)
        return compare_t<double, double>(d, d->compare_value, temp, bytes, need, s);
    if (t == XDEV_DTYPE_I32)
        return compare_t<int32_t, long long>(d, (long long)d->compare_ivalue, temp, bytes, need, s);
    return compare_t<long long, long long>(d, (long long)d->compare_ivalue, temp, bytes, need, s);
}

/* The pairs the core sends (include/xdev/backend.h): f32 items compared in
 * float or double, f64 in double, i32 and i64 in int64. */
bool compare_ok(const xdev_prim_desc_t *d) {
    const xdev_dtype_t t = d->dtype, c = d->compare_dtype;
    return (t == XDEV_DTYPE_F32 && (c == XDEV_DTYPE_F32 || c == XDEV_DTYPE_F64)) ||
           (t == XDEV_DTYPE_F64 && c == XDEV_DTYPE_F64) ||
           ((t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64) && c == XDEV_DTYPE_I64);
}

/* ------------------------------------------------------ unique, encode */

/* T: the type compared (unsigned bits, float, double); H: f16/bf16 through f32. */
template <typename T, int H>
cudaError_t runs_t(const xdev_prim_desc_t *d, bool rle, void *temp, size_t &cb, cudaStream_t s) {
    const size_t n = d->count;
    if constexpr (H != 0) {
        auto it =
            thrust::make_transform_iterator(static_cast<const uint16_t *>(d->in), to_acc<H>{});
        auto o =
            thrust::make_transform_output_iterator(static_cast<uint16_t *>(d->out), from_acc<H>{});
        if (rle)
            return cub::DeviceRunLengthEncode::Encode(
                temp, cb, it, o, static_cast<int64_t *>(d->values_out), d->num_out, (int)n, s);
        return cub::DeviceSelect::Unique(temp, cb, it, o, d->num_out, (int64_t)n, s);
    } else {
        const T *in = static_cast<const T *>(d->in);
        T *out = static_cast<T *>(d->out);
        if (rle)
            return cub::DeviceRunLengthEncode::Encode(
                temp, cb, in, out, static_cast<int64_t *>(d->values_out), d->num_out, (int)n, s);
        return cub::DeviceSelect::Unique(temp, cb, in, out, d->num_out, (int64_t)n, s);
    }
}

cudaError_t runs(const xdev_prim_desc_t *d, bool rle, void *temp, size_t bytes, size_t *need,
                 cudaStream_t s) {
    size_t cb = bytes;
    cudaError_t err;
    switch (d->dtype) {
    case XDEV_DTYPE_U8:
    case XDEV_DTYPE_I8:
        err = runs_t<uint8_t, 0>(d, rle, temp, cb, s);
        break;
    case XDEV_DTYPE_U16:
    case XDEV_DTYPE_I16:
        err = runs_t<uint16_t, 0>(d, rle, temp, cb, s);
        break;
    case XDEV_DTYPE_U32:
    case XDEV_DTYPE_I32:
        err = runs_t<uint32_t, 0>(d, rle, temp, cb, s);
        break;
    case XDEV_DTYPE_U64:
    case XDEV_DTYPE_I64:
        err = runs_t<unsigned long long, 0>(d, rle, temp, cb, s);
        break;
    case XDEV_DTYPE_F32:
        err = runs_t<float, 0>(d, rle, temp, cb, s);
        break;
    case XDEV_DTYPE_F64:
        err = runs_t<double, 0>(d, rle, temp, cb, s);
        break;
    case XDEV_DTYPE_F16:
        err = runs_t<float, XDEV_DTYPE_F16>(d, rle, temp, cb, s);
        break;
    case XDEV_DTYPE_BF16:
        err = runs_t<float, XDEV_DTYPE_BF16>(d, rle, temp, cb, s);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    if (temp == nullptr) *need = cb;
    return err;
}

/* ------------------------------------------------------------------ slots */

enum kind { K_SEG_REDUCE, K_HIST, K_SELECT, K_UNIQUE, K_RLE, K_COMPARE };
const char *const kind_names[] = {"segmented_reduce", "histogram_even",    "select_flagged",
                                  "unique",           "run_length_encode", "select_compare"};

typedef cudaError_t (*seg_fn)(const xdev_prim_desc_t *, void *, size_t, size_t *, cudaStream_t);

seg_fn seg_reduce_for(xdev_dtype_t t) {
    switch (t) {
#define XC_SEG_DT(DT)                                                                              \
    case DT:                                                                                       \
        return seg_reduce_dt<DT>;
        XC_SEG_DT(XDEV_DTYPE_F32)
        XC_SEG_DT(XDEV_DTYPE_F64)
        XC_SEG_DT(XDEV_DTYPE_F16)
        XC_SEG_DT(XDEV_DTYPE_BF16)
        XC_SEG_DT(XDEV_DTYPE_I32)
        XC_SEG_DT(XDEV_DTYPE_I64)
        XC_SEG_DT(XDEV_DTYPE_U32)
        XC_SEG_DT(XDEV_DTYPE_U64)
#undef XC_SEG_DT
    default:
        return nullptr;
    }
}

xdev_status_t slot(int k, const xdev_prim_desc_t *d, size_t *temp_bytes) {
    xc_device_t *dev = d->device;
    const char *what = kind_names[k];
    seg_fn seg = k == K_SEG_REDUCE ? seg_reduce_for(d->dtype) : nullptr;
    if (k == K_SEG_REDUCE && seg == nullptr)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED, "%s: %s of dtype %d", XC_NAME, what,
                        (int)d->dtype);
    if (k == K_COMPARE && d->size < offsetof(xdev_prim_desc_t, compare_ivalue) + 8)
        return xc_error(XDEV_ERROR_INVALID_VALUE,
                        "%s: select_compare from a core older than ABI 3.9 (desc size %zu)",
                        XC_NAME, d->size);
    if (k == K_COMPARE && !compare_ok(d))
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s: select_compare of dtype %d items compared as dtype %d", XC_NAME,
                        (int)d->dtype, (int)d->compare_dtype);
    if (k == K_COMPARE && (d->compare_op < XDEV_PRIM_CMP_LT || d->compare_op > XDEV_PRIM_CMP_NE))
        return xc_error(XDEV_ERROR_INVALID_VALUE, "%s: select_compare op %d", XC_NAME,
                        d->compare_op);
    if (k == K_RLE && d->count > 0x7fffffffull)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s: run_length_encode of %zu items: %s's run-length encode counts "
                        "in int (at most 2^31 - 1 items)",
                        XC_NAME, d->count, XC_PRIM_LIB);
#if defined(XC_PRIM_MAX_ITEMS) /* rocPRIM: select and unique count items in unsigned int */
    if ((k == K_SELECT || k == K_COMPARE || k == K_UNIQUE) && d->count > XC_PRIM_MAX_ITEMS)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s: %s of %zu items: %s counts them in unsigned int (at most 2^32 - 1)",
                        XC_NAME, what, d->count, XC_PRIM_LIB);
    if (k == K_SEG_REDUCE && d->num_segments > XC_PRIM_MAX_ITEMS)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s: segmented_reduce of %zu segments: %s counts them in unsigned int "
                        "(at most 2^32 - 1)",
                        XC_NAME, d->num_segments, XC_PRIM_LIB);
#endif
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, dev->index);
    if (st != XDEV_SUCCESS) return st;
    const cudaStream_t s = (cudaStream_t)d->stream;
    size_t need = 0;
    cudaError_t err = cudaSuccess;
    if (k == K_HIST) {
        if (d->temp != nullptr) err = histogram(d, s);
    } else if (k != K_SEG_REDUCE && d->count == 0) {
        if (d->temp != nullptr) err = cudaMemsetAsync(d->num_out, 0, sizeof(int64_t), s);
    } else if (k == K_SEG_REDUCE) {
        err = seg(d, d->temp, d->temp_bytes, &need, s);
    } else if (k == K_SELECT) {
        err = select_flagged(d, d->temp, d->temp_bytes, &need, s);
    } else if (k == K_COMPARE) {
        err = select_compare(d, d->temp, d->temp_bytes, &need, s);
    } else {
        err = runs(d, k == K_RLE, d->temp, d->temp_bytes, &need, s);
    }
    xc_guard_end(&g);
    if (err != cudaSuccess)
        return xc_fail(err, "%s of %zu items on device %d", what, d->count, dev->index);
    if (d->temp == NULL) *temp_bytes = temp_answer(need);
    return XDEV_SUCCESS;
}

} // namespace

xdev_status_t segmented_reduce_slot(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return slot(K_SEG_REDUCE, d, temp_bytes);
}
xdev_status_t histogram_slot(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return slot(K_HIST, d, temp_bytes);
}
xdev_status_t select_flagged_slot(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return slot(K_SELECT, d, temp_bytes);
}
xdev_status_t select_compare_slot(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return slot(K_COMPARE, d, temp_bytes);
}
xdev_status_t unique_slot(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return slot(K_UNIQUE, d, temp_bytes);
}
xdev_status_t run_length_encode_slot(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return slot(K_RLE, d, temp_bytes);
}

} // namespace xc_prim
