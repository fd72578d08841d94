/* SPDX-License-Identifier: Apache-2.0 */
/* test_allocator.c - the caching device allocator on a backend's real
 * asynchronous streams: stream-ordered reuse, record_stream, OOM handling,
 * the fraction cap, pluggable allocators, the settings, pinned host memory
 * and multi-threaded stress. The statistics tests (invariants against a
 * model, summary, snapshot JSON) are in test_allocator_stats.c, in the
 * caching suite.
 *
 * Suites (each its own ctest entry with its environment). All but oom are
 * conformance suites, run on the backend XDEV_BACKEND selects; the XDEV_CPU_*
 * settings apply when that is the CPU:
 *   caching   XDEV_CPU_DEVICES=4 XDEV_CPU_MEMORY=512M
 *   oom       XDEV_BACKEND=cpu XDEV_CPU_DEVICES=1 XDEV_CPU_MEMORY=64M (cpu only)
 *   nocache   ... XDEV_NO_MEMORY_CACHING=1
 *   conf      ... XDEV_ALLOC_CONF=max_split_size_mb:32,roundup_power2_divisions:4
 *   async     ... XDEV_ALLOC_CONF=backend:async
 *   pinned    XDEV_CPU_DEVICES=1; pinned_cap with XDEV_ALLOC_CONF=pinned_max_cached_mb:1
 *   stress    XDEV_CPU_DEVICES=2 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_allocator_common.h"

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
}

/* ------------------------------------------------------------ caching */

START_TEST(rounding_and_pools) {
    int dev = xt_wrap(1);
    XT_OK(xdev_empty_cache());
    xdev_memory_stats_t s0 = xt_mem_stats(dev);
    void *a = NULL, *b = NULL;
    XT_OK(xdev_malloc_device(xt_dev(dev), &a, 1));       /* small: 512 B in a 2 MiB segment */
    XT_OK(xdev_malloc_device(xt_dev(dev), &b, 3 * MIB)); /* large: 20 MiB buffer */
    xdev_memory_stats_t s = xt_mem_stats(dev);
    ck_assert_int_eq(s.allocated_bytes[XDEV_STAT_SMALL_POOL].current -
                         s0.allocated_bytes[XDEV_STAT_SMALL_POOL].current,
                     512);
    ck_assert_int_eq(s.requested_bytes[XDEV_STAT_ALL].current -
                         s0.requested_bytes[XDEV_STAT_ALL].current,
                     (int64_t)(1 + 3 * MIB));
    ck_assert_int_eq(s.reserved_bytes[XDEV_STAT_SMALL_POOL].current -
                         s0.reserved_bytes[XDEV_STAT_SMALL_POOL].current,
                     (int64_t)(2 * MIB));
    ck_assert_int_eq(s.reserved_bytes[XDEV_STAT_LARGE_POOL].current -
                         s0.reserved_bytes[XDEV_STAT_LARGE_POOL].current,
                     (int64_t)(20 * MIB));
    void *c = NULL; /* >= 10 MiB and more than the 17 MiB left: its own 2 MiB-rounded segment */
    XT_OK(xdev_malloc_device(xt_dev(dev), &c, 19 * MIB - 5));
    s = xt_mem_stats(dev);
    ck_assert_int_eq(s.reserved_bytes[XDEV_STAT_LARGE_POOL].current -
                         s0.reserved_bytes[XDEV_STAT_LARGE_POOL].current,
                     (int64_t)(40 * MIB));
    void *z = (void *)1;
    XT_OK(xdev_malloc_device(xt_dev(dev), &z, 0));
    ck_assert_ptr_null(z);
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
    s = xt_mem_stats(dev);
    ck_assert_int_eq(s.allocated_bytes[XDEV_STAT_ALL].current,
                     s0.allocated_bytes[XDEV_STAT_ALL].current);
    ck_assert_int_ge(s.reserved_bytes[XDEV_STAT_ALL].current, (int64_t)(22 * MIB)); /* cached */
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(xt_mem_stats(dev).reserved_bytes[XDEV_STAT_ALL].current, 0);
}
END_TEST

/* A free is visible at once as torch's allocator has it (the block merged
 * with its free neighbours), whatever the allocator keeps for the next
 * allocation: statistics, the snapshot and the next request's best fit. */
START_TEST(free_merges_at_once) {
    xdev_stream_t s = xt_new_stream(0);
    void *a = NULL, *b = NULL, *c = NULL;
    XT_OK(xdev_malloc_stream(&a, 4096, s)); /* a fresh 2 MiB segment: a | rest */
    XT_OK(xdev_malloc_stream(&b, 4096, s)); /* a | b | rest */
    ck_assert_uint_eq((uintptr_t)b, (uintptr_t)a + 4096);
    XT_OK(xdev_free(b)); /* b merges with rest */
    xdev_memory_stats_t st = xt_mem_stats(0);
    ck_assert_int_eq(st.inactive_split[XDEV_STAT_SMALL_POOL].current, 1);
    ck_assert_int_eq(st.inactive_split_bytes[XDEV_STAT_SMALL_POOL].current,
                     (int64_t)(2 * MIB - 4096));
    XT_OK(xdev_free(a)); /* the whole segment free again: one block */
    st = xt_mem_stats(0);
    ck_assert_int_eq(st.inactive_split[XDEV_STAT_SMALL_POOL].current, 0);
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char want[128];
    snprintf(want, sizeof want, "{\"address\":%llu,\"size\":%zu,", (unsigned long long)(uintptr_t)a,
             2 * MIB);
    ck_assert_msg(strstr(json, want) != NULL, "no free %zu-byte block at %p in %s", 2 * MIB, a,
                  json);
    free(json);
    /* best fit over the merged segment: a larger request starts at a */
    XT_OK(xdev_malloc_stream(&c, 8192, s));
    ck_assert_ptr_eq(c, a);
    XT_OK(xdev_free(c));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* Best fit finds the next non-empty size bin through two bitmaps (a bit
 * per bin, a bit per level) kept beside the bins: a bin's bit must be set
 * exactly while it holds a block. Free blocks of 64, 128 and 256 KiB and a
 * ~1.5 MiB tail, kept apart by live 4 KiB blocks, each in its own bin;
 * every request must get the smallest that fits, with no new segment. A
 * bit missing (or left set for an emptied bin) sends a request to a larger
 * block or to the backend. */
#define KIB ((size_t)1 << 10)
START_TEST(best_fit_finds_each_bin) {
    xdev_stream_t s = xt_new_stream(0); /* a fresh 2 MiB segment */
    enum { N = 6 };
    const size_t sizes[N] = {64 * KIB, 4 * KIB, 128 * KIB, 4 * KIB, 256 * KIB, 4 * KIB};
    char *blk[N];
    for (int i = 0; i < N; i++) {
        XT_OK(xdev_malloc_stream((void **)&blk[i], sizes[i], s));
        if (i > 0) ck_assert_ptr_eq(blk[i], blk[i - 1] + sizes[i - 1]);
    }
    char *tail = blk[N - 1] + sizes[N - 1];
    XT_OK(xdev_free(blk[0]));
    XT_OK(xdev_free(blk[2]));
    XT_OK(xdev_free(blk[4]));
    const int64_t reserved = xt_reserved(0);
    /* request, the block best fit must hand out */
    struct {
        size_t size;
        char *want;
    } steps[] = {
        {100 * KIB, blk[2]},            /* 128 KiB: the 64 KiB is too small */
        {200 * KIB, blk[4]},            /* 256 KiB */
        {64 * KIB, blk[0]},             /* exact fit */
        {28 * KIB, blk[2] + 100 * KIB}, /* the 128 KiB block's rest */
        {56 * KIB, blk[4] + 200 * KIB}, /* the 256 KiB block's rest */
        {MIB, tail},                    /* only the tail (1588 KiB) fits */
        {564 * KIB, tail + MIB},        /* the tail's rest, exactly */
    };
    enum { STEPS = sizeof steps / sizeof steps[0] };
    void *got[STEPS];
    for (int i = 0; i < STEPS; i++) {
        XT_OK(xdev_malloc_stream(&got[i], steps[i].size, s));
        ck_assert_msg(got[i] == (void *)steps[i].want,
                      "request %d (%zu bytes) got %p, best fit is %p (segment at %p)", i,
                      steps[i].size, got[i], (void *)steps[i].want, (void *)blk[0]);
        ck_assert_int_eq(xt_reserved(0), reserved);
    }
    /* every bin emptied again (a bit left set would lead best fit to an
     * empty bin): the next request comes from another segment */
    void *more = NULL;
    XT_OK(xdev_malloc_stream(&more, 4 * KIB, s));
    ck_assert_msg((char *)more < blk[0] || (char *)more >= blk[0] + 2 * MIB,
                  "%p inside the fully allocated segment at %p", more, (void *)blk[0]);
    for (int i = 0; i < STEPS; i++)
        XT_OK(xdev_free(got[i]));
    XT_OK(xdev_free(more));
    XT_OK(xdev_free(blk[1]));
    XT_OK(xdev_free(blk[3]));
    XT_OK(xdev_free(blk[5]));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* The hot pair hands back the block just freed only while torch's best fit
 * would (the stash): after a warm pair on X, a block as small at a lower
 * address (W) entering the bins makes the next request take W, as best fit
 * does (lowest address among equal sizes). Guards the stash's remembered
 * answer: it must not survive a change of the bins. */
START_TEST(hot_pair_rechecks_best_fit_after_bins_change) {
    xdev_stream_t s = xt_new_stream(0); /* a fresh segment: A | W | B | X | rest */
    void *a = NULL, *w = NULL, *b = NULL, *x = NULL, *p = NULL;
    XT_OK(xdev_malloc_stream(&a, 4096, s));
    XT_OK(xdev_malloc_stream(&w, 4096, s));
    XT_OK(xdev_malloc_stream(&b, 4096, s));
    XT_OK(xdev_malloc_stream(&x, 4096, s));
    ck_assert_uint_eq((uintptr_t)x, (uintptr_t)w + 2 * 4096);
    for (int i = 0; i < 3; i++) { /* warm pair on X */
        XT_OK(xdev_free(x));
        XT_OK(xdev_malloc_stream(&p, 4096, s));
        ck_assert_ptr_eq(p, x);
    }
    XT_OK(xdev_free(w)); /* W, between active A and B, stays a 4096-byte block */
    XT_OK(xdev_free(x)); /* W goes into the bins, X is the last freed */
    XT_OK(xdev_malloc_stream(&p, 4096, s));
    ck_assert_msg(p == w, "got %p: best fit takes the lower free block %p, not the last freed %p",
                  p, w, x);
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(reuse_only_on_own_stream) {
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    void *keep = NULL, *p = NULL, *q = NULL, *r = NULL;
    /* keep p's segment in use: a wholly free segment may go back to the
     * backend before the pool grows (trim_before_grow) */
    XT_OK(xdev_malloc_stream(&keep, 512, a));
    XT_OK(xdev_malloc_stream(&p, 4096, a));
    XT_OK(xdev_free(p));
    XT_OK(xdev_malloc_stream(&q, 4096, b)); /* another stream: not p's block */
    ck_assert_ptr_ne(p, q);
    XT_OK(xdev_malloc_stream(&r, 4096, a)); /* same stream: the cached block comes back */
    ck_assert_ptr_eq(p, r);
    XT_OK(xdev_free(q));
    XT_OK(xdev_free(r));
    XT_OK(xdev_free(keep));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
}
END_TEST

START_TEST(record_stream_delays_reuse) {
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t safety;
    xt_opener_start(&safety, &gate, 10000);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_stream(&p, 8192, a));
    XT_OK(xdev_launch_host_func(b, xt_gate_wait_fn, &gate)); /* b is busy "using" p */
    XT_OK(xdev_record_stream(p, b));
    XT_OK(xdev_record_stream(p, b)); /* twice is fine */
    XT_OK(xdev_free(p));
    XT_OK(xdev_malloc_stream(&q, 8192, a));
    ck_assert_ptr_ne(p, q); /* b has not passed the free yet */
    xdev_memory_stats_t s = xt_mem_stats(0);
    ck_assert_int_gt(s.active[XDEV_STAT_ALL].current, s.allocation[XDEV_STAT_ALL].current);
    XT_OK(xdev_free(q));
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(b));
    void *r = NULL, *t = NULL;
    XT_OK(xdev_malloc_stream(&r, 8192, a)); /* q's block (best fit, lowest address) or p's */
    XT_OK(xdev_malloc_stream(&t, 8192, a));
    ck_assert_msg((r == p || t == p), "p's block must be reusable once b passed the free");
    s = xt_mem_stats(0);
    ck_assert_int_eq(s.active[XDEV_STAT_ALL].current, s.allocation[XDEV_STAT_ALL].current);
    XT_OK(xdev_free(r));
    XT_OK(xdev_free(t));
    xt_opener_join(&safety);
    xt_gate_destroy(&gate);
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
}
END_TEST

START_TEST(record_stream_errors) {
    xdev_stream_t s = xt_new_stream(0);
    int host = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_record_stream(&host, s), "pointer");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_record_stream(NULL, s), "ptr");
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, 1000));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_record_stream(p, NULL), "stream");
    if (xt_has_devices(__func__, 2, "record_stream on another device's stream")) {
        xdev_stream_t other = xt_new_stream(1);
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_record_stream(p, other), xt_name(0), xt_name(1));
        XT_OK(xdev_stream_destroy(other));
    }
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_record_stream((char *)p + 8, s), "interior|start");
    XT_OK(xdev_free(p));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_record_stream(p, s), "freed|live");
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

static void *free_on_thread(void *p) {
    XT_OK(xdev_free(p));
    return NULL;
}

START_TEST(cross_thread_free) {
    /* Freed on another thread whose current stream differs: the block still
     * goes back to the pool of its own stream. */
    xdev_stream_t a = xt_new_stream(xt_wrap(2));
    void *p = NULL;
    XT_OK(xdev_malloc_stream(&p, 100000, a));
    pthread_t th;
    pthread_create(&th, NULL, free_on_thread, p);
    pthread_join(th, NULL);
    void *q = NULL;
    XT_OK(xdev_malloc_stream(&q, 100000, a));
    ck_assert_ptr_eq(p, q);
    XT_OK(xdev_free(q));
    XT_OK(xdev_stream_destroy(a));
}
END_TEST

START_TEST(pointer_registry) {
    const int dev = xt_wrap(2);
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(dev), &p, 5000));
    xdev_device_t d;
    XT_OK(xdev_device_of((char *)p + 4999, &d));
    XT_DEV_EQ(d, xt_dev(dev));
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info((char *)p + 100, &info));
    ck_assert_ptr_eq(info.base, p);
    ck_assert_uint_ge(info.size, 5000); /* 5120 when cached (512 B rounding) */
    ck_assert_uint_le(info.size, 5120);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free((char *)p + 100), "into an allocation");
    int local = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(&local), "not allocated");
    XT_OK(xdev_free(p));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(p), "double free|already freed");
    /* still consistent afterwards */
    XT_OK(xdev_malloc_device(xt_dev(dev), &p, 5000));
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(fraction_cap) {
    const int dev = xt_wrap(3), n = xt_device_count();
    XT_OK(xdev_empty_cache());
    /* A cap of 64 MiB: 0.125 of the CPU's XDEV_CPU_MEMORY=512M. */
    size_t free_b = 0, total = 0;
    XT_OK(xdev_mem_get_info(xt_dev(dev), &free_b, &total));
    ck_assert_uint_ge(total, 128 * MIB);
    const double fraction = (double)(64 * MIB) / (double)total;
    if (xt_type() == XDEV_DEVICE_CPU) ck_assert(fraction == 0.125);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_per_process_memory_fraction(1.5, xt_dev(dev)),
           "fraction");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_per_process_memory_fraction(-0.1, xt_dev(dev)),
           "fraction");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_per_process_memory_fraction(NAN, xt_dev(dev)),
           "fraction");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_per_process_memory_fraction(0.5, xt_dev(n + 5)),
           xt_name(n + 5));
    XT_OK(xdev_set_per_process_memory_fraction(fraction, xt_dev(dev))); /* 64 MiB */
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_device(xt_dev(dev), &p, 40 * MIB));
    xdev_memory_stats_t s0 = xt_mem_stats(dev);
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(dev), &q, 30 * MIB), "30.00 MiB",
           "fraction");
    xdev_memory_stats_t s1 = xt_mem_stats(dev);
    ck_assert_int_eq(s1.num_ooms, s0.num_ooms + 1);
    ck_assert_int_eq(s1.allocated_bytes[XDEV_STAT_ALL].current,
                     s0.allocated_bytes[XDEV_STAT_ALL].current);
    XT_OK(xdev_set_per_process_memory_fraction(1.0, xt_dev(dev)));
    XT_OK(xdev_malloc_device(xt_dev(dev), &q, 30 * MIB));
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(q));
}
END_TEST

/* A counting allocator over plain malloc. */
typedef struct {
    atomic_int mallocs, frees;
    size_t last_size;
} plug_t;

static xdev_status_t plug_malloc(void *ctx, xdev_device_t dev, size_t size, xdev_stream_t s,
                                 void **out) {
    plug_t *p = ctx;
    (void)dev;
    (void)s;
    atomic_fetch_add(&p->mallocs, 1);
    p->last_size = size;
    *out = malloc(size);
    return *out ? XDEV_SUCCESS : XDEV_ERROR_OUT_OF_MEMORY;
}

static xdev_status_t plug_free(void *ctx, xdev_device_t dev, void *ptr, size_t size,
                               xdev_stream_t s) {
    plug_t *p = ctx;
    (void)dev;
    (void)size;
    (void)s;
    atomic_fetch_add(&p->frees, 1);
    free(ptr);
    return XDEV_SUCCESS;
}

START_TEST(pluggable_allocator) {
    const int dev = xt_wrap(3);
    static plug_t plug;
    xdev_allocator_t a = {sizeof a, &plug, plug_malloc, plug_free, NULL};
    xdev_allocator_t bad = a;
    bad.free = NULL;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_allocator(xt_dev(dev), &bad), "free");
    XT_OK(xdev_set_allocator(xt_dev(dev), &a));
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(dev), &p, 777));
    ck_assert_int_eq(atomic_load(&plug.mallocs), 1);
    ck_assert_uint_eq(plug.last_size, 777);
    xdev_device_t d;
    XT_OK(xdev_device_of(p, &d));
    XT_DEV_EQ(d, xt_dev(dev));
    ck_assert_int_eq(xt_mem_stats(dev).allocated_bytes[XDEV_STAT_ALL].current, 777);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_allocator(xt_dev(dev), NULL), "already");
    XT_OK(xdev_free(p));
    ck_assert_int_eq(atomic_load(&plug.frees), 1);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(p), "not allocated|not a live");
}
END_TEST

/* ------------------------------------------------------------ oom (64 MiB device) */

START_TEST(oom_flush_retry_succeeds) {
    XT_REQUIRE_CPU();
    XT_OK(xdev_empty_cache());
    /* fill the small pool with cached segments: 24 MiB of 2 MiB segments */
    void *p[24];
    for (int i = 0; i < 24; i++)
        XT_OK(xdev_malloc(&p[i], MIB));
    for (int i = 0; i < 24; i++)
        XT_OK(xdev_free(p[i]));
    xdev_memory_stats_t s0 = xt_mem_stats(0);
    ck_assert_int_eq(s0.reserved_bytes[XDEV_STAT_SMALL_POOL].current, (int64_t)(24 * MIB));
    void *big = NULL; /* 50 MiB does not fit next to 24 MiB of cache on a 64 MiB device */
    XT_OK(xdev_malloc(&big, 50 * MIB));
    xdev_memory_stats_t s1 = xt_mem_stats(0);
    ck_assert_int_eq(s1.num_alloc_retries, s0.num_alloc_retries + 1);
    ck_assert_int_eq(s1.num_ooms, s0.num_ooms);
    ck_assert_int_eq(s1.reserved_bytes[XDEV_STAT_SMALL_POOL].current, 0);
    XT_OK(xdev_free(big));
}
END_TEST

START_TEST(oom_message_and_stats) {
    XT_REQUIRE_CPU();
    XT_OK(xdev_empty_cache());
    void *keep = NULL, *p = NULL;
    XT_OK(xdev_malloc(&keep, 12 * MIB));
    xdev_memory_stats_t s0 = xt_mem_stats(0);
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc(&p, 60 * MIB), "cpu:0", "60.00 MiB", "64.00 MiB",
           "12.00 MiB", "reserved");
    ck_assert_ptr_null(p);
    xdev_memory_stats_t s1 = xt_mem_stats(0);
    ck_assert_int_eq(s1.num_ooms, s0.num_ooms + 1);
    ck_assert_int_eq(s1.allocated_bytes[XDEV_STAT_ALL].current,
                     s0.allocated_bytes[XDEV_STAT_ALL].current);
    ck_assert_int_eq(s1.allocation[XDEV_STAT_ALL].current, s0.allocation[XDEV_STAT_ALL].current);
    XT_OK(xdev_malloc(&p, 40 * MIB)); /* still works */
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(keep));
}
END_TEST

/* ------------------------------------------------------------ nocache */

START_TEST(no_caching_goes_to_backend) {
    xdev_memory_stats_t s0 = xt_mem_stats(0);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc(&p, 1000));
    XT_OK(xdev_free(p));
    XT_OK(xdev_malloc(&q, 1000));
    xdev_memory_stats_t s1 = xt_mem_stats(0);
    ck_assert_int_eq(s1.num_device_alloc - s0.num_device_alloc, 2);
    ck_assert_int_eq(s1.num_device_free - s0.num_device_free, 1);
    ck_assert_int_eq(s1.reserved_bytes[XDEV_STAT_ALL].current,
                     s1.allocated_bytes[XDEV_STAT_ALL].current);
    XT_OK(xdev_free(q));
    ck_assert_int_eq(xt_mem_stats(0).reserved_bytes[XDEV_STAT_ALL].current, 0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(q), "not allocated|not a live");
}
END_TEST

/* ------------------------------------------------------------ conf */

START_TEST(conf_roundup_and_max_split) {
    XT_OK(xdev_empty_cache());
    xdev_memory_stats_t s = xt_mem_stats(0);
    ck_assert_int_eq(s.max_split_size, (int64_t)(32 * MIB));
    void *p = NULL;
    /* 4 divisions per power of two: 1.3 MiB rounds to 1.5 MiB */
    XT_OK(xdev_malloc(&p, 1300 * 1024));
    xdev_memory_stats_t s1 = xt_mem_stats(0);
    ck_assert_int_eq(s1.allocated_bytes[XDEV_STAT_ALL].current -
                         s.allocated_bytes[XDEV_STAT_ALL].current,
                     (int64_t)(1536 * 1024));
    XT_OK(xdev_free(p));
    void *big = NULL; /* >= max_split: oversize, never split */
    XT_OK(xdev_malloc(&big, 40 * MIB));
    s1 = xt_mem_stats(0);
    ck_assert_int_eq(s1.oversize_allocations.current, 1);
    ck_assert_int_ge(s1.oversize_segments.current, 1);
    XT_OK(xdev_free(big));
    void *small = NULL; /* a small large-pool request must not take the oversize block */
    XT_OK(xdev_malloc(&small, 12 * MIB));
    ck_assert_ptr_ne(small, big);
    XT_OK(xdev_free(small));
    ck_assert_int_eq(xt_mem_stats(0).oversize_allocations.current, 0);
}
END_TEST

/* ------------------------------------------------------------ async */

START_TEST(async_backend_allocator) {
    /* The stream-ordered slots are optional in a backend (the CPU has them). */
    xdev_memory_stats_t probe;
    if (xt_type() != XDEV_DEVICE_CPU &&
        xdev_memory_stats(xt_dev(0), &probe) == XDEV_ERROR_NOT_SUPPORTED)
        XT_SKIP("backend:async: %s", xdev_last_error());
    xdev_stream_t s = xt_new_stream(0);
    xdev_memory_stats_t s0 = xt_mem_stats(0);
    void *p = NULL;
    XT_OK(xdev_malloc_stream(&p, 4096, s));
    if (xt_host_addressable())
        memset(p, 1, 4096);
    else
        XT_OK(xdev_memset_async(p, 1, 4096, s));
    XT_OK(xdev_memset_async(p, 7, 4096, s));
    XT_OK(xdev_free(p)); /* released when the stream gets there */
    XT_OK(xdev_stream_synchronize(s));
    xdev_memory_stats_t s1 = xt_mem_stats(0);
    ck_assert_int_eq(s1.num_device_alloc - s0.num_device_alloc, 1);
    ck_assert_int_eq(s1.allocated_bytes[XDEV_STAT_ALL].current,
                     s0.allocated_bytes[XDEV_STAT_ALL].current);
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* ------------------------------------------------------------ pinned */

static xdev_host_memory_stats_t hstats(void) {
    xdev_host_memory_stats_t s;
    XT_OK(xdev_host_memory_stats(&s));
    return s;
}

START_TEST(pinned_size_classes) {
    XT_OK(xdev_host_empty_cache());
    xdev_host_memory_stats_t s0 = hstats();
    void *p = NULL, *q = NULL;
    XT_OK(xdev_host_alloc(&p, 65 * MIB)); /* torch: 128 MiB; here within 12.5% */
    XT_OK(xdev_host_alloc(&q, 4097));
    xdev_host_memory_stats_t s1 = hstats();
    int64_t reserved = s1.reserved_bytes.current - s0.reserved_bytes.current;
    ck_assert_int_le(reserved, (int64_t)(65 * MIB + 65 * MIB / 8 + 8192));
    ck_assert_int_ge(reserved, (int64_t)(65 * MIB + 4097));
    ck_assert_int_eq(s1.requested_bytes.current - s0.requested_bytes.current,
                     (int64_t)(65 * MIB + 4097));
    ck_assert_int_eq(s1.allocation.current - s0.allocation.current, 2);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info((char *)p + 10, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_PINNED_HOST);
    ck_assert_ptr_eq(info.base, p);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(p), "xdev_host_free");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_free((char *)p + 64), "start");
    XT_OK(xdev_host_free(p));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_free(p), "double free");
    void *again = NULL; /* cached: same block, no new pinned allocation */
    XT_OK(xdev_host_alloc(&again, 65 * MIB - 1000));
    ck_assert_ptr_eq(again, p);
    ck_assert_int_eq(hstats().num_host_alloc, s1.num_host_alloc);
    void *dev = NULL;
    XT_OK(xdev_malloc(&dev, 64));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_free(dev), "xdev_free");
    XT_OK(xdev_free(dev));
    XT_OK(xdev_host_free(again));
    XT_OK(xdev_host_free(q));
    XT_OK(xdev_host_empty_cache());
    xdev_host_memory_stats_t s2 = hstats();
    ck_assert_int_eq(s2.reserved_bytes.current, s2.allocated_bytes.current);
    XT_OK(xdev_reset_peak_host_memory_stats());
    ck_assert_int_eq(hstats().reserved_bytes.peak, hstats().reserved_bytes.current);
}
END_TEST

START_TEST(pinned_reuse_waits_for_copies) {
    xdev_stream_t s = xt_new_stream(0);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t safety;
    xt_opener_start(&safety, &gate, 10000);
    void *pin = NULL, *dev = NULL, *other = NULL;
    XT_OK(xdev_host_alloc(&pin, 1 * MIB));
    XT_OK(xdev_malloc_stream(&dev, 1 * MIB, s));
    memset(pin, 0x5a, MIB);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_memcpy_async(dev, pin, MIB, s)); /* queued behind the gate */
    XT_OK(xdev_host_free(pin));
    XT_OK(xdev_host_alloc(&other, 1 * MIB)); /* must not hand out pin yet */
    ck_assert_ptr_ne(other, pin);
    memset(other, 0, MIB);
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    unsigned char check[16];
    XT_OK(xdev_memcpy(check, dev, sizeof check));
    ck_assert_uint_eq(check[15], 0x5a); /* the copy read the data as it was */
    void *back = NULL;
    XT_OK(xdev_host_alloc(&back, 1 * MIB)); /* the stream passed it: reusable */
    ck_assert_ptr_eq(back, pin);
    XT_OK(xdev_host_free(back));
    XT_OK(xdev_host_free(other));
    XT_OK(xdev_free(dev));
    xt_opener_join(&safety);
    xt_gate_destroy(&gate);
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(pinned_cache_cap) {
    /* XDEV_ALLOC_CONF=pinned_max_cached_mb:1 in this suite's environment */
    XT_OK(xdev_host_empty_cache());
    void *p = NULL;
    XT_OK(xdev_host_alloc(&p, 4 * MIB));
    int64_t frees = hstats().num_host_free;
    XT_OK(xdev_host_free(p)); /* 4 MiB > 1 MiB cap: returned, not cached */
    xdev_host_memory_stats_t s = hstats();
    ck_assert_int_eq(s.num_host_free, frees + 1);
    ck_assert_int_eq(s.reserved_bytes.current, s.allocated_bytes.current);
    XT_OK(xdev_host_alloc(&p, 100000)); /* small blocks stay cached */
    XT_OK(xdev_host_free(p));
    ck_assert_int_gt(hstats().reserved_bytes.current, hstats().allocated_bytes.current);
}
END_TEST

/* ------------------------------------------------------------ stress */

/* Threads work on devices 0 and 1 (only 0 where there is one device). */
static int stress_devices(void) {
    return xt_device_count() < 2 ? 1 : 2;
}

static void *stress_thread(void *arg) {
    int id = (int)(intptr_t)arg;
    int dev = id % stress_devices();
    XT_OK(xdev_set_device(xt_dev(dev)));
    xdev_stream_t s = xt_new_stream(dev);
    void *live[16] = {0};
    uint64_t seed = (uint64_t)id * 7919 + 1;
    int steps = xt_iters(3000, 300);
    for (int i = 0; i < steps; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int k = (int)((seed >> 33) % 16);
        if (live[k]) {
            if ((seed >> 10) & 1) XT_OK(xdev_record_stream(live[k], s));
            XT_OK(xdev_free(live[k]));
            live[k] = NULL;
        } else {
            size_t sz = (size_t)512 << ((seed >> 20) % 13);
            xdev_stream_t on = (seed >> 30) & 1 ? s : NULL; /* NULL: the current stream */
            if (on)
                XT_OK(xdev_malloc_stream(&live[k], sz, on));
            else
                XT_OK(xdev_malloc(&live[k], sz));
            if (xt_host_addressable())
                ((volatile char *)live[k])[0] = (char)id;
            else
                XT_OK(xdev_memset_async(live[k], id, 1, on)); /* on the block's stream */
        }
    }
    for (int k = 0; k < 16; k++)
        XT_OK(xdev_free(live[k]));
    XT_OK(xdev_stream_destroy(s));
    return NULL;
}

START_TEST(eight_threads) {
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, stress_thread, (void *)(intptr_t)i);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    for (int d = 0; d < stress_devices(); d++) {
        xdev_memory_stats_t s = xt_mem_stats(d);
        ck_assert_int_eq(s.allocation[XDEV_STAT_ALL].current, 0);
        ck_assert_int_eq(s.allocated_bytes[XDEV_STAT_ALL].current, 0);
        ck_assert_int_eq(s.allocation[XDEV_STAT_ALL].allocated, s.allocation[XDEV_STAT_ALL].freed);
    }
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(xt_mem_stats(0).reserved_bytes[XDEV_STAT_ALL].current, 0);
}
END_TEST

static TCase *tc(const char *name) {
    TCase *t = tcase_create(name);
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 120);
    return t;
}

int main(int argc, char **argv) {
    Suite *caching = suite_create("caching");
    TCase *t = tc("caching");
    tcase_add_test(t, rounding_and_pools);
    tcase_add_test(t, free_merges_at_once);
    tcase_add_test(t, best_fit_finds_each_bin);
    tcase_add_test(t, hot_pair_rechecks_best_fit_after_bins_change);
    tcase_add_test(t, reuse_only_on_own_stream);
    tcase_add_test(t, record_stream_delays_reuse);
    tcase_add_test(t, record_stream_errors);
    tcase_add_test(t, cross_thread_free);
    tcase_add_test(t, pointer_registry);
    tcase_add_test(t, fraction_cap);
    tcase_add_test(t, pluggable_allocator);
    allocator_stats_tests(t);
    suite_add_tcase(caching, t);

    Suite *oom = suite_create("oom");
    t = tc("oom");
    tcase_add_test(t, oom_flush_retry_succeeds);
    tcase_add_test(t, oom_message_and_stats);
    suite_add_tcase(oom, t);

    Suite *nocache = suite_create("nocache");
    t = tc("nocache");
    tcase_add_test(t, no_caching_goes_to_backend);
    tcase_add_test(t, pointer_registry);
    suite_add_tcase(nocache, t);

    Suite *conf = suite_create("conf");
    t = tc("conf");
    tcase_add_test(t, conf_roundup_and_max_split);
    suite_add_tcase(conf, t);

    Suite *async = suite_create("async");
    t = tc("async");
    tcase_add_test(t, async_backend_allocator);
    suite_add_tcase(async, t);

    Suite *pinned = suite_create("pinned");
    t = tc("pinned");
    tcase_add_test(t, pinned_size_classes);
    tcase_add_test(t, pinned_reuse_waits_for_copies);
    suite_add_tcase(pinned, t);

    Suite *pinned_cap = suite_create("pinned_cap");
    t = tc("pinned_cap");
    tcase_add_test(t, pinned_cache_cap);
    suite_add_tcase(pinned_cap, t);

    Suite *stress = suite_create("stress");
    t = tc("stress");
    tcase_add_test(t, eight_threads);
    suite_add_tcase(stress, t);

    SRunner *sr = srunner_create(caching);
    srunner_add_suite(sr, oom);
    srunner_add_suite(sr, nocache);
    srunner_add_suite(sr, conf);
    srunner_add_suite(sr, async);
    srunner_add_suite(sr, pinned);
    srunner_add_suite(sr, pinned_cap);
    srunner_add_suite(sr, stress);
    return xt_run(sr, "caching", argc, argv);
}
