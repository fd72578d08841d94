/* bench/bench_util.h - helpers every benchmark program uses: a call check
 * that exits with xdev's message, a monotonic clock, and medians. */
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

/* Median of v[0..n) (sorts v). */
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

#endif
