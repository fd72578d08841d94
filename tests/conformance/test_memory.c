/* SPDX-License-Identifier: Apache-2.0 */
/* test_memory.c - malloc/free, the pointer registry, copies, memset, OOM.
 *
 * Suites: memory  conformance: XDEV_BACKEND=<backend under test> (cpu: XDEV_CPU_DEVICES=4)
 *         oom     (XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_CPU_MEMORY=1048576)
 *         oom_raw (the same plus XDEV_NO_MEMORY_CACHING=1: exact accounting)
 * Device memory is read with xt_peek (host-addressable only on the CPU). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define PTR_NEEDLE "ptr|pointer"

static void setup(void) {
    xt_reset_state();
}

static void *dev_alloc(int device, size_t n) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(device), &p, n));
    ck_assert_ptr_nonnull(p);
    return p;
}

static void fill(unsigned char *buf, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        buf[i] = (unsigned char)(seed >> 24);
    }
}

START_TEST(malloc_on_current_device) {
    const int k = xt_wrap(2), k3 = xt_wrap(3);
    void *p = NULL;
    XT_OK(xdev_malloc(&p, 1024));
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % _Alignof(max_align_t), 0);
    xdev_device_t d;
    XT_OK(xdev_device_of(p, &d));
    XT_DEV_EQ(d, xt_dev(0));

    XT_OK(xdev_set_device(xt_dev(k)));
    void *q = NULL;
    XT_OK(xdev_malloc(&q, 1000));
    XT_OK(xdev_device_of(q, &d));
    XT_DEV_EQ(d, xt_dev(k));
    XT_OK(xdev_device_of((char *)q + 999, &d)); /* interior pointer */
    XT_DEV_EQ(d, xt_dev(k));
    XT_OK(xdev_device_of((char *)q + 500, &d));
    XT_DEV_EQ(d, xt_dev(k));

    void *r = NULL;
    XT_OK(xdev_malloc_device(xt_dev(-1), &r, 64));
    XT_OK(xdev_device_of(r, &d));
    XT_DEV_EQ(d, xt_dev(k));
    void *r3 = dev_alloc(k3, 64);
    XT_OK(xdev_device_of(r3, &d));
    XT_DEV_EQ(d, xt_dev(k3));

    XT_OK(xdev_free(p));
    XT_OK(xdev_free(q));
    XT_OK(xdev_free(r));
    XT_OK(xdev_free(r3));
}
END_TEST

START_TEST(malloc_zero_and_bad_args) {
    const int n = xt_device_count();
    void *p = (void *)0x1;
    XT_OK(xdev_malloc(&p, 0));
    ck_assert_ptr_null(p);
    p = (void *)0x1;
    XT_OK(xdev_malloc_device(xt_dev(xt_wrap(1)), &p, 0));
    ck_assert_ptr_null(p);
    p = (void *)0x1;
    XT_OK(xdev_host_alloc(&p, 0));
    ck_assert_ptr_null(p);
    XT_OK(xdev_free(NULL));
    XT_OK(xdev_host_free(NULL));

    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_malloc(NULL, 16), PTR_NEEDLE);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_malloc_device(xt_dev(0), NULL, 16), PTR_NEEDLE);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_alloc(NULL, 16), PTR_NEEDLE);
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_malloc_device(xt_dev(n), &p, 16), xt_fmt("%d", n));
}
END_TEST

START_TEST(bad_frees_keep_library_working) {
    const int dev = xt_wrap(1);
    void *p = dev_alloc(dev, 256);
    /* Interior pointer. */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free((char *)p + 16), PTR_NEEDLE);
    /* Foreign pointers: stack and libc heap. */
    int local = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(&local), PTR_NEEDLE);
    void *libc = malloc(64);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(libc), PTR_NEEDLE);
    free(libc);
    /* Pinned memory is not device memory. */
    void *h = NULL;
    XT_OK(xdev_host_alloc(&h, 128));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(h), PTR_NEEDLE);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_free(p), PTR_NEEDLE);

    /* The real owner still works, once. */
    XT_OK(xdev_free(p));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(p), PTR_NEEDLE); /* double free */
    XT_OK(xdev_host_free(h));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_free(h), PTR_NEEDLE);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_free(&local), PTR_NEEDLE);

    /* Still usable afterwards. */
    void *q = dev_alloc(dev, 256);
    unsigned char in[256], out[256];
    fill(in, sizeof in, 7);
    XT_OK(xdev_memcpy(q, in, sizeof in));
    XT_OK(xdev_memcpy(out, q, sizeof out));
    ck_assert_mem_eq(in, out, sizeof in);
    XT_OK(xdev_free(q));
}
END_TEST

START_TEST(pointer_info_kinds) {
    const int index = xt_wrap(2);
    void *d = dev_alloc(index, 1000);
    void *h = NULL;
    XT_OK(xdev_host_alloc(&h, 300));
    ck_assert_ptr_nonnull(h);
    int local = 0;
    xdev_pointer_info_t info;

    XT_OK(xdev_pointer_get_info((char *)d + 10, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    XT_DEV_EQ(info.device, xt_dev(index));
    ck_assert_ptr_eq(info.base, d);
    ck_assert_uint_ge(info.size, 1000); /* an allocator may round up */

    XT_OK(xdev_pointer_get_info((char *)h + 299, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_PINNED_HOST);
    XT_DEV_EQ(info.device, xt_dev(0)); /* the default backend's device 0 */
    ck_assert_ptr_eq(info.base, h);
    ck_assert_uint_ge(info.size, 300);

    XT_OK(xdev_pointer_get_info(&local, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
    ck_assert_ptr_null(info.base);

    xdev_device_t dev;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_of(&local, &dev), PTR_NEEDLE);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_of(h, &dev), PTR_NEEDLE);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_of(d, NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_pointer_get_info(d, NULL), "out");

    /* (What a freed pointer reads as depends on caching: see raw_free_forgets.) */
    XT_OK(xdev_free(d));
    XT_OK(xdev_host_free(h));
}
END_TEST

START_TEST(memcpy_all_directions) {
    const size_t n = (size_t)1 << 20;
    unsigned char *src = malloc(n), *dst = malloc(n);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(dst);
    fill(src, n, 1);
    /* d1 on device 1 and d3 on another (3 on the CPU's 4) when there are two */
    const int count = xt_device_count(), one = xt_wrap(1);
    const int three = count < 2 ? 0 : count > 3 ? 3 : (one + 1) % count;
    if (count < 2) (void)xt_has_devices(__func__, 2, "the copy across devices");
    void *d1 = dev_alloc(one, n), *d1b = dev_alloc(one, n), *d3 = dev_alloc(three, n);
    void *pin = NULL;
    XT_OK(xdev_host_alloc(&pin, n));

    XT_OK(xdev_memcpy(d1, src, n));  /* H2D */
    XT_OK(xdev_memcpy(d1b, d1, n));  /* D2D, same device */
    XT_OK(xdev_memcpy(d3, d1b, n));  /* D2D across devices (always allowed) */
    XT_OK(xdev_memcpy(pin, d3, n));  /* D2H pinned */
    XT_OK(xdev_memcpy(dst, pin, n)); /* H2H */
    ck_assert_int_eq(memcmp(src, dst, n), 0);

    /* Offsets inside allocations. */
    memset(dst, 0, n);
    XT_OK(xdev_memcpy((char *)d3 + 100, src + 7, 1000));
    XT_OK(xdev_memcpy(dst, (char *)d3 + 100, 1000));
    ck_assert_int_eq(memcmp(dst, src + 7, 1000), 0);

    XT_OK(xdev_memcpy(d1, src, 0));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(NULL, src, 16), "dst");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(d1, NULL, 16), "src");

    XT_OK(xdev_free(d1));
    XT_OK(xdev_free(d1b));
    XT_OK(xdev_free(d3));
    XT_OK(xdev_host_free(pin));
    free(src);
    free(dst);
}
END_TEST

START_TEST(memcpy_async_is_stream_ordered) {
    const size_t n = 4096;
    const int dev = xt_wrap(1);
    unsigned char *src = malloc(n), *out = malloc(n);
    fill(src, n, 3);
    unsigned char *d = dev_alloc(dev, n);
    memset(out, 0, n);
    XT_OK(xdev_memcpy(d, out, n)); /* zero it */
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(dev), XDEV_STREAM_PRIORITY_NORMAL, &s));
    xt_gate_t gate;
    xt_gate_init(&gate);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_memcpy_async(d, src, n, s));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    xt_sleep_ms(20);
    /* The copy must not have run yet (xt_peek does not wait for s). */
    xt_peek(out, d, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(out[i] == 0, "memcpy_async ran before earlier work on its stream");
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(s));
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy(out, d, n));
    ck_assert_int_eq(memcmp(out, src, n), 0);

    /* D2H and D2D async, then memset_async, all on s. */
    unsigned char *d2 = dev_alloc(dev, n);
    unsigned char *back = malloc(n);
    XT_OK(xdev_memcpy_async(d2, d, n, s));
    XT_OK(xdev_memset_async(d, 0x1ab, n / 2, s)); /* (unsigned char)0x1ab = 0xab */
    XT_OK(xdev_memcpy_async(back, d, n, s));
    XT_OK(xdev_stream_synchronize(s));
    for (size_t i = 0; i < n / 2; i++)
        ck_assert_msg(back[i] == 0xab, "memset byte %zu = %#x", i, back[i]);
    ck_assert_int_eq(memcmp(back + n / 2, src + n / 2, n / 2), 0);
    XT_OK(xdev_memcpy(out, d2, n));
    ck_assert_int_eq(memcmp(out, src, n), 0);

    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(d));
    XT_OK(xdev_free(d2));
    free(src);
    free(out);
    free(back);
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(async_null_stream_is_current_of_device_side) {
    XT_REQUIRE_DEVICES(2);
    const int side = xt_wrap(2) == 0 ? 1 : xt_wrap(2); /* 2, or 1 on two devices */
    const size_t n = 256;
    unsigned char src[256], out[256];
    fill(src, n, 11);
    unsigned char *d = dev_alloc(side, n);
    memset(out, 0, n);
    XT_OK(xdev_memcpy(d, out, n));
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(side), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_set_current(s));
    XT_OK(xdev_set_device(xt_dev(0))); /* the device side decides, not the current device */
    xt_gate_t gate;
    xt_gate_init(&gate);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_memcpy_async(d, src, n, NULL));
    XT_OK(xdev_memset_async(d + 200, 0x5c, 56, NULL));
    ck_assert(xt_gate_wait_entered(&gate, 10000));
    xt_sleep_ms(20);
    xt_peek(out, d, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(out[i] == 0, "async op with NULL stream did not use %s's current stream",
                      xt_name(side));
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy(out, d, n));
    ck_assert_int_eq(memcmp(out, src, 200), 0);
    for (size_t i = 200; i < n; i++)
        ck_assert_uint_eq(out[i], 0x5c);
    xt_reset_state();
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(d));
    xt_gate_destroy(&gate);
}
END_TEST

START_TEST(async_rejects) {
    XT_REQUIRE_DEVICES(2);
    unsigned char host[64];
    void *d1 = dev_alloc(1, 64);
    xdev_stream_t s2; /* on device 2, or 0 on two devices */
    XT_OK(xdev_stream_create(xt_dev(xt_wrap(2)), XDEV_STREAM_PRIORITY_NORMAL, &s2));
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_CROSS_DEVICE),
               xdev_memcpy_async(d1, host, 64, s2), "stream|device");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(host, 0, 64, NULL), "dst");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(NULL, 0, 64, NULL), "dst");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy_async(NULL, host, 64, NULL), "dst");
    XT_OK(xdev_stream_destroy(s2));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_memcpy_async(d1, host, 64, s2), "stream|handle");
    XT_OK(xdev_free(d1));
}
END_TEST

START_TEST(host_alloc_usable) {
    unsigned char *h = NULL;
    XT_OK(xdev_host_alloc((void **)&h, 1 << 16));
    ck_assert_ptr_nonnull(h);
    for (size_t i = 0; i < (1 << 16); i++)
        h[i] = (unsigned char)i;
    for (size_t i = 0; i < (1 << 16); i++)
        ck_assert_uint_eq(h[i], (unsigned char)i);
    XT_OK(xdev_host_free(h));
}
END_TEST

START_TEST(mem_get_info_bad_args) {
    const int n = xt_device_count();
    size_t f, t;
    XT_OK(xdev_mem_get_info(xt_dev(xt_wrap(3)), &f, &t));
    ck_assert_uint_le(f, t);
    ck_assert_uint_gt(t, 0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_get_info(xt_dev(0), NULL, &t), "free");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_mem_get_info(xt_dev(0), &f, NULL), "total");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_mem_get_info(xt_dev(n), &f, &t), xt_fmt("%d", n));
}
END_TEST

/* ------------------------------------------------------------ XDEV_CPU_MEMORY=1 MiB */
START_TEST(oom_with_message) {
    XT_REQUIRE_CPU();
    size_t free0 = 0, total = 0;
    XT_OK(xdev_mem_get_info(xdev_cpu(0), &free0, &total));
    ck_assert_uint_eq(total, (size_t)1 << 20);
    ck_assert_uint_le(free0, total);
    void *p = NULL;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc(&p, (size_t)2 << 20),
           "2097152|2.00 MiB|2.0 MiB|2 MiB|2MiB", "cpu");
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xdev_cpu(1), &p, (size_t)3 << 20),
           "3145728|3.00 MiB|3.0 MiB|3 MiB|3MiB", "cpu");
    /* The library keeps working after an OOM. */
    XT_OK(xdev_mem_get_info(xdev_cpu(0), &free0, &total));
    ck_assert_uint_le(free0, total);
}
END_TEST

/* With XDEV_NO_MEMORY_CACHING=1: the raw allocator enforces the capacity. */
START_TEST(oom_raw_accounting) {
    XT_REQUIRE_CPU();
    size_t free0 = 0, total = 0;
    XT_OK(xdev_mem_get_info(xdev_cpu(0), &free0, &total));
    ck_assert_uint_eq(total, (size_t)1 << 20);
    ck_assert_uint_le(free0, total);

    void *q = NULL;
    XT_OK(xdev_malloc(&q, (size_t)256 << 10));
    size_t free1 = 0;
    XT_OK(xdev_mem_get_info(xdev_cpu(0), &free1, &total));
    ck_assert_msg(free1 + ((size_t)256 << 10) <= free0, "free went from %zu to %zu after 256 KiB",
                  free0, free1);
    XT_OK(xdev_free(q));
}
END_TEST

START_TEST(oom_exhaust_and_recover) {
    XT_REQUIRE_CPU();
    enum { MAX = 64 };
    void *blocks[MAX];
    int n = 0;
    xdev_status_t st = XDEV_SUCCESS;
    while (n < MAX) {
        st = xdev_malloc_device(xdev_cpu(0), &blocks[n], (size_t)64 << 10);
        if (st != XDEV_SUCCESS) break;
        n++;
    }
    ck_assert_msg(st == XDEV_ERROR_OUT_OF_MEMORY, "64 KiB allocations: got %s after %d",
                  xdev_status_string(st), n);
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, 16);
    ck_assert(xdev_last_error()[0] != '\0');

    /* The other device has its own capacity. */
    void *other = NULL;
    XT_OK(xdev_malloc_device(xdev_cpu(1), &other, (size_t)512 << 10));
    XT_OK(xdev_free(other));

    for (int i = 0; i < n; i++)
        XT_OK(xdev_free(blocks[i]));
    void *big = NULL;
    XT_OK(xdev_malloc_device(xdev_cpu(0), &big, (size_t)512 << 10));
    XT_OK(xdev_free(big));
}
END_TEST

/* Without caching, freed device memory goes back to the backend and xdev
 * forgets it: it reads as host memory again. */
START_TEST(raw_free_forgets) {
    void *d = dev_alloc(xt_wrap(1), 4096);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(d, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    ck_assert_uint_eq(info.size, 4096);
    XT_OK(xdev_free(d));
    XT_OK(xdev_pointer_get_info(d, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
    xdev_device_t dev;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_of(d, &dev), PTR_NEEDLE);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, malloc_on_current_device);
    tcase_add_test(tc, malloc_zero_and_bad_args);
    tcase_add_test(tc, bad_frees_keep_library_working);
    tcase_add_test(tc, pointer_info_kinds);
    tcase_add_test(tc, memcpy_all_directions);
    tcase_add_test(tc, memcpy_async_is_stream_ordered);
    tcase_add_test(tc, async_null_stream_is_current_of_device_side);
    tcase_add_test(tc, async_rejects);
    tcase_add_test(tc, host_alloc_usable);
    tcase_add_test(tc, mem_get_info_bad_args);
    suite_add_tcase(s, tc);

    Suite *oom = suite_create("oom");
    tc = tcase_create("oom");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, oom_with_message);
    suite_add_tcase(oom, tc);

    Suite *oom_raw = suite_create("oom_raw");
    tc = tcase_create("oom_raw");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, oom_with_message);
    tcase_add_test(tc, oom_raw_accounting);
    tcase_add_test(tc, oom_exhaust_and_recover);
    tcase_add_test(tc, raw_free_forgets);
    suite_add_tcase(oom_raw, tc);

    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, oom);
    srunner_add_suite(sr, oom_raw);
    return xt_run(sr, "memory", argc, argv);
}
