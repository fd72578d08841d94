/* SPDX-License-Identifier: Apache-2.0 */
/* pointer_registry.h - every allocation xdev handed out, by address range,
 * so that copies infer their direction, device_of works on interior
 * pointers, and a foreign pointer or double free is an error, not a crash. */
#ifndef XDEV_CORE_POINTER_REGISTRY_H
#define XDEV_CORE_POINTER_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/registry.h"
#include "xdev/memory.h"

/* Who registered a range, so a lookup finds the live allocation inside it. */
typedef enum xdev_ptr_origin {
    XDEV_PTR_SEGMENT = 0,    /* caching allocator segment: data = xdev_segment_t, blocks inside */
    XDEV_PTR_DIRECT = 1,     /* one allocation of a non-caching mode: data = NULL */
    XDEV_PTR_PINNED = 2,     /* pinned host block: data = the pinned cache's block */
    XDEV_PTR_IPC = 3,        /* another process's memory opened by IPC: data = the mapping */
    XDEV_PTR_EXPANDABLE = 4, /* expandable segment's address range: data = xdev_segment_t */
    XDEV_PTR_FOREIGN = 5,    /* memory another library allocated, registered (foreign.c) */
    XDEV_PTR_MANAGED = 6,    /* one managed allocation (managed.c): kind DEVICE, data = NULL */
} xdev_ptr_origin_t;

typedef struct xdev_ptr_entry {
    uintptr_t base;
    size_t size;
    xdev_memory_kind_t kind;
    xdev_backend_t *be;
    int index;  /* logical device (DEVICE kind) */
    void *data; /* owner's record (see xdev_ptr_origin_t) */
    xdev_ptr_origin_t origin;
    void *owner; /* SEGMENT, DIRECT, MANAGED: the allocator arena that holds the range */
} xdev_ptr_entry_t;

/* Record an allocation; XDEV_ERROR_OUT_OF_MEMORY if the table cannot grow. */
xdev_status_t xdev_ptr_insert(const xdev_ptr_entry_t *entry);

/* Record a range that must not overlap any recorded one (foreign memory):
 * XDEV_ERROR_INVALID_VALUE with *clash = the first range it overlaps. */
xdev_status_t xdev_ptr_insert_exclusive(const xdev_ptr_entry_t *entry, xdev_ptr_entry_t *clash);

/* Remove the range that starts exactly at base if it is of `origin`:
 * false (nothing removed) otherwise. */
bool xdev_ptr_remove_origin(const void *base, xdev_ptr_origin_t origin, xdev_ptr_entry_t *out);

/* Find the allocation containing addr (interior pointers included). */
bool xdev_ptr_lookup(const void *addr, xdev_ptr_entry_t *out);

/* Remove the allocation that starts exactly at base and has `kind`. On
 * failure sets a message that says why: unknown pointer, interior pointer
 * (with its allocation), wrong kind (with the right free function). */
xdev_status_t xdev_ptr_remove(const void *base, xdev_memory_kind_t kind, xdev_ptr_entry_t *out);

/* What the room that inserts ranges of an origin answers for them where
 * alloc/, below it, must ask (core/README.md: no upward call): interop/'s
 * ipc.c the live extent inside an IPC mapping (data: the mapping), its
 * foreign.c xdev_record_stream of registered memory. Each sets its answers
 * before it inserts its first range of that origin, so whoever finds such a
 * range in the registry finds them too. */
typedef struct xdev_ptr_origin_ops {
    /* 1: ptr is in a live allocation [*base, *base + *size); 0: in none;
     * -1: the range is gone (see alloc_lookup.h). */
    int (*live_extent)(const void *data, const void *ptr, uintptr_t *base, size_t *size);
    xdev_status_t (*record_stream)(const xdev_ptr_entry_t *e, xdev_stream_t stream);
} xdev_ptr_origin_ops_t;

void xdev_ptr_origin_ops_set(xdev_ptr_origin_t origin, const xdev_ptr_origin_ops_t *ops);

/* The answers of origin's room (set before any range of it was inserted). */
const xdev_ptr_origin_ops_t *xdev_ptr_origin_ops(xdev_ptr_origin_t origin);

#endif
