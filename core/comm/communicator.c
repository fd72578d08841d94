/* SPDX-License-Identifier: Apache-2.0 */
/* communicator.c - communicators (xdev/communicator.h): their lifetime
 * (init_all, adopt for comm_procs.c, destroy, abort, check, rank, size,
 * device), the registry of live handles, and the collective and send/recv
 * calls, which check their arguments (comm_checks.c) and route the rank's
 * part to one of three engines:
 *
 * - the backend's communicators (the backend table's comm slots: NCCL on
 *   CUDA) for backends whose memory the host cannot address;
 * - a transport (transport.c: shared memory on one host, MPI across
 *   hosts) for host-memory ranks in several processes;
 * - the host engine (host_collectives.c) for host-memory ranks all in this
 *   process (xdev_communicator_init_all on the CPU backend).
 *
 * The last two run as host functions on the rank's stream; each rank counts
 * its queued tasks, so destroy can wait for them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "comm/comm_record.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/enqueue.h"
#include "runtime/stream_internal.h"
#include "xdev/communicator.h"

/* ---------------------------------------------------------------- registry
 * A communicator handle is checked against the live ones, so a destroyed or
 * made-up handle is an error, not a crash. A call holds the communicator
 * while it uses it (hold_comm ... unhold), and destroy waits for the holds:
 * a call on one thread and a destroy on another never meet in freed memory. */
static pthread_mutex_t g_live_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_live_cv = PTHREAD_COND_INITIALIZER; /* a hold ended */
static xdev_communicator_t g_live;

static xdev_status_t hold_comm(xdev_communicator_t comm) {
    if (comm == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "comm is NULL");
    pthread_mutex_lock(&g_live_lock);
    xdev_communicator_t c = g_live;
    while (c != NULL && c != comm)
        c = c->live_next;
    if (c != NULL) c->users++;
    pthread_mutex_unlock(&g_live_lock);
    if (c == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE,
                         "comm %p is not a live communicator (destroyed, or never made by "
                         "xdev_communicator_init_all)",
                         (void *)comm);
    return XDEV_SUCCESS;
}

static void unhold(xdev_communicator_t c) {
    pthread_mutex_lock(&g_live_lock);
    if (--c->users == 0) pthread_cond_broadcast(&g_live_cv);
    pthread_mutex_unlock(&g_live_lock);
}

/* ---------------------------------------------------------------- routing */

/* The backend's kind of each collective. */
static const xdev_collective_kind_t g_coll_kind[] = {XDEV_COLL_ALL_REDUCE, XDEV_COLL_BROADCAST,
                                                     XDEV_COLL_REDUCE, XDEV_COLL_ALL_GATHER,
                                                     XDEV_COLL_REDUCE_SCATTER};

/* The rank's part to its backend (g->be). */
static xdev_status_t submit_native(const task_t *t, xdev_stream_t stream) {
    xdev_collective_desc_t d = {
        sizeof d,   t->p2p ? (t->is_send ? XDEV_COLL_SEND : XDEV_COLL_RECV) : g_coll_kind[t->kind],
        t->send,    t->recv,
        t->count,   t->dtype,
        (int)t->op, t->root};
    return xdev_be_comm_collective(t->comm->g->be, t->comm->native, &d, stream->native);
}

/* A collective (seq: its number in the group) or a send or recv (seq: its
 * number between the pair) of a rank of a transport's group, in its
 * stream's host function. */
typedef struct xport_task {
    xdev_communicator_t comm;
    xdev_collective_desc_t d;
    uint64_t seq;
} xport_task_t;

static void run_xport(void *arg) {
    xport_task_t *t = arg;
    group_t *g = t->comm->g;
    char err[256] = "";
    xdev_status_t st = t->comm->xp->run(t->comm->xg, &t->d, t->seq, err, sizeof err);
    pthread_mutex_lock(&g->m);
    if (st != XDEV_SUCCESS) set_async(g, st, err);
    t->comm->inflight--;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->m);
    free(t);
}

/* Count task `t` of rank c in flight, give it its number (*seq: its send or
 * recv pair's, else the collectives') and queue fn(t) on stream. Undone if
 * the group was aborted; a launch that fails spends the number, so the
 * group's ranks are out of step and its error says so. Frees t on failure. */
static xdev_status_t enqueue(xdev_communicator_t c, const task_t *p, uint64_t *seq,
                             xdev_stream_t stream, void (*fn)(void *), void *t) {
    group_t *g = c->g;
    pthread_mutex_lock(&g->m);
    bool aborted = g->aborted;
    if (!aborted) {
        c->inflight++;
        *seq = p->p2p ? atomic_fetch_add(p->is_send ? &c->sends[p->root] : &c->recvs[p->root], 1)
                      : c->next_seq++;
    }
    pthread_mutex_unlock(&g->m);
    if (aborted) {
        free(t);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rank %d's group was aborted (xdev_communicator_abort): destroy its ranks",
                         c->rank);
    }
    xdev_status_t st = xdev_core_launch_host_func(stream, fn, t);
    if (st != XDEV_SUCCESS) {
        /* This rank's part will never run: ranks already waiting in the
         * operation would wait for it forever. The group cannot go on (its
         * ranks are out of step), so it is aborted: they leave, and later
         * calls fail at once. */
        pthread_mutex_lock(&g->m);
        c->inflight--;
        set_async(g, st, "an operation could not be enqueued: the group's ranks are out of step");
        g->aborted = true;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->m);
        /* This rank's tasks already queued would wait in the transport for
         * the number just spent: they fail now instead. */
        if (c->xg != NULL) c->xp->abort(c->xg);
        free(t);
    }
    return st;
}

static xdev_status_t submit_xport(const task_t *p, xdev_stream_t stream) {
    xport_task_t *t = malloc(sizeof *t);
    if (t == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a task");
    xdev_collective_kind_t kind =
        p->p2p ? (p->is_send ? XDEV_COLL_SEND : XDEV_COLL_RECV) : g_coll_kind[p->kind];
    *t = (xport_task_t){
        p->comm, {sizeof t->d, kind, p->send, p->recv, p->count, p->dtype, (int)p->op, p->root}, 0};
    return enqueue(p->comm, p, &t->seq, stream, run_xport, t);
}

/* The public call a task comes from ("xdev_all_reduce"). */
static const char *task_name(const task_t *t) {
    static const char *const names[] = {"xdev_all_reduce", "xdev_broadcast", "xdev_reduce",
                                        "xdev_all_gather", "xdev_reduce_scatter"};
    return t->p2p ? (t->is_send ? "xdev_send" : "xdev_recv") : names[t->kind];
}

/* What a rank's task reads and writes on its stream, for the enqueue
 * path's sanitizer and observers. */
static int task_uses(const xdev_enqueue_t *q, xdev_op_use_t *out, int cap) {
    const task_t *t = q->ctx;
    size_t bytes = t->count * xdev_dtype_size(t->dtype), n = (size_t)t->comm->g->nranks;
    if (cap < 2) return 0;
    if (t->p2p) {
        out[0] = (xdev_op_use_t){t->is_send ? t->send : t->recv, bytes,
                                 t->is_send ? XDEV_OP_READ : XDEV_OP_WRITE, 0};
        return 1;
    }
    out[0] =
        (xdev_op_use_t){t->send, t->kind == K_REDUCE_SCATTER ? bytes * n : bytes, XDEV_OP_READ, 0};
    out[1] =
        (xdev_op_use_t){t->recv, t->kind == K_ALL_GATHER ? bytes * n : bytes, XDEV_OP_WRITE, 0};
    return 2;
}

/* A backend call that failed because the group was aborted (the watchdog
 * found a collective overdue, or xdev_communicator_abort): the group's
 * reason, which says what happened, with the backend's words after it. */
static xdev_status_t group_reason(group_t *g, xdev_status_t st) {
    pthread_mutex_lock(&g->m);
    xdev_status_t ast = g->aborted ? g->async_status : XDEV_SUCCESS;
    char msg[sizeof g->async_msg];
    memcpy(msg, g->async_msg, sizeof msg);
    pthread_mutex_unlock(&g->m);
    if (ast == XDEV_SUCCESS) return st;
    char backend[256];
    snprintf(backend, sizeof backend, "%s", xdev_last_error());
    return XDEV_FAIL(ast, "%s (the backend said: %s)", msg, backend);
}

/* The enqueue path's call: the task onto its stream, by the engine that
 * carries the communicator. */
static xdev_status_t submit_call(xdev_enqueue_t *q) {
    task_t *proto = q->ctx;
    xdev_communicator_t c = proto->comm;
    xdev_stream_t stream = q->stream;
    xdev_status_t st;
    if (c->native != NULL) { /* NCCL records into graphs */
        /* a cached group's ranks are issued together by one group call: none can miss it */
        bool watched = !c->cached && xdev_comm_watch_begin(c, stream);
        st = submit_native(proto, stream);
        if (watched) xdev_comm_watch_end(c, stream, task_name(proto), st == XDEV_SUCCESS);
        if (st != XDEV_SUCCESS) st = group_reason(c->g, st);
        return st;
    }
    /* The host-memory paths number each operation when it is enqueued and
     * meet the other ranks in host functions: a replay would repeat the
     * numbers. Not recordable (yet). */
    if (atomic_load_explicit(&stream->capture, memory_order_acquire) != NULL)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "collectives of %s communicators cannot be recorded in a graph (they "
                         "meet the other ranks in host functions); run them outside the capture",
                         stream->be->name);
    if (c->xg != NULL) return submit_xport(proto, stream);
    task_t *t = malloc(sizeof *t);
    if (t == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a task");
    *t = *proto;
    return enqueue(c, proto, &t->seq, stream, xdev_host_comm_run, t);
}

/* A collective, send or recv through the one enqueue path (runtime/
 * enqueue.h): the sanitizer and observers see it with its buffers once it
 * is queued. It keeps what it had before the path: no trace span of its
 * own (NCCL's work is its kernels'; the CPU engines' a host function's) and
 * no XDEV_LAUNCH_BLOCKING wait - ranks of one process are enqueued one
 * after another by one thread, and a rank waiting for its collective would
 * wait for ranks not yet enqueued. */
static xdev_status_t submit(task_t *proto, xdev_stream_t stream) {
    xdev_status_t st = xdev_communicator_rank_stream(proto->comm, &stream);
    if (st != XDEV_SUCCESS) return st;
    xdev_enqueue_t q = {
        .kind = XDEV_OP_COLLECTIVE,
        .name = task_name(proto),
        .stream = stream,
        .ctx = proto,
        .flags = XDEV_ENQUEUE_NO_SPAN | XDEV_ENQUEUE_WAIT_LATER,
        .get_uses = task_uses,
        .call = submit_call,
    };
    return xdev_enqueue(&q);
}

/* ---------------------------------------------------------------- calls */

static xdev_status_t collective(xdev_communicator_t comm, kind_t kind, const void *send, void *recv,
                                size_t count, xdev_dtype_t dtype, xdev_reduce_op_t op, int root,
                                xdev_stream_t stream) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st == XDEV_SUCCESS) st = hold_comm(comm);
    if (st != XDEV_SUCCESS) return st;
    st = xdev_communicator_check_collective(comm, kind, send, recv, count, dtype, op, root);
    if (!kind_reduces(kind)) op = XDEV_REDUCE_SUM;
    task_t t = {comm, false, kind, send, recv, count, dtype, op, root, 0, false};
    if (st == XDEV_SUCCESS) st = submit(&t, stream);
    unhold(comm);
    return st;
}

xdev_status_t xdev_all_reduce(xdev_communicator_t comm, const void *sendbuf, void *recvbuf,
                              size_t count, xdev_dtype_t dtype, xdev_reduce_op_t op,
                              xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_ALL_REDUCE, sendbuf, recvbuf, count, dtype, op, 0, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_broadcast(xdev_communicator_t comm, const void *sendbuf, void *recvbuf,
                             size_t count, xdev_dtype_t dtype, int root, xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_BROADCAST, sendbuf, recvbuf, count, dtype, XDEV_REDUCE_SUM, root,
                          stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_reduce(xdev_communicator_t comm, const void *sendbuf, void *recvbuf,
                          size_t count, xdev_dtype_t dtype, xdev_reduce_op_t op, int root,
                          xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_REDUCE, sendbuf, recvbuf, count, dtype, op, root, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_all_gather(xdev_communicator_t comm, const void *sendbuf, void *recvbuf,
                              size_t count, xdev_dtype_t dtype, xdev_stream_t stream) {
    XDEV_CHECK(
        collective(comm, K_ALL_GATHER, sendbuf, recvbuf, count, dtype, XDEV_REDUCE_SUM, 0, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_reduce_scatter(xdev_communicator_t comm, const void *sendbuf, void *recvbuf,
                                  size_t count, xdev_dtype_t dtype, xdev_reduce_op_t op,
                                  xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_REDUCE_SCATTER, sendbuf, recvbuf, count, dtype, op, 0, stream));
    return XDEV_SUCCESS;
}

static xdev_status_t p2p(xdev_communicator_t comm, bool is_send, const void *send, void *recv,
                         size_t count, xdev_dtype_t dtype, int peer, xdev_stream_t stream) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st == XDEV_SUCCESS) st = hold_comm(comm);
    if (st != XDEV_SUCCESS) return st;
    st = xdev_communicator_check_p2p(comm, is_send, is_send ? send : recv, count, dtype, peer);
    task_t t = {comm, true, K_ALL_REDUCE, send, recv, count, dtype, XDEV_REDUCE_SUM,
                peer, 0,    is_send};
    if (st == XDEV_SUCCESS) st = submit(&t, stream);
    unhold(comm);
    return st;
}

/* torch.cuda.comm's collectives through a cached group (comm_internal.h):
 * no hold (the cache never destroys its groups) and no second check of
 * what the caller checked; the enqueue path as every collective. */
xdev_status_t xdev_comm_cached_collective(xdev_communicator_t c, xdev_collective_kind_t kind,
                                          const void *send, void *recv, size_t count,
                                          xdev_dtype_t dtype, int root) {
    task_t t = {c,
                false,
                kind == XDEV_COLL_REDUCE ? K_REDUCE : K_BROADCAST,
                send,
                recv,
                count,
                dtype,
                XDEV_REDUCE_SUM,
                root,
                0,
                false};
    return submit(&t, NULL);
}

void xdev_communicator_mark_cached(xdev_communicator_t *comms, int n) {
    for (int i = 0; i < n; i++)
        comms[i]->cached = true;
}

bool xdev_comm_cached_usable(xdev_communicator_t c) {
    group_t *g = c->g;
    pthread_mutex_lock(&g->m);
    bool ok = g->async_status == XDEV_SUCCESS && !g->aborted;
    pthread_mutex_unlock(&g->m);
    if (ok && c->native != NULL && XDEV_HAS(g->be, comm, async_error)) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        ok = xdev_be_comm_async_error(g->be, c->native) == XDEV_SUCCESS;
        xdev_core_error_restore(&saved);
    }
    return ok;
}

xdev_status_t xdev_send(xdev_communicator_t comm, const void *sendbuf, size_t count,
                        xdev_dtype_t dtype, int peer, xdev_stream_t stream) {
    XDEV_CHECK(p2p(comm, true, sendbuf, NULL, count, dtype, peer, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_recv(xdev_communicator_t comm, void *recvbuf, size_t count, xdev_dtype_t dtype,
                        int peer, xdev_stream_t stream) {
    XDEV_CHECK(p2p(comm, false, NULL, recvbuf, count, dtype, peer, stream));
    return XDEV_SUCCESS;
}

/* ---------------------------------------------------------------- lifetime */

xdev_status_t xdev_communicator_init_all(xdev_communicator_t *comms, int n,
                                         const xdev_device_t *devices) {
    XDEV_REQUIRE_ARG(comms);
    XDEV_REQUIRE_ARG(devices);
    XDEV_CHECK(xdev_core_ensure_init());
    if (n < 1 || n > MAX_RANKS)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "n = %d is not in 1..%d", n, MAX_RANKS);
    xdev_device_record_t *recs[MAX_RANKS];
    for (int i = 0; i < n; i++) {
        XDEV_CHECK(xdev_device_lookup(devices[i], &recs[i]));
        if (recs[i]->be != recs[0]->be)
            return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                                 "devices[%d] is " XDEV_REC_FMT " but devices[0] is " XDEV_REC_FMT
                                 ": a group's devices are of one type",
                                 i, XDEV_REC_ARGS(recs[i]), XDEV_REC_ARGS(recs[0]));
        for (int j = 0; j < i; j++)
            if (recs[j] == recs[i])
                return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                     "devices[%d] and devices[%d] are both " XDEV_REC_FMT
                                     ": each rank needs a device of its own",
                                     j, i, XDEV_REC_ARGS(recs[i]));
    }
    xdev_backend_t *be = recs[0]->be;
    void *natives[MAX_RANKS] = {0};
    bool native = !(be->flags & XDEV_BACKEND_HOST_MEMORY);
    if (native) {
        if (!XDEV_HAS(be, comm, init_all))
            return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                                 "the %s backend has no communicators (NCCL/RCCL): it was built "
                                 "without them",
                                 be->name);
        xdev_backend_device_t *ctxs[MAX_RANKS];
        for (int i = 0; i < n; i++)
            ctxs[i] = recs[i]->ctx;
        XDEV_CHECK(xdev_be_comm_init_all(be, ctxs, n, natives));
    }
    group_t *g = calloc(1, sizeof *g);
    xdev_communicator_t made[MAX_RANKS] = {0};
    bool ok = g != NULL;
    for (int i = 0; i < n && ok; i++)
        ok = (made[i] = calloc(1, sizeof *made[i])) != NULL &&
             (made[i]->sends = calloc(2 * (size_t)n, sizeof *made[i]->sends)) != NULL;
    if (!ok) {
        for (int i = 0; i < n; i++) {
            if (made[i] != NULL) free((void *)made[i]->sends);
            free(made[i]);
            if (natives[i] != NULL) (void)xdev_be_comm_destroy(be, natives[i]);
        }
        free(g);
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for %d communicators", n);
    }
    g->be = native ? be : NULL;
    g->nmembers = n;
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->nranks = g->live = n;
    pthread_mutex_lock(&g_live_lock);
    for (int i = 0; i < n; i++) {
        made[i]->g = g;
        made[i]->rank = i;
        made[i]->recvs = made[i]->sends + n;
        made[i]->rec = recs[i];
        made[i]->native = natives[i];
        made[i]->slot = i;
        g->member[i] = made[i];
        made[i]->live_next = g_live;
        g_live = made[i];
        comms[i] = made[i];
    }
    pthread_mutex_unlock(&g_live_lock);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_adopt(xdev_backend_t *be, xdev_device_record_t *rec, int nranks,
                                      int rank, void *native, const xdev_transport_t *xp, void *xg,
                                      xdev_communicator_t *out) {
    group_t *g = calloc(1, sizeof *g);
    xdev_communicator_t c = g != NULL ? calloc(1, sizeof *c) : NULL;
    _Atomic uint64_t *counts = c != NULL ? calloc(2 * (size_t)nranks, sizeof *counts) : NULL;
    if (counts == NULL) {
        free(c);
        free(g);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a communicator");
    }
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->nranks = nranks;
    g->live = 1;
    g->be = be;
    g->nmembers = 1;
    g->member[0] = c;
    c->g = g;
    c->rank = rank;
    c->rec = rec;
    c->native = native;
    c->xp = xp;
    c->xg = xg;
    c->sends = counts;
    c->recvs = counts + nranks;
    pthread_mutex_lock(&g_live_lock);
    c->live_next = g_live;
    g_live = c;
    pthread_mutex_unlock(&g_live_lock);
    *out = c;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_destroy(xdev_communicator_t comm) {
    if (comm == NULL) return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE, "comm is NULL");
    pthread_mutex_lock(&g_live_lock); /* out of the registry first: no new call */
    xdev_communicator_t *link = &g_live;
    while (*link != NULL && *link != comm)
        link = &(*link)->live_next;
    bool found = *link != NULL;
    if (found) *link = comm->live_next;
    while (found && comm->users > 0) /* calls under way on other threads finish first */
        pthread_cond_wait(&g_live_cv, &g_live_lock);
    pthread_mutex_unlock(&g_live_lock);
    if (!found) /* never made, or destroyed (by another thread meanwhile) */
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE,
                             "comm %p is not a live communicator (destroyed, or never made by "
                             "xdev_communicator_init_all)",
                             (void *)comm);
    group_t *g = comm->g;
    pthread_mutex_lock(&g->m);
    while (comm->inflight > 0)
        pthread_cond_wait(&g->cv, &g->m);
    g->member[comm->slot] = NULL; /* abort no longer reaches it */
    bool last = --g->live == 0;
    pthread_mutex_unlock(&g->m);
    xdev_status_t st = XDEV_SUCCESS;
    xdev_comm_watch_forget(comm);
    if (comm->native != NULL) st = xdev_be_comm_destroy(g->be, comm->native);
    if (comm->xg != NULL) comm->xp->leave(comm->xg);
    /* The rank's queued collectives are done: to the stream-order sanitizer,
     * a synchronize of its device (it does not track which streams they used). */
    if (st == XDEV_SUCCESS) xdev_order_on_host_waits_device(comm->rec);
    free((void *)comm->sends);
    free(comm);
    if (last) {
        xdev_host_comm_release(g);
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->m);
        free(g);
    }
    XDEV_CHECK(st); /* the backend's failure, reported once the rank is gone */
    return XDEV_SUCCESS;
}

void xdev_comm_abort_group(group_t *g, xdev_status_t st, const char *msg) {
    pthread_mutex_lock(&g->m);
    g->aborted = true;
    set_async(g, st, msg);
    pthread_cond_broadcast(&g->cv);
    void *natives[MAX_RANKS];
    int nn = 0;
    for (int i = 0; i < g->nmembers; i++)
        if (g->member[i] != NULL && g->member[i]->native != NULL)
            natives[nn++] = g->member[i]->native;
    pthread_mutex_unlock(&g->m);
    for (int i = 0; i < nn; i++) /* every rank, as the group is aborted */
        (void)xdev_be_comm_abort(g->be, natives[i]);
}

xdev_status_t xdev_communicator_abort(xdev_communicator_t comm) {
    XDEV_CHECK(hold_comm(comm));
    xdev_comm_abort_group(comm->g, XDEV_ERROR_INVALID_VALUE,
                          "the group was aborted (xdev_communicator_abort)");
    if (comm->xg != NULL) comm->xp->abort(comm->xg); /* shm: the other processes see it too */
    unhold(comm);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_check(xdev_communicator_t comm) {
    XDEV_CHECK(hold_comm(comm));
    group_t *g = comm->g;
    pthread_mutex_lock(&g->m);
    xdev_status_t st = g->async_status;
    char msg[sizeof g->async_msg];
    memcpy(msg, g->async_msg, sizeof msg);
    pthread_mutex_unlock(&g->m);
    if (st == XDEV_SUCCESS && comm->native != NULL)
        st = xdev_be_comm_async_error(g->be, comm->native);
    else if (st != XDEV_SUCCESS)
        XDEV_FAIL(st, "%s", msg);
    unhold(comm);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_rank(xdev_communicator_t comm, int *rank) {
    XDEV_REQUIRE_ARG(rank);
    XDEV_CHECK(hold_comm(comm));
    *rank = comm->rank;
    unhold(comm);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_size(xdev_communicator_t comm, int *nranks) {
    XDEV_REQUIRE_ARG(nranks);
    XDEV_CHECK(hold_comm(comm));
    *nranks = comm->g->nranks;
    unhold(comm);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_engine(xdev_communicator_t comm, const char **name) {
    XDEV_REQUIRE_ARG(name);
    XDEV_CHECK(hold_comm(comm));
    *name = comm->native != NULL ? comm->g->be->name : comm->xp != NULL ? comm->xp->name : "local";
    unhold(comm);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_device(xdev_communicator_t comm, xdev_device_t *device) {
    XDEV_REQUIRE_ARG(device);
    XDEV_CHECK(hold_comm(comm));
    *device = comm->rec->id;
    unhold(comm);
    return XDEV_SUCCESS;
}
