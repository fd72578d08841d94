/* SPDX-License-Identifier: Apache-2.0 */
/* test_bad_input_math.c - bad inputs for blas, fft, rng, trace, ipc and
 * system (the other families are in test_bad_input.c; the rules are the
 * same: each case in its own forked child, a crash fails one case).
 * ctest: XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_PLUGIN_PATH=/nonexistent. */
#include "bad_input.h"

/* ------------------------------------------------------------ blas */

START_TEST(blas_bad_args) {
    void *a = dev_alloc(0, 1024), *b = dev_alloc(0, 1024), *c = dev_alloc(0, 1024);
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, NULL, 2, b, 2, 0.0, c, 2, NULL), "NULL");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, NULL, 2, 0.0, c, 2, NULL), "NULL");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, b, 2, 0.0, NULL, 2, NULL), "NULL");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 0, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2, NULL), "");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, -2, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2, NULL), "");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 4, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 4, NULL), "lda");
    XT_ERR(VAL, xdev_gemm((xdev_dtype_t)99, OPN, OPN, 2, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2, NULL),
           "");
    XT_ERR(VAL, xdev_gemm(F32, (xdev_blas_op_t)7, OPN, 2, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2, NULL),
           "");
    XT_ERR(VAL, xdev_gemm_ex(NULL, NULL), "NULL");
    xdev_gemm_params_t gp = {0};
    XT_ERR(VAL, xdev_gemm_ex(&gp, NULL), "size");
    XT_ERR(VAL,
           xdev_gemm_strided_batched(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, 4, b, 2, 4, 0.0, c, 2, 4, 0,
                                     NULL),
           "batch");
    XT_ERR(VAL,
           xdev_gemm_strided_batched(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, 4, b, 2, 4, 0.0, c, 2, 2, 2,
                                     NULL),
           "stride");
    XT_ERR(VAL, xdev_axpy(F32, -1, 1.0, a, 1, b, 1, NULL), "");
    XT_ERR(VAL, xdev_axpy(F32, 4, 1.0, a, 0, b, 1, NULL), "");
    XT_ERR(VAL, xdev_dot(F32, 4, a, 1, b, 1, NULL, NULL), "NULL");
    XT_ERR(VAL, xdev_nrm2(F32, 4, a, 1, NULL, NULL), "NULL");
    XT_ERR(VAL, xdev_scal(F32, 4, 2.0, NULL, 1, NULL), "NULL");
    bool yes;
    XT_ERR(VAL, xdev_blas_supports(xdev_cpu(0), (xdev_blas_routine_t)99, F32, &yes), "");
    XT_ERR(VAL, xdev_blas_supports(xdev_cpu(0), XDEV_BLAS_GEMM, F32, NULL), "NULL");
    XT_ERR(VAL, xdev_blas_get_allow_tf32(NULL), "NULL");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
}
END_TEST

START_TEST(blas_size_overflow) { /* products of dimensions that wrap: refused, not run */
    void *a = dev_alloc(0, 1024), *b = dev_alloc(0, 1024), *c = dev_alloc(0, 1024);
    int64_t big = INT64_C(1) << 40;
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, big, big, big, 1.0, a, big, b, big, 0.0, c, big, NULL),
           "");
    XT_ERR(
        VAL,
        xdev_gemm(F32, OPN, OPN, INT64_MAX, 1, 1, 1.0, a, INT64_MAX, b, 1, 0.0, c, INT64_MAX, NULL),
        "");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, a, INT64_MAX, b, 2, 0.0, c, 2, NULL), "");
    /* batch x stride wraps around to something small */
    XT_ERR(VAL,
           xdev_gemm_strided_batched(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, INT64_C(1) << 62, b, 2, 0,
                                     0.0, c, 2, 4, 4, NULL),
           "");
    XT_ERR(VAL,
           xdev_gemm_strided_batched(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, 0, b, 2, 0, 0.0, c, 2,
                                     INT64_C(1) << 61, 8, NULL),
           "");
    XT_ERR(VAL,
           xdev_gemm_strided_batched(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, 0, b, 2, 0, 0.0, c, 2, 4,
                                     INT64_MAX, NULL),
           "");
    XT_ERR(VAL, xdev_axpy(F32, INT64_MAX, 1.0, a, 1, b, 1, NULL), "");
    XT_ERR(VAL, xdev_axpy(F32, 4, 1.0, a, INT64_MAX / 2, b, 1, NULL), "");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
}
END_TEST

START_TEST(blas_cross_device) {
    void *a0 = dev_alloc(0, 64), *b1 = dev_alloc(1, 64), *c0 = dev_alloc(0, 64);
    XT_ERR(XDEV_ERROR_CROSS_DEVICE,
           xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, a0, 2, b1, 2, 0.0, c0, 2, NULL), "cpu:0",
           "cpu:1");
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_axpy(F32, 4, 1.0, b1, 1, c0, 1, NULL), "");
    xdev_stream_t s1 = NULL; /* a stream of the other device */
    XT_OK(xdev_stream_default(xdev_cpu(1), &s1));
    XT_ERR(XDEV_ERROR_CROSS_DEVICE,
           xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, a0, 2, a0, 2, 0.0, c0, 2, s1), "");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(a0));
    XT_OK(xdev_free(b1));
    XT_OK(xdev_free(c0));
}
END_TEST

/* ------------------------------------------------------------ fft */

START_TEST(fft_bad_args) {
    void *in = dev_alloc(0, 4096), *out = dev_alloc(0, 4096);
    int64_t n = 8;
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1), x;
    XT_ERR(VAL, xdev_fft_exec(NULL, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "NULL");
    XT_ERR(VAL, xdev_fft_exec(&d, NULL, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "NULL");
    XT_ERR(VAL, xdev_fft_exec(&d, in, NULL, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "NULL");
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, (xdev_fft_direction_t)0, XDEV_FFT_NORM_NONE, NULL), "");
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, (xdev_fft_norm_t)9, NULL), "");
    x = d, x.size = 0;
    XT_ERR(VAL, xdev_fft_exec(&x, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "size");
    x = d, x.rank = 0;
    XT_ERR(VAL, xdev_fft_exec(&x, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "rank");
    x = d, x.rank = 4;
    XT_ERR(VAL, xdev_fft_exec(&x, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "rank");
    x = d, x.n[0] = -8;
    XT_ERR(VAL, xdev_fft_exec(&x, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    x = d, x.batch = 0;
    XT_ERR(VAL, xdev_fft_exec(&x, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "batch");
    x = d, x.type = (xdev_fft_type_t)5;
    XT_ERR(VAL, xdev_fft_exec(&x, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    x = xdev_fft_desc_basic(XDEV_FFT_R2C, XDEV_FFT_F32, 1, &n, 1);
    XT_ERR(VAL, xdev_fft_exec(&x, in, out, XDEV_FFT_INVERSE, XDEV_FFT_NORM_NONE, NULL), "");
    double scale;
    XT_ERR(VAL, xdev_fft_norm_scale(&d, XDEV_FFT_FORWARD, XDEV_FFT_NORM_ORTHO, NULL), "NULL");
    XT_ERR(VAL, xdev_fft_norm_scale(NULL, XDEV_FFT_FORWARD, XDEV_FFT_NORM_ORTHO, &scale), "NULL");
    int64_t m;
    XT_ERR(VAL, xdev_fft_plan_cache_set_max_size(xdev_cpu(0), -1), "");
    XT_ERR(VAL, xdev_fft_plan_cache_max_size(xdev_cpu(0), NULL), "NULL");
    XT_ERR(VAL, xdev_fft_plan_cache_size(xdev_cpu(0), NULL), "NULL");
    XT_ERR(VAL, xdev_fft_plan_cache_stats(xdev_cpu(0), NULL), "NULL");
    XT_OK(xdev_fft_plan_cache_max_size(xdev_cpu(0), &m));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(in));
    XT_OK(xdev_free(out));
}
END_TEST

/* The plan cache's getters share one locked read (fft_plan_cache.c): a bad
 * device's message is still the public call's name, then the device's own
 * text, with no internal function's name between them. */
static void expect_named_once(xdev_status_t got, const char *call) {
    char want[128];
    snprintf(want, sizeof want, "%s: cpu:99: ", call);
    ck_assert_int_eq(got, XDEV_ERROR_INVALID_DEVICE);
    ck_assert_msg(strncmp(xdev_last_error(), want, strlen(want)) == 0,
                  "%s's message does not begin \"%s\": \"%s\"", call, want, xdev_last_error());
}

START_TEST(fft_cache_bad_device_named_once) {
    int64_t n;
    xdev_fft_plan_cache_stats_t st;
    expect_named_once(xdev_fft_plan_cache_max_size(xdev_cpu(99), &n),
                      "xdev_fft_plan_cache_max_size");
    expect_named_once(xdev_fft_plan_cache_size(xdev_cpu(99), &n), "xdev_fft_plan_cache_size");
    expect_named_once(xdev_fft_plan_cache_stats(xdev_cpu(99), &st), "xdev_fft_plan_cache_stats");
    expect_named_once(xdev_fft_plan_cache_reset_stats(xdev_cpu(99)),
                      "xdev_fft_plan_cache_reset_stats");
}
END_TEST

START_TEST(fft_size_overflow) { /* dims x batch past size_t: refused, no huge plan */
    void *in = dev_alloc(0, 4096), *out = dev_alloc(0, 4096);
    int64_t n2[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 2, n2, 1);
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    int64_t n1 = INT64_MAX;
    d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n1, 1);
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    int64_t n8 = 8;
    d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n8, INT64_C(1) << 62);
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n8, 2);
    d.idist = INT64_C(1) << 62; /* batch x distance wraps */
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n8, 1);
    d.istride = INT64_C(1) << 61;
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    int64_t n3[3] = {INT64_C(1) << 21, INT64_C(1) << 21, INT64_C(1) << 22};
    d = xdev_fft_desc_basic(XDEV_FFT_R2C, XDEV_FFT_F64, 3, n3, 1);
    XT_ERR(VAL, xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    int64_t size = -1;
    XT_OK(xdev_fft_plan_cache_size(xdev_cpu(0), &size));
    ck_assert_int_eq(size, 0); /* no plan was made for any of them */
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(in));
    XT_OK(xdev_free(out));
}
END_TEST

START_TEST(fft_cross_device) {
    void *in = dev_alloc(0, 64), *out = dev_alloc(1, 64);
    int64_t n = 8;
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    XT_ERR(XDEV_ERROR_CROSS_DEVICE,
           xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL), "");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(in));
    XT_OK(xdev_free(out));
}
END_TEST

/* ------------------------------------------------------------ rng */

START_TEST(rng_bad_args) {
    void *p = dev_alloc(0, 64);
    XT_ERR(VAL, xdev_rng_uniform(NULL, F32, NULL, 4, NULL), "NULL");
    /* not a dtype fills write (either status reads right) */
    XT_ERR_ANY(XT_BIT(VAL) | XT_BIT(XDEV_ERROR_NOT_SUPPORTED),
               xdev_rng_uniform(NULL, XDEV_DTYPE_C64, p, 4, NULL), "c64");
    XT_ERR(VAL, xdev_rng_normal(NULL, F32, p, 4, 0.0, -1.0, NULL), "");
    XT_ERR(VAL, xdev_rng_normal(NULL, F32, p, 4, 0.0, NAN, NULL), "");
    XT_ERR(VAL, xdev_rng_normal(NULL, F32, p, 4, INFINITY, 1.0, NULL), "");
    XT_ERR(VAL, xdev_rng_integers(NULL, XDEV_RNG_INT32, p, 4, 5, 5, NULL), "");
    XT_ERR(VAL, xdev_rng_integers(NULL, XDEV_RNG_INT32, p, 4, 0, INT64_C(1) << 40, NULL), "");
    XT_ERR(VAL, xdev_rng_integers(NULL, (xdev_rng_int_t)9, p, 4, 0, 5, NULL), "");
    XT_ERR(VAL, xdev_rng_bernoulli(NULL, p, 4, 1.5, NULL), "");
    XT_ERR(VAL, xdev_rng_bernoulli(NULL, p, 4, NAN, NULL), "");
    /* n x element size wraps around to something that fits */
    XT_ERR(VAL, xdev_rng_uniform(NULL, F32, p, SIZE_MAX / 4 + 2, NULL), "");
    XT_ERR(VAL, xdev_rng_uniform(NULL, XDEV_DTYPE_F64, p, (SIZE_MAX >> 3) + 2, NULL), "");
    XT_ERR(VAL, xdev_rng_uniform(NULL, F32, p, 17, NULL), ""); /* 68 bytes into 64 */
    unsigned char st[XDEV_RNG_STATE_SIZE];
    XT_ERR(VAL, xdev_get_rng_state(xdev_cpu(0), NULL, sizeof st), "NULL");
    XT_ERR(VAL, xdev_get_rng_state(xdev_cpu(0), st, 10), "");
    memset(st, 0xab, sizeof st);
    XT_ERR(VAL, xdev_set_rng_state(xdev_cpu(0), st, sizeof st), "");
    XT_ERR(VAL, xdev_set_rng_state(xdev_cpu(0), NULL, sizeof st), "NULL");
    XT_ERR(VAL, xdev_set_rng_state_all(st, sizeof st), ""); /* 2 devices: too short */
    XT_ERR(VAL, xdev_initial_seed(xdev_cpu(0), NULL), "NULL");
    XT_ERR(VAL, xdev_generator_create(xdev_cpu(0), 1, NULL), "NULL");
    XT_ERR_ANY(XT_BIT(VAL) | XT_BIT(XDEV_ERROR_INVALID_HANDLE), xdev_generator_destroy(NULL), "");
    xdev_generator_t g = NULL;
    XT_OK(xdev_generator_create(xdev_cpu(0), 1, &g));
    XT_ERR(VAL, xdev_generator_get_offset(g, NULL), "NULL");
    XT_ERR(VAL, xdev_generator_initial_seed(g, NULL), "NULL");
    XT_ERR(VAL, xdev_generator_get_device(g, NULL), "NULL");
    XT_ERR(VAL, xdev_generator_get_state(g, st, 3), "");
    XT_ERR(VAL, xdev_generator_set_state(g, st, sizeof st), "");
    XT_OK(xdev_generator_destroy(g));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(rng_cross_device) {
    void *p0 = dev_alloc(0, 64);
    xdev_generator_t g1 = NULL;
    XT_OK(xdev_generator_create(xdev_cpu(1), 7, &g1));
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_rng_uniform(g1, F32, p0, 4, NULL), "");
    xdev_stream_t s1 = NULL;
    XT_OK(xdev_stream_default(xdev_cpu(1), &s1));
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_rng_uniform(NULL, F32, p0, 4, s1), "");
    XT_OK(xdev_generator_destroy(g1));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(p0));
}
END_TEST

/* ------------------------------------------------------------ trace, ipc, system */

START_TEST(trace_bad_args) {
    XT_ERR(VAL, xdev_trace_mark(NULL), "NULL");
    XT_ERR(VAL, xdev_trace_range_push(NULL, NULL), "NULL");
    int depth = 7;
    XT_ERR(VAL, xdev_trace_range_pop(&depth), "");
    XT_OK(xdev_trace_range_push("a", &depth));
    ck_assert_int_eq(depth, 0);
    XT_OK(xdev_trace_range_pop(&depth));
    XT_ERR(VAL, xdev_trace_range_pop(NULL), "");
}
END_TEST

/* The CPU backend has no IPC: NOT_SUPPORTED, but arguments that are wrong
 * whatever the backend are INVALID_VALUE first. */
START_TEST(ipc_bad_args) {
    void *p = dev_alloc(0, 64);
    unsigned char stack[64];
    xdev_ipc_mem_handle_t h;
    memset(&h, 0x5c, sizeof h);
    xdev_ipc_event_handle_t eh;
    memset(&eh, 0x5c, sizeof eh);
    void *q = NULL;
    xdev_event_t e = NULL;
    XT_ERR(VAL, xdev_ipc_get_mem_handle(NULL, &h), "NULL");
    XT_ERR(VAL, xdev_ipc_get_mem_handle(p, NULL), "NULL");
    XT_ERR(VAL, xdev_ipc_get_mem_handle(stack, &h), "");
    XT_ERR(VAL, xdev_ipc_mem_handle_info(NULL, NULL, NULL), "NULL");
    XT_ERR(VAL, xdev_ipc_open_mem_handle(NULL, &q), "NULL");
    XT_ERR(VAL, xdev_ipc_open_mem_handle(&h, NULL), "NULL");
    XT_ERR_ANY(XT_BIT(VAL) | XT_BIT(XDEV_ERROR_NOT_SUPPORTED), xdev_ipc_open_mem_handle(&h, &q),
               "");
    ck_assert_ptr_null(q);
    XT_ERR_ANY(XT_BIT(VAL), xdev_ipc_mem_handle_info(&h, NULL, NULL), "");
    XT_ERR(VAL, xdev_ipc_close_mem_handle(NULL), "NULL");
    XT_ERR(VAL, xdev_ipc_close_mem_handle(stack), "");
    XT_ERR(VAL, xdev_ipc_close_mem_handle(p), ""); /* not from open_mem_handle */
    XT_ERR(XT_NULL_HANDLE, xdev_ipc_get_event_handle(NULL, &eh), "event");
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e));
    XT_ERR(VAL, xdev_ipc_get_event_handle(e, NULL), "NULL");
    XT_ERR(VAL, xdev_ipc_get_event_handle(e, &eh), "interprocess");
    XT_ERR(VAL, xdev_ipc_open_event_handle(NULL, &e), "NULL");
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(system_bad_args) {
    size_t count = 0;
    char buf[8];
    XT_ERR(VAL, xdev_device_processes(xdev_cpu(0), NULL, 4, &count), "NULL");
    XT_ERR(VAL, xdev_device_processes(xdev_cpu(0), NULL, 0, NULL), "NULL");
    XT_ERR(VAL, xdev_list_gpu_processes(xdev_cpu(0), NULL, sizeof buf), "NULL");
    XT_ERR(VAL, xdev_device_utilization(xdev_cpu(0), NULL), "NULL");
    xdev_gpu_process_t procs[2];
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_device_processes(xdev_cpu(0), procs, 2, &count), "cpu");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_processes(xdev_cpu(99), procs, 2, &count), "");
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_DEVICE) | XT_BIT(XDEV_ERROR_BACKEND_UNAVAILABLE),
               xdev_list_gpu_processes(xdev_cuda(0), buf, sizeof buf), "");
}
END_TEST

/* ------------------------------------------------------------ runner */

int main(int argc, char **argv) {
    Suite *s = suite_create("bad_input_math");
    TCase *t = tcase_create("bad_input_math");
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 30);
    tcase_add_test(t, blas_bad_args);
    tcase_add_test(t, blas_size_overflow);
    tcase_add_test(t, blas_cross_device);
    tcase_add_test(t, fft_bad_args);
    tcase_add_test(t, fft_cache_bad_device_named_once);
    tcase_add_test(t, fft_size_overflow);
    tcase_add_test(t, fft_cross_device);
    tcase_add_test(t, rng_bad_args);
    tcase_add_test(t, rng_cross_device);
    tcase_add_test(t, trace_bad_args);
    tcase_add_test(t, ipc_bad_args);
    tcase_add_test(t, system_bad_args);
    suite_add_tcase(s, t);
    return xt_run(srunner_create(s), "bad_input_math", argc, argv);
}
