/* SPDX-License-Identifier: Apache-2.0 */
/* test_launch_blocking.c - XDEV_LAUNCH_BLOCKING=1: every enqueue runs at the call.
 * Conformance: XDEV_BACKEND=<backend under test> (cpu: XDEV_CPU_DEVICES=2)
 * XDEV_LAUNCH_BLOCKING=1. */
#include <string.h>

#include "xt.h"

START_TEST(flag_is_reported) {
    XT_OK(xdev_init());
    ck_assert(xdev_launch_blocking());
}
END_TEST

START_TEST(host_func_done_at_return) {
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(xt_wrap(1)), XDEV_STREAM_PRIORITY_NORMAL, &s));
    atomic_int flag = 0;
    xt_sleep_task_t task = {30, &flag};
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &task));
    ck_assert_msg(atomic_load(&flag) == 1, "host func had not run when launch returned");
    XT_STATUS(XDEV_SUCCESS, xdev_stream_query(s));

    /* Default stream and NULL (current) stream too. */
    atomic_int flag2 = 0;
    xt_sleep_task_t task2 = {20, &flag2};
    XT_OK(xdev_launch_host_func(NULL, xt_sleep_fn, &task2));
    ck_assert_int_eq(atomic_load(&flag2), 1);
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(copies_and_events_done_at_return) {
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    unsigned char src[512], out[512], seen[512];
    for (int i = 0; i < 512; i++)
        src[i] = (unsigned char)(i * 7);
    unsigned char *d = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&d, sizeof src));
    xt_sleep_task_t slow = {20, NULL};
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &slow));
    /* xt_peek does not wait for s: a load where device memory is host-addressable
     * (cpu), else a copy on another stream. */
    XT_OK(xdev_memcpy_async(d, src, sizeof src, s));
    xt_peek(seen, d, sizeof seen);
    ck_assert_int_eq(memcmp(seen, src, sizeof src), 0);
    XT_OK(xdev_memset_async(d, 0x33, 16, s));
    xt_peek(seen, d, 16);
    for (int i = 0; i < 16; i++)
        ck_assert_uint_eq(seen[i], 0x33);
    XT_OK(xdev_memcpy_async(out, d, sizeof out, s));
    ck_assert_uint_eq(out[0], 0x33);
    ck_assert_uint_eq(out[100], src[100]);

    xdev_event_t e;
    XT_OK(xdev_event_create(XDEV_EVENT_TIMING, &e));
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &slow));
    XT_OK(xdev_event_record(e, s));
    XT_STATUS(XDEV_SUCCESS, xdev_event_query(e));
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_free(d));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("launch_blocking");
    TCase *tc = tcase_create("launch_blocking");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, flag_is_reported);
    tcase_add_test(tc, host_func_done_at_return);
    tcase_add_test(tc, copies_and_events_done_at_return);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "launch_blocking", argc, argv);
}
