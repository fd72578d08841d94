/* SPDX-License-Identifier: Apache-2.0 */
/* test_alloc_policy.c - the caching allocator's growth policy
 * (trim_before_grow) on the backend under test: before reserved memory grows
 * past its high-water mark the requesting stream's own wholly free segments
 * go back - those that stayed free through two growths of the allocator (a
 * segment freed just now is kept: the next phase of a step needs it) - never
 * another stream's (taking them made streams trade segments with the backend
 * on every iteration); a warm multi-stream loop makes no backend call;
 * xdev_empty_cache restarts the mark; trim_before_grow:false keeps
 * everything (torch's behaviour). A stream that needs memory takes over
 * another stream's wholly free segment when that stream is idle, never
 * while it has queued work. Conformance: XDEV_BACKEND=<backend>,
 * entries allocator.policy and allocator.policy_off. */
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define MIB ((size_t)1 << 20)

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
    XT_OK(xdev_empty_cache());
}

static int64_t backend_frees(void) {
    return xt_mem_stats(0).num_device_free;
}

static int64_t backend_calls(void) {
    xdev_memory_stats_t s = xt_mem_stats(0);
    return s.num_device_alloc + s.num_device_free;
}

static bool policy_on(void) {
    const char *conf = getenv("XDEV_ALLOC_CONF");
    return conf == NULL || strstr(conf, "trim_before_grow:false") == NULL;
}

/* Stream A caches a free 40 MiB segment; stream B then grows past the mark:
 * A's segment stays. */
START_TEST(other_streams_segments_are_kept) {
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_stream(&p, 40 * MIB, a));
    XT_OK(xdev_free(p));
    int64_t frees = backend_frees();
    XT_OK(xdev_malloc_stream(&q, 60 * MIB, b)); /* beyond the mark (40 MiB) */
    ck_assert_msg(backend_frees() == frees, "stream A's free segment was released");
    int64_t calls = backend_calls();
    XT_OK(xdev_malloc_stream(&p, 40 * MIB, a)); /* A finds its segment again */
    ck_assert_int_eq(backend_calls(), calls);
    XT_OK(xdev_free(p));
    XT_OK(xdev_free(q));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
}
END_TEST

/* One stream: its own free segment is kept through the next two growths
 * (just freed: likely needed again), then goes back before the stream grows
 * past the mark once more (with the policy on); it stays with
 * trim_before_grow:false. */
START_TEST(own_free_segment_trimmed_before_growth) {
    xdev_stream_t s = xt_new_stream(0);
    void *p = NULL, *q[3] = {NULL, NULL, NULL};
    XT_OK(xdev_malloc_stream(&p, 40 * MIB, s));
    XT_OK(xdev_free(p));
    int64_t frees = backend_frees();
    size_t reserved0 = 0, reserved1 = 0;
    XT_OK(xdev_memory_reserved(xt_dev(0), &reserved0));
    for (int i = 0; i < 2; i++) { /* cannot use the 40 MiB segment: two growths */
        XT_OK(xdev_malloc_stream(&q[i], 60 * MIB, s));
        ck_assert_msg(backend_frees() == frees, "growth %d gave back a segment freed just now",
                      i + 1);
    }
    XT_OK(xdev_malloc_stream(&q[2], 60 * MIB, s)); /* the third: the segment aged */
    XT_OK(xdev_memory_reserved(xt_dev(0), &reserved1));
    if (policy_on()) {
        ck_assert_msg(backend_frees() == frees + 1, "the aged free 40 MiB segment was kept");
        ck_assert_uint_eq(reserved1, reserved0 - 40 * MIB + 180 * MIB);
    } else {
        ck_assert_int_eq(backend_frees(), frees);
        ck_assert_uint_eq(reserved1, reserved0 + 180 * MIB);
    }
    for (int i = 0; i < 3; i++)
        XT_OK(xdev_free(q[i]));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* Stream A's wholly free segment, A idle: stream B, finding nothing in its
 * own cache, takes that segment over instead of asking the backend for a new
 * one (A has passed all its work, so B cannot overlap A's last use); with
 * trim_before_grow:false (torch) B gets a new segment. */
START_TEST(idle_streams_free_segment_is_adopted) {
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_stream(&p, 40 * MIB, a));
    XT_OK(xdev_free(p));
    XT_OK(xdev_stream_synchronize(a));
    int64_t calls = backend_calls();
    size_t reserved0 = 0, reserved1 = 0;
    XT_OK(xdev_memory_reserved(xt_dev(0), &reserved0));
    XT_OK(xdev_malloc_stream(&q, 30 * MIB, b));
    XT_OK(xdev_memory_reserved(xt_dev(0), &reserved1));
    if (policy_on()) {
        ck_assert_msg(backend_calls() == calls && q == p && reserved1 == reserved0,
                      "stream B asked the backend (%lld calls, reserved %zu -> %zu MiB) instead "
                      "of adopting idle stream A's free 40 MiB segment",
                      (long long)(backend_calls() - calls), reserved0 / MIB, reserved1 / MIB);
    } else {
        ck_assert_int_eq(backend_calls(), calls + 1);
        ck_assert_ptr_ne(q, p);
    }
    XT_OK(xdev_free(q));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
}
END_TEST

/* A stream with queued work keeps its free segments: B may not adopt
 * memory A's work may still be using (stream-ordered reuse). */
START_TEST(busy_streams_free_segment_is_not_adopted) {
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t safety;
    xt_opener_start(&safety, &gate, 10000);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_stream(&p, 40 * MIB, a));
    XT_OK(xdev_launch_host_func(a, xt_gate_wait_fn, &gate)); /* a is busy "using" p */
    XT_OK(xdev_free(p));
    XT_OK(xdev_malloc_stream(&q, 30 * MIB, b));
    ck_assert_msg(q != p, "stream B adopted busy stream A's segment: B's work could overlap A's");
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(a));
    XT_OK(xdev_free(q));
    xt_opener_join(&safety);
    xt_gate_destroy(&gate);
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
}
END_TEST

/* Requests served one after another on 4 streams (an inference server),
 * each stream's sizes its own: after the first round no round calls the
 * backend. Taking one stream's free segments when the next one grows - the
 * earlier policy - made every round trade them with the backend. */
START_TEST(warm_multi_stream_loop_makes_no_backend_call) {
    xdev_stream_t s[4];
    for (int i = 0; i < 4; i++)
        s[i] = xt_new_stream(0);
    static const size_t sizes[4][3] = {{3 * MIB, 30 * MIB, 500 * 1024},
                                       {12 * MIB, 2 * MIB, 45 * MIB},
                                       {700 * 1024, 24 * MIB, 8 * MIB},
                                       {64 * MIB, 100 * 1024, 16 * MIB}};
    int64_t after_first = 0;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 4; i++) {
            void *p[3];
            for (int j = 0; j < 3; j++)
                XT_OK(xdev_malloc_stream(&p[j], sizes[i][j], s[i]));
            for (int j = 0; j < 3; j++)
                XT_OK(xdev_free(p[j]));
        }
        if (round == 0) after_first = backend_calls();
    }
    ck_assert_msg(backend_calls() == after_first,
                  "%lld backend calls after the first iteration (a thrashing growth policy)",
                  (long long)(backend_calls() - after_first));
    for (int i = 0; i < 4; i++)
        XT_OK(xdev_stream_destroy(s[i]));
}
END_TEST

/* empty_cache restarts the mark: a 300 MiB peak before it does not let the
 * program keep its aged free 40 MiB segment while growing to 190 MiB after
 * it (with the old mark no growth below 300 MiB would look at it). */
START_TEST(empty_cache_restarts_the_mark) {
    if (!policy_on()) XT_SKIP("trim_before_grow:false: no mark to restart");
    xdev_stream_t s = xt_new_stream(0);
    void *p = NULL, *q[3] = {NULL, NULL, NULL};
    XT_OK(xdev_malloc_stream(&p, 300 * MIB, s)); /* mark: 300 MiB */
    XT_OK(xdev_free(p));
    XT_OK(xdev_empty_cache());
    XT_OK(xdev_malloc_stream(&p, 40 * MIB, s));
    XT_OK(xdev_free(p));
    int64_t frees = backend_frees();
    for (int i = 0; i < 3; i++) /* three growths past the restarted mark, all below 300 MiB */
        XT_OK(xdev_malloc_stream(&q[i], 50 * MIB, s)); /* too big for the 40 MiB segment */
    ck_assert_msg(backend_frees() == frees + 1,
                  "the old 300 MiB mark survived xdev_empty_cache: the aged free segment was "
                  "kept");
    for (int i = 0; i < 3; i++)
        XT_OK(xdev_free(q[i]));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

int main(int argc, char **argv) {
    Suite *su = suite_create("alloc_policy");
    TCase *tc = tcase_create("policy");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, other_streams_segments_are_kept);
    tcase_add_test(tc, own_free_segment_trimmed_before_growth);
    tcase_add_test(tc, idle_streams_free_segment_is_adopted);
    tcase_add_test(tc, busy_streams_free_segment_is_not_adopted);
    tcase_add_test(tc, warm_multi_stream_loop_makes_no_backend_call);
    tcase_add_test(tc, empty_cache_restarts_the_mark);
    suite_add_tcase(su, tc);
    return xt_run(srunner_create(su), "alloc_policy", argc, argv);
}
