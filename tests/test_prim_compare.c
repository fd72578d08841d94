/* SPDX-License-Identifier: Apache-2.0 */
/* test_prim_compare.c - the select_if predicate reader (core/math/
 * prim_compare.c, white-box): which predicates run as select_compare
 * without a compile, and that each one's comparison (type and value) is
 * the one C's usual arithmetic conversions give the compiled expression;
 * every form it is not sure of is refused (the compiled path runs it). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "math/prim_compare.h"
#include "xdev/backend.h"
#include "xt_check_run.h"

static xdev_prim_compare_t parse_ok(const char *p, xdev_dtype_t t) {
    xdev_prim_compare_t c = {.op = -1};
    ck_assert_msg(xdev_prim_compare_parse(p, t, &c), "'%s' (dtype %d) was refused", p, (int)t);
    return c;
}

static void refused(const char *p, xdev_dtype_t t) {
    xdev_prim_compare_t c = {.op = -7};
    ck_assert_msg(!xdev_prim_compare_parse(p, t, &c), "'%s' (dtype %d) was accepted", p, (int)t);
    ck_assert_int_eq(c.op, -7); /* untouched */
}

START_TEST(f32_float_literal_compares_in_float) {
    xdev_prim_compare_t c = parse_ok("in0 > 0.5f", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.op, XDEV_PRIM_CMP_GT);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F32);
    ck_assert(c.value == 0.5);
    /* 0.1f: strtof's correctly rounded float, not (float)strtod */
    c = parse_ok("in0<=0.1F", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.op, XDEV_PRIM_CMP_LE);
    ck_assert(c.value == (double)0.1f);
    /* a literal whose double rounding to float differs from its direct one:
     * 1 + 2^-24 + 2^-60 rounds up to 1 + 2^-23 directly, but to the tie 1 +
     * 2^-24 in double, then to even (1) */
    c = parse_ok("in0 < 1.00000005960464477594184017", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F64); /* no suffix: double */
    c = parse_ok("in0 < 1.00000005960464477594184017f", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F32);
    ck_assert(c.value == (double)1.00000005960464477594184017f);
    ck_assert(c.value == 1.0 + 0x1p-23);
}
END_TEST

START_TEST(f32_double_literal_compares_in_double) {
    xdev_prim_compare_t c = parse_ok("in0 != 1e-3", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.op, XDEV_PRIM_CMP_NE);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F64);
    ck_assert(c.value == 1e-3);
    c = parse_ok("in0 > 0.1", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F64);
    ck_assert(c.value == 0.1);
    c = parse_ok("in0 == .5", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.op, XDEV_PRIM_CMP_EQ);
    ck_assert(c.value == 0.5);
    c = parse_ok("in0 >= 5.", XDEV_DTYPE_F32);
    ck_assert(c.value == 5.0);
    c = parse_ok("in0 >= 2E+3", XDEV_DTYPE_F32);
    ck_assert(c.value == 2000.0);
    c = parse_ok("in0 >= 1.5e+2f", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F32);
    ck_assert(c.value == 150.0);
}
END_TEST

START_TEST(f32_integer_literal_compares_in_float) {
    xdev_prim_compare_t c = parse_ok("in0>=-3", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.op, XDEV_PRIM_CMP_GE);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F32);
    ck_assert(c.value == -3.0);
    /* 2^24 + 1 is converted to float (2^24), as C converts the int */
    c = parse_ok("in0 == 16777217", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F32);
    ck_assert(c.value == 16777216.0);
    c = parse_ok("in0 < 0", XDEV_DTYPE_F32);
    ck_assert(c.value == 0.0);
}
END_TEST

START_TEST(f64_compares_in_double) {
    xdev_prim_compare_t c = parse_ok("in0 > 0.1f", XDEV_DTYPE_F64);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F64);
    ck_assert(c.value == (double)0.1f); /* the float literal, widened */
    ck_assert(c.value != 0.1);
    c = parse_ok("in0 > 0.1", XDEV_DTYPE_F64);
    ck_assert(c.value == 0.1);
    c = parse_ok("in0 < 9007199254740993", XDEV_DTYPE_F64);
    ck_assert(c.value == 9007199254740992.0); /* (double) of the long, to nearest even */
}
END_TEST

START_TEST(integers_compare_in_int64) {
    xdev_prim_compare_t c = parse_ok("in0 >= -3", XDEV_DTYPE_I32);
    ck_assert_int_eq(c.type, XDEV_DTYPE_I64);
    ck_assert_int_eq(c.ivalue, -3);
    c = parse_ok("in0 < 3000000000", XDEV_DTYPE_I32); /* a long literal: exact */
    ck_assert_int_eq(c.ivalue, 3000000000LL);
    c = parse_ok("in0 == 9223372036854775807", XDEV_DTYPE_I64);
    ck_assert_int_eq(c.ivalue, INT64_MAX);
    c = parse_ok("in0 == -9223372036854775807", XDEV_DTYPE_I64);
    ck_assert_int_eq(c.ivalue, -INT64_MAX);
    c = parse_ok("in0 != 0", XDEV_DTYPE_I64);
    ck_assert_int_eq(c.ivalue, 0);
    /* floating literals against integer items: left to the compiled path */
    refused("in0 > 0.5", XDEV_DTYPE_I32);
    refused("in0 > 0.5f", XDEV_DTYPE_I64);
    /* past INT64_MAX (9223372036854775808 is no signed literal) */
    refused("in0 > 9223372036854775808", XDEV_DTYPE_I64);
    refused("in0 > -9223372036854775808", XDEV_DTYPE_I64);
    refused("in0 > 99999999999999999999", XDEV_DTYPE_F64);
}
END_TEST

START_TEST(literal_on_the_left_is_mirrored) {
    xdev_prim_compare_t c = parse_ok("0.5f<in0", XDEV_DTYPE_F32);
    ck_assert_int_eq(c.op, XDEV_PRIM_CMP_GT);
    ck_assert_int_eq(c.type, XDEV_DTYPE_F32);
    ck_assert(c.value == 0.5);
    ck_assert_int_eq(parse_ok("1 <= in0", XDEV_DTYPE_I32).op, XDEV_PRIM_CMP_GE);
    ck_assert_int_eq(parse_ok("1 > in0", XDEV_DTYPE_I32).op, XDEV_PRIM_CMP_LT);
    ck_assert_int_eq(parse_ok("1 >= in0", XDEV_DTYPE_I32).op, XDEV_PRIM_CMP_LE);
    ck_assert_int_eq(parse_ok("1 == in0", XDEV_DTYPE_I32).op, XDEV_PRIM_CMP_EQ);
    ck_assert_int_eq(parse_ok("1 != in0", XDEV_DTYPE_I32).op, XDEV_PRIM_CMP_NE);
    c = parse_ok("-2.5 < in0", XDEV_DTYPE_F64);
    ck_assert_int_eq(c.op, XDEV_PRIM_CMP_GT);
    ck_assert(c.value == -2.5);
}
END_TEST

START_TEST(spaces_signs_and_parentheses) {
    ck_assert(parse_ok("\t in0  >\t0.5f ", XDEV_DTYPE_F32).value == 0.5);
    ck_assert(parse_ok("in0 > - 3", XDEV_DTYPE_F32).value == -3.0);
    ck_assert(parse_ok("in0 > +3", XDEV_DTYPE_F32).value == 3.0);
    ck_assert(parse_ok("in0<-3", XDEV_DTYPE_F32).value == -3.0);
    ck_assert(parse_ok("(in0 > 1)", XDEV_DTYPE_F32).value == 1.0);
    ck_assert(parse_ok(" ( ( in0 > 1 ) ) ", XDEV_DTYPE_F32).value == 1.0);
    ck_assert(signbit(parse_ok("in0 > -0.0", XDEV_DTYPE_F64).value));
    refused("(in0 > 1", XDEV_DTYPE_F32);
    refused("in0 > 1)", XDEV_DTYPE_F32);
    refused("(in0) > 1", XDEV_DTYPE_F32);
    refused("in0 > (1)", XDEV_DTYPE_F32);
    refused("in0 > --3", XDEV_DTYPE_F32);
    refused("in0 > - -3", XDEV_DTYPE_F32);
    refused("in0 > -+3", XDEV_DTYPE_F32);
    refused("in0\n> 1", XDEV_DTYPE_F32); /* the compiled path refuses a newline */
}
END_TEST

START_TEST(other_forms_are_refused) {
    const char *no[] = {"in0 > 0.5f && in0 < 1",
                        "in1 > 0",
                        "in0 > x",
                        "in0 > 0x10",
                        "in0 > 0X1p3",
                        "in0 >> 2",
                        "in0 << 2",
                        "in0 <<= 2",
                        "in0 = 2",
                        "in0 ! 2",
                        "in0 <=> 2",
                        "in0 > 010", /* octal */
                        "in0 > 00",
                        "in0 > 1f",
                        "in0 > 1u",
                        "in0 > 1L",
                        "in0 > 1ll",
                        "in0 > 1.5L",
                        "in0 > 1.5ff",
                        "in0 > 1.5e",
                        "in0 > 1.5e+",
                        "in0 > 1e5.5",
                        "in0 > 1.2.3",
                        "in0 > 1_000",
                        "in0 > .",
                        "in0 > inf",
                        "in0 > nan",
                        "in0 > INFINITY",
                        "in0 > 1e999",  /* overflows a double */
                        "in0 > 1e39f",  /* overflows a float */
                        "in0 > 1e-400", /* underflows */
                        "in0 > 1 2",
                        "in0 > 1 .5",
                        "in0x > 1",
                        "in00 > 1",
                        "xin0 > 1",
                        "in0 > in0",
                        "1 < 2",
                        "-in0 < 3",
                        "in0 * in0 > 1",
                        "in0 > 1 ? 1 : 0",
                        "in0",
                        "",
                        "   ",
                        "in0 >",
                        "> 1",
                        "in0 > 1,",
                        "in0 > 1;"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        refused(no[i], XDEV_DTYPE_F32);
    refused("in0 > 1", XDEV_DTYPE_U8); /* dtypes select_if does not take */
    refused("in0 > 1", XDEV_DTYPE_F16);
    xdev_prim_compare_t c;
    ck_assert(!xdev_prim_compare_parse(NULL, XDEV_DTYPE_F32, &c));
    char longer[400];
    memset(longer, ' ', sizeof longer);
    memcpy(longer + sizeof longer - 9, "in0 > 1", 8);
    refused(longer, XDEV_DTYPE_F32); /* past the reader's length: compiled */
}
END_TEST

int main(void) {
    Suite *s = suite_create("prim_compare");
    TCase *tc = tcase_create("prim_compare");
    tcase_add_test(tc, f32_float_literal_compares_in_float);
    tcase_add_test(tc, f32_double_literal_compares_in_double);
    tcase_add_test(tc, f32_integer_literal_compares_in_float);
    tcase_add_test(tc, f64_compares_in_double);
    tcase_add_test(tc, integers_compare_in_int64);
    tcase_add_test(tc, literal_on_the_left_is_mirrored);
    tcase_add_test(tc, spaces_signs_and_parentheses);
    tcase_add_test(tc, other_forms_are_refused);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
