/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/prim_cub_anchor.cu - prim_bench's CUB side (bench/prim_anchor.h):
 * cub::DeviceReduce::Sum and cub::DeviceScan::InclusiveSum of f32 called
 * directly, as an application would, on memory and a stream of its own;
 * the temporaries are allocated once, outside the timing (xdev's come from
 * its caching allocator, a hit after the first call). */
#include <cstdio>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include "prim_anchor.h"

namespace {

struct state {
    float *in = nullptr, *out = nullptr;
    void *temp = nullptr;
    size_t n = 0, temp_bytes = 0;
    cudaStream_t s = nullptr;
} g;

int fail(cudaError_t err, const char *what) {
    if (err == cudaSuccess) return 0;
    fprintf(stderr, "prim_bench cub side: %s: %s\n", what, cudaGetErrorString(err));
    return 1;
}

} // namespace

extern "C" int prim_cub_setup(const float *host, size_t n) {
    g.n = n;
    size_t rb = 0, sb = 0;
    if (fail(cudaSetDevice(0), "cudaSetDevice(0)") ||
        fail(cudaStreamCreateWithFlags(&g.s, cudaStreamNonBlocking), "cudaStreamCreate") ||
        fail(cudaMalloc(&g.in, n * sizeof(float)), "cudaMalloc(in)") ||
        fail(cudaMalloc(&g.out, n * sizeof(float)), "cudaMalloc(out)") ||
        fail(cub::DeviceReduce::Sum(nullptr, rb, g.in, g.out, n, g.s), "DeviceReduce::Sum size") ||
        fail(cub::DeviceScan::InclusiveSum(nullptr, sb, g.in, g.out, n, g.s),
             "DeviceScan::InclusiveSum size"))
        return 1;
    g.temp_bytes = rb > sb ? rb : sb;
    if (fail(cudaMalloc(&g.temp, g.temp_bytes), "cudaMalloc(temp)") ||
        fail(cudaMemcpy(g.in, host, n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy"))
        return 1;
    return 0;
}

extern "C" int prim_cub_reduce(void) {
    size_t b = g.temp_bytes;
    return fail(cub::DeviceReduce::Sum(g.temp, b, g.in, g.out, g.n, g.s), "DeviceReduce::Sum");
}

extern "C" int prim_cub_scan(void) {
    size_t b = g.temp_bytes;
    return fail(cub::DeviceScan::InclusiveSum(g.temp, b, g.in, g.out, g.n, g.s),
                "DeviceScan::InclusiveSum");
}

extern "C" int prim_cub_sync(void) {
    return fail(cudaStreamSynchronize(g.s), "cudaStreamSynchronize");
}

extern "C" int prim_cub_result(float *sum) {
    return fail(cudaMemcpy(sum, g.out, sizeof *sum, cudaMemcpyDeviceToHost), "cudaMemcpy(result)");
}

extern "C" void prim_cub_teardown(void) {
    cudaFree(g.temp);
    cudaFree(g.out);
    cudaFree(g.in);
    cudaStreamDestroy(g.s);
    g = state{};
}
