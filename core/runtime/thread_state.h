/* SPDX-License-Identifier: Apache-2.0 */
/* thread_state.h - what runtime keeps per thread on its hot paths (the
 * allocator keeps its arena and free hint in its own initial-exec TLS,
 * alloc/device_allocator.c).
 *
 * One heap block per thread, reached through a single initial-exec TLS
 * pointer: a shared library's ordinary (global-dynamic) TLS costs a
 * __tls_get_addr call per variable per access, which dominated the current
 * stream and device-guard calls. Initial-exec puts all of libxdev's TLS in
 * static TLS, which a late dlopen (ctypes, JNI) takes from glibc's small
 * spare reserve: per-thread buffers therefore live on the heap (the error
 * message: base/error.c) and tests/test_tls.c keeps the TLS under 512
 * bytes. The block is small to allocate once and is freed by a pthread key
 * destructor when the thread exits, which first runs the exit hooks of the
 * folders above runtime/ (runtime/hooks.h). */
#ifndef XDEV_CORE_THREAD_STATE_H
#define XDEV_CORE_THREAD_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/registry.h"

typedef struct xdev_stream_ref {
    xdev_stream_t stream; /* NULL: the device's default stream */
    uint32_t generation;  /* of the stream's slot when set (a reused slot is noticed) */
} xdev_stream_ref_t;

/* Streams a thread may be using right now (hazard pointers, see stream.c):
 * a destroyed stream's native queue is freed only once no thread lists it. */
#define XDEV_HAZARDS 4

/* alloc/alloc_lookup.c's per-thread cache of device allocations found live
 * (for kernel launches' pointer checks): plain words to runtime/. */
#define XDEV_LIVE_CACHE 8
typedef struct xdev_live_cache_entry {
    uintptr_t base;
    size_t size;                   /* bytes the caller asked for */
    size_t block_size;             /* bytes set aside */
    const void *owner;             /* the device allocator (arena) */
    const _Atomic uint64_t *frees; /* its free count (xdev_live_hit reads it inline) */
    uint64_t epoch;                /* its free count when the block was seen live */
    const void *be;                /* the allocation's backend and device */
    int index;
} xdev_live_cache_entry_t;

typedef struct xdev_thread_state {
    int current[XDEV_MAX_DEVICE_TYPES]; /* current device index per type (torch: 0) */
    xdev_stream_ref_t streams[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];
    _Atomic(const void *) hazard[XDEV_HAZARDS];
    unsigned hazard_next;
    struct xdev_thread_state *list_prev, *list_next; /* every thread's block */
    bool shared;                                     /* the emergency block: no caches */
    unsigned live_cache_next;
    xdev_live_cache_entry_t live_cache[XDEV_LIVE_CACHE];
} xdev_thread_state_t;

/* True when a thread other than the caller lists p among its hazards. */
bool xdev_thread_hazard_held(const void *p);

/* Drop p from the calling thread's hazards. */
void xdev_thread_hazard_clear(const void *p);

extern _Thread_local xdev_thread_state_t *xdev_tls_state __attribute__((tls_model("initial-exec")));

/* First use on a thread: allocate (or, if that fails, share an emergency
 * block, so xdev keeps working without per-thread isolation). */
xdev_thread_state_t *xdev_thread_state_slow(void);

static inline xdev_thread_state_t *xdev_thread_state(void) {
    xdev_thread_state_t *t = xdev_tls_state;
    return t != NULL ? t : xdev_thread_state_slow();
}

#endif
