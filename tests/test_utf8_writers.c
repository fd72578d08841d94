/* SPDX-License-Identifier: Apache-2.0 */
/* test_utf8_writers.c - the writers behind every file xdev produces (the
 * JSON string escaper of core/base/strbuf.c, the pickle writer of
 * core/observe/pickle.c; compiled in white-box with utf8.c and json_check.c)
 * handed bytes that are not UTF-8, control characters and the rest: what
 * they write must load with Python's json.load and pickle.load (run through
 * tests/common/check_loads.py), bad bytes read back as U+FFFD, one per byte,
 * and good text exactly as given. Tags are refused at push when not UTF-8,
 * but device names, markers or a future caller could bring such bytes. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json_check.h"
#include "base/strbuf.h"
#include "base/utf8.h"
#include "observe/pickle.h"
#include "xt_check_run.h"

#define R "\xef\xbf\xbd" /* U+FFFD */

static const struct {
    const char *in, *out;
} k_cases[] = {
    {"plain", "plain"},
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"},
    {"ctl \x01\x02\x08\x0c\x1b\x1f tab\t nl\n cr\r del\x7f q\" bs\\ lt</script>",
     "ctl \x01\x02\x08\x0c\x1b\x1f tab\t nl\n cr\r del\x7f q\" bs\\ lt</script>"},
    {"bad \xff\xfe end", "bad " R R " end"},
    {"cut \xc3", "cut " R},
    {"cut3 \xe2\x82", "cut3 " R R},
    {"overlong \xc0\xaf \xe0\x80\xaf", "overlong " R R " " R R R},
    {"surrogate \xed\xa0\x80!", "surrogate " R R R "!"},
    {"big \xf4\x90\x80\x80 \xf8\x88\x80\x80\x80", "big " R R R R " " R R R R R},
    {"lone \x80\xbf", "lone " R R},
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])

/* check_loads.py on `path` (json or pickle): it loads, and holds every
 * expected string. Without Python 3 at configure time: nothing checked. */
static void python_loads(const char *kind, const char *path) {
    const char *python = XT_PYTHON;
    if (python[0] == '\0') {
        printf("%s not loaded in Python: no Python 3 found at configure time\n", path);
        return;
    }
    static char cmd[8192];
    int n = snprintf(cmd, sizeof cmd, "'%s' '%s' %s '%s'", python, XT_CHECK_LOADS, kind, path);
    for (size_t i = 0; i < N_CASES; i++) {
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " ");
        for (const unsigned char *b = (const unsigned char *)k_cases[i].out; *b; b++)
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, "%02x", *b);
    }
    ck_assert_uint_lt((size_t)n, sizeof cmd);
    fflush(stdout);
    ck_assert_msg(system(cmd) == 0, "Python could not read %s: %s", path, cmd);
}

static void spill(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(json_strings_are_utf8_json) {
    xdev_strbuf_t sb = {0};
    xdev_strbuf_append(&sb, "[", 1);
    for (size_t i = 0; i < N_CASES; i++) {
        if (i) xdev_strbuf_append(&sb, ",", 1);
        xdev_strbuf_json_string(&sb, k_cases[i].in);
    }
    xdev_strbuf_append(&sb, "]", 1);
    ck_assert(!sb.failed);
    size_t at = 0;
    const char *what = "";
    ck_assert_msg(xdev_json_check(sb.buf, sb.len, &at, &what), "not JSON at %zu: %s: %s", at, what,
                  sb.buf);
    ck_assert_msg(xdev_utf8_valid(sb.buf, sb.len, &at), "not UTF-8 at byte %zu", at);
    ck_assert_msg(strstr(sb.buf, "</") == NULL, "'<' not escaped");
    char path[64];
    snprintf(path, sizeof path, "/tmp/xt-utf8-%d.json", (int)getpid());
    spill(path, sb.buf, sb.len);
    free(sb.buf);
    python_loads("json", path);
    unlink(path);
}
END_TEST

START_TEST(pickle_strings_are_utf8) {
    xdev_strbuf_t sb = {0};
    xdev_pickle_begin(&sb);
    xdev_pickle_list_begin(&sb);
    for (size_t i = 0; i < N_CASES; i++)
        xdev_pickle_str(&sb, k_cases[i].in);
    xdev_pickle_list_end(&sb);
    xdev_pickle_end(&sb);
    ck_assert(!sb.failed);
    char path[64];
    snprintf(path, sizeof path, "/tmp/xt-utf8-%d.pickle", (int)getpid());
    spill(path, sb.buf, sb.len);
    free(sb.buf);
    python_loads("pickle", path);
    unlink(path);
}
END_TEST

/* The JSON check refuses strings that are not UTF-8, naming the byte. */
START_TEST(json_check_wants_utf8) {
    static const char *const bad[] = {"[\"\xff\"]", "[\"\xc3\"]", "{\"\xed\xa0\x80\":1}",
                                      "[\"ok\",\"\xe0\x80\xaf\"]"};
    static const size_t where[] = {2, 2, 2, 7};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t at = 0;
        const char *what = "";
        ck_assert_msg(!xdev_json_check(bad[i], strlen(bad[i]), &at, &what), "case %zu passed", i);
        ck_assert_uint_eq(at, where[i]);
        ck_assert_msg(strstr(what, "UTF-8") != NULL, "%s", what);
    }
    const char *good = "{\"caf\xc3\xa9\":[\"\xf0\x9f\x98\x80\"]}";
    size_t at = 0;
    const char *what = "";
    ck_assert(xdev_json_check(good, strlen(good), &at, &what));
}
END_TEST

/* Markers are cut like this: at most cap-1 bytes, never inside a
 * character, bad bytes as U+FFFD. */
START_TEST(copy_cuts_at_a_character) {
    char out[64];
    char two[101] = "";
    for (int i = 0; i < 50; i++)
        strcat(two, "\xc3\xa9");
    ck_assert_uint_eq(xdev_utf8_copy(out, sizeof out, two), 62);
    ck_assert(strncmp(out, two, 62) == 0 && out[62] == '\0');
    ck_assert_uint_eq(xdev_utf8_copy(out, 4, "\xf0\x9f\x98\x80"), 0);
    ck_assert_uint_eq(xdev_utf8_copy(out, 5, "\xf0\x9f\x98\x80"), 4);
    ck_assert_uint_eq(xdev_utf8_copy(out, sizeof out,
                                     "a\xff"
                                     "b"),
                      5);
    ck_assert_str_eq(out, "a" R "b");
    ck_assert_uint_eq(xdev_utf8_copy(out, 3, "a\xff"), 1); /* U+FFFD would not fit */
    ck_assert_uint_eq(xdev_utf8_copy(out, 1, "abc"), 0);
    ck_assert_str_eq(out, "");
}
END_TEST

int main(void) {
    Suite *s = suite_create("utf8_writers");
    TCase *tc = tcase_create("utf8_writers");
    tcase_add_test(tc, json_strings_are_utf8_json);
    tcase_add_test(tc, pickle_strings_are_utf8);
    tcase_add_test(tc, json_check_wants_utf8);
    tcase_add_test(tc, copy_cuts_at_a_character);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
