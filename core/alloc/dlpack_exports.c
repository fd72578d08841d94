/* SPDX-License-Identifier: Apache-2.0 */
/* dlpack_exports.c - which xdev allocations DLPack consumers hold
 * (dlpack.c exports them), so that freeing one while a consumer still has
 * it is put off until its deleter, as a torch storage outlives the tensor
 * handed to another library. The free paths look here only while some
 * allocation is held (one atomic load otherwise). */
#include <pthread.h>
#include <stdlib.h>

#include "base/error_internal.h"
#include "alloc/alloc_internal.h"
#include "alloc/dlpack_exports.h"

typedef struct hold {
    struct hold *next;
    uintptr_t base;
    xdev_memory_kind_t kind;
    long refs;
    bool free_pending;
} hold_t;

_Atomic long xdev_exports_live;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static hold_t *g_holds;

static hold_t **find(uintptr_t base) {
    hold_t **link = &g_holds;
    while (*link != NULL && (*link)->base != base)
        link = &(*link)->next;
    return link;
}

xdev_status_t xdev_exports_hold(uintptr_t base, xdev_memory_kind_t kind) {
    pthread_mutex_lock(&g_lock);
    hold_t **link = find(base), *h = *link;
    if (h == NULL && (h = calloc(1, sizeof *h)) != NULL) {
        *h = (hold_t){g_holds, base, kind, 0, false};
        g_holds = h;
        atomic_fetch_add(&xdev_exports_live, 1);
    }
    if (h != NULL) h->refs++;
    pthread_mutex_unlock(&g_lock);
    if (h == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for an export");
    return XDEV_SUCCESS;
}

void xdev_exports_release(uintptr_t base, xdev_memory_kind_t kind) {
    pthread_mutex_lock(&g_lock);
    hold_t **link = find(base), *h = *link;
    bool free_now = false;
    if (h != NULL && --h->refs == 0) {
        *link = h->next;
        free_now = h->free_pending;
        free(h);
        atomic_fetch_sub(&xdev_exports_live, 1);
    }
    pthread_mutex_unlock(&g_lock);
    if (!free_now) return;
    /* The free the program asked for; it was checked then. Nobody is told
     * of a failure here: a deleter returns nothing. */
    if (kind == XDEV_MEMORY_PINNED_HOST)
        (void)xdev_host_free((void *)base);
    else
        (void)xdev_alloc_free((void *)base);
}

int xdev_exports_defer_free(const void *ptr, xdev_memory_kind_t kind) {
    pthread_mutex_lock(&g_lock);
    hold_t *h = *find((uintptr_t)ptr);
    int r = h == NULL ? 0 : h->kind != kind ? -2 : h->free_pending ? -1 : 1;
    if (r == 1) h->free_pending = true;
    pthread_mutex_unlock(&g_lock);
    if (r == -2)
        XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "pointer %p is %s: free it with %s", ptr,
                  kind == XDEV_MEMORY_DEVICE ? "pinned host memory from xdev_host_alloc"
                                             : "device memory from xdev_malloc",
                  kind == XDEV_MEMORY_DEVICE ? "xdev_host_free" : "xdev_free");
    if (r == -1)
        XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                  "pointer %p: double free (freed already; a DLPack consumer still holds it, so "
                  "the first free waits for its deleter)",
                  ptr);
    return r < 0 ? -1 : r;
}
