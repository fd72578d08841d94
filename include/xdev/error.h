/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/error.h - status codes and the thread-local error message.
 *
 * Every xdev call returns an xdev_status_t (0 = success). When a call fails it
 * also leaves a message in thread-local storage saying which call failed, on
 * which argument or vendor error, and why; xdev_last_error() returns it.
 *
 * The error state (xdev_last_status, xdev_last_error) is per thread and
 * sticky, like a first-error flag:
 * - a call that returns a status other than XDEV_SUCCESS sets it;
 * - a call that returns XDEV_SUCCESS leaves it exactly as it was, whatever
 *   it tried inside: a backend probed and found missing by
 *   xdev_device_count or xdev_is_available, a plugin that failed to load
 *   during XDEV_BACKEND=auto, a fallback taken, leave nothing behind;
 * - calls that return no status (xdev_is_available, xdev_launch_blocking,
 *   xdev_device_peer_enabled, the *_cleanup and name functions) never
 *   change it;
 * - only xdev_clear_error() resets it.
 * So after xdev_clear_error(), xdev_last_status() == XDEV_SUCCESS means no
 * call on this thread has failed since. XDEV_ERROR_NOT_READY from
 * xdev_stream_query or xdev_event_query is an answer, not a failure: those
 * leave the state as it was too. */
#ifndef XDEV_ERROR_H
#define XDEV_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define XDEV_API __attribute__((visibility("default")))
#else
#define XDEV_API
#endif

/* Opt-in: define XDEV_NODISCARD before including any xdev header (or
 * compile with -DXDEV_NODISCARD) and GCC and Clang warn wherever the
 * status of an xdev call is ignored (warn_unused_result on every function
 * that returns xdev_status_t). Off by default: GCC does not take a (void)
 * cast as use, so it suits code that checks every call (xdev/check.h). */
#if defined(XDEV_NODISCARD) && defined(__GNUC__)
#define XDEV_RESULT __attribute__((warn_unused_result))
#else
#define XDEV_RESULT
#endif

typedef enum xdev_status {
    XDEV_SUCCESS = 0,
    XDEV_ERROR_INVALID_VALUE = 1,       /* NULL, out of range or malformed argument */
    XDEV_ERROR_INVALID_DEVICE = 2,      /* device index or type that does not exist */
    XDEV_ERROR_INVALID_HANDLE = 3,      /* stream/event handle unknown or destroyed */
    XDEV_ERROR_OUT_OF_MEMORY = 4,       /* device or host allocation failed */
    XDEV_ERROR_NOT_SUPPORTED = 5,       /* backend lacks the operation */
    XDEV_ERROR_NOT_READY = 6,           /* query: work still pending (not a failure) */
    XDEV_ERROR_CROSS_DEVICE = 7,        /* operands on different devices */
    XDEV_ERROR_BACKEND_UNAVAILABLE = 8, /* backend could not be loaded or has no device */
    XDEV_ERROR_BACKEND = 9,             /* vendor runtime error; message has its name */
    XDEV_ERROR_ENV = 10,                /* malformed XDEV_* environment variable */
    XDEV_ERROR_INTERNAL = 11,           /* a bug in xdev: please report */
    XDEV_ERROR_IO = 12,                 /* a file or a connection failed; message has the reason */
    XDEV_ERROR_NOT_FOUND = 13,          /* a name (kernel) that the object does not have */
    XDEV_ERROR_LAUNCH_FAILURE = 14,     /* a kernel faulted or trapped (reported at a sync) */
    XDEV_ERROR_COMPILE = 15,            /* kernel source or options the compiler refused */
    XDEV_ERROR_CAPTURE = 16,            /* not allowed while a stream captures (xdev/graph.h) */
    XDEV_ERROR_SYNC_DEBUG = 17,         /* the call would wait for a device, and the sync debug
                                           mode is error (xdev_set_sync_debug_mode) */
} xdev_status_t;

/* Short constant name of a status ("XDEV_ERROR_INVALID_VALUE"); never NULL. */
XDEV_API const char *xdev_status_string(xdev_status_t status);

/* Message of the last failed xdev call on this thread ("" when none). The
 * pointer stays valid until the next xdev call on the same thread. */
XDEV_API const char *xdev_last_error(void);

/* Status of the last failed xdev call on this thread (XDEV_SUCCESS when none). */
XDEV_API XDEV_RESULT xdev_status_t xdev_last_status(void);

/* Forget the last error on this thread: status XDEV_SUCCESS, message "". */
XDEV_API void xdev_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
