/* test_comm_procs.c - communicator ranks in separate processes
 * (xdev_comm_unique_id, xdev_comm_init_rank) on CUDA over NCCL: this
 * program makes a group id, starts one child per GPU (fork + exec of itself,
 * the id in hex on the command line - a launcher's job), and each child
 * joins as its rank on its GPU, all_reduces and broadcasts, checks the
 * results and exits 0. Exits 77 (skipped, reason printed) with fewer than 2
 * GPUs or without NCCL. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xdev/xdev.h>

#include "xt_procs.h"

#define NR 2
#define COUNT 4096

static int fail(const char *what) {
    fprintf(stderr, "test_comm_procs: %s: %s\n", what, xdev_last_error());
    return 1;
}

static int child(int rank, const char *hex) {
    xdev_comm_id_t id;
    if (!xt_id_from_hex(hex, &id)) return fail("bad id argument");
    xdev_device_t dev = {XDEV_DEVICE_CUDA, rank};
    if (xdev_set_device(dev) != XDEV_SUCCESS) return fail("set_device");
    xdev_comm_t comm;
    if (xdev_comm_init_rank(&comm, NR, &id, rank, dev) != XDEV_SUCCESS) return fail("init_rank");
    int r = -1, n = 0;
    if (xdev_comm_rank(comm, &r) != XDEV_SUCCESS || r != rank) return fail("rank");
    if (xdev_comm_size(comm, &n) != XDEV_SUCCESS || n != NR) return fail("size");
    float *h = malloc(COUNT * sizeof *h);
    void *d = NULL;
    for (int i = 0; i < COUNT; i++)
        h[i] = (float)(rank + 1) * (float)(i % 7);
    if (xdev_malloc(&d, COUNT * sizeof *h) != XDEV_SUCCESS ||
        xdev_memcpy(d, h, COUNT * sizeof *h) != XDEV_SUCCESS)
        return fail("buffer");
    /* all_reduce: (1 + 2) * (i % 7) on both ranks */
    if (xdev_all_reduce(comm, d, d, COUNT, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL) != XDEV_SUCCESS ||
        xdev_memcpy(h, d, COUNT * sizeof *h) != XDEV_SUCCESS)
        return fail("all_reduce");
    for (int i = 0; i < COUNT; i++)
        if (h[i] != 3.0f * (float)(i % 7)) {
            fprintf(stderr, "test_comm_procs: rank %d element %d: %g\n", rank, i, h[i]);
            return 1;
        }
    /* broadcast from rank 1: its value 7 everywhere */
    for (int i = 0; i < COUNT; i++)
        h[i] = rank == 1 ? 7.0f : -1.0f;
    if (xdev_memcpy(d, h, COUNT * sizeof *h) != XDEV_SUCCESS ||
        xdev_broadcast(comm, d, d, COUNT, XDEV_DTYPE_F32, 1, NULL) != XDEV_SUCCESS ||
        xdev_memcpy(h, d, COUNT * sizeof *h) != XDEV_SUCCESS)
        return fail("broadcast");
    for (int i = 0; i < COUNT; i++)
        if (h[i] != 7.0f) {
            fprintf(stderr, "test_comm_procs: rank %d broadcast element %d: %g\n", rank, i, h[i]);
            return 1;
        }
    if (xdev_comm_check(comm) != XDEV_SUCCESS) return fail("check");
    if (xdev_comm_destroy(comm) != XDEV_SUCCESS || xdev_free(d) != XDEV_SUCCESS)
        return fail("destroy");
    free(h);
    printf("rank %d of %d on cuda:%d: all_reduce and broadcast ok\n", rank, NR, rank);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "child") == 0) return child(atoi(argv[2]), argv[3]);
    int count = 0;
    if (xdev_device_count(XDEV_DEVICE_CUDA, &count) != XDEV_SUCCESS || count < NR) {
        printf("SKIP test_comm_procs: needs %d cuda devices (%d present): %s\n", NR, count,
               count < NR ? "" : xdev_last_error());
        return 77;
    }
    xdev_comm_id_t id;
    xdev_status_t st = xdev_comm_unique_id(XDEV_DEVICE_CUDA, &id);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        printf("SKIP test_comm_procs: %s\n", xdev_last_error());
        return 77;
    }
    if (st != XDEV_SUCCESS) return fail("unique_id");
    int bad = xt_spawn_ranks(argv[0], NR, &id, "test_comm_procs");
    if (!bad) printf("test_comm_procs: %d processes, one rank each: ok\n", NR);
    return bad;
}
