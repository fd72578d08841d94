/* communicator.c - communicators and collectives (xdev/communicator.h) for
 * backends whose device memory the host addresses (the CPU backend).
 *
 * Each call checks what it can alone and enqueues a task as a host function
 * on the rank's stream. When the stream reaches it, the task joins its
 * collective's "round" (the n-th collective of the group, n counted per
 * rank at the call): the last rank to arrive checks that all agree, computes
 * every rank's output, and wakes the others, which have waited on the
 * group's condition variable. A send copies its data aside when its stream
 * reaches it and returns; the matching recv (the n-th between that pair)
 * waits for the copy. Abort wakes every waiter; their outputs stay as they
 * were. Each rank counts its queued tasks, so destroy can wait for them.
 *
 * Backends whose memory the host cannot address bring their own
 * communicators (the backend table's comm slots: NCCL on CUDA): the same
 * checks run here, then the rank's part goes to the backend. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "comm/host_reduce.h"
#include "comm/shm_comm.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "xdev/communicator.h"

#define MAX_RANKS 64

typedef enum { K_ALL_REDUCE, K_BROADCAST, K_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER } kind_t;

static const char *const g_kind_name[] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                          "reduce_scatter"};

struct task;

/* The n-th collective of a group, while its ranks arrive and leave. */
typedef struct round {
    uint64_t seq;
    struct task *task[MAX_RANKS];
    int arrived, left;
    bool running; /* the last rank is computing (without g->m): nobody leaves */
    bool done;
    struct round *next;
} round_t;

/* A send's data, copied aside until the matching recv takes it. */
typedef struct message {
    int src, dst;
    uint64_t seq;
    size_t count;
    xdev_dtype_t dtype;
    void *data;
    struct message *next;
} message_t;

typedef struct group {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int nranks;
    int live; /* ranks not destroyed */
    bool aborted;
    round_t *rounds;
    message_t *messages;
    xdev_status_t async_status;
    char async_msg[256];
    xdev_backend_t *be;                  /* backend communicators: their backend, else NULL */
    struct xdev_comm *member[MAX_RANKS]; /* this process's ranks not destroyed (for abort) */
    int nmembers;                        /* slots of member[] in use */
} group_t;

struct xdev_comm {
    group_t *g;
    int rank;
    xdev_device_record_t *rec;
    uint64_t next_seq;                 /* collectives issued (the caller's side) */
    _Atomic uint64_t sends[MAX_RANKS]; /* sends issued to each peer */
    _Atomic uint64_t recvs[MAX_RANKS]; /* recvs issued from each peer */
    int inflight;                      /* queued tasks (under g->m) */
    void *native;                      /* the backend's rank (g->be), else NULL */
    int slot;                          /* its place in g->member */
    xdev_shm_group_t *shm;             /* ranks of host memory in several processes, else NULL */
    struct xdev_comm *live_next;       /* the registry of live communicators */
};

typedef struct task {
    xdev_comm_t comm;
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

/* ---------------------------------------------------------------- registry
 * A communicator handle is checked against the live ones, so a destroyed or
 * made-up handle is an error, not a crash. */
static pthread_mutex_t g_live_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_comm_t g_live;

static xdev_status_t check_comm(xdev_comm_t comm) {
    if (comm == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "comm is NULL");
    pthread_mutex_lock(&g_live_lock);
    xdev_comm_t c = g_live;
    while (c != NULL && c != comm)
        c = c->live_next;
    pthread_mutex_unlock(&g_live_lock);
    if (c == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE,
                         "comm %p is not a live communicator (destroyed, or never made by "
                         "xdev_comm_init_all)",
                         (void *)comm);
    return XDEV_SUCCESS;
}

/* ---------------------------------------------------------------- the work */

static size_t elem(xdev_dtype_t dt) {
    return xdev_dtype_size(dt);
}

/* The n-th round of g, made on first arrival (g->m held). */
static round_t *round_of(group_t *g, uint64_t seq) {
    round_t **link = &g->rounds;
    for (; *link != NULL; link = &(*link)->next)
        if ((*link)->seq == seq) return *link;
    round_t *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->seq = seq;
    *link = r;
    return r;
}

static void set_async(group_t *g, xdev_status_t st, const char *msg) {
    if (g->async_status != XDEV_SUCCESS) return; /* the first one stays */
    g->async_status = st;
    snprintf(g->async_msg, sizeof g->async_msg, "%s", msg);
}

/* Do the ranks of a full round agree? Else the message (g->m held). */
static bool agree(const round_t *r, int n, char *msg, size_t len) {
    const task_t *a = r->task[0];
    for (int k = 1; k < n; k++) {
        const task_t *b = r->task[k];
        if (b->kind != a->kind || b->count != a->count || b->dtype != a->dtype ||
            (a->kind != K_BROADCAST && a->kind != K_ALL_GATHER && b->op != a->op) ||
            ((a->kind == K_BROADCAST || a->kind == K_REDUCE) && b->root != a->root)) {
            snprintf(msg, len,
                     "collective #%llu: rank 0 called %s(count %zu, dtype %d, op %d, root %d) "
                     "but rank %d called %s(count %zu, dtype %d, op %d, root %d); nothing was "
                     "written",
                     (unsigned long long)r->seq, g_kind_name[a->kind], a->count, (int)a->dtype,
                     (int)a->op, a->root, k, g_kind_name[b->kind], b->count, (int)b->dtype,
                     (int)b->op, b->root);
            return false;
        }
    }
    return true;
}

/* Every rank's output of a full round (called without g->m: the other
 * ranks wait for `done`, so nothing else touches these buffers). */
static void execute(round_t *r, int n) {
    const task_t *t0 = r->task[0];
    size_t count = t0->count, bytes = count * elem(t0->dtype);
    const void *srcs[MAX_RANKS];
    switch (t0->kind) {
    case K_ALL_REDUCE:
        for (int k = 0; k < n; k++)
            srcs[k] = r->task[k]->send;
        xdev_host_reduce(r->task[0]->recv, srcs, n, count, t0->dtype, t0->op);
        for (int k = 1; k < n; k++)
            memcpy(r->task[k]->recv, r->task[0]->recv, bytes);
        break;
    case K_REDUCE:
        for (int k = 0; k < n; k++)
            srcs[k] = r->task[k]->send;
        xdev_host_reduce(r->task[t0->root]->recv, srcs, n, count, t0->dtype, t0->op);
        break;
    case K_BROADCAST: {
        const void *src = r->task[t0->root]->send;
        for (int k = 0; k < n; k++)
            if (r->task[k]->recv != src) memmove(r->task[k]->recv, src, bytes);
        break;
    }
    case K_ALL_GATHER:
        for (int k = 0; k < n; k++)
            for (int j = 0; j < n; j++) {
                char *dst = (char *)r->task[k]->recv + (size_t)j * bytes;
                if (dst != r->task[j]->send) memmove(dst, r->task[j]->send, bytes);
            }
        break;
    case K_REDUCE_SCATTER: {
        /* into a scratch row first: a rank's recvbuf may be its sendbuf's part */
        void *tmp = malloc(bytes * (size_t)n + 1);
        if (tmp == NULL) return; /* no host memory: outputs stay as they were */
        for (int k = 0; k < n; k++) {
            for (int j = 0; j < n; j++)
                srcs[j] = (const char *)r->task[j]->send + (size_t)k * bytes;
            xdev_host_reduce((char *)tmp + (size_t)k * bytes, srcs, n, count, t0->dtype, t0->op);
        }
        for (int k = 0; k < n; k++)
            memcpy(r->task[k]->recv, (char *)tmp + (size_t)k * bytes, bytes);
        free(tmp);
        break;
    }
    }
}

/* A task is done: the rank counts one fewer and the task goes (g->m held). */
static void finish(task_t *t) {
    group_t *g = t->comm->g;
    t->comm->inflight--;
    pthread_cond_broadcast(&g->cv);
    free(t);
}

static void run_collective(task_t *t) {
    xdev_comm_t c = t->comm;
    group_t *g = c->g;
    int n = g->nranks;
    pthread_mutex_lock(&g->m);
    round_t *r = g->aborted ? NULL : round_of(g, t->seq);
    if (r == NULL) {
        if (!g->aborted) set_async(g, XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a collective");
        finish(t);
        pthread_mutex_unlock(&g->m);
        return;
    }
    r->task[c->rank] = t;
    if (++r->arrived == n) {
        char msg[256];
        if (agree(r, n, msg, sizeof msg)) {
            r->running = true;
            pthread_mutex_unlock(&g->m);
            execute(r, n);
            pthread_mutex_lock(&g->m);
            r->running = false;
        } else {
            set_async(g, XDEV_ERROR_INVALID_VALUE, msg);
        }
        r->done = true;
        pthread_cond_broadcast(&g->cv);
    }
    while (!r->done && (r->running || !g->aborted))
        pthread_cond_wait(&g->cv, &g->m);
    r->task[c->rank] = NULL;
    /* the last to leave frees the round; after an abort, ranks that have
     * not arrived never will */
    if (++r->left == r->arrived && (r->done || g->aborted)) {
        round_t **link = &g->rounds;
        while (*link != r)
            link = &(*link)->next;
        *link = r->next;
        free(r);
    }
    finish(t);
    pthread_mutex_unlock(&g->m);
}

static void run_p2p(task_t *t) {
    xdev_comm_t c = t->comm;
    group_t *g = c->g;
    size_t bytes = t->count * elem(t->dtype);
    if (t->is_send) { /* copy aside and go: the recv takes it */
        message_t *m = malloc(sizeof *m);
        void *data = m != NULL ? malloc(bytes + 1) : NULL;
        pthread_mutex_lock(&g->m);
        if (data == NULL) {
            free(m);
            set_async(g, XDEV_ERROR_OUT_OF_MEMORY, "no host memory to stage a send");
        } else {
            memcpy(data, t->send, bytes);
            *m = (message_t){c->rank, t->root, t->seq, t->count, t->dtype, data, g->messages};
            g->messages = m;
        }
        finish(t);
        pthread_mutex_unlock(&g->m);
        return;
    }
    pthread_mutex_lock(&g->m);
    for (;;) {
        message_t **link = &g->messages;
        while (*link != NULL &&
               !((*link)->src == t->root && (*link)->dst == c->rank && (*link)->seq == t->seq))
            link = &(*link)->next;
        if (*link != NULL) {
            message_t *m = *link;
            *link = m->next;
            if (m->count == t->count && m->dtype == t->dtype) {
                memcpy(t->recv, m->data, bytes);
            } else {
                char msg[256];
                snprintf(msg, sizeof msg,
                         "send #%llu from rank %d to rank %d carries %zu elements of dtype %d; "
                         "the recv asked for %zu of dtype %d: nothing was written",
                         (unsigned long long)m->seq, m->src, m->dst, m->count, (int)m->dtype,
                         t->count, (int)t->dtype);
                set_async(g, XDEV_ERROR_INVALID_VALUE, msg);
            }
            free(m->data);
            free(m);
            break;
        }
        if (g->aborted) break;
        pthread_cond_wait(&g->cv, &g->m);
    }
    finish(t);
    pthread_mutex_unlock(&g->m);
}

static void run_task(void *arg) {
    task_t *t = arg;
    if (t->p2p)
        run_p2p(t);
    else
        run_collective(t);
}

/* ---------------------------------------------------------------- calls */

/* The stream a rank's task goes on: `stream`, which must be on the rank's
 * device, or the device's current stream. */
static xdev_status_t rank_stream(xdev_comm_t c, xdev_stream_t *stream) {
    if (*stream == NULL) return xdev_core_current_stream(c->rec, stream);
    xdev_status_t st = xdev_stream_check(*stream, "stream");
    if (st != XDEV_SUCCESS) return st;
    if ((*stream)->rec != c->rec)
        return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                         "stream is on " XDEV_REC_FMT " but rank %d's device is " XDEV_REC_FMT,
                         XDEV_REC_ARGS((*stream)->rec), c->rank, XDEV_REC_ARGS(c->rec));
    return XDEV_SUCCESS;
}

/* buf must be live device memory of the rank's device holding `bytes`. */
static xdev_status_t rank_buffer(xdev_comm_t c, const void *buf, size_t bytes, const char *arg) {
    xdev_device_record_t *rec;
    xdev_status_t st = xdev_comm_buffer_device(buf, bytes, arg, -1, &rec);
    if (st == XDEV_SUCCESS && rec != c->rec)
        st = XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                       "%s (%p) is on " XDEV_REC_FMT " but rank %d's device is " XDEV_REC_FMT, arg,
                       buf, XDEV_REC_ARGS(rec), c->rank, XDEV_REC_ARGS(c->rec));
    return st;
}

static bool overlap(const void *a, size_t n, const void *b, size_t m) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return n > 0 && m > 0 && x < y + m && y < x + n;
}

/* Checks shared by every call, then the task queued on the rank's stream. */
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

/* A collective, send or recv (seq: its number between the pair) of a rank
 * in a shared-memory group, in its stream's host function. */
typedef struct shm_task {
    xdev_comm_t comm;
    xdev_collective_desc_t d;
    uint64_t seq;
} shm_task_t;

static void run_shm(void *arg) {
    shm_task_t *t = arg;
    group_t *g = t->comm->g;
    char err[256] = "";
    bool p2p = t->d.kind == XDEV_COLL_SEND || t->d.kind == XDEV_COLL_RECV;
    xdev_status_t st = p2p ? xdev_shm_p2p(t->comm->shm, &t->d, t->seq, err, sizeof err)
                           : xdev_shm_run(t->comm->shm, &t->d, err, sizeof err);
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
static xdev_status_t enqueue(xdev_comm_t c, const task_t *p, uint64_t *seq, xdev_stream_t stream,
                             void (*fn)(void *), void *t) {
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
                         "rank %d's group was aborted (xdev_comm_abort): destroy its ranks",
                         c->rank);
    }
    xdev_status_t st = xdev_core_launch_host_func(stream, fn, t);
    if (st != XDEV_SUCCESS) {
        pthread_mutex_lock(&g->m);
        c->inflight--;
        set_async(g, st, "an operation could not be enqueued: the group's ranks are out of step");
        pthread_mutex_unlock(&g->m);
        free(t);
    }
    return st;
}

static xdev_status_t submit_shm(const task_t *p, xdev_stream_t stream) {
    shm_task_t *t = malloc(sizeof *t);
    if (t == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a task");
    xdev_collective_kind_t kind =
        p->p2p ? (p->is_send ? XDEV_COLL_SEND : XDEV_COLL_RECV) : g_coll_kind[p->kind];
    *t = (shm_task_t){
        p->comm, {sizeof t->d, kind, p->send, p->recv, p->count, p->dtype, (int)p->op, p->root}, 0};
    return enqueue(p->comm, p, &t->seq, stream, run_shm, t);
}

static xdev_status_t submit(task_t *proto, xdev_stream_t stream) {
    xdev_comm_t c = proto->comm;
    xdev_status_t st = rank_stream(c, &stream);
    if (st != XDEV_SUCCESS) return st;
    if (c->native != NULL) return submit_native(proto, stream);
    if (c->shm != NULL) return submit_shm(proto, stream);
    task_t *t = malloc(sizeof *t);
    if (t == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a task");
    *t = *proto;
    return enqueue(c, proto, &t->seq, stream, run_task, t);
}

static xdev_status_t check_reduce_args(xdev_dtype_t dtype, xdev_reduce_op_t op) {
    if ((unsigned)op > XDEV_REDUCE_AVG)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "unknown reduction op %d", (int)op);
    if (!xdev_host_reduce_supports(dtype))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "dtype %s cannot be reduced (f16, bf16, f32, f64, i32, i64)",
                         xdev_dtype_name(dtype));
    return XDEV_SUCCESS;
}

static xdev_status_t check_dtype(xdev_dtype_t dtype) {
    if ((unsigned)dtype >= XDEV_DTYPE_COUNT)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "unknown dtype %d", (int)dtype);
    return XDEV_SUCCESS;
}

static xdev_status_t check_rank(xdev_comm_t c, int r, const char *what) {
    if (r < 0 || r >= c->g->nranks)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s %d is not a rank of 0..%d", what, r,
                         c->g->nranks - 1);
    return XDEV_SUCCESS;
}

/* count x dtype bytes, times `parts`, without overflow. */
static xdev_status_t span(size_t count, xdev_dtype_t dtype, size_t parts, size_t *out) {
    size_t e = elem(dtype);
    if (count > SIZE_MAX / e / parts)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "count %zu overflows the buffer size", count);
    *out = count * e * parts;
    return XDEV_SUCCESS;
}

/* The send/recv buffers of a collective: send_parts and recv_parts are the
 * buffers' sizes in units of count elements. */
static xdev_status_t buffers(xdev_comm_t c, const void *send, size_t send_parts, void *recv,
                             size_t recv_parts, size_t count, xdev_dtype_t dtype) {
    size_t sb = 0, rb = 0;
    xdev_status_t st = XDEV_SUCCESS;
    if (send_parts > 0) st = span(count, dtype, send_parts, &sb);
    if (st == XDEV_SUCCESS && recv_parts > 0) st = span(count, dtype, recv_parts, &rb);
    if (st == XDEV_SUCCESS && send_parts > 0) st = rank_buffer(c, send, sb, "sendbuf");
    if (st == XDEV_SUCCESS && recv_parts > 0) st = rank_buffer(c, recv, rb, "recvbuf");
    if (st == XDEV_SUCCESS && send_parts > 0 && recv_parts > 0 && send != recv &&
        overlap(send, sb, recv, rb))
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "sendbuf and recvbuf overlap without being the same buffer");
    return st;
}

static xdev_status_t collective(xdev_comm_t comm, kind_t kind, const void *send, void *recv,
                                size_t count, xdev_dtype_t dtype, xdev_reduce_op_t op, int root,
                                xdev_stream_t stream) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st == XDEV_SUCCESS) st = check_comm(comm);
    if (st == XDEV_SUCCESS) st = check_dtype(dtype);
    if (st != XDEV_SUCCESS) return st;
    int n = comm->g->nranks;
    bool reduces = kind == K_ALL_REDUCE || kind == K_REDUCE || kind == K_REDUCE_SCATTER;
    if (reduces) st = check_reduce_args(dtype, op);
    if (st == XDEV_SUCCESS && (kind == K_BROADCAST || kind == K_REDUCE))
        st = check_rank(comm, root, "root");
    if (st != XDEV_SUCCESS) return st;
    bool is_root = comm->rank == root;
    switch (kind) {
    case K_ALL_REDUCE:
        st = buffers(comm, send, 1, recv, 1, count, dtype);
        break;
    case K_BROADCAST:
        st = buffers(comm, send, is_root ? 1 : 0, recv, 1, count, dtype);
        break;
    case K_REDUCE:
        st = buffers(comm, send, 1, recv, is_root ? 1 : 0, count, dtype);
        break;
    case K_ALL_GATHER: /* in place: sendbuf is this rank's part of recvbuf */
        st = buffers(comm, NULL, 0, recv, (size_t)n, count, dtype);
        if (st == XDEV_SUCCESS) st = rank_buffer(comm, send, count * elem(dtype), "sendbuf");
        if (st == XDEV_SUCCESS && send != (char *)recv + (size_t)comm->rank * count * elem(dtype) &&
            overlap(send, count * elem(dtype), recv, (size_t)n * count * elem(dtype)))
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "sendbuf overlaps recvbuf other than as this rank's part of it");
        break;
    case K_REDUCE_SCATTER: /* in place: recvbuf is this rank's part of sendbuf */
        st = buffers(comm, send, (size_t)n, NULL, 0, count, dtype);
        if (st == XDEV_SUCCESS) st = rank_buffer(comm, recv, count * elem(dtype), "recvbuf");
        if (st == XDEV_SUCCESS &&
            recv != (const char *)send + (size_t)comm->rank * count * elem(dtype) &&
            overlap(recv, count * elem(dtype), send, (size_t)n * count * elem(dtype)))
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "recvbuf overlaps sendbuf other than as this rank's part of it "
                           "(sendbuf + rank * count elements, the in-place position)");
        break;
    }
    if (st != XDEV_SUCCESS) return st;
    task_t t = {comm, false, kind, send, recv, count, dtype, reduces ? op : XDEV_REDUCE_SUM,
                root, 0,     false};
    return submit(&t, stream);
}

xdev_status_t xdev_all_reduce(xdev_comm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                              xdev_dtype_t dtype, xdev_reduce_op_t op, xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_ALL_REDUCE, sendbuf, recvbuf, count, dtype, op, 0, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_broadcast(xdev_comm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                             xdev_dtype_t dtype, int root, xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_BROADCAST, sendbuf, recvbuf, count, dtype, XDEV_REDUCE_SUM, root,
                          stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_reduce(xdev_comm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                          xdev_dtype_t dtype, xdev_reduce_op_t op, int root, xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_REDUCE, sendbuf, recvbuf, count, dtype, op, root, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_all_gather(xdev_comm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                              xdev_dtype_t dtype, xdev_stream_t stream) {
    XDEV_CHECK(
        collective(comm, K_ALL_GATHER, sendbuf, recvbuf, count, dtype, XDEV_REDUCE_SUM, 0, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_reduce_scatter(xdev_comm_t comm, const void *sendbuf, void *recvbuf,
                                  size_t count, xdev_dtype_t dtype, xdev_reduce_op_t op,
                                  xdev_stream_t stream) {
    XDEV_CHECK(collective(comm, K_REDUCE_SCATTER, sendbuf, recvbuf, count, dtype, op, 0, stream));
    return XDEV_SUCCESS;
}

static xdev_status_t p2p(xdev_comm_t comm, bool is_send, const void *send, void *recv, size_t count,
                         xdev_dtype_t dtype, int peer, xdev_stream_t stream) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st == XDEV_SUCCESS) st = check_comm(comm);
    if (st == XDEV_SUCCESS) st = check_dtype(dtype);
    if (st == XDEV_SUCCESS) st = check_rank(comm, peer, "peer");
    if (st == XDEV_SUCCESS && peer == comm->rank)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "peer %d is this rank itself", peer);
    size_t bytes = 0;
    if (st == XDEV_SUCCESS) st = span(count, dtype, 1, &bytes);
    if (st == XDEV_SUCCESS)
        st = rank_buffer(comm, is_send ? send : recv, bytes, is_send ? "sendbuf" : "recvbuf");
    if (st != XDEV_SUCCESS) return st;
    task_t t = {comm, true, K_ALL_REDUCE, send, recv, count, dtype, XDEV_REDUCE_SUM,
                peer, 0,    is_send};
    return submit(&t, stream);
}

xdev_status_t xdev_send(xdev_comm_t comm, const void *sendbuf, size_t count, xdev_dtype_t dtype,
                        int peer, xdev_stream_t stream) {
    XDEV_CHECK(p2p(comm, true, sendbuf, NULL, count, dtype, peer, stream));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_recv(xdev_comm_t comm, void *recvbuf, size_t count, xdev_dtype_t dtype, int peer,
                        xdev_stream_t stream) {
    XDEV_CHECK(p2p(comm, false, NULL, recvbuf, count, dtype, peer, stream));
    return XDEV_SUCCESS;
}

/* ---------------------------------------------------------------- lifetime */

xdev_status_t xdev_comm_init_all(xdev_comm_t *comms, int n, const xdev_device_t *devices) {
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
    xdev_comm_t made[MAX_RANKS] = {0};
    bool ok = g != NULL;
    for (int i = 0; i < n && ok; i++)
        ok = (made[i] = calloc(1, sizeof *made[i])) != NULL;
    if (!ok) {
        for (int i = 0; i < n; i++) {
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

xdev_status_t xdev_comm_adopt(xdev_backend_t *be, xdev_device_record_t *rec, int nranks, int rank,
                              void *native, xdev_shm_group_t *shm, xdev_comm_t *out) {
    group_t *g = calloc(1, sizeof *g);
    xdev_comm_t c = g != NULL ? calloc(1, sizeof *c) : NULL;
    if (c == NULL) {
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
    c->shm = shm;
    pthread_mutex_lock(&g_live_lock);
    c->live_next = g_live;
    g_live = c;
    pthread_mutex_unlock(&g_live_lock);
    *out = c;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_destroy(xdev_comm_t comm) {
    XDEV_CHECK(check_comm(comm));
    pthread_mutex_lock(&g_live_lock); /* out of the registry first: no new call */
    xdev_comm_t *link = &g_live;
    while (*link != NULL && *link != comm)
        link = &(*link)->live_next;
    bool found = *link != NULL;
    if (found) *link = comm->live_next;
    pthread_mutex_unlock(&g_live_lock);
    if (!found) /* destroyed by another thread meanwhile */
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE, "comm %p was destroyed", (void *)comm);
    group_t *g = comm->g;
    pthread_mutex_lock(&g->m);
    while (comm->inflight > 0)
        pthread_cond_wait(&g->cv, &g->m);
    g->member[comm->slot] = NULL; /* abort no longer reaches it */
    bool last = --g->live == 0;
    pthread_mutex_unlock(&g->m);
    xdev_status_t st = XDEV_SUCCESS;
    if (comm->native != NULL) st = xdev_be_comm_destroy(g->be, comm->native);
    if (comm->shm != NULL) xdev_shm_leave(comm->shm);
    free(comm);
    if (last) {
        for (message_t *m = g->messages, *next; m != NULL; m = next) { /* never received */
            next = m->next;
            free(m->data);
            free(m);
        }
        for (round_t *r = g->rounds, *next; r != NULL; r = next) {
            next = r->next;
            free(r);
        }
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->m);
        free(g);
    }
    XDEV_CHECK(st); /* the backend's failure, reported once the rank is gone */
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_abort(xdev_comm_t comm) {
    XDEV_CHECK(check_comm(comm));
    group_t *g = comm->g;
    pthread_mutex_lock(&g->m);
    g->aborted = true;
    set_async(g, XDEV_ERROR_INVALID_VALUE, "the group was aborted (xdev_comm_abort)");
    pthread_cond_broadcast(&g->cv);
    void *natives[MAX_RANKS];
    int nn = 0;
    for (int i = 0; i < g->nmembers; i++)
        if (g->member[i] != NULL && g->member[i]->native != NULL)
            natives[nn++] = g->member[i]->native;
    pthread_mutex_unlock(&g->m);
    for (int i = 0; i < nn; i++) /* every rank, as the group is aborted */
        (void)xdev_be_comm_abort(g->be, natives[i]);
    if (comm->shm != NULL) xdev_shm_abort(comm->shm); /* the other processes see it too */
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_check(xdev_comm_t comm) {
    XDEV_CHECK(check_comm(comm));
    group_t *g = comm->g;
    pthread_mutex_lock(&g->m);
    xdev_status_t st = g->async_status;
    char msg[sizeof g->async_msg];
    memcpy(msg, g->async_msg, sizeof msg);
    pthread_mutex_unlock(&g->m);
    if (st != XDEV_SUCCESS) return XDEV_API_FAIL(st, "%s", msg);
    if (comm->native != NULL) XDEV_CHECK(xdev_be_comm_async_error(g->be, comm->native));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_rank(xdev_comm_t comm, int *rank) {
    XDEV_REQUIRE_ARG(rank);
    XDEV_CHECK(check_comm(comm));
    *rank = comm->rank;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_size(xdev_comm_t comm, int *nranks) {
    XDEV_REQUIRE_ARG(nranks);
    XDEV_CHECK(check_comm(comm));
    *nranks = comm->g->nranks;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_device(xdev_comm_t comm, xdev_device_t *device) {
    XDEV_REQUIRE_ARG(device);
    XDEV_CHECK(check_comm(comm));
    *device = comm->rec->id;
    return XDEV_SUCCESS;
}
