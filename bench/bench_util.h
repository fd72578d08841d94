/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_util.h - the one harness every benchmark program uses (bench/
 * and bench/gpu/, xdev and raw-vendor sides alike), so that two sides of a
 * comparison are timed by the same clock, the same batch loop and the same
 * median: a call check that exits with xdev's message, a monotonic clock,
 * the median (of an even count: the mean of the two middle values), and
 * batches of calls reported as median/min/max ns per call. Header-only;
 * it calls nothing in libxdev, so the raw-vendor programs include it too. */
#ifndef XDEV_BENCH_UTIL_H
#define XDEV_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "xdev/xdev.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        xdev_status_t check_status_ = (call);                                                      \
        if (check_status_ != XDEV_SUCCESS) {                                                       \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,               \
                    xdev_status_string(check_status_), xdev_last_error());                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline double now_s(void) {
    return now_ns() * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); of an even count, the mean of the two middle values. */
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct bench_stats {
    double median, min, max;
} bench_stats_t;

/* Median, min and max of v[0..n) (sorts v). */
static inline bench_stats_t bench_stats(double *v, int n) {
    bench_stats_t s;
    s.median = median(v, n);
    s.min = v[0];
    s.max = v[n - 1];
    return s;
}

/* The batch harness: one untimed warm-up batch, then `reps` timed batches of
 * `ops` calls each (batch(ctx) makes them), each followed by settle(ctx)
 * outside the timing (a stream synchronize, so that a batch does not pay for
 * the previous one's work; NULL for none). Returns ns per call over the
 * batches; samples holds reps doubles of scratch. */
static inline bench_stats_t bench_batches(void (*batch)(void *), void (*settle)(void *), void *ctx,
                                          long ops, int reps, double *samples) {
    batch(ctx);
    if (settle) settle(ctx);
    for (int r = 0; r < reps; ++r) {
        double t0 = now_ns();
        batch(ctx);
        double t1 = now_ns();
        if (settle) settle(ctx);
        samples[r] = (t1 - t0) / (double)ops;
    }
    return bench_stats(samples, reps);
}

/* The table both runtime benchmarks print (tests/gpu/run.sh reads it). */
static inline void bench_table_header(void) {
    printf("| %-40s | %10s | %10s | %10s |\n", "operation", "median", "min", "max");
    printf("|%.42s|%.12s|%.12s|%.12s|\n", "------------------------------------------",
           "------------", "------------", "------------");
}
static inline void bench_row(const char *name, bench_stats_t s) {
    printf("| %-40s | %10.1f | %10.1f | %10.1f |\n", name, s.median, s.min, s.max);
}

#endif
