/* SPDX-License-Identifier: Apache-2.0 */
/* prim_sort.c - the sorts and the segmented primitives (xdev/primitives.h):
 * xdev_prim_sort_keys, xdev_prim_sort_pairs, xdev_prim_segmented_sort and
 * xdev_prim_segmented_reduce. Checks (dtype, flags, bit range, value size,
 * every operand against its allocation, alignment, overlaps, the offsets
 * buffer's num_segments + 1 entries), then the prim table through the one
 * enqueue path (xdev_prim_enqueue, math/prim_internal.h). */
#include <stdint.h>
#include <string.h>

#include "base/error_internal.h"
#include "math/operands.h"
#include "math/prim_internal.h"
#include "runtime/dispatch.h"
#include "xdev/backend.h"
#include "xdev/primitives.h"

/* ------------------------------------------------------------------ checks */

static xdev_status_t check_sort_flags(unsigned flags) {
    if ((flags & ~XDEV_PRIM_DESCENDING) != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "flags 0x%x: a sort takes XDEV_PRIM_DESCENDING only", flags);
    return XDEV_SUCCESS;
}

/* [begin_bit, end_bit) of the key's order image; (0, 0): every bit. */
static xdev_status_t bit_range(xdev_dtype_t dtype, unsigned begin_bit, unsigned end_bit,
                               uint32_t *b, uint32_t *e) {
    const unsigned bits = (unsigned)xdev_dtype_size(dtype) * 8u;
    if (begin_bit == 0 && end_bit == 0) {
        *b = 0;
        *e = bits;
        return XDEV_SUCCESS;
    }
    if (begin_bit >= end_bit || end_bit > bits)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "bit range [begin_bit = %u, end_bit = %u): a %s key sorts on "
                         "0 <= begin_bit < end_bit <= %u (or 0, 0 for every bit)",
                         begin_bit, end_bit, xdev_dtype_name(dtype), bits);
    *b = begin_bit;
    *e = end_bit;
    return XDEV_SUCCESS;
}

static xdev_status_t check_value_size(const char *arg, size_t size) {
    if (size != 1 && size != 2 && size != 4 && size != 8)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s = %zu: values are 1, 2, 4 or 8 bytes", arg,
                         size);
    return XDEV_SUCCESS;
}

/* `out` is `in` (in place) or apart from it. */
static xdev_status_t same_or_apart(const xdev_operand_t *out, const xdev_operand_t *in) {
    if (out->ptr == in->ptr) return XDEV_SUCCESS;
    return xdev_prim_check_apart(out, in,
                                 "pass the same pointer to sort in place, or separate buffers");
}

/* The offsets operand: num_segments + 1 int64_t. */
static xdev_status_t offsets_operand(const int64_t *offsets, size_t num_segments,
                                     xdev_operand_t *op) {
    *op = (xdev_operand_t){"offsets", offsets, 0};
    if (num_segments == SIZE_MAX)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "num_segments = %zu is past any offsets buffer",
                         num_segments);
    return xdev_prim_extent("offsets", num_segments + 1, sizeof(int64_t), &op->bytes);
}

/* ------------------------------------------------------------------- sorts */

/* One sort, segmented (offsets) or not, of keys or (values_in != NULL or
 * pairs) of pairs. */
typedef struct sort_args {
    const void *keys_in, *values_in;
    xdev_dtype_t dtype;
    size_t value_size, count;
    const int64_t *offsets;
    size_t num_segments;
    unsigned flags, begin_bit, end_bit;
    void *keys_out, *values_out;
    bool pairs, segmented;
} sort_args_t;

static xdev_status_t sort_run(const sort_args_t *a, xdev_stream_t stream) {
    const char *name = a->segmented ? "segmented_sort" : "sort";
    xdev_status_t st = xdev_prim_ready();
    if (st != XDEV_SUCCESS) return st;
    if ((st = check_sort_flags(a->flags)) != XDEV_SUCCESS ||
        (st = xdev_prim_check_key_dtype(name, a->dtype)) != XDEV_SUCCESS)
        return st;
    uint32_t b = 0, e = 0;
    if ((st = bit_range(a->dtype, a->begin_bit, a->end_bit, &b, &e)) != XDEV_SUCCESS) return st;
    if (a->pairs && (st = check_value_size("value_size", a->value_size)) != XDEV_SUCCESS) return st;
    if (a->count == 0 || (a->segmented && a->num_segments == 0)) return XDEV_SUCCESS;
    const size_t ks = xdev_dtype_size(a->dtype);
    /* written first: keys_out, values_out; then keys_in, values_in, offsets */
    xdev_operand_t ops[5];
    int n = 0;
    ops[n++] = (xdev_operand_t){"keys_out", a->keys_out, 0};
    if (a->pairs) ops[n++] = (xdev_operand_t){"values_out", a->values_out, 0};
    const int nwritten = n;
    ops[n++] = (xdev_operand_t){"keys_in", a->keys_in, 0};
    if (a->pairs) ops[n++] = (xdev_operand_t){"values_in", a->values_in, 0};
    for (int i = 0; i < n; i++) {
        bool key = ops[i].name[0] == 'k';
        if ((st = xdev_prim_extent(ops[i].name, a->count, key ? ks : a->value_size,
                                   &ops[i].bytes)) != XDEV_SUCCESS)
            return st;
    }
    if (a->segmented &&
        (st = offsets_operand(a->offsets, a->num_segments, &ops[n++])) != XDEV_SUCCESS)
        return st;
    xdev_exec_target_t t;
    if ((st = xdev_operands_resolve(ops, n, stream, name, &t)) != XDEV_SUCCESS) return st;
    for (int i = 0; i < n; i++) {
        size_t align = ops[i].name[0] == 'k' ? ks : ops[i].name[0] == 'v' ? a->value_size : 8;
        if ((st = xdev_prim_check_aligned(ops[i].name, ops[i].ptr, align)) != XDEV_SUCCESS)
            return st;
    }
    /* in place (out == in) or apart; keys and values apart; offsets apart
     * from the outputs */
    const xdev_operand_t *ko = &ops[0], *ki = &ops[nwritten];
    if ((st = same_or_apart(ko, ki)) != XDEV_SUCCESS) return st;
    if (a->pairs) {
        const xdev_operand_t *vo = &ops[1], *vi = &ops[nwritten + 1];
        if ((st = same_or_apart(vo, vi)) != XDEV_SUCCESS) return st;
        const char *why = "keys and values are separate buffers";
        if ((st = xdev_prim_check_apart(ko, vo, why)) != XDEV_SUCCESS ||
            (st = xdev_prim_check_apart(ko, vi, why)) != XDEV_SUCCESS ||
            (st = xdev_prim_check_apart(vo, ki, why)) != XDEV_SUCCESS)
            return st;
    }
    if (a->segmented)
        for (int i = 0; i < nwritten; i++)
            if ((st = xdev_prim_check_apart(&ops[i], &ops[n - 1],
                                            "the offsets are read while the outputs are "
                                            "written")) != XDEV_SUCCESS)
                return st;
    xdev_prim_desc_t d = {.size = sizeof d,
                          .flags = xdev_prim_mode_flags() | (a->flags & XDEV_PRIM_DESCENDING),
                          .dtype = a->dtype,
                          .in = a->keys_in,
                          .out = a->keys_out,
                          .count = a->count,
                          .values_in = a->pairs ? a->values_in : NULL,
                          .values_out = a->pairs ? a->values_out : NULL,
                          .value_size = a->pairs ? a->value_size : 0,
                          .begin_bit = b,
                          .end_bit = e,
                          .offsets = a->segmented ? a->offsets : NULL,
                          .num_segments = a->segmented ? a->num_segments : 0};
    return xdev_prim_enqueue(a->segmented ? XDEV_PRIM_K_SEGMENTED_SORT : XDEV_PRIM_K_SORT, name, &d,
                             &t, ops, n, nwritten);
}

xdev_status_t xdev_prim_sort_keys(const void *keys_in, xdev_dtype_t dtype, size_t count,
                                  unsigned flags, unsigned begin_bit, unsigned end_bit,
                                  void *keys_out, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    sort_args_t a = {.keys_in = keys_in,
                     .dtype = dtype,
                     .count = count,
                     .flags = flags,
                     .begin_bit = begin_bit,
                     .end_bit = end_bit,
                     .keys_out = keys_out};
    XDEV_CHECK(sort_run(&a, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_sort_pairs(const void *keys_in, const void *values_in, xdev_dtype_t dtype,
                                   size_t value_size, size_t count, unsigned flags,
                                   unsigned begin_bit, unsigned end_bit, void *keys_out,
                                   void *values_out, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    sort_args_t a = {.keys_in = keys_in,
                     .values_in = values_in,
                     .dtype = dtype,
                     .value_size = value_size,
                     .count = count,
                     .flags = flags,
                     .begin_bit = begin_bit,
                     .end_bit = end_bit,
                     .keys_out = keys_out,
                     .values_out = values_out,
                     .pairs = true};
    XDEV_CHECK(sort_run(&a, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_segmented_sort(const void *keys_in, const void *values_in,
                                       xdev_dtype_t dtype, size_t value_size, size_t count,
                                       const int64_t *offsets, size_t num_segments, unsigned flags,
                                       unsigned begin_bit, unsigned end_bit, void *keys_out,
                                       void *values_out, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    if ((values_in == NULL) != (values_out == NULL))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "values_in (%p) and values_out (%p): give both (pairs) or neither "
                             "(keys only)",
                             values_in, values_out);
    sort_args_t a = {.keys_in = keys_in,
                     .values_in = values_in,
                     .dtype = dtype,
                     .value_size = value_size,
                     .count = count,
                     .offsets = offsets,
                     .num_segments = num_segments,
                     .flags = flags,
                     .begin_bit = begin_bit,
                     .end_bit = end_bit,
                     .keys_out = keys_out,
                     .values_out = values_out,
                     .pairs = values_in != NULL,
                     .segmented = true};
    XDEV_CHECK(sort_run(&a, stream));
    return XDEV_SUCCESS;
}

/* -------------------------------------------------------- segmented reduce */

static xdev_status_t segmented_reduce_run(const void *in, xdev_dtype_t dtype, size_t count,
                                          const int64_t *offsets, size_t num_segments,
                                          xdev_prim_op_t op, void *out, xdev_stream_t stream) {
    xdev_status_t st = xdev_prim_ready();
    if (st != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_op(op)) != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_dtype(xdev_prim_op_name(op), dtype)) != XDEV_SUCCESS) return st;
    if (num_segments == 0) return XDEV_SUCCESS;
    const size_t es = xdev_dtype_size(dtype);
    const bool arg = op == XDEV_PRIM_ARGMIN || op == XDEV_PRIM_ARGMAX;
    const size_t os = arg ? sizeof(int64_t) : es;
    /* out written; offsets, then in (read; absent when count = 0) */
    xdev_operand_t ops[3] = {{"out", out, 0}, {"offsets", offsets, 0}, {"in", in, 0}};
    if ((st = xdev_prim_extent("out", num_segments, os, &ops[0].bytes)) != XDEV_SUCCESS ||
        (st = offsets_operand(offsets, num_segments, &ops[1])) != XDEV_SUCCESS ||
        (st = xdev_prim_extent("in", count, es, &ops[2].bytes)) != XDEV_SUCCESS)
        return st;
    const int n = count > 0 ? 3 : 2;
    xdev_exec_target_t t;
    if ((st = xdev_operands_resolve(ops, n, stream, "segmented_reduce", &t)) != XDEV_SUCCESS)
        return st;
    if ((st = xdev_prim_check_aligned("out", out, os)) != XDEV_SUCCESS ||
        (st = xdev_prim_check_aligned("offsets", offsets, sizeof(int64_t))) != XDEV_SUCCESS ||
        (count > 0 && (st = xdev_prim_check_aligned("in", in, es)) != XDEV_SUCCESS))
        return st;
    if ((st = xdev_prim_check_disjoint(ops, n, 1)) != XDEV_SUCCESS) return st;
    xdev_prim_desc_t d = {.size = sizeof d,
                          .op = (int)op,
                          .flags = xdev_prim_mode_flags(),
                          .dtype = dtype,
                          .in = count > 0 ? in : NULL,
                          .out = out,
                          .count = count,
                          .offsets = offsets,
                          .num_segments = num_segments};
    return xdev_prim_enqueue(XDEV_PRIM_K_SEGMENTED_REDUCE, "segmented_reduce", &d, &t, ops, n, 1);
}

xdev_status_t xdev_prim_segmented_reduce(const void *in, xdev_dtype_t dtype, size_t count,
                                         const int64_t *offsets, size_t num_segments,
                                         xdev_prim_op_t op, void *out, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(segmented_reduce_run(in, dtype, count, offsets, num_segments, op, out, stream));
    return XDEV_SUCCESS;
}
