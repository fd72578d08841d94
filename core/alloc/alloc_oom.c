/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_oom.c - a device allocation that ran out of memory: the message, in
 * torch's words and more (what was asked, the device's capacity and free
 * memory, the cap, what xdev holds allocated and reserved but unallocated,
 * the largest free cached block, what to try), and the observers called
 * before the failing call returns (xdev_memory_add_oom_observer, and
 * observe/'s XDEV_OOM_SNAPSHOT writer). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_oom.h"

#include "alloc/alloc_internal.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"

static void format_bytes(char *buf, size_t len, size_t v) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024.0 && u < 4) {
        d /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%zu bytes", v);
    else
        snprintf(buf, len, "%.2f %s", d, units[u]);
}

/* The largest free block cached in any arena of the device (each arena's
 * lock in turn; the caller holds none): how large a request the cache could
 * serve without new memory, so a small figure next to much reserved but
 * unallocated memory means fragmentation. */
static size_t largest_free_block(xdev_device_allocator_t *primary) {
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n = xdev_alloc_arenas(primary, arenas);
    size_t best = 0;
    for (int i = 0; i < n; i++) {
        xdev_spin_lock(&arenas[i]->lock);
        xdev_caching_stash_flush(arenas[i]);
        for (const xdev_segment_t *s = arenas[i]->segments; s != NULL; s = s->next)
            for (const xdev_block_t *b = s->first; b != NULL; b = b->next)
                if (b->state == XDEV_BLOCK_FREE && b->size > best) best = b->size;
        xdev_spin_unlock(&arenas[i]->lock);
    }
    return best;
}

/* The out-of-memory message, torch's and more: what was asked; the device's
 * capacity and free memory; the cap; what xdev holds allocated, reserved but
 * unallocated, and the largest free cached block; the backend's own words;
 * what to try, from those figures. Lock held, dropped meanwhile. */
xdev_status_t xdev_caching_oom_error(xdev_device_allocator_t *da, size_t size,
                                     xdev_status_t backend_st, const char *backend_msg) {
    size_t free_b = 0, total_b = 0;
    if (XDEV_HAS(da->be, memory, mem_get_info))
        (void)xdev_be_memory_mem_get_info(da->rec, &free_b, &total_b);
    xdev_memory_stats_t s; /* the device's figures, all arenas (each lock in turn) */
    xdev_spin_unlock(&da->lock);
    xdev_alloc_stats_copy(da->primary, &s);
    size_t largest = largest_free_block(da->primary);
    xdev_spin_lock(&da->lock);
    size_t allocated = (size_t)s.allocated_bytes[XDEV_STAT_ALL].current;
    size_t reserved = (size_t)s.reserved_bytes[XDEV_STAT_ALL].current;
    size_t unused = reserved > allocated ? reserved - allocated : 0;
    char req[32], tot[32], fr[32], al[32], un[32], big[32], lim[160];
    format_bytes(req, sizeof req, size);
    format_bytes(tot, sizeof tot, total_b);
    format_bytes(fr, sizeof fr, free_b);
    format_bytes(al, sizeof al, allocated);
    format_bytes(un, sizeof un, unused);
    format_bytes(big, sizeof big, largest);
    bool capped = da->limit != SIZE_MAX && (reserved > da->limit || size > da->limit - reserved);
    if (da->limit != SIZE_MAX) {
        char l[32];
        format_bytes(l, sizeof l, da->limit);
        snprintf(lim, sizeof lim, " xdev may reserve at most %s (memory fraction %.3g).", l,
                 da->fraction);
    } else {
        snprintf(lim, sizeof lim, " No memory fraction caps xdev.");
    }
    bool fragmented = unused >= size || (unused > allocated / 4 && unused > 0);
    return XDEV_FAIL(
        XDEV_ERROR_OUT_OF_MEMORY,
        "%s:%d out of memory: tried to allocate %s. The device has a total capacity of %s of "
        "which %s is free.%s Of the memory in use, %s is allocated by xdev and %s is reserved "
        "by xdev but unallocated; the largest free cached block is %s.%s%s%s Try: %s%s"
        "free what is no longer needed or allocate less at once; xdev_memory_summary or "
        "XDEV_OOM_SNAPSHOT=path shows what holds the memory.",
        da->be->name, da->index, req, tot, fr, lim, al, un, big,
        backend_st == XDEV_ERROR_OUT_OF_MEMORY && backend_msg[0] ? " Backend: " : "",
        backend_st == XDEV_ERROR_OUT_OF_MEMORY ? backend_msg : "",
        backend_st == XDEV_ERROR_OUT_OF_MEMORY && backend_msg[0] &&
                backend_msg[strlen(backend_msg) - 1] != '.'
            ? "."
            : "",
        capped ? "a larger memory fraction (xdev_set_per_process_memory_fraction); " : "",
        fragmented ? "expandable_segments:true or max_split_size_mb in XDEV_ALLOC_CONF against "
                     "fragmentation; "
                   : "");
}

/* ------------------------------------------------ observers */

#define XDEV_OOM_OBSERVERS 8

typedef struct oom_observer {
    xdev_oom_observer_t fn;
    void *user;
} oom_observer_t;

static pthread_mutex_t g_oom_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_oom_idle = PTHREAD_COND_INITIALIZER;
static oom_observer_t g_oom_observers[XDEV_OOM_OBSERVERS];
static int g_oom_inflight;                     /* notifications running (under g_oom_lock) */
static xdev_oom_observer_t g_oom_internal;     /* observe/'s, set while libxdev loads */
static _Thread_local bool tls_in_oom_observer; /* this thread is inside an observer */

void xdev_alloc_oom_internal_set(xdev_oom_observer_t fn) {
    g_oom_internal = fn;
}

void xdev_alloc_oom_notify(xdev_device_allocator_t *primary, size_t requested) {
    if (tls_in_oom_observer) return; /* an observer's own allocation failed */
    pthread_mutex_lock(&g_oom_lock);
    oom_observer_t list[XDEV_OOM_OBSERVERS];
    int n = 0;
    for (int i = 0; i < XDEV_OOM_OBSERVERS; i++)
        if (g_oom_observers[i].fn != NULL) list[n++] = g_oom_observers[i];
    if (n > 0) g_oom_inflight++;
    pthread_mutex_unlock(&g_oom_lock);
    if (n == 0 && g_oom_internal == NULL) return;
    xdev_error_state_t saved; /* the failing call's status and message stay its own */
    xdev_core_error_save(&saved);
    xdev_memory_stats_t stats;
    xdev_alloc_stats_copy(primary, &stats);
    xdev_oom_info_t info = {
        .device = {primary->be->type, primary->index},
        .requested = requested,
        .largest_free_block = largest_free_block(primary),
        .stats = &stats,
        .message = saved.message,
    };
    if (XDEV_HAS(primary->be, memory, mem_get_info))
        (void)xdev_be_memory_mem_get_info(primary->rec, &info.device_free, &info.device_total);
    int64_t alloc = stats.allocated_bytes[XDEV_STAT_ALL].current;
    int64_t res = stats.reserved_bytes[XDEV_STAT_ALL].current;
    info.reserved_unused = res > alloc ? (size_t)(res - alloc) : 0;
    xdev_spin_lock(&primary->lock);
    info.limit = primary->limit;
    xdev_spin_unlock(&primary->lock);
    tls_in_oom_observer = true;
    for (int i = 0; i < n; i++) {
        list[i].fn(&info, list[i].user);
        xdev_core_error_restore(&saved);
    }
    if (g_oom_internal != NULL) g_oom_internal(&info, NULL);
    tls_in_oom_observer = false;
    xdev_core_error_restore(&saved);
    if (n > 0) {
        pthread_mutex_lock(&g_oom_lock);
        if (--g_oom_inflight == 0) pthread_cond_broadcast(&g_oom_idle);
        pthread_mutex_unlock(&g_oom_lock);
    }
}

xdev_status_t xdev_memory_add_oom_observer(xdev_oom_observer_t fn, void *user) {
    XDEV_REQUIRE_ARG(fn);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_oom_lock);
    int slot = -1;
    for (int i = 0; i < XDEV_OOM_OBSERVERS; i++) {
        if (g_oom_observers[i].fn == fn && g_oom_observers[i].user == user) {
            st =
                XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                          "this observer (fn %p, user %p) is already registered", (void *)fn, user);
            break;
        }
        if (g_oom_observers[i].fn == NULL && slot < 0) slot = i;
    }
    if (st == XDEV_SUCCESS && slot < 0)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "%d out-of-memory observers are registered, the "
                       "most there may be: remove one first",
                       XDEV_OOM_OBSERVERS);
    if (st == XDEV_SUCCESS) g_oom_observers[slot] = (oom_observer_t){fn, user};
    pthread_mutex_unlock(&g_oom_lock);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_remove_oom_observer(xdev_oom_observer_t fn, void *user) {
    XDEV_REQUIRE_ARG(fn);
    bool found = false;
    pthread_mutex_lock(&g_oom_lock);
    for (int i = 0; i < XDEV_OOM_OBSERVERS && !found; i++)
        if (g_oom_observers[i].fn == fn && g_oom_observers[i].user == user) {
            g_oom_observers[i] = (oom_observer_t){NULL, NULL};
            found = true;
        }
    /* Calls in flight on other threads may hold the observer: wait them out
     * (not from inside an observer, whose own call is one of them). */
    while (found && g_oom_inflight > 0 && !tls_in_oom_observer)
        pthread_cond_wait(&g_oom_idle, &g_oom_lock);
    pthread_mutex_unlock(&g_oom_lock);
    if (!found)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "no out-of-memory observer (fn %p, user %p) is registered", (void *)fn,
                             user);
    return XDEV_SUCCESS;
}
