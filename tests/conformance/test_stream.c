/* SPDX-License-Identifier: Apache-2.0 */
/* test_stream.c - default/current streams, create/destroy, handles, guards,
 * ordering under load, query/synchronize, wait_event/wait_stream, host funcs.
 * Conformance: runs on the backend XDEV_BACKEND selects (cpu: XDEV_CPU_DEVICES=4).
 * Tests that need distinct devices require them; elsewhere a device index is
 * xt_wrap()ped onto the devices present. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

static void setup(void) {
    xt_reset_state();
}

static xdev_stream_t default_of(int i) {
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_default(xt_dev(i), &s));
    ck_assert_ptr_nonnull(s);
    return s;
}

static xdev_stream_t current_of(int i) {
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_current(xt_dev(i), &s));
    ck_assert_ptr_nonnull(s);
    return s;
}

static xdev_stream_t make_stream(int device, int priority) {
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_create(xt_dev(device), priority, &s));
    ck_assert_ptr_nonnull(s);
    return s;
}

static int current_index(void) {
    int index = -100;
    XT_OK(xdev_get_device_index(xt_type(), &index));
    return index;
}

/* ------------------------------------------------------------ default & current */
START_TEST(default_stream_per_device) {
    XT_REQUIRE_DEVICES(2);
    const int n = xt_device_count(), k = xt_wrap(2);
    xdev_stream_t d0 = default_of(0), d0b = default_of(0), d1 = default_of(1);
    ck_assert_ptr_eq(d0, d0b);
    ck_assert_ptr_ne(d0, d1);
    for (int i = 2; i < n; i++) {
        ck_assert_ptr_ne(default_of(i), d0);
        ck_assert_ptr_ne(default_of(i), d1);
    }
    xdev_device_t dev;
    XT_OK(xdev_stream_get_device(d1, &dev));
    XT_DEV_EQ(dev, xt_dev(1));
    int prio = 99;
    XT_OK(xdev_stream_get_priority(d1, &prio));
    ck_assert_int_eq(prio, XDEV_STREAM_PRIORITY_NORMAL);
    XT_OK(xdev_set_device(xt_dev(k)));
    xdev_stream_t cur;
    XT_OK(xdev_stream_default(xt_dev(-1), &cur));
    ck_assert_ptr_eq(cur, default_of(k));

    xdev_stream_t s;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_stream_default(xt_dev(n), &s), xt_fmt("%d", n));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_default(xt_dev(0), NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_stream_current(xt_dev(n), &s), xt_fmt("%d", n));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_current(xt_dev(0), NULL), "out");
}
END_TEST

START_TEST(current_stream_initially_default) {
    const int n = xt_device_count();
    if (xt_cpu_devices_env() >= 0) ck_assert_int_eq(n, xt_cpu_devices_env());
    for (int i = 0; i < n; i++)
        ck_assert_ptr_eq(current_of(i), default_of(i));
}
END_TEST

START_TEST(set_current_switches_device) {
    XT_REQUIRE_DEVICES(2);
    xdev_stream_t s = make_stream(1, XDEV_STREAM_PRIORITY_NORMAL);
    XT_OK(xdev_stream_set_current(s));
    ck_assert_int_eq(current_index(), 1);
    ck_assert_ptr_eq(current_of(1), s);
    xdev_stream_t cur;
    XT_OK(xdev_stream_current(xt_dev(-1), &cur));
    ck_assert_ptr_eq(cur, s);
    ck_assert_ptr_eq(current_of(0), default_of(0)); /* other devices untouched */

    /* Switching device back keeps s current for device 1. */
    XT_OK(xdev_set_device(xt_dev(0)));
    XT_OK(xdev_stream_current(xt_dev(-1), &cur));
    ck_assert_ptr_eq(cur, default_of(0));
    ck_assert_ptr_eq(current_of(1), s);

    XT_ERR(XT_NULL_HANDLE, xdev_stream_set_current(NULL), "stream");
    XT_OK(xdev_stream_set_current(default_of(1)));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

typedef struct {
    xdev_stream_t main_stream;
    xdev_stream_t seen_initially;
    xdev_stream_t mine;
    xdev_stream_t seen_after_main_destroy;
    pthread_barrier_t *barrier;
    int device_seen;
} thread_stream_t;

static void *stream_thread(void *arg) {
    thread_stream_t *t = arg;
    (void)xdev_stream_current(xt_dev(1), &t->seen_initially);
    (void)xdev_stream_create(xt_dev(2), XDEV_STREAM_PRIORITY_NORMAL, &t->mine);
    (void)xdev_stream_set_current(t->mine);
    (void)xdev_get_device_index(xt_type(), &t->device_seen);
    pthread_barrier_wait(t->barrier); /* main destroys t->mine */
    pthread_barrier_wait(t->barrier);
    (void)xdev_stream_current(xt_dev(2), &t->seen_after_main_destroy);
    return NULL;
}

START_TEST(current_stream_per_thread) {
    XT_REQUIRE_DEVICES(3);
    xdev_stream_t s = make_stream(1, XDEV_STREAM_PRIORITY_NORMAL);
    XT_OK(xdev_stream_set_current(s));
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    thread_stream_t t;
    memset(&t, 0, sizeof t);
    t.barrier = &barrier;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, stream_thread, &t), 0);
    pthread_barrier_wait(&barrier);
    ck_assert_ptr_eq(t.seen_initially, default_of(1)); /* main's choice is not the thread's */
    ck_assert_int_eq(t.device_seen, 2);
    ck_assert_int_eq(current_index(), 1);
    ck_assert_ptr_eq(current_of(1), s);
    ck_assert_ptr_eq(current_of(2), default_of(2));
    /* Destroying a stream another thread has current: that thread falls back. */
    ck_assert_ptr_nonnull(t.mine);
    XT_OK(xdev_stream_destroy(t.mine));
    pthread_barrier_wait(&barrier);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&barrier);
    ck_assert_ptr_eq(t.seen_after_main_destroy, default_of(2));

    /* And this thread falls back too. */
    XT_OK(xdev_stream_destroy(s));
    ck_assert_ptr_eq(current_of(1), default_of(1));
}
END_TEST

/* ------------------------------------------------------------ create / destroy / handles */
START_TEST(create_priorities) {
    const int n = xt_device_count(), lo_dev = xt_wrap(3), cur = xt_wrap(2);
    xdev_stream_t hi = make_stream(0, XDEV_STREAM_PRIORITY_HIGH);
    xdev_stream_t lo = make_stream(lo_dev, XDEV_STREAM_PRIORITY_NORMAL);
    ck_assert_ptr_ne(hi, lo);
    int p = 99;
    XT_OK(xdev_stream_get_priority(hi, &p));
    ck_assert_int_eq(p, XDEV_STREAM_PRIORITY_HIGH);
    XT_OK(xdev_stream_get_priority(lo, &p));
    ck_assert_int_eq(p, XDEV_STREAM_PRIORITY_NORMAL);
    xdev_device_t d;
    XT_OK(xdev_stream_get_device(lo, &d));
    XT_DEV_EQ(d, xt_dev(lo_dev));
    ck_assert_ptr_ne(hi, default_of(0));

    XT_OK(xdev_set_device(xt_dev(cur)));
    xdev_stream_t cur_dev = NULL;
    XT_OK(xdev_stream_create(xt_dev(-1), XDEV_STREAM_PRIORITY_NORMAL, &cur_dev));
    XT_OK(xdev_stream_get_device(cur_dev, &d));
    XT_DEV_EQ(d, xt_dev(cur));

    xdev_stream_t s;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_create(xt_dev(0), 5, &s), "priority");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE,
           xdev_stream_create(xt_dev(n), XDEV_STREAM_PRIORITY_NORMAL, &s), xt_fmt("%d", n));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_get_priority(hi, NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_get_device(hi, NULL), "out");

    XT_OK(xdev_stream_destroy(hi));
    XT_OK(xdev_stream_destroy(lo));
    XT_OK(xdev_stream_destroy(cur_dev));
}
END_TEST

START_TEST(destroy_default_rejected) {
    xdev_stream_t d1 = default_of(xt_wrap(1));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_destroy(d1), "default");
    /* Still usable. */
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(d1, xt_flag_fn, &flag));
    XT_OK(xdev_stream_synchronize(d1));
    ck_assert_int_eq(atomic_load(&flag), 1);
    XT_ERR(XT_NULL_HANDLE, xdev_stream_destroy(NULL), "stream");
}
END_TEST

START_TEST(destroyed_handle_detected) {
    const int dev = xt_wrap(1);
    xdev_stream_t s = make_stream(dev, XDEV_STREAM_PRIORITY_NORMAL);
    XT_OK(xdev_stream_destroy(s));
    atomic_int flag = 0;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_query(s), "stream|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_synchronize(s), "stream|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_launch_host_func(s, xt_flag_fn, &flag), "stream|handle");
    xdev_device_t d;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_get_device(s, &d), "stream|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_set_current(s), "stream|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_destroy(s), "stream|handle");
    ck_assert_int_eq(atomic_load(&flag), 0);
    ck_assert_ptr_eq(current_of(dev), default_of(dev));
}
END_TEST

START_TEST(unknown_handle_detected) {
    static _Alignas(64) unsigned char fake[512];
    memset(fake, 0, sizeof fake);
    xdev_stream_t s = (xdev_stream_t)(void *)fake;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_query(s), "stream|handle");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_destroy(s), "stream|handle");
}
END_TEST

START_TEST(native_handle_and_wrap) {
    const int n = xt_device_count(), dev = xt_wrap(2);
    xdev_stream_t s = make_stream(dev, XDEV_STREAM_PRIORITY_NORMAL);
    void *native = NULL, *native_default = NULL;
    XT_OK(xdev_stream_native_handle(s, &native));
    ck_assert_ptr_nonnull(native);
    XT_OK(xdev_stream_native_handle(default_of(dev), &native_default));
    /* HIP's legacy default stream is its NULL stream (no hipStreamLegacy):
     * the handle is NULL there by design (cuda_stream.c), not elsewhere */
    if (xt_type() != XDEV_DEVICE_HIP) ck_assert_ptr_nonnull(native_default);
    ck_assert_ptr_ne(native, native_default);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_native_handle(s, NULL), "out");

    xdev_stream_t w = NULL;
    XT_OK(xdev_stream_wrap_native(xt_dev(dev), native, &w));
    ck_assert_ptr_nonnull(w);
    void *wn = NULL;
    XT_OK(xdev_stream_native_handle(w, &wn));
    ck_assert_ptr_eq(wn, native);
    xdev_device_t d;
    XT_OK(xdev_stream_get_device(w, &d));
    XT_DEV_EQ(d, xt_dev(dev));

    /* The wrapper is the same queue: work on w waits for work already on s. */
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_launch_host_func(w, xt_flag_fn, &flag));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    xt_sleep_ms(20);
    ck_assert_msg(atomic_load(&flag) == 0, "work on the wrapper overtook work on the stream");
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(w));
    xt_opener_start(&opener, &gate, 0);
    XT_OK(xdev_stream_synchronize(w));
    ck_assert_int_eq(atomic_load(&flag), 1);
    xt_opener_join(&opener);
    xt_gate_destroy(&gate);

    /* Destroying the wrapper leaves the native queue alive. */
    XT_OK(xdev_stream_destroy(w));
    flag = 0;
    XT_OK(xdev_launch_host_func(s, xt_flag_fn, &flag));
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_int_eq(atomic_load(&flag), 1);
    XT_OK(xdev_stream_destroy(s));

    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_wrap_native(xt_dev(0), NULL, &w), "native");
    /* a non-NULL handle the argument checks refuse before using it (HIP's
     * default one is NULL: the destroyed stream's number stands in there) */
    void *some = native_default != NULL ? native_default : native;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_wrap_native(xt_dev(0), some, NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_stream_wrap_native(xt_dev(n), some, &w),
           xt_fmt("%d", n));
}
END_TEST

/* ------------------------------------------------------------ guards */
#if defined(__GNUC__)
static int stream_scope_helper(xdev_stream_t s, int early) {
    XDEV_STREAM_SCOPE(s);
    int dev = current_index();
    xdev_stream_t cur = current_of(3);
    if (cur != s) return -1;
    if (early) return dev;
    return 100 + dev;
}

START_TEST(stream_scope_restores) {
    XT_REQUIRE_DEVICES(4);
    xdev_stream_t s = make_stream(3, XDEV_STREAM_PRIORITY_NORMAL);
    xdev_stream_t other = make_stream(3, XDEV_STREAM_PRIORITY_NORMAL);
    XT_OK(xdev_stream_set_current(other));
    XT_OK(xdev_set_device(xt_dev(1)));
    ck_assert_int_eq(stream_scope_helper(s, 1), 3);
    ck_assert_int_eq(current_index(), 1);
    ck_assert_ptr_eq(current_of(3), other);
    ck_assert_int_eq(stream_scope_helper(s, 0), 103);
    ck_assert_int_eq(current_index(), 1);
    ck_assert_ptr_eq(current_of(3), other);
    XT_OK(xdev_stream_set_current(default_of(3)));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(other));
}
END_TEST
#endif

START_TEST(stream_guard_and_with_stream) {
    XT_REQUIRE_DEVICES(3);
    xdev_stream_t s = make_stream(2, XDEV_STREAM_PRIORITY_HIGH);
    xdev_stream_guard_t g;
    XT_OK(xdev_stream_guard_begin(&g, s));
    ck_assert_int_eq(current_index(), 2);
    ck_assert_ptr_eq(current_of(2), s);
    XT_OK(xdev_stream_guard_end(&g));
    ck_assert_int_eq(current_index(), 0);
    ck_assert_ptr_eq(current_of(2), default_of(2));

    int seen_dev = -1;
    xdev_stream_t seen = NULL;
    XDEV_WITH_STREAM(s) {
        seen_dev = current_index();
        seen = current_of(2);
    }
    ck_assert_int_eq(seen_dev, 2);
    ck_assert_ptr_eq(seen, s);
    ck_assert_int_eq(current_index(), 0);
    ck_assert_ptr_eq(current_of(2), default_of(2));

    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_guard_begin(NULL, s), "guard");
    /* NULL = torch's stream(None): a no-op that leaves current stream and
     * device alone, and whose end restores nothing (issue 16, item 14). */
    XT_OK(xdev_stream_set_current(s)); /* s is on device 2, which becomes current */
    XT_OK(xdev_set_device(xt_dev(1)));
    XT_OK(xdev_stream_guard_begin(&g, NULL));
    ck_assert(!g.active);
    ck_assert_int_eq(current_index(), 1);
    XT_OK(xdev_set_device(xt_dev(0)));
    XT_OK(xdev_stream_guard_end(&g));
    ck_assert_int_eq(current_index(), 0);
    ck_assert_ptr_eq(current_of(2), s);
    {
        XDEV_STREAM_SCOPE(NULL);
        ck_assert_int_eq(current_index(), 0);
    }
    ck_assert_ptr_eq(current_of(2), s);
    XT_OK(xdev_set_device(xt_dev(0)));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_guard_end(NULL), "guard");
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* ------------------------------------------------------------ host funcs, query, sync */
START_TEST(query_not_ready_then_success) {
    xdev_stream_t s = make_stream(xt_wrap(1), XDEV_STREAM_PRIORITY_NORMAL);
    XT_STATUS(XDEV_SUCCESS, xdev_stream_query(s));
    xt_gate_t gate;
    xt_gate_init(&gate);
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_launch_host_func(s, xt_flag_fn, &flag));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(s));
    xt_sleep_ms(10);
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(s));
    ck_assert_int_eq(atomic_load(&flag), 0);
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_int_eq(atomic_load(&flag), 1);
    XT_STATUS(XDEV_SUCCESS, xdev_stream_query(s));
    XT_OK(xdev_stream_destroy(s));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(synchronize_waits) {
    xdev_stream_t s = make_stream(0, XDEV_STREAM_PRIORITY_NORMAL);
    atomic_int flag = 0;
    xt_sleep_task_t task = {40, &flag};
    double t0 = xt_now_ms();
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &task));
    ck_assert_msg(xt_now_ms() - t0 < 30, "launch_host_func blocked the host");
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_int_eq(atomic_load(&flag), 1);
    ck_assert_double_ge(xt_now_ms() - t0, 35);
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(host_func_rejects) {
    xdev_stream_t s = default_of(0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_launch_host_func(s, NULL, NULL), "fn");
}
END_TEST

START_TEST(host_func_null_stream_is_current) {
    const int dev = xt_wrap(2);
    xdev_stream_t s = make_stream(dev, XDEV_STREAM_PRIORITY_NORMAL);
    XT_OK(xdev_stream_set_current(s));
    xt_gate_t gate;
    xt_gate_init(&gate);
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_launch_host_func(NULL, xt_flag_fn, &flag));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    xt_sleep_ms(30);
    ck_assert_msg(atomic_load(&flag) == 0, "NULL stream did not mean the current stream");
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_int_eq(atomic_load(&flag), 1);
    XT_OK(xdev_stream_set_current(default_of(dev)));
    XT_OK(xdev_stream_destroy(s));
    xt_gate_destroy(&gate);
}
END_TEST

/* Names: set, read back, replaced, removed; the default stream too; bad
 * names and buffers refused with nothing changed. */
START_TEST(stream_names) {
    xdev_stream_t s = make_stream(0, XDEV_STREAM_PRIORITY_NORMAL);
    char buf[64];
    XT_OK(xdev_stream_get_name(s, buf, sizeof buf));
    ck_assert_str_eq(buf, "");
    XT_OK(xdev_stream_set_name(s, "prefetch"));
    XT_OK(xdev_stream_get_name(s, buf, sizeof buf));
    ck_assert_str_eq(buf, "prefetch");
    XT_OK(xdev_stream_set_name(s, "caf\xc3\xa9")); /* replaced; UTF-8 is fine */
    XT_OK(xdev_stream_get_name(s, buf, sizeof buf));
    ck_assert_str_eq(buf, "caf\xc3\xa9");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_get_name(s, buf, 5), "need 6");
    char longest[64], too_long[65];
    memset(longest, 'x', 63), longest[63] = '\0';
    memset(too_long, 'y', 64), too_long[64] = '\0';
    XT_OK(xdev_stream_set_name(s, longest));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_set_name(s, too_long), "64 bytes", "at most 63");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_set_name(s, "bad\xff"), "UTF-8", "byte 3");
    XT_OK(xdev_stream_get_name(s, buf, sizeof buf));
    ck_assert_str_eq(buf, longest);       /* the refused ones changed nothing */
    XT_OK(xdev_stream_set_name(s, NULL)); /* removed */
    XT_OK(xdev_stream_get_name(s, buf, sizeof buf));
    ck_assert_str_eq(buf, "");
    xdev_stream_t d = default_of(0);
    XT_OK(xdev_stream_set_name(d, "main"));
    XT_OK(xdev_stream_get_name(d, buf, sizeof buf));
    ck_assert_str_eq(buf, "main");
    XT_OK(xdev_stream_set_name(d, ""));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_get_name(s, NULL, 8), "buf");
    XT_OK(xdev_stream_destroy(s));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_set_name(s, "gone"), "destroyed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_stream_set_name(NULL, "x"), "NULL");
}
END_TEST

START_TEST(streams_run_concurrently) {
    if (getenv("XG_UNDER_SANITIZER") != NULL)
        XT_SKIP("compute-sanitizer runs the host functions of all streams one after another: "
                "a blocked one holds up the other stream's (tests/gpu/run.sh)");
    /* A blocked stream does not hold up another stream (of the same device). */
    xdev_stream_t a = make_stream(0, XDEV_STREAM_PRIORITY_NORMAL);
    xdev_stream_t b = make_stream(0, XDEV_STREAM_PRIORITY_NORMAL);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 5000);
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(a, xt_gate_wait_fn, &gate));
    XT_OK(xdev_launch_host_func(b, xt_flag_fn, &flag));
    double t0 = xt_now_ms();
    XT_OK(xdev_stream_synchronize(b));
    ck_assert_int_eq(atomic_load(&flag), 1);
    ck_assert_msg(xt_now_ms() - t0 < 4000, "stream b waited for blocked stream a");
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(a));
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(a));
    xt_opener_join(&opener);
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(device_synchronize_waits_for_all_streams) {
    XT_REQUIRE_DEVICES(3);
    xdev_stream_t s1 = make_stream(1, XDEV_STREAM_PRIORITY_NORMAL);
    xdev_stream_t s2 = make_stream(1, XDEV_STREAM_PRIORITY_HIGH);
    xdev_stream_t other = make_stream(2, XDEV_STREAM_PRIORITY_NORMAL);
    atomic_int f[3] = {0, 0, 0};
    xt_sleep_task_t t[3] = {{30, &f[0]}, {40, &f[1]}, {50, &f[2]}};
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 5000);
    XT_OK(xdev_launch_host_func(other, xt_gate_wait_fn, &gate)); /* another device, blocked */
    XT_OK(xdev_launch_host_func(default_of(1), xt_sleep_fn, &t[0]));
    XT_OK(xdev_launch_host_func(s1, xt_sleep_fn, &t[1]));
    XT_OK(xdev_launch_host_func(s2, xt_sleep_fn, &t[2]));
    double t0 = xt_now_ms();
    XT_OK(xdev_device_synchronize(xt_dev(1)));
    ck_assert_msg(xt_now_ms() - t0 < 4000, "device_synchronize(%s) waited for %s", xt_name(1),
                  xt_name(2));
    for (int i = 0; i < 3; i++)
        ck_assert_msg(atomic_load(&f[i]) == 1, "stream %d of %s not finished", i, xt_name(1));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(other));
    xt_gate_open(&gate);
    XT_OK(xdev_device_synchronize(xt_dev(2)));
    XT_STATUS(XDEV_SUCCESS, xdev_stream_query(other));
    xt_opener_join(&opener);
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    XT_OK(xdev_stream_destroy(other));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(synchronize_all_devices) {
    enum { MAXD = 16 };
    const int n = xt_device_count() < MAXD ? xt_device_count() : MAXD;
    xdev_stream_t s[MAXD];
    atomic_int f[2 * MAXD];
    xt_sleep_task_t t[2 * MAXD];
    for (int i = 0; i < n; i++) {
        s[i] = make_stream(i, XDEV_STREAM_PRIORITY_NORMAL);
        for (int k = 0; k < 2; k++) {
            atomic_init(&f[2 * i + k], 0);
            t[2 * i + k].ms = 20 + 5 * i;
            t[2 * i + k].flag = &f[2 * i + k];
        }
        XT_OK(xdev_launch_host_func(s[i], xt_sleep_fn, &t[2 * i]));
        XT_OK(xdev_launch_host_func(default_of(i), xt_sleep_fn, &t[2 * i + 1]));
    }
    XT_OK(xdev_synchronize());
    for (int i = 0; i < 2 * n; i++)
        ck_assert_msg(atomic_load(&f[i]) == 1, "task %d unfinished after xdev_synchronize", i);
    for (int i = 0; i < n; i++)
        XT_OK(xdev_stream_destroy(s[i]));
}
END_TEST

START_TEST(destroy_finishes_pending_work) {
    xdev_stream_t s = make_stream(xt_wrap(3), XDEV_STREAM_PRIORITY_NORMAL);
    atomic_int count = 0;
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    for (int i = 0; i < 5; i++)
        XT_OK(xdev_launch_host_func(s, xt_count_fn, &count));
    xt_opener_start(&opener, &gate, 50);
    XT_OK(xdev_stream_destroy(s));
    ck_assert_int_eq(atomic_load(&count), 5);
    xt_opener_join(&opener);
    xt_gate_destroy(&gate);
}
END_TEST

/* ------------------------------------------------------------ wait_event / wait_stream */
typedef struct {
    atomic_int *first_done;
    atomic_int saw_first;
} order_probe_t;

static void probe_fn(void *arg) {
    order_probe_t *p = arg;
    atomic_store(&p->saw_first, atomic_load(p->first_done) ? 1 : -1);
}

START_TEST(wait_stream_orders_and_does_not_block_host) {
    xdev_stream_t a = make_stream(0, XDEV_STREAM_PRIORITY_NORMAL);
    xdev_stream_t b = make_stream(xt_wrap(1), XDEV_STREAM_PRIORITY_NORMAL);
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 2000);
    atomic_int first_done = 0;
    order_probe_t probe = {&first_done, 0};
    XT_OK(xdev_launch_host_func(a, xt_gate_wait_fn, &gate));
    XT_OK(xdev_launch_host_func(a, xt_flag_fn, &first_done));
    double t0 = xt_now_ms();
    XT_OK(xdev_stream_wait_stream(b, a));
    XT_OK(xdev_launch_host_func(b, probe_fn, &probe));
    ck_assert_msg(xt_now_ms() - t0 < 1000, "wait_stream blocked the host");
    xt_sleep_ms(20);
    ck_assert_int_eq(atomic_load(&probe.saw_first), 0);
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(b));
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(b));
    ck_assert_int_eq(atomic_load(&probe.saw_first), 1);
    xt_opener_join(&opener);

    /* Work enqueued on `a` after the wait is not waited for. */
    if (!xt_unsupported(__func__, "after_wait")) {
        xt_gate_t gate2;
        xt_gate_init(&gate2);
        xt_opener_start(&opener, &gate2, 5000);
        atomic_int flag = 0;
        XT_OK(xdev_stream_wait_stream(b, a));
        XT_OK(xdev_launch_host_func(a, xt_gate_wait_fn, &gate2));
        XT_OK(xdev_launch_host_func(b, xt_flag_fn, &flag));
        t0 = xt_now_ms();
        XT_OK(xdev_stream_synchronize(b));
        ck_assert_msg(xt_now_ms() - t0 < 4000, "wait_stream waited for later work");
        ck_assert_int_eq(atomic_load(&flag), 1);
        xt_gate_open(&gate2);
        XT_OK(xdev_stream_synchronize(a)); /* the gate function has returned */
        xt_opener_join(&opener);
        xt_gate_destroy(&gate2);
    }

    XT_ERR(XT_NULL_HANDLE, xdev_stream_wait_stream(b, NULL), "other");
    XT_ERR(XT_NULL_HANDLE, xdev_stream_wait_stream(NULL, a), "stream");
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(wait_event_unrecorded_is_noop) {
    xdev_stream_t s = make_stream(0, XDEV_STREAM_PRIORITY_NORMAL);
    xdev_event_t e;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e));
    XT_OK(xdev_stream_wait_event(s, e));
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(s, xt_flag_fn, &flag));
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_int_eq(atomic_load(&flag), 1);
    XT_ERR(XT_NULL_HANDLE, xdev_stream_wait_event(s, NULL), "event");
    XT_ERR(XT_NULL_HANDLE, xdev_stream_record_event(s, NULL), "event");
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* Thousands of host functions over 4 streams (3 devices) with cross-stream
 * wait_event / wait_stream every round; every function takes a global
 * sequence number, so order can be checked afterwards. */
#define NSTREAMS 4
#define PER_ROUND 20

typedef struct {
    atomic_long *counter;
    long seq;
    int spin;
} seq_task_t;

static void seq_fn(void *arg) {
    seq_task_t *t = arg;
    volatile unsigned sink = 0;
    for (int i = 0; i < t->spin; i++)
        sink += (unsigned)i;
    (void)sink;
    t->seq = atomic_fetch_add(t->counter, 1);
}

START_TEST(ordering_under_load) {
    const int rounds = xt_iters(50, 6);
    const int devices[NSTREAMS] = {0, 0, xt_wrap(1), xt_wrap(2)};
    xdev_stream_t s[NSTREAMS];
    xdev_event_t ev[NSTREAMS];
    atomic_long counter = 0;
    seq_task_t *tasks = calloc((size_t)NSTREAMS * rounds * PER_ROUND, sizeof *tasks);
    ck_assert_ptr_nonnull(tasks);
#define TASK(i, r, k) (&tasks[((size_t)(i)*rounds + (r)) * PER_ROUND + (k)])
    for (int i = 0; i < NSTREAMS; i++) {
        s[i] = make_stream(devices[i],
                           i % 2 ? XDEV_STREAM_PRIORITY_HIGH : XDEV_STREAM_PRIORITY_NORMAL);
        XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &ev[i]));
    }
    unsigned rng = 12345;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < NSTREAMS; i++) {
            for (int k = 0; k < PER_ROUND; k++) {
                seq_task_t *t = TASK(i, r, k);
                rng = rng * 1103515245u + 12345u;
                t->counter = &counter;
                t->seq = -1;
                t->spin = (rng >> 16) % 8 == 0 ? (int)((rng >> 8) % 20000) : 0;
                XT_OK(xdev_launch_host_func(s[i], seq_fn, t));
            }
        }
        if (r % 2 == 0) {
            for (int i = 0; i < NSTREAMS; i++)
                XT_OK(xdev_event_record(ev[i], s[i]));
            for (int j = 0; j < NSTREAMS; j++)
                XT_OK(xdev_stream_wait_event(s[j], ev[(j + 1) % NSTREAMS]));
        } else {
            for (int j = 0; j < NSTREAMS; j++)
                XT_OK(xdev_stream_wait_stream(s[j], s[(j + NSTREAMS - 1) % NSTREAMS]));
        }
    }
    for (int i = 0; i < NSTREAMS; i++)
        XT_OK(xdev_stream_synchronize(s[i]));

    const long total = (long)NSTREAMS * rounds * PER_ROUND;
    ck_assert_int_eq(atomic_load(&counter), total);
    for (int i = 0; i < NSTREAMS; i++) {
        long prev = -1;
        for (int r = 0; r < rounds; r++)
            for (int k = 0; k < PER_ROUND; k++) {
                long seq = TASK(i, r, k)->seq;
                ck_assert_msg(seq >= 0 && seq < total, "task %d/%d/%d never ran", i, r, k);
                ck_assert_msg(seq > prev, "stream %d: task %d/%d ran out of order", i, r, k);
                prev = seq;
            }
    }
    for (int r = 0; r + 1 < rounds; r++)
        for (int j = 0; j < NSTREAMS; j++) {
            int dep = r % 2 == 0 ? (j + 1) % NSTREAMS : (j + NSTREAMS - 1) % NSTREAMS;
            long waited = TASK(dep, r, PER_ROUND - 1)->seq;
            long after = TASK(j, r + 1, 0)->seq;
            ck_assert_msg(after > waited,
                          "round %d: stream %d ran work before the %s on stream %d finished", r, j,
                          r % 2 == 0 ? "event" : "work", dep);
        }
#undef TASK
    for (int i = 0; i < NSTREAMS; i++) {
        XT_OK(xdev_event_destroy(ev[i]));
        XT_OK(xdev_stream_destroy(s[i]));
    }
    free(tasks);
}
END_TEST

START_TEST(process_exit_with_live_streams) {
    /* Leave streams with queued work behind; the fork-mode child must exit cleanly. */
    const int n = xt_device_count();
    for (int i = 0; i < n; i++) {
        xdev_stream_t s = make_stream(i, XDEV_STREAM_PRIORITY_NORMAL);
        static xt_sleep_task_t t = {5, NULL};
        XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &t));
        XT_OK(xdev_stream_synchronize(s));
        XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &t));
    }
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("handles");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, default_stream_per_device);
    tcase_add_test(tc, current_stream_initially_default);
    tcase_add_test(tc, set_current_switches_device);
    tcase_add_test(tc, current_stream_per_thread);
    tcase_add_test(tc, create_priorities);
    tcase_add_test(tc, destroy_default_rejected);
    tcase_add_test(tc, destroyed_handle_detected);
    tcase_add_test(tc, unknown_handle_detected);
    tcase_add_test(tc, native_handle_and_wrap);
#if defined(__GNUC__)
    tcase_add_test(tc, stream_scope_restores);
#endif
    tcase_add_test(tc, stream_guard_and_with_stream);
    suite_add_tcase(s, tc);

    tc = tcase_create("execution");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, query_not_ready_then_success);
    tcase_add_test(tc, synchronize_waits);
    tcase_add_test(tc, host_func_rejects);
    tcase_add_test(tc, host_func_null_stream_is_current);
    tcase_add_test(tc, stream_names);
    tcase_add_test(tc, streams_run_concurrently);
    tcase_add_test(tc, device_synchronize_waits_for_all_streams);
    tcase_add_test(tc, synchronize_all_devices);
    tcase_add_test(tc, destroy_finishes_pending_work);
    tcase_add_test(tc, wait_stream_orders_and_does_not_block_host);
    tcase_add_test(tc, wait_event_unrecorded_is_noop);
    tcase_add_test(tc, ordering_under_load);
    tcase_add_test(tc, process_exit_with_live_streams);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "stream", argc, argv);
}
