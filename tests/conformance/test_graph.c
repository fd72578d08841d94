/* SPDX-License-Identifier: Apache-2.0 */
/* test_graph.c - graphs and memory pools (xdev/graph.h) on the backend
 * under test: each op kind captured and replayed (values checked after
 * several replays), fork/join across streams, random numbers per replay
 * against eager fills, the calls a capture refuses (and the capture they
 * invalidate), the capture modes across threads, traced replays, and bad
 * input. Elsewhere in the same suite: the memory pools (test_graph_pools.c:
 * private and shared pools, user pools and scopes) and graphs at their
 * edges (test_graph_edges.c: threads that exit mid-capture or mid-scope,
 * forks that never join, global captures side by side, a failed replay
 * launch, replays from several threads or with another device current). Captures run on created
 * streams (CUDA cannot capture its legacy default stream), after one eager warm-up of each op kind
 * (cuBLAS handles and FFT plans are made then, as torch requires). Conformance:
 * XDEV_BACKEND=<backend> (cpu: XDEV_CPU_DEVICES=2). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "conformance_kernels.h"
#include "test_graph_common.h"

static void setup(void) {
    xt_reset_state();
}

static void *dalloc(size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, bytes));
    return p;
}

static xdev_kernel_t saxpy_kernel(xdev_module_t *m) {
    XT_OK(xdev_module_load(xt_dev(0), conformance_kernels_bundle(), m));
    xdev_kernel_t k = NULL;
    XT_OK(xdev_module_get_kernel(*m, "saxpy", &k));
    return k;
}

/* y += a * x on stream s (n floats). */
static void saxpy(xdev_kernel_t k, xdev_stream_t s, long n, float a, const float *x, float *y) {
    xdev_launch_config_t cfg = {
        .grid = {(unsigned)((n + 255) / 256), 1, 1}, .block = {256, 1, 1}, .stream = s};
    XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y));
}

static void host_count(void *arg) {
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void upload(void *dev, const void *host, size_t n) {
    XT_OK(xdev_memcpy(dev, host, n));
}

/* --------------------------------------------------------------- capture */

typedef struct step {
    xdev_kernel_t k;
    long n;
    float *x, *y, *z;
    double *w;
    float *A, *B, *C; /* 4 x 4 */
    float *sig;       /* 8 complex f32 */
    atomic_int *count;
    bool has_gemm, has_fft; /* the backend has them (set by the warm-up) */
} step_t;

/* The step every op kind of capture_each_op runs: a kernel, a memset, a
 * device copy, a fill, a conversion, a GEMM, an FFT, a host function. */
static void run_step(step_t *t, xdev_stream_t s) {
    saxpy(t->k, s, t->n, 2.0f, t->x, t->y);
    XT_OK(xdev_memset_async(t->z, 0, (size_t)t->n * sizeof(float), s));
    XT_OK(xdev_memcpy_async(t->z, t->y, (size_t)t->n * sizeof(float), s));
    XT_OK(xdev_convert_async(t->w, XDEV_DTYPE_F64, t->z, XDEV_DTYPE_F32, (size_t)t->n, s));
    XT_OK(xdev_fill_async(t->C, XDEV_DTYPE_F32, xdev_scalar_f64(-1.0), 16, s));
    xdev_status_t st = xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 4, 4, 4, 1.0, t->A,
                                 4, t->B, 4, 0.0, t->C, 4, s);
    ck_assert_msg(st == XDEV_SUCCESS || st == XDEV_ERROR_NOT_SUPPORTED, "gemm: %s",
                  xdev_last_error());
    t->has_gemm = st == XDEV_SUCCESS;
    const int64_t n8 = 8;
    xdev_fft_desc_t fd = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n8, 1);
    st = xdev_fft_exec(&fd, t->sig, t->sig, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s);
    ck_assert_msg(st == XDEV_SUCCESS || st == XDEV_ERROR_NOT_SUPPORTED, "fft: %s",
                  xdev_last_error());
    t->has_fft = st == XDEV_SUCCESS;
    XT_OK(xdev_launch_host_func(s, host_count, t->count));
}

START_TEST(capture_each_op) {
    xdev_module_t m;
    step_t t = {0};
    t.k = saxpy_kernel(&m);
    t.n = 1000;
    size_t bytes = (size_t)t.n * sizeof(float);
    t.x = dalloc(bytes), t.y = dalloc(bytes), t.z = dalloc(bytes);
    t.w = dalloc((size_t)t.n * sizeof(double));
    t.A = dalloc(64), t.B = dalloc(64), t.C = dalloc(64), t.sig = dalloc(64);
    atomic_int count = 0;
    t.count = &count;
    float *hx = malloc(bytes), *hy = malloc(bytes);
    for (long i = 0; i < t.n; i++)
        hx[i] = (float)(i % 17), hy[i] = 1.0f;
    float hA[16], hB[16];
    for (int i = 0; i < 16; i++)
        hA[i] = (float)(i + 1), hB[i] = (i % 5 == 0) ? 1.0f : 0.0f; /* B = identity */
    upload(t.x, hx, bytes);
    upload(t.A, hA, sizeof hA);
    upload(t.B, hB, sizeof hB);
    xdev_stream_t s = new_stream(0);
    run_step(&t, s); /* warm-up: cuBLAS handle, FFT plan for s */
    XT_OK(xdev_stream_synchronize(s));
    upload(t.y, hy, bytes);
    ck_assert_int_eq(atomic_load(&count), 1);

    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    bool capturing = false;
    XT_OK(xdev_stream_is_capturing(s, &capturing));
    ck_assert(capturing);
    run_step(&t, s);
    XT_OK(xdev_graph_capture_end(g));
    XT_OK(xdev_stream_is_capturing(s, &capturing));
    ck_assert(!capturing);
    /* Recorded, not run: y untouched, the host function not called. */
    fetch(hy, t.y, bytes, s);
    ck_assert_msg(hy[5] == 1.0f, "capture ran the kernel: y[5] = %g", (double)hy[5]);
    ck_assert_int_eq(atomic_load(&count), 1);

    const int replays = 3;
    xdev_stream_t r = new_stream(0); /* any stream of the device */
    float sig[16] = {1.0f};          /* an impulse: its transform is all ones */
    for (int i = 0; i < replays; i++) {
        XT_OK(xdev_memcpy(t.sig, sig, sizeof sig));
        XT_OK(xdev_graph_replay(g, i % 2 ? r : s));
        XT_OK(xdev_stream_synchronize(i % 2 ? r : s));
    }
    ck_assert_int_eq(atomic_load(&count), 1 + replays);
    float *hz = malloc(bytes);
    double *hw = malloc((size_t)t.n * sizeof(double));
    fetch(hy, t.y, bytes, s);
    xt_peek(hz, t.z, bytes);
    xt_peek(hw, t.w, (size_t)t.n * sizeof(double));
    for (long i = 0; i < t.n; i++) {
        float want = 1.0f + (float)replays * 2.0f * (float)(i % 17);
        ck_assert_msg(hy[i] == want, "y[%ld] = %g after %d replays, want %g", i, (double)hy[i],
                      replays, (double)want);
        ck_assert_msg(hz[i] == want && hw[i] == (double)want, "z/w[%ld] = %g/%g", i, (double)hz[i],
                      hw[i]);
    }
    float hC[16], hs[16];
    xt_peek(hC, t.C, sizeof hC);
    xt_peek(hs, t.sig, sizeof hs);
    for (int i = 0; i < 16; i++) /* A * I, or the fill where the backend has no GEMM */
        ck_assert_msg(hC[i] == (t.has_gemm ? hA[i] : -1.0f), "C[%d] = %g", i, (double)hC[i]);
    for (int i = 0; i < 8 && t.has_fft; i++)
        ck_assert_msg(fabsf(hs[2 * i] - 1.0f) < 1e-5f && fabsf(hs[2 * i + 1]) < 1e-5f,
                      "fft bin %d = %g%+gi", i, (double)hs[2 * i], (double)hs[2 * i + 1]);
    if (!t.has_gemm || !t.has_fft)
        xt_skip(__func__, "part: the %s backend has no%s%s", xt_type_name(),
                t.has_gemm ? "" : " GEMM", t.has_fft ? "" : " FFT");
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(r));
    XT_OK(xdev_stream_destroy(s));
    void *ptrs[] = {t.x, t.y, t.z, t.w, t.A, t.B, t.C, t.sig};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        XT_OK(xdev_free(ptrs[i]));
    XT_OK(xdev_module_unload(m));
    free(hx), free(hy), free(hz), free(hw);
}
END_TEST

/* s1 forks s2 with an event, s2 runs a kernel, s1 joins it and copies the
 * result: replayed on a third stream, the copy sees the kernel's output. */
START_TEST(fork_join) {
    xdev_module_t m;
    xdev_kernel_t k = saxpy_kernel(&m);
    const long n = 4096;
    size_t bytes = n * sizeof(float);
    float *x = dalloc(bytes), *y = dalloc(bytes), *c = dalloc(bytes);
    float *h = malloc(bytes);
    for (long i = 0; i < n; i++)
        h[i] = 1.0f;
    upload(x, h, bytes);
    XT_OK(xdev_memset_async(y, 0, bytes, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    xdev_stream_t s1 = new_stream(0), s2 = new_stream(0), s3 = new_stream(0);
    xdev_event_t e1, e2;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e1));
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e2));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s1, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_event_record(e1, s1));
    XT_OK(xdev_stream_wait_event(s2, e1)); /* fork */
    bool cap2 = false;
    XT_OK(xdev_stream_is_capturing(s2, &cap2));
    ck_assert_msg(cap2, "a stream that waits on a captured event records into the capture");
    saxpy(k, s2, n, 3.0f, x, y);
    XT_OK(xdev_event_record(e2, s2));
    XT_OK(xdev_stream_wait_event(s1, e2)); /* join */
    XT_OK(xdev_memcpy_async(c, y, bytes, s1));
    XT_OK(xdev_graph_capture_end(g));
    XT_OK(xdev_stream_is_capturing(s2, &cap2));
    ck_assert(!cap2);
    for (int rep = 1; rep <= 2; rep++) {
        XT_OK(xdev_graph_replay(g, s3));
        fetch(h, c, bytes, s3);
        for (long i = 0; i < n; i++)
            ck_assert_msg(h[i] == 3.0f * (float)rep, "replay %d: c[%ld] = %g", rep, i,
                          (double)h[i]);
    }
    /* wait_stream forks and joins too */
    xdev_graph_t g2;
    XT_OK(xdev_graph_create(&g2));
    XT_OK(xdev_graph_capture_begin(g2, s1, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_stream_wait_stream(s2, s1));
    saxpy(k, s2, n, 1.0f, x, y);
    XT_OK(xdev_stream_wait_stream(s1, s2));
    XT_OK(xdev_memcpy_async(c, y, bytes, s1));
    XT_OK(xdev_graph_capture_end(g2));
    XT_OK(xdev_graph_replay(g2, s3));
    fetch(h, c, bytes, s3);
    ck_assert_msg(h[0] == 7.0f, "wait_stream fork/join: c[0] = %g", (double)h[0]);
    XT_OK(xdev_graph_destroy(g2));
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_event_destroy(e1));
    XT_OK(xdev_event_destroy(e2));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    XT_OK(xdev_stream_destroy(s3));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_free(c));
    XT_OK(xdev_module_unload(m));
    free(h);
}
END_TEST

/* A fork whose work never joins back: capture_end fails, the streams stop
 * recording and run eagerly again. */
START_TEST(unjoined_fork) {
    float *y = dalloc(256);
    xdev_stream_t s1 = new_stream(0), s2 = new_stream(0);
    xdev_event_t e;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s1, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_event_record(e, s1));
    XT_OK(xdev_stream_wait_event(s2, e));
    XT_OK(xdev_memset_async(y, 1, 256, s2)); /* never joined */
    XT_ERR(XDEV_ERROR_CAPTURE, xdev_graph_capture_end(g), "join");
    bool c1 = true, c2 = true;
    XT_OK(xdev_stream_is_capturing(s1, &c1));
    XT_OK(xdev_stream_is_capturing(s2, &c2));
    ck_assert(!c1 && !c2);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(g, s1), "nothing to replay");
    unsigned char h[256];
    XT_OK(xdev_memset_async(y, 7, 256, s2)); /* runs now */
    fetch(h, y, 256, s2);
    ck_assert_int_eq(h[100], 7);
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    XT_OK(xdev_free(y));
}
END_TEST

/* A one-rank communicator's all_reduce in a graph: recorded where the
 * backend's communicators are NCCL's (cuda); refused on host-memory ones,
 * whose ranks meet in host functions. */
START_TEST(collective_in_graph) {
    xdev_device_t dev = xt_dev(0);
    xdev_communicator_t comm;
    XT_OK(xdev_communicator_init_all(&comm, 1, &dev));
    const size_t n = 256;
    float *a = dalloc(n * sizeof(float)), *b = dalloc(n * sizeof(float));
    xdev_stream_t s = new_stream(0);
    XT_OK(xdev_fill_async(a, XDEV_DTYPE_F32, xdev_scalar_f64(2.5), n, s));
    XT_OK(xdev_all_reduce(comm, a, b, n, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, s)); /* warm-up */
    XT_OK(xdev_stream_synchronize(s));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_fill_async(b, XDEV_DTYPE_F32, xdev_scalar_f64(0.0), n, s));
    xdev_status_t st = xdev_all_reduce(comm, a, b, n, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, s);
    XT_OK(xdev_graph_capture_end(g));
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        ck_assert_msg(xt_icontains(xdev_last_error(), "cannot be recorded in a graph"), "%s",
                      xdev_last_error());
        xt_skip(__func__, "the %s backend's communicators cannot be recorded in a graph",
                xt_type_name());
    } else {
        XT_OK(st);
        XT_OK(xdev_fill_async(b, XDEV_DTYPE_F32, xdev_scalar_f64(-1.0), n, s));
        XT_OK(xdev_graph_replay(g, s));
        float h[256];
        fetch(h, b, sizeof h, s);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(h[i] == 2.5f, "b[%zu] = %g after the replayed all_reduce", i,
                          (double)h[i]);
    }
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_communicator_destroy(comm));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
}
END_TEST

/* ----------------------------------------------------------- random numbers */

START_TEST(rng_per_replay) {
    const size_t n = 1001, m = 250; /* odd: the replay's rounding to 4 words shows */
    float *u = dalloc(n * sizeof(float)), *z = dalloc(m * sizeof(float));
    xdev_generator_t gen, ref;
    XT_OK(xdev_generator_create(xt_dev(0), 42, &gen));
    XT_OK(xdev_generator_create(xt_dev(0), 42, &ref));
    xdev_stream_t s = new_stream(0);
    XT_OK(xdev_rng_uniform(gen, XDEV_DTYPE_F32, u, n, s)); /* warm-up */
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_generator_set_offset(gen, 0));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_rng_uniform(gen, XDEV_DTYPE_F32, u, n, s));
    XT_OK(xdev_rng_normal(gen, XDEV_DTYPE_F32, z, m, 0.0, 1.0, s));
    XT_OK(xdev_graph_capture_end(g));
    uint64_t off = 99;
    XT_OK(xdev_generator_get_offset(gen, &off));
    ck_assert_msg(off == 0, "a capture does not draw: offset %llu", (unsigned long long)off);
    float *got_u = malloc(n * sizeof(float)), *got_z = malloc(m * sizeof(float));
    float *want_u = malloc(n * sizeof(float)), *want_z = malloc(m * sizeof(float));
    float *prev = calloc(n, sizeof(float));
    float *ru = dalloc(n * sizeof(float)), *rz = dalloc(m * sizeof(float));
    for (int rep = 0; rep < 3; rep++) {
        /* the eager reference from the state the replay starts at */
        uint64_t base = 0;
        XT_OK(xdev_generator_get_offset(gen, &base));
        base = (base + 3) & ~(uint64_t)3;
        XT_OK(xdev_generator_set_offset(ref, base));
        XT_OK(xdev_rng_uniform(ref, XDEV_DTYPE_F32, ru, n, s));
        XT_OK(xdev_rng_normal(ref, XDEV_DTYPE_F32, rz, m, 0.0, 1.0, s));
        XT_OK(xdev_graph_replay(g, s));
        fetch(got_u, u, n * sizeof(float), s);
        xt_peek(got_z, z, m * sizeof(float));
        xt_peek(want_u, ru, n * sizeof(float));
        xt_peek(want_z, rz, m * sizeof(float));
        ck_assert_msg(memcmp(got_u, want_u, n * sizeof(float)) == 0,
                      "replay %d's uniform fill differs from the eager one", rep);
        ck_assert_msg(memcmp(got_z, want_z, m * sizeof(float)) == 0,
                      "replay %d's normal fill differs from the eager one", rep);
        ck_assert_msg(memcmp(got_u, prev, n * sizeof(float)) != 0,
                      "replay %d drew the same numbers as the one before", rep);
        memcpy(prev, got_u, n * sizeof(float));
        uint64_t after = 0, ref_after = 0;
        XT_OK(xdev_generator_get_offset(gen, &after));
        XT_OK(xdev_generator_get_offset(ref, &ref_after));
        ref_after = (ref_after + 3) & ~(uint64_t)3; /* graph.h: whole Philox blocks */
        ck_assert_msg(after == ref_after, "replay %d left the offset at %llu, eager at %llu", rep,
                      (unsigned long long)after, (unsigned long long)ref_after);
        /* eager draws between replays move the generator: the next replay follows */
        XT_OK(xdev_rng_uniform(gen, XDEV_DTYPE_F32, ru, 3, s));
    }
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_generator_destroy(gen));
    XT_OK(xdev_generator_destroy(ref));
    void *ptrs[] = {u, z, ru, rz};
    for (size_t i = 0; i < 4; i++)
        XT_OK(xdev_free(ptrs[i]));
    free(got_u), free(got_z), free(want_u), free(want_z), free(prev);
}
END_TEST

/* A replay of a graph whose generator was destroyed fails cleanly. */
START_TEST(rng_generator_destroyed) {
    float *u = dalloc(64 * sizeof(float));
    xdev_generator_t gen;
    XT_OK(xdev_generator_create(xt_dev(0), 7, &gen));
    xdev_stream_t s = new_stream(0);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_rng_uniform(gen, XDEV_DTYPE_F32, u, 64, s));
    XT_OK(xdev_graph_capture_end(g));
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_generator_destroy(gen));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_graph_replay(g, s), "generator");
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(u));
}
END_TEST

/* --------------------------------------------------- what a capture refuses */

typedef enum {
    BAD_DEVICE_SYNC,
    BAD_STREAM_SYNC,
    BAD_STREAM_QUERY,
    BAD_BLOCKING_COPY,
    BAD_PAGEABLE_COPY,
    BAD_EMPTY_CACHE,
    BAD_EVENT_OUTSIDE,
    BAD_DESTROY_STREAM,
    BAD_NEW_SEGMENT,
    BAD_EVENT_QUERY,
    BAD_COUNT
} bad_op_t;

static const char *const k_bad_needle[] = {"xdev_device_synchronize",
                                           "synchronize of a capturing stream",
                                           "query of a capturing",
                                           "blocking copy",
                                           "pageable",
                                           "xdev_empty_cache",
                                           "outside the capture",
                                           "destroying a capturing stream",
                                           "new memory from the backend",
                                           "query of an event recorded in the capture"};

START_TEST(illegal_ops_invalidate) {
    float *d = dalloc(4096);
    float host[16] = {0};
    xdev_event_t outside, inside;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &outside));
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &inside));
    xdev_stream_t other = new_stream(0);
    for (int op = 0; op < BAD_COUNT; op++) {
        xdev_stream_t s = new_stream(0);
        XT_OK(xdev_event_record(outside, NULL));
        xdev_graph_t g;
        XT_OK(xdev_graph_create(&g));
        XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
        XT_OK(xdev_memset_async(d, 0, 4096, s));
        xdev_status_t st = XDEV_SUCCESS;
        switch ((bad_op_t)op) {
        case BAD_DEVICE_SYNC:
            st = xdev_device_synchronize(xt_dev(0));
            break;
        case BAD_STREAM_SYNC:
            st = xdev_stream_synchronize(s);
            break;
        case BAD_STREAM_QUERY:
            st = xdev_stream_query(s);
            break;
        case BAD_BLOCKING_COPY:
            st = xdev_memcpy(host, d, sizeof host);
            break;
        case BAD_PAGEABLE_COPY:
            st = xdev_memcpy_async(d, host, sizeof host, s);
            break;
        case BAD_EMPTY_CACHE:
            st = xdev_empty_cache();
            break;
        case BAD_EVENT_OUTSIDE:
            st = xdev_stream_wait_event(s, outside);
            break;
        case BAD_DESTROY_STREAM:
            st = xdev_stream_destroy(s);
            break;
        case BAD_EVENT_QUERY:
            XT_OK(xdev_event_record(inside, s));
            st = xdev_event_query(inside);
            break;
        case BAD_NEW_SEGMENT: { /* on another stream: not the capture's pool */
            void *big = NULL;
            st = xdev_malloc_stream(&big, (size_t)48 << 20, other);
            ck_assert_ptr_null(big);
            break;
        }
        default:
            break;
        }
        ck_assert_msg(st == XDEV_ERROR_CAPTURE, "op %d: %s, \"%s\"", op, xdev_status_string(st),
                      xdev_last_error());
        ck_assert_msg(xt_icontains(xdev_last_error(), k_bad_needle[op]), "op %d: \"%s\"", op,
                      xdev_last_error());
        st = xdev_graph_capture_end(g);
        ck_assert_msg(st == XDEV_ERROR_CAPTURE, "end after op %d: %s", op, xdev_status_string(st));
        ck_assert_msg(xt_icontains(xdev_last_error(), "invalidated") &&
                          xt_icontains(xdev_last_error(), k_bad_needle[op]),
                      "end after op %d: \"%s\"", op, xdev_last_error());
        XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(g, s), "nothing to replay");
        /* the stream works eagerly again, and the graph captures again */
        XT_OK(xdev_memset_async(d, 1, 4096, s));
        XT_OK(xdev_stream_synchronize(s));
        XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
        XT_OK(xdev_graph_capture_end(g));
        XT_OK(xdev_graph_destroy(g));
        XT_OK(xdev_stream_destroy(s));
    }
    XT_OK(xdev_event_destroy(outside));
    XT_OK(xdev_event_destroy(inside));
    XT_OK(xdev_stream_destroy(other));
    XT_OK(xdev_free(d));
}
END_TEST

/* ------------------------------------------------------------------ modes */

typedef struct other_call {
    xdev_status_t st;
} other_call_t;

static void *empty_cache_thread(void *arg) {
    other_call_t *c = arg;
    c->st = xdev_empty_cache();
    return NULL;
}

static xdev_status_t empty_cache_elsewhere(void) {
    pthread_t t;
    other_call_t c = {XDEV_SUCCESS};
    ck_assert_int_eq(pthread_create(&t, NULL, empty_cache_thread, &c), 0);
    pthread_join(t, NULL);
    return c.st;
}

START_TEST(capture_modes) {
    xdev_stream_t s = new_stream(0);
    const xdev_capture_mode_t modes[] = {XDEV_CAPTURE_GLOBAL, XDEV_CAPTURE_THREAD_LOCAL,
                                         XDEV_CAPTURE_RELAXED};
    for (int i = 0; i < 3; i++) {
        xdev_graph_t g;
        XT_OK(xdev_graph_create(&g));
        XT_OK(xdev_graph_capture_begin(g, s, modes[i], NULL));
        xdev_status_t other = empty_cache_elsewhere();
        if (modes[i] == XDEV_CAPTURE_GLOBAL)
            ck_assert_msg(other == XDEV_ERROR_CAPTURE, "global: another thread's empty_cache: %s",
                          xdev_status_string(other));
        else
            ck_assert_msg(other == XDEV_SUCCESS, "mode %d: another thread's empty_cache: %s",
                          (int)modes[i], xdev_last_error());
        xdev_status_t mine = xdev_empty_cache();
        ck_assert_msg((mine == XDEV_SUCCESS) == (modes[i] == XDEV_CAPTURE_RELAXED),
                      "mode %d: the capturing thread's empty_cache: %s", (int)modes[i],
                      xdev_status_string(mine));
        xdev_status_t end = xdev_graph_capture_end(g);
        ck_assert_msg((end == XDEV_SUCCESS) == (modes[i] == XDEV_CAPTURE_RELAXED),
                      "mode %d: end %s", (int)modes[i], xdev_status_string(end));
        XT_OK(xdev_graph_destroy(g));
    }
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* ---------------------------------------------------------------- tracing */

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Replays are one span each, named by the graph's id; what the capture
 * recorded (and did not run) leaves no span. */
START_TEST(replays_traced) {
    char path[256];
    snprintf(path, sizeof path, "%s/xdev-graph-%d-trace.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    float *d = dalloc(4096);
    xdev_stream_t s = new_stream(0);
    XT_OK(xdev_trace_start(path));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    for (int i = 0; i < 5; i++)
        XT_OK(xdev_fill_async(d, XDEV_DTYPE_F32, xdev_scalar_f64(i), 1024, s));
    XT_OK(xdev_graph_capture_end(g));
    for (int i = 0; i < 3; i++)
        XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_trace_stop());
    uint64_t id = 0;
    XT_OK(xdev_graph_id(g, &id));
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no trace at %s", path);
    static char json[1 << 20];
    size_t n = fread(json, 1, sizeof json - 1, f);
    json[n] = '\0';
    fclose(f);
    remove(path);
    /* each span: its enqueue on the host and its run on the stream */
    const char *run = "\"name\":\"graph_replay\",\"cat\":\"stream\"";
    ck_assert_msg(count_of(json, run) == 3, "graph_replay spans on the stream: %d",
                  count_of(json, run));
    ck_assert_msg(count_of(json, xt_fmt("\"graph\":%llu", (unsigned long long)id)) == 6,
                  "spans naming graph %llu: %d", (unsigned long long)id,
                  count_of(json, xt_fmt("\"graph\":%llu", (unsigned long long)id)));
    ck_assert_msg(count_of(json, "\"name\":\"fill\"") == 0, "captured fills were traced");
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(d));
}
END_TEST

/* -------------------------------------------------------------- bad input */

START_TEST(bad_input) {
    xdev_graph_t g;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_create(NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(NULL, NULL), "NULL");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_graph_replay((xdev_graph_t)&g, NULL),
           "not an xdev graph");
    XT_OK(xdev_graph_create(&g));
    xdev_stream_t s = new_stream(0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_capture_begin(g, s, (xdev_capture_mode_t)7, NULL),
           "mode 7");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_capture_end(g), "without capture_begin");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(g, s), "nothing to replay");
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL),
           "begun twice");
    xdev_graph_t g2;
    XT_OK(xdev_graph_create(&g2));
    XT_ERR(XDEV_ERROR_CAPTURE, xdev_graph_capture_begin(g2, s, XDEV_CAPTURE_GLOBAL, NULL),
           "already capturing");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(g, s), "still capturing");
    XT_ERR(XDEV_ERROR_CAPTURE, xdev_graph_reset(g), "end the capture");
    XT_OK(xdev_graph_capture_end(g));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL),
           "reset it first");
    if (xt_has_devices(__func__, 2, "cross-device replay and pools")) {
        xdev_stream_t other = new_stream(1);
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_graph_replay(g, other), xt_name(1));
        xdev_mempool_t pool1;
        XT_OK(xdev_mempool_create(xt_dev(1), NULL, &pool1));
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_graph_capture_begin(g2, s, XDEV_CAPTURE_GLOBAL, pool1),
               "pool belongs");
        XT_OK(xdev_mempool_destroy(pool1));
        XT_OK(xdev_stream_destroy(other));
    }
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_graph_destroy(g));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_graph_replay(g, s), "destroyed");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_graph_destroy(g), "destroyed");
    XT_OK(xdev_graph_destroy(g2));
    /* pools */
    xdev_mempool_t p;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mempool_create(xt_dev(0), NULL, NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_mempool_create(xt_dev(99), NULL, &p), "99");
    xdev_allocator_t half = {sizeof half, NULL, custom_malloc, NULL, NULL};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mempool_create(xt_dev(0), &half, &p), "free");
    /* an older header's struct (no empty_cache) is taken, as xdev_set_allocator takes it;
     * one that ends inside free is not */
    xdev_allocator_t older = {offsetof(xdev_allocator_t, empty_cache), NULL, custom_malloc,
                              custom_free, NULL};
    XT_OK(xdev_mempool_create(xt_dev(0), &older, &p));
    XT_OK(xdev_mempool_destroy(p));
    older.size = offsetof(xdev_allocator_t, free);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mempool_create(xt_dev(0), &older, &p), "size");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mempool_use_begin(NULL), "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mempool_use_end(NULL), "no xdev_mempool_use_begin");
    xdev_mempool_t p2;
    XT_OK(xdev_mempool_create(xt_dev(0), NULL, &p));
    XT_OK(xdev_mempool_create(xt_dev(0), NULL, &p2));
    XT_OK(xdev_mempool_use_begin(p));
    XT_OK(xdev_mempool_use_begin(p2));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mempool_use_end(p), "reverse order");
    XT_OK(xdev_mempool_use_end(p2));
    XT_OK(xdev_mempool_use_end(p));
    XT_OK(xdev_mempool_destroy(p));
    XT_OK(xdev_mempool_destroy(p2));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_is_capturing(s, NULL), "out");
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

void graph_add_edge_tests(TCase *tc); /* test_graph_edges.c */

int main(int argc, char **argv) {
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("graph");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, capture_each_op);
    tcase_add_test(tc, fork_join);
    tcase_add_test(tc, unjoined_fork);
    tcase_add_test(tc, collective_in_graph);
    tcase_add_test(tc, rng_per_replay);
    tcase_add_test(tc, rng_generator_destroyed);
    graph_pool_tests(tc);
    tcase_add_test(tc, illegal_ops_invalidate);
    tcase_add_test(tc, capture_modes);
    tcase_add_test(tc, replays_traced);
    tcase_add_test(tc, bad_input);
    graph_add_edge_tests(tc);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "graph", argc, argv);
}
