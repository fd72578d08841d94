/* SPDX-License-Identifier: Apache-2.0 */
/* test_spin_lock.c - the device allocator's lock (core/base/spin_lock.c)
 * on its own: mutual exclusion and progress while holders sleep inside it,
 * so that waiters go through every part of the slow path (spin, short
 * sleep, membarrier, long sleep, the unlock's wake hand-over). The unlock
 * is a plain store without a fence; a lost wake-up shows as a run that
 * does not finish (ctest's timeout), a broken exclusion as a wrong count
 * (and a race under TSan). The same again with membarrier refused by a
 * seccomp filter (EPERM: the bounded sleeps alone); built with
 * XDEV_SPIN_NO_MEMBARRIER (entry spin_lock.no_membarrier) the filter kills
 * the process on any membarrier call instead, so the test also shows that
 * build never makes one. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include "base/spin_lock.h"
#include "xt_check_run.h"

#define THREADS 6
#define ITERS 20000

static xdev_spin_lock_t g_lock;
static long g_count;     /* guarded by g_lock, deliberately not atomic */
static int g_inside;     /* guarded by g_lock: threads inside right now */
static atomic_int g_bad; /* times a thread found another inside */

static void *worker(void *arg) {
    long seed = (long)(intptr_t)arg;
    for (long i = 0; i < ITERS; i++) {
        if ((i + seed) % 3 == 0) {
            while (!xdev_spin_trylock(&g_lock)) {
            }
        } else {
            xdev_spin_lock(&g_lock);
        }
        if (g_inside++ != 0) atomic_fetch_add(&g_bad, 1);
        g_count++;
        if ((i + seed) % 997 == 0) { /* a slow holder: the others sleep */
            struct timespec ts = {0, 300000};
            nanosleep(&ts, NULL);
        }
        g_inside--;
        xdev_spin_unlock(&g_lock);
    }
    return NULL;
}

/* The workers on the lock, then the lock's state checked. */
static void run_workers(void) {
    g_count = 0;
    atomic_store(&g_bad, 0);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)(t * 131)), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    ck_assert_int_eq(atomic_load(&g_bad), 0);
    ck_assert_int_eq(g_count, (long)THREADS * ITERS);
    /* free again, no sleeper left counted */
    ck_assert(xdev_spin_trylock(&g_lock));
    ck_assert(!xdev_spin_trylock(&g_lock));
    xdev_spin_unlock(&g_lock);
#if !defined(XDEV_DEVICE_LOCK_PTHREAD)
    ck_assert_int_eq(atomic_load(&g_lock.waiters), 0);
#endif
}

START_TEST(exclusion_and_progress) {
    run_workers();
}
END_TEST

/* Make membarrier return `action` (seccomp) for this process's threads
 * from now on; false (reason printed) where that cannot be done. */
static bool filter_membarrier(unsigned action) {
#if defined(__linux__) && defined(SYS_membarrier) && defined(SECCOMP_MODE_FILTER)
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0)
        return true;
    printf("skipped: no seccomp filter here (%s)\n", strerror(errno));
    return false;
#else
    (void)action;
    printf("skipped: no membarrier or seccomp on this system\n");
    return false;
#endif
}

/* Without membarrier every sleep stays bounded: the lock still excludes
 * and progresses. */
START_TEST(membarrier_unavailable) {
#if defined(XDEV_SPIN_NO_MEMBARRIER) && defined(__linux__)
    const unsigned action = SECCOMP_RET_TRAP; /* SIGSYS: this build must never call it */
#elif defined(__linux__)
    const unsigned action = SECCOMP_RET_ERRNO | EPERM; /* refused, as a sandbox may */
#else
    const unsigned action = 0;
#endif
    if (filter_membarrier(action)) run_workers();
}
END_TEST

int main(void) {
    Suite *s = suite_create("spin_lock");
    TCase *tc = tcase_create("spin_lock");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, exclusion_and_progress);
    tcase_add_test(tc, membarrier_unavailable);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
