/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_rng.cu - the CUDA backend's random fills (rng vtable).
 *
 * One grid-stride kernel per (kind, format; normals also per std == 1,
 * which leaves out an exact product): each thread takes whole
 * Philox blocks (4 words), computes their elements with xdev/support/philox.h (the
 * same integer and IEEE operations as every other backend, through the
 * __*_rn intrinsics so nothing is contracted into an FMA) and writes the
 * ones inside the fill, as one 16-byte store where the output is aligned.
 * An element depends only on (seed, word position), never on which thread
 * computes it, so the output does not depend on the launch configuration.
 * nvcc builds it for the CUDA plugin, hipcc (XC_VENDOR_HIP) for the HIP one:
 * the same kernels, so the same bits on every vendor.
 *
 * In a capture (ABI 3.2) the desc carries philox_state, device memory the
 * core rewrites before each replay: the kernel then reads the key from
 * philox_state[0] and adds philox_state[1] (a multiple of 4 words: whole
 * Philox blocks) to every word position when it runs, ignoring desc->seed.
 * The partition into partial and full blocks, computed here from
 * desc->offset, stays valid under that shift; only the key and the block
 * numbers change. Eager fills pass a null pointer: one uniform branch. */
#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "vendor/xc_vendor.h" /* the device runtime (CUDA or HIP), outside extern "C" */
extern "C" {
#include "cuda_internal.h"
}
#include "xdev/support/philox.h"

namespace {

struct fill_args {
    char *out;
    uint64_t first, last; /* word positions [first, last) */
    uint64_t full_block;  /* the first block inside [first, last) */
    uint64_t full_blocks; /* how many blocks lie inside */
    uint64_t head;        /* elements before full_block's (from a partial block) */
    uint64_t seed;
    const uint64_t *state; /* philox_state (a capture): key, base word position; else NULL */
    xdev_philox_params_t pr;
    bool vec; /* the full blocks' elements start 16-byte aligned: one store per block */
};

template <int FMT> struct layout {
    static constexpr unsigned wpe = FMT == XDEV_PHILOX_F64 || FMT == XDEV_PHILOX_I64 ? 2u : 1u;
    static constexpr unsigned per_block = 4u / wpe;
    static constexpr unsigned esize = 4u * wpe;
};

/* The elements of one block, in position order (4 or 2 of them). */
union block_values {
    uint4 v;
    float f[4];
    double d[2];
    int32_t i[4];
    long long l[2];
};

/* A normal's mean + std z (xdev_philox_affine_*); UNIT: std is 1, and
 * std z = z exactly (a product by 1 is exact, the sign of a zero kept), so
 * the product is left out - the same bits, one instruction less an element
 * in a kernel bound by instruction issue. */
template <bool UNIT>
__device__ __forceinline__ float affine(float z, const xdev_philox_params_t &pr) {
    if constexpr (UNIT) return XDEV_PHILOX_FADD(pr.mean_f, z);
    return xdev_philox_affine_f32(z, pr.mean_f, pr.std_f);
}
template <bool UNIT>
__device__ __forceinline__ double affine(double z, const xdev_philox_params_t &pr) {
    if constexpr (UNIT) return XDEV_PHILOX_DADD(pr.mean, z);
    return xdev_philox_affine_f64(z, pr.mean, pr.std);
}

template <int KIND, int FMT, bool UNIT>
__device__ __forceinline__ void block_compute(const uint32_t w[4], const xdev_philox_params_t &pr,
                                              block_values &out) {
    if constexpr (KIND == XDEV_PHILOX_NORMAL && FMT == XDEV_PHILOX_F32) {
        float z0, z1, z2, z3;
        xdev_philox_normal_f32_pair(w[0], w[1], &z0, &z1);
        xdev_philox_normal_f32_pair(w[2], w[3], &z2, &z3);
        out.f[0] = affine<UNIT>(z0, pr);
        out.f[1] = affine<UNIT>(z1, pr);
        out.f[2] = affine<UNIT>(z2, pr);
        out.f[3] = affine<UNIT>(z3, pr);
    } else if constexpr (KIND == XDEV_PHILOX_NORMAL) {
        double z0, z1;
        xdev_philox_normal_f64_pair(w, &z0, &z1);
        out.d[0] = affine<UNIT>(z0, pr);
        out.d[1] = affine<UNIT>(z1, pr);
    } else {
#pragma unroll
        for (unsigned e = 0; e < layout<FMT>::per_block; e++)
            xdev_philox_element(KIND, FMT, w, e * layout<FMT>::wpe, &pr,
                                &out.f[e * layout<FMT>::wpe]);
    }
}

/* Elements of block b that lie in [first, last), one by one (the partial
 * first and last blocks); the words are those of block b + shift under key
 * `seed`. */
template <int KIND, int FMT, bool UNIT>
__device__ void partial_block(const fill_args &a, uint64_t seed, uint64_t shift, uint64_t b) {
    constexpr unsigned wpe = layout<FMT>::wpe, es = layout<FMT>::esize;
    uint32_t w[4];
    xdev_philox_block(seed, b + shift, w);
    block_values v;
    block_compute<KIND, FMT, UNIT>(w, a.pr, v);
    for (unsigned e = 0; e < layout<FMT>::per_block; e++) {
        const uint64_t p = 4 * b + e * wpe;
        if (p < a.first || p >= a.last) continue;
        char *dst = a.out + (p - a.first) / wpe * es;
        if (es == 4)
            *reinterpret_cast<uint32_t *>(dst) = reinterpret_cast<const uint32_t *>(v.f)[e];
        else
            *reinterpret_cast<unsigned long long *>(dst) =
                reinterpret_cast<const unsigned long long *>(v.d)[e];
    }
}

template <int KIND, int FMT, bool UNIT> __global__ void fill_kernel(fill_args a) {
    constexpr unsigned per = layout<FMT>::per_block, es = layout<FMT>::esize;
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    /* The key, and the blocks the capture's base position shifts by. */
    uint64_t seed = a.seed, shift = 0;
    if (a.state != nullptr) {
        seed = a.state[0];
        shift = a.state[1] / 4;
    }
    /* The partial blocks: at most one before the full ones, one after. */
    if (tid == 0 && a.head > 0) partial_block<KIND, FMT, UNIT>(a, seed, shift, a.full_block - 1);
    if (tid == stride - 1 && 4 * (a.full_block + a.full_blocks) < a.last)
        partial_block<KIND, FMT, UNIT>(a, seed, shift, a.full_block + a.full_blocks);
    char *out = a.out + a.head * es; /* element 0 of block full_block */
    const uint64_t first_block = a.full_block + shift;
    if (a.vec && a.full_blocks + stride <= UINT32_MAX) {
        /* The common case, in fewer instructions an element: a 32-bit trip
         * count, the counter and the store's address stepped by the stride
         * (no 64-bit index arithmetic) and no store-shape branch. Normal
         * f32 on an H200: 1.5-2% faster (the same bits). */
        const uint32_t n = (uint32_t)a.full_blocks, step = (uint32_t)stride;
        uint64_t b = first_block + tid;
        uint4 *o = reinterpret_cast<uint4 *>(out) + tid;
        for (uint32_t j = (uint32_t)tid; j < n; j += step, b += step, o += step) {
            uint32_t w[4];
            xdev_philox_block(seed, b, w);
            block_values v;
            block_compute<KIND, FMT, UNIT>(w, a.pr, v);
            *o = v.v;
        }
        return;
    }
    for (uint64_t j = tid; j < a.full_blocks; j += stride) {
        uint32_t w[4];
        xdev_philox_block(seed, first_block + j, w);
        block_values v;
        block_compute<KIND, FMT, UNIT>(w, a.pr, v);
        if (a.vec) {
            reinterpret_cast<uint4 *>(out)[j] = v.v;
        } else if (es == 4) {
#pragma unroll
            for (unsigned e = 0; e < per; e++)
                reinterpret_cast<uint32_t *>(out)[j * per + e] =
                    reinterpret_cast<uint32_t *>(v.f)[e];
        } else {
#pragma unroll
            for (unsigned e = 0; e < per; e++)
                reinterpret_cast<unsigned long long *>(out)[j * per + e] =
                    reinterpret_cast<unsigned long long *>(v.d)[e];
        }
    }
}

/* Threads a block, and at most how many blocks a multiprocessor runs at
 * once (2048 threads). Each thread loops over whole Philox blocks, so a
 * grid should be one wave: sms x the blocks that are resident together.
 * 512 x 4 rather than 256 x 8: normal f32 2.5% faster on an H200, the
 * others bound by memory. */
constexpr unsigned XC_RNG_THREADS = 512, XC_RNG_BLOCKS_PER_SM = 4;
constexpr int XC_RNG_KERNELS = 9; /* the cases in launch() */

/* The blocks of each kernel a multiprocessor of each device holds at once
 * (<= XC_RNG_BLOCKS_PER_SM), asked once: a kernel needing more than 32
 * registers a thread (normal f64 on sm_90: 40) holds fewer, and a grid of
 * XC_RNG_BLOCKS_PER_SM a multiprocessor would run in two waves. 0: not
 * asked yet. */
std::atomic<int> g_resident[XC_MAX_DEVICES][XC_RNG_KERNELS];

template <typename Kernel>
unsigned grid_for(Kernel kernel, int dev, int id, uint64_t want, unsigned sms) {
    int r = g_resident[dev][id].load(std::memory_order_relaxed);
    if (r == 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r, kernel, (int)XC_RNG_THREADS, 0) ==
                cudaSuccess &&
            r >= 1) {
            if (r > (int)XC_RNG_BLOCKS_PER_SM) r = (int)XC_RNG_BLOCKS_PER_SM;
            g_resident[dev][id].store(r, std::memory_order_relaxed);
        } else {
            /* not kept: the next fill asks again. The query's error is
             * cleared so that the launch reports its own; this also clears
             * any earlier non-sticky error pending on the thread. */
            (void)cudaGetLastError();
            r = (int)XC_RNG_BLOCKS_PER_SM;
        }
    }
    const uint64_t cap = (uint64_t)sms * (unsigned)r;
    return (unsigned)(want < 1 ? 1 : want < cap ? want : cap);
}

/* Launches the fill's kernel on its device (current) with a grid of at most
 * one wave; `want` is the blocks that give every thread one Philox block. */
cudaError_t launch(const xdev_rng_fill_desc_t *d, const fill_args &a, uint64_t want, unsigned sms,
                   cudaStream_t s) {
    const int dev = d->device->index;
    /* normals of std 1: the product by std left out (affine above) */
    const bool unit = (int)d->kind == XDEV_PHILOX_NORMAL &&
                      ((int)d->format == XDEV_PHILOX_F32 ? a.pr.std_f == 1.0f : a.pr.std == 1.0);
#define XC_RNG_CASE(ID, K, F, U)                                                                   \
    static_assert(ID < XC_RNG_KERNELS, "g_resident has a slot per case");                          \
    if ((int)d->kind == K && (int)d->format == F && (U) == unit) {                                 \
        const unsigned grid = grid_for(fill_kernel<K, F, U>, dev, ID, want, sms);                  \
        fill_kernel<K, F, U><<<grid, XC_RNG_THREADS, 0, s>>>(a);                                   \
        return cudaGetLastError();                                                                 \
    }
    XC_RNG_CASE(0, XDEV_PHILOX_UNIFORM, XDEV_PHILOX_F32, false)
    XC_RNG_CASE(1, XDEV_PHILOX_UNIFORM, XDEV_PHILOX_F64, false)
    XC_RNG_CASE(2, XDEV_PHILOX_NORMAL, XDEV_PHILOX_F32, false)
    XC_RNG_CASE(3, XDEV_PHILOX_NORMAL, XDEV_PHILOX_F32, true)
    XC_RNG_CASE(4, XDEV_PHILOX_NORMAL, XDEV_PHILOX_F64, false)
    XC_RNG_CASE(5, XDEV_PHILOX_NORMAL, XDEV_PHILOX_F64, true)
    XC_RNG_CASE(6, XDEV_PHILOX_INTEGERS, XDEV_PHILOX_I32, false)
    XC_RNG_CASE(7, XDEV_PHILOX_INTEGERS, XDEV_PHILOX_I64, false)
    XC_RNG_CASE(8, XDEV_PHILOX_BERNOULLI, XDEV_PHILOX_F32, false)
#undef XC_RNG_CASE
    return cudaErrorInvalidValue;
}

/* unused: in a device pass the table below is left out, so nothing refers to it. */
__attribute__((unused)) xdev_status_t rng_fill(const xdev_rng_fill_desc_t *d) {
    if (d->device->index < 0 || d->device->index >= XC_MAX_DEVICES)
        return xc_error(XDEV_ERROR_INVALID_DEVICE, XC_NAME ":%d: no such device", d->device->index);
    const unsigned wpe = xdev_philox_words_per_element((int)d->format);
    fill_args a;
    a.out = static_cast<char *>(d->out);
    a.first = d->offset;
    a.last = d->offset + d->count * wpe;
    a.full_block = (a.first + 3) / 4;
    a.full_blocks = a.last / 4 > a.full_block ? a.last / 4 - a.full_block : 0;
    a.head = a.full_block * 4 > a.last ? d->count : (a.full_block * 4 - a.first) / wpe;
    a.seed = d->seed;
    /* philox_state came with ABI 3.2: a shorter desc (an older core) has none. */
    a.state = d->size >= offsetof(xdev_rng_fill_desc_t, philox_state) + sizeof(d->philox_state)
                  ? d->philox_state
                  : nullptr;
    a.pr.mean_f = (float)d->mean;
    a.pr.std_f = (float)d->std;
    a.pr.mean = d->mean;
    a.pr.std = d->std;
    a.pr.low = d->low;
    a.pr.range = d->range;
    a.pr.threshold = d->threshold;
    a.vec = ((uintptr_t)d->out + a.head * 4 * wpe) % 16 == 0;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, d->device->index);
    if (st != XDEV_SUCCESS) return st;
    int sms = 0;
    cudaError_t err = xc_multiprocessors(d->device, &sms);
    if (err == cudaSuccess) {
        const uint64_t want = (a.full_blocks + XC_RNG_THREADS - 1) / XC_RNG_THREADS;
        err = launch(d, a, want, (unsigned)sms, (cudaStream_t)d->stream);
    }
    xc_guard_end(&g);
    if (err != cudaSuccess)
        return xc_fail(err, "random fill kernel (kind %d, format %d, %llu elements) on device %d",
                       (int)d->kind, (int)d->format, (unsigned long long)d->count,
                       d->device->index);
    return XDEV_SUCCESS;
}

} // namespace

/* Host code only: clang's HIP device pass would otherwise emit this constant
 * (and its pointer to the host function) for the GPU too. */
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
extern "C" const xdev_rng_vtable_t xc_rng_vtable = {sizeof(xdev_rng_vtable_t), rng_fill};
#endif
