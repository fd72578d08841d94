/* SPDX-License-Identifier: Apache-2.0 */
/* test_graph_common.h - what test_graph.c (captures, replays, what a
 * capture refuses, bad input, and main) and test_graph_pools.c (memory
 * pools) share: a stream on a device, reading device memory back once a
 * stream is done, and the pools' application allocator. */
#ifndef XDEV_TEST_GRAPH_COMMON_H
#define XDEV_TEST_GRAPH_COMMON_H

#include "xt.h"

static inline xdev_stream_t new_stream(int device) {
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_create(xt_dev(device), XDEV_STREAM_PRIORITY_NORMAL, &s));
    return s;
}

/* Read n bytes of device memory once stream s is done. */
static inline void fetch(void *host, const void *dev, size_t n, xdev_stream_t s) {
    XT_OK(xdev_stream_synchronize(s));
    xt_peek(host, dev, n);
}

/* test_graph_pools.c: the memory pool tests, added to the graph case, and
 * its application allocator (host memory; bad_input builds pools on it). */
void graph_pool_tests(TCase *tc);
xdev_status_t custom_malloc(void *ctx, xdev_device_t device, size_t size, xdev_stream_t stream,
                            void **out);
xdev_status_t custom_free(void *ctx, xdev_device_t device, void *ptr, size_t size,
                          xdev_stream_t stream);

#endif
