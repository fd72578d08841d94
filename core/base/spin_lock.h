/* SPDX-License-Identifier: Apache-2.0 */
/* spin_lock.h - the device allocator's lock (also graphs', FFT plan caches' and
 * random generators'): spin briefly, then sleep.
 *
 * Every malloc and free holds it for ~100 ns. A pthread mutex sends a
 * contended waiter straight to the kernel, and the wake-up costs
 * microseconds: with 8 threads churning one device on a 16-core host that
 * hand-off, not the work, set the pace (2.8 us per op). This lock first
 * spins on a read-only load (the cache line stays shared until the holder
 * releases it), and only then sleeps on a futex, so an oversubscribed
 * machine or a holder inside a slow backend call (cudaMalloc) costs no
 * burnt cores. Not fair, not recursive.
 *
 * The uncontended lock+unlock is one atomic read-modify-write, not two: the
 * unlock is a plain release store followed by a load of the sleeper count.
 * A locked instruction costs ~5 ns on the VM's EPYC and more on Intel
 * servers, and the hot alloc+free pair takes the lock twice, so the
 * exchange the unlock used to be (to learn whether anyone sleeps) was a
 * third of the pair's time. Without a fence between the unlock's store and
 * its load (the fence would cost what the exchange did), a sleeper could
 * miss the unlock: the sleeper side therefore pays for both, with
 * membarrier(PRIVATE_EXPEDITED) after counting itself, which passes every
 * running thread of the process through a full barrier (spin_lock.c says
 * why that suffices, and what happens where the call is unavailable). */
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
    atomic_int state;   /* 0 free, 1 held; zero-initialised storage is unlocked */
    atomic_int waiters; /* threads in the sleeping part of xdev_spin_lock_slow */
    atomic_int woken;   /* 1: a wake is on its way, 2: one found nobody asleep (spin_lock.c) */
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

/* A store, then the sleeper count: the compiler must not load the count
 * first (the signal fence emits no instruction); the processor may, and
 * the sleeper's membarrier covers that (spin_lock.c). */
static inline void xdev_spin_unlock(xdev_spin_lock_t *l) {
    atomic_store_explicit(&l->state, 0, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(atomic_load_explicit(&l->waiters, memory_order_relaxed) != 0, 0))
        xdev_spin_wake(l);
}
#endif

#endif
