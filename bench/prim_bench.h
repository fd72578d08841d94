/* SPDX-License-Identifier: Apache-2.0 */
/* bench/prim_bench.h - what the two files of prim_bench share: prim_bench.c
 * (options, main, the CPU run) and prim_bench_gpu.c (the GPU run's list of
 * primitives, its sides and table). One timing loop and one data maker for
 * both, so every side of every comparison is timed and fed the same way.
 * A file that includes it defines _POSIX_C_SOURCE 200809L first. */
#ifndef XDEV_BENCH_PRIM_BENCH_H
#define XDEV_BENCH_PRIM_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define PROG "prim_bench"
#define MAXLOG 34

/* The command line (prim_bench.c's main says what each option does). */
struct prim_opts {
    char device[32];
    int min_log2, max_log2, reps, runs, threads, sort_log2;
    char dtype[8];  /* the CPU's reduce, scan and copy: f32, f64, i32 or i64 */
    int exclusive;  /* the CPU's scan: 1 = exclusive */
    unsigned prims; /* the GPU run: bit p = enum prim_kind p is timed */
    int check;      /* a GPU side: 1 = check each output against the host's reference */
};
extern struct prim_opts opt;

/* The one timing loop of every side: call() `calls` times then sync(),
 * after prep() (untimed; may be NULL); one warm-up batch; the best of
 * opt.reps batches, in ns per call. A failing call exits the side (1). */
typedef struct timed {
    int (*call)(void *ctx);
    int (*sync)(void *ctx);
    int (*prep)(void *ctx);
    void *ctx;
    int calls;
} timed_t;
double time_best(const timed_t *t);

/* Element i of the f32 input: in [-1, 1), from i alone. */
float *make_f32(size_t n);

const char *verdict(bool ok);

/* "reduce,scan,..." (or "all") to a mask of enum prim_kind; false: a name
 * that is none (said on stderr). */
bool prim_parse_list(const char *list, unsigned *mask);

/* The GPU run: the parent (the table; exit status as main's) and a side
 * ("xdev", "det" or "cub") in its own process. */
int gpu_parent(void);
void gpu_side(const char *side);

static inline uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint32_t f32_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

#endif
