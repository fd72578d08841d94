/* SPDX-License-Identifier: Apache-2.0 */
/* mempool.h - memory pools (xdev/mempool.h): a private set of the caching
 * allocator's stream pools, for graphs and for scopes of a thread.
 *
 * A pool is a handle (xdev_mempool_t) with a reference count: the
 * application's reference and one per graph holding it. The allocator keeps
 * pool memory in stream pools tagged with the pool's id (alloc_internal.h),
 * in the device's primary arena; those segments serve only the pool's
 * allocations and are not returned to the backend while the pool lives.
 * When the last reference goes the tag is marked dead: the free segments go
 * back at once, the rest as their blocks are freed and the cache emptied. */
#ifndef XDEV_CORE_MEMPOOL_H
#define XDEV_CORE_MEMPOOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/handle_arena.h"
#include "runtime/registry.h"
#include "xdev/mempool.h"

struct xdev_mempool {
    xdev_handle_header_t hdr;
    uint64_t id;
    xdev_device_record_t *rec;
    _Atomic int refs;     /* the application's (until destroyed) + graphs' */
    _Atomic int graphs;   /* graphs holding it */
    atomic_bool user_ref; /* the application still holds its reference */
    bool has_custom;
    xdev_allocator_t custom;
};

/* NULL: INVALID_VALUE; otherwise INVALID_HANDLE unless p is a live pool. */
xdev_status_t xdev_mempool_check(xdev_mempool_t p, const char *arg);
/* A new pool of device rec (refs 1: the caller's). */
xdev_status_t xdev_mempool_new(xdev_device_record_t *rec, const xdev_allocator_t *custom,
                               xdev_mempool_t *out);
/* A graph takes / drops a reference (release frees the pool's cached
 * memory once no reference is left). */
void xdev_mempool_retain_graph(xdev_mempool_t p);
/* Drop the creator's reference (a graph's private pool: only graphs hold it). */
void xdev_mempool_drop_user(xdev_mempool_t p);
void xdev_mempool_release_graph(xdev_mempool_t p);
/* A graph replay's check (alloc_sleep.c): INVALID_VALUE naming graph
 * `graph` while memory of pool p sleeps (xdev_memory_sleep with tag NULL),
 * else SUCCESS - one relaxed load while nothing on the device sleeps. */
xdev_status_t xdev_mempool_check_awake(xdev_mempool_t p, uint64_t graph);
/* Whether device rec's allocator can hold pools (the caching mode), with
 * the message when not. */
xdev_status_t xdev_mempool_supported(xdev_device_record_t *rec);

/* The pool this thread's allocation on `stream` goes to: the stream's
 * capture's, else the innermost use scope for the stream's device, else
 * NULL (the device's cache). */
xdev_mempool_t xdev_mempool_route(struct xdev_stream *stream);
/* This thread's open use scopes (mempool.c; closed when it exits); the allocation fast path tests
 * it. */
extern _Thread_local struct xdev_mempool_scope *xdev_mempool_tls_scopes
    __attribute__((tls_model("initial-exec")));
static inline bool xdev_mempool_scopes_open(void) {
    return xdev_mempool_tls_scopes != NULL;
}

/* Lines for xdev_memory_summary: each memory pool of the device (primary
 * arena da) with its segments, reserved and allocated bytes; nothing when
 * the device has none. */
struct xdev_strbuf;
struct xdev_device_allocator;
void xdev_mempool_summary(struct xdev_strbuf *sb, struct xdev_device_allocator *da);

/* A block freed (da locked, b out of the live table) while captures are
 * under way on its device: unless it is a capture's own pool block used on
 * that capture's stream only, it is kept for every such capture (any may
 * use it) and true is returned; it goes back to the cache when the last of
 * them drops it (xdev_mempool_drop_deferred, when its graph goes). Until
 * then its memory stays allocated, but every lookup refuses it as freed
 * (xdev_block_t.kept). */
struct xdev_capture;
struct xdev_block;
bool xdev_mempool_keep_for_captures(struct xdev_device_allocator *da, struct xdev_block *b);
void xdev_mempool_drop_deferred(struct xdev_capture *c);

#endif
