/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_prim.cu - the CUDA backend's parallel primitives
 * (the prim table, xdev/primitives.h): reduce and scan through CUB
 * (cub::DeviceReduce, cub::DeviceScan: the toolkit's own, the fastest there
 * is), and the deterministic order of xdev/primitives.h in kernels of this
 * file (cuda_prim_det.cuh) when XDEV_PRIM_FLAG_DETERMINISTIC asks for it.
 * The HIP plugin compiles the same text with hipcc over rocPRIM:
 * vendor/hip_prim.h maps the CUB and Thrust names used here to rocPRIM's.
 *
 * What CUB runs here, by op:
 * - sum, prod: DeviceReduce::Sum / Reduce on the raw pointers (f32, f64;
 *   i32 and i64 as their unsigned twins, so they wrap), through transform
 *   iterators for f16/bf16 (loaded to f32, the result rounded once with
 *   xdev/support/half.h, the CPU's rounding);
 * - min, max, argmin, argmax: one reduce of (value, index) pairs whose
 *   operator picks NaN first, else the extremum, else the lower index - a
 *   total order, so the reduce is commutative as CUB may need and gives the
 *   first extremum; min/max then write the element at that index (its own
 *   bits: -0 or +0, whichever came first);
 * - scans: DeviceScan over the same iterators; min and max with a
 *   NaN-propagating operator that keeps its left operand on ties (scans
 *   keep operand order, so this is the sequential fold exactly).
 * Every slot runs with the device current (CUB sizes its grids, and so its
 * temporaries, for the current device: the size query and the enqueue must
 * see the same one). Temporaries: CUB's, or the deterministic kernels'
 * (cuda_prim_det.cuh: one value per chunk or per block). */
#include <stdint.h>
#include <string.h>

#include "vendor/xc_vendor.h" /* the device runtime, outside extern "C" */
extern "C" {
#include "cuda_internal.h"
}
#if defined(XC_VENDOR_HIP)
#include "vendor/hip_prim.h" /* CUB's and Thrust's names over rocPRIM */
#else
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>
#endif

#include "cuda_prim_det.cuh"
#include "cuda_prim_ops.cuh"
#include "xdev/primitives.h"

namespace {

using namespace xc_prim;

const char *op_name(int op) {
    static const char *const names[] = {"sum", "prod", "min", "max", "argmin", "argmax"};
    return op >= 0 && op <= XDEV_PRIM_ARGMAX ? names[op] : "?";
}

const char *dtype_name(int t) {
    static const char *const names[] = {"f32", "f64", "c64", "c128", "f16", "bf16", "i8",
                                        "i16", "i32", "i64", "u8",   "u16", "u32",  "u64"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "?";
}

/* ------------------------------------------------------------ functors */

/* Those cuda_prim_more.cu uses too (to_acc, add_op, the extremum pairs
 * ext_t / ext_load / ext_pick) are cuda_prim_ops.cuh's; these are this
 * file's alone. */

/* The scans' min and max: NaN from the first NaN on, the left operand on
 * ties (the CPU's PICK_MIN / PICK_MAX). */
template <bool MAX> struct scan_pick {
    template <typename T> __host__ __device__ T operator()(const T &a, const T &b) const {
        if (a != a) return a;
        if (b != b) return b;
        return (MAX ? a < b : b < a) ? b : a;
    }
};

/* The result of an extremum reduce: the index (arg ops) or the element's
 * own bits (min/max). */
template <int DT> struct ext_index {
    template <typename P> __host__ __device__ long long operator()(const P &p) const {
        return p.i;
    }
};
template <int DT> struct ext_value {
    const typename dt<DT>::raw *in;
    template <typename P> __host__ __device__ typename dt<DT>::raw operator()(const P &p) const {
        return in[p.i];
    }
};

/* ------------------------------------------------------------ reduce */

/* One call shape for the size query (temp NULL) and the run. */
struct call_t {
    void *temp;       /* CUB's part of the temporaries (NULL: size query) */
    size_t cub_bytes; /* in: its size; out (query): what CUB asks for */
    cudaStream_t s;
};

/* Sum or prod of the raw pointer types (f32, f64, and integers as unsigned). */
template <typename T>
cudaError_t reduce_plain(call_t &c, const void *in, void *out, size_t n, bool prod) {
    const T *p = static_cast<const T *>(in);
    T *o = static_cast<T *>(out);
    if (!prod) return cub::DeviceReduce::Sum(c.temp, c.cub_bytes, p, o, n, c.s);
    return cub::DeviceReduce::Reduce(c.temp, c.cub_bytes, p, o, n, mul_op{}, T(1), c.s);
}

/* f16 / bf16: accumulate in f32, round once on the way out. */
template <int DT>
cudaError_t reduce_half(call_t &c, const void *in, void *out, size_t n, bool prod) {
    using raw = typename dt<DT>::raw;
    auto it = thrust::make_transform_iterator(static_cast<const raw *>(in), to_acc<DT>{});
    auto o = thrust::make_transform_output_iterator(static_cast<raw *>(out), from_acc<DT>{});
    if (!prod) return cub::DeviceReduce::Reduce(c.temp, c.cub_bytes, it, o, n, add_op{}, 0.0f, c.s);
    return cub::DeviceReduce::Reduce(c.temp, c.cub_bytes, it, o, n, mul_op{}, 1.0f, c.s);
}

template <int DT, bool MAX>
cudaError_t reduce_ext_dir(call_t &c, const void *in, void *out, size_t n, bool arg) {
    using raw = typename dt<DT>::raw;
    using P = ext_t<typename dt<DT>::acc>;
    const raw *p = static_cast<const raw *>(in);
    auto it =
        thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), ext_load<DT>{p});
    const P init = {MAX ? dt<DT>::lo() : dt<DT>::hi(), (long long)INT64_MAX};
    if (arg) {
        auto o =
            thrust::make_transform_output_iterator(static_cast<long long *>(out), ext_index<DT>{});
        return cub::DeviceReduce::Reduce(c.temp, c.cub_bytes, it, o, n, ext_pick<MAX>{}, init, c.s);
    }
    auto o = thrust::make_transform_output_iterator(static_cast<raw *>(out), ext_value<DT>{p});
    return cub::DeviceReduce::Reduce(c.temp, c.cub_bytes, it, o, n, ext_pick<MAX>{}, init, c.s);
}

template <int DT> cudaError_t reduce_ext(call_t &c, const void *in, void *out, size_t n, int op) {
    const bool arg = op == XDEV_PRIM_ARGMIN || op == XDEV_PRIM_ARGMAX;
    if (op == XDEV_PRIM_MAX || op == XDEV_PRIM_ARGMAX)
        return reduce_ext_dir<DT, true>(c, in, out, n, arg);
    return reduce_ext_dir<DT, false>(c, in, out, n, arg);
}

/* CUB's reduce of one dtype and op. */
template <int DT> cudaError_t reduce_cub(call_t &c, const xdev_prim_desc_t *d) {
    const bool prod = d->op == XDEV_PRIM_PROD;
    if (d->op != XDEV_PRIM_SUM && !prod) return reduce_ext<DT>(c, d->in, d->out, d->count, d->op);
    if constexpr (dt<DT>::half)
        return reduce_half<DT>(c, d->in, d->out, d->count, prod);
    else /* f32, f64; integers as unsigned (dt::sum) */
        return reduce_plain<typename dt<DT>::sum>(c, d->in, d->out, d->count, prod);
}

/* ------------------------------------------------------------ scan */

template <int DT, typename OP>
cudaError_t scan_iters(call_t &c, const xdev_prim_desc_t *d, OP op, typename dt<DT>::acc init) {
    using raw = typename dt<DT>::raw;
    const bool excl = (d->flags & XDEV_PRIM_EXCLUSIVE) != 0;
    const size_t n = d->count;
    if constexpr (dt<DT>::half) {
        auto it = thrust::make_transform_iterator(static_cast<const raw *>(d->in), to_acc<DT>{});
        auto o = thrust::make_transform_output_iterator(static_cast<raw *>(d->out), from_acc<DT>{});
        if (excl)
            return cub::DeviceScan::ExclusiveScan(c.temp, c.cub_bytes, it, o, op, init, n, c.s);
        return cub::DeviceScan::InclusiveScan(c.temp, c.cub_bytes, it, o, op, n, c.s);
    } else { /* min and max of the raw types (their sums are CUB's own: scan_cub) */
        const raw *in = static_cast<const raw *>(d->in);
        raw *out = static_cast<raw *>(d->out);
        if (excl)
            return cub::DeviceScan::ExclusiveScan(c.temp, c.cub_bytes, in, out, op, (raw)init, n,
                                                  c.s);
        return cub::DeviceScan::InclusiveScan(c.temp, c.cub_bytes, in, out, op, n, c.s);
    }
}

template <int DT> cudaError_t scan_cub(call_t &c, const xdev_prim_desc_t *d) {
    using A = typename dt<DT>::acc;
    if (d->op == XDEV_PRIM_MIN) return scan_iters<DT>(c, d, scan_pick<false>{}, dt<DT>::hi());
    if (d->op == XDEV_PRIM_MAX) return scan_iters<DT>(c, d, scan_pick<true>{}, dt<DT>::lo());
    /* SUM (CUB's own sums; element 0 of an exclusive scan is +0) */
    if constexpr (!dt<DT>::half) {
        const typename dt<DT>::sum *in = static_cast<const typename dt<DT>::sum *>(d->in);
        typename dt<DT>::sum *out = static_cast<typename dt<DT>::sum *>(d->out);
        if (d->flags & XDEV_PRIM_EXCLUSIVE)
            return cub::DeviceScan::ExclusiveSum(c.temp, c.cub_bytes, in, out, d->count, c.s);
        return cub::DeviceScan::InclusiveSum(c.temp, c.cub_bytes, in, out, d->count, c.s);
    } else {
        return scan_iters<DT>(c, d, add_op{}, A(0));
    }
}

/* ------------------------------------------------------------ the slots */

typedef cudaError_t (*cub_fn)(call_t &, const xdev_prim_desc_t *);

bool deterministic_path(const xdev_prim_desc_t *d, bool scan) {
    const bool flt = d->dtype == XDEV_DTYPE_F32 || d->dtype == XDEV_DTYPE_F64 ||
                     d->dtype == XDEV_DTYPE_F16 || d->dtype == XDEV_DTYPE_BF16;
    if (!(d->flags & XDEV_PRIM_FLAG_DETERMINISTIC) || !flt || d->count == 0) return false;
    return scan ? d->op == XDEV_PRIM_SUM : d->op == XDEV_PRIM_SUM || d->op == XDEV_PRIM_PROD;
}

/* The dtype's CUB function and deterministic launcher; false: not taken. */
bool pick(const xdev_prim_desc_t *d, bool scan, cub_fn *cub, det_fn *det) {
    switch (d->dtype) {
#define XC_PRIM_DT(DT)                                                                             \
    case DT:                                                                                       \
        *cub = scan ? scan_cub<DT> : reduce_cub<DT>;                                               \
        *det = scan ? det_scan<DT> : det_reduce<DT>;                                               \
        return true;
        XC_PRIM_DT(XDEV_DTYPE_F32)
        XC_PRIM_DT(XDEV_DTYPE_F64)
        XC_PRIM_DT(XDEV_DTYPE_F16)
        XC_PRIM_DT(XDEV_DTYPE_BF16)
        XC_PRIM_DT(XDEV_DTYPE_I32)
        XC_PRIM_DT(XDEV_DTYPE_I64)
        XC_PRIM_DT(XDEV_DTYPE_U32)
        XC_PRIM_DT(XDEV_DTYPE_U64)
#undef XC_PRIM_DT
    default:
        return false;
    }
}

/* Either slot: the size query (desc->temp NULL) or the enqueue. */
xdev_status_t prim_submit(const xdev_prim_desc_t *d, size_t *temp_bytes, bool scan) {
    xc_device_t *dev = d->device;
    const char *what = scan ? "scan" : "reduce";
    cub_fn cub = nullptr;
    det_fn det = nullptr;
    if (!pick(d, scan, &cub, &det))
        return xc_error(XDEV_ERROR_NOT_SUPPORTED, "%s: %s %s of dtype %s", XC_NAME, what,
                        op_name(d->op), dtype_name((int)d->dtype));
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, dev->index);
    if (st != XDEV_SUCCESS) return st;
    cudaError_t err = cudaSuccess;
    const cudaStream_t s = (cudaStream_t)d->stream;
    if (deterministic_path(d, scan)) {
        const size_t need = det_temp_bytes(d->dtype, d->count, scan);
        if (d->temp == NULL)
            *temp_bytes = temp_answer(need);
        else if (d->temp_bytes < need)
            err = cudaErrorInvalidValue;
        else
            err = det(d, d->temp, s);
    } else if (d->temp == NULL) {
        call_t c = {nullptr, 0, s};
        err = cub(c, d);
        *temp_bytes = temp_answer(c.cub_bytes);
    } else {
        call_t c = {d->temp, d->temp_bytes, s};
        err = cub(c, d);
    }
    xc_guard_end(&g);
    if (err != cudaSuccess)
        return xc_fail(err, "%s %s of %zu %s%s on device %d", what, op_name(d->op), d->count,
                       dtype_name((int)d->dtype),
                       d->flags & XDEV_PRIM_FLAG_DETERMINISTIC ? " (deterministic)" : "",
                       dev->index);
    return XDEV_SUCCESS;
}

__attribute__((unused)) xdev_status_t prim_reduce(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return prim_submit(d, temp_bytes, false);
}

__attribute__((unused)) xdev_status_t prim_scan(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return prim_submit(d, temp_bytes, true);
}

__attribute__((unused)) xdev_status_t prim_sort(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return sort_slot(d, temp_bytes, false);
}

__attribute__((unused)) xdev_status_t prim_segmented_sort(const xdev_prim_desc_t *d,
                                                          size_t *temp_bytes) {
    return sort_slot(d, temp_bytes, true);
}

} // namespace

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
extern "C" const xdev_prim_vtable_t xc_prim_vtable = {sizeof(xdev_prim_vtable_t),
                                                      prim_reduce,
                                                      prim_scan,
                                                      prim_sort,
                                                      prim_segmented_sort,
                                                      segmented_reduce_slot,
                                                      histogram_slot,
                                                      select_flagged_slot,
                                                      unique_slot,
                                                      run_length_encode_slot,
                                                      select_compare_slot};
#endif
