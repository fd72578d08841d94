/* SPDX-License-Identifier: Apache-2.0 */
/* test_host_stats.c - torch.cuda.host_memory_stats for the pinned host
 * cache: the keys, the current/peak/allocated/freed fields as the device
 * statistics keep them, the segments and the timed backend calls, the
 * resets, and the same numbers in the summary, the snapshot and the memory
 * view. Conformance: XDEV_BACKEND=<backend under test>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define NKEYS 32

static int64_t get(const char *key) {
    xdev_memory_stat_item_t items[64];
    size_t n = 0;
    XT_OK(xdev_host_memory_stats_items(items, 64, &n));
    for (size_t i = 0; i < n; i++)
        if (strcmp(items[i].key, key) == 0) return items[i].value;
    ck_abort_msg("no host statistic '%s'", key);
    return 0;
}

START_TEST(bad_input) {
    xdev_memory_stat_item_t items[4];
    size_t n;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_memory_stats_items(items, 4, NULL), "count");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_memory_stats_items(NULL, 4, &n), "items");
    XT_OK(xdev_host_memory_stats_items(NULL, 0, &n)); /* sizing */
    ck_assert_uint_eq(n, NKEYS);
    XT_OK(xdev_host_memory_stats_items(items, 4, &n)); /* a short array: the first ones */
    ck_assert_uint_eq(n, NKEYS);
    ck_assert_str_eq(items[0].key, "allocation.current");
    ck_assert_str_eq(items[3].key, "allocation.freed");
}
END_TEST

/* torch's keys, in order. */
START_TEST(keys) {
    static const char *const metrics[] = {"allocation", "segment", "allocated_bytes",
                                          "reserved_bytes", "requested_bytes"};
    static const char *const fields[] = {"current", "peak", "allocated", "freed"};
    static const char *const d[] = {"total", "max", "min", "count", "avg"};
    xdev_memory_stat_item_t items[NKEYS];
    size_t n = 0, k = 0;
    XT_OK(xdev_host_memory_stats_items(items, NKEYS, &n));
    ck_assert_uint_eq(n, NKEYS);
    char want[48];
    for (int m = 0; m < 5; m++)
        for (int f = 0; f < 4; f++) {
            snprintf(want, sizeof want, "%s.%s", metrics[m], fields[f]);
            ck_assert_str_eq(items[k++].key, want);
        }
    for (int t = 0; t < 2; t++)
        for (int f = 0; f < 5; f++) {
            snprintf(want, sizeof want, "%s.%s", t ? "host_free_time" : "host_alloc_time", d[f]);
            ck_assert_str_eq(items[k++].key, want);
        }
    ck_assert_str_eq(items[k++].key, "num_host_alloc");
    ck_assert_str_eq(items[k++].key, "num_host_free");
}
END_TEST

/* Values follow what the cache does: allocations count in allocation.*,
 * backend blocks in segment.*, each backend call is timed. */
START_TEST(values_follow_the_cache) {
    XT_OK(xdev_host_empty_cache());
    XT_OK(xdev_reset_accumulated_host_memory_stats());
    ck_assert_int_eq(get("allocation.allocated"), 0);
    ck_assert_int_eq(get("num_host_alloc"), 0);
    ck_assert_int_eq(get("host_alloc_time.count"), 0);
    int64_t seg0 = get("segment.current"), live0 = get("allocation.current");
    void *p = NULL, *q = NULL;
    XT_OK(xdev_host_alloc(&p, 10000));
    XT_OK(xdev_host_alloc(&q, 5000));
    ck_assert_int_eq(get("allocation.current"), live0 + 2);
    ck_assert_int_eq(get("allocation.allocated"), 2);
    ck_assert_int_eq(get("segment.current"), seg0 + 2);
    ck_assert_int_eq(get("num_host_alloc"), 2);
    ck_assert_int_eq(get("host_alloc_time.count"), 2);
    ck_assert_int_ge(get("host_alloc_time.total"), get("host_alloc_time.max"));
    ck_assert_int_le(get("host_alloc_time.min"), get("host_alloc_time.max"));
    ck_assert_int_ge(get("requested_bytes.allocated"), 15000);
    ck_assert_int_ge(get("allocated_bytes.current"), get("requested_bytes.current"));
    ck_assert_int_ge(get("reserved_bytes.current"), get("allocated_bytes.current"));
    XT_OK(xdev_host_free(p));
    ck_assert_int_eq(get("allocation.freed"), 1);
    ck_assert_int_eq(get("segment.current"), seg0 + 2); /* cached, still held */
    ck_assert_int_ge(get("allocation.peak"), live0 + 2);
    XT_OK(xdev_reset_peak_host_memory_stats());
    ck_assert_int_eq(get("allocation.peak"), get("allocation.current"));
    ck_assert_int_eq(get("segment.peak"), get("segment.current"));
    XT_OK(xdev_host_free(q));
    XT_OK(xdev_host_empty_cache()); /* both blocks go back: two timed host_free calls */
    ck_assert_int_eq(get("segment.current"), seg0);
    ck_assert_int_eq(get("segment.freed"), 2);
    ck_assert_int_eq(get("num_host_free"), 2);
    ck_assert_int_eq(get("host_free_time.count"), 2);
    ck_assert_int_eq(get("host_free_time.avg"), get("host_free_time.total") / 2);
    /* the struct and the items agree */
    xdev_host_memory_stats_t s;
    XT_OK(xdev_host_memory_stats(&s));
    ck_assert_int_eq(s.allocation.allocated, get("allocation.allocated"));
    ck_assert_int_eq(s.reserved_bytes.current, get("reserved_bytes.current"));
    XT_OK(xdev_reset_accumulated_host_memory_stats());
    ck_assert_int_eq(get("segment.freed"), 0);
    ck_assert_int_eq(get("host_free_time.total"), 0);
}
END_TEST

/* The summary, the snapshot and the memory view carry the same numbers. */
START_TEST(summary_snapshot_view) {
    void *p = NULL, *d = NULL;
    XT_OK(xdev_host_alloc(&p, 12345));
    XT_OK(xdev_malloc_device(xt_dev(0), &d, 256));
    char *text = NULL;
    XT_OK(xdev_memory_summary(xt_dev(0), false, &text));
    ck_assert_msg(strstr(text, "Pinned host memory") && strstr(text, "Host segments") &&
                      strstr(text, "Requested host memory"),
                  "summary:\n%s", text);
    free(text);
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char want[96];
    snprintf(want, sizeof want, "\"host_stats\":{\"allocation.current\":%lld,",
             (long long)get("allocation.current"));
    ck_assert_msg(strstr(json, want) != NULL, "snapshot lacks %s", want);
    snprintf(want, sizeof want, "\"requested_bytes.current\":%lld,",
             (long long)get("requested_bytes.current"));
    ck_assert_msg(strstr(json, want) != NULL, "snapshot lacks %s", want);
    char *html = NULL;
    size_t len = 0;
    XT_OK(xdev_memory_viz_html(json, strlen(json), &html, &len));
    ck_assert_msg(strstr(html, "pinned host memory") != NULL, "the view has no pinned section");
    ck_assert_msg(strstr(html, "\"host_stats\"") != NULL, "the view's snapshot lacks host_stats");
    free(html);
    free(json);
    XT_OK(xdev_free(d));
    XT_OK(xdev_host_free(p));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("host_stats");
    TCase *tc = tcase_create("host_stats");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, keys);
    tcase_add_test(tc, values_follow_the_cache);
    tcase_add_test(tc, summary_snapshot_view);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "host_stats", argc, argv);
}
