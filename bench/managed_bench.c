/* SPDX-License-Identifier: Apache-2.0 */
/* bench/managed_bench.c - managed memory (xdev_malloc_managed) against device
 * memory on the current device of the default backend (XDEV_BACKEND picks
 * it), issue 46's figure: a kernel over managed memory prefetched to the
 * device should run at >= 0.95x of the same kernel over device memory.
 *
 *   managed_bench [--mb 1024] [--reps 11]
 *
 * The kernel is an f32 -> f64 conversion (xdev_convert_async: reads 4 and
 * writes 8 bytes per element, no compiler needed). Rows: the kernel on
 * device memory; on managed memory written by the host then prefetched to
 * the device (the prefetch timed on its own, GB/s of the bytes moved); the
 * kernel again on that memory (the ratio to device memory is the figure);
 * the kernel on managed memory the host touched last, without a prefetch
 * (page faults: for information); the prefetch back to the host. Each kernel
 * row is enqueue + stream synchronize, one untimed run first, the median of
 * --reps; GB/s counts the bytes read and written (1e9 B/s). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "xdev/xdev.h"

typedef struct job {
    void *dst;
    const void *src;
    size_t count;
    xdev_stream_t s;
} job_t;

static void run_kernel(void *arg) {
    job_t *j = arg;
    CHECK(xdev_convert_async(j->dst, XDEV_DTYPE_F64, j->src, XDEV_DTYPE_F32, j->count, j->s));
}

static void settle(void *arg) {
    job_t *j = arg;
    CHECK(xdev_stream_synchronize(j->s));
}

/* Kernel time in ns (enqueue + synchronize), median of reps. */
static double time_kernel(job_t *j, int reps, double *samples) {
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        run_kernel(j);
        settle(j);
        samples[r] = now_ns() - t0;
    }
    return median(samples, reps);
}

int main(int argc, char **argv) {
    size_t mb = 1024;
    int reps = 11;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mb") == 0) mb = (size_t)strtoull(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    }
    if (mb == 0 || reps < 1) {
        fprintf(stderr, "usage: managed_bench [--mb N > 0] [--reps N > 0]\n");
        return 2;
    }
    double *samples = calloc((size_t)reps, sizeof *samples);
    size_t count = mb * ((size_t)1 << 20) / sizeof(float);
    size_t in_bytes = count * sizeof(float), out_bytes = count * sizeof(double);
    double moved = (double)(in_bytes + out_bytes);
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    xdev_stream_t s;
    CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
    printf("managed_bench on %s:%d: %zu MiB f32 in, %zu MiB f64 out, %d reps\n",
           xdev_device_type_name(dev.type), dev.index, mb, 2 * mb, reps);

    /* device memory */
    void *din = NULL, *dout = NULL;
    CHECK(xdev_malloc_device(dev, &din, in_bytes));
    CHECK(xdev_malloc_device(dev, &dout, out_bytes));
    CHECK(xdev_fill_async(din, XDEV_DTYPE_F32, xdev_scalar_f64(1.5), count, s));
    job_t jd = {dout, din, count, s};
    run_kernel(&jd);
    settle(&jd);
    double t_dev = time_kernel(&jd, reps, samples);

    /* managed memory: the host writes it, then it is prefetched to the device */
    float *min = NULL;
    double *mout = NULL;
    CHECK(xdev_malloc_managed(dev, (void **)&min, in_bytes, 0));
    CHECK(xdev_malloc_managed(dev, (void **)&mout, out_bytes, 0));
    for (size_t i = 0; i < count; i++)
        min[i] = 1.5f;
    memset(mout, 0, out_bytes);
    double t0 = now_ns();
    CHECK(xdev_mem_prefetch_async(min, in_bytes, dev.index, s));
    CHECK(xdev_mem_prefetch_async(mout, out_bytes, dev.index, s));
    CHECK(xdev_stream_synchronize(s));
    double t_pre = now_ns() - t0;
    job_t jm = {mout, min, count, s};
    run_kernel(&jm);
    settle(&jm);
    double t_man = time_kernel(&jm, reps, samples);
    int bad = mout[0] != 1.5 || mout[count - 1] != 1.5; /* the host reads the result */

    /* the host touches it again: the kernel without a prefetch faults its pages in */
    for (size_t i = 0; i < count; i++)
        min[i] = 2.5f;
    t0 = now_ns();
    run_kernel(&jm);
    settle(&jm);
    double t_fault = now_ns() - t0;
    bad |= mout[count / 2] != 2.5;
    t0 = now_ns();
    CHECK(xdev_mem_prefetch_async(mout, out_bytes, XDEV_HOST, s));
    CHECK(xdev_stream_synchronize(s));
    double t_back = now_ns() - t0;

    printf("| %-44s | %10s | %8s |\n", "operation", "ms", "GB/s");
    printf("|%.46s|%.12s|%.10s|\n", "----------------------------------------------",
           "------------", "----------");
    printf("| %-44s | %10.3f | %8.1f |\n", "kernel on device memory", t_dev * 1e-6, moved / t_dev);
    printf("| %-44s | %10.3f | %8.1f |\n", "prefetch host -> device (in + out)", t_pre * 1e-6,
           moved / t_pre);
    printf("| %-44s | %10.3f | %8.1f |\n", "kernel on managed memory, prefetched", t_man * 1e-6,
           moved / t_man);
    printf("| %-44s | %10.3f | %8.1f |\n", "kernel on managed memory, host touched last",
           t_fault * 1e-6, moved / t_fault);
    printf("| %-44s | %10.3f | %8.1f |\n", "prefetch device -> host (out)", t_back * 1e-6,
           (double)out_bytes / t_back);
    printf("managed (prefetched) / device memory speed: %.3f (target >= 0.95)\n", t_dev / t_man);
    if (bad) printf("FAIL: the host read a wrong result from managed memory\n");

    CHECK(xdev_free(min));
    CHECK(xdev_free(mout));
    CHECK(xdev_free(din));
    CHECK(xdev_free(dout));
    CHECK(xdev_stream_destroy(s));
    free(samples);
    return bad;
}
