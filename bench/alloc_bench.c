/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_bench - cost of xdev's device allocator on the default backend.
 *
 *   alloc_bench [--threads N]
 *   alloc_bench --hot SIZE ITERS
 *   alloc_bench --threads-only N
 *
 * 1. hot pair: xdev_malloc + xdev_free of one size, repeated (the cached
 *    path every framework op takes), ns per pair, median of 15 runs after
 *    one untimed round on each side (without it the first size timed was
 *    xdev's slowest on the H200 host: 57 ns against 34-36 for the others);
 * 2. churn: 64 live blocks of random sizes 512 B - 8 MiB (log-uniform); each
 *    step frees one at random and allocates a new one; ns per step;
 * 3. the same churn on N threads at once (default 8), ns per step overall,
 *    after one untimed warm-up round.
 * --hot runs only ITERS hot pairs of SIZE bytes after one warm-up pair and
 * prints nothing else: a short loop for instruction counts (perf stat,
 * callgrind), where the fixed start-up cost is measured with ITERS 0 and
 * subtracted. --threads-only runs only part 3 (its CPU time from perf stat
 * is then the contended churn's alone). Select the backend with XDEV_BACKEND; compare with c10 on a
 * GPU through bench/c10 (see docs/performance.md). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xdev/xdev.h>
#include "bench_util.h"

#define REPS 15
#define LIVE 64

static void check(xdev_status_t st, const char *what) {
    if (st != XDEV_SUCCESS) {
        fprintf(stderr, "alloc_bench: %s: %s\n", what, xdev_last_error());
        exit(1);
    }
}

static double hot_pair(size_t size, int iters) {
    double t[REPS];
    void *p;
    check(xdev_malloc(&p, size), "warm-up malloc");
    check(xdev_free(p), "warm-up free");
    for (int i = 0; i < iters; i++) { /* one untimed round, as c10_alloc_bench's */
        xdev_malloc(&p, size);
        xdev_free(p);
    }
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++) {
            xdev_malloc(&p, size);
            xdev_free(p);
        }
        t[r] = (now_ns() - t0) / iters;
    }
    return median(t, REPS);
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* log-uniform in [512 B, 8 MiB] */
static size_t random_size(uint64_t *s) {
    int l2 = 9 + (int)(xorshift(s) % 14);
    size_t lo = (size_t)1 << l2;
    return lo + (size_t)(xorshift(s) % lo);
}

typedef struct {
    int steps;
    uint64_t seed;
    xdev_device_t dev;
    double ns;
} churn_arg_t;

static void *churn(void *argp) {
    churn_arg_t *a = argp;
    check(xdev_set_device(a->dev), "set_device");
    void *live[LIVE];
    for (int i = 0; i < LIVE; i++)
        check(xdev_malloc(&live[i], random_size(&a->seed)), "malloc");
    double t0 = now_ns();
    for (int i = 0; i < a->steps; i++) {
        int k = (int)(xorshift(&a->seed) % LIVE);
        xdev_free(live[k]);
        check(xdev_malloc(&live[k], random_size(&a->seed)), "malloc");
    }
    a->ns = (now_ns() - t0) / a->steps;
    for (int i = 0; i < LIVE; i++)
        xdev_free(live[i]);
    return NULL;
}

/* --hot SIZE ITERS: the hot pair alone (see the top comment). */
static int hot_only(size_t size, long iters) {
    check(xdev_init(), "xdev_init");
    void *p;
    check(xdev_malloc(&p, size), "warm-up malloc");
    check(xdev_free(p), "warm-up free");
    for (long i = 0; i < iters; i++) {
        xdev_malloc(&p, size);
        xdev_free(p);
    }
    return 0;
}

/* Parts 1 and 2: the hot pair at each size, one thread's churn. */
static void single_thread(xdev_device_t dev) {
    printf("\nhot alloc+free pair (median of %d runs)\n", REPS);
    static const size_t sizes[] = {512, 4096, 65536, 1 << 20, 8 << 20, 64 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        printf("  %10zu B  %8.1f ns/pair\n", sizes[i], hot_pair(sizes[i], 200000));

    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        churn_arg_t a = {100000, 0x9E3779B97F4A7C15ULL + (uint64_t)r, dev, 0};
        churn(&a);
        t[r] = a.ns;
    }
    printf("\nchurn, 64 live blocks 512 B-8 MiB, 1 thread: %8.1f ns/step (median)\n",
           median(t, REPS));
}

int main(int argc, char **argv) {
    int threads = 8;
    bool threads_only = false;
    if (argc == 4 && strcmp(argv[1], "--hot") == 0)
        return hot_only((size_t)strtoull(argv[2], NULL, 0), strtol(argv[3], NULL, 0));
    if (argc == 3 && strcmp(argv[1], "--threads") == 0) threads = atoi(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--threads-only") == 0) {
        threads = atoi(argv[2]);
        threads_only = true;
    }
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "usage: alloc_bench [--threads N | --threads-only N | --hot SIZE ITERS]\n");
        return 2;
    }
    check(xdev_init(), "xdev_init");
    xdev_device_t dev;
    check(xdev_get_device(&dev), "get_device");
    char name[XDEV_DEVICE_NAME_MAX];
    xdev_device_format(dev, name, sizeof name);
    printf("alloc_bench on %s\n", name);
    if (!threads_only) single_thread(dev);
    /* Multi-thread churn, warm: one untimed round with the same seeds first,
     * so the timed round measures the allocator, not segment growth (a
     * cudaMalloc costs ~0.1-1 ms). Backend calls of the timed round are
     * printed; expect ~0. */
    pthread_t th[256];
    churn_arg_t args[256];
    double wall = 0;
    xdev_memory_stats_t before, after;
    for (int round = 0; round < 2; round++) {
        xdev_memory_stats(dev, &before);
        double t0 = now_ns();
        for (int i = 0; i < threads; i++) {
            args[i] = (churn_arg_t){50000, 0x1234567ULL * (uint64_t)(i + 1), dev, 0};
            pthread_create(&th[i], NULL, churn, &args[i]);
        }
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        wall = now_ns() - t0;
        xdev_memory_stats(dev, &after);
    }
    printf("churn, %d threads at once (warm): %8.1f ns/step overall (%.1f ns/step per thread), "
           "%lld backend calls\n",
           threads, wall / (50000.0 * threads), wall / 50000.0,
           (long long)(after.num_device_alloc + after.num_device_free - before.num_device_alloc -
                       before.num_device_free));
    size_t res;
    xdev_max_memory_reserved(dev, &res);
    printf("peak reserved %.1f MiB\n", (double)res / 1048576.0);
    return 0;
}
