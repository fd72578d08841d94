/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/blas.h - dense linear algebra on any backend: GEMM (single and
 * strided batched) for f32, f64, c64, c128, f16 and bf16, and a few level-1
 * routines (axpy, dot, nrm2, scal).
 *
 * Conventions (those of BLAS and cuBLAS):
 * - Matrices are column-major: element (i, j) of A is a[i + j * lda].
 *   Row-major data works unchanged by computing the transpose: for row-major
 *   C = A * B (A m x k, B k x n, leading dimensions = row lengths), call
 *     xdev_gemm(dt, N, N, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc)
 *   i.e. swap A and B and swap m and n (C^T = B^T A^T).
 * - Every operand must be device memory from xdev_malloc* on one device (or
 *   on devices with peer access enabled); the work runs on the device that
 *   owns the output (C, y, x for scal, result) and is enqueued on `stream`,
 *   or on that device's current stream when `stream` is NULL. Like any other
 *   work it is asynchronous: read results after synchronizing or through a
 *   stream-ordered copy.
 * - When beta is 0, C is not read (NaN in C does not propagate), as in BLAS.
 * - f16 and bf16 GEMM take 16-bit inputs and outputs and accumulate in f32.
 * - Complex values are interleaved (re, im) pairs of float (c64) or double (c128).
 * - Sizes m, n, k and vector lengths must be positive; increments positive. */
#ifndef XDEV_BLAS_H
#define XDEV_BLAS_H

#include <stdbool.h>
#include <stdint.h>

#include "xdev/dtype.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* BLAS works in the floating-point dtypes of xdev/dtype.h (XDEV_DTYPE_FLOAT_MASK);
 * an integer dtype is XDEV_ERROR_NOT_SUPPORTED. */

typedef enum xdev_blas_op {
    XDEV_BLAS_OP_N = 0, /* as stored */
    XDEV_BLAS_OP_T = 1, /* transposed */
    XDEV_BLAS_OP_C = 2, /* conjugate transposed (= T for real dtypes) */
} xdev_blas_op_t;

typedef enum xdev_blas_routine {
    XDEV_BLAS_GEMM = 0,
    XDEV_BLAS_AXPY = 1,
    XDEV_BLAS_DOT = 2,
    XDEV_BLAS_NRM2 = 3,
    XDEV_BLAS_SCAL = 4,
    XDEV_BLAS_ROUTINE_COUNT = 5,
} xdev_blas_routine_t;

/* Does `device`'s backend run `routine` with `dtype`? A call with a dtype it
 * does not support fails with XDEV_ERROR_NOT_SUPPORTED naming both. The CPU
 * backend: GEMM for every dtype, level-1 for f32 and f64. */
XDEV_API XDEV_RESULT xdev_status_t xdev_blas_supports(xdev_device_t device,
                                                      xdev_blas_routine_t routine,
                                                      xdev_dtype_t dtype, bool *out);

/* Every parameter of a (strided batched) GEMM:
 *   C[i] = alpha * op(A[i]) * op(B[i]) + beta * C[i],  i = 0 .. batch-1,
 * with A[i] = a + i * stride_a elements (likewise B, C), op(A) m x k,
 * op(B) k x n, C m x n. Set size = sizeof(xdev_gemm_params_t); fields are
 * only ever appended. alpha_imag/beta_imag are the imaginary parts for
 * complex dtypes (ignored otherwise). stride_a/stride_b may be 0 (one matrix
 * for every batch); stride_c must keep the outputs apart (>= ldc * n). */
typedef struct xdev_gemm_params {
    size_t size;
    xdev_dtype_t dtype;
    xdev_blas_op_t transa, transb;
    int64_t m, n, k;
    double alpha, alpha_imag;
    const void *a;
    int64_t lda, stride_a;
    const void *b;
    int64_t ldb, stride_b;
    double beta, beta_imag;
    void *c;
    int64_t ldc, stride_c;
    int64_t batch; /* >= 1 */
} xdev_gemm_params_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_gemm_ex(const xdev_gemm_params_t *params,
                                                xdev_stream_t stream);

/* C = alpha * op(A) * op(B) + beta * C (real alpha/beta, any dtype). */
XDEV_API XDEV_RESULT xdev_status_t xdev_gemm(xdev_dtype_t dtype, xdev_blas_op_t transa,
                                             xdev_blas_op_t transb, int64_t m, int64_t n, int64_t k,
                                             double alpha, const void *a, int64_t lda,
                                             const void *b, int64_t ldb, double beta, void *c,
                                             int64_t ldc, xdev_stream_t stream);

/* `batch` GEMMs whose operands are `stride_*` elements apart. */
XDEV_API XDEV_RESULT xdev_status_t xdev_gemm_strided_batched(
    xdev_dtype_t dtype, xdev_blas_op_t transa, xdev_blas_op_t transb, int64_t m, int64_t n,
    int64_t k, double alpha, const void *a, int64_t lda, int64_t stride_a, const void *b,
    int64_t ldb, int64_t stride_b, double beta, void *c, int64_t ldc, int64_t stride_c,
    int64_t batch, xdev_stream_t stream);

/* Level 1 (f32, f64 on every backend). x and y hold n elements `incx`/`incy`
 * apart. dot and nrm2 write their scalar result (one element of dtype) to
 * `result`, which is device memory like the operands, so they stay
 * asynchronous (cuBLAS's device pointer mode). */
XDEV_API XDEV_RESULT xdev_status_t xdev_axpy(xdev_dtype_t dtype, int64_t n, double alpha,
                                             const void *x, int64_t incx, void *y, int64_t incy,
                                             xdev_stream_t stream);
XDEV_API XDEV_RESULT xdev_status_t xdev_dot(xdev_dtype_t dtype, int64_t n, const void *x,
                                            int64_t incx, const void *y, int64_t incy, void *result,
                                            xdev_stream_t stream);
XDEV_API XDEV_RESULT xdev_status_t xdev_nrm2(xdev_dtype_t dtype, int64_t n, const void *x,
                                             int64_t incx, void *result, xdev_stream_t stream);
XDEV_API XDEV_RESULT xdev_status_t xdev_scal(xdev_dtype_t dtype, int64_t n, double alpha, void *x,
                                             int64_t incx, xdev_stream_t stream);

/* torch.backends.cuda.matmul.allow_tf32: may f32 GEMM use TensorFloat-32
 * tensor cores (10-bit mantissa products, f32 accumulation)? Process-wide,
 * default on (XDEV_ALLOW_TF32=0 turns it off; read at first use, a malformed
 * value is XDEV_ERROR_ENV). The flag in effect when a GEMM is enqueued
 * applies to it. No effect on the CPU backend, which always computes in full
 * f32. */
XDEV_API XDEV_RESULT xdev_status_t xdev_blas_set_allow_tf32(bool allow);
XDEV_API XDEV_RESULT xdev_status_t xdev_blas_get_allow_tf32(bool *out);

#ifdef __cplusplus
}
#endif
#endif
