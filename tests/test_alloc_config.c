/* SPDX-License-Identifier: Apache-2.0 */
/* test_alloc_config.c - XDEV_ALLOC_CONF: every key, its accepted values and
 * its errors, through the pure parser (core/alloc/alloc_config.c, linked in); and
 * through the environment: a malformed value makes xdev_init fail naming it.
 *
 * Suites: parser (no environment needed)
 *         env_bad (XDEV_ALLOC_CONF=max_split_size_mb:8,bogus:1) */
#include <stdint.h>
#include <string.h>

#include "alloc/alloc_config.h"
#include "xt.h"

#define MIB ((size_t)1 << 20)

static xdev_alloc_config_t ok(const char *text) {
    xdev_alloc_config_t c;
    char err[256] = "";
    ck_assert_msg(xdev_alloc_config_parse(text, &c, err, sizeof err), "'%s' rejected: %s",
                  text ? text : "(null)", err);
    return c;
}

static void bad(const char *text, const char *needle) {
    xdev_alloc_config_t c;
    char err[256] = "";
    ck_assert_msg(!xdev_alloc_config_parse(text, &c, err, sizeof err), "'%s' accepted", text);
    ck_assert_msg(xt_icontains(err, needle), "'%s': message \"%s\" lacks '%s'", text, err, needle);
}

START_TEST(defaults) {
    xdev_alloc_config_t c = ok(NULL);
    ck_assert_uint_eq(c.max_split_size, SIZE_MAX);
    ck_assert_uint_eq(c.pinned_max_cached, SIZE_MAX);
    ck_assert(c.trim_before_grow);
    ck_assert_int_eq(c.thread_arenas, 16);
    ck_assert(!c.backend_async);
    ck_assert(c.gc_threshold == 0.0);
    c = ok("");
    ck_assert_uint_eq(c.roundup_divisions[3], 0);
}
END_TEST

START_TEST(each_key) {
    xdev_alloc_config_t c = ok("max_split_size_mb:64");
    ck_assert_uint_eq(c.max_split_size, 64 * MIB);
    c = ok("roundup_power2_divisions:4");
    for (int i = 0; i < XDEV_ROUNDUP_INTERVALS; i++)
        ck_assert_uint_eq(c.roundup_divisions[i], 4);
    c = ok("roundup_power2_divisions:[1:1,256:2,512:4,>:8]");
    ck_assert_uint_eq(c.roundup_divisions[0], 1);
    ck_assert_uint_eq(c.roundup_divisions[7], 1);
    ck_assert_uint_eq(c.roundup_divisions[8], 2);
    ck_assert_uint_eq(c.roundup_divisions[9], 4);
    ck_assert_uint_eq(c.roundup_divisions[10], 8);
    ck_assert_uint_eq(c.roundup_divisions[XDEV_ROUNDUP_INTERVALS - 1], 8);
    c = ok("garbage_collection_threshold:0.6");
    ck_assert(c.gc_threshold > 0.59 && c.gc_threshold < 0.61);
    c = ok("backend:async");
    ck_assert(c.backend_async);
    c = ok("backend:cudaMallocAsync");
    ck_assert(c.backend_async);
    c = ok("backend:native");
    ck_assert(!c.backend_async);
    c = ok("pinned_max_cached_mb:100");
    ck_assert_uint_eq(c.pinned_max_cached, 100 * MIB);
    c = ok("trim_before_grow:false");
    ck_assert(!c.trim_before_grow);
    c = ok("thread_arenas:1");
    ck_assert_int_eq(c.thread_arenas, 1);
    c = ok("thread_arenas:64");
    ck_assert_int_eq(c.thread_arenas, 64);
    c = ok("expandable_segments:False");
    ck_assert(!c.expandable_segments);
    c = ok("max_split_size_mb:100,garbage_collection_threshold:0.5,backend:native,"
           "roundup_power2_divisions:[64:2,>:4],trim_before_grow:true");
    ck_assert_uint_eq(c.max_split_size, 100 * MIB);
    ck_assert_uint_eq(c.roundup_divisions[6], 2);
}
END_TEST

START_TEST(errors_name_the_key) {
    bad("bogus:1", "bogus");
    bad("max_split_size_mb", "key:value");
    bad("max_split_size_mb:", "max_split_size_mb");
    bad("max_split_size_mb:20", "max_split_size_mb");
    bad("max_split_size_mb:abc", "max_split_size_mb");
    bad("max_split_size_mb:-64", "max_split_size_mb");
    bad("max_split_size_mb:99999999999999999999", "max_split_size_mb");
    bad("roundup_power2_divisions:3", "roundup_power2_divisions");
    bad("roundup_power2_divisions:128", "roundup_power2_divisions");
    bad("roundup_power2_divisions:[256:2,128:4]", "increase");
    bad("roundup_power2_divisions:[>:2,256:4]", "last");
    bad("roundup_power2_divisions:[256:2", "roundup_power2_divisions");
    bad("roundup_power2_divisions:[]", "empty");
    bad("roundup_power2_divisions:[300:2]", "power-of-two");
    bad("garbage_collection_threshold:1.0", "garbage_collection_threshold");
    bad("garbage_collection_threshold:0", "garbage_collection_threshold");
    bad("garbage_collection_threshold:nan", "garbage_collection_threshold");
    bad("garbage_collection_threshold:.5x", "garbage_collection_threshold");
    bad("backend:cuda", "backend");
    ck_assert(ok("expandable_segments:true").expandable_segments);
    bad("expandable_segments:maybe", "expandable_segments");
    bad("pinned_max_cached_mb:lots", "pinned_max_cached_mb");
    bad("trim_before_grow:2", "trim_before_grow");
    bad("thread_arenas:0", "thread_arenas");
    bad("thread_arenas:65", "from 1 to 64");
    bad("thread_arenas:-3", "thread_arenas");
    bad("max_split_size_mb:64,", "trailing comma");
    bad(":5", "empty key");
    bad("max_split_size_mb:64,,backend:native", "key");
}
END_TEST

/* Each message lists every accepted form (issue 16, item 16). */
static void bad_all(const char *text, const char *const *needles) {
    for (; *needles != NULL; needles++)
        bad(text, *needles);
}

START_TEST(errors_list_accepted_forms) {
    bad_all("backend:cuda", (const char *const[]){"native", "async", "cudaMallocAsync", NULL});
    bad_all("trim_before_grow:2", (const char *const[]){"true", "false", "1", "0", NULL});
    bad_all("expandable_segments:maybe", (const char *const[]){"true", "false", "1", "0", NULL});
    bad_all("max_split_size_mb:20", (const char *const[]){"21", "2^30", NULL});
    bad_all("pinned_max_cached_mb:lots", (const char *const[]){"0", "2^30", NULL});
}
END_TEST

START_TEST(env_error_fails_init) {
    XT_ERR(XDEV_ERROR_ENV, xdev_init(), "XDEV_ALLOC_CONF", "max_split_size_mb");
    void *p = NULL;
    XT_ERR(XDEV_ERROR_ENV, xdev_malloc(&p, 16), "XDEV_ALLOC_CONF");
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("parser");
    TCase *tc = tcase_create("parser");
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, each_key);
    tcase_add_test(tc, errors_name_the_key);
    tcase_add_test(tc, errors_list_accepted_forms);
    suite_add_tcase(s, tc);
    Suite *env = suite_create("env_bad");
    tc = tcase_create("env_bad");
    tcase_add_test(tc, env_error_fails_init);
    suite_add_tcase(env, tc);
    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, env);
    return xt_run(sr, "parser", argc, argv);
}
