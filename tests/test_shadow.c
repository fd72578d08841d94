/* SPDX-License-Identifier: Apache-2.0 */
/* test_shadow.c - shadow execution (xdev/shadow.h), one scenario per ctest
 * entry (argv[1]), each in the environment its entry sets:
 *   clean        XDEV_SHADOW=cpu on the CPU: copies in every direction,
 *                memset, fill, conversion, random fills, axpy, GEMM, a
 *                kernel, xdev_elementwise (compiled at run time): every op
 *                replayed, no report
 *   short_memset XDEV_BACKEND=faultynull (the backend template with a
 *                memset one byte short, tests/plugins/faulty_template.c):
 *                the memset is named, with its call site in this file, the
 *                last byte and both values
 *   gemm_lda     the same plugin's GEMM, which ignores lda: a padded A is
 *                named with its shape, the first element and both values
 *   stop         the same with XDEV_SHADOW_ACTION=stop: the next call fails
 *                with XDEV_ERROR_BACKEND quoting the report until
 *                xdev_shadow_clear
 *   sync         the same with XDEV_SHADOW_COMPARE=sync: found at the copy
 *                to the host, naming the memset as the buffer's last writer
 *   kernel_difference  a kernel whose outputs differ on any backend (it
 *                writes its own address) is reported
 *   kernel_float_tolerance  a kernel's double outputs that differ in the
 *                last bits are not reported
 *   kernel_unset_shared  a GPU kernel reading shared memory it never wrote
 *                (cuda, hip)
 *   kernel_gpu   a kernel whose device build alone is off by one (cuda, hip;
 *                skipped on the CPU, where both builds are the host build)
 *   not_mirrored a graph replay whose capture holds an op the shadow does not
 *                replay (a histogram of managed memory) is reported once, as such, and the
 *                mirrors take its outputs
 *   graph_short_memset the faulty plugin's memset captured in a graph: named
 *                at the replay with its capture call site
 *   graph_clean  XDEV_SHADOW=cpu on the CPU: a graph of copies, memset, fill,
 *                axpy, a kernel, a conversion and a random fill replayed
 *                three times (new numbers each time), each
 *                op replayed on the mirrors, no report
 *   foreign_short_memset the faulty plugin's memset on registered memory
 *                (xdev_memory_register): named, as on xdev's own memory
 *   foreign_clean XDEV_SHADOW=cpu on the CPU: registered memory and a DLPack
 *                import, mirrored at import, their ops replayed, no report
 *   vec_names    an axpy and a scal on expandable segments (not mirrored):
 *                each report's detail names its routine
 *   prims_clean  XDEV_SHADOW=cpu on the CPU: every primitive (sorts,
 *                segmented sort and reduce, histogram, select_flagged,
 *                select_if compared and compiled, unique, run-length encode,
 *                reduce, scan) replayed
 *                and compared, no report; a compaction's unused tail is not
 *                compared (also with XDEV_SHADOW_COMPARE=sync: the device's
 *                temporaries reach the mirrors, a later kernel's unbounded
 *                pointer does not find them stale)
 *   histogram_last_bin the faulty plugin's histogram, which drops its last
 *                bin's count: named with the bin and both counts
 *   off          no XDEV_SHADOW: off, no report; bad arguments refused
 *   bad          a malformed XDEV_SHADOW* value (argv[2] names it) fails
 *                xdev_init with XDEV_ERROR_ENV naming the variable */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shadow_kernels.h"
#include "xdev/xdev.h"
#include "xt.h"

enum { N = 1000 };

/* What the clean scenarios end with: each kept report printed, then no
 * difference and nothing reported as not mirrored (every op replayed). */
static void expect_no_report(void) {
    int d = 0;
    uint64_t n = xdev_shadow_report_count();
    for (uint64_t i = 0; i < n && i < XDEV_SHADOW_KEPT; i++) {
        xdev_shadow_report_t r;
        XT_OK(xdev_shadow_report_get(i, &r));
        fprintf(stderr, "unexpected report:\n%s", r.text);
        d += r.kind == XDEV_SHADOW_DIFFERENCE;
    }
    ck_assert_int_eq(d, 0);
    ck_assert_uint_eq(n, 0);
}

/* The first report, printed (the scenarios with a fault look at it). */
static void first_report(xdev_shadow_report_t *r) {
    XT_OK(xdev_shadow_report_get(0, r));
    fprintf(stderr, "the report:\n%s", r->text);
}

/* The first report is a difference in op, its detail holding detail, called
 * from this file. */
static void expect_difference(xdev_shadow_report_t *r, const char *op, const char *detail) {
    first_report(r);
    ck_assert_int_eq(r->kind, XDEV_SHADOW_DIFFERENCE);
    ck_assert_str_eq(r->op, op);
    ck_assert_msg(strstr(r->detail, detail) != NULL, "detail: %s", r->detail);
    ck_assert_msg(strstr(r->call_site, "test_shadow") != NULL, "call site: %s", r->call_site);
}

/* A device buffer holding the host's bytes h. */
static void *upload(const void *h, size_t bytes) {
    void *d;
    XT_OK(xdev_malloc_device(xt_dev(0), &d, bytes));
    XT_OK(xdev_memcpy(d, h, bytes));
    return d;
}

/* Each op of the representative set, checked against host results too. */
START_TEST(clean) {
    ck_assert_msg(xdev_shadow_enabled(), "XDEV_SHADOW=cpu did not turn shadow execution on");
    xdev_stream_t s = xt_new_stream(0);
    float *x, *y, *h = malloc(N * sizeof(float));
    int *k;
    ck_assert_ptr_nonnull(h);
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, N * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&y, N * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&k, N * sizeof(int)));
    for (int i = 0; i < N; i++)
        h[i] = (float)i;
    XT_OK(xdev_memcpy_async(x, h, N * sizeof(float), s)); /* HtoD */
    XT_OK(xdev_memcpy_async(y, x, N * sizeof(float), s)); /* DtoD */
    XT_OK(xdev_memset_async(k, 0x5a, N * sizeof(int), s));
    XT_OK(xdev_fill_async(k, XDEV_DTYPE_I32, xdev_scalar_i64(7), N / 2, s));
    XT_OK(xdev_convert_async(k, XDEV_DTYPE_I32, x, XDEV_DTYPE_F32, N, s));
    XT_OK(xdev_axpy(XDEV_DTYPE_F32, N, 0.5, x, 1, y, 1, s));
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_T, 20, 20, 20, 1.0, x, 20, x, 20,
                    0.5, y, 20, s));
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, x, N, s));
    XT_OK(xdev_rng_normal(NULL, XDEV_DTYPE_F32, x, N, 0.0, 1.0, s));
    xdev_module_t m;
    XT_OK(xdev_module_load(xt_dev(0), shadow_kernels_bundle(), &m));
    xdev_kernel_t iota;
    XT_OK(xdev_module_get_kernel(m, "iota3", &iota));
    int n = N;
    xdev_arg_t args[] = {{&n, sizeof n}, {&k, sizeof k}};
    xdev_launch_config_t cfg = {.grid = {4, 1, 1}, .block = {256, 1, 1}, .stream = s};
    XT_OK(xdev_launch_kernel(iota, &cfg, args, 2));
    const void *in[2] = {x, y};
    xdev_status_t st = xdev_elementwise("in0 + in1", XDEV_DTYPE_F32, 2, in, x, N, s);
    if (st == XDEV_ERROR_COMPILE || st == XDEV_ERROR_NOT_SUPPORTED)
        xt_skip("clean (elementwise)", "no kernel compiler here: %s", xdev_last_error());
    else
        XT_OK(st);
    XT_OK(xdev_memcpy_async(h, y, N * sizeof(float), s)); /* DtoH */
    int hk[N];
    XT_OK(xdev_memcpy_async(hk, k, sizeof hk, s));
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(hk[i], i * 3 + 1);
    expect_no_report(); /* everything above was replayed */
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_free(k));
    XT_OK(xdev_stream_destroy(s));
    free(h);
}
END_TEST

/* The faulty plugin's memset: one report, naming it. Returns its text. */
static void expect_short_memset(xdev_shadow_report_t *r, unsigned char *dev, size_t bytes) {
    ck_assert_msg(xdev_shadow_report_count() >= 1, "the short memset was not reported");
    expect_difference(r, "memset", "memset of 4096 bytes to 0xab");
    ck_assert_ptr_eq(r->buffer, dev);
    ck_assert_uint_eq(r->element, bytes - 1);
    ck_assert_uint_eq(r->differing, 1);
    ck_assert_uint_eq(r->shadow_bits, 0xab);
    ck_assert_uint_eq(r->device_bits, 0x11);
}

static unsigned char *prepare(size_t bytes) {
    unsigned char *dev;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&dev, bytes));
    XT_OK(xdev_memset_async(dev, 0x11, bytes, NULL)); /* the last byte stays what it was */
    XT_OK(xdev_synchronize());
    XT_OK(xdev_shadow_clear()); /* that memset's own report */
    unsigned char h[4096];
    memset(h, 0x11, sizeof h);
    XT_OK(xdev_memcpy(dev, h, bytes)); /* now all 0x11 on both */
    ck_assert_uint_eq(xdev_shadow_report_count(), 0);
    return dev;
}

START_TEST(short_memset) {
    const size_t bytes = 4096;
    unsigned char *dev = prepare(bytes);
    XT_OK(xdev_memset_async(dev, 0xab, bytes, NULL)); /* the faulty op */
    XT_OK(xdev_synchronize());
    xdev_shadow_report_t r;
    expect_short_memset(&r, dev, bytes);
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    /* One fault, one report: the next ops compare from the device's bytes. */
    unsigned char h[4096];
    XT_OK(xdev_memcpy(h, dev, bytes));
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    XT_OK(xdev_free(dev));
}
END_TEST

START_TEST(stop) {
    const size_t bytes = 4096;
    unsigned char *dev = prepare(bytes);
    XT_OK(xdev_memset_async(dev, 0xab, bytes, NULL));
    xdev_shadow_report_t r;
    expect_short_memset(&r, dev, bytes);
    XT_ERR(XDEV_ERROR_BACKEND, xdev_memset_async(dev, 0, bytes, NULL), "XDEV_SHADOW_ACTION=stop");
    ck_assert_msg(strstr(xdev_last_error(), "memset (memset of 4096 bytes") != NULL,
                  "the refusal does not quote the report: %s", xdev_last_error());
    XT_OK(xdev_shadow_clear());
    XT_OK(xdev_memset_async(dev, 0x11, 1, NULL));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(dev));
}
END_TEST

START_TEST(sync_compare) {
    const size_t bytes = 4096;
    unsigned char *dev = prepare(bytes);
    XT_OK(xdev_memset_async(dev, 0xab, bytes, NULL));
    ck_assert_uint_eq(xdev_shadow_report_count(), 0); /* not compared yet */
    unsigned char h[4096];
    XT_OK(xdev_memcpy(h, dev, bytes));
    xdev_shadow_report_t r;
    expect_short_memset(&r, dev, bytes);
    ck_assert_msg(strstr(r.text, "last written by memset") != NULL, "%s", r.text);
    XT_OK(xdev_free(dev));
}
END_TEST

START_TEST(gemm_lda) {
    enum { M = 8, NN = 4, K = 5, LDA = 12 };
    float ha[LDA * K], hb[K * NN], hc[M * NN];
    for (int i = 0; i < LDA * K; i++)
        ha[i] = (float)(i + 1);
    for (int i = 0; i < K * NN; i++)
        hb[i] = 1.0f;
    memset(hc, 0, sizeof hc);
    float *a = upload(ha, sizeof ha), *b = upload(hb, sizeof hb), *c = upload(hc, sizeof hc);
    ck_assert_uint_eq(xdev_shadow_report_count(), 0);
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, M, NN, K, 1.0, a, LDA, b, K,
                    0.0, c, M, NULL));
    XT_OK(xdev_synchronize());
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    xdev_shadow_report_t r;
    expect_difference(&r, "GEMM", "gemm f32 NN m=8 n=4 k=5 lda=12 ldb=5 ldc=8 batch=1");
    ck_assert_ptr_eq(r.buffer, c);
    ck_assert_uint_eq(r.element, 0);
    ck_assert_uint_eq(r.element_size, 4);
    float dev, cpu;
    memcpy(&dev, &r.device_bits, 4);
    memcpy(&cpu, &r.shadow_bits, 4);
    ck_assert_float_eq(dev, 85.0f);  /* A read with lda = m: 1 + 9 + 17 + 25 + 33 */
    ck_assert_float_eq(cpu, 125.0f); /* with lda = 12: 1 + 13 + 25 + 37 + 49 */
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
}
END_TEST

/* A new allocation of N elements of elem bytes, zeroed, written by kernel
 * `name` of shadow_kernels.c (its parameters: n, out) over 4 blocks of 256,
 * synchronized; the module is unloaded. */
static void *run_shadow_kernel(const char *name, size_t elem) {
    void *out;
    XT_OK(xdev_malloc_device(xt_dev(0), &out, N * elem));
    XT_OK(xdev_memset_async(out, 0, N * elem, NULL));
    xdev_module_t m;
    XT_OK(xdev_module_load(xt_dev(0), shadow_kernels_bundle(), &m));
    xdev_kernel_t f;
    XT_OK(xdev_module_get_kernel(m, name, &f));
    int n = N;
    xdev_arg_t args[] = {{&n, sizeof n}, {&out, sizeof out}};
    xdev_launch_config_t cfg = {.grid = {4, 1, 1}, .block = {256, 1, 1}, .stream = NULL};
    XT_OK(xdev_launch_kernel(f, &cfg, args, 2));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_module_unload(m));
    return out;
}

START_TEST(kernel_gpu) {
    if (xt_host_addressable())
        XT_SKIP("on a backend whose kernels are the host build (%s) the device build's fault "
                "does not exist; this runs on cuda and hip",
                xt_type_name());
    int *out = run_shadow_kernel("off_by_one", sizeof(int));
    int last = -1;
    XT_OK(xdev_memcpy(&last, out + N - 1, sizeof last));
    /* which side missed it: the GPU build without its fault, or the shadow */
    ck_assert_msg(xdev_shadow_report_count() >= 1, "no report; the device's out[%d] is %d: %s",
                  N - 1, last,
                  last == 0 ? "the GPU build left it unwritten, so the shadow missed the fault"
                            : "the GPU build wrote it: its fault is not compiled in");
    xdev_shadow_report_t r;
    first_report(&r);
    if (r.kind == XDEV_SHADOW_NOT_MIRRORED)
        XT_SKIP("the shadow cannot run this GPU module's host build yet: %s", r.text);
    ck_assert_int_eq(r.kind, XDEV_SHADOW_DIFFERENCE);
    ck_assert_msg(strstr(r.detail, "kernel off_by_one grid (4,1,1) block (256,1,1)") != NULL, "%s",
                  r.detail);
    ck_assert_msg(strstr(r.call_site, "test_shadow") != NULL, "%s", r.call_site);
    ck_assert_uint_eq(r.element, N - 1);
    ck_assert_uint_eq(r.differing, 1);
    XT_OK(xdev_free(out));
}
END_TEST

/* A GPU kernel that reads shared memory it never wrote (its device build
 * skips slot 7 of each block's tile): element 7 is the first difference. */
START_TEST(kernel_unset_shared) {
    if (xt_host_addressable())
        XT_SKIP("on a backend whose kernels are the host build (%s) the device build's fault "
                "does not exist; this runs on cuda and hip",
                xt_type_name());
    int *out = run_shadow_kernel("unset_shared", sizeof(int));
    ck_assert_uint_ge(xdev_shadow_report_count(), 1);
    xdev_shadow_report_t r;
    first_report(&r);
    ck_assert_int_eq(r.kind, XDEV_SHADOW_DIFFERENCE);
    ck_assert_msg(strstr(r.detail, "kernel unset_shared grid (4,1,1) block (256,1,1)") != NULL,
                  "%s", r.detail);
    ck_assert_msg(strstr(r.call_site, "test_shadow") != NULL, "%s", r.call_site);
    ck_assert_uint_eq(r.element, 7);
    XT_OK(xdev_free(out));
}
END_TEST

/* A kernel's outputs are compared (its pointer's extent unknown: the bytes
 * its replay wrote): own_address writes where it writes, which the mirror
 * is not, so elements 0 and 1 differ and the rest agree, on any backend. */
START_TEST(kernel_difference) {
    int *out = run_shadow_kernel("own_address", sizeof(int));
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    xdev_shadow_report_t r;
    XT_OK(xdev_shadow_report_get(0, &r));
    fprintf(stderr, "the report:\n%s", r.text);
    ck_assert_int_eq(r.kind, XDEV_SHADOW_DIFFERENCE);
    ck_assert_msg(strstr(r.detail, "kernel own_address grid (4,1,1) block (256,1,1)") != NULL, "%s",
                  r.detail);
    ck_assert_uint_le(r.element, 1);
    ck_assert_uint_ge(r.differing, 1);
    ck_assert_uint_le(r.differing, 2);
    ck_assert_uint_eq(r.elements, N); /* the replay wrote all of them */
    XT_OK(xdev_free(out));
}
END_TEST

/* A kernel's double outputs are compared as doubles within the tolerance:
 * near_one's bytes differ between the device and the mirror (its result
 * depends on where it writes) by less than 1e-12 of the value, so nothing
 * is reported (bit for bit, all of them would be). */
START_TEST(kernel_float_tolerance) {
    double *out = run_shadow_kernel("near_one", sizeof(double));
    double h = 0;
    XT_OK(xdev_memcpy(&h, out, sizeof h));
    ck_assert(h != 1.0 && fabs(h - 1.0) < 1e-12); /* not 1, and near it */
    expect_no_report();
    XT_OK(xdev_free(out));
}
END_TEST

/* A graph whose capture holds an op the shadow does not replay (a
 * histogram of managed memory, which has no mirror): its replay is
 * reported once (twice replayed), its outputs copied into the mirrors, so
 * later ops compare clean. */
START_TEST(not_mirrored) {
    xdev_stream_t s = xt_new_stream(0);
    int *k;
    int64_t *counts;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&k, N * sizeof(int)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&counts, 4 * sizeof(int64_t)));
    int *samples;
    XT_OK(xdev_malloc_managed(xt_dev(0), (void **)&samples, N * sizeof(int), 0));
    memset(samples, 0, N * sizeof(int)); /* the host writes managed memory */
    XT_OK(xdev_memset_async(k, 0, N * sizeof(int), s));
    XT_OK(xdev_stream_synchronize(s));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_prim_histogram_even(samples, XDEV_DTYPE_I32, N, 4, 0.0, 4.0, counts, s));
    XT_OK(xdev_memset_async(k, 0x3c, N * sizeof(int), s));
    XT_OK(xdev_graph_capture_end(g));
    ck_assert_uint_eq(xdev_shadow_report_count(), 0); /* recorded, not run */
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    xdev_shadow_report_t r;
    first_report(&r);
    ck_assert_int_eq(r.kind, XDEV_SHADOW_NOT_MIRRORED);
    ck_assert_msg(strstr(r.text, "graph_replay") != NULL &&
                      strstr(r.text, "an operand is outside the mirrored device allocations") !=
                          NULL,
                  "%s", r.text);
    ck_assert_msg(strstr(r.call_site, "test_shadow") != NULL, "%s", r.call_site);
    int h[N];
    XT_OK(xdev_memcpy(h, k, sizeof h)); /* the mirror took the replay's bytes */
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    ck_assert_int_eq(h[N - 1], 0x3c3c3c3c);
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_free(k));
    XT_OK(xdev_free(counts));
    XT_OK(xdev_free(samples));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* The faulty plugin's memset captured in a graph (with a copy of its
 * buffer after it): named at the replay, with its capture call site. */
START_TEST(graph_short_memset) {
    const size_t bytes = 4096;
    unsigned char *dev = prepare(bytes), *dev2;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&dev2, bytes));
    xdev_stream_t s = xt_new_stream(0);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_memset_async(dev, 0xab, bytes, s)); /* the faulty op */
    XT_OK(xdev_memcpy_async(dev2, dev, bytes, s));
    XT_OK(xdev_graph_capture_end(g));
    ck_assert_uint_eq(xdev_shadow_report_count(), 0); /* recorded, not run */
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_stream_synchronize(s));
    xdev_shadow_report_t r;
    expect_short_memset(&r, dev, bytes);
    ck_assert_msg(strstr(r.detail, "captured in graph") != NULL, "detail: %s", r.detail);
    /* One report for the one fault: the copy of the short buffer is not named. */
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_free(dev2));
    XT_OK(xdev_free(dev));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* The CPU shadowing itself over a graph of several ops, replayed three
 * times with new input each time: every op replayed, nothing reported. */
START_TEST(graph_clean) {
    xdev_stream_t s = xt_new_stream(0);
    float *x, *y, *h = malloc(N * sizeof(float));
    int *k;
    ck_assert_ptr_nonnull(h);
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, N * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&y, N * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&k, N * sizeof(int)));
    float *rnd, *hr = malloc(N * sizeof(float));
    ck_assert_ptr_nonnull(hr);
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&rnd, N * sizeof(float)));
    xdev_module_t m;
    XT_OK(xdev_module_load(xt_dev(0), shadow_kernels_bundle(), &m));
    xdev_kernel_t iota;
    XT_OK(xdev_module_get_kernel(m, "iota3", &iota));
    int n = N;
    xdev_arg_t args[] = {{&n, sizeof n}, {&k, sizeof k}};
    xdev_launch_config_t cfg = {.grid = {4, 1, 1}, .block = {256, 1, 1}, .stream = s};
    XT_OK(xdev_memset_async(x, 0, N * sizeof(float), s));
    XT_OK(xdev_stream_synchronize(s));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_memcpy_async(y, x, N * sizeof(float), s)); /* DtoD */
    XT_OK(xdev_memset_async(k, 0x5a, N * sizeof(int), s));
    XT_OK(xdev_fill_async(k, XDEV_DTYPE_I32, xdev_scalar_i64(7), N / 2, s));
    XT_OK(xdev_axpy(XDEV_DTYPE_F32, N, 0.5, x, 1, y, 1, s));
    XT_OK(xdev_launch_kernel(iota, &cfg, args, 2));
    XT_OK(xdev_convert_async(x, XDEV_DTYPE_F32, k, XDEV_DTYPE_I32, N / 2, s));
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, rnd, N, s)); /* new numbers each replay */
    XT_OK(xdev_graph_capture_end(g));
    ck_assert_uint_eq(xdev_shadow_report_count(), 0);
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < N; i++)
            h[i] = (float)(i + rep);
        XT_OK(xdev_memcpy_async(x, h, N * sizeof(float), s)); /* new input, HtoD */
        XT_OK(xdev_graph_replay(g, s));
        XT_OK(xdev_memcpy_async(h, y, N * sizeof(float), s)); /* DtoH */
        float first = hr[0];
        XT_OK(xdev_memcpy_async(hr, rnd, N * sizeof(float), s)); /* the replay's numbers */
        XT_OK(xdev_stream_synchronize(s));
        if (rep > 0) ck_assert_float_ne(hr[0], first);
        for (int i = 0; i < N; i++)
            ck_assert_float_eq(h[i], 1.5f * (float)(i + rep));
    }
    int hk[N];
    XT_OK(xdev_memcpy(hk, k, sizeof hk));
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(hk[i], i * 3 + 1);
    expect_no_report(); /* every captured op was replayed */
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_free(k));
    XT_OK(xdev_free(rnd));
    XT_OK(xdev_stream_destroy(s));
    free(h);
    free(hr);
}
END_TEST

/* Memory another library allocated: registered, then written by the
 * faulty plugin's memset - named, as for xdev's own memory. */
START_TEST(foreign_short_memset) {
    const size_t bytes = 4096;
    unsigned char *p = aligned_alloc(64, bytes);
    ck_assert_ptr_nonnull(p);
    memset(p, 0x11, bytes); /* the bytes the mirror takes at registration */
    XT_OK(xdev_memory_register(xt_dev(0), p, bytes, NULL, NULL, NULL));
    XT_OK(xdev_memset_async(p, 0xab, bytes, NULL)); /* the faulty op */
    XT_OK(xdev_synchronize());
    xdev_shadow_report_t r;
    expect_short_memset(&r, p, bytes);
    XT_OK(xdev_memory_unregister(p));
    free(p);
}
END_TEST

typedef struct {
    DLManagedTensorVersioned m;
    int64_t shape[1];
    int deleted;
} tensor_t;

static void tensor_deleter(DLManagedTensorVersioned *self) {
    ((tensor_t *)self->manager_ctx)->deleted++;
}

/* The CPU shadowing itself over registered memory and a DLPack import:
 * each mirrored from its bytes at import, every op on them replayed. */
START_TEST(foreign_clean) {
    xdev_stream_t s = xt_new_stream(0);
    unsigned char *p = aligned_alloc(64, 4096);
    float *y = aligned_alloc(64, 4096), *x, *h = malloc(N * sizeof(float));
    ck_assert(p != NULL && y != NULL && h != NULL);
    for (int i = 0; i < 4096; i++)
        p[i] = (unsigned char)i;
    for (int i = 0; i < N; i++)
        y[i] = (float)i;
    XT_OK(xdev_memory_register(xt_dev(0), p, 4096, s, NULL, NULL));
    tensor_t t = {.shape = {N}};
    t.m = (DLManagedTensorVersioned){.version = {1, 0},
                                     .manager_ctx = &t,
                                     .deleter = tensor_deleter,
                                     .dl_tensor = {.data = y,
                                                   .device = {kDLCPU, 0},
                                                   .ndim = 1,
                                                   .dtype = {kDLFloat, 32, 1},
                                                   .shape = t.shape}};
    xdev_tensor_view_t v;
    XT_OK(xdev_dlpack_import(&t.m, XDEV_DLPACK_CONTIGUOUS | XDEV_DLPACK_WRITABLE, s, &v));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, N * sizeof(float)));
    XT_OK(xdev_memcpy_async(x, p, N * sizeof(float) < 4096 ? N * sizeof(float) : 4096, s));
    XT_OK(xdev_memset_async(p + 100, 0x77, 200, s));
    XT_OK(xdev_fill_async(x, XDEV_DTYPE_F32, xdev_scalar_f64(2.0), N, s));
    XT_OK(xdev_axpy(XDEV_DTYPE_F32, N, 0.5, x, 1, v.data, 1, s)); /* y += 0.5 x */
    XT_OK(xdev_memcpy_async(h, v.data, N * sizeof(float), s));
    unsigned char hp[4096];
    XT_OK(xdev_memcpy_async(hp, p, sizeof hp, s));
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(h[i], (float)i + 1.0f);
    ck_assert_uint_eq(hp[100], 0x77);
    ck_assert_uint_eq(hp[300], (unsigned char)300);
    expect_no_report(); /* every op was replayed */
    XT_OK(xdev_memory_unregister(v.base));
    ck_assert_int_eq(t.deleted, 1);
    XT_OK(xdev_memory_unregister(p));
    XT_OK(xdev_free(x));
    XT_OK(xdev_stream_destroy(s));
    free(p);
    free(y);
    free(h);
}
END_TEST

/* A BLAS vector routine's report names the routine it ran: on expandable
 * segments (XDEV_ALLOC_CONF=expandable_segments:true, not mirrored) an
 * axpy and a scal are each reported as not mirrored, with their details. */
START_TEST(vec_names) {
    float *x, *y;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, N * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&y, N * sizeof(float)));
    XT_OK(xdev_axpy(XDEV_DTYPE_F32, N, 0.5, x, 1, y, 1, NULL));
    XT_OK(xdev_scal(XDEV_DTYPE_F32, N, 2.0, y, 1, NULL));
    XT_OK(xdev_synchronize());
    bool axpy = false, scal = false;
    for (uint64_t i = 0; i < xdev_shadow_report_count() && i < XDEV_SHADOW_KEPT; i++) {
        xdev_shadow_report_t r;
        XT_OK(xdev_shadow_report_get(i, &r));
        fprintf(stderr, "%s", r.text);
        if (strcmp(r.op, "axpy") == 0) axpy = strncmp(r.detail, "axpy f32 n=1000", 15) == 0;
        if (strcmp(r.op, "scal") == 0) scal = strncmp(r.detail, "scal f32 n=1000", 15) == 0;
    }
    ck_assert_msg(axpy && scal, "the axpy and the scal are not named by their details");
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
}
END_TEST

/* Every primitive on the CPU shadowing itself: replayed and compared, no
 * report of any kind (each was "not mirrored" before), in both modes of
 * the floating sums. A compaction's items past its count are not
 * compared: the device's tail is made to differ from the mirror's first
 * (the CPU's device memory is the host's), and neither the compaction nor
 * a later copy of the whole buffer reports it. */
START_TEST(prims_clean) {
    enum { P = 5000, SEGS = 7 };
    xdev_stream_t s = xt_new_stream(0);
    float *x, *y;
    int32_t *k, *ko, *v, *vo;
    int64_t *off, *cnt, *num, *len;
    uint8_t *fl;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, P * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&y, P * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&k, P * sizeof(int32_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&ko, P * sizeof(int32_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&v, P * sizeof(int32_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&vo, P * sizeof(int32_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&off, (SEGS + 1) * sizeof(int64_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&cnt, 16 * sizeof(int64_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&num, sizeof(int64_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&len, P * sizeof(int64_t)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&fl, P));
    static float hx[P];
    static int32_t hk[P];
    static uint8_t hf[P];
    for (int i = 0; i < P; i++) {
        hx[i] = (float)((i * 7919) % 1000) / 7.0f - 50.0f;
        hk[i] = (i * 7919) % 97 - 40; /* repeats: a stable sort's order shows */
        hf[i] = (uint8_t)(i % 3 == 0);
    }
    int64_t ho[SEGS + 1] = {0, 10, 10, 700, 2000, 1500, 4000, P}; /* empty, overlapping */
    XT_OK(xdev_memcpy_async(x, hx, sizeof hx, s));
    XT_OK(xdev_memcpy_async(k, hk, sizeof hk, s));
    XT_OK(xdev_memcpy_async(fl, hf, sizeof hf, s));
    XT_OK(xdev_memcpy_async(off, ho, sizeof ho, s));
    XT_OK(xdev_convert_async(v, XDEV_DTYPE_I32, k, XDEV_DTYPE_I32, P, s));
    for (int det = 0; det < 2; det++) {
        XT_OK(xdev_set_deterministic(det == 1));
        XT_OK(xdev_prim_reduce(x, XDEV_DTYPE_F32, P, XDEV_PRIM_SUM, y, s));
        XT_OK(xdev_prim_reduce(k, XDEV_DTYPE_I32, P, XDEV_PRIM_ARGMAX, cnt, s));
        XT_OK(xdev_prim_scan(x, XDEV_DTYPE_F32, P, XDEV_PRIM_SUM, 0, y, s));
        XT_OK(xdev_prim_segmented_reduce(x, XDEV_DTYPE_F32, P, off, SEGS, XDEV_PRIM_SUM, y, s));
        XT_OK(xdev_prim_segmented_reduce(x, XDEV_DTYPE_F32, P, off, SEGS, XDEV_PRIM_MIN, y, s));
        XT_OK(
            xdev_prim_segmented_reduce(k, XDEV_DTYPE_I32, P, off, SEGS, XDEV_PRIM_ARGMIN, cnt, s));
    }
    XT_OK(xdev_set_deterministic(false));
    XT_OK(xdev_prim_sort_keys(x, XDEV_DTYPE_F32, P, XDEV_PRIM_DESCENDING, 0, 0, y, s));
    XT_OK(xdev_prim_sort_pairs(k, v, XDEV_DTYPE_I32, 4, P, 0, 3, 20, ko, vo, s));
    XT_OK(xdev_prim_segmented_sort(k, v, XDEV_DTYPE_I32, 4, P, off, SEGS, 0, 0, 0, ko, vo, s));
    XT_OK(xdev_prim_segmented_sort(x, NULL, XDEV_DTYPE_F32, 0, P, off, SEGS, 0, 0, 0, y, NULL, s));
    XT_OK(xdev_prim_histogram_even(x, XDEV_DTYPE_F32, P, 16, -40.0, 40.0, cnt, s));
    XT_OK(xdev_stream_synchronize(s));
    /* The compactions' tails: the device's differ from the mirrors'. */
    memset(ko, 0x77, P * sizeof(int32_t));
    memset(len, 0x77, P * sizeof(int64_t));
    memset(y, 0x77, P * sizeof(float));
    XT_OK(xdev_prim_select_flagged(k, 4, fl, P, ko, num, s));
    /* select_compare (a comparison: no flags), then a compiled predicate */
    XT_OK(xdev_prim_select_if(x, XDEV_DTYPE_F32, P, "in0 > 10.0f", y, num, s));
    XT_OK(xdev_prim_select_if(x, XDEV_DTYPE_F32, P, "in0 > 10.0f && in0 < 30", y, num, s));
    XT_OK(xdev_prim_sort_keys(k, XDEV_DTYPE_I32, P, 0, 0, 0, v, s));
    XT_OK(xdev_prim_unique(v, XDEV_DTYPE_I32, P, ko, num, s));
    XT_OK(xdev_prim_run_length_encode(v, XDEV_DTYPE_I32, P, ko, len, num, s));
    int64_t runs = 0;
    XT_OK(xdev_memcpy_async(&runs, num, sizeof runs, s));
    XT_OK(xdev_memcpy_async(hk, ko, sizeof hk, s)); /* the whole buffer, tail included */
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_int_eq(runs, 97);
    ck_assert_int_eq(hk[0], -40);
    ck_assert_uint_eq(hk[P - 1], 0x77777777u); /* select_flagged kept P / 3 */
    expect_no_report();
    void *bufs[] = {x, y, k, ko, v, vo, off, cnt, num, len, fl};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        XT_OK(xdev_free(bufs[i]));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* The faulty plugin's histogram never counts its last bin: named, with its
 * call site, the last bin and both counts. */
START_TEST(histogram_last_bin) {
    enum { P = 1000, BINS = 8 };
    int32_t h[P];
    for (int i = 0; i < P; i++)
        h[i] = i % 80; /* 10 per value, 100 per bin */
    int64_t zero[BINS] = {0};
    int32_t *x = upload(h, sizeof h);
    int64_t *counts = upload(zero, sizeof zero);
    ck_assert_uint_eq(xdev_shadow_report_count(), 0);
    XT_OK(xdev_prim_histogram_even(x, XDEV_DTYPE_I32, P, BINS, 0.0, 80.0, counts, NULL));
    XT_OK(xdev_synchronize());
    ck_assert_uint_eq(xdev_shadow_report_count(), 1);
    xdev_shadow_report_t r;
    expect_difference(&r, "histogram_even", "histogram_even of 1000 i32 samples, 8 bins");
    ck_assert_ptr_eq(r.buffer, counts);
    ck_assert_uint_eq(r.element, BINS - 1);
    ck_assert_uint_eq(r.element_size, 8);
    ck_assert_uint_eq(r.differing, 1);
    ck_assert_uint_eq(r.device_bits, 0);
    ck_assert_uint_eq(r.shadow_bits, 120); /* 70 .. 79, 12 times */
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(counts));
}
END_TEST

START_TEST(off) {
    ck_assert(!xdev_shadow_enabled());
    float *x;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&x, 64));
    XT_OK(xdev_memset_async(x, 1, 64, NULL));
    XT_OK(xdev_synchronize());
    ck_assert_uint_eq(xdev_shadow_report_count(), 0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_shadow_report_get(0, NULL), "'out'");
    xdev_shadow_report_t r;
    XT_ERR(XDEV_ERROR_NOT_FOUND, xdev_shadow_report_get(0, &r), "report 0 is not kept");
    XT_OK(xdev_shadow_set_handler(NULL, NULL));
    XT_OK(xdev_shadow_clear());
    XT_OK(xdev_free(x));
}
END_TEST

static const char *g_bad_var;

START_TEST(bad) {
    xdev_status_t st = xdev_init();
    ck_assert_int_eq(st, XDEV_ERROR_ENV);
    ck_assert_msg(strstr(xdev_last_error(), g_bad_var) != NULL, "message: %s", xdev_last_error());
    ck_assert(!xdev_shadow_enabled());
}
END_TEST

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "clean";
    g_bad_var = argc > 2 ? argv[2] : "XDEV_SHADOW";
    Suite *su = suite_create("shadow");
    TCase *tc = tcase_create(which);
    tcase_set_timeout(tc, 120);
    if (strcmp(which, "clean") == 0) tcase_add_test(tc, clean);
    if (strcmp(which, "short_memset") == 0) tcase_add_test(tc, short_memset);
    if (strcmp(which, "stop") == 0) tcase_add_test(tc, stop);
    if (strcmp(which, "gemm_lda") == 0) tcase_add_test(tc, gemm_lda);
    if (strcmp(which, "sync") == 0) tcase_add_test(tc, sync_compare);
    if (strcmp(which, "kernel_gpu") == 0) tcase_add_test(tc, kernel_gpu);
    if (strcmp(which, "kernel_difference") == 0) tcase_add_test(tc, kernel_difference);
    if (strcmp(which, "kernel_unset_shared") == 0) tcase_add_test(tc, kernel_unset_shared);
    if (strcmp(which, "kernel_float_tolerance") == 0) tcase_add_test(tc, kernel_float_tolerance);
    if (strcmp(which, "not_mirrored") == 0) tcase_add_test(tc, not_mirrored);
    if (strcmp(which, "graph_short_memset") == 0) tcase_add_test(tc, graph_short_memset);
    if (strcmp(which, "graph_clean") == 0) tcase_add_test(tc, graph_clean);
    if (strcmp(which, "foreign_short_memset") == 0) tcase_add_test(tc, foreign_short_memset);
    if (strcmp(which, "foreign_clean") == 0) tcase_add_test(tc, foreign_clean);
    if (strcmp(which, "vec_names") == 0) tcase_add_test(tc, vec_names);
    if (strcmp(which, "prims_clean") == 0) tcase_add_test(tc, prims_clean);
    if (strcmp(which, "histogram_last_bin") == 0) tcase_add_test(tc, histogram_last_bin);
    if (strcmp(which, "off") == 0) tcase_add_test(tc, off);
    if (strcmp(which, "bad") == 0) tcase_add_test(tc, bad);
    suite_add_tcase(su, tc);
    char *args[] = {argv[0], "shadow"};
    return xt_run(srunner_create(su), "shadow", 2, args);
}
