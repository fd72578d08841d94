/* SPDX-License-Identifier: Apache-2.0 */
/* page.h - the library's HTML views (the memory view, the trace view) are
 * templates compiled in as strings (cmake/embed_file.cmake) with a marker
 * where the data goes; this puts checked JSON there. */
#ifndef XDEV_CORE_PAGE_H
#define XDEV_CORE_PAGE_H

#include <stddef.h>

#include "xdev/error.h"

/* The page `tmpl` with `json` (len bytes) in place of `marker`. The JSON
 * (no NUL byte before len) must be valid UTF-8, valid JSON, and an object
 * whose own (top-level) member `"<required>"` is an array; else
 * XDEV_ERROR_INVALID_VALUE naming the byte or the member, with `what` ("an
 * xdev memory snapshot") in the message. *html is malloc'ed; *html_len
 * (if not NULL) its length. Messages are unprefixed (XDEV_FAIL). */
xdev_status_t xdev_page_with_json(const char *tmpl, const char *marker, const char *json,
                                  size_t len, const char *required, const char *what, char **html,
                                  size_t *html_len);

#endif
