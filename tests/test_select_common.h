/* SPDX-License-Identifier: Apache-2.0 */
/* test_select_common.h - what test_select's two files share (test_select.c:
 * cpu and auto, the fake cuda plugins, bad plugins and environment, the
 * messages, and main; test_select_real.c: the real cuda and hip plugins):
 * a scenario's entry and the check of the default device. */
#ifndef XDEV_TEST_SELECT_COMMON_H
#define XDEV_TEST_SELECT_COMMON_H

#include <stddef.h>

#include "xt.h"

/* One scenario: `test_select <name>` runs test alone, after xdev starts in
 * the environment CMakeLists.txt gives that entry. */
typedef struct {
    const char *name;
    const TTest *test;
    bool needs_no_cuda; /* skip when a real cuda plugin is installed */
    bool needs_no_hip;
} scenario_t;

/* xdev starts, its default device type is `want` and device 0 of it the
 * current device. */
static inline void expect_default(xdev_device_type_t want) {
    XT_OK(xdev_init());
    xdev_device_type_t type = XDEV_MAX_DEVICE_TYPES;
    XT_OK(xdev_default_device_type(&type));
    ck_assert_msg(type == want, "default device type %s, expected %s",
                  xdev_device_type_name(type) ? xdev_device_type_name(type) : "?",
                  xdev_device_type_name(want));
    xdev_device_t d;
    XT_OK(xdev_get_device(&d));
    XT_DEV_EQ(d, ((xdev_device_t){want, 0}));
}

/* test_select_real.c: the real plugins' scenarios (count in *n), and
 * whether `scenario` cannot run on this machine: XT_SKIP_CODE, its reason
 * printed, or 0. */
const scenario_t *select_real_scenarios(size_t *n);
int select_real_skip(const char *scenario);

#endif
