/* SPDX-License-Identifier: Apache-2.0 */
/* rng.c - the public fills: argument validation, the output's device and
 * stream (operands.h), the generator, the reservation of the words the fill
 * consumes, then the backend's rng table (see xdev/rng.h for the layout). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/enqueue.h"
#include "base/error_internal.h"
#include "runtime/dispatch.h"
#include "math/operands.h"
#include "xdev/support/philox.h"
#include "math/rng_internal.h"
#include "runtime/capture.h"
#include "runtime/stream_internal.h"
#include "xdev/backend.h"

/* The ABI's enums are philox.h's (the backends index the shared code with them). */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(XDEV_RNG_FILL_UNIFORM, XDEV_PHILOX_UNIFORM) &&
                   SAME(XDEV_RNG_FILL_NORMAL, XDEV_PHILOX_NORMAL) &&
                   SAME(XDEV_RNG_FILL_INTEGERS, XDEV_PHILOX_INTEGERS) &&
                   SAME(XDEV_RNG_FILL_BERNOULLI, XDEV_PHILOX_BERNOULLI),
               "fill kinds differ from xdev/support/philox.h");
_Static_assert(SAME(XDEV_RNG_FORMAT_F32, XDEV_PHILOX_F32) &&
                   SAME(XDEV_RNG_FORMAT_F64, XDEV_PHILOX_F64) &&
                   SAME(XDEV_RNG_FORMAT_I32, XDEV_PHILOX_I32) &&
                   SAME(XDEV_RNG_FORMAT_I64, XDEV_PHILOX_I64),
               "formats differ from xdev/support/philox.h");

static const char *kind_name(xdev_rng_fill_kind_t k) {
    static const char *const names[] = {"uniform fill", "normal fill", "integer fill",
                                        "bernoulli fill"};
    return names[k];
}

/* A fill on a capturing stream: it reads its key and base from the
 * capture's cell when it runs (rng_capture.c). */
static xdev_status_t fill_captured(xdev_capture_t *cap, xdev_generator_t gen,
                                   xdev_rng_fill_desc_t *d, size_t n, unsigned words,
                                   const xdev_exec_target_t *tgt) {
    uint64_t rel = 0;
    const uint64_t *cell = NULL;
    xdev_status_t st = xdev_rng_capture_reserve(cap, gen, tgt->stream, words, n, &rel, &cell);
    if (st != XDEV_SUCCESS) return st;
    d->size = sizeof *d;
    d->count = n;
    d->seed = 0;
    d->offset = rel;
    d->philox_state = cell;
    d->device = tgt->rec->ctx;
    d->stream = tgt->stream->native;
    return xdev_be_rng_fill(tgt->rec, d);
}

/* A captured fill as the enqueue path sees it: through it like every op,
 * so that its observers see it (shadow execution keeps it for the graph's
 * replays); no span and no XDEV_LAUNCH_BLOCKING wait, as before. */
typedef struct {
    xdev_capture_t *cap;
    xdev_generator_t gen;
    xdev_rng_fill_desc_t *d;
    size_t n;
    unsigned words;
    const xdev_exec_target_t *tgt;
} captured_op_t;

static xdev_status_t captured_call(xdev_enqueue_t *q) {
    const captured_op_t *o = q->ctx;
    xdev_status_t st = fill_captured(o->cap, o->gen, o->d, o->n, o->words, o->tgt);
    q->cancel = st != XDEV_SUCCESS;
    return st;
}

/* One fill as the enqueue path (runtime/enqueue.h) sees it. */
typedef struct {
    xdev_generator_t gen;
    xdev_rng_fill_desc_t *d;
    size_t n;
    unsigned words;
} fill_op_t;

/* Reserve [start, end) of the generator's stream under its lock, held
 * across the enqueue so that a failed enqueue consumes nothing. */
static xdev_status_t fill_call(xdev_enqueue_t *q) {
    const fill_op_t *o = q->ctx;
    xdev_rng_fill_desc_t *d = o->d;
    const unsigned words = o->words;
    xdev_rng_gen_t *g = o->gen != NULL ? xdev_rng_generator_lock(o->gen)
                                       : xdev_rng_default_lock(q->rec->be->type, q->rec->id.index);
    uint64_t start = g->offset, end;
    if (start % words != 0) start += words - start % words;
    if (start < g->offset || __builtin_mul_overflow((uint64_t)o->n, (uint64_t)words, &end) ||
        __builtin_add_overflow(start, end, &end)) {
        xdev_rng_unlock(g);
        q->cancel = true; /* nothing enqueued */
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the generator's offset (%llu words) leaves no room for %zu more "
                         "elements before 2^64 words; reseed it or set a smaller offset",
                         (unsigned long long)g->offset, o->n);
    }
    d->size = sizeof *d;
    d->count = o->n;
    d->philox_state = NULL;
    d->seed = g->seed;
    d->offset = start;
    d->device = q->rec->ctx;
    d->stream = q->stream->native;
    xdev_status_t st = xdev_be_rng_fill(q->rec, d);
    if (st == XDEV_SUCCESS) g->offset = end;
    xdev_rng_unlock(g);
    return st;
}

static void fill_trace_args(xdev_enqueue_t *q) {
    const fill_op_t *o = q->ctx;
    xdev_enqueue_span_args(q, "\"kind\":%d,\"count\":%zu", (int)o->d->kind, o->n);
}

/* Run one fill whose kind-specific fields of `d` are set and checked. */
static xdev_status_t fill_run(xdev_generator_t gen, xdev_rng_fill_desc_t *d, size_t n,
                              xdev_stream_t stream) {
    const char *what = kind_name(d->kind);
    xdev_status_t st;
    if (gen != NULL && (st = xdev_generator_check(gen, "gen")) != XDEV_SUCCESS) return st;
    if (n == 0) return XDEV_SUCCESS;
    unsigned words = xdev_philox_words_per_element((int)d->format);
    xdev_operand_t op = {"out", d->out, 0};
    if (!xdev_size_mul_add(n, 4u * words, 0, &op.bytes))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "n = %zu elements overflow the address space",
                         n);
    xdev_exec_target_t tgt;
    if ((st = xdev_operands_resolve(&op, 1, stream, what, &tgt)) != XDEV_SUCCESS) return st;
    if (!XDEV_HAS(tgt.be, rng, fill))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend does not implement random numbers (rng.fill)",
                         tgt.be->name);
    if (gen != NULL && (gen->device.type != tgt.be->type || gen->device.index != tgt.index))
        return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                         "the generator belongs to %s:%d but 'out' is on %s:%d; use a generator "
                         "of %s:%d (or NULL for its default generator)",
                         xdev_device_type_name(gen->device.type), gen->device.index, tgt.be->name,
                         tgt.index, tgt.be->name, tgt.index);
    xdev_capture_t *cap = atomic_load_explicit(&tgt.stream->capture, memory_order_acquire);
    xdev_op_use_t use;
    if (XDEV_UNLIKELY(cap != NULL)) {
        captured_op_t co = {cap, gen, d, n, words, &tgt};
        xdev_enqueue_t cq = {
            .kind = XDEV_OP_RNG,
            .name = what,
            .stream = tgt.stream,
            .rec = tgt.rec,
            .ctx = &co,
            .flags = XDEV_ENQUEUE_NO_SPAN | XDEV_ENQUEUE_WAIT_LATER,
            .uses = &use,
            .nuses = xdev_operands_uses(&op, 1, 1, &use),
            .call = captured_call,
        };
        return xdev_enqueue(&cq);
    }
    fill_op_t o = {gen, d, n, words};
    xdev_enqueue_t q = {
        .kind = XDEV_OP_RNG,
        .name = what,
        .span = "rng_fill",
        .stream = tgt.stream,
        .rec = tgt.rec,
        .ctx = &o,
        .uses = &use,
        .nuses = xdev_operands_uses(&op, 1, 1, &use),
        .call = fill_call,
        .trace_args = fill_trace_args,
    };
    return xdev_enqueue(&q);
}

static xdev_status_t float_format(xdev_dtype_t dtype, xdev_rng_format_t *out) {
    if (dtype == XDEV_DTYPE_F32 || dtype == XDEV_DTYPE_F64) {
        *out = dtype == XDEV_DTYPE_F32 ? XDEV_RNG_FORMAT_F32 : XDEV_RNG_FORMAT_F64;
        return XDEV_SUCCESS;
    }
    const char *name = xdev_dtype_name(dtype);
    if (name == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "dtype %d is not an xdev_dtype_t", (int)dtype);
    return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                     "dtype %s: random fills write f32 or f64 (XDEV_DTYPE_F32, XDEV_DTYPE_F64)",
                     name);
}

xdev_status_t xdev_rng_uniform(xdev_generator_t gen, xdev_dtype_t dtype, void *out, size_t n,
                               xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_rng_fill_desc_t d = {.kind = XDEV_RNG_FILL_UNIFORM, .out = out};
    XDEV_CHECK(float_format(dtype, &d.format));
    XDEV_CHECK(fill_run(gen, &d, n, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_rng_normal(xdev_generator_t gen, xdev_dtype_t dtype, void *out, size_t n,
                              double mean, double std, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_rng_fill_desc_t d = {.kind = XDEV_RNG_FILL_NORMAL, .out = out, .mean = mean, .std = std};
    XDEV_CHECK(float_format(dtype, &d.format));
    if (!isfinite(mean) || !isfinite(std) || std < 0.0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "mean = %g, std = %g: both must be finite and std >= 0", mean, std);
    if (d.format == XDEV_RNG_FORMAT_F32 && (!isfinite((float)mean) || !isfinite((float)std)))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "mean = %g, std = %g do not fit an f32 fill (float overflows)", mean,
                             std);
    XDEV_CHECK(fill_run(gen, &d, n, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_rng_integers(xdev_generator_t gen, xdev_rng_int_t type, void *out, size_t n,
                                int64_t low, int64_t high, xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    if (type != XDEV_RNG_INT32 && type != XDEV_RNG_INT64)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "type %d is not XDEV_RNG_INT32 or XDEV_RNG_INT64", (int)type);
    if (low >= high)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "low = %lld, high = %lld: the range [low, high) is empty (low must "
                             "be less than high)",
                             (long long)low, (long long)high);
    if (type == XDEV_RNG_INT32 && (low < INT32_MIN || high > (int64_t)INT32_MAX + 1))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "low = %lld, high = %lld: an int32 fill needs INT32_MIN <= low and "
                             "high <= INT32_MAX + 1",
                             (long long)low, (long long)high);
    xdev_rng_fill_desc_t d = {
        .kind = XDEV_RNG_FILL_INTEGERS,
        .format = type == XDEV_RNG_INT32 ? XDEV_RNG_FORMAT_I32 : XDEV_RNG_FORMAT_I64,
        .out = out,
        .low = low,
        .range = (uint64_t)high - (uint64_t)low,
    };
    XDEV_CHECK(fill_run(gen, &d, n, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_rng_bernoulli(xdev_generator_t gen, float *out, size_t n, double p,
                                 xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    if (!(p >= 0.0 && p <= 1.0))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "p = %g: a probability must lie in [0, 1]",
                             p);
    xdev_rng_fill_desc_t d = {
        .kind = XDEV_RNG_FILL_BERNOULLI,
        .format = XDEV_RNG_FORMAT_F32,
        .out = out,
        .threshold = (uint64_t)(p * 4294967296.0 + 0.5), /* round(p 2^32) */
    };
    XDEV_CHECK(fill_run(gen, &d, n, stream));
    return XDEV_SUCCESS;
}
