/* SPDX-License-Identifier: Apache-2.0 */
/* host_collectives.c - the host-memory collective engine: the ranks of a
 * group made by xdev_communicator_init_all on a backend whose device memory the
 * host addresses (the CPU backend), all in this process.
 *
 * communicator.c queues each call as a host function on the rank's stream
 * (xdev_host_comm_run). When the stream reaches it, a collective joins its
 * "round" (the n-th collective of the group, n counted per rank at the
 * call): the last rank to arrive checks that all agree, computes every
 * rank's output, and wakes the others, which have waited on the group's
 * condition variable. A send copies its data aside (a message) when its
 * stream reaches it and returns; the matching recv (the n-th between that
 * pair) waits for the copy. Abort wakes every waiter; their outputs stay as
 * they were. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_record.h"
#include "comm/host_reduce.h"

static const char *const g_kind_name[] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                          "reduce_scatter"};

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
    size_t count = t0->count, bytes = count * xdev_dtype_size(t0->dtype);
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
    xdev_communicator_t c = t->comm;
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
    xdev_communicator_t c = t->comm;
    group_t *g = c->g;
    size_t bytes = t->count * xdev_dtype_size(t->dtype);
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

void xdev_host_comm_run(void *arg) {
    task_t *t = arg;
    if (t->p2p)
        run_p2p(t);
    else
        run_collective(t);
}

void xdev_host_comm_release(group_t *g) {
    for (message_t *m = g->messages, *next; m != NULL; m = next) { /* never received */
        next = m->next;
        free(m->data);
        free(m);
    }
    for (round_t *r = g->rounds, *next; r != NULL; r = next) {
        next = r->next;
        free(r);
    }
}
