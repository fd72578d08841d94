/* SPDX-License-Identifier: Apache-2.0 */
/* test_cpu_pool_policy.c - the CPU kernel pool's decisions for a launch
 * (backends/cpu/cpu_pool_policy.h, white-box, no timing): which small grids
 * run on their stream worker alone, how a run alone that took long is
 * retried, and how a grid posted to the pool is cut into claims and how
 * many workers join it, and how long an idle worker polls (issue 50:
 * launch latency on 16 cores). */
#include <check.h>
#include <stdint.h>

#include "cpu/cpu_pool_policy.h"
#include "xt_check_run.h"

#define TAG 0x9e3779b9u

/* `launches` launches of `total` blocks of a kernel whose every run alone
 * takes `ns` for the blocks it runs; returns how many ran alone (tries
 * included) and leaves the cell in *v. A run that takes more than
 * XDEV_CPU_POOL_INLINE_NS stops after one block, as run_alone does. */
static int simulate(uint64_t *v, uint64_t total, int64_t ns_a_block, int launches) {
    int here = 0;
    for (int i = 0; i < launches; i++) {
        if (!xdev_cpu_cost_run_here(v, TAG, total)) continue;
        here++;
        int64_t all = ns_a_block * (int64_t)total;
        if (all <= XDEV_CPU_POOL_INLINE_NS)
            *v = xdev_cpu_cost_note(*v, TAG, all, total, false);
        else
            *v = xdev_cpu_cost_note(*v, TAG, ns_a_block, 1, true);
    }
    return here;
}

START_TEST(unknown_small_grids_try_alone) {
    uint64_t v = 0;
    ck_assert(xdev_cpu_cost_run_here(&v, TAG, 64));
    ck_assert(xdev_cpu_cost_run_here(&v, TAG, XDEV_CPU_POOL_TRY_BLOCKS));
    ck_assert(!xdev_cpu_cost_run_here(&v, TAG, XDEV_CPU_POOL_TRY_BLOCKS + 1));
    ck_assert_uint_eq(v, 0); /* deciding alone writes nothing */
    ck_assert_uint_eq(xdev_cpu_cost_ns(v, TAG), 0);
    /* another kernel's cell (a collision) is not this kernel's cost */
    uint64_t other = xdev_cpu_cost_note(0, TAG + 2, 5, 1, false);
    ck_assert_uint_eq(xdev_cpu_cost_ns(other, TAG), 0);
    ck_assert(xdev_cpu_cost_run_here(&other, TAG, 64));
}
END_TEST

START_TEST(cheap_kernel_stays_alone) {
    uint64_t v = 0;
    ck_assert_int_eq(simulate(&v, 64, 10, 1000), 1000);
    ck_assert_uint_eq(xdev_cpu_cost_ns(v, TAG), 10);
}
END_TEST

/* Issue 50: a cheap kernel's run alone that was preempted (it ran out of
 * time after one block) must not send its next 255 launches to the pool:
 * the next launch tries alone again. */
START_TEST(one_slow_try_costs_one_launch) {
    uint64_t v = 0;
    ck_assert_int_eq(simulate(&v, 64, 5, 10), 10);
    /* preempted for 1 ms in its first block */
    ck_assert(xdev_cpu_cost_run_here(&v, TAG, 64));
    v = xdev_cpu_cost_note(v, TAG, 1000000, 1, true);
    int alone = simulate(&v, 64, 5, 20);
    ck_assert_msg(alone == 20, "after one slow try, %d of the next 20 launches ran alone", alone);
    /* twice in a row: one launch goes to the pool, then it tries again */
    v = xdev_cpu_cost_note(v, TAG, 1000000, 1, true);
    v = xdev_cpu_cost_note(v, TAG, 1000000, 1, true);
    alone = simulate(&v, 64, 5, 20);
    ck_assert_msg(alone == 19, "after two slow tries, %d of the next 20 launches ran alone", alone);
}
END_TEST

/* A dear kernel (50 us a block) is tried less and less often, then about
 * once in XDEV_CPU_POOL_RETRY + 1 launches; one that became cheap goes
 * back to running alone at its next try. */
START_TEST(dear_kernel_backs_off) {
    uint64_t v = 0;
    int first = simulate(&v, 64, 50000, 256);
    ck_assert_msg(first >= 2 && first <= 10, "%d tries in the first 256 launches", first);
    int later = simulate(&v, 64, 50000, 256 * 8);
    ck_assert_msg(later >= 7 && later <= 9, "%d tries in 2048 later launches", later);
    ck_assert_uint_eq(xdev_cpu_cost_ns(v, TAG), 50000);
    /* cheaper now: within one retry period it runs alone for good */
    int cheap = simulate(&v, 64, 5, XDEV_CPU_POOL_RETRY + 1 + 100);
    ck_assert_msg(cheap >= 100, "a kernel that became cheap ran alone %d times", cheap);
    ck_assert_int_eq(simulate(&v, 64, 5, 50), 50);
}
END_TEST

/* A grid posted to the pool: a known cheap cost gives few, large claims
 * and as few helpers; an unknown cost the old split. */
START_TEST(split_by_cost) {
    uint64_t chunk;
    int helpers;
    /* 64 blocks of 40 ns (2.6 us): 25 blocks a claim, two workers help */
    xdev_cpu_pool_split(64, 64, 40, 15, &chunk, &helpers);
    ck_assert_uint_eq(chunk, 25);
    ck_assert_int_eq(helpers, 2);
    /* 64 blocks of 200 ns: 5 a claim, 13 claims, 12 helpers */
    xdev_cpu_pool_split(64, 64, 200, 15, &chunk, &helpers);
    ck_assert_uint_eq(chunk, 5);
    ck_assert_int_eq(helpers, 12);
    /* dear blocks: one a claim, every worker */
    xdev_cpu_pool_split(64, 64, 50000, 15, &chunk, &helpers);
    ck_assert_uint_eq(chunk, 1);
    ck_assert_int_eq(helpers, 15);
    /* a try ran 63 of 64 already: the caller runs the last alone */
    xdev_cpu_pool_split(64, 1, 50000, 15, &chunk, &helpers);
    ck_assert_int_eq(helpers, 0);
    /* unknown cost: about 16 claims a thread, every worker */
    xdev_cpu_pool_split(1 << 17, 1 << 17, 0, 15, &chunk, &helpers);
    ck_assert_uint_eq(chunk, (1u << 17) / (16 * 16));
    ck_assert_int_eq(helpers, 15);
    xdev_cpu_pool_split(64, 64, 0, 15, &chunk, &helpers);
    ck_assert_uint_eq(chunk, 1);
    ck_assert_int_eq(helpers, 15);
    /* a large grid of a kernel measured cheap on small ones: its blocks may
     * be dearer (other arguments), so the cost does not cut it */
    xdev_cpu_pool_split(1024, 1024, 5, 15, &chunk, &helpers);
    ck_assert_uint_eq(chunk, 4);
    ck_assert_int_eq(helpers, 15);
    /* fewer blocks than workers */
    xdev_cpu_pool_split(3, 3, 0, 15, &chunk, &helpers);
    ck_assert_int_eq(helpers, 2);
    xdev_cpu_pool_split(8, 8, 0, 0, &chunk, &helpers);
    ck_assert_int_eq(helpers, 0);
}
END_TEST

/* Issue 50 item 5: an idle worker polls long enough to bridge the gaps it
 * has seen (twice the last), within its share of the work and the longest
 * poll, and a gap no poll could bridge sends it back to the least. */
START_TEST(idle_spin_follows_the_gaps) {
    const int64_t min = 30000, ms = 1000000;
    /* nothing known: the least */
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, 0, 0), min);
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, 0, 100 * ms), min);
    /* a 10 ms kernel, then a 100 us gap: poll 200 us */
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, 100000, 10 * ms), 200000);
    /* the gap shorter than the least: still the least */
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, 5000, 10 * ms), min);
    /* little work: a quarter of it at most, never below the least */
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, 100000, 400000), 100000);
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, 100000, 20000), min);
    /* gaps near the longest poll: the longest; beyond it: the least */
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, XDEV_CPU_IDLE_SPIN_MAX_NS - 1, 100 * ms),
                     XDEV_CPU_IDLE_SPIN_MAX_NS);
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, XDEV_CPU_IDLE_SPIN_MAX_NS + 1, 100 * ms), min);
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, 900 * ms, 100 * ms), min);
    /* the share caps the longest too */
    ck_assert_int_eq(xdev_cpu_idle_spin_ns(min, ms, 4 * ms), ms);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cpu_pool_policy");
    TCase *tc = tcase_create("cpu_pool_policy");
    tcase_add_test(tc, unknown_small_grids_try_alone);
    tcase_add_test(tc, cheap_kernel_stays_alone);
    tcase_add_test(tc, one_slow_try_costs_one_launch);
    tcase_add_test(tc, dear_kernel_backs_off);
    tcase_add_test(tc, split_by_cost);
    tcase_add_test(tc, idle_spin_follows_the_gaps);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
