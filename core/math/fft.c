/* SPDX-License-Identifier: Apache-2.0 */
/* fft.c - the public FFT API: descriptor validation and normalisation into
 * a plan-cache key, operand device and stream resolution, normalisation
 * factors, the per-exec work area, then the backend's exec slot. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/enqueue.h"
#include "base/error_internal.h"
#include "alloc/alloc_internal.h"
#include "base/thread_heap.h"
#include "runtime/dispatch.h"
#include "math/fft_plan_cache.h"
#include "math/operands.h"
#include "runtime/stream_internal.h"
#include "xdev/allocator.h"
#include "xdev/backend.h"
#include "xdev/memory.h"

/* Copy a caller's descriptor, accepting shorter (older) ones. */
static xdev_status_t read_desc(const xdev_fft_desc_t *in, xdev_fft_desc_t *out) {
    if (in == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'desc' is NULL");
    if (in->size < offsetof(xdev_fft_desc_t, odist) + sizeof in->odist)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "desc->size = %zu; set it to sizeof(xdev_fft_desc_t) (%zu), e.g. with "
                         "xdev_fft_desc_basic",
                         in->size, sizeof(xdev_fft_desc_t));
    memset(out, 0, sizeof *out);
    memcpy(out, in, in->size < sizeof *out ? in->size : sizeof *out);
    return XDEV_SUCCESS;
}

static xdev_status_t check_basic(const xdev_fft_desc_t *d) {
    if ((unsigned)d->type > XDEV_FFT_C2R)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "type %d is not XDEV_FFT_C2C, XDEV_FFT_R2C or XDEV_FFT_C2R", (int)d->type);
    if ((unsigned)d->precision > XDEV_FFT_F64)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "precision %d is not XDEV_FFT_F32 or XDEV_FFT_F64", (int)d->precision);
    if (d->rank < 1 || d->rank > XDEV_FFT_MAX_RANK)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "rank %d is not supported (1, 2 or 3)", d->rank);
    for (int i = 0; i < d->rank; i++)
        if (d->n[i] < 1)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "n[%d] = %lld: sizes must be positive", i,
                             (long long)d->n[i]);
    if (d->batch < 1)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "batch = %lld must be at least 1",
                         (long long)d->batch);
    return XDEV_SUCCESS;
}

/* Fill one side's layout (embeddings, stride, distance) from the logical
 * dims `dims`, defaulting zeros, and compute the bytes it spans. */
static xdev_status_t side_layout(const char *side, int rank, const int64_t *dims,
                                 const int64_t *embed_in, int64_t stride_in, int64_t dist_in,
                                 int64_t batch, size_t esize, int64_t *embed, int64_t *stride,
                                 int64_t *dist, size_t *bytes) {
    size_t span; /* elements one transform occupies, times the stride */
    for (int i = 0; i < XDEV_FFT_MAX_RANK; i++)
        embed[i] = 0;
    for (int i = rank - 1; i >= 0; i--) {
        embed[i] = i == 0 || embed_in[i] == 0 ? dims[i] : embed_in[i];
        if (embed[i] < dims[i])
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "%cnembed[%d] = %lld is less than the %s's %lld elements in that "
                             "dimension",
                             side[0], i, (long long)embed[i], side, (long long)dims[i]);
    }
    if (stride_in < 0 || dist_in < 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%cstride = %lld, %cdist = %lld: strides and distances must not be "
                         "negative (0 = contiguous)",
                         side[0], (long long)stride_in, side[0], (long long)dist_in);
    *stride = stride_in ? stride_in : 1;
    size_t p = 1, last = 0; /* offset of the last element, in elements */
    for (int i = rank - 1; i >= 0; i--) {
        if (!xdev_size_mul_add((size_t)(dims[i] - 1), p, last, &last) ||
            !xdev_size_mul_add(p, (size_t)embed[i], 0, &p))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the %s layout overflows", side);
    }
    if (!xdev_size_mul_add(last, (size_t)*stride, 0, &last) ||
        !xdev_size_mul_add(p, (size_t)*stride, 0, &span) || span > INT64_MAX)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the %s layout overflows", side);
    *dist = dist_in ? dist_in : (int64_t)span;
    size_t total;
    if (!xdev_size_mul_add((size_t)(batch - 1), (size_t)*dist, last + 1, &total) ||
        !xdev_size_mul_add(total, esize, 0, bytes))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the %s layout overflows", side);
    return XDEV_SUCCESS;
}

/* Validate `d` and turn it into a normalised key; *in_bytes and *out_bytes =
 * the extents the transform touches. */
static xdev_status_t make_key(const xdev_fft_desc_t *d, xdev_fft_key_t *k, size_t *in_bytes,
                              size_t *out_bytes) {
    xdev_status_t st = check_basic(d);
    if (st != XDEV_SUCCESS) return st;
    memset(k, 0, sizeof *k);
    k->type = d->type;
    k->precision = d->precision;
    k->rank = d->rank;
    k->batch = d->batch;
    int64_t in_dims[XDEV_FFT_MAX_RANK], out_dims[XDEV_FFT_MAX_RANK];
    for (int i = 0; i < d->rank; i++) {
        k->n[i] = d->n[i];
        in_dims[i] = out_dims[i] = d->n[i];
    }
    int last = d->rank - 1;
    if (d->type == XDEV_FFT_R2C) out_dims[last] = d->n[last] / 2 + 1;
    if (d->type == XDEV_FFT_C2R) in_dims[last] = d->n[last] / 2 + 1;
    size_t real = d->precision == XDEV_FFT_F32 ? sizeof(float) : sizeof(double);
    size_t in_es = d->type == XDEV_FFT_R2C ? real : 2 * real;
    size_t out_es = d->type == XDEV_FFT_C2R ? real : 2 * real;
    st = side_layout("input", d->rank, in_dims, d->inembed, d->istride, d->idist, d->batch, in_es,
                     k->inembed, &k->istride, &k->idist, in_bytes);
    if (st != XDEV_SUCCESS) return st;
    return side_layout("output", d->rank, out_dims, d->onembed, d->ostride, d->odist, d->batch,
                       out_es, k->onembed, &k->ostride, &k->odist, out_bytes);
}

static xdev_status_t scale_for(const xdev_fft_desc_t *d, xdev_fft_direction_t dir,
                               xdev_fft_norm_t norm, double *scale) {
    if (dir != XDEV_FFT_FORWARD && dir != XDEV_FFT_INVERSE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "direction %d is not XDEV_FFT_FORWARD (-1) or XDEV_FFT_INVERSE (1)",
                         (int)dir);
    if ((unsigned)norm > XDEV_FFT_NORM_FORWARD)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "norm %d is not an xdev_fft_norm_t (NONE, BACKWARD, ORTHO, FORWARD)",
                         (int)norm);
    double n = 1.0;
    for (int i = 0; i < d->rank; i++)
        n *= (double)d->n[i];
    switch (norm) {
    case XDEV_FFT_NORM_BACKWARD:
        *scale = dir == XDEV_FFT_INVERSE ? 1.0 / n : 1.0;
        break;
    case XDEV_FFT_NORM_FORWARD:
        *scale = dir == XDEV_FFT_FORWARD ? 1.0 / n : 1.0;
        break;
    case XDEV_FFT_NORM_ORTHO:
        *scale = 1.0 / sqrt(n);
        break;
    default:
        *scale = 1.0;
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_fft_norm_scale(const xdev_fft_desc_t *desc, xdev_fft_direction_t direction,
                                  xdev_fft_norm_t norm, double *scale) {
    XDEV_REQUIRE_ARG(scale);
    xdev_fft_desc_t d;
    XDEV_CHECK(read_desc(desc, &d));
    XDEV_CHECK(check_basic(&d));
    XDEV_CHECK(scale_for(&d, direction, norm, scale));
    return XDEV_SUCCESS;
}

/* A thread's last transform, so that the same one again (the same
 * descriptor, on the same stream) skips the descriptor's validation and
 * normalisation and the plan cache's key hash: the descriptor as read, the
 * extents make_key computed from it (a function of it alone), the stream
 * (slot and generation) of its key, where the cache had its plan and that
 * plan's work size (allocated before the cache's lock next time). The
 * plan is taken again only while the cache has dropped nothing since
 * (xdev_fft_cache_acquire_again), so a clear, an eviction or a smaller
 * max_size is seen at once. Written after a successful exec only. */
typedef struct {
    xdev_fft_desc_t desc; /* size 0: none yet */
    size_t in_bytes, out_bytes;
    xdev_stream_t stream;
    uint32_t stream_generation;
    xdev_fft_hit_t hit;
    size_t work_size;
    /* scale_for's answer for this descriptor, direction and norm (both
     * valid: a memo is written after a successful exec only) */
    xdev_fft_direction_t direction;
    xdev_fft_norm_t norm;
    double scale;
} fft_memo_t;

/* Per thread, on the heap (base/thread_heap.h: libxdev's static TLS stays
 * small), reached through an initial-exec pointer: a pointer read, where a
 * _Thread_local memo called __tls_get_addr (~40 instructions) each exec. */
static xdev_thread_heap_t g_memo_heap = XDEV_THREAD_HEAP_INIT(sizeof(fft_memo_t), NULL);
static _Thread_local void *tls_memo __attribute__((tls_model("initial-exec")));

/* This thread's memo; NULL only when there was no memory for it (every
 * exec then goes the whole way). */
static fft_memo_t *memo_get(void) {
    void *m = tls_memo;
    return m != NULL ? m : xdev_thread_heap_get(&g_memo_heap, &tls_memo);
}

/* The caller's descriptor is the memo's: every field equal (not the
 * padding after `rank`, which a caller's copy need not keep). */
static bool memo_same_desc(const xdev_fft_desc_t *in, const fft_memo_t *m) {
    const xdev_fft_desc_t *md = &m->desc;
    return in->size == sizeof *in && md->size == sizeof *in && in->type == md->type &&
           in->precision == md->precision && in->rank == md->rank &&
           memcmp(in->n, md->n, sizeof *in - offsetof(xdev_fft_desc_t, n)) == 0;
}

/* The stream part of a plan's key: its plans are the stream's (cuFFT binds
 * a plan to one), and a destroyed stream's slot made again is a new stream. */
static void key_set_stream(xdev_fft_key_t *key, xdev_stream_t stream, uint32_t generation) {
    key->stream = (int64_t)(uintptr_t)stream;
    key->stream_generation = generation;
}

/* One transform as the enqueue path (runtime/enqueue.h) sees it. */
typedef struct {
    xdev_fft_cache_t *c;
    xdev_fft_key_t *key; /* filled by make_key unless have_key */
    bool have_key;
    bool transient;             /* x->plan is this exec's own (max_size 0, a closing stream) */
    void *made;                 /* a plan made for this exec whose work area it did not hold
                                   yet: not cached or counted (xdev_fft_cache_insert_made) */
    size_t made_work;           /* its work size */
    uint32_t stream_generation; /* tgt's stream's, read once by xdev_fft_exec */
    xdev_fft_hit_t hit;
    xdev_fft_exec_desc_t *x;
    const xdev_exec_target_t *tgt;
    size_t memo_work; /* the memo's work size when it hits (allocated before the lock), else 0 */
    void *work;       /* the work area fft_call allocated (freed by fft_finish) */
    size_t work_have; /* its bytes */
    size_t need;      /* the plan's work size (the memo's next) */
    const xdev_fft_desc_t *d;
    xdev_fft_direction_t direction;
} fft_op_t;

/* How many times one exec takes its plan at most. A round after the first
 * follows a work area found too small, allocated again unlocked; the plan
 * can outgrow it again only when it was dropped meanwhile and made again
 * with a larger work size. */
#define FFT_TAKE_ROUNDS 4

/* A work area's allocation failed with `st`: the exec fails naming it. */
static __attribute__((noinline, cold)) xdev_status_t work_failed(xdev_status_t st, size_t bytes) {
    char why[1024];
    snprintf(why, sizeof why, "%s", xdev_last_error());
    return XDEV_FAIL(st, "cannot allocate the FFT plan's %zu-byte work area: %s", bytes, why);
}

/* The work area, `bytes` on the exec's stream, with the cache NOT locked:
 * an allocation that fails calls the OOM observers, which may call this
 * device's FFT functions (they take its cache's lock). A smaller one
 * allocated before goes first (stream-ordered: nothing used it). Inline:
 * a memo hit allocates the memo's size with it before every exec. */
static inline __attribute__((always_inline)) xdev_status_t alloc_work(fft_op_t *o, size_t bytes) {
    if (o->work != NULL) {
        (void)xdev_alloc_free(o->work);
        o->work = NULL;
        o->work_have = 0;
    }
    xdev_status_t st = xdev_alloc_malloc_on(o->tgt->stream, bytes, &o->work);
    if (__builtin_expect(st != XDEV_SUCCESS, 0)) {
        o->work = NULL;
        return work_failed(st, bytes);
    }
    o->work_have = bytes;
    return XDEV_SUCCESS;
}

/* With the cache locked: the plan into x->plan and its work size into
 * *need when its work area fits in what the exec holds (counted: a hit, or
 * a miss that made it), else nothing taken or counted (x->plan NULL) and
 * *need what it takes; a plan that had to be made then is kept in o->made,
 * and one made before that is not used after all goes to *spare.
 * Round 1 of a memo hit takes the memo's entry again without hashing. */
static inline __attribute__((always_inline)) xdev_status_t take_locked(fft_op_t *o, size_t *need,
                                                                       void **spare) {
    xdev_fft_exec_desc_t *x = o->x;
    const xdev_exec_target_t *tgt = o->tgt;
    /* fft_plans is set before closing is read, both seq_cst: a destroy that
     * sets closing and then finds fft_plans unset (it skips the sweep) is
     * ordered before this read, which then sees closing and caches nothing.
     * closing is read under the cache's lock: a destroy that sees fft_plans
     * sweeps under this lock after setting closing (fft_plan_cache.h). */
    if (!atomic_load_explicit(&tgt->stream->fft_plans, memory_order_relaxed))
        atomic_store_explicit(&tgt->stream->fft_plans, true, memory_order_seq_cst);
    const unsigned how =
        (atomic_load_explicit(&tgt->stream->closing, memory_order_seq_cst) ? XDEV_FFT_TAKE_NO_INSERT
                                                                           : 0u) |
        (atomic_load_explicit(&tgt->stream->capture, memory_order_acquire) != NULL
             ? XDEV_FFT_TAKE_CAPTURED
             : 0u);
    if (o->made != NULL) { /* made in an earlier round; the exec now holds its work area */
        xdev_fft_cache_insert_made(o->c, o->key, how, o->made, o->made_work, o->work_have, &x->plan,
                                   need, &o->transient, &o->hit, spare);
        o->made = NULL; /* cached, transient, or *spare */
        return XDEV_SUCCESS;
    }
    /* o->hit: the memo's (a memo hit), the last round's, or none */
    if (xdev_fft_cache_acquire_again(o->c, &o->hit, how, o->work_have, &x->plan, need))
        return XDEV_SUCCESS;
    if (!o->have_key) { /* the memo's descriptor: valid, its key made now */
        size_t in_bytes, out_bytes;
        xdev_status_t st = make_key(o->d, o->key, &in_bytes, &out_bytes);
        if (st != XDEV_SUCCESS) return st;
        key_set_stream(o->key, tgt->stream, o->stream_generation);
        o->have_key = true;
    }
    xdev_status_t st = xdev_fft_cache_acquire_hit(o->c, o->key, how, o->work_have, &x->plan, need,
                                                  &o->transient, &o->hit);
    if (st == XDEV_SUCCESS && *need > o->work_have && x->plan != NULL) {
        o->made = x->plan; /* made, too big for the area held: this exec's own for now */
        o->made_work = *need;
        x->plan = NULL;
    }
    return st;
}

/* With the cache locked and the plan taken: enqueue it with the work area
 * (the plan's `need` bytes of it). */
static inline __attribute__((always_inline)) xdev_status_t exec_locked(fft_op_t *o, size_t need) {
    xdev_fft_exec_desc_t *x = o->x;
    x->work = need > 0 ? o->work : NULL;
    x->work_size = need;
    o->need = need;
    return xdev_be_fft_exec(o->tgt->rec, x);
}

/* One round with the cache locked: take (or insert the plan made before),
 * exec when taken. *taken says whether it ran; a plan made and then not
 * used (another exec cached one meanwhile) is destroyed after unlocking. */
static inline __attribute__((always_inline)) xdev_status_t round_locked(fft_op_t *o, size_t *need,
                                                                        bool *taken) {
    void *spare = NULL;
    xdev_fft_cache_lock(o->c);
    xdev_status_t st = take_locked(o, need, &spare);
    *taken = st == XDEV_SUCCESS && o->x->plan != NULL;
    if (*taken) st = exec_locked(o, *need);
    if (!o->transient) o->x->plan = NULL; /* the cache's: nothing for fft_finish to release */
    xdev_fft_cache_unlock(o->c);
    if (__builtin_expect(spare != NULL, 0))
        xdev_fft_cache_destroy_plan(o->c, spare); /* never ran */
    return st;
}

/* fft_call's later rounds: the plan needs `need` bytes, more than the exec
 * holds. Unlocked, allocate them, then look again. Out of line: only a memo
 * miss with a work area, or a plan that grew, comes here. */
static __attribute__((noinline)) xdev_status_t fft_call_again(fft_op_t *o, size_t need) {
    for (int round = 1;; round++) {
        if (round == FFT_TAKE_ROUNDS)
            return XDEV_FAIL(XDEV_ERROR_BACKEND,
                             "the FFT plan's work area grew on each of %d takes (to %zu bytes): "
                             "its plan was dropped from the cache and made again larger each time",
                             FFT_TAKE_ROUNDS, need);
        xdev_status_t st = alloc_work(o, need);
        if (st != XDEV_SUCCESS) return st;
        bool taken;
        st = round_locked(o, &need, &taken);
        if (st != XDEV_SUCCESS || taken) return st;
    }
}

/* The plan is taken and executed with the cache locked (a cached plan is
 * never evicted while an exec enqueues it, nor run by two execs at once);
 * its work area is allocated unlocked (alloc_work says why): before the
 * lock at the memo's size when the memo hits, else after a first look found
 * the plan's size (fft_call_again). */
static inline __attribute__((always_inline)) xdev_status_t fft_call(xdev_enqueue_t *q) {
    fft_op_t *o = q->ctx;
    xdev_status_t st;
    if (o->memo_work > 0) { /* the memo's plan, as it was last time */
        st = alloc_work(o, o->memo_work);
        if (st != XDEV_SUCCESS) return st;
    }
    size_t need = 0;
    bool taken;
    st = round_locked(o, &need, &taken);
    if (__builtin_expect(st != XDEV_SUCCESS || taken, 1)) return st;
    return fft_call_again(o, need);
}

static void fft_trace_args(xdev_enqueue_t *q) {
    const fft_op_t *o = q->ctx;
    xdev_enqueue_span_args(q, "\"rank\":%d,\"n0\":%lld,\"batch\":%lld,\"direction\":%d", o->d->rank,
                           (long long)o->d->n[0], (long long)o->d->batch, (int)o->direction);
}

/* After the span, whatever the status (a failed call leaks nothing): a
 * transient plan (max_size 0, a closing stream) waits, unlocked, then is
 * released; the work area is freed (stream-ordered: the block is reused
 * only by later work on this stream). */
static xdev_status_t fft_finish(xdev_enqueue_t *q, xdev_status_t st) {
    fft_op_t *o = q->ctx;
    if (o->made != NULL) xdev_fft_cache_destroy_plan(o->c, o->made); /* it never ran */
    if (o->x->plan != NULL) {
        if (st == XDEV_SUCCESS) st = xdev_be_stream_synchronize(q->rec, q->stream->native);
        xdev_fft_cache_destroy_plan(o->c, o->x->plan);
    }
    if (o->work != NULL) (void)xdev_alloc_free(o->work);
    return st;
}

xdev_status_t xdev_fft_exec(const xdev_fft_desc_t *desc, void *in, void *out,
                            xdev_fft_direction_t direction, xdev_fft_norm_t norm,
                            xdev_stream_t stream) {
    XDEV_CHECK(xdev_core_ensure_init());
    fft_memo_t *m = memo_get();
    xdev_fft_desc_t d;
    const xdev_fft_desc_t *dp; /* the descriptor (the caller's when it is the memo's) */
    xdev_fft_key_t key;
    size_t in_bytes, out_bytes;
    bool same = desc != NULL && m != NULL && memo_same_desc(desc, m);
    if (same) { /* validated and measured before, with these very fields */
        dp = desc;
        in_bytes = m->in_bytes;
        out_bytes = m->out_bytes;
    } else {
        XDEV_CHECK(read_desc(desc, &d));
        XDEV_CHECK(make_key(&d, &key, &in_bytes, &out_bytes));
        dp = &d;
    }
    double scale;
    if (same && m->direction == direction && m->norm == norm)
        scale = m->scale; /* scale_for(dp, direction, norm) then, and dp is unchanged */
    else
        XDEV_CHECK(scale_for(dp, direction, norm, &scale));
    if (dp->type == XDEV_FFT_R2C && direction != XDEV_FFT_FORWARD)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "an r2c transform is always XDEV_FFT_FORWARD (use c2r for the "
                             "inverse)");
    if (dp->type == XDEV_FFT_C2R && direction != XDEV_FFT_INVERSE)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "a c2r transform is always XDEV_FFT_INVERSE (use r2c for the "
                             "forward)");
    xdev_operand_t ops[2] = {{"out", out, out_bytes}, {"in", in, in_bytes}};
    xdev_exec_target_t tgt;
    XDEV_CHECK(xdev_operands_resolve(ops, 2, stream, "FFT", &tgt));
    uint32_t sgen = atomic_load_explicit(&tgt.stream->hdr.generation, memory_order_relaxed);
    if (!same) key_set_stream(&key, tgt.stream, sgen);
    uintptr_t i0 = (uintptr_t)in, o0 = (uintptr_t)out;
    if (in != out && i0 < o0 + out_bytes && o0 < i0 + in_bytes)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "in (%p, %zu bytes) and out (%p, %zu bytes) overlap; pass in == out "
                             "for an in-place transform, or separate buffers",
                             in, in_bytes, out, out_bytes);
    if (!XDEV_HAS(tgt.be, fft, exec)) /* the group fft.plan, whole */
        return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "the %s backend does not implement FFT (%s, %s precision)",
                             tgt.be->name,
                             dp->type == XDEV_FFT_C2C   ? "c2c"
                             : dp->type == XDEV_FFT_R2C ? "r2c"
                                                        : "c2r",
                             dp->precision == XDEV_FFT_F32 ? "f32" : "f64");
    xdev_fft_cache_t *c;
    XDEV_CHECK(xdev_fft_cache_get(tgt.be, tgt.index, &c));
    /* the memo's descriptor and stream: its plan may be taken again, and its
     * work size is allocated before the lock */
    bool memo_hit = same && m->stream == tgt.stream && m->stream_generation == sgen;
    xdev_fft_exec_desc_t x = {
        .size = sizeof x,
        .in = in,
        .out = out,
        .direction = direction,
        .scale = scale,
        .device = tgt.rec->ctx,
        .stream = tgt.stream->native,
    };
    fft_op_t o = {
        .c = c,
        .key = &key,
        .have_key = !same,
        .stream_generation = sgen,
        .memo_work = memo_hit ? m->work_size : 0,
        .x = &x,
        .tgt = &tgt,
        .d = dp,
        .direction = direction,
    };
    xdev_op_use_t uses[2];
    xdev_enqueue_t q;
    xdev_enqueue_set(&q, XDEV_OP_FFT, "FFT", tgt.stream, &o, fft_call);
    q.span = "fft";
    q.rec = tgt.rec;
    q.uses = uses;
    q.nuses = xdev_operands_uses(ops, 2, 1, uses);
    q.trace_args = fft_trace_args;
    q.finish = fft_finish;
    if (memo_hit) o.hit = m->hit;
    XDEV_CHECK(xdev_enqueue(&q));
    if (m == NULL) return XDEV_SUCCESS;
    if (!same) {
        m->desc = d;
        m->in_bytes = in_bytes;
        m->out_bytes = out_bytes;
    }
    m->stream = tgt.stream;
    m->stream_generation = sgen;
    m->hit = o.hit;
    m->work_size = o.need;
    m->direction = direction;
    m->norm = norm;
    m->scale = scale;
    return XDEV_SUCCESS;
}
