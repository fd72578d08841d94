/* SPDX-License-Identifier: Apache-2.0 */
/* exit_helper.c - a program that leaves xdev with work queued and ends in
 * one of several ways (argv[1]): "return" from main, "exit" (exit(0)),
 * "pthread_exit" from main, "host_fn_exit" (exit(0) inside a host function),
 * "exit_busy" (exit(0) while other threads keep creating, using, synchronizing
 * and destroying streams: their calls may fail once the exit starts, but
 * nothing may crash or hang).
 * test_process.c runs it many times: it must end with status 0, promptly,
 * every time. Queued GEMMs on several CPU streams keep OpenBLAS busy while
 * the process shuts down (issue 16, item 12: that used to crash or hang).
 * After "pthread_exit" the workers run the queued GEMMs, go idle and retire,
 * and the last one to end ends the process (test_process.c runs that mode
 * with OPENBLAS_NUM_THREADS=1: the pool that a pthread OpenBLAS starts when
 * it loads keeps any process alive after pthread_exit() from main). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xdev/xdev.h"

#define N 192     /* a few ms per GEMM on one core */
#define STREAMS 3 /* per device */
#define QUEUED 12 /* GEMMs per stream */

static void die(const char *what) {
    fprintf(stderr, "exit_helper: %s: %s\n", what, xdev_last_error());
    _exit(3);
}

static void exit_now(void *unused) {
    (void)unused;
    exit(0);
}

/* exit_busy: stream churn with GEMMs until the process ends; errors (the
 * calls refused once the exit has started) are ignored. `arg`: a, b and c,
 * N x N each, on cpu:0; c is this thread's own. */
static void *busy_main(void *arg) {
    float *m = arg;
    for (unsigned i = 0;; i++) {
        xdev_stream_t st;
        if (xdev_stream_create(xdev_cpu(0), XDEV_STREAM_PRIORITY_NORMAL, &st) != XDEV_SUCCESS) {
            sched_yield();
            continue;
        }
        for (int q = 0; q < 4; q++)
            (void)xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, N, N, N, 1.0, m, N,
                            m + (size_t)N * N, N, 0.0, m + (size_t)2 * N * N, N, st);
        if (i % 2 == 0) (void)xdev_stream_synchronize(st);
        (void)xdev_stream_destroy(st);
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "return";
    int devices = 0;
    if (xdev_device_count(XDEV_DEVICE_CPU, &devices) != XDEV_SUCCESS || devices < 1)
        die("device_count");
    size_t bytes = (size_t)N * N * sizeof(float);
    xdev_stream_t first = NULL;
    for (int d = 0; d < devices; d++) {
        void *a, *b, *c;
        if (xdev_malloc_device(xdev_cpu(d), &a, bytes) ||
            xdev_malloc_device(xdev_cpu(d), &b, bytes) ||
            xdev_malloc_device(xdev_cpu(d), &c, bytes))
            die("malloc");
        if (xdev_memset_async(a, 0, bytes, NULL) || xdev_memset_async(b, 0, bytes, NULL))
            die("memset");
        for (int s = 0; s < STREAMS; s++) {
            xdev_stream_t st;
            if (xdev_stream_create(xdev_cpu(d), XDEV_STREAM_PRIORITY_NORMAL, &st)) die("stream");
            for (int q = 0; q < QUEUED; q++)
                if (xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, N, N, N, 1.0, a, N, b,
                              N, 0.0, c, N, st))
                    die("gemm");
            if (d == 0 && s == 0) first = st;
        }
    }
    /* Last, so that main is not enqueueing when exit() runs on the worker
     * (calls made during exit are refused, as they should be). */
    if (strcmp(mode, "host_fn_exit") == 0 && xdev_launch_host_func(first, exit_now, NULL))
        die("launch_host_func");
    if (strcmp(mode, "exit") == 0) exit(0);
    if (strcmp(mode, "exit_busy") == 0) {
        for (int t = 0; t < 2; t++) {
            float *m;
            pthread_t th;
            if (xdev_malloc_device(xdev_cpu(0), (void **)&m, 3 * bytes) ||
                xdev_memset_async(m, 0, 3 * bytes, NULL) || xdev_synchronize())
                die("busy setup");
            if (pthread_create(&th, NULL, busy_main, m) != 0) die("pthread_create");
        }
        struct timespec nap = {0, (long)(getpid() % 20 + 5) * 1000000L}; /* 5-24 ms */
        nanosleep(&nap, NULL);
        exit(0);
    }
    if (strcmp(mode, "pthread_exit") == 0) pthread_exit(NULL);
    if (strcmp(mode, "host_fn_exit") == 0) {
        for (;;)
            pause(); /* the host function ends the process */
    }
    return 0;
}
