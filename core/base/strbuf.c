/* strbuf.c - a growable string for reports. */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void xdev_strbuf_json_string(xdev_strbuf_t *sb, const char *s) {
    xdev_strbuf_append(sb, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p != '"' && *p != '\\' && *p != '<')
            p++;
        if (p > run) xdev_strbuf_append(sb, run, (size_t)(p - run));
        if (*p == '\0') break;
        if (*p == '"' || *p == '\\')
            xdev_strbuf_printf(sb, "\\%c", *p);
        else if (*p == '\n')
            xdev_strbuf_append(sb, "\\n", 2);
        else
            xdev_strbuf_printf(sb, "\\u%04x", *p);
    }
    xdev_strbuf_append(sb, "\"", 1);
}
