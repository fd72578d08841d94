/* SPDX-License-Identifier: Apache-2.0 */
/* pickle.c - the pickle writer (pickle.h): protocol 2 opcodes only. */
#include "observe/pickle.h"

#include <string.h>

#include "base/utf8.h"

static void op(xdev_strbuf_t *sb, unsigned char c) {
    xdev_strbuf_append(sb, &c, 1);
}

void xdev_pickle_begin(xdev_strbuf_t *sb) {
    const unsigned char proto[2] = {0x80, 2}; /* PROTO 2 */
    xdev_strbuf_append(sb, proto, 2);
}

void xdev_pickle_end(xdev_strbuf_t *sb) {
    op(sb, '.'); /* STOP */
}

void xdev_pickle_dict_begin(xdev_strbuf_t *sb) {
    op(sb, '}'); /* EMPTY_DICT */
    op(sb, '('); /* MARK */
}

void xdev_pickle_dict_end(xdev_strbuf_t *sb) {
    op(sb, 'u'); /* SETITEMS: the pairs since the mark */
}

void xdev_pickle_list_begin(xdev_strbuf_t *sb) {
    op(sb, ']'); /* EMPTY_LIST */
    op(sb, '('); /* MARK */
}

void xdev_pickle_list_end(xdev_strbuf_t *sb) {
    op(sb, 'e'); /* APPENDS */
}

/* BINUNICODE must hold UTF-8 (pickle.load decodes it strictly): bytes
 * that are not are written as U+FFFD, and the length counts the result. */
void xdev_pickle_str(xdev_strbuf_t *sb, const char *s) {
    size_t len = strlen(s);
    size_t n = xdev_utf8_sanitized_len(s, len);
    unsigned char hdr[5] = {'X', (unsigned char)n, (unsigned char)(n >> 8),
                            (unsigned char)(n >> 16), (unsigned char)(n >> 24)}; /* BINUNICODE */
    xdev_strbuf_append(sb, hdr, 5);
    xdev_strbuf_append_utf8(sb, s, len);
}

/* LONG1: a length byte, then the two's complement value, little-endian, in
 * as few bytes as keep its sign. */
static void long1(xdev_strbuf_t *sb, uint64_t bits, bool negative) {
    unsigned char b[11] = {0x8a, 0};
    int n = 0;
    for (int i = 0; i < 8; i++)
        b[2 + i] = (unsigned char)(bits >> (8 * i));
    n = 8;
    while (n > 1 && ((!negative && b[2 + n - 1] == 0x00 && !(b[2 + n - 2] & 0x80)) ||
                     (negative && b[2 + n - 1] == 0xff && (b[2 + n - 2] & 0x80))))
        n--;
    if (!negative && (b[2 + n - 1] & 0x80)) b[2 + n++] = 0x00; /* 2^63 .. 2^64-1 */
    b[1] = (unsigned char)n;
    xdev_strbuf_append(sb, b, (size_t)n + 2);
}

void xdev_pickle_int(xdev_strbuf_t *sb, int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
        uint32_t u = (uint32_t)(int32_t)v;
        unsigned char b[5] = {'J', (unsigned char)u, (unsigned char)(u >> 8),
                              (unsigned char)(u >> 16), (unsigned char)(u >> 24)}; /* BININT */
        xdev_strbuf_append(sb, b, 5);
        return;
    }
    long1(sb, (uint64_t)v, v < 0);
}

void xdev_pickle_uint(xdev_strbuf_t *sb, uint64_t v) {
    if (v <= INT32_MAX)
        xdev_pickle_int(sb, (int64_t)v);
    else
        long1(sb, v, false);
}

void xdev_pickle_bool(xdev_strbuf_t *sb, bool v) {
    op(sb, v ? 0x88 : 0x89); /* NEWTRUE, NEWFALSE */
}

void xdev_pickle_tuple2(xdev_strbuf_t *sb) {
    op(sb, 0x86); /* TUPLE2 */
}
