/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_parallel.c - a parallel loop over a device's kernel
 * worker pool, for the backend's own ops (fills, conversions, random fills,
 * large copies and memsets, the parallel primitives; FFTW's threads run on
 * the pool through cpu_fft.c too): the range is cut into chunks, each chunk is one
 * block of a launch of a built-in "kernel" whose block function calls the
 * op's body, and the pool runs it exactly as it runs the application's
 * kernels (the stream worker claims chunks too and returns once all ran).
 * Small ranges, a device with one thread, or a pool that cannot start run
 * inline on the calling thread: the result never depends on the split. */
#include <string.h>

#include "cpu/cpu_pool.h"

typedef struct par_job {
    xdev_cpu_range_fn fn;
    void *ctx;
    size_t n, chunk;
} par_job_t;

static void par_block(xdev_kctx_t *kc, void *const *args) {
    const par_job_t *j = args[0];
    size_t begin = (size_t)kc->group[0] * j->chunk;
    size_t end = begin + j->chunk < j->n ? begin + j->chunk : j->n;
    if (begin < end) j->fn(j->ctx, begin, end);
}

static const xdev_kernel_sig_t k_par_sig = {
    .name = "xdev_cpu_parallel_for", .block = par_block, .nparams = 1};

void xdev_cpu_parallel_for(int device, size_t n, size_t grain, xdev_cpu_range_fn fn, void *ctx) {
    int threads = xdev_cpu_state.threads;
    if (grain == 0) grain = 1;
    if (threads <= 1 || n <= grain) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    /* about 4 chunks per thread (load balance), none smaller than grain */
    size_t chunks = (size_t)threads * 4;
    size_t chunk = (n + chunks - 1) / chunks;
    if (chunk < grain) chunk = grain;
    chunk = (chunk + grain - 1) / grain * grain; /* a multiple of grain: aligned splits */
    chunks = (n + chunk - 1) / chunk;
    xdev_cpu_pool_t *pool = chunks > 1 ? xdev_cpu_pool_get(&xdev_cpu_state.devices[device]) : NULL;
    if (pool == NULL || chunks > (size_t)INT32_MAX) {
        fn(ctx, 0, n);
        return;
    }
    par_job_t job = {fn, ctx, n, chunk};
    xdev_cpu_launch_t l;
    memset(&l, 0, sizeof l);
    l.sig = &k_par_sig;
    l.device = device;
    l.grid[0] = (int)chunks;
    l.grid[1] = l.grid[2] = 1;
    l.block[0] = l.block[1] = l.block[2] = 1;
    l.items = 1;
    l.total = chunks;
    l.chunk = 1;
    atomic_init(&l.next_block, 0);
    atomic_init(&l.fault, 0);
    atomic_init(&l.seats, 0);
    l.args[0] = &job;
    xdev_cpu_pool_run(pool, &l);
    if (atomic_load(&l.fault) != 0) fn(ctx, 0, n); /* no executor memory: do it here */
}
