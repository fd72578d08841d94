/* SPDX-License-Identifier: Apache-2.0 */
/* test_kernel_faults.c - the `kernel_faults` conformance suite: kernels that
 * fault on the CPU device (kernels/fault_kernels.c, the kernel library, and
 * a kernel compiled at run time) fail their stream's next synchronisation
 * with XDEV_ERROR_LAUNCH_FAILURE naming the kernel, the block and the
 * faulting address, and the process goes on: the stream, the device and the
 * other streams keep working, and the application's own SIGSEGV handler
 * still gets the faults outside kernels (in a child process). Also: static
 * shared memory over the limit, a barrier some work-items skip, and pointer
 * arguments past the bytes requested (the allocator's rounding is not the
 * caller's). The same faults in the block form (XDEV_KERNEL_BLOCK), and
 * each work-item's rounding mode kept across the fiber form's barriers.
 * The signal tests are the CPU backend's (a GPU kernel's fault
 * loses the context); the launch checks run on every backend.
 * Conformance: XDEV_BACKEND=<backend>. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* BUS_MCEERR_AO */
#endif
#include <errno.h>
#include <fenv.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_kernels.h"
#include "xdev/kernel.h"
#include "xdev/memory.h"
#include "xt.h"

/* Elements between a faulting block's element and its wild write: 4 TiB of
 * ints below the buffer, nowhere near a mapping (above it, memory mapped
 * high would give a non-canonical address, whose fault has no address). */
#define WILD_OFFSET (-(1L << 40))

static char *g_self; /* argv[0]: the child scenarios run it again */

static void setup(void) {
    xt_reset_state();
}

static void *dalloc(size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, bytes));
    return p;
}

static xdev_module_t load(void) {
    xdev_module_t m = NULL;
    XT_OK(xdev_module_load(xt_dev(0), fault_kernels_bundle(), &m));
    return m;
}

static xdev_kernel_t kernel(xdev_module_t m, const char *name) {
    xdev_kernel_t k = NULL;
    XT_OK(xdev_module_get_kernel(m, name, &k));
    return k;
}

static xdev_launch_config_t cfg1(unsigned grid, unsigned block, xdev_stream_t s) {
    return (xdev_launch_config_t){.grid = {grid, 1, 1}, .block = {block, 1, 1}, .stream = s};
}

/* The message must hold each needle. */
static void expect_in(const char *msg, const char *needle) {
    ck_assert_msg(strstr(msg, needle) != NULL, "'%s' not in: %s", needle, msg);
}

/* The stream's next synchronisation reports the fault of kernel `name` in
 * block (bad,0,0) at address `addr` (NULL: not checked) once; the next one
 * succeeds. */
static void expect_fault(xdev_stream_t s, const char *name, int bad, const char *sig,
                         const void *addr) {
    xdev_status_t st = xdev_stream_synchronize(s);
    ck_assert_msg(st == XDEV_ERROR_LAUNCH_FAILURE, "a faulting kernel: %s (%s)",
                  xdev_status_string(st), xdev_last_error());
    const char *msg = xdev_last_error();
    char want[128];
    snprintf(want, sizeof want, "'%s'", name);
    expect_in(msg, want);
    snprintf(want, sizeof want, "block (%d,0,0)", bad);
    expect_in(msg, want);
    expect_in(msg, sig);
    if (addr != NULL) {
        snprintf(want, sizeof want, "%p", addr);
        expect_in(msg, want);
    }
    XT_OK(xdev_stream_synchronize(s)); /* reported once */
}

/* plus_k on stream s writes out[i] = i + k: the stream still runs kernels. */
static void expect_stream_works(xdev_module_t m, xdev_stream_t s, int *d, int n, int k) {
    xdev_kernel_t pk = kernel(m, "plus_k");
    xdev_launch_config_t c = cfg1((unsigned)(n + 63) / 64, 64, s);
    XT_OK(XDEV_LAUNCH(pk, &c, n, k, d));
    int *h = malloc((size_t)n * sizeof(int));
    XT_OK(xdev_memcpy_async(h, d, (size_t)n * sizeof(int), s));
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < n; i++)
        ck_assert_msg(h[i] == i + k, "after the fault: out[%d] = %d, not %d", i, h[i], i + k);
    free(h);
}

/* A wild write by block `bad` of `grid` in kernel `name` of module m. */
static void wild_write_in_grid(xdev_module_t m, const char *name, unsigned grid, unsigned block,
                               int item, int bad) {
    xdev_kernel_t k = kernel(m, name);
    int n = (int)grid * (int)block;
    int *out = dalloc((size_t)n * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t c = cfg1(grid, block, s);
    long off = WILD_OFFSET;
    XT_OK(XDEV_LAUNCH(k, &c, bad, off, out)); /* enqueued fine: the fault comes later */
    const void *addr = out + (long)bad * block + item + off;
    expect_fault(s, name, bad, "SIGSEGV", addr);
    expect_stream_works(m, s, out, n, 7);
    XT_OK(xdev_device_synchronize(xt_dev(0))); /* the device is fine too */
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(out));
}

/* A wild write by block 5 of 64 (on the CPU a grid this small runs on the
 * stream's own thread once its kernel is known to be cheap). */
static void wild_write_case(xdev_module_t m, const char *name, unsigned block, int item) {
    wild_write_in_grid(m, name, 64, block, item, 5);
}

/* ------------------------------------------------------ signal faults */

/* Destroying a wrapper (xdev_stream_wrap_native) of a stream whose FFT plan
 * is cached does not wait for the wrapped stream: a kernel fault queued
 * there is still the owner's to see (the FFT plan cache's stream-destroy
 * hook once synchronized the native stream and took the fault). */
START_TEST(wrapper_destroy_keeps_fault) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    xdev_kernel_t k = kernel(m, "wild_write");
    int *out = dalloc(64 * 32 * sizeof(int));
    float *sig = dalloc(64);
    xdev_stream_t s = xt_new_stream(0), w;
    void *native = NULL;
    XT_OK(xdev_stream_native_handle(s, &native));
    XT_OK(xdev_stream_wrap_native(xt_dev(0), native, &w));
    const int64_t n8 = 8;
    xdev_fft_desc_t fd = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n8, 1);
    xdev_status_t st = xdev_fft_exec(&fd, sig, sig, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, w);
    ck_assert_msg(st == XDEV_SUCCESS || st == XDEV_ERROR_NOT_SUPPORTED, "fft: %s",
                  xdev_last_error());
    XT_OK(xdev_stream_synchronize(s));
    xdev_launch_config_t c = cfg1(64, 32, s);
    long off = WILD_OFFSET;
    int bad = 5;
    XT_OK(XDEV_LAUNCH(k, &c, bad, off, out));
    XT_OK(xdev_stream_destroy(w)); /* the wrapper only */
    expect_fault(s, "wild_write", 5, "SIGSEGV", NULL);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(out));
    XT_OK(xdev_free(sig));
    XT_OK(xdev_module_unload(m));
}
END_TEST

START_TEST(wild_write_aot) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    wild_write_case(m, "wild_write", 32, 0);
    wild_write_case(m, "wild_write", 32, 0); /* and again: the handling holds */
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* The fault is on a work-item's fiber stack (a kernel with a barrier). */
START_TEST(wild_write_on_fiber) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    wild_write_case(m, "wild_write_sync", 32, 3);
    wild_write_case(m, "wild_write_sync", 32, 3);
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* The fault is in a block-form region (the block's loops, on the thread). */
START_TEST(wild_write_in_block_form) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    wild_write_case(m, "wild_write_block", 32, 3);
    wild_write_case(m, "wild_write_block", 32, 3);
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* A grid too large to run on one thread (the CPU posts it to its pool, so
 * with XDEV_CPU_THREADS > 1 the faulting block may be a pool worker's):
 * each form, reported the same. */
START_TEST(wild_write_on_the_pool) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    wild_write_in_grid(m, "wild_write", 1024, 32, 0, 1000);
    wild_write_in_grid(m, "wild_write_sync", 1024, 32, 3, 700);
    wild_write_in_grid(m, "wild_write_block", 1024, 32, 3, 900);
    XT_OK(xdev_module_unload(m));
}
END_TEST

START_TEST(wild_write_host_library) {
    XT_REQUIRE_CPU();
    xdev_kernel_image_t img = {XDEV_IMAGE_HOST_LIBRARY, XT_KERNEL_LIBRARY, 0};
    xdev_module_t lib = NULL, m = load();
    XT_OK(xdev_module_load_image(xt_dev(0), &img, &lib));
    xdev_kernel_t k = kernel(lib, "lib_wild_write");
    int *out = dalloc(64 * 32 * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t c = cfg1(64, 32, s);
    int bad = 9;
    long off = WILD_OFFSET;
    XT_OK(XDEV_LAUNCH(k, &c, bad, off, out));
    expect_fault(s, "lib_wild_write", bad, "SIGSEGV", out + bad * 32 + off);
    expect_stream_works(m, s, out, 64 * 32, 3);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_module_unload(lib));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(out));
}
END_TEST

static const char k_rtc_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "XDEV_KERNEL(rtc_wild, XDEV_PARAM(int, bad), XDEV_PARAM(long, off), XDEV_PTR(int, out)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (xdev_group_id(0) == bad) out[i + off] = 1; else out[i] = (int)i;\n"
    "}\n"
    "XDEV_KERNEL(rtc_div, XDEV_PARAM(int, bad), XDEV_PARAM(int, d), XDEV_PTR(int, out)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    out[i] = xdev_group_id(0) == bad ? (int)i / d : (int)i;\n"
    "}\n";

/* A kernel compiled at run time: a wild write (SIGSEGV) and, on x86-64, an
 * integer division by zero (SIGFPE). */
START_TEST(faults_in_compiled_kernel) {
    XT_REQUIRE_CPU();
    xdev_compile_options_t o = {.size = sizeof o, .name = "kernel_faults"};
    xdev_module_t rtc = NULL, m = load();
    xdev_status_t st = xdev_module_compile(xt_dev(0), k_rtc_source, &o, &rtc);
    if (st == XDEV_ERROR_NOT_SUPPORTED) XT_SKIP("no C compiler: %s", xdev_last_error());
    XT_OK(st);
    int *out = dalloc(64 * 32 * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t c = cfg1(64, 32, s);
    int bad = 11;
    long off = WILD_OFFSET;
    XT_OK(XDEV_LAUNCH(kernel(rtc, "rtc_wild"), &c, bad, off, out));
    expect_fault(s, "rtc_wild", bad, "SIGSEGV", out + bad * 32 + off);
#if defined(__x86_64__) || defined(__i386__)
    int zero = 0;
    XT_OK(XDEV_LAUNCH(kernel(rtc, "rtc_div"), &c, bad, zero, out));
    expect_fault(s, "rtc_div", bad, "SIGFPE", NULL);
#endif
    expect_stream_works(m, s, out, 64 * 32, 5);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_module_unload(rtc));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(out));
}
END_TEST

/* Every block faults (on every pool worker at once) on one stream while
 * another stream runs its kernels: those are untouched, and the faulting
 * stream works again once its fault is reported. */
START_TEST(other_streams_keep_working) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    xdev_kernel_t wild = kernel(m, "wild_write"), pk = kernel(m, "plus_k");
    int n = 256 * 64;
    int *bad_out = dalloc((size_t)n * sizeof(int)), *good = dalloc((size_t)n * sizeof(int));
    int *h = malloc((size_t)n * sizeof(int));
    xdev_stream_t a = xt_new_stream(0), b = xt_new_stream(0);
    for (int round = 0; round < 4; round++) {
        xdev_launch_config_t ca = cfg1(256, 64, a), cb = cfg1(256, 64, b);
        long off = WILD_OFFSET;
        for (int r = 0; r < 3; r++) {
            int bad = r; /* block r faults, the rest write */
            XT_OK(XDEV_LAUNCH(wild, &ca, bad, off, bad_out));
            int k = round + r;
            XT_OK(XDEV_LAUNCH(pk, &cb, n, k, good));
        }
        XT_OK(xdev_memcpy_async(h, good, (size_t)n * sizeof(int), b));
        XT_OK(xdev_stream_synchronize(b));
        for (int i = 0; i < n; i++)
            ck_assert_msg(h[i] == i + round + 2, "stream b: good[%d] = %d", i, h[i]);
        /* The first fault since the last report is the one reported. */
        xdev_status_t st = xdev_stream_synchronize(a);
        ck_assert_msg(st == XDEV_ERROR_LAUNCH_FAILURE, "%s", xdev_last_error());
        expect_in(xdev_last_error(), "block (0,0,0)");
        XT_OK(xdev_stream_synchronize(a));
    }
    expect_stream_works(m, a, bad_out, n, 1);
    XT_OK(xdev_stream_destroy(a));
    XT_OK(xdev_stream_destroy(b));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(bad_out));
    XT_OK(xdev_free(good));
    free(h);
}
END_TEST

/* A fault that no synchronisation of its stream reported yet is reported
 * by the device's synchronisation instead, once. */
START_TEST(device_synchronize_reports_fault) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    int *out = dalloc(64 * 32 * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t c = cfg1(64, 32, s);
    int bad = 2;
    long off = WILD_OFFSET;
    XT_OK(XDEV_LAUNCH(kernel(m, "wild_write"), &c, bad, off, out));
    XT_ERR(XDEV_ERROR_LAUNCH_FAILURE, xdev_device_synchronize(xt_dev(0)), "wild_write", "SIGSEGV");
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(out));
}
END_TEST

/* ------------------------------------------- the application's handlers */

/* Set once the kernel's fault was reported: only then is a SIGSEGV the
 * fault outside kernels. */
static volatile sig_atomic_t g_kernel_fault_reported;

static void app_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    static const char msg[] = "application's SIGSEGV handler called\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(g_kernel_fault_reported ? 42 : 43);
}

/* Child scenario (argv[1] = "child:app_handler" or "child:default"): a
 * kernel's fault is xdev's (reported, then "1" written to fd 3), a fault
 * outside kernels the application's (its handler, installed before xdev's,
 * exits 42; 43 if the kernel's fault reached it) or the default action's. */
static int child_main(const char *mode) {
    bool handler = strcmp(mode, "child:app_handler") == 0;
    if (handler) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = app_segv;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSEGV, &sa, NULL) != 0) return 2;
    }
    const xdev_device_t cpu0 = {XDEV_DEVICE_CPU, 0}; /* the tests that run it are the CPU's */
    xdev_module_t m = NULL;
    xdev_kernel_t k = NULL;
    int *out = NULL;
    if (xdev_module_load(cpu0, fault_kernels_bundle(), &m) != XDEV_SUCCESS ||
        xdev_module_get_kernel(m, "wild_write", &k) != XDEV_SUCCESS ||
        xdev_malloc_device(cpu0, (void **)&out, 64 * 32 * sizeof(int)) != XDEV_SUCCESS)
        return 3;
    xdev_launch_config_t c = cfg1(64, 32, NULL);
    int bad = 1;
    long off = WILD_OFFSET;
    if (XDEV_LAUNCH(k, &c, bad, off, out) != XDEV_SUCCESS) return 4;
    if (xdev_device_synchronize(cpu0) != XDEV_ERROR_LAUNCH_FAILURE) return 5;
    fprintf(stderr, "kernel fault reported: %s\n", xdev_last_error());
    g_kernel_fault_reported = 1;
    if (write(3, "1", 1) != 1) return 8;
    /* A fault outside any kernel: a write to a page that forbids it. */
    volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((void *)page == MAP_FAILED) return 7;
    page[1] = 1;
    return 6; /* not reached */
}

/* ---------------------------------- faults that are not the kernel's own */

/* Set by child:xdev_code_fault: the next sysconf(_SC_PAGESIZE) faults. The
 * CPU backend asks it when it maps a thread's first fibers (a SYNC launch),
 * between a launch's blocks: a fault there stands for any fault in xdev's
 * own code or in the allocator it calls (a heap a kernel corrupted), which
 * is not the kernel's to report: it must reach the application's handler. */
static _Atomic int g_sysconf_faults;
static volatile int *g_noaccess;

/* Not under TSan: its runtime calls sysconf while it starts, before an
 * instrumented function (this one) may run. */
#if defined(__SANITIZE_THREAD__)
#define KF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KF_TSAN 1
#endif
#endif
#ifndef KF_TSAN
extern long __sysconf(int name);
__attribute__((visibility("default"))) long sysconf(int name) { /* libxdev calls this one */
    if (name == _SC_PAGESIZE && atomic_exchange(&g_sysconf_faults, 0)) g_noaccess[0] = 1;
    return __sysconf(name);
}
#endif

static void app_segv_xdev(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    static const char msg[] = "application's SIGSEGV handler called for xdev's fault\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(42);
}

/* An asynchronous SIGBUS (BUS_MCEERR_AO: the kernel found a memory error
 * the thread need not act on) is no fault of the kernel's either. */
static void app_sigbus(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    static const char msg[] = "application's SIGBUS handler called\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(si != NULL && si->si_code == BUS_MCEERR_AO ? 44 : 45);
}

/* Child scenarios "child:xdev_code_fault" and "child:mce_ao": the
 * application's handler, installed before xdev's, must get the signal
 * (exit 42 / 44); 9 = the launch failed instead (xdev took it as the
 * kernel's), 10 = nothing happened, 2-8 = a step failed. */
static int child_not_kernel(const char *mode) {
    bool ao = strcmp(mode, "child:mce_ao") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ao ? app_sigbus : app_segv_xdev;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(ao ? SIGBUS : SIGSEGV, &sa, NULL) != 0) return 2;
    g_noaccess = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((void *)g_noaccess == MAP_FAILED) return 7;
    const xdev_device_t cpu0 = {XDEV_DEVICE_CPU, 0};
    xdev_module_t m = NULL;
    xdev_kernel_t k = NULL;
    int *out = NULL;
    if (xdev_module_load(cpu0, fault_kernels_bundle(), &m) != XDEV_SUCCESS ||
        xdev_module_get_kernel(m, ao ? "raise_mce_ao" : "wild_write_sync", &k) != XDEV_SUCCESS ||
        xdev_malloc_device(cpu0, (void **)&out, 64 * 32 * sizeof(int)) != XDEV_SUCCESS)
        return 3;
    xdev_launch_config_t c = cfg1(64, 32, NULL);
    int bad = -1;
    long off = 0;
    if (!ao) atomic_store(&g_sysconf_faults, 1);
    xdev_status_t st = ao ? XDEV_LAUNCH(k, &c, out) : XDEV_LAUNCH(k, &c, bad, off, out);
    if (st != XDEV_SUCCESS) return 4;
    st = xdev_device_synchronize(cpu0);
    fprintf(stderr, "synchronize: %s (%s)\n", xdev_status_string(st), xdev_last_error());
    return st == XDEV_ERROR_LAUNCH_FAILURE ? 9 : 10;
}

/* Runs this binary again as a child scenario; its wait status, and whether
 * it wrote to fd 3 (the kernel's fault was reported) in *reported. */
static int run_child(const char *mode, bool *reported) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        if (fds[1] != 3) {
            dup2(fds[1], 3);
            close(fds[1]);
        }
        /* The child ends with xdev's threads running, on purpose. */
        char tsan[1024];
        const char *prev = getenv("TSAN_OPTIONS");
        snprintf(tsan, sizeof tsan, "%s%sreport_thread_leaks=0", prev != NULL ? prev : "",
                 prev != NULL ? " " : "");
        setenv("TSAN_OPTIONS", tsan, 1);
        execl(g_self, g_self, mode, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char c = 0;
    ssize_t r;
    while ((r = read(fds[0], &c, 1)) < 0 && errno == EINTR) {
    }
    *reported = r == 1 && c == '1';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

START_TEST(app_handler_gets_faults_outside_kernels) {
    XT_REQUIRE_CPU();
    bool reported = false;
    int status = run_child("child:app_handler", &reported);
    ck_assert_msg(
        reported && WIFEXITED(status) && WEXITSTATUS(status) == 42,
        "the application's SIGSEGV handler was not called for a fault outside "
        "kernels (kernel fault reported: %d; exit %d, signal %d; 42 = handler called, 43 = "
        "called for the kernel's fault, 3-8 = a step failed)",
        reported, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
END_TEST

START_TEST(default_action_for_faults_outside_kernels) {
    XT_REQUIRE_CPU();
    bool reported = false;
    int status = run_child("child:default", &reported);
    ck_assert_msg(reported, "the kernel's fault was not reported (exit %d, signal %d)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    /* SIGSEGV's default action; under ASan or TSan their report's exit code,
     * or SIGABRT where their options say abort_on_error (CI's ASan run). */
    bool died = (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
                (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && xt_sanitized_build()) ||
                (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) < 2) ||
                (WIFEXITED(status) && WEXITSTATUS(status) >= 60);
    ck_assert_msg(died, "a fault outside kernels: exit %d, signal %d (3-8 = a step failed)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
END_TEST

START_TEST(fault_in_xdev_code_is_not_the_kernels) {
    XT_REQUIRE_CPU();
#ifdef KF_TSAN
    XT_SKIP("the fault is injected through the test's own sysconf, which TSan's runtime calls "
            "before it can run instrumented code (the default and ASan builds run it)");
#endif
    bool reported = false;
    int status = run_child("child:xdev_code_fault", &reported);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 42,
                  "a fault in xdev's own code during a launch did not reach the application's "
                  "handler (exit %d, signal %d; 9 = reported as the kernel's fault)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
END_TEST

START_TEST(async_sigbus_is_not_the_kernels) {
    XT_REQUIRE_CPU();
    bool reported = false;
    int status = run_child("child:mce_ao", &reported);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 44,
                  "a BUS_MCEERR_AO SIGBUS on a worker running a kernel did not reach the "
                  "application's handler (exit %d, signal %d; 9 = reported as the kernel's fault)",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
END_TEST

/* ------------------------------------------ shared memory and barriers */

/* 46 KiB of dynamic shared memory leaves 2 KiB of the 48 KiB for the 4 KiB
 * XDEV_SHARED array: the launch fails at the next synchronisation and no
 * work-item writes (a GPU refuses the launch itself). */
START_TEST(shared_memory_over_limit) {
    xdev_module_t m = load();
    const char *names[] = {"shared_4k", "shared_4k_sync", "shared_4k_block"};
    int *out = dalloc(4 * 64 * sizeof(int)), *h = malloc(4 * 64 * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    for (int v = 0; v < 3; v++) {
        XT_OK(xdev_memset_async(out, 0x5a, 4 * 64 * sizeof(int), s));
        xdev_launch_config_t c = cfg1(4, 64, s);
        c.shared_bytes = 46 * 1024;
        xdev_status_t st =
            xdev_launch_kernel(kernel(m, names[v]), &c, (xdev_arg_t[]){XDEV_ARG(out)}, 1);
        if (st == XDEV_SUCCESS) st = xdev_stream_synchronize(s);
        ck_assert_msg(st == XDEV_ERROR_LAUNCH_FAILURE || st == XDEV_ERROR_INVALID_VALUE,
                      "%s: %s (%s)", names[v], xdev_status_string(st), xdev_last_error());
        expect_in(xdev_last_error(), names[v]);
        if (st == XDEV_ERROR_LAUNCH_FAILURE) expect_in(xdev_last_error(), "XDEV_SHARED");
        XT_OK(xdev_memcpy_async(h, out, 4 * 64 * sizeof(int), s));
        XT_OK(xdev_stream_synchronize(s));
        for (int i = 0; i < 4 * 64; i++)
            ck_assert_msg(h[i] == 0x5a5a5a5a, "%s: out[%d] = %d written", names[v], i, h[i]);
        /* Within the limit the same kernel runs. */
        c.shared_bytes = 40 * 1024;
        XT_OK(xdev_launch_kernel(kernel(m, names[v]), &c, (xdev_arg_t[]){XDEV_ARG(out)}, 1));
        XT_OK(xdev_memcpy_async(h, out, 4 * 64 * sizeof(int), s));
        XT_OK(xdev_stream_synchronize(s));
        for (int i = 0; i < 4 * 64; i++) {
            int want = v == 0 ? i % 64 + 1 : (i + 1) % 64 + 1; /* _sync, _block: neighbour's */
            ck_assert_msg(h[i] == want, "%s: out[%d] = %d, not %d", names[v], i, h[i], want);
        }
    }
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(out));
    free(h);
}
END_TEST

/* A barrier that work-item 0 of each block never reaches: reported at the
 * next synchronisation (the waiting work-items are abandoned), not hung. */
START_TEST(divergent_barrier_reported) {
    xdev_launch_limits_t lim;
    XT_OK(xdev_device_launch_limits(xt_dev(0), &lim));
    if (lim.warp_size != 1) XT_SKIP("a divergent barrier is undefined behaviour on a GPU");
    xdev_module_t m = load();
    int *out = dalloc(8 * 32 * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t c = cfg1(8, 32, s);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    XT_OK(XDEV_LAUNCH(kernel(m, "divergent_barrier"), &c, out));
    XT_ERR(XDEV_ERROR_LAUNCH_FAILURE, xdev_stream_synchronize(s), "divergent_barrier",
           "returned while others waited at xdev_barrier()", "in block (");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_msg(t1.tv_sec - t0.tv_sec < 10, "took %ld s", (long)(t1.tv_sec - t0.tv_sec));
    XT_OK(xdev_stream_synchronize(s));
    expect_stream_works(m, s, out, 8 * 32, 2);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(out));
}
END_TEST

/* In the block form: xdev_barrier() inside a region fails the launch
 * naming xdev_block_sync(), xdev_block_sync() inside a region fails it (the
 * block form's divergent barrier; every block does it, so whichever block
 * the pool's threads reach first is the one named); xdev_trap() in a region
 * fails it naming the block; the stream goes on working. */
START_TEST(block_form_barrier_and_trap) {
    xdev_launch_limits_t lim;
    XT_OK(xdev_device_launch_limits(xt_dev(0), &lim));
    if (lim.warp_size != 1) XT_SKIP("GPUs run xdev_barrier() anywhere; traps lose the context");
    xdev_module_t m = load();
    int *out = dalloc(8 * 32 * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t c = cfg1(8, 32, s);
    XT_OK(XDEV_LAUNCH(kernel(m, "barrier_in_region"), &c, out));
    XT_ERR(XDEV_ERROR_LAUNCH_FAILURE, xdev_stream_synchronize(s), "barrier_in_region",
           "XDEV_KERNEL_BLOCK", "xdev_block_sync()");
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(XDEV_LAUNCH(kernel(m, "sync_in_region"), &c, out));
    XT_ERR(XDEV_ERROR_LAUNCH_FAILURE, xdev_stream_synchronize(s), "sync_in_region",
           "xdev_block_sync() inside an XDEV_FOR_ITEMS region", "(block (");
    XT_OK(xdev_stream_synchronize(s));
    int bad = 6;
    XT_OK(XDEV_LAUNCH(kernel(m, "trap_block"), &c, bad, out));
    XT_ERR(XDEV_ERROR_LAUNCH_FAILURE, xdev_stream_synchronize(s), "trap_block", "xdev_trap()",
           "block (6,0,0)");
    expect_stream_works(m, s, out, 8 * 32, 4);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(out));
}
END_TEST

/* x / y under `mode`, as the host computes it. */
static float div_in_mode(int mode, float x, float y) {
    int old = fegetround();
    fesetround(mode);
    volatile float a = x, b = y;
    volatile float q = a / b; /* stored before the mode goes back */
    fesetround(old);
    return q;
}

/* Each work-item of a fiber-form kernel sets its own rounding mode and
 * keeps it across barriers (the switch saves and restores MXCSR / FPCR per
 * fiber); the launching thread's mode is untouched. */
START_TEST(rounding_mode_per_work_item) {
    XT_REQUIRE_CPU();
    xdev_module_t m = load();
    const int modes[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    float hx[2] = {1.0f, 3.0f}, h[2 * 2 * 16];
    float *x = dalloc(sizeof hx), *out = dalloc(sizeof h);
    XT_OK(xdev_memcpy(x, hx, sizeof hx));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t c = cfg1(2, 16, s);
    ck_assert(div_in_mode(FE_UPWARD, 1.0f, 3.0f) != div_in_mode(FE_DOWNWARD, 1.0f, 3.0f));
    XT_OK(XDEV_LAUNCH(kernel(m, "rounding_per_item"), &c, x, out));
    XT_OK(xdev_memcpy_async(h, out, sizeof h, s));
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < 2 * 16; i++) {
        float want = div_in_mode(modes[i % 16 % 4], 1.0f, 3.0f);
        for (int j = 0; j < 2; j++)
            ck_assert_msg(h[2 * i + j] == want,
                          "work-item %d (mode %d), division %d: %a, want %a (another work-item's "
                          "rounding mode?)",
                          i, i % 16 % 4, j, (double)h[2 * i + j], (double)want);
    }
    ck_assert_int_eq(fegetround(), FE_TONEAREST);
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(out));
}
END_TEST

/* ----------------------------------------------------- launch checks */

/* A pointer argument past the bytes requested (inside the allocator's
 * rounding) is refused, as a memset there is; one to the end is a valid
 * C pointer and accepted. xdev_pointer_get_info reports the requested
 * bytes and does not count the rounding as the allocation's. */
START_TEST(pointer_argument_past_requested_bytes) {
    xdev_module_t m = load();
    xdev_kernel_t pk = kernel(m, "plus_k");
    char *p = dalloc(1000);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(p + 999, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    ck_assert_ptr_eq(info.base, p);
    ck_assert_uint_eq(info.size, 1000);
    if (info.block_size < 1016) XT_SKIP("the allocator did not round 1000 bytes up to 1016+");
    XT_OK(xdev_pointer_get_info(p + 1008, &info));
    ck_assert_msg(info.kind == XDEV_MEMORY_HOST && info.base == NULL && info.size == 0,
                  "p + 1008 (past the 1000 bytes requested) reported as kind %d, base %p, size "
                  "%zu",
                  (int)info.kind, info.base, info.size);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(p + 1008, 0, 1, NULL), "");
    int n = 0, k = 1;
    int *past = (int *)(p + 1008);
    xdev_launch_config_t c = cfg1(1, 1, NULL);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(pk, &c, n, k, past), "argument 2", "'out'",
           "1000");
    ck_assert_msg(strstr(xdev_last_error(), "''") == NULL, "quoting: %s", xdev_last_error());
    int *end = (int *)(p + 1000);
    XT_OK(XDEV_LAUNCH(pk, &c, n, k, end)); /* n = 0: nothing written */
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    XT_OK(xdev_free(p));
    /* A freed pointer's message quotes the parameter once, cleanly. */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(pk, &c, n, k, end), "argument 2", "'out'",
           "plus_k");
    ck_assert_msg(strstr(xdev_last_error(), "''") == NULL &&
                      strstr(xdev_last_error(), "'argument") == NULL,
                  "quoting: %s", xdev_last_error());
    XT_OK(xdev_module_unload(m));
}
END_TEST

int main(int argc, char **argv) {
    g_self = argv[0];
    if (argc > 1 &&
        (strcmp(argv[1], "child:xdev_code_fault") == 0 || strcmp(argv[1], "child:mce_ao") == 0))
        return child_not_kernel(argv[1]);
    if (argc > 1 && strncmp(argv[1], "child:", 6) == 0) return child_main(argv[1]);
    Suite *s = suite_create("kernel_faults");
    TCase *tc = tcase_create("kernel_faults");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, wild_write_aot);
    tcase_add_test(tc, wrapper_destroy_keeps_fault);
    tcase_add_test(tc, wild_write_on_fiber);
    tcase_add_test(tc, wild_write_in_block_form);
    tcase_add_test(tc, wild_write_on_the_pool);
    tcase_add_test(tc, wild_write_host_library);
    tcase_add_test(tc, faults_in_compiled_kernel);
    tcase_add_test(tc, other_streams_keep_working);
    tcase_add_test(tc, device_synchronize_reports_fault);
    tcase_add_test(tc, app_handler_gets_faults_outside_kernels);
    tcase_add_test(tc, default_action_for_faults_outside_kernels);
    tcase_add_test(tc, fault_in_xdev_code_is_not_the_kernels);
    tcase_add_test(tc, async_sigbus_is_not_the_kernels);
    tcase_add_test(tc, shared_memory_over_limit);
    tcase_add_test(tc, divergent_barrier_reported);
    tcase_add_test(tc, block_form_barrier_and_trap);
    tcase_add_test(tc, rounding_mode_per_work_item);
    tcase_add_test(tc, pointer_argument_past_requested_bytes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    return xt_run(sr, "kernel_faults", argc, argv);
}
