/* SPDX-License-Identifier: Apache-2.0 */
/* memviz.c - the memory view (xdev/memviz.h): the embedded page
 * (memviz_page.html, compiled in by cmake/embed_file.cmake) with a snapshot's
 * JSON in place of its marker (page.c). */
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/file_write.h"
#include "observe/alloc_snapshot.h"
#include "observe/page.h"
#include "xdev/memviz.h"

extern const char xdev_memviz_page[];

/* The page of a snapshot's JSON, messages unprefixed (alloc_snapshot.h). */
xdev_status_t xdev_memviz_html_of(const char *json, size_t len, char **html, size_t *html_len) {
    return xdev_page_with_json(xdev_memviz_page, "@XDEV_SNAPSHOT@", json, len, "segments",
                               "an xdev memory snapshot (as xdev_memory_snapshot writes)", html,
                               html_len);
}

xdev_status_t xdev_memory_viz_html(const char *snapshot_json, size_t len, char **html,
                                   size_t *html_len) {
    XDEV_REQUIRE_ARG(snapshot_json);
    XDEV_REQUIRE_ARG(html);
    *html = NULL;
    if (html_len != NULL) *html_len = 0;
    XDEV_CHECK(xdev_memviz_html_of(snapshot_json, len, html, html_len));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_viz_write(const char *path) {
    XDEV_REQUIRE_ARG(path);
    char *json = NULL;
    XDEV_CHECK(xdev_alloc_snapshot_json(&json));
    char *html = NULL;
    size_t n = 0;
    xdev_status_t st = xdev_memviz_html_of(json, strlen(json), &html, &n);
    free(json);
    XDEV_CHECK(st);
    st = xdev_write_file(path, html, n);
    free(html);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}
