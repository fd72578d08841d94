/* SPDX-License-Identifier: Apache-2.0 */
/* test_comm_procs_cpu.c - communicator ranks in separate processes on the
 * CPU backend (shared memory): this program makes a group id and starts
 * NPROC copies of itself (fork + exec, the id in hex on the command line);
 * each joins as its rank with xdev_communicator_init_rank and runs all_reduce (f32
 * sum over more than one 1 MiB staging chunk, i64 max, i32 avg), broadcast,
 * reduce, all_gather, reduce_scatter (also in place; an overlapping
 * recvbuf refused), checks them against the host; then
 * send/recv (a ring where every rank sends first, messages kept in order, a
 * recv whose count differs: nothing written, the receiver told), a
 * collective the ranks disagree on (nothing written, every rank told), and
 * exits 0. ctest comm.procs_cpu. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xdev/xdev.h>

#include "xt_procs.h"

#define NPROC 3
#define BIG 300000 /* f32 elements: 1.2 MB, more than a staging chunk */

static int rank_g;

static int fail(const char *what) {
    fprintf(stderr, "test_comm_procs_cpu rank %d: %s: %s\n", rank_g, what, xdev_last_error());
    return 1;
}

#define OK(call)                                                                                   \
    do {                                                                                           \
        if ((call) != XDEV_SUCCESS) return fail(#call);                                            \
    } while (0)
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "test_comm_procs_cpu rank %d: ", rank_g);                              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static int child(int rank, const char *hex) {
    rank_g = rank;
    xdev_communicator_id_t id;
    EXPECT(xt_id_from_hex(hex, &id), "bad id argument");
    xdev_device_t dev = {XDEV_DEVICE_CPU, 0};
    xdev_communicator_t c;
    OK(xdev_communicator_init_rank(&c, NPROC, &id, rank, dev));
    int n = 0;
    OK(xdev_communicator_size(c, &n));
    EXPECT(n == NPROC, "size %d", n);
    float *f = NULL, *fh = malloc(BIG * NPROC * sizeof(float));
    OK(xdev_malloc((void **)&f, BIG * NPROC * sizeof(float)));
    /* all_reduce f32 sum: (r + 1) * (i % 11) summed = 6 * (i % 11) */
    for (int i = 0; i < BIG; i++)
        fh[i] = (float)(rank + 1) * (float)(i % 11);
    OK(xdev_memcpy(f, fh, BIG * sizeof(float)));
    OK(xdev_all_reduce(c, f, f, BIG, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL));
    OK(xdev_memcpy(fh, f, BIG * sizeof(float)));
    for (int i = 0; i < BIG; i++)
        EXPECT(fh[i] == 6.0f * (float)(i % 11), "all_reduce element %d: %g", i, fh[i]);
    /* i64 max and i32 avg */
    int64_t *q = NULL, qh[64];
    OK(xdev_malloc((void **)&q, sizeof qh));
    for (int i = 0; i < 64; i++)
        qh[i] = (int64_t)(rank * 1000 + i) * (i % 2 ? -1 : 1);
    OK(xdev_memcpy(q, qh, sizeof qh));
    OK(xdev_all_reduce(c, q, q, 64, XDEV_DTYPE_I64, XDEV_REDUCE_MAX, NULL));
    OK(xdev_memcpy(qh, q, sizeof qh));
    for (int i = 0; i < 64; i++)
        EXPECT(qh[i] == (i % 2 ? -(int64_t)i : (int64_t)(2000 + i)), "max element %d", i);
    int32_t *a = (int32_t *)q, ah[64];
    for (int i = 0; i < 64; i++)
        ah[i] = rank * 3 + i; /* avg over 0, 3, 6 -> 3 + i */
    OK(xdev_memcpy(a, ah, sizeof ah));
    OK(xdev_all_reduce(c, a, a, 64, XDEV_DTYPE_I32, XDEV_REDUCE_AVG, NULL));
    OK(xdev_memcpy(ah, a, sizeof ah));
    for (int i = 0; i < 64; i++)
        EXPECT(ah[i] == 3 + i, "avg element %d: %d", i, ah[i]);
    /* broadcast from rank 2 */
    for (int i = 0; i < BIG; i++)
        fh[i] = rank == 2 ? (float)i : -1.0f;
    OK(xdev_memcpy(f, fh, BIG * sizeof(float)));
    OK(xdev_broadcast(c, f, f, BIG, XDEV_DTYPE_F32, 2, NULL));
    OK(xdev_memcpy(fh, f, BIG * sizeof(float)));
    for (int i = 0; i < BIG; i += 997)
        EXPECT(fh[i] == (float)i, "broadcast element %d", i);
    /* reduce (min) to rank 1 */
    for (int i = 0; i < 64; i++)
        ah[i] = (rank + 5) * (i + 1);
    OK(xdev_memcpy(a, ah, sizeof ah));
    OK(xdev_reduce(c, a, a, 64, XDEV_DTYPE_I32, XDEV_REDUCE_MIN, 1, NULL));
    OK(xdev_memcpy(ah, a, sizeof ah));
    for (int i = 0; i < 64; i++)
        EXPECT(ah[i] == (rank == 1 ? 5 * (i + 1) : (rank + 5) * (i + 1)), "reduce element %d", i);
    /* all_gather: rank k's part is k + i / 1e3 */
    float *g = NULL;
    OK(xdev_malloc((void **)&g, 1000 * NPROC * sizeof(float)));
    for (int i = 0; i < 1000; i++)
        fh[i] = (float)rank + (float)i / 1000.0f;
    OK(xdev_memcpy(f, fh, 1000 * sizeof(float)));
    OK(xdev_all_gather(c, f, g, 1000, XDEV_DTYPE_F32, NULL));
    OK(xdev_memcpy(fh, g, 1000 * NPROC * sizeof(float)));
    for (int k = 0; k < NPROC; k++)
        for (int i = 0; i < 1000; i++)
            EXPECT(fh[k * 1000 + i] == (float)k + (float)i / 1000.0f, "gather %d %d", k, i);
    /* reduce_scatter: part k of every rank is k + 1, summed: 3 (k + 1) */
    for (int k = 0; k < NPROC; k++)
        for (int i = 0; i < 1000; i++)
            fh[k * 1000 + i] = (float)(k + 1);
    OK(xdev_memcpy(g, fh, 1000 * NPROC * sizeof(float)));
    OK(xdev_reduce_scatter(c, g, f, 1000, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL));
    OK(xdev_memcpy(fh, f, 1000 * sizeof(float)));
    for (int i = 0; i < 1000; i++)
        EXPECT(fh[i] == 3.0f * (float)(rank + 1), "reduce_scatter element %d: %g", i, fh[i]);
    /* reduce_scatter in place (recvbuf = this rank's part of sendbuf) is
     * right; a recvbuf overlapping sendbuf elsewhere is refused on every
     * rank before anything runs (it was accepted and gave wrong data) */
    for (int k = 0; k < NPROC; k++)
        for (int i = 0; i < 1000; i++)
            fh[k * 1000 + i] = (float)(k + 1);
    OK(xdev_memcpy(g, fh, 1000 * NPROC * sizeof(float)));
    EXPECT(xdev_reduce_scatter(c, g, g + 500, 1000, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL) ==
                   XDEV_ERROR_INVALID_VALUE &&
               strstr(xdev_last_error(), "overlaps sendbuf") != NULL,
           "an overlapping reduce_scatter was not refused: %s", xdev_last_error());
    OK(xdev_reduce_scatter(c, g, g + 1000 * rank, 1000, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL));
    OK(xdev_memcpy(fh, g + 1000 * rank, 1000 * sizeof(float)));
    for (int i = 0; i < 1000; i++)
        EXPECT(fh[i] == 3.0f * (float)(rank + 1), "in-place reduce_scatter element %d: %g", i,
               fh[i]);
    OK(xdev_communicator_check(c));
    /* send/recv: a ring, every rank sending before it receives (no group):
     * sends do not wait for their receiver; more than a staging chunk. */
    float *r = NULL;
    OK(xdev_malloc((void **)&r, BIG * sizeof(float)));
    for (int i = 0; i < BIG; i++)
        fh[i] = (float)(rank * 1000 + i % 97);
    OK(xdev_memcpy(f, fh, BIG * sizeof(float)));
    int next = (rank + 1) % NPROC, prev = (rank + NPROC - 1) % NPROC;
    OK(xdev_send(c, f, BIG, XDEV_DTYPE_F32, next, NULL));
    OK(xdev_recv(c, r, BIG, XDEV_DTYPE_F32, prev, NULL));
    OK(xdev_memcpy(fh, r, BIG * sizeof(float)));
    for (int i = 0; i < BIG; i++)
        EXPECT(fh[i] == (float)(prev * 1000 + i % 97), "ring recv element %d: %g", i, fh[i]);
    /* the n-th send from 0 to 1 meets the n-th recv on 1 from 0 */
    if (rank == 0) {
        for (int k = 1; k <= 3; k++) {
            for (int i = 0; i < 64; i++)
                ah[i] = k * 100 + i;
            OK(xdev_memcpy(a, ah, sizeof ah));
            OK(xdev_send(c, a, 64, XDEV_DTYPE_I32, 1, NULL));
            OK(xdev_synchronize()); /* a is rewritten next round */
        }
    } else if (rank == 1) {
        for (int k = 1; k <= 3; k++) {
            OK(xdev_recv(c, a, 64, XDEV_DTYPE_I32, 0, NULL));
            OK(xdev_memcpy(ah, a, sizeof ah));
            for (int i = 0; i < 64; i++)
                EXPECT(ah[i] == k * 100 + i, "message %d element %d: %d", k, i, ah[i]);
        }
    }
    OK(xdev_communicator_check(c));
    /* a recv that asks for another count than its send: nothing written, the
     * receiver told */
    for (int i = 0; i < 64; i++)
        ah[i] = 7;
    OK(xdev_memcpy(a, ah, sizeof ah));
    if (rank == 2) OK(xdev_send(c, a, 8, XDEV_DTYPE_I32, 0, NULL));
    if (rank == 0) {
        for (int i = 0; i < 64; i++)
            ah[i] = -1;
        OK(xdev_memcpy(a, ah, sizeof ah));
        OK(xdev_recv(c, a, 16, XDEV_DTYPE_I32, 2, NULL));
        OK(xdev_synchronize());
        OK(xdev_memcpy(ah, a, sizeof ah));
        EXPECT(ah[0] == -1 && ah[15] == -1, "a mismatched recv wrote");
        EXPECT(xdev_communicator_check(c) == XDEV_ERROR_INVALID_VALUE,
               "mismatched recv not reported");
        EXPECT(strstr(xdev_last_error(), "rank 2 sent 8 elements") != NULL, "message: %s",
               xdev_last_error());
    }
    OK(xdev_synchronize());
    OK(xdev_free(r));
    /* the ranks disagree on the count: nothing written, everyone told */
    for (int i = 0; i < 64; i++)
        ah[i] = 42;
    OK(xdev_memcpy(a, ah, sizeof ah));
    OK(xdev_all_reduce(c, a, a, rank == 0 ? 32 : 64, XDEV_DTYPE_I32, XDEV_REDUCE_SUM, NULL));
    OK(xdev_memcpy(ah, a, sizeof ah));
    EXPECT(ah[0] == 42 && ah[63] == 42, "a collective the ranks disagreed on wrote");
    EXPECT(xdev_communicator_check(c) == XDEV_ERROR_INVALID_VALUE, "disagreement not reported");
    /* (rank 0's first error, the one kept, is the mismatched recv above) */
    if (rank != 0)
        EXPECT(strstr(xdev_last_error(), "asked for kind") != NULL &&
                   strstr(xdev_last_error(), "nothing was written") != NULL,
               "message: %s", xdev_last_error());
    OK(xdev_communicator_destroy(c));
    OK(xdev_free(f));
    OK(xdev_free(g));
    OK(xdev_free(q));
    free(fh);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "child") == 0) return child(atoi(argv[2]), argv[3]);
    xdev_communicator_id_t id;
    if (xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id) != XDEV_SUCCESS) return fail("unique_id");
    int bad = xt_spawn_ranks(argv[0], NPROC, &id, "test_comm_procs_cpu");
    if (!bad) printf("test_comm_procs_cpu: %d processes, one rank each: ok\n", NPROC);
    return bad;
}
