/* SPDX-License-Identifier: Apache-2.0 */
/* test_memory_managed.c - managed memory (issue 46, part 1):
 * xdev_malloc_managed used by the host directly, by copies, by a typed fill
 * and an element-wise kernel; xdev_mem_prefetch_async (stream-ordered) and
 * xdev_mem_advise; pointer info, statistics, summary and snapshots showing
 * it as its own kind; every bad input. On the CPU device managed memory is
 * host memory and prefetch/advice check and do nothing; on CUDA and HIP
 * they are cudaMallocManaged's. A backend without managed memory answers
 * NOT_SUPPORTED naming itself (skipped, with that reason). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/graph.h"
#include "xdev/ops.h"
#include "xt.h"

#define N 4096

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
}

/* Managed memory of n bytes on device 0 (NULL where the backend has none:
 * NEED_MANAGED then skips the test, naming the backend's reason). */
static void *managed(size_t n, unsigned flags) {
    void *p = NULL;
    xdev_status_t st = xdev_malloc_managed(xt_dev(0), &p, n, flags);
    if (st == XDEV_ERROR_NOT_SUPPORTED) return NULL;
    XT_OK(st);
    ck_assert_ptr_nonnull(p);
    return p;
}
#define NEED_MANAGED(p)                                                                            \
    do {                                                                                           \
        if ((p) == NULL) XT_SKIP("%s", xdev_last_error());                                         \
    } while (0)

/* The host reads and writes it directly; copies take it both ways. */
START_TEST(host_and_copies) {
    float *m = managed(N * sizeof(float), 0);
    NEED_MANAGED(m);
    for (int i = 0; i < N; i++) /* the host writes it directly */
        m[i] = (float)i * 0.5f;
    float *d = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&d, N * sizeof(float)));
    XT_OK(xdev_memcpy(d, m, N * sizeof(float))); /* managed -> device */
    float *h = calloc(N, sizeof(float));
    XT_OK(xdev_memcpy(h, d, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        ck_assert_msg(h[i] == (float)i * 0.5f, "[%d] %g", i, (double)h[i]);
    for (int i = 0; i < N; i++)
        h[i] = (float)-i;
    XT_OK(xdev_memcpy(m, h, N * sizeof(float))); /* host -> managed */
    for (int i = 0; i < N; i++)
        ck_assert_msg(m[i] == (float)-i, "[%d] %g", i, (double)m[i]);
    xdev_stream_t s = xt_new_stream(0);
    XT_OK(xdev_memset_async(m, 0, N * sizeof(float), s)); /* memset on a stream */
    XT_OK(xdev_memcpy_async(d, m, N * sizeof(float), s)); /* managed -> device, async */
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < N; i++)
        ck_assert_msg(m[i] == 0.0f, "[%d] %g after memset", i, (double)m[i]);
    XT_OK(xdev_memcpy(h, d, N * sizeof(float)));
    ck_assert(h[7] == 0.0f && h[N - 1] == 0.0f);
    /* Bounds are the allocation's, as for device memory. */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(h, m + 1, N * sizeof(float)),
           "run past the end of its allocation");
    XT_OK(xdev_stream_destroy(s));
    free(h);
    XT_OK(xdev_free(d));
    XT_OK(xdev_free(m));
}
END_TEST

/* A typed fill and an element-wise kernel write it; the host reads the result. */
START_TEST(kernels_use_it) {
    float *a = managed(N * sizeof(float), 0);
    NEED_MANAGED(a);
    float *b = managed(N * sizeof(float), XDEV_MEM_ATTACH_GLOBAL);
    NEED_MANAGED(b);
    float *out = managed(N * sizeof(float), XDEV_MEM_ATTACH_HOST);
    NEED_MANAGED(out);
    for (int i = 0; i < N; i++)
        a[i] = (float)(i % 50);
    XT_OK(xdev_fill_async(b, XDEV_DTYPE_F32, xdev_scalar_f64(2.0), N, NULL));
    XT_OK(xdev_mem_prefetch_async(a, N * sizeof(float), xt_dev(0).index, NULL));
    const void *in[] = {a, b};
    xdev_status_t st = xdev_elementwise("in0 * in1 + 1.0f", XDEV_DTYPE_F32, 2, in, out, N, NULL);
    XT_OK(xdev_mem_prefetch_async(out, N * sizeof(float), XDEV_HOST, NULL));
    XT_OK(xdev_synchronize());
    for (int i = 0; i < N; i++)
        ck_assert_msg(b[i] == 2.0f, "fill [%d] %g", i, (double)b[i]);
    if (st == XDEV_ERROR_COMPILE || st == XDEV_ERROR_NOT_SUPPORTED) {
        XT_OK(xdev_free(a));
        XT_OK(xdev_free(b));
        XT_OK(xdev_free(out));
        XT_SKIP("the element-wise kernel cannot be built here: %s", xdev_last_error());
    }
    XT_OK(st);
    XT_OK(xdev_elementwise_cache_clear()); /* its module is not kept past the test */
    for (int i = 0; i < N; i++)
        ck_assert_msg(out[i] == (float)(i % 50) * 2.0f + 1.0f, "[%d] %g", i, (double)out[i]);
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(out));
}
END_TEST

/* Pointer info, device_of, statistics, summary, snapshot: its own kind. */
START_TEST(shown_as_its_own_kind) {
    xdev_memory_stats_t s0 = xt_mem_stats(0);
    char *m = managed(3 * 1000 + 1, 0);
    NEED_MANAGED(m);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(m + 100, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_MANAGED);
    ck_assert_ptr_eq(info.base, m);
    ck_assert_uint_eq(info.size, 3001);
    XT_DEV_EQ(info.device, xt_dev(0));
    xdev_device_t dev;
    XT_OK(xdev_device_of(m + 3000, &dev));
    XT_DEV_EQ(dev, xt_dev(0));
    xdev_memory_stats_t s1 = xt_mem_stats(0);
    ck_assert_int_eq(s1.managed_allocation.current, s0.managed_allocation.current + 1);
    ck_assert_int_eq(s1.managed_bytes.current, s0.managed_bytes.current + 3001);
    ck_assert_int_eq(s1.allocated_bytes[XDEV_STAT_ALL].current,
                     s0.allocated_bytes[XDEV_STAT_ALL].current); /* not the cache's */
    size_t count = 0;
    XT_OK(xdev_memory_stats_items(&s1, NULL, 0, &count));
    ck_assert_uint_eq(count, 130);
    xdev_memory_stat_item_t items[130];
    XT_OK(xdev_memory_stats_items(&s1, items, 130, &count));
    ck_assert_str_eq(items[126].key, "managed_bytes.current");
    ck_assert_int_eq(items[126].value, s1.managed_bytes.current);
    char *summary = NULL;
    XT_OK(xdev_memory_summary(xt_dev(0), false, &summary));
    ck_assert_msg(strstr(summary, "Managed memory") != NULL, "%s", summary);
    free(summary);
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char want[96];
    snprintf(want, sizeof want, "\"address\":%llu,", (unsigned long long)(uintptr_t)m);
    const char *seg = strstr(json, want);
    ck_assert_msg(seg != NULL, "no segment at the managed allocation");
    ck_assert_msg(strstr(seg, "\"segment_type\":\"managed\"") != NULL &&
                      strstr(seg, "\"segment_type\":\"managed\"") < strstr(seg, "\"blocks\""),
                  "the allocation's segment is not 'managed'");
    free(json);
    void *data = NULL;
    size_t size = 0;
    XT_OK(xdev_memory_snapshot_torch(xt_type(), &data, &size));
    ck_assert_msg(memmem(data, size, "managed", 7) != NULL, "the pickle has no managed segment");
    free(data);
    XT_OK(xdev_free(m));
    xdev_memory_stats_t s2 = xt_mem_stats(0);
    ck_assert_int_eq(s2.managed_allocation.current, s0.managed_allocation.current);
    ck_assert_int_eq(s2.managed_bytes.freed, s1.managed_bytes.freed + 3001);
    XT_OK(xdev_pointer_get_info(m, &info)); /* gone: host memory again */
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
}
END_TEST

/* A prefetch is stream-ordered: after work queued before it, before work after. */
START_TEST(prefetch_is_stream_ordered) {
    int *m = managed(N * sizeof(int), 0);
    NEED_MANAGED(m);
    xdev_stream_t s = xt_new_stream(0);
    XT_OK(xdev_fill_async(m, XDEV_DTYPE_I32, xdev_scalar_i64(7), N, s));
    XT_OK(xdev_mem_prefetch_async(m, N * sizeof(int), XDEV_HOST, s));
    XT_OK(xdev_fill_async(m, XDEV_DTYPE_I32, xdev_scalar_i64(9), N / 2, s));
    XT_OK(xdev_mem_prefetch_async(m, N * sizeof(int), xt_dev(0).index, s));
    XT_OK(xdev_mem_prefetch_async(m, 0, XDEV_HOST, s)); /* nothing to move */
    XT_OK(xdev_mem_prefetch_async(m + N / 2, N / 2 * sizeof(int), XDEV_HOST, s)); /* interior */
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < N; i++)
        ck_assert_msg(m[i] == (i < N / 2 ? 9 : 7), "[%d] %d", i, m[i]);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(m));
}
END_TEST

START_TEST(advise_every_kind) {
    char *m = managed(1 << 20, 0);
    NEED_MANAGED(m);
    int dev = xt_dev(0).index;
    for (int a = XDEV_MEM_ADVISE_SET_READ_MOSTLY; a <= XDEV_MEM_ADVISE_UNSET_ACCESSED_BY; a++) {
        XT_OK(xdev_mem_advise(m, 1 << 20, (xdev_mem_advice_t)a, dev));
        XT_OK(xdev_mem_advise(m + 4096, 4096, (xdev_mem_advice_t)a, XDEV_HOST));
    }
    m[5] = 3; /* still the host's to use */
    ck_assert_int_eq(m[5], 3);
    XT_OK(xdev_free(m));
}
END_TEST

START_TEST(bad_input) {
    void *p = (void *)1;
    /* xdev_malloc_managed */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_malloc_managed(xt_dev(0), NULL, 64, 0), "ptr");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_malloc_managed(xt_dev(0), &p, 64, 4), "flags");
    ck_assert_ptr_null(p);
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_malloc_managed(xt_dev(99), &p, 64, 0), "99");
    char *m = managed(4096, 0);
    NEED_MANAGED(m);
    XT_OK(xdev_malloc_managed(xt_dev(0), &p, 0, 0)); /* size 0: NULL */
    ck_assert_ptr_null(p);
    /* prefetch and advise: NULL, foreign, device (not managed), past the end, bad location */
    char host[64];
    void *d = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &d, 4096));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(NULL, 8, XDEV_HOST, NULL), "ptr",
           "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(host, 8, XDEV_HOST, NULL),
           "xdev_mem_prefetch_async", "not managed memory");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(d, 8, XDEV_HOST, NULL),
           "not managed memory", "allocated otherwise");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(m, 4097, XDEV_HOST, NULL),
           "run past the end of its allocation");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(m + 4000, 97, XDEV_HOST, NULL),
           "run past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(m, 8, 99, NULL), "location 99",
           "XDEV_HOST");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(m, 8, -2, NULL), "location -2");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_mem_prefetch_async(m, 8, XDEV_HOST, (xdev_stream_t)host),
           "stream");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_mem_advise(NULL, 8, XDEV_MEM_ADVISE_SET_READ_MOSTLY, XDEV_HOST), "ptr");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_mem_advise(host, 8, XDEV_MEM_ADVISE_SET_READ_MOSTLY, XDEV_HOST), "xdev_mem_advise",
           "not managed memory");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_mem_advise(d, 8, XDEV_MEM_ADVISE_SET_PREFERRED_LOCATION, 0), "not managed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_mem_advise(m, 8192, XDEV_MEM_ADVISE_SET_READ_MOSTLY, XDEV_HOST), "run past");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_advise(m, 8, XDEV_MEM_ADVISE_SET_ACCESSED_BY, 99),
           "location 99");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_advise(m, 8, (xdev_mem_advice_t)0, XDEV_HOST),
           "advice 0");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_advise(m, 8, (xdev_mem_advice_t)7, XDEV_HOST),
           "advice 7");
    /* free: interior, then double, then use after free */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(m + 8), "points 8 bytes into");
    XT_OK(xdev_free(m));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(m), "xdev_free");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_prefetch_async(m, 8, XDEV_HOST, NULL),
           "not managed memory|freed");
    XT_OK(xdev_free(d));
}
END_TEST

/* A capture cannot record a managed allocation or free (new backend memory,
 * a wait for the device): both fail, and the allocation stays live. */
START_TEST(capture_refuses) {
    char *m = managed(4096, 0);
    NEED_MANAGED(m);
    xdev_stream_t s = xt_new_stream(0);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    xdev_status_t st = xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        XT_OK(xdev_graph_destroy(g));
        XT_OK(xdev_free(m));
        XT_SKIP("no graph capture: %s", xdev_last_error());
    }
    XT_OK(st);
    XT_ERR(XDEV_ERROR_CAPTURE, xdev_free(m), "xdev_free of managed memory");
    void *p = NULL;
    XT_ERR(XDEV_ERROR_CAPTURE, xdev_malloc_managed(xt_dev(0), &p, 64, 0), "xdev_malloc_managed");
    ck_assert_ptr_null(p);
    XT_ERR(XDEV_ERROR_CAPTURE, xdev_graph_capture_end(g), "invalidated");
    XT_OK(xdev_graph_destroy(g));
    m[4095] = 1; /* still live */
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(m, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_MANAGED);
    XT_OK(xdev_free(m));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* Managed memory is not the device allocator's: an application allocator
 * (xdev_set_allocator, before the device's first xdev_malloc) may still be
 * installed after it, and does not see it. Each test runs in a fresh
 * process (Check's fork), so no allocation came before. */
static int g_plug_mallocs;
static xdev_status_t plug_malloc(void *ctx, xdev_device_t d, size_t n, xdev_stream_t s,
                                 void **out) {
    (void)ctx;
    (void)d;
    (void)s;
    g_plug_mallocs++;
    *out = malloc(n);
    return *out != NULL ? XDEV_SUCCESS : XDEV_ERROR_OUT_OF_MEMORY;
}
static xdev_status_t plug_free(void *ctx, xdev_device_t d, void *p, size_t n, xdev_stream_t s) {
    (void)ctx;
    (void)d;
    (void)n;
    (void)s;
    free(p);
    return XDEV_SUCCESS;
}

START_TEST(allocator_installed_after) {
    if (!xt_host_addressable()) XT_SKIP("the test's allocator hands out host memory");
    char *m = managed(512, 0);
    NEED_MANAGED(m);
    xdev_allocator_t a = {.size = sizeof a, .malloc = plug_malloc, .free = plug_free};
    XT_OK(xdev_set_allocator(xt_dev(0), &a));
    void *d = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &d, 256));
    ck_assert_int_eq(g_plug_mallocs, 1);
    XT_OK(xdev_memcpy(d, m, 256));
    XT_OK(xdev_free(d));
    XT_OK(xdev_free(m));
    ck_assert_int_eq(g_plug_mallocs, 1);
}
END_TEST

/* Many threads allocate, use and free managed memory at once, beside the cache. */
static void *churn(void *arg) {
    (void)arg;
    for (int k = 0; k < 50; k++) {
        int *m = NULL;
        if (xdev_malloc_managed(xt_dev(0), (void **)&m, 256 * sizeof(int), 0) != XDEV_SUCCESS)
            return (void *)1;
        void *d = NULL;
        if (xdev_malloc(&d, 1000) != XDEV_SUCCESS) return (void *)2;
        for (int i = 0; i < 256; i++)
            m[i] = i + k;
        if (xdev_memcpy(d, m, 1000) != XDEV_SUCCESS) return (void *)3;
        if (xdev_free(m) != XDEV_SUCCESS || xdev_free(d) != XDEV_SUCCESS) return (void *)4;
    }
    return NULL;
}

START_TEST(threads) {
    void *first = managed(64, 0);
    NEED_MANAGED(first);
    XT_OK(xdev_free(first));
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        ck_assert_msg(r == NULL, "thread %d failed at step %p: %s", i, r, xdev_last_error());
    }
    ck_assert_int_eq(xt_mem_stats(0).managed_allocation.current, 0);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("managed");
    TCase *t = tcase_create("managed");
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, host_and_copies);
    tcase_add_test(t, kernels_use_it);
    tcase_add_test(t, shown_as_its_own_kind);
    tcase_add_test(t, prefetch_is_stream_ordered);
    tcase_add_test(t, advise_every_kind);
    tcase_add_test(t, bad_input);
    tcase_add_test(t, capture_refuses);
    tcase_add_test(t, allocator_installed_after);
    tcase_add_test(t, threads);
    suite_add_tcase(s, t);
    return xt_run(srunner_create(s), "managed", argc, argv);
}
