/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_stats.c - memory statistics with torch's keys, the convenience
 * getters, resets, and the human-readable memory summary table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "alloc/mempool.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "base/strbuf.h"

static xdev_status_t allocator_of(xdev_device_t device, xdev_device_allocator_t **out) {
    xdev_device_record_t *rec;
    xdev_status_t st = xdev_device_lookup(device, &rec);
    return st == XDEV_SUCCESS ? xdev_alloc_get(rec->be, rec->id.index, out) : st;
}

/* A device with several arenas (see alloc_internal.h) reports their sum.
 * Current values and the allocated/freed totals add up exactly; a peak is
 * the sum of each arena's peak, which equals the device's peak while one
 * arena is in use (every single-threaded program) and is otherwise an
 * upper bound: the arenas need not have peaked at the same moment. */
void xdev_alloc_stats_copy(xdev_device_allocator_t *da, xdev_memory_stats_t *out) {
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n = xdev_alloc_arenas(da, arenas);
    for (int i = 0; i < n; i++) {
        xdev_spin_lock(&arenas[i]->lock);
        xdev_caching_stash_flush(arenas[i]); /* inactive_split counts it once binned */
        if (i == 0)
            *out = arenas[i]->stats;
        else
            xdev_alloc_stats_add(out, &arenas[i]->stats);
        xdev_spin_unlock(&arenas[i]->lock);
    }
}

xdev_status_t xdev_memory_stats(xdev_device_t device, xdev_memory_stats_t *out) {
    XDEV_REQUIRE_ARG(out);
    xdev_device_allocator_t *da;
    XDEV_CHECK(allocator_of(device, &da));
    xdev_alloc_stats_copy(da, out);
    return XDEV_SUCCESS;
}

/* The per-pool metrics in torch's order, with their offsets in the struct. */
static const struct {
    const char *name;
    size_t offset;
} g_metrics[] = {
    {"allocation", offsetof(xdev_memory_stats_t, allocation)},
    {"segment", offsetof(xdev_memory_stats_t, segment)},
    {"active", offsetof(xdev_memory_stats_t, active)},
    {"inactive_split", offsetof(xdev_memory_stats_t, inactive_split)},
    {"allocated_bytes", offsetof(xdev_memory_stats_t, allocated_bytes)},
    {"reserved_bytes", offsetof(xdev_memory_stats_t, reserved_bytes)},
    {"active_bytes", offsetof(xdev_memory_stats_t, active_bytes)},
    {"inactive_split_bytes", offsetof(xdev_memory_stats_t, inactive_split_bytes)},
    {"requested_bytes", offsetof(xdev_memory_stats_t, requested_bytes)},
};
#define N_METRICS (sizeof g_metrics / sizeof g_metrics[0])
static const char *const g_pools[XDEV_STAT_POOLS] = {"all", "large_pool", "small_pool"};
static const char *const g_fields[4] = {"current", "peak", "allocated", "freed"};

static int64_t field(const xdev_stat_t *s, int f) {
    return f == 0 ? s->current : f == 1 ? s->peak : f == 2 ? s->allocated : s->freed;
}

xdev_status_t xdev_memory_stats_items(const xdev_memory_stats_t *stats,
                                      xdev_memory_stat_item_t *items, size_t cap, size_t *count) {
    XDEV_REQUIRE_ARG(stats);
    XDEV_REQUIRE_ARG(count);
    if (items == NULL && cap > 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'items' is NULL but cap is %zu",
                             cap);
    size_t n = 0;
#define PUT(fmt, ...)                                                                              \
    do {                                                                                           \
        if (n < cap) {                                                                             \
            snprintf(items[n].key, sizeof items[n].key, fmt, __VA_ARGS__);                         \
        }                                                                                          \
        n++;                                                                                       \
    } while (0)
#define VAL(v)                                                                                     \
    do {                                                                                           \
        if (n - 1 < cap) items[n - 1].value = (v);                                                 \
    } while (0)
    for (size_t m = 0; m < N_METRICS; m++) {
        const xdev_stat_t *s = (const xdev_stat_t *)((const char *)stats + g_metrics[m].offset);
        for (int p = 0; p < XDEV_STAT_POOLS; p++)
            for (int f = 0; f < 4; f++) {
                PUT("%s.%s.%s", g_metrics[m].name, g_pools[p], g_fields[f]);
                VAL(field(&s[p], f));
            }
    }
    const struct {
        const char *k;
        int64_t v;
    } scalars[] = {{"num_alloc_retries", stats->num_alloc_retries},
                   {"num_ooms", stats->num_ooms},
                   {"num_sync_all_streams", stats->num_sync_all_streams},
                   {"num_device_alloc", stats->num_device_alloc},
                   {"num_device_free", stats->num_device_free},
                   {"max_split_size", stats->max_split_size}};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        PUT("%s", scalars[i].k);
        VAL(scalars[i].v);
    }
    for (int f = 0; f < 4; f++) {
        PUT("oversize_allocations.%s", g_fields[f]);
        VAL(field(&stats->oversize_allocations, f));
    }
    for (int f = 0; f < 4; f++) {
        PUT("oversize_segments.%s", g_fields[f]);
        VAL(field(&stats->oversize_segments, f));
    }
    for (int f = 0; f < 4; f++) {
        PUT("managed_allocation.%s", g_fields[f]);
        VAL(field(&stats->managed_allocation, f));
    }
    for (int f = 0; f < 4; f++) {
        PUT("managed_bytes.%s", g_fields[f]);
        VAL(field(&stats->managed_bytes, f));
    }
#undef PUT
#undef VAL
    *count = n;
    return XDEV_SUCCESS;
}

static xdev_status_t getter(xdev_device_t device, size_t *out, size_t offset, bool peak) {
    xdev_device_allocator_t *da;
    xdev_status_t st = allocator_of(device, &da);
    if (st != XDEV_SUCCESS) return st;
    xdev_memory_stats_t all;
    xdev_alloc_stats_copy(da, &all);
    const xdev_stat_t *s = (const xdev_stat_t *)((const char *)&all + offset);
    *out = (size_t)(peak ? s[XDEV_STAT_ALL].peak : s[XDEV_STAT_ALL].current);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_allocated(xdev_device_t device, size_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(getter(device, out, offsetof(xdev_memory_stats_t, allocated_bytes), false));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_max_memory_allocated(xdev_device_t device, size_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(getter(device, out, offsetof(xdev_memory_stats_t, allocated_bytes), true));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_reserved(xdev_device_t device, size_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(getter(device, out, offsetof(xdev_memory_stats_t, reserved_bytes), false));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_max_memory_reserved(xdev_device_t device, size_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(getter(device, out, offsetof(xdev_memory_stats_t, reserved_bytes), true));
    return XDEV_SUCCESS;
}

/* Apply fn to every xdev_stat_t in the struct. */
static void for_each_stat(xdev_memory_stats_t *s, void (*fn)(xdev_stat_t *)) {
    for (size_t m = 0; m < N_METRICS; m++) {
        xdev_stat_t *st = (xdev_stat_t *)((char *)s + g_metrics[m].offset);
        for (int p = 0; p < XDEV_STAT_POOLS; p++)
            fn(&st[p]);
    }
    fn(&s->oversize_allocations);
    fn(&s->oversize_segments);
    fn(&s->managed_allocation);
    fn(&s->managed_bytes);
}

static void add_stat(xdev_stat_t *out, const xdev_stat_t *in) {
    out->current += in->current;
    out->peak += in->peak;
    out->allocated += in->allocated;
    out->freed += in->freed;
}

void xdev_alloc_stats_add(xdev_memory_stats_t *out, const xdev_memory_stats_t *in) {
    for (size_t m = 0; m < N_METRICS; m++) {
        xdev_stat_t *o = (xdev_stat_t *)((char *)out + g_metrics[m].offset);
        const xdev_stat_t *s = (const xdev_stat_t *)((const char *)in + g_metrics[m].offset);
        for (int p = 0; p < XDEV_STAT_POOLS; p++)
            add_stat(&o[p], &s[p]);
    }
    add_stat(&out->oversize_allocations, &in->oversize_allocations);
    add_stat(&out->oversize_segments, &in->oversize_segments);
    add_stat(&out->managed_allocation, &in->managed_allocation);
    add_stat(&out->managed_bytes, &in->managed_bytes);
    out->num_alloc_retries += in->num_alloc_retries;
    out->num_ooms += in->num_ooms;
    out->num_sync_all_streams += in->num_sync_all_streams;
    out->num_device_alloc += in->num_device_alloc;
    out->num_device_free += in->num_device_free;
}

static void reset_peak(xdev_stat_t *s) {
    s->peak = s->current;
}

static void reset_accumulated(xdev_stat_t *s) {
    s->allocated = 0;
    s->freed = 0;
}

xdev_status_t xdev_reset_peak_memory_stats(xdev_device_t device) {
    xdev_device_allocator_t *da, *arenas[XDEV_MAX_ARENAS];
    XDEV_CHECK(allocator_of(device, &da));
    int n = xdev_alloc_arenas(da, arenas);
    for (int i = 0; i < n; i++) {
        xdev_spin_lock(&arenas[i]->lock);
        xdev_caching_stash_flush(arenas[i]); /* its free counted before the peaks reset */
        for_each_stat(&arenas[i]->stats, reset_peak);
        xdev_spin_unlock(&arenas[i]->lock);
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_reset_accumulated_memory_stats(xdev_device_t device) {
    xdev_device_allocator_t *da, *arenas[XDEV_MAX_ARENAS];
    XDEV_CHECK(allocator_of(device, &da));
    int n = xdev_alloc_arenas(da, arenas);
    for (int i = 0; i < n; i++) {
        xdev_memory_stats_t *s = &arenas[i]->stats;
        xdev_spin_lock(&arenas[i]->lock);
        xdev_caching_stash_flush(arenas[i]); /* its free counted before the totals reset */
        for_each_stat(s, reset_accumulated);
        s->num_alloc_retries = 0;
        s->num_ooms = 0;
        s->num_sync_all_streams = 0;
        s->num_device_alloc = 0;
        s->num_device_free = 0;
        xdev_spin_unlock(&arenas[i]->lock);
    }
    return XDEV_SUCCESS;
}

/* ------------------------------------------------ summary */

/* torch's size format: an integer below 10240 with its unit. */
static void fmt_size(char *out, size_t len, int64_t v) {
    static const char *const units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    int64_t a = v < 0 ? -v : v;
    while (a >= 10240 && u < 5) {
        a /= 1024;
        v /= 1024;
        u++;
    }
    snprintf(out, len, "%7lld %s", (long long)v, units[u]);
}

static void fmt_count(char *out, size_t len, int64_t v) {
    snprintf(out, len, "%11lld", (long long)v);
}

static void summary_rows(xdev_strbuf_t *sb, const char *title, const xdev_stat_t *s, bool bytes,
                         bool abbreviated) {
    static const char *const sub[3] = {"", "      from large pool", "      from small pool"};
    for (int p = 0; p < (abbreviated ? 1 : 3); p++) {
        char c[4][24];
        for (int f = 0; f < 4; f++) {
            if (bytes)
                fmt_size(c[f], sizeof c[f], field(&s[p], f));
            else
                fmt_count(c[f], sizeof c[f], field(&s[p], f));
        }
        xdev_strbuf_printf(sb, "| %-25s | %s | %s | %s | %s |\n", p == 0 ? title : sub[p], c[0],
                           c[1], c[2], c[3]);
    }
    xdev_strbuf_printf(
        sb, "|%s|\n",
        "---------------------------------------------------------------------------------");
}

void xdev_alloc_summary_write(xdev_strbuf_t *sb, const xdev_device_allocator_t *da,
                              const xdev_memory_stats_t *stats, bool abbreviated) {
    const xdev_memory_stats_t *s = stats;
    const char *rule =
        "=================================================================================";
    const char *thin =
        "---------------------------------------------------------------------------------";
    xdev_strbuf_printf(sb, "|%s|\n", rule);
    char head[80];
    snprintf(head, sizeof head, "xdev memory summary, device %s:%d", da->be->name, da->index);
    xdev_strbuf_printf(sb, "| %-79s |\n", head);
    xdev_strbuf_printf(sb, "|%s|\n", thin);
    char line[96];
    snprintf(line, sizeof line,
             "OOMs: %lld   allocation retries: %lld   device allocs: %lld   frees: %lld",
             (long long)s->num_ooms, (long long)s->num_alloc_retries,
             (long long)s->num_device_alloc, (long long)s->num_device_free);
    xdev_strbuf_printf(sb, "| %-79s |\n", line);
    xdev_strbuf_printf(sb, "|%s|\n", rule);
    xdev_strbuf_printf(sb, "| %-25s | %11s | %11s | %11s | %11s |\n", "Metric", "Cur Usage",
                       "Peak Usage", "Tot Alloc", "Tot Freed");
    xdev_strbuf_printf(sb, "|%s|\n", thin);
    summary_rows(sb, "Allocated memory", s->allocated_bytes, true, abbreviated);
    summary_rows(sb, "Active memory", s->active_bytes, true, abbreviated);
    summary_rows(sb, "Requested memory", s->requested_bytes, true, abbreviated);
    summary_rows(sb, "Reserved memory", s->reserved_bytes, true, abbreviated);
    summary_rows(sb, "Non-releasable memory", s->inactive_split_bytes, true, abbreviated);
    summary_rows(sb, "Allocations", s->allocation, false, abbreviated);
    summary_rows(sb, "Active allocs", s->active, false, abbreviated);
    summary_rows(sb, "Reserved segments", s->segment, false, abbreviated);
    summary_rows(sb, "Non-releasable allocs", s->inactive_split, false, abbreviated);
    summary_rows(sb, "Oversize allocations", &s->oversize_allocations, false, true);
    summary_rows(sb, "Oversize segments", &s->oversize_segments, false, true);
    if (s->managed_allocation.current != 0 || s->managed_allocation.allocated != 0) {
        summary_rows(sb, "Managed memory", &s->managed_bytes, true, true);
        summary_rows(sb, "Managed allocations", &s->managed_allocation, false, true);
    }
    xdev_strbuf_printf(sb, "|%s|\n", rule);
}

/* ------------------------------------------------ pinned host memory */

static void put(xdev_memory_stat_item_t *items, size_t cap, size_t *n, const char *key,
                int64_t value) {
    if (*n < cap) {
        snprintf(items[*n].key, sizeof items[*n].key, "%s", key);
        items[*n].value = value;
    }
    (*n)++;
}

size_t xdev_host_stats_items(const xdev_host_stats_full_t *s, xdev_memory_stat_item_t *items,
                             size_t cap) {
    const struct {
        const char *name;
        const xdev_stat_t *stat;
    } metrics[] = {{"allocation", &s->pub.allocation},
                   {"segment", &s->segment},
                   {"allocated_bytes", &s->pub.allocated_bytes},
                   {"reserved_bytes", &s->pub.reserved_bytes},
                   {"requested_bytes", &s->pub.requested_bytes}};
    size_t n = 0;
    char key[48];
    for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++)
        for (int f = 0; f < 4; f++) {
            snprintf(key, sizeof key, "%s.%s", metrics[m].name, g_fields[f]);
            put(items, cap, &n, key, field(metrics[m].stat, f));
        }
    const struct {
        const char *name;
        const xdev_duration_stat_t *d;
    } durations[] = {{"host_alloc_time", &s->alloc_time}, {"host_free_time", &s->free_time}};
    for (size_t k = 0; k < 2; k++) {
        const xdev_duration_stat_t *d = durations[k].d;
        const int64_t v[5] = {d->total, d->max, d->min, d->count,
                              d->count ? d->total / d->count : 0};
        static const char *const sub[5] = {"total", "max", "min", "count", "avg"};
        for (int f = 0; f < 5; f++) {
            snprintf(key, sizeof key, "%s.%s", durations[k].name, sub[f]);
            put(items, cap, &n, key, v[f]);
        }
    }
    put(items, cap, &n, "num_host_alloc", s->pub.num_host_alloc);
    put(items, cap, &n, "num_host_free", s->pub.num_host_free);
    return n;
}

void xdev_host_summary_write(xdev_strbuf_t *sb, const xdev_host_stats_full_t *s) {
    const char *rule =
        "=================================================================================";
    xdev_strbuf_printf(sb, "| %-79s |\n", "Pinned host memory (xdev_host_alloc, every device)");
    char line[96];
    snprintf(line, sizeof line,
             "host allocs: %lld   frees: %lld   alloc time: %lld us   free time: %lld us",
             (long long)s->pub.num_host_alloc, (long long)s->pub.num_host_free,
             (long long)s->alloc_time.total, (long long)s->free_time.total);
    xdev_strbuf_printf(sb, "| %-79s |\n", line);
    xdev_strbuf_printf(sb, "|%s|\n", rule);
    summary_rows(sb, "Allocated host memory", &s->pub.allocated_bytes, true, true);
    summary_rows(sb, "Requested host memory", &s->pub.requested_bytes, true, true);
    summary_rows(sb, "Reserved host memory", &s->pub.reserved_bytes, true, true);
    summary_rows(sb, "Host allocations", &s->pub.allocation, false, true);
    summary_rows(sb, "Host segments", &s->segment, false, true);
    xdev_strbuf_printf(sb, "|%s|\n", rule);
}

xdev_status_t xdev_memory_summary(xdev_device_t device, bool abbreviated, char **out) {
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_device_allocator_t *da;
    XDEV_CHECK(xdev_alloc_get(rec->be, rec->id.index, &da));
    xdev_memory_stats_t s;
    xdev_alloc_stats_copy(da, &s);
    xdev_strbuf_t sb = {0};
    xdev_alloc_summary_write(&sb, da, &s, abbreviated);
    xdev_mempool_summary(&sb, da);
    xdev_host_stats_full_t h;
    xdev_host_stats_full(&h);
    xdev_host_summary_write(&sb, &h);
    if (sb.failed) {
        free(sb.buf);
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for the summary");
    }
    *out = sb.buf;
    return XDEV_SUCCESS;
}
