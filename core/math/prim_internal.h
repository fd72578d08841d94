/* SPDX-License-Identifier: Apache-2.0 */
/* prim_internal.h - what the primitives' files (primitives.c: reduce, scan,
 * the deterministic mode and the enqueue; prim_sort.c: sorts and segmented
 * calls; prim_select.c: histogram, select, unique, run-length encode)
 * share, so that every primitive has the same checks and takes the same
 * one path to the backend (xdev_prim_enqueue). */
#ifndef XDEV_CORE_PRIM_INTERNAL_H
#define XDEV_CORE_PRIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "math/operands.h"
#include "xdev/backend.h"
#include "xdev/primitives.h"

/* The prim table's slots, one per kind. */
typedef enum xdev_prim_kind {
    XDEV_PRIM_K_REDUCE,
    XDEV_PRIM_K_SCAN,
    XDEV_PRIM_K_SORT,
    XDEV_PRIM_K_SEGMENTED_SORT,
    XDEV_PRIM_K_SEGMENTED_REDUCE,
    XDEV_PRIM_K_HISTOGRAM_EVEN,
    XDEV_PRIM_K_SELECT_FLAGGED,
    XDEV_PRIM_K_UNIQUE,
    XDEV_PRIM_K_RUN_LENGTH_ENCODE,
    XDEV_PRIM_K_SELECT_COMPARE, /* select_if's `in0 OP literal` (ABI 3.9) */
} xdev_prim_kind_t;

/* XDEV_DETERMINISTIC loaded (a malformed value is every primitive's error). */
xdev_status_t xdev_prim_ready(void);
/* XDEV_PRIM_FLAG_DETERMINISTIC when the mode is on. */
uint32_t xdev_prim_mode_flags(void);

/* "sum" .. "argmax"; "?" for another value. */
const char *xdev_prim_op_name(int op);

/* The dtypes of reduce, scan and segmented reduce (xdev/primitives.h);
 * `what` names the call in the NOT_SUPPORTED message. */
xdev_status_t xdev_prim_check_dtype(const char *what, xdev_dtype_t t);
/* The sort keys' dtypes (also unique's, run-length encode's and the
 * histogram's samples). */
xdev_status_t xdev_prim_check_key_dtype(const char *what, xdev_dtype_t t);
/* An op of xdev_prim_reduce with a count: its empty-input rule is the
 * caller's. */
xdev_status_t xdev_prim_check_op(xdev_prim_op_t op);

/* `p` aligned to `size` bytes, else INVALID_VALUE naming `arg`. */
xdev_status_t xdev_prim_check_aligned(const char *arg, const void *p, size_t size);
/* Whether the byte ranges of two operands meet. */
bool xdev_prim_overlap(const xdev_operand_t *a, const xdev_operand_t *b);
/* INVALID_VALUE naming both when ops[i] and ops[j] meet; `why` ends the
 * message. */
xdev_status_t xdev_prim_check_apart(const xdev_operand_t *a, const xdev_operand_t *b,
                                    const char *why);
/* Each written operand (ops[0 .. nwritten)) apart from every other
 * operand; operands of 0 bytes meet nothing. */
xdev_status_t xdev_prim_check_disjoint(const xdev_operand_t *ops, int nops, int nwritten);
/* count * size as a byte count, else INVALID_VALUE naming `arg`. */
xdev_status_t xdev_prim_extent(const char *arg, size_t count, size_t size, size_t *out);

/* The backend's size query, the temporaries from the caching allocator on
 * t->stream, then the one enqueue path (runtime/enqueue.h) with ops[0 ..
 * nwritten) written and the rest read. `name` is the primitive's name in
 * messages and trace spans ("sort"). A backend without the slot:
 * NOT_SUPPORTED naming the backend and the primitive. */
xdev_status_t xdev_prim_enqueue(xdev_prim_kind_t kind, const char *name, xdev_prim_desc_t *d,
                                const xdev_exec_target_t *t, const xdev_operand_t *ops, int nops,
                                int nwritten);

#endif
