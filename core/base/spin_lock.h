/* SPDX-License-Identifier: Apache-2.0 */
/* spin_lock.h - the device allocator's lock: spin briefly, then sleep.
 *
 * Every malloc and free holds it for ~100 ns. A pthread mutex sends a
 * contended waiter straight to the kernel, and the wake-up costs
 * microseconds: with 8 threads churning one device on a 16-core host that
 * hand-off, not the work, set the pace (2.8 us per op). This lock first
 * spins on a read-only load (the cache line stays shared until the holder
 * releases it), and only then sleeps on a futex, so an oversubscribed
 * machine or a holder inside a slow backend call (cudaMalloc) costs no
 * burnt cores. States: 0 free, 1 held, 2 held with sleepers (Drepper,
 * "Futexes are tricky"). Not fair, not recursive. */
#ifndef XDEV_CORE_SPIN_LOCK_H
#define XDEV_CORE_SPIN_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>

#if defined(XDEV_DEVICE_LOCK_PTHREAD)
/* Build option XDEV_DEVICE_LOCK=pthread: a plain mutex, for comparison
 * (zero-initialised storage is an unlocked mutex on glibc). */
#include <pthread.h>
typedef struct xdev_spin_lock {
    pthread_mutex_t m;
} xdev_spin_lock_t;
static inline void xdev_spin_lock(xdev_spin_lock_t *l) {
    pthread_mutex_lock(&l->m);
}
static inline void xdev_spin_unlock(xdev_spin_lock_t *l) {
    pthread_mutex_unlock(&l->m);
}
static inline bool xdev_spin_trylock(xdev_spin_lock_t *l) {
    return pthread_mutex_trylock(&l->m) == 0;
}
#else
typedef struct xdev_spin_lock {
    atomic_int state; /* zero-initialised storage is unlocked */
} xdev_spin_lock_t;

/* Contended paths (spin_lock.c). */
void xdev_spin_lock_slow(xdev_spin_lock_t *l);
void xdev_spin_wake(xdev_spin_lock_t *l);

static inline void xdev_spin_lock(xdev_spin_lock_t *l) {
    int expected = 0;
    if (atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire,
                                                memory_order_relaxed))
        return;
    xdev_spin_lock_slow(l);
}

/* Take the lock if it is free, without waiting: false when it is held. */
static inline bool xdev_spin_trylock(xdev_spin_lock_t *l) {
    int expected = 0;
    return atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void xdev_spin_unlock(xdev_spin_lock_t *l) {
    if (atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2) xdev_spin_wake(l);
}
#endif

#endif
