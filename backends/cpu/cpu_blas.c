/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_blas.c - the CPU backend's BLAS table over OpenBLAS (CBLAS).
 *
 * Each call copies its descriptor into a job and enqueues it as a host
 * function on the CPU stream, so the math runs on the stream's worker, in
 * stream order. f16 GEMM (and bf16 without cblas_sbgemm) converts one
 * matrix of the batch at a time into the stream's f32 staging buffer
 * (secured at enqueue, so running out of memory is reported by the call),
 * runs sgemm (f32 accumulation) and rounds the result back to 16 bits
 * (nearest, ties to even). f32 GEMM ignores the TF32 flag: OpenBLAS always
 * computes in full f32.
 *
 * Threads: OpenBLAS is told once to use the online core count, unless
 * OPENBLAS_NUM_THREADS / GOTO_NUM_THREADS / OMP_NUM_THREADS say otherwise.
 * Several streams running GEMMs at once may then ask for more threads than
 * cores (how many streams are busy is not knowable up front); set
 * OPENBLAS_NUM_THREADS to cores / busy streams for such workloads. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/support/half.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_math.h"

#ifdef XDEV_HAVE_OPENBLAS
#include <cblas.h>

/* ------------------------------------------------------------- setup */

static pthread_once_t g_threads_once = PTHREAD_ONCE_INIT;

static void set_threads(void) {
    const xdev_host_services_t *host = xdev_cpu_state.host;
    const char *(*get_env)(const char *) = host ? XDEV_BACKEND_SLOT(host, get_env) : NULL;
    static const char *const vars[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                       "OMP_NUM_THREADS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = get_env ? get_env(vars[i]) : getenv(vars[i]);
        if (v != NULL && v[0] != '\0') return; /* the user chose */
    }
    int cores = xdev_cpu_state.cores > 0 ? xdev_cpu_state.cores : 1;
    openblas_set_num_threads(cores);
}

static bool fits_blasint(int64_t v) {
    return sizeof(blasint) >= sizeof(int64_t) || v <= INT_MAX;
}

static enum CBLAS_TRANSPOSE cblas_op(xdev_blas_op_t op, bool is_complex) {
    if (op == XDEV_BLAS_OP_N) return CblasNoTrans;
    return op == XDEV_BLAS_OP_C && is_complex ? CblasConjTrans : CblasTrans;
}

/* ------------------------------------------------------------- GEMM */

/* f32 staging for 16-bit GEMMs, one buffer per stream, grown as needed.
 * The GEMMs of one stream run one at a time, in order, so they can all use
 * the stream's buffer; a fresh multi-megabyte malloc per GEMM would be a
 * fresh mmap whose page faults cost as much as the GEMM itself. The buffer
 * is taken at enqueue, so running out of memory is reported by the call.
 * Growing installs a new buffer; the GEMM that first uses it frees the old
 * one when it runs (every GEMM that used the old one has run by then). The
 * lock is held across the enqueue, so the order in which GEMMs see a
 * stream's buffer is their order on the stream. Buffers stay until the
 * process ends (like a cuBLAS workspace); past STAGE_STREAMS streams, GEMMs
 * get a buffer of their own. */
#define STAGE_STREAMS 64

static pthread_mutex_t g_stage_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const void *stream; /* the CPU queue (resolved: never NULL) */
    float *buf;
    size_t cap; /* floats */
} g_stages[STAGE_STREAMS];

typedef struct gemm_job {
    xdev_blas_gemm_desc_t d;
    float *stage;        /* f16/bf16: staging of at least the floats needed */
    float *retire;       /* the stream's previous buffer, freed after this GEMM */
    bool own_stage;      /* no stream slot: free `stage` after this GEMM */
    float *ta, *tb, *tc; /* parts of `stage` (NULL for other dtypes) */
} gemm_job_t;

static void free_gemm_job(gemm_job_t *j) {
    free(j->retire);
    if (j->own_stage) free(j->stage);
    free(j);
}

static void gemm_release(void *arg) {
    free_gemm_job(arg);
}

/* What stage_acquire changed, for stage_undo. */
typedef struct stage_change {
    int slot;       /* -1: none */
    bool installed; /* a new buffer replaced (old, old_cap) in the slot */
    const void *old_stream;
    float *old;
    size_t old_cap;
} stage_change_t;

/* With g_stage_lock held: point j->stage at `floats` floats for `stream`. */
static bool stage_acquire(const void *stream, size_t floats, gemm_job_t *j, stage_change_t *ch) {
    int slot = -1;
    for (int i = 0; i < STAGE_STREAMS && slot < 0; i++)
        if (g_stages[i].stream == stream) slot = i;
    for (int i = 0; i < STAGE_STREAMS && slot < 0; i++)
        if (g_stages[i].stream == NULL) slot = i;
    *ch = (stage_change_t){.slot = slot};
    if (slot >= 0 && g_stages[slot].stream == stream && g_stages[slot].cap >= floats) {
        j->stage = g_stages[slot].buf;
        return true;
    }
    float *buf = malloc(floats * sizeof(float));
    if (buf == NULL) return false;
    j->stage = buf;
    if (slot < 0) {
        j->own_stage = true;
        return true;
    }
    ch->installed = true;
    ch->old_stream = g_stages[slot].stream;
    ch->old = g_stages[slot].buf;
    ch->old_cap = g_stages[slot].cap;
    j->retire = ch->old;
    g_stages[slot].stream = stream;
    g_stages[slot].buf = buf;
    g_stages[slot].cap = floats;
    return true;
}

/* With g_stage_lock held: undo stage_acquire after a failed enqueue. */
static void stage_undo(const stage_change_t *ch, gemm_job_t *j) {
    if (ch->installed) {
        g_stages[ch->slot].stream = ch->old_stream;
        g_stages[ch->slot].buf = ch->old;
        g_stages[ch->slot].cap = ch->old_cap;
        free(j->stage);
    } else if (j->own_stage) {
        free(j->stage);
    }
    j->stage = NULL;
    j->retire = NULL;
    j->own_stage = false;
}

/* Every f16 value as a float: widening is then one load per element
 * (the scalar conversion's branches cost more than the GEMM at small sizes). */
static float g_f16_table[1u << 16];
static pthread_once_t g_f16_once = PTHREAD_ONCE_INIT;

static void f16_table_init(void) {
    for (uint32_t h = 0; h < (1u << 16); h++)
        g_f16_table[h] = xdev_f16_to_f32((uint16_t)h);
}

/* Widen a column-major rows x cols 16-bit matrix (leading dimension ld)
 * into a packed f32 one (leading dimension rows). */
static void widen(float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t ld,
                  bool bf16) {
    for (int64_t j = 0; j < cols; j++) {
        const uint16_t *s = src + j * ld;
        float *d = dst + j * rows;
        if (bf16)
            for (int64_t i = 0; i < rows; i++)
                d[i] = xdev_bf16_to_f32(s[i]);
        else
            for (int64_t i = 0; i < rows; i++)
                d[i] = g_f16_table[s[i]];
    }
}

static void narrow(uint16_t *dst, const float *src, int64_t rows, int64_t cols, int64_t ld,
                   bool bf16) {
    for (int64_t j = 0; j < cols; j++) {
        const float *s = src + j * rows;
        uint16_t *d = dst + j * ld;
        if (bf16)
            for (int64_t i = 0; i < rows; i++)
                d[i] = xdev_f32_to_bf16(s[i]);
        else
            for (int64_t i = 0; i < rows; i++)
                d[i] = xdev_f32_to_f16(s[i]);
    }
}

/* One 16-bit GEMM of the batch through f32 (or sbgemm for bf16). */
static void gemm_half(gemm_job_t *j, const uint16_t *a, const uint16_t *b, uint16_t *c) {
    const xdev_blas_gemm_desc_t *d = &j->d;
    bool bf16 = d->dtype == XDEV_DTYPE_BF16;
    bool ta = d->transa != XDEV_BLAS_OP_N, tb = d->transb != XDEV_BLAS_OP_N;
    int64_t ar = ta ? d->k : d->m, ac = ta ? d->m : d->k;
    int64_t br = tb ? d->n : d->k, bc = tb ? d->k : d->n;
    if (d->beta != 0.0)
        widen(j->tc, c, d->m, d->n, d->ldc, bf16);
    else
        memset(j->tc, 0, (size_t)(d->m * d->n) * sizeof(float));
#ifdef XDEV_HAVE_CBLAS_SBGEMM
    if (bf16) {
        cblas_sbgemm(CblasColMajor, cblas_op(d->transa, false), cblas_op(d->transb, false),
                     (blasint)d->m, (blasint)d->n, (blasint)d->k, (float)d->alpha,
                     (const bfloat16 *)a, (blasint)d->lda, (const bfloat16 *)b, (blasint)d->ldb,
                     (float)d->beta, j->tc, (blasint)d->m);
        narrow(c, j->tc, d->m, d->n, d->ldc, true);
        return;
    }
#endif
    widen(j->ta, a, ar, ac, d->lda, bf16);
    widen(j->tb, b, br, bc, d->ldb, bf16);
    cblas_sgemm(CblasColMajor, cblas_op(d->transa, false), cblas_op(d->transb, false),
                (blasint)d->m, (blasint)d->n, (blasint)d->k, (float)d->alpha, j->ta, (blasint)ar,
                j->tb, (blasint)br, (float)d->beta, j->tc, (blasint)d->m);
    narrow(c, j->tc, d->m, d->n, d->ldc, bf16);
}

static void gemm_run(void *arg) {
    gemm_job_t *j = arg;
    const xdev_blas_gemm_desc_t *d = &j->d;
    blasint m = (blasint)d->m, n = (blasint)d->n, k = (blasint)d->k;
    blasint lda = (blasint)d->lda, ldb = (blasint)d->ldb, ldc = (blasint)d->ldc;
    bool cplx = d->dtype == XDEV_DTYPE_C64 || d->dtype == XDEV_DTYPE_C128;
    enum CBLAS_TRANSPOSE opa = cblas_op(d->transa, cplx), opb = cblas_op(d->transb, cplx);
    for (int64_t i = 0; i < d->batch; i++) {
        switch (d->dtype) {
        case XDEV_DTYPE_F32: {
            const float *a = (const float *)d->a + i * d->stride_a;
            const float *b = (const float *)d->b + i * d->stride_b;
            float *c = (float *)d->c + i * d->stride_c;
            cblas_sgemm(CblasColMajor, opa, opb, m, n, k, (float)d->alpha, a, lda, b, ldb,
                        (float)d->beta, c, ldc);
            break;
        }
        case XDEV_DTYPE_F64: {
            const double *a = (const double *)d->a + i * d->stride_a;
            const double *b = (const double *)d->b + i * d->stride_b;
            double *c = (double *)d->c + i * d->stride_c;
            cblas_dgemm(CblasColMajor, opa, opb, m, n, k, d->alpha, a, lda, b, ldb, d->beta, c,
                        ldc);
            break;
        }
        case XDEV_DTYPE_C64: {
            const float alpha[2] = {(float)d->alpha, (float)d->alpha_imag};
            const float beta[2] = {(float)d->beta, (float)d->beta_imag};
            const float *a = (const float *)d->a + 2 * i * d->stride_a;
            const float *b = (const float *)d->b + 2 * i * d->stride_b;
            float *c = (float *)d->c + 2 * i * d->stride_c;
            cblas_cgemm(CblasColMajor, opa, opb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            break;
        }
        case XDEV_DTYPE_C128: {
            const double alpha[2] = {d->alpha, d->alpha_imag};
            const double beta[2] = {d->beta, d->beta_imag};
            const double *a = (const double *)d->a + 2 * i * d->stride_a;
            const double *b = (const double *)d->b + 2 * i * d->stride_b;
            double *c = (double *)d->c + 2 * i * d->stride_c;
            cblas_zgemm(CblasColMajor, opa, opb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            break;
        }
        default: {
            const uint16_t *a = (const uint16_t *)d->a + i * d->stride_a;
            const uint16_t *b = (const uint16_t *)d->b + i * d->stride_b;
            uint16_t *c = (uint16_t *)d->c + i * d->stride_c;
            gemm_half(j, a, b, c);
            break;
        }
        }
    }
}

static xdev_status_t enqueue(xdev_cpu_device_t *dev, void *stream, xdev_host_fn_t fn,
                             void (*release)(void *), void *job) {
    return xdev_cpu_stream_enqueue_job(dev->index, stream, fn, release, job);
}

static xdev_status_t cpu_gemm(const xdev_blas_gemm_desc_t *d) {
    if (!fits_blasint(d->m) || !fits_blasint(d->n) || !fits_blasint(d->k) ||
        !fits_blasint(d->lda) || !fits_blasint(d->ldb) || !fits_blasint(d->ldc))
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu: GEMM sizes and leading dimensions must fit OpenBLAS's 32-bit "
                              "integers (at most %d)",
                              INT_MAX);
    pthread_once(&g_threads_once, set_threads);
    if (d->dtype == XDEV_DTYPE_F16) pthread_once(&g_f16_once, f16_table_init);
    size_t a = 0, b = 0, c = 0; /* staging floats */
    if (d->dtype == XDEV_DTYPE_F16 || d->dtype == XDEV_DTYPE_BF16) {
        c = (size_t)d->m * (size_t)d->n;
        bool staged = true;
#ifdef XDEV_HAVE_CBLAS_SBGEMM
        staged = d->dtype == XDEV_DTYPE_F16; /* sbgemm reads bf16 A and B directly */
#endif
        if (staged) a = (size_t)d->m * (size_t)d->k, b = (size_t)d->k * (size_t)d->n;
    }
    gemm_job_t *j = calloc(1, sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a GEMM",
                              d->device->index);
    memcpy(&j->d, d, d->size < sizeof j->d ? d->size : sizeof j->d);
    if (c == 0) {
        xdev_status_t st = enqueue(d->device, d->stream, gemm_run, gemm_release, j);
        if (st != XDEV_SUCCESS) free_gemm_job(j);
        return st;
    }
    xdev_cpu_stream_t *queue;
    xdev_status_t st = xdev_cpu_stream_resolve(d->device->index, d->stream, &queue);
    if (st != XDEV_SUCCESS) {
        free(j);
        return st;
    }
    if (xdev_cpu_stream_capturing(queue)) { /* replays run at any time: a buffer of its own */
        j->stage = malloc((a + b + c) * sizeof(float));
        j->own_stage = true;
        if (j->stage == NULL) {
            free(j);
            return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                                  "cpu:%d no host memory for a GEMM's f32 staging",
                                  d->device->index);
        }
        j->tc = j->stage;
        j->ta = a ? j->stage + c : NULL;
        j->tb = b ? j->stage + c + a : NULL;
        st = enqueue(d->device, queue, gemm_run, gemm_release, j);
        if (st != XDEV_SUCCESS) free_gemm_job(j);
        return st;
    }
    pthread_mutex_lock(&g_stage_lock);
    stage_change_t change;
    if (!stage_acquire(queue, a + b + c, j, &change)) {
        pthread_mutex_unlock(&g_stage_lock);
        free(j);
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d no host memory for the f32 staging of a %s GEMM (%zu "
                              "bytes)",
                              d->device->index, d->dtype == XDEV_DTYPE_F16 ? "f16" : "bf16",
                              (a + b + c) * sizeof(float));
    }
    j->tc = j->stage;
    j->ta = a ? j->stage + c : NULL;
    j->tb = b ? j->stage + c + a : NULL;
    st = enqueue(d->device, queue, gemm_run, gemm_release, j);
    if (st != XDEV_SUCCESS) {
        stage_undo(&change, j);
        free_gemm_job(j);
    }
    pthread_mutex_unlock(&g_stage_lock);
    return st;
}

/* ------------------------------------------------------------- level 1 */

typedef enum { VEC_AXPY, VEC_DOT, VEC_NRM2, VEC_SCAL } vec_op_t;

typedef struct vec_job {
    xdev_blas_vec_desc_t d;
    vec_op_t op;
} vec_job_t;

static void vec_run(void *arg) {
    vec_job_t *j = arg;
    const xdev_blas_vec_desc_t *d = &j->d;
    blasint n = (blasint)d->n, incx = (blasint)d->incx, incy = (blasint)d->incy;
    if (d->dtype == XDEV_DTYPE_F32) {
        const float *x = d->x;
        float *y = d->y;
        switch (j->op) {
        case VEC_AXPY:
            cblas_saxpy(n, (float)d->alpha, x, incx, y, incy);
            break;
        case VEC_DOT:
            *(float *)d->result = cblas_sdot(n, x, incx, y, incy);
            break;
        case VEC_NRM2:
            *(float *)d->result = cblas_snrm2(n, x, incx);
            break;
        case VEC_SCAL:
            cblas_sscal(n, (float)d->alpha, (float *)x, incx);
            break;
        }
    } else {
        const double *x = d->x;
        double *y = d->y;
        switch (j->op) {
        case VEC_AXPY:
            cblas_daxpy(n, d->alpha, x, incx, y, incy);
            break;
        case VEC_DOT:
            *(double *)d->result = cblas_ddot(n, x, incx, y, incy);
            break;
        case VEC_NRM2:
            *(double *)d->result = cblas_dnrm2(n, x, incx);
            break;
        case VEC_SCAL:
            cblas_dscal(n, d->alpha, (double *)x, incx);
            break;
        }
    }
}

static xdev_status_t vec_enqueue(const xdev_blas_vec_desc_t *d, vec_op_t op) {
    if (!fits_blasint(d->n) || !fits_blasint(d->incx) || !fits_blasint(d->incy))
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu: vector lengths and increments must fit OpenBLAS's 32-bit "
                              "integers (at most %d)",
                              INT_MAX);
    pthread_once(&g_threads_once, set_threads);
    vec_job_t *j = calloc(1, sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a BLAS call",
                              d->device->index);
    memcpy(&j->d, d, d->size < sizeof j->d ? d->size : sizeof j->d);
    j->op = op;
    xdev_status_t st = enqueue(d->device, d->stream, vec_run, free, j);
    if (st != XDEV_SUCCESS) free(j);
    return st;
}

static xdev_status_t cpu_axpy(const xdev_blas_vec_desc_t *d) {
    return vec_enqueue(d, VEC_AXPY);
}
static xdev_status_t cpu_dot(const xdev_blas_vec_desc_t *d) {
    return vec_enqueue(d, VEC_DOT);
}
static xdev_status_t cpu_nrm2(const xdev_blas_vec_desc_t *d) {
    return vec_enqueue(d, VEC_NRM2);
}
static xdev_status_t cpu_scal(const xdev_blas_vec_desc_t *d) {
    return vec_enqueue(d, VEC_SCAL);
}

static xdev_status_t cpu_query_dtypes(xdev_cpu_device_t *dev, xdev_blas_routine_t routine,
                                      uint32_t *mask) {
    (void)dev; /* every CPU device runs every dtype */
    if (routine == XDEV_BLAS_GEMM)
        *mask = XDEV_DTYPE_FLOAT_MASK;
    else
        *mask = (1u << XDEV_DTYPE_F32) | (1u << XDEV_DTYPE_F64);
    return XDEV_SUCCESS;
}

const xdev_blas_vtable_t xdev_cpu_blas_vtable = {
    .size = sizeof(xdev_blas_vtable_t),
    .query_dtypes = cpu_query_dtypes,
    .gemm = cpu_gemm,
    .axpy = cpu_axpy,
    .dot = cpu_dot,
    .nrm2 = cpu_nrm2,
    .scal = cpu_scal,
};

#else /* !XDEV_HAVE_OPENBLAS */

static xdev_status_t cpu_query_dtypes(xdev_cpu_device_t *dev, xdev_blas_routine_t routine,
                                      uint32_t *mask) {
    (void)dev;
    (void)routine;
    *mask = 0;
    return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                          "the cpu backend was built without OpenBLAS, so it has no BLAS "
                          "(install libopenblas-dev and reconfigure)");
}

const xdev_blas_vtable_t xdev_cpu_blas_vtable = {
    .size = sizeof(xdev_blas_vtable_t),
    .query_dtypes = cpu_query_dtypes,
};

#endif
