/* SPDX-License-Identifier: Apache-2.0 */
/* test_fft_common.h - what the fft suite's two files share (test_fft.c:
 * transforms, bad input, stream order; test_fft_cache.c: the plan cache):
 * the fixture, device buffers and the skip where a backend has no FFT. */
#ifndef XDEV_TEST_FFT_COMMON_H
#define XDEV_TEST_FFT_COMMON_H

#include "xt.h"

static inline void fft_setup(void) {
    xt_reset_state();
    for (int i = 0; i < xt_device_count() && i < 2; i++) {
        XT_OK(xdev_fft_plan_cache_set_max_size(xt_dev(i), 4096));
        XT_OK(xdev_fft_plan_cache_clear(xt_dev(i)));
        XT_OK(xdev_fft_plan_cache_reset_stats(xt_dev(i)));
    }
}

static inline void *dalloc(int device, size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(device), &p, bytes));
    return p;
}

/* Does the backend under test have FFT? Otherwise the test is skipped with
 * the backend's reason. The probe's plan is dropped from the cache stats. */
static inline bool fft_available(const char *test) {
    int64_t n = 2;
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    void *buf = dalloc(0, 64);
    xdev_status_t st = xdev_fft_exec(&d, buf, buf, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL);
    XT_OK(xdev_free(buf));
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        xt_skip(test, "%s", xdev_last_error());
        return false;
    }
    XT_OK(st);
    XT_OK(xdev_fft_plan_cache_clear(xt_dev(0)));
    XT_OK(xdev_fft_plan_cache_reset_stats(xt_dev(0)));
    return true;
}
#define REQUIRE_FFT()                                                                              \
    do {                                                                                           \
        if (!fft_available(__func__)) return;                                                      \
    } while (0)

#define C2C XDEV_FFT_C2C
#define R2C XDEV_FFT_R2C
#define C2R XDEV_FFT_C2R

/* test_fft_cache.c: the plan cache's tests, added to the suite's case. */
void fft_cache_tests(TCase *tc);
/* test_fft_cache.c: the case "fft_host_fn" of suite s, the tests that call
 * the runtime from a host function on purpose (CUDA answers those calls with
 * cudaErrorNotPermitted, so compute-sanitizer runs it without reporting API
 * errors: tests/gpu/run.sh). */
void fft_host_fn_tests(Suite *s);

#endif
