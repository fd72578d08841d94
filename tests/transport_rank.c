/* SPDX-License-Identifier: Apache-2.0 */
/* transport_rank.c - one CPU rank as a launcher starts it, checking every
 * collective of a communicator across processes against values computed
 * here: all_reduce, reduce and reduce_scatter for each reducible dtype
 * (f32, f64, f16, bf16, i32, i64) and op (sum, prod, min, max, avg), in
 * place and not; broadcast and all_gather for all eleven dtypes; a NaN
 * losing to a number in min and max; collectives on two streams at once;
 * a ring of sends that each rank makes before it receives (a send never
 * waits for its recv); a recv whose count differs from its send failing.
 * Run by tests/rendezvous_launchers.sh under mpirun once per transport
 * (XDEV_HOST_COMM=shm, =mpi): both passing the same checks is the two
 * giving the same results. Prints one line per rank ending in "ok" and
 * naming the engine (xdev_communicator_engine). With "abort" as an
 * argument it checks xdev_communicator_abort instead (abort_mode). */
#define _DEFAULT_SOURCE /* usleep */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xdev/xdev.h"
#include "xt.h"

#define N 1000 /* elements per rank */

static int g_rank, g_n, g_bad;
static xdev_device_t g_dev;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != XDEV_SUCCESS) {                                                              \
            fprintf(stderr, "transport_rank %d: %s: %s\n", g_rank, #call, xdev_last_error());      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void wrong(const char *what, size_t i, double got, double want) {
    if (g_bad++ < 10)
        fprintf(stderr, "transport_rank %d: %s: element %zu is %g, expected %g\n", g_rank, what, i,
                got, want);
}

/* Rank r's element i: a small integer, exact in every dtype. */
static double val(int r, size_t i) {
    return (double)((int)(((size_t)(r + 1) * (i % 7 + 1) + i / 7) % 11) - 3);
}

static const xdev_dtype_t k_reducible[] = {XDEV_DTYPE_F32,  XDEV_DTYPE_F64, XDEV_DTYPE_F16,
                                           XDEV_DTYPE_BF16, XDEV_DTYPE_I32, XDEV_DTYPE_I64};
static const char *const k_op_name[] = {"sum", "prod", "min", "max", "avg"};

/* op over every rank's element i, as xdev's engines compute it: the
 * average divides in the accumulator (float for f32, f16, bf16) and
 * truncates for integers. */
static double expect(xdev_reduce_op_t op, xdev_dtype_t dt, size_t i) {
    double acc = val(0, i);
    for (int r = 1; r < g_n; r++) {
        double v = val(r, i);
        acc = op == XDEV_REDUCE_PROD  ? acc * v
              : op == XDEV_REDUCE_MIN ? fmin(acc, v)
              : op == XDEV_REDUCE_MAX ? fmax(acc, v)
                                      : acc + v;
    }
    if (op != XDEV_REDUCE_AVG) return acc;
    if (dt == XDEV_DTYPE_I32 || dt == XDEV_DTYPE_I64) return (double)((long long)acc / g_n);
    if (dt == XDEV_DTYPE_F64) return acc / g_n;
    return (double)((float)acc / (float)g_n);
}

/* A device buffer holding host[0..bytes). */
static void *upload(const void *host, size_t bytes) {
    void *d;
    CHECK(xdev_malloc_device(g_dev, &d, bytes ? bytes : 1));
    if (bytes && host != NULL) CHECK(xdev_memcpy(d, host, bytes));
    return d;
}

/* all_reduce, reduce (root 1 % n) and reduce_scatter of dt with op, in
 * place (ip) or not. */
static void reductions(xdev_communicator_t c, xdev_dtype_t dt, xdev_reduce_op_t op, bool ip) {
    size_t es = xdev_dtype_size(dt), total = (size_t)g_n * N;
    char *in = malloc(total * es), *out = malloc(total * es), what[96];
    for (size_t i = 0; i < total; i++)
        xt_store(dt, in, i, val(g_rank, i));
    /* all_reduce over N, reduce over N, reduce_scatter over n * N */
    for (int kind = 0; kind < 3; kind++) {
        size_t n_in = kind == 2 ? total : N, n_out = N;
        char *s = upload(in, n_in * es);
        char *r = ip ? (kind == 2 ? s + (size_t)g_rank * N * es : s) : upload(NULL, n_out * es);
        int root = 1 % g_n;
        if (kind == 0) CHECK(xdev_all_reduce(c, s, r, N, dt, op, NULL));
        if (kind == 1) CHECK(xdev_reduce(c, s, r, N, dt, op, root, NULL));
        if (kind == 2) CHECK(xdev_reduce_scatter(c, s, r, N, dt, op, NULL));
        CHECK(xdev_device_synchronize(g_dev));
        CHECK(xdev_memcpy(out, r, n_out * es));
        snprintf(what, sizeof what, "%s %s %s%s",
                 kind == 0   ? "all_reduce"
                 : kind == 1 ? "reduce"
                             : "reduce_scatter",
                 xdev_dtype_name(dt), k_op_name[op], ip ? " in place" : "");
        if (kind != 1 || g_rank == root)
            for (size_t i = 0; i < N; i++) {
                size_t at = kind == 2 ? (size_t)g_rank * N + i : i;
                char want_bits[16];
                xt_store(dt, want_bits, 0, expect(op, dt, at));
                double want = xt_load(dt, want_bits, 0), got = xt_load(dt, out, i);
                if (got != want) wrong(what, i, got, want);
            }
        CHECK(xdev_free(s));
        if (!ip) CHECK(xdev_free(r));
    }
    free(in);
    free(out);
}

/* broadcast (root n - 1) and all_gather of dt's bytes, in place or not. */
static void movements(xdev_communicator_t c, xdev_dtype_t dt, bool ip) {
    size_t es = xdev_dtype_size(dt), total = (size_t)g_n * N * es;
    unsigned char *mine = malloc(N * es), *out = malloc(total);
    for (size_t b = 0; b < N * es; b++)
        mine[b] = (unsigned char)(b * 31 + (size_t)g_rank * 7 + 1);
    int root = g_n - 1;
    char what[64];
    /* broadcast */
    unsigned char *s = upload(mine, N * es), *r = ip ? s : upload(NULL, N * es);
    CHECK(xdev_broadcast(c, s, r, N, dt, root, NULL));
    CHECK(xdev_device_synchronize(g_dev));
    CHECK(xdev_memcpy(out, r, N * es));
    snprintf(what, sizeof what, "broadcast %s%s", xdev_dtype_name(dt), ip ? " in place" : "");
    for (size_t b = 0; b < N * es; b++)
        if (out[b] != (unsigned char)(b * 31 + (size_t)root * 7 + 1)) wrong(what, b, out[b], -1);
    CHECK(xdev_free(s));
    if (!ip) CHECK(xdev_free(r));
    /* all_gather: in place, this rank's part already sits in recvbuf */
    r = upload(NULL, total);
    if (ip) {
        CHECK(xdev_memcpy(r + (size_t)g_rank * N * es, mine, N * es));
        s = r + (size_t)g_rank * N * es;
    } else {
        s = upload(mine, N * es);
    }
    CHECK(xdev_all_gather(c, s, r, N, dt, NULL));
    CHECK(xdev_device_synchronize(g_dev));
    CHECK(xdev_memcpy(out, r, total));
    snprintf(what, sizeof what, "all_gather %s%s", xdev_dtype_name(dt), ip ? " in place" : "");
    for (int q = 0; q < g_n; q++)
        for (size_t b = 0; b < N * es; b++)
            if (out[(size_t)q * N * es + b] != (unsigned char)(b * 31 + (size_t)q * 7 + 1))
                wrong(what, (size_t)q * N * es + b, out[(size_t)q * N * es + b], -1);
    if (!ip) CHECK(xdev_free(s));
    CHECK(xdev_free(r));
    free(mine);
    free(out);
}

/* min and max of f32 and f64 where rank 0 holds a NaN: the number wins. */
static void nan_loses(xdev_communicator_t c) {
    for (int t = 0; t < 2; t++) {
        xdev_dtype_t dt = t ? XDEV_DTYPE_F64 : XDEV_DTYPE_F32;
        for (int op = XDEV_REDUCE_MIN; op <= XDEV_REDUCE_MAX; op++) {
            char in[16], out[16];
            xt_store(dt, in, 0, g_rank == 0 ? NAN : (double)g_rank);
            void *d = upload(in, xdev_dtype_size(dt));
            CHECK(xdev_all_reduce(c, d, d, 1, dt, (xdev_reduce_op_t)op, NULL));
            CHECK(xdev_memcpy(out, d, xdev_dtype_size(dt)));
            double want = g_n == 1                ? NAN
                          : op == XDEV_REDUCE_MIN ? 1
                                                  : g_n - 1,
                   got = xt_load(dt, out, 0);
            if (!(got == want || (isnan(got) && isnan(want))))
                wrong("NaN in min/max", 0, got, want);
            CHECK(xdev_free(d));
        }
    }
}

/* 20 all_reduces on each of two streams, interleaved: every rank's
 * stream threads run them at once, in whatever order. */
static void two_streams(xdev_communicator_t c) {
    xdev_stream_t st[2];
    int64_t *d[2], h[2];
    for (int k = 0; k < 2; k++) {
        CHECK(xdev_stream_create(g_dev, XDEV_STREAM_PRIORITY_NORMAL, &st[k]));
        h[k] = (int64_t)(g_rank + 1) * (k + 1);
        d[k] = upload(&h[k], sizeof h[k]);
    }
    for (int i = 0; i < 20; i++)
        for (int k = 0; k < 2; k++)
            CHECK(xdev_all_reduce(c, d[k], d[k], 1, XDEV_DTYPE_I64, XDEV_REDUCE_MAX, st[k]));
    for (int k = 0; k < 2; k++) {
        CHECK(xdev_stream_synchronize(st[k]));
        CHECK(xdev_memcpy(&h[k], d[k], sizeof h[k]));
        if (h[k] != (int64_t)g_n * (k + 1))
            wrong("two streams", (size_t)k, (double)h[k], g_n * (k + 1));
        CHECK(xdev_free(d[k]));
        CHECK(xdev_stream_destroy(st[k]));
    }
}

/* Each rank sends 4 MiB to the next, then receives from the previous. */
static void ring(xdev_communicator_t c) {
    size_t count = (size_t)1 << 20;
    int32_t *h = malloc(count * sizeof *h), *s, *r;
    for (size_t i = 0; i < count; i++)
        h[i] = (int32_t)(i ^ (size_t)g_rank);
    s = upload(h, count * sizeof *h);
    r = upload(NULL, count * sizeof *h);
    int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
    CHECK(xdev_send(c, s, count, XDEV_DTYPE_I32, next, NULL));
    CHECK(xdev_recv(c, r, count, XDEV_DTYPE_I32, prev, NULL));
    CHECK(xdev_device_synchronize(g_dev));
    CHECK(xdev_memcpy(h, r, count * sizeof *h));
    for (size_t i = 0; i < count; i++)
        if (h[i] != (int32_t)(i ^ (size_t)prev)) {
            wrong("ring of sends", i, h[i], (double)(i ^ (size_t)prev));
            break;
        }
    CHECK(xdev_free(s));
    CHECK(xdev_free(r));
    free(h);
}

/* On a group of its own: rank 0 sends 10 i32 to rank 1, which asks for
 * 12; rank 1's recv fails and writes nothing. */
static void mismatch(void) {
    xdev_communicator_t c;
    CHECK(xdev_communicator_init_env(&c, XDEV_DEVICE_CPU));
    int32_t h[12];
    for (int i = 0; i < 12; i++)
        h[i] = -1;
    int32_t *d = upload(h, sizeof h);
    if (g_rank == 0) CHECK(xdev_send(c, d, 10, XDEV_DTYPE_I32, 1, NULL));
    if (g_rank == 1) {
        CHECK(xdev_recv(c, d, 12, XDEV_DTYPE_I32, 0, NULL));
        xdev_status_t st = xdev_device_synchronize(g_dev);
        if (st == XDEV_SUCCESS) st = xdev_communicator_check(c);
        CHECK(xdev_memcpy(h, d, sizeof h));
        if (st == XDEV_SUCCESS)
            wrong("recv of 12 from a send of 10 did not fail", 0, 0, 1);
        else if (strstr(xdev_last_error(), "10") == NULL)
            fprintf(stderr, "transport_rank 1: the mismatch's message names no count: %s\n",
                    xdev_last_error()),
                g_bad++;
        if (h[0] != -1) wrong("a failed recv wrote", 0, h[0], -1);
    }
    CHECK(xdev_device_synchronize(g_dev));
    CHECK(xdev_free(d));
    CHECK(xdev_communicator_destroy(c));
}

/* The "abort" mode: every rank but the last queues two all_reduces on two
 * streams (the second waits behind the first, which waits for the last
 * rank, which never joins), then calls xdev_communicator_abort: both must
 * fail within a second, saying the group was aborted. The last rank stays
 * alive meanwhile, then leaves as a crashed rank would. */
static int abort_mode(xdev_communicator_t c) {
    if (g_rank == g_n - 1) {
        usleep(3000000);
        printf("transport_rank: rank %d of %d stayed out of the collectives, ok\n", g_rank, g_n);
        fflush(stdout);
        _exit(0);
    }
    xdev_stream_t st[2];
    int64_t *d[2];
    for (int k = 0; k < 2; k++) {
        CHECK(xdev_stream_create(g_dev, XDEV_STREAM_PRIORITY_NORMAL, &st[k]));
        d[k] = upload(NULL, sizeof(int64_t));
        CHECK(xdev_all_reduce(c, d[k], d[k], 1, XDEV_DTYPE_I64, XDEV_REDUCE_SUM, st[k]));
    }
    usleep(300000);
    double t0 = xt_now_ms();
    CHECK(xdev_communicator_abort(c));
    for (int k = 0; k < 2; k++) {
        xdev_status_t s = xdev_stream_synchronize(st[k]);
        if (s == XDEV_SUCCESS) s = xdev_communicator_check(c);
        if (s == XDEV_SUCCESS || strstr(xdev_last_error(), "aborted") == NULL) {
            fprintf(stderr, "transport_rank %d: stream %d after the abort: %s: %s\n", g_rank, k,
                    xdev_status_string(s), xdev_last_error());
            g_bad++;
        }
    }
    double ms = xt_now_ms() - t0;
    if (ms > 1000) wrong("the abort took", 0, ms, 1000);
    for (int k = 0; k < 2; k++)
        CHECK(xdev_stream_destroy(st[k]));
    CHECK(xdev_communicator_destroy(c));
    printf("transport_rank: rank %d of %d: both queued all_reduces failed %.0f ms after the "
           "abort, %s\n",
           g_rank, g_n, ms, g_bad ? "WRONG" : "ok");
    return g_bad ? 1 : 0;
}

int main(int argc, char **argv) {
    xdev_communicator_t c;
    CHECK(xdev_communicator_init_env(&c, XDEV_DEVICE_CPU));
    CHECK(xdev_communicator_rank(c, &g_rank));
    CHECK(xdev_communicator_size(c, &g_n));
    CHECK(xdev_communicator_device(c, &g_dev));
    const char *engine;
    CHECK(xdev_communicator_engine(c, &engine));
    for (int i = 1; i < argc; i++) /* tests/rendezvous_launchers.sh passes "cpu" first */
        if (strcmp(argv[i], "abort") == 0) return abort_mode(c);
    int checks = 0;
    for (size_t t = 0; t < sizeof k_reducible / sizeof k_reducible[0]; t++)
        for (int op = XDEV_REDUCE_SUM; op <= XDEV_REDUCE_AVG; op++)
            for (int ip = 0; ip < 2; ip++, checks += 3)
                reductions(c, k_reducible[t], (xdev_reduce_op_t)op, ip);
    for (int dt = 0; dt < XDEV_DTYPE_COUNT; dt++)
        for (int ip = 0; ip < 2; ip++, checks += 2)
            movements(c, (xdev_dtype_t)dt, ip);
    nan_loses(c);
    two_streams(c);
    ring(c);
    checks += 7;
    CHECK(xdev_communicator_check(c));
    CHECK(xdev_communicator_destroy(c));
    if (g_n > 1) {
        mismatch();
        checks++;
    }
    printf("transport_rank: rank %d of %d over %s: %d checks, %d wrong, %s\n", g_rank, g_n, engine,
           checks, g_bad, g_bad ? "WRONG" : "ok");
    return g_bad ? 1 : 0;
}
