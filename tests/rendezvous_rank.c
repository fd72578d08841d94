/* SPDX-License-Identifier: Apache-2.0 */
/* rendezvous_rank.c - one rank as a launcher starts it: xdev_communicator_init_env
 * on the device type named by argv[1] ("cpu" by default, "cuda"), an all_reduce
 * of rank + 1 over every rank (i64 sum) and of a 16 MiB f32 buffer, checked,
 * then destroy. Prints one line per rank; exits 0 when the sums are right.
 * With "bench" as argv[2], rank 0 also prints the all_reduce bus bandwidth
 * (NCCL's busbw: 2 (n-1)/n x bytes / time) from 1 MiB to 256 MiB, 20 timed
 * calls per size after 5 untimed, the same loop on every rank. Run by
 * tests/rendezvous_launchers.sh under mpirun (CI) and torchrun (GPU
 * machine). With "die" as argv[2], the last rank leaves right after
 * joining, without a collective (SIGKILLed when XT_DIE_BY_SIGNAL is set): every other rank's
 * all_reduce must then fail well before XDEV_COMM_TIMEOUT, within the bound below (the CPU
 * backend's transports see the process gone), with the transport's status and a message naming
 * the rank, as reported by xdev_communicator_check; such a rank prints "detected ... ok". */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xdev/xdev.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != XDEV_SUCCESS) {                                                              \
            fprintf(stderr, "rendezvous_rank: %s: %s\n", #call, xdev_last_error());                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* All ranks run the same loop; each size ends with a synchronize, so the
 * time is the slowest rank's. */
static int bench(xdev_communicator_t c, xdev_device_t dev, int rank, int n) {
    xdev_stream_t s;
    CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
    size_t max = (size_t)256 << 20;
    float *buf;
    CHECK(xdev_malloc_device(dev, (void **)&buf, max));
    CHECK(xdev_memset_async(buf, 0, max, s));
    if (rank == 0) printf("| bytes | time us | busbw GB/s |\n|---:|---:|---:|\n");
    for (size_t bytes = (size_t)1 << 20; bytes <= max; bytes *= 4) {
        size_t count = bytes / sizeof(float);
        for (int i = 0; i < 5; i++)
            CHECK(xdev_all_reduce(c, buf, buf, count, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, s));
        CHECK(xdev_stream_synchronize(s));
        double t0 = now_s();
        for (int i = 0; i < 20; i++)
            CHECK(xdev_all_reduce(c, buf, buf, count, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, s));
        CHECK(xdev_stream_synchronize(s));
        double t = (now_s() - t0) / 20;
        if (rank == 0)
            printf("| %zu | %.1f | %.1f |\n", bytes, t * 1e6,
                   2.0 * (n - 1) / n * (double)bytes / t / 1e9);
    }
    CHECK(xdev_free(buf));
    CHECK(xdev_stream_destroy(s));
    return 0;
}

/* How soon a survivor must name the rank that left: the transport looks
 * for gone ranks every 20 ms (shared memory) or 500 ms (MPI), documented as
 * "a fraction of a second" and "half a second" (docs/scale.md); 2 s leaves
 * room for a loaded 2-core machine under ThreadSanitizer, and is far below
 * XDEV_COMM_TIMEOUT, at which a transport that never looked would report.
 * XT_DEAD_WITHIN_S overrides it. */
static double dead_bound_s(void) {
    const char *v = getenv("XT_DEAD_WITHIN_S");
    double b = v != NULL ? atof(v) : 0;
    return b > 0 ? b : 2.0;
}

/* The "die" mode: the last rank leaves; the others must be told, within
 * the bound, with the status the transport documents (MPI: XDEV_ERROR_IO,
 * "... rank 2 (pid P) on this host ended"; shared memory: the group is
 * aborted, XDEV_ERROR_INVALID_VALUE, "... rank 2 (process P) died ..."),
 * naming the rank that left. */
static int survive(xdev_communicator_t c, xdev_device_t dev, int rank, int n) {
    if (rank == n - 1) {
        printf("rendezvous_rank: rank %d of %d leaves without joining the all_reduce, ok\n", rank,
               n);
        fflush(stdout);
        if (getenv("XT_DIE_BY_SIGNAL") != NULL) raise(SIGKILL); /* killed */
        _exit(0); /* gone, as a crashed rank would be (no destroy, no exit handlers) */
    }
    const char *engine = "";
    CHECK(xdev_communicator_engine(c, &engine));
    bool over_mpi = strcmp(engine, "mpi") == 0;
    float *buf;
    CHECK(xdev_malloc_device(dev, (void **)&buf, 1 << 20));
    CHECK(xdev_memset_async(buf, 0, 1 << 20, NULL));
    double t0 = now_s();
    xdev_status_t st =
        xdev_all_reduce(c, buf, buf, (1 << 20) / 4, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL);
    if (st == XDEV_SUCCESS) st = xdev_device_synchronize(dev);
    if (st == XDEV_SUCCESS) st = xdev_communicator_check(c);
    double t = now_s() - t0, bound = dead_bound_s();
    char msg[1024], who[64];
    snprintf(msg, sizeof msg, "%s", xdev_last_error());
    snprintf(who, sizeof who, over_mpi ? "rank %d (pid " : "rank %d (process ", n - 1);
    xdev_status_t want = over_mpi ? XDEV_ERROR_IO : XDEV_ERROR_INVALID_VALUE;
    const char *verdict = st == XDEV_SUCCESS         ? "NOT DETECTED"
                          : st != want               ? "WRONG STATUS"
                          : strstr(msg, who) == NULL ? "the rank that left NOT NAMED"
                          : t > bound                ? "TOO LATE"
                                                     : "ok";
    printf("rendezvous_rank: rank %d of %d over %s detected after %.2f s (bound %.1f s): %s "
           "(want %s naming '%s'): %s, %s\n",
           rank, n, engine, t, bound, xdev_status_string(st), xdev_status_string(want), who, msg,
           verdict);
    (void)xdev_free(buf);
    (void)xdev_communicator_destroy(c); /* an aborted rank is destroyed cleanly */
    return strcmp(verdict, "ok") == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    xdev_device_type_t type = XDEV_DEVICE_CPU;
    if (argc > 1 && strcmp(argv[1], "cuda") == 0) type = XDEV_DEVICE_CUDA;
    xdev_launch_info_t li;
    CHECK(xdev_launch_info(&li));
    xdev_communicator_t c;
    double t_init = now_s();
    CHECK(xdev_communicator_init_env(&c, type));
    t_init = now_s() - t_init;
    int rank, n;
    xdev_device_t dev;
    CHECK(xdev_communicator_rank(c, &rank));
    CHECK(xdev_communicator_size(c, &n));
    CHECK(xdev_communicator_device(c, &dev));
    if (argc > 2 && strcmp(argv[2], "die") == 0) return survive(c, dev, rank, n);
    long long h = rank + 1, *d;
    CHECK(xdev_malloc_device(dev, (void **)&d, sizeof h));
    CHECK(xdev_memcpy(d, &h, sizeof h));
    CHECK(xdev_all_reduce(c, d, d, 1, XDEV_DTYPE_I64, XDEV_REDUCE_SUM, NULL));
    CHECK(xdev_memcpy(&h, d, sizeof h));
    size_t count = 4u << 20; /* 16 MiB of f32 */
    float *big, *hb = malloc(count * sizeof *hb);
    if (hb == NULL) return 1;
    CHECK(xdev_malloc_device(dev, (void **)&big, count * sizeof *big));
    CHECK(xdev_fill_async(big, XDEV_DTYPE_F32, xdev_scalar_f64(rank + 1), count, NULL));
    CHECK(xdev_device_synchronize(dev));
    double t_big = now_s();
    CHECK(xdev_all_reduce(c, big, big, count, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL));
    CHECK(xdev_device_synchronize(dev));
    t_big = now_s() - t_big;
    CHECK(xdev_memcpy(hb, big, count * sizeof *hb));
    bool ok = h == (long long)n * (n + 1) / 2 && hb[0] == (float)h && hb[count - 1] == (float)h;
    const char *engine;
    CHECK(xdev_communicator_engine(c, &engine));
    printf("rendezvous_rank: %s rank %d of %d (local rank %d) on %s:%d over %s: init_env %.0f "
           "ms, all_reduce of 16 MiB %.1f ms: sum %lld, %s\n",
           li.launcher, rank, n, li.local_rank, xdev_device_type_name(dev.type), dev.index, engine,
           t_init * 1e3, t_big * 1e3, h, ok ? "ok" : "WRONG");
    free(hb);
    if (argc > 2 && strcmp(argv[2], "bench") == 0 && bench(c, dev, rank, n) != 0) return 1;
    CHECK(xdev_free(big));
    CHECK(xdev_free(d));
    CHECK(xdev_communicator_destroy(c));
    return ok ? 0 : 1;
}
