/* SPDX-License-Identifier: Apache-2.0 */
/* bench/ops_bench.c - typed fills and conversions (xdev/ops.h) against the
 * device's own memset and copy of the same bytes, on the current device of
 * the default backend (XDEV_BACKEND picks it), then a bit-identity check of
 * every conversion pair against xdev/support/convert.h run on the host:
 *
 *   ops_bench [--mb 256] [--reps 11] [--check N]
 *
 * Each operation is enqueued and synchronised once untimed, then --reps
 * times timed (enqueue + synchronize; bench_util.h's batch loop, median).
 * GB/s counts the destination's bytes (1e9 B/s); a copy and a 4-byte ->
 * 4-byte conversion also read as many bytes as they write, a fill and a
 * memset read nothing. Random uniform and normal f32 fills (xdev/rng.h) are
 * compared with the copy too. --check N (default 4194304) converts N elements per
 * pair: all 2^16 patterns from f16/bf16, random bit patterns and values
 * (NaN, infinities, subnormals among them) from f32/f64, random integers. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "xdev/support/convert.h"
#include "xdev/xdev.h"

typedef struct job {
    int kind; /* 0 memset, 1 copy, 2 fill, 3 convert */
    void *dst;
    const void *src;
    size_t bytes;
    xdev_dtype_t dt, st;
    size_t count;
    xdev_stream_t s;
} job_t;

static void run_job(void *arg) {
    job_t *j = arg;
    switch (j->kind) {
    case 0:
        CHECK(xdev_memset_async(j->dst, 0x5a, j->bytes, j->s)); /* not 0: no zero-page shortcut */
        break;
    case 1:
        CHECK(xdev_memcpy_async(j->dst, j->src, j->bytes, j->s));
        break;
    case 2:
        CHECK(xdev_fill_async(j->dst, j->dt, xdev_scalar_f64(1.0), j->count, j->s));
        break;
    case 4:
        CHECK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, j->dst, j->count, j->s));
        break;
    case 5:
        CHECK(xdev_rng_normal(NULL, XDEV_DTYPE_F32, j->dst, j->count, 0.0, 1.0, j->s));
        break;
    default:
        CHECK(xdev_convert_async(j->dst, j->dt, j->src, j->st, j->count, j->s));
        break;
    }
    CHECK(xdev_stream_synchronize(j->s));
}

static double gbps(job_t *j, size_t dst_bytes, int reps, double *samples) {
    bench_stats_t st = bench_batches(run_job, NULL, j, 1, reps, samples);
    return (double)dst_bytes / st.median; /* bytes per ns = GB/s */
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static void source(xdev_dtype_t t, unsigned char *buf, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        switch (t) {
        case XDEV_DTYPE_F16:
        case XDEV_DTYPE_BF16: {
            uint16_t v = (uint16_t)i;
            memcpy(buf + 2 * i, &v, 2);
            break;
        }
        case XDEV_DTYPE_F32: {
            float f = (float)((double)(int64_t)r * ldexp(1.0, (int)(rnd() % 180) - 120));
            if (i % 2) memcpy(&f, &r, 4);
            memcpy(buf + 4 * i, &f, 4);
            break;
        }
        case XDEV_DTYPE_F64: {
            double d = (double)(int64_t)r * ldexp(1.0, (int)(rnd() % 600) - 330);
            if (i % 2) memcpy(&d, &r, 8);
            memcpy(buf + 8 * i, &d, 8);
            break;
        }
        case XDEV_DTYPE_I32: {
            int32_t v = (int32_t)(uint32_t)r >> (int)(rnd() % 31);
            memcpy(buf + 4 * i, &v, 4);
            break;
        }
        default: {
            int64_t v = (int64_t)r >> (int)(rnd() % 63);
            memcpy(buf + 8 * i, &v, 8);
            break;
        }
        }
    }
}

/* Every pair over n elements, compared with the host; returns mismatches. */
static long check_pairs(xdev_device_t dev, size_t n) {
    static const xdev_dtype_t t[] = {XDEV_DTYPE_F16, XDEV_DTYPE_BF16, XDEV_DTYPE_F32,
                                     XDEV_DTYPE_F64, XDEV_DTYPE_I32,  XDEV_DTYPE_I64};
    unsigned char *hs = malloc(n * 8), *hd = malloc(n * 8), *want = malloc(n * 8);
    void *ds = NULL, *dd = NULL;
    CHECK(xdev_malloc_device(dev, &ds, n * 8));
    CHECK(xdev_malloc_device(dev, &dd, n * 8));
    if (!hs || !hd || !want) {
        fprintf(stderr, "ops_bench: out of host memory\n");
        exit(1);
    }
    long bad = 0;
    for (int a = 0; a < 6; a++) {
        source(t[a], hs, n);
        CHECK(xdev_memcpy(ds, hs, n * xdev_dtype_size(t[a])));
        for (int b = 0; b < 6; b++) {
            const size_t es = xdev_dtype_size(t[b]), ss = xdev_dtype_size(t[a]);
            CHECK(xdev_convert_async(dd, t[b], ds, t[a], n, NULL));
            CHECK(xdev_memcpy(hd, dd, n * es));
            long pair_bad = 0;
            for (size_t i = 0; i < n; i++) {
                xdev_cvt_convert1(want + i * es, (int)t[b], hs + i * ss, (int)t[a]);
                if (memcmp(want + i * es, hd + i * es, es) != 0) pair_bad++;
            }
            if (pair_bad)
                printf("  MISMATCH %s -> %s: %ld of %zu\n", xdev_dtype_name(t[a]),
                       xdev_dtype_name(t[b]), pair_bad, n);
            bad += pair_bad;
        }
    }
    CHECK(xdev_free(ds));
    CHECK(xdev_free(dd));
    free(hs);
    free(hd);
    free(want);
    return bad;
}

int main(int argc, char **argv) {
    size_t mb = 256, check = 4194304;
    int reps = 11;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mb") == 0)
            mb = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--check") == 0)
            check = strtoull(argv[i + 1], NULL, 10);
    }
    if (mb == 0 || reps < 1) {
        fprintf(stderr, "usage: ops_bench [--mb 256] [--reps 11] [--check N]\n");
        return 2;
    }
    CHECK(xdev_init());
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    char name[XDEV_DEVICE_NAME_MAX];
    CHECK(xdev_device_format(dev, name, sizeof name));
    const size_t bytes = mb << 20;
    void *a = NULL, *b = NULL;
    CHECK(xdev_malloc_device(dev, &a, 2 * bytes)); /* room for a 4 -> 8 byte conversion */
    CHECK(xdev_malloc_device(dev, &b, 2 * bytes));
    CHECK(xdev_memset_async(a, 0, 2 * bytes, NULL));
    CHECK(xdev_memset_async(b, 0, 2 * bytes, NULL));
    xdev_stream_t s;
    CHECK(xdev_stream_current(dev, &s));
    double *samples = malloc(sizeof(double) * (size_t)reps);

    printf("ops_bench on %s: %zu MiB destinations, GB/s of destination bytes (median of %d)\n\n",
           name, mb, reps);
    printf("| %-28s | %8s | %9s |\n", "operation", "GB/s", "vs base");
    job_t j = {.s = s, .dst = b, .src = a, .bytes = bytes};
    j.kind = 0;
    const double g_memset = gbps(&j, bytes, reps, samples);
    printf("| %-28s | %8.1f | %9s |\n", "memset_async", g_memset, "base");
    j.kind = 1;
    const double g_copy = gbps(&j, bytes, reps, samples);
    printf("| %-28s | %8.1f | %9s |\n", "memcpy_async (device)", g_copy, "base");
    static const xdev_dtype_t fills[] = {XDEV_DTYPE_U8, XDEV_DTYPE_F16, XDEV_DTYPE_F32,
                                         XDEV_DTYPE_F64, XDEV_DTYPE_C128};
    for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
        j.kind = 2;
        j.dt = fills[f];
        j.count = bytes / xdev_dtype_size(fills[f]);
        double g = gbps(&j, bytes, reps, samples);
        char label[40];
        snprintf(label, sizeof label, "fill %s", xdev_dtype_name(fills[f]));
        printf("| %-28s | %8.1f | %8.2fx |\n", label, g, g / g_memset);
    }
    static const xdev_dtype_t conv[][2] = {
        {XDEV_DTYPE_I32, XDEV_DTYPE_F32}, {XDEV_DTYPE_F32, XDEV_DTYPE_I32},
        {XDEV_DTYPE_F32, XDEV_DTYPE_F64}, {XDEV_DTYPE_F64, XDEV_DTYPE_F32},
        {XDEV_DTYPE_F16, XDEV_DTYPE_F32}, {XDEV_DTYPE_BF16, XDEV_DTYPE_F32},
        {XDEV_DTYPE_F32, XDEV_DTYPE_F16}, {XDEV_DTYPE_F16, XDEV_DTYPE_F64},
        {XDEV_DTYPE_F64, XDEV_DTYPE_I64},
    };
    for (size_t c = 0; c < sizeof conv / sizeof conv[0]; c++) {
        j.kind = 3;
        j.dt = conv[c][0];
        j.st = conv[c][1];
        j.count = bytes / xdev_dtype_size(j.st); /* the source is `bytes` long */
        const size_t out = j.count * xdev_dtype_size(j.dt);
        double g = gbps(&j, out, reps, samples);
        char label[40];
        snprintf(label, sizeof label, "convert %s -> %s", xdev_dtype_name(j.st),
                 xdev_dtype_name(j.dt));
        printf("| %-28s | %8.1f | %8.2fx |\n", label, g, g / g_copy);
    }
    for (int k = 4; k <= 5; k++) { /* random f32: Philox, written like a fill */
        j.kind = k;
        j.count = bytes / 4;
        double g = gbps(&j, bytes, reps, samples);
        printf("| %-28s | %8.1f | %8.2fx |\n", k == 4 ? "random uniform f32" : "random normal f32",
               g, g / g_copy);
    }
    printf("\n(fills against memset_async, conversions and random fills against memcpy_async;\n"
           "a 4-byte -> 4-byte conversion moves the bytes a copy moves)\n");
    if (check > 0) {
        long bad = check_pairs(dev, check < 65536 ? 65536 : check);
        printf("\nbit identity with xdev/support/convert.h on the host, 36 pairs x %zu elements: "
               "%s (%ld mismatches)\n",
               check < 65536 ? (size_t)65536 : check, bad ? "FAILED" : "ok", bad);
        if (bad) return 1;
    }
    free(samples);
    CHECK(xdev_free(a));
    CHECK(xdev_free(b));
    return 0;
}
