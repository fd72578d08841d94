/* SPDX-License-Identifier: Apache-2.0 */
/* mempool.c - memory pools: handles, references, a thread's use scopes,
 * routing of allocations, usage figures, and the blocks a capture keeps
 * (mempool.h). The allocator's side of a pool is its tagged stream pools
 * (caching_allocator.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/mempool.h"
#include "base/strbuf.h"
#include "base/error_internal.h"
#include "alloc/alloc_internal.h"
#include "runtime/capture.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/process.h"
#include "runtime/stream_internal.h"
#include "runtime/thread_state.h"

#define POOL_MAGIC 0x4c4f4f50u /* "POOL" */
#define POOL_SLOT ((sizeof(struct xdev_mempool) + 63) / 64 * 64)

static xdev_handle_arena_t g_pool_arena =
    XDEV_HANDLE_ARENA_INIT("memory pool", POOL_MAGIC, POOL_SLOT);
static _Atomic uint64_t g_next_id = 1;

/* A thread's open use scopes, innermost first (heap nodes: TLS stays small). */
typedef struct xdev_mempool_scope {
    xdev_mempool_t pool;
    struct xdev_mempool_scope *prev;
} scope_t;
_Thread_local scope_t *xdev_mempool_tls_scopes __attribute__((tls_model("initial-exec")));
#define tls_scopes xdev_mempool_tls_scopes

/* The application may still use the pool: its own reference, or a graph's
 * (xdev_graph_pool hands that out). A use scope's reference is not one. */
static bool usable(xdev_mempool_t p) {
    return atomic_load(&p->user_ref) || atomic_load(&p->graphs) > 0;
}

xdev_status_t xdev_mempool_check(xdev_mempool_t p, const char *arg) {
    xdev_status_t pst = xdev_process_check();
    if (pst != XDEV_SUCCESS) return pst;
    if (p == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "memory pool '%s' is NULL", arg);
    if (xdev_handle_is_live(&g_pool_arena, p) && atomic_load(&p->refs) > 0 && usable(p))
        return XDEV_SUCCESS;
    if (xdev_handle_is_slot(&g_pool_arena, p))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE,
                         "memory pool '%s' (%p) has been released (destroyed, and no graph held "
                         "it)",
                         arg, (void *)p);
    return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "'%s' (%p) is not an xdev memory pool", arg,
                     (void *)p);
}

xdev_status_t xdev_mempool_supported(xdev_device_record_t *rec) {
    xdev_device_allocator_t *da;
    xdev_status_t st = xdev_alloc_get(rec->be, rec->id.index, &da);
    if (st != XDEV_SUCCESS) return st;
    if (da->mode == XDEV_ALLOC_MODE_CACHING) return XDEV_SUCCESS;
    static const char *const why[] = {"", "XDEV_NO_MEMORY_CACHING=1",
                                      "XDEV_ALLOC_CONF=backend:async", "an application allocator"};
    return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                     "memory pools and graphs need xdev's caching allocator, but " XDEV_REC_FMT
                     " uses %s",
                     XDEV_REC_ARGS(rec), why[da->mode]);
}

xdev_status_t xdev_mempool_new(xdev_device_record_t *rec, const xdev_allocator_t *custom,
                               xdev_mempool_t *out) {
    xdev_status_t st = xdev_mempool_supported(rec);
    if (st != XDEV_SUCCESS) return st;
    xdev_mempool_t p = xdev_handle_alloc(&g_pool_arena);
    if (p == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for a memory pool handle");
    p->id = atomic_fetch_add(&g_next_id, 1);
    p->rec = rec;
    atomic_init(&p->graphs, 0);
    atomic_init(&p->user_ref, true);
    p->has_custom = custom != NULL;
    if (custom != NULL) p->custom = *custom;
    atomic_store(&p->refs, 1);
    *out = p;
    return XDEV_SUCCESS;
}

/* The last reference went: the pool's memory stops being reserved. */
static void release(xdev_mempool_t p) {
    xdev_device_allocator_t *da;
    if (xdev_alloc_get(p->rec->be, p->rec->id.index, &da) == XDEV_SUCCESS) {
        xdev_spin_lock(&da->lock);
        xdev_caching_release_mempool(da, p->id);
        xdev_spin_unlock(&da->lock);
    }
    xdev_handle_free(&g_pool_arena, p);
}

static void unref(xdev_mempool_t p) {
    if (atomic_fetch_sub(&p->refs, 1) == 1) release(p);
}

void xdev_mempool_drop_user(xdev_mempool_t p) {
    atomic_store(&p->user_ref, false);
    unref(p);
}

void xdev_mempool_retain_graph(xdev_mempool_t p) {
    atomic_fetch_add(&p->refs, 1);
    atomic_fetch_add(&p->graphs, 1);
}

void xdev_mempool_release_graph(xdev_mempool_t p) {
    atomic_fetch_sub(&p->graphs, 1);
    unref(p);
}

/* Thread exit (runtime/hooks.h): the scopes the thread left open end with
 * it, each dropping its hold on its pool (else a destroyed pool's memory
 * would stay reserved for good). */
static void thread_exit(void) {
    while (tls_scopes != NULL) {
        scope_t *s = tls_scopes;
        tls_scopes = s->prev;
        xdev_mempool_t p = s->pool;
        free(s);
        unref(p);
    }
}

void xdev_mempool_wire(void) {
    xdev_hook_thread_exit_add(thread_exit);
}

xdev_mempool_t xdev_mempool_route(xdev_stream_t stream) {
    xdev_capture_t *cap = atomic_load_explicit(&stream->capture, memory_order_acquire);
    if (cap != NULL) return cap->pool;
    for (scope_t *s = tls_scopes; s != NULL; s = s->prev)
        if (s->pool->rec == stream->rec && usable(s->pool)) return s->pool;
    return NULL;
}

/* A block kept for the captures under way when it was freed: it goes back
 * to the cache when the last of their graphs goes. Meanwhile it stays
 * ACTIVE in its segment (no allocation gets it, the replays write it) with
 * b->kept set, so every checked call refuses it as freed (alloc_lookup.c). */
typedef struct kept {
    xdev_block_t *b;
    atomic_int refs;
} kept_t;

typedef struct kept_link {
    kept_t *k;
    struct kept_link *next;
} kept_link_t;

#define KEEP_MAX_CAPTURES 16

bool xdev_mempool_keep_for_captures(xdev_device_allocator_t *da, xdev_block_t *b) {
    xdev_capture_t *caps[KEEP_MAX_CAPTURES];
    int n = xdev_capture_lock_all_on_device(da->rec, caps, KEEP_MAX_CAPTURES);
    if (n == 0) return false;
    /* a block of a capture's own pool, allocated and freed on a stream of
     * that capture and used nowhere else, is the capture's to reuse */
    bool own = false;
    if (b->n_used_streams == 0 && b->pool->mempool != 0) {
        xdev_capture_t *sc = atomic_load_explicit(&b->stream->capture, memory_order_acquire);
        for (int i = 0; i < n && !own; i++) {
            xdev_mempool_t mp = caps[i]->pool;
            own = caps[i] == sc && mp != NULL && mp->id == b->pool->mempool;
        }
    }
    kept_t *k = own ? NULL : malloc(sizeof *k);
    kept_link_t *links[KEEP_MAX_CAPTURES];
    int made = 0;
    while (k != NULL && made < n && (links[made] = malloc(sizeof(kept_link_t))) != NULL)
        made++;
    bool keep = k != NULL && made == n; /* out of host memory: freed as usual */
    if (keep) {
        b->kept = true; /* lookups refuse it from now on: the caller freed it */
        k->b = b;
        atomic_init(&k->refs, n);
        for (int i = 0; i < n; i++) {
            links[i]->k = k;
            links[i]->next = caps[i]->deferred;
            caps[i]->deferred = links[i];
        }
    } else {
        for (int i = 0; i < made; i++)
            free(links[i]);
        free(k);
    }
    for (int i = 0; i < n; i++)
        pthread_mutex_unlock(&caps[i]->lock);
    return keep;
}

void xdev_mempool_drop_deferred(xdev_capture_t *c) {
    pthread_mutex_lock(&c->lock);
    kept_link_t *l = c->deferred;
    c->deferred = NULL;
    pthread_mutex_unlock(&c->lock);
    while (l != NULL) {
        kept_link_t *next = l->next;
        kept_t *k = l->k;
        free(l);
        if (atomic_fetch_sub(&k->refs, 1) == 1) {
            xdev_device_allocator_t *da = k->b->owner;
            xdev_spin_lock(&da->lock);
            /* no count for the lookup caches: its first free (take_live) made
             * any that held it look again, and no lookup returned it since */
            k->b->kept = false;
            xdev_caching_free(da, k->b);
            xdev_spin_unlock(&da->lock);
            free(k);
        }
        l = next;
    }
}

/* A segment's memory: from the backend, or from a memory pool's allocator. */
xdev_status_t xdev_caching_segment_malloc(xdev_device_allocator_t *da,
                                          const xdev_stream_pool_t *pool, size_t size, void **p) {
    if (!pool->has_custom) return xdev_be_memory_malloc(da->rec, size, p);
    xdev_status_t st = pool->custom.malloc(pool->custom.ctx, da->rec->id, size, pool->stream, p);
    if (st == XDEV_SUCCESS && *p == NULL)
        st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                       "the memory pool's allocator returned NULL for %zu bytes", size);
    else if (st != XDEV_SUCCESS)
        st = XDEV_FAIL(st, "the memory pool's allocator failed for %zu bytes (status %d)", size,
                       (int)st);
    return st;
}

void xdev_caching_segment_free(xdev_device_allocator_t *da, const xdev_stream_pool_t *pool, void *p,
                               size_t size) {
    if (!pool->has_custom)
        (void)xdev_be_memory_free(da->rec, p);
    else
        (void)pool->custom.free(pool->custom.ctx, da->rec->id, p, size, pool->stream);
}

void xdev_mempool_summary(xdev_strbuf_t *sb, xdev_device_allocator_t *da) {
    enum { MAX = 16 };
    typedef struct {
        uint64_t id;
        size_t segments, reserved, allocated;
    } pool_line_t;
    pool_line_t pools[MAX];
    int n = 0, more = 0;
    xdev_spin_lock(&da->lock);
    xdev_caching_stash_flush(da);
    for (const xdev_segment_t *seg = da->segments; seg != NULL; seg = seg->next) {
        uint64_t id = seg->pool->mempool;
        if (id == 0) continue;
        int i = 0;
        while (i < n && pools[i].id != id)
            i++;
        if (i == n) {
            if (n == MAX) {
                more++;
                continue;
            }
            pools[n++] = (pool_line_t){id, 0, 0, 0};
        }
        pools[i].segments++;
        pools[i].reserved += seg->size;
        for (const xdev_block_t *b = seg->first; b != NULL; b = b->next)
            if (b->state != XDEV_BLOCK_FREE) pools[i].allocated += b->size;
    }
    xdev_spin_unlock(&da->lock);
    if (n == 0) return;
    xdev_strbuf_printf(sb, "| %-79s |\n", "Memory pools (graphs, xdev_mempool_create):");
    for (int i = 0; i < n; i++) {
        char line[96];
        snprintf(line, sizeof line, "  pool %llu: %zu segments, %zu bytes reserved, %zu allocated",
                 (unsigned long long)pools[i].id, pools[i].segments, pools[i].reserved,
                 pools[i].allocated);
        xdev_strbuf_printf(sb, "| %-79s |\n", line);
    }
    if (more > 0) xdev_strbuf_printf(sb, "| %-79s |\n", "  (more pools not shown)");
}

/* ------------------------------------------------------------- public API */

xdev_status_t xdev_mempool_create(xdev_device_t device, const xdev_allocator_t *allocator,
                                  xdev_mempool_t *out) {
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    xdev_allocator_t accepted;
    if (allocator != NULL) XDEV_CHECK(xdev_allocator_accept(__func__, allocator, &accepted));
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(xdev_mempool_new(rec, allocator != NULL ? &accepted : NULL, out));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_graph_pool_handle(xdev_device_t device, xdev_mempool_t *out) {
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(xdev_mempool_new(rec, NULL, out));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_mempool_destroy(xdev_mempool_t pool) {
    XDEV_CHECK(xdev_mempool_check(pool, "pool"));
    bool had = atomic_exchange(&pool->user_ref, false);
    if (!had)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE,
                             "memory pool %p was already destroyed (graphs still hold it)",
                             (void *)pool);
    unref(pool);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_mempool_use_begin(xdev_mempool_t pool) {
    XDEV_CHECK(xdev_mempool_check(pool, "pool"));
    scope_t *s = malloc(sizeof *s);
    if (s == NULL) return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a scope");
    (void)xdev_thread_state();        /* its release at thread exit runs thread_exit */
    atomic_fetch_add(&pool->refs, 1); /* the scope holds the pool */
    s->pool = pool;
    s->prev = tls_scopes;
    tls_scopes = s;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_mempool_use_end(xdev_mempool_t pool) {
    scope_t *s = tls_scopes;
    if (s == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "no xdev_mempool_use_begin scope is open on this thread");
    if (s->pool != pool)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the innermost scope of this thread uses pool %p, not %p: end "
                             "scopes in the reverse order of their begins",
                             (void *)s->pool, (void *)pool);
    tls_scopes = s->prev;
    free(s);
    bool destroyed = !usable(pool);
    unref(pool);
    if (destroyed)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE,
                             "memory pool %p was destroyed while this scope was open (its "
                             "allocations went to the device's cache since); the scope is closed",
                             (void *)pool);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_mempool_usage(xdev_mempool_t pool, xdev_mempool_usage_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_mempool_check(pool, "pool"));
    memset(out, 0, sizeof *out);
    out->id = pool->id;
    out->device = pool->rec->id;
    out->graphs = atomic_load(&pool->graphs);
    xdev_device_allocator_t *da;
    XDEV_CHECK(xdev_alloc_get(pool->rec->be, pool->rec->id.index, &da));
    xdev_spin_lock(&da->lock);
    xdev_caching_stash_flush(da);
    for (const xdev_segment_t *seg = da->segments; seg != NULL; seg = seg->next) {
        if (seg->pool->mempool != pool->id) continue;
        out->segments++;
        out->reserved_bytes += seg->size;
        for (const xdev_block_t *b = seg->first; b != NULL; b = b->next)
            if (b->state != XDEV_BLOCK_FREE) {
                out->allocations++;
                out->allocated_bytes += b->size;
            }
    }
    xdev_spin_unlock(&da->lock);
    return XDEV_SUCCESS;
}
