/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_primitives.c - the CPU backend's parallel primitives
 * (the prim table: reduce, scan and segmented reduce; histogram and the
 * compactions are cpu_prim_select.c's, the sorts cpu_prim_sort.c's),
 * enqueued on the stream like every other job and run on the device's
 * worker pool (cpu_parallel.c).
 *
 * Every floating-point sum follows the fixed order of xdev/primitives.h,
 * always: chunks of XDEV_PRIM_CHUNK elements, 32 lanes per chunk (vector
 * registers here, a warp on a GPU), then fixed trees - so the bits never
 * depend on the thread count and equal a GPU's deterministic mode. The pool
 * computes per-chunk results into the temporary storage the core allocated
 * (one 16-byte partial per chunk); the stream's worker combines them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_math.h"
#include "cpu_prim_impl.h"

#define GRAIN 4 /* chunks per claim at least: 16 Ki elements */

/* ------------------------------------------------------------ reduce */

/* Pool body: the partial of each chunk in [c0, c1). */
static void reduce_chunks(void *arg, size_t c0, size_t c1) {
    const prim_job_t *j = arg;
    const bool prod = j->op == XDEV_PRIM_PROD;
    const bool max = j->op == XDEV_PRIM_MAX || j->op == XDEV_PRIM_ARGMAX;
    const bool ext = j->op != XDEV_PRIM_SUM && !prod;
    for (size_t c = c0; c < c1; c++) {
        size_t b = c * CH, e = b + CH < j->count ? b + CH : j->count;
        partial_t *p = &j->part[c];
        switch (j->dtype) {
#define REDUCE_CASE(DT, SUF, FIELD)                                                                \
    case DT:                                                                                       \
        if (ext)                                                                                   \
            *p = chunk_ext_##SUF(j->in, b, e, max);                                                \
        else                                                                                       \
            p->v.FIELD = chunk_sum_##SUF(j->in, b, e, prod);                                       \
        break;
            REDUCE_CASE(XDEV_DTYPE_F32, f32, f)
            REDUCE_CASE(XDEV_DTYPE_F16, f16, f)
            REDUCE_CASE(XDEV_DTYPE_BF16, bf16, f)
            REDUCE_CASE(XDEV_DTYPE_F64, f64, d)
            REDUCE_CASE(XDEV_DTYPE_I32, i32, u32)
            REDUCE_CASE(XDEV_DTYPE_I64, i64, u64)
            REDUCE_CASE(XDEV_DTYPE_U32, u32, u32)
            REDUCE_CASE(XDEV_DTYPE_U64, u64, u64)
        default:
            break;
        }
    }
}

/* Step 3 of the reduce order: rounds of pairs, an odd last one carried
 * over; extrema combine in index order (the earlier chunk wins ties). */
#define COMBINE(SUF, ACC, SUM, FIELD, ISNAN)                                                       \
    static partial_t combine_##SUF(partial_t *p, size_t m, int op) {                               \
        for (; m > 1; m = (m + 1) / 2) {                                                           \
            for (size_t i = 0; i < m / 2; i++) {                                                   \
                partial_t a = p[2 * i], b = p[2 * i + 1];                                          \
                ACC x = (ACC)a.v.FIELD, y = (ACC)b.v.FIELD;                                        \
                if (op == XDEV_PRIM_SUM)                                                           \
                    a.v.FIELD = (SUM)x + (SUM)y;                                                   \
                else if (op == XDEV_PRIM_PROD)                                                     \
                    a.v.FIELD = (SUM)x * (SUM)y;                                                   \
                else if (!ISNAN(x) &&                                                              \
                         (ISNAN(y) ||                                                              \
                          (op == XDEV_PRIM_MIN || op == XDEV_PRIM_ARGMIN ? y < x : x < y)))        \
                    a = b;                                                                         \
                p[i] = a;                                                                          \
            }                                                                                      \
            if (m % 2) p[m / 2] = p[m - 1];                                                        \
        }                                                                                          \
        return p[0];                                                                               \
    }
COMBINE(f, float, float, f, F_NAN)
COMBINE(d, double, double, d, F_NAN)
COMBINE(u32, int32_t, uint32_t, u32, NO_NAN)
COMBINE(u64, int64_t, uint64_t, u64, NO_NAN)
COMBINE(uu32, uint32_t, uint32_t, u32, NO_NAN) /* unsigned order */
COMBINE(uu64, uint64_t, uint64_t, u64, NO_NAN)

static void reduce_job(void *arg) {
    prim_job_t *j = arg;
    const bool arg_op = j->op == XDEV_PRIM_ARGMIN || j->op == XDEV_PRIM_ARGMAX;
    partial_t r;
    memset(&r, 0, sizeof r);
    const bool one = j->op == XDEV_PRIM_PROD; /* count = 0: sum or prod, the identity */
    if (j->count > 0) xdev_cpu_parallel_for(j->device, j->chunks, GRAIN, reduce_chunks, j);
    switch (j->dtype) {
    case XDEV_DTYPE_F32:
    case XDEV_DTYPE_F16:
    case XDEV_DTYPE_BF16:
        r.v.f = one ? 1.0f : 0.0f;
        if (j->count > 0) r = combine_f(j->part, j->chunks, j->op);
        if (arg_op) break;
        if (j->dtype == XDEV_DTYPE_F32) ST_F32(j->out, 0, r.v.f);
        if (j->dtype == XDEV_DTYPE_F16) ST_F16(j->out, 0, r.v.f);
        if (j->dtype == XDEV_DTYPE_BF16) ST_BF16(j->out, 0, r.v.f);
        return;
    case XDEV_DTYPE_F64:
        r.v.d = one ? 1.0 : 0.0;
        if (j->count > 0) r = combine_d(j->part, j->chunks, j->op);
        if (!arg_op) ST_F64(j->out, 0, r.v.d);
        break;
    case XDEV_DTYPE_I32:
        r.v.u32 = one;
        if (j->count > 0) r = combine_u32(j->part, j->chunks, j->op);
        if (!arg_op) ST_I32(j->out, 0, (int32_t)r.v.u32);
        break;
    case XDEV_DTYPE_I64:
        r.v.u64 = one;
        if (j->count > 0) r = combine_u64(j->part, j->chunks, j->op);
        if (!arg_op) ST_I64(j->out, 0, (int64_t)r.v.u64);
        break;
    case XDEV_DTYPE_U32:
        r.v.u32 = one;
        if (j->count > 0) r = combine_uu32(j->part, j->chunks, j->op);
        if (!arg_op) ST_U32(j->out, 0, r.v.u32);
        break;
    case XDEV_DTYPE_U64:
        r.v.u64 = one;
        if (j->count > 0) r = combine_uu64(j->part, j->chunks, j->op);
        if (!arg_op) ST_U64(j->out, 0, r.v.u64);
        break;
    default:
        return;
    }
    if (arg_op) ST_I64(j->out, 0, r.idx);
}

/* ------------------------------------------------------------ segmented reduce */

/* The chunk partials of one segment combined as they come, in the tree of
 * step 3 (rounds of pairs, an odd last one carried over): that tree is the
 * aligned power-of-two blocks of the chunks, each block's halves combined
 * left with right, and the blocks left at the end combined from the right.
 * So a stack of blocks (at most 64) gives the same result, bit for bit, as
 * combine_*() over an array of every partial - without that array, whose
 * size the offsets (read only as the work runs) cannot bound. */
typedef struct seg_stack {
    partial_t p[64];
    unsigned level[64]; /* a block of 2^level chunks */
    int n;
} seg_stack_t;

static partial_t combine2(xdev_dtype_t t, int op, partial_t a, partial_t b) {
    partial_t pair[2] = {a, b};
    switch (t) {
    case XDEV_DTYPE_F32:
    case XDEV_DTYPE_F16:
    case XDEV_DTYPE_BF16:
        return combine_f(pair, 2, op);
    case XDEV_DTYPE_F64:
        return combine_d(pair, 2, op);
    case XDEV_DTYPE_I32:
        return combine_u32(pair, 2, op);
    case XDEV_DTYPE_I64:
        return combine_u64(pair, 2, op);
    case XDEV_DTYPE_U32:
        return combine_uu32(pair, 2, op);
    default:
        return combine_uu64(pair, 2, op);
    }
}

static void seg_push(seg_stack_t *s, xdev_dtype_t t, int op, partial_t p) {
    unsigned level = 0;
    while (s->n > 0 && s->level[s->n - 1] == level) {
        p = combine2(t, op, s->p[--s->n], p);
        level++;
    }
    s->p[s->n] = p;
    s->level[s->n++] = level;
}

/* Segment [sb, se) of j->in: its partial (chunk partials in the reduce's
 * order, chunks counted from sb); se > sb. */
static partial_t segment_partial(const prim_job_t *j, size_t sb, size_t se) {
    const bool prod = j->op == XDEV_PRIM_PROD;
    const bool max = j->op == XDEV_PRIM_MAX || j->op == XDEV_PRIM_ARGMAX;
    const bool ext = j->op != XDEV_PRIM_SUM && !prod;
    seg_stack_t s;
    s.n = 0;
    for (size_t b = sb; b < se; b += CH) {
        size_t e = se - b > CH ? b + CH : se;
        partial_t pv, *p = &pv;
        memset(p, 0, sizeof *p);
        switch (j->dtype) {
            REDUCE_CASE(XDEV_DTYPE_F32, f32, f)
            REDUCE_CASE(XDEV_DTYPE_F16, f16, f)
            REDUCE_CASE(XDEV_DTYPE_BF16, bf16, f)
            REDUCE_CASE(XDEV_DTYPE_F64, f64, d)
            REDUCE_CASE(XDEV_DTYPE_I32, i32, u32)
            REDUCE_CASE(XDEV_DTYPE_I64, i64, u64)
            REDUCE_CASE(XDEV_DTYPE_U32, u32, u32)
            REDUCE_CASE(XDEV_DTYPE_U64, u64, u64)
        default:
            break;
        }
        seg_push(&s, j->dtype, j->op, pv);
    }
    partial_t r = s.p[--s.n];
    while (s.n > 0)
        r = combine2(j->dtype, j->op, s.p[--s.n], r);
    return r;
}

/* out[i] of the job's dtype from an accumulated value, or the identity of
 * an empty segment (SUM 0, PROD 1, MIN the largest value, MAX the lowest). */
static void seg_store(const prim_job_t *j, size_t i, const partial_t *r) {
    const int op = j->op;
    const bool mx = op == XDEV_PRIM_MAX, mn = op == XDEV_PRIM_MIN;
    void *o = j->out;
    switch (j->dtype) {
    case XDEV_DTYPE_F32:
        ST_F32(o, i, r ? r->v.f : mn ? INFINITY : mx ? -INFINITY : op == XDEV_PRIM_PROD);
        break;
    case XDEV_DTYPE_F16:
        ST_F16(o, i, r ? r->v.f : mn ? INFINITY : mx ? -INFINITY : op == XDEV_PRIM_PROD);
        break;
    case XDEV_DTYPE_BF16:
        ST_BF16(o, i, r ? r->v.f : mn ? INFINITY : mx ? -INFINITY : op == XDEV_PRIM_PROD);
        break;
    case XDEV_DTYPE_F64:
        ST_F64(o, i, r ? r->v.d : mn ? INFINITY : mx ? -INFINITY : op == XDEV_PRIM_PROD);
        break;
    case XDEV_DTYPE_I32:
        ST_I32(o, i,
               r    ? (int32_t)r->v.u32
               : mn ? INT32_MAX
               : mx ? INT32_MIN
                    : op == XDEV_PRIM_PROD);
        break;
    case XDEV_DTYPE_I64:
        ST_I64(o, i,
               r    ? (int64_t)r->v.u64
               : mn ? INT64_MAX
               : mx ? INT64_MIN
                    : op == XDEV_PRIM_PROD);
        break;
    case XDEV_DTYPE_U32:
        ST_U32(o, i, r ? r->v.u32 : mn ? UINT32_MAX : mx ? 0u : op == XDEV_PRIM_PROD);
        break;
    case XDEV_DTYPE_U64:
        ST_U64(o, i, r ? r->v.u64 : mn ? UINT64_MAX : mx ? 0u : op == XDEV_PRIM_PROD);
        break;
    default:
        break;
    }
}

/* Pool body: segments [s0, s1), bounds clamped to [0, count]. */
static void segments_run(void *arg, size_t s0, size_t s1) {
    const prim_job_t *j = arg;
    const bool arg_op = j->op == XDEV_PRIM_ARGMIN || j->op == XDEV_PRIM_ARGMAX;
    const int64_t n = (int64_t)j->count;
    for (size_t s = s0; s < s1; s++) {
        int64_t b = j->offsets[s], e = j->offsets[s + 1];
        b = b < 0 ? 0 : b > n ? n : b;
        e = e < b ? b : e > n ? n : e;
        if (e == b) {
            if (arg_op)
                ST_I64(j->out, s, -1);
            else
                seg_store(j, s, NULL);
            continue;
        }
        partial_t r = segment_partial(j, (size_t)b, (size_t)e);
        if (arg_op)
            ST_I64(j->out, s, r.idx - b);
        else
            seg_store(j, s, &r);
    }
}

static void segmented_job(void *arg) {
    prim_job_t *j = arg;
    xdev_cpu_parallel_for(j->device, j->num_segments, 1, segments_run, j);
}

/* ------------------------------------------------------------ the table */

static bool supported(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F32 || t == XDEV_DTYPE_F64 || t == XDEV_DTYPE_F16 ||
           t == XDEV_DTYPE_BF16 || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64 ||
           t == XDEV_DTYPE_U32 || t == XDEV_DTYPE_U64;
}

/* The size query or the enqueue (desc->temp set) of either primitive. */
static xdev_status_t prim_submit(const xdev_prim_desc_t *d, size_t *temp_bytes, bool scan) {
    xdev_cpu_device_t *dev = d->device;
    if (!supported(d->dtype))
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED, "cpu: %s of dtype %d",
                              scan ? "scan" : "reduce", (int)d->dtype);
    size_t chunks = (d->count + CH - 1) / CH;
    if (chunks == 0) chunks = 1;
    if (d->temp == NULL) {
        *temp_bytes = chunks * sizeof(partial_t);
        return XDEV_SUCCESS;
    }
    if (d->temp_bytes < chunks * sizeof(partial_t))
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu: %zu temporary bytes for %zu chunks of partials", d->temp_bytes,
                              chunks);
    prim_job_t *j = calloc(1, sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a %s",
                              dev->index, scan ? "scan" : "reduce");
    j->device = dev->index;
    j->op = d->op;
    j->exclusive = (d->flags & XDEV_PRIM_EXCLUSIVE) != 0;
    j->dtype = d->dtype;
    j->any_order = d->dtype == XDEV_DTYPE_I32 || d->dtype == XDEV_DTYPE_I64 ||
                   d->dtype == XDEV_DTYPE_U32 || d->dtype == XDEV_DTYPE_U64;
    j->in = d->in;
    j->out = d->out;
    j->count = d->count;
    j->chunks = chunks;
    j->part = d->temp;
    xdev_status_t st = xdev_cpu_stream_enqueue_job(
        dev->index, d->stream, scan ? xdev_cpu_prim_scan_job : reduce_job, free, j);
    if (st != XDEV_SUCCESS) free(j);
    return st;
}

/* The size query (none needed: one word, since a NULL temp means the
 * query) or the enqueue of a segmented reduce. */
static xdev_status_t prim_segmented_reduce(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    xdev_cpu_device_t *dev = d->device;
    if (!supported(d->dtype))
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED, "cpu: segmented reduce of dtype %d",
                              (int)d->dtype);
    if (d->temp == NULL) {
        *temp_bytes = sizeof(partial_t);
        return XDEV_SUCCESS;
    }
    if (d->num_segments == 0) return XDEV_SUCCESS;
    prim_job_t *j = calloc(1, sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d no host memory for a segmented reduce", dev->index);
    j->device = dev->index;
    j->op = d->op;
    j->dtype = d->dtype;
    j->in = d->in;
    j->out = d->out;
    j->count = d->count;
    j->offsets = d->offsets;
    j->num_segments = d->num_segments;
    xdev_status_t st = xdev_cpu_stream_enqueue_job(dev->index, d->stream, segmented_job, free, j);
    if (st != XDEV_SUCCESS) free(j);
    return st;
}

static xdev_status_t prim_reduce(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return prim_submit(d, temp_bytes, false);
}

static xdev_status_t prim_scan(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return prim_submit(d, temp_bytes, true);
}

const xdev_prim_vtable_t xdev_cpu_prim_vtable = {
    .size = sizeof(xdev_prim_vtable_t),
    .reduce = prim_reduce,
    .scan = prim_scan,
    .sort = xdev_cpu_prim_sort,
    .segmented_sort = xdev_cpu_prim_segmented_sort,
    .segmented_reduce = prim_segmented_reduce,
    .histogram_even = xdev_cpu_prim_histogram_even,
    .select_flagged = xdev_cpu_prim_select_flagged,
    .unique = xdev_cpu_prim_unique,
    .run_length_encode = xdev_cpu_prim_run_length_encode,
    .select_compare = xdev_cpu_prim_select_compare,
};
