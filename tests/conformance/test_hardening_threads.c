/* SPDX-License-Identifier: Apache-2.0 */
/* test_hardening_threads.c - regression tests for issue 16's threaded items:
 * stream destruction racing with its users (6), host functions that
 * allocate while other threads empty the cache, take the OOM
 * release-and-retry path or free without caching (9), and xdev_free inside a
 * host function without caching (10).
 *
 * The races are meant for the ASan and TSan builds (a use after free shows
 * there); loops are bounded by xt_iters. Deadlock scenarios run under a
 * watchdog, so a hang is a clean failure naming the scenario rather than
 * Check's timeout.
 *
 * Suites (each its own ctest entry, tests/conformance/CMakeLists.txt):
 *   races          stream destroy vs free / current stream / explicit use
 *   deadlock       host functions allocating vs xdev_empty_cache
 *   deadlock_oom   ... vs the OOM release-and-retry path (XDEV_CPU_MEMORY=64M)
 *   nocache        XDEV_NO_MEMORY_CACHING=1: frees on other threads and
 *                  inside host functions */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xt.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define DEADLINE_S 20

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
}

/* ------------------------------------------------------------ watchdog */

typedef struct watch {
    void (*fn)(void *);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} watch_t;

static void *watch_main(void *p) {
    watch_t *w = p;
    w->fn(w->arg);
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Runs fn(arg) on a thread and fails the test if it has not returned within
 * `seconds` (a deadlock). The stuck thread is abandoned: Check's forked child
 * ends with the failure. */
static void run_with_deadline(const char *what, void (*fn)(void *), void *arg, int seconds) {
    watch_t w = {.fn = fn, .arg = arg, .done = 0};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, watch_main, &w), 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    pthread_mutex_lock(&w.mu);
    int rc = 0;
    while (!w.done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w.cv, &w.mu, &ts);
    int done = w.done;
    pthread_mutex_unlock(&w.mu);
    if (!done) {
        fprintf(stderr, "DEADLOCK: %s did not finish within %d s\n", what, seconds);
        fflush(stderr);
        ck_abort_msg("%s did not finish within %d s: deadlock", what, seconds);
    }
    pthread_join(th, NULL);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
}

/* Failures seen on threads other than the test's: counted, the first kept,
 * asserted on the test's thread afterwards. */
typedef struct errors {
    atomic_int count;
    pthread_mutex_t mu;
    char first[512];
} errors_t;

static void errors_init(errors_t *e) {
    atomic_init(&e->count, 0);
    pthread_mutex_init(&e->mu, NULL);
    e->first[0] = '\0';
}

static void errors_note(errors_t *e, const char *call, xdev_status_t st) {
    if (atomic_fetch_add(&e->count, 1) != 0) return;
    pthread_mutex_lock(&e->mu);
    snprintf(e->first, sizeof e->first, "%s returned %s: \"%s\"", call, xdev_status_string(st),
             xdev_last_error());
    pthread_mutex_unlock(&e->mu);
}

static void errors_expect_none(errors_t *e, const char *where) {
    int n = atomic_load(&e->count);
    ck_assert_msg(n == 0, "%s: %d unexpected failure(s), the first: %s", where, n, e->first);
    pthread_mutex_destroy(&e->mu);
}

/* ------------------------------------------------------------ lookup caches */

/* A worker thread checks a block (its cache of blocks found live now holds
 * it), the test's thread frees it, and the worker's next call must refuse
 * it: the free of a block a lookup returned makes every thread look again. */
typedef struct cache_walk {
    float *a;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int step; /* 1: the worker checked a; 2: a is freed */
    xdev_status_t first, second;
    char why[256];
} cache_walk_t;

static void cache_walk_wait(cache_walk_t *w, int step) {
    pthread_mutex_lock(&w->mu);
    while (w->step < step)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

static void cache_walk_set(cache_walk_t *w, int step) {
    pthread_mutex_lock(&w->mu);
    w->step = step;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void *cache_walker(void *p) {
    cache_walk_t *w = p;
    w->first = xdev_rng_uniform(NULL, XDEV_DTYPE_F32, w->a, 1024, NULL);
    if (w->first == XDEV_SUCCESS) w->first = xdev_synchronize();
    cache_walk_set(w, 1);
    cache_walk_wait(w, 2);
    w->second = xdev_rng_uniform(NULL, XDEV_DTYPE_F32, w->a, 1024, NULL);
    snprintf(w->why, sizeof w->why, "%s", xdev_last_error());
    return NULL;
}

START_TEST(free_seen_by_other_threads_cache) {
    cache_walk_t w = {.step = 0};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    XT_OK(xdev_malloc((void **)&w.a, 4096));
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, cache_walker, &w), 0);
    cache_walk_wait(&w, 1);
    XT_OK(xdev_free(w.a));
    cache_walk_set(&w, 2);
    pthread_join(th, NULL);
    ck_assert_msg(w.first == XDEV_SUCCESS, "the worker's first call: %s",
                  xdev_status_string(w.first));
    ck_assert_msg(w.second == XDEV_ERROR_INVALID_VALUE && strstr(w.why, "freed") != NULL,
                  "the worker's call after the free: %s, \"%s\"", xdev_status_string(w.second),
                  w.why);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
}
END_TEST

/* ------------------------------------------------------------ 6: stream destroy races */

#define OK_OR_HANDLE (XT_BIT(XDEV_SUCCESS) | XT_BIT(XDEV_ERROR_INVALID_HANDLE))

/* One side of a race: the test's thread and a helper meet at `start`, each
 * runs its half at once, and meet again at `end`. */
typedef struct race {
    pthread_barrier_t start, end;
    int iters;
    int dev;
    xdev_stream_t s;    /* the stream being destroyed this iteration */
    void *block;        /* destroy_vs_free: record_stream'ed on s */
    unsigned char *buf; /* destroy_vs_current: one 64-byte slot per iteration */
    int mode;
    xdev_status_t free_status; /* the helper's xdev_free this iteration */
    errors_t errors;
    atomic_int host_fns;
} race_t;

enum { RACE_FREE, RACE_CURRENT, RACE_EXPLICIT };

static void expect_mask(race_t *r, const char *call, xdev_status_t st, unsigned mask) {
    if (!((unsigned)st < 32 && (mask & XT_BIT(st)))) errors_note(&r->errors, call, st);
}

/* The helper's half of each iteration: use the stream (or the block recorded
 * on it) while the test's thread destroys it. */
static void *race_helper(void *p) {
    race_t *r = p;
    for (int i = 0; i < r->iters; i++) {
        pthread_barrier_wait(&r->start);
        xdev_stream_t s = r->s;
        unsigned char *slot = r->buf ? r->buf + (size_t)i * 64 : NULL;
        switch (r->mode) {
        case RACE_FREE:
            r->free_status = xdev_free(r->block);
            expect_mask(r, "xdev_free", r->free_status, OK_OR_HANDLE);
            break;
        case RACE_CURRENT: {
            expect_mask(r, "xdev_stream_set_current", xdev_stream_set_current(s), OK_OR_HANDLE);
            expect_mask(r, "xdev_memset_async(current)", xdev_memset_async(slot, i, 32, NULL),
                        OK_OR_HANDLE);
            expect_mask(r, "xdev_launch_host_func(current)",
                        xdev_launch_host_func(NULL, xt_count_fn, &r->host_fns), OK_OR_HANDLE);
            xdev_stream_guard_t g;
            xdev_status_t st = xdev_stream_guard_begin(&g, s);
            expect_mask(r, "xdev_stream_guard_begin", st, OK_OR_HANDLE);
            if (st == XDEV_SUCCESS) {
                expect_mask(r, "xdev_memset_async(guarded)",
                            xdev_memset_async(slot + 32, i, 32, NULL), OK_OR_HANDLE);
                expect_mask(r, "xdev_stream_guard_end", xdev_stream_guard_end(&g), OK_OR_HANDLE);
            }
            xt_reset_state();
            break;
        }
        case RACE_EXPLICIT: {
            expect_mask(r, "xdev_memset_async(s)", xdev_memset_async(slot, i, 64, s), OK_OR_HANDLE);
            expect_mask(r, "xdev_launch_host_func(s)",
                        xdev_launch_host_func(s, xt_count_fn, &r->host_fns), OK_OR_HANDLE);
            xdev_status_t st = xdev_stream_query(s);
            expect_mask(r, "xdev_stream_query", st, OK_OR_HANDLE | XT_BIT(XDEV_ERROR_NOT_READY));
            expect_mask(r, "xdev_stream_synchronize", xdev_stream_synchronize(s), OK_OR_HANDLE);
            break;
        }
        }
        xdev_clear_error();
        pthread_barrier_wait(&r->end);
    }
    return NULL;
}

/* Runs `iters` iterations: each creates a stream on r->dev (with pending
 * work on it), then destroys it on this thread while the helper uses it. */
static void race_run(int mode, int iters) {
    race_t r;
    memset(&r, 0, sizeof r);
    r.iters = iters;
    r.mode = mode;
    r.dev = xt_wrap(1);
    errors_init(&r.errors);
    atomic_init(&r.host_fns, 0);
    pthread_barrier_init(&r.start, NULL, 2);
    pthread_barrier_init(&r.end, NULL, 2);
    if (mode != RACE_FREE) {
        XT_OK(xdev_malloc_device(xt_dev(r.dev), (void **)&r.buf, (size_t)iters * 64));
        XT_OK(xdev_set_device(xt_dev(r.dev)));
    }
    int64_t live0 = xt_mem_stats(r.dev).allocation[XDEV_STAT_ALL].current;
    pthread_t helper;
    ck_assert_int_eq(pthread_create(&helper, NULL, race_helper, &r), 0);
    int destroy_failed = 0;
    for (int i = 0; i < iters; i++) {
        XT_OK(xdev_stream_create(xt_dev(r.dev), XDEV_STREAM_PRIORITY_NORMAL, &r.s));
        if (mode == RACE_FREE) {
            XT_OK(xdev_malloc_device(xt_dev(r.dev), &r.block, 64 + (size_t)(i % 8) * 512));
            XT_OK(xdev_memset_async(r.block, 0, 64, r.s)); /* s uses the block */
            XT_OK(xdev_record_stream(r.block, r.s));
        }
        pthread_barrier_wait(&r.start);
        xdev_status_t st = xdev_stream_destroy(r.s);
        if (st != XDEV_SUCCESS) {
            destroy_failed++;
            expect_mask(&r, "xdev_stream_destroy", st, OK_OR_HANDLE);
        }
        pthread_barrier_wait(&r.end);
        if (mode == RACE_FREE && r.free_status != XDEV_SUCCESS)
            XT_OK(xdev_free(r.block)); /* a failed free changed nothing: free it now */
    }
    pthread_join(helper, NULL);
    ck_assert_msg(destroy_failed == 0, "xdev_stream_destroy failed %d of %d times", destroy_failed,
                  iters);
    errors_expect_none(&r.errors, "stream destroy race");
    XT_OK(xdev_synchronize());
    if (r.buf) XT_OK(xdev_free(r.buf));
    int64_t live1 = xt_mem_stats(r.dev).allocation[XDEV_STAT_ALL].current;
    ck_assert_msg(live1 == live0 - (r.buf ? 1 : 0),
                  "allocation.all.current = %lld after the race, expected %lld: blocks lost",
                  (long long)live1, (long long)(live0 - (r.buf ? 1 : 0)));
    pthread_barrier_destroy(&r.start);
    pthread_barrier_destroy(&r.end);
}

START_TEST(destroy_vs_free_recorded) { /* item 6 */
    race_run(RACE_FREE, xt_iters(6000, 500));
}
END_TEST

START_TEST(destroy_vs_current_stream) { /* item 6 */
    race_run(RACE_CURRENT, xt_iters(2000, 200));
}
END_TEST

START_TEST(destroy_vs_explicit_use) { /* item 6 */
    race_run(RACE_EXPLICIT, xt_iters(1000, 100));
}
END_TEST

/* ------------------------------------------------------------ 9: deadlocks */

/* Host functions that allocate and free, queued on a stream of device 0,
 * while `other` hammers the allocator from another thread until they are
 * done. */
typedef struct alloc_storm {
    xdev_stream_t s;
    int batches;    /* of 16 host functions, at least */
    int launched;   /* host functions queued */
    atomic_int ran; /* host functions finished */
    atomic_int other_rounds;
    atomic_bool stop; /* tells `other` to stop */
    errors_t errors;  /* failures other than the allowed ones */
    void (*other)(struct alloc_storm *);
    unsigned allowed_free;   /* statuses an xdev_free in a host function may return */
    unsigned allowed_malloc; /* and an xdev_malloc (besides OUT_OF_MEMORY) */
    pthread_mutex_t stash_mu;
    void **stash; /* blocks whose free in a host function failed */
    int stashed, stash_cap;
} alloc_storm_t;

static void storm_host_fn(void *p) {
    alloc_storm_t *a = p;
    for (int j = 0; j < 8; j++) {
        void *q = NULL;
        xdev_status_t st = xdev_malloc(&q, 4 * KIB + (size_t)j * 512);
        if (st == XDEV_ERROR_OUT_OF_MEMORY) continue; /* only deadlocks are the point here */
        if ((unsigned)st < 32 && (a->allowed_malloc & XT_BIT(st))) continue;
        if (st != XDEV_SUCCESS) {
            errors_note(&a->errors, "xdev_malloc (host function)", st);
            continue;
        }
        st = xdev_free(q);
        if (st == XDEV_SUCCESS) continue;
        if ((unsigned)st < 32 && (a->allowed_free & XT_BIT(st))) {
            pthread_mutex_lock(&a->stash_mu); /* still live (item 10): free it later */
            if (a->stashed == a->stash_cap) {
                int cap = a->stash_cap ? 2 * a->stash_cap : 256;
                void **grown = realloc(a->stash, (size_t)cap * sizeof *grown);
                if (grown != NULL) a->stash = grown, a->stash_cap = cap;
            }
            if (a->stashed < a->stash_cap)
                a->stash[a->stashed++] = q;
            else
                errors_note(&a->errors, "realloc (test stash)", XDEV_ERROR_OUT_OF_MEMORY);
            pthread_mutex_unlock(&a->stash_mu);
        } else {
            errors_note(&a->errors, "xdev_free (host function)", st);
        }
    }
    xdev_clear_error();
    atomic_fetch_add(&a->ran, 1);
}

static void *storm_other(void *p) {
    alloc_storm_t *a = p;
    while (!atomic_load(&a->stop)) {
        a->other(a);
        atomic_fetch_add(&a->other_rounds, 1);
    }
    return NULL;
}

/* The whole scenario, run under the watchdog: batches of host functions,
 * each batch waited for, until `batches` are done, `other` has had 20
 * rounds of its own and 250 ms have passed (so the two really overlap);
 * at most 5 s. */
static void storm_scenario(void *p) {
    alloc_storm_t *a = p;
    pthread_t th;
    if (pthread_create(&th, NULL, storm_other, a) != 0) {
        errors_note(&a->errors, "pthread_create", XDEV_ERROR_INTERNAL);
        return;
    }
    double t0 = xt_now_ms();
    for (int b = 0;
         (b < a->batches || atomic_load(&a->other_rounds) < 20 || xt_now_ms() - t0 < 250) &&
         xt_now_ms() - t0 < 5000;
         b++) {
        for (int i = 0; i < 16; i++) {
            xdev_status_t st = xdev_launch_host_func(a->s, storm_host_fn, a);
            if (st != XDEV_SUCCESS)
                errors_note(&a->errors, "xdev_launch_host_func", st);
            else
                a->launched++;
        }
        xdev_status_t st = xdev_stream_synchronize(a->s);
        if (st != XDEV_SUCCESS) errors_note(&a->errors, "xdev_stream_synchronize", st);
    }
    atomic_store(&a->stop, true);
    pthread_join(th, NULL);
}

static void storm_run(const char *what, void (*other)(alloc_storm_t *), unsigned allowed_free) {
    alloc_storm_t *a = calloc(1, sizeof *a);
    ck_assert_ptr_nonnull(a);
    errors_init(&a->errors);
    pthread_mutex_init(&a->stash_mu, NULL);
    a->other = other;
    a->allowed_free = allowed_free;
    /* CUDA forbids runtime calls from host functions (cudaErrorNotPermitted):
     * there an allocation that reaches the device fails cleanly, which is all
     * xdev can do; the point stays that nothing deadlocks. */
    if (xt_type() != XDEV_DEVICE_CPU) {
        a->allowed_malloc = XT_BIT(XDEV_ERROR_BACKEND);
        a->allowed_free |= XT_BIT(XDEV_ERROR_BACKEND);
        printf("%s: on %s, host functions may not call the runtime: XDEV_ERROR_BACKEND from "
               "xdev_malloc/xdev_free inside them is accepted\n",
               what, xdev_device_type_name(xt_type()));
    }
    a->batches = xt_iters(40, 8);
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &a->s));
    run_with_deadline(what, storm_scenario, a, DEADLINE_S);
    ck_assert_int_eq(atomic_load(&a->ran), a->launched);
    ck_assert_int_gt(atomic_load(&a->other_rounds), 0);
    errors_expect_none(&a->errors, what);
    for (int i = 0; i < a->stashed; i++)
        XT_OK(xdev_free(a->stash[i])); /* a failed free changed nothing */
    XT_OK(xdev_synchronize());
    XT_OK(xdev_stream_destroy(a->s));
    ck_assert_int_eq(xt_mem_stats(0).allocation[XDEV_STAT_ALL].current, 0);
    pthread_mutex_destroy(&a->stash_mu);
    free(a->stash);
    free(a);
}

static void other_empty_cache(alloc_storm_t *a) {
    xdev_status_t st = xdev_empty_cache();
    if (st != XDEV_SUCCESS) errors_note(&a->errors, "xdev_empty_cache", st);
}

START_TEST(hostfn_alloc_vs_empty_cache) { /* item 9 */
    storm_run("host functions allocating while another thread calls xdev_empty_cache",
              other_empty_cache, 0);
}
END_TEST

/* Fills the small pool with cached 1 MiB blocks, then asks for 50 MiB of a
 * 64 MiB device: the allocator must release its cache and retry. */
static void other_oom_retry(alloc_storm_t *a) {
    void *p[24];
    int n = 0;
    for (; n < 24; n++) {
        xdev_status_t st = xdev_malloc(&p[n], MIB);
        if (st == XDEV_ERROR_OUT_OF_MEMORY) break;
        if (st != XDEV_SUCCESS) {
            errors_note(&a->errors, "xdev_malloc(1 MiB)", st);
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        xdev_status_t st = xdev_free(p[i]);
        if (st != XDEV_SUCCESS) errors_note(&a->errors, "xdev_free(1 MiB)", st);
    }
    void *big = NULL;
    xdev_status_t st = xdev_malloc(&big, 50 * MIB);
    if (st == XDEV_SUCCESS) {
        st = xdev_free(big);
        if (st != XDEV_SUCCESS) errors_note(&a->errors, "xdev_free(50 MiB)", st);
    } else if (st != XDEV_ERROR_OUT_OF_MEMORY) {
        errors_note(&a->errors, "xdev_malloc(50 MiB)", st);
    }
}

START_TEST(hostfn_alloc_vs_oom_retry) { /* item 9 */
    XT_REQUIRE_CPU();                   /* XDEV_CPU_MEMORY gives the device its 64 MiB */
    XT_OK(xdev_empty_cache());
    int64_t retries0 = xt_mem_stats(0).num_alloc_retries;
    storm_run("host functions allocating while another thread takes the OOM release-and-retry "
              "path",
              other_oom_retry, 0);
    ck_assert_msg(xt_mem_stats(0).num_alloc_retries > retries0,
                  "the OOM release-and-retry path was never taken (num_alloc_retries %lld)",
                  (long long)retries0);
}
END_TEST

static void other_nocache_free(alloc_storm_t *a) {
    void *p = NULL;
    xdev_status_t st = xdev_malloc(&p, 64 * KIB);
    if (st != XDEV_SUCCESS) {
        errors_note(&a->errors, "xdev_malloc(64 KiB)", st);
        return;
    }
    st = xdev_free(p); /* without caching: waits for the device */
    if (st != XDEV_SUCCESS) errors_note(&a->errors, "xdev_free(64 KiB)", st);
}

START_TEST(hostfn_alloc_vs_nocache_free) { /* item 9; frees in host functions per item 10 */
    storm_run("host functions allocating while another thread frees without caching",
              other_nocache_free,
              XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_NOT_SUPPORTED));
}
END_TEST

/* ------------------------------------------------------------ 10: free in a host function */

typedef struct own_free {
    void *p;
    xdev_status_t st;
    char msg[512];
} own_free_t;

static void free_in_host_fn(void *p) {
    own_free_t *o = p;
    o->st = xdev_free(o->p);
    snprintf(o->msg, sizeof o->msg, "%s", o->st == XDEV_SUCCESS ? "" : xdev_last_error());
    xdev_clear_error();
}

typedef struct own_free_case {
    xdev_stream_t s; /* NULL: the device's default stream */
    own_free_t o;
} own_free_case_t;

static void own_free_scenario(void *p) {
    own_free_case_t *c = p;
    if (xdev_launch_host_func(c->s, free_in_host_fn, &c->o) == XDEV_SUCCESS)
        (void)xdev_device_synchronize(xt_dev(0));
}

/* xdev_free(p) inside a host function on p's own stream either succeeds or
 * fails without changing anything: p stays live, counted, and freeable. */
static void own_stream_free(bool default_stream) {
    own_free_case_t c;
    memset(&c, 0, sizeof c);
    if (!default_stream) XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &c.s));
    XT_OK(xdev_malloc_stream(&c.o.p, 4 * KIB, c.s));
    XT_OK(xdev_memset_async(c.o.p, 0x5a, 4 * KIB, c.s));
    int64_t live0 = xt_mem_stats(0).allocation[XDEV_STAT_ALL].current;
    c.o.st = XDEV_ERROR_INTERNAL; /* until the host function ran */
    run_with_deadline("xdev_free inside a host function of its own stream", own_free_scenario, &c,
                      DEADLINE_S);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(c.o.p, &info));
    if (c.o.st == XDEV_SUCCESS) {
        ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
        ck_assert_int_eq(xt_mem_stats(0).allocation[XDEV_STAT_ALL].current, live0 - 1);
    } else {
        ck_assert_msg(c.o.st != XDEV_ERROR_INTERNAL, "the host function did not run");
        ck_assert_msg(info.kind == XDEV_MEMORY_DEVICE && info.base == c.o.p && info.size == 4 * KIB,
                      "xdev_free in a host function failed (%s: \"%s\") but the block is no "
                      "longer live (kind %d, base %p, size %zu)",
                      xdev_status_string(c.o.st), c.o.msg, (int)info.kind, info.base, info.size);
        ck_assert_int_eq(xt_mem_stats(0).allocation[XDEV_STAT_ALL].current, live0);
        /* the message says the block is live and when it can be freed */
        ck_assert_msg(strstr(c.o.msg, "still live") != NULL &&
                          strstr(c.o.msg, "host functions") != NULL,
                      "xdev_free in a host function: \"%s\"", c.o.msg);
        XT_OK(xdev_free(c.o.p)); /* not "double free" */
        ck_assert_int_eq(xt_mem_stats(0).allocation[XDEV_STAT_ALL].current, live0 - 1);
    }
    if (c.s) XT_OK(xdev_stream_destroy(c.s));
    XT_OK(xdev_synchronize());
    ck_assert_int_eq(xt_mem_stats(0).allocation[XDEV_STAT_ALL].current, 0);
}

START_TEST(free_in_own_host_fn) { /* item 10 */
    own_stream_free(false);
}
END_TEST

START_TEST(free_in_own_host_fn_default_stream) { /* item 10 */
    own_stream_free(true);
}
END_TEST

/* ------------------------------------------------------------ runner */

static TCase *tc(const char *name) {
    TCase *t = tcase_create(name);
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 120);
    return t;
}

int main(int argc, char **argv) {
    Suite *races = suite_create("races");
    TCase *t = tc("races");
    tcase_add_test(t, destroy_vs_free_recorded);
    tcase_add_test(t, destroy_vs_current_stream);
    tcase_add_test(t, destroy_vs_explicit_use);
    tcase_add_test(t, free_seen_by_other_threads_cache);
    suite_add_tcase(races, t);

    Suite *deadlock = suite_create("deadlock");
    t = tc("deadlock");
    tcase_add_test(t, hostfn_alloc_vs_empty_cache);
    suite_add_tcase(deadlock, t);

    Suite *deadlock_oom = suite_create("deadlock_oom");
    t = tc("deadlock_oom");
    tcase_add_test(t, hostfn_alloc_vs_oom_retry);
    suite_add_tcase(deadlock_oom, t);

    Suite *nocache = suite_create("nocache");
    t = tc("nocache");
    tcase_add_test(t, hostfn_alloc_vs_nocache_free);
    tcase_add_test(t, free_in_own_host_fn);
    tcase_add_test(t, free_in_own_host_fn_default_stream);
    suite_add_tcase(nocache, t);

    SRunner *sr = srunner_create(races);
    srunner_add_suite(sr, deadlock);
    srunner_add_suite(sr, deadlock_oom);
    srunner_add_suite(sr, nocache);
    return xt_run(sr, "races", argc, argv);
}
