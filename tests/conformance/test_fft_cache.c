/* SPDX-License-Identifier: Apache-2.0 */
/* test_fft_cache.c - the fft suite's per-device plan cache tests: hits,
 * misses, LRU order, max_size, clear, 0 = off, per-device independence,
 * the same transform repeated on one thread, a destroyed stream's plans,
 * concurrent use, and an eviction where the device cannot be waited for.
 * Part of test_fft (suite fft; test_fft.c's main adds them). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_fft_common.h"
/* ------------------------------------------------------------- plan cache */

/* Transform an impulse of the descriptor's size (c2c f32, batch 1) and
 * check the flat spectrum. Each call's impulse has its own height, so an
 * output buffer that still holds an earlier call's result is caught (with
 * one height, a transform that wrote elsewhere looked right whenever the
 * caching allocator handed back a block holding an earlier answer). */
static bool impulse_ok(int device, int64_t n, xdev_stream_t stream) {
    static atomic_int calls;
    float amp = (float)(1 + atomic_fetch_add(&calls, 1) % 4096);
    xdev_fft_desc_t d = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &n, 1);
    size_t bytes = (size_t)n * 2 * sizeof(float);
    float *h = calloc((size_t)n * 2, sizeof(float));
    void *x = NULL, *y = NULL;
    const char *step = "malloc";
    bool ok = xdev_malloc_device(xt_dev(device), &x, bytes) == XDEV_SUCCESS &&
              xdev_malloc_device(xt_dev(device), &y, bytes) == XDEV_SUCCESS;
    h[0] = amp;
    ok = ok && (step = "copy in", xdev_memcpy_async(x, h, bytes, stream) == XDEV_SUCCESS) &&
         (step = "exec",
          xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, stream) == XDEV_SUCCESS) &&
         (step = "copy out", xdev_memcpy_async(h, y, bytes, stream) == XDEV_SUCCESS) &&
         (step = "synchronize", xdev_stream_synchronize(stream) == XDEV_SUCCESS);
    if (!ok)
        fprintf(stderr, "impulse_ok(n=%lld): %s failed: %s\n", (long long)n, step,
                xdev_last_error());
    for (int64_t i = 0; ok && i < n; i++)
        ok = h[2 * i] == amp && h[2 * i + 1] == 0.0f;
    if (!ok && strcmp(step, "synchronize") == 0)
        fprintf(stderr, "impulse_ok(n=%lld): wrong result (want %g everywhere)\n", (long long)n,
                (double)amp);
    (void)xdev_free(x);
    (void)xdev_free(y);
    free(h);
    return ok;
}

static xdev_fft_plan_cache_stats_t stats(int device) {
    xdev_fft_plan_cache_stats_t s;
    XT_OK(xdev_fft_plan_cache_stats(xt_dev(device), &s));
    return s;
}

#define EXPECT_STATS(dev, sz, h, m, ev)                                                            \
    do {                                                                                           \
        xdev_fft_plan_cache_stats_t st_ = stats(dev);                                              \
        ck_assert_msg(st_.size == (sz) && st_.hits == (h) && st_.misses == (m) &&                  \
                          st_.evictions == (ev),                                                   \
                      "line %d: size %lld hits %lld misses %lld evictions %lld, expected %d %d "   \
                      "%d %d",                                                                     \
                      __LINE__, (long long)st_.size, (long long)st_.hits, (long long)st_.misses,   \
                      (long long)st_.evictions, (sz), (h), (m), (ev));                             \
    } while (0)

START_TEST(plan_cache_lru) {
    REQUIRE_FFT();
    xdev_stream_t s;
    XT_OK(xdev_stream_current(xt_dev(0), &s));
    int64_t max = 0, size = -1;
    XT_OK(xdev_fft_plan_cache_max_size(xt_dev(0), &max));
    ck_assert_int_eq(max, 4096);
    XT_OK(xdev_fft_plan_cache_size(xt_dev(0), &size));
    ck_assert_int_eq(size, 0);
    ck_assert(impulse_ok(0, 8, s));
    ck_assert(impulse_ok(0, 8, s));
    EXPECT_STATS(0, 1, 1, 1, 0);
    /* The same layout spelled out explicitly is the same plan. */
    int64_t n = 8;
    xdev_fft_desc_t d = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &n, 1);
    d.istride = d.ostride = 1, d.idist = d.odist = 8, d.inembed[0] = d.onembed[0] = 8;
    void *buf = dalloc(0, 256);
    XT_OK(xdev_fft_exec(&d, buf, buf, XDEV_FFT_INVERSE, XDEV_FFT_NORM_NONE, NULL));
    EXPECT_STATS(0, 1, 2, 1, 0);
    /* Anything that changes the plan is a new key. */
    d.batch = 2, d.idist = d.odist = 0;
    XT_OK(xdev_fft_exec(&d, buf, buf, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL));
    d.batch = 1, d.precision = XDEV_FFT_F64;
    XT_OK(xdev_fft_exec(&d, buf, buf, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL));
    d.precision = XDEV_FFT_F32, d.istride = d.ostride = 2;
    XT_OK(xdev_fft_exec(&d, buf, buf, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL));
    EXPECT_STATS(0, 4, 2, 4, 0);
    /* LRU with room for 2: A B A C evicts B; then A hits, B misses (evicts C). */
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    XT_OK(xdev_fft_plan_cache_reset_stats(xt_dev(0)));
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 2));
    ck_assert(impulse_ok(0, 4, s));  /* A miss */
    ck_assert(impulse_ok(0, 6, s));  /* B miss */
    ck_assert(impulse_ok(0, 4, s));  /* A hit */
    ck_assert(impulse_ok(0, 10, s)); /* C miss, evicts B */
    EXPECT_STATS(0, 2, 1, 3, 1);
    ck_assert(impulse_ok(0, 4, s)); /* A hit */
    ck_assert(impulse_ok(0, 6, s)); /* B miss, evicts C */
    ck_assert(impulse_ok(0, 4, s)); /* A hit */
    EXPECT_STATS(0, 2, 3, 4, 2);
    /* A smaller max_size evicts the least recent: B goes, A stays. */
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 1));
    EXPECT_STATS(0, 1, 3, 4, 3);
    ck_assert(impulse_ok(0, 4, s));
    EXPECT_STATS(0, 1, 4, 4, 3);
    /* clear empties without counting evictions; a larger max keeps plans. */
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 100));
    ck_assert(impulse_ok(0, 6, s));
    EXPECT_STATS(0, 2, 4, 5, 3);
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    EXPECT_STATS(0, 0, 4, 5, 3);
    ck_assert(impulse_ok(0, 4, s));
    EXPECT_STATS(0, 1, 4, 6, 3);
    /* 0 disables caching: every exec creates (and drops) its plan. */
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 0));
    EXPECT_STATS(0, 0, 4, 6, 4);
    ck_assert(impulse_ok(0, 4, s));
    ck_assert(impulse_ok(0, 4, s));
    EXPECT_STATS(0, 0, 4, 8, 4);
    XT_OK(xdev_fft_plan_cache_max_size(xt_dev(0), &max));
    ck_assert_int_eq(max, 0);
    XT_OK(xdev_free(buf));
}
END_TEST

START_TEST(plan_cache_per_device) {
    REQUIRE_FFT();
    XT_REQUIRE_DEVICES(2);
    xdev_stream_t s0, s1;
    XT_OK(xdev_stream_current(xt_dev(0), &s0));
    XT_OK(xdev_stream_current(xt_dev(1), &s1));
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(1), 1));
    int64_t max0 = 0;
    XT_OK(xdev_fft_plan_cache_max_size(xt_dev(0), &max0));
    ck_assert_int_eq(max0, 4096);
    ck_assert(impulse_ok(0, 8, s0));
    ck_assert(impulse_ok(0, 16, s0));
    EXPECT_STATS(0, 2, 0, 2, 0);
    EXPECT_STATS(1, 0, 0, 0, 0);
    ck_assert(impulse_ok(1, 8, s1)); /* its own miss, though cpu:0 has the plan */
    ck_assert(impulse_ok(1, 16, s1));
    EXPECT_STATS(1, 1, 0, 2, 1);
    EXPECT_STATS(0, 2, 0, 2, 0);
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(1)));
    EXPECT_STATS(0, 2, 0, 2, 0);
    /* The current device does not matter: the operands decide. */
    XT_OK(xdev_set_device(xt_dev(1)));
    ck_assert(impulse_ok(0, 8, s0));
    EXPECT_STATS(0, 2, 1, 2, 0);
}
END_TEST

/* An impulse of height amp through d (c2c f32) with direction dir and
 * norm: a flat spectrum of height expect (within rounding). */
static bool norm_ok(const xdev_fft_desc_t *d, float *x, float *y, xdev_stream_t s, float amp,
                    xdev_fft_direction_t dir, xdev_fft_norm_t norm, float expect) {
    int64_t n = d->n[0];
    float h[64] = {0};
    h[0] = amp;
    size_t bytes = (size_t)n * 2 * sizeof(float);
    if (xdev_memcpy_async(x, h, bytes, s) != XDEV_SUCCESS ||
        xdev_fft_exec(d, x, y, dir, norm, s) != XDEV_SUCCESS ||
        xdev_memcpy_async(h, y, bytes, s) != XDEV_SUCCESS ||
        xdev_stream_synchronize(s) != XDEV_SUCCESS) {
        fprintf(stderr, "norm_ok: %s\n", xdev_last_error());
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        if (fabsf(h[2 * i] - expect) > 1e-5f * amp || fabsf(h[2 * i + 1]) > 1e-5f * amp) {
            fprintf(stderr, "norm_ok(dir %d, norm %d): bin %lld is %g%+gi, not %g\n", (int)dir,
                    (int)norm, (long long)i, h[2 * i], h[2 * i + 1], expect);
            return false;
        }
    return true;
}

/* One c2c f32 exec of an impulse of height amp from x into y on s, then
 * its flat spectrum checked (a stale plan of another size or a skipped
 * exec shows). */
static bool repeat_ok(const xdev_fft_desc_t *d, float *x, float *y, xdev_stream_t s, float amp) {
    return norm_ok(d, x, y, s, amp, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, amp);
}

/* The same transform again and again on one thread (the per-thread memo of
 * the last one, fft.c): every repeat is a hit; a clear, an eviction, a
 * smaller max_size, another stream, a stream destroyed and made again, a
 * changed or invalid descriptor and bad operands are each seen at once. */
START_TEST(plan_cache_repeat) {
    REQUIRE_FFT();
    int64_t n = 16, m = 8;
    xdev_fft_desc_t a = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &n, 1);
    xdev_fft_desc_t b = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &m, 1);
    float *x = dalloc(0, 64 * sizeof(float)), *y = dalloc(0, 64 * sizeof(float));
    xdev_stream_t s, t;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &t));
    for (int i = 0; i < 4; i++)
        ck_assert(repeat_ok(&a, x, y, s, 1.0f + (float)i));
    EXPECT_STATS(0, 1, 3, 1, 0);
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0))); /* the memo's plan is gone */
    ck_assert(repeat_ok(&a, x, y, s, 5.0f));
    ck_assert(repeat_ok(&a, x, y, s, 6.0f));
    EXPECT_STATS(0, 1, 4, 2, 0);
    ck_assert(repeat_ok(&a, x, y, t, 7.0f)); /* another stream: its own plan */
    ck_assert(repeat_ok(&a, x, y, s, 8.0f));
    EXPECT_STATS(0, 2, 5, 3, 0);
    /* Room for one: b evicts a, so a again is a miss (evicting b). */
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 1));
    EXPECT_STATS(0, 1, 5, 3, 1);
    ck_assert(repeat_ok(&a, x, y, s, 9.0f)); /* the plan that stayed */
    ck_assert(repeat_ok(&b, x, y, s, 10.0f));
    ck_assert(repeat_ok(&a, x, y, s, 11.0f));
    ck_assert(repeat_ok(&a, x, y, s, 12.0f));
    EXPECT_STATS(0, 1, 7, 5, 3);
    /* 0: nothing cached, every repeat makes its plan. */
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 0));
    ck_assert(repeat_ok(&a, x, y, s, 13.0f));
    ck_assert(repeat_ok(&a, x, y, s, 14.0f));
    EXPECT_STATS(0, 0, 7, 7, 4);
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 4096));
    ck_assert(repeat_ok(&a, x, y, s, 15.0f));
    /* A destroyed stream's slot made again is a new stream: a new plan. */
    XT_OK(xdev_stream_destroy(s)); /* its plan goes with it */
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    ck_assert(repeat_ok(&a, x, y, s, 16.0f));
    ck_assert(repeat_ok(&a, x, y, s, 17.0f));
    EXPECT_STATS(0, 1, 8, 9, 4);
    /* The descriptor changed in place: checked again, whatever came before. */
    a.n[0] = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&a, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s), "n[0] = 0");
    a.n[0] = 16;
    a.istride = -1;
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&a, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s), "negative");
    a.istride = 0;
    a.size = 8;
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&a, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s), "desc->size");
    a.size = sizeof a;
    /* The memo's descriptor with bad arguments: still refused. */
    ck_assert(repeat_ok(&a, x, y, s, 18.0f));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&a, x, y, (xdev_fft_direction_t)3, XDEV_FFT_NORM_NONE, s), "direction");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&a, x, y + 60, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s), "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&a, x, x + 8, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s), "overlap");
    float *z = dalloc(0, 32 * sizeof(float));
    XT_OK(xdev_free(z));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&a, x, z, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s), NULL);
    ck_assert(repeat_ok(&a, x, y, s, 19.0f));
    EXPECT_STATS(0, 1, 10, 9, 4);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(t));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
}
END_TEST

/* The memo keeps the scale of its last direction and norm (fft.c): the
 * same descriptor with another direction or norm must scale anew. */
START_TEST(plan_cache_repeat_norm) {
    REQUIRE_FFT();
    int64_t n = 16;
    xdev_fft_desc_t a = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &n, 1);
    float *x = dalloc(0, 64 * sizeof(float)), *y = dalloc(0, 64 * sizeof(float));
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    const xdev_fft_direction_t F = XDEV_FFT_FORWARD, I = XDEV_FFT_INVERSE;
    ck_assert(norm_ok(&a, x, y, s, 4.0f, F, XDEV_FFT_NORM_NONE, 4.0f));
    ck_assert(norm_ok(&a, x, y, s, 4.0f, F, XDEV_FFT_NORM_NONE, 4.0f)); /* the memo's */
    ck_assert(norm_ok(&a, x, y, s, 4.0f, F, XDEV_FFT_NORM_FORWARD, 0.25f));
    ck_assert(norm_ok(&a, x, y, s, 4.0f, I, XDEV_FFT_NORM_FORWARD, 4.0f)); /* direction alone */
    ck_assert(norm_ok(&a, x, y, s, 4.0f, I, XDEV_FFT_NORM_BACKWARD, 0.25f));
    ck_assert(norm_ok(&a, x, y, s, 4.0f, I, XDEV_FFT_NORM_ORTHO, 1.0f));
    ck_assert(norm_ok(&a, x, y, s, 4.0f, F, XDEV_FFT_NORM_ORTHO, 1.0f));
    ck_assert(norm_ok(&a, x, y, s, 4.0f, F, XDEV_FFT_NORM_BACKWARD, 4.0f)); /* norm alone */
    /* Another descriptor of the same direction and norm: its own n. */
    int64_t m = 4;
    xdev_fft_desc_t b = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &m, 1);
    ck_assert(norm_ok(&b, x, y, s, 4.0f, F, XDEV_FFT_NORM_FORWARD, 1.0f));
    ck_assert(norm_ok(&a, x, y, s, 4.0f, F, XDEV_FFT_NORM_FORWARD, 0.25f));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
}
END_TEST

/* A destroyed stream's plans go with it (their keys can never match
 * again, and a plan must not outlive its stream): the cache shrinks at
 * once, without counting an eviction, and other streams' plans stay. */
START_TEST(plan_cache_stream_destroy) {
    REQUIRE_FFT();
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 4096));
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    XT_OK(xdev_fft_plan_cache_reset_stats(xt_dev(0)));
    xdev_stream_t s, t;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &t));
    ck_assert(impulse_ok(0, 8, s));
    ck_assert(impulse_ok(0, 16, s));
    ck_assert(impulse_ok(0, 8, t));
    EXPECT_STATS(0, 3, 0, 3, 0);
    XT_OK(xdev_stream_destroy(s));
    EXPECT_STATS(0, 1, 0, 3, 0);
    ck_assert(impulse_ok(0, 8, t)); /* t's plan is still there: a hit */
    EXPECT_STATS(0, 1, 1, 3, 0);
    /* The slot made again is a new stream: a new plan, and it goes too. */
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    ck_assert(impulse_ok(0, 8, s));
    ck_assert(impulse_ok(0, 8, s));
    EXPECT_STATS(0, 2, 2, 4, 0);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(t));
    EXPECT_STATS(0, 0, 2, 4, 0);
}
END_TEST

typedef struct worker {
    pthread_t thread;
    int id, iters;
    bool keep_stream; /* left to the test to destroy after the join */
    xdev_stream_t s;
    atomic_int *failures;
} worker_t;

static void *worker_main(void *arg) {
    worker_t *w = arg;
    if (xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &w->s) != XDEV_SUCCESS) {
        atomic_fetch_add(w->failures, 1);
        w->s = NULL;
        return NULL;
    }
    static const int64_t sizes[] = {8, 12, 16, 5};
    for (int i = 0; i < w->iters; i++)
        if (!impulse_ok(0, sizes[(i + w->id) % 4], w->s)) atomic_fetch_add(w->failures, 1);
    if (!w->keep_stream && xdev_stream_destroy(w->s) != XDEV_SUCCESS)
        atomic_fetch_add(w->failures, 1);
    return NULL;
}

/* Several threads on their own streams share one cache that is too small
 * for their plans, so plans are evicted while other threads' execs with
 * them may still be queued; a worker destroys its stream as it ends (its
 * plans go with it) or, with keep_streams, the test does after the joins. */
static void run_workers(bool keep_streams) {
    enum { THREADS = 4 };
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 2));
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    XT_OK(xdev_fft_plan_cache_reset_stats(xt_dev(0)));
    atomic_int failures = 0;
    worker_t w[THREADS];
    int iters = xt_iters(60, 8);
    for (int i = 0; i < THREADS; i++) {
        w[i] =
            (worker_t){.id = i, .iters = iters, .keep_stream = keep_streams, .failures = &failures};
        ck_assert_int_eq(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(w[i].thread, NULL);
    ck_assert_int_eq(atomic_load(&failures), 0);
    xdev_fft_plan_cache_stats_t st = stats(0);
    ck_assert_int_eq(st.hits + st.misses, THREADS * iters);
    ck_assert_int_le(st.size, 2);
    if (keep_streams) { /* every drop so far was an eviction */
        ck_assert_int_eq(st.misses - st.evictions, st.size);
        for (int i = 0; i < THREADS; i++)
            XT_OK(xdev_stream_destroy(w[i].s));
    }
    ck_assert_int_eq(stats(0).size, 0); /* every stream is gone, and its plans */
}

START_TEST(plan_cache_concurrent) {
    REQUIRE_FFT();
    run_workers(false);
}
END_TEST

START_TEST(plan_cache_concurrent_kept_streams) {
    REQUIRE_FFT();
    run_workers(true);
}
END_TEST

/* A host function that clears device 0's plan cache (an eviction from a
 * stream's own host function, where waiting for the device fails). */
static void clear_in_host_fn(void *arg) {
    *(xdev_status_t *)arg = xdev_fft_plan_cache_clear(xt_dev(0));
}

/* A plan dropped where its device cannot be waited for (from a host
 * function) is not destroyed under an exec still queued with it: that exec
 * runs and gives the right spectrum, and the plan goes after a later wait.
 * (The CPU backend's plans count their queued execs, so this guards the
 * GPU plugins, whose plan_destroy is cufftDestroy / hipfftDestroy.) */
START_TEST(plan_cache_evict_in_host_func) {
    REQUIRE_FFT();
    if (xdev_launch_blocking())
        XT_SKIP("XDEV_LAUNCH_BLOCKING=1 makes every enqueue wait for its stream");
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 4096));
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    int64_t n = 8;
    xdev_fft_desc_t d = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &n, 1);
    float h[16] = {3.0f}, out[16];
    float *x = dalloc(0, sizeof h), *y = dalloc(0, sizeof h);
    xdev_stream_t s, t;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &t));
    XT_OK(xdev_memcpy(x, h, sizeof h));
    XT_OK(xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s)); /* the plan */
    XT_OK(xdev_memset_async(y, 0, sizeof h, s));
    XT_OK(xdev_stream_synchronize(s));
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 10000);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s)); /* queued */
    ck_assert(xt_gate_wait_entered(&gate, 5000));
    xdev_status_t cleared = XDEV_ERROR_NOT_READY;
    XT_OK(xdev_launch_host_func(t, clear_in_host_fn, &cleared));
    XT_OK(xdev_stream_synchronize(t));
    XT_OK(cleared);
    ck_assert_int_eq(stats(0).size, 0);
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy(out, y, sizeof out));
    for (int i = 0; i < 8; i++)
        ck_assert_msg(out[2 * i] == 3.0f && out[2 * i + 1] == 0.0f, "bin %d: %g%+gi", i,
                      (double)out[2 * i], (double)out[2 * i + 1]);
    xt_opener_join(&opener);
    xt_gate_destroy(&gate);
    xt_reset_state();
    ck_assert(impulse_ok(0, 16, s));
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0))); /* a wait that works: the plan in limbo goes */
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(t));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
}
END_TEST

/* A plan a capture used stays when its stream is destroyed (the graph's
 * kernels run it, on any stream): a replay on another stream still gives the
 * spectrum. A wrapped stream's plans leave the cache without a wait for the
 * wrapped stream (its owner's). */
START_TEST(plan_cache_captured_and_wrapped) {
    REQUIRE_FFT();
    XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(0), 4096));
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    XT_OK(xdev_fft_plan_cache_reset_stats(xt_dev(0)));
    int64_t n = 8;
    xdev_fft_desc_t d = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &n, 1);
    float h[16] = {5.0f}, out[16];
    float *x = dalloc(0, sizeof h), *y = dalloc(0, sizeof h);
    XT_OK(xdev_memcpy(x, h, sizeof h));
    xdev_stream_t s, r, w;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &r));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    xdev_status_t st = xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        xt_skip(__func__, "%s", xdev_last_error());
    } else {
        XT_OK(st);
        XT_OK(xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s));
        XT_OK(xdev_graph_capture_end(g));
        EXPECT_STATS(0, 1, 0, 1, 0);
        XT_OK(xdev_stream_destroy(s)); /* the captured plan stays */
        EXPECT_STATS(0, 1, 0, 1, 0);
        XT_OK(xdev_memset_async(y, 0, sizeof h, r));
        XT_OK(xdev_graph_replay(g, r));
        XT_OK(xdev_memcpy_async(out, y, sizeof out, r));
        XT_OK(xdev_stream_synchronize(r));
        for (int i = 0; i < 8; i++)
            ck_assert_msg(out[2 * i] == 5.0f && out[2 * i + 1] == 0.0f, "bin %d: %g%+gi", i,
                          (double)out[2 * i], (double)out[2 * i + 1]);
        s = NULL;
    }
    XT_OK(xdev_graph_destroy(g));
    /* A wrapped stream (r's native handle): its plan goes with the wrapper,
     * and r, which owns the native stream, goes on. */
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    XT_OK(xdev_fft_plan_cache_reset_stats(xt_dev(0)));
    void *native = NULL;
    XT_OK(xdev_stream_native_handle(r, &native));
    XT_OK(xdev_stream_wrap_native(xt_dev(0), native, &w));
    XT_OK(xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, w));
    XT_OK(xdev_stream_synchronize(w));
    EXPECT_STATS(0, 1, 0, 1, 0);
    XT_OK(xdev_stream_destroy(w));
    EXPECT_STATS(0, 0, 0, 1, 0);
    ck_assert(impulse_ok(0, 8, r));
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0))); /* a wait that works: limbo goes too */
    if (s != NULL) XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(r));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
}
END_TEST

void fft_cache_tests(TCase *tc) {
    tcase_add_test(tc, plan_cache_lru);
    tcase_add_test(tc, plan_cache_repeat);
    tcase_add_test(tc, plan_cache_repeat_norm);
    tcase_add_test(tc, plan_cache_per_device);
    tcase_add_test(tc, plan_cache_stream_destroy);
    tcase_add_test(tc, plan_cache_concurrent);
    tcase_add_test(tc, plan_cache_concurrent_kept_streams);
    tcase_add_test(tc, plan_cache_captured_and_wrapped);
}

void fft_host_fn_tests(Suite *s) {
    TCase *tc = tcase_create("fft_host_fn");
    tcase_add_checked_fixture(tc, fft_setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, plan_cache_evict_in_host_func);
    suite_add_tcase(s, tc);
}
