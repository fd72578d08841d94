/* SPDX-License-Identifier: Apache-2.0 */
/* test_faults.c - fault injection, SQLite-style (core/runtime/fault.h).
 *
 * Each scenario is a small program over a family of public calls (memory
 * and copies; streams and events; fills and conversions; BLAS, FFT and
 * random numbers; the torch.cuda.comm functions and communicators; graphs;
 * a kernel module loaded, a kernel launched)
 * that stops at its first failed call, as a careful program would, and
 * hands everything it made to a tracker. A scenario is first run once to
 * count its backend calls (K); then, for n = 1..K, it runs again with call
 * n made to fail. Each time:
 *   - the failed call returns a status other than XDEV_SUCCESS with a
 *     message that starts with the xdev call's name ("xdev_memcpy: ") and
 *     names the backend call that failed ("memory.malloc"); no crash, no
 *     hang, no abort;
 *   - or every call succeeds (xdev recovered: a retry, a failed query of a
 *     pending free's event): then every result the scenario made must be
 *     right, as each scenario ends by checking all of its outputs against
 *     values it computes itself (a failure swallowed, a graph replay that did
 *     not run, shows as a wrong result);
 *   - with the injector off, everything the scenario made is released
 *     without an error (a free or destroy that failed left its object live);
 *   - every device's allocated bytes are back where they were, and the next
 *     calls (synchronize, a malloc and free) work.
 * Initialisation's own calls into the backend (its init, the device count,
 * each device's open) fail in turn too, each in a child process. Leaks are
 * ASan's to find (the sanitizer builds run this suite). The number of
 * failure points exercised is printed. Runs on the CPU backend
 * with two devices (XDEV_CPU_DEVICES=2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance_kernels.h"
#include "runtime/fault.h"
#include "xdev/graph.h"
#include "xdev/kernel.h"
#include "xdev/xdev.h"
#include "xt.h"

/* ------------------------------------------------------------------ tracker */

enum { MAXT = 16 };
typedef struct tracker {
    void *dev[MAXT], *host[MAXT];
    xdev_stream_t streams[MAXT];
    xdev_event_t events[MAXT];
    xdev_generator_t gens[MAXT];
    xdev_communicator_t comms[MAXT];
    xdev_graph_t graphs[MAXT];
    xdev_module_t modules[MAXT];
    int ndev, nhost, nstreams, nevents, ngens, ncomms, ngraphs, nmodules;
    xdev_status_t failed; /* the first failure's status (XDEV_SUCCESS: none) */
    char message[512];    /* and its message */
    const char *what;     /* and the call, as written */
    const char *api;      /* and the xdev function it is ("xdev_memcpy") */
    char wrong[256];      /* a result the scenario found wrong ("" none) */
    bool verified;        /* every call succeeded and every result was checked */
} tracker_t;

/* Run `fn args` (a public call, or one of the t_ wrappers below, named `api`);
 * on failure note it and leave the scenario. */
#define STEP_AS(t, api_, call)                                                                     \
    do {                                                                                           \
        xdev_status_t st_ = (call);                                                                \
        if (st_ != XDEV_SUCCESS) {                                                                 \
            (t)->failed = st_;                                                                     \
            (t)->what = #call;                                                                     \
            (t)->api = (api_);                                                                     \
            snprintf((t)->message, sizeof(t)->message, "%s", xdev_last_error());                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define STEP(t, fn, args) STEP_AS(t, api_of(#fn), fn args)

/* A check of a result: when it does not hold, note what was found and leave
 * the scenario (walk() fails the test saying which backend call had failed). */
#define CHECK(t, cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf((t)->wrong, sizeof(t)->wrong, __VA_ARGS__);                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Drop entry i of a tracked array (it was released). */
#define UNTRACK(arr, n, v)                                                                         \
    do {                                                                                           \
        for (int i_ = 0; i_ < (n); i_++)                                                           \
            if ((arr)[i_] == (v)) {                                                                \
                (arr)[i_] = (arr)[--(n)];                                                          \
                break;                                                                             \
            }                                                                                      \
    } while (0)

/* The public function behind a call in a STEP: the t_ wrappers stand for
 * the xdev call they make. */
static const char *api_of(const char *fn) {
    static const char *const wrap[][2] = {{"t_malloc", "xdev_malloc_device"},
                                          {"t_free", "xdev_free"},
                                          {"t_stream", "xdev_stream_create"},
                                          {"t_event", "xdev_event_create"},
                                          {"XDEV_LAUNCH", "xdev_launch_kernel"}};
    for (size_t i = 0; i < sizeof wrap / sizeof wrap[0]; i++)
        if (strcmp(fn, wrap[i][0]) == 0) return wrap[i][1];
    return fn;
}

static xdev_status_t t_malloc(tracker_t *t, int dev, size_t n, void **p) {
    xdev_status_t st = xdev_malloc_device(xt_dev(dev), p, n);
    if (st == XDEV_SUCCESS) t->dev[t->ndev++] = *p;
    return st;
}
static xdev_status_t t_free(tracker_t *t, void *p) {
    xdev_status_t st = xdev_free(p);
    if (st == XDEV_SUCCESS) UNTRACK(t->dev, t->ndev, p);
    return st;
}
static xdev_status_t t_stream(tracker_t *t, int dev, xdev_stream_t *s) {
    xdev_status_t st = xdev_stream_create(xt_dev(dev), XDEV_STREAM_PRIORITY_NORMAL, s);
    if (st == XDEV_SUCCESS) t->streams[t->nstreams++] = *s;
    return st;
}
static xdev_status_t t_event(tracker_t *t, unsigned flags, xdev_event_t *e) {
    xdev_status_t st = xdev_event_create(flags, e);
    if (st == XDEV_SUCCESS) t->events[t->nevents++] = *e;
    return st;
}

/* Release everything, injector off: each must succeed. */
static void release_all(tracker_t *t) {
    ck_assert_int_eq(xdev_synchronize(), XDEV_SUCCESS);
    for (int i = 0; i < t->ngraphs; i++)
        XT_OK(xdev_graph_destroy(t->graphs[i]));
    for (int i = 0; i < t->nmodules; i++)
        XT_OK(xdev_module_unload(t->modules[i]));
    for (int i = 0; i < t->ncomms; i++)
        XT_OK(xdev_communicator_destroy(t->comms[i]));
    for (int i = 0; i < t->ngens; i++)
        XT_OK(xdev_generator_destroy(t->gens[i]));
    for (int i = 0; i < t->nevents; i++)
        XT_OK(xdev_event_destroy(t->events[i]));
    for (int i = 0; i < t->ndev; i++)
        XT_OK(xdev_free(t->dev[i]));
    for (int i = 0; i < t->nhost; i++)
        XT_OK(xdev_host_free(t->host[i]));
    for (int i = 0; i < t->nstreams; i++)
        XT_OK(xdev_stream_destroy(t->streams[i]));
    memset(t, 0, sizeof *t);
}

/* Every float of host[0..n) equal to want (exact: the values are small
 * integers); the first one that is not, or -1. */
static long first_not(const float *host, long n, float want) {
    for (long i = 0; i < n; i++)
        if (host[i] != want) return i;
    return -1;
}

/* ------------------------------------------------------------------ scenarios */

/* Each scenario ends by checking every result it made, then sets
 * t->verified: a run in which every call succeeded counts as recovered from
 * only when it got that far. */

static void sc_memory(tracker_t *t) {
    enum { N = 1 << 16 };
    static unsigned char src[N], back[N];
    memset(src, 0x5a, sizeof src);
    memset(back, 0, sizeof back);
    void *a = NULL, *b = NULL, *pinned = NULL;
    xdev_stream_t s;
    STEP(t, t_stream, (t, 0, &s));
    STEP(t, t_malloc, (t, 0, N, &a));
    STEP(t, xdev_memcpy, (a, src, N));
    STEP(t, xdev_host_alloc, (&pinned, N));
    t->host[t->nhost++] = pinned;
    memset(pinned, 0, N);
    STEP(t, xdev_malloc_stream, (&b, N, s));
    t->dev[t->ndev++] = b;
    STEP(t, xdev_memcpy_async, (b, a, N, s));
    STEP(t, xdev_memset_async, (a, 1, N / 2, s));
    STEP(t, xdev_memcpy_async, (pinned, b, N, s));
    STEP(t, xdev_stream_synchronize, (s));
    STEP(t, xdev_memcpy, (back, a, N));
    STEP(t, t_free, (t, b));
    STEP(t, t_free, (t, a));
    STEP(t, xdev_empty_cache, ());
    CHECK(t, memcmp(pinned, src, N) == 0, "the copy through b to pinned memory differs from src");
    CHECK(t, back[0] == 1 && back[N / 2 - 1] == 1 && back[N / 2] == 0x5a && back[N - 1] == 0x5a,
          "a after memset of its first half: %#x %#x %#x %#x, want 0x1 0x1 0x5a 0x5a", back[0],
          back[N / 2 - 1], back[N / 2], back[N - 1]);
    t->verified = true;
}

static void sc_streams_events(tracker_t *t) {
    enum { N = 4096 };
    static unsigned char back[N];
    memset(back, 0, sizeof back);
    xdev_stream_t s1, s2;
    xdev_event_t e1, e2;
    void *a = NULL, *b = NULL;
    STEP(t, t_stream, (t, 0, &s1));
    STEP(t, t_stream, (t, 1, &s2));
    STEP(t, t_event, (t, XDEV_EVENT_TIMING, &e1));
    STEP(t, t_event, (t, XDEV_EVENT_TIMING, &e2));
    STEP(t, t_malloc, (t, 0, N, &a));
    STEP(t, t_malloc, (t, 1, N, &b));
    STEP(t, xdev_event_record, (e1, s1));
    STEP(t, xdev_memset_async, (a, 7, N, s1));
    STEP(t, xdev_stream_wait_event, (s1, e1));
    STEP(t, xdev_event_record, (e2, s1));
    /* s2 (device 1) copies what s1 (device 0) wrote: only the wait orders it. */
    STEP(t, xdev_stream_wait_stream, (s2, s1));
    STEP(t, xdev_memcpy_async, (b, a, N, s2));
    STEP(t, xdev_event_synchronize, (e2));
    STEP(t, xdev_event_query, (e2));
    float ms = -1;
    STEP(t, xdev_event_elapsed_time, (e1, e2, &ms));
    STEP(t, xdev_stream_set_name, (s1, "one"));
    STEP(t, xdev_device_synchronize, (xt_dev(1)));
    STEP(t, xdev_memcpy, (back, b, N));
    char name[16] = "";
    STEP(t, xdev_stream_get_name, (s1, name, sizeof name));
    CHECK(t, ms >= 0, "elapsed time %g ms", (double)ms);
    CHECK(t, back[0] == 7 && back[N - 1] == 7, "b after s2's copy of a: %#x..%#x, want 0x7",
          back[0], back[N - 1]);
    CHECK(t, strcmp(name, "one") == 0, "s1's name \"%s\", want \"one\"", name);
    t->verified = true;
}

static void sc_ops_math(tracker_t *t) {
    enum { N = 32 };
    static float hc[N * N], hb[N * N];
    static uint16_t hh[N * N];
    void *a = NULL, *b = NULL, *c = NULL, *h = NULL;
    xdev_stream_t s;
    STEP(t, t_stream, (t, 0, &s));
    STEP(t, t_malloc, (t, 0, N * N * 8, &a));
    STEP(t, t_malloc, (t, 0, N * N * 8, &b));
    STEP(t, t_malloc, (t, 0, N * N * 8, &c));
    STEP(t, t_malloc, (t, 0, N * N * 2, &h));
    STEP(t, xdev_fill_async, (a, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), N * N, s));
    STEP(t, xdev_fill_async, (b, XDEV_DTYPE_F32, xdev_scalar_f64(2.0), N * N, s));
    STEP(t, xdev_gemm,
         (XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, N, N, N, 1.0, a, N, b, N, 0.0, c, N, s));
    STEP(t, xdev_convert_async, (h, XDEV_DTYPE_F16, c, XDEV_DTYPE_F32, N * N, s));
    /* a's N*N ones read as N*N/2 complex numbers 1+1i: the transform is
     * N*N/2 (1+1i) at frequency 0 and zero elsewhere. */
    int64_t len = N * N / 2;
    xdev_fft_desc_t fd = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &len, 1);
    STEP(t, xdev_fft_exec, (&fd, a, b, XDEV_FFT_FORWARD, XDEV_FFT_NORM_BACKWARD, s));
    xdev_generator_t g;
    STEP(t, xdev_generator_create, (xt_dev(0), 7, &g));
    t->gens[t->ngens++] = g;
    STEP(t, xdev_rng_normal, (g, XDEV_DTYPE_F32, c, N * N, 0.0, 1.0, s));
    STEP(t, xdev_stream_synchronize, (s));
    STEP(t, xdev_memcpy, (hh, h, sizeof hh));
    STEP(t, xdev_memcpy, (hb, b, sizeof hb));
    STEP(t, xdev_memcpy, (hc, c, sizeof hc));
    for (int i = 0; i < N * N; i++) /* 64.0 in f16: 0x5400 */
        CHECK(t, hh[i] == 0x5400, "the f16 GEMM result h[%d] = %#x, want 0x5400 (64)", i, hh[i]);
    CHECK(t, hb[0] == N * N / 2 && hb[1] == N * N / 2, "FFT bin 0 = %g%+gi, want %d%+di",
          (double)hb[0], (double)hb[1], N * N / 2, N * N / 2);
    for (int i = 2; i < N * N; i++)
        CHECK(t, hb[i] > -1e-3f && hb[i] < 1e-3f, "FFT output float %d = %g, want 0", i,
              (double)hb[i]);
    double sum = 0, sq = 0;
    for (int i = 0; i < N * N; i++)
        sum += hc[i], sq += (double)hc[i] * hc[i];
    double mean = sum / (N * N), var = sq / (N * N) - mean * mean;
    CHECK(t, mean > -0.2 && mean < 0.2 && var > 0.7 && var < 1.3,
          "%d normal samples: mean %g, variance %g, want about 0 and 1", N * N, mean, var);
    t->verified = true;
}

static void sc_comm(tracker_t *t) {
    enum { N = 4096 };
    static float ha[N], hb[N], hsum[N];
    void *a = NULL, *b = NULL, *sum = NULL;
    STEP(t, t_malloc, (t, 0, N * 4, &a));
    STEP(t, t_malloc, (t, 1, N * 4, &b));
    STEP(t, t_malloc, (t, 0, N * 4, &sum));
    STEP(t, xdev_set_device, (xt_dev(0)));
    STEP(t, xdev_fill_async, (a, XDEV_DTYPE_F32, xdev_scalar_f64(3.0), N, NULL));
    void *dsts[1] = {b};
    STEP(t, xdev_comm_broadcast, (a, N * 4, dsts, 1));
    STEP(t, xdev_fill_async, (a, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), N, NULL));
    void *srcs[2] = {a, b};
    STEP(t, xdev_comm_reduce_add, (srcs, 2, sum, N, XDEV_DTYPE_F32)); /* 1 + 3 */
    xdev_communicator_t comms[2];
    xdev_device_t devs[2] = {xt_dev(0), xt_dev(1)};
    STEP(t, xdev_communicator_init_all, (comms, 2, devs));
    t->comms[t->ncomms++] = comms[0];
    t->comms[t->ncomms++] = comms[1];
    STEP(t, xdev_group_start, ());
    xdev_status_t st = xdev_all_reduce(comms[0], a, a, N, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL);
    const char *api = "xdev_all_reduce";
    if (st == XDEV_SUCCESS)
        st = xdev_all_reduce(comms[1], b, b, N, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL);
    char message[512]; /* group_end may report a failure of its own */
    snprintf(message, sizeof message, "%s", xdev_last_error());
    xdev_status_t end = xdev_group_end();
    if (st != XDEV_SUCCESS) {
        t->failed = st, t->what = "xdev_all_reduce(...)", t->api = api;
        snprintf(t->message, sizeof t->message, "%s", message);
        return;
    }
    STEP_AS(t, "xdev_group_end", end);
    STEP(t, xdev_synchronize, ());
    STEP(t, xdev_memcpy, (ha, a, sizeof ha));
    STEP(t, xdev_memcpy, (hb, b, sizeof hb));
    STEP(t, xdev_memcpy, (hsum, sum, sizeof hsum));
    long i;
    CHECK(t, (i = first_not(hsum, N, 4.0f)) < 0, "reduce_add of 1 and 3: sum[%ld] = %g, want 4", i,
          (double)hsum[i]);
    CHECK(t, (i = first_not(ha, N, 4.0f)) < 0,
          "all_reduce of 1 and 3: rank 0's a[%ld] = %g, want 4", i, (double)ha[i]);
    CHECK(t, (i = first_not(hb, N, 4.0f)) < 0,
          "all_reduce of 1 and 3: rank 1's b[%ld] = %g, want 4", i, (double)hb[i]);
    t->verified = true;
}

/* The graph adds a*b to c and draws M uniform numbers on each replay, so a
 * replay that did not run (its failure swallowed) shows in c, and one that
 * drew what the one before drew shows against an eager generator of the
 * same seed: the first replay draws what that one's first M numbers are,
 * the second its next M, back to back as a training loop replays. */
static void sc_graph(tracker_t *t) {
    enum { N = 8, M = 256 };
    static float hc[N * N], got[2][M], want[2][M];
    void *a = NULL, *b = NULL, *c = NULL, *r = NULL, *r1 = NULL, *q1 = NULL, *q2 = NULL;
    xdev_stream_t s;
    xdev_graph_t g;
    xdev_generator_t gen, ref;
    STEP(t, t_stream, (t, 0, &s));
    STEP(t, t_malloc, (t, 0, N * N * 4, &a));
    STEP(t, t_malloc, (t, 0, N * N * 4, &b));
    STEP(t, t_malloc, (t, 0, N * N * 4, &c));
    STEP(t, t_malloc, (t, 0, M * 4, &r));
    STEP(t, t_malloc, (t, 0, M * 4, &r1));
    STEP(t, xdev_generator_create, (xt_dev(0), 11, &gen));
    t->gens[t->ngens++] = gen;
    STEP(t, xdev_fill_async, (a, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), N * N, s));
    STEP(t, xdev_fill_async, (b, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), N * N, s));
    STEP(t, xdev_fill_async, (c, XDEV_DTYPE_F32, xdev_scalar_f64(0.0), N * N, s));
    STEP(t, xdev_graph_create, (&g));
    t->graphs[t->ngraphs++] = g;
    STEP(t, xdev_graph_capture_begin, (g, s, XDEV_CAPTURE_GLOBAL, NULL));
    const char *api = "xdev_gemm";
    xdev_status_t st = xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, N, N, N, 1.0, a, N,
                                 b, N, 1.0, c, N, s); /* c += a*b: N more in each element */
    if (st == XDEV_SUCCESS) {
        api = "xdev_rng_uniform";
        st = xdev_rng_uniform(gen, XDEV_DTYPE_F32, r, M, s);
    }
    char message[512];
    snprintf(message, sizeof message, "%s", xdev_last_error());
    xdev_status_t end = xdev_graph_capture_end(g);
    if (st != XDEV_SUCCESS) {
        t->failed = st, t->what = "a call captured in the graph", t->api = api;
        snprintf(t->message, sizeof t->message, "%s", message);
        return;
    }
    STEP_AS(t, "xdev_graph_capture_end", end);
    STEP(t, xdev_graph_replay, (g, s));
    STEP(t, xdev_memcpy_async, (r1, r, M * 4, s));
    STEP(t, xdev_graph_replay, (g, s));
    STEP(t, xdev_generator_create, (xt_dev(0), 11, &ref));
    t->gens[t->ngens++] = ref;
    STEP(t, t_malloc, (t, 0, M * 4, &q1));
    STEP(t, t_malloc, (t, 0, M * 4, &q2));
    STEP(t, xdev_rng_uniform, (ref, XDEV_DTYPE_F32, q1, M, s));
    STEP(t, xdev_rng_uniform, (ref, XDEV_DTYPE_F32, q2, M, s));
    STEP(t, xdev_stream_synchronize, (s));
    STEP(t, xdev_memcpy, (hc, c, sizeof hc));
    STEP(t, xdev_memcpy, (got[0], r1, sizeof got[0]));
    STEP(t, xdev_memcpy, (got[1], r, sizeof got[1]));
    STEP(t, xdev_memcpy, (want[0], q1, sizeof want[0]));
    STEP(t, xdev_memcpy, (want[1], q2, sizeof want[1]));
    long i;
    CHECK(t, (i = first_not(hc, N * N, 2.0f * N)) < 0,
          "after two replays of c += a*b (a, b ones, c zeros): c[%ld] = %g, want %d", i,
          (double)hc[i], 2 * N);
    for (int k = 0; k < 2; k++)
        CHECK(t, memcmp(got[k], want[k], sizeof got[k]) == 0,
              "replay %d's %d uniform numbers differ from the eager generator's %s %d "
              "(first: %g, want %g)",
              k + 1, M, k == 0 ? "first" : "next", M, (double)got[k][0], (double)want[k][0]);
    t->verified = true;
}

static void sc_kernels(tracker_t *t) {
    enum { N = 4096 };
    static float back[N];
    float *x = NULL, *y = NULL;
    xdev_stream_t s;
    xdev_module_t m;
    xdev_kernel_t k;
    STEP(t, t_stream, (t, 0, &s));
    STEP(t, t_malloc, (t, 0, N * sizeof *x, (void **)&x));
    STEP(t, t_malloc, (t, 0, N * sizeof *y, (void **)&y));
    STEP(t, xdev_fill_async, (x, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), N, s));
    STEP(t, xdev_fill_async, (y, XDEV_DTYPE_F32, xdev_scalar_f64(2.0), N, s));
    STEP(t, xdev_module_load, (xt_dev(0), conformance_kernels_bundle(), &m));
    t->modules[t->nmodules++] = m;
    STEP(t, xdev_module_get_kernel, (m, "saxpy", &k));
    xdev_launch_config_t cfg = {.grid = {N / 256, 1, 1}, .block = {256, 1, 1}, .stream = s};
    long n = N;
    float a = 3.0f;
    const float *cx = x;
    STEP_AS(t, "xdev_launch_kernel", XDEV_LAUNCH(k, &cfg, n, a, cx, y));
    STEP(t, xdev_stream_synchronize, (s));
    STEP(t, xdev_memcpy, (back, y, sizeof back));
    long i;
    CHECK(t, (i = first_not(back, N, 5.0f)) < 0, "saxpy 3*1+2: y[%ld] = %g, want 5", i,
          (double)back[i]);
    t->verified = true;
}

typedef struct scenario {
    const char *name;
    void (*run)(tracker_t *t);
} scenario_t;

static const scenario_t k_scenarios[] = {
    {"memory and copies", sc_memory},
    {"streams and events", sc_streams_events},
    {"fills, conversions, BLAS, FFT, RNG", sc_ops_math},
    {"collectives", sc_comm},
    {"graphs", sc_graph},
    {"kernels", sc_kernels},
};

static long g_points;    /* failure points exercised, all scenarios */
static long g_reported;  /* ... that made an xdev call fail with a status */
static long g_recovered; /* ... that xdev recovered from (every call succeeded, results right) */
static long g_unreached; /* ... a rerun did not reach (first-use work already done) */

static int64_t allocated(int dev) {
    return xt_mem_stats(dev).allocated_bytes[XDEV_STAT_ALL].current;
}

/* The message of a failed call must name it ("xdev_memcpy: ...") and the
 * backend call that failed ("memory.malloc" of "cpu.memory.malloc"). */
static void check_message(const scenario_t *sc, long n, const tracker_t *t) {
    const char *slot = strchr(xdev_fault_failed_slot(), '.');
    slot = slot != NULL ? slot + 1 : "";
    const char *api = t->api;
    size_t len = strlen(api);
    ck_assert_msg(strncmp(t->message, api, len) == 0 && t->message[len] == ':' &&
                      strstr(t->message, slot) != NULL,
                  "%s, backend call %ld (%s) failed: %s returned %s with the message \"%s\", "
                  "which does not name %s and %s",
                  sc->name, n, xdev_fault_failed_slot(), t->what, xdev_status_string(t->failed),
                  t->message, t->api, slot);
}

/* One scenario: count its backend calls, then fail each in turn. */
static void walk(const scenario_t *sc) {
    tracker_t t;
    memset(&t, 0, sizeof t);
    int64_t base0 = allocated(0), base1 = allocated(1);
    xdev_fault_inject_begin(0);
    sc->run(&t);
    long k = xdev_fault_inject_end(NULL);
    ck_assert_msg(t.failed == XDEV_SUCCESS, "%s fails without a fault: %s: %s", sc->name, t.what,
                  t.message);
    ck_assert_msg(t.verified, "%s, without a fault: %s", sc->name, t.wrong);
    release_all(&t);
    ck_assert_msg(k > 0, "%s reached no backend call", sc->name);
    for (long n = 1; n <= k; n++) {
        xdev_clear_error();
        xdev_fault_inject_begin(n);
        sc->run(&t);
        bool fired = false;
        (void)xdev_fault_inject_end(&fired);
        if (t.failed != XDEV_SUCCESS) {
            /* Reported: the failed call says so, naming itself and the backend
             * call. A failure no call reports when no fault fired is a bug. */
            ck_assert_msg(fired, "%s, call %ld: no fault fired, yet %s returned %s: %s", sc->name,
                          n, t.what, xdev_status_string(t.failed), t.message);
            check_message(sc, n, &t);
            g_reported++;
        } else {
            /* Every call succeeded: so must every result. A failure xdev
             * recovers from (a query of a pending free's event, an
             * allocation retried after emptying the cache) counts as
             * recovered only once the scenario's checks of its data held. */
            ck_assert_msg(t.verified,
                          "%s, backend call %ld (%s) failed, every xdev call returned success, "
                          "but a result is wrong: %s",
                          sc->name, n, fired ? xdev_fault_failed_slot() : "none", t.wrong);
            if (fired)
                g_recovered++;
            else
                g_unreached++; /* the counting run made things reruns find made */
        }
        release_all(&t);
        ck_assert_msg(allocated(0) == base0 && allocated(1) == base1,
                      "%s, call %ld: allocated bytes %lld/%lld, were %lld/%lld", sc->name, n,
                      (long long)allocated(0), (long long)allocated(1), (long long)base0,
                      (long long)base1);
        void *probe = NULL; /* the next call works */
        XT_OK(xdev_malloc_device(xt_dev(0), &probe, 4096));
        XT_OK(xdev_free(probe));
    }
    printf("faults: %s: %ld failure points\n", sc->name, k);
    g_points += k;
}

START_TEST(every_failure_point) {
    XT_REQUIRE_DEVICES(2);
    for (size_t i = 0; i < sizeof k_scenarios / sizeof k_scenarios[0]; i++)
        walk(&k_scenarios[i]);
    printf(
        "faults: %ld failure points exercised: %ld made an xdev call fail with a clear "
        "status, %ld were recovered from (every result checked and right), %ld not reached again "
        "(first-use work done by then); nothing left allocated, every next call worked\n",
        g_points, g_reported, g_recovered, g_unreached);
    ck_assert_int_eq(g_reported + g_recovered + g_unreached, g_points);
    ck_assert_msg(g_reported > g_points / 2, "most failures should reach the caller");
}
END_TEST

/* Initialisation: the backend's init, its device count, each device's open
 * and any slot call made on the way fail in turn, each in a child process
 * (xdev initialises once per process). The failure must come back from
 * xdev_init as a status whose message names the injected call, the next
 * call must report the same failure (not crash, not succeed half-made), and
 * a run with no fault must initialise. */
typedef struct init_result {
    int fired;
    xdev_status_t init, next;
    char message[400];
} init_result_t;

static init_result_t init_once_failing(long n) {
    init_result_t r = {0};
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        xdev_fault_inject_begin(n);
        r.init = xdev_init();
        bool fired = false;
        (void)xdev_fault_inject_end(&fired);
        r.fired = fired;
        snprintf(r.message, sizeof r.message, "%s", xdev_last_error());
        int count = 0;
        r.next = xdev_device_count(xt_type(), &count);
        if (write(fd[1], &r, sizeof r) != (ssize_t)sizeof r) _exit(2);
        _exit(0);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], &r, sizeof r);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(got == (ssize_t)sizeof r && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "initialisation with call %ld failing: the child died (status %d)", n, status);
    return r;
}

START_TEST(initialisation_failure_points) {
    init_result_t clean = init_once_failing(0); /* count only */
    ck_assert_msg(clean.init == XDEV_SUCCESS && clean.next == XDEV_SUCCESS, "%s", clean.message);
    long points = 0;
    for (long n = 1; n < 256; n++) {
        init_result_t r = init_once_failing(n);
        if (!r.fired) break; /* past the last call initialisation makes */
        points++;
        ck_assert_msg(r.init != XDEV_SUCCESS, "call %ld failed but xdev_init succeeded", n);
        ck_assert_msg(
            xt_icontains(r.message, "fault injected") && xt_icontains(r.message, "xdev_init"),
            "call %ld: xdev_init's message does not name the failed call: \"%s\"", n, r.message);
        ck_assert_msg(r.next == r.init, "call %ld: xdev_init returned %s, the next call %s", n,
                      xdev_status_string(r.init), xdev_status_string(r.next));
    }
    ck_assert_msg(points >= 3, "initialisation reached %ld backend calls (init, count, open)",
                  points);
    printf("faults: initialisation: %ld failure points\n", points);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_failure_point);
    tcase_add_test(tc, initialisation_failure_points);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "faults", argc, argv);
}
