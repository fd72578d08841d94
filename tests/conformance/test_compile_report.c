/* SPDX-License-Identifier: Apache-2.0 */
/* test_compile_report.c - a run-time compile says whether the on-disk cache
 * served it (issue 47): xdev_compile_last_info, the XDEV_LOG=1 line and the
 * "compile" span in the trace, for a miss (the first compile into a fresh
 * cache), a hit (the same again) and the cache turned off. Each test starts
 * xdev in its own process (the cache directory and XDEV_LOG are read at
 * initialisation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xdev/kernel.h"
#include "xdev/trace.h"
#include "xt.h"

static const char k_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "XDEV_KERNEL(report_fill, XDEV_PARAM(int, n), XDEV_PTR(int, out)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (i < n) out[i] = (int)i;\n"
    "}\n";

#define REQUIRE_OWN_PROCESS()                                                                      \
    do {                                                                                           \
        const char *fork_ = getenv("CK_FORK");                                                     \
        if (fork_ != NULL && strcmp(fork_, "no") == 0)                                             \
            XT_SKIP("CK_FORK=no: needs a process of its own (xdev reads its settings once)");      \
    } while (0)

/* The whole of a file, NUL-terminated, into buf (cut to fit). */
static void slurp(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Compile k_source with stderr going to `log` (appended); the info after. */
static void compile_once(const char *log, xdev_compile_info_t *info) {
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(log, "a");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(dup2(fileno(f), 2), 2);
    xdev_compile_options_t o = {.size = sizeof o, .name = "report_k"};
    xdev_module_t m = NULL;
    xdev_status_t st = xdev_module_compile(xt_dev(0), k_source, &o, &m);
    fflush(stderr);
    ck_assert_int_eq(dup2(saved, 2), 2);
    close(saved);
    fclose(f);
    ck_assert_msg(st == XDEV_SUCCESS, "compile: %s", xdev_last_error());
    info->size = sizeof *info;
    XT_OK(xdev_compile_last_info(info));
    XT_OK(xdev_module_unload(m));
}

START_TEST(miss_then_hit) {
    REQUIRE_OWN_PROCESS();
    char cache[] = "/tmp/xdev-report-cache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(cache));
    ck_assert_int_eq(setenv("XDEV_CACHE_DIR", cache, 1), 0);
    ck_assert_int_eq(setenv("XDEV_LOG", "1", 1), 0);
    char log[] = "/tmp/xdev-report-log-XXXXXX", trace[] = "/tmp/xdev-report-trace-XXXXXX";
    close(mkstemp(log));
    close(mkstemp(trace));
    xdev_compile_info_t info = {.size = sizeof info};
    XT_OK(xdev_compile_last_info(&info));
    ck_assert_int_eq(info.cache, XDEV_COMPILE_CACHE_NONE); /* nothing compiled yet */
    XT_OK(xdev_trace_start(trace));
    compile_once(log, &info);
    ck_assert_int_eq(info.cache, XDEV_COMPILE_CACHE_MISS);
    ck_assert(info.stored);
    ck_assert_int_eq(info.status, XDEV_SUCCESS);
    ck_assert_int_eq((int)strlen(info.key), 64);
    ck_assert(info.milliseconds > 0.0);
    char first_key[65];
    memcpy(first_key, info.key, sizeof first_key);
    double miss_ms = info.milliseconds;
    compile_once(log, &info);
    ck_assert_int_eq(info.cache, XDEV_COMPILE_CACHE_HIT);
    ck_assert(!info.stored);
    ck_assert_str_eq(info.key, first_key);
    printf("miss %.2f ms, hit %.2f ms\n", miss_ms, info.milliseconds);
    XT_OK(xdev_trace_stop());

    static char text[1 << 20];
    slurp(log, text, sizeof text);
    printf("%s", text);
    char dev[32];
    XT_OK(xdev_device_format(xt_dev(0), dev, sizeof dev));
    char want[128];
    snprintf(want, sizeof want, "xdev: compile report_k for %s: cache miss, compiled and stored, ",
             dev);
    ck_assert_msg(strstr(text, want) != NULL, "no '%s' in the log:\n%s", want, text);
    snprintf(want, sizeof want, "xdev: compile report_k for %s: cache hit, no compiler ran, ", dev);
    ck_assert_msg(strstr(text, want) != NULL, "no '%s' in the log:\n%s", want, text);

    slurp(trace, text, sizeof text);
    const char *miss = strstr(text, "\"name\":\"compile report_k (miss)\",\"cat\":\"compile\"");
    const char *hit = strstr(text, "\"name\":\"compile report_k (hit)\",\"cat\":\"compile\"");
    ck_assert_msg(miss != NULL && hit != NULL, "no compile spans in the trace:\n%.4000s", text);
    ck_assert_msg(strstr(miss, "\"cache\":\"miss\",\"stored\":true,\"ms\":") != NULL &&
                      strstr(miss, "\"dur\":") != NULL,
                  "the miss span lacks its result or time: %.400s", miss);
    ck_assert_msg(strstr(hit, "\"cache\":\"hit\",\"stored\":false,\"ms\":") != NULL,
                  "the hit span lacks its result: %.400s", hit);
    unlink(log);
    unlink(trace);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(cache_off) {
    REQUIRE_OWN_PROCESS();
    ck_assert_int_eq(setenv("XDEV_KERNEL_CACHE", "0", 1), 0);
    char log[] = "/tmp/xdev-report-log-XXXXXX";
    close(mkstemp(log));
    xdev_compile_info_t info;
    compile_once(log, &info);
    unlink(log);
    ck_assert_int_eq(info.cache, XDEV_COMPILE_CACHE_OFF);
    ck_assert(!info.stored);
    ck_assert_str_eq(info.key, "");
}
END_TEST

START_TEST(bad_input) {
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_compile_last_info(NULL), "info");
    xdev_compile_info_t info = {.size = sizeof info - 1};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_compile_last_info(&info), "info->size",
           "sizeof(xdev_compile_info_t)");
    /* a compile refused before its lookup leaves nothing to report */
    xdev_module_t m = NULL;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_compile(xt_dev(0), "", NULL, &m), "empty");
    info.size = sizeof info;
    XT_OK(xdev_compile_last_info(&info));
    ck_assert_int_eq(info.cache, XDEV_COMPILE_CACHE_NONE);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("compile_report");
    TCase *tc = tcase_create("compile_report");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, miss_then_hit);
    tcase_add_test(tc, cache_off);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "compile_report", argc, argv);
}
