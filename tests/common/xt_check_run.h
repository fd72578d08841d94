/* SPDX-License-Identifier: Apache-2.0 */
/* xt_check_run.h - how the white-box unit tests built from core sources
 * without libxdev (test_error_format, test_thread_heap, test_utf8_writers:
 * no xt.c, so no xt_run) run their suite and end: one place for the
 * runner, its fork and wait for each test, and the exit status. */
#ifndef XT_CHECK_RUN_H
#define XT_CHECK_RUN_H

#include <check.h>

/* Runs every test of s, each in a child Check forks and waits for (unless
 * CK_FORK=no), and frees the runner with s. Returns main's exit status: 0
 * when every test passed, else 1. */
static inline int xt_check_run(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

#endif
