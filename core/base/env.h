/* SPDX-License-Identifier: Apache-2.0 */
/* env.h - strict parsing of XDEV_* environment variables.
 * A malformed value is an error naming the variable, never silently ignored. */
#ifndef XDEV_CORE_ENV_H
#define XDEV_CORE_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "xdev/error.h"

/* getenv; NULL when unset. Empty strings are returned as "". */
const char *xdev_env_get(const char *name);

/* What xdev_env_bool accepts, for messages of callers that parse booleans
 * the same way (XDEV_LAUNCH_BLOCKING, XDEV_NO_MEMORY_CACHING, XDEV_ALLOW_TF32). */
#define XDEV_ENV_BOOL_ACCEPTED                                                                     \
    "expected 1, true, yes or on, or 0, false, no or off, in any case; unset or empty for the "    \
    "default"

/* 0/1/true/false/yes/no/on/off (case-insensitive); unset or "" gives `fallback`. */
xdev_status_t xdev_env_bool(const char *name, bool fallback, bool *out);

/* Comma list of distinct non-negative integers ("3,1"); at most `cap` entries.
 * *count = -1 when unset (no renumbering). */
xdev_status_t xdev_env_index_list(const char *name, int *list, int cap, int *count);

/* A decimal integer in lo..hi (no sign, spaces or suffix); unset or "" gives
 * `fallback` (which may lie outside lo..hi: -1 for "not set"). */
xdev_status_t xdev_env_int(const char *name, int fallback, int lo, int hi, int *out);

#endif
