/* SPDX-License-Identifier: Apache-2.0 */
/* examples/memory_view.c - looking at what a program did with its device.
 *
 * A small "training loop" on the default device: weights loaded once,
 * activations allocated and freed per step on two streams (a copy stream
 * feeding a compute stream, with record_stream), tagged by phase with
 * xdev_memory_tag_push, one allocation too large to fit (an out-of-memory
 * event), markers around each step. While it runs xdev records the
 * allocator's history and a stream trace. It writes
 *
 *   OUT.json   the memory snapshot (xdev_memory_snapshot_write)
 *   OUT.html   the memory view of that snapshot (xdev_memory_viz_write)
 *   OUT.trace.json  the stream trace (xdev_trace_start/stop): open it in
 *              https://ui.perfetto.dev or chrome://tracing
 *
 *   memory_view [--steps N] [OUT]      (OUT defaults to "memory_view")
 *
 * Exits non-zero with xdev's message on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

#define MIB ((size_t)1 << 20)

/* One step: a batch copied in on the copy stream, activations of varying
 * sizes on the compute stream, a GEMM-sized scratch, everything freed. */
static void step(int k, xdev_stream_t copy, xdev_stream_t compute, float *host, size_t batch_n) {
    char name[32];
    snprintf(name, sizeof name, "step %d", k);
    XDEV_MUST(xdev_trace_range_push(name, NULL));
    XDEV_MUST(xdev_memory_tag_push("step"));

    XDEV_MUST(xdev_memory_tag_push("input"));
    void *batch = NULL;
    XDEV_MUST(xdev_malloc_stream(&batch, batch_n * sizeof(float), copy));
    XDEV_MUST(xdev_memcpy_async(batch, host, batch_n * sizeof(float), copy));
    XDEV_MUST(xdev_record_stream(batch, compute)); /* the compute stream reads it too */
    XDEV_MUST(xdev_stream_wait_stream(compute, copy));
    XDEV_MUST(xdev_memory_tag_pop());

    XDEV_MUST(xdev_memory_tag_push("forward"));
    void *act[6] = {0};
    for (int i = 0; i < 6; i++) {
        size_t bytes = (size_t)(i + 1) * (size_t)(k % 3 + 1) * 700 * 1024; /* 0.7 .. 12 MiB */
        XDEV_MUST(xdev_malloc_stream(&act[i], bytes, compute));
        XDEV_MUST(
            xdev_fill_async(act[i], XDEV_DTYPE_F32, xdev_scalar_f64(0.5), bytes / 4, compute));
    }
    XDEV_MUST(xdev_memory_tag_pop());

    XDEV_MUST(xdev_memory_tag_push("backward"));
    void *grad = NULL;
    XDEV_MUST(xdev_malloc_stream(&grad, 24 * MIB, compute));
    XDEV_MUST(xdev_convert_async(grad, XDEV_DTYPE_F16, act[5], XDEV_DTYPE_F32, 1024, compute));
    XDEV_MUST(xdev_memory_tag_pop());

    for (int i = 0; i < 6; i += 2)
        XDEV_MUST(xdev_free(act[i])); /* leave holes: fragmentation */
    XDEV_MUST(xdev_free(grad));
    for (int i = 1; i < 6; i += 2)
        XDEV_MUST(xdev_free(act[i]));
    XDEV_MUST(xdev_free(batch));
    XDEV_MUST(xdev_memory_tag_pop());
    XDEV_MUST(xdev_trace_range_pop(NULL));
}

int main(int argc, char **argv) {
    const char *out = "memory_view";
    int steps = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else
            out = argv[i];
    }
    char path[4096];
    snprintf(path, sizeof path, "%s.trace.json", out);
    XDEV_MUST(xdev_init());
    XDEV_MUST(xdev_trace_start(path));
    xdev_device_t dev;
    XDEV_MUST(xdev_get_device(&dev));
    XDEV_MUST(xdev_memory_record_history(dev, true, 0));
    char name[32];
    XDEV_MUST(xdev_device_format(dev, name, sizeof name));

    xdev_stream_t copy, compute;
    XDEV_MUST(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &copy));
    XDEV_MUST(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &compute));
    size_t batch_n = 1u << 20;
    float *host = NULL;
    XDEV_MUST(xdev_host_alloc((void **)&host, batch_n * sizeof(float)));
    for (size_t i = 0; i < batch_n; i++)
        host[i] = (float)i;

    XDEV_MUST(xdev_memory_tag_push("weights"));
    void *weights[4];
    for (int i = 0; i < 4; i++)
        XDEV_MUST(xdev_malloc(&weights[i], (size_t)(i + 1) * 3 * MIB));
    XDEV_MUST(xdev_memory_tag_pop());

    for (int k = 0; k < steps; k++)
        step(k, copy, compute, host, batch_n);

    /* One request no device can hold: an out-of-memory event in the history. */
    size_t free_b = 0, total_b = 0;
    XDEV_MUST(xdev_mem_get_info(dev, &free_b, &total_b));
    void *huge = NULL;
    XDEV_MUST(xdev_memory_tag_push("too-big"));
    xdev_status_t st = xdev_malloc(&huge, total_b + total_b / 2);
    XDEV_MUST(xdev_memory_tag_pop());
    if (st != XDEV_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "memory_view: expected out of memory, got %s\n", xdev_status_string(st));
        return 1;
    }
    XDEV_MUST(xdev_stream_synchronize(compute));

    snprintf(path, sizeof path, "%s.json", out);
    XDEV_MUST(xdev_memory_snapshot_write(path));
    snprintf(path, sizeof path, "%s.html", out);
    XDEV_MUST(xdev_memory_viz_write(path));
    XDEV_MUST(xdev_trace_stop());

    for (int i = 0; i < 4; i++)
        XDEV_MUST(xdev_free(weights[i]));
    XDEV_MUST(xdev_host_free(host));
    XDEV_MUST(xdev_stream_destroy(copy));
    XDEV_MUST(xdev_stream_destroy(compute));
    printf("memory_view: %d steps on %s: wrote %s.json, %s.html, %s.trace.json\n", steps, name, out,
           out, out);
    return 0;
}
