/* SPDX-License-Identifier: Apache-2.0 */
/* test_error_format.c - the error formatter (core/base/error.c, compiled in
 * white-box) when an argument is the thread's own current message: a new
 * message wrapping xdev_last_error() must read as written, not as the
 * undefined behaviour of vsnprintf into a buffer it reads from ("XDEV_TRACE_FILE=/tmp:
 * XDEV_TRACE_FILE=/tmp:  writing: Is a directory" came from that). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"
#include "xt_check_run.h"

START_TEST(argument_is_the_current_message) {
    xdev_core_fail(XDEV_ERROR_IO, "cannot open '%s' for writing: %s", "/tmp", "Is a directory");
    ck_assert_int_eq(
        xdev_core_fail(XDEV_ERROR_ENV, "XDEV_TRACE_FILE=%s: %s", "/tmp", xdev_last_error()),
        XDEV_ERROR_ENV);
    ck_assert_str_eq(xdev_last_error(),
                     "XDEV_TRACE_FILE=/tmp: cannot open '/tmp' for writing: Is a directory");
    ck_assert_int_eq(xdev_last_status(), XDEV_ERROR_ENV);
}
END_TEST

START_TEST(argument_inside_the_current_message) {
    xdev_core_fail(XDEV_ERROR_BACKEND, "outer: inner reason");
    const char *inner = xdev_last_error() + strlen("outer: ");
    xdev_core_fail(XDEV_ERROR_BACKEND, "%s (%s, %s)", inner, xdev_last_error(), inner);
    ck_assert_str_eq(xdev_last_error(), "inner reason (outer: inner reason, inner reason)");
}
END_TEST

/* A long current message wrapped again is cut at the buffer's end (2047
 * bytes), its text intact up to there. */
START_TEST(long_current_message_is_cut_not_garbled) {
    char longer[3000];
    for (size_t i = 0; i < sizeof longer - 1; i++)
        longer[i] = (char)('a' + i % 26);
    longer[sizeof longer - 1] = '\0';
    xdev_core_fail(XDEV_ERROR_INTERNAL, "%s", longer);
    ck_assert_uint_eq(strlen(xdev_last_error()), 2047);
    xdev_core_fail(XDEV_ERROR_INTERNAL, "again: %s", xdev_last_error());
    char want[2048] = "again: ";
    memcpy(want + 7, longer, sizeof want - 8);
    want[sizeof want - 1] = '\0';
    ck_assert_str_eq(xdev_last_error(), want);
}
END_TEST

static xdev_status_t vendor(const char *name, const char *text, const char *what, ...) {
    va_list ap;
    va_start(ap, what);
    xdev_status_t st = xdev_core_fail_vendor(XDEV_ERROR_BACKEND, name, text, what, ap);
    va_end(ap);
    return st;
}

START_TEST(vendor_text_is_the_current_message) {
    xdev_core_fail(XDEV_ERROR_BACKEND, "driver said no");
    vendor("vendorError", xdev_last_error(), "call(%s)", xdev_last_error());
    ck_assert_str_eq(xdev_last_error(), "call(driver said no): vendorError: driver said no");
}
END_TEST

/* A runtime whose description is the error's name again (HIP 5), or empty:
 * the name once. */
START_TEST(vendor_text_same_as_name_said_once) {
    vendor("hipErrorNoDevice", "hipErrorNoDevice", "hipGetDeviceCount");
    ck_assert_str_eq(xdev_last_error(), "hipGetDeviceCount: hipErrorNoDevice");
    vendor("someError", "", "call(%d)", 3);
    ck_assert_str_eq(xdev_last_error(), "call(3): someError");
    vendor("someError", "what it means", "call");
    ck_assert_str_eq(xdev_last_error(), "call: someError: what it means");
}
END_TEST

/* Blame still prefixes once, after a self-formatted message. */
START_TEST(blame_after_self_format) {
    xdev_core_fail(XDEV_ERROR_INVALID_VALUE, "bad value");
    xdev_core_fail(XDEV_ERROR_INVALID_VALUE, "%s; %s", xdev_last_error(), xdev_last_error());
    xdev_core_blame(XDEV_ERROR_INVALID_VALUE, "xdev_thing");
    xdev_core_blame(XDEV_ERROR_INVALID_VALUE, "xdev_outer");
    ck_assert_str_eq(xdev_last_error(), "xdev_thing: bad value; bad value");
}
END_TEST

int main(void) {
    Suite *s = suite_create("error_format");
    TCase *tc = tcase_create("error_format");
    tcase_add_test(tc, argument_is_the_current_message);
    tcase_add_test(tc, argument_inside_the_current_message);
    tcase_add_test(tc, long_current_message_is_cut_not_garbled);
    tcase_add_test(tc, vendor_text_is_the_current_message);
    tcase_add_test(tc, vendor_text_same_as_name_said_once);
    tcase_add_test(tc, blame_after_self_format);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
