/* SPDX-License-Identifier: Apache-2.0 */
/* test_rng.c - random numbers (xdev/rng.h): Philox known answers, every
 * fill against a scalar reference (and, on a GPU run, the GPU against the
 * CPU backend bit for bit), splitting invariance, statistics. The API side
 * (seeding, states, generators, errors, ordering, threads) is
 * test_rng_api.c.
 *
 * Written against the default device type (xt_dev), so the same checks run
 * on every backend. Suite: rng (XDEV_CPU_DEVICES=2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/support/philox.h"
#include "rng_test.h"
#include "xt.h"

/* ------------------------------------------------------------- the fills */

const rt_fill_t rt_fills[RT_FILLS] = {
    {XDEV_RNG_FILL_UNIFORM, XDEV_RNG_FORMAT_F32, "uniform f32"},
    {XDEV_RNG_FILL_UNIFORM, XDEV_RNG_FORMAT_F64, "uniform f64"},
    {XDEV_RNG_FILL_NORMAL, XDEV_RNG_FORMAT_F32, "normal f32"},
    {XDEV_RNG_FILL_NORMAL, XDEV_RNG_FORMAT_F64, "normal f64"},
    {XDEV_RNG_FILL_INTEGERS, XDEV_RNG_FORMAT_I32, "integers int32"},
    {XDEV_RNG_FILL_INTEGERS, XDEV_RNG_FORMAT_I64, "integers int64"},
    {XDEV_RNG_FILL_BERNOULLI, XDEV_RNG_FORMAT_F32, "bernoulli f32"},
};

/* Parameters every test uses for each kind. */
#define MEAN 1.5
#define STD 2.5
#define I32_LOW (-1000)
#define I32_HIGH 123457
#define I64_LOW (INT64_MIN / 3)
#define I64_HIGH (INT64_MAX / 2)
#define PROB 0.3

size_t rt_esize(const rt_fill_t *f) {
    return f->format == XDEV_RNG_FORMAT_F64 || f->format == XDEV_RNG_FORMAT_I64 ? 8 : 4;
}

xdev_status_t rt_fill(xdev_generator_t g, const rt_fill_t *f, void *out, size_t n,
                      xdev_stream_t s) {
    xdev_dtype_t dt = f->format == XDEV_RNG_FORMAT_F64 ? XDEV_DTYPE_F64 : XDEV_DTYPE_F32;
    switch (f->kind) {
    case XDEV_RNG_FILL_UNIFORM:
        return xdev_rng_uniform(g, dt, out, n, s);
    case XDEV_RNG_FILL_NORMAL:
        return xdev_rng_normal(g, dt, out, n, MEAN, STD, s);
    case XDEV_RNG_FILL_INTEGERS:
        if (f->format == XDEV_RNG_FORMAT_I32)
            return xdev_rng_integers(g, XDEV_RNG_INT32, out, n, I32_LOW, I32_HIGH, s);
        return xdev_rng_integers(g, XDEV_RNG_INT64, out, n, I64_LOW, I64_HIGH, s);
    default:
        return xdev_rng_bernoulli(g, out, n, PROB, s);
    }
}

/* What a fill of n elements from a generator at `offset` with the
 * parameters pr must write: each element from its own Philox block, one at a
 * time (no batching). */
static void reference_with(const rt_fill_t *f, const xdev_philox_params_t *pr, uint64_t seed,
                           uint64_t offset, size_t n, void *out) {
    unsigned wpe = xdev_philox_words_per_element((int)f->format);
    uint64_t p = (offset + wpe - 1) / wpe * wpe;
    for (size_t i = 0; i < n; i++, p += wpe) {
        uint32_t w[4];
        xdev_philox_block(seed, p / 4, w);
        xdev_philox_element((int)f->kind, (int)f->format, w, (unsigned)(p % 4), pr,
                            (unsigned char *)out + i * rt_esize(f));
    }
}

/* reference_with the parameters every rt_fills entry is filled with. */
void rt_reference(const rt_fill_t *f, uint64_t seed, uint64_t offset, size_t n, void *out) {
    xdev_philox_params_t pr = {(float)MEAN, (float)STD, MEAN, STD, 0, 0, 0};
    if (f->format == XDEV_RNG_FORMAT_I32)
        pr.low = I32_LOW, pr.range = (uint64_t)I32_HIGH - (uint64_t)(int64_t)I32_LOW;
    else
        pr.low = I64_LOW, pr.range = (uint64_t)I64_HIGH - (uint64_t)I64_LOW;
    pr.threshold = (uint64_t)(PROB * 4294967296.0 + 0.5);
    reference_with(f, &pr, seed, offset, n, out);
}

void rt_block(uint64_t seed, uint64_t b, uint32_t out[4]) {
    xdev_philox_block(seed, b, out);
}

void *rt_dalloc(xdev_device_t dev, size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(dev, &p, bytes));
    return p;
}

void rt_fetch(void *host, const void *dev, size_t bytes) {
    xdev_device_t d;
    XT_OK(xdev_device_of(dev, &d));
    XT_OK(xdev_device_synchronize(d));
    XT_OK(xdev_memcpy(host, dev, bytes));
}

/* Index of the first differing element (n when equal). */
static size_t first_diff(const void *a, const void *b, size_t n, size_t es) {
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * es, (const char *)b + i * es, es) != 0) return i;
    return n;
}

static void expect_same(const rt_fill_t *f, const void *got, const void *want, size_t n,
                        const char *what) {
    size_t i = first_diff(got, want, n, rt_esize(f));
    if (i == n) return;
    double g, w;
    if (f->format == XDEV_RNG_FORMAT_F32)
        g = ((const float *)got)[i], w = ((const float *)want)[i];
    else if (f->format == XDEV_RNG_FORMAT_F64)
        g = ((const double *)got)[i], w = ((const double *)want)[i];
    else if (f->format == XDEV_RNG_FORMAT_I32)
        g = ((const int32_t *)got)[i], w = ((const int32_t *)want)[i];
    else
        g = (double)((const int64_t *)got)[i], w = (double)((const int64_t *)want)[i];
    ck_abort_msg("%s, %s: element %zu of %zu differs: %.17g, expected %.17g", f->name, what, i, n,
                 g, w);
}

/* ------------------------------------------------------------- known answers */

/* Random123's kat_vectors, the three philox4x32 10 lines: ctr, key -> out. */
static const uint32_t k_kat[3][10] = {
    {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
     0xa20bc7c6, 0x6d5451fd},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
     0x5001e420, 0x24126ea1},
};

START_TEST(philox_known_answers) {
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        xdev_philox4x32_10(k_kat[v], k_kat[v] + 4, out);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(out[i] == k_kat[v][6 + i], "vector %d word %d: %08x, expected %08x", v, i,
                          out[i], k_kat[v][6 + i]);
    }
    /* Through the API: int32 over [INT32_MIN, 2^31) is the raw words (shifted
     * by 2^31); seed 0, offset 0 is the all-zero vector. */
    xdev_generator_t g;
    XT_OK(xdev_generator_create(xt_dev(0), 0, &g));
    int32_t *d = rt_dalloc(xt_dev(0), 8 * sizeof(int32_t)), h[8];
    XT_OK(xdev_rng_integers(g, XDEV_RNG_INT32, d, 4, INT32_MIN, (int64_t)INT32_MAX + 1, NULL));
    rt_fetch(h, d, 4 * sizeof(int32_t));
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq((uint32_t)h[i] ^ 0x80000000u, k_kat[0][6 + i]);
    /* The all-ones key with counter 7: word position 28. */
    XT_OK(xdev_generator_manual_seed(g, UINT64_MAX));
    XT_OK(xdev_generator_set_offset(g, 28));
    XT_OK(xdev_rng_integers(g, XDEV_RNG_INT32, d, 4, INT32_MIN, (int64_t)INT32_MAX + 1, NULL));
    rt_fetch(h, d, 4 * sizeof(int32_t));
    const uint32_t ctr7[4] = {7, 0, 0, 0}, ones[2] = {0xffffffff, 0xffffffff};
    uint32_t want[4];
    xdev_philox4x32_10(ctr7, ones, want);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq((uint32_t)h[i] ^ 0x80000000u, want[i]);
    /* The documented conversions, written out independently here. */
    XT_OK(xdev_generator_manual_seed(g, 0));
    float uf[4];
    double ud[2];
    XT_OK(xdev_rng_uniform(g, XDEV_DTYPE_F32, d, 4, NULL));
    rt_fetch(uf, d, sizeof uf);
    XT_OK(xdev_generator_set_offset(g, 0));
    XT_OK(xdev_rng_uniform(g, XDEV_DTYPE_F64, d, 2, NULL));
    rt_fetch(ud, d, sizeof ud);
    for (int i = 0; i < 4; i++)
        ck_assert(uf[i] == (float)(k_kat[0][6 + i] >> 8) / 16777216.0f);
    for (int i = 0; i < 2; i++) {
        uint64_t k = ((uint64_t)k_kat[0][6 + 2 * i] << 21) | (k_kat[0][7 + 2 * i] >> 11);
        ck_assert(ud[i] == ldexp((double)k, -53));
    }
    XT_OK(xdev_free(d));
    XT_OK(xdev_generator_destroy(g));
}
END_TEST

/* ------------------------------------------------------------- identity */

/* Every fill at several offsets (odd ones too) and sizes: the backend under
 * test equals the scalar reference bit for bit; on a GPU run the CPU backend
 * (always present in-process) fills the same and must match too. */
START_TEST(reference_and_cross_backend_identity) {
    bool gpu = xt_type() != XDEV_DEVICE_CPU;
    if (!gpu)
        fprintf(stderr, "NOTE reference_and_cross_backend_identity: CPU run, the CPU backend is "
                        "compared with the scalar reference; GPU runs also compare the GPU with "
                        "the CPU backend bit for bit\n");
    static const uint64_t offsets[] = {0, 1, 2, 3, 5, 4093, (1ull << 34) + 7};
    const size_t sizes[] = {1, 3, 2048, (size_t)xt_iters(100003, 4099) | 1u}; /* scaled */
    const uint64_t seed = 0x0123456789abcdefull;
    xdev_device_t cpu = xdev_cpu(0);
    for (int k = 0; k < RT_FILLS; k++) {
        const rt_fill_t *f = &rt_fills[k];
        size_t es = rt_esize(f), most = sizes[3] * es;
        void *d = rt_dalloc(xt_dev(0), most), *dc = gpu ? rt_dalloc(cpu, most) : NULL;
        void *got = malloc(most), *want = malloc(most), *viacpu = malloc(most);
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                size_t n = sizes[s];
                if (n > 3 && o > 2 && o != 6) continue; /* big sizes at a few offsets */
                xdev_generator_t g;
                XT_OK(xdev_generator_create(xt_dev(0), seed, &g));
                XT_OK(xdev_generator_set_offset(g, offsets[o]));
                XT_OK(rt_fill(g, f, d, n, NULL));
                rt_fetch(got, d, n * es);
                rt_reference(f, seed, offsets[o], n, want);
                char what[96];
                snprintf(what, sizeof what, "%s vs reference, offset %llu", xt_type_name(),
                         (unsigned long long)offsets[o]);
                expect_same(f, got, want, n, what);
                uint64_t after;
                XT_OK(xdev_generator_get_offset(g, &after));
                unsigned wpe = xdev_philox_words_per_element((int)f->format);
                ck_assert_uint_eq(after, (offsets[o] + wpe - 1) / wpe * wpe + n * wpe);
                XT_OK(xdev_generator_destroy(g));
                if (!gpu) continue;
                XT_OK(xdev_generator_create(cpu, seed, &g));
                XT_OK(xdev_generator_set_offset(g, offsets[o]));
                XT_OK(rt_fill(g, f, dc, n, NULL));
                rt_fetch(viacpu, dc, n * es);
                snprintf(what, sizeof what, "%s vs cpu backend, offset %llu", xt_type_name(),
                         (unsigned long long)offsets[o]);
                expect_same(f, got, viacpu, n, what);
                XT_OK(xdev_generator_destroy(g));
            }
        }
        XT_OK(xdev_free(d));
        if (dc) XT_OK(xdev_free(dc));
        free(got), free(want), free(viacpu);
    }
}
END_TEST

/* Fills larger than a cache (more than 8 MiB: the CPU backend streams them
 * past the cache) equal the reference too, from a generator offset that
 * lines the output up with whole chunks and from one that does not. */
START_TEST(large_fills_match_reference) {
    const size_t n = (size_t)xt_iters((1 << 21) + 3, 4099);
    const uint64_t seed = 99, offsets[] = {0, 4, 5};
    for (int k = 0; k < RT_FILLS; k++) {
        const rt_fill_t *f = &rt_fills[k];
        size_t es = rt_esize(f);
        void *d = rt_dalloc(xt_dev(0), n * es), *got = malloc(n * es), *want = malloc(n * es);
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
            xdev_generator_t g;
            XT_OK(xdev_generator_create(xt_dev(0), seed, &g));
            XT_OK(xdev_generator_set_offset(g, offsets[o]));
            XT_OK(rt_fill(g, f, d, n, NULL));
            rt_fetch(got, d, n * es);
            rt_reference(f, seed, offsets[o], n, want);
            char what[96];
            snprintf(what, sizeof what, "%zu elements, offset %llu", n,
                     (unsigned long long)offsets[o]);
            expect_same(f, got, want, n, what);
            XT_OK(xdev_generator_destroy(g));
        }
        XT_OK(xdev_free(d));
        free(got), free(want);
    }
}
END_TEST

/* Normals of std 1 equal the reference's mean + 1 * z bit for bit (a GPU
 * backend may leave the product by 1 out: it is exact), at sizes past one
 * wave of a GPU's threads, from an offset in a block and from none, f32 and
 * f64, with a zero mean (where -0 + 0 is +0) and another. */
START_TEST(unit_std_normals_match_reference) {
    const size_t n = (size_t)xt_iters((1 << 21) + 5, 4099);
    const uint64_t seed = 7, offsets[] = {0, 6};
    const double means[] = {0.0, -1.75};
    void *d = rt_dalloc(xt_dev(0), n * 8), *got = malloc(n * 8), *want = malloc(n * 8);
    for (int f64 = 0; f64 < 2; f64++) {
        const rt_fill_t *f = &rt_fills[f64 ? 3 : 2]; /* normal f64 / f32 */
        for (size_t m = 0; m < 2; m++) {
            for (size_t o = 0; o < 2; o++) {
                xdev_generator_t g;
                XT_OK(xdev_generator_create(xt_dev(0), seed, &g));
                XT_OK(xdev_generator_set_offset(g, offsets[o]));
                XT_OK(xdev_rng_normal(g, f64 ? XDEV_DTYPE_F64 : XDEV_DTYPE_F32, d, n, means[m], 1.0,
                                      NULL));
                XT_OK(xdev_generator_destroy(g));
                rt_fetch(got, d, n * rt_esize(f));
                xdev_philox_params_t pr = {(float)means[m], 1.0f, means[m], 1.0, 0, 0, 0};
                reference_with(f, &pr, seed, offsets[o], n, want);
                char what[96];
                snprintf(what, sizeof what, "%s, mean %g, std 1, offset %llu", xt_type_name(),
                         means[m], (unsigned long long)offsets[o]);
                expect_same(f, got, want, n, what);
            }
        }
    }
    XT_OK(xdev_free(d));
    free(got), free(want);
}
END_TEST

/* Normals are Box-Muller: within a few ulp of the same formula through libm. */
START_TEST(normals_match_libm) {
    enum { N = 1 << 16 };
    xdev_generator_t g;
    XT_OK(xdev_generator_create(xt_dev(0), 42, &g));
    void *d = rt_dalloc(xt_dev(0), N * 8);
    uint32_t *w = malloc(N * 4 * sizeof *w);
    for (uint64_t b = 0; b < N; b++)
        xdev_philox_block(42, b, w + 4 * b);
    float *hf = malloc(N * 4);
    XT_OK(xdev_rng_normal(g, XDEV_DTYPE_F32, d, N, 0.0, 1.0, NULL));
    rt_fetch(hf, d, N * 4);
    double worst = 0;
    for (size_t i = 0; i < N; i += 2) {
        double u1 = (double)((float)w[i] * 0x1p-32f + 0x1p-33f), th = 2 * M_PI * w[i + 1] * 0x1p-32;
        double r = sqrt(-2 * log(u1));
        worst = fmax(worst, fmax(fabs(hf[i] - r * cos(th)), fabs(hf[i + 1] - r * sin(th))));
    }
    ck_assert_msg(worst < 2e-6, "f32 normals differ from libm Box-Muller by %g", worst);
    double *hd = malloc(N * 8);
    XT_OK(xdev_generator_set_offset(g, 0));
    XT_OK(xdev_rng_normal(g, XDEV_DTYPE_F64, d, N, 0.0, 1.0, NULL));
    rt_fetch(hd, d, N * 8);
    worst = 0;
    for (size_t i = 0; i < N; i += 2) {
        const uint32_t *b = w + 2 * i;
        uint64_t k = ((uint64_t)b[0] << 21) | (b[1] >> 11);
        double u1 = ldexp((double)(k + 1), -53);
        double th = 2 * M_PI * ldexp((double)((((uint64_t)b[2] << 32) | b[3]) >> 11), -53);
        double r = sqrt(-2 * log(u1));
        worst = fmax(worst, fmax(fabs(hd[i] - r * cos(th)), fabs(hd[i + 1] - r * sin(th))));
    }
    ck_assert_msg(worst < 1e-13, "f64 normals differ from libm Box-Muller by %g", worst);
    free(w), free(hf), free(hd);
    XT_OK(xdev_free(d));
    XT_OK(xdev_generator_destroy(g));
}
END_TEST

/* One fill of n elements = the same total split into 2 or 7 calls, at any
 * element counts (odd ones, mid-pair for normals), through the default
 * generator and an explicit one. */
START_TEST(split_invariance) {
    enum { N = 10007 };
    static const size_t parts2[] = {4999, N - 4999};
    static const size_t parts7[] = {1, 2, 3, 1024, 5, 777, N - 1 - 2 - 3 - 1024 - 5 - 777};
    for (int k = 0; k < RT_FILLS; k++) {
        const rt_fill_t *f = &rt_fills[k];
        size_t es = rt_esize(f);
        char *d = rt_dalloc(xt_dev(0), N * es);
        char *one = malloc(N * es), *two = malloc(N * es), *seven = malloc(N * es);
        for (int explicit_gen = 0; explicit_gen < 2; explicit_gen++) {
            xdev_generator_t g = NULL;
            if (explicit_gen) XT_OK(xdev_generator_create(xt_dev(0), 777, &g));
            char *outs[3] = {one, two, seven};
            const size_t *plans[3] = {(const size_t[]){N}, parts2, parts7};
            const int counts[3] = {1, 2, 7};
            for (int p = 0; p < 3; p++) {
                if (g)
                    XT_OK(xdev_generator_manual_seed(g, 777));
                else
                    XT_OK(xdev_manual_seed(777));
                size_t at = 0;
                for (int c = 0; c < counts[p]; c++) {
                    XT_OK(rt_fill(g, f, d + at * es, plans[p][c], NULL));
                    at += plans[p][c];
                }
                ck_assert_uint_eq(at, N);
                rt_fetch(outs[p], d, N * es);
            }
            expect_same(f, two, one, N, explicit_gen ? "2 calls, generator" : "2 calls, default");
            expect_same(f, seven, one, N, explicit_gen ? "7 calls, generator" : "7 calls, default");
            if (g) XT_OK(xdev_generator_destroy(g));
        }
        XT_OK(xdev_free(d));
        free(one), free(two), free(seven);
    }
}
END_TEST

/* ------------------------------------------------------------- statistics */

/* Chi-square of 64 equiprobable bins, bins[i] counts, n samples. */
static double chi2_64(const size_t *bins, size_t n) {
    double e = (double)n / 64, c = 0;
    for (int i = 0; i < 64; i++)
        c += ((double)bins[i] - e) * ((double)bins[i] - e) / e;
    return c;
}

/* 63 degrees of freedom: mean 63, sd 11.2; 130 is a 6-sigma bound. */
#define CHI2_MAX 130.0

static void moments(const double *x, size_t n, double *mean, double *var) {
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        s2 += (x[i] - *mean) * (x[i] - *mean);
    *var = s2 / (double)(n - 1);
}

/* Mean, variance and a 64-bin chi-square of each fill, fixed seeds; the
 * tolerances are about 6 standard errors (2^20 samples, fewer under sanitizers). */
START_TEST(statistics) {
    const size_t N = (size_t)xt_iters(1 << 20, 1 << 15); /* scaled under sanitizers */
    const double sn = sqrt((double)N);
    void *d = rt_dalloc(xt_dev(0), N * 8);
    void *h = malloc(N * 8);
    double *x = malloc(N * sizeof *x);
    for (int k = 0; k < RT_FILLS; k++) {
        const rt_fill_t *f = &rt_fills[k];
        xdev_generator_t g;
        XT_OK(xdev_generator_create(xt_dev(0), 1000 + (uint64_t)k, &g));
        XT_OK(rt_fill(g, f, d, N, NULL));
        rt_fetch(h, d, N * rt_esize(f));
        XT_OK(xdev_generator_destroy(g));
        size_t bins[64] = {0};
        double lo = 0, hi = 1, want_mean = 0.5, want_var = 1.0 / 12, mean, var;
        for (size_t i = 0; i < N; i++) {
            double v = f->format == XDEV_RNG_FORMAT_F32   ? ((float *)h)[i]
                       : f->format == XDEV_RNG_FORMAT_F64 ? ((double *)h)[i]
                       : f->format == XDEV_RNG_FORMAT_I32 ? ((int32_t *)h)[i]
                                                          : (double)((int64_t *)h)[i];
            x[i] = v;
            double u; /* v mapped to [0, 1) for the bins */
            if (f->kind == XDEV_RNG_FILL_NORMAL)
                u = 0.5 * erfc(-((v - MEAN) / STD) / sqrt(2.0));
            else if (f->format == XDEV_RNG_FORMAT_I32)
                u = (v - I32_LOW) / ((double)I32_HIGH - I32_LOW);
            else if (f->format == XDEV_RNG_FORMAT_I64)
                u = (v - (double)I64_LOW) / ((double)I64_HIGH - (double)I64_LOW);
            else
                u = v;
            int b = (int)(u * 64);
            bins[b < 0 ? 0 : b > 63 ? 63 : b]++;
            if (f->kind == XDEV_RNG_FILL_UNIFORM) ck_assert(v >= 0.0 && v < 1.0);
            if (f->format == XDEV_RNG_FORMAT_I32) ck_assert(v >= I32_LOW && v < I32_HIGH);
            if (f->format == XDEV_RNG_FORMAT_I64)
                ck_assert(((int64_t *)h)[i] >= I64_LOW && ((int64_t *)h)[i] < I64_HIGH);
            if (f->kind == XDEV_RNG_FILL_BERNOULLI) ck_assert(v == 0.0 || v == 1.0);
        }
        moments(x, N, &mean, &var);
        if (f->kind == XDEV_RNG_FILL_NORMAL) want_mean = MEAN, want_var = STD * STD;
        if (f->format == XDEV_RNG_FORMAT_I32) lo = I32_LOW, hi = I32_HIGH;
        if (f->format == XDEV_RNG_FORMAT_I64) lo = (double)I64_LOW, hi = (double)I64_HIGH;
        if (f->kind == XDEV_RNG_FILL_INTEGERS)
            want_mean = (lo + hi - 1) / 2, want_var = (hi - lo) * (hi - lo) / 12;
        if (f->kind == XDEV_RNG_FILL_BERNOULLI) want_mean = PROB, want_var = PROB * (1 - PROB);
        double sd = sqrt(want_var);
        ck_assert_msg(fabs(mean - want_mean) < 6 * sd / sn, "%s: mean %.6g, expected %.6g", f->name,
                      mean, want_mean);
        /* var of the sample variance ~ (mu4 - sigma^4) / n <= 2 sigma^4 / n here */
        ck_assert_msg(fabs(var - want_var) < 6 * want_var * sqrt(2.0) / sn,
                      "%s: variance %.6g, expected %.6g", f->name, var, want_var);
        if (f->kind != XDEV_RNG_FILL_BERNOULLI) {
            double c = chi2_64(bins, N);
            ck_assert_msg(c < CHI2_MAX, "%s: chi-square %.1f over 64 bins (limit %.0f)", f->name, c,
                          CHI2_MAX);
        }
    }
    /* Bernoulli's edges: p = 0 and p = 1 are exact. */
    float *m = h;
    XT_OK(xdev_rng_bernoulli(NULL, d, 4096, 0.0, NULL));
    rt_fetch(m, d, 4096 * 4);
    for (int i = 0; i < 4096; i++)
        ck_assert(m[i] == 0.0f);
    XT_OK(xdev_rng_bernoulli(NULL, d, 4096, 1.0, NULL));
    rt_fetch(m, d, 4096 * 4);
    for (int i = 0; i < 4096; i++)
        ck_assert(m[i] == 1.0f);
    /* The widest ranges: every int32, and int64 [INT64_MIN, INT64_MAX). */
    XT_OK(xdev_rng_integers(NULL, XDEV_RNG_INT64, d, 4096, INT64_MIN, INT64_MAX, NULL));
    int32_t *i32 = h;
    XT_OK(
        xdev_rng_integers(NULL, XDEV_RNG_INT32, d, 4096, INT32_MIN, (int64_t)INT32_MAX + 1, NULL));
    rt_fetch(i32, d, 4096 * 4);
    int negative = 0;
    for (int i = 0; i < 4096; i++)
        negative += i32[i] < 0;
    ck_assert_msg(negative > 1800 && negative < 2300, "%d of 4096 negative", negative);
    free(x), free(h);
    XT_OK(xdev_free(d));
}
END_TEST

void rt_add_api_tests(TCase *tc); /* test_rng_api.c */
void rt_add_isa_test(TCase *tc);

int main(int argc, char **argv) {
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("rng");
    tcase_add_checked_fixture(tc, xt_reset_state, NULL);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, philox_known_answers);
    tcase_add_test(tc, reference_and_cross_backend_identity);
    tcase_add_test(tc, large_fills_match_reference);
    tcase_add_test(tc, unit_std_normals_match_reference);
    tcase_add_test(tc, normals_match_libm);
    tcase_add_test(tc, split_invariance);
    tcase_add_test(tc, statistics);
    rt_add_api_tests(tc);
    suite_add_tcase(s, tc);

    Suite *isa = suite_create("isa_bad"); /* XDEV_CPU_RNG_ISA=avx9 */
    tc = tcase_create("isa_bad");
    rt_add_isa_test(tc);
    suite_add_tcase(isa, tc);

    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, isa);
    return xt_run(sr, "rng", argc, argv);
}
