/* SPDX-License-Identifier: Apache-2.0 */
/* bench/sanitizer_bench.c - what the stream-order sanitizer (XDEV_SANITIZE=
 * streams) costs per call.
 *
 * The same loops run twice, each in a fresh process of this program: once
 * with XDEV_SANITIZE unset, once with XDEV_SANITIZE=streams (the parent
 * runs both children in turn, --rounds times, and keeps each side's best
 * median). Each loop enqueues small work on the current device of the
 * default backend (XDEV_BACKEND), so the host's cost per call is what is
 * measured: a 256-byte memset, a 64-element fill, a 256-byte device copy, an
 * 8x8 GEMM, an ordered two-stream step (memset on one stream, an event
 * wait on the other, a copy there, an event wait back: three checked uses
 * and four orderings), and
 * a memset that visits 4096 live allocations in turn (the sanitizer's table
 * at that size). Run by hand, not by ctest:
 *
 *   sanitizer_bench [--reps 15] [--ops 2000] [--rounds 3]
 *   sanitizer_bench --child ...     one side, in this process */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "xdev/xdev.h"

#define NALLOC 4096

typedef struct ctx {
    xdev_stream_t s1, s2;
    xdev_event_t ev, ev2;
    void *a, *b, *c, *m[3];
    void *many[NALLOC];
    long ops;
} ctx_t;

static void settle(void *arg) {
    ctx_t *c = arg;
    CHECK(xdev_stream_synchronize(c->s1));
    CHECK(xdev_stream_synchronize(c->s2));
}

static void b_memset(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_memset_async(c->a, 0, 256, c->s1));
}

static void b_fill(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_fill_async(c->a, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), 64, c->s1));
}

static void b_copy(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_memcpy_async(c->b, c->a, 256, c->s1));
}

static void b_gemm(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 8, 8, 8, 1.0, c->m[0], 8,
                        c->m[1], 8, 0.0, c->m[2], 8, c->s1));
}

static void b_step(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++) {
        CHECK(xdev_memset_async(c->a, 0, 256, c->s1));
        CHECK(xdev_event_record(c->ev, c->s1));
        CHECK(xdev_stream_wait_event(c->s2, c->ev));
        CHECK(xdev_memcpy_async(c->c, c->a, 256, c->s2));
        CHECK(xdev_event_record(c->ev2, c->s2)); /* the next memset waits for the copy */
        CHECK(xdev_stream_wait_event(c->s1, c->ev2));
    }
}

static void b_many(void *arg) {
    ctx_t *c = arg;
    for (long i = 0; i < c->ops; i++)
        CHECK(xdev_memset_async(c->many[i % NALLOC], 0, 64, c->s1));
}

static const struct {
    const char *name;
    void (*fn)(void *);
} g_benches[] = {
    {"memset 256 B", b_memset},
    {"fill 64 x f32", b_fill},
    {"copy 256 B device to device", b_copy},
    {"GEMM 8x8x8 f32", b_gemm},
    {"ordered step (memset, wait, copy, wait back)", b_step},
    {"memset over 4096 live allocations", b_many},
};
#define NBENCH (int)(sizeof g_benches / sizeof g_benches[0])

static int child(long ops, int reps) {
    ctx_t c = {.ops = ops};
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &c.s1));
    CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &c.s2));
    CHECK(xdev_event_create(XDEV_EVENT_DEFAULT, &c.ev));
    CHECK(xdev_event_create(XDEV_EVENT_DEFAULT, &c.ev2));
    CHECK(xdev_malloc(&c.a, 4096));
    CHECK(xdev_malloc(&c.b, 4096));
    CHECK(xdev_malloc(&c.c, 4096));
    for (int i = 0; i < 3; i++) {
        CHECK(xdev_malloc(&c.m[i], 8 * 8 * 4));
        CHECK(xdev_memset_async(c.m[i], 0, 8 * 8 * 4, c.s1));
    }
    for (int i = 0; i < NALLOC; i++)
        CHECK(xdev_malloc(&c.many[i], 64));
    CHECK(xdev_synchronize());
    double *samples = malloc((size_t)reps * sizeof *samples);
    if (samples == NULL) return 1;
    printf("sanitizer %s\n", xdev_sanitizer_enabled() ? "on" : "off");
    for (int i = 0; i < NBENCH; i++) {
        bench_stats_t s = bench_batches(g_benches[i].fn, settle, &c, ops, reps, samples);
        printf("row %d %.1f\n", i, s.median);
    }
    printf("reports %llu\n", (unsigned long long)xdev_sanitizer_report_count());
    free(samples);
    CHECK(xdev_synchronize());
    for (int i = 0; i < NALLOC; i++)
        CHECK(xdev_free(c.many[i]));
    for (int i = 0; i < 3; i++)
        CHECK(xdev_free(c.m[i]));
    CHECK(xdev_free(c.a));
    CHECK(xdev_free(c.b));
    CHECK(xdev_free(c.c));
    CHECK(xdev_event_destroy(c.ev));
    CHECK(xdev_event_destroy(c.ev2));
    CHECK(xdev_stream_destroy(c.s1));
    CHECK(xdev_stream_destroy(c.s2));
    return 0;
}

/* Run this program as a child with the sanitizer on or off; its rows into
 * ns[] (best so far kept). False on any failure. */
static bool run_side(const char *self, bool on, const char *ops, const char *reps, double *ns,
                     unsigned long long *reports) {
    int fd[2];
    if (pipe(fd) != 0) return false;
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        if (on)
            setenv("XDEV_SANITIZE", "streams", 1);
        else
            unsetenv("XDEV_SANITIZE");
        execl(self, self, "--child", "--ops", ops, "--reps", reps, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[256];
    bool seen_mode = false;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        int i;
        double v;
        unsigned long long r;
        if (strncmp(line, "sanitizer ", 10) == 0)
            seen_mode = (strncmp(line + 10, on ? "on" : "off", on ? 2 : 3) == 0);
        else if (sscanf(line, "row %d %lf", &i, &v) == 2 && i >= 0 && i < NBENCH)
            ns[i] = ns[i] == 0 || v < ns[i] ? v : ns[i];
        else if (sscanf(line, "reports %llu", &r) == 1)
            *reports = r;
    }
    if (f != NULL) fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    return seen_mode && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv) {
    const char *ops = "2000", *reps = "15";
    int rounds = 3;
    bool is_child = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--child") == 0)
            is_child = true;
        else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            ops = argv[++i];
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = argv[++i];
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: sanitizer_bench [--reps N] [--ops N] [--rounds N]\n");
            return 2;
        }
    }
    if (atol(ops) <= 0 || atoi(reps) <= 0 || rounds <= 0) {
        fprintf(stderr, "sanitizer_bench: --ops, --reps and --rounds must be positive\n");
        return 2;
    }
    if (is_child) return child(atol(ops), atoi(reps));
    double off[NBENCH] = {0}, on[NBENCH] = {0};
    unsigned long long off_reports = 0, on_reports = 0;
    for (int r = 0; r < rounds; r++) /* alternate, so drift hits both sides */
        if (!run_side("/proc/self/exe", false, ops, reps, off, &off_reports) ||
            !run_side("/proc/self/exe", true, ops, reps, on, &on_reports)) {
            fprintf(stderr, "sanitizer_bench: a child run failed\n");
            return 1;
        }
    xdev_device_t dev;
    xdev_device_properties_t props;
    CHECK(xdev_get_device(&dev));
    CHECK(xdev_get_device_properties(dev, &props));
    printf("device: %s:%d (%s); ns per call, best of %d fresh processes per side\n",
           xdev_device_type_name(dev.type), dev.index, props.name, rounds);
    printf("| %-44s | %10s | %10s | %10s |\n", "operation", "off", "streams", "added");
    printf("|%.46s|%.12s|%.12s|%.12s|\n", "----------------------------------------------",
           "------------", "------------", "------------");
    for (int i = 0; i < NBENCH; i++)
        printf("| %-44s | %10.1f | %10.1f | %10.1f |\n", g_benches[i].name, off[i], on[i],
               on[i] - off[i]);
    printf("races reported: %llu off, %llu on (the loops are correctly ordered)\n", off_reports,
           on_reports);
    return on_reports == 0 ? 0 : 1;
}
