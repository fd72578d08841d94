/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_snapshot_torch.c - the memory snapshot of one device type in the
 * structure torch.cuda.memory._snapshot() returns, pickled, so that
 * PyTorch's memory viewer (memory_viz: the web page, or
 * torch.cuda._memory_viz's segment_plot / trace_plot) opens a snapshot taken
 * by a C program. Differences from xdev_memory_snapshot's JSON: devices are
 * indices of the type, streams integers (the native handle), history times
 * in microseconds, one trace list per device index; frames hold the
 * allocation's tag path (xdev_memory_tag_push) when it has one. */
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/file_write.h"
#include "alloc/alloc_internal.h"
#include "observe/alloc_snapshot.h"
#include "observe/pickle.h"
#include "runtime/registry.h"
#include "runtime/stream_internal.h"
#include "xdev/allocator.h"
#include "xdev/memviz.h"

/* "frames": empty, or one frame named for the allocation's tag path
 * (xdev_memory_tag_push) so that torch's viewer shows it where a Python
 * stack would be. */
static void tag_frames(xdev_strbuf_t *sb, const char *tag) {
    xdev_pickle_str(sb, "frames");
    xdev_pickle_list_begin(sb);
    if (tag != NULL) {
        xdev_pickle_dict_begin(sb);
        xdev_pickle_str(sb, "filename");
        xdev_pickle_str(sb, "xdev_memory_tag_push");
        xdev_pickle_str(sb, "line");
        xdev_pickle_int(sb, 0);
        xdev_pickle_str(sb, "name");
        xdev_pickle_str(sb, tag);
        xdev_pickle_dict_end(sb);
    }
    xdev_pickle_list_end(sb);
}

static void block_pickle(xdev_strbuf_t *sb, const xdev_block_t *b) {
    xdev_pickle_dict_begin(sb);
    xdev_pickle_str(sb, "address");
    xdev_pickle_uint(sb, (uint64_t)b->addr);
    xdev_pickle_str(sb, "size");
    xdev_pickle_uint(sb, b->size);
    xdev_pickle_str(sb, "requested_size");
    xdev_pickle_uint(sb, b->state == XDEV_BLOCK_FREE ? 0 : b->requested);
    xdev_pickle_str(sb, "state");
    xdev_pickle_str(sb, xdev_block_state_name(b->state));
    tag_frames(sb, b->state == XDEV_BLOCK_FREE ? NULL : b->tag);
    xdev_pickle_dict_end(sb);
}

/* One segment (xdev_segment_fn); ctx is the buffer. */
static void segment_pickle(void *ctx, const xdev_device_allocator_t *da, uintptr_t base,
                           size_t size, int pool_kind, const void *stream,
                           const xdev_block_t *first, const xdev_segment_t *seg) {
    xdev_strbuf_t *sb = ctx;
    bool single = seg == NULL;
    size_t allocated, active, requested;
    xdev_segment_usage(first, single, &allocated, &active, &requested);
    xdev_pickle_dict_begin(sb);
    xdev_pickle_str(sb, "device");
    xdev_pickle_int(sb, da->index);
    xdev_pickle_str(sb, "address");
    xdev_pickle_uint(sb, (uint64_t)base);
    xdev_pickle_str(sb, "total_size");
    xdev_pickle_uint(sb, size);
    xdev_pickle_str(sb, "allocated_size");
    xdev_pickle_uint(sb, allocated);
    xdev_pickle_str(sb, "active_size");
    xdev_pickle_uint(sb, active);
    xdev_pickle_str(sb, "requested_size");
    xdev_pickle_uint(sb, requested);
    xdev_pickle_str(sb, "stream");
    xdev_pickle_uint(sb, (uint64_t)(uintptr_t)stream);
    xdev_pickle_str(sb, "segment_type");
    xdev_pickle_str(sb, xdev_segment_type_name(pool_kind));
    xdev_pickle_str(sb, "segment_pool_id"); /* (0, the memory pool's id) as torch's graph pools */
    xdev_pickle_int(sb, 0);
    xdev_pickle_int(sb, seg != NULL ? (int64_t)seg->pool->mempool : 0);
    xdev_pickle_tuple2(sb);
    xdev_pickle_str(sb, "is_expandable");
    xdev_pickle_bool(sb, seg != NULL && seg->expandable);
    tag_frames(sb, NULL);
    xdev_pickle_str(sb, "blocks");
    xdev_pickle_list_begin(sb);
    for (const xdev_block_t *b = first; b != NULL; b = single ? NULL : b->next)
        block_pickle(sb, b);
    xdev_pickle_list_end(sb);
    xdev_pickle_dict_end(sb);
}

static void trace_pickle(xdev_strbuf_t *sb, const xdev_device_allocator_t *da) {
    xdev_pickle_list_begin(sb);
    for (size_t k = 0; k < da->trace_len; k++) {
        const xdev_memory_history_entry_t *e = xdev_alloc_history_entry(da, k);
        xdev_pickle_dict_begin(sb);
        xdev_pickle_str(sb, "action");
        xdev_pickle_str(sb, xdev_alloc_history_action_name(e->action));
        xdev_pickle_str(sb, "addr");
        xdev_pickle_uint(sb, (uint64_t)e->addr);
        xdev_pickle_str(sb, "size");
        xdev_pickle_uint(sb, e->size);
        xdev_pickle_str(sb, "stream");
        xdev_pickle_uint(sb, (uint64_t)(uintptr_t)e->stream);
        xdev_pickle_str(sb, "time_us");
        xdev_pickle_uint(sb, e->time_ns / 1000u);
        tag_frames(sb, e->tag);
        xdev_pickle_dict_end(sb);
    }
    xdev_pickle_list_end(sb);
}

/* The pickle of the snapshot of `type`'s devices (unprefixed messages). */
xdev_status_t xdev_alloc_snapshot_torch(xdev_device_type_t type, void **data, size_t *size) {
    *data = NULL;
    *size = 0;
    if ((unsigned)type >= XDEV_MAX_DEVICE_TYPES)
        return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE, "unknown device type %d", (int)type);
    xdev_status_t st = xdev_core_ensure_init();
    if (st == XDEV_SUCCESS) st = xdev_core_check_type(type); /* a type no backend registered */
    if (st != XDEV_SUCCESS) return st;
    xdev_device_allocator_t *all[XDEV_MAX_DEVICE_TYPES * XDEV_MAX_DEVICES];
    int n = xdev_alloc_all(all, XDEV_MAX_DEVICE_TYPES * XDEV_MAX_DEVICES);
    int max_index = -1;
    for (int i = 0; i < n; i++)
        if (all[i]->be->type == type && all[i]->index > max_index) max_index = all[i]->index;
    xdev_strbuf_t sb = {0};
    xdev_pickle_begin(&sb);
    xdev_pickle_dict_begin(&sb);
    xdev_pickle_str(&sb, "segments");
    xdev_pickle_list_begin(&sb);
    for (int i = 0; i < n; i++) {
        xdev_device_allocator_t *da = all[i];
        if (da->be->type != type) continue;
        xdev_alloc_each_segment(da, segment_pickle, &sb);
    }
    xdev_pickle_list_end(&sb);
    /* One trace list per device index 0 .. the highest with an allocator. */
    xdev_pickle_str(&sb, "device_traces");
    xdev_pickle_list_begin(&sb);
    for (int d = 0; d <= max_index; d++) {
        xdev_device_allocator_t *da = NULL;
        for (int i = 0; i < n; i++)
            if (all[i]->be->type == type && all[i]->index == d) da = all[i];
        if (da == NULL) {
            xdev_pickle_list_begin(&sb);
            xdev_pickle_list_end(&sb);
            continue;
        }
        xdev_spin_lock(&da->trace_lock);
        trace_pickle(&sb, da);
        xdev_spin_unlock(&da->trace_lock);
    }
    xdev_pickle_list_end(&sb);
    xdev_pickle_dict_end(&sb);
    xdev_pickle_end(&sb);
    if (sb.failed) {
        free(sb.buf);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for the snapshot");
    }
    *data = sb.buf;
    *size = sb.len;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_snapshot_torch(xdev_device_type_t type, void **data, size_t *size) {
    XDEV_REQUIRE_ARG(data);
    XDEV_REQUIRE_ARG(size);
    XDEV_CHECK(xdev_alloc_snapshot_torch(type, data, size));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_snapshot_torch_write(xdev_device_type_t type, const char *path) {
    XDEV_REQUIRE_ARG(path);
    void *data = NULL;
    size_t size = 0;
    XDEV_CHECK(xdev_alloc_snapshot_torch(type, &data, &size));
    xdev_status_t st = xdev_write_file(path, data, size);
    free(data);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}
