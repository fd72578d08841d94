/* SPDX-License-Identifier: Apache-2.0 */
/* bench/blas_bench.c - square GEMM throughput per dtype through xdev, and
 * (on the CPU backend) the same GEMM on the same buffers called directly on
 * OpenBLAS in the same run, to check that xdev's dispatch (validation, the
 * hop to the stream's worker) costs nothing measurable: the goal is xdev >=
 * 0.95x direct. The two are measured alternately, best of --trials each.
 *
 * GFLOP/s = 2 n^3 (real) or 8 n^3 (complex) per GEMM over the wall time of
 * `reps` GEMMs enqueued back to back and one synchronize; each figure is the
 * best of --trials. f16/bf16 have no direct OpenBLAS call: their "direct"
 * column is cblas_sgemm (the f32 work they are converted to).
 *
 *   blas_bench [--sizes 64,256,1024] [--trials 3] [--seconds 0.3] */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xdev/xdev.h"
#include "bench_util.h"

#ifdef XDEV_BENCH_OPENBLAS
#include <cblas.h>
#endif

typedef struct run {
    xdev_dtype_t t;
    int n;
    void *a, *b, *c;     /* device */
    void *ha, *hb, *hc;  /* host, for the direct call */
    float *fa, *fb, *fc; /* f32 copies for the 16-bit "direct" column */
    xdev_stream_t stream;
} run_t;

static void xdev_once(const run_t *r) {
    CHECK(xdev_gemm(r->t, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, r->n, r->n, r->n, 1.0, r->a, r->n, r->b,
                    r->n, 0.0, r->c, r->n, r->stream));
}

#ifdef XDEV_BENCH_OPENBLAS
static void direct_once(const run_t *r) {
    int n = r->n;
    switch (r->t) {
    case XDEV_DTYPE_F32:
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, r->ha, n, r->hb, n,
                    0.0f, r->hc, n);
        break;
    case XDEV_DTYPE_F64:
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, r->ha, n, r->hb, n,
                    0.0, r->hc, n);
        break;
    case XDEV_DTYPE_C64: {
        const float one[2] = {1, 0}, zero[2] = {0, 0};
        cblas_cgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, one, r->ha, n, r->hb, n,
                    zero, r->hc, n);
        break;
    }
    case XDEV_DTYPE_C128: {
        const double one[2] = {1, 0}, zero[2] = {0, 0};
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, one, r->ha, n, r->hb, n,
                    zero, r->hc, n);
        break;
    }
    default:
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, r->fa, n, r->fb, n,
                    0.0f, r->fc, n);
        break;
    }
}
#endif

/* Normal (not subnormal: those are slow) values 1, 0.5, -0.25 in any dtype. */
static void fill(xdev_dtype_t t, void *buf, size_t count) {
    static const float vals[3] = {1.0f, 0.5f, -0.25f};
    static const uint16_t f16[3] = {0x3c00, 0x3800, 0xb400}, bf16[3] = {0x3f80, 0x3f00, 0xbe80};
    for (size_t i = 0; i < count; i++) {
        float v = vals[i % 3];
        switch (t) {
        case XDEV_DTYPE_F32:
            ((float *)buf)[i] = v;
            break;
        case XDEV_DTYPE_F64:
            ((double *)buf)[i] = v;
            break;
        case XDEV_DTYPE_C64:
            ((float *)buf)[2 * i] = v, ((float *)buf)[2 * i + 1] = -v;
            break;
        case XDEV_DTYPE_C128:
            ((double *)buf)[2 * i] = v, ((double *)buf)[2 * i + 1] = -v;
            break;
        case XDEV_DTYPE_F16:
            ((uint16_t *)buf)[i] = f16[i % 3];
            break;
        default:
            ((uint16_t *)buf)[i] = bf16[i % 3];
            break;
        }
    }
}

/* Best GFLOP/s over `trials` timings of `reps` calls. */
static double measure(const run_t *r, bool direct, int reps, int trials) {
    double flops =
        (double)r->n * r->n * r->n * (r->t == XDEV_DTYPE_C64 || r->t == XDEV_DTYPE_C128 ? 8 : 2);
    double best = 0;
    for (int t = 0; t < trials; t++) {
        double t0 = now_s();
        for (int i = 0; i < reps; i++) {
#ifdef XDEV_BENCH_OPENBLAS
            if (direct)
                direct_once(r);
            else
#endif
                xdev_once(r);
        }
        if (!direct) CHECK(xdev_stream_synchronize(r->stream));
        double gf = flops * reps / (now_s() - t0) / 1e9;
        if (gf > best) best = gf;
    }
    return best;
}

int main(int argc, char **argv) {
    int sizes[16] = {64, 128, 256, 512, 1024}, nsizes = 5, trials = 3;
    double seconds = 0.3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = 0;
            for (char *p = strtok(argv[++i], ","); p && nsizes < 16; p = strtok(NULL, ","))
                sizes[nsizes++] = atoi(p);
        } else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) {
            trials = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: blas_bench [--sizes 64,256] [--trials 3] [--seconds 0.3]\n");
            return 2;
        }
    }
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    xdev_device_properties_t props;
    CHECK(xdev_get_device_properties(dev, &props));
    char name[XDEV_DEVICE_NAME_MAX];
    CHECK(xdev_device_format(dev, name, sizeof name));
    bool direct = false;
#ifdef XDEV_BENCH_OPENBLAS
    direct = dev.type == XDEV_DEVICE_CPU;
#endif
    printf("GEMM on %s (%s), C = A B, n x n, column-major; best of %d\n", name, props.name, trials);
    printf("%-5s %6s %12s %12s %7s\n", "dtype", "n", "xdev GF/s", direct ? "direct GF/s" : "-",
           direct ? "ratio" : "");
    xdev_stream_t stream;
    CHECK(xdev_stream_current(dev, &stream));
    for (int t = 0; t < XDEV_DTYPE_COUNT; t++) {
        bool ok = false;
        CHECK(xdev_blas_supports(dev, XDEV_BLAS_GEMM, (xdev_dtype_t)t, &ok));
        if (!ok) continue;
        for (int si = 0; si < nsizes; si++) {
            run_t r = {.t = (xdev_dtype_t)t, .n = sizes[si], .stream = stream};
            size_t bytes = (size_t)r.n * r.n * xdev_dtype_size(r.t);
            unsigned char *h = malloc(bytes);
            fill(r.t, h, (size_t)r.n * r.n);
            CHECK(xdev_malloc(&r.a, bytes));
            CHECK(xdev_malloc(&r.b, bytes));
            CHECK(xdev_malloc(&r.c, bytes));
            CHECK(xdev_memcpy(r.a, h, bytes));
            CHECK(xdev_memcpy(r.b, h, bytes));
            /* The direct call uses the same buffers (CPU device memory is host
             * memory), so only the dispatch differs. */
            r.ha = r.a, r.hb = r.b, r.hc = r.c;
            size_t fbytes = (size_t)r.n * r.n * sizeof(float);
            r.fa = malloc(fbytes), r.fb = malloc(fbytes), r.fc = malloc(fbytes);
            fill(XDEV_DTYPE_F32, r.fa, (size_t)r.n * r.n);
            fill(XDEV_DTYPE_F32, r.fb, (size_t)r.n * r.n);
            /* calibrate reps to about `seconds` */
            double t0 = now_s();
            xdev_once(&r);
            CHECK(xdev_stream_synchronize(stream));
            double one = now_s() - t0;
            int reps = one > 0 ? (int)(seconds / one) : 1000;
            if (reps < 1) reps = 1;
            if (reps > 100000) reps = 100000;
            double gx = 0, gd = 0; /* alternate the two so drift hits both alike */
            for (int k = 0; k < trials; k++) {
                double x = measure(&r, false, reps, 1);
                double y = direct ? measure(&r, true, reps, 1) : 0;
                gx = x > gx ? x : gx;
                gd = y > gd ? y : gd;
            }
            if (direct) {
                printf("%-5s %6d %12.2f %12.2f %7.3f\n", xdev_dtype_name(r.t), r.n, gx, gd,
                       gx / gd);
            } else {
                printf("%-5s %6d %12.2f\n", xdev_dtype_name(r.t), r.n, gx);
            }
            fflush(stdout);
            CHECK(xdev_free(r.a));
            CHECK(xdev_free(r.b));
            CHECK(xdev_free(r.c));
            free(h), free(r.fa), free(r.fb), free(r.fc);
        }
    }
    return 0;
}
