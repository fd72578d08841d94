/* SPDX-License-Identifier: Apache-2.0 */
/* test_prim_api.c - the primitives' API beyond reduce and scan
 * (xdev/primitives.h, issue 44): every new call's argument checks (NULL,
 * counts past allocations, alignment, overlaps, dtype, op, flags, bit
 * range, value sizes, the offsets buffer, the histogram's range), each
 * naming its problem and writing nothing; a backend without a primitive
 * refusing it by name; and reduce and scan over the unsigned dtypes (u32,
 * u64) against exact host arithmetic. The sorts' results are
 * test_prim_sort.c's. Conformance: XDEV_BACKEND=<backend>. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PT_RNG_SEED 0x9e3779b97f4a7c15ull
#include "prim_test.h"

#define VAL XDEV_ERROR_INVALID_VALUE
#define F32 XDEV_DTYPE_F32
#define U32 XDEV_DTYPE_U32

static void setup(void) {
    xt_reset_state();
}

/* Every byte of d[0 .. bytes) still 0x5a: nothing was written. */
static void untouched(const void *d, size_t bytes, const char *what) {
    unsigned char *h = malloc(bytes);
    download(h, d, bytes);
    for (size_t i = 0; i < bytes; i++)
        if (h[i] != 0x5a) ck_abort_msg("byte %zu of %s was written by a refused call", i, what);
    free(h);
}

/* ------------------------------------------------------------ bad input */

enum { N = 256 };

typedef struct bufs {
    uint32_t *a, *b;   /* N u32 each */
    int64_t *off, *n1; /* N int64 offsets; one int64 count */
    uint8_t *flags;    /* N flags */
} bufs_t;

static bufs_t make_bufs(void) {
    bufs_t s = {dalloc(N * 4), dalloc(N * 4), dalloc(N * 8), dalloc(8), dalloc(N)};
    XT_OK(xdev_memset_async(s.a, 0x5a, N * 4, NULL));
    XT_OK(xdev_memset_async(s.b, 0x5a, N * 4, NULL));
    XT_OK(xdev_memset_async(s.off, 0, N * 8, NULL));
    XT_OK(xdev_memset_async(s.n1, 0x5a, 8, NULL));
    XT_OK(xdev_memset_async(s.flags, 1, N, NULL));
    return s;
}

static void free_bufs(bufs_t *s) {
    XT_OK(xdev_free(s->a));
    XT_OK(xdev_free(s->b));
    XT_OK(xdev_free(s->off));
    XT_OK(xdev_free(s->n1));
    XT_OK(xdev_free(s->flags));
}

START_TEST(sort_bad_input) {
    bufs_t s = make_bufs();
    uint32_t *a = s.a, *b = s.b;
    uint16_t *b16 = (uint16_t *)b;
    /* NULLs, counts past the buffers, overflow */
    XT_ERR(VAL, xdev_prim_sort_keys(NULL, U32, 4, 0, 0, 0, b, NULL), "keys_in");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, 4, 0, 0, 0, NULL, NULL), "keys_out");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, N + 1, 0, 0, 0, b, NULL), "past the end");
    XT_ERR(VAL, xdev_prim_sort_keys(a + 1, U32, N, 0, 0, 0, b, NULL), "keys_in", "past the end");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, SIZE_MAX / 2, 0, 0, 0, b, NULL), "overflow");
    /* dtype, flags, bit range */
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_prim_sort_keys(a, XDEV_DTYPE_C64, 4, 0, 0, 0, b, NULL),
           "c64");
    XT_ERR(VAL, xdev_prim_sort_keys(a, (xdev_dtype_t)99, 4, 0, 0, 0, b, NULL), "99");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, 4, 1u, 0, 0, b, NULL), "flags");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, 4, 1u << 5, 0, 0, b, NULL), "flags");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, 4, 0, 0, 33, b, NULL), "bit range", "32");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, 4, 0, 8, 8, b, NULL), "bit range");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, 4, 0, 9, 3, b, NULL), "bit range");
    XT_ERR(VAL, xdev_prim_sort_keys(a, XDEV_DTYPE_U8, 4, 0, 0, 9, b, NULL), "u8", "8");
    /* alignment, overlaps (in place is fine: not tested here, it runs) */
    XT_ERR(VAL, xdev_prim_sort_keys((char *)a + 2, U32, 4, 0, 0, 0, b, NULL), "aligned");
    XT_ERR(VAL, xdev_prim_sort_keys(a, U32, 8, 0, 0, 0, a + 1, NULL), "overlap", "in place");
    /* pairs: value sizes, values' extents, keys and values apart */
    XT_ERR(VAL, xdev_prim_sort_pairs(a, b, U32, 3, 4, 0, 0, 0, a + 8, b + 8, NULL), "value_size");
    XT_ERR(VAL, xdev_prim_sort_pairs(a, b, U32, 16, 4, 0, 0, 0, a + 8, b + 8, NULL), "value_size");
    XT_ERR(VAL, xdev_prim_sort_pairs(a, NULL, U32, 4, 4, 0, 0, 0, a + 8, b + 8, NULL), "values_in");
    XT_ERR(VAL, xdev_prim_sort_pairs(a, b, U32, 4, 4, 0, 0, 0, a + 8, NULL, NULL), "values_out");
    XT_ERR(VAL, xdev_prim_sort_pairs(a, b, U32, 8, N / 2 + 1, 0, 0, 0, a, b, NULL), "values_out",
           "past the end");
    XT_ERR(VAL, xdev_prim_sort_pairs(a, b16 + 1, U32, 4, 4, 0, 0, 0, a + 8, b + 8, NULL),
           "aligned");
    XT_ERR(VAL, xdev_prim_sort_pairs(a, b, U32, 4, 8, 0, 0, 0, a + 8, a + 12, NULL), "overlap",
           "keys and values");
    XT_ERR(VAL, xdev_prim_sort_pairs(a, b, U32, 4, 8, 0, 0, 0, a + 8, b + 4, NULL), "overlap");
    /* segmented: the offsets buffer holds num_segments + 1 */
    int64_t *off = s.off;
    XT_ERR(VAL, xdev_prim_segmented_sort(a, NULL, U32, 0, 8, off, N, 0, 0, 0, b, NULL, NULL),
           "offsets", "past the end");
    XT_ERR(VAL, xdev_prim_segmented_sort(a, NULL, U32, 0, 8, NULL, 2, 0, 0, 0, b, NULL, NULL),
           "offsets");
    XT_ERR(VAL, xdev_prim_segmented_sort(a, b, U32, 4, 8, off, 2, 0, 0, 0, a + 8, NULL, NULL),
           "values_in", "values_out");
    XT_ERR(VAL,
           xdev_prim_segmented_sort(a, NULL, U32, 0, 8, (int64_t *)((char *)off + 4), 2, 0, 0, 0, b,
                                    NULL, NULL),
           "offsets", "aligned");
    XT_ERR(VAL,
           xdev_prim_segmented_sort(a, NULL, U32, 0, 8, (int64_t *)b, 2, 0, 0, 0, b, NULL, NULL),
           "offsets", "overlap");
    XT_ERR(VAL, xdev_prim_segmented_sort(a, NULL, U32, 0, 8, off, SIZE_MAX, 0, 0, 0, b, NULL, NULL),
           "num_segments");
    XT_ERR(VAL, xdev_prim_segmented_sort(a, NULL, U32, 0, 8, off, 2, 4u, 0, 0, b, NULL, NULL),
           "flags");
    /* a destroyed stream */
    xdev_stream_t st;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &st));
    XT_OK(xdev_stream_destroy(st));
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_HANDLE) | XT_BIT(VAL),
               xdev_prim_sort_keys(a, U32, 4, 0, 0, 0, b, st), "stream");
    untouched(b, N * 4, "b");
    free_bufs(&s);
}
END_TEST

START_TEST(segmented_reduce_bad_input) {
    bufs_t s = make_bufs();
    uint32_t *a = s.a, *b = s.b;
    int64_t *off = s.off;
    const xdev_prim_op_t SUM = XDEV_PRIM_SUM;
    XT_ERR(VAL, xdev_prim_segmented_reduce(NULL, F32, 4, off, 2, SUM, b, NULL), "'in'");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 4, off, 2, SUM, NULL, NULL), "'out'");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 4, NULL, 2, SUM, b, NULL), "offsets");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 4, off, N, SUM, b, NULL), "offsets",
           "past the end");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, N + 1, off, 2, SUM, b, NULL), "'in'",
           "past the end");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 4, off, N + 1, SUM, b, NULL), "past the end");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 4, off, N / 2 + 1, XDEV_PRIM_ARGMIN, b, NULL),
           "'out'", "past the end");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 4, off, 2, (xdev_prim_op_t)9, b, NULL), "op 9");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED,
           xdev_prim_segmented_reduce(a, XDEV_DTYPE_U8, 4, off, 2, SUM, b, NULL), "u8");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 8, off, 2, SUM, a + 4, NULL), "overlap");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, F32, 8, off, 2, SUM, (float *)off + 2, NULL),
           "overlap");
    XT_ERR(VAL, xdev_prim_segmented_reduce(a, XDEV_DTYPE_F64, 4, off, 2, SUM, b + 1, NULL),
           "aligned");
    untouched(b, N * 4, "out");
    free_bufs(&s);
}
END_TEST

START_TEST(histogram_select_bad_input) {
    bufs_t s = make_bufs();
    uint32_t *a = s.a, *b = s.b;
    int64_t *n1 = s.n1, *cnt = (int64_t *)b;
    uint8_t *fl = s.flags;
    /* histogram */
    XT_ERR(VAL, xdev_prim_histogram_even(NULL, F32, 4, 4, 0, 1, cnt, NULL), "samples");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, 4, 0, 1, NULL, NULL), "counts");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, 0, 0, 1, cnt, NULL), "num_bins");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, N, 0, 1, cnt, NULL), "counts", "past the end");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, 4, 1, 1, cnt, NULL), "lower");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, 4, 0, INFINITY, cnt, NULL), "finite");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, 4, NAN, 1, cnt, NULL), "finite");
    /* finite bounds whose width overflows: every bin would be floor(inf / inf) = NaN */
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, 4, -DBL_MAX, DBL_MAX, cnt, NULL),
           "upper - lower");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED,
           xdev_prim_histogram_even(a, XDEV_DTYPE_C128, 4, 4, 0, 1, cnt, NULL), "c128");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 4, 4, 0, 1, (int64_t *)(b + 1), NULL), "aligned");
    XT_ERR(VAL, xdev_prim_histogram_even(a, F32, 8, 4, 0, 1, (int64_t *)(a + 2), NULL), "overlap");
    /* select_flagged */
    XT_ERR(VAL, xdev_prim_select_flagged(a, 3, fl, 4, b, n1, NULL), "item_size");
    XT_ERR(VAL, xdev_prim_select_flagged(a, 4, NULL, 4, b, n1, NULL), "flags");
    XT_ERR(VAL, xdev_prim_select_flagged(a, 4, fl, 4, b, NULL, NULL), "num_out");
    XT_ERR(VAL, xdev_prim_select_flagged(a, 4, fl, N + 1, b, n1, NULL), "past the end");
    XT_ERR(VAL, xdev_prim_select_flagged(a, 8, fl, N / 2 + 1, b, n1, NULL), "past the end");
    XT_ERR(VAL, xdev_prim_select_flagged(a, 4, fl, 8, a + 4, n1, NULL), "overlap");
    XT_ERR(VAL, xdev_prim_select_flagged(a, 4, fl, 8, b, (int64_t *)b, NULL), "overlap");
    XT_ERR(VAL, xdev_prim_select_flagged(a, 4, fl, 4, b, (int64_t *)(b + 9), NULL), "aligned");
    /* select_if */
    XT_ERR(VAL, xdev_prim_select_if(a, F32, 4, NULL, b, n1, NULL), "predicate");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED,
           xdev_prim_select_if(a, XDEV_DTYPE_U16, 4, "in0 > 0", b, n1, NULL), "u16", "elementwise");
    XT_ERR(VAL, xdev_prim_select_if(a, (xdev_dtype_t)77, 4, "in0 > 0", b, n1, NULL), "77");
    XT_ERR(VAL, xdev_prim_select_if(a, F32, N + 1, "in0 > 0", b, n1, NULL), "past the end");
    XT_ERR(VAL, xdev_prim_select_if(a, F32, 8, "in0 > 0", a + 2, n1, NULL), "overlap");
    XT_ERR(VAL, xdev_prim_select_if(a, F32, 4, "in0 > 0", b, NULL, NULL), "num_out");
    /* unique, run-length encode */
    XT_ERR(VAL, xdev_prim_unique(NULL, U32, 4, b, n1, NULL), "'in'");
    XT_ERR(VAL, xdev_prim_unique(a, U32, 4, b, NULL, NULL), "num_out");
    XT_ERR(VAL, xdev_prim_unique(a, U32, N + 1, b, n1, NULL), "past the end");
    XT_ERR(VAL, xdev_prim_unique(a, U32, 8, a + 7, n1, NULL), "overlap");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_prim_unique(a, XDEV_DTYPE_C64, 4, b, n1, NULL), "c64");
    XT_ERR(VAL, xdev_prim_run_length_encode(a, U32, 4, b, NULL, n1, NULL), "lengths");
    XT_ERR(VAL, xdev_prim_run_length_encode(a, U32, 4, b, (int64_t *)s.off, NULL, NULL),
           "num_runs");
    XT_ERR(VAL, xdev_prim_run_length_encode(a, U32, N / 2 + 1, a + N / 2, s.off, n1, NULL),
           "past the end");
    XT_ERR(VAL, xdev_prim_run_length_encode(a, U32, 8, b, (int64_t *)(b + 2), n1, NULL), "overlap");
    XT_ERR(VAL, xdev_prim_run_length_encode(a, U32, 8, b, (int64_t *)(a + 2), n1, NULL), "overlap");
    untouched(b, N * 4, "b");
    untouched(n1, 8, "num_out");
    free_bufs(&s);
}
END_TEST

/* Every primitive k (0 .. NPRIM) called over 8 items: `in` read, `out`
 * written, the rest from s (offsets all 0: empty segments). */
enum { NPRIM = 11 };
static const char *const k_prim_names[NPRIM] = {
    "xdev_prim_reduce",           "xdev_prim_scan",
    "xdev_prim_sort_keys",        "xdev_prim_sort_pairs",
    "xdev_prim_segmented_sort",   "xdev_prim_segmented_reduce",
    "xdev_prim_histogram_even",   "xdev_prim_select_flagged",
    "xdev_prim_select_if",        "xdev_prim_unique",
    "xdev_prim_run_length_encode"};
/* The names their messages give `in` and `out`. */
static const char *const k_in_names[NPRIM] = {"'in'",      "'in'", "'keys_in'", "'keys_in'",
                                              "'keys_in'", "'in'", "'samples'", "'in'",
                                              "'in'",      "'in'", "'in'"};
static const char *const k_out_names[NPRIM] = {"'out'",      "'out'", "'keys_out'",  "'keys_out'",
                                               "'keys_out'", "'out'", "'counts'",    "'out'",
                                               "'out'",      "'out'", "'unique_out'"};
static xdev_status_t call_prim(int k, const bufs_t *s, const void *in, void *out,
                               xdev_stream_t st) {
    char *v = (char *)s->off; /* values: 1024 bytes in, 1024 out */
    switch (k) {
    case 0:
        return xdev_prim_reduce(in, F32, 8, XDEV_PRIM_SUM, out, st);
    case 1:
        return xdev_prim_scan(in, F32, 8, XDEV_PRIM_SUM, 0, out, st);
    case 2:
        return xdev_prim_sort_keys(in, U32, 8, 0, 0, 0, out, st);
    case 3:
        return xdev_prim_sort_pairs(in, v, U32, 4, 8, 0, 0, 0, out, v + 1024, st);
    case 4:
        return xdev_prim_segmented_sort(in, NULL, U32, 0, 8, s->off, 2, 0, 0, 0, out, NULL, st);
    case 5:
        return xdev_prim_segmented_reduce(in, F32, 8, s->off, 2, XDEV_PRIM_SUM, out, st);
    case 6:
        return xdev_prim_histogram_even(in, F32, 8, 4, 0, 1, out, st);
    case 7:
        return xdev_prim_select_flagged(in, 4, s->flags, 8, out, s->n1, st);
    case 8:
        return xdev_prim_select_if(in, F32, 8, "in0 > 0", out, s->n1, st);
    case 9:
        return xdev_prim_unique(in, U32, 8, out, s->n1, st);
    default:
        return xdev_prim_run_length_encode(in, U32, 8, out, s->off, s->n1, st);
    }
}

/* Each primitive refuses, before it enqueues anything, a destroyed
 * stream, pageable host memory, pinned host memory, memory already freed,
 * and (two devices) an operand or a stream of another device - the bad
 * input of issue 44 beyond extents and overlaps. */
START_TEST(every_primitive_refuses_bad_operands) {
    bufs_t s = make_bufs();
    xdev_stream_t dead;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &dead));
    XT_OK(xdev_stream_destroy(dead));
    static uint32_t host[N];
    void *pinned = NULL;
    xdev_status_t pst = xdev_host_alloc(&pinned, N * 4);
    if (pst != XDEV_ERROR_NOT_SUPPORTED) XT_OK(pst);
    void *freed = dalloc(N * 4);
    XT_OK(xdev_free(freed));
    void *other = NULL; /* on device 1, peer access not enabled */
    xdev_stream_t other_stream = NULL;
    if (xt_device_count() >= 2) {
        XT_OK(xdev_malloc_device(xt_dev(1), &other, N * 4));
        XT_OK(xdev_stream_create(xt_dev(1), XDEV_STREAM_PRIORITY_NORMAL, &other_stream));
    }
    for (int k = 0; k < NPRIM; k++) {
        const char *name = k_prim_names[k];
        XT_ERR(XDEV_ERROR_INVALID_HANDLE, call_prim(k, &s, s.a, s.b, dead), name, "destroyed");
        XT_ERR(VAL, call_prim(k, &s, host, s.b, NULL), name, k_in_names[k], "host memory");
        if (pinned != NULL)
            XT_ERR(VAL, call_prim(k, &s, pinned, s.b, NULL), name, k_in_names[k], "pinned");
        XT_ERR(VAL, call_prim(k, &s, s.a, freed, NULL), name, k_out_names[k]);
        if (other != NULL) {
            XT_ERR(XDEV_ERROR_CROSS_DEVICE, call_prim(k, &s, other, s.b, NULL), name,
                   k_in_names[k]);
            XT_ERR(XDEV_ERROR_CROSS_DEVICE, call_prim(k, &s, s.a, s.b, other_stream), name,
                   "stream");
        }
    }
    untouched(s.b, N * 4, "out");
    untouched(s.n1, 8, "num_out");
    if (pinned != NULL) XT_OK(xdev_host_free(pinned));
    if (other != NULL) XT_OK(xdev_free(other));
    if (other_stream != NULL) XT_OK(xdev_stream_destroy(other_stream));
    free_bufs(&s);
}
END_TEST

/* A primitive the backend lacks is refused naming the backend and the
 * primitive; one it has runs (count 0: only the count is written). */
START_TEST(missing_primitive_named) {
    bufs_t s = make_bufs();
    uint32_t *a = s.a, *b = s.b;
    XT_OK(xdev_memset_async(s.off, 0, 3 * 8, NULL));
    struct {
        const char *name;
        xdev_status_t st;
    } calls[] = {
        {"sort", xdev_prim_sort_keys(a, U32, 4, 0, 0, 0, b, NULL)},
        {"sort", xdev_prim_sort_pairs(a, s.off, U32, 8, 4, 0, 0, 0, b, s.off + 8, NULL)},
        {"segmented_sort",
         xdev_prim_segmented_sort(a, NULL, U32, 0, 4, s.off, 2, 0, 0, 0, b, NULL, NULL)},
        {"segmented_reduce",
         xdev_prim_segmented_reduce(a, F32, 4, s.off, 2, XDEV_PRIM_SUM, b, NULL)},
        {"histogram_even", xdev_prim_histogram_even(a, U32, 4, 4, 0, 8, s.off, NULL)},
        {"select_flagged", xdev_prim_select_flagged(a, 4, s.flags, 4, b, s.n1, NULL)},
        {"unique", xdev_prim_unique(a, U32, 4, b, s.n1, NULL)},
        {"run_length_encode", xdev_prim_run_length_encode(a, U32, 4, b, s.off, s.n1, NULL)},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        if (calls[i].st == XDEV_SUCCESS) continue;
        /* (the message of the last failure only: re-run this one to read its own) */
        ck_assert_msg(calls[i].st == XDEV_ERROR_NOT_SUPPORTED, "%s: %s", calls[i].name,
                      xdev_status_string(calls[i].st));
    }
    /* each refusal's own message */
    xdev_status_t st = xdev_prim_unique(a, U32, 4, b, s.n1, NULL);
    if (st != XDEV_SUCCESS) {
        ck_assert_int_eq(st, XDEV_ERROR_NOT_SUPPORTED);
        ck_assert_msg(xt_icontains(xdev_last_error(), xt_type_name()) &&
                          xt_icontains(xdev_last_error(), "unique") &&
                          xt_icontains(xdev_last_error(), "xdev_prim_unique"),
                      "the refusal names neither the backend nor the primitive: %s",
                      xdev_last_error());
    }
    st = xdev_prim_histogram_even(a, U32, 4, 4, 0, 8, s.off, NULL);
    if (st != XDEV_SUCCESS)
        ck_assert_msg(xt_icontains(xdev_last_error(), xt_type_name()) &&
                          xt_icontains(xdev_last_error(), "histogram_even"),
                      "%s", xdev_last_error());
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    free_bufs(&s);
}
END_TEST

/* ------------------------------------------------------ u32 and u64 */

/* reduce (every op) and scan (sum, min, max; inclusive and exclusive) of
 * u32 and u64 against exact host arithmetic: sums and products wrap,
 * order is unsigned (values past INT32_MAX / INT64_MAX included). */
static void unsigned_case(xdev_dtype_t t, size_t n) {
    const size_t es = t == U32 ? 4 : 8;
    const uint64_t mask = t == U32 ? 0xffffffffull : ~0ull;
    uint64_t *h = malloc((n ? n : 1) * 8);
    unsigned char *hin = malloc((n ? n : 1) * es), *got = malloc((n ? n : 1) * es);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = rnd();
        h[i] = i % 3 == 0 ? (v & mask) : (v % 1000) | (i % 7 == 0 ? mask & ~0x7fffull : 0);
        if (es == 4) {
            uint32_t x = (uint32_t)h[i];
            memcpy(hin + i * 4, &x, 4);
        } else {
            memcpy(hin + i * 8, &h[i], 8);
        }
    }
    void *din = dalloc(n * es), *dout = dalloc(n * es + 8);
    upload(din, hin, n * es);
    for (int op = XDEV_PRIM_SUM; op <= XDEV_PRIM_ARGMAX; op++) {
        if (n == 0 && op >= XDEV_PRIM_MIN) continue;
        uint64_t want = op == XDEV_PRIM_PROD ? 1 : 0;
        int64_t at = 0;
        for (size_t i = 0; i < n; i++) {
            if (op == XDEV_PRIM_SUM) want = (want + h[i]) & mask;
            if (op == XDEV_PRIM_PROD) want = (want * h[i]) & mask;
            bool min = op == XDEV_PRIM_MIN || op == XDEV_PRIM_ARGMIN;
            if (op >= XDEV_PRIM_MIN && (i == 0 || (min ? h[i] < h[at] : h[i] > h[at])))
                at = (int64_t)i;
        }
        if (op >= XDEV_PRIM_MIN && n > 0) want = h[at];
        XT_OK(xdev_prim_reduce(din, t, n, (xdev_prim_op_t)op, dout, NULL));
        uint64_t g = 0;
        download(&g, dout, op >= XDEV_PRIM_ARGMIN ? 8 : es);
        if (op >= XDEV_PRIM_ARGMIN)
            ck_assert_msg((int64_t)g == at, "%s n=%zu op %d: index %lld, want %lld",
                          xdev_dtype_name(t), n, op, (long long)g, (long long)at);
        else
            ck_assert_msg(g == want, "%s n=%zu op %d: %llu, want %llu", xdev_dtype_name(t), n, op,
                          (unsigned long long)g, (unsigned long long)want);
    }
    static const int sops[3] = {XDEV_PRIM_SUM, XDEV_PRIM_MIN, XDEV_PRIM_MAX};
    for (int k = 0; k < 3; k++)
        for (unsigned ex = 0; ex < 2; ex++) {
            if (n == 0) continue;
            XT_OK(xdev_prim_scan(din, t, n, (xdev_prim_op_t)sops[k], ex, dout, NULL));
            download(got, dout, n * es);
            uint64_t r = sops[k] == XDEV_PRIM_SUM ? 0 : sops[k] == XDEV_PRIM_MIN ? mask : 0;
            for (size_t i = 0; i < n; i++) {
                uint64_t before = r;
                if (sops[k] == XDEV_PRIM_SUM) r = (r + h[i]) & mask;
                if (sops[k] == XDEV_PRIM_MIN && h[i] < r) r = h[i];
                if (sops[k] == XDEV_PRIM_MAX && h[i] > r) r = h[i];
                uint64_t w = ex ? before : r, g = 0;
                memcpy(&g, got + i * es, es);
                if (g != w)
                    ck_abort_msg("%s scan op %d excl %u n=%zu [%zu]: %llu, want %llu",
                                 xdev_dtype_name(t), sops[k], ex, n, i, (unsigned long long)g,
                                 (unsigned long long)w);
            }
        }
    free(h);
    free(hin);
    free(got);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
}

START_TEST(reduce_scan_unsigned) {
    void *out = dalloc(8);
    xdev_status_t st = xdev_prim_reduce(NULL, U32, 0, XDEV_PRIM_SUM, out, NULL);
    XT_OK(xdev_free(out));
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        XT_SKIP("the %s backend has no u32 reduce: %s", xt_type_name(), xdev_last_error());
        return;
    }
    XT_OK(st);
    static const size_t sizes[] = {0, 1, 2, 31, 33, 4095, 4097, 3 * 4096 + 5, 70001};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned_case(U32, sizes[i]);
        unsigned_case(XDEV_DTYPE_U64, sizes[i]);
    }
}
END_TEST

/* The new dtypes' names and sizes, and fills of them (every backend's
 * fill moves a pattern). */
START_TEST(unsigned_dtypes) {
    ck_assert_str_eq(xdev_dtype_name(XDEV_DTYPE_U16), "u16");
    ck_assert_str_eq(xdev_dtype_name(XDEV_DTYPE_U32), "u32");
    ck_assert_str_eq(xdev_dtype_name(XDEV_DTYPE_U64), "u64");
    ck_assert_ptr_null(xdev_dtype_name(XDEV_DTYPE_COUNT));
    ck_assert_uint_eq(xdev_dtype_size(XDEV_DTYPE_U16), 2);
    ck_assert_uint_eq(xdev_dtype_size(XDEV_DTYPE_U32), 4);
    ck_assert_uint_eq(xdev_dtype_size(XDEV_DTYPE_U64), 8);
    ck_assert_uint_eq(xdev_dtype_size(XDEV_DTYPE_COUNT), 0);
    void *d = dalloc(64);
    uint16_t h16[4];
    XT_OK(xdev_fill_async(d, XDEV_DTYPE_U16, xdev_scalar_i64(65535), 4, NULL));
    download(h16, d, 8);
    ck_assert_uint_eq(h16[3], 65535);
    XT_ERR(VAL, xdev_fill_async(d, XDEV_DTYPE_U16, xdev_scalar_i64(65536), 4, NULL),
           "does not fit");
    XT_ERR(VAL, xdev_fill_async(d, XDEV_DTYPE_U32, xdev_scalar_i64(-1), 4, NULL), "does not fit");
    uint32_t h32[4];
    XT_OK(xdev_fill_async(d, XDEV_DTYPE_U32, xdev_scalar_i64(4294967295ll), 4, NULL));
    download(h32, d, 16);
    ck_assert_uint_eq(h32[2], 4294967295u);
    uint64_t h64[4];
    XT_OK(xdev_fill_async(d, XDEV_DTYPE_U64, xdev_scalar_f64(3.75), 4, NULL));
    download(h64, d, 32);
    ck_assert_uint_eq(h64[1], 3);
    /* conversions do not take them, and say so */
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_convert_async(d, XDEV_DTYPE_U32, d, F32, 4, NULL), "u32");
    XT_OK(xdev_free(d));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("prim_api");
    TCase *tc = tcase_create("prim_api");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, sort_bad_input);
    tcase_add_test(tc, segmented_reduce_bad_input);
    tcase_add_test(tc, histogram_select_bad_input);
    tcase_add_test(tc, every_primitive_refuses_bad_operands);
    tcase_add_test(tc, missing_primitive_named);
    tcase_add_test(tc, reduce_scan_unsigned);
    tcase_add_test(tc, unsigned_dtypes);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "prim_api", argc, argv);
}
