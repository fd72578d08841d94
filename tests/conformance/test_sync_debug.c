/* SPDX-License-Identifier: Apache-2.0 */
/* test_sync_debug.c - the sync debug mode (xdev/runtime.h,
 * torch.cuda.set_sync_debug_mode): it flags exactly the calls that make the
 * host wait for a device, never a stream-ordered one; error fails them
 * before they wait, warn writes one line per call site.
 * Conformance: XDEV_BACKEND=<backend under test> (cpu: XDEV_CPU_DEVICES=2).
 * Entries: sync_debug (tcase api), sync_debug.env_error (XDEV_SYNC_DEBUG=error,
 * tcase env_error), sync_debug.env_bad (XDEV_SYNC_DEBUG=loud, tcase env_bad),
 * sync_debug.oom (cpu, XDEV_CPU_MEMORY=64M, tcase oom). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

START_TEST(bad_input) {
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_sync_debug_mode((xdev_sync_debug_mode_t)3), "mode 3");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_sync_debug_mode((xdev_sync_debug_mode_t)-1),
           "mode -1");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_sync_debug_mode(NULL), "out");
    xdev_sync_debug_mode_t m = (xdev_sync_debug_mode_t)99;
    XT_OK(xdev_get_sync_debug_mode(&m));
    ck_assert_int_eq(m, XDEV_SYNC_DEBUG_OFF); /* unset XDEV_SYNC_DEBUG: off */
    for (int v = XDEV_SYNC_DEBUG_OFF; v <= XDEV_SYNC_DEBUG_ERROR; v++) {
        XT_OK(xdev_set_sync_debug_mode((xdev_sync_debug_mode_t)v));
        XT_OK(xdev_get_sync_debug_mode(&m));
        ck_assert_int_eq(m, v);
    }
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_OFF));
}
END_TEST

/* Stream-ordered work (copies both ways with pinned host memory, memset,
 * host functions, event record, stream waits, queries): never flagged, even
 * in error mode, and queued behind a closed gate so that nothing has waited. */
START_TEST(stream_ordered_never_flagged) {
    xdev_stream_t s = xt_new_stream(0);
    enum { N = 4096 };
    unsigned char *d = NULL, *pinned = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&d, N));
    XT_OK(xdev_host_alloc((void **)&pinned, N));
    memset(pinned, 7, N);
    xdev_event_t e;
    XT_OK(xdev_event_create(0, &e));
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, XT_GATE_LIMIT_MS);
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_ERROR));
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_memcpy_async(d, pinned, N, s));
    XT_OK(xdev_memset_async(d, 3, 16, s));
    XT_OK(xdev_memcpy_async(pinned, d, N, s));
    XT_OK(xdev_event_record(e, s));
    xdev_stream_t s2 = xt_new_stream(0);
    XT_OK(xdev_stream_wait_event(s2, e));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(s));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_event_query(e));
    /* A device-to-host copy into pageable memory waits on an accelerator
     * (CUDA returns once the data is there); on the CPU it is queued. */
    static unsigned char pageable[N];
    if (xt_host_addressable())
        XT_OK(xdev_memcpy_async(pageable, d, N, s));
    else
        XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_memcpy_async(pageable, d, N, s), "pageable");
    ck_assert_int_eq(atomic_load(&gate.entered) <= 1, 1);
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_OFF));
    xt_gate_open(&gate);
    xt_opener_join(&opener);
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_uint_eq(pinned[0], 3);
    ck_assert_uint_eq(pinned[100], 7);
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_host_free(pinned));
    XT_OK(xdev_free(d));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(s2));
    xt_gate_destroy(&gate);
}
END_TEST

/* Every call that waits fails with XDEV_ERROR_SYNC_DEBUG in error mode,
 * before it waits: the gate is still closed and the work still queued. */
START_TEST(waiting_calls_fail_before_waiting) {
    xdev_stream_t s = xt_new_stream(0);
    enum { N = 256 };
    unsigned char *d = NULL, host[N];
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&d, N));
    XT_OK(xdev_memset_async(d, 1, N, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    xdev_event_t e;
    XT_OK(xdev_event_create(0, &e));
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, XT_GATE_LIMIT_MS);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_event_record(e, s));
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_ERROR));
    const char *dev = xt_name(0);
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_stream_synchronize(s), "xdev_stream_synchronize", dev,
           "sync debug mode is error");
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_event_synchronize(e), "xdev_event_synchronize", dev);
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_device_synchronize(xt_dev(0)), "xdev_device_synchronize",
           dev);
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_synchronize(), "xdev_synchronize", "every device");
    memset(host, 9, N);
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_memcpy(host, d, N), "xdev_memcpy", "blocking copy");
    ck_assert_uint_eq(host[0], 9); /* nothing was copied */
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_memcpy(d, host, N), "xdev_memcpy");
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_stream_destroy(s), "xdev_stream_destroy", "work queued");
    /* none of them waited: the work behind the gate is still pending */
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(s));
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_OFF));
    xt_gate_open(&gate);
    xt_opener_join(&opener);
    XT_OK(xdev_stream_synchronize(s));
    /* an idle stream's destroy does not wait: not flagged */
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_ERROR));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_OFF));
    XT_OK(xdev_memcpy(host, d, N));
    ck_assert_uint_eq(host[0], 1);
    XT_OK(xdev_event_destroy(e));
    XT_OK(xdev_free(d));
    xt_gate_destroy(&gate);
}
END_TEST

/* A free's own waits are not the user's synchronizes: xdev_host_free of a
 * block more streams used than it tracks waits for every device, and must
 * do so in error mode too, or the block could be reused under a queued copy. */
START_TEST(free_still_waits_in_error_mode) {
    enum { S = 5, N = 4096 };
    xdev_stream_t s[S];
    unsigned char *pin = NULL, *d = NULL;
    XT_OK(xdev_host_alloc((void **)&pin, N));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&d, S * N)); /* a region per stream */
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 300); /* opens the gate after 300 ms */
    for (int i = 0; i < S; i++) {
        s[i] = xt_new_stream(0);
        if (i == S - 1) XT_OK(xdev_launch_host_func(s[i], xt_gate_wait_fn, &gate));
        XT_OK(xdev_memcpy_async(d + (size_t)i * N, pin, N, s[i]));
    }
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_ERROR));
    XT_OK(xdev_host_free(pin)); /* waits for the gated copy */
    XT_STATUS(XDEV_SUCCESS, xdev_stream_query(s[S - 1]));
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_OFF));
    xt_opener_join(&opener);
    for (int i = 0; i < S; i++)
        XT_OK(xdev_stream_destroy(s[i]));
    XT_OK(xdev_free(d));
    xt_gate_destroy(&gate);
}
END_TEST

/* stderr into a file while fn runs; its text (the caller frees it). */
static char *capture_stderr(void (*fn)(void)) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    int saved = dup(STDERR_FILENO);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(tmp), STDERR_FILENO), 0);
    fn();
    fflush(stderr);
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    long n = ftell(tmp);
    if (n < 0) n = 0;
    char *text = calloc((size_t)n + 1, 1);
    ck_assert_ptr_nonnull(text);
    rewind(tmp);
    size_t got = fread(text, 1, (size_t)n, tmp);
    text[got] = '\0';
    fclose(tmp);
    return text;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void warn_calls(void) {
    xdev_stream_t s = xt_new_stream(0);
    unsigned char *d = NULL, host[64];
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&d, sizeof host));
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_WARN));
    for (int i = 0; i < 5; i++) /* one call site, five calls: one line */
        XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_stream_synchronize(s)); /* a second site */
    XT_OK(xdev_memcpy(host, d, sizeof host));
    XT_OK(xdev_memset_async(d, 0, sizeof host, s)); /* stream-ordered: nothing */
    static atomic_int flag;                         /* outlives the host function */
    XT_OK(xdev_launch_host_func(s, xt_flag_fn, &flag));
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_OFF));
    XT_OK(xdev_stream_synchronize(s)); /* off: nothing */
    XT_OK(xdev_free(d));
    XT_OK(xdev_stream_destroy(s));
}

START_TEST(warn_once_per_call_site) {
    char *text = capture_stderr(warn_calls);
    const char *line = xt_fmt("xdev: sync debug: xdev_stream_synchronize waits for %s (a stream "
                              "synchronize), called from ",
                              xt_name(0));
    ck_assert_msg(count_of(text, line) == 2, "expected 2 lines '%s', got:\n%s", line, text);
    ck_assert_msg(count_of(text, "xdev: sync debug: xdev_memcpy waits for") == 1, "got:\n%s", text);
    ck_assert_msg(count_of(text, "xdev: ") == 3, "3 lines in all, got:\n%s", text);
    /* the site is named as the sanitizer names it: this program and offset */
    ck_assert_msg(strstr(text, "test_sync_debug+0x") != NULL, "no call site in:\n%s", text);
    free(text);
}
END_TEST

/* XDEV_SYNC_DEBUG=error: the mode at initialisation. */
START_TEST(env_error) {
    xdev_sync_debug_mode_t m;
    XT_OK(xdev_get_sync_debug_mode(&m));
    ck_assert_int_eq(m, XDEV_SYNC_DEBUG_ERROR);
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_device_synchronize(xt_dev(0)), "sync debug");
}
END_TEST

/* XDEV_SYNC_DEBUG=loud: refused like every malformed XDEV_* variable. */
START_TEST(env_bad) {
    XT_ERR(XDEV_ERROR_ENV, xdev_init(), "XDEV_SYNC_DEBUG='loud'", "warn", "error");
    xdev_sync_debug_mode_t m;
    XT_ERR(XDEV_ERROR_ENV, xdev_get_sync_debug_mode(&m), "XDEV_SYNC_DEBUG");
}
END_TEST

/* XDEV_CPU_MEMORY=64M: a 40 MiB allocation fits only once the cached 30 MiB
 * segment is freed, which waits for the device: flagged. */
START_TEST(oom_retry_flagged) {
    XT_REQUIRE_CPU();
    void *p = NULL, *q = NULL;
    XT_OK(xdev_malloc(&p, (size_t)30 << 20));
    XT_OK(xdev_free(p)); /* cached */
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_ERROR));
    XT_ERR(XDEV_ERROR_SYNC_DEBUG, xdev_malloc(&q, (size_t)40 << 20), "out of memory",
           "free cached memory");
    XT_OK(xdev_set_sync_debug_mode(XDEV_SYNC_DEBUG_OFF));
    XT_OK(xdev_malloc(&q, (size_t)40 << 20));
    XT_OK(xdev_free(q));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("sync_debug");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, stream_ordered_never_flagged);
    tcase_add_test(tc, waiting_calls_fail_before_waiting);
    tcase_add_test(tc, warn_once_per_call_site);
    tcase_add_test(tc, free_still_waits_in_error_mode);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("env_error");
    tcase_add_test(te, env_error);
    suite_add_tcase(s, te);
    TCase *tb = tcase_create("env_bad");
    tcase_add_test(tb, env_bad);
    suite_add_tcase(s, tb);
    TCase *to = tcase_create("oom");
    tcase_add_test(to, oom_retry_flagged);
    suite_add_tcase(s, to);
    return xt_run(srunner_create(s), "sync_debug", argc, argv);
}
