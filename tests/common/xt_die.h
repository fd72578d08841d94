/* SPDX-License-Identifier: Apache-2.0 */
/* tests/common/xt_die.h - CHECK and OK for test programs that do not run
 * under Check (standalone mains, the child processes of a test): a failed
 * condition prints where and why and exits 1. Define XT_DIE_WHO before the
 * include to name the process in each message (a string expression, e.g.
 * a global set from argv), and OK before it to take the message from
 * elsewhere than xdev_last_error(). */
#ifndef XT_DIE_H
#define XT_DIE_H

#include <stdio.h>
#include <stdlib.h>

#ifndef XT_DIE_WHO
#define XT_DIE_WHO ""
#endif

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            const char *xt_who_ = XT_DIE_WHO;                                                      \
            fprintf(stderr, "%s%s%s:%d: check failed: %s: ", xt_who_, xt_who_[0] ? ": " : "",      \
                    __FILE__, __LINE__, #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#ifndef OK
#define OK(call) CHECK((call) == XDEV_SUCCESS, "%s", xdev_last_error())
#endif

#endif
