/* SPDX-License-Identifier: Apache-2.0 */
/* thread_state.c - allocation and release of the per-thread block (release
 * runs the exit hooks first, runtime/hooks.h), and the list of every
 * thread's block that hazard-pointer scans walk. */
#include "runtime/thread_state.h"

#include <pthread.h>

#include "base/thread_heap.h"
#include "runtime/hooks.h"

_Thread_local xdev_thread_state_t *xdev_tls_state __attribute__((tls_model("initial-exec")));

static void release(void *p);
/* Every thread's block (xdev_tls_state is not cleared at exit: slot NULL). */
static xdev_thread_heap_t g_blocks = XDEV_THREAD_HEAP_INIT(sizeof(xdev_thread_state_t), release);
static xdev_thread_state_t g_emergency; /* only if no block can be had */
static pthread_mutex_t g_list_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_thread_state_t *g_list; /* every thread's block (the emergency one once) */

static void list_add(xdev_thread_state_t *t) {
    pthread_mutex_lock(&g_list_lock);
    if (t->list_prev == NULL && g_list != t) {
        t->list_next = g_list;
        if (g_list) g_list->list_prev = t;
        g_list = t;
    }
    pthread_mutex_unlock(&g_list_lock);
}

/* Thread exit, before thread_heap.c frees the block. */
static void release(void *p) {
    xdev_thread_state_t *t = p;
    xdev_hooks_run_thread_exit(); /* on the exiting thread: its TLS is still readable */
    pthread_mutex_lock(&g_list_lock);
    if (t->list_prev)
        t->list_prev->list_next = t->list_next;
    else
        g_list = t->list_next;
    if (t->list_next) t->list_next->list_prev = t->list_prev;
    pthread_mutex_unlock(&g_list_lock);
}

bool xdev_thread_hazard_held(const void *p) {
    xdev_thread_state_t *self = xdev_tls_state;
    bool held = false;
    pthread_mutex_lock(&g_list_lock);
    for (xdev_thread_state_t *t = g_list; t != NULL && !held; t = t->list_next) {
        if (t == self && t != &g_emergency) continue;
        for (int i = 0; i < XDEV_HAZARDS; i++)
            held |= atomic_load_explicit(&t->hazard[i], memory_order_seq_cst) == p;
    }
    pthread_mutex_unlock(&g_list_lock);
    return held;
}

void xdev_thread_hazard_clear(const void *p) {
    xdev_thread_state_t *t = xdev_thread_state();
    if (t == &g_emergency) return; /* shared: other threads' entries */
    for (int i = 0; i < XDEV_HAZARDS; i++)
        if (atomic_load_explicit(&t->hazard[i], memory_order_relaxed) == p)
            atomic_store_explicit(&t->hazard[i], NULL, memory_order_seq_cst);
}

xdev_thread_state_t *xdev_thread_state_slow(void) {
    xdev_thread_state_t *t = xdev_thread_heap_get(&g_blocks, NULL);
    if (t == NULL) {
        t = &g_emergency;
        t->shared = true;
    }
    list_add(t);
    xdev_tls_state = t;
    return t;
}
