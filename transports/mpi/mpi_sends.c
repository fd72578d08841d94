/* SPDX-License-Identifier: Apache-2.0 */
/* mpi_sends.c - sends of the MPI transport that outlive their call: each
 * holds a copy of its data until MPI has delivered it. MPI moves a large
 * message on only while some thread is inside an MPI call in the sending
 * process; a sender that has moved on to other work would leave its
 * receiver waiting. So, with MPI_THREAD_MULTIPLE, a thread tests the sends
 * in flight every 100 us while there are any, and ends when none is left;
 * with a lower thread level the transport's next call tests them instead. */
#define _GNU_SOURCE /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_internal.h"

typedef struct pending {
    struct pending *next;
    void *buf;
    int n;
    MPI_Request reqs[];
} pending_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_t *g_list;
/* The mover: `running` while it has sends to move (it ends when none is
 * left, so no xdev thread is in MPI once every group has left); `joinable`
 * until it has been joined; `stopped` for good at exit. */
static bool g_running, g_joinable, g_stopped;
static pthread_t g_thread;

/* Drop the sends of g_list that have completed (g_lock held); true when
 * none is left. An MPI error is the receiver's to report: the send is let
 * go (its buffer stays, MPI may hold it). */
static bool poll_locked(void) {
    for (pending_t **link = &g_list; *link != NULL;) {
        pending_t *p = *link;
        int done = 0;
        xm_lock();
        int rc = MPI_Testall(p->n, p->reqs, &done, MPI_STATUSES_IGNORE);
        xm_unlock();
        if (done || rc != MPI_SUCCESS) {
            *link = p->next;
            if (done) free(p->buf);
            free(p);
        } else {
            link = &p->next;
        }
    }
    return g_list == NULL;
}

static void *mover(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_lock);
    while (!g_stopped && !poll_locked()) {
        pthread_mutex_unlock(&g_lock);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&g_lock);
    }
    g_running = false;
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

/* Join a mover that has ended (g_lock held; it takes no lock on its way out
 * once g_running is false). */
static void reap_locked(void) {
    if (g_joinable && !g_running) {
        pthread_join(g_thread, NULL);
        g_joinable = false;
    }
}

xdev_status_t xm_sends_add(MPI_Request *reqs, int n, void *buf, char *err, size_t errlen) {
    pending_t *p = malloc(sizeof *p + (size_t)n * sizeof *reqs);
    if (p == NULL) { /* MPI delivers them without us: let go of the requests, keep buf */
        (void)err;
        (void)errlen;
        xm_lock();
        for (int i = 0; i < n; i++)
            MPI_Request_free(&reqs[i]);
        xm_unlock();
        return XDEV_SUCCESS;
    }
    p->buf = buf;
    p->n = n;
    memcpy(p->reqs, reqs, (size_t)n * sizeof *reqs);
    int level = MPI_THREAD_SINGLE;
    xm_lock();
    MPI_Query_thread(&level);
    xm_unlock();
    pthread_mutex_lock(&g_lock);
    p->next = g_list;
    g_list = p;
    if (level >= MPI_THREAD_MULTIPLE && !g_running && !g_stopped) {
        reap_locked();
        g_running = g_joinable = pthread_create(&g_thread, NULL, mover, NULL) == 0;
    }
    pthread_mutex_unlock(&g_lock);
    return XDEV_SUCCESS;
}

void xm_sends_poll(void) {
    pthread_mutex_lock(&g_lock);
    (void)poll_locked();
    pthread_mutex_unlock(&g_lock);
}

bool xm_sends_drain(long long deadline_ms) {
    for (;;) {
        pthread_mutex_lock(&g_lock);
        bool empty = poll_locked();
        pthread_mutex_unlock(&g_lock);
        if (empty) return true;
        if (xm_now_ms() >= deadline_ms) return false;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

bool xm_sends_quiesce(long long deadline_ms) {
    for (;;) {
        pthread_mutex_lock(&g_lock);
        bool busy = g_running;
        if (!busy) reap_locked();
        pthread_mutex_unlock(&g_lock);
        if (!busy) return true;
        if (xm_now_ms() >= deadline_ms) return false;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

void xm_sends_stop(void) {
    pthread_mutex_lock(&g_lock);
    g_stopped = true; /* the mover ends at its next look */
    pthread_mutex_unlock(&g_lock);
    (void)xm_sends_quiesce(xm_now_ms() + 10000);
}
