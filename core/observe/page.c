/* SPDX-License-Identifier: Apache-2.0 */
/* page.c - a view template with JSON in it. The JSON is checked first (UTF-8,
 * syntax, the required top-level array), so a damaged file is an error
 * naming the byte or the member rather than a page that fails in the
 * browser. */
#include "observe/page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/json_check.h"
#include "base/strbuf.h"
#include "base/utf8.h"

/* '<' only occurs inside JSON strings, where "\u003c" means the same;
 * escaping it keeps "</script>" or "<!--" in a value from ending the page's
 * script element. */
static void append_escaped(xdev_strbuf_t *sb, const char *json, size_t len) {
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
}

xdev_status_t xdev_page_with_json(const char *tmpl, const char *marker, const char *json,
                                  size_t len, const char *required, const char *what, char **html,
                                  size_t *html_len) {
    if (memchr(json, '\0', len) != NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the JSON holds a NUL byte before its length (%zu): pass the text's "
                         "length",
                         len);
    size_t at;
    if (!xdev_utf8_valid(json, len, &at))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "not UTF-8 (JSON must be): byte %zu of %zu (0x%02x) begins no character",
                         at, len, (unsigned char)json[at]);
    const char *expected;
    if (!xdev_json_check(json, len, &at, &expected))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "not JSON: at byte %zu of %zu, expected %s", at,
                         len, expected);
    char kind = xdev_json_top_member(json, len, required);
    if (kind != '[')
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the JSON is not %s: %s \"%s\" %s", what,
                         kind == 0 ? "it needs a top-level member" : "its top-level member",
                         required, kind == 0 ? "holding an array" : "is not an array");
    const char *mark = strstr(tmpl, marker);
    if (mark == NULL) return XDEV_FAIL(XDEV_ERROR_INTERNAL, "the page template has no %s", marker);
    xdev_strbuf_t sb = {0};
    xdev_strbuf_append(&sb, tmpl, (size_t)(mark - tmpl));
    append_escaped(&sb, json, len);
    const char *rest = mark + strlen(marker);
    xdev_strbuf_append(&sb, rest, strlen(rest));
    if (sb.failed) {
        free(sb.buf);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a page of %zu bytes",
                         len + strlen(tmpl));
    }
    *html = sb.buf;
    if (html_len != NULL) *html_len = sb.len;
    return XDEV_SUCCESS;
}
