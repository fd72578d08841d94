/* alloc_snapshot.c - memory_snapshot as JSON (segments, blocks, states) and
 * the optional history ring of alloc/free/segment events per device. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory/alloc_internal.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "runtime/tracer.h"
#include "base/strbuf.h"

/* The stream tracer's device counters: this arena's figures (lock held)
 * plus the other arenas' as they last traced them. */
static void feed_tracer(xdev_device_allocator_t *da, const char *action, uintptr_t addr,
                        size_t size, const void *stream, const char *tag) {
    int64_t allocated = da->stats.allocated_bytes[XDEV_STAT_ALL].current;
    int64_t reserved = da->stats.reserved_bytes[XDEV_STAT_ALL].current;
    atomic_store_explicit(&da->traced_allocated, allocated, memory_order_relaxed);
    atomic_store_explicit(&da->traced_reserved, reserved, memory_order_relaxed);
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n = xdev_alloc_arenas(da->primary, arenas);
    for (int i = 0; i < n; i++)
        if (arenas[i] != da) {
            allocated += atomic_load_explicit(&arenas[i]->traced_allocated, memory_order_relaxed);
            reserved += atomic_load_explicit(&arenas[i]->traced_reserved, memory_order_relaxed);
        }
    xdev_tracer_memory(da->rec, stream, action, addr, size, tag, allocated, reserved);
}

void xdev_trace_record(xdev_device_allocator_t *da, xdev_memory_trace_action_t action,
                       uintptr_t addr, size_t size, const void *stream, const char *tag) {
    if (XDEV_UNLIKELY(xdev_tracer_active()))
        feed_tracer(da, xdev_trace_action_name(action), addr, size, stream, tag);
    xdev_device_allocator_t *p = da->primary;
    if (!atomic_load_explicit(&p->recording, memory_order_relaxed)) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    xdev_spin_lock(&p->trace_lock);
    if (p->trace != NULL) {
        xdev_memory_trace_entry_t *e = &p->trace[p->trace_next];
        e->action = action;
        e->addr = addr;
        e->size = size;
        e->stream = stream;
        e->tag = tag;
        e->time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        p->trace_next = (p->trace_next + 1) % p->trace_cap;
        if (p->trace_len < p->trace_cap) p->trace_len++;
    }
    xdev_spin_unlock(&p->trace_lock);
}

xdev_status_t xdev_memory_record_history(xdev_device_t device, bool enabled, size_t max_entries) {
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_device_allocator_t *da;
    XDEV_CHECK(xdev_alloc_get(rec->be, rec->id.index, &da));
    if (max_entries == 0) max_entries = XDEV_TRACE_RING_DEFAULT;
    if (max_entries > ((size_t)1 << 26))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "max_entries %zu is above 2^26",
                             max_entries);
    xdev_memory_trace_entry_t *ring = NULL;
    if (enabled) {
        ring = calloc(max_entries, sizeof *ring);
        if (ring == NULL)
            return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for %zu history entries",
                                 max_entries);
    }
    xdev_spin_lock(&da->trace_lock);
    xdev_memory_trace_entry_t *old = da->trace;
    da->trace = ring;
    da->trace_cap = enabled ? max_entries : 0;
    da->trace_len = 0;
    da->trace_next = 0;
    atomic_store_explicit(&da->recording, enabled, memory_order_relaxed);
    xdev_spin_unlock(&da->trace_lock);
    free(old);
    return XDEV_SUCCESS;
}

const char *xdev_block_state_name(int state) {
    switch (state) {
    case XDEV_BLOCK_ACTIVE:
        return "active_allocated";
    case XDEV_BLOCK_PENDING_FREE:
        return "active_pending_free";
    default:
        return "inactive";
    }
}

const char *xdev_trace_action_name(xdev_memory_trace_action_t a) {
    switch (a) {
    case XDEV_TRACE_ALLOC:
        return "alloc";
    case XDEV_TRACE_FREE_REQUESTED:
        return "free_requested";
    case XDEV_TRACE_FREE_COMPLETED:
        return "free_completed";
    case XDEV_TRACE_SEGMENT_ALLOC:
        return "segment_alloc";
    case XDEV_TRACE_SEGMENT_FREE:
        return "segment_free";
    case XDEV_TRACE_OOM:
        return "oom";
    }
    return "unknown";
}

/* ,"tag":"..." when there is one. */
static void tag_json(xdev_strbuf_t *sb, const char *tag) {
    if (tag == NULL) return;
    xdev_strbuf_printf(sb, ",\"tag\":");
    xdev_strbuf_json_string(sb, tag);
}

static void block_json(xdev_strbuf_t *sb, const xdev_block_t *b, bool first) {
    xdev_strbuf_printf(
        sb, "%s{\"address\":%llu,\"size\":%zu,\"requested_size\":%zu,\"state\":\"%s\"",
        first ? "" : ",", (unsigned long long)b->addr, b->size,
        b->state == XDEV_BLOCK_FREE ? 0 : b->requested, xdev_block_state_name(b->state));
    if (b->state != XDEV_BLOCK_FREE) tag_json(sb, b->tag);
    xdev_strbuf_printf(sb, "}");
}

void xdev_segment_usage(const xdev_block_t *first, bool single, size_t *allocated, size_t *active,
                        size_t *requested) {
    *allocated = *active = *requested = 0;
    for (const xdev_block_t *b = first; b != NULL; b = single ? NULL : b->next) {
        if (b->state == XDEV_BLOCK_ACTIVE) *allocated += b->size;
        if (b->state != XDEV_BLOCK_FREE) {
            *active += b->size;
            *requested += b->requested;
        }
    }
}

void xdev_alloc_each_segment(xdev_device_allocator_t *primary, xdev_segment_fn fn, void *ctx) {
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n = xdev_alloc_lock_all(primary, arenas); /* one moment for the whole device */
    for (int i = 0; i < n; i++) {
        xdev_caching_stash_flush(arenas[i]); /* its blocks as the bins have them */
        const xdev_device_allocator_t *da = arenas[i];
        for (const xdev_segment_t *s = da->segments; s != NULL; s = s->next)
            fn(ctx, da, s->base, s->size, s->pool_kind, s->pool->native, s->first, s);
        for (const xdev_block_t *b = da->direct_blocks; b != NULL; b = b->next)
            fn(ctx, da, b->addr, b->size,
               b->size <= XDEV_SMALL_SIZE ? XDEV_POOL_SMALL : XDEV_POOL_LARGE,
               b->stream ? b->stream->native : NULL, b, NULL);
    }
    xdev_alloc_unlock_all(arenas, n);
}

const xdev_memory_trace_entry_t *xdev_trace_entry(const xdev_device_allocator_t *da, size_t k) {
    size_t start = (da->trace_next + da->trace_cap - da->trace_len) % da->trace_cap;
    return &da->trace[(start + k) % da->trace_cap];
}

typedef struct json_ctx {
    xdev_strbuf_t *sb;
    bool first_seg;
} json_ctx_t;

/* One segment (xdev_segment_fn). */
static void segment_json(void *arg, const xdev_device_allocator_t *da, uintptr_t base, size_t size,
                         int pool_kind, const void *stream, const xdev_block_t *first,
                         const xdev_segment_t *seg) {
    json_ctx_t *c = arg;
    bool single = seg == NULL;
    size_t allocated, active, requested;
    xdev_segment_usage(first, single, &allocated, &active, &requested);
    xdev_strbuf_printf(c->sb,
                       "%s{\"device\":\"%s:%d\",\"arena\":%d,\"address\":%llu,"
                       "\"total_size\":%zu,\"stream\":\"%p\",\"segment_type\":\"%s\","
                       "\"allocated_size\":%zu,\"active_size\":%zu,\"requested_size\":%zu,"
                       "\"is_expandable\":%s,\"blocks\":[",
                       c->first_seg ? "" : ",", da->be->name, da->index, da->arena,
                       (unsigned long long)base, size, stream,
                       pool_kind == XDEV_POOL_SMALL ? "small" : "large", allocated, active,
                       requested, seg != NULL && seg->expandable ? "true" : "false");
    bool fb = true;
    for (const xdev_block_t *b = first; b != NULL; b = single ? NULL : b->next) {
        block_json(c->sb, b, fb);
        fb = false;
    }
    xdev_strbuf_printf(c->sb, "]}");
    c->first_seg = false;
}

/* {"device":"cpu:0","stats":{torch's keys},"summary":"the summary table"} */
static void device_stats_json(xdev_strbuf_t *sb, xdev_device_allocator_t *da, bool first) {
    xdev_memory_stats_t s;
    xdev_alloc_stats_copy(da, &s);
    xdev_memory_stat_item_t items[160];
    size_t count = 0;
    (void)xdev_memory_stats_items(&s, items, sizeof items / sizeof items[0], &count);
    xdev_strbuf_printf(sb, "%s{\"device\":\"%s:%d\",\"stats\":{", first ? "" : ",", da->be->name,
                       da->index);
    for (size_t k = 0; k < count && k < sizeof items / sizeof items[0]; k++)
        xdev_strbuf_printf(sb, "%s\"%s\":%lld", k ? "," : "", items[k].key,
                           (long long)items[k].value);
    xdev_strbuf_t text = {0};
    xdev_alloc_summary_write(&text, da, &s, false);
    xdev_strbuf_printf(sb, "},\"summary\":");
    xdev_strbuf_json_string(sb, text.failed || text.buf == NULL ? "" : text.buf);
    if (text.failed) sb->failed = true;
    free(text.buf);
    xdev_strbuf_printf(sb, "}");
}

xdev_status_t xdev_alloc_snapshot_json(char **json) {
    *json = NULL;
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    xdev_device_allocator_t *all[XDEV_MAX_DEVICE_TYPES * XDEV_MAX_DEVICES];
    int n = xdev_alloc_all(all, XDEV_MAX_DEVICE_TYPES * XDEV_MAX_DEVICES);
    xdev_strbuf_t sb = {0};
    xdev_strbuf_printf(&sb, "{\"segments\":[");
    json_ctx_t ctx = {&sb, true};
    for (int i = 0; i < n; i++)
        xdev_alloc_each_segment(all[i], segment_json, &ctx);
    xdev_strbuf_printf(&sb, "],\"device_traces\":[");
    for (int i = 0; i < n; i++) {
        xdev_device_allocator_t *da = all[i];
        xdev_spin_lock(&da->trace_lock);
        xdev_strbuf_printf(&sb, "%s{\"device\":\"%s:%d\",\"entries\":[", i ? "," : "", da->be->name,
                           da->index);
        for (size_t k = 0; k < da->trace_len; k++) {
            const xdev_memory_trace_entry_t *e = xdev_trace_entry(da, k);
            xdev_strbuf_printf(&sb,
                               "%s{\"action\":\"%s\",\"addr\":%llu,\"size\":%zu,\"stream\":\"%p\","
                               "\"time_ns\":%llu",
                               k ? "," : "", xdev_trace_action_name(e->action),
                               (unsigned long long)e->addr, e->size, e->stream,
                               (unsigned long long)e->time_ns);
            tag_json(&sb, e->tag);
            xdev_strbuf_printf(&sb, "}");
        }
        xdev_strbuf_printf(&sb, "]}");
        xdev_spin_unlock(&da->trace_lock);
    }
    xdev_strbuf_printf(&sb, "],\"device_stats\":[");
    for (int i = 0; i < n; i++)
        device_stats_json(&sb, all[i], i == 0);
    xdev_strbuf_printf(&sb, "]}");
    if (sb.failed) {
        free(sb.buf);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for the snapshot");
    }
    *json = sb.buf;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_snapshot(char **json) {
    XDEV_REQUIRE_ARG(json);
    XDEV_CHECK(xdev_alloc_snapshot_json(json));
    return XDEV_SUCCESS;
}
