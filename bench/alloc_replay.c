/* alloc_replay - replay allocation traces through xdev's device allocator.
 *
 *   alloc_replay [--warm-runs N] FILE...
 *
 * FILE is a CSV (optionally gzip'ed) of `action,addr,size,stream` lines as
 * captured from PyTorch (../shared/traces): a free of an address with no
 * earlier alloc is ignored, stream ids map to xdev streams (0 = the default
 * stream). The first pass starts with an empty cache (cold); later passes
 * reuse the cache (warm). Peaks come from the cold pass, which is what a
 * real run sees. NAME.meta beside the file, if present, gives the captured
 * run's own figures (PyTorch's allocator in the real workload: "run resv",
 * "run overhead") for comparison. Runs on the default backend (XDEV_BACKEND). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xdev/xdev.h>
#include "bench_util.h"

typedef struct {
    int is_free;
    uint64_t addr;
    size_t size;
    int stream;
} event_t;

typedef struct {
    event_t *ev;
    size_t n, cap;
    int max_stream;
} trace_t;

static int load(const char *path, trace_t *t) {
    size_t len = strlen(path);
    FILE *f;
    int piped = len > 3 && strcmp(path + len - 3, ".gz") == 0;
    if (piped) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
        f = popen(cmd, "r");
    } else {
        f = fopen(path, "r");
    }
    if (f == NULL) {
        fprintf(stderr, "alloc_replay: cannot open %s\n", path);
        return -1;
    }
    char line[256];
    size_t lineno = 0;
    memset(t, 0, sizeof *t);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char action[16];
        unsigned long long addr, size;
        int stream;
        if (sscanf(line, "%15[a-z],%llu,%llu,%d", action, &addr, &size, &stream) != 4) {
            if (lineno == 1) continue; /* header */
            fprintf(stderr, "alloc_replay: %s:%zu: malformed line: %s", path, lineno, line);
            continue;
        }
        if (t->n == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 4096;
            t->ev = realloc(t->ev, t->cap * sizeof *t->ev);
            if (t->ev == NULL) return -1;
        }
        int is_free = strcmp(action, "free") == 0;
        if (!is_free && strcmp(action, "alloc") != 0) continue;
        t->ev[t->n++] = (event_t){is_free, addr, (size_t)size, stream < 0 ? 0 : stream};
        if (stream > t->max_stream) t->max_stream = stream;
    }
    if (piped)
        pclose(f);
    else
        fclose(f);
    return 0;
}

/* trace address -> live pointer (open addressing) */
typedef struct {
    uint64_t *keys;
    void **vals;
    size_t mask;
} amap_t;

static size_t slot_of(amap_t *m, uint64_t k) {
    size_t i = (size_t)((k >> 9) * 0x9E3779B97F4A7C15ULL) & m->mask;
    while (m->keys[i] != 0 && m->keys[i] != k)
        i = (i + 1) & m->mask;
    return i;
}

static void amap_put(amap_t *m, uint64_t k, void *v) {
    size_t i = slot_of(m, k);
    m->keys[i] = k;
    m->vals[i] = v;
}

/* Remove with backward-shift deletion; returns the value or NULL. */
static void *amap_take(amap_t *m, uint64_t k) {
    size_t i = slot_of(m, k);
    if (m->keys[i] == 0) return NULL;
    void *v = m->vals[i];
    m->keys[i] = 0;
    for (size_t j = (i + 1) & m->mask; m->keys[j] != 0; j = (j + 1) & m->mask) {
        uint64_t kk = m->keys[j];
        void *vv = m->vals[j];
        m->keys[j] = 0;
        amap_put(m, kk, vv);
    }
    return v;
}

static int die(const char *what) {
    fprintf(stderr, "alloc_replay: %s failed: %s\n", what, xdev_last_error());
    exit(1);
}

/* One pass: returns ns per event (alloc or free). Leaves nothing allocated. */
static double replay(const trace_t *t, xdev_stream_t *streams, amap_t *m) {
    double t0 = now_ns();
    for (size_t i = 0; i < t->n; i++) {
        const event_t *e = &t->ev[i];
        if (e->is_free) {
            void *p = amap_take(m, e->addr);
            if (p != NULL && xdev_free(p) != XDEV_SUCCESS) die("xdev_free");
        } else {
            void *p = NULL;
            if (xdev_malloc_stream(&p, e->size, streams[e->stream]) != XDEV_SUCCESS)
                die("xdev_malloc_stream");
            void *old = amap_take(m, e->addr); /* alloc of a live address: drop the old one */
            if (old != NULL) xdev_free(old);
            if (p != NULL) amap_put(m, e->addr, p);
        }
    }
    double t1 = now_ns();
    for (size_t i = 0; i <= m->mask; i++) /* blocks the trace never freed */
        if (m->keys[i] != 0) {
            xdev_free(m->vals[i]);
            m->keys[i] = 0;
        }
    return (t1 - t0) / (double)t->n;
}

static void read_meta(const char *path, double *peak_alloc, double *peak_res) {
    char meta[4096];
    snprintf(meta, sizeof meta, "%s", path);
    char *dot = strstr(meta, ".csv");
    if (dot == NULL) return;
    strcpy(dot, ".meta");
    FILE *f = fopen(meta, "r");
    if (f == NULL) return;
    char k[64];
    double v;
    while (fscanf(f, "%63s %lf", k, &v) == 2) {
        if (strcmp(k, "peak_allocated") == 0) *peak_alloc = v;
        if (strcmp(k, "peak_reserved") == 0) *peak_res = v;
    }
    fclose(f);
}

int main(int argc, char **argv) {
    int warm_runs = 5, first = 1;
    if (argc > 2 && strcmp(argv[1], "--warm-runs") == 0) {
        warm_runs = atoi(argv[2]);
        first = 3;
    }
    if (first >= argc || warm_runs < 1) {
        fprintf(stderr, "usage: alloc_replay [--warm-runs N] TRACE.csv[.gz]...\n");
        return 2;
    }
    if (xdev_init() != XDEV_SUCCESS) die("xdev_init");
    xdev_device_t dev;
    xdev_get_device(&dev);
    char name[XDEV_DEVICE_NAME_MAX];
    xdev_device_format(dev, name, sizeof name);
    printf("device %s\n", name);
    printf("%-24s %8s %10s %10s %10s %10s %8s %8s %10s %7s %12s %12s\n", "trace", "events",
           "cold ns/op", "warm ns/op", "peak alloc", "peak resv", "overhead", "segments",
           "warm calls", "retries", "run resv MiB", "run overhead");
    for (int a = first; a < argc; a++) {
        trace_t t;
        if (load(argv[a], &t) != 0) return 1;
        xdev_stream_t *streams = calloc((size_t)t.max_stream + 1, sizeof *streams);
        xdev_stream_default(dev, &streams[0]);
        for (int s = 1; s <= t.max_stream; s++)
            if (xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &streams[s]) != XDEV_SUCCESS)
                die("xdev_stream_create");
        amap_t m;
        size_t cap = 1;
        while (cap < t.n * 2 + 16)
            cap <<= 1;
        m.keys = calloc(cap, sizeof *m.keys);
        m.vals = calloc(cap, sizeof *m.vals);
        m.mask = cap - 1;
        xdev_empty_cache();
        xdev_reset_peak_memory_stats(dev);
        xdev_reset_accumulated_memory_stats(dev);
        double cold = replay(&t, streams, &m);
        xdev_memory_stats_t st;
        xdev_memory_stats(dev, &st);
        double *warm = calloc((size_t)warm_runs, sizeof *warm);
        for (int r = 0; r < warm_runs; r++)
            warm[r] = replay(&t, streams, &m);
        xdev_memory_stats_t wst;
        xdev_memory_stats(dev, &wst);
        long long warm_backend = (wst.num_device_alloc + wst.num_device_free - st.num_device_alloc -
                                  st.num_device_free) /
                                 warm_runs;
        double warm_median = median(warm, warm_runs);
        double pa = (double)st.allocated_bytes[XDEV_STAT_ALL].peak / 1048576.0;
        double pr = (double)st.reserved_bytes[XDEV_STAT_ALL].peak / 1048576.0;
        double c10a = 0, c10r = 0;
        read_meta(argv[a], &c10a, &c10r);
        const char *base = strrchr(argv[a], '/');
        base = base ? base + 1 : argv[a];
        char c10res[32] = "-", c10ovh[32] = "-";
        if (c10r > 0) {
            snprintf(c10res, sizeof c10res, "%.0f", c10r / 1048576.0);
            snprintf(c10ovh, sizeof c10ovh, "%.0f MiB", (c10r - c10a) / 1048576.0);
        }
        printf("%-24s %8zu %10.1f %10.1f %7.0f MiB %7.0f MiB %4.0f MiB %8lld %10lld %7lld %12s "
               "%12s\n",
               base, t.n, cold, warm_median, pa, pr, pr - pa, (long long)st.num_device_alloc,
               warm_backend, (long long)st.num_alloc_retries, c10res, c10ovh);
        for (int s = 1; s <= t.max_stream; s++)
            xdev_stream_destroy(streams[s]);
        free(streams);
        free(warm);
        free(m.keys);
        free(m.vals);
        free(t.ev);
        xdev_empty_cache();
    }
    return 0;
}
