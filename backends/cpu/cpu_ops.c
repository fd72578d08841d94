/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_ops.c - the CPU backend's typed fills and conversions (the
 * ops table), run on the stream's worker in stream order like every other
 * enqueued job; a fill's stores are cpu_fill.c's.
 *
 * Every conversion gives the bits of xdev/support/convert.h's xdev_cvt_convert1,
 * the definition the GPU kernels compile too. The common pairs run as plain
 * loops the compiler vectorises (the hardware conversions give the same bits
 * when the thread's SSE control word is the default: round to nearest, no
 * flush-to-zero; checked per job, as a program may have changed it); every
 * other pair, and any pair under a changed control word, runs element by
 * element through xdev_cvt_convert1. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "cpu_internal.h"
#include "cpu_math.h"
#include "xdev/support/convert.h"
#include "xdev/support/half.h"

typedef struct ops_job {
    int device;
    void *dst;
    const void *src;
    size_t count;
    xdev_dtype_t dst_dtype, src_dtype;
    size_t pattern_size;
    unsigned char pattern[16];
} ops_job_t;

/* ------------------------------------------------------------ convert */

/* Does the hardware convert as convert.h does on this thread now? */
static bool default_fp_mode(void) {
#if defined(__x86_64__) || defined(__i386__)
    /* rounding control (bits 13-14) = nearest, FTZ (15) and DAZ (6) off */
    return (_mm_getcsr() & 0xe040u) == 0;
#else
    return false;
#endif
}

/* Toward zero, saturating, NaN -> 0 (convert.h's rule), written as selects
 * the compiler vectorises: the cast where the value is in range (NaN is
 * not), then the two ends. */
static int32_t f64_to_i32(double x) {
    int32_t r = (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : 0;
    r = x >= 2147483648.0 ? INT32_MAX : r;
    return x <= -2147483649.0 ? INT32_MIN : r;
}

static int32_t f32_to_i32(float x) {
    int32_t r = (x >= -2147483648.0f && x < 2147483648.0f) ? (int32_t)x : 0;
    r = x >= 2147483648.0f ? INT32_MAX : r;
    return x < -2147483648.0f ? INT32_MIN : r;
}

#if defined(__x86_64__)
/* f32 <-> f16 with the F16C instructions (every AVX2 CPU has them), 8 lanes
 * at a time: round to nearest even with an explicit rounding mode (MXCSR's
 * is not consulted), NaN made quiet keeping the payload's top bits,
 * subnormals exact - convert.h's rules bit for bit (test_ops checks every
 * f16 pattern and f32's specials against it). Tails go through half.h. */
__attribute__((target("avx,f16c"))) static void f32_to_f16_x8(const float *src, uint16_t *dst,
                                                              size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), h);
    }
    for (; i < n; i++)
        dst[i] = xdev_f32_to_f16(src[i]);
}

__attribute__((target("avx,f16c"))) static void f16_to_f32_x8(const uint16_t *src, float *dst,
                                                              size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        __m256 f = _mm256_cvtph_ps(h);
        /* the hardware keeps a signalling NaN signalling: quiet it as convert.h does */
        __m256i bits = _mm256_castps_si256(f);
        __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
        bits = _mm256_castps_si256(
            _mm256_or_ps(_mm256_castsi256_ps(bits),
                         _mm256_and_ps(nan, _mm256_castsi256_ps(_mm256_set1_epi32(0x400000)))));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(bits));
    }
    for (; i < n; i++) {
        uint16_t h = src[i];
        uint32_t x;
        float f = xdev_f16_to_f32(h);
        memcpy(&x, &f, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) x |= 0x400000u;
        memcpy(&dst[i], &x, 4);
    }
}

/* f32 -> bf16 with AVX2 integer lanes: half.h's rounding (add 0x7fff and
 * the kept lsb, keep the high half) and its NaN rule (high half | 0x40),
 * chosen per lane; 8 results packed to 16 bits. */
__attribute__((target("avx2"))) static void f32_to_bf16_x8(const float *src, uint16_t *dst,
                                                           size_t n) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const __m256i quiet = _mm256_set1_epi32(0x40);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, bias), lsb), 16);
        __m256i q = _mm256_or_si256(_mm256_srli_epi32(x, 16), quiet);
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
        r = _mm256_blendv_epi8(r, q, nan);
        __m256i packed = _mm256_packus_epi32(r, r);      /* per 128-bit lane: 4 results, twice */
        packed = _mm256_permute4x64_epi64(packed, 0x08); /* lanes' low halves together */
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_castsi256_si128(packed));
    }
    for (; i < n; i++)
        dst[i] = xdev_f32_to_bf16(src[i]);
}

/* f32_to_bf16_x8's arithmetic on 16 lanes with AVX-512F: the NaN choice
 * is a mask, and the narrowing store (vpmovdw) packs the 16 results. */
__attribute__((target("avx512f"))) static void f32_to_bf16_x16(const float *src, uint16_t *dst,
                                                               size_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
    const __m512i quiet = _mm512_set1_epi32(0x40);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i x = _mm512_loadu_si512((const void *)(src + i));
        __m512i hi = _mm512_srli_epi32(x, 16);
        __m512i r = _mm512_srli_epi32(
            _mm512_add_epi32(_mm512_add_epi32(x, bias), _mm512_and_si512(hi, one)), 16);
        __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, abs_mask), inf);
        r = _mm512_mask_or_epi32(r, nan, hi, quiet); /* NaN lanes: high half | 0x40 */
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm512_cvtepi32_epi16(r));
    }
    for (; i < n; i++)
        dst[i] = xdev_f32_to_bf16(src[i]);
}

/* f32 -> i32 (convert.h: toward zero, NaN -> 0, saturating) with AVX2:
 * the truncating conversion gives INT32_MIN for NaN and anything out of
 * range, which is right below the range; NaN and the top are fixed by
 * masks. Truncation does not consult MXCSR's rounding mode. */
__attribute__((target("avx2"))) static void f32_to_i32_x8(const float *src, int32_t *dst,
                                                          size_t n) {
    const __m256 top = _mm256_set1_ps(2147483648.0f);
    const __m256i max = _mm256_set1_epi32(INT32_MAX);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(src + i);
        __m256i r = _mm256_cvttps_epi32(x);
        __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        __m256i big = _mm256_castps_si256(_mm256_cmp_ps(x, top, _CMP_GE_OQ));
        r = _mm256_blendv_epi8(r, max, big);
        r = _mm256_andnot_si256(nan, r);
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), r);
    }
    for (; i < n; i++)
        dst[i] = f32_to_i32(src[i]);
}

/* i64 -> f64 (convert.h: round to nearest, ties to even) with AVX2, which
 * has no such conversion: the high 32 bits (signed) and the low 32 bits
 * (unsigned) convert exactly, high * 2^32 is exact, and their sum rounds
 * once - the correctly rounded value, in the default rounding mode (the
 * caller checked it; C11 mode keeps the multiply and add apart). */
__attribute__((target("avx2"))) static void i64_to_f64_x4(const int64_t *src, double *dst,
                                                          size_t n) {
    const __m256d two32 = _mm256_set1_pd(4294967296.0), two31 = _mm256_set1_pd(2147483648.0);
    const __m256i odd_even = _mm256_setr_epi32(1, 3, 5, 7, 0, 2, 4, 6);
    const __m128i flip = _mm_set1_epi32((int)0x80000000u);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        __m256i words = _mm256_permutevar8x32_epi32(x, odd_even);
        __m128i hi = _mm256_castsi256_si128(words);      /* high halves, signed */
        __m128i lo = _mm256_extracti128_si256(words, 1); /* low halves, unsigned */
        __m256d hd = _mm256_cvtepi32_pd(hi);
        __m256d ld = _mm256_add_pd(_mm256_cvtepi32_pd(_mm_xor_si128(lo, flip)), two31);
        _mm256_storeu_pd(dst + i, _mm256_add_pd(_mm256_mul_pd(hd, two32), ld));
    }
    for (; i < n; i++)
        xdev_cvt_convert1(dst + i, (int)XDEV_DTYPE_F64, src + i, (int)XDEV_DTYPE_I64);
}

/* f64 -> f16 (convert.h: one rounding, to nearest even, from the exact
 * value) in two hardware steps that round once in effect: f64 -> f32
 * rounded to odd (truncated, then the last bit set where the truncation
 * was inexact), then f32 -> f16 to nearest even. f32 keeps 13 bits beyond
 * f16's 11, more than the 2 that round-to-odd needs, so the result is the
 * direct rounding's; NaN keeps the top payload bits, made quiet, both ways.
 * The truncation sets MXCSR's rounding to zero for the loop only (the caller
 * checked the mode is the default one). */
__attribute__((target("avx,f16c"))) static void f64_to_f16_x4(const double *src, uint16_t *dst,
                                                              size_t n) {
    unsigned int csr = _mm_getcsr();
    _mm_setcsr((csr & ~0x6000u) | 0x6000u); /* round toward zero */
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d x = _mm256_loadu_pd(src + i);
        __m128 t = _mm256_cvtpd_ps(x); /* truncated */
        __m256d back = _mm256_cvtps_pd(t);
        /* inexact (and not NaN: NaN != NaN, but its conversion is exact in spirit) */
        __m256d ne = _mm256_cmp_pd(back, x, _CMP_NEQ_OQ);
        __m128i odd = _mm_and_si128(_mm256_cvtpd_epi32(_mm256_and_pd(ne, _mm256_set1_pd(1.0))),
                                    _mm_set1_epi32(1));
        __m128i bits = _mm_or_si128(_mm_castps_si128(t), odd);
        __m128i h =
            _mm_cvtps_ph(_mm_castsi128_ps(bits), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storel_epi64((__m128i *)(void *)(dst + i), h);
    }
    _mm_setcsr(csr);
    for (; i < n; i++)
        xdev_cvt_convert1(dst + i, (int)XDEV_DTYPE_F16, src + i, (int)XDEV_DTYPE_F64);
}

/* The CPU's vector extensions (the backend's one cached answer): AVX2
 * stands for AVX2 with F16C, as on every CPU that has it. */
static bool have_f16c(void) {
    return (xdev_cpu_features() & XDEV_CPU_FEAT_AVX2) != 0;
}

static bool have_avx512f(void) {
    return (xdev_cpu_features() & XDEV_CPU_FEAT_AVX512F) != 0;
}
#endif

/* The vectorisable pairs; false when (dst, src) is not one of them. */
static bool convert_fast(const ops_job_t *j) {
    const size_t n = j->count;
    const xdev_dtype_t d = j->dst_dtype, s = j->src_dtype;
    if (d == XDEV_DTYPE_BF16 && s == XDEV_DTYPE_F32) { /* pure integer arithmetic */
#if defined(__x86_64__)
        if (have_avx512f()) {
            f32_to_bf16_x16(j->src, j->dst, n);
            return true;
        }
        if (have_f16c()) { /* = AVX2 */
            f32_to_bf16_x8(j->src, j->dst, n);
            return true;
        }
#endif
        const float *src = j->src;
        uint16_t *dst = j->dst;
        for (size_t i = 0; i < n; i++)
            dst[i] = xdev_f32_to_bf16(src[i]);
        return true;
    }
    if (d == XDEV_DTYPE_F32 && s == XDEV_DTYPE_BF16) {
        const uint16_t *src = j->src;
        uint32_t *dst = j->dst;
        for (size_t i = 0; i < n; i++) {
            uint32_t x = (uint32_t)src[i] << 16;
            if ((x & 0x7fffffffu) > 0x7f800000u) x |= 0x400000u; /* NaN made quiet */
            dst[i] = x;
        }
        return true;
    }
#if defined(__x86_64__)
    if (d == XDEV_DTYPE_F16 && s == XDEV_DTYPE_F32 && have_f16c()) {
        f32_to_f16_x8(j->src, j->dst, n);
        return true;
    }
    if (d == XDEV_DTYPE_F32 && s == XDEV_DTYPE_F16 && have_f16c()) {
        f16_to_f32_x8(j->src, j->dst, n);
        return true;
    }
#endif
    if (!default_fp_mode()) return false;
#if defined(__x86_64__)
    if (d == XDEV_DTYPE_F16 && s == XDEV_DTYPE_F64 && have_f16c()) {
        f64_to_f16_x4(j->src, j->dst, n);
        return true;
    }
#endif
    if (d == XDEV_DTYPE_F32 && s == XDEV_DTYPE_F64) { /* NaN: quiet, top payload bits, as x86 */
        const double *src = j->src;
        float *dst = j->dst;
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)src[i];
        return true;
    }
    if (d == XDEV_DTYPE_F64 && s == XDEV_DTYPE_F32) {
        const float *src = j->src;
        double *dst = j->dst;
        for (size_t i = 0; i < n; i++)
            dst[i] = (double)src[i];
        return true;
    }
    if (d == XDEV_DTYPE_F32 && s == XDEV_DTYPE_I32) {
        const int32_t *src = j->src;
        float *dst = j->dst;
        for (size_t i = 0; i < n; i++)
            dst[i] = (float)src[i];
        return true;
    }
    if (d == XDEV_DTYPE_F64 && s == XDEV_DTYPE_I32) {
        const int32_t *src = j->src;
        double *dst = j->dst;
        for (size_t i = 0; i < n; i++)
            dst[i] = (double)src[i];
        return true;
    }
    if (d == XDEV_DTYPE_I32 && s == XDEV_DTYPE_F32) {
#if defined(__x86_64__)
        if (have_f16c()) { /* = AVX2 */
            f32_to_i32_x8(j->src, j->dst, n);
            return true;
        }
#endif
        const float *src = j->src;
        int32_t *dst = j->dst;
        for (size_t i = 0; i < n; i++)
            dst[i] = f32_to_i32(src[i]);
        return true;
    }
#if defined(__x86_64__)
    if (d == XDEV_DTYPE_F64 && s == XDEV_DTYPE_I64 && have_f16c()) { /* = AVX2 */
        i64_to_f64_x4(j->src, j->dst, n);
        return true;
    }
#endif
    if (d == XDEV_DTYPE_I32 && s == XDEV_DTYPE_F64) {
        const double *src = j->src;
        int32_t *dst = j->dst;
        for (size_t i = 0; i < n; i++)
            dst[i] = f64_to_i32(src[i]);
        return true;
    }
    return false;
}

static void convert_body(ops_job_t *j) {
    if (j->dst_dtype == j->src_dtype) {
        if (j->dst != j->src) memcpy(j->dst, j->src, j->count * xdev_dtype_size(j->src_dtype));
    } else if (!convert_fast(j)) {
        const size_t ds = xdev_dtype_size(j->dst_dtype), ss = xdev_dtype_size(j->src_dtype);
        unsigned char *dst = j->dst;
        const unsigned char *src = j->src;
        for (size_t i = 0; i < j->count; i++)
            xdev_cvt_convert1(dst + i * ds, (int)j->dst_dtype, src + i * ss, (int)j->src_dtype);
    }
}

/* dst[i] += src[i] in the dtype's arithmetic (f16/bf16 through f32, the
 * rounding of xdev/support/half.h; integers wrap through unsigned). */
static void add_body(ops_job_t *j) {
    size_t n = j->count;
    switch ((int)j->dst_dtype) {
    case XDEV_DTYPE_F32: {
        float *d = j->dst;
        const float *s = j->src;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case XDEV_DTYPE_F64: {
        double *d = j->dst;
        const double *s = j->src;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case XDEV_DTYPE_I32: {
        uint32_t *d = j->dst;
        const uint32_t *s = j->src;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case XDEV_DTYPE_I64: {
        uint64_t *d = j->dst;
        const uint64_t *s = j->src;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case XDEV_DTYPE_F16: {
        uint16_t *d = j->dst;
        const uint16_t *s = j->src;
        for (size_t i = 0; i < n; i++)
            d[i] = xdev_f32_to_f16(xdev_f16_to_f32(d[i]) + xdev_f16_to_f32(s[i]));
        break;
    }
    default: { /* bf16 */
        uint16_t *d = j->dst;
        const uint16_t *s = j->src;
        for (size_t i = 0; i < n; i++)
            d[i] = xdev_f32_to_bf16(xdev_bf16_to_f32(d[i]) + xdev_bf16_to_f32(s[i]));
        break;
    }
    }
}

/* ------------------------------------------------------------ in parallel */

/* Elements per chunk at least: 128 KiB of f32, enough to amortise a claim. */
#define OPS_GRAIN 32768

typedef struct ops_range {
    const ops_job_t *j;
    void (*body)(ops_job_t *j);
} ops_range_t;

/* Same-size and widening conversions whose output is this large stream it
 * past the cache: the output is not read back soon, and a store that
 * misses the cache first reads its line, so such a conversion moved its
 * output's bytes twice (narrowing ones are bound by their reads: measured,
 * streaming did not help them). */
#define OPS_STREAM_BYTES ((size_t)8 << 20)
#define OPS_BOUNCE_BYTES 4096

/* sub's conversion through an L1 buffer, each block of output written to
 * 16-byte aligned sub->dst with non-temporal stores, then one fence. */
static void convert_streamed(ops_job_t *sub, size_t ds, size_t ss) {
#if defined(__x86_64__)
    unsigned char bounce[OPS_BOUNCE_BYTES] __attribute__((aligned(64)));
    const size_t per = OPS_BOUNCE_BYTES / ds;
    unsigned char *out = sub->dst;
    const unsigned char *in = sub->src;
    for (size_t i = 0; i < sub->count; i += per) {
        ops_job_t block = *sub;
        block.count = sub->count - i < per ? sub->count - i : per;
        block.src = in + i * ss;
        block.dst = bounce;
        convert_body(&block);
        size_t bytes = block.count * ds, k = 0;
        for (; k + 16 <= bytes; k += 16)
            _mm_stream_si128((__m128i *)(void *)(out + i * ds + k),
                             _mm_load_si128((const __m128i *)(const void *)(bounce + k)));
        memcpy(out + i * ds + k, bounce + k, bytes - k);
    }
    _mm_sfence(); /* the streamed stores before the job reports done */
#else
    (void)ds, (void)ss;
    convert_body(sub);
#endif
}

/* The job's elements [begin, end), as a job of their own. */
static void ops_range_run(void *arg, size_t begin, size_t end) {
    const ops_range_t *r = arg;
    ops_job_t sub = *r->j;
    size_t ds = xdev_dtype_size(r->j->dst_dtype);
    size_t ss = r->j->src != NULL ? xdev_dtype_size(r->j->src_dtype) : 0;
    sub.dst = (unsigned char *)r->j->dst + begin * ds;
    if (r->j->src != NULL) sub.src = (const unsigned char *)r->j->src + begin * ss;
    sub.count = end - begin;
    if (r->body == convert_body && sub.dst != sub.src && sub.dst_dtype != sub.src_dtype &&
        ds >= ss && r->j->count * ds >= OPS_STREAM_BYTES && ((uintptr_t)sub.dst & 15) == 0)
        convert_streamed(&sub, ds, ss);
    else
        r->body(&sub);
}

/* The job's elements in chunks on the device's worker pool: every element
 * is independent, and the core allows only disjoint buffers or an in-place
 * same-size conversion, so chunks never overlap another chunk's data. */
static void run_parallel(ops_job_t *j, void (*body)(ops_job_t *j)) {
    ops_range_t r = {j, body};
    xdev_cpu_parallel_for(j->device, j->count, OPS_GRAIN, ops_range_run, &r);
}

/* A fill's elements [begin, end) (cpu_fill.c picks the stores by the whole
 * fill's size). */
static void fill_range(void *arg, size_t begin, size_t end) {
    const ops_job_t *j = arg;
    xdev_cpu_fill_part((unsigned char *)j->dst + begin * j->pattern_size, j->pattern,
                       j->pattern_size, end - begin, j->count * j->pattern_size);
}

/* A fill is cut as memset_async is (cpu_queue.c): below 1 MiB it runs on
 * the stream's worker alone, above in chunks of 256 KiB at least (at 1 MiB,
 * ops_bench on the 2-core AMD VM: 32768-element chunks, 8 of f32, ran at
 * 0.80-0.91x of memset, 256 KiB ones at 0.90-1.04x). */
#define FILL_PARALLEL_BYTES ((size_t)1 << 20)
#define FILL_GRAIN_BYTES ((size_t)256 << 10)

static void fill_job(void *arg) {
    const ops_job_t *j = arg;
    if (j->count * j->pattern_size < FILL_PARALLEL_BYTES)
        fill_range(arg, 0, j->count);
    else
        xdev_cpu_parallel_for(j->device, j->count, FILL_GRAIN_BYTES / j->pattern_size, fill_range,
                              arg);
}

static void convert_job(void *arg) {
    run_parallel(arg, convert_body);
}

static void add_job(void *arg) {
    run_parallel(arg, add_body);
}

/* ------------------------------------------------------------ the table */

static xdev_status_t enqueue(xdev_cpu_device_t *dev, void *stream, void (*fn)(void *),
                             ops_job_t *job) {
    xdev_status_t st = xdev_cpu_stream_enqueue_job(dev->index, stream, fn, free, job);
    if (st != XDEV_SUCCESS) free(job);
    return st;
}

static xdev_status_t ops_fill(xdev_cpu_device_t *dev, void *dst, const void *pattern,
                              size_t pattern_size, size_t count, void *stream) {
    if (pattern_size == 0 || pattern_size > 16 || (pattern_size & (pattern_size - 1)) != 0)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: fill element of %zu bytes",
                              pattern_size);
    ops_job_t *job = calloc(1, sizeof *job);
    if (job == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a fill",
                              dev->index);
    job->device = dev->index;
    job->dst = dst;
    job->count = count;
    job->pattern_size = pattern_size;
    memcpy(job->pattern, pattern, pattern_size);
    return enqueue(dev, stream, fill_job, job);
}

static xdev_status_t ops_convert(xdev_cpu_device_t *dev, void *dst, xdev_dtype_t dst_dtype,
                                 const void *src, xdev_dtype_t src_dtype, size_t count,
                                 void *stream) {
    ops_job_t *job = calloc(1, sizeof *job);
    if (job == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a conversion",
                              dev->index);
    job->device = dev->index;
    job->dst = dst;
    job->src = src;
    job->count = count;
    job->dst_dtype = dst_dtype;
    job->src_dtype = src_dtype;
    return enqueue(dev, stream, convert_job, job);
}

static xdev_status_t ops_add(xdev_cpu_device_t *dev, void *dst, const void *src, xdev_dtype_t dtype,
                             size_t count, void *stream) {
    if (dtype != XDEV_DTYPE_F32 && dtype != XDEV_DTYPE_F64 && dtype != XDEV_DTYPE_I32 &&
        dtype != XDEV_DTYPE_I64 && dtype != XDEV_DTYPE_F16 && dtype != XDEV_DTYPE_BF16)
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED, "cpu: add of dtype %d", (int)dtype);
    ops_job_t *job = calloc(1, sizeof *job);
    if (job == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for an add",
                              dev->index);
    job->device = dev->index;
    job->dst = dst;
    job->src = src;
    job->count = count;
    job->dst_dtype = dtype;
    job->src_dtype = dtype;
    return enqueue(dev, stream, add_job, job);
}

const xdev_ops_vtable_t xdev_cpu_ops_vtable = {
    .size = sizeof(xdev_ops_vtable_t),
    .fill = ops_fill,
    .convert = ops_convert,
    .add = ops_add,
};
