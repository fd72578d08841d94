/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/vendor/hip_prim.h - CUB's and Thrust's names, as the prim
 * table's sources (cuda_prim.cu, cuda_prim_sort.cu, cuda_prim_more.cu) call
 * them, over rocPRIM (Debian's librocprim-dev; rocPRIM 2.10 with ROCm 5.3):
 * the same pattern as hip_blas.h for cuBLAS, so the algorithms (order images,
 * the extremum pairs, clamped segments, the deterministic kernels) are
 * written once for both vendors. Debian has no hipCUB, which would be the
 * same mapping. Only what those sources use is here, each with CUB's
 * argument order:
 *   cub::DeviceReduce::Sum, Reduce          -> rocprim::reduce
 *   cub::DeviceScan::Inclusive/ExclusiveSum,
 *     Inclusive/ExclusiveScan               -> rocprim::inclusive_scan, exclusive_scan
 *   cub::DeviceRadixSort::SortKeys, SortPairs -> rocprim::radix_sort_keys, _pairs
 *   cub::DeviceSegmentedRadixSort::...      -> rocprim::segmented_radix_sort_keys, _pairs
 *   cub::DeviceSegmentedReduce::Reduce      -> rocprim::segmented_reduce
 *   cub::DeviceSelect::Flagged, If, Unique  -> rocprim::select (flags; a predicate),
 *                                              rocprim::unique
 *   cub::DeviceRunLengthEncode::Encode      -> rocprim::run_length_encode
 *   thrust::counting_iterator, make_transform_iterator -> rocPRIM's own;
 *   thrust::make_transform_output_iterator  -> xc_transform_output below
 *     (rocPRIM 2.10 has none);
 *   cuda::std::numeric_limits               -> std::numeric_limits (constexpr:
 *     usable in device code under hipcc).
 * Where rocPRIM differs in meaning (both sides keep CUB's semantics):
 * - sorts: CUB's and rocPRIM's radix sorts are both stable, LSD over
 *   [begin_bit, end_bit); the sources sort only unsigned keys ascending;
 * - rocPRIM's select, unique and run-length encode count in unsigned int, its
 *   segmented sorts and reduce take unsigned int sizes and segment counts:
 *   XC_PRIM_MAX_ITEMS says so to the slots, which refuse larger calls;
 * - every size query and run takes the same arguments, as CUB's do; a size
 *   query answers at least 4 bytes (the slots round up to 256 anyway).
 * Device intrinsics differ too: XC_SHFL_DOWN32 and XC_SYNCWARP, hip_vendor.h. */
#ifndef XDEV_HIP_PRIM_H
#define XDEV_HIP_PRIM_H

#include <iterator>
#include <limits>

#include <rocprim/device/device_radix_sort.hpp>
#include <rocprim/device/device_reduce.hpp>
#include <rocprim/device/device_run_length_encode.hpp>
#include <rocprim/device/device_scan.hpp>
#include <rocprim/device/device_segmented_radix_sort.hpp>
#include <rocprim/device/device_segmented_reduce.hpp>
#include <rocprim/device/device_select.hpp>
#include <rocprim/functional.hpp>
#include <rocprim/iterator/counting_iterator.hpp>
#include <rocprim/iterator/transform_iterator.hpp>

/* The library under the table, for messages (CUB on CUDA: cuda_prim_det.cuh). */
#define XC_PRIM_LIB "rocPRIM"
/* The largest item count rocPRIM's select, unique and run-length encode
 * take, and segment count of its segmented reduce (unsigned int counts). */
#define XC_PRIM_MAX_ITEMS 0xffffffffull

namespace cuda {
namespace std {
using ::std::numeric_limits;
} // namespace std
} // namespace cuda

namespace thrust {

template <typename T> using counting_iterator = ::rocprim::counting_iterator<T>;

template <typename It, typename F>
__host__ __device__ inline ::rocprim::transform_iterator<It, F> make_transform_iterator(It it,
                                                                                        F f) {
    return ::rocprim::transform_iterator<It, F>(it, f);
}

/* An output iterator: what is assigned through it is stored as f(value). */
template <typename P, typename F> class xc_transform_output {
  public:
    struct proxy {
        P p;
        F f;
        template <typename V> __host__ __device__ proxy &operator=(const V &v) {
            *p = f(v);
            return *this;
        }
    };
    using value_type = void;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = proxy;
    using iterator_category = std::random_access_iterator_tag;

    __host__ __device__ xc_transform_output(P p, F f) : p_(p), f_(f) {}
    __host__ __device__ proxy operator*() const {
        return proxy{p_, f_};
    }
    __host__ __device__ proxy operator[](difference_type i) const {
        return proxy{p_ + i, f_};
    }
    __host__ __device__ xc_transform_output operator+(difference_type i) const {
        return xc_transform_output(p_ + i, f_);
    }
    __host__ __device__ xc_transform_output &operator+=(difference_type i) {
        p_ += i;
        return *this;
    }
    __host__ __device__ xc_transform_output &operator++() {
        ++p_;
        return *this;
    }
    __host__ __device__ xc_transform_output operator++(int) {
        xc_transform_output t = *this;
        ++p_;
        return t;
    }

  private:
    P p_;
    F f_;
};

template <typename P, typename F>
__host__ __device__ inline xc_transform_output<P, F> make_transform_output_iterator(P p, F f) {
    return xc_transform_output<P, F>(p, f);
}

} // namespace thrust

namespace cub {

/* The value type an input iterator reads (a pointer's element, an iterator's value_type). */
template <typename It> using xc_value_t = typename std::iterator_traits<It>::value_type;

/* rocPRIM's segmented primitives take the begin and end offsets as one
 * iterator type, CUB's as two: segment s's begin (end = false) or end
 * through whichever of the caller's iterators applies. */
template <typename Bi, typename Ei> struct xc_bound {
    Bi bi;
    Ei ei;
    bool end;
    __host__ __device__ xc_value_t<Bi> operator()(long long s) const {
        return end ? (xc_value_t<Bi>)ei[s] : bi[s];
    }
};
template <typename Bi, typename Ei>
using xc_bounds_t = ::rocprim::transform_iterator<::rocprim::counting_iterator<long long>,
                                                  xc_bound<Bi, Ei>, xc_value_t<Bi>>;
template <typename Bi, typename Ei> xc_bounds_t<Bi, Ei> xc_bounds(Bi bi, Ei ei, bool end) {
    return xc_bounds_t<Bi, Ei>(::rocprim::counting_iterator<long long>(0),
                               xc_bound<Bi, Ei>{bi, ei, end});
}

struct DeviceReduce {
    template <typename I, typename O, typename N>
    static hipError_t Sum(void *t, size_t &b, I in, O out, N n, hipStream_t s) {
        using T = xc_value_t<I>;
        return ::rocprim::reduce(t, b, in, out, T(0), (size_t)n, ::rocprim::plus<T>(), s);
    }
    template <typename I, typename O, typename N, typename Op, typename Init>
    static hipError_t Reduce(void *t, size_t &b, I in, O out, N n, Op op, Init init,
                             hipStream_t s) {
        return ::rocprim::reduce(t, b, in, out, init, (size_t)n, op, s);
    }
};

struct DeviceScan {
    template <typename I, typename O, typename N>
    static hipError_t InclusiveSum(void *t, size_t &b, I in, O out, N n, hipStream_t s) {
        return ::rocprim::inclusive_scan(t, b, in, out, (size_t)n, ::rocprim::plus<xc_value_t<I>>(),
                                         s);
    }
    template <typename I, typename O, typename N>
    static hipError_t ExclusiveSum(void *t, size_t &b, I in, O out, N n, hipStream_t s) {
        using T = xc_value_t<I>;
        return ::rocprim::exclusive_scan(t, b, in, out, T(0), (size_t)n, ::rocprim::plus<T>(), s);
    }
    template <typename I, typename O, typename Op, typename N>
    static hipError_t InclusiveScan(void *t, size_t &b, I in, O out, Op op, N n, hipStream_t s) {
        return ::rocprim::inclusive_scan(t, b, in, out, (size_t)n, op, s);
    }
    template <typename I, typename O, typename Op, typename Init, typename N>
    static hipError_t ExclusiveScan(void *t, size_t &b, I in, O out, Op op, Init init, N n,
                                    hipStream_t s) {
        return ::rocprim::exclusive_scan(t, b, in, out, init, (size_t)n, op, s);
    }
};

struct DeviceRadixSort {
    template <typename K, typename N>
    static hipError_t SortKeys(void *t, size_t &b, const K *ki, K *ko, N n, int bb, int eb,
                               hipStream_t s) {
        return ::rocprim::radix_sort_keys(t, b, ki, ko, (size_t)n, (unsigned)bb, (unsigned)eb, s);
    }
    template <typename K, typename V, typename N>
    static hipError_t SortPairs(void *t, size_t &b, const K *ki, K *ko, const V *vi, V *vo, N n,
                                int bb, int eb, hipStream_t s) {
        return ::rocprim::radix_sort_pairs(t, b, ki, ko, vi, vo, (size_t)n, (unsigned)bb,
                                           (unsigned)eb, s);
    }
};

struct DeviceSegmentedRadixSort {
    template <typename K, typename Bi, typename Ei>
    static hipError_t SortKeys(void *t, size_t &b, const K *ki, K *ko, int n, int ns, Bi bi, Ei ei,
                               int bb, int eb, hipStream_t s) {
        return ::rocprim::segmented_radix_sort_keys(
            t, b, ki, ko, (unsigned)n, (unsigned)ns, xc_bounds(bi, ei, false),
            xc_bounds(bi, ei, true), (unsigned)bb, (unsigned)eb, s);
    }
    template <typename K, typename V, typename Bi, typename Ei>
    static hipError_t SortPairs(void *t, size_t &b, const K *ki, K *ko, const V *vi, V *vo, int n,
                                int ns, Bi bi, Ei ei, int bb, int eb, hipStream_t s) {
        return ::rocprim::segmented_radix_sort_pairs(
            t, b, ki, ko, vi, vo, (unsigned)n, (unsigned)ns, xc_bounds(bi, ei, false),
            xc_bounds(bi, ei, true), (unsigned)bb, (unsigned)eb, s);
    }
};

struct DeviceSegmentedReduce {
    template <typename I, typename O, typename N, typename Bi, typename Ei, typename Op,
              typename Init>
    static hipError_t Reduce(void *t, size_t &b, I in, O out, N ns, Bi bi, Ei ei, Op op, Init init,
                             hipStream_t s) {
        return ::rocprim::segmented_reduce(t, b, in, out, (unsigned)ns, xc_bounds(bi, ei, false),
                                           xc_bounds(bi, ei, true), op, init, s);
    }
};

struct DeviceSelect {
    template <typename I, typename F, typename O, typename C, typename N>
    static hipError_t Flagged(void *t, size_t &b, I in, F flags, O out, C count, N n,
                              hipStream_t s) {
        return ::rocprim::select(t, b, in, flags, out, count, (size_t)n, s);
    }
    template <typename I, typename O, typename C, typename N, typename P>
    static hipError_t If(void *t, size_t &b, I in, O out, C count, N n, P pred, hipStream_t s) {
        return ::rocprim::select(t, b, in, out, count, (size_t)n, pred, s);
    }
    template <typename I, typename O, typename C, typename N>
    static hipError_t Unique(void *t, size_t &b, I in, O out, C count, N n, hipStream_t s) {
        return ::rocprim::unique(t, b, in, out, count, (size_t)n,
                                 ::rocprim::equal_to<xc_value_t<I>>(), s);
    }
};

struct DeviceRunLengthEncode {
    template <typename I, typename U, typename L, typename C, typename N>
    static hipError_t Encode(void *t, size_t &b, I in, U unique, L lengths, C runs, N n,
                             hipStream_t s) {
        return ::rocprim::run_length_encode(t, b, in, (unsigned)n, unique, lengths, runs, s);
    }
};

} // namespace cub

#endif
