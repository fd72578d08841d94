/* SPDX-License-Identifier: Apache-2.0 */
/* pointer_registry.c - a sorted array of allocation ranges under a
 * read-write lock: lookups (every copy) take the read side; binary search. */
#include "alloc/pointer_registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static xdev_ptr_entry_t *g_entries;
static size_t g_len, g_cap;
static _Atomic(const xdev_ptr_origin_ops_t *) g_origin_ops[XDEV_PTR_FOREIGN + 1];

void xdev_ptr_origin_ops_set(xdev_ptr_origin_t origin, const xdev_ptr_origin_ops_t *ops) {
    atomic_store_explicit(&g_origin_ops[origin], ops, memory_order_release);
}

const xdev_ptr_origin_ops_t *xdev_ptr_origin_ops(xdev_ptr_origin_t origin) {
    return atomic_load_explicit(&g_origin_ops[origin], memory_order_acquire);
}

/* Index of the first entry with base > addr. */
static size_t upper_bound(uintptr_t addr) {
    size_t lo = 0, hi = g_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_entries[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const xdev_ptr_entry_t *containing(uintptr_t addr) {
    size_t i = upper_bound(addr);
    if (i == 0) return NULL;
    const xdev_ptr_entry_t *e = &g_entries[i - 1];
    return addr - e->base < (e->size ? e->size : 1) ? e : NULL;
}

xdev_status_t xdev_ptr_insert(const xdev_ptr_entry_t *entry) {
    pthread_rwlock_wrlock(&g_lock);
    if (g_len == g_cap) {
        size_t cap = g_cap ? g_cap * 2 : 256;
        xdev_ptr_entry_t *n = realloc(g_entries, cap * sizeof *n);
        if (n == NULL) {
            pthread_rwlock_unlock(&g_lock);
            return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to track an allocation");
        }
        g_entries = n;
        g_cap = cap;
    }
    size_t i = upper_bound(entry->base);
    memmove(&g_entries[i + 1], &g_entries[i], (g_len - i) * sizeof *g_entries);
    g_entries[i] = *entry;
    g_len++;
    pthread_rwlock_unlock(&g_lock);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_ptr_insert_exclusive(const xdev_ptr_entry_t *entry, xdev_ptr_entry_t *clash) {
    pthread_rwlock_rdlock(&g_lock);
    size_t i = upper_bound(entry->base);
    const xdev_ptr_entry_t *hit = NULL;
    if (i > 0 && g_entries[i - 1].base + g_entries[i - 1].size > entry->base)
        hit = &g_entries[i - 1];
    else if (i < g_len && g_entries[i].base < entry->base + entry->size)
        hit = &g_entries[i];
    if (hit != NULL) *clash = *hit;
    pthread_rwlock_unlock(&g_lock);
    if (hit != NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "[%p, +%zu) overlaps memory xdev knows",
                         (void *)entry->base, entry->size);
    /* Two registrations of one range racing: both may pass the look above;
     * the foreign registry's own lock (foreign.c) keeps them apart. */
    return xdev_ptr_insert(entry);
}

bool xdev_ptr_remove_origin(const void *base, xdev_ptr_origin_t origin, xdev_ptr_entry_t *out) {
    pthread_rwlock_wrlock(&g_lock);
    const xdev_ptr_entry_t *e = containing((uintptr_t)base);
    bool ok = e != NULL && e->base == (uintptr_t)base && e->origin == origin;
    if (ok) {
        size_t i = (size_t)(e - g_entries);
        *out = *e;
        memmove(&g_entries[i], &g_entries[i + 1], (g_len - i - 1) * sizeof *g_entries);
        g_len--;
    }
    pthread_rwlock_unlock(&g_lock);
    return ok;
}

bool xdev_ptr_lookup(const void *addr, xdev_ptr_entry_t *out) {
    if (addr == NULL) return false;
    pthread_rwlock_rdlock(&g_lock);
    const xdev_ptr_entry_t *e = containing((uintptr_t)addr);
    if (e != NULL) *out = *e;
    pthread_rwlock_unlock(&g_lock);
    return e != NULL;
}

static const char *free_function(xdev_memory_kind_t kind) {
    return kind == XDEV_MEMORY_PINNED_HOST ? "xdev_host_free" : "xdev_free";
}

xdev_status_t xdev_ptr_remove(const void *base, xdev_memory_kind_t kind, xdev_ptr_entry_t *out) {
    uintptr_t addr = (uintptr_t)base;
    xdev_status_t st = XDEV_SUCCESS;
    pthread_rwlock_wrlock(&g_lock);
    const xdev_ptr_entry_t *e = containing(addr);
    if (e == NULL) {
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "pointer %p was not allocated by xdev, or was already freed", base);
    } else if (e->base != addr) {
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "pointer %p points %zu bytes into an allocation of %zu bytes at %p; free "
                       "the start of the allocation",
                       base, (size_t)(addr - e->base), e->size, (void *)e->base);
    } else if (e->kind != kind) {
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "pointer %p was allocated by %s; free it with %s",
                       base, e->kind == XDEV_MEMORY_PINNED_HOST ? "xdev_host_alloc" : "xdev_malloc",
                       free_function(e->kind));
    } else {
        size_t i = (size_t)(e - g_entries);
        *out = *e;
        memmove(&g_entries[i], &g_entries[i + 1], (g_len - i - 1) * sizeof *g_entries);
        g_len--;
    }
    pthread_rwlock_unlock(&g_lock);
    return st;
}
