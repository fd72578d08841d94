/* SPDX-License-Identifier: Apache-2.0 */
/* error.c - status names and the thread-local "last error" message.
 *
 * The state is sticky, as xdev/error.h documents: a failing call sets it, a
 * successful call leaves it as it was, xdev_clear_error() resets it.
 *
 * The message lives in a heap buffer per thread, made at the thread's first
 * failure and freed when the thread exits, not in TLS itself: libxdev's
 * TLS is static TLS (thread_state.h) and must stay a few hundred bytes, or
 * dlopen of libxdev (ctypes, JNI) fails for want of spare static TLS. If
 * that buffer cannot be had, the status is still kept and the message says
 * so.
 *
 * A new message may be formatted from the current one ("XDEV_TRACE_FILE=%s:
 * %s", ..., xdev_last_error()): vsnprintf into a buffer that one of its
 * arguments points into is undefined behaviour (it garbled such messages).
 * So every message is formatted into a scratch half of the same allocation
 * first and copied over the message only when complete. */
#include "base/error_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/thread_heap.h"

#define XDEV_MESSAGE_MAX 2048
_Static_assert(sizeof(((xdev_error_state_t *)0)->message) == XDEV_MESSAGE_MAX,
               "xdev_error_state_t holds a whole message");

/* The message (XDEV_MESSAGE_MAX bytes) then the scratch for formatting the
 * next one (as many): this thread's block of g_buffers, or NULL before the
 * first failure. */
static xdev_thread_heap_t g_buffers = XDEV_THREAD_HEAP_INIT(2 * XDEV_MESSAGE_MAX, NULL);
static _Thread_local void *tls_buffer;
static _Thread_local xdev_status_t tls_status;
static const char g_no_buffer[] = "xdev: no memory for this thread's error message";

/* The thread's message buffer for writing: made on first use. NULL when
 * there is no memory for it (the caller then keeps only the status). */
static char *message_buffer(void) {
    return xdev_thread_heap_get(&g_buffers, &tls_buffer);
}

/* The message for reading: "" before any failure on this thread. */
static const char *message_now(void) {
    if (tls_buffer != NULL) return tls_buffer;
    return tls_status == XDEV_SUCCESS ? "" : g_no_buffer;
}

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
    case XDEV_ERROR_NOT_FOUND:
        return "XDEV_ERROR_NOT_FOUND";
    case XDEV_ERROR_LAUNCH_FAILURE:
        return "XDEV_ERROR_LAUNCH_FAILURE";
    case XDEV_ERROR_COMPILE:
        return "XDEV_ERROR_COMPILE";
    case XDEV_ERROR_CAPTURE:
        return "XDEV_ERROR_CAPTURE";
    case XDEV_ERROR_SYNC_DEBUG:
        return "XDEV_ERROR_SYNC_DEBUG";
    }
    return "XDEV_ERROR_UNKNOWN_STATUS";
}

const char *xdev_last_error(void) {
    return message_now();
}

xdev_status_t xdev_last_status(void) {
    return tls_status;
}

void xdev_clear_error(void) {
    char *b = tls_buffer;
    if (b != NULL) b[0] = '\0';
    tls_status = XDEV_SUCCESS;
}

void xdev_core_error_save(xdev_error_state_t *saved) {
    const char *m = message_now();
    saved->status = tls_status;
    size_t n = strnlen(m, XDEV_MESSAGE_MAX - 1);
    memcpy(saved->message, m, n);
    saved->message[n] = '\0';
}

void xdev_core_error_restore(const xdev_error_state_t *saved) {
    tls_status = saved->status;
    char *b = saved->message[0] != '\0' ? message_buffer() : tls_buffer;
    if (b == NULL) return;
    size_t n = strnlen(saved->message, XDEV_MESSAGE_MAX - 1);
    memcpy(b, saved->message, n);
    b[n] = '\0';
}

/* Install the text formatted in the scratch half as the message. */
static void install_scratch(char *b) {
    const char *scratch = b + XDEV_MESSAGE_MAX;
    size_t n = strnlen(scratch, XDEV_MESSAGE_MAX - 1);
    memcpy(b, scratch, n);
    b[n] = '\0';
}

xdev_status_t xdev_core_fail_v(xdev_status_t status, const char *fmt, va_list ap) {
    tls_status = status;
    char *b = message_buffer();
    if (b == NULL) return status;
    char *scratch = b + XDEV_MESSAGE_MAX; /* an argument may be the message itself */
    if (vsnprintf(scratch, XDEV_MESSAGE_MAX, fmt, ap) < 0) scratch[0] = '\0';
    install_scratch(b);
    return status;
}

xdev_status_t xdev_core_fail(xdev_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    xdev_core_fail_v(status, fmt, ap);
    va_end(ap);
    return status;
}

/* The one place a backend's vendor error is formatted: "<what>: <name>:
 * <text>", through the scratch half like every message. */
xdev_status_t xdev_core_fail_vendor(xdev_status_t status, const char *name, const char *text,
                                    const char *what, va_list ap) {
    tls_status = status;
    char *b = message_buffer();
    if (b == NULL) return status;
    char *scratch = b + XDEV_MESSAGE_MAX;
    int n = vsnprintf(scratch, XDEV_MESSAGE_MAX, what, ap);
    size_t used = n < 0 ? 0 : (size_t)n < XDEV_MESSAGE_MAX ? (size_t)n : XDEV_MESSAGE_MAX - 1;
    scratch[used] = '\0';
    /* Some runtimes' description of an error is its name again (HIP 5's
     * "hipErrorNoDevice"): said once. */
    if (text == NULL || text[0] == '\0' || (name != NULL && strcmp(text, name) == 0))
        snprintf(scratch + used, XDEV_MESSAGE_MAX - used, ": %s", name ? name : "?");
    else
        snprintf(scratch + used, XDEV_MESSAGE_MAX - used, ": %s: %s", name ? name : "?", text);
    install_scratch(b);
    return status;
}

xdev_status_t xdev_core_blame(xdev_status_t status, const char *func) {
    size_t flen = strlen(func);
    tls_status = status;
    char *b = message_buffer();
    /* No buffer, or already prefixed by an outer public call, or by this one. */
    if (b == NULL || strncmp(b, "xdev_", 5) == 0) return status;
    size_t mlen = strlen(b);
    if (flen + 2 + mlen + 1 > XDEV_MESSAGE_MAX) mlen = XDEV_MESSAGE_MAX - flen - 3;
    memmove(b + flen + 2, b, mlen);
    memcpy(b, func, flen);
    b[flen] = ':';
    b[flen + 1] = ' ';
    b[flen + 2 + mlen] = '\0';
    return status;
}
