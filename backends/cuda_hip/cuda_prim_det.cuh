/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_prim_det.cuh - the dtypes of the prim table
 * (cuda_prim.cu; its other slots in cuda_prim_sort.cu and cuda_prim_more.cu,
 * declared at the end) and its deterministic floating sums: the fixed order of
 * xdev/primitives.h, the one backends/cpu/cpu_primitives.c always runs, so
 * a GPU in deterministic mode gives the CPU's bits. Every add and multiply
 * here is an explicit round-to-nearest intrinsic (__fadd_rn ...), which
 * nvcc never contracts into an FMA, and the loads of f16/bf16 and the final
 * rounding are xdev/support/half.h's functions, the CPU's own.
 *
 * reduce (sum, prod): one warp per chunk of XDEV_PRIM_CHUNK elements, lane
 *   l adding elements l, l+32, ... in order from -0.0 (prod: 1), then the
 *   shuffle-down tree 16, 8, 4, 2, 1 (lane l: s_l + s_{l+w}); a block of 8
 *   warps combines its 8 chunk sums in rounds of pairs, and tree passes of
 *   1024 nodes a block go on until one is left. The rounds of pairs (odd
 *   last one carried) are the same as a binary tree over aligned
 *   power-of-two groups clipped at the count, so a group aligned at a
 *   multiple of its size reduces alone: the split into blocks changes no
 *   addition.
 * scan (sum): one thread per chunk, the warp of 32 chunks staging its
 *   elements through shared memory 32 columns at a time (coalesced loads and
 *   stores): chunk totals left to right from -0.0; one block makes them the
 *   chunk offsets, sequentially (a chain of one add per chunk: the step that
 *   costs, about 4 cycles a chunk); then each thread walks its chunk from
 *   its offset writing every output. */
#ifndef XDEV_CUDA_PRIM_DET_CUH
#define XDEV_CUDA_PRIM_DET_CUH

#include <stdint.h>

#if defined(XC_VENDOR_HIP)
#include "vendor/hip_prim.h" /* cuda::std::numeric_limits over std's; XC_PRIM_LIB */
#else
#include <cuda/std/limits>
#define XC_PRIM_LIB "CUB" /* the library under the table, for messages */
#endif

#include "xdev/backend.h"
#include "xdev/primitives.h"
#include "xdev/support/half.h"

namespace xc_prim {

/* One dtype: raw the element, acc the accumulation type, sum the type
 * CUB's sums run in (unsigned for integers: they wrap); flt for the
 * floating dtypes, half for f16/bf16 (loaded to f32, rounded once). */
template <int DT> struct dt;

template <typename R, typename A, typename S, bool F> struct dt_base {
    using raw = R;
    using acc = A;
    using sum = S;
    static constexpr bool flt = F;
    static constexpr bool half = false;
    __host__ __device__ static A load(R v) {
        return (A)v;
    }
    __host__ __device__ static R store(A v) {
        return (R)v;
    }
    __host__ __device__ static A hi() {
        return F ? cuda::std::numeric_limits<A>::infinity() : cuda::std::numeric_limits<A>::max();
    }
    __host__ __device__ static A lo() {
        return F ? -cuda::std::numeric_limits<A>::infinity()
                 : cuda::std::numeric_limits<A>::lowest();
    }
};

template <> struct dt<XDEV_DTYPE_F32> : dt_base<float, float, float, true> {};
template <> struct dt<XDEV_DTYPE_F64> : dt_base<double, double, double, true> {};
template <> struct dt<XDEV_DTYPE_I32> : dt_base<int, int, unsigned, false> {};
template <> struct dt<XDEV_DTYPE_I64> : dt_base<long long, long long, unsigned long long, false> {};
template <> struct dt<XDEV_DTYPE_U32> : dt_base<unsigned, unsigned, unsigned, false> {};
template <>
struct dt<XDEV_DTYPE_U64>
    : dt_base<unsigned long long, unsigned long long, unsigned long long, false> {};
template <> struct dt<XDEV_DTYPE_F16> : dt_base<uint16_t, float, float, true> {
    static constexpr bool half = true;
    __host__ __device__ static float load(uint16_t v) {
        return xdev_f16_to_f32(v);
    }
    __host__ __device__ static uint16_t store(float v) {
        return xdev_f32_to_f16(v);
    }
};
template <> struct dt<XDEV_DTYPE_BF16> : dt_base<uint16_t, float, float, true> {
    static constexpr bool half = true;
    __host__ __device__ static float load(uint16_t v) {
        return xdev_bf16_to_f32(v);
    }
    __host__ __device__ static uint16_t store(float v) {
        return xdev_f32_to_bf16(v);
    }
};

/* Round-to-nearest add and multiply, never contracted. */
__device__ __forceinline__ float add_rn(float a, float b) {
    return __fadd_rn(a, b);
}
__device__ __forceinline__ double add_rn(double a, double b) {
    return __dadd_rn(a, b);
}
__device__ __forceinline__ float mul_rn(float a, float b) {
    return __fmul_rn(a, b);
}
__device__ __forceinline__ double mul_rn(double a, double b) {
    return __dmul_rn(a, b);
}
template <bool PROD, typename A> __device__ __forceinline__ A op_rn(A a, A b) {
    return PROD ? mul_rn(a, b) : add_rn(a, b);
}

constexpr size_t kChunk = XDEV_PRIM_CHUNK;
static_assert(XDEV_PRIM_LANES == 32, "the deterministic reduce is one warp per chunk");
constexpr unsigned kWarps = 8;   /* chunks per block of det_chunks (a power of two) */
constexpr unsigned kTree = 1024; /* nodes per block of det_tree (a power of two) */
constexpr unsigned kUnroll = 16; /* loads in flight per lane */
constexpr unsigned kRows = 32;   /* chunks per block of the scan kernels (a warp) */
constexpr unsigned kCols = 32;   /* elements per chunk staged at a time */
constexpr unsigned kSeg = 4096;  /* chunk totals staged at a time by det_offsets */

/* Rounds of pairs over v[0 .. cnt), in place, one thread: v[0] is the result. */
template <bool PROD, typename A> __device__ void rounds_serial(A *v, unsigned cnt) {
    for (; cnt > 1; cnt = (cnt + 1) / 2) {
        for (unsigned i = 0; i < cnt / 2; i++)
            v[i] = op_rn<PROD>(v[2 * i], v[2 * i + 1]);
        if (cnt & 1) v[cnt / 2] = v[cnt - 1];
    }
}

/* Steps 1 and 2 per chunk (a warp each), then the block's 8 chunk sums in
 * rounds of pairs: one node of the level above, or the result when the
 * grid is one block. */
template <int DT, bool PROD>
__global__ void __launch_bounds__(kWarps * 32)
    det_chunks(const typename dt<DT>::raw *in, size_t n, size_t m, typename dt<DT>::acc *part,
               typename dt<DT>::raw *out) {
    using A = typename dt<DT>::acc;
    __shared__ A ws[kWarps];
    const unsigned lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
    const size_t c = (size_t)blockIdx.x * kWarps + w;
    if (c < m) {
        A s = PROD ? A(1) : A(-0.0);
        const size_t b = c * kChunk, e = n < b + kChunk ? n : b + kChunk;
        size_t i = b + lane;
        for (; i + (kUnroll - 1) * 32 < e; i += kUnroll * 32) {
            A v[kUnroll];
#pragma unroll
            for (unsigned k = 0; k < kUnroll; k++)
                v[k] = dt<DT>::load(in[i + 32 * k]);
#pragma unroll
            for (unsigned k = 0; k < kUnroll; k++)
                s = op_rn<PROD>(s, v[k]);
        }
        for (; i < e; i += 32)
            s = op_rn<PROD>(s, dt<DT>::load(in[i]));
#pragma unroll
        for (unsigned wd = 16; wd > 0; wd >>= 1)
            s = op_rn<PROD>(s, XC_SHFL_DOWN32(s, wd));
        if (lane == 0) ws[w] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const size_t first = (size_t)blockIdx.x * kWarps;
        rounds_serial<PROD>(ws, (unsigned)(m - first < kWarps ? m - first : kWarps));
        if (gridDim.x == 1)
            out[0] = dt<DT>::store(ws[0]);
        else
            part[blockIdx.x] = ws[0];
    }
}

/* Step 3 continued: rounds of pairs over kTree aligned nodes a block. */
template <int DT, bool PROD>
__global__ void __launch_bounds__(kTree / 2)
    det_tree(const typename dt<DT>::acc *src, size_t m, typename dt<DT>::acc *dst,
             typename dt<DT>::raw *out) {
    using A = typename dt<DT>::acc;
    __shared__ A v[kTree];
    const size_t first = (size_t)blockIdx.x * kTree;
    unsigned cnt = (unsigned)(m - first < kTree ? m - first : kTree);
    const unsigned t = threadIdx.x;
    for (unsigned k = t; k < cnt; k += blockDim.x)
        v[k] = src[first + k];
    __syncthreads();
    for (; cnt > 1; cnt = (cnt + 1) / 2) {
        A x = A(0);
        if (t < cnt / 2)
            x = op_rn<PROD>(v[2 * t], v[2 * t + 1]);
        else if (t == cnt / 2 && (cnt & 1))
            x = v[cnt - 1];
        __syncthreads();
        if (t < (cnt + 1) / 2) v[t] = x;
        __syncthreads();
    }
    if (t == 0) {
        if (gridDim.x == 1)
            out[0] = dt<DT>::store(v[0]);
        else
            dst[blockIdx.x] = v[0];
    }
}

/* The warp's kRows chunks, columns [off, off + kCols) of each, into tile. */
template <int DT>
__device__ __forceinline__ void stage(typename dt<DT>::acc (*tile)[kCols + 1],
                                      const typename dt<DT>::raw *in, size_t n, size_t m, size_t c0,
                                      size_t off) {
    const unsigned lane = threadIdx.x;
#pragma unroll 8
    for (unsigned row = 0; row < kRows; row++) {
        const size_t i = (c0 + row) * kChunk + off + lane;
        if (c0 + row < m && i < n) tile[row][lane] = dt<DT>::load(in[i]);
    }
}

/* Scan step 1: each chunk's total, left to right from -0.0. */
template <int DT>
__global__ void __launch_bounds__(32)
    det_totals(const typename dt<DT>::raw *in, size_t n, size_t m, typename dt<DT>::acc *tot) {
    using A = typename dt<DT>::acc;
    __shared__ A tile[kRows][kCols + 1];
    const size_t c0 = (size_t)blockIdx.x * kRows, mine = c0 + threadIdx.x;
    A r = A(-0.0);
    for (size_t off = 0; off < kChunk && c0 * kChunk + off < n; off += kCols) {
        stage<DT>(tile, in, n, m, c0, off);
        XC_SYNCWARP();
        const size_t base = mine * kChunk + off;
        if (mine < m)
            for (unsigned k = 0; k < kCols && base + k < n; k++)
                r = add_rn(r, tile[threadIdx.x][k]);
        XC_SYNCWARP();
    }
    if (mine < m) tot[mine] = r;
}

/* Scan step 2: totals become offsets (O_0 = -0.0, O_{c+1} = O_c + T_c),
 * one thread's chain over segments that the block stages. */
template <typename A> __global__ void __launch_bounds__(1024) det_offsets(A *p, size_t m) {
    __shared__ A seg[kSeg];
    A o = A(-0.0);
    for (size_t s0 = 0; s0 < m; s0 += kSeg) {
        const unsigned cnt = (unsigned)(m - s0 < kSeg ? m - s0 : kSeg);
        for (unsigned k = threadIdx.x; k < cnt; k += blockDim.x)
            seg[k] = p[s0 + k];
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned k = 0;
            for (; k + 16 <= cnt; k += 16) {
                A t[16];
#pragma unroll
                for (unsigned j = 0; j < 16; j++)
                    t[j] = seg[k + j];
#pragma unroll
                for (unsigned j = 0; j < 16; j++) {
                    seg[k + j] = o;
                    o = add_rn(o, t[j]);
                }
            }
            for (; k < cnt; k++) {
                const A t = seg[k];
                seg[k] = o;
                o = add_rn(o, t);
            }
        }
        __syncthreads();
        for (unsigned k = threadIdx.x; k < cnt; k += blockDim.x)
            p[s0 + k] = seg[k];
        __syncthreads();
    }
}

/* Scan step 3: each thread walks its chunk from its offset (offs NULL: one
 * chunk, offset -0.0); outputs go back through the tile, so the warp reads
 * its elements before it writes them (in place works). */
template <int DT>
__global__ void __launch_bounds__(32)
    det_outputs(const typename dt<DT>::raw *in, typename dt<DT>::raw *out, size_t n, size_t m,
                const typename dt<DT>::acc *offs, bool excl) {
    using A = typename dt<DT>::acc;
    __shared__ A tile[kRows][kCols + 1];
    const unsigned lane = threadIdx.x;
    const size_t c0 = (size_t)blockIdx.x * kRows, mine = c0 + lane;
    A r = offs != nullptr && mine < m ? offs[mine] : A(-0.0);
    for (size_t off = 0; off < kChunk && c0 * kChunk + off < n; off += kCols) {
        stage<DT>(tile, in, n, m, c0, off);
        XC_SYNCWARP();
        const size_t base = mine * kChunk + off;
        if (mine < m)
            for (unsigned k = 0; k < kCols && base + k < n; k++) {
                const A v = tile[lane][k];
                if (excl) {
                    tile[lane][k] = base + k == 0 ? A(0) : r; /* element 0: +0 */
                    r = add_rn(r, v);
                } else {
                    r = add_rn(r, v);
                    tile[lane][k] = r;
                }
            }
        XC_SYNCWARP();
#pragma unroll 8
        for (unsigned row = 0; row < kRows; row++) {
            const size_t i = (c0 + row) * kChunk + off + lane;
            if (c0 + row < m && i < n) out[i] = dt<DT>::store(tile[row][lane]);
        }
        XC_SYNCWARP();
    }
}

inline size_t det_align(size_t x) {
    return (x + 255) / 256 * 256;
}

inline size_t det_acc_size(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F64 ? 8 : 4;
}

/* Temporary bytes of a deterministic reduce or scan of n elements. */
inline size_t det_temp_bytes(xdev_dtype_t t, size_t n, bool scan) {
    const size_t m = (n + kChunk - 1) / kChunk, es = det_acc_size(t);
    if (scan) return det_align(m * es);
    const size_t blocks = (m + kWarps - 1) / kWarps;
    return det_align(blocks * es) + det_align((blocks + kTree - 1) / kTree * es);
}

typedef cudaError_t (*det_fn)(const xdev_prim_desc_t *d, void *temp, cudaStream_t s);

template <int DT, bool PROD>
cudaError_t det_reduce_run(const xdev_prim_desc_t *d, void *temp, cudaStream_t s) {
    using A = typename dt<DT>::acc;
    using R = typename dt<DT>::raw;
    const size_t n = d->count, m = (n + kChunk - 1) / kChunk;
    size_t cur = (m + kWarps - 1) / kWarps;
    A *src = static_cast<A *>(temp);
    A *dst = reinterpret_cast<A *>(static_cast<char *>(temp) + det_align(cur * sizeof(A)));
    R *out = static_cast<R *>(d->out);
    det_chunks<DT, PROD>
        <<<(unsigned)cur, kWarps * 32, 0, s>>>(static_cast<const R *>(d->in), n, m, src, out);
    cudaError_t err = cudaGetLastError();
    while (err == cudaSuccess && cur > 1) {
        const size_t next = (cur + kTree - 1) / kTree;
        det_tree<DT, PROD><<<(unsigned)next, kTree / 2, 0, s>>>(src, cur, dst, out);
        err = cudaGetLastError();
        A *t = src;
        src = dst;
        dst = t;
        cur = next;
    }
    return err;
}

template <int DT> cudaError_t det_reduce(const xdev_prim_desc_t *d, void *temp, cudaStream_t s) {
    if constexpr (!dt<DT>::flt) {
        return cudaErrorInvalidValue;
    } else {
        if (d->op == XDEV_PRIM_PROD) return det_reduce_run<DT, true>(d, temp, s);
        return det_reduce_run<DT, false>(d, temp, s);
    }
}

template <int DT> cudaError_t det_scan(const xdev_prim_desc_t *d, void *temp, cudaStream_t s) {
    if constexpr (!dt<DT>::flt) {
        return cudaErrorInvalidValue;
    } else {
        using A = typename dt<DT>::acc;
        using R = typename dt<DT>::raw;
        const size_t n = d->count, m = (n + kChunk - 1) / kChunk;
        const unsigned grid = (unsigned)((m + kRows - 1) / kRows);
        const R *in = static_cast<const R *>(d->in);
        A *offs = m > 1 ? static_cast<A *>(temp) : nullptr;
        if (offs != nullptr) {
            det_totals<DT><<<grid, 32, 0, s>>>(in, n, m, offs);
            cudaError_t err = cudaGetLastError();
            if (err != cudaSuccess) return err;
            det_offsets<A><<<1, 1024, 0, s>>>(offs, m);
            if ((err = cudaGetLastError()) != cudaSuccess) return err;
        }
        det_outputs<DT><<<grid, 32, 0, s>>>(in, static_cast<R *>(d->out), n, m, offs,
                                            (d->flags & XDEV_PRIM_EXCLUSIVE) != 0);
        return cudaGetLastError();
    }
}

/* What a size query answers: never 0, because the core passes NULL
 * temporaries for 0 bytes, and NULL is how a slot knows the size query
 * from the run (backend_slots.h). */
inline size_t temp_answer(size_t need) {
    return need < 256 ? 256 : need;
}

/* The other slots of the table (cuda_prim_sort.cu, cuda_prim_more.cu). */
xdev_status_t sort_slot(const xdev_prim_desc_t *d, size_t *temp_bytes, bool segmented);
xdev_status_t segmented_reduce_slot(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t histogram_slot(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t select_flagged_slot(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t unique_slot(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t run_length_encode_slot(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t select_compare_slot(const xdev_prim_desc_t *d, size_t *temp_bytes);

} // namespace xc_prim

#endif
