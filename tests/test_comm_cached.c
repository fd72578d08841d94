/* SPDX-License-Identifier: Apache-2.0 */
/* test_comm_cached.c - torch.cuda.comm's broadcast through a cached group
 * (core/comm/comm_cache.c) pays for nothing but its collectives (issue 50
 * item 7), while communicators made by xdev_communicator_init_all keep the
 * watchdog.
 *
 * A cached group's ranks all live in this process and are all issued by one
 * group call of xdev_comm_broadcast: no peer can miss the collective, so the
 * watchdog (core/comm/watchdog.c), which exists for peers that die, hang or
 * take another path, does not watch them - no event recorded per rank per
 * collective. A group the user made can be split across threads or misused,
 * so it stays watched: one event per rank per collective.
 *
 * No backend of this machine has native communicators, so this runs on the
 * fake cuda plugin built with FAKE_COMM (tests/plugins/fake_cuda.c: its
 * broadcast copies the root's bytes; it counts event records and
 * collectives in fake_cuda_counts, read here through dlsym). Checked:
 *   - xdev_comm_broadcast takes the cached group (2 collectives per call),
 *     delivers the bytes, records no event, and every rank's collective
 *     still reaches the enqueue path's observers (XDEV_OP_COLLECTIVE);
 *   - its checks still refuse an overlapping destination and a bad pointer;
 *   - a group from xdev_communicator_init_all records 1 event per rank per
 *     collective (the watchdog's);
 *   - under XDEV_SHADOW=cpu (entry comm.cached_fake_cuda.shadow), no
 *     difference: the plugin runs a group's collectives at its end, as NCCL
 *     does, and the shadow takes their outputs after that end - also in a
 *     group of more collectives than it stages at once, and after a thread
 *     exited inside a group of its own.
 * `test_comm_cached bench N` instead runs N broadcasts of 8 bytes, for
 * instruction counts (callgrind --toggle-collect=xdev_comm_broadcast).
 * Run: XDEV_BACKEND=cuda XDEV_PLUGIN_PATH=<the comm plugin's directory>. */
#define _GNU_SOURCE /* dlopen's RTLD_NOLOAD */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/enqueue.h"
#include "xdev/comm.h"
#include "xdev/communicator.h"
#include "xdev/shadow.h"
#include "xdev/xdev.h"

#include "common/xt_die.h"
#include "common/xt_plugin.h"

#define N 4096

static _Atomic long *g_counts; /* the plugin's: [0] event records, [1] collectives */
static long g_observed;        /* collectives the enqueue path's observers saw */

static void observe(const xdev_enqueue_t *q, const xdev_op_use_t *uses, int nuses, void *user) {
    (void)uses;
    (void)nuses;
    (void)user;
    if (q->kind == XDEV_OP_COLLECTIVE) g_observed++;
}

/* One broadcast of N bytes from src (cuda:0, in place) to dst (cuda:1)
 * over a two-rank group, inside the caller's group. */
static void broadcast_pair(xdev_communicator_t *comms, void *src, void *dst) {
    OK(xdev_broadcast(comms[0], src, src, N, XDEV_DTYPE_U8, 0, NULL));
    OK(xdev_broadcast(comms[1], NULL, dst, N, XDEV_DTYPE_U8, 0, NULL));
}

/* A thread that opens a group, enqueues 32 broadcasts and exits without
 * ending it (their collectives never launch). */
typedef struct {
    xdev_communicator_t *comms;
    void *src, *dst;
} leaver_t;

static void *leave_in_group(void *arg) {
    leaver_t *lv = arg;
    OK(xdev_group_start());
    for (int i = 0; i < 32; i++)
        broadcast_pair(lv->comms, lv->src, lv->dst);
    return NULL;
}

static void counts(long *events, long *colls) {
    *events = atomic_load(&g_counts[0]);
    *colls = atomic_load(&g_counts[1]);
}

int main(int argc, char **argv) {
    int n = 0;
    OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    CHECK(n == 2, "the fake cuda plugin has %d devices, 2 expected", n);
    g_counts = xt_plugin_symbol("fake_cuda_counts", "built without FAKE_COMM?");

    xdev_device_t d0 = {XDEV_DEVICE_CUDA, 0}, d1 = {XDEV_DEVICE_CUDA, 1};
    unsigned char *src, *dst, host[N];
    OK(xdev_malloc_device(d0, (void **)&src, N));
    OK(xdev_malloc_device(d1, (void **)&dst, N));
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7 + 1);
    OK(xdev_memcpy(src, host, N));
    OK(xdev_memset_async(dst, 0, N, NULL));
    void *dsts[1] = {dst};

    if (argc == 3 && strcmp(argv[1], "bench") == 0) {
        long iters = atol(argv[2]);
        for (long i = 0; i < iters; i++)
            OK(xdev_comm_broadcast(src, 8, dsts, 1));
        long ev, co;
        counts(&ev, &co);
        printf("%ld broadcasts: %ld collectives, %ld event records\n", iters, co, ev);
        return 0;
    }

    /* The cached group: 2 collectives per call, no watchdog event. */
    OK(xdev_comm_broadcast(src, N, dsts, 1)); /* makes the group */
    OK(xdev_enqueue_observer_add(observe, NULL));
    long ev0, co0, ev1, co1;
    counts(&ev0, &co0);
    for (int i = 0; i < 10; i++)
        OK(xdev_comm_broadcast(src, N, dsts, 1));
    counts(&ev1, &co1);
    CHECK(co1 - co0 == 20, "%ld collectives for 10 broadcasts over 2 devices, 20 expected",
          co1 - co0);
    CHECK(g_observed == 20, "the observers saw %ld collectives of 20", g_observed);
    /* (the shadow records events of its own: its marks) */
    const bool shadow = xdev_shadow_enabled();
    CHECK(shadow || ev1 - ev0 == 0,
          "%ld events recorded for 10 broadcasts of a cached group: its ranks, all issued by one "
          "group call of this process, need no watchdog",
          ev1 - ev0);
    OK(xdev_enqueue_observer_remove(observe, NULL));
    unsigned char back[N];
    OK(xdev_memcpy(back, dst, N));
    CHECK(memcmp(back, host, N) == 0, "the broadcast did not deliver the source's bytes");

    /* Its checks stay: an overlapping destination, a pointer xdev did not make. */
    unsigned char *dst0;
    OK(xdev_malloc_device(d0, (void **)&dst0, N));
    void *over[2] = {src + 1, dst};
    CHECK(xdev_comm_broadcast(src, N / 2, over, 2) == XDEV_ERROR_INVALID_VALUE, "overlap accepted");
    CHECK(strstr(xdev_last_error(), "overlaps src") != NULL, "message: %s", xdev_last_error());
    void *bad[1] = {host};
    CHECK(xdev_comm_broadcast(src, N, bad, 1) == XDEV_ERROR_INVALID_VALUE, "host pointer accepted");
    /* the source's device among the destinations: its output is a rank's recvbuf */
    void *both[2] = {dst0, dst};
    OK(xdev_memset_async(dst, 0, N, NULL));
    OK(xdev_comm_broadcast(src, N, both, 2));
    OK(xdev_memcpy(back, dst0, N));
    CHECK(memcmp(back, host, N) == 0, "the source device's destination was not written");
    OK(xdev_memcpy(back, dst, N));
    CHECK(memcmp(back, host, N) == 0, "the other destination was not written");

    /* A group of the user's: the watchdog records one event per rank per collective. */
    xdev_communicator_t comms[2];
    xdev_device_t devs[2] = {d0, d1};
    OK(xdev_communicator_init_all(comms, 2, devs));
    counts(&ev0, &co0);
    for (int i = 0; i < 5; i++) {
        OK(xdev_group_start());
        OK(xdev_broadcast(comms[0], src, src, N, XDEV_DTYPE_U8, 0, NULL));
        OK(xdev_broadcast(comms[1], NULL, dst, N, XDEV_DTYPE_U8, 0, NULL));
        OK(xdev_group_end());
    }
    counts(&ev1, &co1);
    CHECK(co1 - co0 == 10, "%ld collectives, 10 expected", co1 - co0);
    CHECK(shadow || ev1 - ev0 == 10,
          "%ld events recorded for 5 broadcasts of an init_all group, 10 expected (the "
          "watchdog's, one per rank per collective)",
          ev1 - ev0);
    OK(xdev_memcpy(back, dst, N));
    CHECK(memcmp(back, host, N) == 0, "the init_all group's broadcast did not deliver");
    /* A group of more collectives than the shadow stages at once (64), the
     * last into dst; and a thread that exits inside a group it opened. */
    unsigned char *other;
    OK(xdev_malloc_device(d1, (void **)&other, N));
    OK(xdev_memset_async(dst, 0, N, NULL));
    OK(xdev_group_start());
    for (int i = 0; i < 40; i++)
        broadcast_pair(comms, src, other);
    broadcast_pair(comms, src, dst);
    OK(xdev_group_end());
    OK(xdev_memcpy(back, dst, N));
    CHECK(memcmp(back, host, N) == 0, "a group of 41 broadcasts did not deliver the last");
    pthread_t th;
    leaver_t lv = {comms, src, other};
    CHECK(pthread_create(&th, NULL, leave_in_group, &lv) == 0, "pthread_create");
    CHECK(pthread_join(th, NULL) == 0, "pthread_join");
    OK(xdev_memset_async(dst, 0, N, NULL));
    OK(xdev_group_start());
    broadcast_pair(comms, src, dst);
    OK(xdev_group_end());
    OK(xdev_memcpy(back, dst, N));
    CHECK(memcmp(back, host, N) == 0,
          "the broadcast after a thread left its group did not deliver");
    OK(xdev_free(other));
    OK(xdev_communicator_destroy(comms[0]));
    OK(xdev_communicator_destroy(comms[1]));
    /* Under XDEV_SHADOW=cpu (the .shadow entry): a collective the shadow
     * does not replay has its outputs taken into the mirrors, and inside a
     * group (these all are) only once the group has launched it - else the
     * copies above that read the destinations differ from stale mirrors. */
    if (shadow) {
        uint64_t reports = xdev_shadow_report_count(), differences = 0;
        xdev_shadow_report_t r;
        for (uint64_t i = 0; i < reports && xdev_shadow_report_get(i, &r) == XDEV_SUCCESS; i++)
            if (r.kind == XDEV_SHADOW_DIFFERENCE) {
                if (differences++ == 0) fprintf(stderr, "%s\n", r.text);
            }
        CHECK(differences == 0,
              "%llu shadow differences after broadcasts in groups (the first above): the "
              "mirrors took a collective's output before its group launched it",
              (unsigned long long)differences);
    }
    OK(xdev_free(dst0));
    OK(xdev_free(src));
    OK(xdev_free(dst));
    printf("test_comm_cached: ok\n");
    return 0;
}
