/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_snapshot.h - what observe/'s views of the caching allocators share:
 * the memory snapshot's JSON (alloc_snapshot.c) for the memory view
 * (memviz.c), and torch's block-state names and a segment's byte counts for
 * both snapshots (alloc_snapshot.c, alloc_snapshot_torch.c). */
#ifndef XDEV_CORE_ALLOC_SNAPSHOT_H
#define XDEV_CORE_ALLOC_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>

#include "alloc/alloc_internal.h"

/* A segment's "segment_type": torch's "small" / "large", or xdev's
 * "managed" (XDEV_SEGMENT_MANAGED: one managed allocation). */
const char *xdev_segment_type_name(int pool_kind);

/* torch's name of a block state (XDEV_BLOCK_*). */
const char *xdev_block_state_name(int state);

/* Bytes of a segment's blocks: allocated (handed out), active (not free),
 * requested. A segment is its blocks from `first` along next, or (single)
 * the one block `first`. */
void xdev_segment_usage(const xdev_block_t *first, bool single, size_t *allocated, size_t *active,
                        size_t *requested);

/* xdev_memory_snapshot's JSON without the public prefix. */
xdev_status_t xdev_alloc_snapshot_json(char **json);
/* xdev_memory_snapshot_torch without the public prefix (alloc_snapshot_torch.c). */
xdev_status_t xdev_alloc_snapshot_torch(xdev_device_type_t type, void **data, size_t *size);
/* The memory view's page of a snapshot's JSON, unprefixed (memviz.c). */
xdev_status_t xdev_memviz_html_of(const char *json, size_t len, char **html, size_t *html_len);

#endif
