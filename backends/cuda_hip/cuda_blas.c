/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_blas.c - the blas table over cuBLAS.
 *
 * GEMM: cublasGemmEx (batch 1) or cublasGemmStridedBatchedEx, the _64 entry
 * points when a size, leading dimension or batch passes INT_MAX:
 *   f32   in/out 32F, CUBLAS_COMPUTE_32F_FAST_TF32 when the descriptor allows
 *         TF32 (XDEV_BLAS_FLAG_ALLOW_TF32), else CUBLAS_COMPUTE_32F (full f32:
 *         the handles keep CUBLAS_DEFAULT_MATH, which never lowers it);
 *   f64, c128  CUBLAS_COMPUTE_64F;  c64  CUBLAS_COMPUTE_32F (no TF32);
 *   f16, bf16  16-bit inputs and output, CUBLAS_COMPUTE_32F accumulation.
 * Level 1 (f32, f64): cublas{Axpy,Dot,Nrm2,Scal}Ex_64. alpha and beta are
 * host values (pointer mode host); dot and nrm2 write their result to device
 * memory (pointer mode device), so they stay asynchronous.
 *
 * Handles: one cuBLAS handle per (device, thread), created on the thread's
 * first call for that device and cached in thread-local storage; each call
 * sets the handle's stream (cublasSetStream, skipped when it is the stream
 * the handle already has) and pointer mode. When a thread exits, its handles
 * go to a per-device pool that later threads take from, so thread churn does
 * not leak handles. Nothing destroys them at exit: at_exit makes no CUDA call
 * (the driver may be unloading); the process's end releases them. Every call
 * runs with the operands' device current (a cuBLAS handle belongs to the
 * device current at its creation).
 *
 * Workspace. Outside captures, cuBLAS's own default workspace (per stream;
 * cublasSetStream resets a handle to it): the backend ABI offers a slot no
 * way to take memory from the core's caching allocator, and one workspace of
 * the plugin's per handle would be shared by the streams the thread uses,
 * which may run concurrently. Inside a capture (xdev/graph.h) cuBLAS must not
 * allocate, and a workspace baked into the graph must be the graph's alone:
 * while the graph table has a capture under way on the device (xc_capturing,
 * one relaxed load), a call on a capturing stream gets that capture's
 * workspace for the stream (xc_capture_workspace, cuda_graph.c: allocated
 * once, cudaMalloc of the size cuBLAS recommends, kept by the graph and
 * reused after it) and sets it with cublasSetWorkspace right after
 * cublasSetStream, which resets it. The handle remembers the workspace it
 * was given, so the stream is re-set only when the stream or the workspace
 * changes. hipBLAS takes a workspace from 3.0 (ROCm 7) on
 * (XC_BLAS_WORKSPACE, vendor/hip_blas.h); an older one keeps rocBLAS's own.
 * A thread's first BLAS call on a device creates its handle: make one before
 * capturing (as torch warms up first), since cublasCreate allocates device
 * resources, which has no place in a capture. */
#ifdef XC_HAVE_CUBLAS
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include XC_BLAS_HEADER

#ifndef XC_BLAS_WORKSPACE
#define XC_BLAS_WORKSPACE 1 /* cuBLAS: cublasSetWorkspace */
#endif

/* ------------------------------------------------------------- errors */

/* Report a failed cuBLAS call: "<what>: <status name>: <status string>". */
static xdev_status_t blas_fail(cublasStatus_t s, const char *what, ...)
    __attribute__((format(printf, 2, 3)));

static xdev_status_t blas_fail(cublasStatus_t s, const char *what, ...) {
    char call[384];
    va_list ap;
    va_start(ap, what);
    vsnprintf(call, sizeof call, what, ap);
    va_end(ap);
    (void)cudaGetLastError(); /* a failed launch inside cuBLAS leaves a non-sticky error */
    xdev_status_t status = XDEV_ERROR_BACKEND;
    if (s == CUBLAS_STATUS_ALLOC_FAILED) status = XDEV_ERROR_OUT_OF_MEMORY;
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH)
        status = XDEV_ERROR_NOT_SUPPORTED;
    return xc_error(status, "%s: %s: %s", call, cublasGetStatusName(s), cublasGetStatusString(s));
}

/* ------------------------------------------------------------- handles */

typedef struct blas_handle {
    cublasHandle_t h;
    void *stream;           /* the stream last given to cublasSetStream */
    void *ws;               /* the workspace set after it (NULL: cuBLAS's default) */
    bool stream_set;        /* `stream` and `ws` are meaningful */
    cublasPointerMode_t pm; /* the pointer mode last set */
    struct blas_handle *next_free;
} blas_handle_t;

/* One thread's handles (freed, the handles pooled, when the thread exits). */
typedef struct thread_handles {
    blas_handle_t *h[XC_MAX_DEVICES];
} thread_handles_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static blas_handle_t *g_pool[XC_MAX_DEVICES]; /* handles of exited threads */
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;
static _Thread_local thread_handles_t *t_mine;

/* Thread exit: the thread's handles go to the pools (stream forgotten: the
 * thread's streams may be gone). */
static void thread_exit(void *arg) {
    thread_handles_t *set = arg;
    pthread_mutex_lock(&g_lock);
    for (int d = 0; d < XC_MAX_DEVICES; d++) {
        blas_handle_t *bh = set->h[d];
        if (bh == NULL) continue;
        bh->stream_set = false;
        bh->next_free = g_pool[d];
        g_pool[d] = bh;
    }
    pthread_mutex_unlock(&g_lock);
    free(set);
    t_mine = NULL;
}

static void make_key(void) {
    g_key_ok = pthread_key_create(&g_key, thread_exit) == 0;
}

/* The calling thread's handle for `device` (the current CUDA device),
 * created or taken from the pool on first use. */
static xdev_status_t handle_slow(int device, blas_handle_t **out) {
    pthread_once(&g_key_once, make_key);
    if (!g_key_ok) return xc_error(XDEV_ERROR_BACKEND, XC_NAME ": pthread_key_create failed");
    if (t_mine == NULL) {
        thread_handles_t *set = calloc(1, sizeof *set);
        if (set == NULL)
            return xc_error(XDEV_ERROR_OUT_OF_MEMORY,
                            XC_NAME ": no host memory for cuBLAS handles");
        t_mine = set;
        (void)pthread_setspecific(g_key, set);
    }
    pthread_mutex_lock(&g_lock);
    blas_handle_t *bh = g_pool[device];
    if (bh != NULL) g_pool[device] = bh->next_free;
    pthread_mutex_unlock(&g_lock);
    if (bh == NULL) {
        bh = calloc(1, sizeof *bh);
        if (bh == NULL)
            return xc_error(XDEV_ERROR_OUT_OF_MEMORY,
                            XC_NAME ": no host memory for a cuBLAS handle");
        cublasStatus_t s = cublasCreate(&bh->h);
        if (s != CUBLAS_STATUS_SUCCESS) {
            free(bh);
            return blas_fail(s, XC_STR(cublasCreate) " on device %d", device);
        }
        bh->pm = CUBLAS_POINTER_MODE_HOST; /* cuBLAS's default */
    }
    bh->next_free = NULL;
    t_mine->h[device] = bh;
    *out = bh;
    return XDEV_SUCCESS;
}

/* With `device` current: the thread's handle, on `stream`, in pointer mode `pm`. */
static xdev_status_t handle_get(int device, void *stream, cublasPointerMode_t pm,
                                blas_handle_t **out) {
    blas_handle_t *bh = NULL;
    thread_handles_t *mine = t_mine;
    if (mine != NULL) bh = mine->h[device];
    if (bh == NULL) {
        xdev_status_t st = handle_slow(device, &bh);
        if (st != XDEV_SUCCESS) return st;
    }
    void *ws = NULL; /* cuBLAS's default workspace, but in a capture */
#if XC_BLAS_WORKSPACE
    size_t ws_bytes = 0;
    if (xc_capturing(xc_device(device))) {
        xdev_status_t st = xc_capture_workspace(xc_device(device), stream, &ws, &ws_bytes);
        if (st != XDEV_SUCCESS) return st;
    }
#endif
    if (!bh->stream_set || bh->stream != stream || bh->ws != ws) {
        bh->stream_set = false;
        cublasStatus_t s = cublasSetStream(bh->h, (cudaStream_t)stream);
        if (s != CUBLAS_STATUS_SUCCESS) return blas_fail(s, XC_STR(cublasSetStream));
#if XC_BLAS_WORKSPACE
        if (ws != NULL) { /* after cublasSetStream, which resets it */
            s = cublasSetWorkspace(bh->h, ws, ws_bytes);
            if (s != CUBLAS_STATUS_SUCCESS)
                return blas_fail(s, XC_STR(cublasSetWorkspace) "(%zu bytes) on device %d", ws_bytes,
                                 device);
        }
#endif
        bh->stream = stream;
        bh->ws = ws;
        bh->stream_set = true;
    }
    if (bh->pm != pm) {
        cublasStatus_t s = cublasSetPointerMode(bh->h, pm);
        if (s != CUBLAS_STATUS_SUCCESS) return blas_fail(s, XC_STR(cublasSetPointerMode));
        bh->pm = pm;
    }
    *out = bh;
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- types */

static const char *dtype_name(xdev_dtype_t t) {
    static const char *const names[] = {"f32", "f64", "c64", "c128", "f16", "bf16"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?"; /* BLAS's dtypes */
}

static cudaDataType data_type(xdev_dtype_t t) {
    switch (t) {
    case XDEV_DTYPE_F64:
        return CUDA_R_64F;
    case XDEV_DTYPE_C64:
        return CUDA_C_32F;
    case XDEV_DTYPE_C128:
        return CUDA_C_64F;
    case XDEV_DTYPE_F16:
        return CUDA_R_16F;
    case XDEV_DTYPE_BF16:
        return CUDA_R_16BF;
    default:
        return CUDA_R_32F;
    }
}

static cublasOperation_t op_of(xdev_blas_op_t op, bool cplx) {
    if (op == XDEV_BLAS_OP_N) return CUBLAS_OP_N;
    return op == XDEV_BLAS_OP_C && cplx ? CUBLAS_OP_C : CUBLAS_OP_T;
}

static bool fits_int(int64_t v) {
    return v <= INT_MAX;
}

/* Compute capability major per device, read once (0 = not read yet). */
static atomic_int g_cc_major[XC_MAX_DEVICES];

static xdev_status_t cc_major(int device, int *out) {
    int v = atomic_load_explicit(&g_cc_major[device], memory_order_relaxed);
    if (v == 0) {
        XC_CALL(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, device),
                XC_STR(cudaDeviceGetAttribute) "(ComputeCapabilityMajor, %d)", device);
        atomic_store_explicit(&g_cc_major[device], v, memory_order_relaxed);
    }
    *out = v;
    return XDEV_SUCCESS;
}

/* GEMM: every dtype (bf16 from compute capability 8.0, where cuBLAS has
 * native bf16 kernels). Level 1: f32 and f64. */
static xdev_status_t blas_query_dtypes(xc_device_t *dev, xdev_blas_routine_t routine,
                                       uint32_t *mask) {
    int device = dev->index;
    if (routine != XDEV_BLAS_GEMM) {
        *mask = (1u << XDEV_DTYPE_F32) | (1u << XDEV_DTYPE_F64);
        return XDEV_SUCCESS;
    }
    int major = 0;
    xdev_status_t st = cc_major(device, &major);
    if (st != XDEV_SUCCESS) return st;
    *mask = XDEV_DTYPE_FLOAT_MASK;
    if (major < 8) *mask &= ~(1u << XDEV_DTYPE_BF16);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- GEMM */

/* alpha/beta in the scale type of the compute type: float (f32, f16, bf16),
 * float[2] (c64), double (f64), double[2] (c128). */
typedef union scalar {
    float f[2];
    double d[2];
} scalar_t;

static void scalar_of(xdev_dtype_t t, double re, double im, scalar_t *s) {
    if (t == XDEV_DTYPE_F64 || t == XDEV_DTYPE_C128) {
        s->d[0] = re;
        s->d[1] = im;
    } else {
        s->f[0] = (float)re;
        s->f[1] = (float)im;
    }
}

static cublasComputeType_t compute_of(const xdev_blas_gemm_desc_t *d) {
    switch (d->dtype) {
    case XDEV_DTYPE_F64:
    case XDEV_DTYPE_C128:
        return CUBLAS_COMPUTE_64F;
    case XDEV_DTYPE_F32:
        return (d->flags & XDEV_BLAS_FLAG_ALLOW_TF32) ? XC_BLAS_COMPUTE_TF32 : CUBLAS_COMPUTE_32F;
    default:
        return CUBLAS_COMPUTE_32F;
    }
}

static xdev_status_t gemm_enqueue(const xdev_blas_gemm_desc_t *d, cublasHandle_t h) {
    bool cplx = d->dtype == XDEV_DTYPE_C64 || d->dtype == XDEV_DTYPE_C128;
    cublasOperation_t ta = op_of(d->transa, cplx), tb = op_of(d->transb, cplx);
    cudaDataType ty = data_type(d->dtype);
    cublasComputeType_t ct = compute_of(d);
    scalar_t alpha, beta;
    scalar_of(d->dtype, d->alpha, d->alpha_imag, &alpha);
    scalar_of(d->dtype, d->beta, d->beta_imag, &beta);
    bool small = fits_int(d->m) && fits_int(d->n) && fits_int(d->k) && fits_int(d->lda) &&
                 fits_int(d->ldb) && fits_int(d->ldc) && fits_int(d->batch);
    cublasStatus_t s;
    if (d->batch == 1 && small)
        s = cublasGemmEx(h, ta, tb, (int)d->m, (int)d->n, (int)d->k, &alpha, d->a, ty, (int)d->lda,
                         d->b, ty, (int)d->ldb, &beta, d->c, ty, (int)d->ldc, ct,
                         CUBLAS_GEMM_DEFAULT);
    else if (d->batch == 1)
        s = cublasGemmEx_64(h, ta, tb, d->m, d->n, d->k, &alpha, d->a, ty, d->lda, d->b, ty, d->ldb,
                            &beta, d->c, ty, d->ldc, ct, CUBLAS_GEMM_DEFAULT);
    else if (small)
        s = cublasGemmStridedBatchedEx(h, ta, tb, (int)d->m, (int)d->n, (int)d->k, &alpha, d->a, ty,
                                       (int)d->lda, d->stride_a, d->b, ty, (int)d->ldb, d->stride_b,
                                       &beta, d->c, ty, (int)d->ldc, d->stride_c, (int)d->batch, ct,
                                       CUBLAS_GEMM_DEFAULT);
    else
        s = cublasGemmStridedBatchedEx_64(
            h, ta, tb, d->m, d->n, d->k, &alpha, d->a, ty, d->lda, d->stride_a, d->b, ty, d->ldb,
            d->stride_b, &beta, d->c, ty, d->ldc, d->stride_c, d->batch, ct, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
        return blas_fail(s, "%s(%s, m=%lld n=%lld k=%lld batch=%lld, compute %s) on device %d",
                         d->batch == 1 ? XC_STR(cublasGemmEx) : XC_STR(cublasGemmStridedBatchedEx),
                         dtype_name(d->dtype), (long long)d->m, (long long)d->n, (long long)d->k,
                         (long long)d->batch,
                         ct == CUBLAS_COMPUTE_32F_FAST_TF32 ? "32F_FAST_TF32"
                         : ct == CUBLAS_COMPUTE_64F         ? "64F"
                                                            : "32F",
                         d->device->index);
    return XDEV_SUCCESS;
}

static xdev_status_t blas_gemm(const xdev_blas_gemm_desc_t *d) {
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, d->device->index);
    if (st != XDEV_SUCCESS) return st;
    blas_handle_t *bh = NULL;
    st = handle_get(d->device->index, d->stream, CUBLAS_POINTER_MODE_HOST, &bh);
    if (st == XDEV_SUCCESS) st = gemm_enqueue(d, bh->h);
    xc_guard_end(&g);
    return st;
}

/* ------------------------------------------------------------- level 1 */

typedef enum { VEC_AXPY, VEC_DOT, VEC_NRM2, VEC_SCAL } vec_op_t;

static xdev_status_t vec_enqueue(const xdev_blas_vec_desc_t *d, cublasHandle_t h, vec_op_t op) {
    cudaDataType ty = data_type(d->dtype);
    scalar_t alpha;
    scalar_of(d->dtype, d->alpha, 0.0, &alpha);
    cublasStatus_t s;
    const char *name;
    switch (op) {
    case VEC_AXPY:
        name = XC_STR(cublasAxpyEx_64);
        s = cublasAxpyEx_64(h, d->n, &alpha, ty, d->x, ty, d->incx, d->y, ty, d->incy, ty);
        break;
    case VEC_DOT:
        name = XC_STR(cublasDotEx_64);
        s = cublasDotEx_64(h, d->n, d->x, ty, d->incx, d->y, ty, d->incy, d->result, ty, ty);
        break;
    case VEC_NRM2:
        name = XC_STR(cublasNrm2Ex_64);
        s = cublasNrm2Ex_64(h, d->n, d->x, ty, d->incx, d->result, ty, ty);
        break;
    default:
        name = XC_STR(cublasScalEx_64);
        s = cublasScalEx_64(h, d->n, &alpha, ty, (void *)d->x, ty, d->incx, ty);
        break;
    }
    if (s != CUBLAS_STATUS_SUCCESS)
        return blas_fail(s, "%s(%s, n=%lld) on device %d", name, dtype_name(d->dtype),
                         (long long)d->n, d->device->index);
    return XDEV_SUCCESS;
}

static xdev_status_t vec_run(const xdev_blas_vec_desc_t *d, vec_op_t op) {
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, d->device->index);
    if (st != XDEV_SUCCESS) return st;
    /* dot and nrm2 write a device scalar; axpy and scal read a host alpha. */
    cublasPointerMode_t pm =
        op == VEC_DOT || op == VEC_NRM2 ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST;
    blas_handle_t *bh = NULL;
    st = handle_get(d->device->index, d->stream, pm, &bh);
    if (st == XDEV_SUCCESS) st = vec_enqueue(d, bh->h, op);
    xc_guard_end(&g);
    return st;
}

static xdev_status_t blas_axpy(const xdev_blas_vec_desc_t *d) {
    return vec_run(d, VEC_AXPY);
}
static xdev_status_t blas_dot(const xdev_blas_vec_desc_t *d) {
    return vec_run(d, VEC_DOT);
}
static xdev_status_t blas_nrm2(const xdev_blas_vec_desc_t *d) {
    return vec_run(d, VEC_NRM2);
}
static xdev_status_t blas_scal(const xdev_blas_vec_desc_t *d) {
    return vec_run(d, VEC_SCAL);
}

const xdev_blas_vtable_t xc_blas_vtable = {
    .size = sizeof(xdev_blas_vtable_t),
    .query_dtypes = blas_query_dtypes,
    .gemm = blas_gemm,
    .axpy = blas_axpy,
    .dot = blas_dot,
    .nrm2 = blas_nrm2,
    .scal = blas_scal,
};

#else /* !XC_HAVE_CUBLAS: the toolkit had no cuBLAS; the blas table is NULL */
typedef int xc_blas_unused_t;
#endif
