/* SPDX-License-Identifier: Apache-2.0 */
/* host_reduce.c - the elementwise reductions of the host-memory
 * communicator (communicator.c): dst[i] = op over srcs[r][i], for buffers
 * the host can address (the CPU backend's device memory).
 *
 * f16 and bf16 accumulate in float and round once at the end; integers
 * wrap on overflow (computed unsigned, so no undefined behaviour) and their
 * average truncates toward zero; min/max of floats follow fmin/fmax (a NaN
 * loses to a number). The element loop reads every source at i before it
 * writes dst[i], so dst may be one of the sources (in place). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "comm/host_reduce.h"
#include "xdev/support/half.h"

#define LD_F32(p, i) (((const float *)(p))[i])
#define ST_F32(p, i, v) (((float *)(p))[i] = (v))
#define LD_F64(p, i) (((const double *)(p))[i])
#define ST_F64(p, i, v) (((double *)(p))[i] = (v))
#define LD_F16(p, i) xdev_f16_to_f32(((const uint16_t *)(p))[i])
#define ST_F16(p, i, v) (((uint16_t *)(p))[i] = xdev_f32_to_f16(v))
#define LD_BF16(p, i) xdev_bf16_to_f32(((const uint16_t *)(p))[i])
#define ST_BF16(p, i, v) (((uint16_t *)(p))[i] = xdev_f32_to_bf16(v))

/* A float type: accumulator ACC (float or double), element access LOAD/STORE. */
#define DEFINE_FLOAT(NAME, ACC, LOAD, STORE)                                                       \
    static void NAME(void *dst, const void *const *srcs, int n, size_t count,                      \
                     xdev_reduce_op_t op) {                                                        \
        for (size_t i = 0; i < count; i++) {                                                       \
            ACC acc = LOAD(srcs[0], i);                                                            \
            for (int r = 1; r < n; r++) {                                                          \
                ACC v = LOAD(srcs[r], i);                                                          \
                switch (op) {                                                                      \
                case XDEV_REDUCE_PROD:                                                             \
                    acc *= v;                                                                      \
                    break;                                                                         \
                case XDEV_REDUCE_MIN:                                                              \
                    acc = (ACC)fmin(acc, v);                                                       \
                    break;                                                                         \
                case XDEV_REDUCE_MAX:                                                              \
                    acc = (ACC)fmax(acc, v);                                                       \
                    break;                                                                         \
                default: /* sum, avg */                                                            \
                    acc += v;                                                                      \
                }                                                                                  \
            }                                                                                      \
            if (op == XDEV_REDUCE_AVG) acc /= (ACC)n;                                              \
            STORE(dst, i, acc);                                                                    \
        }                                                                                          \
    }

/* A signed integer type T computed in its unsigned twin U (sum and product
 * wrap without undefined behaviour). */
#define DEFINE_INT(NAME, T, U)                                                                     \
    static void NAME(void *dst, const void *const *srcs, int n, size_t count,                      \
                     xdev_reduce_op_t op) {                                                        \
        for (size_t i = 0; i < count; i++) {                                                       \
            T acc = ((const T *)srcs[0])[i];                                                       \
            for (int r = 1; r < n; r++) {                                                          \
                T v = ((const T *)srcs[r])[i];                                                     \
                switch (op) {                                                                      \
                case XDEV_REDUCE_PROD:                                                             \
                    acc = (T)((U)acc * (U)v);                                                      \
                    break;                                                                         \
                case XDEV_REDUCE_MIN:                                                              \
                    acc = v < acc ? v : acc;                                                       \
                    break;                                                                         \
                case XDEV_REDUCE_MAX:                                                              \
                    acc = v > acc ? v : acc;                                                       \
                    break;                                                                         \
                default: /* sum, avg */                                                            \
                    acc = (T)((U)acc + (U)v);                                                      \
                }                                                                                  \
            }                                                                                      \
            if (op == XDEV_REDUCE_AVG) acc = (T)(acc / (T)n);                                      \
            ((T *)dst)[i] = acc;                                                                   \
        }                                                                                          \
    }

DEFINE_FLOAT(reduce_f32, float, LD_F32, ST_F32)
DEFINE_FLOAT(reduce_f64, double, LD_F64, ST_F64)
DEFINE_FLOAT(reduce_f16, float, LD_F16, ST_F16)
DEFINE_FLOAT(reduce_bf16, float, LD_BF16, ST_BF16)
DEFINE_INT(reduce_i32, int32_t, uint32_t)
DEFINE_INT(reduce_i64, int64_t, uint64_t)

bool xdev_host_reduce_supports(xdev_dtype_t dtype) {
    switch (dtype) {
    case XDEV_DTYPE_F32:
    case XDEV_DTYPE_F64:
    case XDEV_DTYPE_F16:
    case XDEV_DTYPE_BF16:
    case XDEV_DTYPE_I32:
    case XDEV_DTYPE_I64:
        return true;
    default:
        return false;
    }
}

void xdev_host_reduce(void *dst, const void *const *srcs, int n, size_t count, xdev_dtype_t dtype,
                      xdev_reduce_op_t op) {
    switch (dtype) {
    case XDEV_DTYPE_F32:
        reduce_f32(dst, srcs, n, count, op);
        break;
    case XDEV_DTYPE_F64:
        reduce_f64(dst, srcs, n, count, op);
        break;
    case XDEV_DTYPE_F16:
        reduce_f16(dst, srcs, n, count, op);
        break;
    case XDEV_DTYPE_BF16:
        reduce_bf16(dst, srcs, n, count, op);
        break;
    case XDEV_DTYPE_I32:
        reduce_i32(dst, srcs, n, count, op);
        break;
    case XDEV_DTYPE_I64:
        reduce_i64(dst, srcs, n, count, op);
        break;
    default: /* refused by the caller */
        break;
    }
}
