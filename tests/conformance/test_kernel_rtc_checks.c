/* SPDX-License-Identifier: Apache-2.0 */
/* test_kernel_rtc_checks.c - the `kernel_rtc_checks` conformance suite: a
 * kernel compiled at run time (xdev_module_compile) is checked at launch
 * like one embedded ahead of time. On the CPU its host build carries the
 * signature; on a GPU the dialect compiles it into the image
 * (xdev/support/kernel_sig.h) and the backend reads it. Every bad argument
 * below is refused and nothing runs; XDEV_LAUNCH_CHECKS=basic skips only the
 * pointer checks. A block-form kernel (XDEV_KERNEL_BLOCK) compiled at run
 * time runs and is found by name. Conformance: XDEV_BACKEND=<backend> (cpu:
 * XDEV_CPU_DEVICES=2); XDEV_CACHE_DIR is a directory of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/kernel.h"
#include "xt.h"

static const char k_source[] = "#include <xdev/kernel_lang.h>\n"
                               "XDEV_KERNEL(rtc_saxpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a),\n"
                               "            XDEV_PTR(const float, x), XDEV_PTR(float, y)) {\n"
                               "    long i = xdev_global_id(0);\n"
                               "    if (i < n) y[i] = a * x[i] + y[i];\n"
                               "}\n";

static void setup(void) {
    xt_reset_state();
}

/* The kernel compiled for device 0 (the test skips where the backend
 * compiles nothing at run time). */
static bool compile(xdev_module_t *m, xdev_kernel_t *k) {
    xdev_compile_options_t o = {.size = sizeof o, .name = "rtc_checks"};
    xdev_status_t st = xdev_module_compile(xt_dev(0), k_source, &o, m);
    if (st == XDEV_ERROR_NOT_SUPPORTED) return false;
    XT_OK(st);
    XT_OK(xdev_module_get_kernel(*m, "rtc_saxpy", k));
    return true;
}

START_TEST(signature_known) {
    xdev_module_t m;
    xdev_kernel_t k;
    if (!compile(&m, &k)) XT_SKIP("%s compiles no kernels at run time", xt_type_name());
    xdev_kernel_attributes_t a;
    XT_OK(xdev_kernel_get_attributes(k, &a));
    ck_assert_int_eq(a.nparams, 4);
    const uint32_t sizes[4] = {sizeof(long), sizeof(float), sizeof(void *), sizeof(void *)};
    const uint8_t kinds[4] = {XDEV_KPARAM_VALUE, XDEV_KPARAM_VALUE, XDEV_KPARAM_POINTER,
                              XDEV_KPARAM_POINTER};
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(a.param_sizes[i], sizes[i]);
        ck_assert_uint_eq(a.param_kinds[i], kinds[i]);
    }
    XT_OK(xdev_module_unload(m));
}
END_TEST

START_TEST(bad_arguments_refused) {
    xdev_module_t m;
    xdev_kernel_t k;
    if (!compile(&m, &k)) XT_SKIP("%s compiles no kernels at run time", xt_type_name());
    long n = 1000;
    float a = 2.0f;
    float *x = NULL, *y = NULL, *freed = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, (size_t)n * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&y, (size_t)n * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&freed, 4096));
    XT_OK(xdev_free(freed));
    XT_OK(xdev_memset_async(x, 0, (size_t)n * sizeof(float), NULL));
    XT_OK(xdev_memset_async(y, 0, (size_t)n * sizeof(float), NULL));
    xdev_launch_config_t cfg = {.grid = {4, 1, 1}, .block = {256, 1, 1}};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x), "takes 4 arguments, 3 given");
    int narrow = 5;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, narrow, a, x, y), "argument 0");
    double wide = 1.0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, wide, x, y), "argument 1");
    float *host = malloc((size_t)n * sizeof(float)), stack[4];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, host, y), "argument 2");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x, stack), "argument 3");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x, freed), "argument 3");
    if (xt_has_devices(__func__, 2, "other device")) {
        float *other = NULL;
        XT_OK(xdev_malloc_device(xt_dev(1), (void **)&other, (size_t)n * sizeof(float)));
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, XDEV_LAUNCH(k, &cfg, n, a, x, other), "argument 3");
        XT_OK(xdev_free(other));
    }
    /* Nothing above ran: y is still zero; a good launch then runs. */
    float *h = calloc((size_t)n, sizeof(float));
    XT_OK(xdev_memcpy(h, y, (size_t)n * sizeof(float)));
    for (long i = 0; i < n; i++)
        ck_assert_msg(h[i] == 0.0f, "y[%ld] = %g after refused launches", i, h[i]);
    XT_OK(xdev_fill_async(x, XDEV_DTYPE_F32, xdev_scalar_f64(1.5), (size_t)n, NULL));
    XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y));
    XT_OK(xdev_memcpy(h, y, (size_t)n * sizeof(float)));
    ck_assert(h[0] == 3.0f && h[n - 1] == 3.0f);
    free(h);
    free(host);
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* XDEV_LAUNCH_CHECKS=basic (the entry kernel_rtc_checks.basic): pointer
 * arguments are taken as they are (memory xdev did not allocate), while the
 * count and sizes are still checked; full (the default) refuses them. No
 * work-item runs (n = 0), so the host pointer is never dereferenced. */
START_TEST(basic_checks_skip_pointers_only) {
    xdev_module_t m;
    xdev_kernel_t k;
    if (!compile(&m, &k)) XT_SKIP("%s compiles no kernels at run time", xt_type_name());
    const char *mode = getenv("XDEV_LAUNCH_CHECKS");
    bool basic = mode != NULL && strcmp(mode, "basic") == 0;
    long n = 0;
    float a = 1.0f, host[4] = {0};
    float *x = host, *y = host;
    xdev_launch_config_t cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}};
    if (basic)
        XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y));
    else
        XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x, y), "XDEV_LAUNCH_CHECKS");
    int narrow = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, narrow, a, x, y), "argument 0");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x), "takes 4 arguments");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* A tree reduction in the block form, compiled at run time: found by name,
 * described as the block form, and right. */
static const char k_block_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "XDEV_KERNEL_BLOCK(rtc_block_sum, XDEV_PTR(const int, x), XDEV_PTR(int, out)) {\n"
    "    XDEV_SHARED(int, part, 256);\n"
    "    XDEV_FOR_ITEMS { part[xdev_local_id(0)] = x[xdev_global_id(0)]; }\n"
    "    xdev_block_sync();\n"
    "    for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {\n"
    "        XDEV_FOR_ITEMS_BELOW(s) { part[xdev_local_id(0)] += part[xdev_local_id(0) + s]; }\n"
    "        xdev_block_sync();\n"
    "    }\n"
    "    XDEV_FOR_ITEMS_BELOW(1) { out[xdev_group_id(0)] = part[0]; }\n"
    "}\n";

START_TEST(block_form_compiled) {
    xdev_module_t m;
    xdev_kernel_t k;
    xdev_compile_options_t o = {.size = sizeof o, .name = "rtc_block"};
    xdev_status_t st = xdev_module_compile(xt_dev(0), k_block_source, &o, &m);
    if (st == XDEV_ERROR_NOT_SUPPORTED)
        XT_SKIP("%s compiles no kernels at run time", xt_type_name());
    XT_OK(st);
    XT_OK(xdev_module_get_kernel(m, "rtc_block_sum", &k));
    xdev_kernel_attributes_t a;
    XT_OK(xdev_kernel_get_attributes(k, &a));
    xdev_launch_limits_t lim;
    XT_OK(xdev_device_launch_limits(xt_dev(0), &lim));
    if (lim.warp_size == 1) ck_assert_int_eq(a.cpu_form, XDEV_KERNEL_FORM_REGIONS);
    enum { B = 256, G = 8 };
    int hx[B * G], h[G];
    for (int i = 0; i < B * G; i++)
        hx[i] = i % 97 - 40;
    int *x = NULL, *out = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, sizeof hx));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&out, sizeof h));
    XT_OK(xdev_memcpy(x, hx, sizeof hx));
    xdev_launch_config_t cfg = {.grid = {G, 1, 1}, .block = {B, 1, 1}};
    XT_OK(XDEV_LAUNCH(k, &cfg, x, out));
    XT_OK(xdev_memcpy(h, out, sizeof h));
    for (int g = 0; g < G; g++) {
        int want = 0;
        for (int i = 0; i < B; i++)
            want += hx[g * B + i];
        ck_assert_msg(h[g] == want, "block %d: %d, want %d", g, h[g], want);
    }
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(out));
    XT_OK(xdev_module_unload(m));
}
END_TEST

int main(int argc, char **argv) {
    char cache[] = "/tmp/xdev-rtc-checks-XXXXXX"; /* a cache of its own, removed at the end */
    if (mkdtemp(cache) == NULL || setenv("XDEV_CACHE_DIR", cache, 1) != 0) return 1;
    Suite *su = suite_create("kernel_rtc_checks");
    TCase *tc = tcase_create("kernel_rtc_checks");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, signature_known);
    tcase_add_test(tc, bad_arguments_refused);
    tcase_add_test(tc, basic_checks_skip_pointers_only);
    tcase_add_test(tc, block_form_compiled);
    suite_add_tcase(su, tc);
    TCase *basic = tcase_create("basic"); /* the entry that sets XDEV_LAUNCH_CHECKS=basic */
    tcase_add_checked_fixture(basic, setup, NULL);
    tcase_set_timeout(basic, 120);
    tcase_add_test(basic, basic_checks_skip_pointers_only);
    suite_add_tcase(su, basic);
    int rc = xt_run(srunner_create(su), "kernel_rtc_checks", argc, argv);
    char cmd[sizeof cache + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cache);
    return rc;
}
