/* SPDX-License-Identifier: Apache-2.0 */
/* json_check.c - the tests' JSON check: the library's own checker
 * (core/base/json_check.c, compiled into the test helpers white-box) with
 * its verdict as a message. */
#include "json_check.h"

#include <stdio.h>
#include <string.h>

#include "base/json_check.h"

bool json_check(const char *text, char *err, size_t errlen) {
    size_t at = 0;
    const char *what = NULL;
    if (xdev_json_check(text, strlen(text), &at, &what)) return true;
    snprintf(err, errlen, "at byte %zu: expected %s", at, what);
    return false;
}
