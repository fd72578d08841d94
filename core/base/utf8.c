/* SPDX-License-Identifier: Apache-2.0 */
/* utf8.c - UTF-8 validity and repair (utf8.h). */
#include "base/utf8.h"

#include <string.h>

size_t xdev_utf8_char(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    /* The second byte's range is narrower after E0 (overlong), ED
     * (surrogates), F0 (overlong) and F4 (above U+10FFFF). */
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong) or F5..FF */
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

bool xdev_utf8_valid(const char *s, size_t n, size_t *bad) {
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = xdev_utf8_char(s + i, n - i);
        if (k == 0) {
            if (bad != NULL) *bad = i;
            return false;
        }
        i += k;
    }
    return true;
}

size_t xdev_utf8_sanitized_len(const char *s, size_t n) {
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        size_t k = xdev_utf8_char(s + i, n - i);
        if (k == 0) {
            out += XDEV_UTF8_REPLACEMENT_LEN;
            i++;
        } else {
            out += k;
            i += k;
        }
    }
    return out;
}

size_t xdev_utf8_copy(char *dst, size_t cap, const char *src) {
    size_t used = 0;
    for (const char *p = src; *p != '\0';) {
        size_t k = xdev_utf8_char(p, strnlen(p, 4));
        const char *piece = k ? p : XDEV_UTF8_REPLACEMENT;
        size_t len = k ? k : XDEV_UTF8_REPLACEMENT_LEN;
        if (used + len >= cap) break; /* the next character would not fit whole */
        memcpy(dst + used, piece, len);
        used += len;
        p += k ? k : 1;
    }
    dst[used] = '\0';
    return used;
}
