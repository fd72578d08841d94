/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/support/convert.h - element conversions between f16, bf16, f32, f64,
 * i32 and i64 (and the fill values of every dtype), written once for every
 * backend: the CPU backend calls these functions, the GPU kernels compile
 * the same ones as device code, so a conversion gives the same bits on
 * every backend (as the random numbers do, xdev/support/philox.h).
 *
 * Only integer operations and exact double comparisons are used, never the
 * hardware's float conversions, whose NaN payloads and rounding-mode
 * dependence differ between CPUs and GPUs. The rules (xdev/ops.h says them
 * to users):
 * - float -> narrower float: round to nearest, ties to even, from the exact
 *   value (one rounding: f64 -> f16 does not go through f32); overflow gives
 *   infinity of the sign, tiny values subnormals or signed zero;
 * - float -> wider float: exact;
 * - NaN -> NaN of the same sign, made quiet, keeping the payload's top bits;
 * - integer -> float: round to nearest, ties to even (i64 -> f32 included);
 * - float -> integer: toward zero; NaN -> 0; beyond the range: the nearest
 *   end of the range (saturating; C leaves it undefined);
 * - i64 -> i32: the low 32 bits (two's complement wrap, as torch);
 * - same dtype: the bits, unchanged. */
#ifndef XDEV_SUPPORT_CONVERT_H
#define XDEV_SUPPORT_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "xdev/dtype.h"

/* How the functions are declared; a file may define it first (XCV_FN, its
 * deprecated name, is still honoured). */
#ifndef XDEV_CVT_FN
#if defined(XCV_FN)
#define XDEV_CVT_FN XCV_FN
#elif defined(__CUDACC__) || defined(__HIPCC__)
#define XDEV_CVT_FN static inline __host__ __device__
#else
#define XDEV_CVT_FN static inline
#endif
#endif

/* Index of the highest set bit of x (x != 0). */
XDEV_CVT_FN int xdev_cvt_msb(uint64_t x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return 63 - __clzll((long long)x);
#else
    return 63 - __builtin_clzll(x);
#endif
}

/* ------------------------------------------------------------ float formats
 * A format is (exponent bits, mantissa bits): f64 (11, 52), f32 (8, 23),
 * f16 (5, 10), bf16 (8, 7). Bits are held in the low bits of a uint64_t. */

/* An f64 value (bits) rounded to the format (ebits, mbits), mbits < 52. */
XDEV_CVT_FN uint64_t xdev_cvt_round_f64(uint64_t b, int ebits, int mbits) {
    const uint64_t signbit = (b >> 63) << (ebits + mbits);
    const int exp = (int)((b >> 52) & 0x7ffu);
    const uint64_t man = b & ((1ull << 52) - 1u);
    const int maxe = (1 << ebits) - 1, bias = maxe >> 1;
    if (exp == 0x7ff) {
        if (man == 0) return signbit | ((uint64_t)maxe << mbits); /* infinity */
        return signbit | ((uint64_t)maxe << mbits) | (1ull << (mbits - 1)) | (man >> (52 - mbits));
    }
    if (exp == 0) return signbit; /* zero or an f64 subnormal: below every format's range */
    int te = exp - 1023 + bias;
    int shift = 52 - mbits;
    if (te < 1) { /* a subnormal of the format (or zero) */
        shift += 1 - te;
        te = 0;
    }
    if (shift > 53) return signbit; /* under half the smallest subnormal */
    const uint64_t sig = (1ull << 52) | man;
    uint64_t keep = sig >> shift;
    const uint64_t rem = sig & ((1ull << shift) - 1u), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (keep & 1u))) keep++;
    if (te == 0) return signbit | keep; /* a carry makes it the smallest normal */
    if (keep >> (mbits + 1)) {
        keep >>= 1;
        te++;
    }
    if (te >= maxe) return signbit | ((uint64_t)maxe << mbits);
    return signbit | ((uint64_t)te << mbits) | (keep & ((1ull << mbits) - 1u));
}

/* A value of the format (ebits, mbits) as f64 bits (exact). */
XDEV_CVT_FN uint64_t xdev_cvt_widen_f64(uint64_t b, int ebits, int mbits) {
    const uint64_t sign = (b >> (ebits + mbits)) & 1u;
    const int maxe = (1 << ebits) - 1, bias = maxe >> 1;
    const int exp = (int)((b >> mbits) & (uint64_t)maxe);
    uint64_t man = b & ((1ull << mbits) - 1u);
    if (exp == maxe) {
        if (man == 0) return (sign << 63) | (0x7ffull << 52);
        return (sign << 63) | (0x7ffull << 52) | (1ull << 51) | (man << (52 - mbits));
    }
    int e;
    if (exp == 0) {
        if (man == 0) return sign << 63;
        e = 1 - bias; /* subnormal: normalise */
        while (!(man & (1ull << mbits))) {
            man <<= 1;
            e--;
        }
        man &= (1ull << mbits) - 1u;
    } else {
        e = exp - bias;
    }
    return (sign << 63) | ((uint64_t)(e + 1023) << 52) | (man << (52 - mbits));
}

/* An integer (magnitude, sign) rounded to the format (ebits, mbits). */
XDEV_CVT_FN uint64_t xdev_cvt_round_int(uint64_t mag, int neg, int ebits, int mbits) {
    if (mag == 0) return 0;
    const uint64_t signbit = (uint64_t)(neg != 0) << (ebits + mbits);
    const int maxe = (1 << ebits) - 1, bias = maxe >> 1;
    int e = xdev_cvt_msb(mag);
    uint64_t keep;
    if (e <= mbits) {
        keep = mag << (mbits - e);
    } else {
        const int shift = e - mbits;
        keep = mag >> shift;
        const uint64_t rem = mag & ((1ull << shift) - 1u), half = 1ull << (shift - 1);
        if (rem > half || (rem == half && (keep & 1u))) keep++;
        if (keep >> (mbits + 1)) {
            keep >>= 1;
            e++;
        }
    }
    if (e + bias >= maxe) return signbit | ((uint64_t)maxe << mbits);
    return signbit | ((uint64_t)(e + bias) << mbits) | (keep & ((1ull << mbits) - 1u));
}

/* f64 bits toward zero into [lo, hi]; NaN -> 0. hi_out is the first value
 * past hi (2^31 for i32), lo_out the last value before lo whose truncation
 * leaves the range (-2^31 - 1 for i32). */
XDEV_CVT_FN int64_t xdev_cvt_f64_to_int(uint64_t b, double lo_out, double hi_out, int64_t lo,
                                        int64_t hi) {
    if (((b >> 52) & 0x7ffu) == 0x7ffu && (b & ((1ull << 52) - 1u)) != 0) return 0;
    double d;
    memcpy(&d, &b, sizeof d);
    if (d >= hi_out) return hi;
    if (d <= lo_out) return lo;
    return (int64_t)d;
}

XDEV_CVT_FN uint64_t xdev_cvt_f64_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* ------------------------------------------------------------ one element */

/* Bytes of a real dtype's element (plugins do not link libxdev's
 * xdev_dtype_size, and device code cannot call it). */
XDEV_CVT_FN size_t xdev_cvt_size(int dt) {
    switch (dt) {
    case XDEV_DTYPE_F64:
    case XDEV_DTYPE_I64:
    case XDEV_DTYPE_U64:
        return 8;
    case XDEV_DTYPE_F32:
    case XDEV_DTYPE_I32:
    case XDEV_DTYPE_U32:
        return 4;
    case XDEV_DTYPE_F16:
    case XDEV_DTYPE_BF16:
    case XDEV_DTYPE_I16:
    case XDEV_DTYPE_U16:
        return 2;
    default:
        return 1;
    }
}

XDEV_CVT_FN int xdev_cvt_is_int(int dt) {
    return dt == XDEV_DTYPE_I8 || dt == XDEV_DTYPE_I16 || dt == XDEV_DTYPE_I32 ||
           dt == XDEV_DTYPE_I64 || dt == XDEV_DTYPE_U8 || dt == XDEV_DTYPE_U16 ||
           dt == XDEV_DTYPE_U32 || dt == XDEV_DTYPE_U64;
}

/* A float element of dtype dt (f16, bf16, f32, f64) as f64 bits. */
XDEV_CVT_FN uint64_t xdev_cvt_load_float(const void *p, int dt) {
    if (dt == XDEV_DTYPE_F64) {
        uint64_t b;
        memcpy(&b, p, 8);
        return b;
    }
    if (dt == XDEV_DTYPE_F32) {
        uint32_t b;
        memcpy(&b, p, 4);
        return xdev_cvt_widen_f64(b, 8, 23);
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == XDEV_DTYPE_F16 ? xdev_cvt_widen_f64(h, 5, 10) : xdev_cvt_widen_f64(h, 8, 7);
}

/* An integer element of dtype dt. */
XDEV_CVT_FN int64_t xdev_cvt_load_int(const void *p, int dt) {
    switch (dt) {
    case XDEV_DTYPE_I8: {
        int8_t v;
        memcpy(&v, p, 1);
        return v;
    }
    case XDEV_DTYPE_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case XDEV_DTYPE_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case XDEV_DTYPE_U8: {
        uint8_t v;
        memcpy(&v, p, 1);
        return v;
    }
    case XDEV_DTYPE_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case XDEV_DTYPE_U32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: { /* i64; u64 as its bits (values past 2^63 - 1 read negative) */
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

/* Store f64 bits as an element of dtype dt (a real dtype). */
XDEV_CVT_FN void xdev_cvt_store_from_f64(void *p, int dt, uint64_t b) {
    switch (dt) {
    case XDEV_DTYPE_F64:
        memcpy(p, &b, 8);
        return;
    case XDEV_DTYPE_F32: {
        uint32_t v = (uint32_t)xdev_cvt_round_f64(b, 8, 23);
        memcpy(p, &v, 4);
        return;
    }
    case XDEV_DTYPE_F16:
    case XDEV_DTYPE_BF16: {
        uint16_t v = (uint16_t)(dt == XDEV_DTYPE_F16 ? xdev_cvt_round_f64(b, 5, 10)
                                                     : xdev_cvt_round_f64(b, 8, 7));
        memcpy(p, &v, 2);
        return;
    }
    case XDEV_DTYPE_I8: {
        int8_t v = (int8_t)xdev_cvt_f64_to_int(b, -129.0, 128.0, INT8_MIN, INT8_MAX);
        memcpy(p, &v, 1);
        return;
    }
    case XDEV_DTYPE_I16: {
        int16_t v = (int16_t)xdev_cvt_f64_to_int(b, -32769.0, 32768.0, INT16_MIN, INT16_MAX);
        memcpy(p, &v, 2);
        return;
    }
    case XDEV_DTYPE_I32: {
        int32_t v =
            (int32_t)xdev_cvt_f64_to_int(b, -2147483649.0, 2147483648.0, INT32_MIN, INT32_MAX);
        memcpy(p, &v, 4);
        return;
    }
    case XDEV_DTYPE_U8: {
        uint8_t v = (uint8_t)xdev_cvt_f64_to_int(b, -1.0, 256.0, 0, UINT8_MAX);
        memcpy(p, &v, 1);
        return;
    }
    case XDEV_DTYPE_U16: {
        uint16_t v = (uint16_t)xdev_cvt_f64_to_int(b, -1.0, 65536.0, 0, UINT16_MAX);
        memcpy(p, &v, 2);
        return;
    }
    case XDEV_DTYPE_U32: {
        uint32_t v = (uint32_t)xdev_cvt_f64_to_int(b, -1.0, 4294967296.0, 0, UINT32_MAX);
        memcpy(p, &v, 4);
        return;
    }
    case XDEV_DTYPE_U64: { /* saturates at 2^63 - 1 (no conversion takes u64: fills only) */
        uint64_t v = (uint64_t)xdev_cvt_f64_to_int(b, -1.0, 9223372036854775808.0, 0, INT64_MAX);
        memcpy(p, &v, 8);
        return;
    }
    default: { /* i64; -2^63 - 1 rounds to -2^63 in f64, the next double below is -2^63 - 2048 */
        int64_t v = xdev_cvt_f64_to_int(b, -9223372036854777856.0, 9223372036854775808.0, INT64_MIN,
                                        INT64_MAX);
        memcpy(p, &v, 8);
        return;
    }
    }
}

/* Store an integer as an element of dtype dt (a real dtype); integer
 * targets keep the low bits (wrap). */
XDEV_CVT_FN void xdev_cvt_store_from_int(void *p, int dt, int64_t v) {
    const uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    switch (dt) {
    case XDEV_DTYPE_F64: {
        uint64_t b = xdev_cvt_round_int(mag, v < 0, 11, 52);
        memcpy(p, &b, 8);
        return;
    }
    case XDEV_DTYPE_F32: {
        uint32_t b = (uint32_t)xdev_cvt_round_int(mag, v < 0, 8, 23);
        memcpy(p, &b, 4);
        return;
    }
    case XDEV_DTYPE_F16:
    case XDEV_DTYPE_BF16: {
        uint16_t b = (uint16_t)(dt == XDEV_DTYPE_F16 ? xdev_cvt_round_int(mag, v < 0, 5, 10)
                                                     : xdev_cvt_round_int(mag, v < 0, 8, 7));
        memcpy(p, &b, 2);
        return;
    }
    case XDEV_DTYPE_I8:
    case XDEV_DTYPE_U8: {
        uint8_t b = (uint8_t)(uint64_t)v;
        memcpy(p, &b, 1);
        return;
    }
    case XDEV_DTYPE_I16:
    case XDEV_DTYPE_U16: {
        uint16_t b = (uint16_t)(uint64_t)v;
        memcpy(p, &b, 2);
        return;
    }
    case XDEV_DTYPE_I32:
    case XDEV_DTYPE_U32: {
        uint32_t b = (uint32_t)(uint64_t)v;
        memcpy(p, &b, 4);
        return;
    }
    default:
        memcpy(p, &v, 8);
        return;
    }
}

/* Convert one element of dtype sdt at src to dtype ddt at dst (real
 * dtypes; the same dtype copies the bits). */
XDEV_CVT_FN void xdev_cvt_convert1(void *dst, int ddt, const void *src, int sdt) {
    if (ddt == sdt) {
        memcpy(dst, src, xdev_cvt_size(sdt));
        return;
    }
    if (xdev_cvt_is_int(sdt))
        xdev_cvt_store_from_int(dst, ddt, xdev_cvt_load_int(src, sdt));
    else
        xdev_cvt_store_from_f64(dst, ddt, xdev_cvt_load_float(src, sdt));
}

/* ------------------------------------------------------------ deprecated names
 * The names before they moved into xdev's namespace (xcv_* -> xdev_cvt_*,
 * XCV_FN -> XDEV_CVT_FN), kept as macros until the next major version. Do
 * not use them in new code. */
#ifndef XCV_FN
#define XCV_FN XDEV_CVT_FN
#endif
#define xcv_convert1 xdev_cvt_convert1
#define xcv_f64_bits xdev_cvt_f64_bits
#define xcv_f64_to_int xdev_cvt_f64_to_int
#define xcv_is_int xdev_cvt_is_int
#define xcv_load_float xdev_cvt_load_float
#define xcv_load_int xdev_cvt_load_int
#define xcv_msb xdev_cvt_msb
#define xcv_round_f64 xdev_cvt_round_f64
#define xcv_round_int xdev_cvt_round_int
#define xcv_size xdev_cvt_size
#define xcv_store_from_f64 xdev_cvt_store_from_f64
#define xcv_store_from_int xdev_cvt_store_from_int
#define xcv_widen_f64 xdev_cvt_widen_f64

#endif
