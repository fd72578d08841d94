/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/memviz.h - the memory snapshots and the memory view: every
 * allocator's segments and blocks, with the history that
 * xdev_memory_record_history keeps (xdev/allocator.h), as JSON or as
 * torch's pickle, and the view of a snapshot as one self-contained HTML
 * page that any browser opens offline.
 *
 * Per device the page shows the segment map (each segment a bar whose width
 * follows its size, blocks coloured by state and stream; hover for address,
 * size, requested size and tag), allocated and reserved memory over the
 * recorded history with the peak marked, the largest live allocations and
 * live bytes by tag (xdev_memory_tag_push), out-of-memory events, and the
 * xdev_memory_summary table. The tool `xdev-memviz` turns a snapshot file
 * into the same page. */
#ifndef XDEV_MEMVIZ_H
#define XDEV_MEMVIZ_H

#include <stddef.h>

#include "xdev/device.h"
#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* JSON of every segment and block of every device of every backend that
 * has allocated, and the recorded history. *json is malloc'ed: free() it.
 * The schema follows torch.cuda.memory_snapshot(), with the differences
 * marked (!):
 *
 * {"segments": [                          one per segment, devices in order
 *    {"device": "cuda:0",                 (!) torch: the index as a number
 *     "arena": 0,                         (!) the device's cache (arena) that
 *                                         holds it; see xdev_stat_t
 *     "address": 140..., "total_size": 2097152,       bytes, integers
 *     "stream": "0x55d0c0",               (!) the native stream as a "%p"
 *                                         string ("(nil)" for a NULL native
 *                                         handle); torch: an integer
 *     "segment_type": "small" | "large"
                   | "managed",            (!) one xdev_malloc_managed allocation
 *     "allocated_size": n, "active_size": n, "requested_size": n,
 *     "is_expandable": false,             true: an expandable segment, whose
 *                                         total_size is what is mapped now
 *     "blocks": [                         in address order, covering the segment
 *        {"address": a, "size": n,        rounded size
 *         "requested_size": n,            as asked; 0 for an inactive block
 *         "state": "active_allocated"     handed out
 *                | "active_pending_free"  freed, waiting for streams that
 *                                         used it (xdev_record_stream)
 *                | "inactive",            free, cached
 *         "tag": "step/forward"}]}],      (!) only on an allocation made
 *                                         under xdev_memory_tag_push
 *  "device_traces": [                     one per device allocator, same order
 *    {"device": "cuda:0",                 (!) torch: one list per index
 *     "entries": [                        oldest first; empty unless
 *                                         xdev_memory_record_history is on
 *        {"action": "alloc" | "free_requested" | "free_completed"
 *                 | "segment_alloc" | "segment_free" | "oom",
 *         "addr": a, "size": n, "stream": "0x...",
 *         "time_ns": t,                   (!) CLOCK_MONOTONIC ns; torch: time_us
 *         "tag": "step/forward"}]}],      (!) as for blocks; torch: frames
 *  "device_stats": [                      (!) one per device allocator, same
 *    {"device": "cuda:0",                 order; torch has no such key
 *     "stats": {"allocation.all.current": n, ...},  xdev_memory_stats_items
 *     "summary": "|====..."}],           the xdev_memory_summary table
 *  "stream_names": [                      (!) streams named with
 *    {"device": "cuda:0",                 xdev_stream_set_name; "stream"
 *     "stream": "0x...",                  is the value blocks and history
 *     "name": "copy"}]}                   entries carry; torch has none
 *
 * Without caching (XDEV_NO_MEMORY_CACHING=1, XDEV_ALLOC_CONF backend:async,
 * or an allocator installed with xdev_set_allocator) every allocation is
 * its own segment holding one block. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_snapshot(char **json);

/* xdev_memory_snapshot written to `path` (created or truncated): the file
 * xdev-memviz and xdev_memory_viz_html read. XDEV_ERROR_IO names the path
 * and the reason when it cannot be written. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_snapshot_write(const char *path);

/* The same snapshot for the devices of one type in the structure of
 * torch.cuda.memory._snapshot(), pickled (Python pickle protocol 2), so that
 * PyTorch's memory viewer opens it: write *data to a file and drop it on
 * https://pytorch.org/memory_viz, or pass the unpickled dict to
 * torch.cuda._memory_viz.segment_plot / trace_plot. Devices are indices,
 * streams integers (the native handle), history times "time_us", one trace
 * list per device index, "frames" empty. *data is malloc'ed: free() it. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_snapshot_torch(xdev_device_type_t type, void **data,
                                                              size_t *size);

/* xdev_memory_snapshot_torch written to `path` (created or truncated): the
 * file PyTorch's memory viewer opens. XDEV_ERROR_IO as above. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_snapshot_torch_write(xdev_device_type_t type,
                                                                    const char *path);

/* The page for a snapshot's JSON text (what xdev_memory_snapshot returned,
 * perhaps read back from a file): `len` bytes of UTF-8, which must be one
 * JSON object with a "segments" array among its own members. *html
 * (NUL-terminated, *html_len bytes without the NUL) is malloc'ed: free()
 * it. Text that is not UTF-8 or not JSON is XDEV_ERROR_INVALID_VALUE naming
 * the byte offset; an object without a top-level "segments" array is
 * XDEV_ERROR_INVALID_VALUE too. Segments or blocks of the wrong types pass
 * here: the page checks them and shows what is wrong instead of drawing. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_viz_html(const char *snapshot_json, size_t len,
                                                        char **html, size_t *html_len);

/* Take a snapshot of this process now and write its page to `path`
 * (created or truncated). */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_viz_write(const char *path);

#ifdef __cplusplus
}
#endif
#endif
