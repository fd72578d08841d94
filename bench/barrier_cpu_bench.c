/* SPDX-License-Identifier: Apache-2.0 */
/* bench/barrier_cpu_bench.c - block code that meets at barriers, on the CPU
 * backend: each kernel of bench/kernels/barrier_kernels.c in the block form
 * (XDEV_KERNEL_BLOCK: the CPU runs regions as loops), in the fiber form
 * (XDEV_KERNEL_SYNC: a fiber per work-item, a switch per barrier), and the
 * same algorithm as an OpenMP loop over the blocks in this file (each block's
 * regions as plain loops over its items, shared memory a local array).
 *
 *   reduce     a 256-item tree reduction per block, 8 barriers (--n floats)
 *   stencil    a 9-point 1-D stencil through a tile with a 4-element halo
 *   transpose  a --rows x --rows matrix through a 16x17 tile
 *   sgemm      C = A B, --gemm-n square, 16x16 tiles, 2 barriers per tile
 *   scan       a 256-item inclusive scan per block (Hillis-Steele), 17 barriers
 *   barrier    the fiber form's cost per switch: a kernel of barriers only
 *
 * Every side runs in a fresh process (the program re-executes itself with
 * --side, bench_side.h), --runs times; each process times --reps runs after
 * a warm-up, on the same data (made the same way on every side), with the
 * same thread count (XDEV_CPU_THREADS = OMP_NUM_THREADS = --threads) and the
 * same compiler flags (-O3 -fno-math-errno, as xdev_add_kernels gives the
 * kernel file). The table gives each side's best time over its processes and
 * whether the three outputs are the same bits (FNV-1a of the output bytes);
 * "goal" is block <= 2x OpenMP (issue 43). With --device cuda:0 (or any
 * device) the block and fiber forms run there - on a GPU both are the same
 * source compiled by nvcc, so the goal is the block form no slower (>= 0.98x).
 *
 *   barrier_cpu_bench [--n N] [--rows R] [--gemm-n N] [--reps R] [--runs K]
 *                     [--batch L] [--threads T] [--only NAME] [--device cpu:0|cuda:0]
 * --batch: launches per timed rep, one synchronize after them (default 1 on
 * the CPU, 20 elsewhere: a GPU kernel of ~50 us timed alone measures mostly
 * the synchronize's jitter). */
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
#define OMP_FOR2 _Pragma("omp parallel for collapse(2) schedule(static)")
#else
#define OMP_FOR
#define OMP_FOR2
#endif

#include "barrier_kernels.h"
#include "bench_side.h"
#include "bench_util.h"
#include "xdev/kernel.h"
#include "xdev/xdev.h"

#define PROG "barrier_cpu_bench"
#define B1 256 /* 1-D block */
#define BK_R 4 /* as barrier_kernels.c */
#define BK_TILE 16
static const float bk_w[2 * BK_R + 1] = {0.02f, 0.05f, 0.1f, 0.2f, 0.26f, 0.2f, 0.1f, 0.05f, 0.02f};

static struct {
    long n;
    int rows, gemm_n, reps, runs, threads, batch; /* batch 0: 1 on the CPU, 20 elsewhere */
    char only[32];
    char device[32]; /* "cpu:0" (default), or e.g. "cuda:0": block vs fiber form there */
} g = {.device = "cpu:0", .n = 1L << 24, .rows = 4096, .gemm_n = 512, .reps = 5, .runs = 3};

/* ================================================================ sides */

typedef struct data {
    void *in[2]; /* inputs */
    void *out;   /* output */
    size_t out_bytes;
    long n_in; /* elements of each input */
} data_t;

static xdev_device_t g_dev; /* the side's device */

/* The same inputs on every side: xdev memory of the device (on cpu:0 host
 * memory, written in place; elsewhere filled through a host copy). */
static void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    CHECK(xdev_malloc_device(g_dev, &p, bytes));
    return p;
}

static bool on_cpu(void) {
    return strncmp(g.device, "cpu", 3) == 0;
}

static void make_data(const char *k, data_t *d) {
    long n = g.n;
    memset(d, 0, sizeof *d);
    if (strcmp(k, "transpose") == 0) n = (long)g.rows * g.rows;
    if (strcmp(k, "sgemm") == 0) n = (long)g.gemm_n * g.gemm_n;
    d->n_in = n;
    int nin = strcmp(k, "sgemm") == 0 ? 2 : 1;
    void *h = malloc((size_t)n * 4);
    for (int j = 0; j < nin; j++) {
        d->in[j] = cpu_alloc((size_t)n * 4);
        void *w = on_cpu() ? d->in[j] : h;
        uint32_t s = 12345u + (uint32_t)j;
        for (long i = 0; i < n; i++) {
            s = s * 1664525u + 1013904223u;
            if (strcmp(k, "scan") == 0)
                ((unsigned *)w)[i] = s >> 24;
            else /* small multiples of 1/64: sums stay exact for a while, not for ever */
                ((float *)w)[i] = (float)((int)(s >> 25) - 64) / 64.0f;
        }
        if (!on_cpu()) CHECK(xdev_memcpy(d->in[j], h, (size_t)n * 4));
    }
    free(h);
    d->out_bytes = strcmp(k, "reduce") == 0 ? (size_t)((n + B1 - 1) / B1) * 4 : (size_t)n * 4;
    d->out = cpu_alloc(d->out_bytes);
    CHECK(xdev_memset_async(d->out, 0, d->out_bytes, NULL));
    CHECK(xdev_device_synchronize(g_dev));
}

/* ------------------------------------------------ the OpenMP anchors */

static void reduce_omp(long n, const float *x, float *out) {
    long nb = (n + B1 - 1) / B1;
    OMP_FOR
    for (long b = 0; b < nb; b++) {
        float part[B1];
        for (int t = 0; t < B1; t++)
            part[t] = b * B1 + t < n ? x[b * B1 + t] : 0.0f;
        for (int s = B1 / 2; s > 0; s /= 2)
            for (int t = 0; t < s; t++)
                part[t] += part[t + s];
        out[b] = part[0];
    }
}

static void stencil_omp(long n, const float *x, float *y) {
    long nb = (n + B1 - 1) / B1;
    OMP_FOR
    for (long b = 0; b < nb; b++) {
        float tile[B1 + 2 * BK_R];
        for (int t = 0; t < B1; t++) {
            long i = b * B1 + t;
            tile[t + BK_R] = i < n ? x[i] : 0.0f;
            if (t < BK_R) {
                tile[t] = i - BK_R >= 0 ? x[i - BK_R] : 0.0f;
                tile[t + B1 + BK_R] = i + B1 < n ? x[i + B1] : 0.0f;
            }
        }
        for (int t = 0; t < B1; t++) {
            long i = b * B1 + t;
            float s = 0.0f;
            for (int k = 0; k <= 2 * BK_R; k++)
                s += bk_w[k] * tile[t + k];
            if (i < n) y[i] = s;
        }
    }
}

static void transpose_omp(int rows, int cols, const float *a, float *at) {
    OMP_FOR2
    for (int by = 0; by < rows / BK_TILE; by++)
        for (int bx = 0; bx < cols / BK_TILE; bx++) {
            float tile[BK_TILE * (BK_TILE + 1)];
            for (int ty = 0; ty < BK_TILE; ty++)
                for (int tx = 0; tx < BK_TILE; tx++)
                    tile[ty * (BK_TILE + 1) + tx] =
                        a[(long)(by * BK_TILE + ty) * cols + bx * BK_TILE + tx];
            for (int ty = 0; ty < BK_TILE; ty++)
                for (int tx = 0; tx < BK_TILE; tx++)
                    at[(long)(bx * BK_TILE + ty) * rows + by * BK_TILE + tx] =
                        tile[tx * (BK_TILE + 1) + ty];
        }
}

static void sgemm_omp(int n, const float *a, const float *b, float *c) {
    OMP_FOR2
    for (int by = 0; by < n / BK_TILE; by++)
        for (int bx = 0; bx < n / BK_TILE; bx++) {
            float as[BK_TILE * BK_TILE], bs[BK_TILE * BK_TILE], acc[BK_TILE * BK_TILE];
            for (int t = 0; t < BK_TILE * BK_TILE; t++)
                acc[t] = 0.0f;
            for (int t0 = 0; t0 < n; t0 += BK_TILE) {
                for (int ty = 0; ty < BK_TILE; ty++)
                    for (int tx = 0; tx < BK_TILE; tx++) {
                        as[ty * BK_TILE + tx] = a[(long)(by * BK_TILE + ty) * n + t0 + tx];
                        bs[ty * BK_TILE + tx] = b[(long)(t0 + ty) * n + bx * BK_TILE + tx];
                    }
                for (int ty = 0; ty < BK_TILE; ty++)
                    for (int tx = 0; tx < BK_TILE; tx++) {
                        float s = acc[ty * BK_TILE + tx];
                        for (int k = 0; k < BK_TILE; k++)
                            s += as[ty * BK_TILE + k] * bs[k * BK_TILE + tx];
                        acc[ty * BK_TILE + tx] = s;
                    }
            }
            for (int ty = 0; ty < BK_TILE; ty++)
                for (int tx = 0; tx < BK_TILE; tx++)
                    c[(long)(by * BK_TILE + ty) * n + bx * BK_TILE + tx] = acc[ty * BK_TILE + tx];
        }
}

static void scan_omp(long n, const unsigned *x, unsigned *y) {
    long nb = (n + B1 - 1) / B1;
    OMP_FOR
    for (long b = 0; b < nb; b++) {
        unsigned buf[B1], add[B1];
        for (int t = 0; t < B1; t++)
            buf[t] = b * B1 + t < n ? x[b * B1 + t] : 0u;
        for (int off = 1; off < B1; off *= 2) {
            for (int t = 0; t < B1; t++)
                add[t] = t >= off ? buf[t - off] : 0u;
            for (int t = 0; t < B1; t++)
                buf[t] += add[t];
        }
        for (int t = 0; t < B1; t++)
            if (b * B1 + t < n) y[b * B1 + t] = buf[t];
    }
}

static void run_omp(const char *k, data_t *d) {
    if (strcmp(k, "reduce") == 0) reduce_omp(d->n_in, d->in[0], d->out);
    if (strcmp(k, "stencil") == 0) stencil_omp(d->n_in, d->in[0], d->out);
    if (strcmp(k, "transpose") == 0) transpose_omp(g.rows, g.rows, d->in[0], d->out);
    if (strcmp(k, "sgemm") == 0) sgemm_omp(g.gemm_n, d->in[0], d->in[1], d->out);
    if (strcmp(k, "scan") == 0) scan_omp(d->n_in, d->in[0], d->out);
}

/* ------------------------------------------------------ the xdev sides */

/* `launches` launches of the kernel, then one synchronize: on a GPU a kernel
 * of ~50 us timed alone is mostly launch and synchronize latency, whose
 * jitter (a few us) decided the block-vs-fiber ratio; a batch measures the
 * kernels. Every launch writes the same output from the same input. */
static void run_xdev(xdev_kernel_t kern, const char *k, data_t *d, xdev_stream_t s, int launches) {
    xdev_launch_config_t c = {.grid = {1, 1, 1}, .block = {B1, 1, 1}, .stream = s};
    long n = d->n_in;
    const float *fa = d->in[0], *fb = d->in[1];
    const unsigned *ua = d->in[0];
    float *fo = d->out;
    unsigned *uo = d->out;
    if (strcmp(k, "transpose") == 0 || strcmp(k, "sgemm") == 0) {
        int r = strcmp(k, "sgemm") == 0 ? g.gemm_n : g.rows;
        c.grid = (xdev_dim3_t){(unsigned)(r / BK_TILE), (unsigned)(r / BK_TILE), 1};
        c.block = (xdev_dim3_t){BK_TILE, BK_TILE, 1};
        for (int i = 0; i < launches; i++) {
            if (k[0] == 't')
                CHECK(XDEV_LAUNCH(kern, &c, r, r, fa, fo));
            else
                CHECK(XDEV_LAUNCH(kern, &c, r, fa, fb, fo));
        }
    } else {
        c.grid.x = (unsigned)((n + B1 - 1) / B1);
        for (int i = 0; i < launches; i++) {
            if (strcmp(k, "scan") == 0)
                CHECK(XDEV_LAUNCH(kern, &c, n, ua, uo));
            else
                CHECK(XDEV_LAUNCH(kern, &c, n, fa, fo));
        }
    }
    CHECK(xdev_stream_synchronize(s));
}

/* FNV-1a over the output's bytes. */
static uint64_t fnv(const void *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* The fiber form's cost per switch: bk_barriers with `rounds` barriers per
 * work-item, 256 blocks of 256, on one thread, less the same with none. */
static void side_barrier(void) {
    xdev_module_t m;
    xdev_kernel_t kern;
    xdev_stream_t s;
    CHECK(xdev_module_load(xdev_cpu(0), barrier_kernels_bundle(), &m));
    CHECK(xdev_module_get_kernel(m, "bk_barriers", &kern));
    CHECK(xdev_stream_create(xdev_cpu(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    int *out = cpu_alloc(256 * sizeof(int));
    xdev_launch_config_t c = {.grid = {256, 1, 1}, .block = {B1, 1, 1}, .stream = s};
    double best[2] = {1e30, 1e30};
    const int rounds[2] = {0, 100};
    for (int r = -1; r < g.reps; r++)
        for (int j = 0; j < 2; j++) {
            double t0 = now_ns();
            int rj = rounds[j];
            CHECK(XDEV_LAUNCH(kern, &c, rj, out));
            CHECK(xdev_stream_synchronize(s));
            double t = now_ns() - t0;
            if (r >= 0 && t < best[j]) best[j] = t;
        }
    printf("@switch %.3f\n", (best[1] - best[0]) / (256.0 * B1 * rounds[1]));
    CHECK(xdev_module_unload(m));
}

static void side(const char *spec) {
    char k[32];
    snprintf(k, sizeof k, "%s", spec);
    char *form = strchr(k, ':');
    if (form == NULL) {
        fprintf(stderr, PROG ": bad side '%s'\n", spec);
        exit(2);
    }
    *form++ = '\0';
    CHECK(xdev_init());
    CHECK(xdev_device_parse(g.device, &g_dev));
    if (strcmp(k, "barrier") == 0) {
        side_barrier();
        return;
    }
#ifndef _OPENMP
    if (strcmp(form, "omp") == 0) {
        printf("@skip\n");
        return;
    }
#endif
    data_t d;
    make_data(k, &d);
    xdev_module_t m = NULL;
    xdev_kernel_t kern = NULL;
    xdev_stream_t s = NULL;
    bool omp = strcmp(form, "omp") == 0;
    if (!omp) {
        char name[80];
        snprintf(name, sizeof name, "bk_%s%s", k, strcmp(form, "fiber") == 0 ? "_fiber" : "");
        CHECK(xdev_module_load(g_dev, barrier_kernels_bundle(), &m));
        CHECK(xdev_module_get_kernel(m, name, &kern));
        CHECK(xdev_stream_create(g_dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
    }
    double best = 1e30;
    for (int r = -1; r < g.reps; r++) {
        double t0 = now_ns();
        if (omp)
            run_omp(k, &d);
        else
            run_xdev(kern, k, &d, s, g.batch);
        double t = (now_ns() - t0) * 1e-6 / (omp ? 1 : g.batch);
        if (r >= 0 && t < best) best = t;
    }
    void *h = malloc(d.out_bytes);
    CHECK(xdev_memcpy(h, d.out, d.out_bytes));
    printf("@time %.4f\n@hash %016llx\n", best, (unsigned long long)fnv(h, d.out_bytes));
    free(h);
    if (m != NULL) CHECK(xdev_module_unload(m));
}

/* =============================================================== parent */

typedef struct result {
    double ms; /* best over the processes; 0: none */
    double sw; /* barrier: ns per switch */
    char hash[17];
    bool skipped;
} result_t;

static void on_line(void *ctx, const char *line) {
    result_t *r = ctx;
    double v;
    char h[17];
    if (sscanf(line, "time %lf", &v) == 1 && (r->ms == 0 || v < r->ms)) r->ms = v;
    if (sscanf(line, "switch %lf", &v) == 1 && (r->sw == 0 || v < r->sw)) r->sw = v;
    if (sscanf(line, "hash %16s", h) == 1) snprintf(r->hash, sizeof r->hash, "%s", h);
    if (strncmp(line, "skip", 4) == 0) r->skipped = true;
}

static bool run(const char *spec, int threads, result_t *r) {
    char nb[32], rb[32], gb[32], reps[32], bb[32], tb[48], ob[48];
    snprintf(nb, sizeof nb, "%ld", g.n);
    snprintf(rb, sizeof rb, "%d", g.rows);
    snprintf(gb, sizeof gb, "%d", g.gemm_n);
    snprintf(reps, sizeof reps, "%d", g.reps);
    snprintf(bb, sizeof bb, "%d", g.batch);
    snprintf(tb, sizeof tb, "XDEV_CPU_THREADS=%d", threads);
    snprintf(ob, sizeof ob, "OMP_NUM_THREADS=%d", threads);
    char *argv[] = {PROG, "--side", (char *)spec, "--n",     nb, "--rows",   rb,       "--gemm-n",
                    gb,   "--reps", reps,         "--batch", bb, "--device", g.device, NULL};
    const char *over[] = {tb, ob, NULL};
    char **envp = bench_env_with(over);
    memset(r, 0, sizeof *r);
    bool ok = true;
    for (int i = 0; i < g.runs && ok; i++)
        ok = bench_run_side(PROG, "/proc/self/exe", spec, argv, envp, on_line, r);
    free(envp);
    return ok;
}

int main(int argc, char **argv) {
    const char *side_spec = NULL;
    g.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            fprintf(stderr, PROG ": %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--side") == 0)
            side_spec = v;
        else if (strcmp(a, "--n") == 0)
            g.n = atol(v);
        else if (strcmp(a, "--rows") == 0)
            g.rows = atoi(v);
        else if (strcmp(a, "--gemm-n") == 0)
            g.gemm_n = atoi(v);
        else if (strcmp(a, "--reps") == 0)
            g.reps = atoi(v);
        else if (strcmp(a, "--batch") == 0)
            g.batch = atoi(v);
        else if (strcmp(a, "--runs") == 0)
            g.runs = atoi(v);
        else if (strcmp(a, "--threads") == 0)
            g.threads = atoi(v);
        else if (strcmp(a, "--device") == 0)
            snprintf(g.device, sizeof g.device, "%s", v);
        else if (strcmp(a, "--only") == 0)
            snprintf(g.only, sizeof g.only, "%s", v);
        else {
            fprintf(stderr, PROG ": unknown option %s\n", a);
            return 2;
        }
    }
    if (g.n < B1 || g.rows % BK_TILE || g.gemm_n % BK_TILE || g.rows < BK_TILE ||
        g.gemm_n < BK_TILE || g.reps < 1 || g.runs < 1 || g.threads < 1 || g.batch < 0) {
        fprintf(stderr, PROG ": --n >= 256; --rows, --gemm-n multiples of 16; counts >= 1\n");
        return 2;
    }
    if (g.batch == 0) g.batch = on_cpu() ? 1 : 20;
    if (side_spec != NULL) {
        side(side_spec);
        return 0;
    }
    printf("%s: %s, %d threads (XDEV_CPU_THREADS = OMP_NUM_THREADS), best of %d processes x %d "
           "reps of %d launch%s + 1 synchronize%s\n\n",
           PROG, g.device, g.threads, g.runs, g.reps, g.batch, g.batch == 1 ? "" : "es",
           on_cpu() ? "" : " (not the CPU: block vs fiber form, both GPU code; no OpenMP)");
    if (on_cpu()) {
        printf("| kernel    | OpenMP ms | block ms | fiber ms | block/OpenMP | fiber/OpenMP | same "
               "bits | goal (block <= 2x) |\n");
        printf(
            "|-----------|----------:|---------:|---------:|-------------:|-------------:|-------"
            "----|--------------------|\n");
    } else {
        printf("| kernel    | block ms | fiber ms | block speed / fiber's | same bits | goal (>= "
               "0.98x) |\n");
        printf("|-----------|---------:|---------:|----------------------:|-----------|------------"
               "----|\n");
    }
    const char *names[] = {"reduce", "stencil", "transpose", "sgemm", "scan"};
    bool all = true, failed = false;
    for (int i = 0; i < 5; i++) {
        if (g.only[0] && strcmp(g.only, names[i]) != 0) continue;
        result_t r[3] = {{.skipped = true}};
        const char *forms[] = {"omp", "block", "fiber"};
        for (int f = on_cpu() ? 0 : 1; f < 3; f++) {
            char spec[48];
            snprintf(spec, sizeof spec, "%s:%s", names[i], forms[f]);
            if (!run(spec, g.threads, &r[f])) failed = true;
        }
        bool same = strcmp(r[1].hash, r[2].hash) == 0 &&
                    (r[0].skipped || strcmp(r[0].hash, r[1].hash) == 0);
        bool met = on_cpu() ? !r[0].skipped && r[0].ms > 0 && r[1].ms <= 2.0 * r[0].ms
                            : r[2].ms > 0 && r[1].ms <= r[2].ms / 0.98; /* GPU: no slower */
        all = all && met && same;
        if (!on_cpu()) { /* a GPU: the two forms of the same source, nvcc's code */
            printf("| %-9s | %8.4f | %8.4f | %20.3fx | %-9s | %-14s |\n", names[i], r[1].ms,
                   r[2].ms, r[1].ms > 0 ? r[2].ms / r[1].ms : 0.0, same ? "yes" : "NO",
                   met ? "met" : "NOT met");
            continue;
        }
        printf("| %-9s | %9.2f | %8.2f | %8.1f | %11.2fx | %11.0fx | %-9s | %-18s |\n", names[i],
               r[0].ms, r[1].ms, r[2].ms, r[0].ms > 0 ? r[1].ms / r[0].ms : 0.0,
               r[0].ms > 0 ? r[2].ms / r[0].ms : 0.0, same ? "yes" : "NO",
               r[0].skipped ? "no OpenMP"
               : met        ? "met"
                            : "NOT met");
    }
    if (on_cpu() && (!g.only[0] || strcmp(g.only, "barrier") == 0)) {
        result_t r;
        if (run("barrier:fiber", 1, &r))
            printf("\nfiber form, one thread: %.2f ns per work-item per barrier (one switch)\n",
                   r.sw);
        else
            failed = true;
    }
    if (!g.only[0] || strcmp(g.only, "barrier") != 0)
        printf("\ngoal: every block-form kernel %s, same bits: %s\n",
               on_cpu() ? "<= 2x OpenMP" : "as fast as the fiber form's GPU code (>= 0.98x)",
               all ? "met" : "NOT met");
    return failed ? 1 : 0;
}
