/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_replay - xdev's device allocator under the replay harness
 * (bench/replay_harness.h: the same reader, loop, slots and clock as the c10
 * side, bench/gpu/c10_alloc_bench.cpp replay).
 *
 *   alloc_replay [--warm-runs N] [--label NAME] TRACE.csv[.gz]...
 *
 * One "replay" line per trace (bench/replay_compare.py reads them; run it to
 * compare allocators, each trace in a fresh process). The policy is
 * XDEV_ALLOC_CONF's (trim_before_grow:false = torch's, backend:async =
 * cudaMallocAsync on CUDA); the label defaults to "xdev" plus that value.
 * Runs on the default backend (XDEV_BACKEND). Exit 1 on a malformed trace
 * (file:line) or a failed allocation. */
#define _GNU_SOURCE /* popen, clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_harness.h"

typedef struct {
    xdev_device_t dev;
    xdev_stream_t streams[REPLAY_MAX_STREAMS];
    uint32_t n;
} xdev_ctx_t;

static int x_make_streams(void *ctx, uint32_t n) {
    xdev_ctx_t *c = ctx;
    for (uint32_t s = 1; s < c->n; s++)
        (void)xdev_stream_destroy(c->streams[s]);
    c->n = 0;
    if (xdev_stream_default(c->dev, &c->streams[0]) != XDEV_SUCCESS) return -1;
    for (c->n = 1; c->n < n; c->n++)
        if (xdev_stream_create(c->dev, XDEV_STREAM_PRIORITY_NORMAL, &c->streams[c->n]) !=
            XDEV_SUCCESS)
            return -1;
    return 0;
}

static void *x_alloc(void *ctx, size_t size, uint32_t stream) {
    xdev_ctx_t *c = ctx;
    void *p = NULL;
    if (xdev_malloc_stream(&p, size, c->streams[stream]) != XDEV_SUCCESS) {
        fprintf(stderr, "alloc_replay: %s\n", xdev_last_error());
        return NULL;
    }
    return p;
}

static void x_release(void *ctx, void *p) {
    (void)ctx;
    if (xdev_free(p) != XDEV_SUCCESS) fprintf(stderr, "alloc_replay: %s\n", xdev_last_error());
}

static void x_reset(void *ctx) {
    xdev_ctx_t *c = ctx;
    CHECK(xdev_synchronize());
    CHECK(xdev_empty_cache());
    CHECK(xdev_reset_peak_memory_stats(c->dev));
    CHECK(xdev_reset_accumulated_memory_stats(c->dev));
}

static void x_counters(void *ctx, replay_counters_t *out) {
    xdev_ctx_t *c = ctx;
    xdev_memory_stats_t s;
    CHECK(xdev_memory_stats(c->dev, &s));
    out->allocated_peak = s.allocated_bytes[XDEV_STAT_ALL].peak;
    out->reserved_peak = s.reserved_bytes[XDEV_STAT_ALL].peak;
    out->backend_calls = s.num_device_alloc + s.num_device_free;
    out->retries = s.num_alloc_retries;
}

int main(int argc, char **argv) {
    int warm_runs = 5, first = 1;
    const char *label = NULL;
    while (first + 1 < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "--warm-runs") == 0)
            warm_runs = atoi(argv[first + 1]);
        else if (strcmp(argv[first], "--label") == 0)
            label = argv[first + 1];
        else
            break;
        first += 2;
    }
    if (first >= argc || warm_runs < 1) {
        fprintf(stderr, "usage: alloc_replay [--warm-runs N] [--label NAME] TRACE.csv[.gz]...\n");
        return 2;
    }
    char name[256];
    if (label == NULL) {
        const char *conf = getenv("XDEV_ALLOC_CONF");
        snprintf(name, sizeof name, "xdev%s%s", conf && *conf ? " " : "", conf ? conf : "");
        label = name;
    }
    CHECK(xdev_init());
    xdev_ctx_t ctx = {0};
    CHECK(xdev_get_device(&ctx.dev));
    replay_allocator_t a = {label, &ctx, x_make_streams, x_alloc, x_release, x_reset, x_counters};
    char err[512];
    for (int i = first; i < argc; i++) {
        replay_trace_t t;
        replay_result_t r;
        if (replay_load(argv[i], &t, err, sizeof err) != 0 ||
            replay_run(&a, &t, warm_runs, &r, err, sizeof err) != 0) {
            fprintf(stderr, "alloc_replay: %s\n", err);
            return 1;
        }
        replay_print(label, &t, &r);
        free(t.ev);
    }
    x_make_streams(&ctx, 1);
    return 0;
}
