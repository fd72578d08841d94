/* SPDX-License-Identifier: Apache-2.0 */
/* test_comm_procs.c - communicator ranks in separate processes, on the
 * backend under test: every collective with every dtype it takes, and
 * send/recv, checked against the host in each rank.
 *
 * The test makes a group id (xdev_communicator_unique_id) and starts its ranks as a
 * launcher would: fork + exec of this program ("child <rank> <hex id>",
 * tests/common/xt_procs.h); each joins with xdev_communicator_init_rank. On the CPU
 * backend 3 processes share cpu:0's host memory through POSIX shared memory;
 * on a GPU backend one process per GPU (2 to 4; fewer than 2: skipped), over
 * NCCL on CUDA. Values are small integers, so every reduction is exact in
 * every dtype (f16 and bf16 included) except avg of floats, checked to a
 * rounding. Conformance entry comm_procs. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"
#include "xt_procs.h"

#define COUNT 1003
#define BIG 300000 /* f32 elements of one all_reduce: more than a 1 MiB staging slot */
#define MAX_NR 4

static int g_rank, g_n;

static const xdev_dtype_t k_reducible[] = {XDEV_DTYPE_F16, XDEV_DTYPE_BF16, XDEV_DTYPE_F32,
                                           XDEV_DTYPE_F64, XDEV_DTYPE_I32,  XDEV_DTYPE_I64};
#define NRED (sizeof k_reducible / sizeof k_reducible[0])

/* ------------------------------------------------------------------ child */

#define CFAIL(...)                                                                                 \
    do {                                                                                           \
        fprintf(stderr, "comm_procs rank %d: ", g_rank);                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, " [%s]\n", xdev_last_error());                                             \
        return 1;                                                                                  \
    } while (0)
#define COK(call)                                                                                  \
    do {                                                                                           \
        if ((call) != XDEV_SUCCESS) CFAIL("%s failed", #call);                                     \
    } while (0)

/* Rank r's element i: a small integer in -4..4. */
static int value(int r, size_t i) {
    return (int)((i * 7 + (size_t)r * 13) % 9) - 4;
}

/* op over every rank's value(r, i + shift) (sum, prod, min, max, avg). */
static double expected(xdev_reduce_op_t op, xdev_dtype_t t, size_t i) {
    double acc = value(0, i);
    for (int r = 1; r < g_n; r++) {
        double v = value(r, i);
        acc = op == XDEV_REDUCE_PROD  ? acc * v
              : op == XDEV_REDUCE_MIN ? fmin(acc, v)
              : op == XDEV_REDUCE_MAX ? fmax(acc, v)
                                      : acc + v;
    }
    if (op == XDEV_REDUCE_AVG)
        acc = t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64 ? trunc(acc / g_n) : acc / g_n;
    return acc;
}

/* Only avg of floats is inexact: one rounding of the dtype, or NCCL's
 * premultiplied sum (a few). */
static bool close_enough(double got, double want, xdev_reduce_op_t op, xdev_dtype_t t) {
    if (op != XDEV_REDUCE_AVG || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64) return got == want;
    double tol = t == XDEV_DTYPE_F16 ? 4e-3 : t == XDEV_DTYPE_BF16 ? 3e-2 : 1e-6;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* Every reduction op of dtype t through all_reduce, plus reduce (sum to
 * the last rank) and reduce_scatter (sum). */
static int reductions(xdev_communicator_t c, xdev_dtype_t t, void *d, void *d2, void *h) {
    size_t es = xdev_dtype_size(t), bytes = COUNT * es;
    const char *tn = xdev_dtype_name(t);
    for (int op = XDEV_REDUCE_SUM; op <= XDEV_REDUCE_AVG; op++) {
        for (size_t i = 0; i < COUNT; i++)
            xt_store(t, h, i, value(g_rank, i));
        COK(xdev_memcpy(d, h, bytes));
        COK(xdev_all_reduce(c, d, d2, COUNT, t, (xdev_reduce_op_t)op, NULL));
        COK(xdev_memcpy(h, d2, bytes));
        for (size_t i = 0; i < COUNT; i++)
            if (!close_enough(xt_load(t, h, i), expected((xdev_reduce_op_t)op, t, i),
                              (xdev_reduce_op_t)op, t))
                CFAIL("all_reduce %s op %d [%zu]: %g, want %g", tn, op, i, xt_load(t, h, i),
                      expected((xdev_reduce_op_t)op, t, i));
    }
    /* reduce: sum onto the last rank, others' recvbuf untouched */
    int root = g_n - 1;
    for (size_t i = 0; i < COUNT; i++)
        xt_store(t, h, i, value(g_rank, i));
    COK(xdev_memcpy(d, h, bytes));
    COK(xdev_memset_async(d2, 0, bytes, NULL));
    COK(xdev_reduce(c, d, d2, COUNT, t, XDEV_REDUCE_SUM, root, NULL));
    COK(xdev_memcpy(h, d2, bytes));
    for (size_t i = 0; i < COUNT; i++) {
        double want = g_rank == root ? expected(XDEV_REDUCE_SUM, t, i) : 0.0;
        if (xt_load(t, h, i) != want)
            CFAIL("reduce %s [%zu]: %g, want %g", tn, i, xt_load(t, h, i), want);
    }
    /* reduce_scatter: part k of rank r is value(r, k * COUNT + i); rank k
     * gets the sum of its part */
    for (int k = 0; k < g_n; k++)
        for (size_t i = 0; i < COUNT; i++)
            xt_store(t, h, (size_t)k * COUNT + i, value(g_rank, (size_t)k * COUNT + i));
    COK(xdev_memcpy(d, h, bytes * (size_t)g_n));
    COK(xdev_reduce_scatter(c, d, d2, COUNT, t, XDEV_REDUCE_SUM, NULL));
    COK(xdev_memcpy(h, d2, bytes));
    for (size_t i = 0; i < COUNT; i++) {
        double want = expected(XDEV_REDUCE_SUM, t, (size_t)g_rank * COUNT + i);
        if (xt_load(t, h, i) != want)
            CFAIL("reduce_scatter %s [%zu]: %g, want %g", tn, i, xt_load(t, h, i), want);
    }
    return 0;
}

/* Data movement with dtype t: broadcast from rank 0, all_gather, and a
 * send/recv ring (every rank sends before it receives). Checked bytewise. */
static int movement(xdev_communicator_t c, xdev_dtype_t t, void *d, void *d2, unsigned char *h) {
    size_t es = xdev_dtype_size(t), bytes = COUNT * es;
    const char *tn = xdev_dtype_name(t);
    for (size_t b = 0; b < bytes; b++)
        h[b] = (unsigned char)(g_rank * 31 + b * 7);
    COK(xdev_memcpy(d, h, bytes));
    COK(xdev_broadcast(c, d, d2, COUNT, t, 0, NULL));
    COK(xdev_memcpy(h, d2, bytes));
    for (size_t b = 0; b < bytes; b++)
        if (h[b] != (unsigned char)(b * 7)) CFAIL("broadcast %s byte %zu: %u", tn, b, h[b]);
    for (size_t b = 0; b < bytes; b++)
        h[b] = (unsigned char)(g_rank * 31 + b * 7);
    COK(xdev_memcpy(d, h, bytes));
    COK(xdev_all_gather(c, d, d2, COUNT, t, NULL));
    COK(xdev_memcpy(h, d2, bytes * (size_t)g_n));
    for (int k = 0; k < g_n; k++)
        for (size_t b = 0; b < bytes; b++)
            if (h[(size_t)k * bytes + b] != (unsigned char)(k * 31 + b * 7))
                CFAIL("all_gather %s part %d byte %zu", tn, k, b);
    int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
    for (size_t b = 0; b < bytes; b++)
        h[b] = (unsigned char)(g_rank * 31 + b * 7);
    COK(xdev_memcpy(d, h, bytes));
    COK(xdev_memset_async(d2, 0xee, bytes, NULL)); /* not the all_gather's bytes: a recv
                                                      that writes nothing fails */
    /* A group: NCCL needs the pair of one rank in one (a send alone could
     * wait for its receiver); the CPU backend takes it as brackets. */
    COK(xdev_group_start());
    COK(xdev_send(c, d, COUNT, t, next, NULL));
    COK(xdev_recv(c, d2, COUNT, t, prev, NULL));
    COK(xdev_group_end());
    COK(xdev_memcpy(h, d2, bytes));
    for (size_t b = 0; b < bytes; b++)
        if (h[b] != (unsigned char)(prev * 31 + b * 7)) CFAIL("recv %s byte %zu", tn, b);
    return 0;
}

static int child(int rank, int n, const char *hex) {
    g_rank = rank;
    g_n = n;
    xdev_communicator_id_t id;
    if (!xt_id_from_hex(hex, &id)) CFAIL("bad id argument");
    xdev_device_type_t type;
    COK(xdev_default_device_type(&type));
    int count = 0;
    COK(xdev_device_count(type, &count));
    xdev_device_t dev = {type, rank % count};
    COK(xdev_set_device(dev));
    xdev_communicator_t c;
    COK(xdev_communicator_init_rank(&c, n, &id, rank, dev));
    int r = -1, size = 0;
    COK(xdev_communicator_rank(c, &r));
    COK(xdev_communicator_size(c, &size));
    if (r != rank || size != n) CFAIL("rank %d size %d", r, size);
    size_t most = (size_t)BIG * sizeof(float);
    if (most < (size_t)MAX_NR * COUNT * 16) most = (size_t)MAX_NR * COUNT * 16;
    void *d = NULL, *d2 = NULL;
    unsigned char *h = malloc(most);
    if (h == NULL) CFAIL("no host memory");
    COK(xdev_malloc(&d, most));
    COK(xdev_malloc(&d2, most));
    for (size_t k = 0; k < NRED; k++)
        if (reductions(c, k_reducible[k], d, d2, h) != 0) return 1;
    for (int t = 0; t < XDEV_DTYPE_COUNT; t++) /* data movement takes every dtype */
        if (movement(c, (xdev_dtype_t)t, d, d2, h) != 0) return 1;
    /* one large all_reduce, in place: f32 sum over more than a staging slot */
    float *f = (float *)h;
    for (int i = 0; i < BIG; i++)
        f[i] = (float)value(g_rank, (size_t)i);
    COK(xdev_memcpy(d, f, BIG * sizeof(float)));
    COK(xdev_all_reduce(c, d, d, BIG, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL));
    COK(xdev_memcpy(f, d, BIG * sizeof(float)));
    for (int i = 0; i < BIG; i++)
        if (f[i] != (float)expected(XDEV_REDUCE_SUM, XDEV_DTYPE_F32, (size_t)i))
            CFAIL("large all_reduce [%d]: %g", i, f[i]);
    COK(xdev_communicator_check(c));
    COK(xdev_communicator_destroy(c));
    COK(xdev_free(d));
    COK(xdev_free(d2));
    free(h);
    printf("comm_procs rank %d of %d on %s:%d: every collective and dtype ok\n", rank, n,
           xdev_device_type_name(type), dev.index);
    return 0;
}

/* ------------------------------------------------------------------ parent */

static char g_argv0[4096];

START_TEST(every_collective_in_processes) {
    int n;
    if (xt_type() == XDEV_DEVICE_CPU) {
        n = 3; /* processes sharing cpu:0's host memory through shared memory */
    } else {
        XT_REQUIRE_DEVICES(2);
        n = xt_device_count() < MAX_NR ? xt_device_count() : MAX_NR;
    }
    xdev_communicator_id_t id;
    xdev_status_t st = xdev_communicator_unique_id(xt_type(), &id);
    if (st == XDEV_ERROR_NOT_SUPPORTED) XT_SKIP("no communicators here: %s", xdev_last_error());
    XT_OK(st);
    char tag[32];
    snprintf(tag, sizeof tag, "%d", n);
    setenv("XT_COMM_PROCS_N", tag, 1);
    int bad = xt_spawn_ranks(g_argv0, n, &id, "comm_procs");
    ck_assert_msg(bad == 0, "a rank of %d failed (its reason is on stderr)", n);
    if (xt_type() == XDEV_DEVICE_CPU) { /* the group and its messages leave nothing behind */
        char left[300] = "";
        ck_assert_msg(!xt_shm_left(left, sizeof left), "/dev/shm still holds %s", left);
    }
}
END_TEST

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "child") == 0) {
        const char *n = getenv("XT_COMM_PROCS_N");
        return child(atoi(argv[2]), n ? atoi(n) : 2, argv[3]);
    }
    snprintf(g_argv0, sizeof g_argv0, "%s", argv[0]);
    Suite *s = suite_create("comm_procs");
    TCase *tc = tcase_create("comm_procs");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, every_collective_in_processes);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "comm_procs", argc, argv);
}
