/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/ops.h - typed fills and dtype conversions of device memory, on the
 * device, stream-ordered (torch.full / fill_, tensor.to(dtype)).
 *
 *   xdev_fill_async(buf, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), n, NULL);
 *   xdev_convert_async(a32, XDEV_DTYPE_F32, a64, XDEV_DTYPE_F64, n, NULL);
 *
 * Both run on the device that owns the buffers, enqueued on `stream` (NULL:
 * that device's current stream), and return without waiting, as
 * xdev_memset_async. Buffers must be device memory from xdev_malloc* of one
 * device, long enough for `count` elements; a count of 0 does nothing. On an
 * error nothing is written. The results are the same bits on every backend:
 * one definition of every conversion (xdev/support/convert.h) runs on the
 * CPU and is compiled into the GPU kernels. */
#ifndef XDEV_OPS_H
#define XDEV_OPS_H

#include <stdint.h>

#include "xdev/dtype.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The value of a fill. A tagged value rather than a double, an int64 or a
 * pointer to an element: a double cannot hold every int64 (2^53 + 1), an
 * int64 cannot hold 0.5, and a void pointer to "an element of the dtype"
 * silently reads the wrong bytes when the caller's variable has another type.
 * Build one with xdev_scalar_f64 / _i64 / _c128; the fill converts it to the
 * dtype by the rules of xdev_convert_async. */
typedef enum xdev_scalar_kind {
    XDEV_SCALAR_F64 = 0,  /* a real number (double) */
    XDEV_SCALAR_I64 = 1,  /* an integer (int64_t) */
    XDEV_SCALAR_C128 = 2, /* a complex number (re, im) */
} xdev_scalar_kind_t;

typedef struct xdev_scalar {
    xdev_scalar_kind_t kind;
    int64_t i;     /* XDEV_SCALAR_I64 */
    double re, im; /* XDEV_SCALAR_F64 (re), XDEV_SCALAR_C128 */
} xdev_scalar_t;

static inline xdev_scalar_t xdev_scalar_f64(double v) {
    xdev_scalar_t s = {XDEV_SCALAR_F64, 0, v, 0.0};
    return s;
}
static inline xdev_scalar_t xdev_scalar_i64(int64_t v) {
    xdev_scalar_t s = {XDEV_SCALAR_I64, v, 0.0, 0.0};
    return s;
}
static inline xdev_scalar_t xdev_scalar_c128(double re, double im) {
    xdev_scalar_t s = {XDEV_SCALAR_C128, 0, re, im};
    return s;
}

/* Set `count` elements of dtype `dtype` at `dst` to `value` (any dtype of
 * xdev/dtype.h). The value becomes one element as xdev_convert_async would
 * convert it from f64 (a real value) or from i64 (an integer), except that
 * an integer outside an integer dtype's range is an error (a fill never
 * wraps silently), a complex value fills only c64/c128 and a real value
 * gives a complex element with imaginary part 0. A u64 fill takes integer
 * values 0 .. 2^63 - 1 (the scalar is an int64_t) and real values saturate
 * to that range. */
XDEV_API XDEV_RESULT xdev_status_t xdev_fill_async(void *dst, xdev_dtype_t dtype,
                                                   xdev_scalar_t value, size_t count,
                                                   xdev_stream_t stream);

/* dst[i] = src[i] converted from src_dtype to dst_dtype, for i < count,
 * between any two of f16, bf16, f32, f64, i32 and i64:
 * - to a narrower float: round to nearest, ties to even, in one rounding
 *   (f64 -> f16 does not pass through f32); overflow gives infinity,
 *   values too small give subnormals or signed zero;
 * - to a wider float: exact;
 * - NaN stays NaN of the same sign, made quiet, keeping its payload's top bits;
 * - integer -> float: round to nearest, ties to even;
 * - float -> integer: toward zero; NaN gives 0; values beyond the integer's
 *   range give its nearest end (saturating);
 * - i64 -> i32: the low 32 bits (two's complement wrap, as torch);
 * - the same dtype: a copy of the bits.
 * src and dst must not overlap, except that src == dst converts in place
 * when both dtypes have the same size. */
XDEV_API XDEV_RESULT xdev_status_t xdev_convert_async(void *dst, xdev_dtype_t dst_dtype,
                                                      const void *src, xdev_dtype_t src_dtype,
                                                      size_t count, xdev_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif
