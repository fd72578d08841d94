/* SPDX-License-Identifier: Apache-2.0 */
/* test_spin_lock.c - the device allocator's lock (core/base/spin_lock.c)
 * on its own: mutual exclusion and progress while holders sleep inside it,
 * so that waiters go through every part of the slow path (spin, short
 * sleep, membarrier, long sleep, the unlock's wake hand-over). The unlock
 * is a plain store without a fence; a lost wake-up shows as a run that
 * does not finish (ctest's timeout), a broken exclusion as a wrong count
 * (and a race under TSan). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

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

START_TEST(exclusion_and_progress) {
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
END_TEST

int main(void) {
    Suite *s = suite_create("spin_lock");
    TCase *tc = tcase_create("spin_lock");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, exclusion_and_progress);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
