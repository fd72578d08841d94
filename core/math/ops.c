/* SPDX-License-Identifier: Apache-2.0 */
/* ops.c - typed fills and dtype conversions (xdev/ops.h): the checks, the
 * fill value made into one element's bytes (xdev/support/convert.h, so the
 * element is the same on every backend), then the backend's ops table. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/enqueue.h"
#include "base/error_internal.h"
#include "math/operands.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "xdev/ops.h"
#include "xdev/support/convert.h"

/* The dtypes xdev_convert_async takes. */
static bool convertible(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F16 || t == XDEV_DTYPE_BF16 || t == XDEV_DTYPE_F32 ||
           t == XDEV_DTYPE_F64 || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64;
}

static xdev_status_t check_dtype(const char *arg, xdev_dtype_t t) {
    if (xdev_dtype_name(t) == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s %d is not an xdev_dtype_t (XDEV_DTYPE_F32 .. XDEV_DTYPE_U64)", arg,
                         (int)t);
    return XDEV_SUCCESS;
}

/* The range of an integer dtype. */
static void int_range(xdev_dtype_t t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case XDEV_DTYPE_I8:
        *lo = INT8_MIN, *hi = INT8_MAX;
        return;
    case XDEV_DTYPE_I16:
        *lo = INT16_MIN, *hi = INT16_MAX;
        return;
    case XDEV_DTYPE_I32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        return;
    case XDEV_DTYPE_U8:
        *lo = 0, *hi = UINT8_MAX;
        return;
    case XDEV_DTYPE_U16:
        *lo = 0, *hi = UINT16_MAX;
        return;
    case XDEV_DTYPE_U32:
        *lo = 0, *hi = UINT32_MAX;
        return;
    case XDEV_DTYPE_U64: /* the scalar is an int64_t: 0 .. 2^63 - 1 */
        *lo = 0, *hi = INT64_MAX;
        return;
    default:
        *lo = INT64_MIN, *hi = INT64_MAX;
        return;
    }
}

/* `value` as one element of `dtype` (pattern, *size bytes). */
static xdev_status_t fill_pattern(xdev_dtype_t dtype, xdev_scalar_t value, unsigned char *pattern,
                                  size_t *size) {
    const char *name = xdev_dtype_name(dtype);
    *size = xdev_dtype_size(dtype);
    bool complex = dtype == XDEV_DTYPE_C64 || dtype == XDEV_DTYPE_C128;
    switch (value.kind) {
    case XDEV_SCALAR_I64:
        if (xdev_cvt_is_int(dtype)) {
            int64_t lo, hi;
            int_range(dtype, &lo, &hi);
            if (value.i < lo || value.i > hi)
                return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "the value %lld does not fit %s (%lld .. %lld); a fill never "
                                 "wraps",
                                 (long long)value.i, name, (long long)lo, (long long)hi);
            xdev_cvt_store_from_int(pattern, dtype, value.i);
        } else if (complex) {
            xdev_dtype_t part = dtype == XDEV_DTYPE_C64 ? XDEV_DTYPE_F32 : XDEV_DTYPE_F64;
            memset(pattern, 0, *size);
            xdev_cvt_store_from_int(pattern, part, value.i);
        } else {
            xdev_cvt_store_from_int(pattern, dtype, value.i);
        }
        return XDEV_SUCCESS;
    case XDEV_SCALAR_F64:
    case XDEV_SCALAR_C128:
        if (value.kind == XDEV_SCALAR_C128 && !complex)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "a complex value (%g%+gi) fills only c64 or c128, not %s", value.re,
                             value.im, name);
        if (complex) {
            xdev_dtype_t part = dtype == XDEV_DTYPE_C64 ? XDEV_DTYPE_F32 : XDEV_DTYPE_F64;
            size_t half = *size / 2;
            double im = value.kind == XDEV_SCALAR_C128 ? value.im : 0.0;
            xdev_cvt_store_from_f64(pattern, part, xdev_cvt_f64_bits(value.re));
            xdev_cvt_store_from_f64(pattern + half, part, xdev_cvt_f64_bits(im));
        } else {
            xdev_cvt_store_from_f64(pattern, dtype, xdev_cvt_f64_bits(value.re));
        }
        return XDEV_SUCCESS;
    }
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                     "value.kind %d is not an xdev_scalar_kind_t (build the value with "
                     "xdev_scalar_f64, xdev_scalar_i64 or xdev_scalar_c128)",
                     (int)value.kind);
}

/* `count` elements of `size` bytes, as a byte count. */
static xdev_status_t extent(const char *arg, size_t count, size_t size, size_t *out) {
    if (!xdev_size_mul_add(count, size, 0, out))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "count = %zu elements of %zu bytes ('%s') overflow the address space",
                         count, size, arg);
    return XDEV_SUCCESS;
}

static xdev_status_t check_aligned(const char *arg, const void *p, size_t size, const char *dt) {
    if ((uintptr_t)p % size != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p) is not aligned to its element (%s: %zu bytes)", arg, p, dt,
                         size);
    return XDEV_SUCCESS;
}

/* The enqueue path's steps of a fill and a conversion (runtime/enqueue.h). */
typedef struct {
    void *dst;
    const unsigned char *pattern;
    size_t size, count;
    xdev_dtype_t dtype;
} fill_op_t;

static xdev_status_t fill_call(xdev_enqueue_t *q) {
    const fill_op_t *o = q->ctx;
    return xdev_be_ops_fill(q->rec, o->dst, o->pattern, o->size, o->count, q->stream->native);
}

static void fill_trace_args(xdev_enqueue_t *q) {
    const fill_op_t *o = q->ctx;
    xdev_enqueue_span_args(q, "\"dtype\":\"%s\",\"count\":%zu", xdev_dtype_name(o->dtype),
                           o->count);
}

typedef struct {
    void *dst;
    xdev_dtype_t dst_dtype;
    const void *src;
    xdev_dtype_t src_dtype;
    size_t count;
} convert_op_t;

static xdev_status_t convert_call(xdev_enqueue_t *q) {
    const convert_op_t *o = q->ctx;
    return xdev_be_ops_convert(q->rec, o->dst, o->dst_dtype, o->src, o->src_dtype, o->count,
                               q->stream->native);
}

static void convert_trace_args(xdev_enqueue_t *q) {
    const convert_op_t *o = q->ctx;
    xdev_enqueue_span_args(q, "\"src\":\"%s\",\"dst\":\"%s\",\"count\":%zu",
                           xdev_dtype_name(o->src_dtype), xdev_dtype_name(o->dst_dtype), o->count);
}

/* The public calls hold the bodies: their XDEV_CHECKs put the public name in
 * front of a message (an inner function's would put its own name there). A
 * backend without the ops table answers XDEV_ERROR_NOT_SUPPORTED naming
 * itself and the slot (dispatch.h). */
xdev_status_t xdev_fill_async(void *dst, xdev_dtype_t dtype, xdev_scalar_t value, size_t count,
                              xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(check_dtype("dtype", dtype));
    unsigned char pattern[16];
    size_t size = 0;
    XDEV_CHECK(fill_pattern(dtype, value, pattern, &size));
    if (count == 0) return XDEV_SUCCESS;
    xdev_operand_t op = {"dst", dst, 0};
    XDEV_CHECK(extent("dst", count, size, &op.bytes));
    xdev_exec_target_t t;
    XDEV_CHECK(xdev_operands_resolve(&op, 1, stream, "fill", &t));
    XDEV_CHECK(check_aligned("dst", dst, size, xdev_dtype_name(dtype)));
    fill_op_t o = {dst, pattern, size, count, dtype};
    xdev_op_use_t use;
    xdev_enqueue_t q = {
        .kind = XDEV_OP_FILL,
        .name = "fill",
        .stream = t.stream,
        .rec = t.rec,
        .ctx = &o,
        .uses = &use,
        .nuses = xdev_operands_uses(&op, 1, 1, &use),
        .call = fill_call,
        .trace_args = fill_trace_args,
    };
    XDEV_CHECK(xdev_enqueue(&q));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_convert_async(void *dst, xdev_dtype_t dst_dtype, const void *src,
                                 xdev_dtype_t src_dtype, size_t count, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(check_dtype("dst_dtype", dst_dtype));
    XDEV_CHECK(check_dtype("src_dtype", src_dtype));
    if (!convertible(dst_dtype) || !convertible(src_dtype))
        return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "converting %s to %s: conversions are between f16, bf16, f32, f64, "
                             "i32 and i64",
                             xdev_dtype_name(src_dtype), xdev_dtype_name(dst_dtype));
    if (count == 0) return XDEV_SUCCESS;
    const size_t dsize = xdev_dtype_size(dst_dtype), ssize = xdev_dtype_size(src_dtype);
    xdev_operand_t d = {"dst", dst, 0}, s = {"src", src, 0};
    XDEV_CHECK(extent("dst", count, dsize, &d.bytes));
    XDEV_CHECK(extent("src", count, ssize, &s.bytes));
    xdev_exec_target_t t, ts;
    XDEV_CHECK(xdev_operands_resolve(&d, 1, stream, "conversion", &t));
    XDEV_CHECK(xdev_operands_resolve(&s, 1, NULL, "conversion", &ts));
    if (ts.rec != t.rec)
        return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "'src' is on %s:%d but 'dst' is on %s:%d: a conversion reads and "
                             "writes one device (copy src there first)",
                             ts.be->name, ts.index, t.be->name, t.index);
    XDEV_CHECK(check_aligned("dst", dst, dsize, xdev_dtype_name(dst_dtype)));
    XDEV_CHECK(check_aligned("src", src, ssize, xdev_dtype_name(src_dtype)));
    const uintptr_t d0 = (uintptr_t)dst, s0 = (uintptr_t)src;
    bool overlap = d0 < s0 + s.bytes && s0 < d0 + d.bytes;
    if (overlap && !(d0 == s0 && dsize == ssize))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "'dst' [%p, +%zu) and 'src' [%p, +%zu) overlap; only src == dst "
                             "with dtypes of one size (%s -> %s) converts in place",
                             dst, d.bytes, src, s.bytes, xdev_dtype_name(src_dtype),
                             xdev_dtype_name(dst_dtype));
    convert_op_t o = {dst, dst_dtype, src, src_dtype, count};
    const xdev_operand_t both[2] = {d, s};
    xdev_op_use_t uses[2];
    xdev_enqueue_t q = {
        .kind = XDEV_OP_CONVERT,
        .name = "convert",
        .stream = t.stream,
        .rec = t.rec,
        .ctx = &o,
        .uses = uses,
        .nuses = xdev_operands_uses(both, 2, 1, uses),
        .call = convert_call,
        .trace_args = convert_trace_args,
    };
    XDEV_CHECK(xdev_enqueue(&q));
    return XDEV_SUCCESS;
}
