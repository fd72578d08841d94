/* SPDX-License-Identifier: Apache-2.0 */
/* test_graph_pools.c - graphs' memory pools (xdev/graph.h): a capture's
 * private pool (reuse inside the capture, kept through empty_cache, shared
 * with another graph, released with its last graph), blocks freed during
 * one or two captures kept until their graphs go (their memory held, every
 * checked call and a second free refusing them as freed), and user pools with
 * their use scopes (snapshot and summary name them; an application
 * allocator under a pool). Part of test_graph (suite graph; test_graph.c's
 * main adds them), apart from the capture and replay tests so each file
 * holds one concept. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_kernels.h"
#include "test_graph_common.h"

START_TEST(private_pool) {
    xdev_stream_t s = new_stream(0);
    void *outside = NULL;
    XT_OK(xdev_malloc_stream(&outside, 4096, s));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    xdev_mempool_t none = (xdev_mempool_t)1;
    XT_OK(xdev_graph_pool(g, &none));
    ck_assert_ptr_null(none);
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    void *a = NULL, *b = NULL;
    XT_OK(xdev_malloc_stream(&a, 4096, s));
    XT_OK(xdev_memset_async(a, 3, 4096, s));
    XT_OK(xdev_free(a)); /* back to the pool: the next allocation of the capture may reuse it */
    XT_OK(xdev_malloc_stream(&b, 4096, s));
    ck_assert_ptr_eq(a, b);
    XT_OK(xdev_memset_async(b, 4, 4096, s));
    void *t = NULL; /* a temporary: free after the capture, used by every replay */
    XT_OK(xdev_malloc_stream(&t, (size_t)12 << 20, s));
    XT_OK(xdev_memset_async(t, 6, (size_t)12 << 20, s));
    XT_OK(xdev_free(t));
    XT_OK(xdev_graph_capture_end(g));
    xdev_mempool_t pool = NULL;
    XT_OK(xdev_graph_pool(g, &pool));
    ck_assert_ptr_nonnull(pool);
    xdev_mempool_usage_t u;
    XT_OK(xdev_mempool_usage(pool, &u));
    ck_assert_msg(u.id > 0 && u.graphs == 1 && u.segments >= 1 && u.reserved_bytes >= 4096,
                  "usage: id %llu graphs %d segments %zu reserved %zu", (unsigned long long)u.id,
                  u.graphs, u.segments, u.reserved_bytes);
    ck_assert_msg(u.allocations == 1, "b is live in the pool: %zu allocations", u.allocations);
    ck_assert_uint_ge(u.reserved_bytes, (size_t)12 << 20);
    XT_DEV_EQ(u.device, xt_dev(0));
    /* The pool's memory is not handed to allocations outside it. */
    void *c = NULL;
    XT_OK(xdev_malloc_stream(&c, 4096, s));
    ck_assert_ptr_ne(c, b);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_empty_cache()); /* the pool's memory stays: its replays need it */
    xdev_mempool_usage_t after_empty;
    XT_OK(xdev_mempool_usage(pool, &after_empty));
    ck_assert_uint_eq(after_empty.reserved_bytes, u.reserved_bytes);
    XT_OK(xdev_graph_replay(g, s));
    unsigned char h[16];
    fetch(h, b, sizeof h, s);
    ck_assert_int_eq(h[0], 4);
    /* Another graph shares the pool. */
    xdev_graph_t g2;
    XT_OK(xdev_graph_create(&g2));
    XT_OK(xdev_graph_capture_begin(g2, s, XDEV_CAPTURE_GLOBAL, pool));
    void *d = NULL;
    XT_OK(xdev_malloc_stream(&d, 4096, s));
    XT_OK(xdev_memset_async(d, 5, 4096, s));
    XT_OK(xdev_graph_capture_end(g2));
    XT_OK(xdev_mempool_usage(pool, &u));
    ck_assert_int_eq(u.graphs, 2);
    ck_assert_uint_eq(u.allocations, 2);
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(d));
    XT_OK(xdev_graph_reset(g));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(g, s), "reset|released");
    XT_OK(xdev_mempool_usage(pool, &u));
    ck_assert_int_eq(u.graphs, 1);
    XT_OK(xdev_graph_destroy(g2)); /* the last holder: the pool is released */
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_mempool_usage(pool, &u), "released");
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_free(c));
    XT_OK(xdev_free(outside));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* The device's live allocations and their bytes, as the statistics say. */
static void held(int64_t *allocations, int64_t *bytes) {
    xdev_memory_stats_t st = xt_mem_stats(0);
    *allocations = st.allocation[XDEV_STAT_ALL].current;
    *bytes = st.allocated_bytes[XDEV_STAT_ALL].current;
}

/* The statistics show `given_back` 8 KiB blocks fewer than n0 / bytes0. */
static void expect_held(int64_t n0, int64_t bytes0, int given_back, const char *when) {
    int64_t n, bytes;
    held(&n, &bytes);
    ck_assert_msg(n == n0 - given_back && bytes == bytes0 - 8192 * given_back,
                  "%s: %lld allocations, %lld bytes held (%lld, %lld before the free)", when,
                  (long long)n, (long long)bytes, (long long)n0, (long long)bytes0);
}

/* A new graph, capturing on s (global mode, a private pool). */
static xdev_graph_t capture_on(xdev_stream_t s) {
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    return g;
}

/* Every checked call refuses `a`, a block freed during a capture: as freed,
 * and while its graph lives (kept) as kept for the graph's replays. */
static void expect_refused(float *a, xdev_stream_t s, bool kept) {
    const char *why = kept ? "kept for the graph's replays" : "freed";
    unsigned char h[8];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(a, 0, 8, s), "freed", why);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(h, a, sizeof h), "freed", why);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy_async(a, h, sizeof h, s), "freed", why);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy_async(h, a + 4, sizeof h, s), "freed", why);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 16, s), "freed",
           why);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_record_stream(a, s), "freed");
    xdev_device_t d;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_of(a, &d), "");
    xdev_module_t m;
    XT_OK(xdev_module_load(xt_dev(0), conformance_kernels_bundle(), &m));
    xdev_kernel_t k = NULL;
    XT_OK(xdev_module_get_kernel(m, "saxpy", &k));
    xdev_launch_config_t cfg = {.grid = {1, 1, 1}, .block = {16, 1, 1}, .stream = s};
    long n = 16;
    float alpha = 1.0f;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, alpha, a, a), "freed", why);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_module_unload(m));
}

/* A block from outside the pool, freed during the capture that used it, is
 * kept for the graph: its replays still write it (a copy captured after the
 * write shows it), its memory stays allocated and goes to no new allocation
 * while the graph lives; but the caller freed it, so every checked call
 * refuses it as freed, while the graph lives and after it goes. */
START_TEST(free_during_capture_kept) {
    xdev_stream_t s = new_stream(0);
    float *a = NULL;
    unsigned char *out = NULL;
    XT_OK(xdev_malloc_stream((void **)&a, 8192, s));
    XT_OK(xdev_malloc_stream((void **)&out, 8192, s));
    int64_t n0, bytes0;
    held(&n0, &bytes0);
    xdev_graph_t g = capture_on(s);
    XT_OK(xdev_memset_async(a, 9, 8192, s));
    XT_OK(xdev_memcpy_async(out, a, 8192, s)); /* what the replay wrote, where a test may look */
    XT_OK(xdev_free(a));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(a, 1, 8, s), "freed", "graph");
    XT_OK(xdev_graph_capture_end(g));
    expect_held(n0, bytes0, 0, "the kept block is not held");
    void *b[4];
    for (int i = 0; i < 4; i++) {
        XT_OK(xdev_malloc_stream(&b[i], 8192, s));
        ck_assert_msg(b[i] != (void *)a, "memory the graph uses went to a new allocation");
    }
    for (int i = 0; i < 4; i++)
        XT_OK(xdev_free(b[i]));
    XT_OK(xdev_memset_async(out, 0, 8192, s));
    XT_OK(xdev_graph_replay(g, s));
    unsigned char h[8];
    fetch(h, out + 4096, sizeof h, s);
    ck_assert_int_eq(h[3], 9);
    expect_refused(a, s, true);
    XT_OK(xdev_graph_replay(g, s)); /* the refusals changed nothing the graph uses */
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_graph_destroy(g)); /* the kept block is freed now */
    expect_held(n0, bytes0, 1, "the kept block was not given back with its graph");
    expect_refused(a, s, false);
    XT_OK(xdev_free(out));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* A second xdev_free of a kept block is a double free, during the capture,
 * while the graph lives and after it goes; so is the free of a pointer into
 * it. None of them changes what the graph holds: the block is given back
 * once, with the graph. */
START_TEST(kept_block_double_free) {
    xdev_stream_t s = new_stream(0);
    unsigned char *a = NULL;
    XT_OK(xdev_malloc_stream((void **)&a, 8192, s));
    int64_t n0, bytes0;
    held(&n0, &bytes0);
    xdev_graph_t g = capture_on(s);
    XT_OK(xdev_memset_async(a, 5, 8192, s));
    XT_OK(xdev_free(a));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(a), "double free", "graph");
    XT_OK(xdev_graph_capture_end(g));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(a), "double free", "kept for the graph's replays");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(a + 512), "freed", "graph");
    expect_held(n0, bytes0, 0, "a double free changed what the graph holds");
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_graph_destroy(g));
    expect_held(n0, bytes0, 1, "the kept block was not given back once");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(a), "not a live allocation", "double free");
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* Threads' caches of blocks found live (math operands, kernel arguments)
 * never accept a kept block: one that held it before its free during the
 * capture looks again and refuses it (here another thread's, below this
 * thread's); nothing caches it while the graph lives; when the graph goes,
 * the block made at its address is checked at its own, smaller size. */
typedef struct kept_walk {
    float *a;
    xdev_stream_t s;
    pthread_barrier_t met; /* passed twice: the worker checked a; a is freed and kept */
    xdev_status_t first, second;
    char why[512];
} kept_walk_t;

static void *kept_walker(void *p) {
    kept_walk_t *w = p;
    w->first = xdev_rng_uniform(NULL, XDEV_DTYPE_F32, w->a, 1024, w->s);
    if (w->first == XDEV_SUCCESS) w->first = xdev_stream_synchronize(w->s);
    pthread_barrier_wait(&w->met);
    pthread_barrier_wait(&w->met);
    w->second = xdev_rng_uniform(NULL, XDEV_DTYPE_F32, w->a, 1024, w->s);
    snprintf(w->why, sizeof w->why, "%s", xdev_last_error());
    return NULL;
}

START_TEST(kept_block_forgotten_with_graph) {
    xdev_stream_t s = new_stream(0);
    kept_walk_t w = {.s = new_stream(0)};
    pthread_barrier_init(&w.met, NULL, 2);
    XT_OK(xdev_malloc_stream((void **)&w.a, 4096, s));
    float *a = w.a;
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, s)); /* into this thread's cache */
    XT_OK(xdev_stream_synchronize(s));
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, kept_walker, &w), 0);
    pthread_barrier_wait(&w.met); /* ... and the worker's */
    xdev_graph_t g = capture_on(s);
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, s));
    XT_OK(xdev_free(a)); /* kept for the graph */
    XT_OK(xdev_graph_capture_end(g));
    pthread_barrier_wait(&w.met);
    pthread_join(th, NULL);
    ck_assert_msg(w.first == XDEV_SUCCESS && w.second == XDEV_ERROR_INVALID_VALUE &&
                      strstr(w.why, "kept for the graph's replays") != NULL,
                  "the worker's calls before and after the free: %s, then %s \"%s\"",
                  xdev_status_string(w.first), xdev_status_string(w.second), w.why);
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < 2; i++) /* refused, so never cached: refused again */
        XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, s),
               "freed", "graph");
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_graph_destroy(g)); /* the kept block is freed now */
    xt_churn_unchecked(s);        /* temporaries no call checks */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, s), "freed");
    float *b = NULL;
    XT_OK(xdev_malloc_stream((void **)&b, 4000, s));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, b, 1024, s),
           "past the end");
    /* an interior pointer: found by the segment walk, which must not see the
     * kept mark of the block that was here */
    XT_OK(xdev_memset_async(b + 16, 0, 64, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_free(b));
    XT_OK(xdev_stream_destroy(w.s));
    XT_OK(xdev_stream_destroy(s));
    pthread_barrier_destroy(&w.met);
}
END_TEST

/* A block freed while two captures are under way is kept until both graphs
 * are gone (either may use it). */
START_TEST(free_during_two_captures) {
    xdev_stream_t s1 = new_stream(0), s2 = new_stream(0);
    unsigned char *x = NULL, *out = NULL;
    XT_OK(xdev_malloc_stream((void **)&x, 8192, s1));
    XT_OK(xdev_malloc_stream((void **)&out, 8192, s1));
    xdev_graph_t a, b;
    XT_OK(xdev_graph_create(&a));
    XT_OK(xdev_graph_create(&b));
    XT_OK(xdev_graph_capture_begin(a, s1, XDEV_CAPTURE_RELAXED, NULL));
    XT_OK(xdev_graph_capture_begin(b, s2, XDEV_CAPTURE_RELAXED, NULL));
    XT_OK(xdev_memset_async(x, 9, 8192, s1));   /* graph a uses x */
    XT_OK(xdev_memcpy_async(out, x, 8192, s1)); /* what its replay wrote */
    XT_OK(xdev_memset_async(x, 0, 0, s2));
    XT_OK(xdev_free(x));
    XT_OK(xdev_graph_capture_end(a));
    XT_OK(xdev_graph_capture_end(b));
    XT_OK(xdev_graph_destroy(b)); /* a still uses x */
    void *y = NULL;
    XT_OK(xdev_malloc_stream(&y, 8192, s1));
    ck_assert_msg((void *)x != y, "graph a's memory went to a new allocation when b was destroyed");
    XT_OK(xdev_memset_async(out, 0, 8192, s1));
    XT_OK(xdev_graph_replay(a, s1));
    unsigned char h[4];
    fetch(h, out, sizeof h, s1);
    ck_assert_int_eq(h[2], 9);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(x, 0, 8, s1), "freed", "graph");
    XT_OK(xdev_graph_destroy(a));
    XT_OK(xdev_free(y));
    XT_OK(xdev_free(out));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
}
END_TEST

/* An application allocator over host memory, counting its calls
 * (user_pool_scope; test_graph.c's bad_input hands it to pools too). */
static int g_custom_mallocs, g_custom_frees;
xdev_status_t custom_malloc(void *ctx, xdev_device_t device, size_t size, xdev_stream_t stream,
                            void **out) {
    (void)ctx, (void)device, (void)stream;
    g_custom_mallocs++;
    *out = aligned_alloc(256, (size + 255) / 256 * 256);
    return *out != NULL ? XDEV_SUCCESS : XDEV_ERROR_OUT_OF_MEMORY;
}
xdev_status_t custom_free(void *ctx, xdev_device_t device, void *ptr, size_t size,
                          xdev_stream_t stream) {
    (void)ctx, (void)device, (void)size, (void)stream;
    g_custom_frees++;
    free(ptr);
    return XDEV_SUCCESS;
}

START_TEST(user_pool_scope) {
    xdev_mempool_t pool;
    XT_OK(xdev_mempool_create(xt_dev(0), NULL, &pool));
    XT_OK(xdev_mempool_use_begin(pool));
    void *a = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &a, 10000));
    XT_OK(xdev_mempool_use_end(pool));
    void *b = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &b, 10000));
    xdev_mempool_usage_t u;
    XT_OK(xdev_mempool_usage(pool, &u));
    ck_assert_uint_eq(u.allocations, 1);
    ck_assert_uint_ge(u.allocated_bytes, 10000);
    ck_assert_int_eq(u.graphs, 0);
    /* snapshots name the pool of each segment */
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    ck_assert_msg(strstr(json, xt_fmt("\"pool\":%llu", (unsigned long long)u.id)) != NULL,
                  "the snapshot does not name pool %llu", (unsigned long long)u.id);
    free(json);
    char *summary = NULL;
    XT_OK(xdev_memory_summary(xt_dev(0), false, &summary));
    ck_assert_msg(strstr(summary, xt_fmt("pool %llu: 1 segments", (unsigned long long)u.id)),
                  "the summary does not show pool %llu:\n%s", (unsigned long long)u.id, summary);
    free(summary);
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_mempool_destroy(pool));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_mempool_destroy(pool), "released|destroyed");
    /* destroyed while a scope is open: routing ends, the scope's end says so */
    XT_OK(xdev_mempool_create(xt_dev(0), NULL, &pool));
    XT_OK(xdev_mempool_use_begin(pool));
    XT_OK(xdev_mempool_destroy(pool));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_mempool_usage(pool, &u), "released|destroyed");
    XT_OK(xdev_malloc_device(xt_dev(0), &a, 10000)); /* the device's cache */
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_mempool_use_end(pool), "destroyed while this scope");
    XT_OK(xdev_free(a));
    /* an application allocator under a pool (host memory: host-addressable backends) */
    if (!xt_host_addressable()) XT_SKIP("custom pool allocator: device memory is not host memory");
    xdev_allocator_t al = {sizeof al, NULL, custom_malloc, custom_free, NULL};
    g_custom_mallocs = g_custom_frees = 0;
    XT_OK(xdev_mempool_create(xt_dev(0), &al, &pool));
    XT_OK(xdev_mempool_use_begin(pool));
    XT_OK(xdev_malloc_device(xt_dev(0), &a, 3 << 20));
    XT_OK(xdev_mempool_use_end(pool));
    ck_assert_int_eq(g_custom_mallocs, 1);
    memset(a, 1, 3 << 20); /* host memory: writable */
    XT_OK(xdev_free(a));
    XT_OK(xdev_mempool_destroy(pool));
    ck_assert_int_eq(g_custom_frees, 1);
}
END_TEST
void graph_pool_tests(TCase *tc) {
    tcase_add_test(tc, private_pool);
    tcase_add_test(tc, free_during_capture_kept);
    tcase_add_test(tc, kept_block_double_free);
    tcase_add_test(tc, kept_block_forgotten_with_graph);
    tcase_add_test(tc, free_during_two_captures);
    tcase_add_test(tc, user_pool_scope);
}
