/* SPDX-License-Identifier: Apache-2.0 */
/* prim_compare.c - reads a select_if predicate of the form `in0 OP literal`
 * (or `literal OP in0`) into the comparison the backend's select_compare
 * slot runs without a compile or a flags buffer (prim_compare.h).
 *
 * The comparison must be bit for bit what the compiled C expression does,
 * so the reader is conservative: anything it is not certain of (hex, octal,
 * suffixes other than f/F, a literal out of range or that rounds to 0 or
 * infinity, a character the elementwise path would refuse) is refused and
 * the caller compiles the predicate as before. Literal values come from
 * strtod / strtof (correctly rounded, as the compilers do), never
 * (float)strtod: rounding to double then to float can differ from rounding
 * to float once. */
#include "math/prim_compare.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/backend.h"

#define CMP_MAX_PREDICATE 256 /* longer: the compiled path (and its own limits) */

typedef struct literal {
    bool integer; /* a decimal integer literal: ivalue */
    bool f;       /* a floating literal with the f/F suffix: fvalue */
    int64_t ivalue;
    double dvalue; /* the unsuffixed floating literal's double */
    float fvalue;
} literal_t;

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

static bool is_ident(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* "in0" as a whole identifier at p: the end, else NULL. */
static const char *read_in0(const char *p) {
    if (strncmp(p, "in0", 3) != 0 || is_ident(p[3])) return NULL;
    return p + 3;
}

/* One of < <= > >= == != at p: the end, else NULL. A following character
 * that would make another operator (<<, >>, <=>...) is left for the next
 * token to refuse. */
static const char *read_op(const char *p, int *op) {
    if (p[0] == '<') {
        *op = p[1] == '=' ? XDEV_PRIM_CMP_LE : XDEV_PRIM_CMP_LT;
        return p + (p[1] == '=' ? 2 : 1);
    }
    if (p[0] == '>') {
        *op = p[1] == '=' ? XDEV_PRIM_CMP_GE : XDEV_PRIM_CMP_GT;
        return p + (p[1] == '=' ? 2 : 1);
    }
    if ((p[0] == '=' || p[0] == '!') && p[1] == '=') {
        *op = p[0] == '=' ? XDEV_PRIM_CMP_EQ : XDEV_PRIM_CMP_NE;
        return p + 2;
    }
    return NULL;
}

/* The C preprocessing number at p (digits, letters, '_', '.', and a sign
 * right after e/E/p/P): its length, 0 when p does not start one. The whole
 * token is what the compiler reads as one literal, so it is checked whole. */
static size_t pp_number(const char *p) {
    if (!is_digit(p[0]) && !(p[0] == '.' && is_digit(p[1]))) return 0;
    size_t n = 1;
    for (;;) {
        char c = p[n];
        if ((c == '+' || c == '-') && strchr("eEpP", p[n - 1]) != NULL)
            n++;
        else if (is_ident(c) || c == '.')
            n++;
        else
            return n;
    }
}

/* A decimal floating literal's body: digits [. digits] [e [+-] digits], a
 * digit in the mantissa, and a '.' or an exponent (else an integer). */
static bool floating_body(const char *s, size_t n) {
    size_t i = 0, mant = 0;
    while (i < n && is_digit(s[i]))
        i++, mant++;
    bool dot = i < n && s[i] == '.';
    if (dot) {
        i++;
        while (i < n && is_digit(s[i]))
            i++, mant++;
    }
    if (mant == 0) return false;
    bool exp = i < n && (s[i] == 'e' || s[i] == 'E');
    if (exp) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t d = 0;
        while (i < n && is_digit(s[i]))
            i++, d++;
        if (d == 0) return false;
    }
    return i == n && (dot || exp);
}

/* The literal token s[0 .. n): false when it is not one this reader is sure
 * of. `neg`: a unary minus before it. */
static bool read_literal(const char *s, size_t n, bool neg, literal_t *lit) {
    char buf[128];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    *lit = (literal_t){0};
    size_t i = 0;
    while (i < n && is_digit(buf[i]))
        i++;
    if (i == n) { /* a decimal integer: no leading 0 (octal) but 0 itself */
        if (buf[0] == '0' && n > 1) return false;
        uint64_t v = 0;
        for (size_t k = 0; k < n; k++) {
            if (v > ((uint64_t)INT64_MAX - (uint64_t)(buf[k] - '0')) / 10) return false;
            v = v * 10 + (uint64_t)(buf[k] - '0');
        }
        lit->integer = true;
        lit->ivalue = neg ? -(int64_t)v : (int64_t)v;
        return true;
    }
    lit->f = buf[n - 1] == 'f' || buf[n - 1] == 'F';
    size_t body = lit->f ? n - 1 : n;
    if (!floating_body(buf, body)) return false;
    buf[body] = '\0';
    /* Correctly rounded conversions; out of range either way (ERANGE:
     * overflow, or an underflow the compilers may treat otherwise) is
     * refused, and so is a decimal point the locale does not read. */
    char *end = NULL;
    errno = 0;
    if (lit->f) {
        float v = strtof(buf, &end);
        if (errno != 0 || end != buf + body) return false;
        lit->fvalue = neg ? -v : v;
    } else {
        double v = strtod(buf, &end);
        if (errno != 0 || end != buf + body) return false;
        lit->dvalue = neg ? -v : v;
    }
    return true;
}

/* An optional unary - or + and a literal at p: the end, else NULL. */
static const char *read_signed_literal(const char *p, literal_t *lit) {
    bool neg = false;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p = skip_ws(p + 1);
    }
    size_t n = pp_number(p);
    if (n == 0 || !read_literal(p, n, neg, lit)) return NULL;
    return p + n;
}

/* lit OP in0 is in0 OP' lit. */
static int mirrored(int op) {
    switch (op) {
    case XDEV_PRIM_CMP_LT:
        return XDEV_PRIM_CMP_GT;
    case XDEV_PRIM_CMP_LE:
        return XDEV_PRIM_CMP_GE;
    case XDEV_PRIM_CMP_GT:
        return XDEV_PRIM_CMP_LT;
    case XDEV_PRIM_CMP_GE:
        return XDEV_PRIM_CMP_LE;
    default: /* == and != */
        return op;
    }
}

/* The type and value C compares in0 of `dtype` with the literal in (the
 * usual arithmetic conversions); false for integer items against a
 * floating literal (left to the compiled path). */
static bool convert(xdev_dtype_t dtype, const literal_t *lit, xdev_prim_compare_t *c) {
    switch (dtype) {
    case XDEV_DTYPE_F32: /* float vs float / integer: float; vs double: double */
        if (lit->integer) {
            c->type = XDEV_DTYPE_F32;
            c->value = (double)(float)lit->ivalue;
        } else if (lit->f) {
            c->type = XDEV_DTYPE_F32;
            c->value = (double)lit->fvalue;
        } else {
            c->type = XDEV_DTYPE_F64;
            c->value = lit->dvalue;
        }
        return true;
    case XDEV_DTYPE_F64:
        c->type = XDEV_DTYPE_F64;
        c->value = lit->integer ? (double)lit->ivalue : lit->f ? (double)lit->fvalue : lit->dvalue;
        return true;
    case XDEV_DTYPE_I32:
    case XDEV_DTYPE_I64: /* int / long long vs an int, long or long long: exact in int64 */
        if (!lit->integer) return false;
        c->type = XDEV_DTYPE_I64;
        c->ivalue = lit->ivalue;
        return true;
    default:
        return false;
    }
}

bool xdev_prim_compare_parse(const char *predicate, xdev_dtype_t dtype, xdev_prim_compare_t *out) {
    if (predicate == NULL || out == NULL || strlen(predicate) > CMP_MAX_PREDICATE) return false;
    const char *p = skip_ws(predicate);
    int parens = 0;
    while (*p == '(') {
        parens++;
        p = skip_ws(p + 1);
    }
    literal_t lit;
    int op;
    const char *q = read_in0(p);
    bool left = q == NULL; /* the literal on the left */
    if (left) {
        if ((q = read_signed_literal(p, &lit)) == NULL) return false;
        if ((q = read_op(skip_ws(q), &op)) == NULL) return false;
        if ((q = read_in0(skip_ws(q))) == NULL) return false;
        op = mirrored(op);
    } else {
        if ((q = read_op(skip_ws(q), &op)) == NULL) return false;
        if ((q = read_signed_literal(skip_ws(q), &lit)) == NULL) return false;
    }
    q = skip_ws(q);
    for (; parens > 0; parens--) {
        if (*q != ')') return false;
        q = skip_ws(q + 1);
    }
    if (*q != '\0') return false;
    xdev_prim_compare_t c = {.op = op};
    if (!convert(dtype, &lit, &c)) return false;
    *out = c;
    return true;
}
