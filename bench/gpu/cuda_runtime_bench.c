/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/cuda_runtime_bench.c - the raw CUDA runtime's cost for the
 * operations bench/runtime_bench.c times through xdev, same method (batches
 * of --ops calls, median/min/max ns per call over --reps batches, an
 * untimed synchronize after each batch: bench_batches of bench_util.h, the
 * harness runtime_bench uses), on a non-blocking stream of device 0:
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

#include <cuda_runtime_api.h>

#include "../bench_util.h"

/* A CUDA call that may also answer cudaErrorNotReady (the queries). */
#define RCHECK(call)                                                                               \
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

static void noop(void *user) {
    (void)user;
    atomic_fetch_add_explicit(&g_runs, 1, memory_order_relaxed);
}

static void b_host_func(void *unused) {
    (void)unused;
    for (long i = 0; i < g_ops; i++)
        RCHECK(cudaLaunchHostFunc(g_stream, noop, NULL));
}
/* A host function that holds its stream until g_gate opens. */
static atomic_int g_gate;
static void gate_wait(void *user) {
    (void)user;
    while (!atomic_load_explicit(&g_gate, memory_order_acquire)) {
    }
}

/* Enqueues timed while the stream is held (no function runs meanwhile): the
 * call's own cost, as runtime_bench's "enqueue, held" row. */
static void run_held(int reps, double *v) {
    for (int r = 0; r < reps; r++) {
        atomic_store(&g_gate, 0);
        RCHECK(cudaLaunchHostFunc(g_stream, gate_wait, NULL));
        double t0 = now_ns();
        b_host_func(NULL);
        v[r] = (now_ns() - t0) / (double)g_ops;
        atomic_store_explicit(&g_gate, 1, memory_order_release);
        RCHECK(cudaStreamSynchronize(g_stream));
    }
    bench_row("cudaLaunchHostFunc (no-op), enqueue, held", bench_stats(v, reps));
}

static void b_record(void *unused) {
    (void)unused;
    for (long i = 0; i < g_ops; i++)
        RCHECK(cudaEventRecord(g_event, g_stream));
}
static void b_query(void *unused) {
    (void)unused;
    for (long i = 0; i < g_ops; i++)
        RCHECK(cudaEventQuery(g_event));
}
static void b_record_query(void *unused) {
    (void)unused;
    for (long i = 0; i < g_ops; i++) {
        RCHECK(cudaEventRecord(g_event, g_stream));
        RCHECK(cudaEventQuery(g_event));
    }
}
static void b_stream_query(void *unused) {
    (void)unused;
    for (long i = 0; i < g_ops; i++)
        RCHECK(cudaStreamQuery(g_stream));
}
static void b_get_device(void *unused) {
    (void)unused;
    int d = 0;
    for (long i = 0; i < g_ops; i++) {
        RCHECK(cudaGetDevice(&d));
        g_sink = d;
    }
}
static void b_guard(void *unused) {
    (void)unused; /* c10::cuda::CUDAGuard on the current device */
    int d = 0;
    for (long i = 0; i < g_ops; i++) {
        RCHECK(cudaGetDevice(&d));
        if (d != 0) RCHECK(cudaSetDevice(0));
        g_sink = d;
    }
}
static void b_get_set_device(void *unused) {
    (void)unused;
    int d = 0;
    for (long i = 0; i < g_ops; i++) {
        RCHECK(cudaGetDevice(&d));
        RCHECK(cudaSetDevice(d));
    }
}

static void settle(void *unused) {
    (void)unused;
    RCHECK(cudaStreamSynchronize(g_stream));
}

static void run(const char *name, void (*fn)(void *), int reps, double *v) {
    bench_row(name, bench_batches(fn, settle, NULL, g_ops, reps, v));
}

int main(int argc, char **argv) {
    int reps = 31;
    g_ops = 10000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--ops") == 0) g_ops = atol(argv[i + 1]);
    }
    if (reps < 1 || g_ops < 1) return 2;
    RCHECK(cudaSetDevice(0));
    struct cudaDeviceProp p;
    RCHECK(cudaGetDeviceProperties(&p, 0));
    RCHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    RCHECK(cudaEventCreateWithFlags(&g_event, cudaEventDisableTiming));
    double *v = malloc(sizeof(double) * (size_t)reps);
    printf("raw CUDA runtime_bench on cuda:0 (%s)\n%d batches of %ld calls; ns per call\n\n",
           p.name, reps, g_ops);
    bench_table_header();
    run("cudaLaunchHostFunc (no-op), per enqueue", b_host_func, reps, v);
    run_held(reps, v);
    run("cudaEventRecord", b_record, reps, v);
    run("cudaEventQuery (completed event)", b_query, reps, v);
    run("cudaEventRecord + cudaEventQuery", b_record_query, reps, v);
    run("cudaStreamQuery (idle stream)", b_stream_query, reps, v);
    run("cudaGetDevice (current-stream lookup)", b_get_device, reps, v);
    run("same-device guard (cudaGetDevice+cmp)", b_guard, reps, v);
    run("cudaGetDevice + cudaSetDevice (same)", b_get_set_device, reps, v);
    free(v);
    RCHECK(cudaEventDestroy(g_event));
    RCHECK(cudaStreamDestroy(g_stream));
    return 0;
}
