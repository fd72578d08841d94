/* SPDX-License-Identifier: Apache-2.0 */
/* test_fft_work_oom.c - an out-of-memory observer may call the FFT functions
 * of the device whose FFT work area could not be allocated.
 *
 * xdev_fft_exec allocated the plan's work area with the device's plan-cache
 * lock (a spin lock) held, so an observer called for that allocation that
 * read the plan cache or ran an FFT on the device spun for ever. The work
 * area is now allocated unlocked. The CPU backend's FFTs need no work area,
 * so this runs on the fake cuda plugin built with FAKE_FFT (tests/plugins/
 * fake_cuda.c: 1-D c2c f32 plans with a 4 MiB work area, a naive DFT; plans
 * made and live counted in fake_fft_counts, read here through dlsym).
 *   1. transform A on stream s1, twice: correct, the second from the
 *      thread's memo (its work area allocated before the lock);
 *   2. the allocator capped below the work area, an observer that reads the
 *      plan cache's size and runs transform B on s2 itself: B on s2 (a new
 *      descriptor and stream) is XDEV_ERROR_OUT_OF_MEMORY naming the work
 *      area, the observer ran once and both its calls returned (its FFT
 *      with the same error), nothing allocated is left, and the plans those
 *      execs made are neither cached nor counted (the cache holds A's);
 *   3. uncapped, B works again; 3b. capped, B from the memo: its work area
 *      fails before the plan is taken (the observer sees the counts
 *      unchanged) and the failed exec counts no lookup;
 *   4. caching off (max_size 0): a plan is made once per exec, kept across
 *      the allocation of its work area, and destroyed on every path, a
 *      failed one too.
 * Throughout, the cache statistics count one lookup per exec that gets its
 * work area, and a miss for each plan made and used (so misses - evictions
 * is what the cache holds). Before the fix step 2 hung: the alarm below
 * turns that into a failure naming it.
 * Run: XDEV_BACKEND=cuda XDEV_PLUGIN_PATH=<the fft plugin's directory>. */
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

#define XT_DIE_WHO "test_fft_work_oom"
#include "common/xt_die.h"
#include "common/xt_plugin.h"

#define NMAX 128
#define FREQ 3
#define WORK ((size_t)4 << 20) /* the fake plan's work area (FAKE_FFT_WORK) */
#define MIB ((size_t)1 << 20)

static _Atomic long *g_counts; /* the plugin's: plans made, plans live */
static const xdev_device_t k_dev = {XDEV_DEVICE_CUDA, 0};
static float *g_in, *g_out;

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_fft_work_oom: no progress in 20 s: an FFT call inside the "
                              "out-of-memory observer waits for the plan cache's lock\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

/* What the observer saw and did. */
typedef struct seen {
    int calls;
    xdev_status_t size_st;
    int64_t size;
    xdev_status_t exec_st;
    char exec_msg[2048];
    xdev_fft_desc_t desc; /* the transform it runs */
    xdev_stream_t stream;
} seen_t;

/* Calls the FFT functions of the failing allocation's device: each takes
 * the device's plan-cache lock. */
static void observer(const xdev_oom_info_t *info, void *user) {
    seen_t *s = user;
    s->calls++;
    CHECK(xdev_device_equal(info->device, k_dev), "the observer saw device {%d,%d}",
          (int)info->device.type, info->device.index);
    s->size_st = xdev_fft_plan_cache_size(info->device, &s->size);
    s->exec_st =
        xdev_fft_exec(&s->desc, g_in, g_out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s->stream);
    snprintf(s->exec_msg, sizeof s->exec_msg, "%s", xdev_last_error());
}

/* Step 3b's observer: the cache's counts when it runs. */
static void observer_counts(const xdev_oom_info_t *info, void *user) {
    (void)info;
    xdev_fft_plan_cache_stats_t *st = user;
    if (xdev_fft_plan_cache_stats(k_dev, st) != XDEV_SUCCESS) st->hits = -1;
}

static xdev_fft_desc_t desc_of(int64_t n) {
    return xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
}

/* `d` on `s` from e^(2 pi i FREQ j / n): out[FREQ] = n, the rest 0. */
static void run_ok(const xdev_fft_desc_t *d, xdev_stream_t s, const char *what) {
    int64_t n = d->n[0];
    float host[2 * NMAX];
    for (int64_t j = 0; j < n; j++) {
        double a = 6.283185307179586 * (double)((FREQ * j) % n) / (double)n;
        host[2 * j] = (float)cos(a);
        host[2 * j + 1] = (float)sin(a);
    }
    OK(xdev_memcpy(g_in, host, (size_t)n * 2 * sizeof(float)));
    OK(xdev_fft_exec(d, g_in, g_out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s));
    OK(xdev_stream_synchronize(s));
    OK(xdev_memcpy(host, g_out, (size_t)n * 2 * sizeof(float)));
    for (int64_t k = 0; k < n; k++) {
        double re = k == FREQ ? (double)n : 0.0;
        CHECK(fabs(host[2 * k] - re) < 1e-3 * (double)n && fabs(host[2 * k + 1]) < 1e-3 * (double)n,
              "%s: out[%lld] = (%g, %g), expected (%g, 0)", what, (long long)k, host[2 * k],
              host[2 * k + 1], re);
    }
}

/* The cache's hits and misses, and the plugin's plans made and live. */
static void expect_counts(int line, int64_t hits, int64_t misses, long made, long live) {
    xdev_fft_plan_cache_stats_t st;
    OK(xdev_fft_plan_cache_stats(k_dev, &st));
    long m = atomic_load(&g_counts[0]), l = atomic_load(&g_counts[1]);
    CHECK(st.hits == hits && st.misses == misses && m == made && l == live,
          "line %d: hits %lld misses %lld, plans made %ld live %ld; expected %lld %lld, %ld %ld",
          line, (long long)st.hits, (long long)st.misses, m, l, (long long)hits, (long long)misses,
          made, live);
}

static size_t allocated(void) {
    size_t a = 0;
    OK(xdev_memory_allocated(k_dev, &a));
    return a;
}

/* Cap the device's allocator 1 MiB above what it reserves now: less than
 * the work area. */
static void cap_below_work(void) {
    size_t reserved = 0, free_b = 0, total = 0;
    OK(xdev_synchronize());
    OK(xdev_empty_cache());
    OK(xdev_memory_reserved(k_dev, &reserved));
    OK(xdev_mem_get_info(k_dev, &free_b, &total));
    OK(xdev_set_per_process_memory_fraction((double)(reserved + MIB) / (double)total, k_dev));
}

/* B on s2 must fail for its work area, the observer having run `calls`
 * times in all, its calls returned. */
static void expect_work_oom(const xdev_fft_desc_t *b, xdev_stream_t s2, seen_t *seen, int calls,
                            int64_t cache_size, const char *step) {
    size_t before = allocated();
    char needle[64];
    snprintf(needle, sizeof needle, "%zu-byte work area", WORK);
    xdev_status_t st = xdev_fft_exec(b, g_in, g_out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s2);
    const char *msg = xdev_last_error();
    printf("%s: xdev_fft_exec returned %s: %.100s...\n", step, xdev_status_string(st), msg);
    CHECK(st == XDEV_ERROR_OUT_OF_MEMORY, "%s: returned %s", step, xdev_status_string(st));
    CHECK(xt_icontains(msg, "xdev_fft_exec") && xt_icontains(msg, "cannot allocate the FFT plan") &&
              xt_icontains(msg, needle),
          "%s: message '%s'", step, msg);
    CHECK(seen->calls == calls, "%s: the observer ran %d times, %d expected", step, seen->calls,
          calls);
    CHECK(seen->size_st == XDEV_SUCCESS && seen->size == cache_size,
          "%s: the observer's xdev_fft_plan_cache_size returned %s, size %lld (%lld expected)",
          step, xdev_status_string(seen->size_st), (long long)seen->size, (long long)cache_size);
    printf("%s: the observer's xdev_fft_exec returned %s: %.100s...\n", step,
           xdev_status_string(seen->exec_st), seen->exec_msg);
    CHECK(seen->exec_st == XDEV_ERROR_OUT_OF_MEMORY && xt_icontains(seen->exec_msg, needle),
          "%s: the observer's xdev_fft_exec returned %s: %s", step,
          xdev_status_string(seen->exec_st), seen->exec_msg);
    OK(xdev_synchronize());
    CHECK(allocated() == before, "%s: %zu bytes allocated after the failure, %zu before", step,
          allocated(), before);
}

int main(void) {
    signal(SIGALRM, on_alarm);
    alarm(20);
    int n = 0;
    OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    CHECK(n >= 1, "no cuda device: run with XDEV_BACKEND=cuda XDEV_PLUGIN_PATH=<the directory of "
                  "the fake cuda plugin built with FAKE_FFT>");
    g_counts = xt_plugin_symbol("fake_fft_counts", "built without FAKE_FFT?");

    size_t start = allocated();
    xdev_stream_t s1, s2;
    OK(xdev_stream_create(k_dev, XDEV_STREAM_PRIORITY_NORMAL, &s1));
    OK(xdev_stream_create(k_dev, XDEV_STREAM_PRIORITY_NORMAL, &s2));
    OK(xdev_malloc_device(k_dev, (void **)&g_in, NMAX * 2 * sizeof(float)));
    OK(xdev_malloc_device(k_dev, (void **)&g_out, NMAX * 2 * sizeof(float)));
    xdev_fft_desc_t a = desc_of(64), b = desc_of(NMAX);

    /* 1. A on s1: a miss (the plan made, kept uncounted until the work area
     * is there, then inserted and counted), then the memo's hit */
    run_ok(&a, s1, "step 1, A");
    run_ok(&a, s1, "step 1, A again");
    expect_counts(__LINE__, 1, 1, 1, 1);
    printf("step 1: A on s1 twice: correct\n");

    /* 2. capped: B on s2 makes its plan, its work area fails: nothing
     * counted, the plan destroyed; the observer sees A's plan alone, and its
     * B makes a plan and fails the same way */
    cap_below_work();
    seen_t seen = {.desc = b, .stream = s2};
    OK(xdev_memory_add_oom_observer(observer, &seen));
    expect_work_oom(&b, s2, &seen, 1, 1, "step 2");
    expect_counts(__LINE__, 1, 1, 3, 1);

    /* 3. uncapped: B a miss (made, then inserted with its work area), then
     * the memo's hit */
    OK(xdev_set_per_process_memory_fraction(1.0, k_dev));
    run_ok(&b, s2, "step 3, B");
    run_ok(&b, s2, "step 3, B again");
    expect_counts(__LINE__, 2, 2, 4, 2);
    printf("step 3: uncapped, B on s2 twice: correct\n");

    /* 3b. capped, B on s2 a third time: the memo's work area is allocated
     * before the lock, so its failure reaches the observer before the plan
     * is taken (the counts unchanged), and the failed exec counts nothing */
    OK(xdev_memory_remove_oom_observer(observer, &seen));
    cap_below_work();
    xdev_fft_plan_cache_stats_t at_oom = {.hits = -2};
    OK(xdev_memory_add_oom_observer(observer_counts, &at_oom));
    xdev_status_t st3 = xdev_fft_exec(&b, g_in, g_out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s2);
    CHECK(st3 == XDEV_ERROR_OUT_OF_MEMORY, "step 3b: returned %s", xdev_status_string(st3));
    CHECK(at_oom.hits == 2 && at_oom.misses == 2,
          "step 3b: the observer saw hits %lld misses %lld; 2 and 2 expected (the memo's work "
          "area allocated before the plan is taken)",
          (long long)at_oom.hits, (long long)at_oom.misses);
    OK(xdev_memory_remove_oom_observer(observer_counts, &at_oom));
    OK(xdev_memory_add_oom_observer(observer, &seen));
    OK(xdev_set_per_process_memory_fraction(1.0, k_dev));
    expect_counts(__LINE__, 2, 2, 4, 2);
    printf("step 3b: the memo's work area failed before the plan was taken\n");

    /* 4. caching off: each exec makes a transient plan once and destroys it */
    OK(xdev_fft_plan_cache_set_max_size(k_dev, 0));
    expect_counts(__LINE__, 2, 2, 4, 0);
    run_ok(&b, s2, "step 4, B"); /* the memo's work area, allocated first */
    expect_counts(__LINE__, 2, 3, 5, 0);
    run_ok(&a, s1, "step 4, A"); /* a memo miss: made, kept across the allocation */
    expect_counts(__LINE__, 2, 4, 6, 0);
    cap_below_work();
    expect_work_oom(&b, s2, &seen, 2, 0, "step 4"); /* outer and observer: one plan each */
    expect_counts(__LINE__, 2, 4, 8, 0);
    OK(xdev_memory_remove_oom_observer(observer, &seen));
    OK(xdev_set_per_process_memory_fraction(1.0, k_dev));
    run_ok(&b, s2, "step 4, B uncapped");
    expect_counts(__LINE__, 2, 5, 9, 0);
    printf("step 4: transient plans made once per exec, none left\n");

    OK(xdev_fft_plan_cache_set_max_size(k_dev, 4096));
    OK(xdev_free(g_in));
    OK(xdev_free(g_out));
    OK(xdev_stream_destroy(s1));
    OK(xdev_stream_destroy(s2));
    OK(xdev_synchronize());
    CHECK(allocated() == start, "%zu bytes allocated at the end, %zu at the start", allocated(),
          start);
    printf("test_fft_work_oom: ok\n");
    return 0;
}
