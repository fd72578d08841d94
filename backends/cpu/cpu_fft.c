/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_fft.c - the CPU backend's FFT table over FFTW3 (double
 * and float).
 *
 * An xdev plan stands for one layout (the core's plan-cache key); FFTW also
 * fixes the sign, in-place-ness and the SIMD alignment class of the arrays
 * in a plan, so each xdev plan holds up to eight FFTW plans ("variants"),
 * made with FFTW_ESTIMATE (which never touches the arrays) on first use.
 * The layout goes to FFTW's guru64 interface, which takes cuFFT's advanced
 * layout with 64-bit sizes and strides.
 *
 * FFTW's planner and plan destruction are not thread-safe: one global mutex
 * guards them. Execution uses the new-array functions (fftw_execute_dft,
 * ...), which are thread-safe, on the stream's worker through a host
 * function. Each queued exec holds a reference to the xdev plan, so the
 * plan cache may destroy a plan while execs with it are still queued.
 *
 * Threads: where FFTW's threads library is linked, plans are made for the
 * device's thread count and FFTW's parallel loops run on the device's
 * worker pool (fftw_threads_set_callback -> xdev_cpu_parallel_for, on the
 * device of the stream worker executing the plan), not on threads of
 * FFTW's own. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_math.h"

#ifdef XDEV_HAVE_FFTW
#include <fftw3.h>

static pthread_mutex_t g_planner_lock = PTHREAD_MUTEX_INITIALIZER;

#ifdef XDEV_HAVE_FFTW_THREADS
/* One of FFTW's parallel loops: work(jobdata + i * elsize), i < njobs. */
typedef struct fftw_loop {
    void *(*work)(char *);
    char *jobdata;
    size_t elsize;
} fftw_loop_t;

static void fftw_range(void *arg, size_t begin, size_t end) {
    const fftw_loop_t *l = arg;
    for (size_t i = begin; i < end; i++)
        (void)l->work(l->jobdata + i * l->elsize);
}

/* FFTW's thread callback: on a stream worker, the device's pool; anywhere
 * else (a loop nested inside a pool worker's job), in order here. */
static void fftw_parallel_loop(void *(*work)(char *), char *jobdata, size_t elsize, int njobs,
                               void *data) {
    (void)data;
    fftw_loop_t l = {work, jobdata, elsize};
    xdev_cpu_stream_t *s = xdev_cpu_stream_self();
    if (s == NULL || njobs <= 1)
        fftw_range(&l, 0, njobs > 0 ? (size_t)njobs : 0);
    else
        xdev_cpu_parallel_for(s->device, (size_t)njobs, 1, fftw_range, &l);
}

static pthread_once_t g_threads_once = PTHREAD_ONCE_INIT;
static bool g_threads_ok;

static void threads_init(void) {
    if (fftw_init_threads() == 0 || fftwf_init_threads() == 0) return;
    fftw_threads_set_callback(fftw_parallel_loop, NULL);
    fftwf_threads_set_callback(fftw_parallel_loop, NULL);
    g_threads_ok = true;
}
#endif

typedef struct cpu_fft_plan {
    atomic_int refs; /* the cache's + one per queued exec */
    xdev_fft_plan_desc_t d;
    /* [inverse][in place][unaligned]: fftw_plan or fftwf_plan, under g_planner_lock */
    void *variants[2][2][2];
} cpu_fft_plan_t;

static void destroy_variant(const cpu_fft_plan_t *p, void *v) {
    if (p->d.precision == XDEV_FFT_F32)
        fftwf_destroy_plan((fftwf_plan)v);
    else
        fftw_destroy_plan((fftw_plan)v);
}

static void plan_release(cpu_fft_plan_t *p) {
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_lock(&g_planner_lock);
    for (int s = 0; s < 2; s++)
        for (int ip = 0; ip < 2; ip++)
            for (int u = 0; u < 2; u++)
                if (p->variants[s][ip][u] != NULL) destroy_variant(p, p->variants[s][ip][u]);
    pthread_mutex_unlock(&g_planner_lock);
    free(p);
}

static xdev_status_t cpu_plan_create(const xdev_fft_plan_desc_t *desc, void **plan,
                                     size_t *work_size) {
    cpu_fft_plan_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for an FFT plan",
                              desc->device->index);
    memcpy(&p->d, desc, desc->size < sizeof p->d ? desc->size : sizeof p->d);
    atomic_init(&p->refs, 1);
    *plan = p;
    *work_size = 0; /* FFTW plans carry their own scratch */
    return XDEV_SUCCESS;
}

static xdev_status_t cpu_plan_destroy(xdev_cpu_device_t *dev, void *plan) {
    (void)dev; /* FFTW plans belong to no device */
    plan_release(plan);
    return XDEV_SUCCESS;
}

/* FFTW's guru64 dimensions for the plan's layout: strides of each
 * dimension in elements of that side, batches as one howmany dimension. */
static void guru_dims(const xdev_fft_plan_desc_t *d, fftw_iodim64 *dims, fftw_iodim64 *howmany) {
    ptrdiff_t ip = d->istride, op = d->ostride;
    for (int i = d->rank - 1; i >= 0; i--) {
        dims[i].n = d->n[i];
        dims[i].is = ip;
        dims[i].os = op;
        ip *= d->inembed[i];
        op *= d->onembed[i];
    }
    howmany->n = d->batch;
    howmany->is = d->idist;
    howmany->os = d->odist;
}

/* Make the FFTW plan for one variant (planner lock held). */
static void *make_variant(const xdev_fft_plan_desc_t *d, bool inverse, bool unaligned, void *in,
                          void *out) {
    fftw_iodim64 dims[XDEV_FFT_MAX_RANK], howmany;
    guru_dims(d, dims, &howmany);
    unsigned flags = FFTW_ESTIMATE | (unaligned ? FFTW_UNALIGNED : 0u);
#ifdef XDEV_HAVE_FFTW_THREADS
    pthread_once(&g_threads_once, threads_init);
    if (g_threads_ok) {
        fftw_plan_with_nthreads(xdev_cpu_state.threads);
        fftwf_plan_with_nthreads(xdev_cpu_state.threads);
    }
#endif
    int sign = inverse ? FFTW_BACKWARD : FFTW_FORWARD;
    /* fftwf_iodim64 has the same layout as fftw_iodim64 (three ptrdiff_t). */
    const fftwf_iodim64 *fdims = (const fftwf_iodim64 *)(const void *)dims;
    const fftwf_iodim64 *fhow = (const fftwf_iodim64 *)(const void *)&howmany;
    if (d->precision == XDEV_FFT_F32) {
        switch (d->type) {
        case XDEV_FFT_C2C:
            return fftwf_plan_guru64_dft(d->rank, fdims, 1, fhow, in, out, sign, flags);
        case XDEV_FFT_R2C:
            return fftwf_plan_guru64_dft_r2c(d->rank, fdims, 1, fhow, in, out, flags);
        default:
            return fftwf_plan_guru64_dft_c2r(d->rank, fdims, 1, fhow, in, out, flags);
        }
    }
    switch (d->type) {
    case XDEV_FFT_C2C:
        return fftw_plan_guru64_dft(d->rank, dims, 1, &howmany, in, out, sign, flags);
    case XDEV_FFT_R2C:
        return fftw_plan_guru64_dft_r2c(d->rank, dims, 1, &howmany, in, out, flags);
    default:
        return fftw_plan_guru64_dft_c2r(d->rank, dims, 1, &howmany, in, out, flags);
    }
}

typedef struct fft_job {
    cpu_fft_plan_t *plan; /* referenced */
    void *variant;
    void *in, *out;
    double scale;
} fft_job_t;

/* Multiply every output element by s (strided walk over the output layout). */
static void scale_output(const xdev_fft_plan_desc_t *d, void *out, double s) {
    int64_t dims[XDEV_FFT_MAX_RANK] = {1, 1, 1}, pitch[XDEV_FFT_MAX_RANK] = {0, 0, 0};
    int off = XDEV_FFT_MAX_RANK - d->rank; /* right-align to rank 3 */
    int64_t p = d->ostride;
    for (int i = d->rank - 1; i >= 0; i--) {
        dims[off + i] = d->n[i];
        if (i == d->rank - 1 && d->type == XDEV_FFT_R2C) dims[off + i] = d->n[i] / 2 + 1;
        pitch[off + i] = p;
        p *= d->onembed[i];
    }
    int parts = d->type == XDEV_FFT_C2R ? 1 : 2; /* reals per element */
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t i0 = 0; i0 < dims[0]; i0++)
            for (int64_t i1 = 0; i1 < dims[1]; i1++)
                for (int64_t i2 = 0; i2 < dims[2]; i2++) {
                    int64_t e = b * d->odist + i0 * pitch[0] + i1 * pitch[1] + i2 * pitch[2];
                    for (int k = 0; k < parts; k++) {
                        if (d->precision == XDEV_FFT_F32)
                            ((float *)out)[e * parts + k] *= (float)s;
                        else
                            ((double *)out)[e * parts + k] *= s;
                    }
                }
}

static void fft_run(void *arg) {
    fft_job_t *j = arg;
    const xdev_fft_plan_desc_t *d = &j->plan->d;
    if (d->precision == XDEV_FFT_F32) {
        fftwf_plan v = j->variant;
        if (d->type == XDEV_FFT_C2C)
            fftwf_execute_dft(v, j->in, j->out);
        else if (d->type == XDEV_FFT_R2C)
            fftwf_execute_dft_r2c(v, j->in, j->out);
        else
            fftwf_execute_dft_c2r(v, j->in, j->out);
    } else {
        fftw_plan v = j->variant;
        if (d->type == XDEV_FFT_C2C)
            fftw_execute_dft(v, j->in, j->out);
        else if (d->type == XDEV_FFT_R2C)
            fftw_execute_dft_r2c(v, j->in, j->out);
        else
            fftw_execute_dft_c2r(v, j->in, j->out);
    }
    if (j->scale != 1.0) scale_output(d, j->out, j->scale);
}

static void fft_release(void *arg) {
    fft_job_t *j = arg;
    plan_release(j->plan);
    free(j);
}

static bool is_unaligned(const cpu_fft_plan_t *p, void *ptr) {
    return p->d.precision == XDEV_FFT_F32 ? fftwf_alignment_of(ptr) != 0
                                          : fftw_alignment_of(ptr) != 0;
}

static xdev_status_t cpu_exec(const xdev_fft_exec_desc_t *x) {
    cpu_fft_plan_t *p = x->plan;
    bool inverse = x->direction == XDEV_FFT_INVERSE;
    bool in_place = x->in == x->out;
    bool unaligned = is_unaligned(p, x->in) || is_unaligned(p, x->out);
    fft_job_t *j = malloc(sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for an FFT",
                              x->device->index);
    pthread_mutex_lock(&g_planner_lock);
    void **slot = &p->variants[inverse][in_place][unaligned];
    if (*slot == NULL) *slot = make_variant(&p->d, inverse, unaligned, x->in, x->out);
    void *variant = *slot;
    pthread_mutex_unlock(&g_planner_lock);
    if (variant == NULL) {
        free(j);
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu:%d FFTW cannot plan this %s transform%s; check the layout "
                              "(in-place r2c/c2r needs the padded layout)",
                              x->device->index,
                              p->d.type == XDEV_FFT_C2C   ? "c2c"
                              : p->d.type == XDEV_FFT_R2C ? "r2c"
                                                          : "c2r",
                              in_place ? " in place with these strides" : "");
    }
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    *j = (fft_job_t){p, variant, x->in, x->out, x->scale};
    xdev_status_t st =
        xdev_cpu_stream_enqueue_job(x->device->index, x->stream, fft_run, fft_release, j);
    if (st != XDEV_SUCCESS) {
        plan_release(p);
        free(j);
    }
    return st;
}

const xdev_fft_vtable_t xdev_cpu_fft_vtable = {
    .size = sizeof(xdev_fft_vtable_t),
    .plan_create = cpu_plan_create,
    .plan_destroy = cpu_plan_destroy,
    .exec = cpu_exec,
};

#else /* !XDEV_HAVE_FFTW */

static xdev_status_t cpu_plan_create(const xdev_fft_plan_desc_t *desc, void **plan,
                                     size_t *work_size) {
    return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                          "the cpu backend was built without FFTW3, so it has no FFT (install "
                          "libfftw3-dev and reconfigure)");
}

static xdev_status_t cpu_plan_destroy(xdev_cpu_device_t *dev, void *plan) {
    (void)dev;
    (void)plan;
    return XDEV_SUCCESS;
}

static xdev_status_t cpu_exec(const xdev_fft_exec_desc_t *x) {
    return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED, "the cpu backend was built without FFTW3");
}

const xdev_fft_vtable_t xdev_cpu_fft_vtable = {
    .size = sizeof(xdev_fft_vtable_t),
    .plan_create = cpu_plan_create,
    .plan_destroy = cpu_plan_destroy,
    .exec = cpu_exec,
};

#endif
