/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_ops.cu - the CUDA backend's typed fills and conversions
 * (the ops table), as device code: nvcc builds it for the CUDA plugin and
 * hipcc (XC_VENDOR_HIP) for the HIP one, like cuda_rng.cu.
 *
 * A fill writes the element the core made (1 to 16 bytes) with a
 * grid-stride loop. A conversion is one kernel per (destination, source)
 * dtype pair, each element through xdev/support/convert.h's xdev_cvt_convert1 -
 * the function the CPU backend runs - so every backend gives the same bits. */
#include <stdint.h>
#include <string.h>

#include "vendor/xc_vendor.h" /* the device runtime (CUDA or HIP), outside extern "C" */
extern "C" {
#include "cuda_internal.h"
}
#include "xdev/support/convert.h"

namespace {

constexpr unsigned kThreads = 256;

/* (The plugin does not link libxdev: its own names for messages.) */
const char *dtype_name(int t) {
    static const char *const names[] = {"f32", "f64", "c64", "c128", "f16", "bf16",
                                        "i8",  "i16", "i32", "i64",  "u8"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "?";
}

/* A 16-byte element, stored as one 16-byte access (the core checks that
 * dst is aligned to its element; as two 8-byte stores, c128 fills ran at
 * 0.88x of memset). */
struct alignas(16) pair16 {
    unsigned long long lo, hi;
};

template <typename T> __global__ void fill_kernel(T *dst, T value, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = value;
}

/* A fill of 1-8-byte elements as 16-byte stores: dst16[0, n16) gets the
 * pattern repeated to 16 bytes, then the first ntail threads write the
 * elements after it one by one (4-byte stores ran at 0.88x of memset on the
 * H200, as 8-byte ones did for c128). dst16 is 16-byte aligned. */
template <typename T>
__global__ void fill_wide_kernel(pair16 *dst16, size_t n16, pair16 v16, T *tail, T v,
                                 size_t ntail) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t i = tid; i < n16; i += stride)
        dst16[i] = v16;
    if (tid < ntail) tail[tid] = v;
}

/* The unsigned integer type of a dtype's element (loads and stores of whole
 * elements: the core checked the alignment). */
template <int T> struct bits { using type = unsigned short; };
template <> struct bits<XDEV_DTYPE_F32> { using type = unsigned int; };
template <> struct bits<XDEV_DTYPE_I32> { using type = unsigned int; };
template <> struct bits<XDEV_DTYPE_F64> { using type = unsigned long long; };
template <> struct bits<XDEV_DTYPE_I64> { using type = unsigned long long; };

/* Four elements of one dtype, loaded or stored as one access. */
template <typename T> struct alignas(4 * sizeof(T)) quad { T v[4]; };

/* One element: xdev_cvt_convert1 on registers (its memcpys of locals are moves). */
template <int D, int S>
__device__ __forceinline__ typename bits<D>::type convert_elem(typename bits<S>::type v) {
    typename bits<D>::type r;
    xdev_cvt_convert1(&r, D, &v, S);
    return r;
}

/* Four elements per thread and step, each side loaded or stored as one
 * access (both buffers aligned to four elements); the elements past the last
 * whole quad one by one. */
template <int D, int S> __global__ void convert_kernel_quad(void *dst, const void *src, size_t n) {
    using DT = typename bits<D>::type;
    using ST = typename bits<S>::type;
    const quad<ST> *in = static_cast<const quad<ST> *>(src);
    quad<DT> *out = static_cast<quad<DT> *>(dst);
    const size_t stride = (size_t)gridDim.x * blockDim.x, quads = n / 4;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t i = tid; i < quads; i += stride) {
        const quad<ST> x = in[i];
        quad<DT> y;
#pragma unroll
        for (int k = 0; k < 4; k++)
            y.v[k] = convert_elem<D, S>(x.v[k]);
        out[i] = y;
    }
    if (tid < n - 4 * quads)
        static_cast<DT *>(dst)[4 * quads + tid] =
            convert_elem<D, S>(static_cast<const ST *>(src)[4 * quads + tid]);
}

/* One element per thread and step (buffers not aligned to four elements). */
template <int D, int S> __global__ void convert_kernel(void *dst, const void *src, size_t n) {
    using DT = typename bits<D>::type;
    using ST = typename bits<S>::type;
    const ST *in = static_cast<const ST *>(src);
    DT *out = static_cast<DT *>(dst);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = convert_elem<D, S>(in[i]);
}

/* A few waves of the device's multiprocessors, fewer for a small n. */
cudaError_t grid_for(xc_device_t *dev, size_t n, unsigned *grid) {
    int sms = 0;
    cudaError_t err = xc_multiprocessors(dev, &sms);
    if (err != cudaSuccess) return err;
    const size_t want = (n + kThreads - 1) / kThreads, cap = (size_t)sms * 16;
    *grid = (unsigned)(want < 1 ? 1 : want < cap ? want : cap);
    return cudaSuccess;
}

template <typename T>
cudaError_t launch_fill(void *dst, const void *pattern, size_t n, unsigned grid, cudaStream_t s) {
    T v;
    memcpy(&v, pattern, sizeof v);
    if (sizeof(T) < 16 && (uintptr_t)dst % 16 == 0) {
        pair16 v16;
        for (size_t k = 0; k < 16; k += sizeof v)
            memcpy(reinterpret_cast<char *>(&v16) + k, &v, sizeof v);
        const size_t n16 = n * sizeof v / 16, done = n16 * 16 / sizeof v;
        fill_wide_kernel<T><<<grid, kThreads, 0, s>>>(static_cast<pair16 *>(dst), n16, v16,
                                                      static_cast<T *>(dst) + done, v, n - done);
        return cudaGetLastError();
    }
    fill_kernel<T><<<grid, kThreads, 0, s>>>(static_cast<T *>(dst), v, n);
    return cudaGetLastError();
}

/* The kernel of one (D, S) pair, chosen at run time among the 36. */
template <int D>
cudaError_t launch_convert_src(int s_dtype, void *dst, const void *src, size_t n, unsigned grid,
                               cudaStream_t s) {
#define XC_OPS_SRC(S)                                                                              \
    case S:                                                                                        \
        if ((uintptr_t)dst % (4 * sizeof(typename bits<D>::type)) == 0 &&                          \
            (uintptr_t)src % (4 * sizeof(typename bits<S>::type)) == 0)                            \
            convert_kernel_quad<D, S><<<grid, kThreads, 0, s>>>(dst, src, n);                      \
        else                                                                                       \
            convert_kernel<D, S><<<grid, kThreads, 0, s>>>(dst, src, n);                           \
        return cudaGetLastError();
    switch (s_dtype) {
        XC_OPS_SRC(XDEV_DTYPE_F16)
        XC_OPS_SRC(XDEV_DTYPE_BF16)
        XC_OPS_SRC(XDEV_DTYPE_F32)
        XC_OPS_SRC(XDEV_DTYPE_F64)
        XC_OPS_SRC(XDEV_DTYPE_I32)
        XC_OPS_SRC(XDEV_DTYPE_I64)
    }
#undef XC_OPS_SRC
    return cudaErrorInvalidValue;
}

cudaError_t launch_convert(int d_dtype, int s_dtype, void *dst, const void *src, size_t n,
                           unsigned grid, cudaStream_t s) {
    switch (d_dtype) {
    case XDEV_DTYPE_F16:
        return launch_convert_src<XDEV_DTYPE_F16>(s_dtype, dst, src, n, grid, s);
    case XDEV_DTYPE_BF16:
        return launch_convert_src<XDEV_DTYPE_BF16>(s_dtype, dst, src, n, grid, s);
    case XDEV_DTYPE_F32:
        return launch_convert_src<XDEV_DTYPE_F32>(s_dtype, dst, src, n, grid, s);
    case XDEV_DTYPE_F64:
        return launch_convert_src<XDEV_DTYPE_F64>(s_dtype, dst, src, n, grid, s);
    case XDEV_DTYPE_I32:
        return launch_convert_src<XDEV_DTYPE_I32>(s_dtype, dst, src, n, grid, s);
    case XDEV_DTYPE_I64:
        return launch_convert_src<XDEV_DTYPE_I64>(s_dtype, dst, src, n, grid, s);
    }
    return cudaErrorInvalidValue;
}

/* Every launch's start: the device made current (g, ended by the caller),
 * the grid sized for count elements (err says whether that worked). */
struct launch_t {
    xc_guard_t g;
    unsigned grid;
    cudaError_t err;
};

xdev_status_t launch_begin(xc_device_t *dev, size_t count, launch_t *l) {
    xdev_status_t st = xc_guard_begin(&l->g, dev->index);
    if (st != XDEV_SUCCESS) return st;
    l->grid = 1;
    l->err = grid_for(dev, count, &l->grid);
    return XDEV_SUCCESS;
}

/* unused: in a device pass the table below is left out, so nothing refers to them. */
__attribute__((unused)) xdev_status_t ops_fill(xc_device_t *dev, void *dst, const void *pattern,
                                               size_t pattern_size, size_t count, void *stream) {
    const int device = dev->index;
    launch_t l;
    xdev_status_t st = launch_begin(dev, count, &l);
    if (st != XDEV_SUCCESS) return st;
    cudaStream_t s = (cudaStream_t)stream;
    /* A pattern of one repeated byte (every u8 fill, zeros of any dtype) is
     * a memset: the runtime's own kernel, at memset's speed. */
    const unsigned char *pb = static_cast<const unsigned char *>(pattern);
    bool one_byte = true;
    for (size_t i = 1; i < pattern_size && one_byte; i++)
        one_byte = pb[i] == pb[0];
    if (l.err == cudaSuccess && one_byte) {
        l.err = cudaMemsetAsync(dst, pb[0], count * pattern_size, s);
    } else if (l.err == cudaSuccess) {
        switch (pattern_size) {
        case 1:
            l.err = launch_fill<uint8_t>(dst, pattern, count, l.grid, s);
            break;
        case 2:
            l.err = launch_fill<uint16_t>(dst, pattern, count, l.grid, s);
            break;
        case 4:
            l.err = launch_fill<uint32_t>(dst, pattern, count, l.grid, s);
            break;
        case 8:
            l.err = launch_fill<unsigned long long>(dst, pattern, count, l.grid, s);
            break;
        default:
            l.err = launch_fill<pair16>(dst, pattern, count, l.grid, s);
            break;
        }
    }
    xc_guard_end(&l.g);
    if (l.err != cudaSuccess)
        return xc_fail(l.err, "fill kernel (%zu elements of %zu bytes) on device %d", count,
                       pattern_size, device);
    return XDEV_SUCCESS;
}

__attribute__((unused)) xdev_status_t ops_convert(xc_device_t *dev, void *dst,
                                                  xdev_dtype_t dst_dtype, const void *src,
                                                  xdev_dtype_t src_dtype, size_t count,
                                                  void *stream) {
    const int device = dev->index;
    launch_t l;
    xdev_status_t st = launch_begin(dev, count, &l);
    if (st != XDEV_SUCCESS) return st;
    if (l.err == cudaSuccess)
        l.err = launch_convert((int)dst_dtype, (int)src_dtype, dst, src, count, l.grid,
                               (cudaStream_t)stream);
    xc_guard_end(&l.g);
    if (l.err != cudaSuccess)
        return xc_fail(l.err, "conversion kernel (%s to %s, %zu elements) on device %d",
                       dtype_name((int)src_dtype), dtype_name((int)dst_dtype), count, device);
    return XDEV_SUCCESS;
}

/* dst[i] += src[i] for one dtype: f16/bf16 through f32 (xdev_cvt_convert1 both
 * ways, the CPU backend's rounding), integers through unsigned (wrap). */
template <int T> __device__ __forceinline__ void add_elem(void *dst, const void *src, size_t i) {
    if (T == XDEV_DTYPE_F32) {
        ((float *)dst)[i] += ((const float *)src)[i];
    } else if (T == XDEV_DTYPE_F64) {
        ((double *)dst)[i] += ((const double *)src)[i];
    } else if (T == XDEV_DTYPE_I32) {
        ((unsigned *)dst)[i] += ((const unsigned *)src)[i];
    } else if (T == XDEV_DTYPE_I64) {
        ((unsigned long long *)dst)[i] += ((const unsigned long long *)src)[i];
    } else {
        unsigned short *d = (unsigned short *)dst;
        float a, b;
        xdev_cvt_convert1(&a, XDEV_DTYPE_F32, &d[i], T);
        xdev_cvt_convert1(&b, XDEV_DTYPE_F32, &((const unsigned short *)src)[i], T);
        a += b;
        xdev_cvt_convert1(&d[i], T, &a, XDEV_DTYPE_F32);
    }
}

template <int T> __global__ void add_kernel(void *dst, const void *src, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        add_elem<T>(dst, src, i);
}

template <int T>
cudaError_t launch_add(void *dst, const void *src, size_t n, unsigned grid, cudaStream_t s) {
    add_kernel<T><<<grid, kThreads, 0, s>>>(dst, src, n);
    return cudaGetLastError();
}

__attribute__((unused)) xdev_status_t ops_add(xc_device_t *dev, void *dst, const void *src,
                                              xdev_dtype_t dtype, size_t count, void *stream) {
    const int device = dev->index;
    launch_t l;
    xdev_status_t st = launch_begin(dev, count, &l);
    if (st != XDEV_SUCCESS) return st;
    /* by dtype value (xdev/dtype.h: f32 f64 c64 c128 f16 bf16 i8 i16 i32 i64) */
    using launcher = cudaError_t (*)(void *, const void *, size_t, unsigned, cudaStream_t);
    static const launcher by_dtype[] = {
        launch_add<XDEV_DTYPE_F32>, launch_add<XDEV_DTYPE_F64>,  nullptr, nullptr,
        launch_add<XDEV_DTYPE_F16>, launch_add<XDEV_DTYPE_BF16>, nullptr, nullptr,
        launch_add<XDEV_DTYPE_I32>, launch_add<XDEV_DTYPE_I64>};
    const unsigned t = (unsigned)dtype;
    launcher run = t < sizeof by_dtype / sizeof by_dtype[0] ? by_dtype[t] : nullptr;
    if (l.err == cudaSuccess)
        l.err = run ? run(dst, src, count, l.grid, (cudaStream_t)stream) : cudaErrorInvalidValue;
    xc_guard_end(&l.g);
    if (l.err != cudaSuccess)
        return xc_fail(l.err, "add kernel (%s, %zu elements) on device %d", dtype_name((int)dtype),
                       count, device);
    return XDEV_SUCCESS;
}

} // namespace

/* Host code only: clang's HIP device pass would otherwise emit this constant
 * (and its pointers to host functions) for the GPU too. */
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
extern "C" const xdev_ops_vtable_t xc_ops_vtable = {sizeof(xdev_ops_vtable_t), ops_fill,
                                                    ops_convert, ops_add};
#endif
