/* SPDX-License-Identifier: Apache-2.0 */
/* test_names.c - the deprecated names of the naming rule (xdev/xdev.h): each
 * old spelling still compiles and means its new name, until the next major
 * version; a file that defines the old XPH_FN / XCV_FN override before the
 * include still gets it. Our own code uses only the new names. */
#define XPH_FN static inline __attribute__((unused)) /* the old override spellings */
#define XCV_FN static inline __attribute__((unused))
#include "xdev/support/convert.h"
#include "xdev/support/philox.h"

#include <stdint.h>
#include <string.h>

#include "xdev/xdev.h"
#include "xt.h"

#define STR2(x) #x
#define STR(x) STR2(x)
#define SAME_TYPE(a, b) _Generic((a *)0, b * : 1, default : 0)
typedef void (*fn_t)(void);
#define FN(f) ((fn_t)(f))

START_TEST(communicator_aliases) {
    ck_assert(SAME_TYPE(xdev_comm_t, xdev_communicator_t));
    ck_assert(SAME_TYPE(xdev_comm_id_t, xdev_communicator_id_t));
    ck_assert_int_eq(XDEV_COMM_ID_BYTES, XDEV_COMMUNICATOR_ID_BYTES);
    ck_assert_int_eq(sizeof(xdev_comm_id_t), XDEV_COMMUNICATOR_ID_BYTES);
    /* a one-rank group on cpu:0 through the old names only */
    xdev_device_t dev = xdev_cpu(0), got = {XDEV_DEVICE_CUDA, -1};
    xdev_comm_t comm = NULL;
    XT_OK(xdev_comm_init_all(&comm, 1, &dev));
    int rank = -1, size = -1;
    XT_OK(xdev_comm_rank(comm, &rank));
    XT_OK(xdev_comm_size(comm, &size));
    XT_OK(xdev_comm_device(comm, &got));
    ck_assert_int_eq(rank, 0);
    ck_assert_int_eq(size, 1);
    ck_assert_int_eq(got.type, XDEV_DEVICE_CPU);
    ck_assert_int_eq(got.index, 0);
    XT_OK(xdev_comm_check(comm));
    XT_OK(xdev_comm_destroy(comm));
    /* the rest name the same functions (the library exports only the new symbols) */
    ck_assert(FN(xdev_comm_unique_id) == FN(xdev_communicator_unique_id));
    ck_assert(FN(xdev_comm_init_rank) == FN(xdev_communicator_init_rank));
    ck_assert(FN(xdev_comm_abort) == FN(xdev_communicator_abort));
}
END_TEST

START_TEST(memory_history_aliases) {
    ck_assert(SAME_TYPE(xdev_memory_trace_action_t, xdev_memory_history_action_t));
    ck_assert(SAME_TYPE(xdev_memory_trace_entry_t, xdev_memory_history_entry_t));
    ck_assert_int_eq(XDEV_TRACE_ALLOC, XDEV_MEMORY_HISTORY_ALLOC);
    ck_assert_int_eq(XDEV_TRACE_FREE_REQUESTED, XDEV_MEMORY_HISTORY_FREE_REQUESTED);
    ck_assert_int_eq(XDEV_TRACE_FREE_COMPLETED, XDEV_MEMORY_HISTORY_FREE_COMPLETED);
    ck_assert_int_eq(XDEV_TRACE_SEGMENT_ALLOC, XDEV_MEMORY_HISTORY_SEGMENT_ALLOC);
    ck_assert_int_eq(XDEV_TRACE_SEGMENT_FREE, XDEV_MEMORY_HISTORY_SEGMENT_FREE);
    ck_assert_int_eq(XDEV_TRACE_OOM, XDEV_MEMORY_HISTORY_OOM);
}
END_TEST

START_TEST(philox_aliases) {
    /* the override defined as XPH_FN above is the one the header used */
    ck_assert_str_eq(STR(XDEV_PHILOX_FN), "static inline __attribute__((unused))");
    ck_assert_int_eq(XPH_UNIFORM, XDEV_PHILOX_UNIFORM);
    ck_assert_int_eq(XPH_BERNOULLI, XDEV_PHILOX_BERNOULLI);
    ck_assert_int_eq(XPH_I64, XDEV_PHILOX_I64);
    ck_assert_uint_eq(XPH_M0, XDEV_PHILOX_M0);
    ck_assert_uint_eq(xph_words_per_element(XPH_F64), 2u);
    uint32_t a[4], b[4];
    const uint32_t ctr[4] = {1, 2, 3, 4}, key[2] = {5, 6};
    xph_philox4x32_10(ctr, key, a);
    xdev_philox4x32_10(ctr, key, b);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    xph_params_t pr = {.mean_f = 0.0f, .std_f = 1.0f, .mean = 0.0, .std = 1.0};
    float x = 0.0f, y = 1.0f;
    xph_element(XPH_NORMAL, XPH_F32, a, 0, &pr, &x);
    xdev_philox_element(XDEV_PHILOX_NORMAL, XDEV_PHILOX_F32, b, 0, &pr, &y);
    ck_assert(memcmp(&x, &y, sizeof x) == 0);
}
END_TEST

START_TEST(convert_aliases) {
    ck_assert_str_eq(STR(XDEV_CVT_FN), "static inline __attribute__((unused))");
    const double src = 1.0 / 3.0;
    uint16_t h1 = 0, h2 = 1;
    xcv_convert1(&h1, XDEV_DTYPE_F16, &src, XDEV_DTYPE_F64);
    xdev_cvt_convert1(&h2, XDEV_DTYPE_F16, &src, XDEV_DTYPE_F64);
    ck_assert_uint_eq(h1, h2);
    ck_assert_uint_eq(xcv_size(XDEV_DTYPE_I64), 8);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("names");
    TCase *tc = tcase_create("names");
    tcase_add_test(tc, communicator_aliases);
    tcase_add_test(tc, memory_history_aliases);
    tcase_add_test(tc, philox_aliases);
    tcase_add_test(tc, convert_aliases);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "names", argc, argv);
}
