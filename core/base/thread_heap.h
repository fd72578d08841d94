/* SPDX-License-Identifier: Apache-2.0 */
/* thread_heap.h - a per-thread block on the heap, made at a thread's first
 * use and freed when the thread exits.
 *
 * libxdev's TLS is static TLS (runtime/thread_state.h), which a late dlopen
 * (ctypes, JNI) takes from glibc's small spare reserve, and ctest
 * tls.static_size keeps it under 512 bytes. So per-thread state larger than
 * a pointer lives in a heap block that a _Thread_local pointer of its owner
 * reaches, and a pthread key destructor frees it at thread exit. Five parts
 * kept their own copy of that key, once and destructor (the error message,
 * the thread state, allocation tags, the last compile, the shadow's pending
 * records); this is the one copy.
 *
 * Use: a static heap per kind of block, and the owner's _Thread_local
 * pointer as the fast path:
 *
 *     static xdev_thread_heap_t g_heap = XDEV_THREAD_HEAP_INIT(sizeof(T), NULL);
 *     static _Thread_local void *tls_block;  (reads: T *t = tls_block, NULL before the first use)
 *     T *t = xdev_thread_heap_get(&g_heap, &tls_block);  (made when needed)
 *
 * At thread exit the destructor first sets the owner's pointer back to NULL
 * (a later destructor on the same thread that needs the block again makes a
 * new one, freed in the next round of destructors, instead of reading freed
 * memory), then runs the heap's release callback on the block, then frees
 * it. A forked child keeps its thread's block and the key. */
#ifndef XDEV_CORE_THREAD_HEAP_H
#define XDEV_CORE_THREAD_HEAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct xdev_thread_heap {
    size_t size;                  /* bytes of each thread's block, zeroed when made */
    void (*release)(void *block); /* at thread exit, before the free (NULL: none) */
    _Atomic(pthread_key_t *) key; /* made at the first use, never deleted */
} xdev_thread_heap_t;

#define XDEV_THREAD_HEAP_INIT(size_, release_)                                                     \
    { .size = (size_), .release = (release_), .key = NULL }

/* The calling thread's block of h: *slot when set, else made zeroed and
 * stored in *slot (the owner's _Thread_local pointer; slot NULL: the owner
 * keeps its own, and nothing is cleared at exit). NULL when there is no
 * memory or no key for it; a later call tries again. */
void *xdev_thread_heap_get(xdev_thread_heap_t *h, void **slot);

#endif
