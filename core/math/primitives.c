/* SPDX-License-Identifier: Apache-2.0 */
/* primitives.c - the parallel primitives (xdev/primitives.h): argument
 * checks (dtype, op, every operand against its allocation through
 * operands.c, alignment, overlaps, the stream), the temporary storage the
 * backend asks for from the caching allocator on the call's stream, then
 * the backend's prim table through the one enqueue path (runtime/enqueue.h:
 * capture, trace span, sanitizer, observers, XDEV_LAUNCH_BLOCKING).
 * Also the process-wide deterministic mode (XDEV_DETERMINISTIC). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "math/operands.h"
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

static const char *op_name(int op) {
    static const char *const names[] = {"sum", "prod", "min", "max", "argmin", "argmax"};
    return op >= 0 && op <= XDEV_PRIM_ARGMAX ? names[op] : "?";
}

/* The dtypes the primitives take (xdev/primitives.h). */
static xdev_status_t check_dtype(const char *what, xdev_dtype_t t) {
    const char *name = xdev_dtype_name(t);
    if (name == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "dtype %d is not an xdev_dtype_t (XDEV_DTYPE_F32 .. XDEV_DTYPE_U8)",
                         (int)t);
    if (t != XDEV_DTYPE_F32 && t != XDEV_DTYPE_F64 && t != XDEV_DTYPE_F16 && t != XDEV_DTYPE_BF16 &&
        t != XDEV_DTYPE_I32 && t != XDEV_DTYPE_I64)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "%s of dtype %s: the primitives take f32, f64, f16, bf16, i32 and i64",
                         what, name);
    return XDEV_SUCCESS;
}

static xdev_status_t check_aligned(const char *arg, const void *p, size_t size) {
    if ((uintptr_t)p % size != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p) is not aligned to its element (%zu bytes)", arg, p, size);
    return XDEV_SUCCESS;
}

static bool overlap(const xdev_operand_t *a, const xdev_operand_t *b) {
    uintptr_t a0 = (uintptr_t)a->ptr, b0 = (uintptr_t)b->ptr;
    return a0 < b0 + b->bytes && b0 < a0 + a->bytes;
}

/* ------------------------------------------------------------------ enqueue */

typedef enum prim_kind { PRIM_REDUCE, PRIM_SCAN } prim_kind_t;

static xdev_status_t call_slot(prim_kind_t kind, xdev_device_record_t *rec,
                               const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return kind == PRIM_REDUCE ? xdev_be_prim_reduce(rec, d, temp_bytes)
                               : xdev_be_prim_scan(rec, d, temp_bytes);
}

typedef struct prim_call {
    prim_kind_t kind;
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
    xdev_enqueue_span_args(q, "\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%zu", op_name(c->d->op),
                           xdev_dtype_name(c->d->dtype), c->d->count);
}

/* The backend's size query, the temporaries, then the one enqueue path
 * (ops[0] = out is written, the rest read). One place for every
 * primitive, so that each gets the same sequence. */
static xdev_status_t prim_enqueue(prim_kind_t kind, xdev_prim_desc_t *d,
                                  const xdev_exec_target_t *t, const xdev_operand_t *ops,
                                  int nops) {
    const char *what = kind == PRIM_REDUCE ? "reduce" : "scan";
    if (!(kind == PRIM_REDUCE ? XDEV_HAS(t->be, prim, reduce) : XDEV_HAS(t->be, prim, scan)))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend does not implement the parallel primitives (%s %s of "
                         "%s)",
                         t->be->name, what, op_name(d->op), xdev_dtype_name(d->dtype));
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
            return XDEV_FAIL(st, "cannot allocate the %s's %zu temporary bytes: %s", what,
                             temp_bytes, why);
        }
    }
    d->temp = temp;
    d->temp_bytes = temp_bytes;
    prim_call_t c = {kind, t->rec, d};
    xdev_op_use_t uses[2];
    xdev_enqueue_t q = {
        .kind = kind == PRIM_REDUCE ? XDEV_OP_REDUCE : XDEV_OP_SCAN,
        .name = what,
        .stream = t->stream,
        .rec = t->rec,
        .ctx = &c,
        .uses = uses,
        .nuses = xdev_operands_uses(ops, nops, 1, uses),
        .call = prim_call,
        .trace_args = prim_trace_args,
    };
    st = xdev_enqueue(&q);
    /* Stream-ordered: the block is reused only by later work on this stream. */
    if (temp != NULL) (void)xdev_alloc_free(temp);
    return st;
}

static uint32_t mode_flags(void) {
    return atomic_load(&g_deterministic) ? XDEV_PRIM_FLAG_DETERMINISTIC : 0u;
}

static xdev_status_t reduce_run(const void *in, xdev_dtype_t dtype, size_t count, xdev_prim_op_t op,
                                void *out, xdev_stream_t stream) {
    xdev_status_t st = det_ready();
    if (st != XDEV_SUCCESS) return st;
    if ((unsigned)op > XDEV_PRIM_ARGMAX)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "op %d is not an xdev_prim_op_t (XDEV_PRIM_SUM .. XDEV_PRIM_ARGMAX)",
                         (int)op);
    if ((st = check_dtype(op_name(op), dtype)) != XDEV_SUCCESS) return st;
    if (count == 0 && op != XDEV_PRIM_SUM && op != XDEV_PRIM_PROD)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s of an empty input (count = 0): it has no extremum (torch raises "
                         "too); sum and prod give their identity",
                         op_name(op));
    const size_t es = xdev_dtype_size(dtype);
    const bool arg = op == XDEV_PRIM_ARGMIN || op == XDEV_PRIM_ARGMAX;
    xdev_operand_t ops[2] = {{"out", out, arg ? sizeof(int64_t) : es}, {"in", in, 0}};
    if (!xdev_size_mul_add(count, es, 0, &ops[1].bytes))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "count = %zu elements of %zu bytes overflow the address space", count, es);
    const int nops = count > 0 ? 2 : 1; /* in may be NULL when there is nothing to read */
    xdev_exec_target_t t;
    if ((st = xdev_operands_resolve(ops, nops, stream, "reduce", &t)) != XDEV_SUCCESS) return st;
    if ((st = check_aligned("out", out, ops[0].bytes)) != XDEV_SUCCESS) return st;
    if (count > 0 && (st = check_aligned("in", in, es)) != XDEV_SUCCESS) return st;
    if (count > 0 && overlap(&ops[0], &ops[1]))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'out' [%p, +%zu) overlaps 'in' [%p, +%zu): a reduce writes its result "
                         "apart from its input",
                         out, ops[0].bytes, in, ops[1].bytes);
    xdev_prim_desc_t d = {.size = sizeof d,
                          .op = (int)op,
                          .flags = mode_flags(),
                          .dtype = dtype,
                          .in = count > 0 ? in : NULL,
                          .out = out,
                          .count = count};
    return prim_enqueue(PRIM_REDUCE, &d, &t, ops, nops);
}

static xdev_status_t scan_run(const void *in, xdev_dtype_t dtype, size_t count, xdev_prim_op_t op,
                              unsigned flags, void *out, xdev_stream_t stream) {
    xdev_status_t st = det_ready();
    if (st != XDEV_SUCCESS) return st;
    if (op != XDEV_PRIM_SUM && op != XDEV_PRIM_MIN && op != XDEV_PRIM_MAX)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "op %d (%s): a scan is XDEV_PRIM_SUM, XDEV_PRIM_MIN or XDEV_PRIM_MAX",
                         (int)op, op_name(op));
    if ((flags & ~XDEV_PRIM_EXCLUSIVE) != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "flags 0x%x: a scan takes XDEV_PRIM_EXCLUSIVE only", flags);
    if ((st = check_dtype(op_name(op), dtype)) != XDEV_SUCCESS) return st;
    if (count == 0) return XDEV_SUCCESS;
    const size_t es = xdev_dtype_size(dtype);
    xdev_operand_t ops[2] = {{"out", out, 0}, {"in", in, 0}};
    if (!xdev_size_mul_add(count, es, 0, &ops[0].bytes))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "count = %zu elements of %zu bytes overflow the address space", count, es);
    ops[1].bytes = ops[0].bytes;
    xdev_exec_target_t t;
    if ((st = xdev_operands_resolve(ops, 2, stream, "scan", &t)) != XDEV_SUCCESS) return st;
    if ((st = check_aligned("out", out, es)) != XDEV_SUCCESS ||
        (st = check_aligned("in", in, es)) != XDEV_SUCCESS)
        return st;
    if (in != out && overlap(&ops[0], &ops[1]))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'out' [%p, +%zu) overlaps 'in' [%p, +%zu); pass out == in to scan in "
                         "place, or separate buffers",
                         out, ops[0].bytes, in, ops[1].bytes);
    xdev_prim_desc_t d = {.size = sizeof d,
                          .op = (int)op,
                          .flags = mode_flags() | (flags & XDEV_PRIM_EXCLUSIVE),
                          .dtype = dtype,
                          .in = in,
                          .out = out,
                          .count = count};
    return prim_enqueue(PRIM_SCAN, &d, &t, ops, 2);
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
