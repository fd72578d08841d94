/* SPDX-License-Identifier: Apache-2.0 */
/* strbuf.h - a growable string for reports (summary, snapshot JSON). */
#ifndef XDEV_CORE_STRBUF_H
#define XDEV_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct xdev_strbuf {
    char *buf;
    size_t len, cap;
    bool failed; /* out of memory: later appends are ignored */
} xdev_strbuf_t;

void xdev_strbuf_printf(xdev_strbuf_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Append n bytes (binary data too; a NUL follows them, not counted in len). */
void xdev_strbuf_append(xdev_strbuf_t *sb, const void *bytes, size_t n);

/* Append s[0..n) with every byte that begins no UTF-8 character replaced
 * by U+FFFD, so that what is written is valid UTF-8 whatever s holds. */
void xdev_strbuf_append_utf8(xdev_strbuf_t *sb, const char *s, size_t n);

/* Append s as a JSON string literal: quotes, backslashes and control
 * characters escaped, '<' as \u003c so that the text can sit inside an
 * HTML <script> element without closing it, and bytes that are not UTF-8
 * as U+FFFD (JSON is UTF-8: json.load and JSON.parse refuse them). */
void xdev_strbuf_json_string(xdev_strbuf_t *sb, const char *s);

#endif
