/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_prim_select.c - the CPU backend's histogram, compaction
 * (select_flagged; select_compare, select_if's `in0 OP literal` without
 * flags), unique and run-length encode
 * (xdev/primitives.h), enqueued on the stream and run on the device's worker
 * pool.
 *
 * The compactions are two passes over fixed chunks of SEL_CHUNK items: each
 * chunk counts what it keeps into the core's temporary storage, the
 * stream's worker turns the counts into offsets, and each chunk writes its
 * items from its offset - the output is in input order whatever the thread
 * count. The histogram counts each part of the input into a row of its
 * own (temporary storage) and then sums the rows bin by bin: integer
 * counts, so the result is exact in any order. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_math.h"
#include "xdev/primitives.h"
#include "xdev/support/half.h"

#define SEL_CHUNK ((size_t)1 << 16)        /* items per chunk of the compactions */
#define HIST_PART ((size_t)1 << 16)        /* samples per part of the histogram at least */
#define HIST_ROWS_BYTES ((size_t)64 << 20) /* the histogram's rows: at most this much */

typedef enum sel_kind { SEL_FLAGGED, SEL_COMPARE, SEL_UNIQUE, SEL_RLE, SEL_HISTOGRAM } sel_kind_t;

typedef struct sel_job {
    int device;
    sel_kind_t kind;
    xdev_dtype_t dtype;
    size_t es; /* bytes per item */
    const unsigned char *in;
    unsigned char *out;
    size_t count, chunks;
    const unsigned char *flags; /* select_flagged */
    size_t flag_size;
    int cmp_op;             /* select_compare: xdev_prim_compare_op_t */
    xdev_dtype_t cmp_dtype; /*   compared in F32, F64 or I64 */
    float cmp_f;
    double cmp_d;
    int64_t cmp_i;
    int64_t *lengths; /* run_length_encode */
    int64_t *num_out;
    int64_t *part; /* temporary: a count (then an offset) per chunk, or the histogram's rows */
    size_t num_bins, rows;
    double lower, upper;
} sel_job_t;

/* ------------------------------------------------------------ items */

/* Item i as a double (the histogram's samples): the dtype's value, rounded
 * to nearest for 64-bit integers beyond 2^53. */
static double item_value(xdev_dtype_t t, const unsigned char *p, size_t i) {
    switch (t) {
    case XDEV_DTYPE_F32:
        return ((const float *)(const void *)p)[i];
    case XDEV_DTYPE_F64:
        return ((const double *)(const void *)p)[i];
    case XDEV_DTYPE_F16:
        return xdev_f16_to_f32(((const uint16_t *)(const void *)p)[i]);
    case XDEV_DTYPE_BF16:
        return xdev_bf16_to_f32(((const uint16_t *)(const void *)p)[i]);
    case XDEV_DTYPE_I8:
        return ((const int8_t *)(const void *)p)[i];
    case XDEV_DTYPE_I16:
        return ((const int16_t *)(const void *)p)[i];
    case XDEV_DTYPE_I32:
        return ((const int32_t *)(const void *)p)[i];
    case XDEV_DTYPE_I64:
        return (double)((const int64_t *)(const void *)p)[i];
    case XDEV_DTYPE_U8:
        return p[i];
    case XDEV_DTYPE_U16:
        return ((const uint16_t *)(const void *)p)[i];
    case XDEV_DTYPE_U32:
        return ((const uint32_t *)(const void *)p)[i];
    case XDEV_DTYPE_U64:
        return (double)((const uint64_t *)(const void *)p)[i];
    default:
        return NAN;
    }
}

/* Items i and k equal as the dtype compares them: IEEE == for floating
 * types (-0 equals +0, a NaN equals nothing), the bits for integers. */
static bool item_equal(xdev_dtype_t t, const unsigned char *p, size_t i, size_t k) {
    switch (t) {
    case XDEV_DTYPE_F32:
        return ((const float *)(const void *)p)[i] == ((const float *)(const void *)p)[k];
    case XDEV_DTYPE_F64:
        return ((const double *)(const void *)p)[i] == ((const double *)(const void *)p)[k];
    case XDEV_DTYPE_F16:
    case XDEV_DTYPE_BF16:
        return item_value(t, p, i) == item_value(t, p, k);
    default: {
        size_t es = xdev_dtype_size(t);
        return memcmp(p + i * es, p + k * es, es) == 0;
    }
    }
}

/* a OP b, C's comparison in the operands' type (IEEE for floating ones:
 * a NaN compares false but for !=). */
#define SEL_CMP(op, a, b)                                                                          \
    ((op) == XDEV_PRIM_CMP_LT   ? (a) < (b)                                                        \
     : (op) == XDEV_PRIM_CMP_LE ? (a) <= (b)                                                       \
     : (op) == XDEV_PRIM_CMP_GT ? (a) > (b)                                                        \
     : (op) == XDEV_PRIM_CMP_GE ? (a) >= (b)                                                       \
     : (op) == XDEV_PRIM_CMP_EQ ? (a) == (b)                                                       \
                                : (a) != (b))

/* select_compare: item i converted to the compare type (as C converts it)
 * against the value; the slot checked the pair of types. */
static bool compare_kept(const sel_job_t *j, size_t i) {
    const void *p = j->in;
    switch (j->cmp_dtype) {
    case XDEV_DTYPE_F32:
        return SEL_CMP(j->cmp_op, ((const float *)p)[i], j->cmp_f);
    case XDEV_DTYPE_F64: {
        double x = j->dtype == XDEV_DTYPE_F32   ? ((const float *)p)[i]
                   : j->dtype == XDEV_DTYPE_F64 ? ((const double *)p)[i]
                   : j->dtype == XDEV_DTYPE_I32 ? ((const int32_t *)p)[i]
                                                : (double)((const int64_t *)p)[i];
        return SEL_CMP(j->cmp_op, x, j->cmp_d);
    }
    default: {
        int64_t x = j->dtype == XDEV_DTYPE_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
        return SEL_CMP(j->cmp_op, x, j->cmp_i);
    }
    }
}

/* Is item i kept? */
static bool kept(const sel_job_t *j, size_t i) {
    switch (j->kind) {
    case SEL_COMPARE:
        return compare_kept(j, i);
    case SEL_FLAGGED: {
        const unsigned char *f = j->flags + i * j->flag_size;
        for (size_t b = 0; b < j->flag_size; b++)
            if (f[b] != 0) return true;
        return false;
    }
    default: /* the first item of each run */
        return i == 0 || !item_equal(j->dtype, j->in, i, i - 1);
    }
}

/* ------------------------------------------------------------ compactions */

static void count_chunks(void *arg, size_t c0, size_t c1) {
    sel_job_t *j = arg;
    for (size_t c = c0; c < c1; c++) {
        size_t b = c * SEL_CHUNK, e = b + SEL_CHUNK < j->count ? b + SEL_CHUNK : j->count;
        int64_t n = 0;
        for (size_t i = b; i < e; i++)
            n += kept(j, i);
        j->part[c] = n;
    }
}

static void write_chunks(void *arg, size_t c0, size_t c1) {
    sel_job_t *j = arg;
    const size_t es = j->es;
    for (size_t c = c0; c < c1; c++) {
        size_t b = c * SEL_CHUNK, e = b + SEL_CHUNK < j->count ? b + SEL_CHUNK : j->count;
        size_t at = (size_t)j->part[c];
        for (size_t i = b; i < e; i++) {
            if (!kept(j, i)) continue;
            memcpy(j->out + at * es, j->in + i * es, es);
            if (j->kind == SEL_RLE) { /* the run goes on past this chunk when it must */
                size_t k = i + 1;
                while (k < j->count && item_equal(j->dtype, j->in, k, i))
                    k++;
                j->lengths[at] = (int64_t)(k - i);
            }
            at++;
        }
    }
}

static void compact_job(void *arg) {
    sel_job_t *j = arg;
    int64_t total = 0;
    if (j->count > 0) {
        xdev_cpu_parallel_for(j->device, j->chunks, 1, count_chunks, j);
        for (size_t c = 0; c < j->chunks; c++) { /* counts -> offsets */
            int64_t n = j->part[c];
            j->part[c] = total;
            total += n;
        }
        xdev_cpu_parallel_for(j->device, j->chunks, 1, write_chunks, j);
    }
    *j->num_out = total;
}

/* ------------------------------------------------------------ histogram */

/* The bin of sample x, or -1: b = min(bins - 1, floor((x - lower) * bins /
 * (upper - lower))) in double for lower <= x < upper (xdev/primitives.h). */
static int64_t bin_of(const sel_job_t *j, double x) {
    if (!(x >= j->lower && x < j->upper)) return -1; /* NaN too */
    double b = floor((x - j->lower) * (double)j->num_bins / (j->upper - j->lower));
    return b >= (double)(j->num_bins - 1) ? (int64_t)j->num_bins - 1 : (int64_t)b;
}

static void count_rows(void *arg, size_t r0, size_t r1) {
    sel_job_t *j = arg;
    const size_t per = (j->count + j->rows - 1) / j->rows;
    for (size_t r = r0; r < r1; r++) {
        int64_t *row = j->part + r * j->num_bins;
        memset(row, 0, j->num_bins * sizeof *row);
        size_t b = r * per, e = b + per < j->count ? b + per : j->count;
        for (size_t i = b; i < e; i++) {
            int64_t k = bin_of(j, item_value(j->dtype, j->in, i));
            if (k >= 0) row[k]++;
        }
    }
}

static void sum_rows(void *arg, size_t b0, size_t b1) {
    sel_job_t *j = arg;
    int64_t *counts = (int64_t *)(void *)j->out;
    for (size_t b = b0; b < b1; b++) {
        int64_t n = 0;
        for (size_t r = 0; r < j->rows; r++)
            n += j->part[r * j->num_bins + b];
        counts[b] = n;
    }
}

static void histogram_job(void *arg) {
    sel_job_t *j = arg;
    if (j->count == 0) {
        memset(j->out, 0, j->num_bins * sizeof(int64_t));
        return;
    }
    xdev_cpu_parallel_for(j->device, j->rows, 1, count_rows, j);
    xdev_cpu_parallel_for(j->device, j->num_bins, 4096, sum_rows, j);
}

/* ------------------------------------------------------------ the slots */

/* The size query (desc->temp NULL) or the enqueue of one of these
 * primitives: `temp` int64 words of temporary storage. */
static xdev_status_t submit(const xdev_prim_desc_t *d, size_t *temp_bytes, sel_job_t *proto,
                            size_t temp_words, void (*fn)(void *)) {
    xdev_cpu_device_t *dev = d->device;
    if (temp_words == 0) temp_words = 1; /* temp NULL must mean the size query */
    if (d->temp == NULL) {
        *temp_bytes = temp_words * sizeof(int64_t);
        return XDEV_SUCCESS;
    }
    if (d->temp_bytes < temp_words * sizeof(int64_t))
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: %zu temporary bytes, %zu needed",
                              d->temp_bytes, temp_words * sizeof(int64_t));
    sel_job_t *j = malloc(sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a primitive",
                              dev->index);
    *j = *proto;
    j->device = dev->index;
    j->part = d->temp;
    xdev_status_t st = xdev_cpu_stream_enqueue_job(dev->index, d->stream, fn, free, j);
    if (st != XDEV_SUCCESS) free(j);
    return st;
}

static sel_job_t compaction(const xdev_prim_desc_t *d, sel_kind_t kind) {
    sel_job_t j = {.kind = kind,
                   .dtype = d->dtype,
                   .es = xdev_dtype_size(d->dtype),
                   .in = d->in,
                   .out = d->out,
                   .count = d->count,
                   .num_out = d->num_out};
    j.chunks = (d->count + SEL_CHUNK - 1) / SEL_CHUNK;
    return j;
}

xdev_status_t xdev_cpu_prim_select_flagged(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    sel_job_t j = compaction(d, SEL_FLAGGED);
    if (d->flag_size == 0 || d->flag_size > 8 || (d->flag_size & (d->flag_size - 1)) != 0)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: select flags of %zu bytes",
                              d->flag_size);
    j.flags = d->select_flags;
    j.flag_size = d->flag_size;
    return submit(d, temp_bytes, &j, j.chunks, compact_job);
}

xdev_status_t xdev_cpu_prim_select_compare(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    const xdev_dtype_t t = d->dtype, c = d->compare_dtype;
    const bool items =
        t == XDEV_DTYPE_F32 || t == XDEV_DTYPE_F64 || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64;
    const bool ints = t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64;
    /* float: f32 items; double: any of the four; int64: integer items */
    const bool pair = c == XDEV_DTYPE_F64 || (c == XDEV_DTYPE_F32 && t == XDEV_DTYPE_F32) ||
                      (c == XDEV_DTYPE_I64 && ints);
    if (d->size < offsetof(xdev_prim_desc_t, compare_ivalue) + sizeof d->compare_ivalue)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu: select_compare from a core older than ABI 3.9 (desc size %zu)",
                              d->size);
    if (!items || !pair)
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu: select_compare of dtype %d items compared as dtype %d", (int)t,
                              (int)c);
    if (d->compare_op < XDEV_PRIM_CMP_LT || d->compare_op > XDEV_PRIM_CMP_NE)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: select_compare op %d", d->compare_op);
    sel_job_t j = compaction(d, SEL_COMPARE);
    j.cmp_op = d->compare_op;
    j.cmp_dtype = c;
    j.cmp_f = (float)d->compare_value; /* exact: the core sends a float's value */
    j.cmp_d = d->compare_value;
    j.cmp_i = d->compare_ivalue;
    return submit(d, temp_bytes, &j, j.chunks, compact_job);
}

xdev_status_t xdev_cpu_prim_unique(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    sel_job_t j = compaction(d, SEL_UNIQUE);
    return submit(d, temp_bytes, &j, j.chunks, compact_job);
}

xdev_status_t xdev_cpu_prim_run_length_encode(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    sel_job_t j = compaction(d, SEL_RLE);
    j.lengths = d->values_out;
    return submit(d, temp_bytes, &j, j.chunks, compact_job);
}

xdev_status_t xdev_cpu_prim_histogram_even(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    if (d->num_bins == 0 || !(d->lower < d->upper))
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: histogram of %zu bins over [%g, %g)",
                              d->num_bins, d->lower, d->upper);
    sel_job_t j = {.kind = SEL_HISTOGRAM,
                   .dtype = d->dtype,
                   .es = xdev_dtype_size(d->dtype),
                   .in = d->in,
                   .out = d->out,
                   .count = d->count,
                   .num_bins = d->num_bins,
                   .lower = d->lower,
                   .upper = d->upper};
    /* a row per part of at least HIST_PART samples, the rows within
     * HIST_ROWS_BYTES, at most 256 of them */
    size_t rows = (d->count + HIST_PART - 1) / HIST_PART;
    size_t cap = HIST_ROWS_BYTES / (d->num_bins * sizeof(int64_t));
    if (rows > cap) rows = cap;
    if (rows > 256) rows = 256;
    if (rows == 0) rows = 1;
    j.rows = rows;
    return submit(d, temp_bytes, &j, d->count > 0 ? rows * d->num_bins : 0, histogram_job);
}
