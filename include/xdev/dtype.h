/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/dtype.h - element types of device buffers, shared by BLAS, FFT, random
 * fills, typed fills and conversions (xdev/ops.h). */
#ifndef XDEV_DTYPE_H
#define XDEV_DTYPE_H

#include <stddef.h>

#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xdev_dtype {
    XDEV_DTYPE_F32 = 0,  /* float */
    XDEV_DTYPE_F64 = 1,  /* double */
    XDEV_DTYPE_C64 = 2,  /* complex float: {float re, im} */
    XDEV_DTYPE_C128 = 3, /* complex double: {double re, im} */
    XDEV_DTYPE_F16 = 4,  /* IEEE 754 binary16 (uint16_t bits) */
    XDEV_DTYPE_BF16 = 5, /* bfloat16 (uint16_t bits: the high half of a float) */
    XDEV_DTYPE_I8 = 6,   /* int8_t */
    XDEV_DTYPE_I16 = 7,  /* int16_t */
    XDEV_DTYPE_I32 = 8,  /* int32_t */
    XDEV_DTYPE_I64 = 9,  /* int64_t */
    XDEV_DTYPE_U8 = 10,  /* uint8_t */
    XDEV_DTYPE_U16 = 11, /* uint16_t (since issue 44: sort keys, histogram samples) */
    XDEV_DTYPE_U32 = 12, /* uint32_t */
    XDEV_DTYPE_U64 = 13, /* uint64_t */
    XDEV_DTYPE_COUNT = 14,
} xdev_dtype_t;

/* The floating-point dtypes (bits 1 << dtype): the ones BLAS works in. */
#define XDEV_DTYPE_FLOAT_MASK                                                                      \
    ((1u << XDEV_DTYPE_F32) | (1u << XDEV_DTYPE_F64) | (1u << XDEV_DTYPE_C64) |                    \
     (1u << XDEV_DTYPE_C128) | (1u << XDEV_DTYPE_F16) | (1u << XDEV_DTYPE_BF16))

/* "f32", "f64", "c64", "c128", "f16", "bf16", "i8", "i16", "i32", "i64",
 * "u8", "u16", "u32", "u64"; NULL for an unknown dtype. Which calls take
 * which dtype is written beside each call: u16, u32 and u64 are taken by
 * typed fills, the primitives (xdev/primitives.h), DLPack and the
 * communicators' data movement; conversions, BLAS, xdev_elementwise and
 * reductions of the communicators refuse them naming the dtype. */
XDEV_API const char *xdev_dtype_name(xdev_dtype_t dtype);
/* Bytes per element; 0 for an unknown dtype. */
XDEV_API size_t xdev_dtype_size(xdev_dtype_t dtype);

#ifdef __cplusplus
}
#endif

#endif
