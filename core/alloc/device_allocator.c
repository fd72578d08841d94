/* SPDX-License-Identifier: Apache-2.0 */
/* device_allocator.c - the public device-memory API over each device's
 * allocator: caching (default), direct (XDEV_NO_MEMORY_CACHING=1), the
 * backend's stream-ordered allocator (XDEV_ALLOC_CONF=backend:async), or an
 * application's pluggable allocator. Every mode keeps the same pointer map,
 * registry and statistics, so free/device_of/record_stream/stats behave the
 * same whichever is active. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sanitizer_probe.h"
#include "alloc/alloc_internal.h"
#include "alloc/alloc_oom.h"
#include "alloc/dlpack_exports.h"
#include "base/env.h"
#include "alloc/mempool.h"
#include "runtime/capture.h"
#include "runtime/trace_probe.h"
#include "base/error_internal.h"
#include "alloc/pointer_registry.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"
#include "runtime/thread_state.h"

xdev_alloc_config_t xdev_alloc_g_cfg; /* alloc_internal.h */
bool xdev_alloc_g_round_plain = true;
static bool g_no_caching;
static pthread_mutex_t g_create_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic(xdev_device_allocator_t *) xdev_alloc_g_allocs[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];

/* Read XDEV_ALLOC_CONF and XDEV_NO_MEMORY_CACHING: an initialisation step
 * (runtime/hooks.h, registered below with thread_exit). */
static xdev_status_t settings_load(void) {
    char err[512];
    const char *conf = xdev_env_get("XDEV_ALLOC_CONF");
    bool ok = xdev_alloc_config_parse(conf, &xdev_alloc_g_cfg, err, sizeof err);
    if (!ok) xdev_alloc_config_defaults(&xdev_alloc_g_cfg);
    xdev_alloc_g_round_plain = true;
    for (int i = 0; i < XDEV_ROUNDUP_INTERVALS; i++)
        if (xdev_alloc_g_cfg.roundup_divisions[i] > 1) xdev_alloc_g_round_plain = false;
    if (!ok) return XDEV_FAIL(XDEV_ERROR_ENV, "XDEV_ALLOC_CONF='%s': %s", conf, err);
    return xdev_env_bool("XDEV_NO_MEMORY_CACHING", false, &g_no_caching);
}

int xdev_alloc_all(xdev_device_allocator_t **out, int cap) {
    int n = 0;
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++)
        for (int i = 0; i < XDEV_MAX_DEVICES; i++) {
            xdev_device_allocator_t *da = atomic_load(&xdev_alloc_g_allocs[t][i]);
            if (da != NULL && n < cap) out[n++] = da;
        }
    return n;
}

static xdev_status_t create(xdev_backend_t *be, int index, xdev_device_allocator_t **out) {
    xdev_device_allocator_t *da = calloc(1, sizeof *da);
    if (da == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for an allocator");
    da->rec = &be->devices[index];
    da->be = be;
    da->index = index;
    da->limit = SIZE_MAX;
    da->fraction = 1.0;
    da->stats.max_split_size =
        xdev_alloc_g_cfg.max_split_size == SIZE_MAX ? -1 : (int64_t)xdev_alloc_g_cfg.max_split_size;
    size_t free_b = 0;
    if (XDEV_HAS(be, memory, mem_get_info))
        (void)xdev_be_memory_mem_get_info(da->rec, &free_b, &da->total_memory);
    da->mode = XDEV_ALLOC_MODE_CACHING;
    if (g_no_caching)
        da->mode = XDEV_ALLOC_MODE_DIRECT;
    else if (xdev_alloc_g_cfg.backend_async) {
        if (!XDEV_HAS(be, memory, malloc_async)) { /* the group memory.async, whole */
            free(da);
            return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "XDEV_ALLOC_CONF=backend:async: the %s backend has no stream-ordered "
                             "allocator",
                             be->name);
        }
        da->mode = XDEV_ALLOC_MODE_ASYNC;
    } else if (xdev_alloc_g_cfg.expandable_segments &&
               !XDEV_HAS(be, memory, va_map)) { /* memory.va */
        free(da);
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "XDEV_ALLOC_CONF=expandable_segments:true: the %s backend has no "
                         "virtual memory calls (memory.va_*)",
                         be->name);
    }
    da->default_mode = da->mode;
    da->primary = da;
    atomic_init(&da->arenas[0], da);
    *out = da;
    return XDEV_SUCCESS;
}

/* xdev_alloc_get's first call for a device (alloc_internal.h). */
xdev_status_t xdev_alloc_create(xdev_backend_t *be, int index, xdev_device_allocator_t **out) {
    xdev_device_allocator_t *da;
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_create_lock);
    da = atomic_load(&xdev_alloc_g_allocs[be->type][index]);
    if (da == NULL) {
        st = create(be, index, &da);
        if (st == XDEV_SUCCESS)
            atomic_store_explicit(&xdev_alloc_g_allocs[be->type][index], da, memory_order_release);
    }
    pthread_mutex_unlock(&g_create_lock);
    *out = da;
    return st;
}

/* ------------------------------------------------ arenas
 *
 * A thread moves off the primary arena once it has found that arena's lock
 * held XDEV_ARENA_MOVE_AFTER times while allocating: then it is one of
 * several threads allocating on the device at once, and one lock would make
 * them queue (8 threads churning one device took 13x longer per step than
 * one). It takes the arena with the fewest threads attached, so threads
 * started later reuse the arenas (and the cached segments) of threads that
 * have exited. An arena is a whole caching allocator; only the caching mode
 * has arenas. */
#define XDEV_ARENA_MOVE_AFTER 8

static atomic_int g_arena_threads[XDEV_MAX_ARENAS]; /* threads attached, per arena index */

/* The calling thread's place among the arenas: the allocator's own
 * initial-exec TLS (16 of the bytes tests/test_tls.c bounds). */
typedef struct alloc_thread {
    xdev_device_allocator_t *hint; /* arena this thread used last: where a free looks first */
    int arena;                     /* arena index it allocates from (0: the primary) */
    unsigned contended;            /* times it found its arena's lock held */
} alloc_thread_t;
static _Thread_local alloc_thread_t tls_alloc __attribute__((tls_model("initial-exec")));

/* Attach the calling thread to the arena with the fewest threads. Runtime's
 * per-thread block is made first: its release at the thread's exit runs
 * thread_exit. */
static int choose_arena(void) {
    (void)xdev_thread_state();
    int best = 1, n = xdev_alloc_g_cfg.thread_arenas;
    for (int k = 2; k < n; k++)
        if (atomic_load(&g_arena_threads[k]) < atomic_load(&g_arena_threads[best])) best = k;
    atomic_fetch_add(&g_arena_threads[best], 1);
    return best;
}

/* A thread that exits leaves its arena, which counts one thread fewer. */
static void thread_exit(void) {
    int arena = tls_alloc.arena;
    if (arena > 0 && arena < XDEV_MAX_ARENAS) atomic_fetch_sub(&g_arena_threads[arena], 1);
    tls_alloc.arena = 0;
}

/* Wired when libxdev loads (core/wiring.c): runtime/, below alloc/, reaches the allocator only
 * through its hooks (runtime/hooks.h): the settings are parsed at
 * initialisation, before any backend loads, so that a malformed
 * XDEV_ALLOC_CONF fails xdev_init; a thread's exit returns its arena. */
void xdev_device_allocator_wire(void) {
    xdev_hook_init_add(XDEV_INIT_SETTINGS, settings_load);
    xdev_hook_thread_exit_add(thread_exit);
}

/* Arena k of a device, created on first use with the primary's settings;
 * the primary when it cannot be created. */
static xdev_device_allocator_t *arena_get(xdev_device_allocator_t *p, int k) {
    xdev_device_allocator_t *a = atomic_load_explicit(&p->arenas[k], memory_order_acquire);
    if (a != NULL) return a;
    pthread_mutex_lock(&g_create_lock); /* also orders against set_per_process_memory_fraction */
    a = atomic_load(&p->arenas[k]);
    if (a == NULL && (a = calloc(1, sizeof *a)) != NULL) {
        xdev_spin_lock(&p->lock);
        a->rec = p->rec;
        a->be = p->be;
        a->index = p->index;
        a->mode = a->default_mode = XDEV_ALLOC_MODE_CACHING;
        a->fraction = p->fraction;
        a->limit = p->limit;
        a->total_memory = p->total_memory;
        a->stats.max_split_size = p->stats.max_split_size;
        xdev_spin_unlock(&p->lock);
        a->primary = p;
        a->arena = k;
        a->used = true;
        atomic_store_explicit(&p->arenas[k], a, memory_order_release);
    }
    pthread_mutex_unlock(&g_create_lock);
    return a != NULL ? a : p;
}

int xdev_alloc_arenas(xdev_device_allocator_t *primary, xdev_device_allocator_t **out) {
    int n = 0;
    for (int k = 0; k < XDEV_MAX_ARENAS; k++) {
        xdev_device_allocator_t *a =
            atomic_load_explicit(&primary->arenas[k], memory_order_acquire);
        if (a != NULL) out[n++] = a;
    }
    return n;
}

int xdev_alloc_lock_all(xdev_device_allocator_t *primary, xdev_device_allocator_t **out) {
    int n = xdev_alloc_arenas(primary, out);
    for (int i = 0; i < n; i++)
        xdev_spin_lock(&out[i]->lock);
    return n;
}

void xdev_alloc_unlock_all(xdev_device_allocator_t **arenas, int n) {
    for (int i = n - 1; i >= 0; i--)
        xdev_spin_unlock(&arenas[i]->lock);
}

xdev_device_allocator_t *xdev_alloc_owner(const xdev_ptr_entry_t *e) {
    if (e->owner != NULL) return e->owner;
    xdev_device_allocator_t *da;
    return xdev_alloc_get(e->be, e->index, &da) == XDEV_SUCCESS ? da : NULL;
}

xdev_block_t *xdev_alloc_find_block(xdev_device_allocator_t *da, uintptr_t addr,
                                    xdev_segment_t **seg_out) {
    for (xdev_segment_t *seg = da->segments; seg != NULL; seg = seg->next) {
        if (addr < seg->base || addr >= seg->base + seg->size) continue;
        if (seg_out) *seg_out = seg;
        for (xdev_block_t *b = seg->first; b != NULL; b = b->next)
            if (addr >= b->addr && addr < b->addr + b->size) return b;
        return NULL;
    }
    if (seg_out) *seg_out = NULL;
    for (xdev_block_t *b = da->direct_blocks; b != NULL; b = b->next) /* non-caching modes */
        if (addr >= b->addr && addr < b->addr + b->size) return b;
    for (xdev_block_t *b = da->managed_blocks; b != NULL; b = b->next) /* managed.c */
        if (addr >= b->addr && addr < b->addr + b->size) return b;
    return NULL;
}

/* ------------------------------------------------ non-caching modes */

static int pool_of(size_t size) {
    return size <= XDEV_SMALL_SIZE ? XDEV_POOL_SMALL : XDEV_POOL_LARGE;
}

static void direct_stats(xdev_device_allocator_t *da, const xdev_block_t *b, int sign) {
    int k = pool_of(b->size);
    int64_t n = sign, bytes = sign * (int64_t)b->size;
    xdev_stat_update(da->stats.allocation, k, n);
    xdev_stat_update(da->stats.active, k, n);
    xdev_stat_update(da->stats.segment, k, n);
    xdev_stat_update(da->stats.allocated_bytes, k, bytes);
    xdev_stat_update(da->stats.active_bytes, k, bytes);
    xdev_stat_update(da->stats.reserved_bytes, k, bytes);
    xdev_stat_update(da->stats.requested_bytes, k, sign * (int64_t)b->requested);
    if (sign > 0)
        da->stats.num_device_alloc++;
    else
        da->stats.num_device_free++;
}

static xdev_status_t direct_malloc(xdev_device_allocator_t *da, size_t size, xdev_stream_t stream,
                                   xdev_block_t **out) {
    size_t reserved = (size_t)da->stats.reserved_bytes[XDEV_STAT_ALL].current;
    if (da->limit != SIZE_MAX && (reserved > da->limit || size > da->limit - reserved)) {
        da->stats.num_ooms++;
        return xdev_caching_oom_error(da, size, XDEV_SUCCESS, "");
    }
    xdev_block_t *b = calloc(1, sizeof *b);
    if (b == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a block");
    void *p = NULL;
    xdev_status_t st;
    if (da->mode == XDEV_ALLOC_MODE_ASYNC) {
        st = xdev_be_memory_malloc_async(da->rec, size, stream->native, &p);
    } else if (da->mode == XDEV_ALLOC_MODE_PLUGGABLE) {
        st = da->pluggable.malloc(da->pluggable.ctx, stream->device, size, stream, &p);
        if (st == XDEV_SUCCESS && p == NULL)
            st = XDEV_FAIL(XDEV_ERROR_INTERNAL, "the pluggable allocator returned NULL");
    } else {
        st = xdev_be_memory_malloc(da->rec, size, &p);
    }
    if (st != XDEV_SUCCESS) {
        free(b);
        if (st != XDEV_ERROR_OUT_OF_MEMORY) return st;
        da->stats.num_ooms++;
        char backend_msg[512]; /* an application's allocator cannot set xdev's message */
        snprintf(backend_msg, sizeof backend_msg, "%s",
                 da->mode == XDEV_ALLOC_MODE_PLUGGABLE
                     ? "the allocator installed with xdev_set_allocator returned "
                       "XDEV_ERROR_OUT_OF_MEMORY"
                     : xdev_last_error());
        return xdev_caching_oom_error(da, size, st, backend_msg);
    }
    b->addr = (uintptr_t)p;
    b->size = size;
    b->requested = size;
    b->stream = stream;
    b->state = XDEV_BLOCK_ACTIVE;
    b->owner = da;
    b->bin = -1;
    xdev_ptr_entry_t e = {(uintptr_t)p, size, XDEV_MEMORY_DEVICE, da->be,
                          da->index,    NULL, XDEV_PTR_DIRECT,    da};
    (void)xdev_ptr_insert(&e);
    b->next = da->direct_blocks;
    if (b->next) b->next->prev = b;
    da->direct_blocks = b;
    direct_stats(da, b, +1);
    b->tag = xdev_alloc_tag_current();
    xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_ALLOC, b->addr, size, stream->native, b->tag);
    *out = b;
    return XDEV_SUCCESS;
}

/* Make `s` wait for the work queued so far on each stream that used b. */
static void wait_used_streams(xdev_block_t *b) {
    xdev_error_state_t saved; /* best effort: failures leave no error behind */
    xdev_core_error_save(&saved);
    for (int i = 0; i < b->n_used_streams; i++) {
        xdev_stream_t u = i < XDEV_BLOCK_INLINE_STREAMS
                              ? b->used_streams[i]
                              : b->more_used_streams[i - XDEV_BLOCK_INLINE_STREAMS];
        if (xdev_core_stream_acquire(u) && xdev_stream_wait_stream(b->stream, u) != XDEV_SUCCESS)
            (void)xdev_core_stream_synchronize_always(u);
    }
    xdev_core_error_restore(&saved);
}

/* A non-caching free in two steps, so that no backend call (which may wait
 * for the device) runs under the device lock: direct_unlink takes the block
 * out of the tables and statistics (lock held), direct_release hands the
 * memory back (lock not held). The registry entry goes first, so the address
 * is unknown to xdev before the backend can hand it out again. */
static void direct_unlink(xdev_device_allocator_t *da, xdev_block_t *b) {
    xdev_ptr_entry_t e;
    (void)xdev_ptr_remove((void *)b->addr, XDEV_MEMORY_DEVICE, &e);
    if (b->prev)
        b->prev->next = b->next;
    else
        da->direct_blocks = b->next;
    if (b->next) b->next->prev = b->prev;
    direct_stats(da, b, -1);
    xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_FREE_COMPLETED, b->addr, b->size,
                              b->stream->native, b->tag);
}

static xdev_status_t direct_release(xdev_device_allocator_t *da, xdev_block_t *b) {
    xdev_status_t st;
    bool stream_live = xdev_core_stream_acquire(b->stream);
    if (da->mode == XDEV_ALLOC_MODE_ASYNC && stream_live) {
        wait_used_streams(b);
        st = xdev_be_memory_free_async(da->rec, (void *)b->addr, b->stream->native);
    } else if (da->mode == XDEV_ALLOC_MODE_PLUGGABLE) {
        if (stream_live) wait_used_streams(b);
        st = da->pluggable.free(da->pluggable.ctx, (xdev_device_t){da->be->type, da->index},
                                (void *)b->addr, b->size, stream_live ? b->stream : NULL);
    } else {
        /* the device was synchronized before the block was unlinked */
        st = xdev_be_memory_free(da->rec, (void *)b->addr);
    }
    free(b->more_used_streams);
    free(b);
    return st;
}

/* XDEV_NO_MEMORY_CACHING frees like cudaFree: after the device has passed
 * the work queued so far, which may still use the memory. The wait comes
 * first, without any lock and before anything changes: if it fails (called
 * from a host function of this device, which cannot wait for its own
 * stream), the free fails and the allocation stays live. */
static xdev_status_t direct_wait_before_free(const void *ptr) {
    xdev_ptr_entry_t e;
    xdev_device_allocator_t *da;
    if (!xdev_ptr_lookup(ptr, &e) || e.origin != XDEV_PTR_DIRECT || e.base != (uintptr_t)ptr ||
        xdev_alloc_get(e.be, e.index, &da) != XDEV_SUCCESS || da->mode != XDEV_ALLOC_MODE_DIRECT)
        return XDEV_SUCCESS; /* not a direct-mode allocation: nothing to wait for */
    xdev_status_t st = xdev_be_device_synchronize(da->rec);
    if (st != XDEV_SUCCESS) {
        char why[512]; /* a copy: a message is never formatted from the thread's own */
        snprintf(why, sizeof why, "%s", xdev_last_error());
        return XDEV_FAIL(st,
                         "%s:%d: with XDEV_NO_MEMORY_CACHING a free waits for the device, and "
                         "that wait failed: %s. The allocation %p is still live: free it once "
                         "the wait can succeed (outside the device's host functions), or leave "
                         "caching on",
                         e.be->name, e.index, why, ptr);
    }
    return XDEV_SUCCESS;
}

/* ------------------------------------------------ public API */

/* Resolve a NULL stream to the current stream of the default type's device.
 * Inline: the call (its saved registers) was 25 of the ~400 instructions of
 * an xdev_malloc + xdev_free pair. */
static inline __attribute__((always_inline)) xdev_status_t resolve_stream(xdev_stream_t *stream) {
    if (*stream != NULL) return xdev_stream_check(*stream, "stream");
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    xdev_device_record_t *rec;
    xdev_device_t cur = {xdev_core_default_type(), -1};
    st = xdev_device_lookup(cur, &rec);
    return st == XDEV_SUCCESS ? xdev_core_current_stream(rec, stream) : st;
}

xdev_status_t xdev_alloc_malloc_on(xdev_stream_t stream, size_t size, void **ptr) {
    xdev_device_allocator_t *da;
    xdev_status_t st = xdev_alloc_get(stream->be, stream->device.index, &da);
    if (st != XDEV_SUCCESS) return st;
    alloc_thread_t *ts = &tls_alloc;
    /* A capture's or a scope's pool lives in the primary arena. */
    xdev_mempool_t mp = NULL;
    if (XDEV_UNLIKELY(atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) != 0 ||
                      xdev_mempool_scopes_open()))
        mp = xdev_mempool_route(stream);
    if (mp == NULL && ts->arena != 0 && atomic_load_explicit(&da->arenas_ok, memory_order_acquire))
        da = arena_get(da, ts->arena);
    if (size > XDEV_MAX_ALLOC_SIZE) {
        xdev_spin_lock(&da->lock);
        da->stats.num_ooms++;
        xdev_spin_unlock(&da->lock);
        st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                       "%s:%d out of memory: tried to allocate %zu bytes, more than any device "
                       "holds (xdev refuses requests over %zu bytes)",
                       stream->be->name, stream->device.index, size, XDEV_MAX_ALLOC_SIZE);
        xdev_alloc_oom_notify(da->primary, size);
        return st;
    }
    xdev_block_t *b = NULL;
    bool contended = !xdev_spin_trylock(&da->lock);
    if (contended) xdev_spin_lock(&da->lock);
    da->used = true;
    bool caching = da->mode == XDEV_ALLOC_MODE_CACHING;
    if (caching) {
        /* the stash is a block this arena handed out before: arenas_ok is
         * set already when the hot pair takes it */
        b = xdev_caching_malloc_hot(da, size, stream, mp != NULL ? mp->id : 0);
        if (b != NULL) {
            st = XDEV_SUCCESS;
        } else {
            if (da->arena == 0 && !atomic_load_explicit(&da->arenas_ok, memory_order_relaxed))
                atomic_store_explicit(&da->arenas_ok, true, memory_order_release);
            st = xdev_caching_malloc(da, size, stream, mp, &b);
        }
    } else if (mp != NULL) {
        st = xdev_mempool_supported(da->rec); /* a scope opened before the mode changed */
    } else {
        st = direct_malloc(da, size, stream, &b);
    }
    bool oom = st == XDEV_ERROR_OUT_OF_MEMORY; /* the allocator's, not the tracking's below */
    xdev_block_t *undo = NULL; /* a direct allocation to give back after unlocking */
    if (st == XDEV_SUCCESS && !xdev_ptrtab_insert(&da->live, b)) {
        if (da->mode == XDEV_ALLOC_MODE_CACHING) {
            xdev_caching_free(da, b);
        } else {
            direct_unlink(da, b);
            undo = b;
        }
        st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to track the allocation");
    }
    xdev_spin_unlock(&da->lock);
    if (undo != NULL) (void)direct_release(da, undo); /* never used: no wait needed */
    if (XDEV_UNLIKELY(oom)) xdev_alloc_oom_notify(da->primary, size); /* no lock held */
    if (contended && caching && ts->arena == 0 && xdev_alloc_g_cfg.thread_arenas > 1 &&
        ++ts->contended >= XDEV_ARENA_MOVE_AFTER)
        ts->arena = choose_arena();
    if (st != XDEV_SUCCESS) return st;
    ts->hint = da;
    *ptr = (void *)b->addr;
    return XDEV_SUCCESS;
}

/* The device allocator whose live table holds ptr, locked, with the block
 * removed (*out); NULL when no device has it. Tries the thread's last device
 * first (one lock, the common case), then the segment registry. */
static xdev_device_allocator_t *take_live(uintptr_t ptr, xdev_block_t **out) {
    xdev_device_allocator_t *hint = tls_alloc.hint;
    if (hint != NULL) {
        xdev_spin_lock(&hint->lock);
        *out = xdev_ptrtab_remove(&hint->live, ptr);
        if (*out != NULL) {
            xdev_alloc_count_free(hint, *out);
            return hint;
        }
        xdev_spin_unlock(&hint->lock);
    }
    xdev_ptr_entry_t e;
    xdev_device_allocator_t *da;
    if (!xdev_ptr_lookup((const void *)ptr, &e) || e.kind != XDEV_MEMORY_DEVICE ||
        (da = xdev_alloc_owner(&e)) == NULL || da == hint)
        return NULL;
    xdev_spin_lock(&da->lock);
    *out = xdev_ptrtab_remove(&da->live, ptr);
    if (*out != NULL) {
        xdev_alloc_count_free(da, *out);
        tls_alloc.hint = da;
        return da;
    }
    xdev_spin_unlock(&da->lock);
    return NULL;
}

xdev_status_t xdev_malloc_stream(void **ptr, size_t size, xdev_stream_t stream) {
    XDEV_REQUIRE_ARG(ptr);
    *ptr = NULL;
    /* resolve_stream's check, inline for the common explicit stream */
    XDEV_CHECK(stream != NULL ? xdev_stream_check(stream, "stream") : resolve_stream(&stream));
    if (size == 0) return XDEV_SUCCESS;
    XDEV_CHECK(xdev_alloc_malloc_on(stream, size, ptr));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_malloc_device(xdev_device_t device, void **ptr, size_t size) {
    XDEV_REQUIRE_ARG(ptr);
    *ptr = NULL;
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    if (size == 0) return XDEV_SUCCESS;
    xdev_stream_t s;
    XDEV_CHECK(xdev_core_current_stream(rec, &s));
    XDEV_CHECK(xdev_alloc_malloc_on(s, size, ptr));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_malloc(void **ptr, size_t size) {
    XDEV_REQUIRE_ARG(ptr);
    *ptr = NULL;
    xdev_stream_t s = NULL;
    XDEV_CHECK(resolve_stream(&s));
    if (size == 0) return XDEV_SUCCESS;
    XDEV_CHECK(xdev_alloc_malloc_on(s, size, ptr));
    return XDEV_SUCCESS;
}

/* Say precisely why `ptr` is not a live allocation. */
static xdev_status_t explain_bad_free(const void *ptr) {
    xdev_ptr_entry_t e;
    if (!xdev_ptr_lookup(ptr, &e))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p was not allocated by xdev_malloc (or was already freed)", ptr);
    if (e.origin == XDEV_PTR_FOREIGN)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p is memory xdev did not allocate (registered with "
                         "xdev_memory_register or xdev_host_register, or a DLPack import): give "
                         "it back with %s",
                         ptr,
                         e.kind == XDEV_MEMORY_PINNED_HOST ? "xdev_host_unregister"
                                                           : "xdev_memory_unregister");
    if (e.kind == XDEV_MEMORY_PINNED_HOST)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p is pinned host memory from xdev_host_alloc; free it with "
                         "xdev_host_free",
                         ptr);
    xdev_device_allocator_t *da = xdev_alloc_owner(&e);
    if (da == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "pointer %p is not a live allocation", ptr);
    xdev_spin_lock(&da->lock);
    xdev_block_t *b = xdev_alloc_find_block(da, (uintptr_t)ptr, NULL);
    uintptr_t base = b ? b->addr : 0;
    size_t size = b ? b->size : 0;
    int state = b ? b->state : -1;
    bool kept = b != NULL && b->kept; /* freed during a graph capture (mempool.c) */
    xdev_spin_unlock(&da->lock);
    if (kept)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p on %s:%d was already freed (double free, or a pointer into "
                         "freed memory): it was freed during a graph capture, and its memory is "
                         "kept for the graph's replays until the graph is reset or destroyed",
                         ptr, e.be->name, e.index);
    if (b != NULL && state == XDEV_BLOCK_ACTIVE && base != (uintptr_t)ptr)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p points %zu bytes into an allocation of %zu bytes at %p; free "
                         "the start of the allocation",
                         ptr, (size_t)((uintptr_t)ptr - base), size, (void *)base);
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                     "pointer %p on %s:%d is not a live allocation: double free, or a pointer "
                     "that was never returned by xdev_malloc",
                     ptr, e.be->name, e.index);
}

/* The sanitizer's check of a free (xdev_san_free), before the block leaves
 * the live table: its stream and whether the mode reuses it without a wait. */
static void sanitize_free(const void *ptr) {
    xdev_ptr_entry_t e;
    xdev_device_allocator_t *da;
    if (!xdev_ptr_lookup(ptr, &e) || e.kind != XDEV_MEMORY_DEVICE ||
        (da = xdev_alloc_owner(&e)) == NULL)
        return;
    xdev_spin_lock(&da->lock);
    xdev_block_t *b = xdev_ptrtab_find(&da->live, (uintptr_t)ptr);
    xdev_stream_t owner = b != NULL ? b->stream : NULL;
    /* direct and managed: the device is synchronized before the memory goes */
    bool check = da->mode != XDEV_ALLOC_MODE_DIRECT && (b == NULL || !b->managed);
    xdev_spin_unlock(&da->lock);
    if (owner != NULL) xdev_san_free(ptr, owner, check);
}

xdev_status_t xdev_alloc_free(void *ptr) {
    int held =
        xdev_exports_check_free(ptr, XDEV_MEMORY_DEVICE); /* a DLPack consumer holds it: put off */
    if (held != 0) return held > 0 ? XDEV_SUCCESS : XDEV_ERROR_INVALID_VALUE;
    if (xdev_sanitizing()) sanitize_free(ptr);
    if (XDEV_UNLIKELY(g_no_caching)) { /* the hot path: one branch, no call */
        xdev_status_t st = direct_wait_before_free(ptr);
        if (st != XDEV_SUCCESS) return st;
    }
    xdev_block_t *b = NULL;
    xdev_device_allocator_t *da = take_live((uintptr_t)ptr, &b); /* locked */
    if (da == NULL) return explain_bad_free(ptr);
    if (XDEV_UNLIKELY(b->managed)) return xdev_managed_free_taken(da, b); /* unlocks */
    if (da->mode == XDEV_ALLOC_MODE_CACHING) {
        if (XDEV_UNLIKELY(atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) != 0) &&
            xdev_mempool_keep_for_captures(da, b)) {
            xdev_spin_unlock(&da->lock);
            return XDEV_SUCCESS;
        }
        if (!xdev_caching_free_hot(da, b)) xdev_caching_free(da, b);
        xdev_spin_unlock(&da->lock);
        return XDEV_SUCCESS;
    }
    direct_unlink(da, b);
    xdev_spin_unlock(&da->lock);
    return direct_release(da, b);
}

xdev_status_t xdev_free(void *ptr) {
    if (ptr == NULL) return XDEV_SUCCESS;
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(xdev_alloc_free(ptr));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_record_stream(void *ptr, xdev_stream_t stream) {
    XDEV_REQUIRE_ARG(ptr);
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    xdev_ptr_entry_t e;
    if (!xdev_ptr_lookup(ptr, &e) || e.kind != XDEV_MEMORY_DEVICE)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "pointer %p is not device memory allocated by xdev", ptr);
    if (e.be != stream->be || e.index != stream->device.index)
        return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "pointer %p is on %s:%d but the stream belongs to %s:%d", ptr,
                             e.be->name, e.index, stream->be->name, stream->device.index);
    if (e.origin == XDEV_PTR_FOREIGN) { /* registered: its give-back waits for the stream */
        XDEV_CHECK(xdev_ptr_origin_ops(XDEV_PTR_FOREIGN)->record_stream(&e, stream));
        xdev_san_record_stream(ptr, stream);
        return XDEV_SUCCESS;
    }
    xdev_device_allocator_t *da = xdev_alloc_owner(&e);
    if (da == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "pointer %p is not a live allocation", ptr);
    xdev_status_t st;
    xdev_spin_lock(&da->lock);
    xdev_block_t *b = xdev_ptrtab_find(&da->live, (uintptr_t)ptr);
    if (b == NULL || b->state != XDEV_BLOCK_ACTIVE)
        st =
            XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                      "pointer %p is not the start of a live allocation (freed, or interior)", ptr);
    else
        st = xdev_caching_record_stream(da, b, stream); /* every mode orders the free */
    xdev_spin_unlock(&da->lock);
    XDEV_CHECK(st);
    xdev_san_record_stream(ptr, stream);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_empty_cache(void) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(xdev_capture_check_unsafe("xdev_empty_cache"));
    xdev_device_allocator_t *all[XDEV_MAX_DEVICE_TYPES * XDEV_MAX_DEVICES];
    int n = xdev_alloc_all(all, XDEV_MAX_DEVICE_TYPES * XDEV_MAX_DEVICES);
    for (int i = 0; i < n; i++) {
        xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
        int na = xdev_alloc_arenas(all[i], arenas);
        for (int k = 0; k < na; k++) {
            xdev_device_allocator_t *da = arenas[k];
            xdev_spin_lock(&da->lock);
            if (da->mode == XDEV_ALLOC_MODE_CACHING)
                (void)xdev_caching_empty_cache(da);
            else if (da->mode == XDEV_ALLOC_MODE_PLUGGABLE && da->pluggable.empty_cache != NULL)
                da->pluggable.empty_cache(da->pluggable.ctx,
                                          (xdev_device_t){da->be->type, da->index});
            xdev_spin_unlock(&da->lock);
        }
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_set_per_process_memory_fraction(double fraction, xdev_device_t device) {
    if (!(fraction >= 0.0 && fraction <= 1.0))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "fraction %g is outside [0, 1]", fraction);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_device_allocator_t *da;
    XDEV_CHECK(xdev_alloc_get(rec->be, rec->id.index, &da));
    size_t limit = fraction >= 1.0 ? SIZE_MAX : (size_t)(fraction * (double)da->total_memory);
    pthread_mutex_lock(&g_create_lock); /* no arena is created meanwhile with the old cap */
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int na = xdev_alloc_arenas(da, arenas);
    for (int k = 0; k < na; k++) {
        xdev_spin_lock(&arenas[k]->lock);
        arenas[k]->fraction = fraction;
        arenas[k]->limit = limit;
        xdev_spin_unlock(&arenas[k]->lock);
    }
    pthread_mutex_unlock(&g_create_lock);
    return XDEV_SUCCESS;
}

/* An application's allocator, as xdev keeps it: `size` says how much of the
 * struct the caller's header had (an older one ends before empty_cache), so
 * what is past it reads as NULL. One rule for xdev_set_allocator and memory
 * pools. */
xdev_status_t xdev_allocator_accept(const char *call, const xdev_allocator_t *in,
                                    xdev_allocator_t *out) {
    if (in->size < offsetof(xdev_allocator_t, free) + sizeof in->free || in->malloc == NULL ||
        in->free == NULL)
        return xdev_core_blame(XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                                         "the allocator needs size = sizeof(xdev_allocator_t) "
                                         "and both malloc and free"),
                               call);
    memset(out, 0, sizeof *out);
    memcpy(out, in, in->size < sizeof *out ? in->size : sizeof *out);
    out->size = sizeof *out;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_set_allocator(xdev_device_t device, const xdev_allocator_t *allocator) {
    xdev_allocator_t accepted;
    if (allocator != NULL) XDEV_CHECK(xdev_allocator_accept(__func__, allocator, &accepted));
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_device_allocator_t *da;
    XDEV_CHECK(xdev_alloc_get(rec->be, rec->id.index, &da));
    xdev_status_t st = XDEV_SUCCESS;
    xdev_spin_lock(&da->lock);
    if (da->used) {
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "%s:%d has already allocated memory; install the allocator before the "
                       "first allocation",
                       rec->be->name, rec->id.index);
    } else if (allocator != NULL) {
        da->pluggable = accepted;
        da->mode = XDEV_ALLOC_MODE_PLUGGABLE;
    } else {
        da->mode = da->default_mode;
    }
    xdev_spin_unlock(&da->lock);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}
