/* SPDX-License-Identifier: Apache-2.0 */
/* test_alloc_expandable.c - expandable segments
 * (XDEV_ALLOC_CONF=expandable_segments:true) on the backend under test: a
 * stream's pool grows one segment in place, a unit of the backend's mapping
 * granularity at a time, joining the new memory to the free block at its
 * end; data already there survives growth; empty_cache unmaps the free tail
 * and drops a segment left empty; each stream has its own segment (a block
 * is never handed to another stream); the memory fraction caps growth and
 * out of memory shrinks other streams' segments and retries; IPC refuses the
 * memory. Conformance entry allocator.expandable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define MIB ((size_t)1 << 20)

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
    XT_OK(xdev_empty_cache());
    /* A backend without virtual memory refuses expandable segments here; its
     * skip list names the suite, and each test then skips with that reason. */
    xdev_status_t st = xdev_set_per_process_memory_fraction(1.0, xt_dev(0));
    if (st != XDEV_ERROR_NOT_SUPPORTED) XT_OK(st);
}

static int64_t reserved_large(void) {
    return xt_mem_stats(0).reserved_bytes[XDEV_STAT_LARGE_POOL].current;
}

static int64_t segments(void) {
    return xt_mem_stats(0).segment[XDEV_STAT_ALL].current;
}

/* The mapping unit, seen as what a first 1.5 MiB request maps (every
 * backend's granularity is at least that: 2 MiB on CUDA and the CPU). */
static size_t unit_of(xdev_stream_t s) {
    void *p = NULL;
    XT_OK(xdev_malloc_stream(&p, 3 * MIB / 2, s));
    size_t g = (size_t)reserved_large();
    XT_OK(xdev_free(p));
    ck_assert_uint_ge(g, 3 * MIB / 2);
    ck_assert_uint_eq(g & (g - 1), 0);
    return g;
}

START_TEST(grows_in_place) {
    xdev_stream_t s = xt_new_stream(0);
    size_t g = unit_of(s);
    ck_assert_int_eq(segments(), 1);
    /* g + 1 MiB: the free g-byte tail plus one more unit, not a new segment */
    int64_t maps = xt_mem_stats(0).num_device_alloc;
    void *p = NULL;
    XT_OK(xdev_malloc_stream(&p, g + MIB, s));
    ck_assert_int_eq(reserved_large(), (int64_t)(2 * g));
    ck_assert_int_eq(segments(), 1);
    ck_assert_int_eq(xt_mem_stats(0).num_device_alloc, maps + 1); /* one more map */
    /* the snapshot shows one large segment of 2g bytes */
    char *json = NULL;
    XT_OK(xdev_memory_snapshot(&json));
    char want[96];
    snprintf(want, sizeof want, "\"total_size\":%zu", 2 * g);
    ck_assert_msg(strstr(json, want) != NULL, "no segment of %zu bytes in %s", 2 * g, json);
    ck_assert_msg(strstr(json, "\"is_expandable\":true") != NULL, "%s", json);
    ck_assert(strstr(json, "\"is_expandable\":false") == NULL);
    free(json);
    XT_OK(xdev_free(p));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* Bytes written before the segment grows read back the same after. */
START_TEST(data_survives_growth) {
    xdev_stream_t s = xt_new_stream(0);
    size_t g = unit_of(s);
    void *a = NULL, *b = NULL;
    XT_OK(xdev_malloc_stream(&a, g, s));
    unsigned char *host = malloc(g), *back = malloc(g);
    ck_assert_ptr_nonnull(host);
    ck_assert_ptr_nonnull(back);
    for (size_t i = 0; i < g; i++)
        host[i] = (unsigned char)(i * 131 + 7);
    XT_OK(xdev_memcpy(a, host, g));
    XT_OK(xdev_malloc_stream(&b, 4 * g, s)); /* grows by 4 units after a */
    ck_assert_int_eq(segments(), 1);
    ck_assert_uint_eq((uintptr_t)b, (uintptr_t)a + g); /* one address range */
    XT_OK(xdev_memset_async(b, 0x5a, 4 * g, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy(back, a, g));
    ck_assert_int_eq(memcmp(host, back, g), 0);
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    free(host);
    free(back);
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(empty_cache_unmaps_the_free_tail) {
    xdev_stream_t s = xt_new_stream(0);
    size_t g = unit_of(s);
    void *a = NULL, *b = NULL;
    XT_OK(xdev_malloc_stream(&a, g, s));
    XT_OK(xdev_malloc_stream(&b, 3 * g, s));
    ck_assert_int_eq(reserved_large(), (int64_t)(4 * g));
    XT_OK(xdev_free(b));
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(reserved_large(), (int64_t)g); /* a's unit stays */
    unsigned char v = 0x33, r = 0;
    XT_OK(xdev_memset_async(a, v, g, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy(&r, (char *)a + g - 1, 1));
    ck_assert_uint_eq(r, v);
    XT_OK(xdev_free(a));
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(reserved_large(), 0);
    ck_assert_int_eq(segments(), 0);
    size_t reserved = 1;
    XT_OK(xdev_memory_reserved(xt_dev(0), &reserved));
    ck_assert_uint_eq(reserved, 0);
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* Each stream grows its own segment: a block freed on s1 is never s2's. */
START_TEST(streams_have_their_own_segment) {
    xdev_stream_t s1 = xt_new_stream(0), s2 = xt_new_stream(0);
    size_t g = unit_of(s1);
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_stream(&p, g, s1));
    XT_OK(xdev_free(p));
    XT_OK(xdev_malloc_stream(&q, g, s2));
    ck_assert_ptr_ne(p, q);
    ck_assert_int_eq(segments(), 2);
    void *small = NULL; /* the small pool has its own segment too */
    XT_OK(xdev_malloc_stream(&small, 4096, s2));
    ck_assert_int_eq(segments(), 3);
    XT_OK(xdev_free(small));
    XT_OK(xdev_free(q));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
}
END_TEST

/* Growth counts against the memory fraction; out of memory shrinks the
 * other stream's cached tail and retries. */
START_TEST(fraction_caps_growth_and_oom_shrinks) {
    xdev_stream_t s1 = xt_new_stream(0), s2 = xt_new_stream(0);
    size_t g = unit_of(s1);
    XT_OK(xdev_empty_cache());
    size_t free_b = 0, total = 0;
    XT_OK(xdev_mem_get_info(xt_dev(0), &free_b, &total));
    size_t cap = 8 * g;
    XT_OK(xdev_set_per_process_memory_fraction((double)cap / (double)total, xt_dev(0)));
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc_stream(&p, 5 * g, s1));
    ck_assert_int_eq(xdev_malloc_stream(&q, 9 * g, s2), XDEV_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_null(q);
    XT_OK(xdev_free(p)); /* s1 keeps 5 units mapped */
    int64_t retries = xt_mem_stats(0).num_alloc_retries;
    XT_OK(xdev_malloc_stream(&q, 6 * g, s2)); /* 5 + 6 > 8: s1's tail goes first */
    ck_assert_int_eq(xt_mem_stats(0).num_alloc_retries, retries + 1);
    ck_assert_int_le(reserved_large(), (int64_t)cap);
    XT_OK(xdev_free(q));
    XT_OK(xdev_set_per_process_memory_fraction(1.0, xt_dev(0)));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
}
END_TEST

START_TEST(ipc_refuses_expandable_memory) {
    void *p = NULL;
    XT_OK(xdev_malloc(&p, 3 * MIB));
    xdev_ipc_mem_handle_t h;
    ck_assert_int_eq(xdev_ipc_get_mem_handle(p, &h), XDEV_ERROR_NOT_SUPPORTED);
    ck_assert_msg(strstr(xdev_last_error(), "expandable") != NULL, "%s", xdev_last_error());
    XT_OK(xdev_free(p));
}
END_TEST

int main(int argc, char **argv) {
    Suite *su = suite_create("alloc_expandable");
    TCase *tc = tcase_create("expandable");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, grows_in_place);
    tcase_add_test(tc, data_survives_growth);
    tcase_add_test(tc, empty_cache_unmaps_the_free_tail);
    tcase_add_test(tc, streams_have_their_own_segment);
    tcase_add_test(tc, fraction_caps_growth_and_oom_shrinks);
    tcase_add_test(tc, ipc_refuses_expandable_memory);
    suite_add_tcase(su, tc);
    return xt_run(srunner_create(su), "alloc_expandable", argc, argv);
}
