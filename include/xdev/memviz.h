/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/memviz.h - the memory view: a snapshot of the caching allocators
 * (xdev_memory_snapshot, with the history that xdev_memory_record_history
 * keeps) as one self-contained HTML page that any browser opens offline.
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

#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

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
