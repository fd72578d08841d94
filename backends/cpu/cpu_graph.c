/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_graph.c - graphs on the CPU backend (the graph table).
 *
 * Capture: a capturing stream's queue appends its ops to the graph instead
 * of running them (cpu_queue.c's push). Jobs (XDEV_CPU_OP_JOB: GEMM, FFT,
 * fills, conversions, random fills, kernels) keep their descriptor until
 * the graph is destroyed, so a replay runs them again without any of the
 * checks or allocations of the calls that made them. Event records on a
 * capturing stream are not queued: the event remembers (graph, stream,
 * the number of the record in the capture), and a wait on it forks the
 * waiting stream into the capture or, on a stream already in it, joins what
 * the record covered. Every dependency points to an op recorded earlier, so the
 * order of recording is a valid order of execution: a replay is one job on
 * the replay stream that runs the graph's ops in that order (kernels still
 * spread their blocks over the device's worker pool). Replays of one graph
 * run one at a time in launch order, as CUDA orders the launches of one
 * executable graph.
 *
 * Joins. Each stream of the capture keeps a vector clock: its own position
 * (the ops it recorded) and, for every other
 * member, how far of that member's position its order covers. A record
 * snapshots the recorder's vector; a wait merges the snapshot into the
 * waiter's. capture_end requires the origin's vector to cover every forked
 * stream's position: work joined only into another fork reaches the origin
 * only through that fork's own join (CUDA's cudaErrorStreamCaptureUnjoined
 * otherwise). A fork with no work has nothing to cover, as on CUDA, where
 * such a stream's dependencies are already the capturing stream's past. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

#define MAX_MEMBERS 64

typedef struct member {
    xdev_cpu_stream_t *s;
    uint64_t pos;               /* its ops: what the origin must cover */
    uint64_t seen[MAX_MEMBERS]; /* of each member's pos, how much this one's order covers */
} member_t;

/* A record in the capture: the recorder's vector, its own position included. */
typedef struct snap {
    int n;
    uint64_t v[];
} snap_t;

typedef struct xdev_cpu_graph {
    uint64_t id;
    int device;
    pthread_mutex_t mu; /* nodes and members while capturing (taken inside a stream's mu) */
    xdev_cpu_op_t *nodes;
    size_t n, cap;
    member_t members[MAX_MEMBERS]; /* [0]: the origin */
    int nmembers;
    snap_t **snaps; /* the records, numbered from 1 in the events */
    size_t nsnaps, capsnaps;
    xdev_status_t failed; /* an op that could not be recorded */
    char why[256];
    /* Replays run one at a time, in the order they were launched (as CUDA
     * orders the launches of one executable graph): a launch takes a
     * ticket, a replay waits under run_mu until its ticket is served. */
    pthread_mutex_t run_mu;
    pthread_cond_t run_cv;
    uint64_t tickets, serving; /* under run_mu */
} xdev_cpu_graph_t;

typedef struct replay {
    xdev_cpu_graph_t *g;
    uint64_t ticket;
} replay_t;

/* Captures under way, by id, for events that outlive them. */
static pthread_mutex_t g_active_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_cpu_graph_t *g_active[256];
static _Atomic uint64_t g_next_id = 1;

static void fail_locked(xdev_cpu_graph_t *g, xdev_status_t st, const char *why) {
    if (g->failed != XDEV_SUCCESS) return;
    g->failed = st;
    snprintf(g->why, sizeof g->why, "%s", why);
}

static member_t *member_of(xdev_cpu_graph_t *g, const xdev_cpu_stream_t *s) {
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i].s == s) return &g->members[i];
    return NULL;
}

void xdev_cpu_graph_append(xdev_cpu_stream_t *s, const xdev_cpu_op_t *op) {
    xdev_cpu_graph_t *g = atomic_load_explicit(&s->capture, memory_order_relaxed);
    pthread_mutex_lock(&g->mu);
    if (op->kind == XDEV_CPU_OP_FREE) {
        fail_locked(g, XDEV_ERROR_CAPTURE, "a stream-ordered free cannot be recorded");
    } else if (op->kind == XDEV_CPU_OP_RECORD || op->kind == XDEV_CPU_OP_WAIT) {
        fail_locked(g, XDEV_ERROR_INTERNAL, "an event op reached the capture");
    } else {
        if (g->n == g->cap) {
            size_t cap = g->cap ? 2 * g->cap : 64;
            xdev_cpu_op_t *grown = realloc(g->nodes, cap * sizeof *grown);
            if (grown == NULL) {
                fail_locked(g, XDEV_ERROR_OUT_OF_MEMORY, "out of host memory for the graph's ops");
                if (op->kind == XDEV_CPU_OP_JOB) op->u.job.release(op->u.job.user);
                pthread_mutex_unlock(&g->mu);
                return;
            }
            g->nodes = grown;
            g->cap = cap;
        }
        g->nodes[g->n] = *op;
        g->nodes[g->n].next = NULL;
        g->n++;
        member_t *m = member_of(g, s);
        if (m != NULL) m->pos++;
    }
    pthread_mutex_unlock(&g->mu);
}

/* Snapshot m's vector (g->mu held): the record's number, 0 when out of memory. */
static uint64_t snap_add(xdev_cpu_graph_t *g, const member_t *m) {
    if (g->nsnaps == g->capsnaps) {
        size_t cap = g->capsnaps ? 2 * g->capsnaps : 16;
        snap_t **grown = realloc(g->snaps, cap * sizeof *grown);
        if (grown == NULL) return 0;
        g->snaps = grown;
        g->capsnaps = cap;
    }
    int n = g->nmembers;
    snap_t *sn = malloc(sizeof *sn + (size_t)n * sizeof sn->v[0]);
    if (sn == NULL) return 0;
    sn->n = n;
    memcpy(sn->v, m->seen, (size_t)n * sizeof sn->v[0]);
    sn->v[m - g->members] = m->pos;
    g->snaps[g->nsnaps++] = sn;
    return g->nsnaps;
}

/* m's order now covers record `no` (g->mu held). */
static void snap_merge(xdev_cpu_graph_t *g, member_t *m, uint64_t no) {
    if (no == 0 || no > g->nsnaps) return;
    const snap_t *sn = g->snaps[no - 1];
    for (int j = 0; j < sn->n; j++)
        if (sn->v[j] > m->seen[j]) m->seen[j] = sn->v[j];
}

/* The capture `id` while it is under way (g_active_lock held). */
static xdev_cpu_graph_t *active_find(uint64_t id) {
    for (size_t i = 0; i < sizeof g_active / sizeof g_active[0]; i++)
        if (g_active[i] != NULL && g_active[i]->id == id) return g_active[i];
    return NULL;
}

xdev_status_t xdev_cpu_graph_record(xdev_cpu_stream_t *s, xdev_cpu_event_t *e) {
    pthread_mutex_lock(&s->mu);
    xdev_cpu_graph_t *g = atomic_load_explicit(&s->capture, memory_order_relaxed);
    if (g != NULL) {
        pthread_mutex_lock(&g->mu);
        member_t *m = member_of(g, s);
        uint64_t no = m != NULL ? snap_add(g, m) : 0;
        if (no == 0) fail_locked(g, XDEV_ERROR_OUT_OF_MEMORY, "out of host memory for a record");
        pthread_mutex_unlock(&g->mu);
        xdev_cpu_event_set_captured(e, g->id, s, no);
    }
    pthread_mutex_unlock(&s->mu);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_cpu_graph_wait(xdev_cpu_stream_t *s, xdev_cpu_event_t *e, bool *handled) {
    const xdev_cpu_stream_t *es = NULL;
    uint64_t no = 0; /* the record's number in its capture */
    uint64_t eid = xdev_cpu_event_captured(e, &es, &no);
    xdev_cpu_graph_t *sg = atomic_load_explicit(&s->capture, memory_order_acquire);
    *handled = eid != 0 || sg != NULL;
    if (!*handled) return XDEV_SUCCESS;
    pthread_mutex_lock(&g_active_lock);
    xdev_cpu_graph_t *g = eid != 0 ? active_find(eid) : NULL;
    xdev_status_t st = XDEV_SUCCESS;
    if (eid != 0 && g == NULL) {
        /* recorded in a capture that has ended: nothing ran, nothing to wait for */
    } else if (g == NULL) {
        st = xdev_cpu_error(XDEV_ERROR_CAPTURE,
                            "cpu:%d: a capturing stream cannot wait on an event recorded "
                            "outside the capture",
                            s->device);
    } else if (sg != NULL && sg != g) {
        st = xdev_cpu_error(XDEV_ERROR_CAPTURE,
                            "cpu:%d: a stream capturing one graph cannot wait on another's work",
                            s->device);
    } else {
        pthread_mutex_lock(&s->mu);
        pthread_mutex_lock(&g->mu);
        if (sg == NULL) { /* a fork: s records into g from now on */
            if (g->nmembers == MAX_MEMBERS) {
                st = xdev_cpu_error(XDEV_ERROR_CAPTURE,
                                    "cpu:%d: a capture may span at most %d streams", s->device,
                                    MAX_MEMBERS);
            } else {
                member_t *m = &g->members[g->nmembers++];
                memset(m, 0, sizeof *m);
                m->s = s;
                snap_merge(g, m, no);
                atomic_store_explicit(&s->capture, g, memory_order_release);
            }
        } else { /* a join: s's order now covers what the record covered */
            member_t *m = member_of(g, s);
            if (m != NULL) snap_merge(g, m, no);
        }
        pthread_mutex_unlock(&g->mu);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&g_active_lock);
    return st;
}

/* ------------------------------------------------------------ the slots */

static xdev_status_t graph_capture_begin(xdev_cpu_device_t *dev, void *stream, int mode) {
    (void)mode; /* the core applies the mode's rule */
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(dev->index, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    xdev_cpu_graph_t *g = calloc(1, sizeof *g);
    if (g == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d: no host memory for a graph",
                              dev->index);
    g->id = atomic_fetch_add(&g_next_id, 1);
    g->device = dev->index;
    pthread_mutex_init(&g->mu, NULL);
    pthread_mutex_init(&g->run_mu, NULL);
    pthread_cond_init(&g->run_cv, NULL);
    g->members[0].s = s;
    g->nmembers = 1;
    pthread_mutex_lock(&g_active_lock);
    size_t slot = 0;
    while (slot < sizeof g_active / sizeof g_active[0] && g_active[slot] != NULL)
        slot++;
    pthread_mutex_lock(&s->mu);
    if (atomic_load_explicit(&s->capture, memory_order_relaxed) != NULL)
        st = xdev_cpu_error(XDEV_ERROR_CAPTURE, "cpu:%d: the stream is already capturing",
                            dev->index);
    else if (slot == sizeof g_active / sizeof g_active[0])
        st = xdev_cpu_error(XDEV_ERROR_CAPTURE, "cpu:%d: too many captures under way (%zu)",
                            dev->index, slot);
    if (st == XDEV_SUCCESS) {
        g_active[slot] = g;
        atomic_store_explicit(&s->capture, g, memory_order_release);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&g_active_lock);
    if (st != XDEV_SUCCESS) {
        pthread_mutex_destroy(&g->mu);
        pthread_mutex_destroy(&g->run_mu);
        pthread_cond_destroy(&g->run_cv);
        free(g);
    }
    return st;
}

static void graph_free(xdev_cpu_graph_t *g) {
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i].kind == XDEV_CPU_OP_JOB) g->nodes[i].u.job.release(g->nodes[i].u.job.user);
    free(g->nodes);
    for (size_t i = 0; i < g->nsnaps; i++)
        free(g->snaps[i]);
    free(g->snaps);
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->run_mu);
    pthread_cond_destroy(&g->run_cv);
    free(g);
}

static xdev_status_t graph_capture_end(xdev_cpu_device_t *dev, void *stream, void **graph) {
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(dev->index, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    xdev_cpu_graph_t *g = atomic_load_explicit(&s->capture, memory_order_acquire);
    if (g == NULL)
        return xdev_cpu_error(XDEV_ERROR_CAPTURE, "cpu:%d: the stream is not capturing",
                              dev->index);
    if (g->members[0].s != s)
        return xdev_cpu_error(XDEV_ERROR_CAPTURE,
                              "cpu:%d: capture_end on a stream forked into the capture; end it "
                              "on the stream that began it",
                              dev->index);
    pthread_mutex_lock(&g_active_lock);
    for (size_t i = 0; i < sizeof g_active / sizeof g_active[0]; i++)
        if (g_active[i] == g) g_active[i] = NULL;
    pthread_mutex_unlock(&g_active_lock);
    /* stop every member from recording (a stream's lock, then the graph's) */
    for (int i = 0; i < g->nmembers; i++) {
        xdev_cpu_stream_t *m = g->members[i].s;
        pthread_mutex_lock(&m->mu);
        atomic_store_explicit(&m->capture, NULL, memory_order_release);
        pthread_mutex_unlock(&m->mu);
    }
    int unjoined = 0;
    for (int i = 1; i < g->nmembers; i++)
        if (g->members[0].seen[i] < g->members[i].pos) unjoined++;
    if (g->failed != XDEV_SUCCESS) {
        st = xdev_cpu_error(g->failed, "cpu:%d: the capture failed: %s", dev->index, g->why);
    } else if (unjoined > 0) {
        st = xdev_cpu_error(XDEV_ERROR_CAPTURE,
                            "cpu:%d: %d stream(s) forked into the capture did not join back to "
                            "the capturing stream (CUDA's cudaErrorStreamCaptureUnjoined): record "
                            "an event on each after its last work and "
                            "wait on it from the capturing stream, directly or through a stream "
                            "that joins it, before capture_end",
                            dev->index, unjoined);
    }
    if (st != XDEV_SUCCESS) {
        graph_free(g);
        return st;
    }
    *graph = g;
    return XDEV_SUCCESS;
}

/* One replay, on the replay stream's worker, once the replays launched
 * before it have run. */
static void replay_run(void *arg) {
    const replay_t *r = arg;
    xdev_cpu_graph_t *g = r->g;
    pthread_mutex_lock(&g->run_mu);
    while (g->serving != r->ticket)
        pthread_cond_wait(&g->run_cv, &g->run_mu);
    for (size_t i = 0; i < g->n; i++)
        (void)xdev_cpu_op_exec(&g->nodes[i], g->device); /* append records nothing else */
    g->serving++;
    pthread_cond_broadcast(&g->run_cv);
    pthread_mutex_unlock(&g->run_mu);
}

/* After the run, or instead of it when the queue drops the job at process
 * exit: a dropped replay still serves its ticket (when it is next), so no
 * later replay waits for it. The graph outlives its replays (the core
 * synchronizes before destroy). */
static void replay_release(void *arg) {
    replay_t *r = arg;
    xdev_cpu_graph_t *g = r->g;
    pthread_mutex_lock(&g->run_mu);
    if (g->serving == r->ticket) {
        g->serving++;
        pthread_cond_broadcast(&g->run_cv);
    }
    pthread_mutex_unlock(&g->run_mu);
    free(r);
}

static xdev_status_t graph_launch(xdev_cpu_device_t *dev, void *graph, void *stream) {
    xdev_cpu_graph_t *g = graph;
    if (g->device != dev->index)
        return xdev_cpu_error(XDEV_ERROR_CROSS_DEVICE, "cpu:%d: the graph belongs to cpu:%d",
                              dev->index, g->device);
    replay_t *r = malloc(sizeof *r);
    if (r == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d: no host memory for a replay",
                              dev->index);
    r->g = g;
    pthread_mutex_lock(&g->run_mu); /* tickets in launch order */
    r->ticket = g->tickets;
    xdev_status_t st =
        xdev_cpu_stream_enqueue_job(dev->index, stream, replay_run, replay_release, r);
    if (st == XDEV_SUCCESS) g->tickets++;
    pthread_mutex_unlock(&g->run_mu);
    if (st != XDEV_SUCCESS) free(r);
    return st;
}

static xdev_status_t graph_destroy(xdev_cpu_device_t *dev, void *graph) {
    (void)dev;
    if (graph != NULL) graph_free(graph);
    return XDEV_SUCCESS;
}

const xdev_graph_vtable_t xdev_cpu_graph_vtable = {
    .size = sizeof(xdev_graph_vtable_t),
    .capture_begin = graph_capture_begin,
    .capture_end = graph_capture_end,
    .launch = graph_launch,
    .destroy = graph_destroy,
};
