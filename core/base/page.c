/* page.c - a view template with JSON in it. The JSON is checked first, so a
 * damaged file is an error naming the byte rather than a page that fails in
 * the browser. */
#include "base/page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/json_check.h"
#include "base/strbuf.h"

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
    const char *expected;
    if (!xdev_json_check(json, len, &at, &expected))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "not JSON: at byte %zu of %zu, expected %s", at,
                         len, expected);
    char member[64];
    snprintf(member, sizeof member, "\"%s\"", required);
    size_t first = 0;
    while (first < len && strchr(" \t\r\n", json[first]) != NULL)
        first++;
    if (first >= len || json[first] != '{' || memmem(json, len, member, strlen(member)) == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the JSON is not %s (an object with %s)", what,
                         member);
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
