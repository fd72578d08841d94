/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/support/philox.h - the random-number math every backend shares: Philox4x32-10 and
 * the fixed conversions from its 32-bit words to xdev's distributions.
 *
 * One header, compiled as C11 by the CPU backend and the tests and as CUDA
 * (or HIP) device code by the GPU backends, so that every backend produces
 * the same bits. That needs the same IEEE operations in the same order on
 * every side: only +, -, *, /, sqrt and integer<->float conversions, all
 * correctly rounded, no library calls (glibc's and CUDA's logf/sinf differ),
 * and no contraction of a*b+c into an FMA. On the GPU the XDEV_PHILOX_F* / XDEV_PHILOX_D*
 * macros use the __*_rn intrinsics, which the compiler never contracts; on
 * the host the header refuses to compile where GCC would contract.
 *
 * Stream layout (see xdev/rng.h): a generator's stream is the sequence of
 * 32-bit words w[p], p = 0, 1, 2, ...; word p is output p % 4 of
 * Philox4x32-10(counter = {p/4 low, p/4 high, 0, 0}, key = {seed low, seed
 * high}). An element of a fill takes 1 or 2 words (xdev_philox_words_per_element),
 * always inside one 4-word block, so every value is a pure function of
 * (seed, word position). */
#ifndef XDEV_SUPPORT_PHILOX_H
#define XDEV_SUPPORT_PHILOX_H

#include <stdint.h>

/* How the functions are declared; a file may define it first (the CPU
 * backend forces them inline into its vectorised loops). XPH_FN, its
 * deprecated name, is still honoured. */
#ifndef XDEV_PHILOX_FN
#if defined(XPH_FN)
#define XDEV_PHILOX_FN XPH_FN
#elif defined(__CUDACC__) || defined(__HIPCC__)
#define XDEV_PHILOX_FN static inline __host__ __device__
#else
#define XDEV_PHILOX_FN static inline
#endif
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define XDEV_PHILOX_FADD(a, b) __fadd_rn((a), (b))
#define XDEV_PHILOX_FSUB(a, b) __fsub_rn((a), (b))
#define XDEV_PHILOX_FMUL(a, b) __fmul_rn((a), (b))
#define XDEV_PHILOX_FDIV(a, b) __fdiv_rn((a), (b))
#define XDEV_PHILOX_FSQRT(a) __fsqrt_rn(a)
#define XDEV_PHILOX_DADD(a, b) __dadd_rn((a), (b))
#define XDEV_PHILOX_DSUB(a, b) __dsub_rn((a), (b))
#define XDEV_PHILOX_DMUL(a, b) __dmul_rn((a), (b))
#define XDEV_PHILOX_DDIV(a, b) __ddiv_rn((a), (b))
#define XDEV_PHILOX_DSQRT(a) __dsqrt_rn(a)
#define XDEV_PHILOX_U2F(u) __uint2float_rn(u)
#define XDEV_PHILOX_I2F(i) __int2float_rn(i)
#define XDEV_PHILOX_I2D(i) __int2double_rn(i)
#else
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__CUDACC__) && !defined(__HIPCC__) &&                          \
    !defined(__STRICT_ANSI__) && (defined(__FP_FAST_FMA) || defined(__FP_FAST_FMAF))
/* GNU mode defaults to -ffp-contract=fast, which fuses a*b+c where FMA exists. */
#error                                                                                             \
    "xdev/support/philox.h: compile with -std=c11 (ISO mode) so that GCC does not contract a*b+c into FMA"
#endif
#define XDEV_PHILOX_FADD(a, b) ((a) + (b))
#define XDEV_PHILOX_FSUB(a, b) ((a) - (b))
#define XDEV_PHILOX_FMUL(a, b) ((a) * (b))
#define XDEV_PHILOX_FDIV(a, b) ((a) / (b))
#define XDEV_PHILOX_FSQRT(a) __builtin_sqrtf(a)
#define XDEV_PHILOX_DADD(a, b) ((a) + (b))
#define XDEV_PHILOX_DSUB(a, b) ((a) - (b))
#define XDEV_PHILOX_DMUL(a, b) ((a) * (b))
#define XDEV_PHILOX_DDIV(a, b) ((a) / (b))
#define XDEV_PHILOX_DSQRT(a) __builtin_sqrt(a)
#define XDEV_PHILOX_U2F(u) ((float)(u))
#define XDEV_PHILOX_I2F(i) ((float)(i))
#define XDEV_PHILOX_I2D(i) ((double)(i))
#endif

/* ------------------------------------------------------------- Philox4x32-10 */

#define XDEV_PHILOX_M0 0xD2511F53u /* multipliers and Weyl key increments (Salmon et al.) */
#define XDEV_PHILOX_M1 0xCD9E8D57u
#define XDEV_PHILOX_W0 0x9E3779B9u
#define XDEV_PHILOX_W1 0xBB67AE85u

/* Philox4x32 with 10 rounds; the key is bumped before rounds 2..10. */
XDEV_PHILOX_FN void xdev_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                       uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)XDEV_PHILOX_M0 * c0, p1 = (uint64_t)XDEV_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += XDEV_PHILOX_W0;
        k1 += XDEV_PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The 4 words of block b (word positions 4b .. 4b+3) of stream `seed`. */
XDEV_PHILOX_FN void xdev_philox_block(uint64_t seed, uint64_t b, uint32_t out[4]) {
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0u, 0u};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    xdev_philox4x32_10(ctr, key, out);
}

/* ------------------------------------------------------------- layout */

/* Fill kinds and output formats (the values of xdev_rng_fill_desc_t). */
enum {
    XDEV_PHILOX_UNIFORM = 0,
    XDEV_PHILOX_NORMAL = 1,
    XDEV_PHILOX_INTEGERS = 2,
    XDEV_PHILOX_BERNOULLI = 3
};
enum { XDEV_PHILOX_F32 = 0, XDEV_PHILOX_F64 = 1, XDEV_PHILOX_I32 = 2, XDEV_PHILOX_I64 = 3 };

/* Words per element: 2 for the 64-bit formats, else 1. A fill starts at the
 * generator's offset rounded up to a multiple of this, so an element never
 * straddles two blocks. */
XDEV_PHILOX_FN unsigned xdev_philox_words_per_element(int format) {
    return format == XDEV_PHILOX_F64 || format == XDEV_PHILOX_I64 ? 2u : 1u;
}

/* ------------------------------------------------------------- conversions */

/* [0, 1) from the top 24 bits: k * 2^-24 (exact). */
XDEV_PHILOX_FN float xdev_philox_uniform_f32(uint32_t w) {
    return XDEV_PHILOX_FMUL(XDEV_PHILOX_I2F((int32_t)(w >> 8)), 0x1p-24f);
}

/* [0, 1) from 53 bits of two words, k = (w0 << 21) | (w1 >> 11): k * 2^-53,
 * computed exactly from its 27 high and 26 low bits (int32 conversions,
 * which vectorise; a 64-bit one does not before AVX-512). */
XDEV_PHILOX_FN double xdev_philox_uniform_f64(uint32_t w0, uint32_t w1) {
    int32_t hi = (int32_t)(w0 >> 5), lo = (int32_t)(((w0 & 31u) << 21) | (w1 >> 11));
    return XDEV_PHILOX_DADD(XDEV_PHILOX_DMUL(XDEV_PHILOX_I2D(hi), 0x1p-27),
                            XDEV_PHILOX_DMUL(XDEV_PHILOX_I2D(lo), 0x1p-53));
}

/* low + floor(w * range / 2^32) for range in [1, 2^32] (multiply-shift:
 * no rejection, so every element takes exactly one word; the bias is at most
 * range / 2^32 relative). */
XDEV_PHILOX_FN int32_t xdev_philox_int32(uint32_t w, int64_t low, uint64_t range) {
    return (int32_t)(low + (int64_t)(((uint64_t)w * range) >> 32));
}

XDEV_PHILOX_FN uint64_t xdev_philox_mulhi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__)
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
#else
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
#endif
}

/* low + floor(u * range / 2^64), u = w0:w1 (64 bits), range in [1, 2^64). */
XDEV_PHILOX_FN int64_t xdev_philox_int64(uint32_t w0, uint32_t w1, int64_t low, uint64_t range) {
    uint64_t u = ((uint64_t)w0 << 32) | w1;
    return (int64_t)((uint64_t)low + xdev_philox_mulhi64(u, range));
}

/* 1 with probability threshold / 2^32 (threshold in [0, 2^32]). */
XDEV_PHILOX_FN float xdev_philox_bernoulli(uint32_t w, uint64_t threshold) {
    /* (uint64_t)w < threshold, in 32-bit operations (threshold 2^32: always) */
    uint32_t one = (uint32_t)(threshold >> 32) | (uint32_t)(w < (uint32_t)threshold);
    return one ? 1.0f : 0.0f;
}

/* ------------------------------------------------------------- float math
 * Polynomials in float, valid for the arguments Box-Muller gives them: log
 * on normal positive floats, sin/cos on [-pi/4, pi/4]; under 1 ulp (checked
 * against libm over every float in (0, 1] for log). */

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
XDEV_PHILOX_FN float xdev_philox_as_float(uint32_t u) {
    return __uint_as_float(u);
}
XDEV_PHILOX_FN uint32_t xdev_philox_float_bits(float f) {
    return __float_as_uint(f);
}
XDEV_PHILOX_FN double xdev_philox_as_double(uint64_t u) {
    return __longlong_as_double((long long)u);
}
XDEV_PHILOX_FN uint64_t xdev_philox_double_bits(double d) {
    return (uint64_t)__double_as_longlong(d);
}
#else
XDEV_PHILOX_FN float xdev_philox_as_float(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
}
XDEV_PHILOX_FN uint32_t xdev_philox_float_bits(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
}
XDEV_PHILOX_FN double xdev_philox_as_double(uint64_t u) {
    double d;
    __builtin_memcpy(&d, &u, sizeof d);
    return d;
}
XDEV_PHILOX_FN uint64_t xdev_philox_double_bits(double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, sizeof u);
    return u;
}
#endif

/* log(x), x a positive normal float: x = 2^k m, m in [sqrt(2)/2, sqrt(2)),
 * log(x) = k ln2 + log1p(f), f = m - 1, log1p(f) = f + f^2 Q(f) with Q a
 * degree-8 polynomial (Chebyshev fit; no division: under 1 ulp on the range). */
XDEV_PHILOX_FN float xdev_philox_logf(float x) {
    uint32_t ix = xdev_philox_float_bits(x) + (0x3f800000u - 0x3f3504f3u);
    int32_t k = (int32_t)(ix >> 23) - 0x7f;
    float f = XDEV_PHILOX_FSUB(xdev_philox_as_float((ix & 0x007fffffu) + 0x3f3504f3u), 1.0f);
    float q = -0x1.3a4ff6p-4f;
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), 0x1.048f72p-3f);
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), -0x1.0cda32p-3f);
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), 0x1.22ea5ap-3f);
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), -0x1.548382p-3f);
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), 0x1.99a012p-3f);
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), -0x1.00020cp-2f);
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), 0x1.555554p-2f);
    q = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(q, f), -0x1.fffffep-2f);
    float dk = XDEV_PHILOX_I2F(k);
    /* k ln2_hi is exact (ln2_hi = 355/512, |k| < 2^15); ln2_lo = ln2 - ln2_hi */
    float tail = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(XDEV_PHILOX_FMUL(f, f), q),
                                  XDEV_PHILOX_FMUL(dk, -2.12194440e-4f));
    return XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(dk, 0.693359375f), XDEV_PHILOX_FADD(f, tail));
}

/* sin(x), cos(x) for |x| <= pi/4. */
XDEV_PHILOX_FN float xdev_philox_sinf_kernel(float x) {
    float z = XDEV_PHILOX_FMUL(x, x);
    float p = XDEV_PHILOX_FADD(
        XDEV_PHILOX_FMUL(XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(-1.9515295891e-4f, z), 8.3321608736e-3f),
                         z),
        -1.6666654611e-1f);
    return XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(XDEV_PHILOX_FMUL(p, z), x), x);
}
XDEV_PHILOX_FN float xdev_philox_cosf_kernel(float x) {
    float z = XDEV_PHILOX_FMUL(x, x);
    float p = XDEV_PHILOX_FADD(
        XDEV_PHILOX_FMUL(
            XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(2.443315711809948e-5f, z), -1.388731625493765e-3f),
            z),
        4.166664568298827e-2f);
    return XDEV_PHILOX_FADD(
        XDEV_PHILOX_FSUB(XDEV_PHILOX_FMUL(XDEV_PHILOX_FMUL(p, z), z), XDEV_PHILOX_FMUL(0.5f, z)),
        1.0f);
}

/* ------------------------------------------------------------- double math */

/* log(x), x a positive normal double (fdlibm's e_log.c scheme). */
XDEV_PHILOX_FN double xdev_philox_log(double x) {
    uint64_t ix = xdev_philox_double_bits(x);
    uint32_t hx = (uint32_t)(ix >> 32) + (0x3ff00000u - 0x3fe6a09eu);
    int32_t k = (int32_t)(hx >> 20) - 0x3ff;
    hx = (hx & 0x000fffffu) + 0x3fe6a09eu;
    double m = xdev_philox_as_double(((uint64_t)hx << 32) | (ix & 0xffffffffu));
    double f = XDEV_PHILOX_DSUB(m, 1.0);
    double hfsq = XDEV_PHILOX_DMUL(XDEV_PHILOX_DMUL(0.5, f), f);
    double s = XDEV_PHILOX_DDIV(f, XDEV_PHILOX_DADD(2.0, f));
    double z = XDEV_PHILOX_DMUL(s, s), w = XDEV_PHILOX_DMUL(z, z);
    double t1 = XDEV_PHILOX_DMUL(
        w,
        XDEV_PHILOX_DADD(
            3.999999999940941908e-01,
            XDEV_PHILOX_DMUL(w, XDEV_PHILOX_DADD(2.222219843214978396e-01,
                                                 XDEV_PHILOX_DMUL(w, 1.531383769920937332e-01)))));
    double t2 = XDEV_PHILOX_DMUL(
        z,
        XDEV_PHILOX_DADD(
            6.666666666666735130e-01,
            XDEV_PHILOX_DMUL(
                w, XDEV_PHILOX_DADD(
                       2.857142874366239149e-01,
                       XDEV_PHILOX_DMUL(
                           w, XDEV_PHILOX_DADD(1.818357216161805012e-01,
                                               XDEV_PHILOX_DMUL(w, 1.479819860511658591e-01)))))));
    double r = XDEV_PHILOX_DADD(t2, t1);
    double dk = XDEV_PHILOX_I2D(k);
    double lo = XDEV_PHILOX_DADD(XDEV_PHILOX_DMUL(s, XDEV_PHILOX_DADD(hfsq, r)),
                                 XDEV_PHILOX_DMUL(dk, 1.90821492927058770002e-10));
    return XDEV_PHILOX_DADD(XDEV_PHILOX_DADD(XDEV_PHILOX_DSUB(lo, hfsq), f),
                            XDEV_PHILOX_DMUL(dk, 6.93147180369123816490e-01));
}

/* sin(x), cos(x) for |x| <= pi/4 (fdlibm's __kernel_sin/__kernel_cos, tail 0). */
XDEV_PHILOX_FN double xdev_philox_sin_kernel(double x) {
    double z = XDEV_PHILOX_DMUL(x, x), v = XDEV_PHILOX_DMUL(z, x);
    double r = XDEV_PHILOX_DADD(
        8.33333333332248946124e-03,
        XDEV_PHILOX_DMUL(
            z, XDEV_PHILOX_DADD(
                   -1.98412698298579493134e-04,
                   XDEV_PHILOX_DMUL(
                       z, XDEV_PHILOX_DADD(
                              2.75573137070700676789e-06,
                              XDEV_PHILOX_DMUL(
                                  z, XDEV_PHILOX_DADD(
                                         -2.50507602534068634195e-08,
                                         XDEV_PHILOX_DMUL(z, 1.58969099521155010221e-10))))))));
    return XDEV_PHILOX_DADD(x, XDEV_PHILOX_DMUL(v, XDEV_PHILOX_DADD(-1.66666666666666324348e-01,
                                                                    XDEV_PHILOX_DMUL(z, r))));
}
XDEV_PHILOX_FN double xdev_philox_cos_kernel(double x) {
    double z = XDEV_PHILOX_DMUL(x, x), w = XDEV_PHILOX_DMUL(z, z);
    double r = XDEV_PHILOX_DADD(
        XDEV_PHILOX_DMUL(
            z, XDEV_PHILOX_DADD(
                   4.16666666666666019037e-02,
                   XDEV_PHILOX_DMUL(
                       z, XDEV_PHILOX_DADD(-1.38888888888741095749e-03,
                                           XDEV_PHILOX_DMUL(z, 2.48015872894767294178e-05))))),
        XDEV_PHILOX_DMUL(
            XDEV_PHILOX_DMUL(w, w),
            XDEV_PHILOX_DADD(
                -2.75573143513906633035e-07,
                XDEV_PHILOX_DMUL(
                    z, XDEV_PHILOX_DADD(2.08757232129817482790e-09,
                                        XDEV_PHILOX_DMUL(z, -1.13596475577881948265e-11))))));
    double hz = XDEV_PHILOX_DMUL(0.5, z), one_hz = XDEV_PHILOX_DSUB(1.0, hz);
    return XDEV_PHILOX_DADD(one_hz,
                            XDEV_PHILOX_DADD(XDEV_PHILOX_DSUB(XDEV_PHILOX_DSUB(1.0, one_hz), hz),
                                             XDEV_PHILOX_DMUL(z, r)));
}

/* ------------------------------------------------------------- Box-Muller
 * A pair of normals from two uniforms: u1 in (0, 1] (so log(u1) is finite)
 * and an angle theta = 2 pi a / 2^bits taken from integer bits. The angle is
 * reduced exactly in integers: q = the nearest quarter turn, d = the rest
 * (within +-1/8 turn); then (sin, cos) of theta are (sin, cos) of
 * x = d * 2pi/2^bits rotated by q quarter turns.
 * z0 = r cos(theta), z1 = r sin(theta), r = sqrt(-2 log u1). */

/* Words a (radius) and b (angle): z0 is the element at the even position. */
XDEV_PHILOX_FN void xdev_philox_normal_f32_pair(uint32_t a, uint32_t b, float *z0, float *z1) {
    /* u1 = a 2^-32 + 2^-33 in (0, 1] (curand's mapping) */
    float u1 = XDEV_PHILOX_FADD(XDEV_PHILOX_FMUL(XDEV_PHILOX_U2F(a), 0x1p-32f), 0x1p-33f);
    float r = XDEV_PHILOX_FSQRT(XDEV_PHILOX_FMUL(-2.0f, xdev_philox_logf(u1)));
    uint32_t q = (b + 0x20000000u) >> 30;
    int32_t d = (int32_t)(b - (q << 30));
    float x = XDEV_PHILOX_FMUL(XDEV_PHILOX_I2F(d), 1.46291807926715968e-09f); /* 2 pi / 2^32 */
    float s = xdev_philox_sinf_kernel(x), c = xdev_philox_cosf_kernel(x);
    uint32_t sb = xdev_philox_float_bits(s), cb = xdev_philox_float_bits(c);
    uint32_t swap = 0u - (q & 1u);               /* odd quarter: sin <-> cos */
    uint32_t sin_b = (sb & ~swap) | (cb & swap); /* sin(theta) up to sign */
    uint32_t cos_b = (cb & ~swap) | (sb & swap); /* cos(theta) up to sign */
    uint32_t sin_neg = (q & 2u) << 30;           /* q = 2, 3 */
    uint32_t cos_neg = ((q + 1u) & 2u) << 30;    /* q = 1, 2 */
    *z0 = XDEV_PHILOX_FMUL(r, xdev_philox_as_float(cos_b ^ cos_neg));
    *z1 = XDEV_PHILOX_FMUL(r, xdev_philox_as_float(sin_b ^ sin_neg));
}

/* One 4-word block: w0:w1 -> u1 = (k + 1) 2^-53 in (0, 1] (k as in
 * xdev_philox_uniform_f64), w2:w3 -> the angle from the 53 high bits of w2:w3. All
 * conversions are exact int32 ones. */
XDEV_PHILOX_FN void xdev_philox_normal_f64_pair(const uint32_t w[4], double *z0, double *z1) {
    int32_t khi = (int32_t)(w[0] >> 5), klo = (int32_t)(((w[0] & 31u) << 21) | (w[1] >> 11));
    double u1 = XDEV_PHILOX_DADD(XDEV_PHILOX_DMUL(XDEV_PHILOX_I2D(khi), 0x1p-27),
                                 XDEV_PHILOX_DMUL(XDEV_PHILOX_I2D(klo + 1), 0x1p-53));
    double r = XDEV_PHILOX_DSQRT(XDEV_PHILOX_DMUL(-2.0, xdev_philox_log(u1)));
    uint32_t q = (w[2] + 0x20000000u) >> 30;
    int32_t dhi = (int32_t)(w[2] - (q << 30)); /* angle - q/4 turn = (dhi 2^21 + dlo) 2^-53 turn */
    int32_t dlo = (int32_t)(w[3] >> 11);
    double d = XDEV_PHILOX_DADD(XDEV_PHILOX_DMUL(XDEV_PHILOX_I2D(dhi), 0x1p21),
                                XDEV_PHILOX_I2D(dlo)); /* exact, |d| <= 2^50 */
    double x = XDEV_PHILOX_DMUL(d, 6.283185307179586232 * 0x1p-53);
    double s = xdev_philox_sin_kernel(x), c = xdev_philox_cos_kernel(x);
    uint64_t sb = xdev_philox_double_bits(s), cb = xdev_philox_double_bits(c);
    uint64_t swap = 0u - (uint64_t)(q & 1u);
    uint64_t sin_b = (sb & ~swap) | (cb & swap);
    uint64_t cos_b = (cb & ~swap) | (sb & swap);
    uint64_t sin_neg = (uint64_t)(q & 2u) << 62;
    uint64_t cos_neg = (uint64_t)((q + 1u) & 2u) << 62;
    *z0 = XDEV_PHILOX_DMUL(r, xdev_philox_as_double(cos_b ^ cos_neg));
    *z1 = XDEV_PHILOX_DMUL(r, xdev_philox_as_double(sin_b ^ sin_neg));
}

/* mean + std * z in the output's precision. */
XDEV_PHILOX_FN float xdev_philox_affine_f32(float z, float mean, float std) {
    return XDEV_PHILOX_FADD(mean, XDEV_PHILOX_FMUL(std, z));
}
XDEV_PHILOX_FN double xdev_philox_affine_f64(double z, double mean, double std) {
    return XDEV_PHILOX_DADD(mean, XDEV_PHILOX_DMUL(std, z));
}

/* ------------------------------------------------------------- one element
 * Element at word position p (p % words_per_element == 0) from the words of
 * its block, w = words 4(p/4) .. 4(p/4)+3: the reference every backend's
 * fast path must equal bit for bit. Parameters as in xdev_rng_fill_desc_t. */
typedef struct xdev_philox_params {
    float mean_f, std_f;
    double mean, std;
    int64_t low;
    uint64_t range;     /* integers */
    uint64_t threshold; /* bernoulli */
} xdev_philox_params_t;

/* Writes the element's bytes (4 or 8) to out. */
XDEV_PHILOX_FN void xdev_philox_element(int kind, int format, const uint32_t w[4], unsigned j,
                                        const xdev_philox_params_t *pr, void *out) {
    switch (kind) {
    case XDEV_PHILOX_UNIFORM:
        if (format == XDEV_PHILOX_F32)
            *(float *)out = xdev_philox_uniform_f32(w[j]);
        else
            *(double *)out = xdev_philox_uniform_f64(w[j], w[j + 1]);
        break;
    case XDEV_PHILOX_NORMAL:
        if (format == XDEV_PHILOX_F32) {
            float z0, z1;
            xdev_philox_normal_f32_pair(w[j & 2u], w[j | 1u], &z0, &z1);
            *(float *)out = xdev_philox_affine_f32(j & 1u ? z1 : z0, pr->mean_f, pr->std_f);
        } else {
            double z0, z1;
            xdev_philox_normal_f64_pair(w, &z0, &z1);
            *(double *)out = xdev_philox_affine_f64(j & 2u ? z1 : z0, pr->mean, pr->std);
        }
        break;
    case XDEV_PHILOX_INTEGERS:
        if (format == XDEV_PHILOX_I32)
            *(int32_t *)out = xdev_philox_int32(w[j], pr->low, pr->range);
        else
            *(int64_t *)out = xdev_philox_int64(w[j], w[j + 1], pr->low, pr->range);
        break;
    default:
        *(float *)out = xdev_philox_bernoulli(w[j], pr->threshold);
        break;
    }
}

/* ------------------------------------------------------------- deprecated names
 * The names before they moved into xdev's namespace (xph_* -> xdev_philox_*,
 * XPH_* -> XDEV_PHILOX_*, xph_philox4x32_10 -> xdev_philox4x32_10), kept as
 * macros until the next major version. Do not use them in new code. */
#ifndef XPH_FN
#define XPH_FN XDEV_PHILOX_FN
#endif
#define xph_affine_f32 xdev_philox_affine_f32
#define xph_affine_f64 xdev_philox_affine_f64
#define xph_as_double xdev_philox_as_double
#define xph_as_float xdev_philox_as_float
#define xph_bernoulli xdev_philox_bernoulli
#define xph_block xdev_philox_block
#define xph_cos_kernel xdev_philox_cos_kernel
#define xph_cosf_kernel xdev_philox_cosf_kernel
#define xph_double_bits xdev_philox_double_bits
#define xph_element xdev_philox_element
#define xph_float_bits xdev_philox_float_bits
#define xph_int32 xdev_philox_int32
#define xph_int64 xdev_philox_int64
#define xph_log xdev_philox_log
#define xph_logf xdev_philox_logf
#define xph_mulhi64 xdev_philox_mulhi64
#define xph_normal_f32_pair xdev_philox_normal_f32_pair
#define xph_normal_f64_pair xdev_philox_normal_f64_pair
#define xph_params xdev_philox_params
#define xph_params_t xdev_philox_params_t
#define xph_philox4x32_10 xdev_philox4x32_10
#define xph_sin_kernel xdev_philox_sin_kernel
#define xph_sinf_kernel xdev_philox_sinf_kernel
#define xph_uniform_f32 xdev_philox_uniform_f32
#define xph_uniform_f64 xdev_philox_uniform_f64
#define xph_words_per_element xdev_philox_words_per_element
#define XPH_BERNOULLI XDEV_PHILOX_BERNOULLI
#define XPH_DADD XDEV_PHILOX_DADD
#define XPH_DDIV XDEV_PHILOX_DDIV
#define XPH_DMUL XDEV_PHILOX_DMUL
#define XPH_DSQRT XDEV_PHILOX_DSQRT
#define XPH_DSUB XDEV_PHILOX_DSUB
#define XPH_F32 XDEV_PHILOX_F32
#define XPH_F64 XDEV_PHILOX_F64
#define XPH_FADD XDEV_PHILOX_FADD
#define XPH_FDIV XDEV_PHILOX_FDIV
#define XPH_FMUL XDEV_PHILOX_FMUL
#define XPH_FSQRT XDEV_PHILOX_FSQRT
#define XPH_FSUB XDEV_PHILOX_FSUB
#define XPH_I2D XDEV_PHILOX_I2D
#define XPH_I2F XDEV_PHILOX_I2F
#define XPH_I32 XDEV_PHILOX_I32
#define XPH_I64 XDEV_PHILOX_I64
#define XPH_INTEGERS XDEV_PHILOX_INTEGERS
#define XPH_M0 XDEV_PHILOX_M0
#define XPH_M1 XDEV_PHILOX_M1
#define XPH_NORMAL XDEV_PHILOX_NORMAL
#define XPH_U2F XDEV_PHILOX_U2F
#define XPH_UNIFORM XDEV_PHILOX_UNIFORM
#define XPH_W0 XDEV_PHILOX_W0
#define XPH_W1 XDEV_PHILOX_W1

#endif
