/* env.h - strict parsing of XDEV_* environment variables.
 * A malformed value is an error naming the variable, never silently ignored. */
#ifndef XDEV_CORE_ENV_H
#define XDEV_CORE_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "xdev/error.h"

/* getenv; NULL when unset. Empty strings are returned as "". */
const char *xdev_env_get(const char *name);

/* 0/1/true/false/yes/no/on/off (case-insensitive); unset or "" gives `fallback`. */
xdev_status_t xdev_env_bool(const char *name, bool fallback, bool *out);

/* Comma list of distinct non-negative integers ("3,1"); at most `cap` entries.
 * *count = -1 when unset (no renumbering). */
xdev_status_t xdev_env_index_list(const char *name, int *list, int cap, int *count);

#endif
