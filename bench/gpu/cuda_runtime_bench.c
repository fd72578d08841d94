/* bench/gpu/cuda_runtime_bench.c - the raw CUDA runtime's cost for the
 * operations bench/runtime_bench.c times through xdev, same method (batches
 * of --ops calls, median/min/max ns per call over --reps batches, an
 * untimed synchronize after each batch), on a non-blocking stream of device 0:
 *
 *   cuda_runtime_bench [--reps 31] [--ops 10000]
 *
 * "current stream" has no raw CUDA call; its counterpart is cudaGetDevice,
 * which c10's getCurrentCUDAStream pays; the same-device guard's counterpart
 * is c10's CUDAGuard on the current device: cudaGetDevice plus a compare
 * (and cudaSetDevice to the same device, shown separately). */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess && e_ != cudaErrorNotReady) {                                        \
            fprintf(stderr, "cuda_runtime_bench: %s: %s\n", #call, cudaGetErrorName(e_));          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static cudaStream_t g_stream;
static cudaEvent_t g_event;
static long g_ops;
static atomic_ulong g_runs;
static volatile int g_sink;

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void noop(void *user) {
    (void)user;
    atomic_fetch_add_explicit(&g_runs, 1, memory_order_relaxed);
}

static void b_host_func(void) {
    for (long i = 0; i < g_ops; i++)
        CHECK(cudaLaunchHostFunc(g_stream, noop, NULL));
}
static void b_record(void) {
    for (long i = 0; i < g_ops; i++)
        CHECK(cudaEventRecord(g_event, g_stream));
}
static void b_query(void) {
    for (long i = 0; i < g_ops; i++)
        CHECK(cudaEventQuery(g_event));
}
static void b_record_query(void) {
    for (long i = 0; i < g_ops; i++) {
        CHECK(cudaEventRecord(g_event, g_stream));
        CHECK(cudaEventQuery(g_event));
    }
}
static void b_stream_query(void) {
    for (long i = 0; i < g_ops; i++)
        CHECK(cudaStreamQuery(g_stream));
}
static void b_get_device(void) {
    int d = 0;
    for (long i = 0; i < g_ops; i++) {
        CHECK(cudaGetDevice(&d));
        g_sink = d;
    }
}
static void b_guard(void) { /* c10::cuda::CUDAGuard on the current device */
    int d = 0;
    for (long i = 0; i < g_ops; i++) {
        CHECK(cudaGetDevice(&d));
        if (d != 0) CHECK(cudaSetDevice(0));
        g_sink = d;
    }
}
static void b_get_set_device(void) {
    int d = 0;
    for (long i = 0; i < g_ops; i++) {
        CHECK(cudaGetDevice(&d));
        CHECK(cudaSetDevice(d));
    }
}

static void run(const char *name, void (*fn)(void), int reps, double *v) {
    fn();
    CHECK(cudaStreamSynchronize(g_stream));
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        fn();
        v[r] = (now_ns() - t0) / (double)g_ops;
        CHECK(cudaStreamSynchronize(g_stream));
    }
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    printf("| %-40s | %10.1f | %10.1f | %10.1f |\n", name, v[reps / 2], v[0], v[reps - 1]);
}

int main(int argc, char **argv) {
    int reps = 31;
    g_ops = 10000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--ops") == 0) g_ops = atol(argv[i + 1]);
    }
    if (reps < 1 || g_ops < 1) return 2;
    CHECK(cudaSetDevice(0));
    struct cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&g_event, cudaEventDisableTiming));
    double *v = malloc(sizeof(double) * (size_t)reps);
    printf("raw CUDA runtime_bench on cuda:0 (%s)\n%d batches of %ld calls; ns per call\n\n",
           p.name, reps, g_ops);
    printf("| %-40s | %10s | %10s | %10s |\n", "operation", "median", "min", "max");
    run("cudaLaunchHostFunc (no-op), per enqueue", b_host_func, reps, v);
    run("cudaEventRecord", b_record, reps, v);
    run("cudaEventQuery (completed event)", b_query, reps, v);
    run("cudaEventRecord + cudaEventQuery", b_record_query, reps, v);
    run("cudaStreamQuery (idle stream)", b_stream_query, reps, v);
    run("cudaGetDevice (current-stream lookup)", b_get_device, reps, v);
    run("same-device guard (cudaGetDevice+cmp)", b_guard, reps, v);
    run("cudaGetDevice + cudaSetDevice (same)", b_get_set_device, reps, v);
    free(v);
    CHECK(cudaEventDestroy(g_event));
    CHECK(cudaStreamDestroy(g_stream));
    return 0;
}
