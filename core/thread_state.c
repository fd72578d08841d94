/* thread_state.c - allocation and release of the per-thread block. */
#include "thread_state.h"

#include <pthread.h>
#include <stdlib.h>

_Thread_local xdev_thread_state_t *xdev_tls_state __attribute__((tls_model("initial-exec")));

static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static xdev_thread_state_t g_emergency; /* only if calloc fails */

static void release(void *p) {
    if (p != &g_emergency) free(p);
}

static void make_key(void) {
    (void)pthread_key_create(&g_key, release);
}

xdev_thread_state_t *xdev_thread_state_slow(void) {
    pthread_once(&g_key_once, make_key);
    xdev_thread_state_t *t = calloc(1, sizeof *t);
    if (t == NULL)
        t = &g_emergency;
    else
        (void)pthread_setspecific(g_key, t);
    xdev_tls_state = t;
    return t;
}
