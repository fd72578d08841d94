/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/mempool.h - memory pools, after torch.cuda's MemPool and
 * graph_pool_handle: a pool is a device's own cache of segments, which
 * graphs capture into (xdev/graph.h) and which a thread's allocations can
 * be routed to.
 *
 * xdev_mempool_create makes a pool of one device (optionally taking its
 * segments from an application allocator); xdev_mempool_use_begin / _end
 * route this thread's allocations on the pool's device to it for a scope
 * (scopes still open when their thread exits end with it, releasing their
 * hold on the pool). Statistics, summaries, snapshots and the memory view
 * show which segments belong to which pool. */
#ifndef XDEV_MEMPOOL_H
#define XDEV_MEMPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "xdev/allocator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xdev_mempool *xdev_mempool_t;

/* A new pool of `device` (index -1: current). allocator: NULL to take its
 * segments from the backend like the device's own cache, or an application
 * allocator (only malloc and free are used; copied). */
XDEV_API XDEV_RESULT xdev_status_t xdev_mempool_create(xdev_device_t device,
                                                       const xdev_allocator_t *allocator,
                                                       xdev_mempool_t *out);

/* torch.cuda.graph_pool_handle(): a pool for graphs to share. */
XDEV_API XDEV_RESULT xdev_status_t xdev_graph_pool_handle(xdev_device_t device,
                                                          xdev_mempool_t *out);

/* Drop the caller's reference. The pool's cached memory goes back once no
 * graph holds the pool and no allocation of it is live; allocations of it
 * stay valid until freed. Routing to it ends (a use scope left open fails
 * its _end with XDEV_ERROR_INVALID_HANDLE). */
XDEV_API XDEV_RESULT xdev_status_t xdev_mempool_destroy(xdev_mempool_t pool);

/* Route this thread's allocations on the pool's device to `pool` until the
 * matching _end (scopes nest; _end must name the innermost scope's pool), or
 * until the thread exits. */
XDEV_API XDEV_RESULT xdev_status_t xdev_mempool_use_begin(xdev_mempool_t pool);
XDEV_API XDEV_RESULT xdev_status_t xdev_mempool_use_end(xdev_mempool_t pool);

/* What a pool holds now. */
typedef struct xdev_mempool_usage {
    uint64_t id;            /* the pool's number in snapshots (> 0; 0 is the device's cache) */
    xdev_device_t device;   /* resolved */
    size_t reserved_bytes;  /* its segments */
    size_t allocated_bytes; /* its live blocks (rounded sizes) */
    size_t segments;        /* how many */
    size_t allocations;     /* live blocks */
    int graphs;             /* graphs holding it */
} xdev_mempool_usage_t;
XDEV_API XDEV_RESULT xdev_status_t xdev_mempool_usage(xdev_mempool_t pool,
                                                      xdev_mempool_usage_t *out);

#ifdef __cplusplus
}
#endif

#endif
