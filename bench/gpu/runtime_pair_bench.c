/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/runtime_pair_bench.c - the calls whose cost over the raw CUDA
 * runtime is tens of nanoseconds, timed with both sides in one process: the
 * same thread, the same stream (xdev's, and its native handle for the raw
 * calls), the same timer, batches alternating (which side goes first flips
 * every round). runtime_bench and cuda_runtime_bench, separate programs,
 * differ by up to a few hundred ns from one process to the next, more than
 * the overhead measured here.
 *
 *   event record       xdev_event_record(e, s)  vs cudaEventRecord(ce, native(s))
 *   host func, held    xdev_launch_host_func    vs cudaLaunchHostFunc, the stream
 *                      held by a waiting function while the batch is enqueued
 *                      (no function runs meanwhile: the call alone)
 *
 *   runtime_pair_bench [--reps 31] [--ops 10000]
 *
 * Prints ns per call: each side's median and the median over rounds of the
 * round's difference (xdev - raw). */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <string.h>

#include "gpu_bench.h"

static atomic_int g_gate;
static atomic_ulong g_runs;

static void noop(void *user) {
    (void)user;
    atomic_fetch_add_explicit(&g_runs, 1, memory_order_relaxed);
}

static void gate_wait(void *user) {
    (void)user;
    while (!atomic_load_explicit(&g_gate, memory_order_acquire)) {
    }
}

typedef struct pair {
    xdev_stream_t xs;
    cudaStream_t cs;
    xdev_event_t xe;
    cudaEvent_t ce;
    long ops;
} pair_t;

/* One batch of `ops` calls of one side, ns per call. */
static double batch(pair_t *p, int what, int xdev) {
    if (what == 1) { /* hold the stream (untimed) */
        atomic_store(&g_gate, 0);
        CCHECK(cudaLaunchHostFunc(p->cs, gate_wait, NULL));
    }
    double t0 = now_ns();
    for (long i = 0; i < p->ops; i++) {
        if (what == 0 && xdev) CHECK(xdev_event_record(p->xe, p->xs));
        if (what == 0 && !xdev) CCHECK(cudaEventRecord(p->ce, p->cs));
        if (what == 1 && xdev) CHECK(xdev_launch_host_func(p->xs, noop, NULL));
        if (what == 1 && !xdev) CCHECK(cudaLaunchHostFunc(p->cs, noop, NULL));
    }
    double t = (now_ns() - t0) / (double)p->ops;
    atomic_store_explicit(&g_gate, 1, memory_order_release);
    CCHECK(cudaStreamSynchronize(p->cs));
    return t;
}

int main(int argc, char **argv) {
    int reps = 31;
    pair_t p = {.ops = 10000};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--ops") == 0) p.ops = atol(argv[i + 1]);
    }
    if (reps < 1 || reps > 10000 || p.ops < 1) return 2;
    xdev_device_t d = gb_cuda_device("runtime_pair_bench");
    CHECK(xdev_stream_create(d, XDEV_STREAM_PRIORITY_NORMAL, &p.xs));
    void *h = NULL;
    CHECK(xdev_stream_native_handle(p.xs, &h));
    p.cs = (cudaStream_t)h;
    CHECK(xdev_event_create(XDEV_EVENT_DEFAULT, &p.xe));
    CCHECK(cudaEventCreateWithFlags(&p.ce, cudaEventDisableTiming));
    double *x = malloc(sizeof(double) * (size_t)reps), *r = malloc(sizeof(double) * (size_t)reps);
    double *dd = malloc(sizeof(double) * (size_t)reps);
    if (!x || !r || !dd) return 1;
    static const char *const names[2] = {"event record", "host func enqueue, held"};
    printf("runtime_pair_bench on cuda:%d, one process, one stream; %d rounds of %ld calls a "
           "side; ns per call\n",
           d.index, reps, p.ops);
    printf("| %-24s | %10s | %10s | %12s |\n", "call", "xdev", "raw", "xdev - raw");
    printf("|%.26s|%.12s|%.12s|%.14s|\n", "--------------------------", "------------",
           "------------", "--------------");
    for (int what = 0; what < 2; what++) {
        (void)batch(&p, what, 1); /* warm-up, both sides */
        (void)batch(&p, what, 0);
        for (int k = 0; k < reps; k++) {
            if (k % 2 == 0) {
                x[k] = batch(&p, what, 1);
                r[k] = batch(&p, what, 0);
            } else {
                r[k] = batch(&p, what, 0);
                x[k] = batch(&p, what, 1);
            }
            dd[k] = x[k] - r[k];
        }
        printf("| %-24s | %10.1f | %10.1f | %12.1f |\n", names[what], median(x, reps),
               median(r, reps), median(dd, reps));
    }
    unsigned long want = 2ul * (unsigned long)(reps + 1) * (unsigned long)p.ops;
    if (atomic_load(&g_runs) != want) {
        fprintf(stderr, "runtime_pair_bench: %lu host functions ran, expected %lu\n",
                atomic_load(&g_runs), want);
        return 1;
    }
    CCHECK(cudaEventDestroy(p.ce));
    CHECK(xdev_event_destroy(p.xe));
    CHECK(xdev_stream_destroy(p.xs));
    free(x), free(r), free(dd);
    return 0;
}
