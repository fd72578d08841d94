/* SPDX-License-Identifier: Apache-2.0 */
/* kernel_smoke.c - kernels on a real CUDA device through the public API of
 * xdev/kernel.h only: a hand-written PTX image (compiled into the program,
 * JIT-compiled by the driver, so no nvcc is needed) loaded with
 * xdev_module_load_image, its kernels found, described and launched on the
 * default stream, a created stream and from a second thread, the results
 * compared on the host; then what fails: a kernel the module lacks, a wrong
 * argument count, PTX that does not compile; with two GPUs, the same image
 * on cuda:1 launched while cuda:0 is current; and last (it loses the
 * device's context for the rest of the process) a kernel that traps, which
 * the next synchronisation reports (skipped where XG_UNDER_SANITIZER is set,
 * as tests/gpu/run.sh sets it for compute-sanitizer: the sanitizer counts the
 * trap as an error). Run it under compute-sanitizer with
 * --report-api-errors no: getting a kernel probes its parameter list past its
 * end (cuFuncGetParamInfo has no count), an API error the sanitizer reports.
 * Exit 0 = pass, 1 = fail, 77 = skipped (no usable CUDA backend). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

#include "../common/xt_die.h"

/* xk_axpy(u64 n, f32 a, f32 *x, f32 *y): y[i] = a * x[i] + y[i] for i < n.
 * xk_rev(f32 *p): reverses each block's slice of p through static shared
 * memory (1024 bytes: blocks of at most 256). xk_empty(), xk_trap(). */
static const char k_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry xk_axpy(.param .u64 xk_axpy_n, .param .f32 xk_axpy_a,\n"
    "                        .param .u64 xk_axpy_x, .param .u64 xk_axpy_y)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b32 %r<5>;\n"
    "    .reg .f32 %f<5>;\n"
    "    .reg .b64 %rd<10>;\n"
    "    ld.param.u64 %rd1, [xk_axpy_n];\n"
    "    ld.param.f32 %f1, [xk_axpy_a];\n"
    "    ld.param.u64 %rd2, [xk_axpy_x];\n"
    "    ld.param.u64 %rd3, [xk_axpy_y];\n"
    "    mov.u32 %r1, %ctaid.x;\n"
    "    mov.u32 %r2, %ntid.x;\n"
    "    mov.u32 %r3, %tid.x;\n"
    "    mad.lo.u32 %r4, %r1, %r2, %r3;\n"
    "    cvt.u64.u32 %rd4, %r4;\n"
    "    setp.ge.u64 %p, %rd4, %rd1;\n"
    "    @%p bra DONE;\n"
    "    cvta.to.global.u64 %rd5, %rd2;\n"
    "    cvta.to.global.u64 %rd6, %rd3;\n"
    "    shl.b64 %rd7, %rd4, 2;\n"
    "    add.s64 %rd8, %rd5, %rd7;\n"
    "    add.s64 %rd9, %rd6, %rd7;\n"
    "    ld.global.f32 %f2, [%rd8];\n"
    "    ld.global.f32 %f3, [%rd9];\n"
    "    fma.rn.f32 %f4, %f1, %f2, %f3;\n"
    "    st.global.f32 [%rd9], %f4;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n"
    "\n"
    ".visible .entry xk_rev(.param .u64 xk_rev_p)\n"
    "{\n"
    "    .shared .align 4 .b8 xk_rev_buf[1024];\n"
    "    .reg .b32 %r<11>;\n"
    "    .reg .b64 %rd<5>;\n"
    "    .reg .f32 %f<3>;\n"
    "    ld.param.u64 %rd1, [xk_rev_p];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mov.u32 %r1, %ctaid.x;\n"
    "    mov.u32 %r2, %ntid.x;\n"
    "    mov.u32 %r3, %tid.x;\n"
    "    mad.lo.u32 %r4, %r1, %r2, %r3;\n"
    "    mul.wide.u32 %rd3, %r4, 4;\n"
    "    add.s64 %rd4, %rd2, %rd3;\n"
    "    ld.global.f32 %f1, [%rd4];\n"
    "    mov.u32 %r5, xk_rev_buf;\n"
    "    shl.b32 %r6, %r3, 2;\n"
    "    add.s32 %r7, %r5, %r6;\n"
    "    st.shared.f32 [%r7], %f1;\n"
    "    bar.sync 0;\n"
    "    sub.s32 %r8, %r2, %r3;\n"
    "    sub.s32 %r9, %r8, 1;\n"
    "    shl.b32 %r10, %r9, 2;\n"
    "    add.s32 %r10, %r5, %r10;\n"
    "    ld.shared.f32 %f2, [%r10];\n"
    "    st.global.f32 [%rd4], %f2;\n"
    "    ret;\n"
    "}\n"
    "\n"
    ".visible .entry xk_empty()\n"
    "{\n"
    "    ret;\n"
    "}\n"
    "\n"
    ".visible .entry xk_trap()\n"
    "{\n"
    "    trap;\n"
    "}\n";

#define N 100000 /* elements; N / 256 full blocks are reversed */
#define BLOCK 256

static const xdev_device_t D0 = {XDEV_DEVICE_CUDA, 0};
static xdev_kernel_t g_axpy, g_rev;

/* On `dev` (the kernels' device) and `stream` (NULL: its current one):
 * x[i] = i % 1000, y = 2; y = a * x + y, then each full block reversed. */
static void run_on(xdev_device_t dev, xdev_kernel_t axpy, xdev_kernel_t rev, xdev_stream_t stream,
                   float a, const char *where) {
    float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float));
    CHECK(hx && hy, "no host memory");
    for (int i = 0; i < N; i++) {
        hx[i] = (float)(i % 1000);
        hy[i] = 2.0f;
    }
    float *dx = NULL, *dy = NULL;
    OK(xdev_malloc_device(dev, (void **)&dx, N * sizeof(float)));
    OK(xdev_malloc_device(dev, (void **)&dy, N * sizeof(float)));
    OK(xdev_memcpy_async(dx, hx, N * sizeof(float), stream));
    OK(xdev_memcpy_async(dy, hy, N * sizeof(float), stream));
    unsigned long long n = N;
    xdev_launch_config_t cfg = {
        .grid = {(N + BLOCK - 1) / BLOCK, 1, 1}, .block = {BLOCK, 1, 1}, .stream = stream};
    OK(XDEV_LAUNCH(axpy, &cfg, n, a, dx, dy));
    xdev_launch_config_t rcfg = {
        .grid = {N / BLOCK, 1, 1}, .block = {BLOCK, 1, 1}, .stream = stream};
    OK(XDEV_LAUNCH(rev, &rcfg, dy));
    OK(xdev_memcpy_async(hy, dy, N * sizeof(float), stream));
    if (stream != NULL)
        OK(xdev_stream_synchronize(stream));
    else
        OK(xdev_device_synchronize(dev));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int src = i < (N / BLOCK) * BLOCK ? (i / BLOCK) * BLOCK + (BLOCK - 1 - i % BLOCK) : i;
        float want = a * (float)(src % 1000) + 2.0f;
        if (hy[i] != want && bad++ < 5)
            fprintf(stderr, "%s: y[%d] = %g, expected %g\n", where, i, hy[i], want);
    }
    CHECK(bad == 0, "%s: %d of %d elements wrong", where, bad, N);
    OK(xdev_free(dx));
    OK(xdev_free(dy));
    free(hx);
    free(hy);
    printf("%s: axpy + block reverse of %d floats: ok\n", where, N);
}

/* A thread that made no xdev or CUDA call before: launches on its own stream. */
static void *thread_main(void *arg) {
    (void)arg;
    xdev_stream_t s = NULL;
    OK(xdev_stream_create(D0, XDEV_STREAM_PRIORITY_NORMAL, &s));
    run_on(D0, g_axpy, g_rev, s, 3.0f, "second thread, created stream");
    OK(xdev_stream_destroy(s));
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (xdev_init() != XDEV_SUCCESS || !xdev_is_available(XDEV_DEVICE_CUDA)) {
        xdev_backend_info_t info;
        const char *why = xdev_last_error();
        if (xdev_backend_get_info(XDEV_DEVICE_CUDA, &info) == XDEV_SUCCESS && info.reason)
            why = info.reason;
        printf("SKIP kernel_smoke: the cuda backend cannot be used: %s\n", why);
        return 77;
    }

    xdev_launch_limits_t lim;
    OK(xdev_device_launch_limits(D0, &lim));
    printf("limits: block %ux%ux%u, %u threads, grid %ux%ux%u, %zu shared bytes, warp %d\n",
           lim.max_block[0], lim.max_block[1], lim.max_block[2], lim.max_threads_per_block,
           lim.max_grid[0], lim.max_grid[1], lim.max_grid[2], lim.max_shared_bytes, lim.warp_size);
    CHECK(lim.warp_size == 32 && lim.max_threads_per_block >= 1024 &&
              lim.max_shared_bytes >= 48 * 1024,
          "unexpected limits");

    xdev_kernel_image_t img = {XDEV_IMAGE_PTX, k_ptx, sizeof k_ptx};
    xdev_module_t m = NULL;
    OK(xdev_module_load_image(D0, &img, &m));
    OK(xdev_module_get_kernel(m, "xk_axpy", &g_axpy));
    OK(xdev_module_get_kernel(m, "xk_rev", &g_rev));
    xdev_kernel_attributes_t a;
    OK(xdev_kernel_get_attributes(g_axpy, &a));
    printf(
        "xk_axpy: %d params (-1: the driver predates CUDA 12.4), sizes %u %u %u %u, %d threads\n",
        a.nparams, a.param_sizes[0], a.param_sizes[1], a.param_sizes[2], a.param_sizes[3],
        a.max_threads_per_block);
    CHECK(a.nparams == -1 || (a.nparams == 4 && a.param_sizes[0] == 8 && a.param_sizes[1] == 4 &&
                              a.param_sizes[2] == 8 && a.param_sizes[3] == 8),
          "xk_axpy's parameters");
    OK(xdev_kernel_get_attributes(g_rev, &a));
    CHECK(a.static_shared_bytes == 1024, "xk_rev has %zu static shared bytes, expected 1024",
          a.static_shared_bytes);

    xdev_kernel_t k = NULL;
    xdev_status_t st = xdev_module_get_kernel(m, "xk_missing", &k);
    printf("missing kernel: %s: %s\n", xdev_status_string(st), xdev_last_error());
    CHECK(st == XDEV_ERROR_NOT_FOUND && strstr(xdev_last_error(), "xk_missing"), "not found");

    xdev_kernel_t empty = NULL;
    OK(xdev_module_get_kernel(m, "xk_empty", &empty));
    xdev_launch_config_t one = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    OK(xdev_launch_kernel(empty, &one, NULL, 0));
    OK(xdev_kernel_get_attributes(g_axpy, &a));
    if (a.nparams == 4) { /* the count is known: a wrong one is refused before the driver */
        unsigned long long n = 1;
        st = XDEV_LAUNCH(g_axpy, &one, n);
        printf("axpy with 1 argument: %s: %s\n", xdev_status_string(st), xdev_last_error());
        CHECK(st == XDEV_ERROR_INVALID_VALUE, "wrong argument count accepted");
    }

    run_on(D0, g_axpy, g_rev, NULL, 0.5f, "current stream");
    pthread_t th;
    CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0, "pthread_create");
    CHECK(pthread_join(th, NULL) == 0, "pthread_join");

    int ndev = 0;
    OK(xdev_device_count(XDEV_DEVICE_CUDA, &ndev));
    if (ndev > 1) { /* cuda:0 stays current: the module and launches go to cuda:1 */
        xdev_device_t d1 = {XDEV_DEVICE_CUDA, 1};
        xdev_module_t m1 = NULL;
        xdev_kernel_t axpy1 = NULL, rev1 = NULL;
        OK(xdev_set_device(D0));
        OK(xdev_module_load_image(d1, &img, &m1));
        OK(xdev_module_get_kernel(m1, "xk_axpy", &axpy1));
        OK(xdev_module_get_kernel(m1, "xk_rev", &rev1));
        xdev_stream_t s1 = NULL;
        OK(xdev_stream_current(d1, &s1));
        run_on(d1, axpy1, rev1, s1, 1.5f, "cuda:1 while cuda:0 is current");
        xdev_launch_config_t on1 = one;
        on1.stream = s1;
        float *nowhere = NULL;
        st = XDEV_LAUNCH(g_rev, &on1, nowhere); /* a cuda:0 kernel on a cuda:1 stream */
        printf("cuda:0 kernel on a cuda:1 stream: %s: %s\n", xdev_status_string(st),
               xdev_last_error());
        CHECK(st != XDEV_SUCCESS, "a kernel launched on another device's stream");
        OK(xdev_module_unload(m1));
    } else {
        printf("one CUDA device: the second-device step is skipped\n");
    }

    static const char bad_ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                  ".visible .entry b()\n{\n    bogus.u32 %r1;\n    ret;\n}\n";
    xdev_kernel_image_t bad = {XDEV_IMAGE_PTX, bad_ptx, sizeof bad_ptx};
    xdev_module_t mb = NULL;
    st = xdev_module_load_image(D0, &bad, &mb);
    printf("bad PTX: %s: %s\n", xdev_status_string(st), xdev_last_error());
    CHECK(st != XDEV_SUCCESS && strstr(xdev_last_error(), "CUDA_ERROR_INVALID_PTX") &&
              strstr(xdev_last_error(), "bogus"),
          "bad PTX");
    xdev_kernel_image_t hip = {XDEV_IMAGE_HIP_CODE, bad_ptx, sizeof bad_ptx};
    st = xdev_module_load_image(D0, &hip, &mb);
    printf("HIP code object on cuda: %s: %s\n", xdev_status_string(st), xdev_last_error());
    CHECK(st == XDEV_ERROR_NOT_SUPPORTED, "a HIP image accepted on cuda");

    if (getenv("XG_UNDER_SANITIZER")) { /* it reports the planted trap as an error */
        OK(xdev_module_unload(m));
        printf("kernel_smoke: pass (trap step skipped under compute-sanitizer)\n");
        return 0;
    }
    /* Last: a trap loses the context (every later CUDA call of the process fails). */
    xdev_kernel_t trap = NULL;
    OK(xdev_module_get_kernel(m, "xk_trap", &trap));
    st = xdev_launch_kernel(trap, &one, NULL, 0);
    if (st == XDEV_SUCCESS) st = xdev_device_synchronize(D0);
    printf("trap: %s: %s\n", xdev_status_string(st), xdev_last_error());
    CHECK(st != XDEV_SUCCESS, "a trapping kernel went unreported");
    st = xdev_module_unload(m);
    printf("unload after the trap: %s: %s\n", xdev_status_string(st), xdev_last_error());
    printf("kernel_smoke: pass\n");
    return 0;
}
