/* SPDX-License-Identifier: Apache-2.0 */
/* bench/overhead_probe.c - the five small calls whose host cost issue 50
 * measures on the H200 (event record, device guard, kernel launch with full
 * checks, graph replay, FFT exec with its plan cached), each call in one
 * noinline function, for counting instructions rather than timing: on a
 * loaded machine, a count is the one stable measure of xdev's own host code.
 *
 *   overhead_probe OP ITERS     OP: record guard launch launch0 replay replayrng fft
 *
 * (replayrng: a graph of one kernel and one uniform fill from the default
 * generator, so each replay also brings its random-number cell up to date.)
 *
 * Run it under callgrind on the CPU backend (the kernel, graph and FFT ops
 * need its optional slots), per thread, and read the calling thread's file
 * (*-01): its total is ITERS calls of `one`; the backend's slot shows as
 * its own function (callgrind_annotate --inclusive=yes), so core's share
 * is the difference:
 *
 *   valgrind --tool=callgrind --separate-threads=yes \
 *            --toggle-collect=one build/bench/overhead_probe record 2000
 *
 * Each op is done once before the loop (first record binds the event, the
 * first FFT makes the plan, the kernel's first launch warms its record). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in bench_util.h */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"
#include "xdev/kernel.h"
#include "bench_kernels.h"
#include "bench_util.h"

typedef struct probe {
    const char *op;
    int code; /* op's first + last character: the switch below */
    xdev_device_t dev;
    xdev_stream_t s;
    xdev_event_t e;
    xdev_kernel_t k;
    xdev_launch_config_t cfg;
    float *x, *y;
    xdev_graph_t g;
    xdev_fft_desc_t fd;
    void *fin, *fout;
} probe_t;

static void op_call(probe_t *p) {
    switch (p->code) {
    case 'r' + 'd': /* record */
        CHECK(xdev_event_record(p->e, p->s));
        break;
    case 'g' + 'd': { /* guard */
        xdev_device_guard_t g;
        CHECK(xdev_device_guard_begin(&g, p->dev));
        CHECK(xdev_device_guard_end(&g));
        break;
    }
    case 'l' + 'h': /* launch: kb_saxpy, 2 pointers checked */
    {
        long n = 256;
        float a = 0.5f;
        CHECK(XDEV_LAUNCH(p->k, &p->cfg, n, a, p->x, p->y));
    } break;
    case 'l' + '0': /* launch0: kb_empty */
        CHECK(xdev_launch_kernel(p->k, &p->cfg, NULL, 0));
        break;
    case 'r' + 'y': /* replay */
    case 'r' + 'g': /* replayrng */
        CHECK(xdev_graph_replay(p->g, p->s));
        break;
    case 'f' + 't': /* fft */
        CHECK(xdev_fft_exec(&p->fd, p->fin, p->fout, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, p->s));
        break;
    default:
        fprintf(stderr, "overhead_probe: unknown op '%s'\n", p->op);
        exit(2);
    }
}

/* One measured call: callgrind's --toggle-collect names it (the warm-up
 * before the loop calls op_call directly, outside it). */
__attribute__((noinline)) static void one(probe_t *p) {
    op_call(p);
}

/* The loop. Synchronizes
 * every 64 calls so that queues stay short (its cost is outside `one`). */
__attribute__((noinline)) static void probe_loop(probe_t *p, long iters) {
    for (long i = 0; i < iters; i++) {
        one(p);
        if ((i & 63) == 63) CHECK(xdev_stream_synchronize(p->s));
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr,
                "usage: overhead_probe record|guard|launch|launch0|replay|replayrng|fft ITERS\n");
        return 2;
    }
    probe_t p = {.op = argv[1], .code = argv[1][0] + argv[1][strlen(argv[1]) - 1]};
    long iters = atol(argv[2]);
    CHECK(xdev_init());
    CHECK(xdev_get_device(&p.dev));
    CHECK(xdev_stream_create(p.dev, XDEV_STREAM_PRIORITY_NORMAL, &p.s));
    CHECK(xdev_event_create(XDEV_EVENT_DEFAULT, &p.e));
    bool replay = strncmp(p.op, "replay", 6) == 0;
    bool kernels = strncmp(p.op, "launch", 6) == 0 || replay;
    xdev_module_t mod = NULL;
    if (kernels) {
        CHECK(xdev_module_load(p.dev, bench_kernels_bundle(), &mod));
        CHECK(xdev_module_get_kernel(mod, strcmp(p.op, "launch") == 0 ? "kb_saxpy" : "kb_empty",
                                     &p.k));
        p.cfg = (xdev_launch_config_t){.grid = {1, 1, 1}, .block = {256, 1, 1}, .stream = p.s};
        CHECK(xdev_malloc_device(p.dev, (void **)&p.x, 256 * sizeof(float)));
        CHECK(xdev_malloc_device(p.dev, (void **)&p.y, 256 * sizeof(float)));
        CHECK(xdev_memset_async(p.x, 0, 256 * sizeof(float), p.s));
        CHECK(xdev_memset_async(p.y, 0, 256 * sizeof(float), p.s));
    }
    if (replay) {
        CHECK(xdev_graph_create(&p.g));
        CHECK(xdev_graph_capture_begin(p.g, p.s, XDEV_CAPTURE_GLOBAL, NULL));
        CHECK(xdev_launch_kernel(p.k, &p.cfg, NULL, 0));
        if (strcmp(p.op, "replayrng") == 0)
            CHECK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, p.x, 256, p.s));
        CHECK(xdev_graph_capture_end(p.g));
    }
    if (strcmp(p.op, "fft") == 0) {
        int64_t n = 16;
        p.fd = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
        CHECK(xdev_malloc_device(p.dev, &p.fin, 16 * 8));
        CHECK(xdev_malloc_device(p.dev, &p.fout, 16 * 8));
        CHECK(xdev_memset_async(p.fin, 0, 16 * 8, p.s));
    }
    op_call(&p); /* warm: binds the event, makes the plan, ... */
    CHECK(xdev_stream_synchronize(p.s));
    probe_loop(&p, iters);
    CHECK(xdev_stream_synchronize(p.s));
    printf("overhead_probe %s: %ld calls done\n", p.op, iters);
    if (p.g) CHECK(xdev_graph_destroy(p.g));
    if (p.fin) {
        CHECK(xdev_free(p.fin));
        CHECK(xdev_free(p.fout));
    }
    if (p.x) {
        CHECK(xdev_free(p.x));
        CHECK(xdev_free(p.y));
    }
    if (mod) CHECK(xdev_module_unload(mod));
    CHECK(xdev_event_destroy(p.e));
    CHECK(xdev_stream_destroy(p.s));
    return 0;
}
