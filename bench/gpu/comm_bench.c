/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/comm_bench.c - all_reduce across the GPUs of one process:
 * xdev_all_reduce (xdev's communicators, NCCL inside) against NCCL used by
 * hand (ncclCommInitAll + ncclAllReduce from the same libnccl.so.2, opened
 * here by XDEV_NCCL_PATH), through one loop: per size, the ranks' calls in
 * one group, `iters` times, then every device synchronized; host clock
 * around it, after 5 untimed rounds. Sizes 8 B - 1 GiB of f32; the two sides
 * alternate per size. Prints time per all_reduce, algorithm bandwidth
 * (bytes / time) and bus bandwidth (x 2(n-1)/n, NCCL's definition).
 *
 *   XDEV_BACKEND=cuda XDEV_NCCL_PATH=.../libnccl.so.2 comm_bench [--max-mb N]
 */
#define _GNU_SOURCE /* dlopen, clock_gettime */
#include <dlfcn.h>
#include <nccl.h>
#include <string.h>
#include <time.h>

#include "gpu_bench.h"

#define MAXG 8

typedef ncclResult_t (*init_all_fn)(ncclComm_t *, int, const int *);
typedef ncclResult_t (*all_reduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                      ncclComm_t, cudaStream_t);
typedef ncclResult_t (*group_fn)(void);

static init_all_fn nccl_init_all;
static all_reduce_fn nccl_all_reduce;
static group_fn nccl_group_start, nccl_group_end;

static void load_nccl(void) {
    const char *path = getenv("XDEV_NCCL_PATH");
    void *h = dlopen(path && path[0] ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "comm_bench: %s\n", dlerror());
        exit(1);
    }
    *(void **)&nccl_init_all = dlsym(h, "ncclCommInitAll");
    *(void **)&nccl_all_reduce = dlsym(h, "ncclAllReduce");
    *(void **)&nccl_group_start = dlsym(h, "ncclGroupStart");
    *(void **)&nccl_group_end = dlsym(h, "ncclGroupEnd");
    if (!nccl_init_all || !nccl_all_reduce || !nccl_group_start || !nccl_group_end) {
        fprintf(stderr, "comm_bench: NCCL symbols missing\n");
        exit(1);
    }
}

static int n;
static void *buf[MAXG];
static xdev_communicator_t xc[MAXG];
static ncclComm_t nc[MAXG];
static xdev_stream_t xs[MAXG];
static cudaStream_t cs[MAXG]; /* the same streams, native */

static void sync_all(void) {
    for (int r = 0; r < n; r++)
        CHECK(xdev_stream_synchronize(xs[r]));
}

/* One round: every rank's all_reduce of `count` floats, in one group. */
static void round_xdev(size_t count) {
    CHECK(xdev_group_start());
    for (int r = 0; r < n; r++)
        CHECK(
            xdev_all_reduce(xc[r], buf[r], buf[r], count, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, xs[r]));
    CHECK(xdev_group_end());
}

static void round_nccl(size_t count) {
    if (nccl_group_start() != ncclSuccess) exit(1);
    for (int r = 0; r < n; r++)
        if (nccl_all_reduce(buf[r], buf[r], count, ncclFloat32, ncclSum, nc[r], cs[r]) !=
            ncclSuccess)
            exit(1);
    if (nccl_group_end() != ncclSuccess) exit(1);
}

static double time_rounds(void (*round)(size_t), size_t count, int iters) {
    for (int i = 0; i < 5; i++)
        round(count);
    sync_all();
    double t0 = now_ns();
    for (int i = 0; i < iters; i++)
        round(count);
    sync_all();
    return (now_ns() - t0) / iters;
}

int main(int argc, char **argv) {
    size_t max_mb = 1024;
    if (argc == 3 && strcmp(argv[1], "--max-mb") == 0) max_mb = (size_t)atol(argv[2]);
    (void)gb_cuda_device("comm_bench");
    load_nccl();
    CHECK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    if (n > MAXG) n = MAXG;
    if (n < 2) {
        fprintf(stderr, "comm_bench: needs 2 cuda devices, %d present\n", n);
        return 2;
    }
    xdev_device_t devs[MAXG];
    int list[MAXG];
    size_t max_bytes = max_mb << 20;
    for (int r = 0; r < n; r++) {
        devs[r] = (xdev_device_t){XDEV_DEVICE_CUDA, r};
        list[r] = r;
        CHECK(xdev_set_device(devs[r]));
        CHECK(xdev_stream_create(devs[r], 0, &xs[r]));
        void *native = NULL;
        CHECK(xdev_stream_native_handle(xs[r], &native));
        cs[r] = (cudaStream_t)native;
        CHECK(xdev_malloc_stream(&buf[r], max_bytes, xs[r]));
        CHECK(xdev_memset_async(buf[r], 0, max_bytes, xs[r]));
    }
    CHECK(xdev_communicator_init_all(xc, n, devs));
    if (nccl_init_all(nc, n, list) != ncclSuccess) {
        fprintf(stderr, "comm_bench: ncclCommInitAll failed\n");
        return 1;
    }
    sync_all();
    printf("comm_bench: all_reduce f32 sum, %d GPUs, one process, in place; time per "
           "all_reduce (us), bus bandwidth (GB/s)\n",
           n);
    printf("| bytes | xdev us | NCCL us | xdev busbw | NCCL busbw | ratio (NCCL time / xdev) |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    for (size_t bytes = 8; bytes <= max_bytes; bytes *= 8) {
        size_t count = bytes / sizeof(float);
        int iters = bytes <= ((size_t)1 << 20) ? 500 : bytes <= ((size_t)64 << 20) ? 50 : 10;
        double tx[3], tn[3];
        for (int k = 0; k < 3; k++) { /* alternate, median of 3 */
            tx[k] = time_rounds(round_xdev, count, iters);
            tn[k] = time_rounds(round_nccl, count, iters);
        }
        double x = median(tx, 3), y = median(tn, 3);
        double factor = 2.0 * (n - 1) / n;
        printf("| %zu | %.1f | %.1f | %.1f | %.1f | %.3f |\n", bytes, x / 1e3, y / 1e3,
               (double)bytes / x * factor, (double)bytes / y * factor, y / x);
    }
    for (int r = 0; r < n; r++) {
        CHECK(xdev_communicator_destroy(xc[r]));
        CHECK(xdev_free(buf[r]));
    }
    return 0;
}
