/* SPDX-License-Identifier: Apache-2.0 */
/* xg_kernels.c - PTX kernels for the CUDA tests (see xg_kernels.h). */
#include "xg_kernels.h"

#include <pthread.h>
#include <stdio.h>

static const char k_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry xg_spin(.param .u64 xg_spin_ns)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b64 %rd<5>;\n"
    "    ld.param.u64 %rd1, [xg_spin_ns];\n"
    "    mov.u64 %rd2, %globaltimer;\n"
    "LOOP:\n"
    "    mov.u64 %rd3, %globaltimer;\n"
    "    sub.u64 %rd4, %rd3, %rd2;\n"
    "    setp.lt.u64 %p, %rd4, %rd1;\n"
    "    @%p bra LOOP;\n"
    "    ret;\n"
    "}\n"
    "\n"
    ".visible .entry xg_fill(.param .u64 xg_fill_p, .param .u32 xg_fill_v,\n"
    "                        .param .u64 xg_fill_n)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .b64 %rd<7>;\n"
    "    ld.param.u64 %rd1, [xg_fill_p];\n"
    "    ld.param.u32 %r1, [xg_fill_v];\n"
    "    ld.param.u64 %rd2, [xg_fill_n];\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %tid.x;\n"
    "    mad.lo.u32 %r5, %r2, %r3, %r4;\n"
    "    cvt.u64.u32 %rd3, %r5;\n"
    "    setp.ge.u64 %p, %rd3, %rd2;\n"
    "    @%p bra DONE;\n"
    "    cvta.to.global.u64 %rd4, %rd1;\n"
    "    shl.b64 %rd5, %rd3, 2;\n"
    "    add.s64 %rd6, %rd4, %rd5;\n"
    "    st.global.u32 [%rd6], %r1;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n"
    "\n"
    ".visible .entry xg_bad_store(.param .u64 xg_bad_p)\n"
    "{\n"
    "    .reg .b32 %r1;\n"
    "    .reg .b64 %rd<3>;\n"
    "    ld.param.u64 %rd1, [xg_bad_p];\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mov.u32 %r1, 1;\n"
    "    st.global.u32 [%rd2], %r1;\n"
    "    ret;\n"
    "}\n";

static cudaLibrary_t g_lib;
static cudaKernel_t g_spin, g_fill, g_bad;
static cudaError_t g_load_err = cudaSuccess;
static const char *g_load_step = "";
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
    g_load_step = "cudaLibraryLoadData";
    g_load_err = cudaLibraryLoadData(&g_lib, k_ptx, NULL, NULL, 0, NULL, NULL, 0);
    if (g_load_err != cudaSuccess) return;
    g_load_step = "cudaLibraryGetKernel";
    g_load_err = cudaLibraryGetKernel(&g_spin, g_lib, "xg_spin");
    if (g_load_err == cudaSuccess) g_load_err = cudaLibraryGetKernel(&g_fill, g_lib, "xg_fill");
    if (g_load_err == cudaSuccess) g_load_err = cudaLibraryGetKernel(&g_bad, g_lib, "xg_bad_store");
}

bool xg_kernels_load(char *why, size_t len) {
    pthread_once(&g_once, load);
    if (g_load_err != cudaSuccess)
        snprintf(why, len, "%s: %s: %s", g_load_step, cudaGetErrorName(g_load_err),
                 cudaGetErrorString(g_load_err));
    return g_load_err == cudaSuccess;
}

static cudaError_t launch(cudaKernel_t k, unsigned blocks, unsigned threads, void **args,
                          cudaStream_t s) {
    dim3 grid = {blocks, 1, 1}, block = {threads, 1, 1};
    cudaError_t err = cudaLaunchKernel((const void *)k, grid, block, args, 0, s);
    return err != cudaSuccess ? err : cudaGetLastError();
}

cudaError_t xg_spin(cudaStream_t stream, double ms) {
    uint64_t ns = (uint64_t)(ms * 1e6);
    void *args[] = {&ns};
    return launch(g_spin, 1, 1, args, stream);
}

cudaError_t xg_fill(cudaStream_t stream, uint32_t *p, uint32_t v, size_t n) {
    uint64_t n64 = n;
    void *args[] = {&p, &v, &n64};
    return launch(g_fill, (unsigned)((n + 255) / 256), 256, args, stream);
}

cudaError_t xg_bad_store(cudaStream_t stream, uintptr_t bad) {
    uint64_t p = bad;
    void *args[] = {&p};
    return launch(g_bad, 1, 1, args, stream);
}
