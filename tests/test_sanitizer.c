/* SPDX-License-Identifier: Apache-2.0 */
/* test_sanitizer.c - the stream-order sanitizer (xdev/sanitizer.h).
 *
 * Run as `test_sanitizer sanitizer on` with XDEV_SANITIZE=streams on the
 * backend XDEV_BACKEND names (cpu in CI, cuda on a GPU machine). Each race test makes one unordered
 * pair of uses and checks that exactly one report names both calls; each correct-code test orders
 * its uses one of the ways the runtime knows (events, wait_stream, synchronizes, record_stream, the
 * same stream) and checks that nothing is reported. In tcase "off" (XDEV_SANITIZE unset) the same
 * racing code reports nothing; in "bad" a malformed XDEV_SANITIZE fails initialisation with a
 * message. Reports are caught by a handler, so the output stays quiet. The races are made harmless
 * by a handshake the sanitizer cannot see (see handshake). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_kernels.h"
#include "runtime/stream_order.h" /* xdev_order_clock_length: a hook exported for this suite */
#include "xdev/xdev.h"
#include "xt.h"

/* ------------------------------------------------------------ the handler */

enum { MAXR = 8 };
static char g_reports[MAXR][2048];
static int g_nreports;

static void on_report(const char *text, void *user) {
    (void)user;
    if (g_nreports < MAXR) snprintf(g_reports[g_nreports], sizeof g_reports[0], "%s", text);
    g_nreports++;
}

static xdev_device_t dev0;
static size_t n_floats = 4096;

static void setup(void) {
    XT_OK(xdev_init());
    ck_assert_msg(xdev_sanitizer_enabled(), "XDEV_SANITIZE=streams did not turn it on");
    XT_OK(xdev_sanitizer_set_handler(on_report, NULL));
    g_nreports = 0;
    dev0 = xt_dev(0);
}

static void teardown(void) {
    (void)xdev_synchronize();
}

/* Exactly one report, naming each needle ("a|b": either). */
static void expect_one_report(const char *n1, const char *n2) {
    ck_assert_msg(g_nreports == 1, "%d reports, expected 1%s%s", g_nreports,
                  g_nreports ? ":\n" : "", g_nreports ? g_reports[0] : "");
    ck_assert_msg(xt_icontains(g_reports[0], n1), "report lacks '%s':\n%s", n1, g_reports[0]);
    ck_assert_msg(xt_icontains(g_reports[0], n2), "report lacks '%s':\n%s", n2, g_reports[0]);
}

static void expect_silent(void) {
    ck_assert_msg(g_nreports == 0, "%d reports on correct code, the first:\n%s", g_nreports,
                  g_reports[0]);
}

static void *dmalloc(size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(dev0, &p, bytes));
    return p;
}

static xdev_stream_t mkstream(void) {
    xdev_stream_t s;
    XT_OK(xdev_stream_create(dev0, XDEV_STREAM_PRIORITY_NORMAL, &s));
    return s;
}

/* The races below are races to the sanitizer but must not be real ones
 * (ThreadSanitizer runs this suite): handshake(a, b) makes b's later work
 * wait for a's earlier work through two host functions and an atomic flag,
 * an order the application makes itself, which the sanitizer cannot see. */
typedef struct flag {
    atomic_int set;
} flag_t;
static flag_t g_flags[8];
static int g_nflags;

static void flag_set(void *f) {
    atomic_store(&((flag_t *)f)->set, 1);
}

static void flag_wait(void *f) {
    while (!atomic_load(&((flag_t *)f)->set))
        xt_sleep_ms(1);
}

static void handshake(xdev_stream_t a, xdev_stream_t b) {
    ck_assert_int_lt(g_nflags, 8);
    flag_t *f = &g_flags[g_nflags++];
    XT_OK(xdev_launch_host_func(a, flag_set, f));
    XT_OK(xdev_launch_host_func(b, flag_wait, f));
}

/* ------------------------------------------------------------ races */

/* The bug a new user hit: GEMMs on a side stream, then a blocking copy of
 * the result (on the default stream) with no order between them. */
START_TEST(race_gemm_then_blocking_copy) {
    setup();
    const int64_t n = 32;
    float *a = dmalloc(n * n * 4), *b = dmalloc(n * n * 4), *c = dmalloc(n * n * 4);
    xdev_stream_t side = mkstream();
    XT_OK(xdev_stream_set_name(side, "side"));
    XT_OK(xdev_fill_async(a, XDEV_DTYPE_F32, xdev_scalar_f64(1), n * n, side));
    XT_OK(xdev_fill_async(b, XDEV_DTYPE_F32, xdev_scalar_f64(1), n * n, side));
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, n, n, n, 1.0, a, n, b, n, 0.0,
                    c, n, side));
    expect_silent();
    xdev_stream_t cur;
    XT_OK(xdev_stream_current(dev0, &cur));
    handshake(side, cur);
    float host[16];
    XT_OK(xdev_memcpy(host, c, sizeof host));
    expect_one_report("GEMM (write", "memcpy (read");
    ck_assert_msg(xt_icontains(g_reports[0], "'side'"), "the side stream is not named:\n%s",
                  g_reports[0]);
    ck_assert_msg(xt_icontains(g_reports[0], "default stream"), "%s", g_reports[0]);
    ck_assert_msg(xt_icontains(g_reports[0], "test_sanitizer"),
                  "the call sites are not this program:\n%s", g_reports[0]);
    XT_OK(xdev_stream_synchronize(side));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
    XT_OK(xdev_stream_destroy(side));
    teardown();
}
END_TEST

/* Two writers: fills of one buffer on two streams. */
START_TEST(race_write_write) {
    setup();
    float *x = dmalloc(n_floats * 4);
    xdev_stream_t s1 = mkstream(), s2 = mkstream();
    XT_OK(xdev_fill_async(x, XDEV_DTYPE_F32, xdev_scalar_f64(1), n_floats, s1));
    handshake(s1, s2);
    XT_OK(xdev_memset_async(x, 0, n_floats * 4, s2));
    expect_one_report("fill (write", "memset (write");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(x));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    teardown();
}
END_TEST

/* A read on one stream, then a write on another (write after read). */
START_TEST(race_write_after_read) {
    setup();
    float *x = dmalloc(n_floats * 4), *y = dmalloc(n_floats * 4);
    xdev_stream_t s1 = mkstream(), s2 = mkstream();
    XT_OK(xdev_memset_async(x, 0, n_floats * 4, s1));
    XT_OK(xdev_stream_synchronize(s1));
    XT_OK(xdev_convert_async(y, XDEV_DTYPE_F32, x, XDEV_DTYPE_F32, n_floats, s1));
    expect_silent();
    handshake(s1, s2);
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, x, n_floats, s2));
    expect_one_report("uniform fill (write", "convert (read");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    teardown();
}
END_TEST

/* An FFT reading what an async copy on another stream writes. */
START_TEST(race_copy_then_fft) {
    setup();
    const int64_t n = 256;
    float *in = dmalloc(n * 8), *out = dmalloc(n * 8), *src = dmalloc(n * 8);
    xdev_stream_t s1 = mkstream(), s2 = mkstream();
    XT_OK(xdev_memset_async(src, 0, n * 8, s1));
    XT_OK(xdev_memcpy_async(in, src, n * 8, s1));
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    handshake(s1, s2);
    xdev_status_t st = xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_BACKWARD, s2);
    if (st == XDEV_ERROR_NOT_SUPPORTED) XT_SKIP("%s has no FFT", xt_type_name());
    XT_OK(st);
    expect_one_report("FFT (read", "memcpy (write");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(in));
    XT_OK(xdev_free(out));
    XT_OK(xdev_free(src));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    teardown();
}
END_TEST

/* A kernel writing y on one stream, a kernel reading it (const) on another. */
START_TEST(race_kernels) {
    setup();
    xdev_module_t m;
    XT_OK(xdev_module_load(dev0, conformance_kernels_bundle(), &m));
    xdev_kernel_t saxpy;
    XT_OK(xdev_module_get_kernel(m, "saxpy", &saxpy));
    float *x = dmalloc(n_floats * 4), *y = dmalloc(n_floats * 4), *z = dmalloc(n_floats * 4);
    xdev_stream_t s1 = mkstream(), s2 = mkstream();
    XT_OK(xdev_memset_async(x, 0, n_floats * 4, s1));
    XT_OK(xdev_memset_async(y, 0, n_floats * 4, s1));
    XT_OK(xdev_memset_async(z, 0, n_floats * 4, s2));
    long n = (long)n_floats;
    float a = 2.0f;
    xdev_launch_config_t c1 = {.grid = {16, 1, 1}, .block = {256, 1, 1}, .stream = s1};
    xdev_launch_config_t c2 = {.grid = {16, 1, 1}, .block = {256, 1, 1}, .stream = s2};
    XT_OK(XDEV_LAUNCH(saxpy, &c1, n, a, x, y)); /* y += 2x on s1 */
    expect_silent();
    handshake(s1, s2);
    XT_OK(XDEV_LAUNCH(saxpy, &c2, n, a, y, z)); /* z += 2y on s2: y unordered */
    expect_one_report("saxpy (read", "saxpy (write");
    XT_OK(xdev_synchronize());
    /* x read by kernels on two streams at once is fine (x is const). */
    g_nreports = 0;
    XT_OK(XDEV_LAUNCH(saxpy, &c1, n, a, x, y));
    XT_OK(XDEV_LAUNCH(saxpy, &c2, n, a, x, z));
    expect_silent();
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_free(z));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    XT_OK(xdev_module_unload(m));
    teardown();
}
END_TEST

/* A buffer used on a side stream and freed on its own without an order: the
 * allocator may hand it out at once to its stream's next work. */
START_TEST(race_free_without_record_stream) {
    setup();
    float *x = dmalloc(n_floats * 4); /* allocated on the current (default) stream */
    xdev_stream_t side = mkstream();
    XT_OK(xdev_memset_async(x, 0, n_floats * 4, side));
    XT_OK(xdev_free(x));
    expect_one_report("freed", "memset (write");
    ck_assert_msg(xt_icontains(g_reports[0], "xdev_record_stream"), "no remedy named:\n%s",
                  g_reports[0]);
    XT_OK(xdev_stream_synchronize(side));
    XT_OK(xdev_stream_destroy(side));
    teardown();
}
END_TEST

/* Collectives: all_reduce on each rank's stream over buffers a memset on
 * another stream of that device is still writing. */
START_TEST(race_collective) {
    setup();
    XT_REQUIRE_DEVICES(2);
    xdev_device_t devs[2] = {xt_dev(0), xt_dev(1)};
    xdev_communicator_t comms[2];
    XT_OK(xdev_communicator_init_all(comms, 2, devs));
    float *buf[2];
    xdev_stream_t side[2], rs[2];
    for (int i = 0; i < 2; i++) {
        XT_OK(xdev_malloc_device(devs[i], (void **)&buf[i], n_floats * 4));
        XT_OK(xdev_stream_create(devs[i], XDEV_STREAM_PRIORITY_NORMAL, &side[i]));
        XT_OK(xdev_stream_create(devs[i], XDEV_STREAM_PRIORITY_NORMAL, &rs[i]));
        XT_OK(xdev_memset_async(buf[i], 0, n_floats * 4, side[i]));
    }
    XT_OK(xdev_stream_wait_stream(rs[0], side[0])); /* rank 0 is ordered, rank 1 is not */
    handshake(side[1], rs[1]);
    XT_OK(xdev_group_start());
    for (int i = 0; i < 2; i++)
        XT_OK(xdev_all_reduce(comms[i], buf[i], buf[i], n_floats, XDEV_DTYPE_F32, XDEV_REDUCE_SUM,
                              rs[i]));
    XT_OK(xdev_group_end());
    expect_one_report("xdev_all_reduce (read", "memset (write");
    XT_OK(xdev_synchronize());
    for (int i = 0; i < 2; i++) {
        XT_OK(xdev_free(buf[i]));
        XT_OK(xdev_stream_destroy(side[i]));
        XT_OK(xdev_stream_destroy(rs[i]));
        XT_OK(xdev_communicator_destroy(comms[i]));
    }
    teardown();
}
END_TEST

/* ------------------------------------------------------------ correct code */

/* Producer on s1, consumer on s2, ordered in one of the ways below. */
typedef enum {
    BY_EVENT,
    BY_WAIT_STREAM,
    BY_STREAM_SYNC,
    BY_EVENT_SYNC,
    BY_DEVICE_SYNC,
    BY_ALL_SYNC,
    BY_QUERY,
    BY_CHAIN, /* s1 -> event -> s3 -> wait_stream -> s2 */
    BY_COUNT
} order_t;

static const char *const order_names[] = {"event",       "wait_stream", "stream_sync", "event_sync",
                                          "device_sync", "synchronize", "query",       "chain"};

START_TEST(silent_when_ordered) {
    order_t how = (order_t)_i;
    setup();
    const int64_t n = 16;
    float *a = dmalloc(n * n * 4), *b = dmalloc(n * n * 4), *c = dmalloc(n * n * 4);
    xdev_stream_t s1 = mkstream(), s2 = mkstream(), s3 = mkstream();
    xdev_event_t e;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e));
    XT_OK(xdev_fill_async(a, XDEV_DTYPE_F32, xdev_scalar_f64(1), n * n, s1));
    XT_OK(xdev_fill_async(b, XDEV_DTYPE_F32, xdev_scalar_f64(1), n * n, s1));
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, n, n, n, 1.0, a, n, b, n, 0.0,
                    c, n, s1));
    switch (how) {
    case BY_EVENT:
        XT_OK(xdev_event_record(e, s1));
        XT_OK(xdev_stream_wait_event(s2, e));
        break;
    case BY_WAIT_STREAM:
        XT_OK(xdev_stream_wait_stream(s2, s1));
        break;
    case BY_STREAM_SYNC:
        XT_OK(xdev_stream_synchronize(s1));
        break;
    case BY_EVENT_SYNC:
        XT_OK(xdev_event_record(e, s1));
        XT_OK(xdev_event_synchronize(e));
        break;
    case BY_DEVICE_SYNC:
        XT_OK(xdev_device_synchronize(dev0));
        break;
    case BY_ALL_SYNC:
        XT_OK(xdev_synchronize());
        break;
    case BY_QUERY:
        XT_OK(xdev_event_record(e, s1));
        while (xdev_event_query(e) == XDEV_ERROR_NOT_READY)
            xt_sleep_ms(1);
        break;
    case BY_CHAIN:
        XT_OK(xdev_event_record(e, s1));
        XT_OK(xdev_stream_wait_event(s3, e));
        XT_OK(xdev_stream_wait_stream(s2, s3));
        break;
    default:
        ck_abort();
    }
    /* consume on s2: read c and a, overwrite b */
    XT_OK(xdev_convert_async(a, XDEV_DTYPE_F32, c, XDEV_DTYPE_F32, n * n, s2));
    XT_OK(xdev_memset_async(b, 0, n * n * 4, s2));
    /* and back on the host through the default stream, ordered after s2 */
    XT_OK(xdev_stream_synchronize(s2));
    float host[4];
    XT_OK(xdev_memcpy(host, a, sizeof host));
    ck_assert_msg(host[0] == (float)n, "%s: a[0] = %g, want %g", order_names[how], host[0],
                  (double)n);
    expect_silent();
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    XT_OK(xdev_stream_destroy(s3));
    teardown();
}
END_TEST

/* Reads on two streams, disjoint halves written on two streams, work on
 * one stream, and frees ordered by record_stream or a synchronize need no
 * further order. */
START_TEST(silent_reads_disjoint_same_stream_frees) {
    setup();
    size_t bytes = n_floats * 4, half = bytes / 2;
    char *x = dmalloc(bytes), *y = dmalloc(bytes), *z = dmalloc(bytes), *w = dmalloc(bytes);
    char *v = dmalloc(bytes), *u = dmalloc(bytes);
    xdev_stream_t s1 = mkstream(), s2 = mkstream();
    XT_OK(xdev_memset_async(x, 0, bytes, NULL));
    XT_OK(xdev_device_synchronize(dev0));
    XT_OK(xdev_memcpy_async(y, x, bytes, s1)); /* x read on s1 */
    XT_OK(xdev_memcpy_async(z, x, bytes, s2)); /* and on s2 */
    XT_OK(xdev_memset_async(w, 1, half, s1));  /* w's halves on two streams */
    XT_OK(xdev_memset_async(w + half, 2, half, s2));
    XT_OK(xdev_convert_async(y, XDEV_DTYPE_F32, y, XDEV_DTYPE_F32, n_floats, s1)); /* in order */
    XT_OK(xdev_memset_async(v, 0, bytes, s1));
    XT_OK(xdev_record_stream(v, s1));
    XT_OK(xdev_free(v)); /* the allocator waits for s1 before reusing v */
    XT_OK(xdev_memset_async(u, 0, bytes, s2));
    XT_OK(xdev_stream_synchronize(s2));
    XT_OK(xdev_free(u));
    XT_OK(xdev_synchronize());
    unsigned char h[2];
    XT_OK(xdev_memcpy(&h[0], w, 1));
    XT_OK(xdev_memcpy(&h[1], w + half, 1));
    ck_assert_int_eq(h[0], 1);
    ck_assert_int_eq(h[1], 2);
    expect_silent();
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_free(z));
    XT_OK(xdev_free(w));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    teardown();
}
END_TEST

/* Streams made and destroyed in turn (their sanitizer ids are reused):
 * what a destroyed stream did is ordered before later work (its destroy
 * waited), and a race between live streams is still found. */
START_TEST(streams_made_and_destroyed) {
    setup();
    float *x = dmalloc(n_floats * 4), *y = dmalloc(n_floats * 4);
    /* The clocks hold an entry per stream id: with ids reused they stay at
     * the streams alive at once (two here, plus those of earlier tests in
     * this process), not the 400 made. */
    const size_t before = xdev_order_clock_length(), live = 2, margin = 2;
    for (int i = 0; i < 200; i++) {
        xdev_stream_t s = mkstream(), t = mkstream();
        XT_OK(xdev_memset_async(x, i & 0xff, n_floats * 4, s));
        XT_OK(xdev_memset_async(y, i & 0xff, n_floats * 4, t));
        XT_OK(xdev_stream_destroy(s));
        XT_OK(xdev_stream_destroy(t));
        size_t len = xdev_order_clock_length();
        ck_assert_msg(len <= before + live + margin,
                      "after %d create/destroy cycles of %zu streams the sanitizer's vector "
                      "clocks hold %zu entries, more than the %zu before plus %zu live plus %zu: "
                      "destroyed streams' ids are not reused",
                      i + 1, live, len, before, live, margin);
    }
    ck_assert_msg(xdev_order_clock_length() >= live, "the clocks never held the live streams");
    expect_silent();
    xdev_stream_t a = mkstream(), b = mkstream();
    XT_OK(xdev_memset_async(y, 0, n_floats * 4, a));
    handshake(a, b);
    XT_OK(xdev_memcpy_async(x, y, n_floats * 4, b)); /* y: written on a, unordered */
    expect_one_report("memcpy (read", "memset (write");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
    teardown();
}
END_TEST

/* ------------------------------------------------------------ off, malformed */

/* Without XDEV_SANITIZE the racing code of the first test reports nothing. */
START_TEST(off_reports_nothing) {
    XT_OK(xdev_init());
    ck_assert(!xdev_sanitizer_enabled());
    XT_OK(xdev_sanitizer_set_handler(on_report, NULL));
    dev0 = xt_dev(0);
    float *x = dmalloc(n_floats * 4);
    xdev_stream_t s1 = mkstream(), s2 = mkstream();
    XT_OK(xdev_fill_async(x, XDEV_DTYPE_F32, xdev_scalar_f64(1), n_floats, s1));
    handshake(s1, s2);
    XT_OK(xdev_memset_async(x, 0, n_floats * 4, s2));
    XT_OK(xdev_synchronize());
    ck_assert_int_eq(g_nreports, 0);
    ck_assert_uint_eq(xdev_sanitizer_report_count(), 0);
    XT_OK(xdev_free(x));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
}
END_TEST

START_TEST(malformed_setting_fails_init) {
    setenv("XDEV_SANITIZE", "stream", 1);
    XT_ERR(XDEV_ERROR_ENV, xdev_init(), "XDEV_SANITIZE", "'stream'", "streams");
    ck_assert(!xdev_sanitizer_enabled());
}
END_TEST

/* Usage: test_sanitizer sanitizer on|off|bad (a tcase per setting). */
int main(int argc, char **argv) {
    Suite *s = suite_create("sanitizer");
    TCase *on = tcase_create("on"), *off = tcase_create("off"), *bad = tcase_create("bad");
    tcase_set_timeout(on, 120);
    tcase_add_test(on, race_gemm_then_blocking_copy);
    tcase_add_test(on, race_write_write);
    tcase_add_test(on, race_write_after_read);
    tcase_add_test(on, race_copy_then_fft);
    tcase_add_test(on, race_kernels);
    tcase_add_test(on, race_free_without_record_stream);
    tcase_add_test(on, race_collective);
    tcase_add_loop_test(on, silent_when_ordered, 0, BY_COUNT);
    tcase_add_test(on, silent_reads_disjoint_same_stream_frees);
    tcase_add_test(on, streams_made_and_destroyed);
    tcase_add_test(off, off_reports_nothing);
    tcase_add_test(bad, malformed_setting_fails_init);
    suite_add_tcase(s, on);
    suite_add_tcase(s, off);
    suite_add_tcase(s, bad);
    return xt_run(srunner_create(s), "sanitizer", argc, argv);
}
