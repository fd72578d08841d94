/* SPDX-License-Identifier: Apache-2.0 */
/* bench/replay_harness.h - the one allocation-trace replay harness. Every
 * allocator compared (xdev's policies, cudaMallocAsync through xdev's
 * backend:async, PyTorch's c10 from C++) is driven by this same code: the
 * same trace reader, the same dense stream mapping, the same slots (trace
 * addresses resolved once, at load), the same loop and clock; an allocator
 * only supplies the calls below.
 * Header-only, C11 and C++ alike (bench/alloc_replay.c and
 * bench/gpu/c10_alloc_bench.cpp include it); bench/replay_compare.py runs
 * each allocator x trace in a fresh process and prints the comparison.
 *
 * Trace files: `action,addr,size,stream` lines, gzip'ed or not (as PyTorch
 * workloads were captured: ../shared/traces, bench/traces). `action` is
 * alloc or free; `stream` is any 64-bit value (PyTorch writes the
 * cudaStream_t), mapped densely in order of appearance, 0 staying the
 * default stream. A header line is allowed first. Anything else is an
 * error naming file:line. A free of an address never allocated is skipped
 * (traces start mid-run), an alloc of a live address frees the old block. */
#ifndef XDEV_BENCH_REPLAY_HARNESS_H
#define XDEV_BENCH_REPLAY_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define REPLAY_MAX_STREAMS 64

#define REPLAY_NONE UINT32_MAX

/* An event with its trace address resolved at load (replay_resolve): the
 * pass indexes an array of live pointers by `obj`, with no address map in
 * the timed loop. */
typedef struct replay_event {
    uint64_t addr; /* the trace's (read at load; not used by the pass) */
    size_t size;
    uint32_t obj;    /* the slot this alloc fills or this free empties; REPLAY_NONE: a free
                        of an address never allocated (traces start mid-run), skipped */
    uint32_t old;    /* an alloc at a live address: that block's slot, released after the
                        allocation (REPLAY_NONE: none) */
    uint32_t stream; /* dense index; 0 = the default stream */
    uint8_t is_free;
} replay_event_t;

typedef struct replay_trace {
    replay_event_t *ev;
    size_t n, cap;
    uint32_t nslots;                        /* the most blocks live at once (slots) */
    uint32_t nstreams;                      /* distinct streams, the default included */
    int64_t stream_ids[REPLAY_MAX_STREAMS]; /* the file's value of each index */
    const char *name;                       /* base name of the file */
} replay_trace_t;

/* What an allocator reports after a pass. */
typedef struct replay_counters {
    int64_t allocated_peak, reserved_peak; /* bytes, since the last reset */
    int64_t backend_calls;                 /* device mallocs + frees, cumulative */
    int64_t retries;                       /* allocations that freed the cache and retried */
} replay_counters_t;

/* An allocator under test. alloc returns NULL only on failure (the replay
 * stops there: a trace that fit in the captured run must fit here). */
typedef struct replay_allocator {
    const char *name;
    void *ctx;
    int (*make_streams)(void *ctx, uint32_t n); /* index 0 = default; 0 = ok */
    void *(*alloc)(void *ctx, size_t size, uint32_t stream);
    void (*release)(void *ctx, void *p);
    void (*reset)(void *ctx); /* empty the cache, restart peaks and counters */
    void (*counters)(void *ctx, replay_counters_t *out);
} replay_allocator_t;

typedef struct replay_result {
    double cold_ns, warm_ns;              /* per event: the first pass, the median warm pass */
    double peak_alloc_mib, peak_resv_mib; /* the cold (first) pass's peaks */
    double run_alloc_mib, run_resv_mib;   /* the peaks over the whole run, warm passes too */
    int grew_pass;                        /* first warm pass (1..) that raised the reserved
                                             peak above the cold pass's, 0: none */
    long long cold_calls, warm_calls;     /* backend calls: first pass, all warm passes */
    long long last_calls;                 /* backend calls of the last warm pass */
    long long retries;
} replay_result_t;

/* A good spread for trace addresses (512-byte aligned, blocks of one
 * segment a power of two apart): the multiply's high bits. */
static inline size_t replay_hash(uint64_t addr, unsigned bits) {
    return (size_t)(((addr >> 9) * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/* Give each event its slot: allocs take a free slot (the lowest freed last
 * first), frees find the slot their address holds. Done once at load, with
 * an address map outside the timed passes: the map used to run inside them,
 * and its probes (a multiplicative hash masked to its low bits, so
 * addresses a power of two apart shared a chain) cost ~800 instructions per
 * event on gpt2_train, twice the allocator's own. 0, or -1 without memory. */
static inline int replay_resolve(replay_trace_t *t) {
    unsigned bits = 4;
    while (((size_t)1 << bits) < t->n * 2 + 16)
        bits++;
    size_t cap = (size_t)1 << bits, mask = cap - 1;
    uint64_t *keys = (uint64_t *)calloc(cap, sizeof *keys); /* 0 = empty */
    uint32_t *vals = (uint32_t *)calloc(cap, sizeof *vals);
    uint32_t *spare = (uint32_t *)malloc((t->n + 1) * sizeof *spare); /* freed slots, a stack */
    if (keys == NULL || vals == NULL || spare == NULL) {
        free(keys);
        free(vals);
        free(spare);
        return -1;
    }
    size_t nspare = 0;
    uint32_t nslots = 0;
    for (size_t i = 0; i < t->n; i++) {
        replay_event_t *e = &t->ev[i];
        uint64_t k = e->addr + 1; /* address 0 is a key too */
        size_t at = replay_hash(k, bits);
        while (keys[at] != 0 && keys[at] != k)
            at = (at + 1) & mask;
        uint32_t held = keys[at] != 0 ? vals[at] : REPLAY_NONE;
        e->obj = e->old = REPLAY_NONE;
        if (e->is_free) {
            e->obj = held;
        } else {
            e->obj = nspare > 0 ? spare[--nspare] : nslots++;
            e->old = held;
        }
        if (held != REPLAY_NONE) spare[nspare++] = held;
        if (!e->is_free) {
            keys[at] = k;
            vals[at] = e->obj;
            continue;
        }
        if (held == REPLAY_NONE) continue;
        /* remove k: backward-shift the chain after it */
        keys[at] = 0;
        for (size_t j = (at + 1) & mask; keys[j] != 0; j = (j + 1) & mask) {
            size_t home = replay_hash(keys[j], bits);
            /* j's key may move to the hole when its home is not in (at, j] */
            if (((j - home) & mask) >= ((j - at) & mask)) {
                keys[at] = keys[j];
                vals[at] = vals[j];
                keys[j] = 0;
                at = j;
            }
        }
    }
    t->nslots = nslots;
    free(keys);
    free(vals);
    free(spare);
    return 0;
}

/* Load path into t; 0, or -1 with the reason (file:line) in err. */
static inline int replay_load(const char *path, replay_trace_t *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    const char *slash = strrchr(path, '/');
    t->name = slash ? slash + 1 : path;
    t->nstreams = 1; /* index 0: stream value 0, the default stream */
    size_t len = strlen(path);
    int gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
    FILE *f = NULL;
    if (gz) {
        if (strchr(path, '\'') != NULL) {
            snprintf(err, errlen, "%s: a quote in the path", path);
            return -1;
        }
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
        f = popen(cmd, "r");
    } else {
        f = fopen(path, "r");
    }
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    size_t lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        size_t l = strlen(line);
        if (l > 0 && line[l - 1] == '\n') line[--l] = '\0';
        if (l > 0 && line[l - 1] == '\r') line[--l] = '\0';
        if (lineno == 1 && strcmp(line, "action,addr,size,stream") == 0) continue;
        char *p = line, *end = NULL;
        uint8_t is_free;
        if (strncmp(p, "alloc,", 6) == 0) {
            is_free = 0;
            p += 6;
        } else if (strncmp(p, "free,", 5) == 0) {
            is_free = 1;
            p += 5;
        } else {
            snprintf(err, errlen, "%s:%zu: expected alloc,... or free,...: '%.60s'", path, lineno,
                     line);
            rc = -1;
            break;
        }
        errno = 0;
        unsigned long long addr = strtoull(p, &end, 10);
        if (end == p || *end != ',' || errno != 0) {
            snprintf(err, errlen, "%s:%zu: bad address: '%.60s'", path, lineno, line);
            rc = -1;
            break;
        }
        p = end + 1;
        unsigned long long size = strtoull(p, &end, 10);
        if (end == p || *end != ',' || errno != 0 || *p == '-') {
            snprintf(err, errlen, "%s:%zu: bad size: '%.60s'", path, lineno, line);
            rc = -1;
            break;
        }
        p = end + 1;
        long long sid = 0;
        if (*p == '-') {
            sid = strtoll(p, &end, 10);
        } else {
            sid = (long long)strtoull(p, &end, 10); /* a handle above 2^63 keeps its bits */
        }
        if (end == p || *end != '\0' || errno != 0) {
            snprintf(err, errlen, "%s:%zu: bad stream: '%.60s'", path, lineno, line);
            rc = -1;
            break;
        }
        uint32_t s = 0;
        if (sid != 0) {
            for (s = 1; s < t->nstreams && t->stream_ids[s] != sid; s++) {
            }
            if (s == t->nstreams) {
                if (t->nstreams == REPLAY_MAX_STREAMS) {
                    snprintf(err, errlen, "%s:%zu: more than %d streams", path, lineno,
                             REPLAY_MAX_STREAMS);
                    rc = -1;
                    break;
                }
                t->stream_ids[t->nstreams++] = sid;
            }
        }
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 4096;
            replay_event_t *ev = (replay_event_t *)realloc(t->ev, cap * sizeof *ev);
            if (ev == NULL) {
                snprintf(err, errlen, "%s: out of host memory", path);
                rc = -1;
                break;
            }
            t->ev = ev;
            t->cap = cap;
        }
        replay_event_t e;
        e.addr = addr;
        e.size = (size_t)size;
        e.stream = s;
        e.is_free = is_free;
        t->ev[t->n++] = e;
    }
    int closed = gz ? pclose(f) : fclose(f);
    if (rc == 0 && gz && closed != 0) {
        snprintf(err, errlen, "%s: gzip -dc failed (a damaged file?)", path);
        rc = -1;
    }
    if (rc == 0 && t->n == 0) {
        snprintf(err, errlen, "%s: no events", path);
        rc = -1;
    }
    if (rc == 0 && (t->n >= REPLAY_NONE || replay_resolve(t) != 0)) {
        snprintf(err, errlen, "%s: out of host memory", path);
        rc = -1;
    }
    if (rc != 0) free(t->ev);
    return rc;
}

/* One pass over the slots (replay_resolve); ns per event, or a negative
 * value when an allocation failed. Leaves nothing allocated: what is live at
 * the end is released in slot order, untimed. */
static inline double replay_pass(const replay_allocator_t *a, const replay_trace_t *t,
                                 void **live) {
    double t0 = now_ns();
    for (size_t i = 0; i < t->n; i++) {
        const replay_event_t *e = &t->ev[i];
        if (e->is_free) {
            if (e->obj == REPLAY_NONE) continue;
            void *p = live[e->obj];
            live[e->obj] = NULL;
            if (p != NULL) a->release(a->ctx, p);
        } else {
            void *p = a->alloc(a->ctx, e->size, e->stream);
            if (p == NULL && e->size > 0) return -1.0;
            if (e->old != REPLAY_NONE) {
                void *old = live[e->old];
                live[e->old] = NULL;
                if (old != NULL) a->release(a->ctx, old);
            }
            live[e->obj] = p;
        }
    }
    double t1 = now_ns();
    for (uint32_t i = 0; i < t->nslots; i++)
        if (live[i] != NULL) {
            a->release(a->ctx, live[i]);
            live[i] = NULL;
        }
    return (t1 - t0) / (double)t->n;
}

/* Cold pass from an empty cache, then warm_runs passes over the warm cache.
 * Peaks are the cold pass's (what a real run sees). 0, or -1 with err. */
static inline int replay_run(const replay_allocator_t *a, const replay_trace_t *t, int warm_runs,
                             replay_result_t *r, char *err, size_t errlen) {
    if (a->make_streams(a->ctx, t->nstreams) != 0) {
        snprintf(err, errlen, "%s: cannot make %u streams", a->name, t->nstreams);
        return -1;
    }
    void **live = (void **)calloc((size_t)t->nslots + 1, sizeof *live);
    double *warm = (double *)calloc((size_t)warm_runs, sizeof *warm);
    if (live == NULL || warm == NULL) {
        free(live);
        free(warm);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    a->reset(a->ctx);
    replay_counters_t c0, c1, c2, before_last;
    a->counters(a->ctx, &c0);
    r->cold_ns = replay_pass(a, t, live);
    a->counters(a->ctx, &c1);
    before_last = c1;
    int rc = 0;
    r->grew_pass = 0;
    for (int i = 0; i < warm_runs && rc == 0 && r->cold_ns >= 0; i++) {
        if (i == warm_runs - 1) a->counters(a->ctx, &before_last);
        if ((warm[i] = replay_pass(a, t, live)) < 0) rc = -1;
        replay_counters_t after;
        a->counters(a->ctx, &after);
        if (r->grew_pass == 0 && after.reserved_peak > c1.reserved_peak) r->grew_pass = i + 1;
    }
    if (r->cold_ns < 0 || rc != 0) {
        snprintf(err, errlen, "%s: an allocation failed replaying %s", a->name, t->name);
        rc = -1;
    } else {
        a->counters(a->ctx, &c2);
        r->warm_ns = median(warm, warm_runs);
        r->peak_alloc_mib = (double)c1.allocated_peak / 1048576.0;
        r->peak_resv_mib = (double)c1.reserved_peak / 1048576.0;
        r->run_alloc_mib = (double)c2.allocated_peak / 1048576.0;
        r->run_resv_mib = (double)c2.reserved_peak / 1048576.0;
        r->cold_calls = (long long)(c1.backend_calls - c0.backend_calls);
        r->warm_calls = (long long)(c2.backend_calls - c1.backend_calls);
        r->last_calls = (long long)(c2.backend_calls - before_last.backend_calls);
        r->retries = (long long)(c2.retries - c0.retries);
    }
    free(warm);
    free(live);
    return rc;
}

/* The line bench/replay_compare.py reads (tab-separated, after "replay"). */
static inline void replay_print(const char *allocator, const replay_trace_t *t,
                                const replay_result_t *r) {
    printf(
        "replay\t%s\t%s\t%zu\t%u\t%.1f\t%.1f\t%.1f\t%.1f\t%lld\t%lld\t%lld\t%lld\t%.1f\t%.1f\t%d\n",
        allocator, t->name, t->n, t->nstreams, r->cold_ns, r->warm_ns, r->peak_alloc_mib,
        r->peak_resv_mib, r->cold_calls, r->warm_calls, r->retries, r->last_calls, r->run_alloc_mib,
        r->run_resv_mib, r->grew_pass);
    fflush(stdout);
}

#endif
