/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_pool_policy.h - the kernel pool's decisions for one
 * launch, as pure functions of numbers (cpu_pool.c applies them; a header
 * of its own so that tests/test_cpu_pool_policy.c can pin them without
 * timing anything): whether a small grid runs on its stream worker alone,
 * what a run alone teaches about the kernel's cost, how a grid posted to
 * the pool is cut into claims and how many workers join it, and how long an
 * idle worker polls before it sleeps.
 *
 * A kernel's cost cell (one atomic word per kernel in the pool's table) is
 * tag << 32 | launches left before a retry << 24 | tries in a row that
 * ran out of time << 20 | ns a block that its last run alone measured. */
#ifndef XDEV_CPU_POOL_POLICY_H
#define XDEV_CPU_POOL_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* A kernel launch whose whole grid ran within this on one thread last time
 * runs on its stream worker alone: waking the pool and waiting for it to
 * leave costs about as much (issue 50: 64 empty blocks took 13 us on the
 * pool of 16 cores). */
#define XDEV_CPU_POOL_INLINE_NS 2000
/* A kernel whose cost is not known yet tries that with this many blocks at
 * most (more cannot fit in the time, at a few ns a block). */
#define XDEV_CPU_POOL_TRY_BLOCKS 256
/* A kernel found too dear for that is tried again after this many of its
 * launches at most (it may have become cheaper: its arguments changed). */
#define XDEV_CPU_POOL_RETRY 255
/* Claims per thread and launch, when the kernel's cost is not known. */
#define XDEV_CPU_POOL_CLAIMS 16
/* Work a claim carries at least when the kernel's cost a block is known:
 * a claim is an atomic add on a line every helper writes, and each helper
 * costs the launch its wake-up and its leaving. */
#define XDEV_CPU_POOL_CLAIM_NS 1000

#define XDEV_CPU_COST_NS_MAX 0xfffffu
#define XDEV_CPU_COST_MISSES_MAX 8u

/* The cost a block in ns the cell `v` holds for the kernel tagged `tag`;
 * 0 when it holds none. */
static inline uint64_t xdev_cpu_cost_ns(uint64_t v, uint64_t tag) {
    return v >> 32 == tag ? v & XDEV_CPU_COST_NS_MAX : 0;
}

/* Whether a launch of `total` blocks of the kernel tagged `tag` runs on its
 * stream worker (a try when its cost is not known, or too dear but due for
 * a retry); *v is the cell, counted down when a retry is not due yet. */
static inline bool xdev_cpu_cost_run_here(uint64_t *v, uint64_t tag, uint64_t total) {
    if (total > XDEV_CPU_POOL_TRY_BLOCKS) return false;
    if (*v >> 32 != tag) return true; /* not known: try */
    if ((*v & XDEV_CPU_COST_NS_MAX) * total <= XDEV_CPU_POOL_INLINE_NS) return true;
    uint64_t left = *v >> 24 & 0xffu;
    if (left == 0) return true; /* due: the try notes its cost again */
    *v -= (uint64_t)1 << 24;
    return false;
}

/* The cell after a run alone of the kernel tagged `tag` (cell `v` before)
 * took `ns` for `blocks` blocks; `over` when it ran out of
 * XDEV_CPU_POOL_INLINE_NS with blocks left. The latest run decides the
 * cost, but a try that ran out of time is retried at the next launch, then
 * after 1, 3, 7, ... 255 launches while tries keep running out: one
 * preempted or interrupted try of a cheap kernel sends one launch to the
 * pool, not the next 255 (issue 50: 64 empty blocks took 2.6 us alone and
 * up to 8.5 us on the pool of 16 cores, and such misses made 6 us the
 * median), and a dear kernel is tried about once in 256 launches. */
static inline uint64_t xdev_cpu_cost_note(uint64_t v, uint64_t tag, int64_t ns, uint64_t blocks,
                                          bool over) {
    if (blocks == 0 || ns < 0) return v;
    uint64_t per = ((uint64_t)ns + blocks - 1) / blocks;
    if (per > XDEV_CPU_COST_NS_MAX) per = XDEV_CPU_COST_NS_MAX;
    uint64_t misses = 0, left = 0;
    if (over) {
        uint64_t before = v >> 32 == tag ? v >> 20 & 0xfu : 0;
        left = ((uint64_t)1 << before) - 1;
        if (left > XDEV_CPU_POOL_RETRY) left = XDEV_CPU_POOL_RETRY;
        misses = before < XDEV_CPU_COST_MISSES_MAX ? before + 1 : XDEV_CPU_COST_MISSES_MAX;
    }
    return tag << 32 | left << 24 | misses << 20 | per;
}

/* How a launch of `total` blocks, `rest` of them not run yet, is shared by
 * the caller and up to `nworkers` pool workers: *chunk blocks a claim and
 * *helpers workers (0: the caller runs the rest alone). `cost` is the
 * kernel's ns a block, 0 when not known (then about XDEV_CPU_POOL_CLAIMS
 * claims a thread). It counts only for grids of at most
 * XDEV_CPU_POOL_TRY_BLOCKS, those whose launches measure it (a try this
 * launch, or a dear one's last): a larger grid's blocks may cost more than
 * a small grid's of the same kernel (its arguments differ; a grid-stride
 * loop), and too few helpers would cost far more than the claims they
 * save. With a known cost a claim carries at least
 * XDEV_CPU_POOL_CLAIM_NS and only as many workers join as there are claims
 * beyond the caller's first: a small grid of cheap blocks neither wakes
 * every worker nor has them queue on its counter's cache line one block at
 * a time (issue 50). */
static inline void xdev_cpu_pool_split(uint64_t total, uint64_t rest, uint64_t cost, int nworkers,
                                       uint64_t *chunk, int *helpers) {
    uint64_t claims = (uint64_t)(nworkers + 1) * XDEV_CPU_POOL_CLAIMS;
    uint64_t c = total / claims != 0 ? total / claims : 1;
    if (cost != 0 && total <= XDEV_CPU_POOL_TRY_BLOCKS) {
        uint64_t worth = (XDEV_CPU_POOL_CLAIM_NS + cost - 1) / cost;
        if (worth > c) c = worth;
    }
    uint64_t chunks = (rest + c - 1) / c;
    int h = nworkers;
    if ((uint64_t)h > (chunks > 1 ? chunks - 1 : 0)) h = chunks > 1 ? (int)(chunks - 1) : 0;
    *chunk = c;
    *helpers = h;
}

/* The longest an idle pool or stream worker polls for its next work, and
 * the share of its work since the last idle spell it may spend polling
 * (1 / XDEV_CPU_IDLE_SPIN_SHARE). */
#define XDEV_CPU_IDLE_SPIN_MAX_NS 2000000
#define XDEV_CPU_IDLE_SPIN_SHARE 4

/* How long a worker idle now polls before it sleeps: twice its last idle
 * spell (`gap_ns`, from the end of its work to the next work; 0 when not
 * known), so that a steady launch + synchronize loop finds it awake, but
 * never more than XDEV_CPU_IDLE_SPIN_MAX_NS, nor more than
 * 1/XDEV_CPU_IDLE_SPIN_SHARE of the work it did since its last spell
 * (`busy_ns`): polling costs at most a quarter more CPU than the work. A
 * spell longer than the longest poll teaches nothing a poll could bridge:
 * back to `min_ns`. Never less than `min_ns`, the fixed poll that keeps
 * back-to-back launches off the futex (issue 50 item 5: on a 16-core KVM
 * guest a launch of a 10 ms kernel + synchronize paid the stream worker's
 * and the pool's futex wake-ups after each gap, 5-10% of the run against
 * OpenMP's spinning team). */
static inline int64_t xdev_cpu_idle_spin_ns(int64_t min_ns, int64_t gap_ns, int64_t busy_ns) {
    int64_t want = min_ns;
    if (gap_ns > 0 && gap_ns <= XDEV_CPU_IDLE_SPIN_MAX_NS)
        want = gap_ns > XDEV_CPU_IDLE_SPIN_MAX_NS / 2 ? XDEV_CPU_IDLE_SPIN_MAX_NS : 2 * gap_ns;
    int64_t cap = busy_ns / XDEV_CPU_IDLE_SPIN_SHARE;
    if (want > cap) want = cap;
    return want > min_ns ? want : min_ns;
}

#endif
