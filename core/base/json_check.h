/* SPDX-License-Identifier: Apache-2.0 */
/* json_check.h - a JSON syntax check (RFC 8259), so that a tool handed a
 * file can say "not JSON at byte N" instead of producing a broken page. */
#ifndef XDEV_CORE_JSON_CHECK_H
#define XDEV_CORE_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* True when text[0..len) is one JSON value surrounded only by whitespace,
 * its strings valid UTF-8.
 * Otherwise *at = the byte offset of the first error and *what = what was
 * expected there (a static string). Depth counts from 0 (the outermost
 * value): an object or array at depth 513 or more, i.e. more than 513
 * nested, is an error ("nesting no deeper than 512"). */
bool xdev_json_check(const char *text, size_t len, size_t *at, const char **what);

/* For text that xdev_json_check accepted: the first byte of the value of
 * the top-level object's member `name` ('[' for an array, '{', '"', 't',
 * 'f', 'n', '-' or a digit), the last such member when it repeats; 0 when
 * the text is not an object or has no member of that name among its own
 * (one nested deeper does not count). The name is matched as written,
 * without escapes. */
char xdev_json_top_member(const char *text, size_t len, const char *name);

#endif
