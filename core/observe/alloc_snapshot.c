/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_snapshot.c - xdev_memory_snapshot: the caching allocators as JSON
 * (segments, blocks, states), each device's history ring (which the
 * allocator records: alloc/alloc_history.c) and its statistics. */
#include "observe/alloc_snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/file_write.h"
#include "base/strbuf.h"
#include "alloc/alloc_internal.h"
#include "runtime/registry.h"
#include "runtime/stream_names.h"
#include "xdev/memviz.h"

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

const char *xdev_segment_type_name(int pool_kind) {
    return pool_kind == XDEV_SEGMENT_MANAGED ? "managed"
           : pool_kind == XDEV_POOL_SMALL    ? "small"
                                             : "large";
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
                       "\"is_expandable\":%s,\"pool\":%llu,\"blocks\":[",
                       c->first_seg ? "" : ",", da->be->name, da->index, da->arena,
                       (unsigned long long)base, size, stream, xdev_segment_type_name(pool_kind),
                       allocated, active, requested,
                       seg != NULL && seg->expandable ? "true" : "false",
                       (unsigned long long)(seg != NULL ? seg->pool->mempool : 0));
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

/* One named stream: the same "stream" value as the blocks and history. */
static void stream_name_json(const void *handle, const xdev_device_record_t *rec, const char *name,
                             void *arg) {
    json_ctx_t *c = arg;
    xdev_strbuf_printf(c->sb, "%s{\"device\":\"%s:%d\",\"stream\":\"%p\",\"name\":",
                       c->first_seg ? "" : ",", rec->be->name, rec->id.index, handle);
    xdev_strbuf_json_string(c->sb, name);
    xdev_strbuf_printf(c->sb, "}");
    c->first_seg = false;
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
            const xdev_memory_history_entry_t *e = xdev_alloc_history_entry(da, k);
            xdev_strbuf_printf(&sb,
                               "%s{\"action\":\"%s\",\"addr\":%llu,\"size\":%zu,\"stream\":\"%p\","
                               "\"time_ns\":%llu",
                               k ? "," : "", xdev_alloc_history_action_name(e->action),
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
    xdev_strbuf_printf(&sb, "],\"stream_names\":[");
    json_ctx_t names = {&sb, true};
    xdev_stream_names_each(stream_name_json, &names);
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

xdev_status_t xdev_memory_snapshot_write(const char *path) {
    XDEV_REQUIRE_ARG(path);
    char *json = NULL;
    XDEV_CHECK(xdev_alloc_snapshot_json(&json));
    xdev_status_t st = xdev_write_file(path, json, strlen(json));
    free(json);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}
