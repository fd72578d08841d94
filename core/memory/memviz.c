/* memviz.c - the memory view (xdev/memviz.h): the embedded page
 * (memviz_page.html, compiled in by cmake/embed_file.cmake) with a snapshot's
 * JSON in place of its marker. The JSON is checked first, so a damaged file
 * is an error naming the byte rather than a page that fails in the browser. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/json_check.h"
#include "base/strbuf.h"
#include "memory/alloc_internal.h"
#include "xdev/memviz.h"

extern const char xdev_memviz_page[];

#define SNAPSHOT_MARKER "@XDEV_SNAPSHOT@"

/* The page around `json` (already checked), or sb->failed. '<' only occurs
 * inside JSON strings, where "\u003c" means the same; escaping it keeps
 * "</script>" or "<!--" in a tag from ending the page's script element. */
static void page_build(xdev_strbuf_t *sb, const char *json, size_t len) {
    const char *page = xdev_memviz_page;
    const char *mark = strstr(page, SNAPSHOT_MARKER);
    xdev_strbuf_append(sb, page, (size_t)(mark - page));
    for (size_t i = 0; i < len;) {
        const char *lt = memchr(json + i, '<', len - i);
        size_t run = lt ? (size_t)(lt - (json + i)) : len - i;
        xdev_strbuf_append(sb, json + i, run);
        i += run;
        if (lt) {
            xdev_strbuf_append(sb, "\\u003c", 6);
            i++;
        }
    }
    const char *rest = mark + strlen(SNAPSHOT_MARKER);
    xdev_strbuf_append(sb, rest, strlen(rest));
}

/* The checks of xdev_memory_viz_html, without a public name in messages. */
static xdev_status_t viz_html(const char *json, size_t len, char **html, size_t *html_len) {
    size_t at;
    const char *what;
    if (!xdev_json_check(json, len, &at, &what))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the snapshot is not JSON: at byte %zu of %zu, expected %s", at, len,
                         what);
    size_t first = strspn(json, " \t\r\n");
    if (first >= len || json[first] != '{' || strstr(json, "\"segments\"") == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the JSON is not an xdev memory snapshot (an object with \"segments\", "
                         "as xdev_memory_snapshot writes)");
    xdev_strbuf_t sb = {0};
    page_build(&sb, json, len);
    if (sb.failed) {
        free(sb.buf);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a %zu-byte page",
                         len + strlen(xdev_memviz_page));
    }
    *html = sb.buf;
    if (html_len != NULL) *html_len = sb.len;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_viz_html(const char *snapshot_json, size_t len, char **html,
                                   size_t *html_len) {
    XDEV_REQUIRE_ARG(snapshot_json);
    XDEV_REQUIRE_ARG(html);
    *html = NULL;
    if (html_len != NULL) *html_len = 0;
    if (memchr(snapshot_json, '\0', len) != NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "snapshot_json holds a NUL byte before len (%zu): pass the text's "
                             "length",
                             len);
    XDEV_CHECK(viz_html(snapshot_json, len, html, html_len));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_viz_write(const char *path) {
    XDEV_REQUIRE_ARG(path);
    char *json = NULL;
    XDEV_CHECK(xdev_alloc_snapshot_json(&json));
    char *html = NULL;
    size_t n = 0;
    xdev_status_t st = viz_html(json, strlen(json), &html, &n);
    free(json);
    XDEV_CHECK(st);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        int err = errno;
        free(html);
        return XDEV_API_FAIL(XDEV_ERROR_IO, "cannot open '%s' for writing: %s", path,
                             strerror(err));
    }
    size_t wrote = fwrite(html, 1, n, f);
    int err = errno;
    free(html);
    if (fclose(f) != 0 && wrote == n) {
        wrote = 0;
        err = errno;
    }
    if (wrote != n)
        return XDEV_API_FAIL(XDEV_ERROR_IO, "cannot write '%s': %s", path, strerror(err));
    return XDEV_SUCCESS;
}
