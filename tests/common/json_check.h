/* SPDX-License-Identifier: Apache-2.0 */
/* json_check.h - a strict JSON syntax check for tests (RFC 8259 grammar, the
 * library's checker), so output is proven parseable without a JSON library. */
#ifndef JSON_CHECK_H
#define JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* True when `text` is exactly one valid JSON value; else false and a reason
 * with the byte offset in err. */
bool json_check(const char *text, char *err, size_t errlen);

#endif
