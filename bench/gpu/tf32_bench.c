/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/tf32_bench.c - the seed's TF32 experiment (torch.backends.cuda.
 * matmul.allow_tf32) through xdev on cuda:0:
 *
 *   a, b = n x n standard normal doubles;  ab_full = a @ b in f64
 *   ab_tf32 = float(a) @ float(b) with TF32 on, ab_fp32 the same with it off
 *   error = max |ab - ab_full|;  relative error = error / mean |ab_full|
 *
 * The seed's GA100 figures (n = 10240): TF32 0.016 s, rel. error 0.0022;
 * f32 0.11 s, rel. error 0.000039. Times are CUDA events around one
 * xdev_gemm, median of --reps after a warm-up.
 *
 *   tf32_bench [--n 10240] [--reps 5]
 *
 * Needs XDEV_BACKEND=cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "gpu_bench.h"

typedef struct gen_job {
    double *a;
    float *f;
    size_t begin, end;
    uint64_t seed;
    pthread_t thread;
} gen_job_t;

/* Box-Muller normals for a[begin..end), and their float rounding. */
static void *gen_main(void *arg) {
    gen_job_t *j = arg;
    uint64_t st = j->seed;
    for (size_t i = j->begin; i < j->end; i += 2) {
        double u1 = 0.5 * (gb_uniform(&st) + 1.0), u2 = gb_uniform(&st);
        if (u1 < 1e-300) u1 = 1e-300;
        double r = sqrt(-2.0 * log(u1)), th = 3.14159265358979323846 * u2;
        j->a[i] = r * cos(th);
        if (i + 1 < j->end) j->a[i + 1] = r * sin(th);
    }
    for (size_t i = j->begin; i < j->end; i++)
        j->f[i] = (float)j->a[i];
    return NULL;
}

static void gen(double *a, float *f, size_t count, uint64_t seed) {
    enum { T = 16 };
    gen_job_t jobs[T];
    for (int t = 0; t < T; t++) {
        jobs[t] = (gen_job_t){
            a, f, count * (size_t)t / T, count * (size_t)(t + 1) / T, seed * 1000003u + (uint64_t)t,
            0};
        jobs[t].begin &= ~(size_t)1;
        if (t > 0) jobs[t - 1].end = jobs[t].begin;
    }
    for (int t = 0; t < T; t++)
        if (pthread_create(&jobs[t].thread, NULL, gen_main, &jobs[t]) != 0) exit(1);
    for (int t = 0; t < T; t++)
        pthread_join(jobs[t].thread, NULL);
}

typedef struct result {
    double seconds, max_err;
} result_t;

/* Median seconds of `reps` timed GEMMs of dtype t (after one warm-up). */
static double time_gemm(xdev_dtype_t t, int n, const void *a, const void *b, void *c,
                        xdev_stream_t s, int reps) {
    xdev_event_t e0, e1;
    CHECK(xdev_event_create(XDEV_EVENT_TIMING, &e0));
    CHECK(xdev_event_create(XDEV_EVENT_TIMING, &e1));
    CHECK(xdev_gemm(t, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, n, n, n, 1.0, a, n, b, n, 0.0, c, n, s));
    CHECK(xdev_stream_synchronize(s));
    double v[32];
    for (int r = 0; r < reps; r++) {
        CHECK(xdev_event_record(e0, s));
        CHECK(xdev_gemm(t, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, n, n, n, 1.0, a, n, b, n, 0.0, c, n, s));
        CHECK(xdev_event_record(e1, s));
        CHECK(xdev_event_synchronize(e1));
        float ms = 0.0f;
        CHECK(xdev_event_elapsed_time(e0, e1, &ms));
        v[r] = (double)ms * 1e-3;
    }
    CHECK(xdev_event_destroy(e0));
    CHECK(xdev_event_destroy(e1));
    return median(v, reps);
}

int main(int argc, char **argv) {
    int n = 10240, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: tf32_bench [--n 10240] [--reps 5]\n");
            return 2;
        }
    }
    if (n < 16 || reps < 1 || reps > 32) return 2;
    xdev_device_t d = gb_cuda_device("tf32_bench");
    xdev_device_properties_t props;
    CHECK(xdev_get_device_properties(d, &props));
    size_t count = (size_t)n * (size_t)n;
    double *ha = malloc(count * 8), *hb = malloc(count * 8), *hc = malloc(count * 8);
    float *fa = malloc(count * 4), *fb = malloc(count * 4), *fc = malloc(count * 4);
    if (!ha || !hb || !hc || !fa || !fb || !fc) return 1;
    gen(ha, fa, count, 1);
    gen(hb, fb, count, 2);
    void *da, *db, *dc, *sa, *sb, *sc;
    CHECK(xdev_malloc_device(d, &da, count * 8));
    CHECK(xdev_malloc_device(d, &db, count * 8));
    CHECK(xdev_malloc_device(d, &dc, count * 8));
    CHECK(xdev_malloc_device(d, &sa, count * 4));
    CHECK(xdev_malloc_device(d, &sb, count * 4));
    CHECK(xdev_malloc_device(d, &sc, count * 4));
    CHECK(xdev_memcpy(da, ha, count * 8));
    CHECK(xdev_memcpy(db, hb, count * 8));
    CHECK(xdev_memcpy(sa, fa, count * 4));
    CHECK(xdev_memcpy(sb, fb, count * 4));
    xdev_stream_t s;
    CHECK(xdev_stream_create(d, XDEV_STREAM_PRIORITY_NORMAL, &s));

    double t64 = time_gemm(XDEV_DTYPE_F64, n, da, db, dc, s, reps);
    CHECK(xdev_memcpy_async(hc, dc, count * 8, s));
    CHECK(xdev_stream_synchronize(s));
    double mean = 0.0;
    for (size_t i = 0; i < count; i++)
        mean += fabs(hc[i]);
    mean /= (double)count;

    result_t res[2]; /* [0] TF32 on, [1] off */
    for (int k = 0; k < 2; k++) {
        CHECK(xdev_blas_set_allow_tf32(k == 0));
        res[k].seconds = time_gemm(XDEV_DTYPE_F32, n, sa, sb, sc, s, reps);
        CHECK(xdev_memcpy_async(fc, sc, count * 4, s));
        CHECK(xdev_stream_synchronize(s));
        double worst = 0.0;
        for (size_t i = 0; i < count; i++) {
            double e = fabs((double)fc[i] - hc[i]);
            if (!(e <= worst)) worst = e; /* NaN propagates */
        }
        res[k].max_err = worst;
    }
    printf("tf32_bench on cuda:%d (%s): %dx%d GEMM, median of %d (CUDA events); f64 GEMM %.4f s, "
           "mean |ab_full| = %.4f\n",
           d.index, props.name, n, n, reps, t64, mean);
    printf("| %-12s | %9s | %9s | %14s | %12s | %9s | %14s |\n", "f32 GEMM", "time s", "TFLOP/s",
           "max abs error", "rel. error", "GA100 s", "GA100 rel.err");
    static const char *const names[2] = {"TF32 on", "TF32 off"};
    static const double ga_s[2] = {0.016, 0.11}, ga_err[2] = {0.0022, 0.000039};
    double flop = 2.0 * (double)n * (double)n * (double)n;
    for (int k = 0; k < 2; k++)
        printf("| %-12s | %9.4f | %9.1f | %14.6f | %12.7f | %9.3f | %14.6f |\n", names[k],
               res[k].seconds, flop / res[k].seconds / 1e12, res[k].max_err, res[k].max_err / mean,
               ga_s[k], ga_err[k]);
    printf("speed-up TF32 on / off: %.2fx (GA100: %.2fx)\n", res[1].seconds / res[0].seconds,
           0.11 / 0.016);
    CHECK(xdev_stream_destroy(s));
    CHECK(xdev_free(da));
    CHECK(xdev_free(db));
    CHECK(xdev_free(dc));
    CHECK(xdev_free(sa));
    CHECK(xdev_free(sb));
    CHECK(xdev_free(sc));
    free(ha), free(hb), free(hc), free(fa), free(fb), free(fc);
    return 0;
}
