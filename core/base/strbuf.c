/* SPDX-License-Identifier: Apache-2.0 */
/* strbuf.c - a growable string for reports. */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

void xdev_strbuf_printf(xdev_strbuf_t *sb, const char *fmt, ...) {
    if (sb->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(sb->buf ? sb->buf + sb->len : NULL, sb->cap - sb->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            sb->failed = true;
            return;
        }
        if (sb->len + (size_t)n < sb->cap) {
            sb->len += (size_t)n;
            return;
        }
        size_t cap = (sb->cap + (size_t)n + 1) * 2;
        char *b = realloc(sb->buf, cap);
        if (b == NULL) {
            sb->failed = true;
            return;
        }
        sb->buf = b;
        sb->cap = cap;
    }
}

void xdev_strbuf_append(xdev_strbuf_t *sb, const void *bytes, size_t n) {
    if (sb->failed) return;
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = (sb->len + n + 1) * 2;
        char *b = realloc(sb->buf, cap);
        if (b == NULL) {
            sb->failed = true;
            return;
        }
        sb->buf = b;
        sb->cap = cap;
    }
    memcpy(sb->buf + sb->len, bytes, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void xdev_strbuf_append_utf8(xdev_strbuf_t *sb, const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t run = i; /* the valid characters up to the next bad byte */
        size_t k;
        while (run < n && (k = xdev_utf8_char(s + run, n - run)) != 0)
            run += k;
        if (run > i) xdev_strbuf_append(sb, s + i, run - i);
        if (run == n) break;
        xdev_strbuf_append(sb, XDEV_UTF8_REPLACEMENT, XDEV_UTF8_REPLACEMENT_LEN);
        i = run + 1;
    }
}

void xdev_strbuf_json_string(xdev_strbuf_t *sb, const char *s) {
    xdev_strbuf_append(sb, "\"", 1);
    const char *end = s + strlen(s);
    for (const char *p = s; p < end;) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x80) { /* a character, or bytes that are not one (U+FFFD) */
            size_t k = xdev_utf8_char(p, (size_t)(end - p));
            if (k != 0)
                xdev_strbuf_append(sb, p, k);
            else
                xdev_strbuf_append(sb, XDEV_UTF8_REPLACEMENT, XDEV_UTF8_REPLACEMENT_LEN);
            p += k ? k : 1;
            continue;
        }
        const char *run = p;
        while (p < end && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80 && *p != '"' &&
               *p != '\\' && *p != '<')
            p++;
        if (p > run) {
            xdev_strbuf_append(sb, run, (size_t)(p - run));
            continue;
        }
        if (c == '"' || c == '\\')
            xdev_strbuf_printf(sb, "\\%c", c);
        else if (c == '\n')
            xdev_strbuf_append(sb, "\\n", 2);
        else if (c == '\t')
            xdev_strbuf_append(sb, "\\t", 2);
        else if (c == '\r')
            xdev_strbuf_append(sb, "\\r", 2);
        else /* other control characters, and '<' */
            xdev_strbuf_printf(sb, "\\u%04x", c);
        p++;
    }
    xdev_strbuf_append(sb, "\"", 1);
}
