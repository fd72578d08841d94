/* SPDX-License-Identifier: Apache-2.0 */
/* test_communicator.c - communicators and collectives (xdev/communicator.h)
 * on the backend under test: all_reduce of every reducible dtype and op
 * against the host (in place too), broadcast, reduce, all_gather (in place
 * too), reduce_scatter, send/recv in a ring and in order, stream order (an
 * input written on the rank's stream just before), ranks driven from their
 * own threads, ranks that disagree (nothing written, every rank told),
 * abort, destroy after queued work, groups, bad input. Backends without
 * communicators skip with their reason. Conformance: XDEV_BACKEND=<backend>,
 * XDEV_CPU_DEVICES=4. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/support/half.h"
#include "xt.h"

#define NR 4
#define COUNT 1000

static xdev_communicator_t comms[NR];
static int nr;

static void setup(void) {
    xt_reset_state();
    nr = 0;
}

static void teardown(void) {
    for (int r = 0; r < nr; r++)
        if (comms[r] != NULL) (void)xdev_communicator_destroy(comms[r]);
    memset(comms, 0, sizeof comms);
    nr = 0;
}

/* Ranks on devices 0.. (as many as there are, up to NR; at least
 * `need`), or skip with the reason. */
static bool make_n(const char *test, int need) {
    if (!xt_has_devices(test, need, NULL)) return false;
    int n = xt_device_count() < NR ? xt_device_count() : NR;
    xdev_device_t devs[NR];
    for (int r = 0; r < n; r++)
        devs[r] = xt_dev(r);
    xdev_status_t st = xdev_communicator_init_all(comms, n, devs);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        xt_skip(test, "%s", xdev_last_error());
        return false;
    }
    XT_OK(st);
    nr = n;
    return true;
}

static bool make(const char *test) {
    return make_n(test, 1);
}

/* The checks only the host-memory communicator makes (NCCL's behaviour for
 * ranks that disagree, or for a collective a rank never joins, is its own). */
static bool host_memory(const char *test) {
    if (xt_type() == XDEV_DEVICE_CPU) return true;
    xt_skip(test,
            "the %s backend's communicators are NCCL's: ranks that disagree or never "
            "join are NCCL's undefined behaviour, not checked by xdev",
            xt_type_name());
    return false;
}

static void *dalloc(int dev, size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(dev), &p, bytes));
    return p;
}

/* Keep a stream busy for ms milliseconds (a host function that sleeps). */
static void busy(xdev_stream_t s, int ms) {
    static xt_sleep_task_t task[NR * 2];
    static int next;
    xt_sleep_task_t *t = &task[next++ % (NR * 2)];
    t->ms = ms;
    t->flag = NULL;
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, t));
}

static void sync_all(void) {
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_device_synchronize(xt_dev(r)));
}

/* Element i of rank r, small enough that every op is exact in every dtype
 * (products of 4 values in 1..3, sums of 4 values under 64). */
static double value(int r, size_t i) {
    return (double)(1 + (int)((i * 7 + (size_t)r * 3) % 3)) * (i % 5 == 4 ? -1.0 : 1.0);
}

static double expected(xdev_reduce_op_t op, xdev_dtype_t dt, size_t i) {
    double acc = value(0, i);
    for (int r = 1; r < nr; r++) {
        double v = value(r, i);
        acc = op == XDEV_REDUCE_PROD  ? acc * v
              : op == XDEV_REDUCE_MIN ? (v < acc ? v : acc)
              : op == XDEV_REDUCE_MAX ? (v > acc ? v : acc)
                                      : acc + v;
    }
    if (op == XDEV_REDUCE_AVG) {
        bool integer = dt == XDEV_DTYPE_I32 || dt == XDEV_DTYPE_I64;
        acc = integer ? (double)((long long)acc / nr) : acc / nr;
        if (dt == XDEV_DTYPE_F16) acc = xdev_f16_to_f32(xdev_f32_to_f16((float)acc));
        if (dt == XDEV_DTYPE_BF16) acc = xdev_bf16_to_f32(xdev_f32_to_bf16((float)acc));
    }
    return acc;
}

/* Rank r's input of dtype dt at p (count elements, with `parts` copies of
 * the pattern shifted by part). */
static void fill(int r, void *p, xdev_dtype_t dt, size_t count) {
    size_t e = xdev_dtype_size(dt);
    void *h = malloc(count * e);
    for (size_t i = 0; i < count; i++)
        xt_store(dt, h, i, value(r, i));
    XT_OK(xdev_memcpy(p, h, count * e));
    free(h);
}

static const xdev_dtype_t reducible[] = {XDEV_DTYPE_F16, XDEV_DTYPE_BF16, XDEV_DTYPE_F32,
                                         XDEV_DTYPE_F64, XDEV_DTYPE_I32,  XDEV_DTYPE_I64};

START_TEST(all_reduce_every_dtype_and_op) {
    if (!make("all_reduce_every_dtype_and_op")) return;
    for (size_t d = 0; d < sizeof reducible / sizeof reducible[0]; d++) {
        xdev_dtype_t dt = reducible[d];
        size_t bytes = COUNT * xdev_dtype_size(dt);
        void *send[NR], *recv[NR];
        for (int r = 0; r < nr; r++) {
            send[r] = dalloc(r, bytes);
            recv[r] = dalloc(r, bytes);
        }
        for (int op = XDEV_REDUCE_SUM; op <= XDEV_REDUCE_AVG; op++) {
            for (int r = 0; r < nr; r++)
                fill(r, send[r], dt, COUNT);
            bool in_place = op == XDEV_REDUCE_MAX; /* recvbuf = sendbuf */
            XT_OK(xdev_group_start()); /* one thread drives every rank (NCCL needs a group) */
            for (int r = 0; r < nr; r++)
                XT_OK(xdev_all_reduce(comms[r], send[r], in_place ? send[r] : recv[r], COUNT, dt,
                                      (xdev_reduce_op_t)op, NULL));
            XT_OK(xdev_group_end());
            sync_all();
            void *h = malloc(bytes);
            for (int r = 0; r < nr; r++) {
                xt_peek(h, in_place ? send[r] : recv[r], bytes);
                for (size_t i = 0; i < COUNT; i++)
                    ck_assert_msg(xt_load(dt, h, i) == expected((xdev_reduce_op_t)op, dt, i),
                                  "%s op %d rank %d element %zu: %g, expected %g",
                                  xdev_dtype_name(dt), op, r, i, xt_load(dt, h, i),
                                  expected((xdev_reduce_op_t)op, dt, i));
            }
            free(h);
        }
        for (int r = 0; r < nr; r++) {
            XT_OK(xdev_free(send[r]));
            XT_OK(xdev_free(recv[r]));
        }
    }
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_communicator_check(comms[r]));
}
END_TEST

START_TEST(broadcast_reduce_gather_scatter) {
    if (!make("broadcast_reduce_gather_scatter")) return;
    /* roots and the in-place rank, whatever the number of ranks */
    const int top = nr > 2 ? 2 : nr - 1, low = nr > 1 ? 1 : 0, last = nr - 1;
    const xdev_dtype_t dt = XDEV_DTYPE_F32;
    size_t bytes = COUNT * sizeof(float);
    void *send[NR], *recv[NR], *big[NR];
    for (int r = 0; r < nr; r++) {
        send[r] = dalloc(r, bytes);
        recv[r] = dalloc(r, bytes);
        big[r] = dalloc(r, (size_t)nr * bytes);
        fill(r, send[r], dt, COUNT);
    }
    float *h = malloc(NR * bytes); /* room for NR parts */
    /* broadcast from rank `top` (sendbuf unused elsewhere: NULL) */
    XT_OK(xdev_group_start());
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_broadcast(comms[r], r == top ? send[r] : NULL, recv[r], COUNT, dt, top, NULL));
    XT_OK(xdev_group_end());
    sync_all();
    for (int r = 0; r < nr; r++) {
        xt_peek(h, recv[r], bytes);
        for (size_t i = 0; i < COUNT; i++)
            ck_assert_msg(h[i] == (float)value(top, i), "broadcast rank %d element %zu", r, i);
    }
    /* reduce (max) to rank `low` */
    XT_OK(xdev_memset_async(recv[0], 0, bytes, NULL));
    XT_OK(xdev_group_start());
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_reduce(comms[r], send[r], r == low ? recv[r] : NULL, COUNT, dt, XDEV_REDUCE_MAX,
                          low, NULL));
    XT_OK(xdev_group_end());
    sync_all();
    xt_peek(h, recv[low], bytes);
    for (size_t i = 0; i < COUNT; i++)
        ck_assert(h[i] == (float)expected(XDEV_REDUCE_MAX, dt, i));
    /* all_gather, the last rank in place (its sendbuf is its part of recvbuf) */
    XT_OK(xdev_memcpy((char *)big[last] + (size_t)last * bytes, send[last], bytes));
    XT_OK(xdev_group_start());
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_all_gather(comms[r], r == last ? (char *)big[r] + (size_t)last * bytes : send[r],
                              big[r], COUNT, dt, NULL));
    XT_OK(xdev_group_end());
    sync_all();
    for (int r = 0; r < nr; r++) {
        xt_peek(h, big[r], (size_t)nr * bytes);
        for (int k = 0; k < nr; k++)
            for (size_t i = 0; i < COUNT; i++)
                ck_assert_msg(h[(size_t)k * COUNT + i] == (float)value(k, i),
                              "all_gather rank %d part %d element %zu", r, k, i);
    }
    /* reduce_scatter (sum): big[r] holds NR parts, part k = value(r + k) */
    for (int r = 0; r < nr; r++) {
        for (int k = 0; k < nr; k++)
            for (size_t i = 0; i < COUNT; i++)
                h[(size_t)k * COUNT + i] = (float)value((r + k) % nr, i);
        XT_OK(xdev_memcpy(big[r], h, (size_t)nr * bytes));
    }
    /* the last rank in place: its recvbuf is its part of sendbuf */
    void *out[NR];
    for (int r = 0; r < nr; r++)
        out[r] = r == last ? (char *)big[r] + (size_t)last * bytes : recv[r];
    XT_OK(xdev_group_start());
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_reduce_scatter(comms[r], big[r], out[r], COUNT, dt, XDEV_REDUCE_SUM, NULL));
    XT_OK(xdev_group_end());
    sync_all();
    for (int r = 0; r < nr; r++) {
        xt_peek(h, out[r], bytes);
        for (size_t i = 0; i < COUNT; i++) /* part r of every rank j: value((j + r) % nr) */
            ck_assert(h[i] == (float)expected(XDEV_REDUCE_SUM, dt, i));
    }
    free(h);
    for (int r = 0; r < nr; r++) {
        XT_OK(xdev_free(send[r]));
        XT_OK(xdev_free(recv[r]));
        XT_OK(xdev_free(big[r]));
    }
}
END_TEST

/* A ring on one stream per rank, all sends issued before the recvs (a send
 * does not wait for its recv), twice: the n-th send meets the n-th recv. */
START_TEST(send_recv_ring_in_order) {
    if (!make_n("send_recv_ring_in_order", 2)) return;
    void *out[NR][2], *in[NR][2];
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < 2; k++) {
            out[r][k] = dalloc(r, 64 * sizeof(int32_t));
            in[r][k] = dalloc(r, 64 * sizeof(int32_t));
            int32_t h[64];
            for (int i = 0; i < 64; i++)
                h[i] = r * 1000 + k * 100 + i;
            XT_OK(xdev_memcpy(out[r][k], h, sizeof h));
        }
    XT_OK(xdev_group_start());
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < 2; k++)
            XT_OK(xdev_send(comms[r], out[r][k], 64, XDEV_DTYPE_I32, (r + 1) % nr, NULL));
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < 2; k++)
            XT_OK(xdev_recv(comms[r], in[r][k], 64, XDEV_DTYPE_I32, (r + nr - 1) % nr, NULL));
    XT_OK(xdev_group_end());
    sync_all();
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < 2; k++) {
            int32_t h[64];
            xt_peek(h, in[r][k], sizeof h);
            int from = (r + nr - 1) % nr;
            for (int i = 0; i < 64; i++)
                ck_assert_int_eq(h[i], from * 1000 + k * 100 + i);
            XT_OK(xdev_free(out[r][k]));
            XT_OK(xdev_free(in[r][k]));
        }
}
END_TEST

/* The input is written on each rank's own stream right before the
 * collective; the result is read on that stream right after: no host wait
 * in between. */
START_TEST(stream_ordered) {
    if (!make("stream_ordered")) return;
    xdev_stream_t s[NR];
    void *buf[NR];
    float *pinned[NR];
    for (int r = 0; r < nr; r++) {
        s[r] = xt_new_stream(r);
        buf[r] = dalloc(r, COUNT * sizeof(float));
        XT_OK(xdev_host_alloc((void **)&pinned[r], COUNT * sizeof(float)));
        for (size_t i = 0; i < COUNT; i++)
            pinned[r][i] = (float)(r + 1);
    }
    for (int r = 0; r < nr; r++) {
        busy(s[r], 20); /* the stream is busy first */
        XT_OK(xdev_memcpy_async(buf[r], pinned[r], COUNT * sizeof(float), s[r]));
    }
    /* a group's collectives are enqueued at its end (NCCL): only they go in */
    XT_OK(xdev_group_start());
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_all_reduce(comms[r], buf[r], buf[r], COUNT, XDEV_DTYPE_F32, XDEV_REDUCE_SUM,
                              s[r]));
    XT_OK(xdev_group_end());
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_memcpy_async(pinned[r], buf[r], COUNT * sizeof(float), s[r]));
    for (int r = 0; r < nr; r++) {
        XT_OK(xdev_stream_synchronize(s[r]));
        for (size_t i = 0; i < COUNT; i++)
            ck_assert(pinned[r][i] == (float)(nr * (nr + 1) / 2)); /* 1 + 2 + ... + nr */
        XT_OK(xdev_free(buf[r]));
        XT_OK(xdev_host_free(pinned[r]));
        XT_OK(xdev_stream_destroy(s[r]));
    }
}
END_TEST

typedef struct {
    int r;
    void *buf;
} rank_arg_t;

static void *rank_thread(void *p) {
    rank_arg_t *a = p;
    if (xdev_set_device(xt_dev(a->r)) != XDEV_SUCCESS) return p;
    for (int it = 0; it < 50; it++)
        if (xdev_all_reduce(comms[a->r], a->buf, a->buf, 16, XDEV_DTYPE_I64, XDEV_REDUCE_SUM,
                            NULL) != XDEV_SUCCESS)
            return p;
    (void)xdev_device_synchronize(xt_dev(a->r));
    return NULL;
}

/* Each rank from its own thread, 50 collectives each: 1 becomes nr^50 mod 2^64. */
START_TEST(ranks_on_their_own_threads) {
    if (!make("ranks_on_their_own_threads")) return;
    pthread_t th[NR];
    rank_arg_t args[NR];
    for (int r = 0; r < nr; r++) {
        args[r] = (rank_arg_t){r, dalloc(r, 16 * sizeof(int64_t))};
        int64_t one[16];
        for (int i = 0; i < 16; i++)
            one[i] = 1;
        XT_OK(xdev_memcpy(args[r].buf, one, sizeof one));
        ck_assert_int_eq(pthread_create(&th[r], NULL, rank_thread, &args[r]), 0);
    }
    for (int r = 0; r < nr; r++) {
        void *ret = (void *)1;
        pthread_join(th[r], &ret);
        ck_assert_msg(ret == NULL, "rank %d's thread failed: %s", r, xdev_last_error());
        int64_t h[16];
        xt_peek(h, args[r].buf, sizeof h);
        uint64_t want = 1;
        for (int it = 0; it < 50; it++)
            want *= (uint64_t)nr;
        for (int i = 0; i < 16; i++)
            ck_assert_uint_eq((uint64_t)h[i], want);
        XT_OK(xdev_free(args[r].buf));
    }
}
END_TEST

/* Rank 0 asks for fewer elements than the others: nothing is written, and
 * every rank reports it; the group goes on with the next collective. */
START_TEST(disagreement_is_reported) {
    if (!host_memory("disagreement_is_reported") || !make_n("disagreement_is_reported", 2)) return;
    void *buf[NR];
    for (int r = 0; r < nr; r++) {
        buf[r] = dalloc(r, 64 * sizeof(float));
        fill(r, buf[r], XDEV_DTYPE_F32, 64);
    }
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_all_reduce(comms[r], buf[r], buf[r], r == 0 ? 32 : 64, XDEV_DTYPE_F32,
                              XDEV_REDUCE_SUM, NULL));
    sync_all();
    for (int r = 0; r < nr; r++) {
        float h[64];
        xt_peek(h, buf[r], sizeof h);
        for (size_t i = 0; i < 64; i++)
            ck_assert(h[i] == (float)value(r, i)); /* untouched */
        ck_assert_int_eq(xdev_communicator_check(comms[r]), XDEV_ERROR_INVALID_VALUE);
        ck_assert_msg(strstr(xdev_last_error(), "rank 0 called all_reduce(count 32") != NULL, "%s",
                      xdev_last_error());
        XT_OK(xdev_free(buf[r]));
    }
}
END_TEST

/* A collective one rank never joins: abort wakes the others. */
START_TEST(abort_wakes_waiting_ranks) {
    if (!host_memory("abort_wakes_waiting_ranks") || !make_n("abort_wakes_waiting_ranks", 2))
        return;
    void *buf[NR];
    for (int r = 0; r < nr; r++) {
        buf[r] = dalloc(r, 64 * sizeof(float));
        fill(r, buf[r], XDEV_DTYPE_F32, 64);
    }
    for (int r = 0; r < nr - 1; r++) /* the last rank stays away */
        XT_OK(xdev_all_reduce(comms[r], buf[r], buf[r], 64, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL));
    XT_OK(xdev_communicator_abort(comms[nr - 1]));
    sync_all(); /* returns: the waiting host functions were woken */
    for (int r = 0; r < nr; r++) {
        float h[64];
        xt_peek(h, buf[r], sizeof h);
        ck_assert(h[5] == (float)value(r, 5));
        ck_assert_int_eq(xdev_communicator_check(comms[r]), XDEV_ERROR_INVALID_VALUE);
    }
    ck_assert_int_eq(
        xdev_all_reduce(comms[0], buf[0], buf[0], 64, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
        XDEV_ERROR_INVALID_VALUE);
    ck_assert(strstr(xdev_last_error(), "aborted") != NULL);
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_free(buf[r]));
}
END_TEST

/* Destroy right after queuing: it waits for the queued collective. */
START_TEST(destroy_waits_for_queued_work) {
    if (!make("destroy_waits_for_queued_work")) return;
    void *buf[NR];
    for (int r = 0; r < nr; r++) {
        buf[r] = dalloc(r, 64 * sizeof(int32_t));
        fill(r, buf[r], XDEV_DTYPE_I32, 64);
        XT_OK(xdev_set_device(xt_dev(r)));
        busy(NULL, 10);
    }
    XT_OK(xdev_group_start());
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_all_reduce(comms[r], buf[r], buf[r], 64, XDEV_DTYPE_I32, XDEV_REDUCE_SUM, NULL));
    XT_OK(xdev_group_end());
    xdev_communicator_t first = comms[0];
    for (int r = 0; r < nr; r++) {
        XT_OK(xdev_communicator_destroy(comms[r]));
        comms[r] = NULL;
    }
    int32_t h[64];
    xt_peek(h, buf[nr - 1], sizeof h);
    for (size_t i = 0; i < 64; i++)
        ck_assert_int_eq(h[i], (int32_t)expected(XDEV_REDUCE_SUM, XDEV_DTYPE_I32, i));
    int rank = -1;
    ck_assert_int_eq(xdev_communicator_rank(first, &rank), XDEV_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(xdev_communicator_destroy(first), XDEV_ERROR_INVALID_HANDLE);
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_free(buf[r]));
}
END_TEST

START_TEST(bad_input) {
    if (!make_n("bad_input", 2)) return;
    void *a = dalloc(0, 256), *b1 = dalloc(1, 256);
    int v = 0;
    XT_OK(xdev_communicator_rank(comms[nr - 1], &v));
    ck_assert_int_eq(v, nr - 1);
    XT_OK(xdev_communicator_size(comms[nr - 1], &v));
    ck_assert_int_eq(v, nr);
    xdev_device_t d;
    XT_OK(xdev_communicator_device(comms[1], &d));
    ck_assert_int_eq(d.index, xt_dev(1).index);
    const char *engine = NULL; /* ranks of one process: the backend's own, or the host engine */
    XT_OK(xdev_communicator_engine(comms[0], &engine));
    ck_assert_msg(strcmp(engine, "local") == 0 ||
                      strcmp(engine, xdev_device_type_name(xt_type())) == 0,
                  "engine %s", engine);
    ck_assert_int_eq(xdev_communicator_engine((xdev_communicator_t)&v, &engine),
                     XDEV_ERROR_INVALID_HANDLE);
    const float f = 0;
    struct {
        xdev_status_t got, want;
        const char *needle;
    } cases[] = {
        {xdev_all_reduce(NULL, a, a, 4, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_HANDLE, "comm"},
        {xdev_all_reduce((xdev_communicator_t)&v, a, a, 4, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_HANDLE, "not a live communicator"},
        {xdev_all_reduce(comms[0], b1, a, 4, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_CROSS_DEVICE, "sendbuf"},
        {xdev_all_reduce(comms[0], a, a, 65, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_VALUE, "past the end"},
        {xdev_all_reduce(comms[0], &f, a, 1, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_VALUE, "device memory"},
        {xdev_all_reduce(comms[0], a, a, 4, XDEV_DTYPE_U8, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_VALUE, "cannot be reduced"},
        {xdev_all_reduce(comms[0], a, a, 4, XDEV_DTYPE_F32, (xdev_reduce_op_t)9, NULL),
         XDEV_ERROR_INVALID_VALUE, "op 9"},
        {xdev_all_reduce(comms[0], a, a, 4, (xdev_dtype_t)99, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_VALUE, "dtype 99"},
        {xdev_all_reduce(comms[0], a, (char *)a + 4, 8, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_VALUE, "overlap"},
        /* recvbuf inside sendbuf but not at rank 0's part (the in-place position) */
        {xdev_reduce_scatter(comms[0], a, (char *)a + 4, 4, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL),
         XDEV_ERROR_INVALID_VALUE, "overlaps sendbuf"},
        {xdev_broadcast(comms[0], a, a, 4, XDEV_DTYPE_U8, nr, NULL), XDEV_ERROR_INVALID_VALUE,
         "is not a rank"},
        {xdev_reduce(comms[0], a, a, 4, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, -1, NULL),
         XDEV_ERROR_INVALID_VALUE, "root -1"},
        {xdev_all_gather(comms[0], a, a, 64, XDEV_DTYPE_F32, NULL), XDEV_ERROR_INVALID_VALUE,
         "past the end"},
        {xdev_send(comms[0], a, 4, XDEV_DTYPE_F32, 0, NULL), XDEV_ERROR_INVALID_VALUE,
         "this rank itself"},
        {xdev_recv(comms[0], a, 4, XDEV_DTYPE_F32, nr, NULL), XDEV_ERROR_INVALID_VALUE,
         "is not a rank"},
        {xdev_all_reduce(comms[0], a, a, 4, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, xt_new_stream(1)),
         XDEV_ERROR_CROSS_DEVICE, "stream"},
        {xdev_group_end(), XDEV_ERROR_INVALID_VALUE, "without xdev_group_start"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(cases[i].got == cases[i].want, "case %zu: status %d, expected %d", i,
                      (int)cases[i].got, (int)cases[i].want);
    /* messages: one more time each, checked right after the call */
    ck_assert_int_ne(xdev_all_reduce(comms[0], a, a, 4, XDEV_DTYPE_U8, XDEV_REDUCE_SUM, NULL), 0);
    ck_assert(strstr(xdev_last_error(), "cannot be reduced") != NULL);
    ck_assert_int_ne(xdev_send(comms[0], a, 4, XDEV_DTYPE_F32, 0, NULL), 0);
    ck_assert(strstr(xdev_last_error(), "this rank itself") != NULL);
    /* groups nest */
    XT_OK(xdev_group_start());
    XT_OK(xdev_group_start());
    XT_OK(xdev_group_end());
    XT_OK(xdev_group_end());
    /* init: twice the same device, n out of range, NULL */
    xdev_communicator_t more[2];
    xdev_device_t twice[2] = {xt_dev(1), xt_dev(1)};
    ck_assert_int_eq(xdev_communicator_init_all(more, 2, twice), XDEV_ERROR_INVALID_VALUE);
    ck_assert(strstr(xdev_last_error(), "both") != NULL);
    ck_assert_int_eq(xdev_communicator_init_all(more, 0, twice), XDEV_ERROR_INVALID_VALUE);
    ck_assert_int_eq(xdev_communicator_init_all(NULL, 1, twice), XDEV_ERROR_INVALID_VALUE);
    for (int r = 0; r < nr; r++)
        XT_OK(xdev_communicator_check(comms[r])); /* refused calls leave no group error */
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b1));
}
END_TEST

/* Ranks in several processes: the id's checks; a one-rank group made with
 * init_rank (the several-process runs are test_comm_procs.c and
 * tests/test_comm_procs_cpu.c). */
START_TEST(procs_api) {
    xdev_communicator_id_t id;
    memset(&id, 0, sizeof id);
    xdev_communicator_t c = NULL;
    ck_assert_int_eq(xdev_communicator_init_rank(&c, 1, &id, 0, xt_dev(0)),
                     XDEV_ERROR_INVALID_VALUE);
    ck_assert_msg(strstr(xdev_last_error(), "not a communicator id") != NULL, "%s",
                  xdev_last_error());
    ck_assert_int_eq(xdev_communicator_unique_id((xdev_device_type_t)99, &id),
                     XDEV_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(xdev_communicator_unique_id(xt_type(), NULL), XDEV_ERROR_INVALID_VALUE);
    if (xt_type() == XDEV_DEVICE_CPU) { /* an id for another type: refused before use */
        XT_OK(xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id));
        uint32_t cuda = XDEV_DEVICE_CUDA;
        memcpy(id.bytes + 8, &cuda, sizeof cuda);
        ck_assert_int_eq(xdev_communicator_init_rank(&c, 1, &id, 0, xt_dev(0)),
                         XDEV_ERROR_CROSS_DEVICE);
        /* The transport's name (after the 16-byte header) damaged. */
        XT_OK(xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id));
        ck_assert_str_eq((const char *)id.bytes + 16, "shm");
        memset(id.bytes + 16, 'x', 16);
        ck_assert_int_eq(xdev_communicator_init_rank(&c, 1, &id, 0, xt_dev(0)),
                         XDEV_ERROR_INVALID_VALUE);
        ck_assert_msg(strstr(xdev_last_error(), "names no transport") != NULL, "%s",
                      xdev_last_error());
        memcpy(id.bytes + 16, "No-Such!", 9);
        ck_assert_int_eq(xdev_communicator_init_rank(&c, 1, &id, 0, xt_dev(0)),
                         XDEV_ERROR_INVALID_VALUE);
        ck_assert_msg(strstr(xdev_last_error(), "names no transport") != NULL, "%s",
                      xdev_last_error());
    }
    xdev_status_t st = xdev_communicator_unique_id(xt_type(), &id);
    if (st == XDEV_ERROR_NOT_SUPPORTED) XT_SKIP("%s", xdev_last_error());
    XT_OK(st);
    ck_assert_int_eq(xdev_communicator_init_rank(&c, 2, &id, 2, xt_dev(0)),
                     XDEV_ERROR_INVALID_VALUE);
    ck_assert_int_eq(xdev_communicator_init_rank(&c, 0, &id, 0, xt_dev(0)),
                     XDEV_ERROR_INVALID_VALUE);
    XT_OK(xdev_communicator_init_rank(&c, 1, &id, 0, xt_dev(0))); /* a group of one */
    const char *engine = NULL;
    XT_OK(xdev_communicator_engine(c, &engine));
    /* host memory, XDEV_HOST_COMM unset: one host's transport; else the backend's own */
    ck_assert_msg(strcmp(engine, "shm") == 0 ||
                      strcmp(engine, xdev_device_type_name(xt_type())) == 0,
                  "engine %s", engine);
    ck_assert_int_eq(xdev_communicator_engine(c, NULL), XDEV_ERROR_INVALID_VALUE);
    void *d = dalloc(0, 64 * sizeof(float));
    fill(0, d, XDEV_DTYPE_F32, 64);
    XT_OK(xdev_all_reduce(c, d, d, 64, XDEV_DTYPE_F32, XDEV_REDUCE_SUM, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    float h[64];
    xt_peek(h, d, sizeof h);
    for (size_t i = 0; i < 64; i++)
        ck_assert(h[i] == (float)value(0, i));
    XT_OK(xdev_communicator_check(c));
    XT_OK(xdev_communicator_destroy(c));
    XT_OK(xdev_free(d));
}
END_TEST

/* A destroy on one thread while another keeps calling on the same rank:
 * the calls under way finish first (the destroy waits for them), the later
 * ones fail with XDEV_ERROR_INVALID_HANDLE; nothing touches freed memory
 * (ASan and TSan builds run this too). */
typedef struct caller {
    xdev_communicator_t comm;
    atomic_int stop, ok, refused, other;
} caller_t;

static void *keep_calling(void *arg) {
    caller_t *c = arg;
    while (!atomic_load(&c->stop)) {
        int v = -1;
        const char *engine = NULL;
        xdev_status_t st = xdev_communicator_rank(c->comm, &v);
        if (st == XDEV_SUCCESS) st = xdev_communicator_engine(c->comm, &engine);
        if (st == XDEV_SUCCESS) st = xdev_communicator_check(c->comm);
        if (st == XDEV_SUCCESS)
            atomic_fetch_add(&c->ok, 1);
        else if (st == XDEV_ERROR_INVALID_HANDLE)
            atomic_fetch_add(&c->refused, 1);
        else
            atomic_fetch_add(&c->other, 1);
    }
    return NULL;
}

START_TEST(destroy_while_another_thread_calls) {
    if (!make("destroy_while_another_thread_calls")) return;
    caller_t c = {.comm = comms[0]};
    pthread_t th;
    pthread_create(&th, NULL, keep_calling, &c);
    double until = xt_now_ms() + 5000;
    while (atomic_load(&c.ok) < 100 && xt_now_ms() < until)
        xt_sleep_ms(1);
    XT_OK(xdev_communicator_destroy(comms[0]));
    comms[0] = NULL;
    until = xt_now_ms() + 5000;
    while (atomic_load(&c.refused) < 100 && xt_now_ms() < until)
        xt_sleep_ms(1);
    atomic_store(&c.stop, 1);
    pthread_join(th, NULL);
    ck_assert_int_ge(atomic_load(&c.ok), 100);
    ck_assert_int_ge(atomic_load(&c.refused), 100);
    ck_assert_int_eq(atomic_load(&c.other), 0);
}
END_TEST

int main(int argc, char **argv) {
    Suite *su = suite_create("communicator");
    TCase *tc = tcase_create("communicator");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, all_reduce_every_dtype_and_op);
    tcase_add_test(tc, broadcast_reduce_gather_scatter);
    tcase_add_test(tc, send_recv_ring_in_order);
    tcase_add_test(tc, stream_ordered);
    tcase_add_test(tc, ranks_on_their_own_threads);
    tcase_add_test(tc, disagreement_is_reported);
    tcase_add_test(tc, abort_wakes_waiting_ranks);
    tcase_add_test(tc, destroy_waits_for_queued_work);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, procs_api);
    tcase_add_test(tc, destroy_while_another_thread_calls);
    suite_add_tcase(su, tc);
    return xt_run(srunner_create(su), "communicator", argc, argv);
}
