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

#define NR 2
#define COUNT 4096

static int fail(const char *what) {
    fprintf(stderr, "test_comm_procs: %s: %s\n", what, xdev_last_error());
    return 1;
}

static int child(int rank, const char *hex) {
    xdev_comm_id_t id;
    if (strlen(hex) != 2 * sizeof id.bytes) return fail("bad id argument");
    for (size_t i = 0; i < sizeof id.bytes; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return fail("bad id argument");
        id.bytes[i] = (unsigned char)v;
    }
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
    char hex[2 * sizeof id.bytes + 1];
    for (size_t i = 0; i < sizeof id.bytes; i++)
        snprintf(hex + 2 * i, 3, "%02x", id.bytes[i]);
    pid_t pids[NR];
    for (int r = 0; r < NR; r++) {
        char rank[8];
        snprintf(rank, sizeof rank, "%d", r);
        pids[r] = fork();
        if (pids[r] < 0) return fail("fork");
        if (pids[r] == 0) { /* a fresh process: exec, as a launcher does */
            execl("/proc/self/exe", argv[0], "child", rank, hex, (char *)NULL);
            _exit(127);
        }
    }
    int bad = 0;
    for (int r = 0; r < NR; r++) {
        int status = 0;
        if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "test_comm_procs: rank %d's process failed (status %d)\n", r, status);
            bad = 1;
        }
    }
    if (!bad) printf("test_comm_procs: %d processes, one rank each: ok\n", NR);
    return bad;
}
