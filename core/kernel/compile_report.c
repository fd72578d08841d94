/* SPDX-License-Identifier: Apache-2.0 */
/* compile_report.c - what a run-time compile did, told three ways: the
 * thread's last result for xdev_compile_last_info, a line under XDEV_LOG=1
 * and, while tracing, a "compile" span on the thread's host track. A user
 * could not otherwise tell a cache hit (no compiler ran) from a miss, nor
 * see what a first run's compile cost. compile.c calls xdev_kcompile_report
 * once per xdev_module_compile that reached its cache lookup. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "base/error_internal.h"
#include "base/thread_heap.h"
#include "kernel/kernel_internal.h"
#include "runtime/trace_probe.h"

/* The thread's last compile, on the heap (made at its first compile, freed
 * at its exit): libxdev's static TLS stays small (ctest tls.static_size). */
static xdev_thread_heap_t g_last = XDEV_THREAD_HEAP_INIT(sizeof(xdev_compile_info_t), NULL);
static _Thread_local void *tls_last; /* this thread's xdev_compile_info_t, or NULL */

/* NULL without memory: the compile then goes unrecorded (reads as none). */
static xdev_compile_info_t *last_for_write(void) {
    return xdev_thread_heap_get(&g_last, &tls_last);
}

uint64_t xdev_kcompile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void xdev_kcompile_forget(void) {
    xdev_compile_info_t *last = tls_last;
    if (last == NULL) return; /* nothing recorded yet: reads as none */
    memset(last, 0, sizeof *last);
    last->size = sizeof *last;
}

static const char *cache_word(xdev_compile_cache_t c) {
    switch (c) {
    case XDEV_COMPILE_CACHE_HIT:
        return "hit";
    case XDEV_COMPILE_CACHE_MISS:
        return "miss";
    case XDEV_COMPILE_CACHE_OFF:
        return "off";
    default:
        return "none";
    }
}

void xdev_kcompile_report(const char *name, const char *backend, int index,
                          xdev_compile_cache_t cache, bool stored, xdev_status_t status,
                          uint64_t begin_ns, const char *key) {
    uint64_t end_ns = xdev_kcompile_now();
    double ms = (double)(end_ns - begin_ns) / 1e6;
    xdev_compile_info_t *last = last_for_write();
    if (last != NULL) {
        *last = (xdev_compile_info_t){.size = sizeof *last,
                                      .cache = cache,
                                      .stored = stored,
                                      .status = status,
                                      .milliseconds = ms};
        snprintf(last->key, sizeof last->key, "%s", key);
    }
    char dev[32];
    snprintf(dev, sizeof dev, "%s:%d", backend, index);
    const char *how = cache == XDEV_COMPILE_CACHE_HIT ? "cache hit, no compiler ran"
                      : cache == XDEV_COMPILE_CACHE_OFF
                          ? "cache off (XDEV_KERNEL_CACHE=0), compiled"
                      : stored ? "cache miss, compiled and stored"
                               : "cache miss, compiled (not stored)";
    if (xdev_init_log_enabled()) { /* through the one log channel: whole lines */
        char line[512];
        snprintf(line, sizeof line, "compile %s for %s: %s, %.2f ms%s (key %.16s)", name, dev, how,
                 ms, status == XDEV_SUCCESS ? "" : ", failed (xdev_compile_log says why)",
                 key[0] ? key : "none");
        xdev_log_line(line);
    }
    if (XDEV_UNLIKELY(xdev_tracer_active())) {
        char label[96], args[128];
        snprintf(label, sizeof label, "compile %s (%s)", name, cache_word(cache));
        snprintf(args, sizeof args,
                 "\"cache\":\"%s\",\"stored\":%s,\"ms\":%.3f,\"device\":\"%s\",\"ok\":%s",
                 cache_word(cache), stored ? "true" : "false", ms, dev,
                 status == XDEV_SUCCESS ? "true" : "false");
        xdev_tracer_host_span("compile", label, begin_ns, end_ns, args);
    }
}

xdev_status_t xdev_compile_last_info(xdev_compile_info_t *info) {
    XDEV_REQUIRE_ARG(info);
    if (info->size < sizeof *info)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "info->size is %zu, not sizeof(xdev_compile_info_t) (%zu)", info->size,
                             sizeof *info);
    size_t size = info->size;
    const xdev_compile_info_t *last = tls_last;
    if (last != NULL)
        *info = *last;
    else
        memset(info, 0, sizeof *info); /* no compile on this thread yet */
    info->size = size;
    return XDEV_SUCCESS;
}
