/* SPDX-License-Identifier: Apache-2.0 */
/* test_hardening.c - regression tests for issue 16's memory-safety items:
 * huge sizes (1, 2), bounds checked against the allocation rather than its
 * segment (3), use after free and pointer info (4), overlapping FFT buffers
 * (5) and cached blocks crossing streams (7). The threaded items (6, 9, 10)
 * are in test_hardening_threads.c.
 *
 * Suites (each its own ctest entry, tests/conformance/CMakeLists.txt):
 *   memory        caching allocator: items 1-5
 *   nocache       XDEV_NO_MEMORY_CACHING=1: items 1-3 again
 *   cross_stream  XDEV_CPU_DEVICES=4: item 7 on every device */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
}

/* Asserts that every one of n bytes at device pointer p equals v (read after
 * the device is idle). */
static void expect_bytes(const void *p, unsigned char v, size_t n, const char *what) {
    unsigned char *buf = malloc(n);
    ck_assert_ptr_nonnull(buf);
    xt_peek(buf, p, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(buf[i] == v, "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, buf[i], v);
    free(buf);
}

static void expect_host_bytes(const unsigned char *p, unsigned char v, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(p[i] == v, "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, p[i], v);
}

/* ------------------------------------------------------------ 1, 2: huge sizes */

/* Sizes that wrapped around in rounding or segment sizing (issue 16, item 1),
 * the two that always failed, and one past the documented 2^48 limit. */
static const size_t huge_sizes[] = {
    SIZE_MAX,           SIZE_MAX - 100, SIZE_MAX - MIB,        SIZE_MAX - 2 * MIB + 2,
    SIZE_MAX - 2 * MIB, SIZE_MAX / 2,   ((size_t)1 << 48) + 1,
};
#define N_HUGE ((int)(sizeof huge_sizes / sizeof huge_sizes[0]))

/* After a failed huge request: nothing allocated or reserved, and two fresh
 * 64-byte allocations work, are distinct, do not overlap and hold their own
 * bytes. */
static void expect_clean_after_oom(size_t size) {
    xdev_memory_stats_t s = xt_mem_stats(0);
    ck_assert_msg(s.allocation[XDEV_STAT_ALL].current == 0,
                  "size %zu: allocation.all.current = %lld after the failed request", size,
                  (long long)s.allocation[XDEV_STAT_ALL].current);
    ck_assert_msg(s.segment[XDEV_STAT_ALL].current == 0,
                  "size %zu: segment.all.current = %lld after the failed request", size,
                  (long long)s.segment[XDEV_STAT_ALL].current);
    void *q1 = NULL, *q2 = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &q1, 64));
    XT_OK(xdev_malloc_device(xt_dev(0), &q2, 64));
    ck_assert_ptr_nonnull(q1);
    ck_assert_ptr_nonnull(q2);
    uintptr_t a = (uintptr_t)q1, b = (uintptr_t)q2;
    ck_assert_msg(a + 64 <= b || b + 64 <= a, "size %zu: 64-byte blocks %p and %p overlap", size,
                  q1, q2);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(q1, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    ck_assert_ptr_eq(info.base, q1);
    ck_assert_uint_eq(info.size, 64);
    XT_OK(xdev_memset_async(q1, 0x11, 64, NULL));
    XT_OK(xdev_memset_async(q2, 0x22, 64, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    expect_bytes(q1, 0x11, 64, "first 64-byte block");
    expect_bytes(q2, 0x22, 64, "second 64-byte block");
    XT_OK(xdev_free(q1));
    XT_OK(xdev_free(q2));
    ck_assert_int_eq(xt_mem_stats(0).allocation[XDEV_STAT_ALL].current, 0);
}

START_TEST(huge_malloc_device) { /* item 1; one loop iteration per size */
    size_t size = huge_sizes[_i];
    XT_OK(xdev_empty_cache());
    void *p = (void *)&p; /* must become NULL */
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, size), "");
    ck_assert_msg(p == NULL, "size %zu: *ptr = %p after the failed allocation, expected NULL", size,
                  p);
    expect_clean_after_oom(size);
}
END_TEST

START_TEST(huge_malloc_current) { /* item 1, xdev_malloc: the current device */
    size_t size = huge_sizes[_i];
    XT_OK(xdev_empty_cache());
    void *p = (void *)&p;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc(&p, size), "");
    ck_assert_msg(p == NULL, "size %zu: *ptr = %p after the failed allocation, expected NULL", size,
                  p);
    expect_clean_after_oom(size);
}
END_TEST

START_TEST(huge_malloc_stream) { /* item 1 through xdev_malloc_stream on a new stream */
    size_t size = huge_sizes[_i];
    XT_OK(xdev_empty_cache());
    xdev_stream_t s = xt_new_stream(0);
    void *p = (void *)&p;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_stream(&p, size, s), "");
    ck_assert_msg(p == NULL, "size %zu: *ptr = %p after the failed allocation", size, p);
    XT_OK(xdev_stream_destroy(s));
    expect_clean_after_oom(size);
}
END_TEST

static const size_t huge_host_sizes[] = {SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2,
                                         ((size_t)1 << 48) + 1};

START_TEST(huge_host_alloc) { /* item 2 */
    size_t size = huge_host_sizes[_i];
    xdev_host_memory_stats_t h0, h1;
    XT_OK(xdev_host_memory_stats(&h0));
    void *p = (void *)&p;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_host_alloc(&p, size), "");
    ck_assert_msg(p == NULL, "size %zu: *ptr = %p after the failed host allocation", size, p);
    XT_OK(xdev_host_memory_stats(&h1));
    ck_assert_int_eq(h1.allocation.current, h0.allocation.current);
    ck_assert_int_eq(h1.requested_bytes.current, h0.requested_bytes.current);
    void *q = NULL; /* still works */
    XT_OK(xdev_host_alloc(&q, 64));
    ck_assert_ptr_nonnull(q);
    memset(q, 0x5a, 64);
    XT_OK(xdev_host_free(q));
}
END_TEST

/* ------------------------------------------------------------ 3: bounds */

/* a: the 64-byte allocation under test; b: a live neighbour allocated right
 * after it (in caching mode the next block of the same segment) holding 0x77;
 * host: 1 MiB of pageable memory holding 0xcd. */
typedef struct pair {
    unsigned char *a, *b;
    unsigned char *host;
} pair_t;

static pair_t pair_new(void) {
    pair_t p = {NULL, NULL, NULL};
    XT_OK(xdev_empty_cache());
    XT_OK(xdev_malloc(((void **)&p.a), 64));
    XT_OK(xdev_malloc(((void **)&p.b), 64));
    XT_OK(xdev_memset_async(p.a, 0x00, 64, NULL));
    XT_OK(xdev_memset_async(p.b, 0x77, 64, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    p.host = malloc(MIB);
    ck_assert_ptr_nonnull(p.host);
    memset(p.host, 0xcd, MIB);
    return p;
}

/* The neighbour and the host buffer are as pair_new left them; frees all. */
static void pair_check_free(pair_t *p, bool host_untouched) {
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    expect_bytes(p->b, 0x77, 64, "neighbour allocation b");
    if (host_untouched) expect_host_bytes(p->host, 0xcd, MIB, "host buffer");
    XT_OK(xdev_free(p->a));
    XT_OK(xdev_free(p->b));
    free(p->host);
}

START_TEST(bounds_h2d_memcpy) {
    pair_t p = pair_new();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(p.a, p.host, MIB), "run past the end", "64 bytes");
    pair_check_free(&p, true);
}
END_TEST

START_TEST(bounds_h2d_memcpy_async) {
    pair_t p = pair_new();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy_async(p.a, p.host, MIB, NULL), "run past the end",
           "64 bytes");
    pair_check_free(&p, true);
}
END_TEST

START_TEST(bounds_memset_async) {
    pair_t p = pair_new();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(p.a, 0x42, MIB, NULL), "run past the end",
           "64 bytes");
    xdev_stream_t s = xt_new_stream(0); /* an explicit stream checks the same */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(p.a, 0x42, 65, s), "run past the end",
           "64 bytes");
    XT_OK(xdev_stream_destroy(s));
    pair_check_free(&p, true);
}
END_TEST

START_TEST(bounds_d2h_memcpy) { /* must not hand the neighbour's bytes to the caller */
    pair_t p = pair_new();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(p.host, p.a, MIB), "run past the end", "64 bytes");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy_async(p.host, p.a, MIB, NULL), "run past the end",
           "64 bytes");
    pair_check_free(&p, true);
}
END_TEST

START_TEST(bounds_d2d_memcpy) {
    pair_t p = pair_new();
    void *big = NULL;
    XT_OK(xdev_malloc(&big, MIB));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(p.a, big, MIB), "run past the end", "64 bytes");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(big, p.a, MIB), "run past the end", "64 bytes");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy_async(p.a, big, 65, NULL), "run past the end",
           "64 bytes");
    XT_OK(xdev_free(big));
    pair_check_free(&p, true);
}
END_TEST

START_TEST(bounds_one_past_requested) { /* 65 bytes: inside the 512-byte block, past the request */
    pair_t p = pair_new();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(p.a, p.host, 65), "run past the end", "64 bytes");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(p.host, p.a, 65), "run past the end", "64 bytes");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(p.a, 1, 65, NULL), "run past the end",
           "64 bytes");
    pair_check_free(&p, true);
}
END_TEST

START_TEST(bounds_interior_pointer) {
    pair_t p = pair_new();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(p.a + 32, p.host, 33), "run past the end",
           "64 bytes");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(p.a + 32, 1, 33, NULL), "run past the end",
           "64 bytes");
    XT_OK(xdev_memcpy(p.a + 32, p.host, 32)); /* the last 32 bytes: fine */
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    expect_bytes(p.a, 0x00, 32, "first half of a");
    expect_bytes(p.a + 32, 0xcd, 32, "second half of a");
    pair_check_free(&p, true);
}
END_TEST

START_TEST(bounds_exact_size) {
    pair_t p = pair_new();
    XT_OK(xdev_memcpy(p.a, p.host, 64));
    XT_OK(xdev_memset_async(p.a, 0x3c, 64, NULL));
    XT_OK(xdev_memcpy(p.host, p.a, 64)); /* stream-ordered after the memset */
    expect_host_bytes(p.host, 0x3c, 64, "copied-back a");
    expect_host_bytes(p.host + 64, 0xcd, MIB - 64, "host past the copy");
    XT_OK(xdev_memcpy(p.a + 64, p.host, 0)); /* zero bytes at the end: nothing to check */
    pair_check_free(&p, false);
}
END_TEST

/* ------------------------------------------------------------ 4: use after free */

/* A 64-byte allocation, freed at once (its segment stays in the cache). */
static void *freed_block(void) {
    void *p = NULL;
    XT_OK(xdev_malloc(&p, 64));
    XT_OK(xdev_free(p));
    return p;
}

START_TEST(uaf_memset) {
    void *keep = NULL; /* keeps the segment live too */
    XT_OK(xdev_malloc(&keep, 64));
    void *a = freed_block();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(a, 0, 64, NULL), "freed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(a, 0, 8, NULL), "freed");
    XT_OK(xdev_free(keep));
}
END_TEST

START_TEST(uaf_memcpy) {
    void *a = freed_block();
    unsigned char host[8];
    memset(host, 0xee, sizeof host);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(a, host, 8), "freed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy(host, a, 8), "freed");
    expect_host_bytes(host, 0xee, sizeof host, "host after a copy from freed memory");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memcpy_async(a, host, 8, NULL), "freed");
}
END_TEST

START_TEST(uaf_gemm) {
    void *a = NULL, *b = NULL, *c = NULL;
    XT_OK(xdev_malloc(&a, 64));
    XT_OK(xdev_malloc(&b, 64));
    XT_OK(xdev_malloc(&c, 64));
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 2, 2, 2, 1.0, a, 2, b, 2, 0.0,
                    c, 2, NULL));
    XT_OK(xdev_free(a));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 2, 2, 2, 1.0, a, 2, b, 2, 0.0,
                     c, 2, NULL),
           "freed");
    XT_OK(xdev_malloc(&a, 64));
    XT_OK(xdev_free(c)); /* a freed output */
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 2, 2, 2, 1.0, a, 2, b, 2, 0.0,
                     c, 2, NULL),
           "freed");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
}
END_TEST

START_TEST(uaf_fft) {
    int64_t n = 8; /* 8 complex floats = 64 bytes */
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    void *in = NULL, *out = NULL;
    XT_OK(xdev_malloc(&in, 64));
    XT_OK(xdev_malloc(&out, 64));
    XT_OK(xdev_memset_async(in, 0, 64, NULL));
    XT_OK(xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(in));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "freed");
    XT_OK(xdev_malloc(&in, 64));
    XT_OK(xdev_free(out));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "freed");
    XT_OK(xdev_free(in));
}
END_TEST

/* The thread's cache of blocks found live (math operands, kernel arguments)
 * against frees: a block a call checked and then freed is refused by the
 * next call, also after blocks no call checked came and went in between (a
 * free of such a block leaves the cache's entries valid); the block made at
 * its address afterwards is checked at its own, smaller size. */
START_TEST(uaf_lookup_cache) {
    float *a = NULL, *c = NULL;
    XT_OK(xdev_malloc((void **)&a, 4096));
    XT_OK(xdev_malloc((void **)&c, 4096));
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, NULL)); /* checks a, c: cached */
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, c, 1024, NULL));
    xt_churn_unchecked(NULL);                                     /* temporaries no call checks */
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, NULL)); /* still live */
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(a));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 1024, NULL),
           "freed");
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, c, 1024, NULL)); /* c is not a */
    /* 4000 bytes (the same rounded size: a's block, where the allocator hands it back) */
    float *b = NULL;
    XT_OK(xdev_malloc((void **)&b, 4000));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, b, 1024, NULL),
           "past the end");
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, b, 1000, NULL));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
}
END_TEST

START_TEST(uaf_rng) {
    void *a = freed_block();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, a, 16, NULL), "freed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_bernoulli(NULL, a, 16, 0.5, NULL), "freed");
}
END_TEST

START_TEST(uaf_record_stream) {
    xdev_stream_t s = xt_new_stream(0);
    void *a = freed_block();
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_record_stream(a, s), "freed");
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(uaf_device_of_and_info) {
    void *a = freed_block();
    xdev_device_t d = {XDEV_MAX_DEVICE_TYPES, 12345};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_of(a, &d), "");
    xdev_pointer_info_t info;
    memset(&info, 0xff, sizeof info);
    XT_OK(xdev_pointer_get_info(a, &info)); /* not xdev's memory any more: host */
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
    ck_assert_ptr_null(info.base);
    ck_assert_uint_eq(info.size, 0);
    ck_assert_uint_eq(info.block_size, 0);
    XT_OK(xdev_pointer_get_info((char *)a + 10, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
}
END_TEST

START_TEST(pointer_info_live_sizes) { /* item 4: both sizes of a live block */
    unsigned char *a = NULL;
    XT_OK(xdev_malloc((void **)&a, 64));
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(a, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    XT_DEV_EQ(info.device, xt_dev(0));
    ck_assert_ptr_eq(info.base, a);
    ck_assert_uint_eq(info.size, 64);        /* what was requested */
    ck_assert_uint_eq(info.block_size, 512); /* what the allocator set aside */
    XT_OK(xdev_pointer_get_info(a + 10, &info));
    ck_assert_ptr_eq(info.base, a);
    ck_assert_uint_eq(info.size, 64);
    xdev_device_t d;
    XT_OK(xdev_device_of(a + 10, &d));
    XT_DEV_EQ(d, xt_dev(0));
    XT_OK(xdev_free(a));
}
END_TEST

/* ------------------------------------------------------------ 5: FFT overlap */

START_TEST(fft_overlap_refused) {
    int64_t n = 64;
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    char *buf = NULL; /* 64 complex floats + 8 more, so out = in + 8 stays inside */
    XT_OK(xdev_malloc((void **)&buf, (64 + 8) * 8));
    XT_OK(xdev_memset_async(buf, 0, (64 + 8) * 8, NULL));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&d, buf, buf + 8 * 8, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL),
           "overlap");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&d, buf + 8 * 8, buf, XDEV_FFT_INVERSE, XDEV_FFT_NORM_NONE, NULL),
           "overlap");
    XT_OK(xdev_free(buf));
}
END_TEST

START_TEST(fft_in_place_works) {
    int64_t n = 64;
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    float host[2 * 64] = {0};
    host[0] = 1.0f; /* a unit impulse transforms to all ones */
    void *buf = NULL;
    XT_OK(xdev_malloc(&buf, sizeof host));
    XT_OK(xdev_memcpy(buf, host, sizeof host));
    XT_OK(xdev_fft_exec(&d, buf, buf, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL));
    XT_OK(xdev_memcpy(host, buf, sizeof host));
    for (int i = 0; i < 64; i++) {
        ck_assert_msg(host[2 * i] > 0.999f && host[2 * i] < 1.001f, "re[%d] = %g", i, host[2 * i]);
        ck_assert_msg(host[2 * i + 1] > -0.001f && host[2 * i + 1] < 0.001f, "im[%d] = %g", i,
                      host[2 * i + 1]);
    }
    XT_OK(xdev_free(buf));
}
END_TEST

/* ------------------------------------------------------------ 7: cross-stream reuse */

/* A block freed on s1 comes back on s2 only if its segment went back to the
 * backend and came again in between (a legal coincidence of addresses);
 * otherwise a cached block crossed streams. Told apart through the stats.
 * Run under torch's growth policy (ctest sets trim_before_grow:false): xdev's
 * default may adopt an idle stream's wholly free segment for another stream,
 * which test_alloc_policy.c's adoption tests check (never a busy stream's). */
static void cross_stream_once(int dev, int iter) {
    xdev_stream_t s1 = xt_new_stream(dev), s2 = xt_new_stream(dev);
    void *a = NULL, *b = NULL;
    XT_OK(xdev_malloc_stream(&a, 64 * KIB, s1));
    xdev_memory_stats_t after_a = xt_mem_stats(dev);
    XT_OK(xdev_free(a));
    XT_OK(xdev_malloc_stream(&b, 64 * KIB, s2));
    xdev_memory_stats_t after_b = xt_mem_stats(dev);
    if (b == a) {
        bool seg_freed =
            after_b.segment[XDEV_STAT_ALL].freed > after_a.segment[XDEV_STAT_ALL].freed ||
            after_b.num_device_free > after_a.num_device_free;
        bool seg_again =
            after_b.segment[XDEV_STAT_ALL].allocated > after_a.segment[XDEV_STAT_ALL].allocated ||
            after_b.num_device_alloc > after_a.num_device_alloc;
        ck_assert_msg(seg_freed && seg_again,
                      "%s iteration %d: the 64 KiB block %p freed on stream s1 was handed to "
                      "stream s2 without its segment going back to the backend (segment.freed "
                      "%lld -> %lld, num_device_free %lld -> %lld, num_device_alloc %lld -> "
                      "%lld): a cached block crossed streams",
                      xt_name(dev), iter, a, (long long)after_a.segment[XDEV_STAT_ALL].freed,
                      (long long)after_b.segment[XDEV_STAT_ALL].freed,
                      (long long)after_a.num_device_free, (long long)after_b.num_device_free,
                      (long long)after_a.num_device_alloc, (long long)after_b.num_device_alloc);
    }
    XT_OK(xdev_free(b));
    XT_OK(xdev_stream_synchronize(s1));
    XT_OK(xdev_stream_synchronize(s2));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
}

START_TEST(cross_stream_reuse) {
    int devs = xt_device_count();
    for (int dev = 0; dev < devs; dev++) {
        for (int i = 0; i < 8; i++)
            cross_stream_once(dev, i);
        XT_OK(xdev_empty_cache()); /* with a cold cache as well */
        cross_stream_once(dev, 8);
    }
}
END_TEST

/* The same with work of s1 still pending on the freed block: whatever b is,
 * what s2 writes into b must be what b holds afterwards. xdev_malloc_stream
 * may wait for the device (trim_before_grow gives free segments back first,
 * which waits for every stream), so the gate also opens from a helper thread
 * after 300 ms instead of only after s2's work. */
START_TEST(cross_stream_pending_work) {
    int devs = xt_device_count();
    for (int dev = 0; dev < devs; dev++) {
        xdev_stream_t s1 = xt_new_stream(dev), s2 = xt_new_stream(dev);
        xt_gate_t gate;
        xt_gate_init(&gate);
        void *a = NULL, *b = NULL;
        XT_OK(xdev_malloc_stream(&a, 64 * KIB, s1));
        XT_OK(xdev_launch_host_func(s1, xt_gate_wait_fn, &gate));
        XT_OK(xdev_memset_async(a, 0x01, 64 * KIB, s1)); /* held back by the gate */
        xt_opener_t opener;
        xt_opener_start(&opener, &gate, 300);
        XT_OK(xdev_free(a));
        XT_OK(xdev_malloc_stream(&b, 64 * KIB, s2));
        XT_OK(xdev_memset_async(b, 0x02, 64 * KIB, s2));
        XT_OK(xdev_stream_synchronize(s2));
        xt_gate_open(&gate);
        xt_opener_join(&opener);
        XT_OK(xdev_stream_synchronize(s1));
        expect_bytes(b, 0x02, 64 * KIB,
                     b == a ? "b (== a) after s1's memset of a ran"
                            : "b after s1's memset of a ran");
        XT_OK(xdev_free(b));
        XT_OK(xdev_synchronize());
        XT_OK(xdev_stream_destroy(s1));
        XT_OK(xdev_stream_destroy(s2));
        xt_gate_destroy(&gate);
    }
}
END_TEST

/* ------------------------------------------------------------ runner */

static TCase *tc(const char *name) {
    TCase *t = tcase_create(name);
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 60);
    return t;
}

/* Items 1-3: the same in both modes. */
static void add_common(TCase *t) {
    tcase_add_loop_test(t, huge_malloc_device, 0, N_HUGE);
    tcase_add_loop_test(t, huge_malloc_current, 0, N_HUGE);
    tcase_add_loop_test(t, huge_malloc_stream, 0, N_HUGE);
    tcase_add_loop_test(t, huge_host_alloc, 0,
                        (int)(sizeof huge_host_sizes / sizeof huge_host_sizes[0]));
    tcase_add_test(t, bounds_h2d_memcpy);
    tcase_add_test(t, bounds_h2d_memcpy_async);
    tcase_add_test(t, bounds_memset_async);
    tcase_add_test(t, bounds_d2h_memcpy);
    tcase_add_test(t, bounds_d2d_memcpy);
    tcase_add_test(t, bounds_one_past_requested);
    tcase_add_test(t, bounds_interior_pointer);
    tcase_add_test(t, bounds_exact_size);
}

int main(int argc, char **argv) {
    Suite *memory = suite_create("memory");
    TCase *t = tc("memory");
    add_common(t);
    /* Use after free is detectable only while xdev holds the memory (cached). */
    tcase_add_test(t, uaf_memset);
    tcase_add_test(t, uaf_memcpy);
    tcase_add_test(t, uaf_gemm);
    tcase_add_test(t, uaf_fft);
    tcase_add_test(t, uaf_rng);
    tcase_add_test(t, uaf_lookup_cache);
    tcase_add_test(t, uaf_record_stream);
    tcase_add_test(t, uaf_device_of_and_info);
    tcase_add_test(t, pointer_info_live_sizes);
    tcase_add_test(t, fft_overlap_refused);
    tcase_add_test(t, fft_in_place_works);
    suite_add_tcase(memory, t);

    Suite *nocache = suite_create("nocache");
    t = tc("nocache");
    add_common(t);
    tcase_add_test(t, fft_overlap_refused);
    suite_add_tcase(nocache, t);

    Suite *cross = suite_create("cross_stream");
    t = tc("cross_stream");
    tcase_add_test(t, cross_stream_reuse);
    tcase_add_test(t, cross_stream_pending_work);
    suite_add_tcase(cross, t);

    SRunner *sr = srunner_create(memory);
    srunner_add_suite(sr, nocache);
    srunner_add_suite(sr, cross);
    return xt_run(sr, "memory", argc, argv);
}
