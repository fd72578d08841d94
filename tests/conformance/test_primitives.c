/* SPDX-License-Identifier: Apache-2.0 */
/* test_primitives.c - the parallel primitives (xdev/primitives.h) on the
 * backend under test against a host reference: reduce (sum, prod, min, max,
 * argmin, argmax) and scan (inclusive, exclusive; sum, min, max) over every
 * dtype they take and sizes 0, 1, 2^k +- 1, odd, up to 2^20 (2^17 under the
 * sanitizers; XT_PRIM_MAX_LOG2 asks for more); NaN, +-inf and +-0 in the
 * extrema; in-place scans; bad input with nothing written; capture and
 * replay; and deterministic sums, compared bit for bit with this file's own
 * model of the order xdev/primitives.h defines (the CPU always follows it,
 * a GPU in deterministic mode: the same model checks both, so passing on
 * each means the same bits on each). Conformance: XDEV_BACKEND=<backend>;
 * the entries prims.threads<k> run it with XDEV_CPU_THREADS=k. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/support/half.h"
#include "prim_test.h"

#define CH XDEV_PRIM_CHUNK
#define NDT 6
static const xdev_dtype_t k_dtypes[NDT] = {XDEV_DTYPE_F32,  XDEV_DTYPE_F64, XDEV_DTYPE_F16,
                                           XDEV_DTYPE_BF16, XDEV_DTYPE_I32, XDEV_DTYPE_I64};

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_set_deterministic(false));
}

/* The backend has the primitives, or the test is skipped after checking
 * that the refusal names the backend and the primitive. */
static bool have_prims(const char *test) {
    void *out = dalloc(8);
    xdev_status_t st = xdev_prim_reduce(NULL, XDEV_DTYPE_F32, 0, XDEV_PRIM_SUM, out, NULL);
    XT_OK(xdev_free(out));
    return pt_have(test, st, "primitive reduce", "has no prim table");
}
#define NEED_PRIMS()                                                                               \
    do {                                                                                           \
        if (!have_prims(__func__)) return;                                                         \
    } while (0)

/* ------------------------------------------------------------ host model */

/* Element i as the accumulation type (f32 for f16/bf16/f32). */
static double ld(xdev_dtype_t t, const void *h, size_t i) {
    return xt_load(t, h, i);
}
static bool is_float(xdev_dtype_t t) {
    return t != XDEV_DTYPE_I32 && t != XDEV_DTYPE_I64;
}
static bool acc32(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F32 || t == XDEV_DTYPE_F16 || t == XDEV_DTYPE_BF16;
}

/* The reduce order of xdev/primitives.h for floats, in the accumulation
 * type: lanes, shuffle tree, rounds of pairs. */
static double model_sum(xdev_dtype_t t, const void *h, size_t n, bool prod) {
    if (n == 0) return prod ? 1.0 : 0.0;
    size_t m = (n + CH - 1) / CH;
    double *p = malloc(m * sizeof *p);
    for (size_t c = 0; c < m; c++) {
        float lf[32];
        double ldb[32];
        for (int l = 0; l < 32; l++)
            lf[l] = prod ? 1.0f : -0.0f, ldb[l] = prod ? 1.0 : -0.0;
        for (size_t i = c * CH; i < n && i < (c + 1) * CH; i++) {
            int l = (int)((i - c * CH) % 32);
            if (acc32(t))
                lf[l] = prod ? lf[l] * (float)ld(t, h, i) : lf[l] + (float)ld(t, h, i);
            else
                ldb[l] = prod ? ldb[l] * ld(t, h, i) : ldb[l] + ld(t, h, i);
        }
        for (int w = 16; w > 0; w /= 2)
            for (int l = 0; l < w; l++) {
                if (acc32(t))
                    lf[l] = prod ? lf[l] * lf[l + w] : lf[l] + lf[l + w];
                else
                    ldb[l] = prod ? ldb[l] * ldb[l + w] : ldb[l] + ldb[l + w];
            }
        p[c] = acc32(t) ? (double)lf[0] : ldb[0];
    }
    for (; m > 1; m = (m + 1) / 2) {
        for (size_t i = 0; i < m / 2; i++) {
            if (acc32(t))
                p[i] = prod ? (double)((float)p[2 * i] * (float)p[2 * i + 1])
                            : (double)((float)p[2 * i] + (float)p[2 * i + 1]);
            else
                p[i] = prod ? p[2 * i] * p[2 * i + 1] : p[2 * i] + p[2 * i + 1];
        }
        if (m % 2) p[m / 2] = p[m - 1];
    }
    double r = p[0];
    free(p);
    return r;
}

/* Integer sums and products wrap: exact in any order. */
static int64_t model_int(xdev_dtype_t t, const void *h, size_t n, bool prod) {
    uint64_t r = prod ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = (uint64_t)(int64_t)ld(t, h, i);
        r = prod ? r * v : r + v;
    }
    return t == XDEV_DTYPE_I32 ? (int64_t)(int32_t)(uint32_t)r : (int64_t)r;
}

/* The first index of the extremum, NaN first. */
static size_t model_arg(xdev_dtype_t t, const void *h, size_t n, bool max) {
    size_t at = 0;
    for (size_t i = 1; i < n && !isnan(ld(t, h, at)); i++) {
        double v = ld(t, h, i), b = ld(t, h, at);
        if (isnan(v) || (max ? v > b : v < b)) at = i;
    }
    return at;
}

/* The scan order of xdev/primitives.h (op 0 sum, 2 min, 3 max) into out
 * (doubles holding accumulation-type values). */
static double scan_op(xdev_dtype_t t, int op, double a, double b) {
    if (op == XDEV_PRIM_SUM) {
        if (t == XDEV_DTYPE_I32) return (double)(int32_t)(uint32_t)((int64_t)a + (int64_t)b);
        if (t == XDEV_DTYPE_I64) return (double)((int64_t)a + (int64_t)b); /* small values */
        return acc32(t) ? (double)((float)a + (float)b) : a + b;
    }
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return op == XDEV_PRIM_MIN ? (b < a ? b : a) : (a < b ? b : a);
}
static double scan_id(xdev_dtype_t t, int op) {
    if (op == XDEV_PRIM_SUM) return is_float(t) ? -0.0 : 0.0;
    if (t == XDEV_DTYPE_I32) return op == XDEV_PRIM_MIN ? INT32_MAX : INT32_MIN;
    if (t == XDEV_DTYPE_I64) return op == XDEV_PRIM_MIN ? (double)INT64_MAX : (double)INT64_MIN;
    return op == XDEV_PRIM_MIN ? INFINITY : -INFINITY;
}
static void model_scan(xdev_dtype_t t, const void *h, size_t n, int op, bool excl, double *out) {
    size_t m = (n + CH - 1) / CH;
    double o = scan_id(t, op);
    for (size_t c = 0; c < m; c++) {
        double tot = scan_id(t, op), r = o;
        for (size_t i = c * CH; i < n && i < (c + 1) * CH; i++)
            tot = scan_op(t, op, tot, ld(t, h, i));
        for (size_t i = c * CH; i < n && i < (c + 1) * CH; i++) {
            if (excl) out[i] = i == 0 && op == XDEV_PRIM_SUM ? 0.0 : r;
            r = scan_op(t, op, r, ld(t, h, i));
            if (!excl) out[i] = r;
        }
        o = scan_op(t, op, o, tot);
    }
}

/* ------------------------------------------------------------ data */

/* Random values that keep sums and products finite in every dtype: floats
 * in [-1, 1) (products of 1 +- 2^-8), integers in [-1000, 1000). */
static void fill_random(xdev_dtype_t t, void *h, size_t n, bool for_prod) {
    for (size_t i = 0; i < n; i++) {
        double v;
        if (is_float(t))
            v = for_prod ? 1.0 + ((double)(rnd() % 512) - 256.0) / 65536.0
                         : (double)(rnd() % 2000001) / 1e6 - 1.0;
        else
            v = (double)(int64_t)(rnd() % 2000) - 1000.0;
        xt_store(t, h, i, v);
    }
}

/* 0, 1, 2, odd sizes, 2^k - 1, 2^k, 2^k + 1 and chunk edges, up to 2^16, or
 * (big) 2^max: the deterministic runs take the big sizes, the others (the
 * same code on the CPU; a vendor library's on a GPU) stop at 2^16 to keep
 * the suite's time small. */
static size_t sizes(size_t *out, bool big) {
    size_t n = 0, top = big ? max_log2() : 16;
    const size_t fixed[] = {0, 1, 2, 3, 31, 33, 1001, CH - 1, CH, CH + 1, 3 * CH + 7};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        out[n++] = fixed[i];
    for (size_t k = 13; k < top; k += 3) {
        out[n++] = ((size_t)1 << k) - 1;
        out[n++] = ((size_t)1 << k) + 1;
    }
    out[n++] = (size_t)1 << top;
    out[n++] = ((size_t)1 << top) + 1; /* the largest last: callers size buffers by it */
    return n;
}

/* A float result against the model: bit for bit when `exact`, else within
 * a tolerance for the reordered sums of a vendor library. */
static void check_float(xdev_dtype_t t, double got, double want, size_t n, bool exact,
                        const char *what) {
    /* (Check's assertions cost a write each: assert only what fails.) */
    if (isnan(want)) {
        if (!isnan(got))
            ck_abort_msg("%s %s n=%zu: %g, expected NaN", what, xdev_dtype_name(t), n, got);
        return;
    }
    if (exact) {
        if (memcmp(&got, &want, sizeof got) != 0)
            ck_abort_msg("%s %s n=%zu: %.17g, expected the bits of %.17g", what, xdev_dtype_name(t),
                         n, got, want);
        return;
    }
    double eps = t == XDEV_DTYPE_F64 ? 1e-12 : t == XDEV_DTYPE_F32 ? 1e-5 : 2e-2;
    if (!(fabs(got - want) <= eps * (1.0 + sqrt((double)n)) * (1.0 + fabs(want))))
        ck_abort_msg("%s %s n=%zu: %.17g, expected %.17g", what, xdev_dtype_name(t), n, got, want);
}

/* ------------------------------------------------------------ reduce */

/* Every dtype, op and size against the model. Deterministic mode (or the
 * CPU, which always follows the order) compares float sums bit for bit. */
static void reduce_all(bool deterministic) {
    XT_OK(xdev_set_deterministic(deterministic));
    const bool exact = deterministic || xt_type() == XDEV_DEVICE_CPU;
    size_t sz[64], ns = sizes(sz, deterministic), top = sz[ns - 1];
    void *h = malloc(top * 8 + 8);
    void *din = dalloc(top * 8), *dout = dalloc(8);
    for (int di = 0; di < NDT; di++) {
        xdev_dtype_t t = k_dtypes[di];
        size_t es = xdev_dtype_size(t);
        for (int op = XDEV_PRIM_SUM; op <= XDEV_PRIM_ARGMAX; op++) {
            for (size_t k = 0; k < ns; k++) {
                size_t n = sz[k];
                if (n == 0 && op > XDEV_PRIM_PROD) continue;
                fill_random(t, h, n, op == XDEV_PRIM_PROD);
                upload(din, h, n * es);
                XT_OK(xdev_prim_reduce(din, t, n, (xdev_prim_op_t)op, dout, NULL));
                unsigned char res[8];
                download(res, dout, 8);
                const char *name = xt_fmt("reduce %d", op);
                if (op == XDEV_PRIM_ARGMIN || op == XDEV_PRIM_ARGMAX) {
                    int64_t got;
                    memcpy(&got, res, 8);
                    size_t want = model_arg(t, h, n, op == XDEV_PRIM_ARGMAX);
                    ck_assert_msg(got == (int64_t)want, "%s %s n=%zu: index %lld, expected %zu",
                                  name, xdev_dtype_name(t), n, (long long)got, want);
                } else if (op == XDEV_PRIM_MIN || op == XDEV_PRIM_MAX) {
                    size_t at = model_arg(t, h, n, op == XDEV_PRIM_MAX);
                    ck_assert_msg(memcmp(res, (unsigned char *)h + at * es, es) == 0,
                                  "%s %s n=%zu: not the element at %zu", name, xdev_dtype_name(t),
                                  n, at);
                } else if (!is_float(t)) {
                    int64_t want = model_int(t, h, n, op == XDEV_PRIM_PROD);
                    int64_t got = (int64_t)ld(t, res, 0);
                    ck_assert_msg(got == want, "%s %s n=%zu: %lld, expected %lld", name,
                                  xdev_dtype_name(t), n, (long long)got, (long long)want);
                } else {
                    unsigned char w[8];
                    xt_store(t, w, 0, model_sum(t, h, n, op == XDEV_PRIM_PROD));
                    check_float(t, ld(t, res, 0), ld(t, w, 0), n, exact, name);
                }
            }
        }
    }
    free(h);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
}

START_TEST(reduce_every_dtype_and_size) {
    NEED_PRIMS();
    reduce_all(false);
}
END_TEST

START_TEST(reduce_deterministic_bits) {
    NEED_PRIMS();
    reduce_all(true);
}
END_TEST

/* NaN, +-inf and +-0: min/max propagate NaN, arg* give the first index. */
START_TEST(reduce_nan_inf_zero) {
    NEED_PRIMS();
    const size_t n = 3 * CH + 5;
    const xdev_dtype_t fl[4] = {XDEV_DTYPE_F32, XDEV_DTYPE_F64, XDEV_DTYPE_F16, XDEV_DTYPE_BF16};
    void *h = malloc(n * 8);
    void *din = dalloc(n * 8), *dout = dalloc(8);
    for (int di = 0; di < 4; di++) {
        xdev_dtype_t t = fl[di];
        size_t es = xdev_dtype_size(t);
        struct {
            size_t at[3];
            double v[3];
            int op;
            double want_v;
            int64_t want_i;
        } cases[] = {
            {{7, 9000, 0}, {NAN, NAN, 0}, XDEV_PRIM_MAX, NAN, 0},
            {{7, 9000, 0}, {NAN, NAN, 0}, XDEV_PRIM_ARGMAX, 0, 7},
            {{9000, 7, 0}, {NAN, -INFINITY, 0}, XDEV_PRIM_ARGMIN, 0, 9000},
            {{100, 5000, 0}, {INFINITY, INFINITY, 0}, XDEV_PRIM_ARGMAX, 0, 100},
            {{100, 5000, 0}, {-INFINITY, -INFINITY, 0}, XDEV_PRIM_MIN, -INFINITY, 0},
            {{4100, 12, 0}, {-5.0, -5.0, 0}, XDEV_PRIM_ARGMIN, 0, 12},
        };
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            for (size_t i = 0; i < n; i++)
                xt_store(t, h, i, 0.5 + (double)(i % 7) / 16.0);
            for (int k = 0; k < 2; k++)
                xt_store(t, h, cases[c].at[k], cases[c].v[k]);
            upload(din, h, n * es);
            XT_OK(xdev_prim_reduce(din, t, n, (xdev_prim_op_t)cases[c].op, dout, NULL));
            unsigned char res[8];
            download(res, dout, 8);
            if (cases[c].op >= XDEV_PRIM_ARGMIN) {
                int64_t got;
                memcpy(&got, res, 8);
                ck_assert_msg(got == cases[c].want_i, "%s case %zu: index %lld, expected %lld",
                              xdev_dtype_name(t), c, (long long)got, (long long)cases[c].want_i);
            } else {
                double got = ld(t, res, 0);
                ck_assert_msg(isnan(cases[c].want_v) ? isnan(got) : got == cases[c].want_v,
                              "%s case %zu: %g, expected %g", xdev_dtype_name(t), c, got,
                              cases[c].want_v);
            }
        }
        /* -0 then +0: both are the minimum; the first index wins */
        for (size_t i = 0; i < n; i++)
            xt_store(t, h, i, 1.0);
        xt_store(t, h, 4097, -0.0);
        xt_store(t, h, 4098, 0.0);
        xt_store(t, h, 3, 0.0);
        upload(din, h, n * es);
        XT_OK(xdev_prim_reduce(din, t, n, XDEV_PRIM_ARGMIN, dout, NULL));
        int64_t idx;
        download(&idx, dout, 8);
        ck_assert_int_eq(idx, 3);
        XT_OK(xdev_prim_reduce(din, t, n, XDEV_PRIM_MIN, dout, NULL));
        unsigned char res[8];
        download(res, dout, 8);
        ck_assert_msg(ld(t, res, 0) == 0.0 && !signbit(ld(t, res, 0)), "%s: min is not +0 (first)",
                      xdev_dtype_name(t));
    }
    free(h);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
}
END_TEST

/* ------------------------------------------------------------ scan */

static void scan_all(bool deterministic, bool in_place) {
    XT_OK(xdev_set_deterministic(deterministic));
    const bool exact = deterministic || xt_type() == XDEV_DEVICE_CPU;
    size_t sz[64], ns = sizes(sz, deterministic && !in_place), top = sz[ns - 1];
    void *h = malloc(top * 8 + 8), *got = malloc(top * 8 + 8);
    double *want = malloc((top + 1) * sizeof *want);
    void *din = dalloc(top * 8), *dout = in_place ? din : dalloc(top * 8);
    const int ops[3] = {XDEV_PRIM_SUM, XDEV_PRIM_MIN, XDEV_PRIM_MAX};
    for (int di = 0; di < NDT; di++) {
        xdev_dtype_t t = k_dtypes[di];
        size_t es = xdev_dtype_size(t);
        for (int oi = 0; oi < 3; oi++) {
            for (int excl = 0; excl < 2; excl++) {
                for (size_t k = 0; k < ns; k += in_place ? 3 : 1) {
                    size_t n = sz[k];
                    fill_random(t, h, n, false);
                    if (n > 10 && oi > 0 && is_float(t)) xt_store(t, h, n / 2, NAN);
                    upload(din, h, n * es);
                    XT_OK(xdev_prim_scan(din, t, n, (xdev_prim_op_t)ops[oi],
                                         excl ? XDEV_PRIM_EXCLUSIVE : 0, dout, NULL));
                    download(got, dout, n * es);
                    model_scan(t, h, n, ops[oi], excl, want);
                    for (size_t i = 0; i < n; i++) {
                        unsigned char w[8];
                        if (is_float(t)) xt_store(t, w, 0, want[i]); /* rounded to the dtype */
                        double g = ld(t, got, i), wv = is_float(t) ? ld(t, w, 0) : want[i];
                        if (is_float(t)) {
                            bool ex = exact || ops[oi] != XDEV_PRIM_SUM;
                            if (memcmp(&g, &wv, sizeof g) != 0)
                                check_float(t, g, wv, i + 1, ex,
                                            xt_fmt("scan op %d excl %d [%zu]", ops[oi], excl, i));
                        } else {
                            const char *what = "scan";
                            if (g != wv)
                                ck_abort_msg("%s op %d excl %d %s n=%zu [%zu]: %g, expected %g",
                                             what, ops[oi], excl, xdev_dtype_name(t), n, i, g, wv);
                        }
                    }
                }
            }
        }
    }
    free(h);
    free(got);
    free(want);
    XT_OK(xdev_free(din));
    if (!in_place) XT_OK(xdev_free(dout));
}

START_TEST(scan_every_dtype_and_size) {
    NEED_PRIMS();
    scan_all(false, false);
}
END_TEST

START_TEST(scan_deterministic_bits) {
    NEED_PRIMS();
    scan_all(true, false);
}
END_TEST

START_TEST(scan_in_place) {
    NEED_PRIMS();
    scan_all(true, true);
}
END_TEST

/* ------------------------------------------------------------ bad input */

/* Each refusal names its problem, and nothing is written. */
START_TEST(bad_input) {
    NEED_PRIMS();
    const size_t n = 1000;
    float *din = dalloc(n * 4), *dout = dalloc(n * 4);
    XT_OK(xdev_memset_async(dout, 0x5a, n * 4, NULL));
    XT_OK(xdev_memset_async(din, 0, n * 4, NULL));
    /* counts past the buffers */
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, XDEV_DTYPE_F32, n + 1, XDEV_PRIM_SUM, dout, NULL), "'in'",
           "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, XDEV_DTYPE_F32, n, XDEV_PRIM_ARGMAX, dout + n - 1, NULL), "'out'",
           "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_scan(din, XDEV_DTYPE_F32, n, XDEV_PRIM_SUM, 0, dout + 1, NULL), "'out'",
           "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_scan(din + 1, XDEV_DTYPE_F32, n, XDEV_PRIM_SUM, 0, dout, NULL), "'in'",
           "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, XDEV_DTYPE_F32, SIZE_MAX / 2, XDEV_PRIM_SUM, dout, NULL),
           "overflow");
    /* dtypes and ops */
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED,
           xdev_prim_reduce(din, XDEV_DTYPE_U8, 4, XDEV_PRIM_SUM, dout, NULL), "u8");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED,
           xdev_prim_scan(din, XDEV_DTYPE_C64, 4, XDEV_PRIM_SUM, 0, dout, NULL), "c64");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, (xdev_dtype_t)99, 4, XDEV_PRIM_SUM, dout, NULL), "99");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, XDEV_DTYPE_F32, 4, (xdev_prim_op_t)6, dout, NULL), "op 6");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_scan(din, XDEV_DTYPE_F32, 4, XDEV_PRIM_PROD, 0, dout, NULL), "prod");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_scan(din, XDEV_DTYPE_F32, 4, XDEV_PRIM_SUM, 6u, dout, NULL), "flags");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, XDEV_DTYPE_F32, 0, XDEV_PRIM_MIN, dout, NULL), "empty");
    /* pointers: NULL, misaligned, overlapping, host memory */
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(NULL, XDEV_DTYPE_F32, 4, XDEV_PRIM_SUM, dout, NULL), "'in'", "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, XDEV_DTYPE_F32, 4, XDEV_PRIM_SUM, NULL, NULL), "'out'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce((char *)din + 2, XDEV_DTYPE_F32, 4, XDEV_PRIM_SUM, dout, NULL),
           "aligned");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(din, XDEV_DTYPE_F32, 8, XDEV_PRIM_SUM, din + 3, NULL), "overlap");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_scan(din, XDEV_DTYPE_F32, 8, XDEV_PRIM_SUM, 0, din + 1, NULL), "overlap",
           "in place");
    float host[4] = {0};
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_prim_reduce(host, XDEV_DTYPE_F32, 4, XDEV_PRIM_SUM, dout, NULL), "'in'",
           "xdev_malloc");
    /* a destroyed stream */
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_destroy(s));
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_HANDLE) | XT_BIT(XDEV_ERROR_INVALID_VALUE),
               xdev_prim_reduce(din, XDEV_DTYPE_F32, 4, XDEV_PRIM_SUM, dout, s), "stream");
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_HANDLE) | XT_BIT(XDEV_ERROR_INVALID_VALUE),
               xdev_prim_scan(din, XDEV_DTYPE_F32, 4, XDEV_PRIM_SUM, 0, dout, s), "stream");
    /* nothing was written */
    unsigned char *back = malloc(n * 4);
    download(back, dout, n * 4);
    for (size_t i = 0; i < n * 4; i++)
        if (back[i] != 0x5a) ck_abort_msg("byte %zu of out was written by a refused call", i);
    free(back);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
}
END_TEST

/* XDEV_DETERMINISTIC is read at the first use; the setter overrides it. */
START_TEST(deterministic_switch) {
    bool on = true;
    XT_OK(xdev_set_deterministic(false));
    XT_OK(xdev_get_deterministic(&on));
    ck_assert(!on);
    XT_OK(xdev_set_deterministic(true));
    XT_OK(xdev_get_deterministic(&on));
    ck_assert(on);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_deterministic(NULL), "out");
    XT_OK(xdev_set_deterministic(false));
}
END_TEST

/* ------------------------------------------------------------ graphs */

/* A reduce and a scan captured once, replayed over new input: the
 * temporaries come from the graph's pool and stay valid for every replay. */
START_TEST(capture_and_replay) {
    NEED_PRIMS();
    const size_t n = 3 * CH + 11;
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    int32_t *h = malloc(n * 4), *got = malloc(n * 4);
    int32_t *din = dalloc(n * 4), *dscan = dalloc(n * 4);
    int64_t *dsum = dalloc(8);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    xdev_status_t st = xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        XT_SKIP("no capture on %s: %s", xt_type_name(), xdev_last_error());
    } else {
        XT_OK(st);
        XT_OK(xdev_prim_reduce(din, XDEV_DTYPE_I32, n, XDEV_PRIM_ARGMAX, dsum, s));
        XT_OK(xdev_prim_scan(din, XDEV_DTYPE_I32, n, XDEV_PRIM_SUM, XDEV_PRIM_EXCLUSIVE, dscan, s));
        XT_OK(xdev_graph_capture_end(g));
        for (int rep = 0; rep < 3; rep++) {
            for (size_t i = 0; i < n; i++)
                h[i] = (int32_t)(rnd() % 1000);
            h[(size_t)rep * 5000 + 17] = 5000 + rep;
            XT_OK(xdev_memcpy(din, h, n * 4));
            XT_OK(xdev_graph_replay(g, s));
            XT_OK(xdev_stream_synchronize(s));
            int64_t idx;
            XT_OK(xdev_memcpy(&idx, dsum, 8));
            XT_OK(xdev_memcpy(got, dscan, n * 4));
            ck_assert_int_eq(idx, rep * 5000 + 17);
            int32_t acc = 0;
            for (size_t i = 0; i < n; i++) {
                if (got[i] != acc)
                    ck_abort_msg("replay %d: scan[%zu] = %d, expected %d", rep, i, got[i], acc);
                acc += h[i];
            }
        }
    }
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    free(h);
    free(got);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dscan));
    XT_OK(xdev_free(dsum));
}
END_TEST

/* Deterministic sums of 32-bit types long enough (outputs of 8 MiB and
 * more) that the CPU stores them past the cache, inclusive and exclusive,
 * in place too, a partial tile at the end: bit for bit the model (the
 * cpu/prims sizes stop at 4 MiB of f32). */
START_TEST(scan_streamed) {
    NEED_PRIMS();
    XT_OK(xdev_set_deterministic(true));
    const size_t n = ((size_t)1 << 21) + 3 * CH + 5;
    const xdev_dtype_t ts[2] = {XDEV_DTYPE_F32, XDEV_DTYPE_I32};
    unsigned char *h = malloc(n * 4), *got = malloc(n * 4);
    double *want = malloc(n * sizeof *want);
    void *din = dalloc(n * 4), *dout = dalloc(n * 4);
    for (int ti = 0; ti < 2; ti++)
        for (int excl = 0; excl < 2; excl++)
            for (int in_place = 0; in_place < 2; in_place++) {
                xdev_dtype_t t = ts[ti];
                void *o = in_place ? din : dout;
                fill_random(t, h, n, false);
                upload(din, h, n * 4);
                XT_OK(xdev_prim_scan(din, t, n, XDEV_PRIM_SUM, excl ? XDEV_PRIM_EXCLUSIVE : 0, o,
                                     NULL));
                download(got, o, n * 4);
                model_scan(t, h, n, XDEV_PRIM_SUM, excl, want);
                for (size_t i = 0; i < n; i++) {
                    unsigned char w[8];
                    xt_store(t, w, 0, want[i]);
                    if (memcmp(got + i * 4, w, 4) != 0)
                        ck_abort_msg("%s excl %d in place %d [%zu]: %g, the model gives %g",
                                     xdev_dtype_name(t), excl, in_place, i, ld(t, got, i), want[i]);
                }
            }
    free(h);
    free(got);
    free(want);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
}
END_TEST

/* ------------------------------------------------------------ threads */

/* A large f32 sum and scan (so the pool splits them) in deterministic mode:
 * bit for bit the model. The prims.threads<k> entries run this with
 * XDEV_CPU_THREADS = 1, 2, 4: the same model, hence the same bits. */
START_TEST(deterministic_across_threads) {
    NEED_PRIMS();
    XT_OK(xdev_set_deterministic(true));
    const size_t n = (1u << 18) + 123;
    float *h = malloc(n * 4), *got = malloc(n * 4);
    double *want = malloc(n * sizeof *want);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((double)(rnd() % 2000001) / 1e3 - 1000.0);
    float *din = dalloc(n * 4), *dout = dalloc(n * 4);
    upload(din, h, n * 4);
    XT_OK(xdev_prim_reduce(din, XDEV_DTYPE_F32, n, XDEV_PRIM_SUM, dout, NULL));
    float sum;
    download(&sum, dout, 4);
    float wsum = (float)model_sum(XDEV_DTYPE_F32, h, n, false);
    ck_assert_msg(memcmp(&sum, &wsum, 4) == 0, "sum %.9g, the model gives %.9g", sum, wsum);
    XT_OK(xdev_prim_scan(din, XDEV_DTYPE_F32, n, XDEV_PRIM_SUM, 0, dout, NULL));
    download(got, dout, n * 4);
    model_scan(XDEV_DTYPE_F32, h, n, XDEV_PRIM_SUM, false, want);
    for (size_t i = 0; i < n; i++) {
        float w = (float)want[i];
        if (memcmp(&got[i], &w, 4) != 0)
            ck_abort_msg("scan[%zu] %.9g, the model gives %.9g", i, got[i], w);
    }
    free(h);
    free(got);
    free(want);
    XT_OK(xdev_free(din));
    XT_OK(xdev_free(dout));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("prims");
    TCase *tc = tcase_create("prims");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, reduce_every_dtype_and_size);
    tcase_add_test(tc, reduce_deterministic_bits);
    tcase_add_test(tc, reduce_nan_inf_zero);
    tcase_add_test(tc, scan_every_dtype_and_size);
    tcase_add_test(tc, scan_deterministic_bits);
    tcase_add_test(tc, scan_in_place);
    tcase_add_test(tc, scan_streamed);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, deterministic_switch);
    tcase_add_test(tc, capture_and_replay);
    suite_add_tcase(s, tc);
    tc = tcase_create("threads");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, deterministic_across_threads);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "prims", argc, argv);
}
