/* SPDX-License-Identifier: Apache-2.0 */
/* test_graph_pools.c - graphs' memory pools (xdev/graph.h): a capture's
 * private pool (reuse inside the capture, kept through empty_cache, shared
 * with another graph, released with its last graph), blocks freed during
 * one or two captures kept until their graphs go, and user pools with
 * their use scopes (snapshot and summary name them; an application
 * allocator under a pool). Part of test_graph (suite graph; test_graph.c's
 * main adds them), apart from the capture and replay tests so each file
 * holds one concept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A block from outside the pool, freed during the capture that used it, is
 * kept until the graph goes: eager allocations do not get it meanwhile. */
START_TEST(free_during_capture_kept) {
    xdev_stream_t s = new_stream(0);
    unsigned char *a = NULL;
    XT_OK(xdev_malloc_stream((void **)&a, 8192, s));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_memset_async(a, 9, 8192, s));
    XT_OK(xdev_free(a));
    XT_OK(xdev_graph_capture_end(g));
    void *b = NULL;
    XT_OK(xdev_malloc_stream(&b, 8192, s));
    ck_assert_msg(b != a, "memory the graph uses went to a new allocation");
    XT_OK(xdev_graph_replay(g, s));
    unsigned char h[8];
    fetch(h, a, sizeof h, s);
    ck_assert_int_eq(h[3], 9);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(a), "not a live allocation|already freed");
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_free(b));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* A block freed during a capture and kept for the graph stays in a thread's
 * cache of blocks found live (math operands, kernel arguments) while the
 * graph lives; when the graph goes and the block with it, the cache forgets
 * it even though no other checked block was freed: the next call refuses it,
 * and the block made at its address is checked at its own, smaller size. */
START_TEST(kept_block_forgotten_with_graph) {
    xdev_stream_t s = new_stream(0);
    float *a = NULL;
    XT_OK(xdev_malloc_stream((void **)&a, 4096, s));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, s));
    XT_OK(xdev_free(a)); /* kept for the graph */
    XT_OK(xdev_graph_capture_end(g));
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_stream_synchronize(s));
    /* the kept block, checked again: into this thread's cache (whether such a
     * call is accepted is not this test's matter) */
    (void)xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, s);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_graph_destroy(g)); /* the kept block is freed now */
    xt_churn_unchecked(s);        /* temporaries no call checks */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, s), "freed");
    float *b = NULL;
    XT_OK(xdev_malloc_stream((void **)&b, 4000, s));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, b, 1024, s),
           "past the end");
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_free(b));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* A block freed while two captures are under way is kept until both graphs
 * are gone (either may use it). */
START_TEST(free_during_two_captures) {
    xdev_stream_t s1 = new_stream(0), s2 = new_stream(0);
    unsigned char *x = NULL;
    XT_OK(xdev_malloc_stream((void **)&x, 8192, s1));
    xdev_graph_t a, b;
    XT_OK(xdev_graph_create(&a));
    XT_OK(xdev_graph_create(&b));
    XT_OK(xdev_graph_capture_begin(a, s1, XDEV_CAPTURE_RELAXED, NULL));
    XT_OK(xdev_graph_capture_begin(b, s2, XDEV_CAPTURE_RELAXED, NULL));
    XT_OK(xdev_memset_async(x, 9, 8192, s1)); /* graph a uses x */
    XT_OK(xdev_memset_async(x, 0, 0, s2));
    XT_OK(xdev_free(x));
    XT_OK(xdev_graph_capture_end(a));
    XT_OK(xdev_graph_capture_end(b));
    XT_OK(xdev_graph_destroy(b)); /* a still uses x */
    void *y = NULL;
    XT_OK(xdev_malloc_stream(&y, 8192, s1));
    ck_assert_msg((void *)x != y, "graph a's memory went to a new allocation when b was destroyed");
    XT_OK(xdev_graph_replay(a, s1));
    unsigned char h[4];
    fetch(h, x, sizeof h, s1);
    ck_assert_int_eq(h[2], 9);
    XT_OK(xdev_graph_destroy(a));
    XT_OK(xdev_free(y));
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
    tcase_add_test(tc, kept_block_forgotten_with_graph);
    tcase_add_test(tc, free_during_two_captures);
    tcase_add_test(tc, user_pool_scope);
}
