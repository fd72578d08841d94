/* SPDX-License-Identifier: Apache-2.0 */
/* test_allocator_stats.c - the caching allocator's statistics: invariants
 * over a random sequence against a model, the totals the allocator adds in
 * late against counts kept by the test, the items and their resets, the
 * hot pair counted as a free and an allocation, memory history switched on
 * mid pair, the summary's figures and the snapshot's JSON. Part of
 * test_allocator (suite caching; test_allocator.c's main adds them), kept
 * apart so each file holds one concept: what the allocator does there, what
 * it reports here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_check.h"
#include "test_allocator_common.h"

/* Reference model for the random sequence: what must be true of the stats. */
typedef struct {
    void *p;
    size_t req;
    int dev;
} live_t;

START_TEST(stats_invariants_random) {
    enum { SLOTS = 48 };
    live_t live[SLOTS];
    memset(live, 0, sizeof live);
    const int dev = xt_wrap(1);
    xdev_stream_t s[2] = {xt_new_stream(dev), xt_new_stream(dev)};
    XT_OK(xdev_reset_peak_memory_stats(xt_dev(dev)));
    xdev_memory_stats_t base = xt_mem_stats(dev);
    uint64_t seed = 42;
    int steps = xt_iters(4000, 400);
    int64_t prev_peak = base.allocated_bytes[XDEV_STAT_ALL].peak;
    for (int i = 0; i < steps; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int k = (int)((seed >> 33) % SLOTS);
        if (live[k].p != NULL) {
            XT_OK(xdev_free(live[k].p));
            live[k].p = NULL;
        } else {
            int l2 = 5 + (int)((seed >> 20) % 19); /* 32 B .. 8 MiB */
            size_t sz = ((size_t)1 << l2) + (size_t)((seed >> 8) % ((size_t)1 << l2));
            xdev_stream_t on = s[(seed >> 40) & 1];
            XT_OK(xdev_malloc_stream(&live[k].p, sz, on));
            live[k].req = sz;
            /* the whole block is ours: ASan would see overlap */
            if (xt_host_addressable())
                memset(live[k].p, 0xA5, sz);
            else
                XT_OK(xdev_memset_async(live[k].p, 0xA5, sz, on));
        }
        xdev_memory_stats_t st = xt_mem_stats(dev);
        int64_t n = 0, req = 0;
        for (int j = 0; j < SLOTS; j++)
            if (live[j].p) {
                n++;
                req += (int64_t)live[j].req;
            }
        for (int pool = 0; pool < XDEV_STAT_POOLS; pool++) {
            ck_assert_int_ge(st.allocated_bytes[pool].peak, st.allocated_bytes[pool].current);
            ck_assert_int_ge(st.reserved_bytes[pool].current,
                             st.active_bytes[pool].current + st.inactive_split_bytes[pool].current);
        }
        ck_assert_int_eq(
            st.allocation[XDEV_STAT_ALL].current - base.allocation[XDEV_STAT_ALL].current, n);
        ck_assert_int_eq(st.requested_bytes[XDEV_STAT_ALL].current -
                             base.requested_bytes[XDEV_STAT_ALL].current,
                         req);
        ck_assert_int_eq(st.allocation[XDEV_STAT_ALL].current,
                         st.allocation[XDEV_STAT_LARGE_POOL].current +
                             st.allocation[XDEV_STAT_SMALL_POOL].current);
        ck_assert_int_eq(st.reserved_bytes[XDEV_STAT_ALL].current,
                         st.reserved_bytes[XDEV_STAT_LARGE_POOL].current +
                             st.reserved_bytes[XDEV_STAT_SMALL_POOL].current);
        ck_assert_int_eq(st.allocated_bytes[XDEV_STAT_ALL].allocated -
                             st.allocated_bytes[XDEV_STAT_ALL].freed,
                         st.allocated_bytes[XDEV_STAT_ALL].current -
                             (base.allocated_bytes[XDEV_STAT_ALL].current -
                              (base.allocated_bytes[XDEV_STAT_ALL].allocated -
                               base.allocated_bytes[XDEV_STAT_ALL].freed)));
        ck_assert_int_ge(st.allocated_bytes[XDEV_STAT_ALL].current -
                             base.allocated_bytes[XDEV_STAT_ALL].current,
                         req);
        ck_assert_int_ge(st.allocated_bytes[XDEV_STAT_ALL].peak, prev_peak);
        prev_peak = st.allocated_bytes[XDEV_STAT_ALL].peak;
    }
    /* every live block is distinct and device_of knows it */
    for (int j = 0; j < SLOTS; j++) {
        if (!live[j].p) continue;
        xdev_device_t d;
        XT_OK(xdev_device_of((char *)live[j].p + live[j].req - 1, &d));
        XT_DEV_EQ(d, xt_dev(dev));
        XT_OK(xdev_free(live[j].p));
    }
    xdev_memory_stats_t end = xt_mem_stats(dev);
    ck_assert_int_eq(end.allocation[XDEV_STAT_ALL].current, base.allocation[XDEV_STAT_ALL].current);
    ck_assert_int_eq(end.active_bytes[XDEV_STAT_ALL].current,
                     base.active_bytes[XDEV_STAT_ALL].current);
    XT_OK(xdev_empty_cache());
    end = xt_mem_stats(dev);
    ck_assert_int_eq(end.reserved_bytes[XDEV_STAT_ALL].current, 0);
    ck_assert_int_eq(end.inactive_split_bytes[XDEV_STAT_ALL].current, 0);
    XT_OK(xdev_stream_destroy(s[0]));
    XT_OK(xdev_stream_destroy(s[1]));
}
END_TEST

/* The allocator adds the allocated/freed totals of its allocations, frees
 * and bin changes to the statistics late (alloc_internal.h, alloc_due),
 * when they are read: after every step of a random sequence (hot pairs,
 * splits, merges, both pools, two streams) the counts of allocations and
 * frees and the requested bytes must match what this test counted, and
 * each figure's allocated - freed its current value's change, per pool. */
START_TEST(stats_totals_exact) {
    enum { SLOTS = 32, FIGS = 7 };
    live_t live[SLOTS];
    memset(live, 0, sizeof live);
    const int dev = xt_wrap(1);
    const xdev_device_t d = xt_dev(dev);
    const int A = XDEV_STAT_ALL;
    static const char *names[FIGS] = {"allocation",          "active",          "allocated_bytes",
                                      "active_bytes",        "requested_bytes", "inactive_split",
                                      "inactive_split_bytes"};
    xdev_stream_t s[2] = {xt_new_stream(dev), xt_new_stream(dev)};
    XT_OK(xdev_reset_accumulated_memory_stats(d));
    xdev_memory_stats_t base = xt_mem_stats(dev);
    int64_t mallocs = 0, frees = 0, req_in = 0, req_out = 0;
    uint64_t seed = 7;
    int steps = xt_iters(3000, 300);
    for (int i = 0; i < steps; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int k = (int)((seed >> 33) % SLOTS);
        if (live[k].p != NULL) {
            XT_OK(xdev_free(live[k].p));
            frees++;
            req_out += (int64_t)live[k].req;
            live[k].p = NULL;
            if (i % 5 == 0) { /* the same size again at once: a hot pair */
                XT_OK(xdev_malloc_stream(&live[k].p, live[k].req, s[k & 1]));
                mallocs++;
                req_in += (int64_t)live[k].req;
            }
        } else {
            int l2 = 5 + (int)((seed >> 20) % 19); /* 32 B .. 8 MiB: both pools */
            size_t sz = ((size_t)1 << l2) + (size_t)((seed >> 8) % ((size_t)1 << l2));
            XT_OK(xdev_malloc_stream(&live[k].p, sz, s[k & 1]));
            live[k].req = sz;
            mallocs++;
            req_in += (int64_t)sz;
        }
        xdev_memory_stats_t st = xt_mem_stats(dev);
        const xdev_stat_t *fig[FIGS] = {
            st.allocation,      st.active,         st.allocated_bytes,     st.active_bytes,
            st.requested_bytes, st.inactive_split, st.inactive_split_bytes};
        const xdev_stat_t *was[FIGS] = {
            base.allocation,      base.active,         base.allocated_bytes,     base.active_bytes,
            base.requested_bytes, base.inactive_split, base.inactive_split_bytes};
        ck_assert_msg(st.allocation[A].allocated == mallocs && st.allocation[A].freed == frees &&
                          st.active[A].allocated == mallocs && st.active[A].freed == frees,
                      "step %d: allocation %lld/%lld and active %lld/%lld allocated/freed, "
                      "expected %lld/%lld",
                      i, (long long)st.allocation[A].allocated, (long long)st.allocation[A].freed,
                      (long long)st.active[A].allocated, (long long)st.active[A].freed,
                      (long long)mallocs, (long long)frees);
        ck_assert_msg(
            st.requested_bytes[A].allocated == req_in && st.requested_bytes[A].freed == req_out,
            "step %d: requested_bytes %lld/%lld allocated/freed, expected %lld/%lld", i,
            (long long)st.requested_bytes[A].allocated, (long long)st.requested_bytes[A].freed,
            (long long)req_in, (long long)req_out);
        ck_assert_int_eq(st.active_bytes[A].allocated, st.allocated_bytes[A].allocated);
        ck_assert_int_eq(st.active_bytes[A].freed, st.allocated_bytes[A].freed);
        for (int f = 0; f < FIGS; f++)
            for (int p = 0; p < XDEV_STAT_POOLS; p++)
                ck_assert_msg(
                    fig[f][p].allocated - fig[f][p].freed == fig[f][p].current - was[f][p].current,
                    "step %d: %s[%d]: allocated %lld - freed %lld != current %lld - "
                    "%lld at the reset",
                    i, names[f], p, (long long)fig[f][p].allocated, (long long)fig[f][p].freed,
                    (long long)fig[f][p].current, (long long)was[f][p].current);
    }
    for (int j = 0; j < SLOTS; j++)
        if (live[j].p) XT_OK(xdev_free(live[j].p));
    XT_OK(xdev_stream_destroy(s[0]));
    XT_OK(xdev_stream_destroy(s[1]));
}
END_TEST

START_TEST(stats_items_and_resets) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, 3 * MIB));
    xdev_memory_stats_t s = xt_mem_stats(0);
    size_t n = 0;
    XT_OK(xdev_memory_stats_items(&s, NULL, 0, &n));
    ck_assert_uint_eq(n, 9 * 3 * 4 + 6 + 8 + 8); /* + managed_allocation.*, managed_bytes.* */
    xdev_memory_stat_item_t *items = calloc(n, sizeof *items);
    size_t n2 = 0;
    XT_OK(xdev_memory_stats_items(&s, items, n, &n2));
    ck_assert_uint_eq(n, n2);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(items[i].key, "allocated_bytes.large_pool.current") == 0) {
            found = true;
            ck_assert_int_eq(items[i].value, s.allocated_bytes[XDEV_STAT_LARGE_POOL].current);
        }
    ck_assert(found);
    ck_assert_str_eq(items[n - 9].key, "oversize_segments.freed");
    ck_assert_str_eq(items[n - 1].key, "managed_bytes.freed");
    free(items);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_stats_items(&s, NULL, 3, &n), "items");
    size_t a = 0, ma = 0, r = 0, mr = 0;
    XT_OK(xdev_memory_allocated(xt_dev(0), &a));
    XT_OK(xdev_max_memory_allocated(xt_dev(0), &ma));
    XT_OK(xdev_memory_reserved(xt_dev(0), &r));
    XT_OK(xdev_max_memory_reserved(xt_dev(0), &mr));
    ck_assert_uint_ge(a, 3 * MIB);
    ck_assert_uint_ge(ma, a);
    ck_assert_uint_ge(r, a);
    ck_assert_uint_ge(mr, r);
    XT_OK(xdev_free(p));
    XT_OK(xdev_reset_peak_memory_stats(xt_dev(0)));
    XT_OK(xdev_max_memory_allocated(xt_dev(0), &ma));
    XT_OK(xdev_memory_allocated(xt_dev(0), &a));
    ck_assert_uint_eq(ma, a);
    XT_OK(xdev_reset_accumulated_memory_stats(xt_dev(0)));
    s = xt_mem_stats(0);
    ck_assert_int_eq(s.allocated_bytes[XDEV_STAT_ALL].allocated, 0);
    ck_assert_int_eq(s.num_device_alloc, 0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_allocated(xt_dev(0), NULL), "out");
}
END_TEST

/* The hot pair (a free, then an allocation that takes the same block back)
 * leaves every statistic as a free then an allocation counted one by one
 * would: totals, current values, peaks, and the resets between them (the
 * allocator counts the pair's free late, with the allocation or when the
 * block is binned). */
START_TEST(hot_pair_stats_exact) {
    const int dev = xt_wrap(1);
    xdev_device_t d = xt_dev(dev);
    void *p = NULL;
    XT_OK(xdev_malloc_device(d, &p, 4000)); /* 4096 bytes, small pool */
    XT_OK(xdev_free(p));
    /* the resets see the free: nothing allocated, no total left */
    XT_OK(xdev_reset_accumulated_memory_stats(d));
    XT_OK(xdev_reset_peak_memory_stats(d));
    xdev_memory_stats_t s = xt_mem_stats(dev);
    const int S = XDEV_STAT_SMALL_POOL, A = XDEV_STAT_ALL;
    ck_assert_int_eq(s.allocation[A].current, 0);
    ck_assert_int_eq(s.allocation[A].freed, 0);
    ck_assert_int_eq(s.allocated_bytes[A].peak, 0);
    ck_assert_int_eq(s.requested_bytes[S].peak, 0);
    /* free then allocate again, with the reset between */
    XT_OK(xdev_malloc_device(d, &p, 4000));
    XT_OK(xdev_free(p));
    XT_OK(xdev_reset_accumulated_memory_stats(d));
    s = xt_mem_stats(dev);
    ck_assert_int_eq(s.allocation[A].allocated, 0);
    ck_assert_int_eq(s.allocation[A].freed, 0);
    ck_assert_int_eq(s.allocated_bytes[S].freed, 0);
    ck_assert_int_eq(s.requested_bytes[S].freed, 0);
    /* three hot pairs, requests 4096, 3800, 4000: the same block each time */
    void *q = NULL;
    XT_OK(xdev_malloc_device(d, &q, 4096));
    ck_assert_ptr_eq(q, p);
    XT_OK(xdev_free(q));
    XT_OK(xdev_malloc_device(d, &q, 3800));
    ck_assert_ptr_eq(q, p);
    s = xt_mem_stats(dev);
    ck_assert_int_eq(s.allocation[A].allocated, 2);
    ck_assert_int_eq(s.allocation[A].freed, 1);
    ck_assert_int_eq(s.allocation[S].current, 1);
    ck_assert_int_eq(s.active[S].current, 1);
    ck_assert_int_eq(s.active_bytes[A].current, 4096);
    ck_assert_int_eq(s.active_bytes[S].allocated, 2 * 4096);
    ck_assert_int_eq(s.active_bytes[S].freed, 4096);
    ck_assert_int_eq(s.allocated_bytes[A].current, 4096);
    ck_assert_int_eq(s.allocated_bytes[A].peak, 4096);
    ck_assert_int_eq(s.allocated_bytes[A].allocated, 2 * 4096);
    ck_assert_int_eq(s.requested_bytes[S].current, 3800);
    ck_assert_int_eq(s.requested_bytes[S].peak, 4096);
    ck_assert_int_eq(s.requested_bytes[A].allocated, 4096 + 3800);
    ck_assert_int_eq(s.requested_bytes[A].freed, 4096);
    ck_assert_int_eq(s.inactive_split[S].current, 1); /* the rest of the segment */
    XT_OK(xdev_free(q));
    XT_OK(xdev_malloc_device(d, &q, 4000));
    ck_assert_ptr_eq(q, p);
    s = xt_mem_stats(dev);
    ck_assert_int_eq(s.requested_bytes[S].current, 4000);
    ck_assert_int_eq(s.requested_bytes[S].peak, 4096);
    ck_assert_int_eq(s.requested_bytes[A].freed, 4096 + 3800);
    ck_assert_int_eq(s.allocation[A].freed, 2);
    /* the free left in the stash shows at once, peaks reset after it */
    XT_OK(xdev_free(q));
    s = xt_mem_stats(dev);
    ck_assert_int_eq(s.allocation[A].current, 0);
    ck_assert_int_eq(s.allocation[A].freed, 3);
    ck_assert_int_eq(s.allocated_bytes[A].current, 0);
    ck_assert_int_eq(s.requested_bytes[A].current, 0);
    ck_assert_int_eq(s.active_bytes[S].freed, 3 * 4096);
    XT_OK(xdev_malloc_device(d, &q, 4000));
    XT_OK(xdev_free(q));
    XT_OK(xdev_reset_peak_memory_stats(d));
    s = xt_mem_stats(dev);
    ck_assert_int_eq(s.allocated_bytes[A].peak, 0);
    ck_assert_int_eq(s.active[S].peak, 0);
}
END_TEST

static int count_of(const char *s, const char *what) {
    int n = 0;
    for (const char *at = strstr(s, what); at != NULL; at = strstr(at + 1, what))
        n++;
    return n;
}

/* History switched on between the free of a hot pair and its allocation:
 * the allocation is recorded with its tag, the free after it too, and the
 * statistics count both pairs' frees and allocations once. */
START_TEST(hot_pair_history_switched_on) {
    xdev_stream_t a = xt_new_stream(0);
    xdev_memory_stats_t s0 = xt_mem_stats(0);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_memory_tag_push("hotpair"));
    XT_OK(xdev_malloc_stream(&p, 4096, a));
    XT_OK(xdev_free(p)); /* into the stash, nothing recording */
    XT_OK(xdev_memory_record_history(xt_dev(0), true, 64));
    XT_OK(xdev_malloc_stream(&q, 4096, a));
    ck_assert_ptr_eq(q, p);
    XT_OK(xdev_free(q));
    XT_OK(xdev_memory_tag_pop());
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    ck_assert_msg(count_of(json, "\"action\":\"alloc\"") == 1, "%.600s", json);
    ck_assert_msg(count_of(json, "\"action\":\"free_completed\"") == 1, "%.600s", json);
    ck_assert_msg(strstr(json, "hotpair") != NULL, "tag missing: %.600s", json);
    free(json);
    XT_OK(xdev_memory_record_history(xt_dev(0), false, 0));
    xdev_memory_stats_t s = xt_mem_stats(0);
    const int A = XDEV_STAT_ALL;
    ck_assert_int_eq(s.allocation[A].allocated - s0.allocation[A].allocated, 2);
    ck_assert_int_eq(s.allocation[A].freed - s0.allocation[A].freed, 2);
    ck_assert_int_eq(s.allocation[A].current, s0.allocation[A].current);
    ck_assert_int_eq(s.requested_bytes[A].current, s0.requested_bytes[A].current);
    ck_assert_int_eq(s.active_bytes[A].freed - s0.active_bytes[A].freed, 2 * 4096);
    XT_OK(xdev_stream_destroy(a));
}
END_TEST

START_TEST(summary_has_figures) {
    const int dev = xt_wrap(2);
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(dev), &p, 5 * MIB));
    char *text = NULL;
    XT_OK(xdev_memory_summary(xt_dev(dev), false, &text));
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strstr(text, xt_name(dev)) != NULL, "%s", text);
    ck_assert_msg(strstr(text, "Allocated memory") && strstr(text, "Reserved memory"), "%s", text);
    ck_assert_msg(strstr(text, "5120 KiB") != NULL, "5 MiB allocation not shown:\n%s", text);
    ck_assert_msg(strstr(text, "from small pool") != NULL, "%s", text);
    free(text);
    XT_OK(xdev_memory_summary(xt_dev(dev), true, &text));
    ck_assert_msg(strstr(text, "from small pool") == NULL, "abbreviated has pools:\n%s", text);
    free(text);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_summary(xt_dev(dev), false, NULL), "out");
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(snapshot_is_valid_json) {
    XT_OK(xdev_memory_record_history(xt_dev(0), true, 64));
    xdev_stream_t a = xt_new_stream(0);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_stream(&p, 1000, a));
    XT_OK(xdev_malloc_stream(&q, 12 * MIB, a));
    xdev_stream_t b = xt_new_stream(0);
    XT_OK(xdev_record_stream(q, b));
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char err[256];
    ck_assert_msg(json_check(json, err, sizeof err), "invalid JSON (%s): %.400s", err, json);
    ck_assert(strstr(json, "\"segments\"") && strstr(json, "\"device_traces\""));
    ck_assert(strstr(json, "\"active_allocated\""));
    ck_assert(strstr(json, "\"action\":\"alloc\""));
    char addr[32];
    snprintf(addr, sizeof addr, "%llu", (unsigned long long)(uintptr_t)q);
    ck_assert_msg(strstr(json, addr) != NULL, "block %s missing", addr);
    free(json);
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(q));
    XT_OK(xdev_memory_snapshot(&json));
    ck_assert(json_check(json, err, sizeof err));
    ck_assert(strstr(json, "\"free_completed\""));
    free(json);
    XT_OK(xdev_memory_record_history(xt_dev(0), false, 0));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
}
END_TEST
void allocator_stats_tests(TCase *t) {
    tcase_add_test(t, stats_invariants_random);
    tcase_add_test(t, stats_totals_exact);
    tcase_add_test(t, stats_items_and_resets);
    tcase_add_test(t, hot_pair_stats_exact);
    tcase_add_test(t, hot_pair_history_switched_on);
    tcase_add_test(t, summary_has_figures);
    tcase_add_test(t, snapshot_is_valid_json);
}
