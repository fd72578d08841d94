/* SPDX-License-Identifier: Apache-2.0 */
/* error_internal.h - how core code reports failures.
 *
 * XDEV_FAIL sets this thread's message (no prefix) and returns the status.
 * Public functions wrap internal failures with XDEV_CHECK, which prepends the
 * public function's name once, so a message reads
 *   "xdev_stream_create: cpu:7: device index out of range (4 cpu devices)".
 *
 * The rule (xdev/error.h): only a failing public call changes the thread's
 * error state. Code that calls something which may fail and then handles the
 * failure (probing a backend, a fallback, a bool query) must not leave that
 * failure behind: bracket it with xdev_core_error_save / _restore.
 *
 * An argument may be the thread's current message (xdev_last_error()): the
 * formatter writes into a scratch buffer first (error.c). Still, say what
 * failed in the new message rather than wrapping the old one, so that a
 * path or a name is not repeated. */
#ifndef XDEV_CORE_ERROR_INTERNAL_H
#define XDEV_CORE_ERROR_INTERNAL_H

#include <stdarg.h>

#include "xdev/error.h"

xdev_status_t xdev_core_fail(xdev_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
xdev_status_t xdev_core_fail_v(xdev_status_t status, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* "<what>: <vendor name>: <vendor text>", formatted once (host services). */
xdev_status_t xdev_core_fail_vendor(xdev_status_t status, const char *name, const char *text,
                                    const char *what, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Prefix the current message with `func` (once) and return status. */
xdev_status_t xdev_core_blame(xdev_status_t status, const char *func);

/* This thread's error state, saved around a failure that is handled. */
typedef struct xdev_error_state {
    xdev_status_t status;
    char message[2048]; /* XDEV_MESSAGE_MAX in error.c */
} xdev_error_state_t;

void xdev_core_error_save(xdev_error_state_t *saved);
void xdev_core_error_restore(const xdev_error_state_t *saved);

#define XDEV_FAIL(status, ...) xdev_core_fail((status), __VA_ARGS__)

#define XDEV_CHECK(expr)                                                                           \
    do {                                                                                           \
        xdev_status_t xdev_check_st_ = (expr);                                                     \
        if (xdev_check_st_ != XDEV_SUCCESS) return xdev_core_blame(xdev_check_st_, __func__);      \
    } while (0)

/* Fail from a public function with its name as prefix. */
#define XDEV_API_FAIL(status, ...) xdev_core_blame(xdev_core_fail((status), __VA_ARGS__), __func__)

/* Validate a required pointer argument of a public function. */
#define XDEV_REQUIRE_ARG(arg)                                                                      \
    do {                                                                                           \
        if ((arg) == NULL)                                                                         \
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "argument '%s' is NULL", #arg);         \
    } while (0)

#endif
