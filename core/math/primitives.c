/* SPDX-License-Identifier: Apache-2.0 */
/* primitives.c - the parallel primitives (xdev/primitives.h): argument
 * checks (dtype, op, every operand against its allocation through
 * operands.c, alignment, overlaps, the stream), the temporary storage the
 * backend asks for from the caching allocator on the call's stream, then
 * the backend's prim table through the one enqueue path (runtime/enqueue.h:
 * capture, trace span, sanitizer, observers, XDEV_LAUNCH_BLOCKING).
 * Also the process-wide deterministic mode (XDEV_DETERMINISTIC), and the
 * checks and the enqueue every primitive shares (math/prim_internal.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "math/operands.h"
#include "math/prim_internal.h"
#include "alloc/alloc_internal.h"
#include "runtime/dispatch.h"
#include "runtime/enqueue.h"
#include "runtime/process.h"
#include "runtime/stream_internal.h"
#include "xdev/backend.h"
#include "xdev/primitives.h"

/* ------------------------------------------------------- deterministic mode */

/* XDEV_DETERMINISTIC is read once, at the first call that needs the mode; a
 * malformed value stays an error for every such call (never ignored). */
static pthread_once_t g_det_once = PTHREAD_ONCE_INIT;
static xdev_status_t g_det_env_status;
static char g_det_env_message[512];
static atomic_bool g_deterministic;

static void det_load(void) {
    bool v = false;
    g_det_env_status = xdev_env_bool("XDEV_DETERMINISTIC", false, &v);
    if (g_det_env_status != XDEV_SUCCESS)
        snprintf(g_det_env_message, sizeof g_det_env_message, "%s", xdev_last_error());
    atomic_store(&g_deterministic, v);
}

static xdev_status_t det_ready(void) {
    xdev_status_t pst = xdev_process_check(); /* pthread_once: not in a forked child */
    if (pst != XDEV_SUCCESS) return pst;
    pthread_once(&g_det_once, det_load);
    if (g_det_env_status != XDEV_SUCCESS)
        return XDEV_FAIL(g_det_env_status, "%s", g_det_env_message);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_set_deterministic(bool on) {
    XDEV_CHECK(det_ready());
    atomic_store(&g_deterministic, on);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_get_deterministic(bool *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(det_ready());
    *out = atomic_load(&g_deterministic);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------------ checks */

xdev_status_t xdev_prim_ready(void) {
    return det_ready();
}

uint32_t xdev_prim_mode_flags(void) {
    return atomic_load(&g_deterministic) ? XDEV_PRIM_FLAG_DETERMINISTIC : 0u;
}

const char *xdev_prim_op_name(int op) {
    static const char *const names[] = {"sum", "prod", "min", "max", "argmin", "argmax"};
    return op >= 0 && op <= XDEV_PRIM_ARGMAX ? names[op] : "?";
}

static xdev_status_t check_known(xdev_dtype_t t) {
    if (xdev_dtype_name(t) == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "dtype %d is not an xdev_dtype_t (XDEV_DTYPE_F32 .. XDEV_DTYPE_U64)",
                         (int)t);
    return XDEV_SUCCESS;
}

/* The dtypes reduce, scan and segmented reduce take (xdev/primitives.h). */
xdev_status_t xdev_prim_check_dtype(const char *what, xdev_dtype_t t) {
    xdev_status_t st = check_known(t);
    if (st != XDEV_SUCCESS) return st;
    if (t != XDEV_DTYPE_F32 && t != XDEV_DTYPE_F64 && t != XDEV_DTYPE_F16 && t != XDEV_DTYPE_BF16 &&
        t != XDEV_DTYPE_I32 && t != XDEV_DTYPE_I64 && t != XDEV_DTYPE_U32 && t != XDEV_DTYPE_U64)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "%s of dtype %s: the primitive takes f32, f64, f16, bf16, i32, i64, u32 "
                         "and u64",
                         what, xdev_dtype_name(t));
    return XDEV_SUCCESS;
}

/* Every real dtype: the complex ones have no order. */
xdev_status_t xdev_prim_check_key_dtype(const char *what, xdev_dtype_t t) {
    xdev_status_t st = check_known(t);
    if (st != XDEV_SUCCESS) return st;
    if (t == XDEV_DTYPE_C64 || t == XDEV_DTYPE_C128)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "%s of dtype %s: complex numbers have no order; the primitive takes u8, "
                         "u16, u32, u64, i8, i16, i32, i64, f16, bf16, f32 and f64",
                         what, xdev_dtype_name(t));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_check_op(xdev_prim_op_t op) {
    if ((unsigned)op > XDEV_PRIM_ARGMAX)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "op %d is not an xdev_prim_op_t (XDEV_PRIM_SUM .. XDEV_PRIM_ARGMAX)",
                         (int)op);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_check_aligned(const char *arg, const void *p, size_t size) {
    if ((uintptr_t)p % size != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p) is not aligned to its element (%zu bytes)", arg, p, size);
    return XDEV_SUCCESS;
}

bool xdev_prim_overlap(const xdev_operand_t *a, const xdev_operand_t *b) {
    uintptr_t a0 = (uintptr_t)a->ptr, b0 = (uintptr_t)b->ptr;
    return a->bytes > 0 && b->bytes > 0 && a0 < b0 + b->bytes && b0 < a0 + a->bytes;
}

xdev_status_t xdev_prim_check_apart(const xdev_operand_t *a, const xdev_operand_t *b,
                                    const char *why) {
    if (xdev_prim_overlap(a, b))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "'%s' [%p, +%zu) overlaps '%s' [%p, +%zu): %s",
                         a->name, a->ptr, a->bytes, b->name, b->ptr, b->bytes, why);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_check_disjoint(const xdev_operand_t *ops, int nops, int nwritten) {
    for (int i = 0; i < nwritten; i++)
        for (int j = i + 1; j < nops; j++) {
            xdev_status_t st = xdev_prim_check_apart(
                &ops[i], &ops[j], "an output may not overlap another operand of the call");
            if (st != XDEV_SUCCESS) return st;
        }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_extent(const char *arg, size_t count, size_t size, size_t *out) {
    if (!xdev_size_mul_add(count, size, 0, out))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "count = %zu elements of %zu bytes ('%s') overflow the address space",
                         count, size, arg);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------------ enqueue */

static bool has_slot(xdev_prim_kind_t kind, const xdev_backend_t *be) {
    switch (kind) {
    case XDEV_PRIM_K_REDUCE:
        return XDEV_HAS(be, prim, reduce);
    case XDEV_PRIM_K_SCAN:
        return XDEV_HAS(be, prim, scan);
    case XDEV_PRIM_K_SORT:
        return XDEV_HAS(be, prim, sort);
    case XDEV_PRIM_K_SEGMENTED_SORT:
        return XDEV_HAS(be, prim, segmented_sort);
    case XDEV_PRIM_K_SEGMENTED_REDUCE:
        return XDEV_HAS(be, prim, segmented_reduce);
    case XDEV_PRIM_K_HISTOGRAM_EVEN:
        return XDEV_HAS(be, prim, histogram_even);
    case XDEV_PRIM_K_SELECT_FLAGGED:
        return XDEV_HAS(be, prim, select_flagged);
    case XDEV_PRIM_K_UNIQUE:
        return XDEV_HAS(be, prim, unique);
    case XDEV_PRIM_K_RUN_LENGTH_ENCODE:
        return XDEV_HAS(be, prim, run_length_encode);
    case XDEV_PRIM_K_SELECT_COMPARE:
        return XDEV_HAS(be, prim, select_compare);
    }
    return false;
}

static xdev_status_t call_slot(xdev_prim_kind_t kind, xdev_device_record_t *rec,
                               const xdev_prim_desc_t *d, size_t *temp_bytes) {
    switch (kind) {
    case XDEV_PRIM_K_REDUCE:
        return xdev_be_prim_reduce(rec, d, temp_bytes);
    case XDEV_PRIM_K_SCAN:
        return xdev_be_prim_scan(rec, d, temp_bytes);
    case XDEV_PRIM_K_SORT:
        return xdev_be_prim_sort(rec, d, temp_bytes);
    case XDEV_PRIM_K_SEGMENTED_SORT:
        return xdev_be_prim_segmented_sort(rec, d, temp_bytes);
    case XDEV_PRIM_K_SEGMENTED_REDUCE:
        return xdev_be_prim_segmented_reduce(rec, d, temp_bytes);
    case XDEV_PRIM_K_HISTOGRAM_EVEN:
        return xdev_be_prim_histogram_even(rec, d, temp_bytes);
    case XDEV_PRIM_K_SELECT_FLAGGED:
        return xdev_be_prim_select_flagged(rec, d, temp_bytes);
    case XDEV_PRIM_K_UNIQUE:
        return xdev_be_prim_unique(rec, d, temp_bytes);
    case XDEV_PRIM_K_RUN_LENGTH_ENCODE:
        return xdev_be_prim_run_length_encode(rec, d, temp_bytes);
    case XDEV_PRIM_K_SELECT_COMPARE:
        return xdev_be_prim_select_compare(rec, d, temp_bytes);
    }
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "primitive kind %d", (int)kind);
}

/* The observers' kind of op (runtime/enqueue.h). */
static xdev_op_kind_t op_kind(xdev_prim_kind_t kind) {
    switch (kind) {
    case XDEV_PRIM_K_SCAN:
        return XDEV_OP_SCAN;
    case XDEV_PRIM_K_SORT:
    case XDEV_PRIM_K_SEGMENTED_SORT:
        return XDEV_OP_SORT;
    case XDEV_PRIM_K_HISTOGRAM_EVEN:
        return XDEV_OP_HISTOGRAM;
    case XDEV_PRIM_K_SELECT_FLAGGED:
    case XDEV_PRIM_K_SELECT_COMPARE:
    case XDEV_PRIM_K_UNIQUE:
    case XDEV_PRIM_K_RUN_LENGTH_ENCODE:
        return XDEV_OP_SELECT;
    default:
        return XDEV_OP_REDUCE;
    }
}

typedef struct prim_call {
    xdev_prim_kind_t kind;
    xdev_device_record_t *rec;
    xdev_prim_desc_t *d;
} prim_call_t;

static xdev_status_t prim_call(xdev_enqueue_t *q) {
    const prim_call_t *c = q->ctx;
    size_t again = c->d->temp_bytes;
    return call_slot(c->kind, c->rec, c->d, &again);
}

static void prim_trace_args(xdev_enqueue_t *q) {
    const prim_call_t *c = q->ctx;
    if (c->kind == XDEV_PRIM_K_REDUCE || c->kind == XDEV_PRIM_K_SCAN ||
        c->kind == XDEV_PRIM_K_SEGMENTED_REDUCE)
        xdev_enqueue_span_args(q, "\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%zu",
                               xdev_prim_op_name(c->d->op), xdev_dtype_name(c->d->dtype),
                               c->d->count);
    else
        xdev_enqueue_span_args(q, "\"dtype\":\"%s\",\"count\":%zu", xdev_dtype_name(c->d->dtype),
                               c->d->count);
}

/* One place for every primitive, so that each gets the same sequence. */
xdev_status_t xdev_prim_enqueue(xdev_prim_kind_t kind, const char *name, xdev_prim_desc_t *d,
                                const xdev_exec_target_t *t, const xdev_operand_t *ops, int nops,
                                int nwritten) {
    if (!has_slot(kind, t->be))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend does not implement the parallel primitive %s (dtype %s)",
                         t->be->name, name, xdev_dtype_name(d->dtype));
    d->size = sizeof *d;
    d->device = t->rec->ctx;
    d->stream = t->stream->native;
    size_t temp_bytes = 0;
    xdev_status_t st = call_slot(kind, t->rec, d, &temp_bytes);
    if (st != XDEV_SUCCESS) return st;
    void *temp = NULL;
    if (temp_bytes > 0) {
        st = xdev_alloc_malloc_on(t->stream, temp_bytes, &temp);
        if (st != XDEV_SUCCESS) {
            char why[1024];
            snprintf(why, sizeof why, "%s", xdev_last_error());
            return XDEV_FAIL(st, "cannot allocate the %s's %zu temporary bytes: %s", name,
                             temp_bytes, why);
        }
    }
    d->temp = temp;
    d->temp_bytes = temp_bytes;
    prim_call_t c = {kind, t->rec, d};
    xdev_op_use_t uses[XDEV_OP_MAX_USES];
    xdev_enqueue_t q = {
        .kind = op_kind(kind),
        .name = name,
        .stream = t->stream,
        .rec = t->rec,
        .ctx = &c,
        .uses = uses,
        .nuses = xdev_operands_uses(ops, nops, nwritten, uses),
        .call = prim_call,
        .trace_args = prim_trace_args,
    };
    st = xdev_enqueue(&q);
    /* Stream-ordered: the block is reused only by later work on this stream. */
    if (temp != NULL) (void)xdev_alloc_free(temp);
    return st;
}

static xdev_status_t reduce_run(const void *in, xdev_dtype_t dtype, size_t count, xdev_prim_op_t op,
                                void *out, xdev_stream_t stream) {
    xdev_status_t st = det_ready();
    if (st != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_op(op)) != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_dtype(xdev_prim_op_name(op), dtype)) != XDEV_SUCCESS) return st;
    if (count == 0 && op != XDEV_PRIM_SUM && op != XDEV_PRIM_PROD)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s of an empty input (count = 0): it has no extremum (torch raises "
                         "too); sum and prod give their identity",
                         xdev_prim_op_name(op));
    const size_t es = xdev_dtype_size(dtype);
    const bool arg = op == XDEV_PRIM_ARGMIN || op == XDEV_PRIM_ARGMAX;
    xdev_operand_t ops[2] = {{"out", out, arg ? sizeof(int64_t) : es}, {"in", in, 0}};
    if (!xdev_size_mul_add(count, es, 0, &ops[1].bytes))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "count = %zu elements of %zu bytes overflow the address space", count, es);
    const int nops = count > 0 ? 2 : 1; /* in may be NULL when there is nothing to read */
    xdev_exec_target_t t;
    if ((st = xdev_operands_resolve(ops, nops, stream, "reduce", &t)) != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_aligned("out", out, ops[0].bytes)) != XDEV_SUCCESS) return st;
    if (count > 0 && (st = xdev_prim_check_aligned("in", in, es)) != XDEV_SUCCESS) return st;
    if (count > 0 && xdev_prim_overlap(&ops[0], &ops[1]))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'out' [%p, +%zu) overlaps 'in' [%p, +%zu): a reduce writes its result "
                         "apart from its input",
                         out, ops[0].bytes, in, ops[1].bytes);
    xdev_prim_desc_t d = {.size = sizeof d,
                          .op = (int)op,
                          .flags = xdev_prim_mode_flags(),
                          .dtype = dtype,
                          .in = count > 0 ? in : NULL,
                          .out = out,
                          .count = count};
    return xdev_prim_enqueue(XDEV_PRIM_K_REDUCE, "reduce", &d, &t, ops, nops, 1);
}

static xdev_status_t scan_run(const void *in, xdev_dtype_t dtype, size_t count, xdev_prim_op_t op,
                              unsigned flags, void *out, xdev_stream_t stream) {
    xdev_status_t st = det_ready();
    if (st != XDEV_SUCCESS) return st;
    if (op != XDEV_PRIM_SUM && op != XDEV_PRIM_MIN && op != XDEV_PRIM_MAX)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "op %d (%s): a scan is XDEV_PRIM_SUM, XDEV_PRIM_MIN or XDEV_PRIM_MAX",
                         (int)op, xdev_prim_op_name(op));
    if ((flags & ~XDEV_PRIM_EXCLUSIVE) != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "flags 0x%x: a scan takes XDEV_PRIM_EXCLUSIVE only", flags);
    if ((st = xdev_prim_check_dtype(xdev_prim_op_name(op), dtype)) != XDEV_SUCCESS) return st;
    if (count == 0) return XDEV_SUCCESS;
    const size_t es = xdev_dtype_size(dtype);
    xdev_operand_t ops[2] = {{"out", out, 0}, {"in", in, 0}};
    if (!xdev_size_mul_add(count, es, 0, &ops[0].bytes))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "count = %zu elements of %zu bytes overflow the address space", count, es);
    ops[1].bytes = ops[0].bytes;
    xdev_exec_target_t t;
    if ((st = xdev_operands_resolve(ops, 2, stream, "scan", &t)) != XDEV_SUCCESS) return st;
    if ((st = xdev_prim_check_aligned("out", out, es)) != XDEV_SUCCESS ||
        (st = xdev_prim_check_aligned("in", in, es)) != XDEV_SUCCESS)
        return st;
    if (in != out && xdev_prim_overlap(&ops[0], &ops[1]))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'out' [%p, +%zu) overlaps 'in' [%p, +%zu); pass out == in to scan in "
                         "place, or separate buffers",
                         out, ops[0].bytes, in, ops[1].bytes);
    xdev_prim_desc_t d = {.size = sizeof d,
                          .op = (int)op,
                          .flags = xdev_prim_mode_flags() | (flags & XDEV_PRIM_EXCLUSIVE),
                          .dtype = dtype,
                          .in = in,
                          .out = out,
                          .count = count};
    return xdev_prim_enqueue(XDEV_PRIM_K_SCAN, "scan", &d, &t, ops, 2, 1);
}

/* The public calls: their XDEV_CHECK puts the public name in front of the
 * message of whichever step failed. */
xdev_status_t xdev_prim_reduce(const void *in, xdev_dtype_t dtype, size_t count, xdev_prim_op_t op,
                               void *out, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(reduce_run(in, dtype, count, op, out, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_prim_scan(const void *in, xdev_dtype_t dtype, size_t count, xdev_prim_op_t op,
                             unsigned flags, void *out, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(scan_run(in, dtype, count, op, flags, out, stream));
    return XDEV_SUCCESS;
}
