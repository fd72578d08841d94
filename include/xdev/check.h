/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/check.h - checking a call's status without writing the same macro in
 * every program (included by xdev/xdev.h). Two ways:
 *
 *   XDEV_TRY(call)   in a function that returns xdev_status_t: a failed
 *                    call returns its status from that function at once
 *                    (the thread's message, xdev_last_error(), still says
 *                    what failed and why).
 *   XDEV_MUST(call)  in a program that cannot go on without it: a failed
 *                    call prints "file:line: call: STATUS: message" to
 *                    stderr and exits with EXIT_FAILURE.
 *
 *   xdev_status_t upload(void *dst, const float *src, size_t n) {
 *       XDEV_TRY(xdev_memcpy(dst, src, n * sizeof *src));
 *       return xdev_synchronize();
 *   }
 *   int main(void) { XDEV_MUST(xdev_init()); ... }
 *
 * The library itself never prints or exits: these expand in the caller's
 * code only. With XDEV_NODISCARD defined (xdev/error.h) the compiler also
 * points at every call whose status is ignored. */
#ifndef XDEV_CHECK_H
#define XDEV_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "xdev/error.h"

#define XDEV_TRY(call)                                                                             \
    do {                                                                                           \
        xdev_status_t xdev_try_status_ = (call);                                                   \
        if (xdev_try_status_ != XDEV_SUCCESS) return xdev_try_status_;                             \
    } while (0)

#define XDEV_MUST(call)                                                                            \
    do {                                                                                           \
        xdev_status_t xdev_must_status_ = (call);                                                  \
        if (xdev_must_status_ != XDEV_SUCCESS) {                                                   \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,                      \
                    xdev_status_string(xdev_must_status_), xdev_last_error());                     \
            exit(EXIT_FAILURE);                                                                    \
        }                                                                                          \
    } while (0)

#endif
