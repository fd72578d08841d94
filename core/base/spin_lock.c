/* SPDX-License-Identifier: Apache-2.0 */
/* spin_lock.c - contended paths of the device allocator's lock.
 *
 * Why a sleeper cannot miss the unlock it waits for (spin_lock.h: the
 * unlock is a plain store of 0, then a load of `waiters`, with no fence
 * between). A sleeper W counts itself in `waiters` (a locked add, visible
 * everywhere when it completes) and then calls membarrier, which returns
 * only after every running thread of the process has passed a full memory
 * barrier (a thread not running passes one when it is switched back in).
 * Take the holder H whose unlock W would wait for: H stores 0, then loads
 * `waiters`, in that order in its program. If H's barrier came before its
 * load, the load sees W's count, and H wakes a sleeper (or leaves that to
 * the wake already on its way: xdev_spin_wake). If it came after
 * the load, it came after the store too: the 0 is visible to W, whose
 * checks of the lock word all follow membarrier, so W takes the lock (or
 * sees a later holder's 1, and that holder's unlock is the same case
 * again) and never sleeps on H's 1. membarrier costs microseconds (an
 * interrupt to each core running the process), so a sleeper first sleeps
 * at most SHORT_SLEEP_NS at a time without it: the unlock almost always
 * sees the count anyway (its load would have to pass its own store in the
 * few nanoseconds before the store drains), and a missed one costs that
 * long, never a hang. Only a sleeper still waiting after that calls
 * membarrier, once, and sleeps longer. Where membarrier is unavailable
 * (not Linux, too old a kernel, a seccomp filter, or a build with
 * XDEV_SPIN_NO_MEMBARRIER defined), every sleep stays short.
 *
 * No kernel header is needed for membarrier: <linux/membarrier.h> is
 * missing from kernel headers before 4.3 and lacks the PRIVATE_EXPEDITED
 * commands before 4.14 (an enum there, which #ifdef cannot see), so the
 * two command numbers, fixed by the kernel's ABI, are defined here, and
 * the call is made only where <sys/syscall.h> names the system call. A
 * kernel without it refuses the call (ENOSYS, EINVAL), which is the
 * unavailable case above. */
#include "base/spin_lock.h"

#if !defined(XDEV_DEVICE_LOCK_PTHREAD)

#include <errno.h>
#include <sched.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* membarrier(2) is used where the system call has a number and the build
 * does not rule it out (XDEV_SPIN_NO_MEMBARRIER: the bounded sleeps alone,
 * for a sandbox that kills a process on an unknown system call instead of
 * refusing it, and for the test of that path). */
#if defined(__linux__) && defined(SYS_membarrier) && !defined(XDEV_SPIN_NO_MEMBARRIER)
#define HAVE_MEMBARRIER 1
/* The kernel's ABI (include/uapi/linux/membarrier.h, since Linux 4.14). */
#define CMD_PRIVATE_EXPEDITED (1 << 3)
#define CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#endif

/* Pauses before sleeping: ~1-2 us, a few critical sections. Longer spins
 * cost more than they save on an oversubscribed machine (measured). */
#define SPINS 16

/* A sleeper's sleeps: at most SHORT_SLEEP_NS before it pays for
 * membarrier, LONG_SLEEP_NS after (see the top; a bound even then, so that
 * a wake lost in xdev_spin_wake's hand-over costs a millisecond, never a
 * hang). */
#define SHORT_SLEEP_NS 50000
#define LONG_SLEEP_NS 1000000

static void pause_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Sleep while the lock word still reads `value`, at most `ns`: 1 when
 * woken, -1 when that time ran out, 0 otherwise (the word had changed, a
 * signal). */
static int futex_wait(atomic_int *word, int value, long ns) {
#if defined(__linux__)
    struct timespec ts = {0, ns};
    if (syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, value, &ts, NULL, 0) == 0) return 1;
    return errno == ETIMEDOUT ? -1 : 0;
#else
    (void)word;
    (void)value;
    (void)ns;
    sched_yield();
    return 0;
#endif
}

#if defined(HAVE_MEMBARRIER)
/* 0: not tried yet; 1: membarrier(PRIVATE_EXPEDITED) registered; -1: unavailable. */
static atomic_int g_membarrier;
#endif

/* Pass every running thread of the process through a full memory barrier:
 * false when the system cannot. Registered on the first contended lock
 * (registering twice at once is harmless). */
static bool process_barrier(void) {
#if defined(HAVE_MEMBARRIER)
    int state = atomic_load_explicit(&g_membarrier, memory_order_acquire);
    if (state == 0) {
        state = syscall(SYS_membarrier, CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : -1;
        atomic_store_explicit(&g_membarrier, state, memory_order_release);
    }
    return state > 0 && syscall(SYS_membarrier, CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
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
    /* Count ourselves and sleep until we take the lock: first a short
     * sleep (an unlock that missed the count is rare, and costs no more
     * than that), then, the holder being slow, make every unlock from now
     * on see the count (or its 0 visible to us) and sleep longer. */
    atomic_fetch_add_explicit(&l->waiters, 1, memory_order_seq_cst);
    bool fenced = false;
    for (;;) {
        /* Unlocks may wake a sleeper again. The exchange orders this before
         * our look at the lock word: an unlock that saw `woken` set has its
         * 0 visible to us. */
        atomic_exchange_explicit(&l->woken, 0, memory_order_seq_cst);
        int expected = 0;
        if (atomic_compare_exchange_strong_explicit(&l->state, &expected, 1, memory_order_acquire,
                                                    memory_order_relaxed))
            break;
        /* An unlock since the exchange found nobody asleep (we were not,
         * yet) and left the flag at 2: its wake was ours, look again. */
        if (atomic_load_explicit(&l->woken, memory_order_acquire) == 2) continue;
        bool timed_out = futex_wait(&l->state, 1, fenced ? LONG_SLEEP_NS : SHORT_SLEEP_NS) < 0;
        if (timed_out && !fenced) fenced = process_barrier();
    }
    atomic_fetch_sub_explicit(&l->waiters, 1, memory_order_relaxed);
}

/* Wake one sleeper (true), or find none asleep (false). */
static bool futex_wake(atomic_int *word) {
#if defined(__linux__)
    return syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) > 0;
#else
    (void)word;
    return false;
#endif
}

/* An unlock that saw sleepers: wake one, unless a wake is on its way
 * already (`woken` set; every unlock waking while the woken thread waits for
 * a core would make each one a system call: 600 000 of them in alloc_bench's
 * 8-thread churn). A wake that found nobody asleep (the sleepers are awake:
 * between their count and their sleep, or back from a timeout) leaves 2: a
 * sleeper that sees it before sleeping looks at the lock again, and every
 * sleeper clears the flag before it looks. What is left (an unlock and a new
 * holder's lock both between a sleeper's look at the flag and its sleep)
 * costs that sleeper one bounded sleep. */
void xdev_spin_wake(xdev_spin_lock_t *l) {
    if (atomic_exchange_explicit(&l->woken, 1, memory_order_seq_cst) != 0) return;
    if (!futex_wake(&l->state)) atomic_store_explicit(&l->woken, 2, memory_order_release);
}
#endif
