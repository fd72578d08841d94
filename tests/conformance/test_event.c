/* SPDX-License-Identifier: Apache-2.0 */
/* test_event.c - event flags, record/query/synchronize, device binding,
 * elapsed_time errors and real timing. Conformance: runs on the backend
 * XDEV_BACKEND selects (cpu: XDEV_CPU_DEVICES=4). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define NOT_OK_RECORD (XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_INVALID_HANDLE))

static void setup(void) {
    xt_reset_state();
}

static xdev_stream_t make_stream(int device) {
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_create(xt_dev(device), XDEV_STREAM_PRIORITY_NORMAL, &s));
    return s;
}

static xdev_event_t make_event(unsigned flags) {
    xdev_event_t e = NULL;
    XT_OK(xdev_event_create(flags, &e));
    ck_assert_ptr_nonnull(e);
    return e;
}

START_TEST(create_flags) {
    static const unsigned ok[] = {
        XDEV_EVENT_DEFAULT,
        XDEV_EVENT_TIMING,
        XDEV_EVENT_BLOCKING_SYNC,
        XDEV_EVENT_INTERPROCESS,
        XDEV_EVENT_TIMING | XDEV_EVENT_BLOCKING_SYNC,
        XDEV_EVENT_INTERPROCESS | XDEV_EVENT_BLOCKING_SYNC,
    };
    xdev_event_t prev = NULL;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        xdev_event_t e = make_event(ok[i]);
        ck_assert_ptr_ne(e, prev);
        unsigned flags = 0xdead;
        XT_OK(xdev_event_get_flags(e, &flags));
        ck_assert_uint_eq(flags, ok[i]);
        if (prev) XT_OK(xdev_event_destroy(prev));
        prev = e;
    }
    XT_OK(xdev_event_destroy(prev));

    xdev_event_t e;
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_event_create(XDEV_EVENT_TIMING | XDEV_EVENT_INTERPROCESS, &e),
           "interprocess|timing");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_event_create(1u << 7, &e), "flag");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_event_create(XDEV_EVENT_DEFAULT, NULL), "out");
    XT_ERR(XT_NULL_HANDLE, xdev_event_get_flags(NULL, &(unsigned){0}), "event");
}
END_TEST

START_TEST(unrecorded_event) {
    xdev_event_t e = make_event(XDEV_EVENT_TIMING);
    XT_STATUS(XDEV_SUCCESS, xdev_event_query(e));
    double t0 = xt_now_ms();
    XT_OK(xdev_event_synchronize(e));
    ck_assert_double_lt(xt_now_ms() - t0, 1000);
    xdev_device_t d;
    XT_ERR_ANY(NOT_OK_RECORD, xdev_event_get_device(e, &d), "record");
    void *native = NULL;
    XT_ERR_ANY(NOT_OK_RECORD, xdev_event_native_handle(e, &native), "record");
    XT_OK(xdev_event_destroy(e));
}
END_TEST

START_TEST(destroyed_and_null_handles) {
    xdev_event_t e = make_event(XDEV_EVENT_DEFAULT);
    XT_OK(xdev_event_destroy(e));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_query(e), "event|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_record(e, NULL), "event|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_synchronize(e), "event|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_destroy(e), "event|handle");
    XT_ERR(XT_NULL_HANDLE, xdev_event_destroy(NULL), "event");
    XT_ERR(XT_NULL_HANDLE, xdev_event_query(NULL), "event");
    XT_ERR(XT_NULL_HANDLE, xdev_event_record(NULL, NULL), "event");
}
END_TEST

START_TEST(record_query_synchronize) {
    const int dev = xt_wrap(1);
    xdev_stream_t s = make_stream(dev);
    xdev_event_t e = make_event(XDEV_EVENT_BLOCKING_SYNC);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_launch_host_func(s, xt_flag_fn, &flag));
    XT_OK(xdev_event_record(e, s));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_event_query(e));
    xdev_device_t d;
    XT_OK(xdev_event_get_device(e, &d));
    XT_DEV_EQ(d, xt_dev(dev));
    void *native = NULL;
    XT_OK(xdev_event_native_handle(e, &native));
    ck_assert_ptr_nonnull(native);
    xt_opener_start(&opener, &gate, 40);
    XT_OK(xdev_event_synchronize(e));
    ck_assert_int_eq(atomic_load(&flag), 1);
    XT_STATUS(XDEV_SUCCESS, xdev_event_query(e));
    xt_opener_join(&opener);

    /* Work after the record is not waited for. */
    xt_gate_t gate2;
    xt_gate_init(&gate2);
    xt_opener_start(&opener, &gate2, 5000);
    XT_OK(xdev_event_record(e, s));
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate2));
    double t0 = xt_now_ms();
    XT_OK(xdev_event_synchronize(e));
    ck_assert_msg(xt_now_ms() - t0 < 4000, "event waited for work recorded after it");
    XT_STATUS(XDEV_SUCCESS, xdev_event_query(e));
    xt_gate_open(&gate2);
    xt_opener_join(&opener);
    XT_OK(xdev_stream_record_event(s, e)); /* same as event_record */
    XT_OK(xdev_event_synchronize(e));
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_stream_destroy(s));
    xt_gate_destroy(&gate);
    xt_gate_destroy(&gate2);
}
END_TEST

START_TEST(record_null_stream_uses_current) {
    const int dev = xt_wrap(2);
    xdev_event_t e = make_event(XDEV_EVENT_DEFAULT);
    XT_OK(xdev_set_device(xt_dev(dev)));
    XT_OK(xdev_event_record(e, NULL));
    xdev_device_t d;
    XT_OK(xdev_event_get_device(e, &d));
    XT_DEV_EQ(d, xt_dev(dev));
    XT_OK(xdev_event_synchronize(e));

    /* Current stream, not the default one: a blocked current stream keeps it pending. */
    xdev_event_t e2 = make_event(XDEV_EVENT_DEFAULT);
    xdev_stream_t s = make_stream(dev);
    XT_OK(xdev_stream_set_current(s));
    xt_gate_t gate;
    xt_gate_init(&gate);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_event_record(e2, NULL));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_event_query(e2));
    xt_gate_open(&gate);
    XT_OK(xdev_event_synchronize(e2));
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_event_destroy(e2));
    xt_reset_state();
    XT_OK(xdev_stream_destroy(s));
    xt_gate_destroy(&gate);
}
END_TEST

/* A record on a created stream of another device than the calling thread's
 * current one: the backend records without making the stream's device
 * current (cuda_event.c's fast path), on a thread that set device 0 and on
 * one that never set any. The record must still land on that stream, after
 * the work queued there, and a device-0 stream can wait for it. */
typedef struct {
    xdev_event_t e;
    xdev_stream_t s;
    xdev_status_t st;
} other_record_t;

static void *record_elsewhere(void *arg) {
    other_record_t *r = arg;
    r->st = xdev_event_record(r->e, r->s);
    return NULL;
}

START_TEST(record_on_stream_of_other_device) {
    XT_REQUIRE_DEVICES(2);
    xdev_stream_t s1 = make_stream(1), s0 = make_stream(0);
    xdev_event_t e = make_event(XDEV_EVENT_DEFAULT);
    XT_OK(xdev_set_device(xt_dev(0)));
    XT_OK(xdev_event_record(e, s1)); /* binds e to device 1 */
    xt_gate_t gate;
    xt_gate_init(&gate);
    XT_OK(xdev_launch_host_func(s1, xt_gate_wait_fn, &gate));
    XT_OK(xdev_event_record(e, s1)); /* bound: the record without a device switch */
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_event_query(e));
    XT_OK(xdev_stream_wait_event(s0, e));
    xt_gate_open(&gate);
    XT_OK(xdev_event_synchronize(e));
    XT_OK(xdev_stream_synchronize(s0));
    /* a thread that never chose a device */
    other_record_t r = {e, s1, XDEV_ERROR_INTERNAL};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, record_elsewhere, &r), 0);
    pthread_join(t, NULL);
    XT_OK(r.st);
    XT_OK(xdev_event_synchronize(e));
    xdev_device_t d;
    XT_OK(xdev_event_get_device(e, &d));
    XT_DEV_EQ(d, xt_dev(1));
    XT_OK(xdev_event_destroy(e));
    xt_reset_state();
    XT_OK(xdev_stream_destroy(s0));
    XT_OK(xdev_stream_destroy(s1));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(event_bound_to_first_device) {
    XT_REQUIRE_DEVICES(2);
    xdev_stream_t s0 = make_stream(0), s0b = make_stream(0), s1 = make_stream(1);
    xdev_event_t e = make_event(XDEV_EVENT_DEFAULT);
    XT_OK(xdev_event_record(e, s0));
    XT_OK(xdev_event_record(e, s0b)); /* same device: fine */
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_CROSS_DEVICE) |
                   XT_BIT(XDEV_ERROR_INVALID_DEVICE),
               xdev_event_record(e, s1), xt_fmt("%s|device", xt_name(0)));
    xdev_device_t d;
    XT_OK(xdev_event_get_device(e, &d));
    XT_DEV_EQ(d, xt_dev(0));
    XT_OK(xdev_event_synchronize(e));
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_stream_destroy(s0));
    XT_OK(xdev_stream_destroy(s0b));
    XT_OK(xdev_stream_destroy(s1));
}
END_TEST

START_TEST(elapsed_time_errors) {
    xdev_stream_t s = make_stream(0);
    xdev_event_t a = make_event(XDEV_EVENT_TIMING), b = make_event(XDEV_EVENT_TIMING);
    xdev_event_t plain1 = make_event(XDEV_EVENT_DEFAULT), plain2 = make_event(XDEV_EVENT_DEFAULT);
    float ms = -1;

    /* Unrecorded. */
    XT_ERR_ANY(NOT_OK_RECORD, xdev_event_elapsed_time(a, b, &ms), "record");
    XT_OK(xdev_event_record(a, s));
    XT_ERR_ANY(NOT_OK_RECORD, xdev_event_elapsed_time(a, b, &ms), "record");

    /* Without timing. */
    XT_OK(xdev_event_record(plain1, s));
    XT_OK(xdev_event_record(plain2, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_INVALID_HANDLE),
               xdev_event_elapsed_time(plain1, plain2, &ms), "timing");
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_INVALID_HANDLE),
               xdev_event_elapsed_time(a, plain2, &ms), "timing");

    /* Not complete yet. */
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 5000);
    XT_OK(xdev_event_record(a, s));
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_event_record(b, s));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    XT_ERR(XDEV_ERROR_NOT_READY, xdev_event_elapsed_time(a, b, &ms), "ready|complete|pending");
    xt_gate_open(&gate);
    XT_OK(xdev_event_synchronize(b));
    ms = -1;
    XT_OK(xdev_event_elapsed_time(a, b, &ms));
    ck_assert_float_ge(ms, 0);
    xt_opener_join(&opener);

    /* Different devices. */
    xdev_stream_t s1 = NULL;
    xdev_event_t c = NULL;
    if (xt_has_devices(__func__, 2, "events on different devices")) {
        s1 = make_stream(1);
        c = make_event(XDEV_EVENT_TIMING);
        XT_OK(xdev_event_record(c, s1));
        XT_OK(xdev_event_synchronize(c));
        XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_CROSS_DEVICE),
                   xdev_event_elapsed_time(a, c, &ms), "device");
    }

    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_event_elapsed_time(a, b, NULL), "ms");
    XT_ERR(XT_NULL_HANDLE, xdev_event_elapsed_time(NULL, b, &ms), "start");
    XT_ERR(XT_NULL_HANDLE, xdev_event_elapsed_time(a, NULL, &ms), "end");

    xdev_event_t evs[] = {a, b, plain1, plain2, c};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i]) XT_OK(xdev_event_destroy(evs[i]));
    XT_OK(xdev_stream_destroy(s));
    if (s1) XT_OK(xdev_stream_destroy(s1));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(timing_real_sleep) {
    xdev_stream_t s = make_stream(xt_wrap(3));
    xdev_event_t a = make_event(XDEV_EVENT_TIMING), b = make_event(XDEV_EVENT_TIMING);
    xt_sleep_task_t task = {50, NULL};
    XT_OK(xdev_event_record(a, s));
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &task));
    XT_OK(xdev_event_record(b, s));
    XT_OK(xdev_event_synchronize(b));
    float ms = -1;
    XT_OK(xdev_event_elapsed_time(a, b, &ms));
    ck_assert_msg(ms >= 45.0f && ms <= 150.0f, "elapsed %.3f ms for a 50 ms sleep", (double)ms);
    XT_OK(xdev_event_destroy(a));
    XT_OK(xdev_event_destroy(b));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(timing_clock_taken_when_reached) {
    /* The start event is recorded while the queue is blocked; its time must be
     * taken when the queue reaches it, not at the record call. */
    xdev_stream_t s = make_stream(xt_wrap(2));
    xdev_event_t a = make_event(XDEV_EVENT_TIMING), b = make_event(XDEV_EVENT_TIMING);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_sleep_task_t task = {30, NULL};
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_event_record(a, s));
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &task));
    XT_OK(xdev_event_record(b, s));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    xt_sleep_ms(100);
    xt_gate_open(&gate);
    XT_OK(xdev_event_synchronize(b));
    float ms = -1;
    XT_OK(xdev_event_elapsed_time(a, b, &ms));
    ck_assert_msg(ms >= 25.0f && ms <= 95.0f, "elapsed %.3f ms, expected ~30 ms", (double)ms);
    XT_OK(xdev_event_destroy(a));
    XT_OK(xdev_event_destroy(b));
    XT_OK(xdev_stream_destroy(s));
    xt_gate_destroy(&gate);
}
END_TEST

typedef struct {
    atomic_int *first_done;
    atomic_int saw_first;
} probe_t;

static void probe_fn(void *arg) {
    probe_t *p = arg;
    atomic_store(&p->saw_first, atomic_load(p->first_done) ? 1 : -1);
}

START_TEST(wait_event_across_devices) {
    XT_REQUIRE_DEVICES(2);
    const int n = xt_device_count();
    xdev_stream_t a = make_stream(0), b = make_stream(n > 3 ? 3 : n - 1);
    xdev_event_t e = make_event(XDEV_EVENT_DEFAULT);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 2000);
    atomic_int first = 0;
    probe_t probe = {&first, 0};
    XT_OK(xdev_launch_host_func(a, xt_gate_wait_fn, &gate));
    XT_OK(xdev_launch_host_func(a, xt_flag_fn, &first));
    XT_OK(xdev_event_record(e, a));
    double t0 = xt_now_ms();
    XT_OK(xdev_stream_wait_event(b, e));
    ck_assert_msg(xt_now_ms() - t0 < 1000, "wait_event blocked the host");
    XT_OK(xdev_launch_host_func(b, probe_fn, &probe));
    xt_sleep_ms(20);
    ck_assert_int_eq(atomic_load(&probe.saw_first), 0);
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(b));
    ck_assert_int_eq(atomic_load(&probe.saw_first), 1);
    xt_opener_join(&opener);
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(wait_event_snapshot_at_call) {
    if (getenv("XG_UNDER_SANITIZER") != NULL)
        XT_SKIP("compute-sanitizer runs the host functions of all streams one after another: "
                "a blocked one holds up the other stream's (tests/gpu/run.sh)");
    /* b waits for e's record #1; e is then re-recorded after a blocked
     * function: b must not wait for record #2 (CUDA semantics). */
    xdev_stream_t a = make_stream(xt_wrap(1)), b = make_stream(xt_wrap(1));
    xdev_event_t e = make_event(XDEV_EVENT_DEFAULT);
    XT_OK(xdev_event_record(e, a));
    XT_OK(xdev_stream_wait_event(b, e));
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 5000);
    XT_OK(xdev_launch_host_func(a, xt_gate_wait_fn, &gate));
    XT_OK(xdev_event_record(e, a));
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(b, xt_flag_fn, &flag));
    double t0 = xt_now_ms();
    XT_OK(xdev_stream_synchronize(b));
    ck_assert_msg(xt_now_ms() - t0 < 4000, "wait_event waited for a later record");
    ck_assert_int_eq(atomic_load(&flag), 1);
    xt_gate_open(&gate);
    xt_opener_join(&opener);
    XT_OK(xdev_event_synchronize(e));
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(destroy_pending_event) {
    xdev_stream_t s = make_stream(0);
    xdev_event_t e = make_event(XDEV_EVENT_TIMING);
    xt_gate_t gate;
    xt_gate_init(&gate);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_event_record(e, s));
    XT_OK(xdev_event_destroy(e));
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_stream_destroy(s));
    xt_gate_destroy(&gate);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("event");
    TCase *tc = tcase_create("event");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, create_flags);
    tcase_add_test(tc, unrecorded_event);
    tcase_add_test(tc, destroyed_and_null_handles);
    tcase_add_test(tc, record_query_synchronize);
    tcase_add_test(tc, record_null_stream_uses_current);
    tcase_add_test(tc, event_bound_to_first_device);
    tcase_add_test(tc, record_on_stream_of_other_device);
    tcase_add_test(tc, elapsed_time_errors);
    tcase_add_test(tc, timing_real_sleep);
    tcase_add_test(tc, timing_clock_taken_when_reached);
    tcase_add_test(tc, wait_event_across_devices);
    tcase_add_test(tc, wait_event_snapshot_at_call);
    tcase_add_test(tc, destroy_pending_event);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "event", argc, argv);
}
