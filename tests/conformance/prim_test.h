/* SPDX-License-Identifier: Apache-2.0 */
/* prim_test.h - the small helpers the parallel primitives' conformance
 * suites share (test_primitives.c, test_prim_api.c, test_prim_select.c,
 * test_prim_sort.c), so that each suite holds only its own cases: device
 * buffers on device 0, copies in and out, the xorshift generator of the
 * host data, the largest size's log2, and the skip of a backend without a
 * primitive. Static inline: each suite is one translation unit and uses
 * some of them. */
#ifndef XT_PRIM_TEST_H
#define XT_PRIM_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "xt.h"

/* The generator's seed; a suite may define its own before the include. */
#ifndef PT_RNG_SEED
#define PT_RNG_SEED 0x2545f4914f6cdd1dull
#endif

/* Device memory of device 0 (one byte for 0, so the pointer is live). */
static inline void *dalloc(size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, bytes ? bytes : 1));
    return p;
}

static inline void upload(void *d, const void *h, size_t bytes) {
    if (bytes) XT_OK(xdev_memcpy(d, h, bytes));
}

/* After device 0's work: the primitives are stream-ordered. */
static inline void download(void *h, const void *d, size_t bytes) {
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    if (bytes) XT_OK(xdev_memcpy(h, d, bytes));
}

static uint64_t g_rng = PT_RNG_SEED;
static inline uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* The largest size's log2: XT_PRIM_MAX_LOG2, else 2^20 (2^17 under the
 * sanitizers' smaller XT_SCALE). */
static inline size_t max_log2(void) {
    const char *e = getenv("XT_PRIM_MAX_LOG2");
    if (e != NULL && atoi(e) > 0) return (size_t)atoi(e);
    return xt_scale() >= 1.0 ? 20 : 17;
}

/* st is a primitive's first call: true to go on (it must have succeeded).
 * XDEV_ERROR_NOT_SUPPORTED must name the backend and `prim` (NULL: the
 * backend only); the test is then skipped, saying `why`. */
static inline bool pt_have(const char *test, xdev_status_t st, const char *prim, const char *why) {
    if (st != XDEV_ERROR_NOT_SUPPORTED) {
        XT_OK(st);
        return true;
    }
    ck_assert_msg(xt_icontains(xdev_last_error(), xt_type_name()) &&
                      (prim == NULL || xt_icontains(xdev_last_error(), prim)),
                  "the refusal does not name the backend%s%s: %s", prim ? " and " : "",
                  prim ? prim : "", xdev_last_error());
    xt_skip(test, "the %s backend %s: %s", xt_type_name(), why, xdev_last_error());
    return false;
}

#endif
