/* SPDX-License-Identifier: Apache-2.0 */
/* bench/prim_bench.c - the parallel primitives (xdev/primitives.h) against
 * their anchors, issue 44's goals:
 *
 * On a GPU (--device cuda:0; bench/prim_bench_gpu.c): every primitive at
 *   2^min-log2 .. 2^max-log2 elements (default 2^24 .. 2^28) - f32 sum
 *   reduce and inclusive scan, sort of u32 keys and of u32 key/value pairs,
 *   segmented f32 sum and segmented sort of u32 keys (segments of about
 *   1000 items), histogram of f32 samples in 256 even bins, select flagged,
 *   select if, unique and run-length encode - against CUB called directly
 *   on the same data (bench/gpu/prim_cub_anchor.cu); the f32 sums (reduce,
 *   scan, segmented reduce) also in deterministic mode. Goals: xdev >=
 *   0.95x CUB's speed, the deterministic reduce <= 1.25x the ordinary one's
 *   time (the scan's and the segmented reduce's are shown: the scan's
 *   several times, as xdev/primitives.h says). --prims LIST times a subset. Each side checks its
 * outputs against the host's reference once per size (the first process), and xdev's and CUB's
 * exact outputs must be the same bits: a difference prints a FAILED line. On the CPU (--device
 * cpu:0): reduce and scan bytes per second against the same run's device-to-device copy
 * (xdev_memcpy_async; bytes = read + written: reduce 4n, scan 8n, copy 8n for f32); goals reduce >=
 * 0.8x, scan >= 0.6x; --dtype f64|i32|i64 and --exclusive 1 measure the other sums (issue 44: f32,
 * f64, i32 and i64, inclusive and exclusive). Then, where the CPU backend sorts,
 * xdev_prim_sort_keys of 2^26 u32 against __gnu_parallel::sort (bench/prim_sort_anchor.cpp) on the
 * same cores (XDEV_CPU_THREADS = OMP_NUM_THREADS = --threads); goal >= 1x.
 *
 * Every side is a fresh process (bench_side.h) run --runs times; each times
 * the same data (made from the index alone: the same on every device) with
 * the same loop: one warm-up batch (on the GPU after one untimed trial
 * call), then --reps batches of calls ended by a synchronize, the best
 * batch's time per call. The deterministic sums' bits
 * are printed per size: a CPU run and a GPU run of this program on the same
 * sizes must print the same ones (issue 44: CPU == GPU bit for bit).
 * Exit status: 0; 1 when a side failed (or, on the GPU, an output was
 * wrong); 3 when an anchor side is not built (the comparison would be
 * empty: "ANCHOR MISSING" is printed).
 *
 *   prim_bench [--device cpu:0|cuda:0] [--min-log2 K] [--max-log2 K] [--reps R]
 *              [--runs K] [--threads T] [--sort-log2 K] [--dtype f32|f64|i32|i64]
 *              [--exclusive 0|1] [--prims reduce,scan,sort_keys,sort_pairs,seg_reduce,
 *              seg_sort,histogram,select_flagged,select_if,unique,rle|all] [--check 0|1]
 * (--prims and --check: the GPU run, --check 0 skipping the output checks;
 * the CPU run times its reduce, scan and sort as it always did; --dtype and
 * --exclusive: the CPU run) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, posix_spawn */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_side.h"
#include "bench_util.h"
#include "prim_anchor.h"
#include "prim_bench.h"
#include "xdev/primitives.h"
#include "xdev/xdev.h"

enum { OP_REDUCE, OP_SCAN, OP_COPY, OP_SORT, NOPS };
static const char *const op_names[NOPS] = {"reduce", "scan", "copy", "sort"};
enum { S_XDEV, S_DET, S_CUB, S_GNU, NSIDES };
static const char *const side_names[NSIDES] = {"xdev", "det", "cub", "gnu"};

struct prim_opts opt = {.device = "cpu:0",
                        .min_log2 = 24,
                        .max_log2 = 28,
                        .reps = 10,
                        .runs = 3,
                        .sort_log2 = 26,
                        .dtype = "f32",
                        .prims = (1u << PRIM_COUNT) - 1,
                        .check = 1};

static xdev_dtype_t bench_dtype(void) {
    return strcmp(opt.dtype, "f64") == 0   ? XDEV_DTYPE_F64
           : strcmp(opt.dtype, "i32") == 0 ? XDEV_DTYPE_I32
           : strcmp(opt.dtype, "i64") == 0 ? XDEV_DTYPE_I64
                                           : XDEV_DTYPE_F32;
}
static size_t esize(void) {
    return xdev_dtype_size(bench_dtype());
}

static bool on_cpu(void) {
    return strncmp(opt.device, "cpu", 3) == 0;
}

float *make_f32(size_t n) {
    float *h = malloc(n * sizeof *h);
    if (h == NULL) {
        fprintf(stderr, PROG ": no host memory for %zu floats\n", n);
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((double)(mix(i) % 2000001u) / 1e6 - 1.0);
    return h;
}

/* The input of --dtype: make_f32's values, converted (integers: in
 * [-1000000, 1000000]). */
static void *make_input(size_t n) {
    float *f = make_f32(n);
    if (bench_dtype() == XDEV_DTYPE_F32) return f;
    void *h = malloc(n * 8);
    if (h == NULL) {
        fprintf(stderr, PROG ": no host memory for %zu elements\n", n);
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        if (bench_dtype() == XDEV_DTYPE_F64) ((double *)h)[i] = f[i];
        if (bench_dtype() == XDEV_DTYPE_I32) ((int32_t *)h)[i] = (int32_t)(f[i] * 1e6f);
        if (bench_dtype() == XDEV_DTYPE_I64) ((int64_t *)h)[i] = (int64_t)(f[i] * 1e6f);
    }
    free(f);
    return h;
}

/* ================================================================ sides */

/* The one timing loop (prim_bench.h). */
double time_best(const timed_t *t) {
    double best = 1e300;
    for (int r = -1; r < opt.reps; r++) {
        if (t->prep != NULL && t->prep(t->ctx) != 0) exit(1);
        double t0 = now_ns();
        for (int k = 0; k < t->calls; k++)
            if (t->call(t->ctx) != 0) exit(1);
        if (t->sync(t->ctx) != 0) exit(1);
        double ns = (now_ns() - t0) / t->calls;
        if (r >= 0 && ns < best) best = ns;
    }
    return best;
}

typedef struct xctx {
    void *in, *out, *aux;
    size_t n;
    int op;
    xdev_stream_t s;
} xctx_t;

static int x_call(void *p) {
    xctx_t *c = p;
    xdev_status_t st = XDEV_SUCCESS;
    if (c->op == OP_REDUCE)
        st = xdev_prim_reduce(c->in, bench_dtype(), c->n, XDEV_PRIM_SUM, c->out, c->s);
    else if (c->op == OP_SCAN)
        st = xdev_prim_scan(c->in, bench_dtype(), c->n, XDEV_PRIM_SUM,
                            opt.exclusive ? XDEV_PRIM_EXCLUSIVE : 0u, c->out, c->s);
    else if (c->op == OP_COPY)
        st = xdev_memcpy_async(c->out, c->in, c->n * esize(), c->s);
    else
        st = xdev_prim_sort_keys(c->in, XDEV_DTYPE_U32, c->n, 0, 0, 0, c->out, c->s);
    if (st != XDEV_SUCCESS)
        fprintf(stderr, PROG ": %s of %zu: %s\n", op_names[c->op], c->n, xdev_last_error());
    return st != XDEV_SUCCESS;
}

static int x_sync(void *p) {
    xctx_t *c = p;
    xdev_status_t st = xdev_stream_synchronize(c->s);
    if (st != XDEV_SUCCESS) fprintf(stderr, PROG ": synchronize: %s\n", xdev_last_error());
    return st != XDEV_SUCCESS;
}

typedef struct gctx {
    const uint32_t *keys;
    uint32_t *work;
    size_t n;
} gctx_t;
static int gnu_prep(void *p) {
    gctx_t *c = p;
    memcpy(c->work, c->keys, c->n * sizeof *c->keys);
    return 0;
}
static int gnu_call(void *p) {
    gctx_t *c = p;
    return prim_gnu_sort_u32(c->work, c->n);
}
static int no_sync(void *p) {
    (void)p;
    return 0;
}

/* An xdev side: every size of reduce and scan (and copy on the CPU), then
 * the sort where the backend has one. */
static void side_xdev(bool det) {
    xdev_device_t dev;
    CHECK(xdev_init());
    CHECK(xdev_device_parse(opt.device, &dev));
    CHECK(xdev_set_deterministic(det));
    xctx_t c = {0};
    CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &c.s));
    for (int k = opt.min_log2; k <= opt.max_log2; k++) {
        c.n = (size_t)1 << k;
        void *h = make_input(c.n);
        CHECK(xdev_malloc_device(dev, &c.in, c.n * esize()));
        CHECK(xdev_malloc_device(dev, &c.out, c.n * esize()));
        CHECK(xdev_memcpy(c.in, h, c.n * esize()));
        free(h);
        for (c.op = OP_REDUCE; c.op <= (on_cpu() && !det ? OP_COPY : OP_SCAN); c.op++) {
            timed_t t = {x_call, x_sync, NULL, &c, on_cpu() ? 3 : 10};
            double ns = time_best(&t);
            float sum = 0;
            if (c.op == OP_REDUCE && bench_dtype() == XDEV_DTYPE_F32) {
                CHECK(xdev_prim_reduce(c.in, XDEV_DTYPE_F32, c.n, XDEV_PRIM_SUM, c.out, c.s));
                CHECK(xdev_stream_synchronize(c.s));
                CHECK(xdev_memcpy(&sum, c.out, 4));
            }
            printf("@%s %d %.1f %08x\n", op_names[c.op], k, ns, f32_bits(sum));
        }
        CHECK(xdev_free(c.in));
        CHECK(xdev_free(c.out));
    }
    if (on_cpu() && !det) { /* sort of u32 keys, where the backend has it */
        c.n = (size_t)1 << opt.sort_log2;
        CHECK(xdev_malloc_device(dev, &c.in, c.n * 4));
        CHECK(xdev_malloc_device(dev, &c.out, c.n * 4));
        uint32_t *keys = malloc(c.n * 4);
        for (size_t i = 0; i < c.n && keys != NULL; i++)
            keys[i] = (uint32_t)mix(i);
        CHECK(xdev_memcpy(c.in, keys, c.n * 4));
        free(keys);
        xdev_status_t st = xdev_prim_sort_keys(c.in, XDEV_DTYPE_U32, c.n, 0, 0, 0, c.out, c.s);
        if (st == XDEV_ERROR_NOT_SUPPORTED) {
            printf("sort: not on this backend yet (%s)\n", xdev_last_error());
            printf("@nosort\n");
        } else {
            CHECK(st);
            c.op = OP_SORT;
            timed_t t = {x_call, x_sync, NULL, &c, 1};
            printf("@sort %d %.1f 0\n", opt.sort_log2, time_best(&t));
        }
        CHECK(xdev_free(c.in));
        CHECK(xdev_free(c.out));
    }
    CHECK(xdev_stream_destroy(c.s));
}

static void side_gnu(void) {
#ifdef PRIM_BENCH_GNU_SORT
    gctx_t c = {.n = (size_t)1 << opt.sort_log2};
    uint32_t *keys = malloc(c.n * 4);
    c.work = malloc(c.n * 4);
    if (keys == NULL || c.work == NULL) {
        fprintf(stderr, PROG ": no host memory for the keys\n");
        exit(1);
    }
    for (size_t i = 0; i < c.n; i++)
        keys[i] = (uint32_t)mix(i);
    c.keys = keys;
    timed_t t = {gnu_call, no_sync, gnu_prep, &c, 1};
    printf("@sort %d %.1f 0\n", opt.sort_log2, time_best(&t));
    free(keys);
    free(c.work);
#else
    (void)gnu_call;
    (void)gnu_prep;
    (void)no_sync;
    printf("@missing\n");
#endif
}

/* =============================================================== parent */

typedef struct results {
    double ns[NOPS][MAXLOG + 1]; /* best over the processes; 0: none */
    char bits[MAXLOG + 1][9];
    bool missing, nosort;
} results_t;

static void on_line(void *ctx, const char *line) {
    results_t *r = ctx;
    char op[16], bits[9];
    int k;
    double ns;
    if (strncmp(line, "missing", 7) == 0) r->missing = true;
    if (strncmp(line, "nosort", 6) == 0) r->nosort = true;
    if (sscanf(line, "%15s %d %lf %8s", op, &k, &ns, bits) != 4 || k < 0 || k > MAXLOG) return;
    for (int o = 0; o < NOPS; o++)
        if (strcmp(op, op_names[o]) == 0) {
            if (r->ns[o][k] == 0 || ns < r->ns[o][k]) r->ns[o][k] = ns;
            if (o == OP_REDUCE) snprintf(r->bits[k], sizeof r->bits[k], "%s", bits);
        }
}

static bool run_side(int side, results_t *r) {
    char a[5][16], tb[48], ob[48];
    snprintf(a[0], 16, "%d", opt.min_log2);
    snprintf(a[1], 16, "%d", opt.max_log2);
    snprintf(a[2], 16, "%d", opt.reps);
    snprintf(a[3], 16, "%d", opt.sort_log2);
    snprintf(a[4], 16, "%d", opt.exclusive);
    snprintf(tb, sizeof tb, "XDEV_CPU_THREADS=%d", opt.threads);
    snprintf(ob, sizeof ob, "OMP_NUM_THREADS=%d", opt.threads);
    char *argv[] = {PROG,          "--side",     (char *)side_names[side],
                    "--device",    opt.device,   "--min-log2",
                    a[0],          "--max-log2", a[1],
                    "--reps",      a[2],         "--sort-log2",
                    a[3],          "--dtype",    opt.dtype,
                    "--exclusive", a[4],         NULL};
    const char *over[] = {tb, ob, NULL};
    char **envp = bench_env_with(over);
    memset(r, 0, sizeof *r);
    bool ok = true;
    for (int i = 0; i < opt.runs && ok && !r->missing; i++)
        ok = bench_run_side(PROG, "/proc/self/exe", side_names[side], argv, envp, on_line, r);
    free(envp);
    return ok;
}

const char *verdict(bool ok) {
    return ok ? "met" : "NOT MET";
}

/* The CPU run's parent (the GPU's: gpu_parent, prim_bench_gpu.c). */
static int parent(void) {
    static results_t r[NSIDES];
    bool ok = true, missing = false;
    if (!on_cpu()) return gpu_parent();
    printf("%s: %s, 2^%d .. 2^%d f32, best of %d processes x %d batches\n\n", PROG, opt.device,
           opt.min_log2, opt.max_log2, opt.runs, opt.reps);
    ok = run_side(S_XDEV, &r[S_XDEV]);
    printf("%s %s; bytes = read + written (e = %zu bytes an element: reduce e n, scan 2e n, "
           "copy 2e n); %d threads\n\n",
           opt.dtype, opt.exclusive ? "exclusive" : "inclusive", esize(), opt.threads);
    printf("| op     | n    | GB/s    | copy GB/s | / copy's | goal            |\n");
    printf("|--------|------|--------:|----------:|---------:|-----------------|\n");
    for (int op = OP_REDUCE; op <= OP_SCAN; op++)
        for (int k = opt.min_log2; k <= opt.max_log2; k++) {
            double n = (double)((size_t)1 << k), ns = r[S_XDEV].ns[op][k];
            double cp = r[S_XDEV].ns[OP_COPY][k];
            double e = (double)esize();
            double gbs = ns > 0 ? (op == OP_REDUCE ? e : 2 * e) * n / ns : 0;
            double cgbs = cp > 0 ? 2 * e * n / cp : 0, q = cgbs > 0 ? gbs / cgbs : 0;
            double goal = op == OP_REDUCE ? 0.8 : 0.6;
            printf("| %-6s | 2^%-2d | %7.2f | %9.2f | %7.3fx | >= %.1fx %-6s |\n", op_names[op], k,
                   gbs, cgbs, q, goal, verdict(q >= goal));
        }
    printf("\nf32 sum bits (the CPU always sums in the deterministic order):");
    for (int k = opt.min_log2; k <= opt.max_log2; k++)
        printf(" 2^%d:%s", k, r[S_XDEV].bits[k]);
    printf("\n\n");
    if (r[S_XDEV].nosort) {
        printf("sort of 2^%d u32: the CPU backend has no sort yet: not compared\n", opt.sort_log2);
    } else {
        ok = run_side(S_GNU, &r[S_GNU]) && ok;
        if (r[S_GNU].missing) {
            printf("ANCHOR MISSING: __gnu_parallel::sort (bench/prim_sort_anchor.cpp: no C++ "
                   "or OpenMP) is not built\n");
            missing = true;
        }
        double x = r[S_XDEV].ns[OP_SORT][opt.sort_log2], a = r[S_GNU].ns[OP_SORT][opt.sort_log2];
        printf("| sort 2^%d u32 | xdev %.1f ms | __gnu_parallel::sort %.1f ms | speed %.3fx | "
               "goal >= 1x %s |\n",
               opt.sort_log2, x * 1e-6, a * 1e-6, x > 0 ? a / x : 0,
               a > 0 ? verdict(x > 0 && a / x >= 1) : "-");
    }
    if (!ok) printf("a side FAILED (its message is above)\n");
    return !ok ? 1 : missing ? 3 : 0;
}

int main(int argc, char **argv) {
    const char *side = NULL;
    opt.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            fprintf(stderr, PROG ": %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--side") == 0)
            side = v;
        else if (strcmp(a, "--device") == 0)
            snprintf(opt.device, sizeof opt.device, "%s", v);
        else if (strcmp(a, "--min-log2") == 0)
            opt.min_log2 = atoi(v);
        else if (strcmp(a, "--max-log2") == 0)
            opt.max_log2 = atoi(v);
        else if (strcmp(a, "--reps") == 0)
            opt.reps = atoi(v);
        else if (strcmp(a, "--runs") == 0)
            opt.runs = atoi(v);
        else if (strcmp(a, "--threads") == 0)
            opt.threads = atoi(v);
        else if (strcmp(a, "--dtype") == 0)
            snprintf(opt.dtype, sizeof opt.dtype, "%s", v);
        else if (strcmp(a, "--exclusive") == 0)
            opt.exclusive = atoi(v);
        else if (strcmp(a, "--sort-log2") == 0)
            opt.sort_log2 = atoi(v);
        else if (strcmp(a, "--prims") == 0) {
            if (!prim_parse_list(v, &opt.prims)) return 2;
        } else if (strcmp(a, "--check") == 0)
            opt.check = atoi(v);
        else {
            fprintf(stderr, PROG ": unknown option %s\n", a);
            return 2;
        }
    }
    if (opt.min_log2 < 1 || opt.max_log2 < opt.min_log2 || opt.max_log2 > MAXLOG || opt.reps < 1 ||
        opt.runs < 1 || opt.threads < 1 || opt.sort_log2 < 1 || opt.sort_log2 > MAXLOG ||
        (strcmp(opt.dtype, "f32") != 0 && strcmp(opt.dtype, "f64") != 0 &&
         strcmp(opt.dtype, "i32") != 0 && strcmp(opt.dtype, "i64") != 0)) {
        fprintf(stderr,
                PROG ": 1 <= --min-log2 <= --max-log2 <= %d; counts >= 1; --dtype f32, f64, i32 "
                     "or i64\n",
                MAXLOG);
        return 2;
    }
    if (side == NULL) return parent();
    if ((strcmp(side, "xdev") == 0 || strcmp(side, "det") == 0 || strcmp(side, "cub") == 0) &&
        !on_cpu())
        gpu_side(side);
    else if (strcmp(side, "xdev") == 0 || strcmp(side, "det") == 0)
        side_xdev(strcmp(side, "det") == 0);
    else if (strcmp(side, "gnu") == 0)
        side_gnu();
    else {
        fprintf(stderr, PROG ": unknown side %s\n", side);
        return 2;
    }
    return 0;
}
