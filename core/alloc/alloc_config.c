/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_config.c - strict parser for XDEV_ALLOC_CONF (see alloc_config.h). */
#include "alloc/alloc_config.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB ((size_t)1 << 20)

void xdev_alloc_config_defaults(xdev_alloc_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->max_split_size = SIZE_MAX;
    cfg->pinned_max_cached = SIZE_MAX;
    cfg->trim_before_grow = true;
    cfg->thread_arenas = XDEV_DEFAULT_ARENAS;
}

static bool fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t len, const char *fmt, ...) {
    if (err != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* A plain decimal integer in [lo, hi]. */
static bool parse_uint(const char *s, size_t len, unsigned long long lo, unsigned long long hi,
                       unsigned long long *out) {
    if (len == 0 || len > 19) return false;
    unsigned long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        v = v * 10 + (unsigned long long)(s[i] - '0');
    }
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, size_t len, bool *out) {
    if ((len == 4 && strncasecmp(s, "true", 4) == 0) || (len == 1 && s[0] == '1')) {
        *out = true;
        return true;
    }
    if ((len == 5 && strncasecmp(s, "false", 5) == 0) || (len == 1 && s[0] == '0')) {
        *out = false;
        return true;
    }
    return false;
}

static bool is_pow2(unsigned long long v) {
    return v != 0 && (v & (v - 1)) == 0;
}

/* Interval index of a size given in MiB (a power of two). */
static int interval_of_mib(unsigned long long mib) {
    int i = 0;
    while (mib > 1 && i < XDEV_ROUNDUP_INTERVALS - 1) {
        mib >>= 1;
        i++;
    }
    return i;
}

/* "[256:1,512:2,>:8]": divisions per interval starting at the given MiB size;
 * each entry applies from its interval up to the next entry's. */
static bool parse_divisions_list(const char *v, size_t len, unsigned *div, char *err,
                                 size_t errlen) {
    const char *key = "roundup_power2_divisions";
    if (len < 2 || v[len - 1] != ']')
        return fail(err, errlen, "%s: list '%.*s' must end with ']'", key, (int)len, v);
    const char *p = v + 1, *end = v + len - 1;
    int last = -1;
    unsigned last_div = 0;
    if (p == end) return fail(err, errlen, "%s: empty list", key);
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *item_end = comma ? comma : end;
        const char *colon = memchr(p, ':', (size_t)(item_end - p));
        if (colon == NULL)
            return fail(err, errlen, "%s: entry '%.*s' is not size:divisions", key,
                        (int)(item_end - p), p);
        unsigned long long d;
        if (!parse_uint(colon + 1, (size_t)(item_end - colon - 1), 0, 64, &d) ||
            (d != 0 && !is_pow2(d)))
            return fail(err, errlen, "%s: divisions '%.*s' must be 0 or a power of two <= 64", key,
                        (int)(item_end - colon - 1), colon + 1);
        int idx;
        if (colon - p == 1 && p[0] == '>') {
            idx = last + 1;
            if (idx >= XDEV_ROUNDUP_INTERVALS) idx = XDEV_ROUNDUP_INTERVALS - 1;
            for (int i = idx; i < XDEV_ROUNDUP_INTERVALS; i++)
                div[i] = (unsigned)d;
            if (comma != NULL) return fail(err, errlen, "%s: '>' must be the last entry", key);
            return true;
        }
        unsigned long long mib;
        if (!parse_uint(p, (size_t)(colon - p), 1, (unsigned long long)1 << 40, &mib) ||
            !is_pow2(mib))
            return fail(err, errlen, "%s: interval '%.*s' must be a power-of-two size in MiB", key,
                        (int)(colon - p), p);
        idx = interval_of_mib(mib);
        if (idx <= last)
            return fail(err, errlen, "%s: intervals must increase ('%.*s')", key, (int)(colon - p),
                        p);
        for (int i = last + 1; i < idx; i++)
            div[i] = last_div;
        div[idx] = (unsigned)d;
        for (int i = idx + 1; i < XDEV_ROUNDUP_INTERVALS; i++)
            div[i] = (unsigned)d;
        last = idx;
        last_div = (unsigned)d;
        p = comma ? comma + 1 : end;
        if (comma != NULL && p == end) return fail(err, errlen, "%s: trailing comma", key);
    }
    return true;
}

/* One key:value pair. */
static bool parse_pair(const char *k, size_t klen, const char *v, size_t vlen,
                       xdev_alloc_config_t *cfg, char *err, size_t errlen) {
#define KEY_IS(name) (klen == strlen(name) && strncmp(k, name, klen) == 0)
    unsigned long long u;
    if (KEY_IS("max_split_size_mb")) {
        if (!parse_uint(v, vlen, 21, (unsigned long long)1 << 30, &u))
            return fail(err, errlen,
                        "max_split_size_mb: '%.*s' is not an integer number of MiB from 21 to "
                        "1073741824 (2^30)",
                        (int)vlen, v);
        cfg->max_split_size = (size_t)u * MIB;
    } else if (KEY_IS("roundup_power2_divisions")) {
        if (vlen > 0 && v[0] == '[')
            return parse_divisions_list(v, vlen, cfg->roundup_divisions, err, errlen);
        if (!parse_uint(v, vlen, 0, 64, &u) || (u != 0 && !is_pow2(u)))
            return fail(err, errlen,
                        "roundup_power2_divisions: '%.*s' must be 0 or a power of two <= 64",
                        (int)vlen, v);
        for (int i = 0; i < XDEV_ROUNDUP_INTERVALS; i++)
            cfg->roundup_divisions[i] = (unsigned)u;
    } else if (KEY_IS("garbage_collection_threshold")) {
        char buf[32];
        char *end = NULL;
        if (vlen == 0 || vlen >= sizeof buf)
            return fail(err, errlen, "garbage_collection_threshold: '%.*s' is not a number",
                        (int)vlen, v);
        memcpy(buf, v, vlen);
        buf[vlen] = '\0';
        double d = strtod(buf, &end);
        if (end != buf + vlen || !isfinite(d) || !(d > 0.0 && d < 1.0) ||
            !isdigit((unsigned char)buf[0]))
            return fail(err, errlen,
                        "garbage_collection_threshold: '%.*s' must be a number between 0 and 1 "
                        "(exclusive)",
                        (int)vlen, v);
        cfg->gc_threshold = d;
    } else if (KEY_IS("expandable_segments")) {
        if (!parse_bool(v, vlen, &cfg->expandable_segments))
            return fail(err, errlen, "expandable_segments: '%.*s' is not true, false, 1 or 0",
                        (int)vlen, v);
    } else if (KEY_IS("trim_before_grow")) {
        if (!parse_bool(v, vlen, &cfg->trim_before_grow))
            return fail(err, errlen, "trim_before_grow: '%.*s' is not true, false, 1 or 0",
                        (int)vlen, v);
    } else if (KEY_IS("thread_arenas")) {
        if (!parse_uint(v, vlen, 1, XDEV_MAX_ARENAS, &u))
            return fail(err, errlen, "thread_arenas: '%.*s' is not an integer from 1 to %d",
                        (int)vlen, v, XDEV_MAX_ARENAS);
        cfg->thread_arenas = (int)u;
    } else if (KEY_IS("backend")) {
        if (vlen == 6 && strncmp(v, "native", 6) == 0)
            cfg->backend_async = false;
        else if ((vlen == 5 && strncmp(v, "async", 5) == 0) ||
                 (vlen == 15 && strncmp(v, "cudaMallocAsync", 15) == 0))
            cfg->backend_async = true;
        else
            return fail(err, errlen, "backend: '%.*s' is not native, async or cudaMallocAsync",
                        (int)vlen, v);
    } else if (KEY_IS("pinned_max_cached_mb")) {
        if (!parse_uint(v, vlen, 0, (unsigned long long)1 << 30, &u))
            return fail(err, errlen,
                        "pinned_max_cached_mb: '%.*s' is not an integer number of MiB from 0 to "
                        "1073741824 (2^30)",
                        (int)vlen, v);
        cfg->pinned_max_cached = (size_t)u * MIB;
    } else {
        return fail(err, errlen,
                    "unknown key '%.*s' (known: max_split_size_mb, roundup_power2_divisions, "
                    "garbage_collection_threshold, expandable_segments, backend, "
                    "pinned_max_cached_mb, trim_before_grow, thread_arenas)",
                    (int)klen, k);
    }
    return true;
#undef KEY_IS
}

bool xdev_alloc_config_parse(const char *text, xdev_alloc_config_t *cfg, char *err, size_t errlen) {
    xdev_alloc_config_defaults(cfg);
    if (text == NULL) return true;
    size_t n = strlen(text);
    size_t i = 0;
    while (i < n) {
        /* key up to ':' */
        size_t k0 = i;
        while (i < n && text[i] != ':' && text[i] != ',')
            i++;
        if (i == n || text[i] != ':')
            return fail(err, errlen, "'%.*s' is not key:value", (int)(i - k0), text + k0);
        size_t klen = i - k0;
        if (klen == 0) return fail(err, errlen, "empty key before ':' at position %zu", k0);
        i++;
        /* value up to the next top-level ',' (commas inside [...] belong to it) */
        size_t v0 = i;
        int depth = 0;
        while (i < n && (text[i] != ',' || depth > 0)) {
            if (text[i] == '[')
                depth++;
            else if (text[i] == ']' && depth > 0)
                depth--;
            i++;
        }
        if (depth != 0) return fail(err, errlen, "%.*s: unbalanced '['", (int)klen, text + k0);
        if (!parse_pair(text + k0, klen, text + v0, i - v0, cfg, err, errlen)) return false;
        if (i < n) {
            i++; /* ',' */
            if (i == n) return fail(err, errlen, "trailing comma");
        }
    }
    return true;
}
