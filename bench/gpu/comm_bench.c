/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/comm_bench.c - collectives across the GPUs of one process,
 * xdev against NCCL used by hand (ncclCommInitAll and the collective from the
 * same libnccl.so.2, opened here by XDEV_NCCL_PATH), each table through one
 * loop: per size, `iters` calls, then every device synchronized; host clock
 * around it, after 5 untimed rounds; the two sides alternate per size,
 * median of 3.
 *
 * all_reduce  xdev_all_reduce (xdev's communicators) vs ncclAllReduce, the
 *             ranks' calls in one group, on created streams; 8 B - 1 GiB of
 *             f32. Time per all_reduce, algorithm and bus bandwidth
 *             (x 2(n-1)/n, NCCL's definition).
 * broadcast   torch.cuda.comm.broadcast's C call, xdev_comm_broadcast (device
 *             0 to one buffer on each other device: its cached NCCL group),
 *             vs what torch's does by hand: ncclGroupStart, per device
 *             cudaSetDevice + ncclBroadcast on that device's current stream
 *             (device 0's in place on the source), ncclGroupEnd, the caller's
 *             device restored. Same buffers, same current streams (each
 *             device's default), 8 B - 2 MiB: what xdev adds to the NCCL
 *             calls, without Python (bench/gpu/comm_torch.py has the Python
 *             comparison with torch itself). A third column times the same
 *             broadcast through an init_all group's public calls
 *             (xdev_group_start, xdev_broadcast per rank, xdev_group_end):
 *             checked and watched per rank, as the cached group was before.
 *
 *   XDEV_BACKEND=cuda XDEV_NCCL_PATH=.../libnccl.so.2 comm_bench [--max-mb N]
 *       [--op all_reduce|broadcast|all] (default all)
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
typedef ncclResult_t (*broadcast_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                                     cudaStream_t);
typedef ncclResult_t (*group_fn)(void);

static init_all_fn nccl_init_all;
static all_reduce_fn nccl_all_reduce;
static broadcast_fn nccl_broadcast;
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
    *(void **)&nccl_broadcast = dlsym(h, "ncclBroadcast");
    *(void **)&nccl_group_start = dlsym(h, "ncclGroupStart");
    *(void **)&nccl_group_end = dlsym(h, "ncclGroupEnd");
    if (!nccl_init_all || !nccl_all_reduce || !nccl_broadcast || !nccl_group_start ||
        !nccl_group_end) {
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

/* ---------------------------------------------------------------- broadcast */
static xdev_device_t devs[MAXG];
static void *bsrc, *bdst[MAXG]; /* the source on device 0; bdst[r] on device r >= 1 */
static cudaStream_t cur[MAXG];  /* each device's current stream, native */

static void sync_devices(void) {
    for (int r = 0; r < n; r++)
        CHECK(xdev_device_synchronize(devs[r]));
}

static void bcast_xdev(size_t bytes) {
    CHECK(xdev_comm_broadcast(bsrc, bytes, bdst + 1, n - 1));
}

/* The same broadcast through the public communicator calls of an init_all
 * group (xc): a registry hold, the full checks and the watchdog's event
 * record per rank - what xdev_comm_broadcast's cached group paid per rank
 * before it skipped them. */
static void bcast_group(size_t bytes) {
    CHECK(xdev_group_start());
    for (int r = 0; r < n; r++) {
        void *b = r == 0 ? bsrc : bdst[r];
        CHECK(xdev_broadcast(xc[r], b, b, bytes, XDEV_DTYPE_U8, 0, NULL));
    }
    CHECK(xdev_group_end());
}

/* torch.cuda.comm.broadcast(src, out=[...]) by hand: nccl::broadcast's calls. */
static void bcast_nccl(size_t bytes) {
    int prev = 0;
    CCHECK(cudaGetDevice(&prev));
    if (nccl_group_start() != ncclSuccess) exit(1);
    for (int r = 0; r < n; r++) {
        CCHECK(cudaSetDevice(r));
        void *b = r == 0 ? bsrc : bdst[r];
        if (nccl_broadcast(b, b, bytes, ncclUint8, 0, nc[r], cur[r]) != ncclSuccess) exit(1);
    }
    if (nccl_group_end() != ncclSuccess) exit(1);
    CCHECK(cudaSetDevice(prev));
}

static double time_bcast(void (*call)(size_t), size_t bytes, int iters) {
    for (int i = 0; i < 5; i++)
        call(bytes);
    sync_devices();
    double t0 = now_ns();
    for (int i = 0; i < iters; i++)
        call(bytes);
    sync_devices();
    return (now_ns() - t0) / iters;
}

static void broadcast_table(void) {
    const size_t max_bytes = (size_t)2 << 20;
    CHECK(xdev_set_device(devs[0])); /* torch's current device in comm_torch.py */
    CHECK(xdev_malloc_device(devs[0], &bsrc, max_bytes));
    CHECK(xdev_memset_async(bsrc, 1, max_bytes, NULL));
    for (int r = 0; r < n; r++) {
        xdev_stream_t s;
        void *native = NULL;
        CHECK(xdev_stream_current(devs[r], &s));
        CHECK(xdev_stream_native_handle(s, &native));
        cur[r] = (cudaStream_t)native;
        if (r > 0) {
            CHECK(xdev_malloc_device(devs[r], &bdst[r], max_bytes));
            CHECK(xdev_memset_async(bdst[r], 0, max_bytes, NULL));
        }
    }
    sync_devices();
    bcast_xdev(max_bytes); /* makes xdev's cached group, outside the timing */
    sync_devices();
    unsigned char probe = 0;
    CHECK(xdev_memcpy(&probe, (char *)bdst[n - 1] + max_bytes - 1, 1));
    if (probe != 1) {
        fprintf(stderr, "comm_bench: xdev_comm_broadcast did not deliver the bytes\n");
        exit(1);
    }
    printf("comm_bench: broadcast, device 0 to %d other(s), current streams; time per broadcast "
           "(us): xdev_comm_broadcast vs ncclGroupStart + ncclBroadcast per device + "
           "ncclGroupEnd; 'watched group': xdev_group_start + xdev_broadcast per rank of an "
           "init_all group + xdev_group_end\n",
           n - 1);
    printf("| bytes | xdev us | NCCL us | xdev - NCCL us | ratio (NCCL time / xdev) | watched "
           "group us |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
        double tx[3], tn[3], tg[3];
        for (int k = 0; k < 3; k++) { /* alternate, median of 3 */
            tx[k] = time_bcast(bcast_xdev, bytes, 500);
            tn[k] = time_bcast(bcast_nccl, bytes, 500);
            tg[k] = time_bcast(bcast_group, bytes, 500);
        }
        double x = median(tx, 3), y = median(tn, 3), g = median(tg, 3);
        printf("| %zu | %.2f | %.2f | %.2f | %.3f | %.2f |\n", bytes, x / 1e3, y / 1e3,
               (x - y) / 1e3, y / x, g / 1e3);
    }
    for (int r = 1; r < n; r++)
        CHECK(xdev_free(bdst[r]));
    CHECK(xdev_free(bsrc));
}

int main(int argc, char **argv) {
    size_t max_mb = 1024;
    const char *op = "all";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--max-mb") == 0)
            max_mb = (size_t)atol(argv[i + 1]);
        else if (strcmp(argv[i], "--op") == 0)
            op = argv[i + 1];
        else
            break;
    }
    bool do_ar = strcmp(op, "all") == 0 || strcmp(op, "all_reduce") == 0;
    bool do_bc = strcmp(op, "all") == 0 || strcmp(op, "broadcast") == 0;
    if (!do_ar && !do_bc) {
        fprintf(stderr, "usage: comm_bench [--max-mb N] [--op all_reduce|broadcast|all]\n");
        return 2;
    }
    (void)gb_cuda_device("comm_bench");
    load_nccl();
    CHECK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    if (n > MAXG) n = MAXG;
    if (n < 2) {
        fprintf(stderr, "comm_bench: needs 2 cuda devices, %d present\n", n);
        return 2;
    }
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
    if (do_bc) broadcast_table();
    if (do_ar) {
        printf("comm_bench: all_reduce f32 sum, %d GPUs, one process, in place; time per "
               "all_reduce (us), bus bandwidth (GB/s)\n",
               n);
        printf(
            "| bytes | xdev us | NCCL us | xdev busbw | NCCL busbw | ratio (NCCL time / xdev) |\n");
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
    }
    for (int r = 0; r < n; r++) {
        CHECK(xdev_communicator_destroy(xc[r]));
        CHECK(xdev_free(buf[r]));
    }
    return 0;
}
