/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_env.c - libFuzzer target for the XDEV_* environment parsers
 * (core/base/env.c: xdev_env_bool, xdev_env_index_list). The input's first byte
 * picks the parser ('b': boolean, anything else: index list), the second its
 * parameter (the fallback's bit, or the list's capacity 1..16), the rest is
 * the variable's value. Checks, beyond "no crash, no out-of-bounds access":
 * a rejection is XDEV_ERROR_ENV with a message naming the variable; an
 * accepted boolean is one of the accepted words (or empty: the fallback); an
 * accepted list is well-formed, within capacity, of distinct non-negative
 * indices, and parses back to itself once printed. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/env.h"

#define VAR "XDEV_FUZZ_VAR"
#define CAP_MAX 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The variable lives in this buffer (putenv), so that millions of distinct
 * values do not pile up inside the C library as they do with setenv. */
static char g_env[sizeof VAR + 65536] = VAR "=";

/* Sets VAR to `value`; false when it is too long for the buffer. */
static bool set_var(const char *value) {
    size_t n = strlen(value);
    if (n >= sizeof g_env - sizeof VAR) return false;
    memcpy(g_env + sizeof VAR, value, n + 1);
    return putenv(g_env) == 0;
}

static void check_rejection(xdev_status_t st) {
    if (st != XDEV_ERROR_ENV) abort();
    if (strstr(xdev_last_error(), VAR) == NULL) abort(); /* names the variable */
}

static bool is_bool_word(const char *v, bool *value) {
    static const char *const words[] = {"1", "true", "yes", "on", "0", "false", "no", "off"};
    for (int i = 0; i < 8; i++)
        if (strcasecmp(v, words[i]) == 0) {
            *value = i < 4;
            return true;
        }
    return false;
}

static void fuzz_bool(const char *v, bool fallback) {
    bool out = !fallback, word = false;
    xdev_status_t st = xdev_env_bool(VAR, fallback, &out);
    bool known = is_bool_word(v, &word);
    if (v[0] == '\0') {
        if (st != XDEV_SUCCESS || out != fallback) abort();
    } else if (known) {
        if (st != XDEV_SUCCESS || out != word) abort();
    } else {
        check_rejection(st);
    }
}

/* The syntax an index list must have: empty, or digits separated by single
 * commas (no signs, spaces, or empty items). */
static bool list_syntax_ok(const char *v) {
    if (v[0] == '\0') return true;
    bool digit = false;
    for (const char *p = v; *p; p++) {
        if (*p >= '0' && *p <= '9') {
            digit = true;
        } else if (*p == ',' && digit) {
            digit = false;
        } else {
            return false;
        }
    }
    return digit;
}

static void fuzz_list(const char *v, int cap) {
    int list[CAP_MAX + 1];
    int count = -2;
    list[cap] = 0x5a5a5a5a; /* a write past `cap` entries shows here */
    xdev_status_t st = xdev_env_index_list(VAR, list, cap, &count);
    if (list[cap] != 0x5a5a5a5a) abort();
    if (st != XDEV_SUCCESS) {
        check_rejection(st);
        return;
    }
    if (!list_syntax_ok(v)) abort();
    if (count < 0 || count > cap) abort();
    if ((count == 0) != (v[0] == '\0')) abort();
    for (int i = 0; i < count; i++) {
        if (list[i] < 0) abort();
        for (int j = 0; j < i; j++)
            if (list[i] == list[j]) abort();
    }
    /* Printed back ("3,1") it parses to the same list. */
    char text[CAP_MAX * 12 + 1];
    size_t len = 0;
    text[0] = '\0';
    for (int i = 0; i < count; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%d", i ? "," : "", list[i]);
    if (!set_var(text)) return;
    int again[CAP_MAX + 1], n2 = -2;
    if (xdev_env_index_list(VAR, again, cap, &n2) != XDEV_SUCCESS || n2 != count) abort();
    if (count > 0 && memcmp(again, list, (size_t)count * sizeof list[0]) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) {
        /* Unset: the fallback, and "no list" (-1). */
        unsetenv(VAR);
        bool out = false;
        int list[1], count = 0;
        if (xdev_env_bool(VAR, true, &out) != XDEV_SUCCESS || !out) abort();
        if (xdev_env_index_list(VAR, list, 1, &count) != XDEV_SUCCESS || count != -1) abort();
        return 0;
    }
    /* An environment value is a C string: it ends at the first NUL. */
    size_t n = strnlen((const char *)data + 2, size - 2);
    char *v = malloc(n + 1);
    if (v == NULL) return 0;
    memcpy(v, data + 2, n);
    v[n] = '\0';
    if (set_var(v)) {
        xdev_clear_error();
        if (data[0] == 'b')
            fuzz_bool(v, data[1] & 1);
        else
            fuzz_list(v, 1 + data[1] % CAP_MAX);
    }
    free(v);
    return 0;
}
