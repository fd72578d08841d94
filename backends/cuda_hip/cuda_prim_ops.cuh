/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_prim_ops.cuh - the operators that the prim table's
 * CUB calls share (cuda_prim.cu's reduce and scan, cuda_prim_more.cu's
 * segmented reduce): the dtype conversions of the transform iterators, the
 * sum and product, and the (value, index) pairs of the extremum reduces, so
 * a segment's argmin picks exactly as the whole array's does. Written once
 * here because the two must never drift apart; hipcc compiles the same text
 * over rocPRIM (vendor/hip_prim.h). */
#ifndef XDEV_CUDA_PRIM_OPS_CUH
#define XDEV_CUDA_PRIM_OPS_CUH

#include "cuda_prim_det.cuh" /* dt<DT> */

namespace xc_prim {

/* raw element -> the accumulation type, and back (rounded once). */
template <int DT> struct to_acc {
    __host__ __device__ typename dt<DT>::acc operator()(typename dt<DT>::raw v) const {
        return dt<DT>::load(v);
    }
};
template <int DT> struct from_acc {
    __host__ __device__ typename dt<DT>::raw operator()(typename dt<DT>::acc v) const {
        return dt<DT>::store(v);
    }
};

struct add_op {
    template <typename T> __host__ __device__ T operator()(const T &a, const T &b) const {
        return a + b;
    }
};
struct mul_op {
    template <typename T> __host__ __device__ T operator()(const T &a, const T &b) const {
        return a * b;
    }
};

/* (value, index) of the extremum reduce. */
template <typename A> struct alignas(16) ext_t {
    A v;
    long long i;
};

/* Element i as a pair (a counting iterator's index through this). */
template <int DT> struct ext_load {
    const typename dt<DT>::raw *in;
    __host__ __device__ ext_t<typename dt<DT>::acc> operator()(long long i) const {
        return {dt<DT>::load(in[i]), i};
    }
};

/* The better of two pairs: NaN first, then the extremum, then the lower
 * index; -0 == +0. A total order: commutative and associative. */
template <bool MAX> struct ext_pick {
    template <typename P> __host__ __device__ P operator()(const P &a, const P &b) const {
        const bool an = a.v != a.v, bn = b.v != b.v;
        if (an || bn) {
            if (an && bn) return a.i <= b.i ? a : b;
            return an ? a : b;
        }
        if (a.v < b.v) return MAX ? b : a;
        if (b.v < a.v) return MAX ? a : b;
        return a.i <= b.i ? a : b;
    }
};

} // namespace xc_prim

#endif
