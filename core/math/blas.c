/* SPDX-License-Identifier: Apache-2.0 */
/* blas.c - the public BLAS API: argument validation, operand device and
 * stream resolution, dtype support, the TF32 flag, then the backend's blas
 * table. Backends see fully checked descriptors (backend.h). */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "runtime/enqueue.h"
#include "base/env.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "math/operands.h"
#include "runtime/process.h"
#include "runtime/stream_internal.h"
#include "xdev/backend.h"

/* ------------------------------------------------------------- dtypes */

static const char *routine_name(xdev_blas_routine_t r) {
    static const char *const names[XDEV_BLAS_ROUTINE_COUNT] = {"gemm", "axpy", "dot", "nrm2",
                                                               "scal"};
    return (unsigned)r < XDEV_BLAS_ROUTINE_COUNT ? names[r] : "?";
}

static xdev_status_t check_dtype(xdev_dtype_t dtype) {
    if ((unsigned)dtype >= XDEV_DTYPE_COUNT)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "dtype %d is not an xdev_dtype_t (XDEV_DTYPE_F32 .. XDEV_DTYPE_U64)",
                         (int)dtype);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- TF32 flag */

/* XDEV_ALLOW_TF32 is read once, at the first call that needs the flag; a
 * malformed value stays an error for every such call (never ignored). */
static pthread_once_t g_tf32_once = PTHREAD_ONCE_INIT;
static xdev_status_t g_tf32_env_status;
static char g_tf32_env_message[512];
static atomic_bool g_allow_tf32;

static void tf32_load(void) {
    bool v = true;
    g_tf32_env_status = xdev_env_bool("XDEV_ALLOW_TF32", true, &v);
    if (g_tf32_env_status != XDEV_SUCCESS)
        snprintf(g_tf32_env_message, sizeof g_tf32_env_message, "%s", xdev_last_error());
    atomic_store(&g_allow_tf32, v);
}

static xdev_status_t tf32_ready(void) {
    xdev_status_t pst = xdev_process_check(); /* pthread_once: not in a forked child */
    if (pst != XDEV_SUCCESS) return pst;
    pthread_once(&g_tf32_once, tf32_load);
    if (g_tf32_env_status != XDEV_SUCCESS)
        return XDEV_FAIL(g_tf32_env_status, "%s", g_tf32_env_message);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_blas_set_allow_tf32(bool allow) {
    XDEV_CHECK(tf32_ready());
    atomic_store(&g_allow_tf32, allow);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_blas_get_allow_tf32(bool *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(tf32_ready());
    *out = atomic_load(&g_allow_tf32);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- backend */

/* Check that the device's backend runs `routine` with `dtype`. */
static xdev_status_t blas_check(xdev_device_record_t *rec, xdev_blas_routine_t routine,
                                xdev_dtype_t dtype) {
    if (!XDEV_HAS(rec->be, blas, query_dtypes))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend does not implement BLAS (%s, dtype %s)", rec->be->name,
                         routine_name(routine), xdev_dtype_name(dtype));
    uint32_t mask = 0;
    xdev_status_t st = xdev_be_blas_query_dtypes(rec, routine, &mask);
    if (st != XDEV_SUCCESS) return st;
    mask &= XDEV_DTYPE_FLOAT_MASK; /* BLAS has no integer dtype on any backend */
    if (!(mask & (1u << dtype)))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend does not support %s with dtype %s on " XDEV_REC_FMT,
                         rec->be->name, routine_name(routine), xdev_dtype_name(dtype),
                         XDEV_REC_ARGS(rec));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_blas_supports(xdev_device_t device, xdev_blas_routine_t routine,
                                 xdev_dtype_t dtype, bool *out) {
    XDEV_REQUIRE_ARG(out);
    *out = false;
    XDEV_CHECK(check_dtype(dtype));
    if ((unsigned)routine >= XDEV_BLAS_ROUTINE_COUNT)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "routine %d is not an xdev_blas_routine_t",
                             (int)routine);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    if (!XDEV_HAS(rec->be, blas, query_dtypes)) return XDEV_SUCCESS;
    uint32_t mask = 0;
    xdev_status_t st = xdev_be_blas_query_dtypes(rec, routine, &mask);
    if (st == XDEV_ERROR_NOT_SUPPORTED) return XDEV_SUCCESS; /* no BLAS at all: false */
    XDEV_CHECK(st);
    *out = ((mask & XDEV_DTYPE_FLOAT_MASK) >> dtype) & 1u;
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- GEMM */

static const char *op_name(xdev_blas_op_t op) {
    return op == XDEV_BLAS_OP_N ? "N" : op == XDEV_BLAS_OP_T ? "T" : "C";
}

/* One leading dimension: the stored matrix is `rows` x `cols`. */
static xdev_status_t check_ld(const char *ld_name, int64_t ld, int64_t rows, const char *why) {
    if (ld < (rows > 1 ? rows : 1))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s = %lld is less than the %lld rows of the column-major %s (%s must be "
                         ">= max(1, rows))",
                         ld_name, (long long)ld, (long long)rows, why, ld_name);
    return XDEV_SUCCESS;
}

/* Bytes a column-major rows x cols matrix with leading dimension ld spans,
 * over `batch` matrices `stride` elements apart. */
static xdev_status_t extent(int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch,
                            size_t esize, size_t *bytes) {
    size_t one, all;
    if (!xdev_size_mul_add((size_t)(cols - 1), (size_t)ld, (size_t)rows, &one) ||
        !xdev_size_mul_add((size_t)(batch - 1), (size_t)stride, one, &all) ||
        !xdev_size_mul_add(all, esize, 0, bytes))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the matrix sizes overflow the address space");
    return XDEV_SUCCESS;
}

/* The enqueue path's steps of a GEMM (runtime/enqueue.h), q->ctx its
 * descriptor. */
static xdev_status_t gemm_call(xdev_enqueue_t *q) {
    return xdev_be_blas_gemm(q->rec, q->ctx);
}

static void gemm_trace_args(xdev_enqueue_t *q) {
    const xdev_blas_gemm_desc_t *d = q->ctx;
    xdev_enqueue_span_args(q, "\"dtype\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"batch\":%lld",
                           xdev_dtype_name(d->dtype), (long long)d->m, (long long)d->n,
                           (long long)d->k, (long long)d->batch);
}

static xdev_status_t gemm_run(const xdev_gemm_params_t *p, xdev_stream_t stream) {
    xdev_status_t st = tf32_ready(); /* a malformed XDEV_ALLOW_TF32 fails every GEMM */
    if (st != XDEV_SUCCESS) return st;
    if ((st = check_dtype(p->dtype)) != XDEV_SUCCESS) return st;
    if ((unsigned)p->transa > XDEV_BLAS_OP_C || (unsigned)p->transb > XDEV_BLAS_OP_C)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "transa (%d) and transb (%d) must be XDEV_BLAS_OP_N, _T or _C",
                         (int)p->transa, (int)p->transb);
    if (p->m <= 0 || p->n <= 0 || p->k <= 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "m = %lld, n = %lld, k = %lld: every size must be positive",
                         (long long)p->m, (long long)p->n, (long long)p->k);
    if (p->batch < 1)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "batch = %lld must be at least 1",
                         (long long)p->batch);
    bool ta = p->transa != XDEV_BLAS_OP_N, tb = p->transb != XDEV_BLAS_OP_N;
    int64_t a_rows = ta ? p->k : p->m, a_cols = ta ? p->m : p->k;
    int64_t b_rows = tb ? p->n : p->k, b_cols = tb ? p->k : p->n;
    char why_a[64], why_b[64];
    snprintf(why_a, sizeof why_a, "A (transa = %s)", op_name(p->transa));
    snprintf(why_b, sizeof why_b, "B (transb = %s)", op_name(p->transb));
    if ((st = check_ld("lda", p->lda, a_rows, why_a)) != XDEV_SUCCESS ||
        (st = check_ld("ldb", p->ldb, b_rows, why_b)) != XDEV_SUCCESS ||
        (st = check_ld("ldc", p->ldc, p->m, "C")) != XDEV_SUCCESS)
        return st;
    int64_t sa = p->batch > 1 ? p->stride_a : 0, sb = p->batch > 1 ? p->stride_b : 0;
    int64_t sc = p->batch > 1 ? p->stride_c : 0;
    if (sa < 0 || sb < 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "stride_a = %lld, stride_b = %lld: strides must not be negative",
                         (long long)sa, (long long)sb);
    if (p->batch > 1 && (p->n > INT64_MAX / p->ldc || sc < p->ldc * p->n))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "stride_c = %lld would overlap the outputs of the batch (it must be >= "
                         "ldc * n = %lld)",
                         (long long)sc, (long long)(p->ldc * p->n));
    size_t es = xdev_dtype_size(p->dtype);
    xdev_operand_t ops[3] = {{"c", p->c, 0}, {"a", p->a, 0}, {"b", p->b, 0}};
    if ((st = extent(p->m, p->n, p->ldc, sc, p->batch, es, &ops[0].bytes)) != XDEV_SUCCESS ||
        (st = extent(a_rows, a_cols, p->lda, sa, p->batch, es, &ops[1].bytes)) != XDEV_SUCCESS ||
        (st = extent(b_rows, b_cols, p->ldb, sb, p->batch, es, &ops[2].bytes)) != XDEV_SUCCESS)
        return st;
    xdev_exec_target_t tgt;
    if ((st = xdev_operands_resolve(ops, 3, stream, "GEMM", &tgt)) != XDEV_SUCCESS) return st;
    if ((st = blas_check(tgt.rec, XDEV_BLAS_GEMM, p->dtype)) != XDEV_SUCCESS) return st;
    bool cplx = p->dtype == XDEV_DTYPE_C64 || p->dtype == XDEV_DTYPE_C128;
    xdev_blas_gemm_desc_t d = {
        .size = sizeof d,
        .dtype = p->dtype,
        .transa = p->transa,
        .transb = p->transb,
        .m = p->m,
        .n = p->n,
        .k = p->k,
        .alpha = p->alpha,
        .alpha_imag = cplx ? p->alpha_imag : 0.0,
        .beta = p->beta,
        .beta_imag = cplx ? p->beta_imag : 0.0,
        .a = p->a,
        .lda = p->lda,
        .stride_a = sa,
        .b = p->b,
        .ldb = p->ldb,
        .stride_b = sb,
        .c = p->c,
        .ldc = p->ldc,
        .stride_c = sc,
        .batch = p->batch,
        .flags = atomic_load(&g_allow_tf32) ? XDEV_BLAS_FLAG_ALLOW_TF32 : 0u,
        .device = tgt.rec->ctx,
        .stream = tgt.stream->native,
    };
    xdev_op_use_t uses[3];
    xdev_enqueue_t q = {
        .kind = XDEV_OP_BLAS,
        .name = "GEMM",
        .span = "gemm",
        .stream = tgt.stream,
        .rec = tgt.rec,
        .ctx = &d,
        .uses = uses,
        .nuses = xdev_operands_uses(ops, 3, 1, uses),
        .call = gemm_call,
        .trace_args = gemm_trace_args,
    };
    return xdev_enqueue(&q);
}

xdev_status_t xdev_gemm_ex(const xdev_gemm_params_t *params, xdev_stream_t stream) {
    XDEV_REQUIRE_ARG(params);
    if (params->size < offsetof(xdev_gemm_params_t, batch) + sizeof params->batch)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "params->size = %zu; set it to sizeof(xdev_gemm_params_t) (%zu)",
                             params->size, sizeof(xdev_gemm_params_t));
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_gemm_params_t p = {0};
    memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
    XDEV_CHECK(gemm_run(&p, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_gemm(xdev_dtype_t dtype, xdev_blas_op_t transa, xdev_blas_op_t transb, int64_t m,
                        int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                        const void *b, int64_t ldb, double beta, void *c, int64_t ldc,
                        xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_gemm_params_t p = {sizeof p, dtype, transa, transb, m,    n,   k, alpha, 0.0, a, lda,
                            0,        b,     ldb,    0,      beta, 0.0, c, ldc,   0,   1};
    XDEV_CHECK(gemm_run(&p, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_gemm_strided_batched(xdev_dtype_t dtype, xdev_blas_op_t transa,
                                        xdev_blas_op_t transb, int64_t m, int64_t n, int64_t k,
                                        double alpha, const void *a, int64_t lda, int64_t stride_a,
                                        const void *b, int64_t ldb, int64_t stride_b, double beta,
                                        void *c, int64_t ldc, int64_t stride_c, int64_t batch,
                                        xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_gemm_params_t p = {sizeof p, dtype, transa, transb, m,        n,        k,
                            alpha,    0.0,   a,      lda,    stride_a, b,        ldb,
                            stride_b, beta,  0.0,    c,      ldc,      stride_c, batch};
    XDEV_CHECK(gemm_run(&p, stream));
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- level 1 */

/* The enqueue path's steps of a level-1 routine (runtime/enqueue.h). */
typedef struct {
    xdev_blas_routine_t routine;
    xdev_blas_vec_desc_t *d;
} vec_op_t;

static xdev_status_t vec_call(xdev_enqueue_t *q) {
    const vec_op_t *o = q->ctx;
    return xdev_be_blas_vec(q->rec, o->routine, o->d);
}

static void vec_trace_args(xdev_enqueue_t *q) {
    const vec_op_t *o = q->ctx;
    xdev_enqueue_span_args(q, "\"dtype\":\"%s\",\"n\":%lld", xdev_dtype_name(o->d->dtype),
                           (long long)o->d->n);
}

/* Run one level-1 routine; ops[0] is its output. incs[i] is the increment
 * of vector operand i, or 0 for a scalar result (one element). */
static xdev_status_t vec_run(xdev_blas_routine_t routine, xdev_blas_vec_desc_t *d,
                             xdev_operand_t *ops, const int64_t *incs, int nops,
                             xdev_stream_t stream) {
    xdev_status_t st = check_dtype(d->dtype);
    if (st != XDEV_SUCCESS) return st;
    if (d->n <= 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "n = %lld must be positive", (long long)d->n);
    bool has_y = routine == XDEV_BLAS_AXPY || routine == XDEV_BLAS_DOT;
    if (d->incx <= 0 || (has_y && d->incy <= 0))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "incx = %lld%s: increments must be positive",
                         (long long)d->incx,
                         has_y ? (d->incy <= 0 ? " and incy is not positive" : "") : "");
    size_t es = xdev_dtype_size(d->dtype);
    for (int i = 0; i < nops; i++) {
        size_t span = 1;
        if (incs[i] > 0 && !xdev_size_mul_add((size_t)(d->n - 1), (size_t)incs[i], 1, &span))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the vector sizes overflow");
        if (!xdev_size_mul_add(span, es, 0, &ops[i].bytes))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the vector sizes overflow");
    }
    xdev_exec_target_t tgt;
    const char *what = routine_name(routine);
    if ((st = xdev_operands_resolve(ops, nops, stream, what, &tgt)) != XDEV_SUCCESS) return st;
    if ((st = blas_check(tgt.rec, routine, d->dtype)) != XDEV_SUCCESS) return st;
    d->size = sizeof *d;
    d->device = tgt.rec->ctx;
    d->stream = tgt.stream->native;
    vec_op_t o = {routine, d};
    xdev_op_use_t uses[XDEV_OP_MAX_USES];
    xdev_enqueue_t q = {
        .kind = XDEV_OP_BLAS,
        .name = what,
        .stream = tgt.stream,
        .rec = tgt.rec,
        .ctx = &o,
        .uses = uses,
        .nuses = xdev_operands_uses(ops, nops, 1, uses),
        .call = vec_call,
        .trace_args = vec_trace_args,
    };
    return xdev_enqueue(&q);
}

xdev_status_t xdev_axpy(xdev_dtype_t dtype, int64_t n, double alpha, const void *x, int64_t incx,
                        void *y, int64_t incy, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_blas_vec_desc_t d = {
        .dtype = dtype, .n = n, .alpha = alpha, .x = x, .incx = incx, .y = y, .incy = incy};
    xdev_operand_t ops[2] = {{"y", y, 0}, {"x", x, 0}};
    const int64_t incs[2] = {incy, incx};
    XDEV_CHECK(vec_run(XDEV_BLAS_AXPY, &d, ops, incs, 2, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_dot(xdev_dtype_t dtype, int64_t n, const void *x, int64_t incx, const void *y,
                       int64_t incy, void *result, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_blas_vec_desc_t d = {.dtype = dtype,
                              .n = n,
                              .x = x,
                              .incx = incx,
                              .y = (void *)y,
                              .incy = incy,
                              .result = result};
    xdev_operand_t ops[3] = {{"result", result, 0}, {"x", x, 0}, {"y", y, 0}};
    const int64_t incs[3] = {0, incx, incy};
    XDEV_CHECK(vec_run(XDEV_BLAS_DOT, &d, ops, incs, 3, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_nrm2(xdev_dtype_t dtype, int64_t n, const void *x, int64_t incx, void *result,
                        xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_blas_vec_desc_t d = {.dtype = dtype, .n = n, .x = x, .incx = incx, .result = result};
    xdev_operand_t ops[2] = {{"result", result, 0}, {"x", x, 0}};
    const int64_t incs[2] = {0, incx};
    XDEV_CHECK(vec_run(XDEV_BLAS_NRM2, &d, ops, incs, 2, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_scal(xdev_dtype_t dtype, int64_t n, double alpha, void *x, int64_t incx,
                        xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_blas_vec_desc_t d = {.dtype = dtype, .n = n, .alpha = alpha, .x = x, .incx = incx};
    xdev_operand_t ops[1] = {{"x", x, 0}};
    const int64_t incs[1] = {incx};
    XDEV_CHECK(vec_run(XDEV_BLAS_SCAL, &d, ops, incs, 1, stream));
    return XDEV_SUCCESS;
}
