/* SPDX-License-Identifier: Apache-2.0 */
/* bad_input.h - shared helpers of the bad-input suites (test_bad_input.c,
 * test_bad_input_math.c): short status names, a named-call expectation for
 * table-driven cases, and makers of device buffers and destroyed handles. */
#ifndef XT_BAD_INPUT_H
#define XT_BAD_INPUT_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"
#define VAL XDEV_ERROR_INVALID_VALUE
#define F32 XDEV_DTYPE_F32
#define OPN XDEV_BLAS_OP_N

static inline void setup(void) {
    xt_reset_state();
}

/* xt_expect_error for a call named by a string (table-driven cases). */
#define EXPECT_NAMED(st, mask, name, ...)                                                          \
    xt_expect_error((st), (mask), (name), __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)

static inline void *dev_alloc(int dev, size_t n) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xdev_cpu(dev), &p, n));
    return p;
}

static inline xdev_stream_t destroyed_stream(void) {
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_create(xdev_cpu(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_destroy(s));
    return s;
}

static inline xdev_event_t destroyed_event(void) {
    xdev_event_t e = NULL;
    XT_OK(xdev_event_create(XDEV_EVENT_TIMING, &e));
    XT_OK(xdev_event_destroy(e));
    return e;
}

#endif
