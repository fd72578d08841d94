/* SPDX-License-Identifier: Apache-2.0 */
/* bench/memviz_bench.c - a large memory snapshot and its page, for the
 * memory view's load time: thousands of segments (small-pool segments of
 * 2 MiB, two 1 MiB blocks each, every third block freed so segments mix
 * states) and a history ring filled by alloc/free churn on two streams.
 * Prints the snapshot's size and the time xdev takes to write the page;
 * bench/memviz_load.sh then times a browser drawing it. Run by hand:
 *
 *   XDEV_BACKEND=cpu XDEV_CPU_MEMORY=64G memviz_bench [--segments 4000]
 *       [--history 100000] [--out memviz_big]       writes OUT.html, OUT.json
 *
 * On the CPU backend the segments are reserved, not touched (posix_memalign
 * of 2 MiB maps pages lazily). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MIB ((size_t)1 << 20)

int main(int argc, char **argv) {
    int segments = 4000, history = 100000;
    const char *out = "memviz_big";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--segments") == 0 && i + 1 < argc)
            segments = atoi(argv[++i]);
        else if (strcmp(argv[i], "--history") == 0 && i + 1 < argc)
            history = atoi(argv[++i]);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: memviz_bench [--segments N] [--history N] [--out PREFIX]\n");
            return 2;
        }
    }
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    CHECK(xdev_memory_record_history(dev, true, (size_t)history));
    xdev_stream_t side;
    CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &side));
    int nblocks = 2 * segments;
    void **blocks = calloc((size_t)nblocks, sizeof *blocks);
    if (blocks == NULL) return 1;
    const char *tags[] = {"embed", "layer/attn", "layer/mlp", "optimizer"};
    for (int i = 0; i < nblocks; i++) {
        CHECK(xdev_memory_tag_push(tags[i % 4]));
        CHECK(xdev_malloc_stream(&blocks[i], MIB, i % 2 ? side : NULL));
        CHECK(xdev_memory_tag_pop());
    }
    /* churn until the ring is full: small blocks on both streams */
    unsigned rng = 12345;
    for (int k = 0; k < history / 2; k++) {
        void *p = NULL;
        rng = rng * 1103515245u + 12345u;
        CHECK(xdev_malloc_stream(&p, 512 + (rng >> 8) % (256 * 1024), k % 2 ? side : NULL));
        CHECK(xdev_free(p));
    }
    for (int i = 0; i < nblocks; i += 3)
        CHECK(xdev_free(blocks[i]));
    char *json = NULL;
    double t0 = now_ns();
    CHECK(xdev_memory_snapshot(&json));
    double t1 = now_ns();
    char path[4096];
    snprintf(path, sizeof path, "%s.html", out);
    CHECK(xdev_memory_viz_write(path));
    double t2 = now_ns();
    snprintf(path, sizeof path, "%s.json", out);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(json, f) < 0 || fclose(f) != 0) return 1;
    int nseg = 0;
    for (const char *p = strstr(json, "\"total_size\""); p; p = strstr(p + 1, "\"total_size\""))
        nseg++;
    printf("memviz_bench: %d segments, %d history entries asked; snapshot %.1f MB in %.1f ms, "
           "page written in %.1f ms (snapshot + page)\n",
           nseg, history, (double)strlen(json) / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    free(json);
    for (int i = 0; i < nblocks; i++)
        if (i % 3 != 0) CHECK(xdev_free(blocks[i]));
    free(blocks);
    CHECK(xdev_stream_destroy(side));
    return 0;
}
