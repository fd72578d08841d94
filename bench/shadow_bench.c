/* SPDX-License-Identifier: Apache-2.0 */
/* bench/shadow_bench.c - what shadow execution (XDEV_SHADOW=cpu) costs per
 * call: each loop enqueues one kind of op on a stream of the current device
 * of the default backend, then synchronizes, and the time per call is
 * printed (the median of --reps batches of --ops calls; the synchronize is
 * inside the timing, so that the work is counted whether it ran at once,
 * under the shadow, or after the enqueue).
 * The settings come from the environment, so one run per setting compares
 * them (docs/observability.md has the table):
 *
 *   shadow_bench [--ops 500] [--reps 9]
 *   XDEV_SHADOW=cpu shadow_bench
 *   XDEV_SHADOW=cpu XDEV_SHADOW_COMPARE=sync shadow_bench */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "xdev/xdev.h"

typedef struct ctx {
    xdev_stream_t s;
    void *a, *b, *big, *m[3], *g[3];
    void *host;
    long ops;
} ctx_t;

static void settle(void *arg) {
    CHECK(xdev_stream_synchronize(((ctx_t *)arg)->s));
}

static void b_memset(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_memset_async(c->a, (int)i, 256, c->s));
    settle(c);
}

static void b_fill(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_fill_async(c->a, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), 64, c->s));
    settle(c);
}

static void b_copy(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_memcpy_async(c->b, c->a, 256, c->s));
    settle(c);
}

static void b_h2d(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_memcpy_async(c->b, c->host, 4096, c->s));
    settle(c);
}

static void b_gemm8(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 8, 8, 8, 1.0, c->m[0], 8,
                        c->m[1], 8, 0.0, c->m[2], 8, c->s));
    settle(c);
}

static void b_gemm128(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops / 10 + 1; i++)
        CHECK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 128, 128, 128, 1.0, c->g[0],
                        128, c->g[1], 128, 0.0, c->g[2], 128, c->s));
    settle(c);
}

static void b_big(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops / 10 + 1; i++)
        CHECK(xdev_memset_async(c->big, (int)i, 1 << 20, c->s));
    settle(c);
}

static void b_rng(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops / 10 + 1; i++)
        CHECK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, c->big, 1 << 16, c->s));
    settle(c);
}

static const struct {
    const char *name;
    void (*fn)(void *);
    int per; /* calls per batch: ops / per */
} g_benches[] = {
    {"memset 256 B", b_memset, 1},
    {"fill 64 x f32", b_fill, 1},
    {"copy 256 B device to device", b_copy, 1},
    {"copy 4 KiB host to device", b_h2d, 1},
    {"GEMM 8x8x8 f32", b_gemm8, 1},
    {"GEMM 128x128x128 f32", b_gemm128, 10},
    {"memset 1 MiB", b_big, 10},
    {"random fill 64 Ki x f32", b_rng, 10},
};

int main(int argc, char **argv) {
    long ops = 500;
    int reps = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--ops") == 0) ops = atol(argv[i + 1]);
        if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    }
    if (ops < 10 || reps < 1) {
        fprintf(stderr, "usage: shadow_bench [--ops N>=10] [--reps N>=1]\n");
        return 2;
    }
    ctx_t c = {.ops = ops};
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &c.s));
    CHECK(xdev_malloc(&c.a, 4096));
    CHECK(xdev_malloc(&c.b, 4096));
    CHECK(xdev_malloc(&c.big, 1 << 20));
    CHECK(xdev_host_alloc(&c.host, 4096));
    memset(c.host, 1, 4096);
    for (int i = 0; i < 3; i++) {
        CHECK(xdev_malloc(&c.m[i], 8 * 8 * 4));
        CHECK(xdev_memset_async(c.m[i], 0, 8 * 8 * 4, c.s));
        CHECK(xdev_malloc(&c.g[i], 128 * 128 * 4));
        CHECK(xdev_memset_async(c.g[i], 0, 128 * 128 * 4, c.s));
    }
    CHECK(xdev_synchronize());
    const char *cmp = getenv("XDEV_SHADOW_COMPARE");
    printf("shadow %s%s%s\n", xdev_shadow_enabled() ? "on" : "off",
           xdev_shadow_enabled() ? ", compare " : "",
           xdev_shadow_enabled() ? (cmp != NULL && cmp[0] ? cmp : "op") : "");
    double *samples = malloc((size_t)reps * sizeof *samples);
    if (samples == NULL) return 1;
    printf("%-34s %12s\n", "op", "us per call");
    for (size_t i = 0; i < sizeof g_benches / sizeof g_benches[0]; i++) {
        long calls = g_benches[i].per == 1 ? ops : ops / g_benches[i].per + 1;
        bench_stats_t s = bench_batches(g_benches[i].fn, NULL, &c, calls, reps, samples);
        printf("%-34s %12.2f\n", g_benches[i].name, s.median / 1000.0);
    }
    printf("reports %llu\n", (unsigned long long)xdev_shadow_report_count());
    free(samples);
    CHECK(xdev_synchronize());
    for (int i = 0; i < 3; i++) {
        CHECK(xdev_free(c.m[i]));
        CHECK(xdev_free(c.g[i]));
    }
    CHECK(xdev_free(c.a));
    CHECK(xdev_free(c.b));
    CHECK(xdev_free(c.big));
    CHECK(xdev_host_free(c.host));
    CHECK(xdev_stream_destroy(c.s));
    return 0;
}
