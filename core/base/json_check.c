/* SPDX-License-Identifier: Apache-2.0 */
/* json_check.c - a recursive-descent JSON syntax check with a depth limit
 * (no tree is built: the memory view's page parses the text itself), and a
 * look at the top-level object's members for the page builders. */
#include "base/json_check.h"

#include <string.h>

#include "base/utf8.h"

typedef struct {
    const char *s;
    size_t n, i;
    const char *what;
} cursor_t;

static void skip_ws(cursor_t *c) {
    while (c->i < c->n && strchr(" \t\r\n", c->s[c->i]) != NULL && c->s[c->i] != '\0')
        c->i++;
}

static bool fail(cursor_t *c, const char *what) {
    c->what = what;
    return false;
}

static bool is_digit(cursor_t *c) {
    return c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9';
}

static bool string(cursor_t *c) {
    c->i++; /* the opening quote */
    while (c->i < c->n) {
        unsigned char ch = (unsigned char)c->s[c->i];
        if (ch == '"') {
            c->i++;
            return true;
        }
        if (ch < 0x20) return fail(c, "no control character inside a string");
        if (ch >= 0x80) { /* JSON text is UTF-8 (RFC 8259 section 8.1) */
            size_t k = xdev_utf8_char(c->s + c->i, c->n - c->i);
            if (k == 0) return fail(c, "UTF-8 (these bytes begin no character)");
            c->i += k;
            continue;
        }
        if (ch == '\\') {
            c->i++;
            if (c->i >= c->n) break;
            char e = c->s[c->i];
            if (e == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (c->i + k >= c->n ||
                        strchr("0123456789abcdefABCDEF", c->s[c->i + k]) == NULL ||
                        c->s[c->i + k] == '\0')
                        return fail(c, "four hex digits after \\u");
                c->i += 4;
            } else if (strchr("\"\\/bfnrt", e) == NULL || e == '\0') {
                return fail(c, "a valid escape after '\\'");
            }
        }
        c->i++;
    }
    return fail(c, "a closing '\"'");
}

static bool number(cursor_t *c) {
    if (c->s[c->i] == '-') c->i++;
    if (!is_digit(c)) return fail(c, "a digit");
    if (c->s[c->i] == '0')
        c->i++;
    else
        while (is_digit(c))
            c->i++;
    if (c->i < c->n && c->s[c->i] == '.') {
        c->i++;
        if (!is_digit(c)) return fail(c, "a digit after '.'");
        while (is_digit(c))
            c->i++;
    }
    if (c->i < c->n && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
        c->i++;
        if (c->i < c->n && (c->s[c->i] == '+' || c->s[c->i] == '-')) c->i++;
        if (!is_digit(c)) return fail(c, "a digit in the exponent");
        while (is_digit(c))
            c->i++;
    }
    return true;
}

static bool literal(cursor_t *c, const char *word) {
    size_t len = strlen(word);
    if (c->n - c->i < len || memcmp(c->s + c->i, word, len) != 0)
        return fail(c, "a value (object, array, string, number, true, false or null)");
    c->i += len;
    return true;
}

static bool value(cursor_t *c, int depth);

/* An object or an array: members separated by commas up to `close`. */
static bool container(cursor_t *c, int depth, char close) {
    if (depth > 512) return fail(c, "nesting no deeper than 512");
    c->i++;
    skip_ws(c);
    if (c->i < c->n && c->s[c->i] == close) {
        c->i++;
        return true;
    }
    for (;;) {
        if (close == '}') {
            skip_ws(c);
            if (c->i >= c->n || c->s[c->i] != '"') return fail(c, "a member name in quotes");
            if (!string(c)) return false;
            skip_ws(c);
            if (c->i >= c->n || c->s[c->i] != ':') return fail(c, "':' after the member name");
            c->i++;
        }
        if (!value(c, depth + 1)) return false;
        skip_ws(c);
        if (c->i < c->n && c->s[c->i] == ',') {
            c->i++;
            continue;
        }
        if (c->i < c->n && c->s[c->i] == close) {
            c->i++;
            return true;
        }
        return fail(c, close == '}' ? "',' or '}'" : "',' or ']'");
    }
}

static bool value(cursor_t *c, int depth) {
    skip_ws(c);
    if (c->i >= c->n) return fail(c, "a value, not the end of the text");
    switch (c->s[c->i]) {
    case '{':
        return container(c, depth, '}');
    case '[':
        return container(c, depth, ']');
    case '"':
        return string(c);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    default:
        if (c->s[c->i] != '-' && !is_digit(c))
            return fail(c, "a value (object, array, string, number, true, false or null)");
        return number(c);
    }
}

bool xdev_json_check(const char *text, size_t len, size_t *at, const char **what) {
    cursor_t c = {text, len, 0, NULL};
    bool ok = value(&c, 0);
    if (ok) {
        skip_ws(&c);
        if (c.i < c.n) ok = fail(&c, "the end of the text after the value");
    }
    if (!ok) {
        *at = c.i;
        *what = c.what;
    }
    return ok;
}

/* Walks only the top level, skipping each member's value with the checker
 * itself, so a name nested deeper is never taken for a top-level one. */
char xdev_json_top_member(const char *text, size_t len, const char *name) {
    cursor_t c = {text, len, 0, NULL};
    skip_ws(&c);
    if (c.i >= c.n || text[c.i] != '{') return 0;
    c.i++;
    size_t name_len = strlen(name);
    char found = 0;
    for (;;) {
        skip_ws(&c);
        if (c.i >= c.n || text[c.i] != '"') return found; /* '}' of an empty object */
        size_t key = c.i + 1;
        if (!string(&c)) return 0;
        bool match = c.i - 1 - key == name_len && memcmp(text + key, name, name_len) == 0;
        skip_ws(&c);
        if (c.i >= c.n || text[c.i] != ':') return 0;
        c.i++;
        skip_ws(&c);
        if (c.i >= c.n) return 0;
        if (match) found = text[c.i]; /* the last one wins, as in JSON.parse */
        if (!value(&c, 1)) return 0;
        skip_ws(&c);
        if (c.i >= c.n || text[c.i] != ',') return found;
        c.i++;
    }
}
