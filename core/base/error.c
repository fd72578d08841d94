/* error.c - status names and the thread-local "last error" message.
 *
 * The state is sticky, as xdev/error.h documents: a failing call sets it, a
 * successful call leaves it as it was, xdev_clear_error() resets it. */
#include "base/error_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define XDEV_MESSAGE_MAX 2048
_Static_assert(sizeof(((xdev_error_state_t *)0)->message) == XDEV_MESSAGE_MAX,
               "xdev_error_state_t holds a whole message");

static _Thread_local char tls_message[XDEV_MESSAGE_MAX];
static _Thread_local xdev_status_t tls_status;

const char *xdev_status_string(xdev_status_t status) {
    switch (status) {
    case XDEV_SUCCESS:
        return "XDEV_SUCCESS";
    case XDEV_ERROR_INVALID_VALUE:
        return "XDEV_ERROR_INVALID_VALUE";
    case XDEV_ERROR_INVALID_DEVICE:
        return "XDEV_ERROR_INVALID_DEVICE";
    case XDEV_ERROR_INVALID_HANDLE:
        return "XDEV_ERROR_INVALID_HANDLE";
    case XDEV_ERROR_OUT_OF_MEMORY:
        return "XDEV_ERROR_OUT_OF_MEMORY";
    case XDEV_ERROR_NOT_SUPPORTED:
        return "XDEV_ERROR_NOT_SUPPORTED";
    case XDEV_ERROR_NOT_READY:
        return "XDEV_ERROR_NOT_READY";
    case XDEV_ERROR_CROSS_DEVICE:
        return "XDEV_ERROR_CROSS_DEVICE";
    case XDEV_ERROR_BACKEND_UNAVAILABLE:
        return "XDEV_ERROR_BACKEND_UNAVAILABLE";
    case XDEV_ERROR_BACKEND:
        return "XDEV_ERROR_BACKEND";
    case XDEV_ERROR_ENV:
        return "XDEV_ERROR_ENV";
    case XDEV_ERROR_INTERNAL:
        return "XDEV_ERROR_INTERNAL";
    case XDEV_ERROR_IO:
        return "XDEV_ERROR_IO";
    }
    return "XDEV_ERROR_UNKNOWN_STATUS";
}

const char *xdev_last_error(void) {
    return tls_message;
}

xdev_status_t xdev_last_status(void) {
    return tls_status;
}

void xdev_clear_error(void) {
    tls_message[0] = '\0';
    tls_status = XDEV_SUCCESS;
}

void xdev_core_error_save(xdev_error_state_t *saved) {
    saved->status = tls_status;
    size_t n = strnlen(tls_message, sizeof tls_message - 1);
    memcpy(saved->message, tls_message, n);
    saved->message[n] = '\0';
}

void xdev_core_error_restore(const xdev_error_state_t *saved) {
    size_t n = strnlen(saved->message, sizeof saved->message - 1);
    memcpy(tls_message, saved->message, n);
    tls_message[n] = '\0';
    tls_status = saved->status;
}

xdev_status_t xdev_core_fail_v(xdev_status_t status, const char *fmt, va_list ap) {
    vsnprintf(tls_message, sizeof tls_message, fmt, ap);
    tls_status = status;
    return status;
}

xdev_status_t xdev_core_fail(xdev_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    xdev_core_fail_v(status, fmt, ap);
    va_end(ap);
    return status;
}

/* The one place a backend's vendor error is formatted: straight into the
 * thread's message, "<what>: <name>: <text>". */
xdev_status_t xdev_core_fail_vendor(xdev_status_t status, const char *name, const char *text,
                                    const char *what, va_list ap) {
    int n = vsnprintf(tls_message, sizeof tls_message, what, ap);
    size_t used = n < 0 ? 0 : (size_t)n < sizeof tls_message ? (size_t)n : sizeof tls_message - 1;
    snprintf(tls_message + used, sizeof tls_message - used, ": %s: %s", name ? name : "?",
             text ? text : "?");
    tls_status = status;
    return status;
}

xdev_status_t xdev_core_blame(xdev_status_t status, const char *func) {
    size_t flen = strlen(func);
    /* Already prefixed by an outer public call, or by this one. */
    if (strncmp(tls_message, "xdev_", 5) == 0) {
        tls_status = status;
        return status;
    }
    size_t mlen = strlen(tls_message);
    if (flen + 2 + mlen + 1 > sizeof tls_message) mlen = sizeof tls_message - flen - 3;
    memmove(tls_message + flen + 2, tls_message, mlen);
    memcpy(tls_message, func, flen);
    tls_message[flen] = ':';
    tls_message[flen + 1] = ' ';
    tls_message[flen + 2 + mlen] = '\0';
    tls_status = status;
    return status;
}
