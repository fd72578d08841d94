/* SPDX-License-Identifier: Apache-2.0 */
/* bench/graph_step.h - what the graph benchmarks (bench/graph_bench.c on
 * any backend, bench/gpu/graph_raw_bench.c by hand with CUDA) share, so both
 * run the same step and read their sides the same way:
 *
 *   - the step: GS_OPS operations in a fixed order (gs_op_at), over
 *     GS_BUFS buffers of n floats, a random buffer R and the GEMM's
 *     operands; each program issues them through its own API;
 *   - the options every side takes (gs_opts_t, gs_parse_common);
 *   - the runner of one side in a fresh process (the program, or another
 *     program of the comparison, with --side NAME and the same options),
 *     which collects the side's "@key values" lines.
 *
 * The step (i = 0 .. 199):
 *   0        uniform f32 fill of R[0..n)                 (random fill)
 *   1        GC = A * GB, g x g x g f32, A = R[0..g*g)   (one GEMM, beta 0)
 *   2..199   j = i - 2; j % 50 == 25: a device-to-device copy of n floats,
 *            R -> B0 for the first (fresh numbers enter the chain), then
 *            B1 -> B5, B2 -> B6, B3 -> B7; else kernel number k (0 .. 193)
 *            on B[k % 8], in rounds of 8 kernels alternating:
 *            k / 8 even: lerp  B[k % 8] += 0.5 * (B[(k + 3) % 8] - B[k % 8])
 *            k / 8 odd:  scale B[k % 8] *= 0.9
 * so 194 kernels (98 lerp, 96 scale), 4 copies, 1 GEMM, 1 random fill.
 * Every buffer takes both kernels and mixes with fresh numbers each step,
 * so values stay positive, bounded and away from subnormals over any
 * number of steps (subnormals would slow the CPU's kernels tenfold).
 * Include after defining _POSIX_C_SOURCE 200809L. */
#ifndef XDEV_BENCH_GRAPH_STEP_H
#define XDEV_BENCH_GRAPH_STEP_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_side.h"
#include "bench_util.h"

#define GS_OPS 200
#define GS_BUFS 8
#define GS_LERP_W 0.5f
#define GS_SCALE_S 0.9f
#define GS_BLOCK 256     /* work-items per block of every kernel */
#define GS_MAX_STEPS 256 /* steps per batch, at most */

typedef enum gs_kind { GS_RAND, GS_GEMM, GS_LERP, GS_SCALE, GS_COPY } gs_kind_t;

/* Operand indices: 0..GS_BUFS-1 are B0..B7. */
#define GS_R GS_BUFS

typedef struct gs_op {
    gs_kind_t kind;
    int dst, src; /* buffers (GS_R: R); -1 where unused */
} gs_op_t;

/* Operation i of the step (0 <= i < GS_OPS). */
static inline gs_op_t gs_op_at(int i) {
    gs_op_t op = {GS_RAND, GS_R, -1};
    if (i == 0) return op;
    if (i == 1) {
        op.kind = GS_GEMM;
        op.dst = -1;
        return op;
    }
    int j = i - 2;
    if (j % 50 == 25) {
        int c = j / 50;
        op.kind = GS_COPY;
        op.src = c == 0 ? GS_R : c;
        op.dst = c == 0 ? 0 : c + 4;
        return op;
    }
    int k = j - (j + 24) / 50; /* kernels before slot j */
    op.kind = (k / GS_BUFS) % 2 == 0 ? GS_LERP : GS_SCALE;
    op.dst = k % GS_BUFS;
    op.src = op.kind == GS_LERP ? (k + 3) % GS_BUFS : -1;
    return op;
}

/* The inputs every side starts from, element i of operand `which`: B0..B7
 * (0..7), R (GS_R), the GEMM's B (GS_GB) and C (GS_GC). */
#define GS_GB (GS_BUFS + 1)
#define GS_GC (GS_BUFS + 2)
static inline float gs_input(int which, size_t i) {
    if (which < GS_BUFS) return (float)((i * 7 + (size_t)which * 13) % 101) / 101.0f;
    if (which == GS_R) return (float)(i % 97) / 97.0f;
    if (which == GS_GB) return (float)((int)(i % 89) - 44) / 89.0f;
    return 0.0f;
}

/* What a step's description says, from the table itself. */
static inline void gs_count(int *kernels, int *copies) {
    *kernels = *copies = 0;
    for (int i = 0; i < GS_OPS; i++) {
        gs_kind_t k = gs_op_at(i).kind;
        *kernels += k == GS_LERP || k == GS_SCALE;
        *copies += k == GS_COPY;
    }
}

/* ---------------------------------------------------------------- options */

typedef struct gs_opts {
    long n;     /* floats per buffer; 0: the side picks by device (cuda 2^20, cpu 4096) */
    long gemm;  /* the GEMM's side; 0: by device (cuda 256, cpu 64) */
    int steps;  /* steps per timed batch */
    int reps;   /* timed batches */
    int rounds; /* rounds of every side, interleaved (the parent) */
    char side[32];
} gs_opts_t;

#define GS_OPTS_DEFAULT                                                                            \
    { .n = 0, .gemm = 0, .steps = 4, .reps = 31, .rounds = 2 }
#define GS_USAGE_COMMON "[--n floats] [--gemm side] [--steps 4] [--reps 31] [--rounds 2]"

static inline long gs_parse_long(const char *prog, const char *flag, const char *s, long lo,
                                 long hi) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s: bad %s '%s' (%ld .. %ld)\n", prog, flag, s, lo, hi);
        exit(2);
    }
    return v;
}

/* Takes flag `a` with value `v` when it is a common one: true if taken. */
static inline bool gs_parse_common(const char *prog, const char *a, const char *v, gs_opts_t *o) {
    if (strcmp(a, "--n") == 0)
        o->n = gs_parse_long(prog, a, v, 0, 1L << 30);
    else if (strcmp(a, "--gemm") == 0)
        o->gemm = gs_parse_long(prog, a, v, 0, 8192);
    else if (strcmp(a, "--steps") == 0)
        o->steps = (int)gs_parse_long(prog, a, v, 1, GS_MAX_STEPS);
    else if (strcmp(a, "--reps") == 0)
        o->reps = (int)gs_parse_long(prog, a, v, 1, 10000);
    else if (strcmp(a, "--rounds") == 0)
        o->rounds = (int)gs_parse_long(prog, a, v, 1, 10);
    else if (strcmp(a, "--side") == 0)
        snprintf(o->side, sizeof o->side, "%s", v);
    else
        return false;
    if (o->n % 4 != 0) { /* replays start their fills at multiples of 4 words (xdev/graph.h) */
        fprintf(stderr, "%s: --n must be a multiple of 4\n", prog);
        exit(2);
    }
    return true;
}

/* The sizes a side uses: the options', or the device's defaults. */
static inline void gs_sizes(const gs_opts_t *o, bool cuda, long *n, long *g) {
    *n = o->n > 0 ? o->n : cuda ? 1L << 20 : 4096;
    *g = o->gemm > 0 ? o->gemm : cuda ? 256 : 64;
}

/* ---------------------------------------------------------------- sides */

#define GS_MAX_RESULTS 24

typedef struct gs_result {
    char key[24];
    char text[200];
    double v[4];
    int nv;
} gs_result_t;

typedef struct gs_child {
    char side[32];
    gs_result_t r[GS_MAX_RESULTS];
    int nr;
    bool failed;
} gs_child_t;

static inline const gs_result_t *gs_find(const gs_child_t *c, const char *key) {
    for (int i = 0; i < c->nr; i++)
        if (strcmp(c->r[i].key, key) == 0) return &c->r[i];
    return NULL;
}

/* "@key text": the key, the text, and up to 4 leading numbers of the text. */
static inline void gs_parse_line(gs_child_t *c, const char *line) {
    if (c->nr == GS_MAX_RESULTS) return;
    gs_result_t *r = &c->r[c->nr++];
    memset(r, 0, sizeof *r);
    size_t klen = strcspn(line, " \n");
    if (klen >= sizeof r->key) klen = sizeof r->key - 1;
    memcpy(r->key, line, klen);
    if (line[klen] != ' ') return;
    snprintf(r->text, sizeof r->text, "%s", line + klen + 1);
    r->text[strcspn(r->text, "\n")] = '\0';
    char *p = r->text, *end;
    while (r->nv < 4) {
        double d = strtod(p, &end);
        if (end == p) break;
        r->v[r->nv++] = d;
        p = end;
    }
}

static inline void gs_on_line(void *ctx, const char *line) {
    gs_parse_line((gs_child_t *)ctx, line);
}

/* Run `exe --side side` plus the options in a fresh process (posix_spawn,
 * the caller's environment); its "@" lines are parsed into *out, the others
 * printed. exe "/proc/self/exe": this program. */
static inline void gs_run_side(const char *prog, const char *exe, const char *side,
                               const gs_opts_t *o, gs_child_t *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->side, sizeof out->side, "%s", side);
    char nb[32], gb[32], sb[16], rb[16];
    snprintf(nb, sizeof nb, "%ld", o->n);
    snprintf(gb, sizeof gb, "%ld", o->gemm);
    snprintf(sb, sizeof sb, "%d", o->steps);
    snprintf(rb, sizeof rb, "%d", o->reps);
    char *argv[] = {(char *)prog, "--side",  (char *)side, "--n",    nb, "--gemm",
                    gb,           "--steps", sb,           "--reps", rb, NULL};
    if (!bench_run_side(prog, exe, side, argv, NULL, gs_on_line, out)) out->failed = true;
}

/* The timing every side reports, from bench_util.h's harness: host ns per
 * step (enqueue loop of `steps` steps only; a synchronize after each batch,
 * untimed) and wall ns per step (the same loop with the synchronize inside
 * the timing). Prints "@host median min max" and "@wall median min max";
 * warns when the host time is close to the wall time (the enqueue waited for
 * the device: a full launch queue, or a device slower than the host). */
static inline void gs_time_side(void (*steps)(void *), void (*sync)(void *),
                                void (*steps_sync)(void *), void *ctx, const gs_opts_t *o) {
    double *v = malloc(sizeof(double) * (size_t)o->reps);
    if (v == NULL) exit(1);
    bench_stats_t h = bench_batches(steps, sync, ctx, o->steps, o->reps, v);
    bench_stats_t w = bench_batches(steps_sync, NULL, ctx, o->steps, o->reps, v);
    free(v);
    printf("@host %.1f %.1f %.1f\n", h.median, h.min, h.max);
    printf("@wall %.1f %.1f %.1f\n", w.median, w.min, w.max);
}

/* Compare two snapshots of `count` floats: bitwise, or (tol > 0) within tol
 * relative to the largest magnitude. Prints the first difference; true if
 * equal. */
static inline bool gs_same(const char *what, const float *a, const float *b, size_t count,
                           double tol) {
    double scale = 0;
    for (size_t i = 0; i < count; i++) {
        double m = a[i] < 0 ? -(double)a[i] : (double)a[i];
        if (m > scale) scale = m;
    }
    for (size_t i = 0; i < count; i++) {
        bool eq = tol > 0 ? ((double)a[i] - (double)b[i] <= tol * scale &&
                             (double)b[i] - (double)a[i] <= tol * scale)
                          : memcmp(&a[i], &b[i], sizeof a[i]) == 0;
        if (!eq) {
            printf("MISMATCH %s[%zu]: %.9g vs %.9g%s\n", what, i, (double)a[i], (double)b[i],
                   tol > 0 ? " (beyond the tolerance)" : " (bits differ)");
            return false;
        }
    }
    return true;
}

/* After the timing: "@health subnormal nonfinite" over every buffer (both 0
 * for the step as designed; either would change the kernels' speed). */
static inline void gs_health(const float *h, size_t count) {
    size_t sub = 0, bad = 0;
    for (size_t i = 0; i < count; i++) {
        int c = fpclassify(h[i]);
        sub += c == FP_SUBNORMAL;
        bad += c == FP_NAN || c == FP_INFINITE;
    }
    printf("@health %zu %zu\n", sub, bad);
    if (sub != 0 || bad != 0)
        fprintf(stderr, "graph step: %zu subnormal and %zu non-finite values after the timing\n",
                sub, bad);
}

#endif
