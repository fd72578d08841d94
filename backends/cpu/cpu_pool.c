/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_pool.c - each CPU device's kernel worker pool.
 *
 * xdev_cpu_state.threads threads run a device's launches: the stream worker
 * that runs the launch op and threads - 1 pool workers, started on the
 * first launch that has more than one block. A launch is put on the pool's
 * list and its blocks are claimed in chunks from an atomic counter (about
 * 16 claims per thread and launch, so a grid of tiny blocks does not pay one
 * atomic per block); every worker takes any launch with blocks left, so
 * launches from several streams share the pool. The stream worker claims
 * too, then takes its launch off the list and waits until no worker is
 * inside it: the launch is done when its op returns, and the stream stays
 * in order.
 *
 * Idle workers poll the pool's `epoch` (bumped by every launch) for
 * XDEV_CPU_POOL_SPIN_NS, then sleep on it (futex); a launch wakes as many
 * sleepers as it has blocks to spare. A worker asleep for
 * XDEV_CPU_POOL_RETIRE_MS ends (as stream workers do), so an idle process
 * keeps no thread: one whose main calls pthread_exit() still ends. At
 * process exit the workers stop claiming, finish the block they run and are
 * joined within a bound. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_clock.h"
#include "cpu/cpu_pool.h"

/* How long an idle worker, or a launch waiting for its last workers, polls
 * before sleeping: back-to-back launches then cost no futex wake-up. */
#define XDEV_CPU_POOL_SPIN_NS 30000
/* How long a worker sleeps without work before its thread ends. */
#define XDEV_CPU_POOL_RETIRE_MS 1000
/* How long process exit waits, in all, for the workers. */
#define XDEV_CPU_POOL_EXIT_WAIT_S 5
/* Claims per thread and launch. */
#define XDEV_CPU_POOL_CLAIMS 16

enum { SLOT_IDLE = 0, SLOT_RUNNING = 1, SLOT_ENDED = 2 };

typedef struct pool_slot {
    xdev_cpu_pool_t *pool;
    int index;
    int state; /* SLOT_*, under the pool's mutex */
    pthread_t thread;
} pool_slot_t;

struct xdev_cpu_pool {
    int device;
    int nworkers; /* threads - 1 */
    pthread_mutex_t mu;
    xdev_cpu_launch_t *launches; /* with blocks to claim, under mu */
    int running;                 /* slots in SLOT_RUNNING, under mu */
    pool_slot_t *slots;
    _Atomic uint32_t epoch; /* futex word: bumped by each launch and by stop */
    atomic_int sleepers;    /* workers in (or going into) the epoch futex */
    _Atomic uint32_t done;  /* futex word: bumped when a worker leaves a launch last */
    atomic_int done_waiters;
    _Atomic bool stopping;
};

/* ------------------------------------------------------------------ waits */

/* Sleep while *word == expected, at most `rel` (NULL: no limit). False when
 * the time ran out. */
static bool futex_wait(_Atomic uint32_t *word, uint32_t expected, const struct timespec *rel) {
    long rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, rel, NULL, 0);
    return rc == 0 || errno != ETIMEDOUT;
}

static void futex_wake(_Atomic uint32_t *word, int count) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One step of a bounded poll: pause at first, then yield (so that on a busy
 * or small machine the thread we wait for gets the core). False once
 * XDEV_CPU_POOL_SPIN_NS have passed since *start (0: not started). */
static bool spin_step(unsigned i, int64_t *start) {
    if (i < 64) {
        cpu_relax();
        return true;
    }
    if (*start == 0) *start = xdev_cpu_now_ns();
    sched_yield();
    return (i & 7) != 0 || xdev_cpu_now_ns() - *start < XDEV_CPU_POOL_SPIN_NS;
}

/* Wait until the epoch differs from `seen` or the pool stops. False when
 * XDEV_CPU_POOL_RETIRE_MS passed asleep without either. */
static bool wait_epoch(xdev_cpu_pool_t *p, uint32_t seen) {
    int64_t start = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load(&p->epoch) != seen || atomic_load(&p->stopping)) return true;
        if (!spin_step(i, &start)) break;
    }
    /* seq_cst: either the launch sees sleepers > 0 and wakes us, or we see
     * its new epoch here (and the futex sees it too). */
    atomic_fetch_add(&p->sleepers, 1);
    bool woke = true;
    if (atomic_load(&p->epoch) == seen && !atomic_load(&p->stopping)) {
        struct timespec rel = {XDEV_CPU_POOL_RETIRE_MS / 1000,
                               (long)(XDEV_CPU_POOL_RETIRE_MS % 1000) * 1000000L};
        woke = futex_wait(&p->epoch, seen, &rel);
    }
    atomic_fetch_sub(&p->sleepers, 1);
    return woke;
}

/* --------------------------------------------------------------- launches */

/* Claim chunks of `l` and run them until none is left, the launch has a
 * fault, or the process exits. */
static void claim_and_run(xdev_cpu_pool_t *p, xdev_cpu_launch_t *l, xdev_cpu_exec_t *ex) {
    for (;;) {
        if (atomic_load_explicit(&l->fault, memory_order_relaxed) != 0 ||
            atomic_load_explicit(&p->stopping, memory_order_relaxed))
            return;
        uint64_t b = atomic_fetch_add_explicit(&l->next_block, l->chunk, memory_order_relaxed);
        if (b >= l->total) return;
        uint64_t e = l->total - b > l->chunk ? b + l->chunk : l->total;
        xdev_cpu_exec_blocks(ex, l, b, e);
    }
}

/* A launch with blocks to claim, with a reference taken (under the lock, so
 * that once its owner unlinks it no worker can enter it any more). */
static xdev_cpu_launch_t *pick(xdev_cpu_pool_t *p) {
    xdev_cpu_launch_t *found = NULL;
    pthread_mutex_lock(&p->mu);
    for (xdev_cpu_launch_t *l = atomic_load(&p->stopping) ? NULL : p->launches; l != NULL;
         l = l->next) {
        if (atomic_load_explicit(&l->next_block, memory_order_relaxed) < l->total &&
            atomic_load_explicit(&l->fault, memory_order_relaxed) == 0) {
            atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
            found = l;
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return found;
}

/* Drop the worker's reference. The last one out bumps `done` (the pool's
 * word, not the launch's: the owner may free the launch as soon as refs is
 * 0) and wakes the owner if it sleeps. */
static void leave(xdev_cpu_pool_t *p, xdev_cpu_launch_t *l) {
    if (atomic_fetch_sub(&l->refs, 1) != 1) return;
    atomic_fetch_add(&p->done, 1);
    if (atomic_load(&p->done_waiters) > 0) futex_wake(&p->done, INT_MAX);
}

/* ----------------------------------------------------------------- workers */

static void *worker_main(void *arg) {
    pool_slot_t *slot = arg;
    xdev_cpu_pool_t *p = slot->pool;
    char name[32]; /* the kernel allows 15 characters: cut */
    snprintf(name, sizeof name, "xdev-cpu%d-k%d", p->device, slot->index + 1);
    name[15] = '\0';
    pthread_setname_np(pthread_self(), name);
    xdev_cpu_exec_t *ex = xdev_cpu_exec_self(); /* NULL (no memory): retire at once */
    for (;;) {
        uint32_t seen = atomic_load(&p->epoch);
        xdev_cpu_launch_t *l = ex != NULL ? pick(p) : NULL;
        if (l != NULL) {
            claim_and_run(p, l, ex);
            leave(p, l);
            continue;
        }
        if (ex != NULL && wait_epoch(p, seen) && !atomic_load(&p->stopping)) continue;
        /* Idle too long, stopping, or no executor: end unless a launch came. */
        pthread_mutex_lock(&p->mu);
        bool work = p->launches != NULL && ex != NULL && !atomic_load(&p->stopping);
        if (!work) {
            slot->state = SLOT_ENDED;
            p->running--;
        }
        pthread_mutex_unlock(&p->mu);
        if (!work) break;
    }
    return NULL;
}

/* Signals blocked as for stream workers (xdev_cpu_thread_start). */
static int start_thread(pool_slot_t *slot) {
    return xdev_cpu_thread_start(&slot->thread, worker_main, slot);
}

/* Under the pool's mutex: every slot has a running worker (one that retired
 * is joined first; it has left its loop). A thread that cannot be created
 * is not an error: the launch runs on the threads there are. */
static void ensure_workers(xdev_cpu_pool_t *p) {
    if (p->running == p->nworkers || atomic_load(&p->stopping)) return;
    for (int i = 0; i < p->nworkers; i++) {
        pool_slot_t *slot = &p->slots[i];
        if (slot->state == SLOT_RUNNING) continue;
        if (slot->state == SLOT_ENDED) pthread_join(slot->thread, NULL);
        slot->state = SLOT_IDLE;
        if (start_thread(slot) != 0) break;
        slot->state = SLOT_RUNNING;
        p->running++;
    }
}

xdev_cpu_pool_t *xdev_cpu_pool_get(xdev_cpu_device_t *d) {
    xdev_cpu_pool_t *p = atomic_load_explicit(&d->pool, memory_order_acquire);
    if (p != NULL) return p;
    pthread_mutex_lock(&d->mu);
    p = atomic_load_explicit(&d->pool, memory_order_relaxed);
    if (p == NULL) {
        int nworkers = xdev_cpu_state.threads > 1 ? xdev_cpu_state.threads - 1 : 0;
        p = calloc(1, sizeof *p);
        pool_slot_t *slots = calloc(nworkers > 0 ? (size_t)nworkers : 1, sizeof *slots);
        if (p == NULL || slots == NULL || pthread_mutex_init(&p->mu, NULL) != 0) {
            free(p);
            free(slots);
            p = NULL;
        } else {
            p->device = d->index;
            p->nworkers = nworkers;
            p->slots = slots;
            for (int i = 0; i < nworkers; i++) {
                slots[i].pool = p;
                slots[i].index = i;
            }
            atomic_store_explicit(&d->pool, p, memory_order_release);
        }
    }
    pthread_mutex_unlock(&d->mu);
    if (p == NULL)
        xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                       "cpu:%d cannot create the device's kernel worker pool: out of host memory",
                       d->index);
    return p;
}

void xdev_cpu_pool_run(xdev_cpu_pool_t *p, xdev_cpu_launch_t *l) {
    xdev_cpu_exec_t *ex = xdev_cpu_exec_self();
    if (ex == NULL) {
        static const int origin[3] = {0, 0, 0};
        xdev_cpu_launch_fail(l, XDEV_CPU_KFAULT_NOMEM, origin, 0);
        return;
    }
    uint64_t claims = (uint64_t)(p->nworkers + 1) * XDEV_CPU_POOL_CLAIMS;
    l->chunk = l->total / claims != 0 ? l->total / claims : 1;
    int helpers = p->nworkers;
    if ((uint64_t)helpers > l->total - 1) helpers = (int)(l->total - 1);
    if (helpers == 0) {
        /* One block (or no workers): the caller runs it. Publishing it
         * would bump the epoch, and every worker still polling it would
         * take the pool's mutex to find nothing to claim while the caller
         * waited for them to leave: most of a one-block launch's 4 us on
         * 16 cores (issue 50). */
        claim_and_run(p, l, ex);
        return;
    }

    pthread_mutex_lock(&p->mu);
    ensure_workers(p);
    l->prev = NULL;
    l->next = p->launches;
    if (p->launches != NULL) p->launches->prev = l;
    p->launches = l;
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add(&p->epoch, 1);
    if (helpers > 0 && atomic_load(&p->sleepers) > 0) futex_wake(&p->epoch, helpers);

    claim_and_run(p, l, ex);

    pthread_mutex_lock(&p->mu);
    if (l->prev != NULL)
        l->prev->next = l->next;
    else
        p->launches = l->next;
    if (l->next != NULL) l->next->prev = l->prev;
    pthread_mutex_unlock(&p->mu);
    /* No worker can enter now; wait for those inside (each ends its chunk,
     * or stops early after a fault). */
    int64_t start = 0;
    for (unsigned i = 0; atomic_load(&l->refs) != 0; i++) {
        if (spin_step(i, &start)) continue;
        uint32_t seen = atomic_load(&p->done);
        atomic_fetch_add(&p->done_waiters, 1);
        if (atomic_load(&l->refs) != 0) (void)futex_wait(&p->done, seen, NULL);
        atomic_fetch_sub(&p->done_waiters, 1);
    }
}

/* ------------------------------------------------------------ process exit */

void xdev_cpu_pools_stop(void) {
    for (int i = 0; i < xdev_cpu_state.count; i++) {
        xdev_cpu_pool_t *p = atomic_load(&xdev_cpu_state.devices[i].pool);
        if (p == NULL) continue;
        atomic_store(&p->stopping, true);
        atomic_fetch_add(&p->epoch, 1);
        futex_wake(&p->epoch, INT_MAX);
    }
}

/* Join every worker against one deadline. A worker that does not end in
 * time (a kernel that never returns) is left; the process is ending. The
 * pools stay allocated: a stream worker that did not stop may still use
 * one. */
void xdev_cpu_pools_join(void) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += XDEV_CPU_POOL_EXIT_WAIT_S;
    for (int i = 0; i < xdev_cpu_state.count; i++) {
        xdev_cpu_pool_t *p = atomic_load(&xdev_cpu_state.devices[i].pool);
        if (p == NULL) continue;
        for (int k = 0; k < p->nworkers; k++) {
            pool_slot_t *slot = &p->slots[k];
            pthread_mutex_lock(&p->mu);
            bool join = slot->state != SLOT_IDLE;
            slot->state = SLOT_IDLE; /* claimed: nobody else joins it */
            pthread_mutex_unlock(&p->mu);
            if (join) (void)pthread_timedjoin_np(slot->thread, NULL, &deadline);
        }
    }
}
