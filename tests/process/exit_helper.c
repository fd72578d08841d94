/* exit_helper.c - a program that leaves xdev with work queued and ends in
 * one of several ways (argv[1]): "return" from main, "exit" (exit(0)),
 * "pthread_exit" from main, "host_fn_exit" (exit(0) inside a host function).
 * test_process.c runs it many times: it must end with status 0, promptly,
 * every time. Queued GEMMs on several CPU streams keep OpenBLAS busy while
 * the process shuts down (issue 16, item 12: that used to crash or hang).
 * "pthread_exit" queues memsets only (test_process.c runs it with
 * OPENBLAS_NUM_THREADS=1: OpenBLAS's own thread pool keeps any process alive
 * after pthread_exit() from main). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
            for (int q = 0; q < QUEUED && strcmp(mode, "pthread_exit") != 0; q++)
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
    if (strcmp(mode, "pthread_exit") == 0) pthread_exit(NULL);
    if (strcmp(mode, "host_fn_exit") == 0) {
        for (;;)
            pause(); /* the host function ends the process */
    }
    return 0;
}
