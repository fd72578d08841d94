/* SPDX-License-Identifier: Apache-2.0 */
/* test_allocator_common.h - what the allocator suite's two files share
 * (test_allocator.c: caching, OOM, settings, pinned memory, stress, and
 * main; test_allocator_stats.c: the statistics, summary and snapshot). */
#ifndef XDEV_TEST_ALLOCATOR_COMMON_H
#define XDEV_TEST_ALLOCATOR_COMMON_H

#include "xt.h"

#define MIB ((size_t)1 << 20)

/* test_allocator_stats.c: the statistics tests, added to the caching case. */
void allocator_stats_tests(TCase *t);

#endif
