/* SPDX-License-Identifier: Apache-2.0 */
/* faulty_template.c - the backend template (backends/null) with injected
 * faults, built as the plugin "faultynull" for the shadow execution's tests
 * (tests/test_shadow.c): XDEV_BACKEND=faultynull XDEV_SHADOW=cpu must name
 * each faulty operation, its call site and its first wrong element.
 *   memset  writes one byte too few
 *   gemm    (f32, no transposes, one matrix; a slot the template does not
 *           have) reads A with a leading dimension of m, whatever lda the
 *           caller gave: right for packed matrices, wrong for a padded one
 * The template is included unchanged; its entry point is renamed and this
 * file's hands out a copy of its table with the faulty slots. */
#define xdev_backend_entry null_template_entry
#include "../../backends/null/null_backend.c"
#undef xdev_backend_entry

/* The template's memset, one byte short (a fault only a comparison sees). */
static xdev_status_t short_memset(xdev_backend_device_t *dev, void *dst, int value, size_t bytes,
                                  void *stream) {
    return null_memory_memset_async(dev, dst, value, bytes > 1 ? bytes - 1 : bytes, stream);
}

/* The GEMM, run on the stream by a host function with its own copy of the
 * descriptor: C = alpha * A * B + beta * C, column-major. */
static void gemm_task(void *user) {
    xdev_blas_gemm_desc_t *d = user;
    const float *a = d->a, *b = d->b;
    float *c = d->c;
    const int64_t lda = d->m; /* the injected fault: d->lda ignored */
    for (int64_t j = 0; j < d->n; j++)
        for (int64_t i = 0; i < d->m; i++) {
            float acc = 0;
            for (int64_t p = 0; p < d->k; p++)
                acc += a[i + p * lda] * b[p + j * d->ldb];
            float *out = &c[i + j * d->ldc];
            *out = (float)d->alpha * acc + (d->beta != 0 ? (float)d->beta * *out : 0.0f);
        }
    free(d);
}

static xdev_status_t faulty_gemm(const xdev_blas_gemm_desc_t *desc) {
    if (desc->dtype != XDEV_DTYPE_F32 || desc->transa != XDEV_BLAS_OP_N ||
        desc->transb != XDEV_BLAS_OP_N || desc->batch != 1)
        return xdev_support_fail(g_host, XDEV_ERROR_NOT_SUPPORTED,
                                 "faultynull's gemm takes one f32 product without transposes");
    xdev_blas_gemm_desc_t *d = malloc(sizeof *d);
    if (d == NULL) return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory");
    *d = *desc;
    xdev_status_t st = null_stream_launch_host_func(desc->device, desc->stream, gemm_task, d);
    if (st != XDEV_SUCCESS) free(d);
    return st;
}

/* GEMM in f32 only. */
static xdev_status_t faulty_query_dtypes(xdev_backend_device_t *dev, xdev_blas_routine_t routine,
                                         uint32_t *mask) {
    (void)dev;
    *mask = routine == XDEV_BLAS_GEMM ? 1u << XDEV_DTYPE_F32 : 0;
    return XDEV_SUCCESS;
}

static xdev_memory_vtable_t g_faulty_memory;
static const xdev_blas_vtable_t g_faulty_blas = {
    .size = sizeof g_faulty_blas, .query_dtypes = faulty_query_dtypes, .gemm = faulty_gemm};
static xdev_backend_api_t g_faulty_api;

XDEV_API const xdev_backend_api_t *xdev_backend_entry(void);
const xdev_backend_api_t *xdev_backend_entry(void) {
    g_faulty_memory = g_memory;
    g_faulty_memory.memset_async = short_memset;
    g_faulty_api = *null_template_entry();
    g_faulty_api.memory = &g_faulty_memory;
    g_faulty_api.blas = &g_faulty_blas;
    return &g_faulty_api;
}
