/* SPDX-License-Identifier: Apache-2.0 */
/* comm_record.h - a communicator's record: the handle (struct xdev_communicator),
 * its group and a queued task. Private to the three files that make up the
 * communicators: communicator.c (the public calls, the registry, routing),
 * comm_checks.c (argument checks) and host_collectives.c (the host-memory
 * engine); the rest of core/comm sees only the handle (comm_internal.h). */
#ifndef XDEV_CORE_COMM_RECORD_H
#define XDEV_CORE_COMM_RECORD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/registry.h"
#include "xdev/communicator.h"
#include "xdev/transport.h"

#define MAX_RANKS 64

typedef enum { K_ALL_REDUCE, K_BROADCAST, K_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER } kind_t;

/* Whether a collective of `kind` reduces (takes an op). */
static inline bool kind_reduces(kind_t kind) {
    return kind == K_ALL_REDUCE || kind == K_REDUCE || kind == K_REDUCE_SCATTER;
}

#define XDEV_WD_RING 8 /* collectives in flight the watchdog times one by one */

struct round;   /* the host engine's rounds (host_collectives.c) */
struct message; /* the host engine's staged sends (host_collectives.c) */
typedef struct group {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int nranks;
    int live; /* ranks not destroyed */
    bool aborted;
    struct round *rounds;
    struct message *messages;
    xdev_status_t async_status;
    char async_msg[256];
    xdev_backend_t *be; /* backend communicators: their backend, else NULL */
    struct xdev_communicator
        *member[MAX_RANKS]; /* this process's ranks not destroyed (for abort) */
    int nmembers;           /* slots of member[] in use */
} group_t;

struct xdev_communicator {
    group_t *g;
    int rank;
    xdev_device_record_t *rec;
    uint64_t next_seq;          /* collectives issued (the caller's side) */
    _Atomic uint64_t *sends;    /* sends issued to each peer (nranks) */
    _Atomic uint64_t *recvs;    /* recvs issued from each peer (nranks) */
    int inflight;               /* queued tasks (under g->m) */
    void *native;               /* the backend's rank (g->be), else NULL */
    int slot;                   /* its place in g->member */
    const xdev_transport_t *xp; /* ranks of host memory in several processes: their transport */
    void *xg;                   /* and this rank's group in it, else NULL */
    struct xdev_communicator *live_next; /* the registry of live communicators */
    int users;                           /* calls holding it (under the registry's lock) */
    /* A rank of a group torch.cuda.comm's functions keep (comm_cache.c): all
     * its ranks live in this process, are issued together by one group call
     * and are never handed out or destroyed. Not watched (watchdog.c: no
     * peer can miss its part), and its collectives come checked by their
     * caller (xdev_comm_cached_collective). Set once, before first use. */
    bool cached;
    /* The watchdog's view of a backend rank (watchdog.c, under its lock):
     * events recorded after its last XDEV_WD_RING collectives, with when each
     * was enqueued (0: finished), and since when an enqueue has been under
     * way (0: none). */
    void *wd_event[XDEV_WD_RING];
    long long wd_at[XDEV_WD_RING];
    const char *wd_what[XDEV_WD_RING];
    uint64_t wd_seq[XDEV_WD_RING];
    long long wd_enqueue_ms;
    int wd_enqueuing; /* collectives being enqueued (or held in a group) */
    uint64_t wd_count;
    bool wd_listed;
};

typedef struct task {
    xdev_communicator_t comm;
    bool p2p;
    kind_t kind;
    const void *send;
    void *recv;
    size_t count;
    xdev_dtype_t dtype;
    xdev_reduce_op_t op;
    int root; /* root, or the peer of a send/recv */
    uint64_t seq;
    bool is_send;
} task_t;

/* The group's asynchronous error, which xdev_communicator_check reports: the first
 * one stays (g->m held). */
static inline void set_async(group_t *g, xdev_status_t st, const char *msg) {
    if (g->async_status != XDEV_SUCCESS) return; /* the first one stays */
    g->async_status = st;
    snprintf(g->async_msg, sizeof g->async_msg, "%s", msg);
}

/* ---------------------------------------------------------------- comm_checks.c
 * What a call checks before anything is queued; comm is live. Errors are
 * XDEV_FAIL's, for the public caller to blame. */

/* A collective of `kind`: dtype, op (if it reduces), root (broadcast,
 * reduce), and the buffers: on the rank's device, large enough, and apart
 * unless in place. */
xdev_status_t xdev_communicator_check_collective(xdev_communicator_t comm, kind_t kind,
                                                 const void *send, void *recv, size_t count,
                                                 xdev_dtype_t dtype, xdev_reduce_op_t op, int root);
/* A send (buf = sendbuf) or recv (buf = recvbuf) with `peer`. */
xdev_status_t xdev_communicator_check_p2p(xdev_communicator_t comm, bool is_send, const void *buf,
                                          size_t count, xdev_dtype_t dtype, int peer);
/* The stream a rank's task goes on: *stream, which must be on the rank's
 * device, or (NULL) the device's current stream. */
xdev_status_t xdev_communicator_rank_stream(xdev_communicator_t c, xdev_stream_t *stream);

/* ---------------------------------------------------------------- communicator.c */

/* Abort g: its status becomes (st, msg) unless one is set, waiting ranks
 * leave, and every backend rank of this process is aborted. */
void xdev_comm_abort_group(group_t *g, xdev_status_t st, const char *msg);

/* ---------------------------------------------------------------- watchdog.c
 * A backend rank's collectives must complete within the timeout
 * (XDEV_COMM_TIMEOUT, else 600 s): a collective a peer never joins (it
 * died, hangs or took another path) would otherwise hold its stream
 * forever. */

/* Around the enqueue of a collective of c (named `what`) on s: begin
 * before it (false: not watched, do not call end), end after it (ok: it
 * was enqueued). */
bool xdev_comm_watch_begin(xdev_communicator_t c, xdev_stream_t s);
void xdev_comm_watch_end(xdev_communicator_t c, xdev_stream_t s, const char *what, bool ok);
/* c is being destroyed: stop watching it (before its backend rank goes). */
void xdev_comm_watch_forget(xdev_communicator_t c);
/* The outermost group ended (comm_group.c): watch what it enqueued (or,
 * when the group end failed, forget it). */
void xdev_comm_watch_flush(bool enqueued);

/* ---------------------------------------------------------------- comm_group.c */

/* This thread's group nesting (0: not in a group). */
int xdev_comm_group_depth(void);

/* ---------------------------------------------------------------- host_collectives.c */

/* The host function of a task of a rank whose group lives in this process
 * (no backend, no shared memory): a collective joins its round, a send is
 * staged, a recv takes it. Frees the task. */
void xdev_host_comm_run(void *task);
/* What the host engine left in g once its last rank is gone: sends never
 * received, rounds an abort left behind. */
void xdev_host_comm_release(group_t *g);

#endif
