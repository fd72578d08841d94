/* SPDX-License-Identifier: Apache-2.0 */
/* test_prim_select.c - the results of the primitives that are not sorts,
 * reduces or scans (xdev/primitives.h, issue 44): segmented reduce (every
 * op, empty and malformed segments, the deterministic sum equal to
 * xdev_prim_reduce's over the segment alone), histogram (edges, NaN, +-inf,
 * 64-bit samples), select_flagged (every item size, flags of any non-zero
 * value), select_if (comparisons with a literal - the select_compare slot -
 * as C compares them, on every dtype, NaN included; compiled predicates; on
 * the CPU without a compiler), unique and run-length encode (runs across
 * the CPU's chunks, -0/+0 and NaN), against a host model; and compactions
 * captured in a graph and replayed. A backend without a primitive skips the test
 * that needs it with the backend's refusal. Conformance:
 * XDEV_BACKEND=<backend>. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prim_test.h"

static void setup(void) {
    xt_reset_state();
}

/* st is the first call of a primitive: true to go on; a refusal
 * (NOT_SUPPORTED) must name the backend, and the test is then skipped. */
static bool have(const char *test, xdev_status_t st) {
    return pt_have(test, st, NULL, "lacks the primitive");
}

/* Sizes that cross the CPU's chunks (65536 items) and none. */
static const size_t k_sizes[] = {0, 1, 2, 31, 1000, 65535, 65536, 65537, 200003};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])

/* ------------------------------------------------------------ segmented reduce */

/* num_segments + 1 offsets over n items: random lengths (a third empty),
 * then a few malformed bounds (below 0, past n, an end before its begin,
 * then out of order: a last segment overlapping the others). */
static size_t make_offsets(int64_t *off, size_t max_segments, size_t n, bool malformed) {
    size_t s = 0;
    int64_t at = 0;
    off[0] = 0;
    while (s + 1 < max_segments && (size_t)at < n) {
        int64_t len = rnd() % 3 == 0 ? 0 : (int64_t)(rnd() % (n / 8 + 2));
        at = at + len > (int64_t)n ? (int64_t)n : at + len;
        off[++s] = at;
    }
    if (malformed && s + 4 < max_segments) {
        off[++s] = (int64_t)n + 50; /* past the end: clamped to n */
        off[++s] = 3;               /* before its begin: empty */
        off[++s] = -7;              /* below 0: clamped to 0, empty */
        off[++s] = (int64_t)n / 2; /* [0, n/2): a window over the earlier segments, read as given */
    }
    return s;
}

/* The host model of one segment (integers exact; floats for min/max/arg). */
static void model_segment(xdev_dtype_t t, xdev_prim_op_t op, const void *h, int64_t b, int64_t e,
                          double *val, int64_t *idx) {
    *idx = -1;
    if (e <= b) {
        *val = op == XDEV_PRIM_SUM ? 0 : op == XDEV_PRIM_PROD ? 1 : 0;
        return;
    }
    double best = xt_load(t, h, (size_t)b);
    int64_t at = b;
    for (int64_t i = b + 1; i < e && best == best; i++) {
        double v = xt_load(t, h, (size_t)i);
        bool better = op == XDEV_PRIM_MIN || op == XDEV_PRIM_ARGMIN ? v < best : v > best;
        if (v != v || better) best = v, at = i;
    }
    *val = best;
    *idx = at - b;
}

START_TEST(segmented_reduce_results) {
    const xdev_dtype_t types[] = {XDEV_DTYPE_I32, XDEV_DTYPE_I64, XDEV_DTYPE_F32, XDEV_DTYPE_F64};
    const size_t n = 70001, maxseg = 64;
    int64_t off[64], clamped[64][2];
    for (size_t ti = 0; ti < 4; ti++) {
        const xdev_dtype_t t = types[ti];
        const size_t es = xdev_dtype_size(t);
        void *h = malloc(n * es);
        for (size_t i = 0; i < n; i++)
            xt_store(t, h, i, (double)((int64_t)(rnd() % 2001) - 1000));
        if (t == XDEV_DTYPE_F32 || t == XDEV_DTYPE_F64) xt_store(t, h, n / 2, NAN);
        size_t ns = make_offsets(off, maxseg, n, true);
        ck_assert_msg(off[ns] == (int64_t)n / 2, "%zu segments: no room for the malformed ones",
                      ns);
        for (size_t s = 0; s < ns; s++) {
            int64_t b = off[s] < 0 ? 0 : off[s] > (int64_t)n ? (int64_t)n : off[s];
            int64_t e = off[s + 1] < b ? b : off[s + 1] > (int64_t)n ? (int64_t)n : off[s + 1];
            clamped[s][0] = b;
            clamped[s][1] = e;
        }
        void *din = dalloc(n * es), *dout = dalloc(maxseg * 8);
        int64_t *doff = dalloc((ns + 1) * 8);
        upload(din, h, n * es);
        upload(doff, off, (ns + 1) * 8);
        for (int op = XDEV_PRIM_SUM; op <= XDEV_PRIM_ARGMAX; op++) {
            if (op == XDEV_PRIM_PROD) continue; /* sums cover the order; prod overflows */
            xdev_status_t st = xdev_prim_segmented_reduce(din, t, n, doff, ns, op, dout, NULL);
            if (!have(__func__, st)) goto done;
            unsigned char got[64 * 8];
            download(got, dout, ns * 8);
            for (size_t s = 0; s < ns; s++) {
                double want;
                int64_t widx;
                model_segment(t, op, h, clamped[s][0], clamped[s][1], &want, &widx);
                if (op == XDEV_PRIM_ARGMIN || op == XDEV_PRIM_ARGMAX) {
                    int64_t g;
                    memcpy(&g, got + s * 8, 8);
                    ck_assert_msg(g == widx,
                                  "%s arg op %d segment %zu [%lld, %lld): %lld, want %lld",
                                  xdev_dtype_name(t), op, s, (long long)clamped[s][0],
                                  (long long)clamped[s][1], (long long)g, (long long)widx);
                    continue;
                }
                double g = xt_load(t, got, s);
                bool empty = clamped[s][1] <= clamped[s][0];
                if (op == XDEV_PRIM_SUM) {
                    double sum = 0;
                    for (int64_t i = clamped[s][0]; i < clamped[s][1]; i++)
                        sum += xt_load(t, h, (size_t)i);
                    want = sum; /* integers of at most 1000: every float sum here is exact */
                } else if (empty) {
                    want = t == XDEV_DTYPE_I32 ? (op == XDEV_PRIM_MIN ? INT32_MAX : INT32_MIN)
                           : t == XDEV_DTYPE_I64
                               ? (op == XDEV_PRIM_MIN ? (double)INT64_MAX : (double)INT64_MIN)
                           : op == XDEV_PRIM_MIN ? INFINITY
                                                 : -INFINITY;
                }
                if (!(g == want || (g != g && want != want)))
                    ck_abort_msg("%s op %d segment %zu [%lld, %lld): %g, want %g",
                                 xdev_dtype_name(t), op, s, (long long)clamped[s][0],
                                 (long long)clamped[s][1], g, want);
            }
        }
    done:
        free(h);
        XT_OK(xdev_free(din));
        XT_OK(xdev_free(dout));
        XT_OK(xdev_free(doff));
    }
}
END_TEST

/* Deterministic mode: each segment's float sum has the bits of
 * xdev_prim_reduce over that segment alone (segments longer than a chunk). */
START_TEST(segmented_sum_deterministic) {
    const size_t n = 3 * XDEV_PRIM_CHUNK * 4 + 777;
    float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((double)(rnd() % 2000001) / 1000.0 - 1000.0) * 1.37f;
    int64_t off[6] = {0,         5, 5, XDEV_PRIM_CHUNK + 3, 7 * XDEV_PRIM_CHUNK + 13,
                      (int64_t)n}; /* segment 3: 7 chunks */
    float *din = dalloc(n * 4), *dout = dalloc(5 * 4), *done = dalloc(4);
    int64_t *doff = dalloc(sizeof off);
    upload(din, h, n * 4);
    upload(doff, off, sizeof off);
    bool was;
    XT_OK(xdev_get_deterministic(&was));
    XT_OK(xdev_set_deterministic(true));
    xdev_status_t st =
        xdev_prim_segmented_reduce(din, XDEV_DTYPE_F32, n, doff, 5, XDEV_PRIM_SUM, dout, NULL);
    if (have(__func__, st)) {
        float got[5];
        download(got, dout, sizeof got);
        for (int s = 0; s < 5; s++) {
            XT_OK(xdev_prim_reduce(din + off[s], XDEV_DTYPE_F32, (size_t)(off[s + 1] - off[s]),
                                   XDEV_PRIM_SUM, done, NULL));
            float want;
            download(&want, done, 4);
            ck_assert_msg(memcmp(&got[s], &want, 4) == 0,
                          "segment %d: %a, but xdev_prim_reduce of it gives %a", s, (double)got[s],
                          (double)want);
        }
    }
    XT_OK(xdev_set_deterministic(was));
    free(h);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(done));
    XT_OK(xdev_free(doff));
}
END_TEST

/* ------------------------------------------------------------ histogram */

START_TEST(histogram_results) {
    const size_t n = 100003, bins = 37;
    const double lo = -2.5, hi = 7.0;
    /* f32 with the edges, NaN and the infinities */
    float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((double)(rnd() % 1200000) / 100000.0 - 3.5);
    const float special[] = {(float)lo, (float)hi, nextafterf((float)hi, 0),
                             NAN,       INFINITY,  -INFINITY,
                             -0.0f,     0.0f,      nextafterf((float)lo, -10)};
    for (size_t k = 0; k < sizeof special / sizeof special[0]; k++)
        h[k * 1000] = special[k];
    float *din = dalloc(n * 4);
    int64_t *dc = dalloc(bins * 8);
    XT_OK(xdev_memset_async(dc, 0x77, bins * 8, NULL)); /* the call zeroes counts first */
    upload(din, h, n * 4);
    xdev_status_t st = xdev_prim_histogram_even(din, XDEV_DTYPE_F32, n, bins, lo, hi, dc, NULL);
    if (have(__func__, st)) {
        int64_t got[37], want[37] = {0};
        for (size_t i = 0; i < n; i++) {
            double x = h[i];
            if (!(x >= lo && x < hi)) continue;
            double b = floor(((x - lo) * (double)bins) / (hi - lo));
            want[b >= bins - 1 ? bins - 1 : (size_t)b]++;
        }
        download(got, dc, sizeof got);
        for (size_t b = 0; b < bins; b++)
            ck_assert_msg(got[b] == want[b], "f32 bin %zu: %lld, want %lld", b, (long long)got[b],
                          (long long)want[b]);
        /* count 0 writes zeros */
        XT_OK(xdev_prim_histogram_even(din, XDEV_DTYPE_F32, 0, bins, lo, hi, dc, NULL));
        download(got, dc, sizeof got);
        for (size_t b = 0; b < bins; b++)
            ck_assert_msg(got[b] == 0, "count 0: bin %zu is %lld", b, (long long)got[b]);
        /* u8 samples into 256 bins of one value each, and i64 past 2^53 */
        uint8_t *h8 = malloc(n);
        int64_t want8[256] = {0}, got8[256];
        for (size_t i = 0; i < n; i++)
            want8[h8[i] = (uint8_t)rnd()]++;
        uint8_t *d8 = dalloc(n);
        int64_t *dc8 = dalloc(256 * 8);
        upload(d8, h8, n);
        XT_OK(xdev_prim_histogram_even(d8, XDEV_DTYPE_U8, n, 256, 0, 256, dc8, NULL));
        download(got8, dc8, sizeof got8);
        for (int b = 0; b < 256; b++)
            ck_assert_msg(got8[b] == want8[b], "u8 bin %d: %lld, want %lld", b, (long long)got8[b],
                          (long long)want8[b]);
        int64_t h64[4] = {(int64_t)1 << 60, ((int64_t)1 << 60) + 1, -((int64_t)1 << 62), 5};
        int64_t *d64 = dalloc(sizeof h64);
        upload(d64, h64, sizeof h64);
        XT_OK(xdev_prim_histogram_even(d64, XDEV_DTYPE_I64, 4, 2, 0, 0x1p61, dc8, NULL));
        download(got8, dc8, 16);
        ck_assert_msg(got8[0] == 1 && got8[1] == 2, "i64 bins: %lld %lld, want 1 2",
                      (long long)got8[0], (long long)got8[1]);
        free(h8);
        XT_OK(xdev_free(d8));
        XT_OK(xdev_free(dc8));
        XT_OK(xdev_free(d64));
    }
    free(h);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dc));
}
END_TEST

/* ------------------------------------------------------------ compactions */

START_TEST(select_flagged_results) {
    const size_t maxn = k_sizes[NSIZES - 1];
    unsigned char *h = malloc(maxn * 8), *got = malloc(maxn * 8), *want = malloc(maxn * 8);
    uint8_t *fl = malloc(maxn);
    void *din = dalloc(maxn * 8), *dout = dalloc(maxn * 8);
    uint8_t *dfl = dalloc(maxn);
    int64_t *dnum = dalloc(8);
    for (size_t i = 0; i < maxn * 8; i++)
        h[i] = (unsigned char)rnd();
    upload(din, h, maxn * 8);
    for (size_t size = 1; size <= 8; size *= 2) {
        for (size_t si = 0; si < NSIZES; si++) {
            const size_t n = k_sizes[si];
            size_t k = 0;
            for (size_t i = 0; i < n; i++) {
                uint64_t r = rnd() % 4;
                fl[i] = r == 0 ? 0 : r == 1 ? 1 : r == 2 ? 0x80 : 0; /* any non-zero keeps */
                if (fl[i]) memcpy(want + k++ * size, h + i * size, size);
            }
            upload(dfl, fl, n);
            XT_OK(xdev_memset_async(dnum, 0x77, 8, NULL));
            xdev_status_t st = xdev_prim_select_flagged(din, size, dfl, n, dout, dnum, NULL);
            if (!have(__func__, st)) goto done;
            int64_t num;
            download(&num, dnum, 8);
            ck_assert_msg(num == (int64_t)k, "item size %zu, %zu items: %lld kept, want %zu", size,
                          n, (long long)num, k);
            download(got, dout, k * size);
            for (size_t i = 0; i < k; i++)
                if (memcmp(got + i * size, want + i * size, size) != 0)
                    ck_abort_msg("item size %zu, %zu items: kept item %zu differs", size, n, i);
        }
    }
done:
    free(h);
    free(got);
    free(want);
    free(fl);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(dfl));
    XT_OK(xdev_free(dnum));
}
END_TEST

START_TEST(select_if_results) {
    const size_t n = 70003;
    float *h = malloc(n * 4), *got = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(rnd() % 1000) / 1000.0f;
    float *din = dalloc(n * 4), *dout = dalloc(n * 4);
    int64_t *dnum = dalloc(8);
    upload(din, h, n * 4);
    xdev_status_t st = xdev_prim_select_if(din, XDEV_DTYPE_F32, n, "in0 > 0.5f", dout, dnum, NULL);
    if (have(__func__, st)) {
        int64_t num;
        download(&num, dnum, 8);
        size_t k = 0;
        download(got, dout, (size_t)num * 4);
        for (size_t i = 0; i < n; i++) {
            if (!(h[i] > 0.5f)) continue;
            ck_assert_msg((int64_t)k < num, "select_if kept %lld items, fewer than the model",
                          (long long)num);
            ck_assert_msg(got[k] == h[i], "kept item %zu is %g, want %g", k, (double)got[k],
                          (double)h[i]);
            k++;
        }
        ck_assert_msg((int64_t)k == num, "select_if kept %lld items, want %zu", (long long)num, k);
    }
    XT_OK(xdev_elementwise_cache_clear()); /* the predicate's module is not kept past the test */
    free(h);
    free(got);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(dnum));
}
END_TEST

/* select_if's predicates `in0 OP literal` (the select_compare slot where a
 * backend has it: no compile) and some that are compiled, each against a
 * host model that is the very same C expression (the predicate string is
 * the model's stringized). The items hold what tells the comparison types
 * apart: 0.1f is > 0.1 in double but not > 0.1f in float, the int literal
 * 2^24 + 1 is 2^24 in float, 2^53 + 1 is 2^53 in double; and NaN, +-inf,
 * -0, the integer extremes. */
typedef struct si_case {
    xdev_dtype_t dtype;
    const char *predicate;
    bool (*model)(const void *item);
} si_case_t;

// clang-format off
#define SELECT_IF_CASES(X)                                                                         \
    X(0, F32, float, in0 > 0.5f)                                                                   \
    X(1, F32, float, in0 > 0.1)                                                                    \
    X(2, F32, float, in0 > 0.1f)                                                                   \
    X(3, F32, float, 0.1 < in0)                                                                    \
    X(4, F32, float, in0 <= 0.1f)                                                                  \
    X(5, F32, float, in0 == 0.1)                                                                   \
    X(6, F32, float, in0 == 0.1f)                                                                  \
    X(7, F32, float, in0 != 0.1f)                                                                  \
    X(8, F32, float, in0 != 1e-3)                                                                  \
    X(9, F32, float, in0>=-3)                                                                      \
    X(10, F32, float, -3 >= in0)                                                                   \
    X(11, F32, float, in0 < 16777217)                                                              \
    X(12, F32, float, in0 >= -0.0f)                                                                \
    X(13, F32, float, ( in0 > 1 ))                                                                 \
    X(14, F32, float, in0 > 0.5f && in0 < 0.75f)                                                   \
    X(15, F32, float, in0 * in0 > 1)                                                               \
    X(16, F32, float, in0 > 0x1p-1)                                                                \
    X(17, F64, double, in0 > 0.1f)                                                                 \
    X(18, F64, double, in0 > 0.1)                                                                  \
    X(19, F64, double, in0 < -2.5)                                                                 \
    X(20, F64, double, in0 == 9007199254740993)                                                    \
    X(21, F64, double, 1e-3 >= in0)                                                                \
    X(22, F64, double, in0 != 0)                                                                   \
    X(23, I32, int32_t, in0 >= -3)                                                                 \
    X(24, I32, int32_t, in0 < 3000000000)                                                          \
    X(25, I32, int32_t, in0 > -2147483648)                                                         \
    X(26, I32, int32_t, 7 == in0)                                                                  \
    X(27, I32, int32_t, in0 != 0)                                                                  \
    X(28, I32, int32_t, in0 > 0.5)                                                                 \
    X(29, I32, int32_t, (in0 & 1) == 0)                                                            \
    X(30, I64, int64_t, in0 >= -9223372036854775807)                                               \
    X(31, I64, int64_t, in0 < 9223372036854775807)                                                 \
    X(32, I64, int64_t, in0 > 4294967296)                                                          \
    X(33, I64, int64_t, -1 == in0)                                                                 \
    X(34, I64, int64_t, in0 % 3 == 1)
// clang-format on

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits" /* in0 < 3000000000 of an int: always true */
#define SI_MODEL(id, DT, T, E)                                                                     \
    static bool si_model_##id(const void *p) {                                                     \
        T in0;                                                                                     \
        memcpy(&in0, p, sizeof in0);                                                               \
        return (E);                                                                                \
    }
SELECT_IF_CASES(SI_MODEL)
#pragma GCC diagnostic pop
#define SI_ROW(id, DT, T, E) {XDEV_DTYPE_##DT, #E, si_model_##id},
static const si_case_t k_si_cases[] = {SELECT_IF_CASES(SI_ROW)};

/* n items of dtype t: every fifth one of the telling values, the rest
 * random (random bits for the floats: NaNs and infinities among them). */
static void si_items(xdev_dtype_t t, void *h, size_t n) {
    static const float f[] = {0.1f,     0x1.99999ap-4f, 0x1.999998p-4f, 0.5f,        0.75f,
                              -3.0f,    -0x1.7ffffep1f, 16777216.0f,    16777218.0f, 1e-3f,
                              1.0f,     0.0f,           -0.0f,          NAN,         -NAN,
                              INFINITY, -INFINITY,      1.0f + 0x1p-23f};
    static const double d[] = {0.1,
                               (double)0.1f,
                               0x1.999999999999bp-4,
                               -2.5,
                               -0x1.3ffffffffffffp1,
                               0x1p53,
                               0x1p53 + 2,
                               1e-3,
                               0.0,
                               -0.0,
                               NAN,
                               INFINITY,
                               -INFINITY};
    static const int32_t i[] = {INT32_MIN, INT32_MAX, -4, -3, -2, 0, 6, 7, 8};
    static const int64_t l[] = {
        INT64_MIN, INT64_MAX, INT64_MAX - 1, -INT64_MAX, 4294967296, 4294967297, -1, 0};
    for (size_t k = 0; k < n; k++) {
        bool tell = k % 5 == 0;
        uint64_t r = rnd();
        switch (t) {
        case XDEV_DTYPE_F32: {
            float v;
            uint32_t bits = (uint32_t)r;
            if (tell)
                v = f[r % (sizeof f / sizeof f[0])];
            else if (k % 5 == 1)
                memcpy(&v, &bits, 4);
            else
                v = (float)((int64_t)(r % 8001) - 4000) / 1000.0f;
            ((float *)h)[k] = v;
            break;
        }
        case XDEV_DTYPE_F64: {
            double v;
            if (tell)
                v = d[r % (sizeof d / sizeof d[0])];
            else if (k % 5 == 1)
                memcpy(&v, &r, 8);
            else
                v = (double)((int64_t)(r % 8001) - 4000) / 1000.0;
            ((double *)h)[k] = v;
            break;
        }
        case XDEV_DTYPE_I32:
            ((int32_t *)h)[k] = tell ? i[r % (sizeof i / sizeof i[0])]
                                     : (k % 5 == 1 ? (int32_t)(uint32_t)r : (int32_t)(r % 21) - 10);
            break;
        default:
            ((int64_t *)h)[k] = tell ? l[r % (sizeof l / sizeof l[0])]
                                     : (k % 5 == 1 ? (int64_t)r : (int64_t)(r % 21) - 10);
            break;
        }
    }
}

/* One case over n items: the kept items, bit for bit and in order, and
 * their count, the model's. `first`: a refusal skips the test (false). */
static bool si_check(const char *test, const si_case_t *c, size_t n, bool first) {
    const size_t es = xdev_dtype_size(c->dtype);
    unsigned char *h = malloc(n * es + 1), *got = malloc(n * es + 1);
    si_items(c->dtype, h, n);
    void *din = dalloc(n * es), *dout = dalloc(n * es);
    int64_t *dnum = dalloc(8);
    upload(din, h, n * es);
    XT_OK(xdev_memset_async(dnum, 0x77, 8, NULL));
    xdev_status_t st = xdev_prim_select_if(din, c->dtype, n, c->predicate, dout, dnum, NULL);
    bool go = !first || have(test, st);
    ck_assert_msg(!go || st == XDEV_SUCCESS, "select_if '%s' (%s, %zu items): %s", c->predicate,
                  xdev_dtype_name(c->dtype), n, xdev_last_error());
    int64_t num = 0;
    if (go) {
        download(&num, dnum, 8);
        ck_assert_msg(num >= 0 && (size_t)num <= n, "'%s': num_out %lld", c->predicate,
                      (long long)num);
        download(got, dout, (size_t)num * es);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) { /* (no passing assertion per item: each is a write) */
            if (!c->model(h + i * es)) continue;
            if ((int64_t)k >= num)
                ck_abort_msg("'%s' (%s): kept %lld items, fewer than the model", c->predicate,
                             xdev_dtype_name(c->dtype), (long long)num);
            if (memcmp(got + k * es, h + i * es, es) != 0)
                ck_abort_msg("'%s' (%s): kept item %zu is not item %zu", c->predicate,
                             xdev_dtype_name(c->dtype), k, i);
            k++;
        }
        ck_assert_msg((int64_t)k == num, "'%s' (%s, %zu items): kept %lld items, the model %zu",
                      c->predicate, xdev_dtype_name(c->dtype), n, (long long)num, k);
    }
    free(h);
    free(got);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(dnum));
    return go;
}

START_TEST(select_if_compare_forms) {
    static const size_t sizes[] = {0, 1, 37, 70003};
    for (size_t c = 0; c < sizeof k_si_cases / sizeof k_si_cases[0]; c++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            if (!si_check(__func__, &k_si_cases[c], sizes[s], c == 0 && s == 0)) return;
    XT_OK(xdev_elementwise_cache_clear());
}
END_TEST

/* On the CPU the comparisons need no host compiler (XDEV_CC pointing at
 * none): "in0 > 0.5f" runs, a predicate that must be compiled is refused as
 * before (one of this process, not in any cache). */
START_TEST(select_if_compare_without_compiler) {
    if (xt_type() != XDEV_DEVICE_CPU)
        XT_SKIP("needs the CPU backend (its compiler hidden through XDEV_CC)");
    const size_t n = 1000;
    float h[1000], got[1000];
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i / (float)n;
    float *din = dalloc(n * 4), *dout = dalloc(n * 4);
    int64_t *dnum = dalloc(8);
    upload(din, h, n * 4);
    const char *was = getenv("XDEV_CC");
    char *saved = was != NULL ? strdup(was) : NULL;
    ck_assert_int_eq(setenv("XDEV_CC", "/nonexistent/cc", 1), 0);
    XT_OK(xdev_elementwise_cache_clear());
    xdev_status_t st = xdev_prim_select_if(din, XDEV_DTYPE_F32, n, "in0 > 0.5f", dout, dnum, NULL);
    char why[512];
    snprintf(why, sizeof why, "%s", st != XDEV_SUCCESS ? xdev_last_error() : "");
    char pred[64];
    snprintf(pred, sizeof pred, "in0 * in0 > %ld", (long)getpid() + 1000000L);
    xdev_status_t compiled = xdev_prim_select_if(din, XDEV_DTYPE_F32, n, pred, dout, dnum, NULL);
    if (saved != NULL) {
        ck_assert_int_eq(setenv("XDEV_CC", saved, 1), 0);
        free(saved);
    } else {
        ck_assert_int_eq(unsetenv("XDEV_CC"), 0);
    }
    ck_assert_msg(st == XDEV_SUCCESS, "\"in0 > 0.5f\" without a compiler: %s", why);
    ck_assert_msg(compiled == XDEV_ERROR_NOT_SUPPORTED || compiled == XDEV_ERROR_COMPILE,
                  "'%s' without a compiler: status %d", pred, (int)compiled);
    int64_t num;
    download(&num, dnum, 8);
    ck_assert_int_eq(num, 499); /* 501/1000 .. 999/1000 */
    download(got, dout, (size_t)num * 4);
    for (int64_t k = 0; k < num; k++)
        ck_assert(got[k] == h[501 + k]);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(dnum));
}
END_TEST

/* unique and run-length encode of i32 runs (one run spans several of the
 * CPU's chunks) and of f32 with -0/+0 and NaNs. */
static void check_runs(const char *test, xdev_dtype_t t, const void *h, size_t n) {
    const size_t es = xdev_dtype_size(t);
    unsigned char *want = malloc(n * es + 1), *got = malloc(n * es + 1);
    int64_t *wlen = malloc(n * 8 + 8), *glen = malloc(n * 8 + 8);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double v = xt_load(t, h, i), p = i ? xt_load(t, h, i - 1) : 0;
        if (i == 0 || !(v == p)) {
            memcpy(want + k * es, (const unsigned char *)h + i * es, es);
            wlen[k++] = 1;
        } else {
            wlen[k - 1]++;
        }
    }
    void *din = dalloc(n * es), *dout = dalloc(n * es);
    int64_t *dlen = dalloc(n * 8), *dnum = dalloc(8);
    upload(din, h, n * es);
    for (int rle = 0; rle < 2; rle++) {
        XT_OK(xdev_memset_async(dnum, 0x77, 8, NULL));
        xdev_status_t st = rle ? xdev_prim_run_length_encode(din, t, n, dout, dlen, dnum, NULL)
                               : xdev_prim_unique(din, t, n, dout, dnum, NULL);
        if (!have(test, st)) break;
        int64_t num;
        download(&num, dnum, 8);
        ck_assert_msg(num == (int64_t)k, "%s %s of %zu items: %lld runs, want %zu",
                      rle ? "rle" : "unique", xdev_dtype_name(t), n, (long long)num, k);
        download(got, dout, k * es);
        ck_assert_msg(memcmp(got, want, k * es) == 0, "%s %s of %zu items: the runs' items differ",
                      rle ? "rle" : "unique", xdev_dtype_name(t), n);
        if (rle) {
            download(glen, dlen, k * 8);
            for (size_t r = 0; r < k; r++)
                ck_assert_msg(glen[r] == wlen[r], "rle %s: run %zu of length %lld, want %lld",
                              xdev_dtype_name(t), r, (long long)glen[r], (long long)wlen[r]);
        }
    }
    free(want);
    free(got);
    free(wlen);
    free(glen);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(dlen));
    XT_OK(xdev_free(dnum));
}

START_TEST(unique_and_rle_results) {
    for (size_t si = 0; si < NSIZES; si++) {
        const size_t n = k_sizes[si] ? k_sizes[si] : 1;
        int32_t *h = malloc(n * 4);
        int32_t v = -5;
        for (size_t i = 0; i < n; i++) {
            if (rnd() % 7 == 0) v += 1 + (int32_t)(rnd() % 3);
            h[i] = v;
        }
        if (n > 150000)
            for (size_t i = 10000; i < 150000; i++) /* one run across chunks */
                h[i] = h[10000];
        check_runs(__func__, XDEV_DTYPE_I32, h, n);
        free(h);
    }
    const float f[] = {-1.0f, -0.0f, 0.0f, -0.0f, NAN, NAN, 2.0f, 2.0f, INFINITY, INFINITY, NAN};
    check_runs(__func__, XDEV_DTYPE_F32, f, sizeof f / sizeof f[0]);
    /* count 0: no runs, num written */
    int64_t *dnum = dalloc(8), num = -1;
    int32_t *d = dalloc(4), *d2 = dalloc(4);
    XT_OK(xdev_memset_async(dnum, 0x77, 8, NULL));
    if (have(__func__, xdev_prim_unique(d, XDEV_DTYPE_I32, 0, d2, dnum, NULL))) {
        download(&num, dnum, 8);
        ck_assert_msg(num == 0, "unique of 0 items wrote %lld", (long long)num);
    }
    XT_OK(xdev_free(dnum));
    XT_OK(xdev_free(d));
    XT_OK(xdev_free(d2));
}
END_TEST

/* A histogram and a compaction captured in a graph, replayed on new data. */
START_TEST(capture_and_replay) {
    const size_t n = 100000;
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    int32_t *h = malloc(n * 4), *got = malloc(n * 4);
    uint8_t *fl = malloc(n);
    int32_t *din = dalloc(n * 4), *dout = dalloc(n * 4), *dout2 = dalloc(n * 4);
    uint8_t *dfl = dalloc(n);
    int64_t *dnum = dalloc(8), *dc = dalloc(10 * 8), *dnum2 = dalloc(8);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    xdev_status_t st = xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL);
    if (st == XDEV_ERROR_NOT_SUPPORTED) { /* skipped; the buffers are freed below */
        xt_skip(__func__, "no capture on %s: %s", xt_type_name(), xdev_last_error());
    } else {
        XT_OK(st);
        st = xdev_prim_select_flagged(din, 4, dfl, n, dout, dnum, s);
        if (st == XDEV_SUCCESS)
            st = xdev_prim_histogram_even(din, XDEV_DTYPE_I32, n, 10, 0, 1000, dc, s);
        if (st == XDEV_SUCCESS) /* select_compare where the backend has it */
            st = xdev_prim_select_if(din, XDEV_DTYPE_I32, n, "in0 >= 500", dout2, dnum2, s);
        xdev_status_t end = xdev_graph_capture_end(g);
        if (have(__func__, st)) {
            XT_OK(end);
            for (int rep = 0; rep < 3; rep++) {
                int64_t k = 0, wc[10] = {0}, gc[10], num, num2;
                for (size_t i = 0; i < n; i++) {
                    h[i] = (int32_t)(rnd() % 1000);
                    fl[i] = (uint8_t)(rnd() % (size_t)(rep + 2) == 0);
                    k += fl[i];
                    wc[h[i] / 100]++;
                }
                upload(din, h, n * 4);
                upload(dfl, fl, n);
                XT_OK(xdev_graph_replay(g, s));
                XT_OK(xdev_stream_synchronize(s));
                XT_OK(xdev_memcpy(&num, dnum, 8));
                XT_OK(xdev_memcpy(gc, dc, sizeof gc));
                ck_assert_msg(num == k, "replay %d: %lld kept, want %lld", rep, (long long)num,
                              (long long)k);
                for (int b = 0; b < 10; b++)
                    ck_assert_msg(gc[b] == wc[b], "replay %d: bin %d %lld, want %lld", rep, b,
                                  (long long)gc[b], (long long)wc[b]);
                XT_OK(xdev_memcpy(got, dout, (size_t)k * 4));
                for (size_t i = 0, j = 0; i < n; i++)
                    if (fl[i] && got[j++] != h[i])
                        ck_abort_msg("replay %d: kept item %zu differs", rep, j - 1);
                XT_OK(xdev_memcpy(&num2, dnum2, 8));
                ck_assert_msg(num2 == wc[5] + wc[6] + wc[7] + wc[8] + wc[9],
                              "replay %d: select_if kept %lld", rep, (long long)num2);
                XT_OK(xdev_memcpy(got, dout2, (size_t)num2 * 4));
                for (size_t i = 0, j = 0; i < n; i++)
                    if (h[i] >= 500 && got[j++] != h[i])
                        ck_abort_msg("replay %d: select_if's item %zu differs", rep, j - 1);
            }
        }
    }
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    free(h);
    free(got);
    free(fl);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(dfl));
    XT_OK(xdev_free(dnum));
    XT_OK(xdev_free(dc));
    XT_OK(xdev_free(dout2));
    XT_OK(xdev_free(dnum2));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("prim_select");
    TCase *tc = tcase_create("prim_select");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, segmented_reduce_results);
    tcase_add_test(tc, segmented_sum_deterministic);
    tcase_add_test(tc, histogram_results);
    tcase_add_test(tc, select_flagged_results);
    tcase_add_test(tc, select_if_results);
    tcase_add_test(tc, select_if_compare_forms);
    tcase_add_test(tc, select_if_compare_without_compiler);
    tcase_add_test(tc, unique_and_rle_results);
    tcase_add_test(tc, capture_and_replay);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "prim_select", argc, argv);
}
