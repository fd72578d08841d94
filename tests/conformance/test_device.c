/* SPDX-License-Identifier: Apache-2.0 */
/* test_device.c - device names, counts, the per-thread current device, guards,
 * properties, peer access, XDEV_VISIBLE_DEVICES and XDEV_CPU_MEMORY.
 *
 * Suites (ctest runs each in its own environment):
 *   device        XDEV_BACKEND=<backend under test> (cpu: XDEV_CPU_DEVICES=4)
 *   visible       ... XDEV_VISIBLE_DEVICES=3,1 (accelerators: needs 4 physical
 *                 devices; cpu: checks that its devices are not renumbered)
 *   cpu_memory    XDEV_BACKEND=cpu XDEV_CPU_DEVICES=4 XDEV_CPU_MEMORY=64M
 * device and visible are conformance suites: devices are xt_dev(i), of the
 * type XDEV_BACKEND selects; tests that switch between devices require as
 * many as they use. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "xt.h"

static void setup(void) {
    xt_reset_state();
}

/* The calling thread's current device index of the type under test. */
static int current_index(void) {
    int index = -100;
    XT_OK(xdev_get_device_index(xt_type(), &index));
    return index;
}

/* ------------------------------------------------------------ names */
START_TEST(parse_valid) {
    static const struct {
        const char *text;
        xdev_device_type_t type;
        int index;
    } cases[] = {
        {"cpu:0", XDEV_DEVICE_CPU, 0},   {"cpu:3", XDEV_DEVICE_CPU, 3},
        {"cuda:1", XDEV_DEVICE_CUDA, 1}, {"hip:0", XDEV_DEVICE_HIP, 0},
        {"cuda", XDEV_DEVICE_CUDA, -1},  {"cpu", XDEV_DEVICE_CPU, -1},
        {"hip", XDEV_DEVICE_HIP, -1},    {"cuda:123", XDEV_DEVICE_CUDA, 123},
        {"cpu:10", XDEV_DEVICE_CPU, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xdev_device_t d = {XDEV_DEVICE_HIP, -7};
        XT_OK(xdev_device_parse(cases[i].text, &d));
        ck_assert_msg(d.type == cases[i].type && d.index == cases[i].index,
                      "parse(\"%s\") gave {%d,%d}", cases[i].text, (int)d.type, d.index);
    }
}
END_TEST

START_TEST(parse_rejects_malformed) {
    static const char *bad[] = {
        "",
        "cuda:",
        "cuda:-1",
        "cuda:+1",
        "cuda:1x",
        "gpu:0",
        " cpu:0",
        "cpu:0 ",
        "cpu: 0",
        "cpu :0",
        "cuda:1:2",
        ":0",
        "cpu0",
        "cuda:0x1",
        "cuda:1.0",
        "cudax",
        "cuda:99999999999999999999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xdev_device_t d = {XDEV_DEVICE_HIP, 42};
        xdev_clear_error();
        xdev_status_t st = xdev_device_parse(bad[i], &d);
        ck_assert_msg(st == XDEV_ERROR_INVALID_VALUE, "parse(\"%s\") returned %s ({%d,%d})", bad[i],
                      xdev_status_string(st), (int)d.type, d.index);
        ck_assert_msg(xdev_last_error()[0] != '\0', "parse(\"%s\"): empty message", bad[i]);
        ck_assert_msg(strstr(xdev_last_error(), "xdev_device_parse") != NULL,
                      "parse(\"%s\"): message does not name the call: \"%s\"", bad[i],
                      xdev_last_error());
        if (bad[i][0] != '\0' && bad[i][0] != ' ')
            ck_assert_msg(strstr(xdev_last_error(), bad[i]) != NULL,
                          "parse(\"%s\"): message does not quote the input: \"%s\"", bad[i],
                          xdev_last_error());
    }
}
END_TEST

/* The message names what is wrong with the index and how to write it. */
START_TEST(parse_messages_say_what_is_wrong) {
    xdev_device_t d;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse("cpu:0 ", &d), "character 5 is ' '",
           "trim the name");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse("cpu:-1", &d), "digits only",
           "character 4 is '-'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse("cpu:1\t", &d), "'\\x09'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse("cpu:007", &d), "leading zero",
           "write 'cpu:7'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse("cpu:00", &d), "write 'cpu:0'");
}
END_TEST

START_TEST(parse_null_args) {
    xdev_device_t d;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse(NULL, &d), "name");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse("cpu:0", NULL), "out");
}
END_TEST

START_TEST(format_and_round_trip) {
    char buf[XDEV_DEVICE_NAME_MAX];
    XT_OK(xdev_device_format(xdev_cuda(1), buf, sizeof buf));
    ck_assert_str_eq(buf, "cuda:1");
    XT_OK(xdev_device_format(xdev_cuda(-1), buf, sizeof buf));
    ck_assert_str_eq(buf, "cuda");
    XT_OK(xdev_device_format(xdev_hip(0), buf, sizeof buf));
    ck_assert_str_eq(buf, "hip:0");
    XT_OK(xdev_device_format(xdev_cpu(12), buf, sizeof buf));
    ck_assert_str_eq(buf, "cpu:12");

    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++) {
        if (xdev_device_type_name((xdev_device_type_t)t) == NULL) continue; /* not registered */
        for (int i = -1; i <= 20; i++) {
            xdev_device_t d = {(xdev_device_type_t)t, i}, back;
            XT_OK(xdev_device_format(d, buf, sizeof buf));
            XT_OK(xdev_device_parse(buf, &back));
            XT_DEV_EQ(back, d);
        }
    }
    /* The longest name fits XDEV_DEVICE_NAME_MAX. */
    xdev_device_t big = {XDEV_DEVICE_CUDA, INT_MAX}, back;
    XT_OK(xdev_device_format(big, buf, sizeof buf));
    XT_OK(xdev_device_parse(buf, &back));
    XT_DEV_EQ(back, big);
}
END_TEST

START_TEST(format_rejects) {
    char buf[16];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_format(xdev_cpu(0), NULL, 16), "buf");
    /* Too small: nothing written past len. */
    memset(buf, 'Z', sizeof buf);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_format(xdev_cuda(1), buf, 3), "len|buf|small");
    for (size_t i = 3; i < sizeof buf; i++)
        ck_assert_msg(buf[i] == 'Z', "format wrote past len at %zu", i);
    /* Exactly enough ("cuda:1" + NUL = 7). */
    XT_OK(xdev_device_format(xdev_cuda(1), buf, 7));
    ck_assert_str_eq(buf, "cuda:1");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_format(xdev_cuda(1), buf, 6), "len|buf|small");
    xdev_device_t bogus = {(xdev_device_type_t)9, 0};
    XT_ERR(XT_BAD_TYPE, xdev_device_format(bogus, buf, sizeof buf), "type|9");
}
END_TEST

START_TEST(type_names) {
    ck_assert_str_eq(xdev_device_type_name(XDEV_DEVICE_CPU), "cpu");
    ck_assert_str_eq(xdev_device_type_name(XDEV_DEVICE_CUDA), "cuda");
    ck_assert_str_eq(xdev_device_type_name(XDEV_DEVICE_HIP), "hip");
    ck_assert_ptr_null(xdev_device_type_name(XDEV_MAX_DEVICE_TYPES));
    ck_assert_ptr_null(xdev_device_type_name((xdev_device_type_t)-1));
    /* types are registered: 3.. have no backend unless one registers */
    XT_OK(xdev_init());
    ck_assert_ptr_null(xdev_device_type_name((xdev_device_type_t)(XDEV_MAX_DEVICE_TYPES - 1)));
    xdev_device_type_t t = XDEV_DEVICE_TYPE_ANY;
    XT_OK(xdev_device_type_find("cpu", &t));
    ck_assert_int_eq(t, XDEV_DEVICE_CPU);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_type_find("bogus", &t), "bogus");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_type_find(NULL, &t), "name");
}
END_TEST

/* ------------------------------------------------------------ counts */
START_TEST(count_and_availability) {
    xdev_device_type_t type = XDEV_MAX_DEVICE_TYPES;
    XT_OK(xdev_default_device_type(&type));
    ck_assert_int_eq(type, xt_type()); /* what XDEV_BACKEND names */
    int count = -1;
    XT_OK(xdev_device_count(xt_type(), &count));
    if (xt_cpu_devices_env() >= 0)
        ck_assert_int_eq(count, xt_cpu_devices_env()); /* 4 under ctest */
    else
        ck_assert_int_ge(count, 1);
    ck_assert(xdev_is_available(xt_type()));
    ck_assert(!xdev_is_available(XDEV_MAX_DEVICE_TYPES));
    ck_assert(!xdev_is_available((xdev_device_type_t)(XDEV_MAX_DEVICE_TYPES - 1)));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_count(xt_type(), NULL), "count");
    XT_ERR(XT_BAD_TYPE, xdev_device_count(XDEV_MAX_DEVICE_TYPES, &count), "type|8");
    XT_ERR(XT_BAD_TYPE, xdev_device_count((xdev_device_type_t)7, &count), "registered");
    /* Types whose backend is absent count 0 (not an error). */
    for (int t = XDEV_DEVICE_CUDA; t <= XDEV_DEVICE_HIP; t++) {
        count = -1;
        XT_OK(xdev_device_count((xdev_device_type_t)t, &count));
        ck_assert_int_ge(count, 0);
        ck_assert(xdev_is_available((xdev_device_type_t)t) == (count > 0));
    }
}
END_TEST

/* ------------------------------------------------------------ current device */
START_TEST(current_device_defaults_and_set) {
    const int n = xt_device_count(), k = xt_wrap(2);
    xdev_device_t d = {XDEV_DEVICE_HIP, -5};
    XT_OK(xdev_get_device(&d));
    XT_DEV_EQ(d, xt_dev(0));
    XT_OK(xdev_set_device(xt_dev(k)));
    XT_OK(xdev_get_device(&d));
    XT_DEV_EQ(d, xt_dev(k));
    ck_assert_int_eq(current_index(), k);

    /* Negative index: no-op (torch). */
    XT_OK(xdev_set_device(xt_dev(-1)));
    ck_assert_int_eq(current_index(), k);
    XT_OK(xdev_set_device(xt_dev(-42)));
    ck_assert_int_eq(current_index(), k);

    /* Past the count. */
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xt_dev(n)), xt_fmt("%d", n));
    ck_assert_int_eq(current_index(), k);
    xdev_device_t bad_type = {(xdev_device_type_t)7, 0};
    XT_ERR(XT_BAD_TYPE, xdev_set_device(bad_type), "type|7");
    ck_assert_int_eq(current_index(), k);
    XT_ERR(XT_BAD_TYPE, xdev_get_device_index((xdev_device_type_t)7, &(int){0}), "type|7");
}
END_TEST

START_TEST(set_device_of_unavailable_type) {
    if (xdev_is_available(XDEV_DEVICE_HIP)) XT_SKIP("a hip backend is available here");
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_DEVICE) | XT_BIT(XDEV_ERROR_BACKEND_UNAVAILABLE),
               xdev_set_device(xdev_hip(0)), "hip");
    ck_assert_int_eq(current_index(), 0);
}
END_TEST

typedef struct {
    int initial;
    int after_set;
    int after_main_changed;
    pthread_barrier_t *barrier;
} thread_dev_t;

static void *device_thread(void *arg) {
    thread_dev_t *t = arg;
    (void)xdev_get_device_index(xt_type(), &t->initial);
    (void)xdev_set_device(xt_dev(3));
    (void)xdev_get_device_index(xt_type(), &t->after_set);
    pthread_barrier_wait(t->barrier); /* main thread now changes its device */
    pthread_barrier_wait(t->barrier);
    (void)xdev_get_device_index(xt_type(), &t->after_main_changed);
    return NULL;
}

START_TEST(current_device_is_per_thread) {
    XT_REQUIRE_DEVICES(4);
    XT_OK(xdev_set_device(xt_dev(2)));
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    thread_dev_t t = {-1, -1, -1, &barrier};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, device_thread, &t), 0);
    pthread_barrier_wait(&barrier);
    ck_assert_int_eq(current_index(), 2); /* thread B set device 3; A still has device 2 */
    XT_OK(xdev_set_device(xt_dev(1)));
    pthread_barrier_wait(&barrier);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&barrier);
    ck_assert_int_eq(t.initial, 0);
    ck_assert_int_eq(t.after_set, 3);
    ck_assert_int_eq(t.after_main_changed, 3);
    ck_assert_int_eq(current_index(), 1);
}
END_TEST

START_TEST(resolve) {
    const int n = xt_device_count(), cur = xt_wrap(3), other = xt_wrap(1);
    xdev_device_t out;
    XT_OK(xdev_set_device(xt_dev(cur)));
    XT_OK(xdev_device_resolve(xt_dev(-1), &out));
    XT_DEV_EQ(out, xt_dev(cur));
    XT_OK(xdev_device_resolve(xt_dev(other), &out));
    XT_DEV_EQ(out, xt_dev(other));
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_resolve(xt_dev(n), &out), xt_fmt("%d", n));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_resolve(xt_dev(0), NULL), "out");
}
END_TEST

/* ------------------------------------------------------------ guards */
START_TEST(guard_restores_and_nests) {
    XT_REQUIRE_DEVICES(4);
    xdev_device_guard_t outer, inner;
    XT_OK(xdev_device_guard_begin(&outer, xt_dev(1)));
    ck_assert_int_eq(current_index(), 1);
    XT_OK(xdev_device_guard_begin(&inner, xt_dev(3)));
    ck_assert_int_eq(current_index(), 3);
    XT_OK(xdev_device_guard_end(&inner));
    ck_assert_int_eq(current_index(), 1);
    XT_OK(xdev_device_guard_end(&outer));
    ck_assert_int_eq(current_index(), 0);

    /* A set_device inside the guard is undone at its end. */
    XT_OK(xdev_device_guard_begin(&outer, xt_dev(2)));
    XT_OK(xdev_set_device(xt_dev(3)));
    XT_OK(xdev_device_guard_end(&outer));
    ck_assert_int_eq(current_index(), 0);
}
END_TEST

START_TEST(guard_negative_index_is_noop) {
    XT_REQUIRE_DEVICES(3);
    xdev_device_guard_t g;
    XT_OK(xdev_set_device(xt_dev(2)));
    XT_OK(xdev_device_guard_begin(&g, xt_dev(-1)));
    ck_assert_int_eq(current_index(), 2);
    XT_OK(xdev_set_device(xt_dev(1)));
    XT_OK(xdev_device_guard_end(&g));
    ck_assert_int_eq(current_index(), 1); /* nothing to restore */
}
END_TEST

START_TEST(guard_rejects) {
    XT_REQUIRE_DEVICES(3);
    const int n = xt_device_count();
    xdev_device_guard_t g;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_guard_begin(NULL, xt_dev(1)), "guard");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_guard_end(NULL), "guard");
    XT_OK(xdev_set_device(xt_dev(2)));
    /* Garbage a failed begin must overwrite (XDEV_DEVICE_SCOPE ends it regardless). */
    g.previous = xt_dev(1);
    g.active = true;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_guard_begin(&g, xt_dev(n)), xt_fmt("%d", n));
    ck_assert_int_eq(current_index(), 2);
    (void)xdev_device_guard_end(&g); /* a failed begin leaves nothing to restore */
    ck_assert_int_eq(current_index(), 2);
}
END_TEST

#if defined(__GNUC__)
static int scope_helper(int mode) {
    XDEV_DEVICE_SCOPE(xt_dev(3));
    int inside = current_index();
    if (mode == 1) return inside; /* early return */
    for (int i = 0; i < 3; i++) {
        XDEV_DEVICE_SCOPE(xt_dev(i));
        if (current_index() != i) return -1;
        if (i == 1) break; /* leaves the inner scope */
    }
    if (current_index() != 3) return -2;
    if (mode == 2) goto out;
    inside = 100 + current_index();
out:
    return inside;
}

START_TEST(scope_macro_restores_on_any_exit) {
    XT_REQUIRE_DEVICES(4);
    XT_OK(xdev_set_device(xt_dev(1)));
    ck_assert_int_eq(scope_helper(1), 3);
    ck_assert_int_eq(current_index(), 1);
    ck_assert_int_eq(scope_helper(2), 3);
    ck_assert_int_eq(current_index(), 1);
    ck_assert_int_eq(scope_helper(0), 103);
    ck_assert_int_eq(current_index(), 1);
    {
        XDEV_DEVICE_SCOPE(xt_dev(-1)); /* no-op scope */
        ck_assert_int_eq(current_index(), 1);
        XT_OK(xdev_set_device(xt_dev(2)));
    }
    ck_assert_int_eq(current_index(), 2);
}
END_TEST
#endif

static int with_device_inner(void) {
    int seen = -1;
    XDEV_WITH_DEVICE(xt_dev(3)) {
        seen = current_index();
    }
    return seen;
}

START_TEST(with_device_macro) {
    XT_REQUIRE_DEVICES(4);
    int seen = -1, nested = -1, after_nested = -1;
    XDEV_WITH_DEVICE(xt_dev(2)) {
        seen = current_index();
        nested = with_device_inner();
        after_nested = current_index();
    }
    ck_assert_int_eq(seen, 2);
    ck_assert_int_eq(nested, 3);
    ck_assert_int_eq(after_nested, 2);
    ck_assert_int_eq(current_index(), 0);
}
END_TEST

/* ------------------------------------------------------------ properties */
START_TEST(properties) {
    const int n = xt_device_count(), k = xt_wrap(2);
    if (xt_cpu_devices_env() >= 0) ck_assert_int_eq(n, xt_cpu_devices_env());
    for (int i = 0; i < n; i++) {
        xdev_device_properties_t p;
        memset(&p, 0x5a, sizeof p);
        XT_OK(xdev_get_device_properties(xt_dev(i), &p));
        ck_assert_msg(memchr(p.name, '\0', sizeof p.name) != NULL, "name not NUL-terminated");
        ck_assert_msg(p.name[0] != '\0', "%s has an empty name", xt_name(i));
        ck_assert_uint_gt(p.total_memory, 0);
        ck_assert_int_ge(p.multiprocessor_count, 1);
        ck_assert_int_eq(p.physical_index, i);
        if (xt_type() == XDEV_DEVICE_CPU) {
            ck_assert_int_eq(p.capability_major, 0);
            ck_assert_int_eq(p.capability_minor, 0);
            ck_assert(p.integrated);
        } else {
            ck_assert_int_gt(p.capability_major, 0);
            ck_assert_int_ge(p.capability_minor, 0);
        }
    }
    xdev_device_properties_t p;
    XT_OK(xdev_set_device(xt_dev(k)));
    XT_OK(xdev_get_device_properties(xt_dev(-1), &p));
    ck_assert_int_eq(p.physical_index, k);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_device_properties(xt_dev(0), NULL), "props");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_get_device_properties(xt_dev(n), &p), xt_fmt("%d", n));
}
END_TEST

START_TEST(memory_info_matches_properties) {
    xdev_device_properties_t p;
    size_t free_b = 0, total_b = 0;
    XT_OK(xdev_get_device_properties(xt_dev(xt_wrap(1)), &p));
    XT_OK(xdev_mem_get_info(xt_dev(xt_wrap(1)), &free_b, &total_b));
    ck_assert_uint_eq(total_b, p.total_memory);
    ck_assert_uint_le(free_b, total_b);
}
END_TEST

START_TEST(synchronize_calls) {
    const int n = xt_device_count();
    XT_OK(xdev_device_synchronize(xt_dev(xt_wrap(1))));
    XT_OK(xdev_device_synchronize(xt_dev(-1)));
    XT_OK(xdev_synchronize());
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_synchronize(xt_dev(n)), xt_fmt("%d", n));
}
END_TEST

START_TEST(peer_access) {
    XT_REQUIRE_DEVICES(2);
    const int n = xt_device_count(); /* past the count: n and n + 5 */
    bool can = false;
    XT_OK(xdev_device_can_access_peer(xt_dev(0), xt_dev(1), &can));
    ck_assert(!xdev_device_peer_enabled(xt_dev(0), xt_dev(1)));
    if (can) {
        XT_OK(xdev_device_enable_peer_access(xt_dev(0), xt_dev(1)));
        ck_assert(xdev_device_peer_enabled(xt_dev(0), xt_dev(1)));
        XT_OK(xdev_device_enable_peer_access(xt_dev(0), xt_dev(1))); /* idempotent */
        ck_assert(xdev_device_peer_enabled(xt_dev(0), xt_dev(1)));
        /* Direction matters; other pairs untouched. */
        ck_assert(!xdev_device_peer_enabled(xt_dev(1), xt_dev(0)));
        ck_assert(!xdev_device_peer_enabled(xt_dev(0), xt_dev(2)));
    } else {
        ck_assert(xdev_device_enable_peer_access(xt_dev(0), xt_dev(1)) != XDEV_SUCCESS);
    }
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_can_access_peer(xt_dev(0), xt_dev(1), NULL),
           "out");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_can_access_peer(xt_dev(0), xt_dev(n), &can),
           xt_fmt("%d", n));
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_can_access_peer(xt_dev(n + 5), xt_dev(0), &can),
           xt_fmt("%d", n + 5));
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_enable_peer_access(xt_dev(0), xt_dev(n)),
           xt_fmt("%d", n));
    ck_assert(!xdev_device_peer_enabled(xt_dev(0), xt_dev(n)));
}
END_TEST

/* ------------------------------------------------------------ XDEV_VISIBLE_DEVICES=3,1
 * It selects and renumbers accelerators (as CUDA_VISIBLE_DEVICES); the CPU
 * devices are the XDEV_CPU_DEVICES ones, never renumbered. */
START_TEST(visible_devices_renumber) {
    int count = -1;
    if (xt_type() == XDEV_DEVICE_CPU) {
        XT_OK(xdev_device_count(XDEV_DEVICE_CPU, &count));
        ck_assert_int_eq(count, xt_cpu_devices_env());
        for (int i = 0; i < count; i++) {
            xdev_device_properties_t p;
            XT_OK(xdev_get_device_properties(xdev_cpu(i), &p));
            ck_assert_int_eq(p.physical_index, i);
        }
        return; /* nothing of the CPU is renumbered: the rest is for accelerators */
    }
    xdev_status_t st = xdev_device_count(xt_type(), &count);
    /* With fewer than 2 physical GPUs, 3,1 selects none: xdev cannot initialise. */
    if (st == XDEV_ERROR_BACKEND_UNAVAILABLE)
        XT_SKIP("XDEV_VISIBLE_DEVICES=3,1 selects no %s device here: %s", xt_type_name(),
                xdev_last_error());
    XT_OK(st);
    /* 3,1 selects two of 4 physical devices; with fewer, only index 1 (or
     * none) survives. */
    if (count < 2)
        XT_SKIP("XDEV_VISIBLE_DEVICES=3,1 needs 4 physical %s devices; %d of them visible",
                xt_type_name(), count);
    ck_assert_int_eq(count, 2);
    xdev_device_properties_t p;
    XT_OK(xdev_get_device_properties(xt_dev(0), &p));
    ck_assert_int_eq(p.physical_index, 3);
    XT_OK(xdev_get_device_properties(xt_dev(1), &p));
    ck_assert_int_eq(p.physical_index, 1);
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xt_dev(2)), "2");
    XT_OK(xdev_set_device(xt_dev(1)));
    /* Memory lands on the visible device; device_of reports the visible index. */
    void *p1 = NULL;
    XT_OK(xdev_malloc(&p1, 64));
    xdev_device_t d;
    XT_OK(xdev_device_of(p1, &d));
    XT_DEV_EQ(d, xt_dev(1));
    XT_OK(xdev_free(p1));
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(1), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_get_device(s, &d));
    XT_DEV_EQ(d, xt_dev(1));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* ------------------------------------------------------------ XDEV_CPU_MEMORY=64M */
START_TEST(cpu_memory_env) {
    XT_REQUIRE_CPU();
    for (int i = 0; i < 4; i++) {
        xdev_device_properties_t p;
        XT_OK(xdev_get_device_properties(xdev_cpu(i), &p));
        ck_assert_uint_eq(p.total_memory, (size_t)64 << 20);
        size_t free_b = 0, total_b = 0;
        XT_OK(xdev_mem_get_info(xdev_cpu(i), &free_b, &total_b));
        ck_assert_uint_eq(total_b, (size_t)64 << 20);
        ck_assert_uint_le(free_b, total_b);
    }
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("names");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, parse_valid);
    tcase_add_test(tc, parse_rejects_malformed);
    tcase_add_test(tc, parse_messages_say_what_is_wrong);
    tcase_add_test(tc, parse_null_args);
    tcase_add_test(tc, format_and_round_trip);
    tcase_add_test(tc, format_rejects);
    tcase_add_test(tc, type_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("current");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, count_and_availability);
    tcase_add_test(tc, current_device_defaults_and_set);
    tcase_add_test(tc, set_device_of_unavailable_type);
    tcase_add_test(tc, current_device_is_per_thread);
    tcase_add_test(tc, resolve);
    tcase_add_test(tc, guard_restores_and_nests);
    tcase_add_test(tc, guard_negative_index_is_noop);
    tcase_add_test(tc, guard_rejects);
#if defined(__GNUC__)
    tcase_add_test(tc, scope_macro_restores_on_any_exit);
#endif
    tcase_add_test(tc, with_device_macro);
    suite_add_tcase(s, tc);

    tc = tcase_create("properties");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, properties);
    tcase_add_test(tc, memory_info_matches_properties);
    tcase_add_test(tc, synchronize_calls);
    tcase_add_test(tc, peer_access);
    suite_add_tcase(s, tc);

    Suite *vis = suite_create("visible");
    tc = tcase_create("visible");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, visible_devices_renumber);
    suite_add_tcase(vis, tc);

    Suite *mem = suite_create("cpu_memory");
    tc = tcase_create("cpu_memory");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cpu_memory_env);
    suite_add_tcase(mem, tc);

    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, vis);
    srunner_add_suite(sr, mem);
    return xt_run(sr, "device", argc, argv);
}
