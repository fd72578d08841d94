/* SPDX-License-Identifier: Apache-2.0 */
/* thread_heap.c - per-thread heap blocks behind one pthread key per heap
 * (thread_heap.h says why they are not TLS).
 *
 * Each block is one allocation: a small head (which heap, which owner
 * pointer to clear) then the zeroed block the owner sees. The key's value is
 * the head, so the one destructor here serves every heap. */
#include "base/thread_heap.h"

#include <stdalign.h>
#include <stdlib.h>

typedef struct heap_head {
    const xdev_thread_heap_t *heap;
    void **slot; /* the owner's _Thread_local pointer, or NULL */
} heap_head_t;

/* The block starts past the head, aligned for any object. */
#define HEAD_SPACE                                                                                 \
    ((sizeof(heap_head_t) + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t))

/* Thread exit (key destructor, on the exiting thread, its TLS still
 * readable): forget the owner's pointer first, so that the release callback
 * and later destructors that need a block make a new one. */
static void drop_block(void *v) {
    heap_head_t *head = v;
    void *block = (char *)v + HEAD_SPACE;
    if (head->slot != NULL && *head->slot == block) *head->slot = NULL;
    if (head->heap->release != NULL) head->heap->release(block);
    free(head);
}

/* h's key, made by the first caller. Not pthread_once (whose routine takes
 * no argument) nor a lock (a forked child would inherit it held): every
 * racing thread makes a key, one publishes its own, the others delete
 * theirs. NULL when no key can be made. */
static pthread_key_t *heap_key(xdev_thread_heap_t *h) {
    pthread_key_t *k = atomic_load_explicit(&h->key, memory_order_acquire);
    if (k != NULL) return k;
    pthread_key_t *mine = malloc(sizeof *mine);
    if (mine == NULL) return NULL;
    if (pthread_key_create(mine, drop_block) != 0) {
        free(mine);
        return NULL;
    }
    if (atomic_compare_exchange_strong_explicit(&h->key, &k, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    (void)pthread_key_delete(*mine); /* another thread's key won (now in k) */
    free(mine);
    return k;
}

void *xdev_thread_heap_get(xdev_thread_heap_t *h, void **slot) {
    if (slot != NULL && *slot != NULL) return *slot;
    pthread_key_t *key = heap_key(h);
    if (key == NULL) return NULL;
    heap_head_t *head = calloc(1, HEAD_SPACE + h->size);
    if (head == NULL) return NULL;
    head->heap = h;
    head->slot = slot;
    if (pthread_setspecific(*key, head) != 0) {
        free(head);
        return NULL;
    }
    void *block = (char *)head + HEAD_SPACE;
    if (slot != NULL) *slot = block;
    return block;
}
