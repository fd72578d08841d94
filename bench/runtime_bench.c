/* SPDX-License-Identifier: Apache-2.0 */
/* bench/runtime_bench.c - per-operation cost of xdev's runtime calls.
 *
 * Measures, on the current device of the default backend (XDEV_BACKEND picks
 * it; CPU by default on a machine without GPUs): enqueueing a no-op host
 * function, event record, event query, record+query, stream query,
 * xdev_stream_current, a same-device guard begin/end, and xdev_set_device to
 * the current device. Each operation runs in batches of --ops calls; the
 * table gives the median (and min / max) ns per call over --reps batches.
 * Run by hand, not by ctest:
 *
 *   runtime_bench [--reps 31] [--ops 10000] */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xdev/xdev.h"
#include "bench_util.h"

/* A query may also answer NOT_READY; anything else is a failure. */
#define CHECK_QUERY(call)                                                                          \
    do {                                                                                           \
        xdev_status_t check_status_ = (call);                                                      \
        if (check_status_ != XDEV_SUCCESS && check_status_ != XDEV_ERROR_NOT_READY) {              \
            fprintf(stderr, "runtime_bench: %s:%d: %s failed: %s: %s\n", __FILE__, __LINE__,       \
                    #call, xdev_status_string(check_status_), xdev_last_error());                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static atomic_ulong noop_runs;

static void noop(void *user) {
    (void)user;
    atomic_fetch_add_explicit(&noop_runs, 1, memory_order_relaxed);
}

/* A host function that holds its stream until `gate` opens. */
static atomic_int gate;

static void wait_gate(void *user) {
    (void)user;
    while (!atomic_load_explicit(&gate, memory_order_acquire)) {
    }
}

/* One benchmark: `ops` calls per batch, timed batch by batch. */
typedef struct bench_ctx {
    xdev_device_t device;
    xdev_stream_t stream;
    xdev_event_t event;
    long ops;
    double sync_ns; /* host_func only: time of the synchronize after the batch */
} bench_ctx_t;

typedef void (*batch_fn)(void *ctx);

static void batch_host_func(void *arg) {
    bench_ctx_t *ctx = arg;
    for (long i = 0; i < ctx->ops; ++i)
        CHECK(xdev_launch_host_func(ctx->stream, noop, NULL));
}

static void batch_event_record(void *arg) {
    bench_ctx_t *ctx = arg;
    for (long i = 0; i < ctx->ops; ++i)
        CHECK(xdev_event_record(ctx->event, ctx->stream));
}

static void batch_event_query(void *arg) {
    bench_ctx_t *ctx = arg;
    for (long i = 0; i < ctx->ops; ++i)
        CHECK_QUERY(xdev_event_query(ctx->event));
}

static void batch_record_query(void *arg) {
    bench_ctx_t *ctx = arg;
    for (long i = 0; i < ctx->ops; ++i) {
        CHECK(xdev_event_record(ctx->event, ctx->stream));
        CHECK_QUERY(xdev_event_query(ctx->event));
    }
}

static void batch_stream_query(void *arg) {
    bench_ctx_t *ctx = arg;
    for (long i = 0; i < ctx->ops; ++i)
        CHECK_QUERY(xdev_stream_query(ctx->stream));
}

static void batch_stream_current(void *arg) {
    bench_ctx_t *ctx = arg;
    xdev_stream_t s;
    for (long i = 0; i < ctx->ops; ++i)
        CHECK(xdev_stream_current(ctx->device, &s));
}

static void batch_guard(void *arg) {
    bench_ctx_t *ctx = arg;
    for (long i = 0; i < ctx->ops; ++i) {
        xdev_device_guard_t g;
        CHECK(xdev_device_guard_begin(&g, ctx->device));
        CHECK(xdev_device_guard_end(&g));
    }
}

static void batch_set_device(void *arg) {
    bench_ctx_t *ctx = arg;
    for (long i = 0; i < ctx->ops; ++i)
        CHECK(xdev_set_device(ctx->device));
}

static void settle(void *arg) {
    CHECK(xdev_stream_synchronize(((bench_ctx_t *)arg)->stream));
}

/* bench_batches with a stream synchronize after each batch; ns per call. */
static void run(const char *name, batch_fn fn, bench_ctx_t *ctx, int reps, double *samples) {
    bench_row(name, bench_batches(fn, settle, ctx, ctx->ops, reps, samples));
}

/* Every no-op must have run exactly once. */
static void check_runs(unsigned long expected) {
    unsigned long ran = atomic_load(&noop_runs);
    if (ran != expected) {
        fprintf(stderr, "runtime_bench: %lu host functions ran, expected %lu\n", ran, expected);
        exit(1);
    }
}

/* Host functions: ns per enqueue (the stream drains concurrently), per op
 * including the final synchronize, and per op run by the stream alone. */
static void run_host_func(bench_ctx_t *ctx, int reps, double *enq, double *done) {
    batch_host_func(ctx);
    CHECK(xdev_stream_synchronize(ctx->stream));
    atomic_store(&noop_runs, 0);
    for (int r = 0; r < reps; ++r) {
        double t0 = now_ns();
        batch_host_func(ctx);
        double t1 = now_ns();
        CHECK(xdev_stream_synchronize(ctx->stream));
        double t2 = now_ns();
        enq[r] = (t1 - t0) / (double)ctx->ops;
        done[r] = (t2 - t0) / (double)ctx->ops;
    }
    check_runs((unsigned long)reps * (unsigned long)ctx->ops);
    bench_row("launch_host_func (no-op), per enqueue", bench_stats(enq, reps));
    bench_row("launch_host_func (no-op), enqueue+sync", bench_stats(done, reps));

    /* Held: hold the stream, time the batch's enqueue (no function runs
     * meanwhile, so the call's own cost), then time the drain (run cost). */
    for (int r = 0; r < reps; ++r) {
        atomic_store(&gate, 0);
        CHECK(xdev_launch_host_func(ctx->stream, wait_gate, NULL));
        double te = now_ns();
        batch_host_func(ctx);
        enq[r] = (now_ns() - te) / (double)ctx->ops;
        double t0 = now_ns();
        atomic_store_explicit(&gate, 1, memory_order_release);
        CHECK(xdev_stream_synchronize(ctx->stream));
        done[r] = (now_ns() - t0) / (double)ctx->ops;
    }
    bench_row("launch_host_func (no-op), enqueue, held", bench_stats(enq, reps));
    bench_row("launch_host_func (no-op), run (queued)", bench_stats(done, reps));
}

static long parse_positive(const char *flag, const char *s) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v <= 0 || v > 100000000L) {
        fprintf(stderr, "runtime_bench: bad %s '%s'\n", flag, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    int reps = 31;
    long ops = 10000;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = (int)parse_positive("--reps", argv[++i]);
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
            ops = parse_positive("--ops", argv[++i]);
        } else {
            fprintf(stderr, "usage: runtime_bench [--reps N (31)] [--ops N (10000)]\n"
                            "Per-call cost of xdev runtime operations on the current device of\n"
                            "the default backend (choose it with XDEV_BACKEND).\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }

    CHECK(xdev_init());
    bench_ctx_t ctx = {.ops = ops};
    CHECK(xdev_get_device(&ctx.device));
    xdev_device_properties_t props;
    char name[XDEV_DEVICE_NAME_MAX];
    CHECK(xdev_get_device_properties(ctx.device, &props));
    CHECK(xdev_device_format(ctx.device, name, sizeof name));
    CHECK(xdev_stream_create(ctx.device, XDEV_STREAM_PRIORITY_NORMAL, &ctx.stream));
    CHECK(xdev_event_create(XDEV_EVENT_DEFAULT, &ctx.event));

    double *a = malloc(sizeof(double) * (size_t)reps);
    double *b = malloc(sizeof(double) * (size_t)reps);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "runtime_bench: out of memory\n");
        return 1;
    }

    printf("xdev %s runtime_bench on %s (%s), launch blocking %s\n", xdev_version_string(), name,
           props.name, xdev_launch_blocking() ? "on" : "off");
    printf("%d batches of %ld calls; ns per call\n\n", reps, ops);
    bench_table_header();

    run_host_func(&ctx, reps, a, b);
    /* The event is recorded on an idle stream: the cost of the call itself. */
    run("event_record", batch_event_record, &ctx, reps, a);
    run("event_query (completed event)", batch_event_query, &ctx, reps, a);
    run("event_record + event_query", batch_record_query, &ctx, reps, a);
    run("stream_query (idle stream)", batch_stream_query, &ctx, reps, a);
    run("stream_current", batch_stream_current, &ctx, reps, a);
    run("device_guard_begin + end (same device)", batch_guard, &ctx, reps, a);
    run("set_device (same device)", batch_set_device, &ctx, reps, a);

    free(a);
    free(b);
    CHECK(xdev_event_destroy(ctx.event));
    CHECK(xdev_stream_destroy(ctx.stream));
    return 0;
}
