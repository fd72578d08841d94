/* SPDX-License-Identifier: Apache-2.0 */
/* test_enqueue_observer.c - every stream-ordered call goes through the one
 * enqueue path (core/runtime/enqueue.h): an observer registered there
 * (xdev_enqueue_observer_add, a hook exported for this suite) sees one op of
 * each kind, with its kind, its stream and its operands, for one call of
 * each: copies in every direction, memset, fill, conversion, kernel launch,
 * element-wise kernel, graph replay, GEMM, axpy, FFT, a random fill, a reduce
 * and a scan (the primitives), host function, event record, both stream
 * waits, reduce_add's add and a communicator's all_reduce on two ranks. A call
 * that skipped the path would be missing here - and from the sanitizer, the
 * tracer and whatever observes next. Runs on the CPU backend with two
 * devices. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_kernels.h"
#include "runtime/enqueue.h" /* xdev_enqueue_observer_add: a hook exported for this suite */
#include "xdev/xdev.h"
#include "xt.h"

/* ------------------------------------------------------------ the log */

enum { MAXOPS = 64 };
typedef struct seen {
    xdev_op_kind_t kind;
    xdev_stream_t stream;
    char name[64];
    int nuses;
    xdev_op_use_t uses[4];
} seen_t;
static seen_t g_seen[MAXOPS];
static int g_nseen;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void observe(const xdev_enqueue_t *q, const xdev_op_use_t *uses, int nuses, void *user) {
    ck_assert_ptr_eq(user, &g_seen);
    pthread_mutex_lock(&g_lock);
    if (g_nseen < MAXOPS) {
        seen_t *e = &g_seen[g_nseen];
        e->kind = q->kind;
        e->stream = q->stream;
        snprintf(e->name, sizeof e->name, "%s", q->name);
        e->nuses = nuses;
        for (int i = 0; i < nuses && i < 4; i++)
            e->uses[i] = uses[i];
    }
    g_nseen++;
    pthread_mutex_unlock(&g_lock);
}

static void forget(void) {
    pthread_mutex_lock(&g_lock);
    g_nseen = 0;
    pthread_mutex_unlock(&g_lock);
}

static const char *kind_name(xdev_op_kind_t k) {
    static const char *const names[XDEV_OP_KINDS] = {
        "copy",         "memset",     "fill",    "convert", "kernel",        "elementwise",
        "graph replay", "blas",       "fft",     "rng",     "host function", "event record",
        "stream wait",  "reduce_add", "reduce",  "scan",    "collective",    "sort",
        "histogram",    "select",     "prefetch"};
    return (unsigned)k < XDEV_OP_KINDS ? names[k] : "?";
}

/* The op seen last must be one of `kind` on stream s (NULL: any) with uses
 * want[0..n) (n < 0: not checked). `call` names the call for messages. */
static void expect_op(const char *call, xdev_op_kind_t kind, xdev_stream_t s,
                      const xdev_op_use_t *want, int n) {
    pthread_mutex_lock(&g_lock);
    int count = g_nseen;
    seen_t e = count > 0 ? g_seen[count - 1] : (seen_t){0};
    pthread_mutex_unlock(&g_lock);
    ck_assert_msg(count == 1, "%s: the enqueue observer saw %d ops, expected 1 (%s)", call, count,
                  kind_name(kind));
    ck_assert_msg(e.kind == kind, "%s: the observer saw a '%s' op (%s), expected '%s'", call,
                  kind_name(e.kind), e.name, kind_name(kind));
    if (s != NULL)
        ck_assert_msg(e.stream == s, "%s: the op was seen on stream %p, not the call's %p", call,
                      (void *)e.stream, (void *)s);
    if (n < 0) return;
    ck_assert_msg(e.nuses == n, "%s: %d operands seen, expected %d", call, e.nuses, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(e.uses[i].p == want[i].p && e.uses[i].n == want[i].n &&
                          e.uses[i].mode == want[i].mode && e.uses[i].fp == want[i].fp,
                      "%s: operand %d seen as {%p, %zu, %s, fp %d}, expected {%p, %zu, %s, fp %d}",
                      call, i, e.uses[i].p, e.uses[i].n,
                      e.uses[i].mode == XDEV_OP_WRITE ? "write" : "read", e.uses[i].fp, want[i].p,
                      want[i].n, want[i].mode == XDEV_OP_WRITE ? "write" : "read", want[i].fp);
    forget();
}

#define R(p, n) ((xdev_op_use_t){(p), (n), XDEV_OP_READ, 0})
#define W(p, n) ((xdev_op_use_t){(p), (n), XDEV_OP_WRITE, 0})
/* a kernel's pointer to float (const or not): its elements are f32 */
#define RF(p, n) ((xdev_op_use_t){(p), (n), XDEV_OP_READ, 4})
#define WF(p, n) ((xdev_op_use_t){(p), (n), XDEV_OP_WRITE, 4})

/* ------------------------------------------------------------ the calls */

enum { N = 256 };
static xdev_device_t dev0;
static xdev_stream_t s;
static float *x, *y, *h, *pinned;

static void setup(void) {
    XT_OK(xdev_init());
    dev0 = xt_dev(0);
    XT_OK(xdev_stream_create(dev0, XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_malloc_device(dev0, (void **)&x, N * sizeof(float)));
    XT_OK(xdev_malloc_device(dev0, (void **)&y, N * sizeof(float)));
    XT_OK(xdev_host_alloc((void **)&pinned, N * sizeof(float)));
    h = calloc(N, sizeof(float));
    ck_assert_ptr_nonnull(h);
    XT_OK(xdev_memset_async(x, 0, N * sizeof(float), s));
    XT_OK(xdev_memset_async(y, 0, N * sizeof(float), s));
    XT_OK(xdev_stream_synchronize(s));
    forget();
    XT_OK(xdev_enqueue_observer_add(observe, &g_seen));
}

static void teardown(void) {
    XT_OK(xdev_enqueue_observer_remove(observe, &g_seen));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_host_free(pinned));
    free(h);
    XT_OK(xdev_stream_destroy(s));
}

static void host_fn(void *user) {
    (void)user;
}

START_TEST(copies_and_memset) {
    const size_t b = N * sizeof(float);
    XT_OK(xdev_memcpy_async(x, pinned, b, s));
    expect_op("xdev_memcpy_async (HtoD)", XDEV_OP_COPY, s, (xdev_op_use_t[]){R(pinned, b), W(x, b)},
              2);
    XT_OK(xdev_memcpy_async(y, x, b, s));
    expect_op("xdev_memcpy_async (DtoD)", XDEV_OP_COPY, s, (xdev_op_use_t[]){R(x, b), W(y, b)}, 2);
    XT_OK(xdev_memcpy_async(pinned, y, b, s));
    expect_op("xdev_memcpy_async (DtoH)", XDEV_OP_COPY, s, (xdev_op_use_t[]){R(y, b), W(pinned, b)},
              2);
    XT_OK(xdev_stream_synchronize(s));
    forget();
    XT_OK(xdev_memcpy(h, x, b)); /* blocking: the current stream */
    expect_op("xdev_memcpy (DtoH)", XDEV_OP_COPY, NULL, (xdev_op_use_t[]){R(x, b), W(h, b)}, 2);
    XT_OK(xdev_memset_async(x, 0, b, s));
    expect_op("xdev_memset_async", XDEV_OP_MEMSET, s, (xdev_op_use_t[]){W(x, b)}, 1);
}
END_TEST

START_TEST(ops_blas_fft_rng) {
    const size_t b = N * sizeof(float);
    XT_OK(xdev_fill_async(x, XDEV_DTYPE_F32, xdev_scalar_f64(1), N, s));
    expect_op("xdev_fill_async", XDEV_OP_FILL, s, (xdev_op_use_t[]){W(x, b)}, 1);
    XT_OK(xdev_convert_async(y, XDEV_DTYPE_I32, x, XDEV_DTYPE_F32, N, s));
    expect_op("xdev_convert_async", XDEV_OP_CONVERT, s, (xdev_op_use_t[]){W(y, b), R(x, b)}, 2);
    XT_OK(xdev_axpy(XDEV_DTYPE_F32, N, 2.0, x, 1, y, 1, s));
    expect_op("xdev_axpy", XDEV_OP_BLAS, s, (xdev_op_use_t[]){W(y, b), R(x, b)}, 2);
    /* 16 x 16 times 16 x 16 */
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 16, 16, 16, 1.0, x, 16, x, 16,
                    0.0, y, 16, s));
    expect_op("xdev_gemm", XDEV_OP_BLAS, s, (xdev_op_use_t[]){W(y, b), R(x, b), R(x, b)}, 3);
    int64_t n = N / 2; /* N/2 complex f32 in, out */
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    XT_OK(xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_BACKWARD, s));
    expect_op("xdev_fft_exec", XDEV_OP_FFT, s, (xdev_op_use_t[]){W(y, b), R(x, b)}, 2);
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, x, N, s));
    expect_op("xdev_rng_uniform", XDEV_OP_RNG, s, (xdev_op_use_t[]){W(x, b)}, 1);
    XT_OK(xdev_prim_reduce(x, XDEV_DTYPE_F32, N, XDEV_PRIM_SUM, y, s));
    expect_op("xdev_prim_reduce", XDEV_OP_REDUCE, s,
              (xdev_op_use_t[]){W(y, sizeof(float)), R(x, b)}, 2);
    XT_OK(xdev_prim_scan(x, XDEV_DTYPE_F32, N, XDEV_PRIM_SUM, 0, y, s));
    expect_op("xdev_prim_scan", XDEV_OP_SCAN, s, (xdev_op_use_t[]){W(y, b), R(x, b)}, 2);
    XT_OK(xdev_prim_sort_keys(x, XDEV_DTYPE_F32, N, XDEV_PRIM_DESCENDING, 0, 0, y, s));
    expect_op("xdev_prim_sort_keys", XDEV_OP_SORT, s, (xdev_op_use_t[]){W(y, b), R(x, b)}, 2);
}
END_TEST

START_TEST(kernels_and_graphs) {
    const size_t b = N * sizeof(float);
    xdev_module_t m;
    XT_OK(xdev_module_load(dev0, conformance_kernels_bundle(), &m));
    xdev_kernel_t saxpy;
    XT_OK(xdev_module_get_kernel(m, "saxpy", &saxpy));
    long n = N;
    float a = 2.0f;
    xdev_arg_t args[] = {{&n, sizeof n}, {&a, sizeof a}, {&x, sizeof x}, {&y, sizeof y}};
    xdev_launch_config_t cfg = {.grid = {1, 1, 1}, .block = {N, 1, 1}, .stream = s};
    forget();
    XT_OK(xdev_launch_kernel(saxpy, &cfg, args, 4));
    /* pointer arguments: from the pointer to the allocation's end */
    expect_op("xdev_launch_kernel", XDEV_OP_KERNEL, s,
              (xdev_op_use_t[]){RF(x, SIZE_MAX), WF(y, SIZE_MAX)}, 2);
    const void *in[2] = {x, y};
    xdev_status_t st = xdev_elementwise("in0 + in1", XDEV_DTYPE_F32, 2, in, y, N, s);
    if (st == XDEV_ERROR_COMPILE || st == XDEV_ERROR_NOT_SUPPORTED) {
        xt_skip("elementwise", "no kernel compiler here: %s", xdev_last_error());
        forget();
    } else {
        XT_OK(st);
        expect_op("xdev_elementwise", XDEV_OP_ELEMENTWISE, s,
                  (xdev_op_use_t[]){R(x, b), R(y, b), W(y, b)}, 3);
    }
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_launch_kernel(saxpy, &cfg, args, 4));
    XT_OK(xdev_graph_capture_end(g));
    forget(); /* the captured launch went through the path too */
    XT_OK(xdev_graph_replay(g, s));
    expect_op("xdev_graph_replay", XDEV_OP_GRAPH_REPLAY, s, NULL, 0);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_elementwise_cache_clear()); /* its module, kept for the process */
}
END_TEST

START_TEST(host_functions_events_waits) {
    xdev_stream_t t;
    XT_OK(xdev_stream_create(dev0, XDEV_STREAM_PRIORITY_NORMAL, &t));
    xdev_event_t e;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e));
    XT_OK(xdev_launch_host_func(s, host_fn, NULL));
    expect_op("xdev_launch_host_func", XDEV_OP_HOST_FUNC, s, NULL, 0);
    XT_OK(xdev_event_record(e, t));
    expect_op("xdev_event_record", XDEV_OP_EVENT_RECORD, t, NULL, 0);
    XT_OK(xdev_stream_wait_event(s, e));
    expect_op("xdev_stream_wait_event", XDEV_OP_STREAM_WAIT, s, NULL, 0);
    XT_OK(xdev_stream_wait_stream(s, t));
    expect_op("xdev_stream_wait_stream", XDEV_OP_STREAM_WAIT, s, NULL, 0);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_stream_destroy(t));
}
END_TEST

/* reduce_add's sum on the destination's device: its add is an op (the
 * copies from the other devices are copies). */
START_TEST(reduce_add) {
    if (xt_device_count() < 2) XT_SKIP("needs two devices");
    const size_t b = N * sizeof(float);
    float *z;
    XT_OK(xdev_malloc_device(xt_dev(1), (void **)&z, b));
    XT_OK(xdev_memset_async(z, 0, b, NULL));
    XT_OK(xdev_synchronize());
    forget();
    const void *srcs[2] = {x, z};
    XT_OK(xdev_comm_reduce_add(srcs, 2, y, N, XDEV_DTYPE_F32));
    XT_OK(xdev_synchronize());
    pthread_mutex_lock(&g_lock);
    int adds = 0;
    for (int i = 0; i < g_nseen && i < MAXOPS; i++)
        if (g_seen[i].kind == XDEV_OP_REDUCE_ADD) {
            adds++;
            ck_assert_msg(g_seen[i].nuses == 2 && g_seen[i].uses[1].p == y &&
                              g_seen[i].uses[1].mode == XDEV_OP_WRITE,
                          "reduce_add's add: operands not {src read, dst written}");
        }
    pthread_mutex_unlock(&g_lock);
    ck_assert_msg(adds >= 1, "xdev_comm_reduce_add: the observer saw no add among %d ops", g_nseen);
    forget();
    XT_OK(xdev_free(z));
}
END_TEST

/* A communicator's collective and a send/recv pair: each rank's task is one
 * collective op on its stream with its buffers (two ranks on two devices,
 * one process). */
START_TEST(collectives) {
    if (xt_device_count() < 2) XT_SKIP("needs two devices");
    const size_t b = N * sizeof(float);
    xdev_communicator_t c[2];
    const xdev_device_t devs[2] = {xt_dev(0), xt_dev(1)};
    XT_OK(xdev_communicator_init_all(c, 2, devs));
    float *z, *w;
    XT_OK(xdev_malloc_device(xt_dev(1), (void **)&z, b));
    XT_OK(xdev_malloc_device(xt_dev(1), (void **)&w, b));
    XT_OK(xdev_memset_async(z, 0, b, NULL));
    XT_OK(xdev_synchronize());
    xdev_stream_t s1 = xt_new_stream(1);
    forget();
    XT_OK(xdev_group_start());
    XT_OK(xdev_all_reduce(c[0], x, y, N, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, s));
    XT_OK(xdev_all_reduce(c[1], z, w, N, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, s1));
    XT_OK(xdev_group_end());
    XT_OK(xdev_synchronize());
    pthread_mutex_lock(&g_lock);
    int seen = 0;
    for (int i = 0; i < g_nseen && i < MAXOPS; i++) {
        if (g_seen[i].kind != XDEV_OP_COLLECTIVE) continue;
        seen++;
        bool r0 = g_seen[i].stream == s;
        ck_assert_msg(g_seen[i].nuses == 2 && g_seen[i].uses[0].p == (r0 ? (void *)x : (void *)z) &&
                          g_seen[i].uses[0].mode == XDEV_OP_READ &&
                          g_seen[i].uses[1].p == (r0 ? (void *)y : (void *)w) &&
                          g_seen[i].uses[1].n == b && g_seen[i].uses[1].mode == XDEV_OP_WRITE,
                      "xdev_all_reduce: operands not {send read, recv written}");
    }
    pthread_mutex_unlock(&g_lock);
    ck_assert_msg(seen == 2, "xdev_all_reduce on two ranks: the observer saw %d collectives", seen);
    forget();
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_communicator_destroy(c[0]));
    XT_OK(xdev_communicator_destroy(c[1]));
    XT_OK(xdev_free(z));
    XT_OK(xdev_free(w));
}
END_TEST

/* The hook's own checks. */
START_TEST(observer_registration) {
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_enqueue_observer_add(NULL, NULL), "'fn' is NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_enqueue_observer_remove(observe, NULL), "not registered");
}
END_TEST

int main(int argc, char **argv) {
    Suite *su = suite_create("enqueue_observer");
    TCase *tc = tcase_create("cpu");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, copies_and_memset);
    tcase_add_test(tc, ops_blas_fft_rng);
    tcase_add_test(tc, kernels_and_graphs);
    tcase_add_test(tc, host_functions_events_waits);
    tcase_add_test(tc, reduce_add);
    tcase_add_test(tc, collectives);
    tcase_add_test(tc, observer_registration);
    suite_add_tcase(su, tc);
    return xt_run(srunner_create(su), "enqueue_observer", argc, argv);
}
