/* SPDX-License-Identifier: Apache-2.0 */
/* prim_compare.h - the predicates xdev_prim_select_if runs without a
 * compile (prim_compare.c): `in0 OP literal` or `literal OP in0`, read into
 * the comparison the backend's select_compare slot makes, with the very
 * semantics of the C expression the elementwise path would compile. Its own
 * file (libc only) so that a white-box unit test links it alone. */
#ifndef XDEV_CORE_PRIM_COMPARE_H
#define XDEV_CORE_PRIM_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "xdev/dtype.h"

/* One comparison: item OP value, in the type `type` (xdev_prim_desc_t's
 * compare_ fields, include/xdev/backend.h). */
typedef struct xdev_prim_compare {
    int op;            /* xdev_prim_compare_op_t */
    xdev_dtype_t type; /* F32, F64 or I64 */
    double value;      /* F32 (a float's exact value), F64 */
    int64_t ivalue;    /* I64 */
} xdev_prim_compare_t;

/* True, with *out, when `predicate` over items of `dtype` (F32, F64, I32,
 * I64) is one comparison of in0 with a decimal literal whose C meaning is
 * certain: `in0 OP lit` or `lit OP in0` (OP < <= > >= == !=; spaces and
 * tabs anywhere, outer parentheses, a unary - or + on the literal). lit: a
 * decimal integer (no suffix, at most INT64_MAX) or a decimal floating
 * literal (optional f/F suffix). Compared as C's usual arithmetic
 * conversions do: f32 items with an f literal or an integer in float, with
 * a double literal in double; f64 items in double (an f literal rounded to
 * float first); i32/i64 items with an integer in int64. False for every
 * other predicate (hex, octal, other suffixes, integer items against a
 * floating literal, a literal out of range...): the caller compiles it. */
bool xdev_prim_compare_parse(const char *predicate, xdev_dtype_t dtype, xdev_prim_compare_t *out);

#endif
