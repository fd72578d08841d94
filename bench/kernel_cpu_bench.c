/* SPDX-License-Identifier: Apache-2.0 */
/* bench/kernel_cpu_bench.c - kernels on the CPU backend against what a C
 * programmer writes by hand: a dialect kernel (bench/kernels/bench_kernels.c,
 * launched through xdev) vs a `#pragma omp parallel for` loop in this file.
 *
 *   (a) STREAM triad a[i] = b[i] + s*c[i] on --n floats (2^25), both sides
 *       on arrays from xdev_malloc_device on cpu:0, first touched by their
 *       own threads; the best and median of --reps (10) after a warm-up;
 *       two rounds, the sides interleaved; (b) the ratio of the two.
 *   (c) the machine's memory bandwidth: OpenMP copy and read loops on the
 *       same kind of arrays, so the triad can be given as a share of it.
 *   (d) a compute-bound kernel (kb_poly: --iters dependent multiply-adds per
 *       element) with XDEV_CPU_THREADS = 1, 2, 4, ..., the online cores, and
 *       the same loop with OMP_NUM_THREADS = the same counts: scaling.
 *   (e) the cost of an empty launch: enqueue only (batches, synchronize
 *       outside the timing) and enqueue + synchronize round trips (1, 64
 *       and 4096 blocks; 4096 also after 200 us idle, when the pool's
 *       workers sleep and the launch wakes them); and of a
 *       4-argument kernel with 2 pointers, with XDEV_LAUNCH_CHECKS=full and
 *       =basic (each a process), which shows what the pointer checks cost.
 *
 * Fairness: both sides use the same timer (bench_util.h's CLOCK_MONOTONIC),
 * the same arrays' kind, the same thread count (the parent sets
 * XDEV_CPU_THREADS and OMP_NUM_THREADS alike; no side pins threads) and the
 * same compiler flags (-O3, as xdev_add_kernels gives the kernel file). Each
 * side runs in a fresh process: the program re-executes itself with --side
 * (posix_spawn of /proc/self/exe), reads the child's "@key values" lines and
 * prints the tables. The OpenMP sides need a build with OpenMP (CMake's
 * find_package(OpenMP)); without it they are skipped, saying so.
 *
 *   kernel_cpu_bench [--n N] [--reps R] [--threads T] [--block B]
 *                    [--poly-n N] [--iters K] [--ops N]
 *
 * Bytes counted as STREAM does: triad 24 B per element (two reads, one
 * write), copy 16 B, read 4 B; the write-allocate read of a normal store
 * is not counted (with it, triad moves 32 B and copy 24 B). GB = 1e9 B. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, posix_spawn */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#define OMP_FOR _Pragma("omp parallel for schedule(static)")
#define OMP_FOR_SUM _Pragma("omp parallel for simd schedule(static) reduction(+ : sum)")
#else
#define OMP_FOR
#define OMP_FOR_SUM
#endif

#include "bench_kernels.h"
#include "bench_side.h"
#include "bench_util.h"
#include "xdev/kernel.h"
#include "xdev/xdev.h"

#define PROG "kernel_cpu_bench"

typedef struct opts {
    long n;      /* triad / bandwidth elements */
    int reps;    /* timed repetitions */
    int threads; /* XDEV_CPU_THREADS = OMP_NUM_THREADS for (a) and (b) */
    int block;   /* work-items per block of the kernels */
    long poly_n; /* elements of the compute-bound kernel */
    int iters;   /* its multiply-adds per element */
    long ops;    /* launches per batch in (d) */
    char side[32];
} opts_t;

static opts_t g_opt = {
    .n = 1L << 25, .reps = 10, .block = 256, .poly_n = 1L << 18, .iters = 256, .ops = 10000};

/* ============================================================ child sides */

/* Best and median of v[0..n) seconds, as "@key best median". */
static void report_times(const char *key, double *v, int n) {
    bench_stats_t s = bench_stats(v, n);
    printf("@%s %.9f %.9f\n", key, s.min, s.median);
}

static bool openmp_or_skip(void) {
#ifdef _OPENMP
    return true;
#else
    printf("@skip built without OpenMP (CMake found none): the OpenMP side is not run\n");
    return false;
#endif
}

static int omp_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* An array of n floats from xdev's allocator on cpu:0 (both sides' kind). */
static float *cpu_array(long n) {
    void *p = NULL;
    CHECK(xdev_malloc_device(xdev_cpu(0), &p, (size_t)n * sizeof(float)));
    return p;
}

/* Every element must equal `want` (the triad's 1 + 3*2 = 7 exactly). */
static void verify_all(const char *what, const float *a, long n, float want) {
    for (long i = 0; i < n; i++)
        if (a[i] != want) {
            fprintf(stderr, PROG ": %s: a[%ld] = %g, expected %g\n", what, i, (double)a[i],
                    (double)want);
            exit(1);
        }
}

/* Copy (floats) and read (a sum of 32-bit integers: one-cycle adds that
 * vectorise without reassociating floats, so the loop waits on memory, not
 * on an add chain). */
static void side_bandwidth(void) {
    if (!openmp_or_skip()) return;
    long n = g_opt.n;
    float *a = cpu_array(n), *b = cpu_array(n);
    uint32_t *u = (uint32_t *)cpu_array(n);
    OMP_FOR
    for (long i = 0; i < n; i++) {
        a[i] = 0.0f;
        b[i] = 1.0f;
        u[i] = 1u;
    }
    double *tc = malloc(sizeof(double) * (size_t)g_opt.reps);
    double *tr = malloc(sizeof(double) * (size_t)g_opt.reps);
    uint32_t sum = 0;
    for (int r = -1; r < g_opt.reps; r++) { /* r = -1: warm-up */
        double t0 = now_ns();
        OMP_FOR
        for (long i = 0; i < n; i++)
            a[i] = b[i];
        double t1 = now_ns();
        sum = 0;
        OMP_FOR_SUM
        for (long i = 0; i < n; i++)
            sum += u[i];
        double t2 = now_ns();
        if (r >= 0) {
            tc[r] = (t1 - t0) * 1e-9;
            tr[r] = (t2 - t1) * 1e-9;
        }
    }
    verify_all("OpenMP copy", a, n, 1.0f);
    if (sum != (uint32_t)n) {
        fprintf(stderr, PROG ": read loop summed %u, expected %u\n", sum, (uint32_t)n);
        exit(1);
    }
    printf("@threads %d\n", omp_threads());
    report_times("copy", tc, g_opt.reps);
    report_times("read", tr, g_opt.reps);
    free(tc);
    free(tr);
    CHECK(xdev_free(a));
    CHECK(xdev_free(b));
    CHECK(xdev_free(u));
}

static void side_triad_omp(void) {
    if (!openmp_or_skip()) return;
    long n = g_opt.n;
    float *a = cpu_array(n), *b = cpu_array(n), *c = cpu_array(n);
    OMP_FOR
    for (long i = 0; i < n; i++) {
        a[i] = 0.0f;
        b[i] = 1.0f;
        c[i] = 2.0f;
    }
    const float s = 3.0f;
    double *t = malloc(sizeof(double) * (size_t)g_opt.reps);
    for (int r = -1; r < g_opt.reps; r++) {
        double t0 = now_ns();
        OMP_FOR
        for (long i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
        if (r >= 0) t[r] = (now_ns() - t0) * 1e-9;
    }
    verify_all("OpenMP triad", a, n, 7.0f);
    printf("@threads %d\n", omp_threads());
    report_times("triad", t, g_opt.reps);
    free(t);
    CHECK(xdev_free(a));
    CHECK(xdev_free(b));
    CHECK(xdev_free(c));
}

/* The xdev sides: the default device (cpu:0 unless XDEV_BACKEND says
 * otherwise), the bundle's module, one created stream. */
typedef struct xside {
    xdev_device_t dev;
    xdev_module_t mod;
    xdev_stream_t stream;
} xside_t;

static xside_t xside_open(void) {
    xside_t x;
    CHECK(xdev_init());
    CHECK(xdev_get_device(&x.dev));
    char name[XDEV_DEVICE_NAME_MAX];
    xdev_device_properties_t props;
    CHECK(xdev_device_format(x.dev, name, sizeof name));
    CHECK(xdev_get_device_properties(x.dev, &props));
    printf("@device %s (%s)\n", name, props.name);
    CHECK(xdev_set_device(x.dev));
    CHECK(xdev_module_load(x.dev, bench_kernels_bundle(), &x.mod));
    CHECK(xdev_stream_create(x.dev, XDEV_STREAM_PRIORITY_NORMAL, &x.stream));
    return x;
}

static void xside_close(xside_t *x) {
    CHECK(xdev_stream_destroy(x->stream));
    CHECK(xdev_module_unload(x->mod));
}

static xdev_kernel_t kernel(const xside_t *x, const char *name) {
    xdev_kernel_t k;
    CHECK(xdev_module_get_kernel(x->mod, name, &k));
    return k;
}

static xdev_launch_config_t grid_for(const xside_t *x, long n) {
    unsigned b = (unsigned)g_opt.block;
    return (xdev_launch_config_t){
        .grid = {(unsigned)((n + b - 1) / b), 1, 1}, .block = {b, 1, 1}, .stream = x->stream};
}

static float *dev_array(const xside_t *x, long n) {
    void *p = NULL;
    CHECK(xdev_malloc_device(x->dev, &p, (size_t)n * sizeof(float)));
    return p;
}

static void fill(const xside_t *x, xdev_kernel_t k_fill, float *a, long n, float v) {
    xdev_launch_config_t cfg = grid_for(x, n);
    CHECK(XDEV_LAUNCH(k_fill, &cfg, n, a, v));
}

static void side_triad_xdev(void) {
    xside_t x = xside_open();
    xdev_kernel_t k_fill = kernel(&x, "kb_fill"), k_triad = kernel(&x, "kb_triad");
    long n = g_opt.n;
    float *a = dev_array(&x, n), *b = dev_array(&x, n), *c = dev_array(&x, n);
    fill(&x, k_fill, a, n, 0.0f);
    fill(&x, k_fill, b, n, 1.0f);
    fill(&x, k_fill, c, n, 2.0f);
    CHECK(xdev_stream_synchronize(x.stream));
    float s = 3.0f;
    xdev_launch_config_t cfg = grid_for(&x, n);
    double *t = malloc(sizeof(double) * (size_t)g_opt.reps);
    for (int r = -1; r < g_opt.reps; r++) {
        double t0 = now_ns();
        CHECK(XDEV_LAUNCH(k_triad, &cfg, n, s, a, b, c));
        CHECK(xdev_stream_synchronize(x.stream));
        if (r >= 0) t[r] = (now_ns() - t0) * 1e-9;
    }
    if (x.dev.type == XDEV_DEVICE_CPU) {
        verify_all("xdev triad", a, n, 7.0f);
    } else { /* a device's memory: check a copy */
        float *h = malloc((size_t)n * sizeof(float));
        CHECK(xdev_memcpy(h, a, (size_t)n * sizeof(float)));
        verify_all("xdev triad", h, n, 7.0f);
        free(h);
    }
    report_times("triad", t, g_opt.reps);
    free(t);
    CHECK(xdev_free(a));
    CHECK(xdev_free(b));
    CHECK(xdev_free(c));
    xside_close(&x);
}

/* kb_poly's loop, by hand (the same arithmetic: bit-identical results). */
static void poly_omp(float *xs, long n, int iters) {
    OMP_FOR
    for (long i = 0; i < n; i++) {
        float v = xs[i];
        for (int k = 0; k < iters; k++)
            v = v * 0.999f + 0.001f;
        xs[i] = v;
    }
}

static void side_poly_omp(void) {
    if (!openmp_or_skip()) return;
    long n = g_opt.poly_n;
    float *xs = cpu_array(n);
    OMP_FOR
    for (long i = 0; i < n; i++)
        xs[i] = 0.5f;
    double *t = malloc(sizeof(double) * (size_t)g_opt.reps);
    for (int r = -1; r < g_opt.reps; r++) {
        double t0 = now_ns();
        poly_omp(xs, n, g_opt.iters);
        if (r >= 0) t[r] = (now_ns() - t0) * 1e-9;
    }
    printf("@threads %d\n", omp_threads());
    printf("@value %a\n", (double)xs[n - 1]);
    report_times("poly", t, g_opt.reps);
    free(t);
    CHECK(xdev_free(xs));
}

static void side_poly_xdev(void) {
    xside_t x = xside_open();
    xdev_kernel_t k_fill = kernel(&x, "kb_fill"), k_poly = kernel(&x, "kb_poly");
    long n = g_opt.poly_n;
    int iters = g_opt.iters;
    float *xs = dev_array(&x, n);
    fill(&x, k_fill, xs, n, 0.5f);
    CHECK(xdev_stream_synchronize(x.stream));
    xdev_launch_config_t cfg = grid_for(&x, n);
    double *t = malloc(sizeof(double) * (size_t)g_opt.reps);
    for (int r = -1; r < g_opt.reps; r++) {
        double t0 = now_ns();
        CHECK(XDEV_LAUNCH(k_poly, &cfg, n, iters, xs));
        CHECK(xdev_stream_synchronize(x.stream));
        if (r >= 0) t[r] = (now_ns() - t0) * 1e-9;
    }
    float last = 0;
    CHECK(xdev_memcpy(&last, xs + n - 1, sizeof last));
    printf("@value %a\n", (double)last);
    report_times("poly", t, g_opt.reps);
    free(t);
    CHECK(xdev_free(xs));
    xside_close(&x);
}

/* (e): launches of kb_empty (and, for reference, a no-op host function)
 * timed by bench_batches; this child prints its rows itself. */
typedef struct launch_ctx {
    xside_t *x;
    xdev_kernel_t k;
    xdev_launch_config_t cfg;
    long ops;
    float *x_, *y_; /* kb_saxpy's arrays */
} launch_ctx_t;

static void noop(void *user) {
    (void)user;
}
static void b_launch(void *arg) {
    launch_ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_launch_kernel(c->k, &c->cfg, NULL, 0));
}
static void b_launch_sync(void *arg) {
    launch_ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++) {
        CHECK(xdev_launch_kernel(c->k, &c->cfg, NULL, 0));
        CHECK(xdev_stream_synchronize(c->x->stream));
    }
}
/* kb_saxpy over one block of 256: its two pointer arguments are what
 * XDEV_LAUNCH_CHECKS=full looks up (the parent runs this side with full
 * and with basic). */
static void b_saxpy(void *arg) {
    launch_ctx_t *c = arg;
    long n = 256;
    float a = 0.5f;
    for (long i = 0; i < c->ops; i++)
        CHECK(XDEV_LAUNCH(c->k, &c->cfg, n, a, c->x_, c->y_));
}
static void b_host(void *arg) {
    launch_ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_launch_host_func(c->x->stream, noop, NULL));
}
static void b_host_sync(void *arg) {
    launch_ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++) {
        CHECK(xdev_launch_host_func(c->x->stream, noop, NULL));
        CHECK(xdev_stream_synchronize(c->x->stream));
    }
}
static void settle(void *arg) {
    CHECK(xdev_stream_synchronize(((launch_ctx_t *)arg)->x->stream));
}

/* Launch + synchronize after the pool's workers went to sleep: each of
 * `per` round trips a sample follows 200 us idle (past the workers' 30 us
 * poll), which is not timed; ns per round trip, `reps` samples. */
static bench_stats_t asleep_round_trips(launch_ctx_t *c, int per, int reps, double *v) {
    const struct timespec idle = {0, 200000};
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up (workers started) */
        double sum = 0;
        for (int i = 0; i < per; i++) {
            nanosleep(&idle, NULL);
            double t0 = now_ns();
            CHECK(xdev_launch_kernel(c->k, &c->cfg, NULL, 0));
            CHECK(xdev_stream_synchronize(c->x->stream));
            sum += now_ns() - t0;
        }
        if (r >= 0) v[r] = sum / per;
    }
    return bench_stats(v, reps);
}

static void side_launch(void) {
    xside_t x = xside_open();
    const int reps = 31;
    double *v = malloc(sizeof(double) * reps);
    long ops = g_opt.ops, rt_ops = ops / 10 > 0 ? ops / 10 : 1;
    launch_ctx_t c = {.x = &x, .k = kernel(&x, "kb_empty"), .ops = ops};
    c.cfg = (xdev_launch_config_t){.grid = {1, 1, 1}, .block = {1, 1, 1}, .stream = x.stream};
    printf("%d batches; ns per call; enqueue: %ld calls a batch, synchronize after the batch, "
           "untimed; round trip: %ld calls a batch, each launch then synchronize\n",
           reps, ops, rt_ops);
    bench_table_header();
    bench_row("kb_empty 1x1, per enqueue", bench_batches(b_launch, settle, &c, ops, reps, v));
    c.ops = rt_ops;
    bench_row("kb_empty 1x1, enqueue + sync",
              bench_batches(b_launch_sync, NULL, &c, rt_ops, reps, v));
    c.cfg.grid.x = 64;
    c.ops = ops;
    bench_row("kb_empty 64x1 (pool), per enqueue",
              bench_batches(b_launch, settle, &c, ops, reps, v));
    c.ops = rt_ops;
    bench_row("kb_empty 64x1 (pool), enqueue + sync",
              bench_batches(b_launch_sync, NULL, &c, rt_ops, reps, v));
    /* More blocks than a launch tries alone: always the pool's workers. */
    c.cfg.grid.x = 4096;
    bench_row("kb_empty 4096x1 (pool), enqueue + sync",
              bench_batches(b_launch_sync, NULL, &c, rt_ops, reps, v));
    bench_row("kb_empty 4096x1, sync, pool asleep", asleep_round_trips(&c, 20, reps, v));
    c.ops = ops;
    c.k = kernel(&x, "kb_saxpy");
    c.cfg.grid.x = 1;
    c.cfg.block.x = 256;
    c.x_ = dev_array(&x, 256);
    c.y_ = dev_array(&x, 256);
    CHECK(xdev_memset_async(c.x_, 0, 256 * sizeof(float), x.stream));
    CHECK(xdev_memset_async(c.y_, 0, 256 * sizeof(float), x.stream));
    bench_row("kb_saxpy 1x256 (2 pointers), per enqueue",
              bench_batches(b_saxpy, settle, &c, ops, reps, v));
    bench_row("launch_host_func no-op, per enqueue",
              bench_batches(b_host, settle, &c, ops, reps, v));
    c.ops = rt_ops;
    bench_row("launch_host_func no-op, enqueue + sync",
              bench_batches(b_host_sync, NULL, &c, rt_ops, reps, v));
    free(v);
    CHECK(xdev_free(c.x_));
    CHECK(xdev_free(c.y_));
    xside_close(&x);
}

/* ============================================================ the parent */

#define TEXT_MAX 160

typedef struct result {
    char key[16];
    char text[TEXT_MAX]; /* the rest of the line */
    double v[4];
    int nv;
} result_t;

typedef struct child {
    result_t r[8];
    int nr;
    bool failed;
} child_t;

static const result_t *find(const child_t *c, const char *key) {
    for (int i = 0; i < c->nr; i++)
        if (strcmp(c->r[i].key, key) == 0) return &c->r[i];
    return NULL;
}

/* One "@key values..." line of a child. */
static void parse_line(child_t *c, const char *line) {
    if (c->nr == (int)(sizeof c->r / sizeof c->r[0])) return;
    result_t *r = &c->r[c->nr++];
    memset(r, 0, sizeof *r);
    const char *sp = strchr(line, ' ');
    size_t klen = sp != NULL ? (size_t)(sp - line) : strlen(line);
    if (klen >= sizeof r->key) klen = sizeof r->key - 1;
    memcpy(r->key, line, klen);
    if (sp == NULL) return;
    snprintf(r->text, sizeof r->text, "%s", sp + 1);
    r->text[strcspn(r->text, "\n")] = '\0';
    char *p = r->text, *end;
    while (r->nv < 4) {
        double d = strtod(p, &end);
        if (end == p) break;
        r->v[r->nv++] = d;
        p = end;
    }
}

static void on_line(void *ctx, const char *line) {
    parse_line(ctx, line);
}

/* Run `--side side` in a fresh process of this program, with `env` ("NAME=
 * value" strings, NULL-terminated) replacing those variables. Result lines
 * ("@...") are parsed into `out`; other output is printed as it comes. */
static void run_child(const char *side, const char *const *env, child_t *out) {
    memset(out, 0, sizeof *out);
    char nb[32], rb[16], bb[16], pb[32], ib[16], ob[32];
    snprintf(nb, sizeof nb, "%ld", g_opt.n);
    snprintf(rb, sizeof rb, "%d", g_opt.reps);
    snprintf(bb, sizeof bb, "%d", g_opt.block);
    snprintf(pb, sizeof pb, "%ld", g_opt.poly_n);
    snprintf(ib, sizeof ib, "%d", g_opt.iters);
    snprintf(ob, sizeof ob, "%ld", g_opt.ops);
    char *argv[] = {PROG, "--side",   (char *)side, "--n",     nb, "--reps", rb, "--block",
                    bb,   "--poly-n", pb,           "--iters", ib, "--ops",  ob, NULL};
    char **envp = bench_env_with(env);
    if (!bench_run_side(PROG, "/proc/self/exe", side, argv, envp, on_line, out)) out->failed = true;
    free(envp);
}

/* "NAME=value" for an int value, in caller storage. */
static const char *env_int(char *buf, size_t n, const char *name, int v) {
    snprintf(buf, n, "%s=%d", name, v);
    return buf;
}

/* A side's @skip line or failure, as a table cell; NULL when it ran. */
static const char *not_run(const child_t *c, const char *key) {
    const result_t *s = find(c, "skip");
    if (s != NULL) return "skipped";
    if (c->failed || find(c, key) == NULL) return "FAILED";
    return NULL;
}

static void print_machine(void) {
    char model[160] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':') != NULL) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f != NULL) fclose(f);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    printf(PROG ": xdev %s; %s, %ld online cores, %.1f GiB memory\n", xdev_version_string(), model,
           sysconf(_SC_NPROCESSORS_ONLN), (double)pages * (double)psize / (1 << 30));
}

/* (c) the bandwidth loops, then (a) the triad, twice, the sides interleaved, and (b). */
static void parent_triad(void) {
    char e1[48], e2[48];
    const char *env[] = {env_int(e1, sizeof e1, "OMP_NUM_THREADS", g_opt.threads),
                         env_int(e2, sizeof e2, "XDEV_CPU_THREADS", g_opt.threads), NULL};
    double bytes = 24.0 * (double)g_opt.n;
    child_t bw;
    run_child("bandwidth", env, &bw);
    const result_t *copy = find(&bw, "copy"), *read = find(&bw, "read");
    printf("\n(c) memory bandwidth: OpenMP loops on %d threads, %ld elements of 4 B an array; "
           "GB/s of the best / median of %d, counted as STREAM does, and the best counting the "
           "write-allocate read of each written line (w/ WA):\n",
           g_opt.threads, g_opt.n, g_opt.reps);
    /* The machine's bandwidth: the copy's traffic with write-allocate. */
    double machine = 0;
    if (not_run(&bw, "copy") != NULL) {
        const result_t *s = find(&bw, "skip");
        printf("  %s\n", s != NULL ? s->text : "FAILED");
    } else {
        double nb = (double)g_opt.n;
        machine = 24.0 * nb / copy->v[0] / 1e9;
        printf("| %-30s | %10s | %10s | %10s |\n", "loop", "best", "median", "w/ WA");
        printf("|--------------------------------|------------|------------|------------|\n");
        printf("| %-30s | %10.2f | %10.2f | %10.2f |\n", "copy a[i] = b[i]: 16 B (24 WA)",
               16.0 * nb / copy->v[0] / 1e9, 16.0 * nb / copy->v[1] / 1e9, machine);
        printf("| %-30s | %10.2f | %10.2f | %10.2f |\n", "read sum += u[i]: 4 B",
               4.0 * nb / read->v[0] / 1e9, 4.0 * nb / read->v[1] / 1e9,
               4.0 * nb / read->v[0] / 1e9);
    }

    printf("\n(a) STREAM triad a[i] = b[i] + s*c[i], %ld floats, 24 B per element (write-allocate "
           "not counted), %d threads a side, best / median of %d after a warm-up, GB/s; share: "
           "the best's traffic with write-allocate (32 B) over the copy's (c, w/ WA):\n",
           g_opt.n, g_opt.threads, g_opt.reps);
    printf("| %-34s | %5s | %10s | %10s | %12s |\n", "side", "round", "best", "median", "share");
    printf("|------------------------------------|-------|------------|------------|"
           "--------------|\n");
    double best[2][2] = {{0}}, med[2][2] = {{0}};
    char device[TEXT_MAX] = "";
    for (int round = 0; round < 2; round++) {
        for (int s = 0; s < 2; s++) {
            child_t c;
            run_child(s == 0 ? "triad-omp" : "triad-xdev", env, &c);
            const char *label = s == 0 ? "OpenMP loop (#pragma omp for)" : "xdev kernel kb_triad";
            const char *why = not_run(&c, "triad");
            if (why != NULL) {
                printf("| %-34s | %5d | %10s | %10s | %12s |\n", label, round + 1, why, "", "");
                continue;
            }
            const result_t *t = find(&c, "triad");
            best[s][round] = bytes / t->v[0] / 1e9;
            med[s][round] = bytes / t->v[1] / 1e9;
            char share[32] = "-";
            if (machine > 0)
                snprintf(share, sizeof share, "%.2f", best[s][round] * 32.0 / 24.0 / machine);
            printf("| %-34s | %5d | %10.2f | %10.2f | %12s |\n", label, round + 1, best[s][round],
                   med[s][round], share);
            const result_t *d = find(&c, "device");
            if (d != NULL) snprintf(device, sizeof device, "%s", d->text);
        }
    }
    for (int round = 0; round < 2; round++)
        if (best[0][round] > 0 && best[1][round] > 0)
            printf("(b) round %d: xdev / OpenMP = %.3fx (best), %.3fx (median)\n", round + 1,
                   best[1][round] / best[0][round], med[1][round] / med[0][round]);
    if (device[0] != '\0') printf("the xdev side ran on %s\n", device);
}

/* (d): scaling of kb_poly vs the OpenMP loop, each count and side a process. */
static void parent_poly(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int counts[16], nc = 0;
    for (int t = 1; t < cores && nc < 15; t *= 2)
        counts[nc++] = t;
    counts[nc++] = (int)cores;
    double flops = 2.0 * (double)g_opt.poly_n * g_opt.iters;
    printf("\n(d) compute-bound: kb_poly, %ld floats x %d dependent multiply-adds (2 flops each), "
           "best of %d, GFLOP/s; speed-up against 1 thread of the same side:\n",
           g_opt.poly_n, g_opt.iters, g_opt.reps);
    printf("| %7s | %10s | %8s | %7s | %10s | %8s | %7s | %9s |\n", "threads", "xdev ms", "GFLOP/s",
           "speedup", "OpenMP ms", "GFLOP/s", "speedup", "xdev/omp");
    printf("|---------|------------|----------|---------|------------|----------|---------|"
           "-----------|\n");
    double base[2] = {0, 0};
    char first_value[2][TEXT_MAX] = {"", ""};
    bool same = true;
    for (int i = 0; i < nc; i++) {
        double best[2] = {0, 0};
        for (int s = 0; s < 2; s++) {
            char e[48];
            const char *env[] = {
                env_int(e, sizeof e, s == 0 ? "XDEV_CPU_THREADS" : "OMP_NUM_THREADS", counts[i]),
                NULL};
            child_t c;
            run_child(s == 0 ? "poly-xdev" : "poly-omp", env, &c);
            if (not_run(&c, "poly") != NULL) continue;
            best[s] = find(&c, "poly")->v[0];
            if (base[s] == 0) base[s] = best[s];
            const result_t *v = find(&c, "value");
            if (v != NULL) {
                if (first_value[0][0] == '\0') snprintf(first_value[0], TEXT_MAX, "%s", v->text);
                if (strcmp(first_value[0], v->text) != 0) {
                    same = false;
                    snprintf(first_value[1], TEXT_MAX, "%s", v->text);
                }
            }
        }
        char cell[2][3][16];
        for (int s = 0; s < 2; s++) {
            if (best[s] > 0) {
                snprintf(cell[s][0], 16, "%.1f", best[s] * 1e3);
                snprintf(cell[s][1], 16, "%.2f", flops / best[s] / 1e9);
                snprintf(cell[s][2], 16, "%.2fx", base[s] / best[s]);
            } else {
                for (int j = 0; j < 3; j++)
                    snprintf(cell[s][j], 16, "-");
            }
        }
        char ratio[16] = "-";
        if (best[0] > 0 && best[1] > 0) snprintf(ratio, sizeof ratio, "%.3fx", best[1] / best[0]);
        printf("| %7d | %10s | %8s | %7s | %10s | %8s | %7s | %9s |\n", counts[i], cell[0][0],
               cell[0][1], cell[0][2], cell[1][0], cell[1][1], cell[1][2], ratio);
    }
    if (same && first_value[0][0] != '\0')
        printf("every run left the same value (%s): the same arithmetic on both sides\n",
               first_value[0]);
    else if (!same)
        printf("VALUES DIFFER between runs: %s vs %s\n", first_value[0], first_value[1]);
}

/* (e) twice: XDEV_LAUNCH_CHECKS=full (the default), then basic (no pointer
 * lookups), each a fresh process. */
static void parent_launch(void) {
    static const char *const checks[2] = {"full", "basic"};
    for (int i = 0; i < 2; i++) {
        printf("\n(e) launch cost on the default device, XDEV_CPU_THREADS=%d, "
               "XDEV_LAUNCH_CHECKS=%s, one fresh process:\n",
               g_opt.threads, checks[i]);
        char e[48], f[48];
        snprintf(f, sizeof f, "XDEV_LAUNCH_CHECKS=%s", checks[i]);
        const char *env[] = {env_int(e, sizeof e, "XDEV_CPU_THREADS", g_opt.threads), f, NULL};
        child_t c;
        run_child("launch", env, &c);
        const result_t *d = find(&c, "device");
        if (d != NULL) printf("(on %s)\n", d->text);
    }
}

static long parse_long(const char *flag, const char *s, long lo, long hi) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, PROG ": bad %s '%s' (%ld .. %ld)\n", flag, s, lo, hi);
        exit(2);
    }
    return v;
}

static int usage(FILE *f) {
    fprintf(f, "usage: " PROG " [--n N (2^25)] [--reps R (10)] [--threads T (online cores)]\n"
               "       [--block B (256)] [--poly-n N (2^18)] [--iters K (256)] [--ops N (10000)]\n"
               "The CPU backend's kernels against OpenMP loops, each side in a fresh process.\n");
    return f == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
    g_opt.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) return usage(stdout);
        if (i + 1 >= argc) return usage(stderr);
        const char *v = argv[++i];
        if (strcmp(a, "--n") == 0)
            g_opt.n = parse_long(a, v, 1, 1L << 34);
        else if (strcmp(a, "--reps") == 0)
            g_opt.reps = (int)parse_long(a, v, 1, 1000);
        else if (strcmp(a, "--threads") == 0)
            g_opt.threads = (int)parse_long(a, v, 1, 1024);
        else if (strcmp(a, "--block") == 0)
            g_opt.block = (int)parse_long(a, v, 1, 1024);
        else if (strcmp(a, "--poly-n") == 0)
            g_opt.poly_n = parse_long(a, v, 1, 1L << 34);
        else if (strcmp(a, "--iters") == 0)
            g_opt.iters = (int)parse_long(a, v, 1, 1 << 20);
        else if (strcmp(a, "--ops") == 0)
            g_opt.ops = parse_long(a, v, 1, 100000000L);
        else if (strcmp(a, "--side") == 0)
            snprintf(g_opt.side, sizeof g_opt.side, "%s", v);
        else
            return usage(stderr);
    }
    static const struct {
        const char *name;
        void (*fn)(void);
    } sides[] = {
        {"bandwidth", side_bandwidth},   {"triad-omp", side_triad_omp},
        {"triad-xdev", side_triad_xdev}, {"poly-omp", side_poly_omp},
        {"poly-xdev", side_poly_xdev},   {"launch", side_launch},
    };
    if (g_opt.side[0] != '\0') {
        for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++)
            if (strcmp(g_opt.side, sides[i].name) == 0) {
                sides[i].fn();
                return 0;
            }
        fprintf(stderr, PROG ": unknown side '%s'\n", g_opt.side);
        return 2;
    }
    print_machine();
    printf("each side in a fresh process; kernels: %d work-items a block; timer CLOCK_MONOTONIC "
           "around launch + stream synchronize (xdev) or the parallel loop (OpenMP)\n",
           g_opt.block);
    parent_triad();
    parent_poly();
    parent_launch();
    return 0;
}
