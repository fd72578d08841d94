/* SPDX-License-Identifier: Apache-2.0 */
/* spin_lock.c - contended paths of the device allocator's lock. */
#include "base/spin_lock.h"

#if !defined(XDEV_DEVICE_LOCK_PTHREAD)

#include <sched.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* Pauses before sleeping: ~1-2 us, a few critical sections. Longer spins
 * cost more than they save on an oversubscribed machine (measured). */
#define SPINS 16

static void pause_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Sleep while the lock word still reads `value`. */
static void futex_wait(atomic_int *word, int value) {
#if defined(__linux__)
    (void)syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
#else
    (void)word;
    (void)value;
    sched_yield();
#endif
}

void xdev_spin_lock_slow(xdev_spin_lock_t *l) {
    for (int i = 0; i < SPINS; i++) {
        if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0) {
            int expected = 0;
            if (atomic_compare_exchange_weak_explicit(&l->state, &expected, 1, memory_order_acquire,
                                                      memory_order_relaxed))
                return;
        }
        pause_cpu();
    }
    /* Mark "held with sleepers" and sleep until we take it as 0 -> 2. */
    while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
        futex_wait(&l->state, 2);
}

void xdev_spin_wake(xdev_spin_lock_t *l) {
#if defined(__linux__)
    (void)syscall(SYS_futex, (int *)&l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)l;
#endif
}
#endif
