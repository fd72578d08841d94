/* SPDX-License-Identifier: Apache-2.0 */
/* test_alloc_sleep.c - sleep and wake by tag (xdev_memory_sleep/wake, issue
 * 46 part 3) on the backend under test, with expandable segments: KEEP
 * brings the contents back and DISCARD does not have to, at the same
 * addresses; the device's free memory grows while asleep and is what it was
 * after wake; a graph captured before sleep replays after wake; calls that
 * use sleeping memory, and allocations with its tag, fail naming it; 100
 * cycles leave no growth (reserved bytes, free memory, the process's
 * mappings); one tag sleeps alone; bad input; a child forked while memory
 * sleeps is refused and the parent wakes it. Conformance entry
 * allocator.sleep; allocator.sleep_plain runs tcase "plain" without
 * expandable segments: sleep is refused there, saying why;
 * allocator.sleep_oom (CPU backend, 64 MiB) tcase "oom": a wake without
 * memory. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance_kernels.h"
#include "xt.h"

#define MIB ((size_t)1 << 20)
#define BIG (6 * MIB)    /* a large-pool allocation */
#define SMALL (64 << 10) /* a small-pool one */

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
    XT_OK(xdev_empty_cache());
    xdev_status_t st = xdev_set_per_process_memory_fraction(1.0, xt_dev(0));
    if (st != XDEV_ERROR_NOT_SUPPORTED) XT_OK(st);
}

/* Fill n bytes at p with a pattern from seed. */
static void fill(void *p, size_t n, unsigned seed) {
    unsigned char *h = malloc(n);
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 31u + seed);
    XT_OK(xdev_memcpy(p, h, n));
    free(h);
}

/* Allocate n bytes tagged `tag` and fill them with a pattern from seed. */
static void *tagged(const char *tag, size_t n, unsigned seed) {
    XT_OK(xdev_memory_tag_push(tag));
    void *p = NULL;
    XT_OK(xdev_malloc(&p, n));
    XT_OK(xdev_memory_tag_pop());
    fill(p, n, seed);
    return p;
}

static bool holds(const void *p, size_t n, unsigned seed) {
    unsigned char *h = malloc(n);
    XT_OK(xdev_memcpy(h, p, n));
    size_t i = 0;
    while (i < n && h[i] == (unsigned char)(i * 31u + seed))
        i++;
    free(h);
    return i == n;
}

/* Lines of /proc/self/maps: the process's mappings (-1 where unreadable). */
static long mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL) return -1;
    long n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

#define XT_ASLEEP(call)                                                                            \
    do {                                                                                           \
        ck_assert_int_eq((call), XDEV_ERROR_INVALID_VALUE);                                        \
        ck_assert_msg(strstr(xdev_last_error(), "asleep") != NULL, "%s: %s", #call,                \
                      xdev_last_error());                                                          \
    } while (0)

START_TEST(keep_restores_contents_at_the_same_addresses) {
    void *big = tagged("weights", BIG, 1), *small = tagged("weights", SMALL, 2);
    void *other = tagged("cache", BIG, 3);
    int64_t res = xt_reserved(0);
    size_t before = xt_mem_free(0);
    XT_OK(xdev_memory_sleep(xt_dev(0), "weights", XDEV_MEMORY_SLEEP_KEEP));
    size_t asleep = xt_mem_free(0);
    /* the device got at least the tag's bytes back (the rest of the device
     * may move on a shared GPU: a lower bound only) */
    ck_assert_msg(asleep >= before + BIG + SMALL, "free %zu asleep, %zu before", asleep, before);
    ck_assert_int_eq(xt_reserved(0), res); /* the allocator still counts it */
    /* what the application holds describes the same allocation */
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(big, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    ck_assert_ptr_eq(info.base, big);
    XT_OK(xdev_memory_wake(xt_dev(0), "weights"));
    ck_assert_int_le(xt_mem_free(0), asleep - BIG);
    ck_assert(holds(big, BIG, 1));
    ck_assert(holds(small, SMALL, 2));
    ck_assert(holds(other, BIG, 3));
    ck_assert_int_eq(xt_reserved(0), res);
    XT_OK(xdev_free(big));
    XT_OK(xdev_free(small));
    XT_OK(xdev_free(other));
}
END_TEST

/* Larger than the piece sleep and wake work in (32 MiB): the copies of
 * later pieces overlap the unmapping and mapping of earlier ones. */
START_TEST(keep_in_pieces) {
    const size_t n = 80 * MIB + 2 * MIB;
    void *p = tagged("pieces", n, 21), *q = tagged("pieces/2", 3 * MIB, 22);
    size_t before = xt_mem_free(0);
    XT_OK(xdev_memory_sleep(xt_dev(0), "pieces", XDEV_MEMORY_SLEEP_KEEP));
    ck_assert_uint_ge(xt_mem_free(0), before + n);
    XT_OK(xdev_memory_wake(xt_dev(0), "pieces"));
    ck_assert(holds(p, n, 21));
    ck_assert(holds(q, 3 * MIB, 22));
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(q));
}
END_TEST

/* A wake maps each 32 MiB piece as one backend mapping (memory.va_map_whole:
 * on CUDA one cuMemCreate/cuMemMap/cuMemSetAccess a piece, not a unit),
 * which unmaps only whole: empty_cache then releases a woken segment's free
 * tail from the next piece boundary on, memory grown after the wake by
 * units, and a second sleep and wake go piece by piece again. */
START_TEST(woken_pieces_release_whole) {
    void *a = tagged("pieces", 40 * MIB, 31), *b = tagged("pieces", 40 * MIB, 32);
    ck_assert_ptr_eq(b, (char *)a + 40 * MIB); /* one segment: a at 0, b at 40 MiB */
    XT_OK(xdev_memory_sleep(xt_dev(0), "pieces", XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_wake(xt_dev(0), "pieces"));
    XT_OK(xdev_free(b));
    int64_t res = xt_reserved(0);
    XT_OK(xdev_empty_cache());
    /* the free tail starts at 40 MiB, in the piece [32, 64): only [64, 80)
     * can go (before whole pieces, 40 MiB went; a cut inside a piece is
     * refused and nothing would) */
    ck_assert_msg(res - xt_reserved(0) == (int64_t)(16 * MIB), "released %lld MiB, not 16",
                  (long long)((res - xt_reserved(0)) / (int64_t)MIB));
    ck_assert(holds(a, 40 * MIB, 31));
    /* [40, 64) is still mapped and free: c takes [40, 60), d [60, 90), the
     * segment growing by units to 90 MiB; freed, d's units past the piece
     * boundary go */
    void *c = tagged("pieces", 20 * MIB, 33), *d = tagged("pieces", 30 * MIB, 34);
    ck_assert_ptr_eq(c, (char *)a + 40 * MIB);
    ck_assert_ptr_eq(d, (char *)a + 60 * MIB);
    ck_assert(holds(a, 40 * MIB, 31));
    XT_OK(xdev_free(d));
    res = xt_reserved(0);
    XT_OK(xdev_empty_cache());
    ck_assert_msg(res - xt_reserved(0) == (int64_t)(26 * MIB), "released %lld MiB, not 26",
                  (long long)((res - xt_reserved(0)) / (int64_t)MIB));
    XT_OK(xdev_memory_sleep(xt_dev(0), "pieces", XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_wake(xt_dev(0), "pieces"));
    ck_assert(holds(a, 40 * MIB, 31));
    ck_assert(holds(c, 20 * MIB, 33));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(c));
    res = xt_reserved(0);
    XT_OK(xdev_empty_cache());
    ck_assert_msg(res - xt_reserved(0) == (int64_t)(64 * MIB), "released %lld MiB, not 64",
                  (long long)((res - xt_reserved(0)) / (int64_t)MIB));
}
END_TEST

START_TEST(discard_comes_back_usable) {
    void *p = tagged("kv", BIG, 4);
    size_t before = xt_mem_free(0);
    XT_OK(xdev_memory_sleep(xt_dev(0), "kv", XDEV_MEMORY_SLEEP_DISCARD));
    ck_assert_uint_ge(xt_mem_free(0), before + BIG);
    XT_OK(xdev_memory_wake(xt_dev(0), "kv"));
    /* the contents are undefined; the memory is the application's again */
    XT_OK(xdev_memset_async(p, 0x5a, BIG, NULL));
    unsigned char *h = malloc(BIG);
    XT_OK(xdev_memcpy(h, p, BIG));
    ck_assert_uint_eq(h[0], 0x5a);
    ck_assert_uint_eq(h[BIG - 1], 0x5a);
    free(h);
    XT_OK(xdev_free(p));
}
END_TEST

/* Sleeping memory: the calls that check their pointers refuse it, naming
 * the tag; so does an allocation with its tag; freeing it is fine. */
START_TEST(use_of_sleeping_memory_fails) {
    void *p = tagged("model", BIG, 5), *gone = tagged("model", SMALL, 6);
    void *awake = NULL;
    XT_OK(xdev_malloc(&awake, SMALL));
    XT_OK(xdev_memory_sleep(xt_dev(0), "model", XDEV_MEMORY_SLEEP_KEEP));
    XT_ASLEEP(xdev_memset_async(p, 0, 16, NULL));
    ck_assert_msg(strstr(xdev_last_error(), "model") != NULL, "%s", xdev_last_error());
    XT_ASLEEP(xdev_memcpy_async(awake, (char *)p + 100, 16, NULL));
    XT_ASLEEP(xdev_memcpy(p, awake, 16));
    XT_ASLEEP(xdev_fill_async(p, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), 4, NULL));
    const void *in[1] = {p};
    XT_ASLEEP(xdev_elementwise("a + 1", XDEV_DTYPE_F32, 1, in, awake, 4, NULL));
    XT_OK(xdev_memory_tag_push("model"));
    void *q = NULL;
    XT_ASLEEP(xdev_malloc(&q, SMALL));
    ck_assert_ptr_null(q);
    XT_OK(xdev_memory_tag_pop());
    XT_OK(xdev_free(gone)); /* bookkeeping only */
    XT_OK(xdev_memory_wake(xt_dev(0), "model"));
    XT_OK(xdev_memset_async(p, 0, 16, NULL));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(awake));
}
END_TEST

/* A kernel launched with a sleeping pointer argument is refused before
 * anything is enqueued (the launch's pointer checks), also after the same
 * pointer was launched with while awake (the per-thread cache of live
 * allocations is dropped at sleep); after wake it runs on the kept data. */
START_TEST(kernel_launch_on_sleeping_memory_fails) {
    const long n = 1000;
    float hx[1000], hy[1000];
    for (long i = 0; i < n; i++)
        hx[i] = (float)i, hy[i] = 1.0f;
    float *x = tagged("kx", sizeof hx, 0), *y = tagged("ky", sizeof hy, 0);
    XT_OK(xdev_memcpy(x, hx, sizeof hx));
    XT_OK(xdev_memcpy(y, hy, sizeof hy));
    xdev_module_t m;
    XT_OK(xdev_module_load(xt_dev(0), conformance_kernels_bundle(), &m));
    xdev_kernel_t k = NULL;
    XT_OK(xdev_module_get_kernel(m, "saxpy", &k));
    xdev_launch_config_t cfg = {.grid = {(unsigned)((n + 255) / 256), 1, 1}, .block = {256, 1, 1}};
    float a = 2.0f;
    XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y)); /* y = 2x + 1, and x, y are cached live */
    XT_OK(xdev_memory_sleep(xt_dev(0), "ky", XDEV_MEMORY_SLEEP_KEEP));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x, y), "asleep", "'ky'");
    XT_OK(xdev_memory_wake(xt_dev(0), "ky"));
    XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y)); /* y = 4x + 1 */
    XT_OK(xdev_memcpy(hy, y, sizeof hy));
    for (long i = 0; i < n; i++)
        ck_assert_msg(hy[i] == 4.0f * (float)i + 1.0f, "y[%ld] = %g", i, (double)hy[i]);
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
}
END_TEST

/* A graph captured with a tagged buffer replays after the buffer's tag
 * slept and woke; and after everything (the graph's pool too) did. */
START_TEST(captured_graph_replays_after_wake) {
    const size_t n = 1024;
    float *buf = tagged("model", n * sizeof(float), 7);
    xdev_stream_t s = xt_new_stream(0);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    void *tmp = NULL;
    XT_OK(xdev_malloc_stream(&tmp, n * sizeof(float), s)); /* from the graph's pool */
    XT_OK(xdev_fill_async(tmp, XDEV_DTYPE_F32, xdev_scalar_f64(2.5), n, s));
    XT_OK(xdev_memcpy_async(buf, tmp, n * sizeof(float), s));
    XT_OK(xdev_free(tmp));
    XT_OK(xdev_graph_capture_end(g));
    for (int round = 0; round < 2; round++) {
        const char *tag = round == 0 ? "model" : NULL;
        XT_OK(xdev_memset_async(buf, 0, n * sizeof(float), s));
        XT_OK(xdev_stream_synchronize(s));
        XT_OK(xdev_memory_sleep(xt_dev(0), tag, XDEV_MEMORY_SLEEP_KEEP));
        if (tag == NULL) /* the graph's own pool sleeps too: its replay is refused */
            XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(g, s), "memory pool", "asleep");
        XT_OK(xdev_memory_wake(xt_dev(0), tag));
        float h[4] = {1, 1, 1, 1};
        XT_OK(xdev_memcpy(h, buf, sizeof h));
        ck_assert(h[0] == 0.0f && h[3] == 0.0f); /* KEEP: what it held */
        XT_OK(xdev_graph_replay(g, s));
        XT_OK(xdev_stream_synchronize(s));
        float *all = malloc(n * sizeof(float));
        XT_OK(xdev_memcpy(all, buf, n * sizeof(float)));
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(all[i] == 2.5f, "round %d: element %zu is %g", round, i, all[i]);
        free(all);
    }
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_free(buf));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(hundred_cycles_leave_no_growth) {
    void *p = tagged("cycle", BIG, 8), *q = tagged("cycle/inner", SMALL, 9);
    XT_OK(xdev_memory_sleep(xt_dev(0), "cycle", XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_wake(xt_dev(0), "cycle")); /* first cycle: lazily made state */
    int64_t res = xt_reserved(0), maps = xt_mem_stats(0).num_device_alloc;
    size_t awake = xt_mem_free(0);
    long lines = mappings();
    xdev_host_memory_stats_t hs0, hs1;
    XT_OK(xdev_host_memory_stats(&hs0));
    int cycles = xt_iters(100, 20);
    for (int i = 0; i < cycles; i++) {
        XT_OK(xdev_memory_sleep(xt_dev(0), "cycle",
                                i % 2 ? XDEV_MEMORY_SLEEP_KEEP : XDEV_MEMORY_SLEEP_DISCARD));
        XT_OK(xdev_memory_wake(xt_dev(0), "cycle"));
    }
    ck_assert_int_eq(xt_reserved(0), res);
    ck_assert_int_eq(xt_mem_stats(0).num_device_alloc, maps);
    XT_OK(xdev_host_memory_stats(&hs1)); /* KEEP's pinned copies come from the cache */
    ck_assert_int_eq(hs1.reserved_bytes.current, hs0.reserved_bytes.current);
    if (xt_type() == XDEV_DEVICE_CPU) /* a GPU is shared: others may move its figure */
        ck_assert_uint_eq(xt_mem_free(0), awake);
    if (lines >= 0) ck_assert_int_le(mappings(), lines + 4); /* the maps merge or split a little */
    fill(p, BIG, 8);                                         /* DISCARD cycles lost it */
    fill(q, SMALL, 9);
    XT_OK(xdev_memory_sleep(xt_dev(0), "cycle", XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_wake(xt_dev(0), "cycle"));
    ck_assert(holds(p, BIG, 8));
    ck_assert(holds(q, SMALL, 9));
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(q));
}
END_TEST

/* One tag sleeps alone: the others stay mapped and usable, and take new
 * allocations; a top-level tag covers the paths below it. */
START_TEST(one_tag_sleeps_alone) {
    void *a = tagged("a", BIG, 10), *ax = tagged("a/x", BIG, 11), *b = tagged("b", BIG, 12);
    void *ab = tagged("ab", SMALL, 13); /* "a" is not a prefix of its path */
    XT_OK(xdev_memory_sleep(xt_dev(0), "a", XDEV_MEMORY_SLEEP_KEEP));
    XT_ASLEEP(xdev_memset_async(ax, 0, 16, NULL)); /* "a/x" is below "a" */
    ck_assert(holds(b, BIG, 12));
    ck_assert(holds(ab, SMALL, 13));
    void *b2 = tagged("b", BIG, 14);
    ck_assert(holds(b2, BIG, 14));
    XT_OK(xdev_memory_wake(xt_dev(0), "a"));
    ck_assert(holds(a, BIG, 10));
    ck_assert(holds(ax, BIG, 11));
    /* below the top level nothing sleeps alone: it shares the top's segments */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_sleep(xt_dev(0), "a/x", XDEV_MEMORY_SLEEP_KEEP),
           "top-level", "'a'");
    /* everything, then everything awake again; then one tag, then the rest */
    XT_OK(xdev_memory_sleep(xt_dev(0), NULL, XDEV_MEMORY_SLEEP_KEEP));
    XT_ASLEEP(xdev_memset_async(b, 0, 16, NULL));
    XT_OK(xdev_memory_wake(xt_dev(0), NULL));
    XT_OK(xdev_memory_sleep(xt_dev(0), "b", XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_sleep(xt_dev(0), NULL, XDEV_MEMORY_SLEEP_KEEP)); /* the rest */
    XT_OK(xdev_memory_wake(xt_dev(0), "a"));
    ck_assert(holds(ax, BIG, 11));
    XT_OK(xdev_memory_wake(xt_dev(0), NULL)); /* what still sleeps */
    ck_assert(holds(a, BIG, 10));
    ck_assert(holds(b, BIG, 12));
    ck_assert(holds(b2, BIG, 14));
    ck_assert(holds(ab, SMALL, 13));
    /* a top-level tag never pushed on its own: "p" of one push of "p/q" */
    void *pq = tagged("p/q", SMALL, 15);
    XT_OK(xdev_memory_sleep(xt_dev(0), "p", XDEV_MEMORY_SLEEP_KEEP));
    XT_ASLEEP(xdev_memset_async(pq, 0, 16, NULL));
    XT_OK(xdev_memory_wake(xt_dev(0), "p"));
    ck_assert(holds(pq, SMALL, 15));
    void *ptrs[] = {a, ax, b, ab, b2, pq};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        XT_OK(xdev_free(ptrs[i]));
}
END_TEST

/* Threads allocating and freeing under another tag, and one sleeping and
 * waking the same tag, while this thread cycles it: every call either works
 * or says why (already asleep, nothing asleep, another thread at it), and
 * the data survives. */
typedef struct churn {
    atomic_bool stop;
    atomic_int errors;
    bool sleeper;
} churn_t;

static void *churn_main(void *arg) {
    churn_t *c = arg;
    xdev_stream_t s = NULL;
    if (xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s) != XDEV_SUCCESS) {
        atomic_fetch_add(&c->errors, 1);
        return NULL;
    }
    while (!atomic_load(&c->stop)) {
        if (c->sleeper) {
            xdev_status_t st = xdev_memory_sleep(xt_dev(0), "t", XDEV_MEMORY_SLEEP_KEEP);
            if (st == XDEV_SUCCESS) st = xdev_memory_wake(xt_dev(0), "t");
            if (st != XDEV_SUCCESS && st != XDEV_ERROR_INVALID_VALUE && st != XDEV_ERROR_NOT_READY)
                atomic_fetch_add(&c->errors, 1);
            continue;
        }
        void *p = NULL;
        bool ok = xdev_memory_tag_push("churn") == XDEV_SUCCESS &&
                  xdev_malloc_stream(&p, 3 * MIB, s) == XDEV_SUCCESS;
        ok = xdev_memory_tag_pop() == XDEV_SUCCESS && ok;
        ok = ok && xdev_memset_async(p, 1, 3 * MIB, s) == XDEV_SUCCESS;
        if (p != NULL) ok = xdev_free(p) == XDEV_SUCCESS && ok;
        ok = xdev_stream_synchronize(s) == XDEV_SUCCESS && ok; /* no backlog for sleep to wait */
        if (!ok) atomic_fetch_add(&c->errors, 1);
    }
    (void)xdev_stream_destroy(s);
    return NULL;
}

START_TEST(concurrent_sleep_wake_and_churn) {
    void *p = tagged("t", BIG, 24);
    churn_t c = {.stop = false, .errors = 0, .sleeper = false};
    churn_t sl = {.stop = false, .errors = 0, .sleeper = true};
    pthread_t th[3];
    ck_assert_int_eq(pthread_create(&th[0], NULL, churn_main, &c), 0);
    ck_assert_int_eq(pthread_create(&th[1], NULL, churn_main, &c), 0);
    ck_assert_int_eq(pthread_create(&th[2], NULL, churn_main, &sl), 0);
    int cycles = xt_iters(20, 5);
    for (int i = 0; i < cycles; i++) {
        xdev_status_t st = xdev_memory_sleep(xt_dev(0), "t", XDEV_MEMORY_SLEEP_KEEP);
        ck_assert_msg(st == XDEV_SUCCESS || st == XDEV_ERROR_INVALID_VALUE ||
                          st == XDEV_ERROR_NOT_READY,
                      "%s: %s", xdev_status_string(st), xdev_last_error());
        st = xdev_memory_wake(xt_dev(0), "t");
        ck_assert_msg(st == XDEV_SUCCESS || st == XDEV_ERROR_INVALID_VALUE ||
                          st == XDEV_ERROR_NOT_READY,
                      "%s: %s", xdev_status_string(st), xdev_last_error());
    }
    atomic_store(&c.stop, true);
    atomic_store(&sl.stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&c.errors), 0);
    ck_assert_int_eq(atomic_load(&sl.errors), 0);
    /* whoever slept last, someone woke it: wake reports nothing asleep */
    xdev_status_t st = xdev_memory_wake(xt_dev(0), "t");
    ck_assert(st == XDEV_SUCCESS || st == XDEV_ERROR_INVALID_VALUE);
    ck_assert(holds(p, BIG, 24));
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(bad_input) {
    void *p = tagged("bad", BIG, 15);
    xdev_device_t bad_index = xt_dev(0);
    bad_index.index = 4096;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_memory_sleep(bad_index, "bad", XDEV_MEMORY_SLEEP_KEEP),
           "4096");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_memory_wake(bad_index, "bad"), "4096");
    xdev_device_t bad_type = {(xdev_device_type_t)99, 0};
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_memory_sleep(bad_type, "bad", XDEV_MEMORY_SLEEP_KEEP),
           "99");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_memory_sleep(xt_dev(0), "bad", (xdev_memory_sleep_mode_t)7), "mode 7");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_sleep(xt_dev(0), "", XDEV_MEMORY_SLEEP_KEEP),
           "tag length 0");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_memory_sleep(xt_dev(0), "never-pushed", XDEV_MEMORY_SLEEP_KEEP),
           "xdev_memory_sleep", "never-pushed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_wake(xt_dev(0), "never-pushed"),
           "xdev_memory_wake", "never-pushed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_wake(xt_dev(0), "bad"), /* awake */
           "no memory tagged 'bad'", "is asleep");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_wake(xt_dev(0), NULL), /* nothing asleep */
           "no memory on");
    XT_OK(xdev_memory_sleep(xt_dev(0), "bad", XDEV_MEMORY_SLEEP_KEEP));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_memory_sleep(xt_dev(0), "bad", XDEV_MEMORY_SLEEP_DISCARD), /* twice */
           "'bad'", "already asleep");
    XT_OK(xdev_memory_wake(xt_dev(0), "bad"));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_wake(xt_dev(0), "bad"), "is asleep"); /* twice */
    ck_assert(holds(p, BIG, 15));
    XT_OK(xdev_free(p));
    XT_OK(xdev_empty_cache());
    /* a tag known in the process with no memory on the device */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_sleep(xt_dev(0), "bad", XDEV_MEMORY_SLEEP_KEEP),
           "holds no memory tagged 'bad'");
}
END_TEST

START_TEST(fork_while_asleep) {
    void *p = tagged("forked", BIG, 16);
    XT_OK(xdev_memory_sleep(xt_dev(0), "forked", XDEV_MEMORY_SLEEP_KEEP));
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        xdev_status_t st = xdev_memory_wake(xt_dev(0), "forked");
        bool ok = st == XDEV_ERROR_BACKEND_UNAVAILABLE && xt_icontains(xdev_last_error(), "fork");
        if (!ok) fprintf(stderr, "child: %s: %s\n", xdev_status_string(st), xdev_last_error());
        st = xdev_memory_sleep(xt_dev(0), NULL, XDEV_MEMORY_SLEEP_KEEP);
        ok = ok && st == XDEV_ERROR_BACKEND_UNAVAILABLE;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child was not refused");
    XT_OK(xdev_memory_wake(xt_dev(0), "forked"));
    ck_assert(holds(p, BIG, 16));
    XT_OK(xdev_free(p));
}
END_TEST

/* Without expandable segments nothing can sleep: refused, saying why. */
START_TEST(refused_without_expandable_segments) {
    void *p = tagged("plain", BIG, 17);
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_memory_sleep(xt_dev(0), "plain", XDEV_MEMORY_SLEEP_KEEP),
           "expandable_segments:true");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_memory_wake(xt_dev(0), NULL), "expandable");
    ck_assert(holds(p, BIG, 17));
    XT_OK(xdev_free(p));
}
END_TEST

/* CPU device of 64 MiB (allocator.sleep_oom): memory another allocation
 * took while the tag slept leaves wake without room; the tag stays asleep
 * with its contents and wakes once the room is back. */
START_TEST(wake_without_memory_stays_asleep) {
    void *p = tagged("w", 20 * MIB, 23);
    XT_OK(xdev_memory_sleep(xt_dev(0), "w", XDEV_MEMORY_SLEEP_KEEP));
    void *big = NULL;
    XT_OK(xdev_malloc(&big, 56 * MIB)); /* fits only while "w" sleeps */
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_memory_wake(xt_dev(0), "w"), "xdev_memory_wake",
           "stay asleep");
    XT_ASLEEP(xdev_memset_async(p, 0, 16, NULL));
    XT_OK(xdev_free(big));
    XT_OK(xdev_empty_cache());
    XT_OK(xdev_memory_wake(xt_dev(0), "w"));
    ck_assert(holds(p, 20 * MIB, 23));
    XT_OK(xdev_free(p));
}
END_TEST

int main(int argc, char **argv) {
    Suite *su = suite_create("alloc_sleep");
    TCase *tc = tcase_create("sleep");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, keep_restores_contents_at_the_same_addresses);
    tcase_add_test(tc, keep_in_pieces);
    tcase_add_test(tc, woken_pieces_release_whole);
    tcase_add_test(tc, discard_comes_back_usable);
    tcase_add_test(tc, use_of_sleeping_memory_fails);
    tcase_add_test(tc, kernel_launch_on_sleeping_memory_fails);
    tcase_add_test(tc, captured_graph_replays_after_wake);
    tcase_add_test(tc, hundred_cycles_leave_no_growth);
    tcase_add_test(tc, one_tag_sleeps_alone);
    tcase_add_test(tc, concurrent_sleep_wake_and_churn);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, fork_while_asleep);
    suite_add_tcase(su, tc);
    TCase *plain = tcase_create("plain");
    tcase_add_checked_fixture(plain, setup, NULL);
    tcase_add_test(plain, refused_without_expandable_segments);
    suite_add_tcase(su, plain);
    TCase *oom = tcase_create("oom");
    tcase_add_checked_fixture(oom, setup, NULL);
    tcase_add_test(oom, wake_without_memory_stays_asleep);
    suite_add_tcase(su, oom);
    return xt_run(srunner_create(su), "alloc_sleep", argc, argv);
}
