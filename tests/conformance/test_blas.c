/* SPDX-License-Identifier: Apache-2.0 */
/* test_blas.c - GEMM (every dtype, transposes, leading dimensions, batches),
 * level-1 routines, the TF32 flag and bad input, against a double-precision
 * reference computed here.
 *
 * Written against the default device type, so every backend runs the same
 * checks (a dtype a backend does not support is skipped with its reason,
 * after checking that the call reports XDEV_ERROR_NOT_SUPPORTED).
 * Suites: blas      (XDEV_CPU_DEVICES=2: cross-device cases need 2 devices)
 *         tf32_off  (XDEV_ALLOW_TF32=0)
 *         tf32_bad  (XDEV_ALLOW_TF32=maybe) */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/backend.h"
#include "xt.h"

static void setup(void) {
    xt_reset_state();
    /* Strict f32 tolerances: no TF32 (the flag's own test turns it on). */
    XT_OK(xdev_blas_set_allow_tf32(false));
}

static void *dalloc(int device, size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(device), &p, bytes));
    return p;
}

/* ------------------------------------------------------------- values */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) { /* uniform in [-1, 1), multiples of 2^-12 */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)((int64_t)(g_rng >> 52) - 2048) / 2048.0;
}

/* Independent 16-bit encoders (frexp + nearbyint, round half to even). */
static uint16_t enc_f16(double v) {
    if (isnan(v)) return 0x7e00;
    uint16_t s = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a >= 65520.0) return s | 0x7c00;
    if (a < ldexp(1.0, -14)) return s | (uint16_t)nearbyint(a * ldexp(1.0, 24));
    int e;
    double m = nearbyint(frexp(a, &e) * 2048.0);
    if (m == 2048.0) m = 1024.0, e++;
    if (e + 14 >= 31) return s | 0x7c00;
    return s | (uint16_t)((e + 14) << 10) | (uint16_t)(m - 1024.0);
}
static double dec_f16(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}
static uint16_t enc_bf16(double v) { /* normal range only (test inputs) */
    if (isnan(v)) return 0x7fc0;
    if (v == 0.0) return signbit(v) ? 0x8000 : 0;
    uint16_t s = signbit(v) ? 0x8000 : 0;
    int e;
    double m = nearbyint(frexp(fabs(v), &e) * 256.0);
    if (m == 256.0) m = 128.0, e++;
    return s | (uint16_t)((e + 126) << 7) | (uint16_t)(m - 128.0);
}
static double dec_bf16(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static bool is_complex(xdev_dtype_t t) {
    return t == XDEV_DTYPE_C64 || t == XDEV_DTYPE_C128;
}

/* Store (re, im) as element i of a buffer of dtype t. */
static void put(xdev_dtype_t t, void *buf, size_t i, double re, double im) {
    switch (t) {
    case XDEV_DTYPE_F32:
        ((float *)buf)[i] = (float)re;
        break;
    case XDEV_DTYPE_F64:
        ((double *)buf)[i] = re;
        break;
    case XDEV_DTYPE_C64:
        ((float *)buf)[2 * i] = (float)re, ((float *)buf)[2 * i + 1] = (float)im;
        break;
    case XDEV_DTYPE_C128:
        ((double *)buf)[2 * i] = re, ((double *)buf)[2 * i + 1] = im;
        break;
    case XDEV_DTYPE_F16:
        ((uint16_t *)buf)[i] = enc_f16(re);
        break;
    default:
        ((uint16_t *)buf)[i] = enc_bf16(re);
        break;
    }
}

static void get(xdev_dtype_t t, const void *buf, size_t i, double *re, double *im) {
    *im = 0.0;
    switch (t) {
    case XDEV_DTYPE_F32:
        *re = ((const float *)buf)[i];
        break;
    case XDEV_DTYPE_F64:
        *re = ((const double *)buf)[i];
        break;
    case XDEV_DTYPE_C64:
        *re = ((const float *)buf)[2 * i], *im = ((const float *)buf)[2 * i + 1];
        break;
    case XDEV_DTYPE_C128:
        *re = ((const double *)buf)[2 * i], *im = ((const double *)buf)[2 * i + 1];
        break;
    case XDEV_DTYPE_F16:
        *re = dec_f16(((const uint16_t *)buf)[i]);
        break;
    default:
        *re = dec_bf16(((const uint16_t *)buf)[i]);
        break;
    }
}

/* Relative tolerance (of sum |alpha a b| + |beta c|) per dtype. */
static double tolerance(xdev_dtype_t t, bool tf32) {
    switch (t) {
    case XDEV_DTYPE_F32:
    case XDEV_DTYPE_C64:
        return tf32 ? 4e-3 : 4e-6;
    case XDEV_DTYPE_F64:
    case XDEV_DTYPE_C128:
        return 1e-13;
    case XDEV_DTYPE_F16:
        return 2e-3;
    default:
        return 1.6e-2;
    }
}

/* True when the backend runs `r` with `t`; otherwise checks that the call
 * is refused as XDEV_ERROR_NOT_SUPPORTED naming the dtype, and says so. */
static bool supported(xdev_blas_routine_t r, xdev_dtype_t t) {
    bool ok = false;
    XT_OK(xdev_blas_supports(xt_dev(0), r, t, &ok));
    if (!ok) {
        xdev_backend_info_t info;
        XT_OK(xdev_backend_get_info(xt_type(), &info));
        fprintf(stderr, "SKIP blas (routine %d, dtype %s): the %s backend does not support it\n",
                (int)r, xdev_dtype_name(t), info.name);
        void *p = NULL;
        XT_OK(xdev_malloc_device(xt_dev(0), &p, 64));
        if (r == XDEV_BLAS_GEMM)
            XT_ERR(XDEV_ERROR_NOT_SUPPORTED,
                   xdev_gemm(t, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 1, 1, 1, 1.0, p, 1, p, 1, 0.0, p, 1,
                             NULL),
                   info.name);
        else if (r == XDEV_BLAS_AXPY)
            XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_axpy(t, 1, 1.0, p, 1, p, 1, NULL), info.name);
        XT_OK(xdev_free(p));
    }
    return ok;
}

/* Tests built on f32 GEMM skip (with the reason) where the backend lacks it. */
#define REQUIRE_GEMM_F32()                                                                         \
    do {                                                                                           \
        if (!supported(XDEV_BLAS_GEMM, XDEV_DTYPE_F32)) {                                          \
            xt_skip(__func__, "the backend under test has no f32 GEMM");                           \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------- GEMM */

typedef struct gcase {
    int64_t m, n, k;
    xdev_blas_op_t ta, tb;
    int64_t pad_a, pad_b, pad_c; /* leading dimension - rows */
    double alpha, alpha_i, beta, beta_i;
    int64_t batch, gap; /* gap: extra elements between batch matrices */
    bool bcast_a;       /* stride_a = 0 */
} gcase_t;

/* Run one case through xdev_gemm_ex and compare every element of C (and
 * check that padding and gaps in C are untouched). */
static void run_gemm(xdev_dtype_t t, const gcase_t *g, bool tf32) {
    size_t es = xdev_dtype_size(t);
    bool cx = is_complex(t);
    int64_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
    int64_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
    int64_t lda = ar + g->pad_a, ldb = br + g->pad_b, ldc = g->m + g->pad_c;
    int64_t sa = g->bcast_a ? 0 : lda * ac + g->gap, sb = ldb * bc + g->gap;
    int64_t sc = ldc * g->n + g->gap;
    size_t na = (size_t)((g->batch - 1) * sa + lda * ac),
           nb = (size_t)((g->batch - 1) * sb + ldb * bc);
    size_t nc = (size_t)((g->batch - 1) * sc + ldc * g->n);
    unsigned char *ha = malloc(na * es), *hb = malloc(nb * es), *hc = malloc(nc * es);
    unsigned char *hc0 = malloc(nc * es), *out = malloc(nc * es);
    for (size_t i = 0; i < na; i++)
        put(t, ha, i, rnd(), cx ? rnd() : 0.0);
    for (size_t i = 0; i < nb; i++)
        put(t, hb, i, rnd(), cx ? rnd() : 0.0);
    for (size_t i = 0; i < nc; i++) /* beta == 0: C is poisoned and must not be read */
        put(t, hc, i, g->beta == 0.0 ? NAN : rnd(), g->beta == 0.0 ? NAN : cx ? rnd() : 0.0);
    memcpy(hc0, hc, nc * es);
    void *da = dalloc(0, na * es), *db = dalloc(0, nb * es), *dc = dalloc(0, nc * es);
    XT_OK(xdev_memcpy(da, ha, na * es));
    XT_OK(xdev_memcpy(db, hb, nb * es));
    XT_OK(xdev_memcpy(dc, hc, nc * es));
    xdev_gemm_params_t p = {.size = sizeof p,
                            .dtype = t,
                            .transa = g->ta,
                            .transb = g->tb,
                            .m = g->m,
                            .n = g->n,
                            .k = g->k,
                            .alpha = g->alpha,
                            .alpha_imag = g->alpha_i,
                            .a = da,
                            .lda = lda,
                            .stride_a = sa,
                            .b = db,
                            .ldb = ldb,
                            .stride_b = sb,
                            .beta = g->beta,
                            .beta_imag = g->beta_i,
                            .c = dc,
                            .ldc = ldc,
                            .stride_c = sc,
                            .batch = g->batch};
    XT_OK(xdev_gemm_ex(&p, NULL));
    XT_OK(xdev_memcpy(out, dc, nc * es)); /* ordered after the GEMM: same (current) stream */
    double tol = tolerance(t, tf32), worst = 0.0;
    for (int64_t bi = 0; bi < g->batch; bi++)
        for (int64_t j = 0; j < g->n; j++)
            for (int64_t i = 0; i < g->m; i++) {
                double sr = 0, si = 0, mag = 0;
                for (int64_t l = 0; l < g->k; l++) {
                    double a_r, a_i, b_r, b_i;
                    size_t ia = (size_t)(bi * sa + (g->ta ? l + i * lda : i + l * lda));
                    size_t ib = (size_t)(bi * sb + (g->tb ? j + l * ldb : l + j * ldb));
                    get(t, ha, ia, &a_r, &a_i);
                    get(t, hb, ib, &b_r, &b_i);
                    if (g->ta == XDEV_BLAS_OP_C) a_i = -a_i;
                    if (g->tb == XDEV_BLAS_OP_C) b_i = -b_i;
                    sr += a_r * b_r - a_i * b_i;
                    si += a_r * b_i + a_i * b_r;
                    mag += hypot(a_r, a_i) * hypot(b_r, b_i);
                }
                double ar_ = g->alpha, ai_ = cx ? g->alpha_i : 0.0;
                double br_ = g->beta, bi_ = cx ? g->beta_i : 0.0;
                double rr = ar_ * sr - ai_ * si, ri = ar_ * si + ai_ * sr;
                mag *= hypot(ar_, ai_);
                size_t ic = (size_t)(bi * sc + i + j * ldc);
                if (g->beta != 0.0 || bi_ != 0.0) {
                    double c_r, c_i;
                    get(t, hc0, ic, &c_r, &c_i);
                    rr += br_ * c_r - bi_ * c_i;
                    ri += br_ * c_i + bi_ * c_r;
                    mag += hypot(br_, bi_) * hypot(c_r, c_i);
                }
                double o_r, o_i;
                get(t, out, ic, &o_r, &o_i);
                double err = hypot(o_r - rr, o_i - ri) / (mag + 1e-30);
                ck_assert_msg(err <= tol, /* NaN fails */
                              "%s gemm %lldx%lldx%lld ta=%d tb=%d batch %lld: C[%lld](%lld,%lld) = "
                              "(%g, %g), expected (%g, %g) (rel err %g > %g)",
                              xdev_dtype_name(t), (long long)g->m, (long long)g->n, (long long)g->k,
                              g->ta, g->tb, (long long)bi, (long long)bi, (long long)i,
                              (long long)j, o_r, o_i, rr, ri, err, tol);
                if (err > worst) worst = err;
            }
    /* Padding rows and gaps of C are not GEMM's to write. */
    for (size_t i = 0; i < nc; i++) {
        int64_t bi = (int64_t)i / sc, r = (int64_t)i % sc;
        bool inside = bi < g->batch && r < ldc * g->n && r % ldc < g->m;
        if (!inside)
            ck_assert_msg(memcmp(out + i * es, hc0 + i * es, es) == 0,
                          "%s gemm wrote C element %zu outside the matrices", xdev_dtype_name(t),
                          i);
    }
    XT_OK(xdev_free(da));
    XT_OK(xdev_free(db));
    XT_OK(xdev_free(dc));
    free(ha), free(hb), free(hc), free(hc0), free(out);
}

static const gcase_t g_cases[] = {
    /* m  n  k   ta  tb  pads    alpha  ai   beta  bi  batch gap bcast */
    {1, 1, 1, 0, 0, 0, 0, 0, 1.0, 0, 0.0, 0, 1, 0, false},
    {7, 5, 3, 0, 0, 0, 0, 0, 1.0, 0, 0.0, 0, 1, 0, false},
    {5, 7, 9, 1, 0, 3, 0, 2, 0.75, 0, 0.0, 0, 1, 0, false},
    {13, 4, 6, 0, 1, 0, 2, 1, 1.0, 0, 0.5, 0, 1, 0, false},
    {8, 8, 8, 1, 1, 1, 1, 1, -1.0, 0, 1.0, 0, 1, 0, false},
    {3, 11, 17, 2, 0, 0, 0, 0, 1.0, 0, 0.0, 0, 1, 0, false},
    {6, 9, 5, 0, 2, 2, 0, 3, -1.5, 0, 2.0, 0, 1, 0, false},
    {33, 17, 65, 0, 0, 1, 2, 3, 0.5, 0, 0.0, 0, 1, 0, false},
    {9, 7, 5, 0, 0, 0, 0, 1, 1.0, 0, 0.0, 0, 3, 4, false},
    {4, 6, 5, 1, 1, 2, 1, 0, 1.25, 0, -0.5, 0, 4, 0, true},
    {5, 3, 4, 2, 2, 0, 1, 2, 0.5, 0.25, 0.5, -1.0, 2, 3, false},
};

START_TEST(gemm_every_dtype_and_shape) {
    for (int t = 0; t < XDEV_DTYPE_COUNT; t++) {
        if (!supported(XDEV_BLAS_GEMM, (xdev_dtype_t)t)) continue;
        for (size_t c = 0; c < sizeof g_cases / sizeof g_cases[0]; c++)
            run_gemm((xdev_dtype_t)t, &g_cases[c], false);
    }
}
END_TEST

/* The documented row-major recipe: C = A B with row-major A (m x k), B
 * (k x n), C (m x n) is the column-major C^T = B^T A^T. */
START_TEST(gemm_row_major_recipe) {
    REQUIRE_GEMM_F32();
    enum { M = 4, N = 3, K = 5 };
    float a[M][K], b[K][N], c[M][N];
    for (int i = 0; i < M; i++)
        for (int l = 0; l < K; l++)
            a[i][l] = (float)(i + 2 * l) / 8.0f;
    for (int l = 0; l < K; l++)
        for (int j = 0; j < N; j++)
            b[l][j] = (float)(l - j) / 4.0f;
    float *da = dalloc(0, sizeof a), *db = dalloc(0, sizeof b), *dc = dalloc(0, sizeof c);
    XT_OK(xdev_memcpy(da, a, sizeof a));
    XT_OK(xdev_memcpy(db, b, sizeof b));
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, N, M, K, 1.0, db, N, da, K, 0.0,
                    dc, N, NULL));
    XT_OK(xdev_memcpy(c, dc, sizeof c));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0;
            for (int l = 0; l < K; l++)
                ref += (double)a[i][l] * b[l][j];
            ck_assert_msg(fabs(c[i][j] - ref) <= 1e-5, "row-major C[%d][%d] = %g, expected %g", i,
                          j, c[i][j], ref);
        }
    XT_OK(xdev_free(da));
    XT_OK(xdev_free(db));
    XT_OK(xdev_free(dc));
}
END_TEST

/* 1x1x1 GEMMs (C = alpha * a * 1) exercise the 16-bit rounding: ties to
 * even, subnormals, overflow to infinity, NaN. */
START_TEST(gemm_half_rounding) {
    static const struct {
        xdev_dtype_t t;
        uint16_t a;
        double alpha;
        uint16_t want;
    } cases[] = {
        {XDEV_DTYPE_F16, 0x3c00, 1.0 + 0x1p-11, 0x3c00},     /* tie -> even (down) */
        {XDEV_DTYPE_F16, 0x3c00, 1.0 + 3 * 0x1p-11, 0x3c02}, /* tie -> even (up) */
        {XDEV_DTYPE_F16, 0x3c00, 1.0 + 0x1p-11 + 0x1p-20, 0x3c01},
        {XDEV_DTYPE_F16, 0x0001, 1.0, 0x0001},           /* smallest subnormal */
        {XDEV_DTYPE_F16, 0x0001, 0.5, 0x0000},           /* 2^-25: tie -> 0 */
        {XDEV_DTYPE_F16, 0x0001, 1.5, 0x0002},           /* tie -> even */
        {XDEV_DTYPE_F16, 0x03ff, 1.0, 0x03ff},           /* largest subnormal */
        {XDEV_DTYPE_F16, 0x0400, 0.5, 0x0200},           /* normal -> subnormal */
        {XDEV_DTYPE_F16, 0x7bff, 1.0, 0x7bff},           /* 65504 */
        {XDEV_DTYPE_F16, 0x7bff, 2.0, 0x7c00},           /* overflow -> inf */
        {XDEV_DTYPE_F16, 0xfbff, 2.0, 0xfc00},           /* -inf */
        {XDEV_DTYPE_F16, 0x7c00, 1.0, 0x7c00},           /* inf */
        {XDEV_DTYPE_BF16, 0x3f80, 1.0 + 0x1p-8, 0x3f80}, /* tie -> even */
        {XDEV_DTYPE_BF16, 0x3f80, 1.0 + 3 * 0x1p-8, 0x3f82},
        {XDEV_DTYPE_BF16, 0x7f7f, 2.0, 0x7f80}, /* overflow -> inf */
    };
    uint16_t one_f16 = 0x3c00, one_bf16 = 0x3f80;
    uint16_t *a = dalloc(0, 2), *b = dalloc(0, 2), *c = dalloc(0, 2);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!supported(XDEV_BLAS_GEMM, cases[i].t)) continue;
        uint16_t out = 0x1234;
        XT_OK(xdev_memcpy(a, &cases[i].a, 2));
        XT_OK(xdev_memcpy(b, cases[i].t == XDEV_DTYPE_F16 ? &one_f16 : &one_bf16, 2));
        XT_OK(xdev_memcpy(c, &out, 2));
        XT_OK(xdev_gemm(cases[i].t, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 1, 1, 1, cases[i].alpha, a, 1,
                        b, 1, 0.0, c, 1, NULL));
        XT_OK(xdev_memcpy(&out, c, 2));
        ck_assert_msg(out == cases[i].want, "%s: %a * 0x%04x = 0x%04x, expected 0x%04x",
                      xdev_dtype_name(cases[i].t), cases[i].alpha, cases[i].a, out, cases[i].want);
    }
    /* NaN in, NaN out. */
    if (supported(XDEV_BLAS_GEMM, XDEV_DTYPE_F16)) {
        uint16_t nan = 0x7e00, out = 0;
        XT_OK(xdev_memcpy(a, &nan, 2));
        XT_OK(xdev_memcpy(b, &one_f16, 2));
        XT_OK(xdev_gemm(XDEV_DTYPE_F16, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 1, 1, 1, 1.0, a, 1, b, 1,
                        0.0, c, 1, NULL));
        XT_OK(xdev_memcpy(&out, c, 2));
        ck_assert_msg((out & 0x7c00) == 0x7c00 && (out & 0x3ff) != 0, "NaN became 0x%04x", out);
    }
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
}
END_TEST

/* With TF32 allowed (the default) f32 GEMM may use 10-bit products. */
START_TEST(tf32_flag) {
    bool on = false;
    XT_OK(xdev_blas_set_allow_tf32(true));
    XT_OK(xdev_blas_get_allow_tf32(&on));
    ck_assert(on);
    gcase_t g = {31, 17, 40, 0, 1, 1, 0, 2, 1.0, 0, 0.5, 0, 2, 1, false};
    bool gemm = supported(XDEV_BLAS_GEMM, XDEV_DTYPE_F32);
    if (gemm) run_gemm(XDEV_DTYPE_F32, &g, true);
    XT_OK(xdev_blas_set_allow_tf32(false));
    XT_OK(xdev_blas_get_allow_tf32(&on));
    ck_assert(!on);
    if (gemm) run_gemm(XDEV_DTYPE_F32, &g, false);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_blas_get_allow_tf32(NULL), "out");
}
END_TEST

START_TEST(tf32_env_off) {
    bool on = true;
    XT_OK(xdev_blas_get_allow_tf32(&on));
    ck_assert(!on);
}
END_TEST

START_TEST(tf32_env_malformed) {
    bool on;
    XT_ERR(XDEV_ERROR_ENV, xdev_blas_get_allow_tf32(&on), "XDEV_ALLOW_TF32");
    XT_ERR(XDEV_ERROR_ENV, xdev_blas_set_allow_tf32(true), "XDEV_ALLOW_TF32");
    float *a = dalloc(0, 4);
    XT_ERR(XDEV_ERROR_ENV,
           xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 1, 1, 1, 1.0, a, 1, a, 1, 0.0,
                     a, 1, NULL),
           "XDEV_ALLOW_TF32");
    XT_OK(xdev_free(a));
}
END_TEST

/* ------------------------------------------------------------- level 1 */

START_TEST(level1) {
    enum { N = 37, INCX = 2, INCY = 3 };
    for (int ti = 0; ti < 2; ti++) {
        xdev_dtype_t t = ti ? XDEV_DTYPE_F64 : XDEV_DTYPE_F32;
        if (!supported(XDEV_BLAS_AXPY, t)) continue;
        size_t es = xdev_dtype_size(t), nx = (N - 1) * INCX + 1, ny = (N - 1) * INCY + 1;
        double hx[(N - 1) * INCX + 1], hy[(N - 1) * INCY + 1], tmp[(N - 1) * INCY + 1], im;
        unsigned char bx[sizeof hx], by[sizeof hy], res[8];
        for (size_t i = 0; i < nx; i++)
            put(t, bx, i, rnd(), 0), get(t, bx, i, &hx[i], &im);
        for (size_t i = 0; i < ny; i++)
            put(t, by, i, rnd(), 0), get(t, by, i, &hy[i], &im);
        void *dx = dalloc(0, nx * es), *dy = dalloc(0, ny * es), *dr = dalloc(0, es);
        XT_OK(xdev_memcpy(dx, bx, nx * es));
        XT_OK(xdev_memcpy(dy, by, ny * es));
        double tol = t == XDEV_DTYPE_F32 ? 1e-5 : 1e-13, dot = 0, nrm = 0;
        for (int i = 0; i < N; i++) {
            dot += hx[i * INCX] * hy[i * INCY];
            nrm += hx[i * INCX] * hx[i * INCX];
        }
        XT_OK(xdev_dot(t, N, dx, INCX, dy, INCY, dr, NULL));
        XT_OK(xdev_memcpy(res, dr, es));
        get(t, res, 0, &tmp[0], &im);
        ck_assert_msg(fabs(tmp[0] - dot) <= tol * N, "%s dot = %g, expected %g", xdev_dtype_name(t),
                      tmp[0], dot);
        XT_OK(xdev_nrm2(t, N, dx, INCX, dr, NULL));
        XT_OK(xdev_memcpy(res, dr, es));
        get(t, res, 0, &tmp[0], &im);
        ck_assert_msg(fabs(tmp[0] - sqrt(nrm)) <= tol * N, "%s nrm2 = %g, expected %g",
                      xdev_dtype_name(t), tmp[0], sqrt(nrm));
        XT_OK(xdev_axpy(t, N, -0.5, dx, INCX, dy, INCY, NULL));
        XT_OK(xdev_scal(t, N, 3.0, dy, INCY, NULL));
        XT_OK(xdev_memcpy(by, dy, ny * es));
        for (size_t i = 0; i < ny; i++) {
            get(t, by, i, &tmp[i], &im);
            double want = i % INCY ? hy[i] : 3.0 * (hy[i] - 0.5 * hx[i / INCY * INCX]);
            ck_assert_msg(fabs(tmp[i] - want) <= tol * 4, "%s axpy+scal y[%zu] = %g, expected %g",
                          xdev_dtype_name(t), i, tmp[i], want);
        }
        XT_OK(xdev_free(dx));
        XT_OK(xdev_free(dy));
        XT_OK(xdev_free(dr));
    }
}
END_TEST

/* ------------------------------------------------------------- bad input */

#define GEMM(t, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, s)                                        \
    xdev_gemm(t, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc, s)
#define F32 XDEV_DTYPE_F32
#define N_ XDEV_BLAS_OP_N
#define T_ XDEV_BLAS_OP_T

START_TEST(bad_input) {
    float *a = dalloc(0, 64 * 4), *b = dalloc(0, 64 * 4), *c = dalloc(0, 64 * 4);
    float host[64];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 4, NULL, 4, b, 4, c, 4, NULL), "'a'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 4, a, 4, NULL, 4, c, 4, NULL), "'b'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 4, a, 4, b, 4, NULL, 4, NULL), "'c'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 0, 4, 4, a, 4, b, 4, c, 4, NULL), "m = 0");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, -1, 4, a, 4, b, 4, c, 4, NULL), "n = -1");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 0, a, 4, b, 4, c, 4, NULL), "k = 0");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 4, a, 3, b, 4, c, 4, NULL), "lda");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, T_, N_, 4, 4, 2, a, 1, b, 2, c, 4, NULL), "lda");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, T_, 4, 5, 4, a, 4, b, 4, c, 4, NULL), "ldb");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 4, a, 4, b, 4, c, 2, NULL), "ldc");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           GEMM((xdev_dtype_t)99, N_, N_, 4, 4, 4, a, 4, b, 4, c, 4, NULL), "dtype");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           GEMM(F32, (xdev_blas_op_t)7, N_, 4, 4, 4, a, 4, b, 4, c, 4, NULL), "transa");
    /* Host memory: a clear "device memory" error. */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 4, host, 4, b, 4, c, 4, NULL),
           "device memory");
    void *pinned = NULL;
    XT_OK(xdev_host_alloc(&pinned, 256));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, 4, 4, a, 4, b, 4, pinned, 4, NULL),
           "pinned", "device memory");
    XT_OK(xdev_host_free(pinned));
    /* Operands larger than their allocation. */
    float *small = dalloc(0, 4 * 4);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(small, &info));
    int64_t big = 1 << 20;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, GEMM(F32, N_, N_, 4, big, 4, a, 4, b, 4, small, 4, NULL),
           "past the end|ldb");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_gemm_strided_batched(F32, N_, N_, 2, 2, 2, 1.0, a, 2, 4, b, 2, 4, 0.0, c, 2, 2, 3,
                                     NULL),
           "stride_c");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_gemm_strided_batched(F32, N_, N_, 2, 2, 2, 1.0, a, 2, 4, b, 2, 4, 0.0, c, 2, 4, 0,
                                     NULL),
           "batch");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_gemm_strided_batched(F32, N_, N_, 2, 2, 2, 1.0, a, 2, -4, b, 2, 4, 0.0, c, 2, 4, 2,
                                     NULL),
           "stride");
    xdev_gemm_params_t p = {.size = 8};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_gemm_ex(&p, NULL), "size");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_gemm_ex(NULL, NULL), "params");
    /* Level 1. */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_axpy(F32, 0, 1.0, a, 1, b, 1, NULL), "n = 0");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_axpy(F32, 4, 1.0, a, 0, b, 1, NULL), "inc");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dot(F32, 4, a, 1, b, 1, NULL, NULL), "result");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_nrm2(F32, 4, host, 1, c, NULL), "device memory");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_scal(F32, 65, 2.0, a, 1, NULL), "past the end");
    /* A dtype the backend lacks names the backend and the dtype. */
    for (int t = 0; t < XDEV_DTYPE_COUNT; t++) {
        bool ok = true;
        XT_OK(xdev_blas_supports(xt_dev(0), XDEV_BLAS_AXPY, (xdev_dtype_t)t, &ok));
        if (ok) continue;
        xdev_backend_info_t info2;
        XT_OK(xdev_backend_get_info(xt_type(), &info2));
        XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_axpy((xdev_dtype_t)t, 4, 1.0, a, 1, b, 1, NULL),
               info2.name, xdev_dtype_name((xdev_dtype_t)t));
    }
    bool ok;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_blas_supports(xt_dev(0), XDEV_BLAS_GEMM, F32, NULL),
           "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_blas_supports(xt_dev(0), (xdev_blas_routine_t)9, F32, &ok), "routine");
    ck_assert_str_eq(xdev_dtype_name(XDEV_DTYPE_BF16), "bf16");
    ck_assert_ptr_null(xdev_dtype_name((xdev_dtype_t)42));
    ck_assert_uint_eq(xdev_dtype_size(XDEV_DTYPE_C128), 16);
    XT_OK(xdev_free(small));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
}
END_TEST

/* Operands on two devices: XDEV_ERROR_CROSS_DEVICE until peer access is
 * enabled; a stream of another device is refused. */
START_TEST(cross_device) {
    REQUIRE_GEMM_F32();
    XT_REQUIRE_DEVICES(2);
    float one = 1.0f, out = 0.0f;
    float *a0 = dalloc(0, 4), *b1 = dalloc(1, 4), *c0 = dalloc(0, 4);
    XT_OK(xdev_memcpy(a0, &one, 4));
    XT_OK(xdev_memcpy(b1, &one, 4));
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, GEMM(F32, N_, N_, 1, 1, 1, a0, 1, b1, 1, c0, 1, NULL), ":1",
           ":0");
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_axpy(F32, 1, 1.0, b1, 1, c0, 1, NULL), "peer");
    xdev_stream_t s1;
    XT_OK(xdev_stream_default(xt_dev(1), &s1));
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, GEMM(F32, N_, N_, 1, 1, 1, a0, 1, a0, 1, c0, 1, s1), "stream");
    bool can = false;
    XT_OK(xdev_device_can_access_peer(xt_dev(0), xt_dev(1), &can));
    if (can) {
        XT_OK(xdev_device_enable_peer_access(xt_dev(0), xt_dev(1)));
        XT_OK(GEMM(F32, N_, N_, 1, 1, 1, a0, 1, b1, 1, c0, 1, NULL));
        XT_OK(xdev_memcpy(&out, c0, 4));
        ck_assert_float_eq(out, 1.0f);
    }
    XT_OK(xdev_free(a0));
    XT_OK(xdev_free(b1));
    XT_OK(xdev_free(c0));
}
END_TEST

/* Work is enqueued on the stream given, or on the current stream of the
 * operands' device (not the current device), and runs in stream order. */
START_TEST(stream_ordered) {
    REQUIRE_GEMM_F32();
    if (xdev_launch_blocking()) /* every enqueue waits: the gate would block the call */
        XT_SKIP("XDEV_LAUNCH_BLOCKING=1 makes every enqueue wait for its stream");
    float ha[4] = {1, 2, 3, 4}, hc[4], poison[4] = {NAN, NAN, NAN, NAN};
    float *a = dalloc(0, sizeof ha), *c = dalloc(0, sizeof hc);
    XT_OK(xdev_memcpy(a, ha, sizeof ha));
    XT_OK(xdev_memcpy(c, poison, sizeof poison));
    xdev_stream_t s, other;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &other));
    /* Warm-up on s: CUDA loads a kernel's module at its first launch (lazy
     * loading), which can wait for the device; the GEMM below then only enqueues. */
    XT_OK(xdev_gemm(F32, N_, N_, 2, 2, 2, 1.0, a, 2, a, 2, 0.0, c, 2, s));
    XT_OK(xdev_memcpy_async(c, poison, sizeof poison, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_stream_set_current(s));
    if (xt_device_count() > 1)
        XT_OK(xdev_set_device(xt_dev(1))); /* the current device does not matter */
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 10000);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_gemm(F32, N_, N_, 2, 2, 2, 1.0, a, 2, a, 2, 0.0, c, 2, NULL)); /* on s */
    ck_assert(xt_gate_wait_entered(&gate, 5000));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(s));
    XT_OK(xdev_memcpy_async(hc, c, sizeof hc, other));
    XT_OK(xdev_stream_synchronize(other));
    ck_assert_msg(isnan(hc[0]), "the GEMM ran before the work queued ahead of it on its stream");
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy(hc, c, sizeof hc));
    ck_assert_float_eq(hc[0], 7.0f); /* [1 3; 2 4]^2 = [7 15; 10 22] */
    ck_assert_float_eq(hc[3], 22.0f);
    xt_opener_join(&opener);
    xt_gate_destroy(&gate);
    xt_reset_state();
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(other));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(c));
}
END_TEST

/* The blas/fft tables and descriptors of the backend ABI (xdev/backend.h)
 * and the public descriptors only ever grow at the end: these pins fail when
 * a slot or field is inserted in the middle (on LP64). Appending changes a
 * size: update the pin on purpose. */
#define SLOT_AT(type, slot, k)                                                                     \
    ck_assert_msg(offsetof(type, slot) == (size_t)(k) * sizeof(void *), #type "." #slot " moved")
#define LAYOUT(type, field, off, total)                                                            \
    ck_assert_msg(offsetof(type, field) == (off) && sizeof(type) == (total),                       \
                  #type ": " #field " at %zu (pinned %d), size %zu (pinned %d)",                   \
                  offsetof(type, field), (off), sizeof(type), (total))

START_TEST(abi_layout) {
    if (sizeof(void *) != 8) XT_SKIP("the pins are for LP64");
    SLOT_AT(xdev_blas_vtable_t, size, 0);
    SLOT_AT(xdev_blas_vtable_t, query_dtypes, 1);
    SLOT_AT(xdev_blas_vtable_t, gemm, 2);
    SLOT_AT(xdev_blas_vtable_t, axpy, 3);
    SLOT_AT(xdev_blas_vtable_t, dot, 4);
    SLOT_AT(xdev_blas_vtable_t, nrm2, 5);
    SLOT_AT(xdev_blas_vtable_t, scal, 6);
    ck_assert_uint_eq(sizeof(xdev_blas_vtable_t), 7 * sizeof(void *));
    SLOT_AT(xdev_fft_vtable_t, plan_create, 1);
    SLOT_AT(xdev_fft_vtable_t, plan_destroy, 2);
    SLOT_AT(xdev_fft_vtable_t, exec, 3);
    ck_assert_uint_eq(sizeof(xdev_fft_vtable_t), 4 * sizeof(void *));
    LAYOUT(xdev_blas_gemm_desc_t, batch, 152, 184); /* ABI 2.0: device is a context */
    LAYOUT(xdev_blas_gemm_desc_t, stream, 176, 184);
    LAYOUT(xdev_blas_vec_desc_t, stream, 80, 88);
    LAYOUT(xdev_fft_plan_desc_t, device, 136, 144);
    LAYOUT(xdev_fft_exec_desc_t, stream, 72, 80);
    LAYOUT(xdev_gemm_params_t, batch, 152, 160);
    LAYOUT(xdev_fft_desc_t, odist, 128, 136);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("blas");
    TCase *tc = tcase_create("blas");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, abi_layout);
    tcase_add_test(tc, gemm_every_dtype_and_shape);
    tcase_add_test(tc, gemm_row_major_recipe);
    tcase_add_test(tc, gemm_half_rounding);
    tcase_add_test(tc, tf32_flag);
    tcase_add_test(tc, level1);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, cross_device);
    tcase_add_test(tc, stream_ordered);
    suite_add_tcase(s, tc);

    Suite *off = suite_create("tf32_off");
    tc = tcase_create("tf32_off");
    tcase_add_test(tc, tf32_env_off);
    suite_add_tcase(off, tc);

    Suite *bad = suite_create("tf32_bad");
    tc = tcase_create("tf32_bad");
    tcase_add_test(tc, tf32_env_malformed);
    suite_add_tcase(bad, tc);

    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, off);
    srunner_add_suite(sr, bad);
    return xt_run(sr, "blas", argc, argv);
}
