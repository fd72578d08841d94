/* SPDX-License-Identifier: Apache-2.0 */
/* prim_select.c - the counting and compacting primitives
 * (xdev/primitives.h): xdev_prim_histogram_even, xdev_prim_select_flagged,
 * xdev_prim_select_if, xdev_prim_unique and xdev_prim_run_length_encode.
 * Checks (dtype, sizes, the histogram's range, every operand against its
 * allocation, alignment, overlaps), then the prim table through the one
 * enqueue path (xdev_prim_enqueue, math/prim_internal.h). select_if: a
 * predicate `in0 OP literal` (math/prim_compare.h) runs as the backend's
 * select_compare slot where it has one (ABI 3.9: no compile, no flags);
 * every other predicate runs through xdev_elementwise into a temporary
 * flags buffer, which the select_flagged slot then reads. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "base/error_internal.h"
#include "math/operands.h"
#include "math/prim_compare.h"
#include "math/prim_internal.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "xdev/backend.h"
#include "xdev/kernel.h"
#include "xdev/primitives.h"

/* Resolve ops[0 .. n), check their alignment (align[i]) and that the
 * outputs (the first nwritten) meet nothing else. */
static xdev_status_t resolve(xdev_operand_t *ops, const size_t *align, int n, int nwritten,
                             xdev_stream_t stream, const char *name, xdev_exec_target_t *t) {
    xdev_status_t st = xdev_operands_resolve(ops, n, stream, name, t);
    if (st != XDEV_SUCCESS) return st;
    for (int i = 0; i < n; i++)
        if ((st = xdev_prim_check_aligned(ops[i].name, ops[i].ptr, align[i])) != XDEV_SUCCESS)
            return st;
    return xdev_prim_check_disjoint(ops, n, nwritten);
}

/* --------------------------------------------------------------- histogram */

static xdev_status_t histogram_run(const void *samples, xdev_dtype_t dtype, size_t count,
                                   size_t num_bins, double lower, double upper, int64_t *counts,
                                   xdev_stream_t stream) {
    xdev_status_t st = xdev_prim_ready();
    if (st != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_key_dtype("histogram_even", dtype)) != XDEV_SUCCESS) return st;
    if (num_bins == 0 || num_bins > ((size_t)1 << 31))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "num_bins = %zu: 1 .. 2^31 bins", num_bins);
    if (!isfinite(lower) || !isfinite(upper) || !(lower < upper))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the range [lower = %g, upper = %g): both finite, lower < upper", lower,
                         upper);
    /* Finite bounds can still be DBL_MAX apart and more: the width would be
     * inf and every bin floor(inf / inf) = NaN, which no integer holds. */
    if (!isfinite(upper - lower))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the range [lower = %g, upper = %g): upper - lower overflows a double "
                         "(the bins are computed from that width); narrow the range",
                         lower, upper);
    const size_t es = xdev_dtype_size(dtype);
    xdev_operand_t ops[2] = {{"counts", counts, 0}, {"samples", samples, 0}};
    const size_t align[2] = {sizeof(int64_t), es};
    if ((st = xdev_prim_extent("counts", num_bins, sizeof(int64_t), &ops[0].bytes)) !=
            XDEV_SUCCESS ||
        (st = xdev_prim_extent("samples", count, es, &ops[1].bytes)) != XDEV_SUCCESS)
        return st;
    const int n = count > 0 ? 2 : 1; /* samples may be NULL when there are none */
    xdev_exec_target_t t;
    if ((st = resolve(ops, align, n, 1, stream, "histogram_even", &t)) != XDEV_SUCCESS) return st;
    xdev_prim_desc_t d = {.size = sizeof d,
                          .flags = xdev_prim_mode_flags(),
                          .dtype = dtype,
                          .in = count > 0 ? samples : NULL,
                          .out = counts,
                          .count = count,
                          .num_bins = num_bins,
                          .lower = lower,
                          .upper = upper};
    return xdev_prim_enqueue(XDEV_PRIM_K_HISTOGRAM_EVEN, "histogram_even", &d, &t, ops, n, 1);
}

xdev_status_t xdev_prim_histogram_even(const void *samples, xdev_dtype_t dtype, size_t count,
                                       size_t num_bins, double lower, double upper, int64_t *counts,
                                       xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(histogram_run(samples, dtype, count, num_bins, lower, upper, counts, stream));
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------------ select */

/* The unsigned dtype of an item of `size` bytes (items are moved as bits). */
static xdev_dtype_t bits_dtype(size_t size) {
    return size == 1   ? XDEV_DTYPE_U8
           : size == 2 ? XDEV_DTYPE_U16
           : size == 4 ? XDEV_DTYPE_U32
                       : XDEV_DTYPE_U64;
}

static xdev_status_t select_flagged_run(const void *in, size_t item_size, const uint8_t *flags,
                                        size_t count, void *out, int64_t *num_out,
                                        xdev_stream_t stream) {
    xdev_status_t st = xdev_prim_ready();
    if (st != XDEV_SUCCESS) return st;
    if (item_size != 1 && item_size != 2 && item_size != 4 && item_size != 8)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "item_size = %zu: items are 1, 2, 4 or 8 bytes",
                         item_size);
    /* written: num_out, out; read: in, flags */
    xdev_operand_t ops[4] = {
        {"num_out", num_out, sizeof(int64_t)}, {"out", out, 0}, {"in", in, 0}, {"flags", flags, 0}};
    const size_t align[4] = {sizeof(int64_t), item_size, item_size, 1};
    if ((st = xdev_prim_extent("out", count, item_size, &ops[1].bytes)) != XDEV_SUCCESS ||
        (st = xdev_prim_extent("in", count, item_size, &ops[2].bytes)) != XDEV_SUCCESS)
        return st;
    ops[3].bytes = count;
    const int n = count > 0 ? 4 : 1, nw = count > 0 ? 2 : 1;
    xdev_exec_target_t t;
    if ((st = resolve(ops, align, n, nw, stream, "select_flagged", &t)) != XDEV_SUCCESS) return st;
    xdev_prim_desc_t d = {.size = sizeof d,
                          .flags = xdev_prim_mode_flags(),
                          .dtype = bits_dtype(item_size),
                          .in = count > 0 ? in : NULL,
                          .out = count > 0 ? out : NULL,
                          .count = count,
                          .select_flags = count > 0 ? flags : NULL,
                          .flag_size = 1,
                          .num_out = num_out};
    return xdev_prim_enqueue(XDEV_PRIM_K_SELECT_FLAGGED, "select_flagged", &d, &t, ops, n, nw);
}

xdev_status_t xdev_prim_select_flagged(const void *in, size_t item_size, const uint8_t *flags,
                                       size_t count, void *out, int64_t *num_out,
                                       xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(select_flagged_run(in, item_size, flags, count, out, num_out, stream));
    return XDEV_SUCCESS;
}

/* The flags, one element of dtype per item (0 or 1), from the predicate
 * through xdev_elementwise, into *tmp from the caching allocator on the
 * call's stream (freed by the caller, in stream order). */
static xdev_status_t predicate_flags(const char *predicate, const void *in, xdev_dtype_t dtype,
                                     size_t count, const xdev_exec_target_t *t, size_t bytes,
                                     void **tmp) {
    char expr[1024];
    int len = snprintf(expr, sizeof expr, "(%s) ? 1 : 0", predicate);
    if (len < 0 || (size_t)len >= sizeof expr)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the predicate (%zu characters) is longer than %zu characters",
                         strlen(predicate), sizeof expr - 16);
    xdev_status_t st = xdev_alloc_malloc_on(t->stream, bytes, tmp);
    char why[1024];
    if (st != XDEV_SUCCESS) {
        snprintf(why, sizeof why, "%s", xdev_last_error());
        return XDEV_FAIL(st, "cannot allocate the select_if's %zu bytes of flags: %s", bytes, why);
    }
    const void *inputs[1] = {in};
    st = xdev_elementwise(expr, dtype, 1, inputs, *tmp, count, t->stream);
    if (st != XDEV_SUCCESS) {
        snprintf(why, sizeof why, "%s", xdev_last_error());
        (void)xdev_alloc_free(*tmp);
        *tmp = NULL;
        return XDEV_FAIL(st, "the predicate \"%s\": %s", predicate, why);
    }
    return XDEV_SUCCESS;
}

static xdev_status_t select_if_run(const void *in, xdev_dtype_t dtype, size_t count,
                                   const char *predicate, void *out, int64_t *num_out,
                                   xdev_stream_t stream) {
    xdev_status_t st = xdev_prim_ready();
    if (st != XDEV_SUCCESS) return st;
    if (predicate == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'predicate' is NULL");
    if (xdev_dtype_name(dtype) == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "dtype %d is not an xdev_dtype_t (XDEV_DTYPE_F32 .. XDEV_DTYPE_U64)",
                         (int)dtype);
    if (dtype != XDEV_DTYPE_F32 && dtype != XDEV_DTYPE_F64 && dtype != XDEV_DTYPE_I32 &&
        dtype != XDEV_DTYPE_I64)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "select_if of dtype %s: its predicate runs through xdev_elementwise, "
                         "which takes f32, f64, i32 and i64 (select_flagged moves any item)",
                         xdev_dtype_name(dtype));
    const size_t es = xdev_dtype_size(dtype);
    xdev_operand_t ops[4] = {
        {"num_out", num_out, sizeof(int64_t)}, {"out", out, 0}, {"in", in, 0}, {"", NULL, 0}};
    const size_t align[3] = {sizeof(int64_t), es, es};
    if ((st = xdev_prim_extent("out", count, es, &ops[1].bytes)) != XDEV_SUCCESS) return st;
    ops[2].bytes = ops[1].bytes;
    const int n = count > 0 ? 3 : 1, nw = count > 0 ? 2 : 1;
    xdev_exec_target_t t;
    if ((st = resolve(ops, align, n, nw, stream, "select_if", &t)) != XDEV_SUCCESS) return st;
    /* One comparison with a literal: compared in place, with the compiled
     * expression's C semantics (the reader refuses what it is not sure of). */
    xdev_prim_compare_t cmp;
    if (XDEV_HAS(t.be, prim, select_compare) && xdev_prim_compare_parse(predicate, dtype, &cmp)) {
        xdev_prim_desc_t d = {.size = sizeof d,
                              .flags = xdev_prim_mode_flags(),
                              .dtype = dtype,
                              .in = count > 0 ? in : NULL,
                              .out = count > 0 ? out : NULL,
                              .count = count,
                              .num_out = num_out,
                              .compare_op = cmp.op,
                              .compare_dtype = cmp.type,
                              .compare_value = cmp.value,
                              .compare_ivalue = cmp.ivalue};
        return xdev_prim_enqueue(XDEV_PRIM_K_SELECT_COMPARE, "select_if", &d, &t, ops, n, nw);
    }
    /* Before the compile: a backend without the slot fails the same way
     * whatever the predicate. */
    if (!XDEV_HAS(t.be, prim, select_flagged))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend does not implement the parallel primitive select_if "
                         "(its select_flagged slot; dtype %s)",
                         t.be->name, xdev_dtype_name(dtype));
    void *tmp = NULL;
    if (count > 0 &&
        (st = predicate_flags(predicate, in, dtype, count, &t, ops[1].bytes, &tmp)) != XDEV_SUCCESS)
        return st;
    ops[3] = (xdev_operand_t){"the predicate's flags", tmp, tmp != NULL ? ops[1].bytes : 0};
    xdev_prim_desc_t d = {.size = sizeof d,
                          .flags = xdev_prim_mode_flags(),
                          .dtype = bits_dtype(es),
                          .in = count > 0 ? in : NULL,
                          .out = count > 0 ? out : NULL,
                          .count = count,
                          .select_flags = tmp,
                          .flag_size = es,
                          .num_out = num_out};
    st = xdev_prim_enqueue(XDEV_PRIM_K_SELECT_FLAGGED, "select_if", &d, &t, ops, count > 0 ? 4 : 1,
                           nw);
    if (tmp != NULL) (void)xdev_alloc_free(tmp); /* stream-ordered, as the temporaries */
    return st;
}

xdev_status_t xdev_prim_select_if(const void *in, xdev_dtype_t dtype, size_t count,
                                  const char *predicate, void *out, int64_t *num_out,
                                  xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(select_if_run(in, dtype, count, predicate, out, num_out, stream));
    return XDEV_SUCCESS;
}

/* ------------------------------------------------- unique, run-length encode */

/* rle: lengths (count int64_t) is written beside the unique items. */
static xdev_status_t runs_run(bool rle, const void *in, xdev_dtype_t dtype, size_t count, void *out,
                              int64_t *lengths, int64_t *num_out, xdev_stream_t stream) {
    const char *name = rle ? "run_length_encode" : "unique";
    xdev_status_t st = xdev_prim_ready();
    if (st != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_key_dtype(name, dtype)) != XDEV_SUCCESS) return st;
    const size_t es = xdev_dtype_size(dtype);
    /* written: the count, the items, the lengths; read: in */
    xdev_operand_t ops[4] = {{rle ? "num_runs" : "num_out", num_out, sizeof(int64_t)},
                             {rle ? "unique_out" : "out", out, 0},
                             {"in", in, 0},
                             {"lengths", lengths, 0}};
    size_t align[4] = {sizeof(int64_t), es, es, sizeof(int64_t)};
    if ((st = xdev_prim_extent(ops[1].name, count, es, &ops[1].bytes)) != XDEV_SUCCESS ||
        (st = xdev_prim_extent("lengths", count, sizeof(int64_t), &ops[3].bytes)) != XDEV_SUCCESS)
        return st;
    ops[2].bytes = ops[1].bytes;
    if (rle) { /* lengths is written: before in */
        xdev_operand_t tmp = ops[2];
        ops[2] = ops[3];
        ops[3] = tmp;
        align[2] = sizeof(int64_t);
        align[3] = es;
    }
    const int n = count == 0 ? 1 : rle ? 4 : 3, nw = count == 0 ? 1 : rle ? 3 : 2;
    xdev_exec_target_t t;
    if ((st = resolve(ops, align, n, nw, stream, name, &t)) != XDEV_SUCCESS) return st;
    xdev_prim_desc_t d = {.size = sizeof d,
                          .flags = xdev_prim_mode_flags(),
                          .dtype = dtype,
                          .in = count > 0 ? in : NULL,
                          .out = count > 0 ? out : NULL,
                          .count = count,
                          .values_out = rle && count > 0 ? lengths : NULL,
                          .value_size = rle ? sizeof(int64_t) : 0,
                          .num_out = num_out};
    return xdev_prim_enqueue(rle ? XDEV_PRIM_K_RUN_LENGTH_ENCODE : XDEV_PRIM_K_UNIQUE, name, &d, &t,
                             ops, n, nw);
}

xdev_status_t xdev_prim_unique(const void *in, xdev_dtype_t dtype, size_t count, void *out,
                               int64_t *num_out, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(runs_run(false, in, dtype, count, out, NULL, num_out, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_run_length_encode(const void *in, xdev_dtype_t dtype, size_t count,
                                          void *unique_out, int64_t *lengths, int64_t *num_runs,
                                          xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(runs_run(true, in, dtype, count, unique_out, lengths, num_runs, stream));
    return XDEV_SUCCESS;
}
