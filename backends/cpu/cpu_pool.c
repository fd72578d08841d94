/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_pool.c - each CPU device's kernel worker pool.
 *
 * xdev_cpu_state.threads threads run a device's launches: the stream worker
 * that runs the launch op and threads - 1 pool workers, started on the
 * first launch posted to them. A launch is posted in one of
 * the pool's XDEV_CPU_POOL_POSTS slots (an atomic pointer each) and its
 * blocks are claimed in chunks from an atomic counter (about 16 claims per
 * thread and launch, so a grid of tiny blocks does not pay one atomic per
 * block; with the kernel's cost known, a microsecond of work a claim at
 * least, and only as many workers join as there are claims: its `seats`,
 * cpu_pool_policy.h); every worker takes any posted launch with blocks and
 * seats left, so launches from several streams share the pool (with every
 * slot taken, a launch runs on its stream worker alone). The stream worker claims too,
 * then clears its slot and waits until no worker is inside the launch: the
 * launch is done when its op returns, and the stream stays in order.
 *
 * No lock on that path (issue 50: fifteen workers woken together queued on
 * the pool's mutex to find the launch, and the stream worker queued behind
 * them to take it off the list). A worker entering a launch publishes it as
 * its hazard pointer, then checks that the slot still holds it; the stream
 * worker clears the slot, then waits until no worker's hazard is the
 * launch. Either the worker sees the slot cleared (and never touches the
 * launch) or the stream worker sees the hazard (and waits): the launch's
 * memory, the stream's or a stack's, is never read after it is freed.
 *
 * A small grid of a kernel that ran fast alone is not posted at all: the
 * stream worker runs it (see run_here), since waking the workers and
 * waiting for them to leave would cost more than the blocks; one such run
 * that took long (preempted) sends the next launch to the pool, not the
 * next 255.
 *
 * Idle workers poll the pool's `epoch` (bumped by every launch) for
 * XDEV_CPU_POOL_SPIN_NS, then sleep on it (futex); a launch wakes as many
 * sleepers as it has seats, as a tree (pass_wake). A worker asleep for
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
#include "cpu/cpu_pool_policy.h"

/* How long a launch waiting for its last workers polls before sleeping, and
 * the least an idle worker polls (cpu_pool_policy.h's
 * xdev_cpu_idle_spin_ns adapts it): back-to-back launches then cost no
 * futex wake-up. */
#define XDEV_CPU_POOL_SPIN_NS 30000
/* How long a worker sleeps without work before its thread ends. */
#define XDEV_CPU_POOL_RETIRE_MS 1000
/* How long process exit waits, in all, for the workers. */
#define XDEV_CPU_POOL_EXIT_WAIT_S 5
/* Sleepers a launcher, or a woken worker, wakes (pass_wake). */
#define XDEV_CPU_POOL_WAKE_FANOUT 2
/* Launches one pool runs at once (from as many streams); more run alone. */
#define XDEV_CPU_POOL_POSTS 16
/* Kernels whose last cost per block the pool remembers (a direct-mapped
 * table; a collision only loses or mixes an estimate). */
#define XDEV_CPU_POOL_COSTS 64

enum { SLOT_IDLE = 0, SLOT_RUNNING = 1, SLOT_ENDED = 2 };

/* A worker. Its own cache line: the hazard is written at each launch. */
typedef struct pool_slot {
    _Alignas(64) _Atomic(xdev_cpu_launch_t *) hazard; /* the launch it is inside, or NULL */
    xdev_cpu_pool_t *pool;
    int index;
    int state; /* SLOT_*, under the pool's mutex */
    pthread_t thread;
    int64_t gap_ns;  /* its last idle spell (its own thread's: wait_epoch) */
    int64_t busy_ns; /* its time in launches since that spell */
} pool_slot_t;

struct xdev_cpu_pool {
    int device;
    int nworkers; /* threads - 1 */
    pthread_mutex_t mu;
    _Atomic(xdev_cpu_launch_t *) posted[XDEV_CPU_POOL_POSTS]; /* launches to help, or NULL */
    atomic_int running; /* slots in SLOT_RUNNING; changed under mu, read without it */
    _Atomic uint64_t cost[XDEV_CPU_POOL_COSTS]; /* by kernel: see cost_cell */
    pool_slot_t *slots;
    _Atomic uint32_t epoch; /* futex word: bumped by each launch and by stop */
    atomic_int sleepers;    /* workers in (or going into) the epoch futex */
    atomic_int wakes;       /* sleepers the latest launch still wants woken (see pass_wake) */
    _Atomic uint32_t done;  /* futex word: bumped when a worker leaves while one waits */
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
 * `limit` ns have passed since *start (0: not started). */
static bool spin_step(unsigned i, int64_t *start, int64_t limit) {
    if (i < 64) {
        cpu_relax();
        return true;
    }
    if (*start == 0) *start = xdev_cpu_now_ns();
    sched_yield();
    return (i & 7) != 0 || xdev_cpu_now_ns() - *start < limit;
}

/* Wake up to XDEV_CPU_POOL_WAKE_FANOUT of the sleepers the latest launch
 * wants (its `wakes`). The launcher calls it, and so does each worker it
 * wakes, before looking for work: a tree, so that the launcher's one
 * futex call wakes two workers rather than fifteen one after another (each
 * a few hundred ns of its time in the kernel while its own blocks wait),
 * and the wake-ups spread over the woken workers' cores. The count is a
 * hint shared by the streams' launches: a launch whose workers were not
 * all woken still runs every block (its stream worker claims what is
 * left). */
static void pass_wake(xdev_cpu_pool_t *p) {
    int want = atomic_load_explicit(&p->wakes, memory_order_relaxed);
    while (want > 0) {
        int n = want < XDEV_CPU_POOL_WAKE_FANOUT ? want : XDEV_CPU_POOL_WAKE_FANOUT;
        if (atomic_compare_exchange_weak(&p->wakes, &want, want - n)) {
            if (atomic_load(&p->sleepers) > 0) futex_wake(&p->epoch, n);
            return;
        }
    }
}

/* Wait until the epoch differs from `seen` or the pool stops, polling
 * first for as long as xdev_cpu_idle_spin_ns says from the slot's last idle
 * spell and work, which this spell's length then replaces. False when
 * XDEV_CPU_POOL_RETIRE_MS passed asleep without either. */
static bool wait_epoch(xdev_cpu_pool_t *p, pool_slot_t *slot, uint32_t seen) {
    const int64_t idle = xdev_cpu_now_ns();
    const int64_t limit = xdev_cpu_idle_spin_ns(XDEV_CPU_POOL_SPIN_NS, slot->gap_ns, slot->busy_ns);
    slot->busy_ns = 0;
    int64_t start = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load(&p->epoch) != seen || atomic_load(&p->stopping)) {
            slot->gap_ns = xdev_cpu_now_ns() - idle;
            return true;
        }
        if (!spin_step(i, &start, limit)) break;
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
    slot->gap_ns = woke ? xdev_cpu_now_ns() - idle : 0;
    if (woke) pass_wake(p);
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
        /* Look before claiming: a claim past the end is one more atomic add
         * on the launch's most contended line (every thread ends so). */
        if (atomic_load_explicit(&l->next_block, memory_order_relaxed) >= l->total) return;
        uint64_t b = atomic_fetch_add_explicit(&l->next_block, l->chunk, memory_order_relaxed);
        if (b >= l->total) return;
        uint64_t e = l->total - b > l->chunk ? b + l->chunk : l->total;
        xdev_cpu_exec_blocks(ex, l, b, e);
    }
}

/* ------------------------------------------------------- small launches */

/* The kernel's cell in the pool's cost table (cpu_pool_policy.h says what
 * it holds), and its tag there. */
static _Atomic uint64_t *cost_cell(xdev_cpu_pool_t *p, const void *sig, uint64_t *tag) {
    uint64_t h = (uint64_t)(uintptr_t)sig * 0x9E3779B97F4A7C15ull;
    *tag = (h >> 32) | 1u; /* 32 bits, never 0: an empty cell matches no kernel */
    return &p->cost[(h >> 24) % XDEV_CPU_POOL_COSTS];
}

/* Whether to run `l` alone (xdev_cpu_cost_run_here). A try that runs out
 * of XDEV_CPU_POOL_INLINE_NS hands the rest to the pool. Only runs alone
 * measure: the pool's threads, sharing the launch, slow each other's
 * blocks. The cell is updated racily with other streams' launches of the
 * kernel: a count lost or repeated only moves a retry. */
static bool run_here(xdev_cpu_pool_t *p, const xdev_cpu_launch_t *l) {
    uint64_t tag;
    _Atomic uint64_t *cell = cost_cell(p, l->sig, &tag);
    uint64_t v = atomic_load_explicit(cell, memory_order_relaxed), was = v;
    bool here = xdev_cpu_cost_run_here(&v, tag, l->total);
    if (v != was) atomic_store_explicit(cell, v, memory_order_relaxed);
    return here;
}

/* Note what a run alone measured (xdev_cpu_cost_note). */
static void note_cost(xdev_cpu_pool_t *p, const xdev_cpu_launch_t *l, int64_t ns, uint64_t blocks,
                      bool over) {
    uint64_t tag;
    _Atomic uint64_t *cell = cost_cell(p, l->sig, &tag);
    uint64_t v = atomic_load_explicit(cell, memory_order_relaxed);
    atomic_store_explicit(cell, xdev_cpu_cost_note(v, tag, ns, blocks, over), memory_order_relaxed);
}

/* Run `l` on the calling thread in steps of 1, 2, 4, ... blocks; true when
 * it is over (every block ran, or a fault). Once XDEV_CPU_POOL_INLINE_NS
 * have passed with blocks left (the kernel is dearer than it was, or the
 * thread was preempted) false: the caller hands the rest to the pool. */
static bool run_alone(xdev_cpu_pool_t *p, xdev_cpu_launch_t *l, xdev_cpu_exec_t *ex) {
    int64_t start = xdev_cpu_now_ns(), now = start;
    for (uint64_t step = 1;; step *= 2) {
        if (atomic_load_explicit(&l->fault, memory_order_relaxed) != 0 ||
            atomic_load_explicit(&p->stopping, memory_order_relaxed))
            return true;
        uint64_t b = atomic_load_explicit(&l->next_block, memory_order_relaxed);
        if (b >= l->total) break;
        uint64_t e = l->total - b > step ? b + step : l->total;
        atomic_store_explicit(&l->next_block, e, memory_order_relaxed); /* not posted yet */
        xdev_cpu_exec_blocks(ex, l, b, e);
        now = xdev_cpu_now_ns();
        if (e < l->total && now - start > XDEV_CPU_POOL_INLINE_NS) {
            note_cost(p, l, now - start, e, true);
            return false;
        }
    }
    note_cost(p, l, now - start, l->total, false);
    return true;
}

/* Leave the launch: clear the hazard, then wake the stream worker if it
 * sleeps waiting for workers to leave (seq_cst both: it either sees the
 * hazard cleared or counts as a waiter here). */
static void leave(xdev_cpu_pool_t *p, pool_slot_t *slot) {
    atomic_store(&slot->hazard, NULL);
    if (atomic_load(&p->done_waiters) > 0) {
        atomic_fetch_add(&p->done, 1);
        futex_wake(&p->done, INT_MAX);
    }
}

/* A posted launch with blocks to claim, published as the worker's hazard
 * (seq_cst, then the slot is read again: see the top of the file). The
 * scan starts at the worker's own index, so that launches of several
 * streams each get workers. */
static xdev_cpu_launch_t *pick(xdev_cpu_pool_t *p, pool_slot_t *slot) {
    if (atomic_load_explicit(&p->stopping, memory_order_relaxed)) return NULL;
    for (int k = 0; k < XDEV_CPU_POOL_POSTS; k++) {
        int i = (slot->index + k) % XDEV_CPU_POOL_POSTS;
        xdev_cpu_launch_t *l = atomic_load(&p->posted[i]);
        if (l == NULL) continue;
        atomic_store(&slot->hazard, l);
        /* A seat: the launch wants that many workers (the first to come),
         * the others need not touch its counter. */
        if (atomic_load(&p->posted[i]) == l &&
            atomic_load_explicit(&l->next_block, memory_order_relaxed) < l->total &&
            atomic_load_explicit(&l->fault, memory_order_relaxed) == 0 &&
            atomic_load_explicit(&l->seats, memory_order_relaxed) > 0 &&
            atomic_fetch_sub_explicit(&l->seats, 1, memory_order_relaxed) > 0)
            return l;
        leave(p, slot); /* its stream worker may already wait on this hazard */
    }
    return NULL;
}

/* True while a worker from slots [*from, nworkers) is inside `l`; *from
 * advances past those that are not (once the launch's slot is cleared, a
 * worker that has left cannot enter it again). */
static bool inside(xdev_cpu_pool_t *p, const xdev_cpu_launch_t *l, int *from) {
    for (; *from < p->nworkers; ++*from)
        if (atomic_load(&p->slots[*from].hazard) == l) return true;
    return false;
}

/* Any launch posted (a retiring worker's last look). */
static bool any_posted(xdev_cpu_pool_t *p) {
    for (int i = 0; i < XDEV_CPU_POOL_POSTS; i++)
        if (atomic_load(&p->posted[i]) != NULL) return true;
    return false;
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
        xdev_cpu_launch_t *l = ex != NULL ? pick(p, slot) : NULL;
        if (l != NULL) {
            int64_t t0 = xdev_cpu_now_ns();
            claim_and_run(p, l, ex);
            slot->busy_ns += xdev_cpu_now_ns() - t0; /* before leave: one write of the line */
            leave(p, slot);
            continue;
        }
        if (ex != NULL && wait_epoch(p, slot, seen) && !atomic_load(&p->stopping)) continue;
        /* Idle too long, stopping, or no executor: end unless a launch came.
         * `running` drops before the last look (seq_cst): a launch posted
         * meanwhile is seen here, or its poster sees the drop and restarts
         * this slot (ensure_workers, under the mutex we hold). */
        pthread_mutex_lock(&p->mu);
        atomic_fetch_sub(&p->running, 1);
        bool work = ex != NULL && !atomic_load(&p->stopping) && any_posted(p);
        if (work)
            atomic_fetch_add(&p->running, 1);
        else
            slot->state = SLOT_ENDED;
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
    if (atomic_load(&p->running) == p->nworkers || atomic_load(&p->stopping)) return;
    for (int i = 0; i < p->nworkers; i++) {
        pool_slot_t *slot = &p->slots[i];
        if (slot->state == SLOT_RUNNING) continue;
        if (slot->state == SLOT_ENDED) pthread_join(slot->thread, NULL);
        slot->state = SLOT_IDLE;
        if (start_thread(slot) != 0) break;
        slot->state = SLOT_RUNNING;
        atomic_fetch_add(&p->running, 1);
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
        size_t slot_bytes = (nworkers > 0 ? (size_t)nworkers : 1) * sizeof(pool_slot_t);
        pool_slot_t *slots = aligned_alloc(_Alignof(pool_slot_t), slot_bytes);
        if (slots != NULL) memset(slots, 0, slot_bytes);
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
    if (p->nworkers == 0 || l->total <= 1) { /* no workers, or one block: the caller runs it */
        l->chunk = l->total;
        claim_and_run(p, l, ex);
        return;
    }
    /* A kernel's launch (not the backend's own loops, which split by size
     * already) that ran fast alone last time runs here unless it turns out
     * dear. */
    if (l->stream != NULL && run_here(p, l) && run_alone(p, l, ex)) return;
    /* The blocks left (a try may have run some), cut by the kernel's cost
     * as its runs alone measured it. */
    uint64_t rest = l->total - atomic_load_explicit(&l->next_block, memory_order_relaxed);
    uint64_t cost = 0;
    if (l->stream != NULL) {
        uint64_t tag;
        _Atomic uint64_t *cell = cost_cell(p, l->sig, &tag);
        cost = xdev_cpu_cost_ns(atomic_load_explicit(cell, memory_order_relaxed), tag);
    }
    int helpers;
    xdev_cpu_pool_split(l->total, rest, cost, p->nworkers, &l->chunk, &helpers);
    if (helpers == 0) {
        claim_and_run(p, l, ex);
        return;
    }
    atomic_store_explicit(&l->seats, helpers, memory_order_relaxed); /* published by the post */

    int posted = -1;
    for (int i = 0; i < XDEV_CPU_POOL_POSTS && posted < 0; i++) {
        xdev_cpu_launch_t *none = NULL;
        if (atomic_compare_exchange_strong(&p->posted[i], &none, l)) posted = i;
    }
    if (posted < 0) { /* every slot taken: the pool is busy with other streams' launches */
        claim_and_run(p, l, ex);
        return;
    }
    if (atomic_load(&p->running) != p->nworkers) {
        pthread_mutex_lock(&p->mu);
        ensure_workers(p);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_store(&p->wakes, helpers);
    atomic_fetch_add(&p->epoch, 1);
    if (atomic_load(&p->sleepers) > 0) pass_wake(p);

    claim_and_run(p, l, ex);

    /* No worker can enter now; wait for those inside (each ends its chunk,
     * or stops early after a fault). */
    atomic_store(&p->posted[posted], NULL);
    int64_t spun = 0;
    int from = 0;
    for (unsigned i = 0; inside(p, l, &from); i++) {
        if (spin_step(i, &spun, XDEV_CPU_POOL_SPIN_NS)) continue;
        uint32_t seen = atomic_load(&p->done);
        atomic_fetch_add(&p->done_waiters, 1);
        if (inside(p, l, &from)) (void)futex_wait(&p->done, seen, NULL);
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
