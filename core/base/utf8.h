/* SPDX-License-Identifier: Apache-2.0 */
/* utf8.h - UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates,
 * nothing above U+10FFFF), so that every file xdev writes (snapshot JSON,
 * torch pickle, trace) is valid UTF-8 whatever bytes it was handed, and the
 * page builders refuse text a browser or json.load would not read. Where
 * bytes are not UTF-8 the writers put U+FFFD, one per byte. */
#ifndef XDEV_CORE_UTF8_H
#define XDEV_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* U+FFFD REPLACEMENT CHARACTER in UTF-8. */
#define XDEV_UTF8_REPLACEMENT "\xEF\xBF\xBD"
#define XDEV_UTF8_REPLACEMENT_LEN 3

/* The length (1..4) of the valid character at s[0..n), or 0 when the bytes
 * there do not begin one (also when n is 0 or the character is cut). */
size_t xdev_utf8_char(const char *s, size_t n);

/* True when s[0..n) is all valid UTF-8; else *bad (if not NULL) is the
 * offset of the first byte that begins no character. */
bool xdev_utf8_valid(const char *s, size_t n, size_t *bad);

/* The length of s[0..n) once every byte that begins no character is
 * replaced by U+FFFD (what xdev_strbuf_append_utf8 appends). */
size_t xdev_utf8_sanitized_len(const char *s, size_t n);

/* Copy the NUL-terminated src into dst (cap > 0 bytes, NUL-terminated),
 * bytes that begin no character replaced by U+FFFD, cut at a character
 * boundary so that the copy is valid UTF-8. Returns the bytes written
 * (without the NUL). */
size_t xdev_utf8_copy(char *dst, size_t cap, const char *src);

#endif
