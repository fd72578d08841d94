/* SPDX-License-Identifier: Apache-2.0 */
/* bench/fft_bench.c - FFT throughput through xdev per size and precision
 * and (on the CPU backend) the same transform on the same buffers executed
 * directly with FFTW (plan_many, FFTW_ESTIMATE) in the same run; then the cost of an xdev_fft_exec
 * call whose plan is in the cache (a hit) versus one that must create it (max_size 0: every call
 * plans), and FFTW's own planning time for reference.
 *
 * GFLOP/s use the usual convention: 5 N log2 N per complex transform of N
 * points (2.5 N log2 N for r2c), over `batch` transforms, best of --trials.
 * Hit/create costs are the median wall time of the exec call alone (the
 * transform runs on the stream's worker; the stream is drained between
 * calls, outside the timed region).
 *
 *   fft_bench [--trials 3] [--seconds 0.3] */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xdev/xdev.h"
#include "bench_util.h"

#ifdef XDEV_BENCH_FFTW
#include <fftw3.h>
#endif

typedef struct shape {
    xdev_fft_type_t type;
    int rank;
    int64_t n[3];
    int64_t batch;
} shape_t;

static const shape_t g_shapes[] = {
    {XDEV_FFT_C2C, 1, {256}, 1024},   {XDEV_FFT_C2C, 1, {4096}, 64},
    {XDEV_FFT_C2C, 1, {65536}, 4},    {XDEV_FFT_C2C, 1, {1000}, 256},
    {XDEV_FFT_R2C, 1, {4096}, 64},    {XDEV_FFT_C2C, 2, {256, 256}, 4},
    {XDEV_FFT_R2C, 2, {256, 256}, 4}, {XDEV_FFT_C2C, 3, {64, 64, 64}, 1},
};

static double points(const shape_t *s) {
    double n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= (double)s->n[i];
    return n;
}

#ifdef XDEV_BENCH_FFTW
/* The same transform planned directly with FFTW (plan_many, FFTW_ESTIMATE). */
static void *direct_plan(const shape_t *s, bool f32, void *in, void *out) {
    int n[3] = {(int)s->n[0], (int)s->n[1], (int)s->n[2]};
    int nl = (int)points(s), last = n[s->rank - 1];
    int half = nl / last * (last / 2 + 1);
    if (f32)
        return s->type == XDEV_FFT_C2C
                   ? (void *)fftwf_plan_many_dft(s->rank, n, (int)s->batch, in, NULL, 1, nl, out,
                                                 NULL, 1, nl, FFTW_FORWARD, FFTW_ESTIMATE)
                   : (void *)fftwf_plan_many_dft_r2c(s->rank, n, (int)s->batch, in, NULL, 1, nl,
                                                     out, NULL, 1, half, FFTW_ESTIMATE);
    return s->type == XDEV_FFT_C2C
               ? (void *)fftw_plan_many_dft(s->rank, n, (int)s->batch, in, NULL, 1, nl, out, NULL,
                                            1, nl, FFTW_FORWARD, FFTW_ESTIMATE)
               : (void *)fftw_plan_many_dft_r2c(s->rank, n, (int)s->batch, in, NULL, 1, nl, out,
                                                NULL, 1, half, FFTW_ESTIMATE);
}

static void direct_exec(void *plan, bool f32) {
    if (f32)
        fftwf_execute(plan);
    else
        fftw_execute(plan);
}

static void direct_destroy(void *plan, bool f32) {
    if (f32)
        fftwf_destroy_plan(plan);
    else
        fftw_destroy_plan(plan);
}
#endif

int main(int argc, char **argv) {
    int trials = 3;
    double seconds = 0.3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc)
            trials = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: fft_bench [--trials 3] [--seconds 0.3]\n");
            return 2;
        }
    }
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    char name[XDEV_DEVICE_NAME_MAX];
    CHECK(xdev_device_format(dev, name, sizeof name));
    xdev_stream_t stream;
    CHECK(xdev_stream_current(dev, &stream));
    bool direct = false;
#ifdef XDEV_BENCH_FFTW
    direct = dev.type == XDEV_DEVICE_CPU;
#endif
    printf("FFT on %s, forward, out of place; GFLOP/s = 5 N log2 N (c2c), 2.5 N log2 N (r2c)\n",
           name);
    printf("%-4s %-4s %-14s %6s %10s %12s %7s\n", "prec", "type", "size", "batch", "xdev GF/s",
           direct ? "FFTW GF/s" : "-", direct ? "ratio" : "");
    for (int p = 0; p < 2; p++) {
        bool f32 = p == 0;
        for (size_t si = 0; si < sizeof g_shapes / sizeof g_shapes[0]; si++) {
            const shape_t *s = &g_shapes[si];
            xdev_fft_desc_t d = xdev_fft_desc_basic(s->type, f32 ? XDEV_FFT_F32 : XDEV_FFT_F64,
                                                    s->rank, s->n, s->batch);
            size_t bytes = (size_t)(points(s) * (double)s->batch) * (f32 ? 8 : 16);
            void *in, *out;
            CHECK(xdev_malloc(&in, bytes));
            CHECK(xdev_malloc(&out, bytes));
            CHECK(xdev_memset_async(in, 0, bytes, stream));
            double t0 = now_s();
            CHECK(xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, stream));
            CHECK(xdev_stream_synchronize(stream));
            double one = now_s() - t0;
            int reps = one > 0 ? (int)(seconds / one) : 100;
            reps = reps < 2 ? 2 : reps > 100000 ? 100000 : reps;
            double n = points(s);
            double flops = (s->type == XDEV_FFT_C2C ? 5.0 : 2.5) * n * log2(n) * (double)s->batch;
            double gx = 0, gd = 0;
#ifdef XDEV_BENCH_FFTW
            /* The same buffers (CPU device memory is host memory): where the
             * arrays lie (alignment, 4K aliasing of in and out) moves FFTW's
             * speed by up to 25% here, which would swamp the comparison. */
            void *plan = direct ? direct_plan(s, f32, in, out) : NULL;
#endif
            for (int t = 0; t < trials; t++) {
                t0 = now_s();
                for (int i = 0; i < reps; i++)
                    CHECK(xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, stream));
                CHECK(xdev_stream_synchronize(stream));
                double g = flops * reps / (now_s() - t0) / 1e9;
                gx = g > gx ? g : gx;
#ifdef XDEV_BENCH_FFTW
                if (direct) {
                    t0 = now_s();
                    for (int i = 0; i < reps; i++)
                        direct_exec(plan, f32);
                    g = flops * reps / (now_s() - t0) / 1e9;
                    gd = g > gd ? g : gd;
                }
#endif
            }
            char size[32];
            if (s->rank == 1)
                snprintf(size, sizeof size, "%lld", (long long)s->n[0]);
            else if (s->rank == 2)
                snprintf(size, sizeof size, "%lldx%lld", (long long)s->n[0], (long long)s->n[1]);
            else
                snprintf(size, sizeof size, "%lldx%lldx%lld", (long long)s->n[0],
                         (long long)s->n[1], (long long)s->n[2]);
            printf("%-4s %-4s %-14s %6lld %10.2f", f32 ? "f32" : "f64",
                   s->type == XDEV_FFT_C2C ? "c2c" : "r2c", size, (long long)s->batch, gx);
            if (direct) printf(" %12.2f %7.3f", gd, gx / gd);
            printf("\n");
            fflush(stdout);
#ifdef XDEV_BENCH_FFTW
            if (plan) direct_destroy(plan, f32);
#endif
            CHECK(xdev_free(in));
            CHECK(xdev_free(out));
        }
    }

    /* Plan cache: exec call cost with the plan cached vs created per call. */
    printf("\nxdev_fft_exec call cost (median ns; transform excluded), c2c f32 batch 1\n");
    printf("%8s %12s %12s %14s\n", "n", "cache hit", "plan create", "FFTW plan");
    static const int64_t sizes[] = {64, 1024, 4096, 65536};
    enum { CALLS = 201 };
    double hit[CALLS], miss[CALLS], fplan[CALLS];
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k];
        xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
        void *in, *out;
        CHECK(xdev_malloc(&in, (size_t)n * 8));
        CHECK(xdev_malloc(&out, (size_t)n * 8));
        CHECK(xdev_memset_async(in, 0, (size_t)n * 8, stream));
        for (int mode = 0; mode < 2; mode++) {
            CHECK(xdev_fft_plan_cache_set_max_size(dev, mode == 0 ? 4096 : 0));
            CHECK(xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, stream));
            CHECK(xdev_stream_synchronize(stream));
            for (int i = 0; i < CALLS; i++) {
                double t0 = now_s();
                CHECK(xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, stream));
                (mode == 0 ? hit : miss)[i] = (now_s() - t0) * 1e9;
                CHECK(xdev_stream_synchronize(stream));
            }
        }
        double fp = 0;
#ifdef XDEV_BENCH_FFTW
        if (direct) {
            void *h = fftwf_malloc((size_t)n * 8), *o = fftwf_malloc((size_t)n * 8);
            for (int i = 0; i < CALLS; i++) {
                double t0 = now_s();
                fftwf_plan pl = fftwf_plan_dft_1d((int)n, h, o, FFTW_FORWARD, FFTW_ESTIMATE);
                fplan[i] = (now_s() - t0) * 1e9;
                fftwf_destroy_plan(pl);
            }
            fp = median(fplan, CALLS);
            fftwf_free(h), fftwf_free(o);
        }
#endif
        printf("%8lld %12.0f %12.0f %14.0f\n", (long long)n, median(hit, CALLS),
               median(miss, CALLS), fp);
        CHECK(xdev_free(in));
        CHECK(xdev_free(out));
    }
    CHECK(xdev_fft_plan_cache_set_max_size(dev, 4096));
    (void)fplan;
    return 0;
}
