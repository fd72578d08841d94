/* json_check.c - recursive-descent JSON syntax checker (see json_check.h). */
#include "json_check.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t i;
    int depth;
    const char *why;
} jp_t;

static void ws(jp_t *p) {
    while (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')
        p->i++;
}

static bool value(jp_t *p);

static bool string(jp_t *p) {
    if (p->s[p->i] != '"') return p->why = "expected string", false;
    p->i++;
    for (;;) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '\0') return p->why = "unterminated string", false;
        if (c < 0x20) return p->why = "control character in string", false;
        p->i++;
        if (c == '"') return true;
        if (c == '\\') {
            char e = p->s[p->i++];
            if (e == 'u') {
                for (int k = 0; k < 4; k++)
                    if (!isxdigit((unsigned char)p->s[p->i++])) return p->why = "bad \\u", false;
            } else if (!strchr("\"\\/bfnrt", e) || e == '\0') {
                return p->why = "bad escape", false;
            }
        }
    }
}

static bool number(jp_t *p) {
    size_t start = p->i;
    if (p->s[p->i] == '-') p->i++;
    if (p->s[p->i] == '0')
        p->i++;
    else if (isdigit((unsigned char)p->s[p->i]))
        while (isdigit((unsigned char)p->s[p->i]))
            p->i++;
    else
        return p->why = "bad number", false;
    if (p->s[p->i] == '.') {
        p->i++;
        if (!isdigit((unsigned char)p->s[p->i])) return p->why = "bad fraction", false;
        while (isdigit((unsigned char)p->s[p->i]))
            p->i++;
    }
    if (p->s[p->i] == 'e' || p->s[p->i] == 'E') {
        p->i++;
        if (p->s[p->i] == '+' || p->s[p->i] == '-') p->i++;
        if (!isdigit((unsigned char)p->s[p->i])) return p->why = "bad exponent", false;
        while (isdigit((unsigned char)p->s[p->i]))
            p->i++;
    }
    return p->i > start;
}

static bool literal(jp_t *p, const char *word) {
    size_t n = strlen(word);
    if (strncmp(p->s + p->i, word, n) != 0) return p->why = "bad literal", false;
    p->i += n;
    return true;
}

static bool container(jp_t *p, char open, char close) {
    if (++p->depth > 512) return p->why = "too deep", false;
    p->i++; /* open */
    ws(p);
    if (p->s[p->i] == close) {
        p->i++;
        p->depth--;
        return true;
    }
    for (;;) {
        ws(p);
        if (open == '{') {
            if (!string(p)) return false;
            ws(p);
            if (p->s[p->i++] != ':') return p->why = "expected ':'", false;
            ws(p);
        }
        if (!value(p)) return false;
        ws(p);
        char c = p->s[p->i++];
        if (c == close) break;
        if (c != ',') return p->why = "expected ',' or close", false;
    }
    p->depth--;
    return true;
}

static bool value(jp_t *p) {
    ws(p);
    switch (p->s[p->i]) {
    case '{':
        return container(p, '{', '}');
    case '[':
        return container(p, '[', ']');
    case '"':
        return string(p);
    case 't':
        return literal(p, "true");
    case 'f':
        return literal(p, "false");
    case 'n':
        return literal(p, "null");
    default:
        return number(p);
    }
}

bool json_check(const char *text, char *err, size_t errlen) {
    jp_t p = {text, 0, 0, NULL};
    bool ok = value(&p);
    if (ok) {
        ws(&p);
        if (p.s[p.i] != '\0') {
            ok = false;
            p.why = "trailing characters";
        }
    }
    if (!ok && err != NULL) snprintf(err, errlen, "%s at byte %zu", p.why, p.i);
    return ok;
}
