/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_prim_sort.cu - the prim table's sorts (sort,
 * segmented_sort; xdev/primitives.h) over CUB's radix sorts, which are
 * stable: cub::DeviceRadixSort and cub::DeviceSegmentedRadixSort (the one
 * segmented sort of CUB with a bit range; its counts are int, so more than
 * 2^31 - 1 items or segments is XDEV_ERROR_NOT_SUPPORTED saying so).
 *
 * CUB sorts unsigned keys here, always ascending:
 * - unsigned keys ascending go to CUB as they are (keys only; pairs whose
 *   value has the key's width);
 * - every other sort first writes each key's order image (xdev/primitives.h:
 *   signed keys with the sign bit flipped; floats NaN -> all ones, sign set
 *   -> ~bits, else bits | sign; unsigned keys themselves), complemented for
 *   a descending sort (the reverse order, still stable), then sorts the
 *   images carrying the key's own bits (keys only: the output keeps a NaN's
 *   payload) or each item's index, which a gather then follows to move the
 *   keys and values (pairs). CUB's own float and signed orders are not
 *   used: they put a negative NaN first and order NaNs by payload, where
 *   xdev's NaNs are all equal and last.
 * The bit range [begin_bit, end_bit) applies to the image, as the header
 * says. In-place calls (out == in) sort from a copy of the input in the
 * temporaries (CUB's non-overwriting sort reads its input while it writes
 * its output). A segmented gather skips the items of no segment: their
 * index slots keep the all-ones sentinel written before the sort. */
#include <stdint.h>

#include <type_traits>

#include "vendor/xc_vendor.h" /* the device runtime, outside extern "C" */
extern "C" {
#include "cuda_internal.h"
}
#if defined(XC_VENDOR_HIP)
#include "vendor/hip_prim.h" /* CUB's and Thrust's names over rocPRIM */
#else
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#endif

#include "cuda_prim_det.cuh"

namespace xc_prim {
namespace {

/* The order image of one key dtype (an unsigned type of the key's width). */
template <int DT> struct key;
template <typename U, int KIND> struct key_base { /* KIND 0 unsigned, 1 signed, 2 float */
    using img = U;
    static constexpr int kind = KIND;
};
template <> struct key<XDEV_DTYPE_U8> : key_base<uint8_t, 0> {};
template <> struct key<XDEV_DTYPE_U16> : key_base<uint16_t, 0> {};
template <> struct key<XDEV_DTYPE_U32> : key_base<uint32_t, 0> {};
template <> struct key<XDEV_DTYPE_U64> : key_base<unsigned long long, 0> {};
template <> struct key<XDEV_DTYPE_I8> : key_base<uint8_t, 1> {};
template <> struct key<XDEV_DTYPE_I16> : key_base<uint16_t, 1> {};
template <> struct key<XDEV_DTYPE_I32> : key_base<uint32_t, 1> {};
template <> struct key<XDEV_DTYPE_I64> : key_base<unsigned long long, 1> {};
template <> struct key<XDEV_DTYPE_F16> : key_base<uint16_t, 2> {};
template <> struct key<XDEV_DTYPE_BF16> : key_base<uint16_t, 2> {};
template <> struct key<XDEV_DTYPE_F32> : key_base<uint32_t, 2> {};
template <> struct key<XDEV_DTYPE_F64> : key_base<unsigned long long, 2> {};

/* The exponent-and-mantissa mask of an infinity: a NaN's magnitude bits are above it. */
template <int DT> __host__ __device__ constexpr unsigned long long inf_bits() {
    return DT == XDEV_DTYPE_F16    ? 0x7c00ull
           : DT == XDEV_DTYPE_BF16 ? 0x7f80ull
           : DT == XDEV_DTYPE_F32  ? 0x7f800000ull
                                   : 0x7ff0000000000000ull;
}

template <int DT>
__device__ __forceinline__ typename key<DT>::img order_image(typename key<DT>::img b) {
    using U = typename key<DT>::img;
    constexpr U sign = (U)((U)1 << (sizeof(U) * 8 - 1));
    if (key<DT>::kind == 0) return b;
    if (key<DT>::kind == 1) return (U)(b ^ sign);
    if ((U)(b & (U)~sign) > (U)inf_bits<DT>()) return (U) ~(U)0; /* NaN: all ones */
    return (b & sign) ? (U)~b : (U)(b | sign);
}

/* img[i] = the image (complemented when descending); idx[i] = i (pairs). */
template <int DT>
__global__ void image_kernel(const typename key<DT>::img *keys, typename key<DT>::img *img,
                             unsigned *idx, size_t n, bool desc) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        typename key<DT>::img v = order_image<DT>(keys[i]);
        img[i] = desc ? (typename key<DT>::img) ~v : v;
        if (idx != nullptr) idx[i] = (unsigned)i;
    }
}

/* keys_out[i] = keys[idx[i]], values_out[i] = values[idx[i]]; the sentinel
 * (all ones) marks an item of no segment, left unwritten. */
template <typename K, typename V>
__global__ void gather_kernel(const unsigned *idx, const K *keys, const V *vals, K *kout, V *vout,
                              size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned j = idx[i];
        if (j == ~0u) continue;
        kout[i] = keys[j];
        vout[i] = vals[j];
    }
}

/* Segment s's bounds, clamped to [0, count] (an end below its begin: empty). */
struct seg_begin {
    const int64_t *off;
    long long count;
    __host__ __device__ int operator()(int s) const {
        long long b = off[s];
        return (int)(b < 0 ? 0 : b > count ? count : b);
    }
};
struct seg_end {
    const int64_t *off;
    long long count;
    __host__ __device__ int operator()(int s) const {
        long long b = off[s], e = off[s + 1];
        b = b < 0 ? 0 : b > count ? count : b;
        e = e < 0 ? 0 : e > count ? count : e;
        return (int)(e < b ? b : e);
    }
};

/* The running maximum of the segments' ends: segment s ends at the
 * furthest end of segments 0..s (xdev/primitives.h's rule). */
struct max_int {
    __host__ __device__ int operator()(int a, int b) const {
        return a < b ? b : a;
    }
};

/* Segment s begins no earlier than the furthest end before it (ends[s - 1])
 * and no later than its own end, so no item is in two segments (CUB sorts
 * segments side by side: two would race over a shared item). */
__global__ void seg_begins_kernel(const int64_t *off, long long count, const int *ends, int *begins,
                                  int ns) {
    const int stride = (int)(gridDim.x * blockDim.x);
    for (int s = (int)(blockIdx.x * blockDim.x + threadIdx.x); s < ns; s += stride) {
        int b = seg_begin{off, count}(s);
        const int lo = s > 0 ? ends[s - 1] : 0;
        if (b < lo) b = lo;
        if (b > ends[s]) b = ends[s];
        begins[s] = b;
    }
}

constexpr unsigned kThreads = 256;

unsigned grid_of(size_t n) {
    size_t g = (n + kThreads - 1) / kThreads;
    return (unsigned)(g < 1 ? 1 : g > 65535 * 8 ? 65535 * 8 : g);
}

size_t up(size_t x) {
    return (x + 255) / 256 * 256;
}

/* The segments' bounds as CUB sorts them, read once from the offsets into
 * begins/ends (the temporaries): clamped to [0, count], each begun at the
 * furthest end before it. t NULL: the scan's temporary size in tb. */
cudaError_t seg_bounds(void *t, size_t &tb, const xdev_prim_desc_t *d, int *begins, int *ends,
                       cudaStream_t s) {
    const int ns = (int)d->num_segments;
    auto ei = thrust::make_transform_iterator(thrust::counting_iterator<int>(0),
                                              seg_end{d->offsets, (long long)d->count});
    cudaError_t err = cub::DeviceScan::InclusiveScan(t, tb, ei, ends, max_int{}, ns, s);
    if (t == nullptr || err != cudaSuccess) return err;
    seg_begins_kernel<<<grid_of((size_t)ns), kThreads, 0, s>>>(d->offsets, (long long)d->count,
                                                               ends, begins, ns);
    return cudaGetLastError();
}

/* One CUB radix sort of unsigned keys K with values V (void: keys only),
 * whole or segmented (sb/se: the bounds seg_bounds wrote). */
template <typename K, typename V>
cudaError_t cub_sort(void *t, size_t &tb, const K *ki, K *ko, const V *vi, V *vo,
                     const xdev_prim_desc_t *d, const int *sb, const int *se, cudaStream_t s) {
    const int b = (int)d->begin_bit, e = (int)d->end_bit;
    if (d->offsets == nullptr) {
        if constexpr (std::is_void<V>::value)
            return cub::DeviceRadixSort::SortKeys(t, tb, ki, ko, d->count, b, e, s);
        else
            return cub::DeviceRadixSort::SortPairs(t, tb, ki, ko, vi, vo, d->count, b, e, s);
    }
    const int n = (int)d->count, ns = (int)d->num_segments;
    if constexpr (std::is_void<V>::value)
        return cub::DeviceSegmentedRadixSort::SortKeys(t, tb, ki, ko, n, ns, sb, se, b, e, s);
    else
        return cub::DeviceSegmentedRadixSort::SortPairs(t, tb, ki, ko, vi, vo, n, ns, sb, se, b, e,
                                                        s);
}

/* The temporaries' layout: a few n-item arrays, then CUB's. */
struct layout {
    char *base; /* NULL: the size query */
    size_t off = 0;
    void *take(size_t bytes) {
        void *p = base != nullptr ? base + off : nullptr;
        off += up(bytes);
        return p;
    }
};

template <typename V>
cudaError_t gather_v(const unsigned *idx, const void *keys, const void *vals, void *kout,
                     void *vout, size_t n, size_t ks, cudaStream_t s) {
#define XC_GATHER(KT)                                                                              \
    gather_kernel<KT, V><<<grid_of(n), kThreads, 0, s>>>(idx, (const KT *)keys, (const V *)vals,   \
                                                         (KT *)kout, (V *)vout, n)
    if (ks == 1) XC_GATHER(uint8_t);
    if (ks == 2) XC_GATHER(uint16_t);
    if (ks == 4) XC_GATHER(uint32_t);
    if (ks == 8) XC_GATHER(unsigned long long);
#undef XC_GATHER
    return cudaGetLastError();
}

cudaError_t gather(const unsigned *idx, const void *keys, const void *vals, void *kout, void *vout,
                   size_t n, size_t ks, size_t vs, cudaStream_t s) {
    switch (vs) {
    case 1:
        return gather_v<uint8_t>(idx, keys, vals, kout, vout, n, ks, s);
    case 2:
        return gather_v<uint16_t>(idx, keys, vals, kout, vout, n, ks, s);
    case 4:
        return gather_v<uint32_t>(idx, keys, vals, kout, vout, n, ks, s);
    default:
        return gather_v<unsigned long long>(idx, keys, vals, kout, vout, n, ks, s);
    }
}

/* A sort of key dtype DT: sizes (t.base NULL: *need) or the run. */
template <int DT>
cudaError_t sort_dt(const xdev_prim_desc_t *d, void *temp, size_t bytes, size_t *need,
                    cudaStream_t s) {
    using U = typename key<DT>::img;
    const size_t n = d->count, ks = sizeof(U), vs = d->value_size;
    const bool desc = (d->flags & XDEV_PRIM_DESCENDING) != 0, pairs = d->values_in != nullptr;
    const bool seg = d->offsets != nullptr;
    layout L{static_cast<char *>(temp)};
    const bool in_place = d->out == d->in, vin_place = pairs && d->values_out == d->values_in;
    const void *src = in_place ? L.take(n * ks) : d->in;
    const void *vsrc = vin_place ? L.take(n * vs) : d->values_in;
    const bool direct = key<DT>::kind == 0 && !desc && (!pairs || vs == ks);
    U *img = nullptr, *img_out = nullptr;
    unsigned *idx = nullptr, *idx_out = nullptr;
    if (!direct) {
        img = static_cast<U *>(L.take(n * ks));
        img_out = static_cast<U *>(L.take(n * ks));
        if (pairs) {
            idx = static_cast<unsigned *>(L.take(n * 4));
            idx_out = static_cast<unsigned *>(L.take(n * 4));
        }
    }
    int *sb = nullptr, *se = nullptr;
    void *bt = nullptr;
    size_t bb = 0;
    if (seg) { /* the segments' bounds, read once, and their scan's temporaries */
        sb = static_cast<int *>(L.take(d->num_segments * 4));
        se = static_cast<int *>(L.take(d->num_segments * 4));
        cudaError_t qe = seg_bounds(nullptr, bb, d, nullptr, nullptr, s);
        if (qe != cudaSuccess) return qe;
        bt = L.take(bb);
    }
    void *ct = L.base != nullptr ? L.base + L.off : nullptr;
    size_t cb = L.base != nullptr ? bytes - L.off : 0;
    cudaError_t err = cudaSuccess;
    if (L.base != nullptr) { /* the copies of an in-place call, the images */
        if (in_place)
            err = cudaMemcpyAsync((void *)src, d->in, n * ks, cudaMemcpyDeviceToDevice, s);
        if (err == cudaSuccess && vin_place)
            err = cudaMemcpyAsync((void *)vsrc, d->values_in, n * vs, cudaMemcpyDeviceToDevice, s);
        if (err == cudaSuccess && !direct) {
            image_kernel<DT>
                <<<grid_of(n), kThreads, 0, s>>>(static_cast<const U *>(src), img, idx, n, desc);
            err = cudaGetLastError();
        }
        if (err == cudaSuccess && seg) err = seg_bounds(bt, bb, d, sb, se, s);
        if (err == cudaSuccess && seg && idx_out != nullptr)
            err = cudaMemsetAsync(idx_out, 0xff, n * 4, s);
        if (err != cudaSuccess) return err;
    }
    U *kout = static_cast<U *>(d->out);
    if (direct && !pairs)
        err = cub_sort<U, void>(ct, cb, static_cast<const U *>(src), kout, nullptr, nullptr, d, sb,
                                se, s);
    else if (direct)
        err =
            cub_sort<U, U>(ct, cb, static_cast<const U *>(src), kout, static_cast<const U *>(vsrc),
                           static_cast<U *>(d->values_out), d, sb, se, s);
    else if (!pairs) /* the images carry the keys' own bits */
        err = cub_sort<U, U>(ct, cb, img, img_out, static_cast<const U *>(src), kout, d, sb, se, s);
    else
        err = cub_sort<U, unsigned>(ct, cb, img, img_out, idx, idx_out, d, sb, se, s);
    if (L.base == nullptr) {
        *need = L.off + cb;
        return err;
    }
    if (err == cudaSuccess && !direct && pairs)
        err = gather(idx_out, src, vsrc, d->out, d->values_out, n, ks, vs, s);
    return err;
}

typedef cudaError_t (*sort_fn)(const xdev_prim_desc_t *, void *, size_t, size_t *, cudaStream_t);

sort_fn sort_for(xdev_dtype_t t) {
    switch (t) {
#define XC_SORT_DT(DT)                                                                             \
    case DT:                                                                                       \
        return sort_dt<DT>;
        XC_SORT_DT(XDEV_DTYPE_U8)
        XC_SORT_DT(XDEV_DTYPE_U16)
        XC_SORT_DT(XDEV_DTYPE_U32)
        XC_SORT_DT(XDEV_DTYPE_U64)
        XC_SORT_DT(XDEV_DTYPE_I8)
        XC_SORT_DT(XDEV_DTYPE_I16)
        XC_SORT_DT(XDEV_DTYPE_I32)
        XC_SORT_DT(XDEV_DTYPE_I64)
        XC_SORT_DT(XDEV_DTYPE_F16)
        XC_SORT_DT(XDEV_DTYPE_BF16)
        XC_SORT_DT(XDEV_DTYPE_F32)
        XC_SORT_DT(XDEV_DTYPE_F64)
#undef XC_SORT_DT
    default:
        return nullptr;
    }
}

} // namespace

/* The sort and segmented_sort slots (cuda_prim.cu's table). */
xdev_status_t sort_slot(const xdev_prim_desc_t *d, size_t *temp_bytes, bool segmented) {
    xc_device_t *dev = d->device;
    const char *what = segmented ? "segmented_sort" : "sort";
    sort_fn fn = sort_for(d->dtype);
    if (fn == nullptr)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED, "%s: %s of dtype %d", XC_NAME, what,
                        (int)d->dtype);
    const bool index = d->values_in != nullptr;
    if (index && d->count > 0xfffffffeull)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s: %s of pairs of %zu items: the index this backend carries is 32-bit "
                        "(at most 2^32 - 2 items)",
                        XC_NAME, what, d->count);
    if (segmented && (d->count > 0x7fffffffull || d->num_segments > 0x7fffffffull))
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "%s: segmented_sort of %zu items in %zu segments: %s's segmented radix "
                        "sort counts in int (at most 2^31 - 1 of each)",
                        XC_NAME, d->count, d->num_segments, XC_PRIM_LIB);
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, dev->index);
    if (st != XDEV_SUCCESS) return st;
    size_t need = 0;
    cudaError_t err = fn(d, d->temp, d->temp_bytes, &need, (cudaStream_t)d->stream);
    xc_guard_end(&g);
    if (err != cudaSuccess)
        return xc_fail(err, "%s of %zu keys on device %d", what, d->count, dev->index);
    if (d->temp == NULL) *temp_bytes = temp_answer(need);
    return XDEV_SUCCESS;
}

} // namespace xc_prim
