/* SPDX-License-Identifier: Apache-2.0 */
/* faulty_template.c - the backend template (backends/null) with injected
 * faults, built as the plugin "faultynull" for the shadow execution's tests
 * (tests/test_shadow.c): XDEV_BACKEND=faultynull XDEV_SHADOW=cpu must name
 * each faulty operation, its call site and its first wrong element.
 *   memset  writes one byte too few
 *   gemm    (f32, no transposes, one matrix; a slot the template does not
 *           have) reads A with a leading dimension of m, whatever lda the
 *           caller gave: right for packed matrices, wrong for a padded one
 *   graph   (a group the template does not have) records the copies and
 *           memsets enqueued on a capturing stream and replays them: a
 *           captured memset is the short one, so a graph replay holds a
 *           fault the shadow must name with the memset's capture call site
 *   histogram_even (i32 samples; a prim table the template does not have)
 *           never counts the last bin: its count stays 0 (an off-by-one in
 *           the bin loop's bound, as a hand-written kernel can have)
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

/* ------------------------------------------------------------ graphs */
/* One capture at a time (the tests need no more): the capturing stream and
 * the tasks recorded on it; a graph is the list, replayed task by task. */
typedef struct {
    size_t n, cap;
    task_t *tasks;
} faulty_graph_t;
static pthread_mutex_t g_capture_m = PTHREAD_MUTEX_INITIALIZER;
static void *g_capturing;
static faulty_graph_t *g_recording;

/* Record t when `stream` captures; true when recorded (or failed: *st). */
static bool faulty_record(void *stream, task_t t, xdev_status_t *st) {
    pthread_mutex_lock(&g_capture_m);
    bool rec = stream == g_capturing && g_recording != NULL;
    *st = XDEV_SUCCESS;
    if (rec) {
        faulty_graph_t *g = g_recording;
        if (g->n == g->cap) {
            size_t cap = g->cap ? 2 * g->cap : 8;
            task_t *r = realloc(g->tasks, cap * sizeof *r);
            if (r == NULL)
                *st = xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory");
            else {
                g->tasks = r;
                g->cap = cap;
            }
        }
        if (*st == XDEV_SUCCESS) g->tasks[g->n++] = t;
    }
    pthread_mutex_unlock(&g_capture_m);
    return rec;
}

static xdev_status_t faulty_memcpy(xdev_backend_device_t *dev, const xdev_copy_desc_t *copy,
                                   void *stream) {
    xdev_status_t st;
    if (copy->bytes != 0 &&
        faulty_record(
            stream,
            (task_t){.kind = T_COPY, .dst = copy->dst, .src = copy->src, .bytes = copy->bytes},
            &st))
        return st;
    return null_memory_memcpy_async(dev, copy, stream);
}

static xdev_status_t faulty_capture_begin(xdev_backend_device_t *dev, void *stream, int mode) {
    (void)dev;
    (void)mode;
    faulty_graph_t *g = calloc(1, sizeof *g);
    if (g == NULL) return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory");
    pthread_mutex_lock(&g_capture_m);
    bool busy = g_capturing != NULL;
    if (!busy) {
        g_capturing = stream;
        g_recording = g;
    }
    pthread_mutex_unlock(&g_capture_m);
    if (busy) {
        free(g);
        return xdev_support_fail(g_host, XDEV_ERROR_NOT_SUPPORTED,
                                 "faultynull captures one stream at a time");
    }
    return XDEV_SUCCESS;
}

static xdev_status_t faulty_capture_end(xdev_backend_device_t *dev, void *stream, void **graph) {
    (void)dev;
    pthread_mutex_lock(&g_capture_m);
    faulty_graph_t *g = stream == g_capturing ? g_recording : NULL;
    if (g != NULL) g_capturing = g_recording = NULL;
    pthread_mutex_unlock(&g_capture_m);
    if (g == NULL)
        return xdev_support_fail(g_host, XDEV_ERROR_INVALID_VALUE, "this stream is not capturing");
    *graph = g;
    return XDEV_SUCCESS;
}

static xdev_status_t faulty_launch(xdev_backend_device_t *dev, void *graph, void *stream) {
    faulty_graph_t *g = graph;
    xdev_status_t st = XDEV_SUCCESS;
    for (size_t i = 0; i < g->n && st == XDEV_SUCCESS; i++)
        st = g->tasks[i].kind == T_SET
                 ? short_memset(dev, g->tasks[i].dst, g->tasks[i].value, g->tasks[i].bytes, stream)
                 : enqueue(stream, g->tasks[i]);
    return st;
}

static xdev_status_t faulty_graph_destroy(xdev_backend_device_t *dev, void *graph) {
    (void)dev;
    faulty_graph_t *g = graph;
    free(g->tasks);
    free(g);
    return XDEV_SUCCESS;
}

/* The memset slot: recorded whole while capturing (the replay runs the short one). */
static xdev_status_t faulty_memset(xdev_backend_device_t *dev, void *dst, int value, size_t bytes,
                                   void *stream) {
    xdev_status_t st;
    if (bytes != 0 &&
        faulty_record(stream, (task_t){.kind = T_SET, .dst = dst, .value = value, .bytes = bytes},
                      &st))
        return st;
    return short_memset(dev, dst, value, bytes, stream);
}

static xdev_graph_vtable_t g_faulty_graph = {.size = sizeof g_faulty_graph,
                                             .capture_begin = faulty_capture_begin,
                                             .capture_end = faulty_capture_end,
                                             .launch = faulty_launch,
                                             .destroy = faulty_graph_destroy};

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

/* ------------------------------------------------------------ histogram */
/* The histogram, run on the stream by a host function with its own copy of
 * the descriptor: xdev/primitives.h's bins, but the last one is dropped. */
static void histogram_task(void *user) {
    xdev_prim_desc_t *d = user;
    const int32_t *x = d->in;
    int64_t *counts = d->out;
    memset(counts, 0, d->num_bins * sizeof *counts);
    for (size_t i = 0; i < d->count; i++) {
        double v = (double)x[i];
        if (!(v >= d->lower && v < d->upper)) continue;
        /* >= 0: truncation is the floor */
        double b = ((v - d->lower) * (double)d->num_bins) / (d->upper - d->lower);
        size_t bin = b >= (double)(d->num_bins - 1) ? d->num_bins - 1 : (size_t)b;
        if (bin < d->num_bins - 1) counts[bin]++; /* the injected fault: the last bin is lost */
    }
    free(d);
}

static xdev_status_t faulty_histogram(const xdev_prim_desc_t *desc, size_t *temp_bytes) {
    if (desc->dtype != XDEV_DTYPE_I32)
        return xdev_support_fail(g_host, XDEV_ERROR_NOT_SUPPORTED,
                                 "faultynull's histogram_even takes i32 samples");
    if (desc->temp == NULL) { /* the size query: one word, so that temp NULL means it */
        *temp_bytes = sizeof(int64_t);
        return XDEV_SUCCESS;
    }
    xdev_prim_desc_t *d = malloc(sizeof *d);
    if (d == NULL) return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory");
    *d = *desc;
    xdev_status_t st = null_stream_launch_host_func(desc->device, desc->stream, histogram_task, d);
    if (st != XDEV_SUCCESS) free(d);
    return st;
}

static xdev_memory_vtable_t g_faulty_memory;
static const xdev_blas_vtable_t g_faulty_blas = {
    .size = sizeof g_faulty_blas, .query_dtypes = faulty_query_dtypes, .gemm = faulty_gemm};
static const xdev_prim_vtable_t g_faulty_prim = {.size = sizeof g_faulty_prim,
                                                 .histogram_even = faulty_histogram};
static xdev_backend_api_t g_faulty_api;

XDEV_API const xdev_backend_api_t *xdev_backend_entry(void);
const xdev_backend_api_t *xdev_backend_entry(void) {
    g_faulty_memory = g_memory;
    g_faulty_memory.memset_async = faulty_memset;
    g_faulty_memory.memcpy_async = faulty_memcpy;
    g_faulty_api = *null_template_entry();
    g_faulty_api.memory = &g_faulty_memory;
    g_faulty_api.blas = &g_faulty_blas;
    g_faulty_api.graph = &g_faulty_graph;
    g_faulty_api.prim = &g_faulty_prim;
    return &g_faulty_api;
}
