/* SPDX-License-Identifier: Apache-2.0 */
/* test_ops.c - typed fills and dtype conversions (xdev/ops.h) on the backend
 * under test: every dtype filled, every conversion pair over every f16/bf16
 * bit pattern and random and special f32/f64/i32/i64 values, compared bit
 * for bit with xdev/support/convert.h run here on the host (the contract:
 * the same bits on every backend); stream order; bad input, with nothing
 * written. Conformance: XDEV_BACKEND=<backend under test> (cpu:
 * XDEV_CPU_DEVICES=2). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/support/convert.h"
#include "xdev/support/half.h"
#include "xt.h"

static void setup(void) {
    xt_reset_state();
}

static void *dalloc(int device, size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(device), &p, bytes));
    return p;
}

/* Whole-buffer readback after the device's work is done. */
static void readback(void *host, const void *dev, size_t n) {
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    xt_peek(host, dev, n);
}

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* ------------------------------------------------------------- fills */

START_TEST(fill_every_dtype) {
    const size_t n = 1000;
    unsigned char *d = dalloc(0, n * 16 + 64);
    unsigned char *host = malloc(n * 16 + 64);
    const struct {
        xdev_dtype_t dt;
        xdev_scalar_t v;
        unsigned char want[16];
    } cases[] = {
        {XDEV_DTYPE_F32, xdev_scalar_f64(1.5), {0x00, 0x00, 0xc0, 0x3f}},
        {XDEV_DTYPE_F64, xdev_scalar_f64(-2.0), {0, 0, 0, 0, 0, 0, 0x00, 0xc0}},
        {XDEV_DTYPE_F16, xdev_scalar_f64(1.0), {0x00, 0x3c}},
        {XDEV_DTYPE_BF16, xdev_scalar_f64(1.0), {0x80, 0x3f}},
        {XDEV_DTYPE_F16, xdev_scalar_f64(0.1), {0x66, 0x2e}}, /* RNE: 0x2e66 */
        {XDEV_DTYPE_I8, xdev_scalar_i64(-5), {0xfb}},
        {XDEV_DTYPE_U8, xdev_scalar_i64(200), {200}},
        {XDEV_DTYPE_I16, xdev_scalar_i64(-2), {0xfe, 0xff}},
        {XDEV_DTYPE_I32, xdev_scalar_i64(123456789), {0x15, 0xcd, 0x5b, 0x07}},
        {XDEV_DTYPE_I64, xdev_scalar_i64(INT64_MIN), {0, 0, 0, 0, 0, 0, 0, 0x80}},
        {XDEV_DTYPE_I32, xdev_scalar_f64(-7.9), {0xf9, 0xff, 0xff, 0xff}},     /* toward zero */
        {XDEV_DTYPE_F32, xdev_scalar_i64(16777217), {0x00, 0x00, 0x80, 0x4b}}, /* ties even */
        {XDEV_DTYPE_C64, xdev_scalar_c128(1.0, -1.0), {0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xbf}},
        {XDEV_DTYPE_C128,
         xdev_scalar_f64(2.0),
         {0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t es = xdev_dtype_size(cases[c].dt);
        XT_OK(xdev_memset_async(d, 0xab, n * 16 + 64, NULL));
        /* Elements 1 .. n-2 only: the neighbours must stay untouched. */
        XT_OK(xdev_fill_async(d + es, cases[c].dt, cases[c].v, n - 2, NULL));
        readback(host, d, n * es);
        for (size_t i = 0; i < es; i++)
            ck_assert_msg(host[i] == 0xab, "%s fill wrote before its start",
                          xdev_dtype_name(cases[c].dt));
        for (size_t e = 1; e + 1 < n; e++)
            ck_assert_msg(memcmp(host + e * es, cases[c].want, es) == 0,
                          "%s fill (case %zu): element %zu differs", xdev_dtype_name(cases[c].dt),
                          c, e);
        for (size_t i = (n - 1) * es; i < n * es; i++)
            ck_assert_msg(host[i] == 0xab, "%s fill wrote past its end",
                          xdev_dtype_name(cases[c].dt));
    }
    free(host);
    XT_OK(xdev_free(d));
}
END_TEST

/* Fills of every size class the CPU device writes differently (a loop, a
 * string store, 32-byte vector stores, memset for a pattern of one byte
 * repeated: a few elements, about 2 KiB, 300 KiB, 3 MiB), from every start
 * modulo 32 bytes, with a pattern of distinct bytes and one of equal bytes:
 * every element, and nothing outside. */
START_TEST(fill_sizes_and_starts) {
    const size_t counts_bytes[] = {40, 2056, 300 * 1024 + 24, (3u << 20) + 40};
    const size_t max_bytes = (3u << 20) + 40 + 64 + 32 + 16;
    unsigned char *d = dalloc(0, max_bytes);
    unsigned char *host = malloc(max_bytes);
    ck_assert_ptr_nonnull(host);
    const struct {
        xdev_dtype_t dt;
        xdev_scalar_t v;
    } cases[] = {
        {XDEV_DTYPE_F16, xdev_scalar_f64(0.1)},  {XDEV_DTYPE_F32, xdev_scalar_f64(1.0)},
        {XDEV_DTYPE_F64, xdev_scalar_f64(-2.5)}, {XDEV_DTYPE_C128, xdev_scalar_c128(1.0, -3.0)},
        {XDEV_DTYPE_I16, xdev_scalar_i64(-1)},   {XDEV_DTYPE_F32, xdev_scalar_f64(0.0)},
        {XDEV_DTYPE_U8, xdev_scalar_i64(7)},     {XDEV_DTYPE_C64, xdev_scalar_c128(2.0, 0.5)},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t es = xdev_dtype_size(cases[c].dt);
        unsigned char want[16];
        XT_OK(xdev_fill_async(d, cases[c].dt, cases[c].v, 1, NULL));
        readback(want, d, es);
        for (size_t b = 0; b < sizeof counts_bytes / sizeof counts_bytes[0]; b++) {
            const size_t n = counts_bytes[b] / es;
            const bool largest = b + 1 == sizeof counts_bytes / sizeof counts_bytes[0];
            /* start `skew` bytes past a 64-byte boundary: every multiple of the
             * element below 32, or (the largest size: time) 0, es and 32 - es */
            for (size_t skew = 0; skew < 32; skew += es) {
                if (largest && skew != 0 && skew != es && skew != 32 - es) continue;
                const size_t off = 64 + skew;
                const size_t span = off + n * es + 16;
                XT_OK(xdev_memset_async(d, 0xab, span, NULL));
                XT_OK(xdev_fill_async(d + off, cases[c].dt, cases[c].v, n, NULL));
                readback(host, d, span);
                for (size_t i = 0; i < off; i++)
                    ck_assert_msg(host[i] == 0xab, "%s fill of %zu at +%zu wrote before its start",
                                  xdev_dtype_name(cases[c].dt), n, off);
                for (size_t e = 0; e < n; e++)
                    if (memcmp(host + off + e * es, want, es) != 0)
                        ck_abort_msg("%s fill (case %zu) of %zu at +%zu: element %zu differs",
                                     xdev_dtype_name(cases[c].dt), c, n, off, e);
                for (size_t i = off + n * es; i < span; i++)
                    ck_assert_msg(host[i] == 0xab, "%s fill of %zu at +%zu wrote past its end",
                                  xdev_dtype_name(cases[c].dt), n, off);
            }
        }
    }
    free(host);
    XT_OK(xdev_free(d));
}
END_TEST

/* A fill larger than the host's last-level cache (the CPU device writes
 * those with streaming stores, or on AMD CPUs string stores, around an
 * unaligned head and tail): every element, from a start that is not
 * 16-byte aligned, and nothing outside.
 * Sized from the cache the library reads (sysfs), at most 320 MiB; not in
 * the sanitizer builds (size). */
START_TEST(fill_past_the_cache) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    XT_SKIP("a fill larger than the last-level cache: too large for a sanitizer build");
#else
    size_t llc = 32u << 20;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f != NULL) {
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1)
            llc = (size_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
        fclose(f);
    }
    if (llc > (256u << 20)) XT_SKIP("the last-level cache is larger than 256 MiB");
    const size_t bytes = llc + (1u << 20) + 64;
    unsigned char *d = dalloc(0, bytes);
    unsigned char *host = malloc(bytes);
    ck_assert_ptr_nonnull(host);
    const struct {
        xdev_dtype_t dt;
        size_t offset; /* bytes from the allocation's start: 16-byte misaligned */
    } cases[] = {
        {XDEV_DTYPE_F16, 6}, {XDEV_DTYPE_F32, 4}, {XDEV_DTYPE_F64, 8}, {XDEV_DTYPE_C128, 16}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t es = xdev_dtype_size(cases[c].dt);
        const size_t n = (bytes - cases[c].offset - 48) / es;
        XT_OK(xdev_memset_async(d, 0xab, bytes, NULL));
        XT_OK(xdev_fill_async(d + cases[c].offset, cases[c].dt, xdev_scalar_f64(3.0), n, NULL));
        readback(host, d, bytes);
        unsigned char want[16];
        XT_OK(xdev_memset_async(d, 0, 16, NULL));
        XT_OK(xdev_fill_async(d, cases[c].dt, xdev_scalar_f64(3.0), 1, NULL));
        readback(want, d, es);
        for (size_t i = 0; i < cases[c].offset; i++)
            ck_assert_msg(host[i] == 0xab, "%s fill wrote before its start",
                          xdev_dtype_name(cases[c].dt));
        for (size_t e = 0; e < n; e++)
            if (memcmp(host + cases[c].offset + e * es, want, es) != 0)
                ck_abort_msg("%s fill of %zu elements: element %zu differs",
                             xdev_dtype_name(cases[c].dt), n, e);
        for (size_t i = cases[c].offset + n * es; i < bytes; i++)
            ck_assert_msg(host[i] == 0xab, "%s fill wrote past its end (byte %zu)",
                          xdev_dtype_name(cases[c].dt), i);
    }
    free(host);
    XT_OK(xdev_free(d));
#endif
}
END_TEST

START_TEST(fill_is_stream_ordered) {
    /* A fill after a copy on one stream sees the copy done; a convert after
     * the fill sees the fill, all without a synchronize in between. */
    const size_t n = 1 << 20;
    xdev_stream_t s = xt_new_stream(0);
    float *a = dalloc(0, n * 4);
    double *b = dalloc(0, n * 8);
    XT_OK(xdev_memset_async(a, 0, n * 4, s));
    XT_OK(xdev_fill_async(a, XDEV_DTYPE_F32, xdev_scalar_f64(3.25), n, s));
    XT_OK(xdev_convert_async(b, XDEV_DTYPE_F64, a, XDEV_DTYPE_F32, n, s));
    XT_OK(xdev_fill_async(a, XDEV_DTYPE_F32, xdev_scalar_f64(-1.0), n, s));
    XT_OK(xdev_stream_synchronize(s));
    double *hb = malloc(n * 8);
    float *ha = malloc(n * 4);
    xt_peek(hb, b, n * 8);
    xt_peek(ha, a, n * 4);
    for (size_t i = 0; i < n; i += 4097) {
        ck_assert(hb[i] == 3.25);
        ck_assert(ha[i] == -1.0f);
    }
    ck_assert(hb[n - 1] == 3.25 && ha[n - 1] == -1.0f);
    free(ha);
    free(hb);
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(fill_bad_input) {
    const size_t n = 64;
    unsigned char *d = dalloc(0, n * 4);
    XT_OK(xdev_memset_async(d, 0x5a, n * 4, NULL));
    const xdev_scalar_t one = xdev_scalar_f64(1.0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(d, (xdev_dtype_t)99, one, 4, NULL), "dtype",
           "99");
    /* The public name, then the problem: no internal function's name between. */
    ck_assert_msg(strncmp(xdev_last_error(), "xdev_fill_async: dtype 99", 25) == 0, "message: %s",
                  xdev_last_error());
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(d, XDEV_DTYPE_F32, one, SIZE_MAX / 2, NULL),
           "overflow");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(d, XDEV_DTYPE_F32, one, n + 1, NULL),
           "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(d + 4, XDEV_DTYPE_F64, one, n / 2, NULL),
           "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(d + 2, XDEV_DTYPE_F32, one, 4, NULL),
           "aligned");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(NULL, XDEV_DTYPE_F32, one, 4, NULL), "dst");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fill_async(d, XDEV_DTYPE_F32, xdev_scalar_c128(1, 2), 4, NULL), "complex");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fill_async(d, XDEV_DTYPE_I8, xdev_scalar_i64(300), 4, NULL), "300", "i8");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fill_async(d, XDEV_DTYPE_U8, xdev_scalar_i64(-1), 4, NULL), "does not fit");
    xdev_scalar_t bad = one;
    bad.kind = (xdev_scalar_kind_t)7;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(d, XDEV_DTYPE_F32, bad, 4, NULL), "kind");
    float host_buf[4];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fill_async(host_buf, XDEV_DTYPE_F32, one, 4, NULL),
           "host memory");
    XT_OK(xdev_fill_async(d, XDEV_DTYPE_F32, one, 0, NULL)); /* nothing to do */
    unsigned char host[n * 4];
    readback(host, d, n * 4);
    for (size_t i = 0; i < n * 4; i++)
        ck_assert_msg(host[i] == 0x5a, "a refused fill wrote byte %zu", i);
    void *gone = dalloc(0, 256);
    XT_OK(xdev_free(gone));
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_VALUE) | XT_BIT(XDEV_ERROR_INVALID_HANDLE),
               xdev_fill_async(gone, XDEV_DTYPE_F32, one, 4, NULL), "free");
    XT_OK(xdev_free(d));
}
END_TEST

/* ------------------------------------------------------------- conversions */

static const xdev_dtype_t k_conv[] = {XDEV_DTYPE_F16, XDEV_DTYPE_BF16, XDEV_DTYPE_F32,
                                      XDEV_DTYPE_F64, XDEV_DTYPE_I32,  XDEV_DTYPE_I64};
#define N_CONV (sizeof k_conv / sizeof k_conv[0])

/* Source values of dtype t into buf (n elements): every 16-bit pattern for
 * f16/bf16; specials then random bit patterns and random ordinary values for
 * f32/f64; extremes then random values for i32/i64. */
static void make_source(xdev_dtype_t t, unsigned char *buf, size_t n) {
    static const double specials[] = {
        0.0,     -0.0,         1.0,           -1.0,   0.5,     1.5,        2.5,
        -2.5,    65504.0,      65520.0,       1e300,  -1e300,  1e-300,     5e-324,
        -5e-324, INFINITY,     -INFINITY,     NAN,    -NAN,    3.0e38,     3.5e38,
        1e-45,   2147483647.5, -2147483648.9, 9.3e18, -9.3e18, 16777217.0, 0.1};
    const size_t ns = sizeof specials / sizeof specials[0];
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = buf + i * xdev_dtype_size(t);
        switch (t) {
        case XDEV_DTYPE_F16:
        case XDEV_DTYPE_BF16: {
            uint16_t v = (uint16_t)i;
            memcpy(p, &v, 2);
            break;
        }
        case XDEV_DTYPE_F32:
        case XDEV_DTYPE_F64: {
            double v;
            uint64_t r = rnd();
            if (i < ns)
                v = specials[i];
            else if (i % 3 == 0) /* any bit pattern (NaN payloads, subnormals) */
                memcpy(&v, &r, 8);
            else
                v = (double)(int64_t)r * ldexp(1.0, (int)(rnd() % 200) - 130);
            if (t == XDEV_DTYPE_F64) {
                memcpy(p, &v, 8);
            } else if (i >= ns && i % 3 == 0) {
                uint32_t b = (uint32_t)r;
                memcpy(p, &b, 4);
            } else {
                float f = (float)v;
                memcpy(p, &f, 4);
            }
            break;
        }
        case XDEV_DTYPE_I32: {
            int32_t v = i == 0 ? INT32_MIN : i == 1 ? INT32_MAX : (int32_t)(uint32_t)rnd();
            if (i % 2 == 0 && i > 1) v >>= (int)(rnd() % 31);
            memcpy(p, &v, 4);
            break;
        }
        default: {
            int64_t v = i == 0 ? INT64_MIN : i == 1 ? INT64_MAX : (int64_t)rnd();
            if (i % 2 == 0 && i > 1) v >>= (int)(rnd() % 63);
            memcpy(p, &v, 8);
            break;
        }
        }
    }
}

START_TEST(convert_every_pair_bit_exact) {
    const size_t n = 1u << 17; /* >= 2^16: every f16/bf16 pattern */
    unsigned char *src_h = malloc(n * 8), *out_h = malloc(n * 8), *want = malloc(n * 8);
    unsigned char *src = dalloc(0, n * 8), *dst = dalloc(0, n * 8);
    for (size_t si = 0; si < N_CONV; si++) {
        const xdev_dtype_t st = k_conv[si];
        make_source(st, src_h, n);
        XT_OK(xdev_memcpy(src, src_h, n * xdev_dtype_size(st)));
        for (size_t di = 0; di < N_CONV; di++) {
            const xdev_dtype_t dt = k_conv[di];
            const size_t ds = xdev_dtype_size(dt), ss = xdev_dtype_size(st);
            XT_OK(xdev_convert_async(dst, dt, src, st, n, NULL));
            readback(out_h, dst, n * ds);
            for (size_t i = 0; i < n; i++)
                xdev_cvt_convert1(want + i * ds, (int)dt, src_h + i * ss, (int)st);
            for (size_t i = 0; i < n; i++) {
                if (memcmp(out_h + i * ds, want + i * ds, ds) == 0) continue;
                uint64_t got = 0, exp = 0, in = 0;
                memcpy(&got, out_h + i * ds, ds);
                memcpy(&exp, want + i * ds, ds);
                memcpy(&in, src_h + i * ss, ss);
                ck_abort_msg("%s -> %s, element %zu (input bits 0x%llx): got 0x%llx, want 0x%llx",
                             xdev_dtype_name(st), xdev_dtype_name(dt), i, (unsigned long long)in,
                             (unsigned long long)got, (unsigned long long)exp);
            }
        }
    }
    XT_OK(xdev_free(src));
    XT_OK(xdev_free(dst));
    free(src_h);
    free(out_h);
    free(want);
}
END_TEST

START_TEST(convert_offsets_and_tails) {
    /* Element offsets that break any multi-element alignment a backend may
     * use, and counts that leave a tail: still the reference's bits, and
     * nothing written around the destination. */
    const size_t cap = 4096;
    unsigned char *src_h = malloc(cap * 8), *out_h = malloc(cap * 8 + 64), *want = malloc(cap * 8);
    unsigned char *src = dalloc(0, cap * 8 + 64), *dst = dalloc(0, cap * 8 + 64);
    const struct {
        xdev_dtype_t dt, st;
        size_t doff, soff, n;
    } cases[] = {{XDEV_DTYPE_F16, XDEV_DTYPE_F32, 3, 1, 1001},
                 {XDEV_DTYPE_I32, XDEV_DTYPE_F64, 1, 2, 7},
                 {XDEV_DTYPE_F64, XDEV_DTYPE_BF16, 2, 5, 4093},
                 {XDEV_DTYPE_I64, XDEV_DTYPE_I32, 0, 1, 1},
                 {XDEV_DTYPE_F32, XDEV_DTYPE_F32, 1, 0, 3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t ds = xdev_dtype_size(cases[c].dt), ss = xdev_dtype_size(cases[c].st);
        const size_t n = cases[c].n;
        make_source(cases[c].st, src_h, n);
        XT_OK(xdev_memcpy(src + cases[c].soff * ss, src_h, n * ss));
        XT_OK(xdev_memset_async(dst, 0x77, cap * 8 + 64, NULL));
        XT_OK(xdev_convert_async(dst + cases[c].doff * ds, cases[c].dt, src + cases[c].soff * ss,
                                 cases[c].st, n, NULL));
        readback(out_h, dst, (n + cases[c].doff + 1) * ds);
        for (size_t i = 0; i < n; i++)
            xdev_cvt_convert1(want + i * ds, (int)cases[c].dt, src_h + i * ss, (int)cases[c].st);
        ck_assert_msg(memcmp(out_h + cases[c].doff * ds, want, n * ds) == 0,
                      "%s -> %s at offsets %zu/%zu, %zu elements: not the reference's bits",
                      xdev_dtype_name(cases[c].st), xdev_dtype_name(cases[c].dt), cases[c].soff,
                      cases[c].doff, n);
        for (size_t i = 0; i < cases[c].doff * ds; i++)
            ck_assert(out_h[i] == 0x77);
        for (size_t i = (cases[c].doff + n) * ds; i < (cases[c].doff + n + 1) * ds; i++)
            ck_assert_msg(out_h[i] == 0x77, "wrote past the end (case %zu)", c);
    }
    XT_OK(xdev_free(src));
    XT_OK(xdev_free(dst));
    free(src_h);
    free(out_h);
    free(want);
}
END_TEST

START_TEST(half_h_agrees) {
    /* The CPU GEMM's f16/bf16 rounding (xdev/support/half.h) is the rounding
     * of convert.h: every 16-bit pattern widened, 2^20 random floats narrowed. */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = xdev_f16_to_f32((uint16_t)h), g = xdev_bf16_to_f32((uint16_t)h);
        uint32_t fb, gb;
        memcpy(&fb, &f, 4);
        memcpy(&gb, &g, 4);
        if (isnan(f) || isnan(g)) continue; /* half.h keeps a signalling NaN signalling */
        ck_assert_uint_eq(xdev_cvt_round_f64(xdev_cvt_widen_f64(h, 5, 10), 8, 23), fb);
        ck_assert_uint_eq(xdev_cvt_round_f64(xdev_cvt_widen_f64(h, 8, 7), 8, 23), gb);
    }
    for (int i = 0; i < (1 << 20); i++) {
        uint32_t b = (uint32_t)rnd();
        float f;
        memcpy(&f, &b, 4);
        const uint64_t w = xdev_cvt_widen_f64(b, 8, 23);
        ck_assert_msg(xdev_cvt_round_f64(w, 5, 10) == xdev_f32_to_f16(f), "f32 0x%08x -> f16", b);
        ck_assert_msg(xdev_cvt_round_f64(w, 8, 7) == xdev_f32_to_bf16(f), "f32 0x%08x -> bf16", b);
    }
}
END_TEST

START_TEST(convert_values) {
    /* The documented rules, on plain values (not only "same as the reference"). */
    double in[] = {1.0, -2.5, 0.1, 1e10, -1e10, NAN, INFINITY, 65519.0, 65520.0};
    const size_t n = sizeof in / sizeof in[0];
    double *d = dalloc(0, sizeof in);
    int32_t *i32 = dalloc(0, n * 4);
    uint16_t *h = dalloc(0, n * 2);
    XT_OK(xdev_memcpy(d, in, sizeof in));
    XT_OK(xdev_convert_async(i32, XDEV_DTYPE_I32, d, XDEV_DTYPE_F64, n, NULL));
    XT_OK(xdev_convert_async(h, XDEV_DTYPE_F16, d, XDEV_DTYPE_F64, n, NULL));
    int32_t gi[9];
    uint16_t gh[9];
    readback(gi, i32, sizeof gi);
    readback(gh, h, sizeof gh);
    const int32_t wi[] = {1, -2, 0, INT32_MAX, INT32_MIN, 0, INT32_MAX, 65519, 65520};
    const uint16_t wh[] = {0x3c00, 0xc100, 0x2e66, 0x7c00, 0xfc00, 0x7e00, 0x7c00, 0x7bff, 0x7c00};
    for (size_t k = 0; k < n; k++) {
        ck_assert_msg(gi[k] == wi[k], "f64 %g -> i32: %d, want %d", in[k], gi[k], wi[k]);
        ck_assert_msg(gh[k] == wh[k], "f64 %g -> f16: 0x%04x, want 0x%04x", in[k], gh[k], wh[k]);
    }
    /* In place, same size: f32 -> i32 over the same buffer. */
    float fv[4] = {1.9f, -1.9f, 3e9f, -0.0f};
    float *f = dalloc(0, sizeof fv);
    XT_OK(xdev_memcpy(f, fv, sizeof fv));
    XT_OK(xdev_convert_async(f, XDEV_DTYPE_I32, f, XDEV_DTYPE_F32, 4, NULL));
    int32_t got[4];
    readback(got, f, sizeof got);
    ck_assert(got[0] == 1 && got[1] == -1 && got[2] == INT32_MAX && got[3] == 0);
    XT_OK(xdev_free(d));
    XT_OK(xdev_free(i32));
    XT_OK(xdev_free(h));
    XT_OK(xdev_free(f));
}
END_TEST

START_TEST(convert_bad_input) {
    const size_t n = 64;
    unsigned char *a = dalloc(0, n * 8), *b = dalloc(0, n * 8);
    XT_OK(xdev_memset_async(a, 0x11, n * 8, NULL));
    XT_OK(xdev_memset_async(b, 0x22, n * 8, NULL));
    const xdev_dtype_t F32 = XDEV_DTYPE_F32, F64 = XDEV_DTYPE_F64;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(b, (xdev_dtype_t)-1, a, F32, 4, NULL),
           "dst_dtype");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(b, F32, a, (xdev_dtype_t)42, 4, NULL),
           "src_dtype");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_convert_async(b, F32, a, XDEV_DTYPE_C64, 4, NULL), "c64",
           "f16, bf16");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_convert_async(b, XDEV_DTYPE_U8, a, F32, 4, NULL), "u8");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(b, F64, a, F32, SIZE_MAX / 4, NULL),
           "overflow");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(b, F64, a, F32, n + 1, NULL),
           "past the end");
    /* Overlap: a width change over the same buffer, and a shifted same-size one. */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(a, F64, a, F32, 8, NULL), "overlap");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(a + 4, F32, a, XDEV_DTYPE_I32, 8, NULL),
           "overlap");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(b + 1, F32, a, F64, 4, NULL), "aligned");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_convert_async(b, F32, NULL, F64, 4, NULL), "src");
    XT_OK(xdev_convert_async(b, F32, a, F64, 0, NULL));
    unsigned char ha[n * 8], hb[n * 8];
    readback(ha, a, sizeof ha);
    readback(hb, b, sizeof hb);
    for (size_t i = 0; i < sizeof ha; i++)
        ck_assert_msg(ha[i] == 0x11 && hb[i] == 0x22, "a refused conversion wrote byte %zu", i);
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
}
END_TEST

START_TEST(convert_cross_device) {
    XT_REQUIRE_DEVICES(2);
    float *a = dalloc(0, 64);
    double *b = dalloc(1, 128);
    XT_ERR(XDEV_ERROR_CROSS_DEVICE,
           xdev_convert_async(b, XDEV_DTYPE_F64, a, XDEV_DTYPE_F32, 16, NULL), xt_name(0),
           xt_name(1));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("fill");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fill_every_dtype);
    tcase_add_test(tc, fill_sizes_and_starts);
    tcase_add_test(tc, fill_past_the_cache);
    tcase_add_test(tc, fill_is_stream_ordered);
    tcase_add_test(tc, fill_bad_input);
    suite_add_tcase(s, tc);
    tc = tcase_create("convert");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, convert_every_pair_bit_exact);
    tcase_add_test(tc, convert_offsets_and_tails);
    tcase_add_test(tc, half_h_agrees);
    tcase_add_test(tc, convert_values);
    tcase_add_test(tc, convert_bad_input);
    tcase_add_test(tc, convert_cross_device);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "ops", argc, argv);
}
