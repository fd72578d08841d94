/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/nvrtc_bench.c - NVRTC called directly against
 * xdev_module_compile, for the same source (bench/rtc_source.h) and the
 * same options (the architecture, xdev's include directory, --std=c++17,
 * -DSALT): compile to a CUBIN and load it (cuModuleLoadData +
 * cuModuleGetFunction) on the raw side; on xdev's side a first compile
 * (empty cache) and a cache hit. Each measurement its own fresh process
 * (this program re-run with --side), the device's context made before the
 * timed part, one timer; median and min of --reps processes, ms.
 *
 *   nvrtc_bench [--reps R (5)] */
#define _XOPEN_SOURCE 700 /* nftw */
#include <cuda.h>
#include <cuda_runtime.h>
#include <ftw.h>
#include <nvrtc.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../rtc_source.h"
#include "../bench_util.h"
#include "xdev/xdev.h"

/* NVRTC by hand, as the CUDA plugin calls it. */
static int side_raw(int salt) {
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) return 1;
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    char arch[64], inc[4200], def[32];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
    snprintf(inc, sizeof inc, "-I%s", XDEV_BENCH_INCLUDE_DIR);
    snprintf(def, sizeof def, "-DSALT=%d", salt);
    const char *opts[] = {arch, inc, "--std=c++17", def};
    double t0 = (now_ns() / 1e6);
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, xdev_bench_rtc_source, "bench", 0, NULL, NULL) != NVRTC_SUCCESS)
        return 1;
    if (nvrtcCompileProgram(prog, 4, opts) != NVRTC_SUCCESS) return 1;
    size_t n = 0;
    if (nvrtcGetCUBINSize(prog, &n) != NVRTC_SUCCESS) return 1;
    char *cubin = malloc(n);
    if (cubin == NULL || nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS) return 1;
    nvrtcDestroyProgram(&prog);
    CUmodule mod;
    CUfunction fn;
    if (cuModuleLoadData(&mod, cubin) != CUDA_SUCCESS ||
        cuModuleGetFunction(&fn, mod, "rtc_bench") != CUDA_SUCCESS)
        return 1;
    double ms = (now_ns() / 1e6) - t0;
    free(cubin);
    printf("%.3f\n", ms);
    return 0;
}

/* xdev_module_compile + get_kernel, after the device's context exists. */
static int side_xdev(int salt) {
    xdev_device_t dev = xdev_cuda(0);
    void *warm = NULL;
    if (xdev_malloc_device(dev, &warm, 256) != XDEV_SUCCESS || xdev_free(warm) != XDEV_SUCCESS)
        return 1;
    char def[32];
    snprintf(def, sizeof def, "-DSALT=%d", salt);
    const char *opts[] = {def};
    xdev_compile_options_t o = {.size = sizeof o, .name = "bench", .options = opts, .noptions = 1};
    double t0 = (now_ns() / 1e6);
    xdev_module_t m = NULL;
    xdev_kernel_t k = NULL;
    if (xdev_module_compile(dev, xdev_bench_rtc_source, &o, &m) != XDEV_SUCCESS ||
        xdev_module_get_kernel(m, "rtc_bench", &k) != XDEV_SUCCESS) {
        fprintf(stderr, "xdev: %s\n", xdev_last_error());
        return 1;
    }
    double ms = (now_ns() / 1e6) - t0;
    printf("%.3f\n", ms);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--side") == 0)
        return strcmp(argv[2], "raw") == 0 ? side_raw(atoi(argv[3])) : side_xdev(atoi(argv[3]));
    int reps = 5;
    if (argc == 3 && strcmp(argv[1], "--reps") == 0) reps = atoi(argv[2]);
    if (reps < 1 || reps > 100) reps = 5;
    char dir[] = "/tmp/xdev-nvrtc-bench-XXXXXX";
    if (mkdtemp(dir) == NULL || setenv("XDEV_CACHE_DIR", dir, 1) != 0) return 1;
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 1;
    exe[len] = '\0';
    double raw[100], miss[100], hit[100];
    int salt0 = (int)(time(NULL) % 100000) * 100;
    for (int r = 0; r < reps; r++) { /* interleaved; each salt a new source */
        raw[r] = xdev_bench_run_side(exe, "raw", salt0 + r);
        miss[r] = xdev_bench_run_side(exe, "xdev", salt0 + r);
        hit[r] = xdev_bench_run_side(exe, "xdev", salt0 + r);
        if (raw[r] < 0 || miss[r] < 0 || hit[r] < 0) {
            fprintf(stderr, "nvrtc_bench: a side failed\n");
            return 1;
        }
    }
    qsort(raw, (size_t)reps, sizeof(double), cmp_double);
    qsort(miss, (size_t)reps, sizeof(double), cmp_double);
    qsort(hit, (size_t)reps, sizeof(double), cmp_double);
    printf("nvrtc_bench: the same source and options, compile + load + get function, %d fresh "
           "processes per row, ms (median / min)\n",
           reps);
    printf("| side | median | min |\n|---|---:|---:|\n");
    printf("| NVRTC directly (nvrtcCompileProgram, GetCUBIN, cuModuleLoadData) | %.2f | %.2f |\n",
           raw[reps / 2], raw[0]);
    printf("| xdev_module_compile, first (cache miss) | %.2f | %.2f |\n", miss[reps / 2], miss[0]);
    printf("| xdev_module_compile, cache hit | %.2f | %.2f |\n", hit[reps / 2], hit[0]);
    xdev_bench_remove_tree(dir);
    return 0;
}
