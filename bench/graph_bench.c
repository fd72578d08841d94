/* SPDX-License-Identifier: Apache-2.0 */
/* bench/graph_bench.c - host time per step of a 200-op step enqueued
 * eagerly vs replayed from a graph (xdev/graph.h), on the default backend
 * (XDEV_BACKEND: cpu, cuda, ...). The step is bench/graph_step.h's: 194
 * kernels of bench/kernels/graph_kernels.c (xdev_launch_kernel), 4
 * device-to-device xdev_memcpy_async copies, one f32 xdev_gemm (TF32 allowed,
 * xdev's default) and one xdev_rng_uniform fill, all on one created stream
 * over buffers allocated once.
 *
 * Modes, each in a fresh process (the program re-executes itself with
 * --side and reads its "@key values" lines), --rounds rounds interleaved:
 *   eager    the step's 200 calls, each step
 *   replay   the step captured once (xdev_graph_capture_begin/_end, mode
 *            XDEV_CAPTURE_GLOBAL, the graph's own pool), then one
 *            xdev_graph_replay per step
 * Both through bench_util.h's bench_batches: host ns per step = the enqueue
 * loop of --steps steps only, a stream synchronize after each batch
 * untimed; wall ns per step = the same loop with the synchronize timed
 * (the device's pace, for context); median / min / max of --reps batches
 * after a warm-up batch. Before timing, a `verify` side checks that two
 * replays leave every buffer as two eager steps do, from the same inputs
 * and seed (bitwise; the GEMM's output within 1e-5 relative, should the
 * library pick another algorithm in a capture) and the program fails if not.
 *
 * The goals (issue 28): replay >= 5x less host time per step than eager on
 * cuda, >= 2x on cpu. bench/gpu/graph_raw_bench runs this program's sides
 * next to raw CUDA graphs built by hand (goal: replay within 5% of them).
 *
 *   graph_bench [--n floats] [--gemm side] [--steps 4] [--reps 31] [--rounds 2]
 *
 * --n: floats per buffer (default: 2^20 on cuda, ~2-10 us a kernel on an
 * H100; 4096 on cpu); --gemm: the GEMM's side (256 on cuda, 64 on cpu).
 * On cuda keep --steps x 200 under the launch queue's depth (~1000), or the
 * enqueue waits for the device (a warning says so). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, posix_spawn */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_kernels.h"
#include "graph_step.h"
#include "graph_xdev.h"

#define PROG "graph_bench"
#define SEED 20261127ull

static gs_opts_t g_opt = GS_OPTS_DEFAULT;

/* ============================================================ child sides */

static void b_eager(void *arg) {
    gx_t *c = arg;
    for (int k = 0; k < c->steps; k++)
        gx_issue_step(c);
}
static void b_eager_sync(void *arg) {
    b_eager(arg);
    gx_settle(arg);
}
static void b_replay_sync(void *arg) {
    gx_replay_batch(arg);
    gx_settle(arg);
}

/* Two eager steps vs two replays from the same inputs and seed: every
 * buffer the same (the fills by graph.h's rule: a replay draws what the
 * same fills run eagerly from the generator's offset would). */
static int side_verify(void) {
    gx_t c;
    gx_setup(&c, &g_opt);
    CHECK(xdev_manual_seed(SEED));
    gx_issue_step(&c);
    gx_issue_step(&c);
    size_t count = 0;
    float *eager = gx_snapshot(&c, &count);
    gx_init_inputs(&c);
    gx_capture(&c);
    CHECK(xdev_manual_seed(SEED));
    CHECK(xdev_graph_replay(c.graph, c.s));
    CHECK(xdev_graph_replay(c.graph, c.s));
    float *replay = gx_snapshot(&c, &count);
    size_t gg = (size_t)(c.g * c.g), gc_at = count - gg;
    bool ok = gs_same("buffers", eager, replay, gc_at, 0.0);
    bool gc_bits = ok && memcmp(eager + gc_at, replay + gc_at, gg * sizeof(float)) == 0;
    if (ok && !gc_bits) ok = gs_same("gemm C", eager + gc_at, replay + gc_at, gg, 1e-5);
    if (ok)
        printf("@verify ok: 2 replays == 2 eager steps, %zu floats bitwise%s\n", count,
               gc_bits ? "" : " (the GEMM's output within 1e-5 relative, not bitwise)");
    free(eager);
    free(replay);
    gx_teardown(&c);
    if (!ok) fprintf(stderr, PROG ": replay results differ from eager ones\n");
    return ok ? 0 : 1;
}

static int side_time(bool replay) {
    gx_t c;
    gx_setup(&c, &g_opt);
    if (replay) {
        /* one eager step first, as torch warms up before capturing: the
         * thread's cuBLAS handle and the kernels' first loads happen here */
        gx_issue_step(&c);
        CHECK(xdev_stream_synchronize(c.s));
        gx_capture(&c);
        gs_time_side(gx_replay_batch, gx_settle, b_replay_sync, &c, &g_opt);
    } else {
        gs_time_side(b_eager, gx_settle, b_eager_sync, &c, &g_opt);
    }
    size_t count = 0;
    float *h = gx_snapshot(&c, &count);
    gs_health(h, count);
    free(h);
    gx_teardown(&c);
    return 0;
}

/* ============================================================ the parent */

enum { EAGER, REPLAY, NMODES };
static const char *const k_mode[NMODES] = {"eager", "replay"};

static int parent(void) {
    gs_child_t verify;
    gs_run_side(PROG, "/proc/self/exe", "verify", &g_opt, &verify);
    const gs_result_t *v = gs_find(&verify, "verify");
    if (verify.failed || v == NULL) {
        printf(PROG ": FAILED: replay's results are not eager's (or the check could not run): "
                    "no timing\n");
        return 1;
    }
    gs_child_t *ch = calloc((size_t)g_opt.rounds * NMODES, sizeof *ch);
    if (ch == NULL) return 1;
    for (int r = 0; r < g_opt.rounds; r++)
        for (int m = 0; m < NMODES; m++)
            gs_run_side(PROG, "/proc/self/exe", k_mode[m], &g_opt, &ch[r * NMODES + m]);
    const gs_result_t *dev = gs_find(&verify, "device"), *sz = gs_find(&verify, "sizes");
    bool cuda = dev != NULL && strncmp(dev->text, "cuda", 4) == 0;
    double goal = cuda ? 5.0 : 2.0;
    int kernels, copies;
    gs_count(&kernels, &copies);
    long n = sz != NULL ? (long)sz->v[0] : 0, g = sz != NULL ? (long)sz->v[1] : 0;
    printf(PROG ": xdev %s on %s; each mode a fresh process, %d rounds interleaved\n",
           xdev_version_string(), dev != NULL ? dev->text : "?", g_opt.rounds);
    printf("step: %d ops = %d kernels of %ld floats (lerp, scale), %d device copies of %ld "
           "floats, 1 GEMM %ldx%ldx%ld f32, 1 uniform fill of %ld floats; one stream\n",
           GS_OPS, kernels, n, copies, n, g, g, g, n);
    printf("verify: %s\n", v->text);
    printf("\nus per step: host = the enqueue loop of %d steps only (a synchronize after it, "
           "untimed); wall = with the synchronize; median / min / max of %d batches\n",
           g_opt.steps, g_opt.reps);
    printf("| %-8s | %5s | %10s | %10s | %10s | %12s |\n", "mode", "round", "host med", "host min",
           "host max", "wall med");
    printf("|----------|-------|------------|------------|------------|--------------|\n");
    bool met = true, complete = true, waited = false;
    for (int r = 0; r < g_opt.rounds; r++)
        for (int m = 0; m < NMODES; m++) {
            const gs_child_t *c = &ch[r * NMODES + m];
            const gs_result_t *h = gs_find(c, "host"), *w = gs_find(c, "wall");
            if (c->failed || h == NULL || w == NULL || h->nv < 3) {
                printf("| %-8s | %5d | %10s | %10s | %10s | %12s |\n", k_mode[m], r + 1, "FAILED",
                       "", "", "");
                complete = false;
                continue;
            }
            printf("| %-8s | %5d | %10.2f | %10.2f | %10.2f | %12.2f |\n", k_mode[m], r + 1,
                   h->v[0] * 1e-3, h->v[1] * 1e-3, h->v[2] * 1e-3, w->v[0] * 1e-3);
            if (h->v[0] > 0.9 * w->v[0]) waited = true;
        }
    char ratios[128] = "";
    size_t at = 0;
    for (int r = 0; r < g_opt.rounds; r++) {
        const gs_result_t *e = gs_find(&ch[r * NMODES + EAGER], "host"),
                          *p = gs_find(&ch[r * NMODES + REPLAY], "host");
        double ratio = e != NULL && p != NULL && p->v[0] > 0 ? e->v[0] / p->v[0] : 0.0;
        if (ratio <= 0) complete = false;
        if (ratio < goal) met = false;
        if (ratio > 0)
            at += (size_t)snprintf(ratios + at, sizeof ratios - at, " %.2f", ratio);
        else
            at += (size_t)snprintf(ratios + at, sizeof ratios - at, " -");
        if (at >= sizeof ratios) at = sizeof ratios - 1;
    }
    printf("host time per step, eager / replay, of the medians, by round:%s\n", ratios);
    printf("@ratio%s\n", ratios);
    for (int m = 0; m < NMODES; m++) {
        printf("@%s_host_us", k_mode[m]);
        for (int r = 0; r < g_opt.rounds; r++) {
            const gs_result_t *h = gs_find(&ch[r * NMODES + m], "host");
            if (h != NULL)
                printf(" %.2f", h->v[0] * 1e-3);
            else
                printf(" -");
        }
        printf("\n");
    }
    if (waited)
        printf("note: a host time within 10%% of its wall time: the enqueue may have waited for "
               "the device (lower --steps or --n)\n");
    printf("goal replay >= %.0fx less host time per step than eager (%s): %s\n", goal,
           cuda ? "cuda" : "cpu",
           !complete ? "NOT MEASURED (a side failed)"
           : met     ? "met"
                     : "NOT met");
    int rc = complete ? 0 : 1;
    free(ch);
    return rc;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || i + 1 >= argc) {
            fprintf(strcmp(a, "--help") == 0 ? stdout : stderr,
                    "usage: " PROG " " GS_USAGE_COMMON "\n"
                    "host time per step of a 200-op step, eager vs graph replay, on the default "
                    "backend.\n");
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
        if (!gs_parse_common(PROG, a, argv[++i], &g_opt)) {
            fprintf(stderr, PROG ": unknown option '%s' (--help)\n", a);
            return 2;
        }
    }
    if (g_opt.side[0] == '\0') return parent();
    if (strcmp(g_opt.side, "verify") == 0) return side_verify();
    if (strcmp(g_opt.side, "eager") == 0) return side_time(false);
    if (strcmp(g_opt.side, "replay") == 0) return side_time(true);
    fprintf(stderr, PROG ": unknown side '%s'\n", g_opt.side);
    return 2;
}
