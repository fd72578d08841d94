/* SPDX-License-Identifier: Apache-2.0 */
/* test_prim_sort.c - the sorts (xdev/primitives.h: xdev_prim_sort_keys,
 * _sort_pairs, _segmented_sort) on the backend under test against a host
 * reference written from the header's rules (a comparison sort by value:
 * -0 before +0, every NaN equal and last, ties by input position), not
 * from the radix image: every key dtype; sizes 0, 1, 2, 2^k +- 1, odd, up
 * to 2^20 (2^17 under the sanitizers; XT_PRIM_MAX_LOG2 asks for more);
 * NaN of both signs and payloads, +-0, +-inf and subnormals; stability
 * with many equal keys (values carry the input position); descending;
 * values of 1, 2, 4 and 8 bytes; in place; bit ranges; segments with
 * empty, clamped and large ones (items outside every segment untouched);
 * capture and replay in a graph. Conformance: XDEV_BACKEND=<backend>;
 * prim_sort.threads4 runs it with XDEV_CPU_THREADS=4. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/support/half.h"
#include "prim_test.h"

#define NKEY 12
static const xdev_dtype_t k_keys[NKEY] = {XDEV_DTYPE_U8,   XDEV_DTYPE_U16, XDEV_DTYPE_U32,
                                          XDEV_DTYPE_U64,  XDEV_DTYPE_I8,  XDEV_DTYPE_I16,
                                          XDEV_DTYPE_I32,  XDEV_DTYPE_I64, XDEV_DTYPE_F16,
                                          XDEV_DTYPE_BF16, XDEV_DTYPE_F32, XDEV_DTYPE_F64};

static void setup(void) {
    xt_reset_state();
}

/* The backend sorts, or the test is skipped after checking that the
 * refusal names the backend and the primitive. */
static bool have_sort(const char *test) {
    void *a = dalloc(8), *b = dalloc(8);
    xdev_status_t st = xdev_prim_sort_keys(a, XDEV_DTYPE_U32, 2, 0, 0, 0, b, NULL);
    if (st == XDEV_SUCCESS) XT_OK(xdev_device_synchronize(xt_dev(0)));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    return pt_have(test, st, "primitive sort", "does not sort");
}
#define NEED_SORT()                                                                                \
    do {                                                                                           \
        if (!have_sort(__func__)) return;                                                          \
    } while (0)

/* ------------------------------------------------------------ reference */

static size_t ksize(xdev_dtype_t t) {
    return xdev_dtype_size(t);
}
static bool is_float(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F16 || t == XDEV_DTYPE_BF16 || t == XDEV_DTYPE_F32 ||
           t == XDEV_DTYPE_F64;
}
static bool is_signed(xdev_dtype_t t) {
    return t == XDEV_DTYPE_I8 || t == XDEV_DTYPE_I16 || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64;
}

static uint64_t bits_at(const void *h, size_t i, size_t w) {
    uint64_t v = 0;
    memcpy(&v, (const char *)h + i * w, w); /* little-endian */
    return v;
}

static double as_double(xdev_dtype_t t, uint64_t b) {
    switch (t) {
    case XDEV_DTYPE_F16:
        return xdev_f16_to_f32((uint16_t)b);
    case XDEV_DTYPE_BF16:
        return xdev_bf16_to_f32((uint16_t)b);
    case XDEV_DTYPE_F32: {
        float f;
        uint32_t u = (uint32_t)b;
        memcpy(&f, &u, 4);
        return f;
    }
    default: {
        double d;
        memcpy(&d, &b, 8);
        return d;
    }
    }
}

/* The header's order by value: <0, 0, >0. */
static int key_cmp(xdev_dtype_t t, uint64_t a, uint64_t b) {
    const size_t w = ksize(t);
    if (is_float(t)) {
        double x = as_double(t, a), y = as_double(t, b);
        if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
        if (x != y) return x < y ? -1 : 1;
        return (int)(signbit(y) != 0) - (int)(signbit(x) != 0); /* -0 first */
    }
    if (is_signed(t)) {
        unsigned sh = (unsigned)(64 - 8 * w);
        int64_t x = (int64_t)(a << sh) >> sh, y = (int64_t)(b << sh) >> sh;
        return x < y ? -1 : x > y;
    }
    return a < b ? -1 : a > b;
}

/* Bits [b, e) of the order image, as the header defines it (bit ranges). */
static uint64_t image_bits(xdev_dtype_t t, uint64_t x, unsigned b, unsigned e) {
    const size_t w = ksize(t);
    const uint64_t all = w == 8 ? ~0ull : (1ull << (8 * w)) - 1, sign = 1ull << (8 * w - 1);
    uint64_t r = x;
    if (is_signed(t)) r = x ^ sign;
    if (is_float(t)) r = isnan(as_double(t, x)) ? all : (x & sign) ? ~x & all : x | sign;
    unsigned span = e - b;
    return (r >> b) & (span >= 64 ? ~0ull : (1ull << span) - 1);
}

typedef struct ref_ctx {
    xdev_dtype_t t;
    const void *keys;
    bool desc;
    unsigned b, e; /* (0, 0): by value */
} ref_ctx_t;
static ref_ctx_t g_ref;

static int ref_cmp(const void *pa, const void *pb) {
    size_t i = *(const size_t *)pa, j = *(const size_t *)pb;
    size_t w = ksize(g_ref.t);
    uint64_t a = bits_at(g_ref.keys, i, w), b = bits_at(g_ref.keys, j, w);
    int c;
    if (g_ref.e > 0) {
        uint64_t x = image_bits(g_ref.t, a, g_ref.b, g_ref.e);
        uint64_t y = image_bits(g_ref.t, b, g_ref.b, g_ref.e);
        c = x < y ? -1 : x > y;
    } else {
        c = key_cmp(g_ref.t, a, b);
    }
    if (g_ref.desc) c = -c;
    return c != 0 ? c : (i < j ? -1 : i > j); /* stable */
}

/* perm[0 .. n): the input positions in sorted order. */
static void reference(xdev_dtype_t t, const void *keys, size_t lo, size_t hi, bool desc, unsigned b,
                      unsigned e, size_t *perm) {
    for (size_t i = lo; i < hi; i++)
        perm[i - lo] = i;
    g_ref = (ref_ctx_t){t, keys, desc, b, e};
    qsort(perm, hi - lo, sizeof *perm, ref_cmp);
}

/* Random keys of dtype t: from a small pool (many equal keys) or any
 * bits, with the special values mixed in. */
static void make_keys(xdev_dtype_t t, void *h, size_t n, bool few) {
    const size_t w = ksize(t);
    uint64_t pool[16];
    for (int i = 0; i < 16; i++)
        pool[i] = rnd();
    for (size_t i = 0; i < n; i++) {
        uint64_t v = few ? pool[rnd() % 16] : rnd();
        if (is_float(t) && rnd() % 8 == 0) {
            static const uint64_t f32s[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                                            0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x00000001u,
                                            0x80000001u, 0x3f800000u};
            static const uint64_t f16s[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00,
                                            0xfe01, 0x7c01, 0x0001, 0x8001, 0x3c00};
            static const uint64_t bf16s[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0,
                                             0xffc1, 0x7f81, 0x0001, 0x8001, 0x3f80};
            static const uint64_t f64s[] = {0,
                                            0x8000000000000000ull,
                                            0x7ff0000000000000ull,
                                            0xfff0000000000000ull,
                                            0x7ff8000000000000ull,
                                            0xfff8000000000001ull,
                                            0x7ff0000000000001ull,
                                            1,
                                            0x8000000000000001ull,
                                            0x3ff0000000000000ull};
            size_t k = rnd() % 10;
            v = t == XDEV_DTYPE_F32    ? f32s[k]
                : t == XDEV_DTYPE_F16  ? f16s[k]
                : t == XDEV_DTYPE_BF16 ? bf16s[k]
                                       : f64s[k];
        }
        memcpy((char *)h + i * w, &v, w);
    }
}

/* ------------------------------------------------------------ one check */

typedef struct scase {
    xdev_dtype_t t;
    size_t n, vs; /* vs 0: keys only */
    bool desc, in_place, few;
    unsigned b, e;
} scase_t;

static void run_case(const scase_t *c) {
    const size_t w = ksize(c->t), n = c->n, vs = c->vs;
    void *hk = malloc(n * w + 8), *got = malloc(n * w + 8), *hv = malloc(n * 8 + 8),
         *gotv = malloc(n * 8 + 8);
    size_t *perm = malloc((n + 1) * sizeof *perm);
    make_keys(c->t, hk, n, c->few);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = i * 0x9e3779b97f4a7c15ull >> 7 ^ i; /* distinct low bytes where possible */
        memcpy((char *)hv + i * (vs ? vs : 1), &v, vs ? vs : 1);
    }
    void *dk = dalloc(n * w), *dv = dalloc(n * (vs ? vs : 1));
    void *dko = c->in_place ? dk : dalloc(n * w),
         *dvo = c->in_place ? dv : dalloc(n * (vs ? vs : 1));
    upload(dk, hk, n * w);
    if (vs) upload(dv, hv, n * vs);
    unsigned flags = c->desc ? XDEV_PRIM_DESCENDING : 0;
    if (vs)
        XT_OK(xdev_prim_sort_pairs(dk, dv, c->t, vs, n, flags, c->b, c->e, dko, dvo, NULL));
    else
        XT_OK(xdev_prim_sort_keys(dk, c->t, n, flags, c->b, c->e, dko, NULL));
    download(got, dko, n * w);
    if (vs) download(gotv, dvo, n * vs);
    reference(c->t, hk, 0, n, c->desc, c->b, c->e, perm);
    for (size_t i = 0; i < n; i++) {
        if (memcmp((char *)got + i * w, (char *)hk + perm[i] * w, w) != 0)
            ck_abort_msg("%s n=%zu desc=%d vs=%zu bits [%u,%u) in_place=%d: key %zu is %#llx, the "
                         "reference %#llx (input %zu)",
                         xdev_dtype_name(c->t), n, c->desc, vs, c->b, c->e, c->in_place, i,
                         (unsigned long long)bits_at(got, i, w),
                         (unsigned long long)bits_at(hk, perm[i], w), perm[i]);
        if (vs && memcmp((char *)gotv + i * vs, (char *)hv + perm[i] * vs, vs) != 0)
            ck_abort_msg("%s n=%zu desc=%d vs=%zu: value %zu is not input %zu's (unstable?)",
                         xdev_dtype_name(c->t), n, c->desc, vs, i, perm[i]);
    }
    XT_OK(xdev_free(dk));
    XT_OK(xdev_free(dv));
    if (!c->in_place) {
        XT_OK(xdev_free(dko));
        XT_OK(xdev_free(dvo));
    }
    free(hk);
    free(got);
    free(hv);
    free(gotv);
    free(perm);
}

/* 0, 1, 2, odd, around the insertion and serial limits, 2^17 - 1, 2^top + 1. */
static size_t sizes(size_t *out) {
    size_t n = 0, top = max_log2();
    const size_t fixed[] = {0, 1, 2, 3, 31, 32, 33, 257, 1001, 4095, 65537};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        out[n++] = fixed[i];
    if (xt_scale() >= 0.5) out[n++] = ((size_t)1 << 17) - 1; /* not under TSan: its time */
    if (top > 17) out[n++] = ((size_t)1 << top) + 1;         /* one: the host reference's time */
    return n;
}

/* ------------------------------------------------------------ tests */

START_TEST(sort_every_key_dtype_and_size) {
    NEED_SORT();
    size_t sz[32], ns = sizes(sz);
    for (int k = 0; k < NKEY; k++)
        for (size_t i = 0; i < ns; i++) {
            /* pairs at every size (keys checked too), keys only below the largest;
             * the largest in one direction per dtype (the host reference's time) */
            for (int desc = 0; desc < 2; desc++) {
                if (sz[i] > 65537 && desc != k % 2) continue;
                scase_t c = {k_keys[k], sz[i], 8, desc != 0, false, i % 2 == 0, 0, 0};
                run_case(&c);
                if (sz[i] <= (xt_scale() >= 0.5 ? 65537 : 4095)) {
                    c.vs = 0;
                    run_case(&c);
                }
            }
        }
}
END_TEST

/* Many equal keys: values (the input position) must keep their order;
 * every value size; in place. */
START_TEST(sort_stable_values_in_place) {
    NEED_SORT();
    static const size_t vss[] = {1, 2, 4, 8};
    static const size_t ns[] = {33, 5000, 100003};
    for (size_t v = 0; v < 4; v++)
        for (size_t i = 0; i < 3; i++)
            for (int ip = 0; ip < 2; ip++) {
                scase_t c = {XDEV_DTYPE_F32, ns[i], vss[v], ip == 1, ip == 1, true, 0, 0};
                run_case(&c);
                c.t = XDEV_DTYPE_I16;
                run_case(&c);
            }
}
END_TEST

/* Exactly the special floats: -0 before +0, NaN (either sign) last, in
 * input order; descending reverses the order, not the ties. */
START_TEST(sort_nan_inf_zero) {
    NEED_SORT();
    const float nan_p = NAN, nan_n = -NAN;
    const float in[] = {1.0f, nan_n, 0.0f, -0.0f, INFINITY, nan_p, -INFINITY, -0.0f, 0.0f, -1.0f};
    const size_t n = sizeof in / sizeof in[0];
    float *d = dalloc(sizeof in), *o = dalloc(sizeof in);
    int32_t idx[10], *dv = dalloc(sizeof idx), *dvo = dalloc(sizeof idx);
    for (int i = 0; i < 10; i++)
        idx[i] = i;
    upload(d, in, sizeof in);
    upload(dv, idx, sizeof idx);
    const int want_asc[] = {6, 9, 3, 7, 2, 8, 0, 4, 1, 5};
    const int want_desc[] = {1, 5, 4, 0, 2, 8, 3, 7, 9, 6};
    for (int desc = 0; desc < 2; desc++) {
        XT_OK(xdev_prim_sort_pairs(d, dv, XDEV_DTYPE_F32, 4, n, desc ? XDEV_PRIM_DESCENDING : 0, 0,
                                   0, o, dvo, NULL));
        int32_t got[10];
        float gk[10];
        download(got, dvo, sizeof got);
        download(gk, o, sizeof gk);
        for (size_t i = 0; i < n; i++) {
            int w = desc ? want_desc[i] : want_asc[i];
            ck_assert_msg(got[i] == w, "desc=%d: position %zu holds input %d, want %d", desc, i,
                          got[i], w);
            ck_assert_msg(memcmp(&gk[i], &in[w], 4) == 0, "key bits at %zu", i);
        }
    }
    XT_OK(xdev_free(d));
    XT_OK(xdev_free(o));
    XT_OK(xdev_free(dv));
    XT_OK(xdev_free(dvo));
}
END_TEST

/* Bit ranges: only the image's bits [b, e) order the keys (ties stable). */
START_TEST(sort_bit_range) {
    NEED_SORT();
    const struct {
        xdev_dtype_t t;
        unsigned b, e;
    } r[] = {{XDEV_DTYPE_U32, 4, 12},  {XDEV_DTYPE_U32, 0, 1},  {XDEV_DTYPE_I32, 24, 32},
             {XDEV_DTYPE_U64, 40, 64}, {XDEV_DTYPE_I64, 0, 17}, {XDEV_DTYPE_F32, 16, 32},
             {XDEV_DTYPE_U8, 3, 8},    {XDEV_DTYPE_F16, 0, 16}, {XDEV_DTYPE_BF16, 9, 15}};
    const size_t ns[] = {20, 3001, xt_scale() >= 0.5 ? 70001 : 5001};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        for (size_t j = 0; j < 3; j++)
            for (int desc = 0; desc < 2; desc++) {
                scase_t c = {r[i].t, ns[j], 4, desc != 0, false, false, r[i].b, r[i].e};
                run_case(&c);
            }
}
END_TEST

/* Segment s of a segmented sort (xdev/primitives.h): its bounds clamped
 * to [0, n], its begin to the furthest end before it; *end carries that
 * end from segment to segment (0 before the first). */
static void sort_segment(const int64_t *off, size_t s, size_t n, int64_t *end, int64_t *lo,
                         int64_t *hi) {
    int64_t b = off[s], e = off[s + 1], c = (int64_t)n;
    b = b < 0 ? 0 : b > c ? c : b;
    e = e < b ? b : e > c ? c : e;
    b = b < *end ? *end : b;
    e = e < b ? b : e;
    *end = e;
    *lo = b;
    *hi = e;
}

/* The model of a segmented sort of n keys (dtype t) over nseg segments at
 * off, each cut as sort_segment says: src[i] is the input item that
 * position i holds after the sort, SIZE_MAX where i is in no segment (not
 * written). Returns the last segment's end. */
static int64_t segmented_model(xdev_dtype_t t, const void *keys, size_t n, const int64_t *off,
                               size_t nseg, bool desc, size_t *src) {
    for (size_t i = 0; i < n; i++)
        src[i] = SIZE_MAX;
    int64_t end = 0;
    for (size_t s = 0; s < nseg; s++) {
        int64_t b, e;
        sort_segment(off, s, n, &end, &b, &e);
        reference(t, keys, (size_t)b, (size_t)e, desc, 0, 0, src + b);
    }
    return end;
}

/* Segments: empty ones, small, above the serial limit, clamped bounds;
 * items in no segment are not written. */
static void segmented_case(xdev_dtype_t t, size_t vs, bool desc, const int64_t *off, size_t nseg,
                           size_t n) {
    const size_t w = ksize(t);
    char *hk = malloc(n * w + 8), *got = malloc(n * w + 8), *hv = malloc(n * 8 + 8),
         *gotv = malloc(n * 8 + 8);
    size_t *perm = malloc((n + 1) * sizeof *perm);
    make_keys(t, hk, n, true);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = i;
        memcpy(hv + i * (vs ? vs : 1), &v, vs ? vs : 1);
    }
    void *dk = dalloc(n * w), *dko = dalloc(n * w), *dv = dalloc(n * 8), *dvo = dalloc(n * 8);
    int64_t *doff = dalloc((nseg + 1) * 8);
    upload(dk, hk, n * w);
    upload(dv, hv, n * (vs ? vs : 1));
    upload(doff, off, (nseg + 1) * 8);
    XT_OK(xdev_memset_async(dko, 0xa5, n * w, NULL));
    XT_OK(xdev_memset_async(dvo, 0xa5, n * 8, NULL));
    XT_OK(xdev_prim_segmented_sort(dk, vs ? dv : NULL, t, vs, n, doff, nseg,
                                   desc ? XDEV_PRIM_DESCENDING : 0, 0, 0, dko, vs ? dvo : NULL,
                                   NULL));
    download(got, dko, n * w);
    download(gotv, dvo, n * (vs ? vs : 1));
    segmented_model(t, hk, n, off, nseg, desc, perm);
    for (size_t i = 0; i < n; i++) {
        size_t p = perm[i];
        if (p == SIZE_MAX) {
            for (size_t k = 0; k < w; k++)
                if ((unsigned char)got[i * w + k] != 0xa5)
                    ck_abort_msg("key %zu is in no segment but was written", i);
            continue;
        }
        if (memcmp(got + i * w, hk + p * w, w) != 0)
            ck_abort_msg("%s desc=%d: key %zu is not input %zu's", xdev_dtype_name(t), desc, i, p);
        if (vs && memcmp(gotv + i * vs, hv + p * vs, vs) != 0)
            ck_abort_msg("%s: value %zu is not input %zu's", xdev_dtype_name(t), i, p);
    }
    free(hk);
    free(got);
    free(hv);
    free(gotv);
    free(perm);
    XT_OK(xdev_free(dk));
    XT_OK(xdev_free(dko));
    XT_OK(xdev_free(dv));
    XT_OK(xdev_free(dvo));
    XT_OK(xdev_free(doff));
}

START_TEST(segmented_sort_segments) {
    NEED_SORT();
    /* empty, tiny, insertion-sized, serial radix, one above the serial
     * limit (the parallel path), a gap before and after */
    const int64_t off[] = {5, 5, 6, 40, 40, 1040, 1040 + 70000, 1040 + 70000, 1040 + 70003};
    const size_t nseg = sizeof off / sizeof off[0] - 1, n = 1040 + 70000 + 10;
    for (int k = 0; k < NKEY; k++) /* under TSan the large segment for a third of them */
        segmented_case(k_keys[k], k % 2 ? 4 : 0, k % 3 == 0, off,
                       xt_scale() >= 0.5 || k % 3 == 0 ? nseg : 5,
                       xt_scale() >= 0.5 || k % 3 == 0 ? n : 1040);
    segmented_case(XDEV_DTYPE_F64, 8, false, off, nseg, n);
    segmented_case(XDEV_DTYPE_U16, 2, true, off, nseg, n);
    segmented_case(XDEV_DTYPE_I8, 1, false, off, nseg, n);
    /* malformed offsets are clamped: negative, decreasing, past the end */
    const int64_t bad[] = {-7, 3, 50, 1000000, 20};
    segmented_case(XDEV_DTYPE_I32, 4, false, bad, 4, 100);
    /* count 0 and no segments do nothing */
    void *d = dalloc(8);
    XT_OK(xdev_prim_segmented_sort(d, NULL, XDEV_DTYPE_U32, 0, 0, NULL, 0, 0, 0, 0, d, NULL, NULL));
    XT_OK(xdev_free(d));
}
END_TEST

/* Offsets out of order make segments overlap; a segmented sort begins
 * each segment at the furthest end before it (xdev/primitives.h), so no
 * two workers sort one item (TSan), every item stays inside its buffers,
 * and the result is the model's - out of place and in place, keys and
 * pairs. {0, n, 0, n, ...}: every even segment [0, n) (then cut to
 * nothing) and every odd one empty; {0, 2n/3, n/3, n}: [0, 2n/3), empty,
 * [n/3, n) cut to [2n/3, n). n is past the insertion sort: the radix
 * passes ping-pong through the temporaries, where a pass racing another
 * scatters past its segment; a GPU backend's library sorts segments side
 * by side, so it must cut them too (docs/bounds.md). */
START_TEST(segmented_sort_overlapping_segments) {
    NEED_SORT();
    enum { NS = 64 };
    const size_t n = 3000;
    int64_t off[2][NS + 1];
    for (size_t s = 0; s <= NS; s++)
        off[0][s] = s % 2 ? (int64_t)n : 0;
    const int64_t cut[4] = {0, 2 * (int64_t)n / 3, (int64_t)n / 3, (int64_t)n};
    memcpy(off[1], cut, sizeof cut);
    const size_t nseg[2] = {NS, 3};
    uint32_t *h = malloc(n * 4), *want = malloc(n * 4), *wantv = malloc(n * 4);
    uint32_t *got = malloc(n * 4), *gotv = malloc(n * 4), *iota = malloc(n * 4);
    size_t *perm = malloc(n * sizeof *perm);
    for (size_t i = 0; i < n; i++) {
        h[i] = (uint32_t)rnd();
        iota[i] = (uint32_t)i;
    }
    uint32_t *dk = dalloc(n * 4), *dko = dalloc(n * 4), *dv = dalloc(n * 4), *dvo = dalloc(n * 4);
    int64_t *doff = dalloc(sizeof off[0]);
    for (int o = 0; o < 2; o++) {
        /* the model: every item is in at most one segment */
        int64_t end = segmented_model(XDEV_DTYPE_U32, h, n, off[o], nseg[o], false, perm);
        ck_assert_int_eq(end, (int64_t)n); /* both patterns cover every item */
        for (size_t i = 0; i < n; i++) {
            ck_assert_uint_lt(perm[i], n);
            want[i] = h[perm[i]];
            wantv[i] = (uint32_t)perm[i];
        }
        upload(doff, off[o], (nseg[o] + 1) * 8);
        for (int rep = 0; rep < xt_iters(8, 2); rep++)
            for (int mode = 0; mode < 4; mode++) { /* bit 0: in place; bit 1: pairs */
                const bool in_place = mode & 1, pairs = mode & 2;
                upload(dk, h, n * 4);
                upload(dv, iota, n * 4);
                uint32_t *ko = in_place ? dk : dko, *vo = in_place ? dv : dvo;
                XT_OK(xdev_prim_segmented_sort(dk, pairs ? dv : NULL, XDEV_DTYPE_U32, 4, n, doff,
                                               nseg[o], 0, 0, 0, ko, pairs ? vo : NULL, NULL));
                download(got, ko, n * 4);
                download(gotv, vo, n * 4);
                for (size_t i = 0; i < n; i++) {
                    if (got[i] != want[i])
                        ck_abort_msg("offsets %d rep %d mode %d: key %zu is 0x%08x, want 0x%08x", o,
                                     rep, mode, i, got[i], want[i]);
                    if (pairs && gotv[i] != wantv[i])
                        ck_abort_msg("offsets %d rep %d mode %d: value %zu is %u, want %u", o, rep,
                                     mode, i, gotv[i], wantv[i]);
                }
            }
    }
    free(h);
    free(want);
    free(wantv);
    free(got);
    free(gotv);
    free(iota);
    free(perm);
    XT_OK(xdev_free(dk));
    XT_OK(xdev_free(dko));
    XT_OK(xdev_free(dv));
    XT_OK(xdev_free(dvo));
    XT_OK(xdev_free(doff));
}
END_TEST

/* Captured once, replayed over new keys: the temporaries come from the
 * graph's pool and stay valid for every replay. */
START_TEST(capture_and_replay) {
    NEED_SORT();
    const size_t n = 70001;
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    uint32_t *h = malloc(n * 4), *got = malloc(n * 4), *gotv = malloc(n * 4), *iota = malloc(n * 4);
    size_t *perm = malloc(n * sizeof *perm);
    for (size_t i = 0; i < n; i++)
        iota[i] = (uint32_t)i;
    uint32_t *dk = dalloc(n * 4), *dko = dalloc(n * 4), *dv = dalloc(n * 4), *dvo = dalloc(n * 4);
    uint32_t *dsk = dalloc(n * 4);
    int64_t *doff = dalloc(3 * 8);
    const int64_t off[3] = {0, 100, (int64_t)n};
    XT_OK(xdev_memcpy(doff, off, sizeof off));
    XT_OK(xdev_memcpy(dv, iota, n * 4));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    xdev_status_t st = xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        XT_SKIP("no capture on %s: %s", xt_type_name(), xdev_last_error());
    } else {
        XT_OK(st);
        XT_OK(xdev_prim_sort_pairs(dk, dv, XDEV_DTYPE_U32, 4, n, 0, 0, 0, dko, dvo, s));
        XT_OK(xdev_prim_segmented_sort(dk, NULL, XDEV_DTYPE_U32, 0, n, doff, 2,
                                       XDEV_PRIM_DESCENDING, 0, 0, dsk, NULL, s));
        XT_OK(xdev_graph_capture_end(g));
        for (int rep = 0; rep < 3; rep++) {
            for (size_t i = 0; i < n; i++)
                h[i] = (uint32_t)(rnd() % (rep == 1 ? 50 : 1u << 31));
            XT_OK(xdev_memcpy(dk, h, n * 4));
            XT_OK(xdev_graph_replay(g, s));
            XT_OK(xdev_stream_synchronize(s));
            XT_OK(xdev_memcpy(got, dko, n * 4));
            XT_OK(xdev_memcpy(gotv, dvo, n * 4));
            reference(XDEV_DTYPE_U32, h, 0, n, false, 0, 0, perm);
            for (size_t i = 0; i < n; i++)
                if (gotv[i] != perm[i] || got[i] != h[perm[i]])
                    ck_abort_msg("replay %d: item %zu is input %u, want %zu", rep, i, gotv[i],
                                 perm[i]);
            XT_OK(xdev_memcpy(got, dsk, n * 4));
            for (size_t seg = 0; seg < 2; seg++) {
                reference(XDEV_DTYPE_U32, h, (size_t)off[seg], (size_t)off[seg + 1], true, 0, 0,
                          perm);
                for (size_t i = (size_t)off[seg]; i < (size_t)off[seg + 1]; i++)
                    if (got[i] != h[perm[i - (size_t)off[seg]]])
                        ck_abort_msg("replay %d: segment %zu key %zu", rep, seg, i);
            }
        }
    }
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    free(h);
    free(got);
    free(gotv);
    free(iota);
    free(perm);
    XT_OK(xdev_free(dk));
    XT_OK(xdev_free(dko));
    XT_OK(xdev_free(dv));
    XT_OK(xdev_free(dvo));
    XT_OK(xdev_free(dsk));
    XT_OK(xdev_free(doff));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("prim_sort");
    TCase *tc = tcase_create("prim_sort");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, sort_every_key_dtype_and_size);
    tcase_add_test(tc, sort_stable_values_in_place);
    tcase_add_test(tc, sort_nan_inf_zero);
    tcase_add_test(tc, sort_bit_range);
    tcase_add_test(tc, segmented_sort_segments);
    tcase_add_test(tc, segmented_sort_overlapping_segments);
    tcase_add_test(tc, capture_and_replay);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "prim_sort", argc, argv);
}
