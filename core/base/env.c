/* SPDX-License-Identifier: Apache-2.0 */
/* env.c - strict parsing of XDEV_* environment variables.
 *
 * Every message about a malformed value names the variable, quotes the
 * value, says what is wrong and then lists exactly the forms accepted (the
 * *_ACCEPTED strings below), so a user never has to guess. */
#include "base/env.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error_internal.h"

const char *xdev_env_get(const char *name) {
    return getenv(name);
}

xdev_status_t xdev_env_bool(const char *name, bool fallback, bool *out) {
    const char *v = xdev_env_get(name);
    *out = fallback;
    if (v == NULL || v[0] == '\0') return XDEV_SUCCESS;
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return XDEV_SUCCESS;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return XDEV_SUCCESS;
        }
    }
    return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s' is not a boolean (%s)", name, v,
                     XDEV_ENV_BOOL_ACCEPTED);
}

/* "expected ...": what xdev_env_index_list accepts, given its cap. */
#define INDEX_LIST_FMT                                                                             \
    "expected a comma list of at most %d distinct device indices 0..%d without spaces, such as "   \
    "2,0; empty for no device"
#define INDEX_MAX (1 << 20)

xdev_status_t xdev_env_index_list(const char *name, int *list, int cap, int *count) {
    const char *v = xdev_env_get(name);
    *count = -1;
    if (v == NULL) return XDEV_SUCCESS;
    int n = 0;
    const char *p = v;
    while (*p != '\0') {
        if (!isdigit((unsigned char)*p))
            return XDEV_FAIL(
                XDEV_ERROR_ENV,
                "%s='%s': '%c' at position %d is not part of a device index (" INDEX_LIST_FMT ")",
                name, v, *p, (int)(p - v), cap, INDEX_MAX);
        errno = 0;
        char *end = NULL;
        long idx = strtol(p, &end, 10);
        if (errno != 0 || idx > INDEX_MAX)
            return XDEV_FAIL(XDEV_ERROR_ENV,
                             "%s='%s': index %.*s is too large (" INDEX_LIST_FMT ")", name, v,
                             (int)(end - p), p, cap, INDEX_MAX);
        if (n == cap)
            return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s': more than %d indices (" INDEX_LIST_FMT ")",
                             name, v, cap, cap, INDEX_MAX);
        for (int i = 0; i < n; i++)
            if (list[i] == (int)idx)
                return XDEV_FAIL(XDEV_ERROR_ENV,
                                 "%s='%s': index %ld listed twice (" INDEX_LIST_FMT ")", name, v,
                                 idx, cap, INDEX_MAX);
        list[n++] = (int)idx;
        p = end;
        if (*p == ',') {
            p++;
            if (*p == '\0')
                return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s': trailing comma (" INDEX_LIST_FMT ")",
                                 name, v, cap, INDEX_MAX);
        } else if (*p != '\0') {
            return XDEV_FAIL(
                XDEV_ERROR_ENV,
                "%s='%s': '%c' at position %d is not part of a device index (" INDEX_LIST_FMT ")",
                name, v, *p, (int)(p - v), cap, INDEX_MAX);
        }
    }
    *count = n; /* "" = no devices visible, as CUDA_VISIBLE_DEVICES="" */
    return XDEV_SUCCESS;
}

xdev_status_t xdev_env_int(const char *name, int fallback, int lo, int hi, int *out) {
    const char *v = xdev_env_get(name);
    *out = fallback;
    if (v == NULL || v[0] == '\0') return XDEV_SUCCESS;
    long x = 0;
    const char *p = v;
    for (; isdigit((unsigned char)*p) && x <= hi; p++)
        x = x * 10 + (*p - '0');
    if ((*p != '\0' || x < lo || x > hi) && (fallback < lo || fallback > hi))
        return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s' is not an integer in %d..%d", name, v, lo, hi);
    if (*p != '\0' || x < lo || x > hi)
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "%s='%s' is not an integer in %d..%d (unset or empty for %d)", name, v, lo,
                         hi, fallback);
    *out = (int)x;
    return XDEV_SUCCESS;
}
