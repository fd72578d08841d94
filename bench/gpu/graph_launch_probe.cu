// SPDX-License-Identifier: Apache-2.0
// bench/gpu/graph_launch_probe.cu - host time of one CUDA graph launch by the
// runtime's cudaGraphLaunch and by the driver's cuGraphLaunch, in one loop:
// the measure behind the CUDA plugin's choice of cuGraphLaunch for replays
// (backends/cuda_hip/cuda_graph.c). Five instances of one 200-kernel graph,
// each on its own stream; a round is 200 batches of 4 launches of each
// instance (60 batches, 3 rounds when evicting), the order rotating every
// batch, a stream synchronize after each batch, untimed; median ns per
// launch. The rotation puts every instance in every place but not after
// every other one equally (1 follows 0 in four batches of five): the two
// cudaGraphLaunch instances, 0 and 2, are the probe's resolution. On an H200
// host they differed by 2-32 ns a round with four instances (2026-12-01,
// before the fifth column: those figures are not comparable with later
// ones), by 1-57 ns warm with five, and by 198-279 ns (2 MiB) and 530-918 ns
// (32 MiB, always the same way) evicted. Columns:
//   0  cudaGraphLaunch
//   1  cuGraphLaunch
//   2  cudaGraphLaunch again (an A/A control of 0)
//   3  cuCtxGetCurrent + cudaGetDevice + cuGraphLaunch (what a device guard
//      that misses its fast path would add)
//   4  cuCtxGetCurrent + cuGraphLaunch (the CUDA plugin's replay on its
//      guard's fast path, without xdev's own code)
// With an argument KIB, a host buffer of that many KiB is written before
// every launch and each launch is timed alone (the writes untimed): the
// launch with the caches emptied, the state in which graph_raw_bench --side
// pair --evict measures xdev's replay. Columns 1 and 4 against 0 then say
// what the driver's entry and the guard cost cold, apart from xdev's code.
// Built by hand, not by CMake (a probe, run once per driver or host):
//   nvcc -O2 -arch=sm_90 bench/gpu/graph_launch_probe.cu -o graph_launch_probe -lcuda
//   taskset -c 3 ./graph_launch_probe [KIB]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

__global__ void k(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * 0.9f + 0.1f;
}

static double now() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

#define C(x)                                                                                       \
    do {                                                                                           \
        cudaError_t e = (x);                                                                       \
        if (e) {                                                                                   \
            printf("%s: %s\n", #x, cudaGetErrorString(e));                                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

struct G {
    cudaStream_t s;
    cudaGraphExec_t e;
    float *p;
};

// 200 kernels on n floats, captured on g's own stream and instantiated.
static void make(G &g, int n) {
    C(cudaStreamCreateWithFlags(&g.s, cudaStreamNonBlocking));
    C(cudaMalloc(&g.p, n * 4));
    C(cudaMemset(g.p, 0, n * 4));
    cudaGraph_t gr;
    C(cudaStreamBeginCapture(g.s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 200; i++)
        k<<<(n + 255) / 256, 256, 0, g.s>>>(g.p, n);
    C(cudaStreamEndCapture(g.s, &gr));
    C(cudaGraphInstantiateWithFlags(&g.e, gr, 0));
    C(cudaGraphDestroy(gr));
}

static double med(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv) {
    long kb = 0;
    if (argc > 1) {
        char *end = nullptr;
        kb = strtol(argv[1], &end, 10);
        if (argc > 2 || end == argv[1] || *end != '\0' || kb < 1 || kb > 262144) {
            fprintf(stderr, "usage: graph_launch_probe [KIB]   (KIB: 1..262144 written before "
                            "every launch)\n");
            return 2;
        }
    }
    size_t evict = (size_t)kb * 1024;
    volatile unsigned char *buf = evict ? (unsigned char *)calloc(evict, 1) : nullptr;
    if (evict && buf == nullptr) return 1;
    if (evict)
        printf("%zu KiB written before every launch, each launch timed alone\n", evict / 1024);
    C(cudaSetDevice(0));
    C(cudaFree(0));
    // evicting, fewer launches: each costs the buffer's writes
    const int n = 1 << 16, steps = 4, reps = evict ? 60 : 200, rounds = evict ? 3 : 6, S = 5;
    G g[S];
    for (auto &x : g)
        make(x, n);
    CUcontext pc;
    cuCtxGetCurrent(&pc);
    for (int round = 0; round < rounds; round++) {
        std::vector<double> t[S];
        for (int i = 0; i < reps; i++)
            for (int j = 0; j < S; j++) {
                int s = (i + j) % S;
                double t0 = now(), spent = 0;
                for (int q = 0; q < steps; q++) {
                    if (evict) {
                        for (size_t at = 0; at < evict; at += 64)
                            buf[at]++;
                        t0 = now();
                    }
                    if (s == 0 || s == 2) {
                        C(cudaGraphLaunch(g[s].e, g[s].s));
                    } else if (s == 1) {
                        if (cuGraphLaunch((CUgraphExec)g[s].e, (CUstream)g[s].s)) exit(2);
                    } else if (s == 3) {
                        CUcontext c;
                        cuCtxGetCurrent(&c);
                        if (c != pc) exit(3);
                        int d;
                        C(cudaGetDevice(&d));
                        if (cuGraphLaunch((CUgraphExec)g[s].e, (CUstream)g[s].s)) exit(2);
                    } else {
                        CUcontext c;
                        cuCtxGetCurrent(&c);
                        if (c != pc) exit(3);
                        if (cuGraphLaunch((CUgraphExec)g[s].e, (CUstream)g[s].s)) exit(2);
                    }
                    if (evict) spent += now() - t0;
                }
                double t1 = now();
                C(cudaStreamSynchronize(g[s].s));
                if (i) t[s].push_back((evict ? spent : t1 - t0) / steps);
            }
        printf("round %d: cudaGraphLaunch %.0f  cuGraphLaunch %.0f  cudaGraphLaunch(2) %.0f  "
               "ctx+getdev+cuGraphLaunch %.0f  ctx+cuGraphLaunch %.0f ns\n",
               round, med(t[0]), med(t[1]), med(t[2]), med(t[3]), med(t[4]));
    }
    free((void *)buf);
}
