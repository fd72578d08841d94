/* SPDX-License-Identifier: Apache-2.0 */
/* watchdog.c - a backend rank's collectives must finish in time (torch's
 * ProcessGroupNCCL watchdog, in C).
 *
 * A collective that a peer never joins - the peer died, hangs, or took
 * another path - holds the rank's stream forever: NCCL waits in a kernel.
 * Each collective of a backend rank (NCCL) records an event after it on its
 * stream; one thread, started with the first, looks at every watched rank
 * twice a second. Work pending longer than the timeout (XDEV_COMM_TIMEOUT
 * seconds, else 600, torch's default for NCCL), or an asynchronous error
 * the backend reports (ncclCommGetAsyncError: a peer lost over the
 * network), aborts the rank's group: the backend ranks are aborted (their
 * kernels return, the streams drain), xdev_communicator_check and every
 * later call of the group fail with a message saying which collective of
 * which rank timed out. Work recorded in a capture is not watched (it runs
 * at replay). Host-memory communicators have their own deadline
 * (shm_comm.c, host_collectives.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "comm/comm_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"
#include "xdev/event.h"

#define DEFAULT_NATIVE_TIMEOUT_S 600
#define TICK_MS 500

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_idle = PTHREAD_COND_INITIALIZER; /* g_busy went false */
static bool g_busy; /* aborting groups without the lock: destroys wait */
static xdev_communicator_t *g_watched;
static int g_n, g_cap;
static bool g_started, g_stop;
static pthread_t g_thread;
static int g_timeout_s;

/* A group to abort, decided under g_lock and done after it is released. */
typedef struct verdict {
    group_t *g;
    xdev_status_t status;
    char msg[320];
} verdict_t;
#define VERDICTS_MAX 16 /* per look; more wait for the next */

/* One look at c (g_lock held): its group must be aborted (*v filled, true)
 * when its oldest collective still running (or an enqueue under way) is
 * older than the timeout, or when the backend reports an error. A rank
 * that keeps queueing collectives that each finish is never overdue: each
 * is timed from its own enqueue. */
static bool look(xdev_communicator_t c, long long now, verdict_t *v) {
    group_t *g = c->g;
    char *msg = v->msg;
    const size_t msg_len = sizeof v->msg;
    v->g = g;
    long long oldest = c->wd_enqueuing > 0 ? c->wd_enqueue_ms : 0;
    int which = -1;
    for (int i = 0; i < XDEV_WD_RING; i++) {
        if (c->wd_at[i] == 0) continue;
        if (xdev_be_event_query(c->rec, c->wd_event[i]) != XDEV_ERROR_NOT_READY) {
            c->wd_at[i] = 0; /* finished (or failed: the backend says so elsewhere) */
            continue;
        }
        if (oldest == 0 || c->wd_at[i] < oldest) {
            oldest = c->wd_at[i];
            which = i;
        }
    }
    if (oldest != 0 && now - oldest > g_timeout_s * 1000LL) {
        if (which >= 0)
            snprintf(msg, msg_len,
                     "rank %d of %d: %s (collective %llu of this rank) did not finish within %d s "
                     "(XDEV_COMM_TIMEOUT): another rank died, hangs or never called it; the "
                     "group was aborted",
                     c->rank, g->nranks, c->wd_what[which], (unsigned long long)c->wd_seq[which],
                     g_timeout_s);
        else
            snprintf(msg, msg_len,
                     "rank %d of %d: enqueuing a collective took more than %d s "
                     "(XDEV_COMM_TIMEOUT; the backend waits there for its peers to connect): "
                     "another rank died, hangs or never called it; the group was aborted",
                     c->rank, g->nranks, g_timeout_s);
        for (int i = 0; i < XDEV_WD_RING; i++)
            c->wd_at[i] = 0;
        c->wd_enqueue_ms = 0;
        v->status = XDEV_ERROR_IO;
        return true;
    }
    pthread_mutex_lock(&g->m);
    bool aborted = g->aborted;
    pthread_mutex_unlock(&g->m);
    if (c->native != NULL && XDEV_HAS(g->be, comm, async_error) && !aborted &&
        xdev_be_comm_async_error(g->be, c->native) != XDEV_SUCCESS) {
        snprintf(msg, msg_len, "rank %d of %d: %s; the group was aborted", c->rank, g->nranks,
                 xdev_last_error());
        v->status = XDEV_ERROR_BACKEND;
        return true;
    }
    return false;
}

static void *watch_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_lock);
    while (!g_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_wake, &g_lock, &until);
        long long now = xdev_comm_now_ms();
        static verdict_t v[VERDICTS_MAX]; /* this thread's only */
        int nv = 0;
        for (int i = 0; i < g_n && !g_stop && nv < VERDICTS_MAX; i++) {
            if (!look(g_watched[i], now, &v[nv])) continue;
            bool seen = false; /* one abort per group */
            for (int j = 0; j < nv; j++)
                seen |= v[j].g == v[nv].g;
            if (!seen) nv++;
        }
        if (nv == 0) continue;
        /* Abort without the lock (it can take a while; other ranks' calls
         * go on), while destroys wait (xdev_comm_watch_forget). */
        g_busy = true;
        pthread_mutex_unlock(&g_lock);
        for (int j = 0; j < nv; j++)
            xdev_comm_abort_group(v[j].g, v[j].status, v[j].msg);
        pthread_mutex_lock(&g_lock);
        g_busy = false;
        pthread_cond_broadcast(&g_idle);
    }
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

/* At exit, before the backends' runtimes go (registered after them). */
static void stop_watch(void) {
    pthread_mutex_lock(&g_lock);
    g_stop = true;
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_lock);
    pthread_join(g_thread, NULL);
}

/* The timeout and the thread, on the first collective watched (g_lock
 * held). A malformed XDEV_COMM_TIMEOUT failed the collective's own checks
 * already on host-memory backends; here it falls back to the default. */
static bool start(void) {
    if (g_started) return true;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    if (xdev_comm_timeout_s(DEFAULT_NATIVE_TIMEOUT_S, &g_timeout_s) != XDEV_SUCCESS)
        g_timeout_s = DEFAULT_NATIVE_TIMEOUT_S;
    xdev_core_error_restore(&saved);
    if (pthread_create(&g_thread, NULL, watch_main, NULL) != 0) return false;
    g_started = true;
    atexit(stop_watch);
    return true;
}

/* The enqueue itself may wait for a peer (NCCL connects lazily, at a
 * rank's first collective with each peer): a rank counts as pending from
 * the moment it starts enqueuing (wd_enqueuing > 0), so a call stuck there
 * is aborted as well. Collectives issued inside a group are enqueued by
 * NCCL at the outermost group end: they stay "enqueuing" until then
 * (xdev_comm_watch_flush), and their event is recorded there. */
#define PENDING_MAX 64
typedef struct pending {
    xdev_communicator_t c;
    xdev_stream_t s;
    const char *what;
} pending_t;
static _Thread_local pending_t *tls_pending; /* heap: libxdev's TLS stays small (tls.*) */
static _Thread_local int tls_npending;

/* Before submitting a collective of c (g_lock not held). */
bool xdev_comm_watch_begin(xdev_communicator_t c, xdev_stream_t s) {
    if (atomic_load_explicit(&s->capture, memory_order_acquire) != NULL) return false;
    if (xdev_comm_group_depth() > 0 && tls_npending == PENDING_MAX) return false; /* unwatched */
    pthread_mutex_lock(&g_lock);
    bool ok = start();
    if (ok && !c->wd_listed) {
        if (g_n == g_cap) {
            int cap = g_cap ? 2 * g_cap : 8;
            xdev_communicator_t *w = realloc(g_watched, (size_t)cap * sizeof *w);
            if (w != NULL) {
                g_watched = w;
                g_cap = cap;
            }
        }
        ok = g_n < g_cap;
        if (ok) {
            g_watched[g_n++] = c;
            c->wd_listed = true;
        }
    }
    if (ok && c->wd_enqueuing++ == 0) c->wd_enqueue_ms = xdev_comm_now_ms();
    pthread_mutex_unlock(&g_lock);
    return ok;
}

/* The enqueue of a watched collective ended (ok: it was enqueued on s):
 * record the event after it (g_lock held). */
static void end_locked(xdev_communicator_t c, xdev_stream_t s, const char *what, bool ok) {
    if (--c->wd_enqueuing == 0) c->wd_enqueue_ms = 0;
    if (!ok) return;                           /* nothing was enqueued */
    int k = (int)(c->wd_count % XDEV_WD_RING); /* overwrites the oldest: timed from later */
    if (c->wd_event[k] == NULL &&
        xdev_be_event_create(s->rec, XDEV_EVENT_DEFAULT, &c->wd_event[k]) != XDEV_SUCCESS) {
        c->wd_event[k] = NULL;
        return;
    }
    c->wd_count++;
    if (xdev_be_event_record(s->rec, c->wd_event[k], s->native) == XDEV_SUCCESS) {
        c->wd_at[k] = xdev_comm_now_ms();
        c->wd_what[k] = what;
        c->wd_seq[k] = c->wd_count;
    } else {
        c->wd_at[k] = 0; /* cannot tell when it ends: not timed */
    }
}

void xdev_comm_watch_end(xdev_communicator_t c, xdev_stream_t s, const char *what, bool ok) {
    if (ok && xdev_comm_group_depth() > 0) { /* enqueued at the group's end */
        if (tls_pending == NULL) {
            tls_pending = malloc(PENDING_MAX * sizeof *tls_pending);
            (void)xdev_thread_state(); /* so that thread_exit runs (runtime/hooks.h) */
        }
        if (tls_pending != NULL) {
            tls_pending[tls_npending++] = (pending_t){c, s, what};
            return;
        }
        ok = false; /* no memory to hold it: stop watching it */
    }
    xdev_error_state_t saved; /* watching never fails the call */
    xdev_core_error_save(&saved);
    pthread_mutex_lock(&g_lock);
    end_locked(c, s, what, ok);
    pthread_mutex_unlock(&g_lock);
    xdev_core_error_restore(&saved);
}

void xdev_comm_watch_flush(bool enqueued) {
    int n = tls_npending;
    tls_npending = 0;
    if (n == 0) {
        free(tls_pending);
        tls_pending = NULL;
        return;
    }
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < n; i++)
        end_locked(tls_pending[i].c, tls_pending[i].s, tls_pending[i].what, enqueued);
    pthread_mutex_unlock(&g_lock);
    free(tls_pending);
    tls_pending = NULL;
    xdev_core_error_restore(&saved);
}

/* A thread that exits inside a group: its collectives were never enqueued
 * (NCCL enqueues a group's at its end), so their watches end as such, and
 * the list goes (LeakSanitizer saw it kept). */
static void thread_exit(void) {
    if (tls_pending != NULL || tls_npending > 0) xdev_comm_watch_flush(false);
}

void xdev_comm_watchdog_wire(void) {
    xdev_hook_thread_exit_add(thread_exit);
}

void xdev_comm_watch_forget(xdev_communicator_t c) {
    pthread_mutex_lock(&g_lock);
    while (g_busy) /* its group may be being aborted: it must outlive that */
        pthread_cond_wait(&g_idle, &g_lock);
    for (int i = 0; i < g_n; i++)
        if (g_watched[i] == c) {
            g_watched[i] = g_watched[--g_n];
            break;
        }
    c->wd_listed = false;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    for (int i = 0; i < XDEV_WD_RING; i++) {
        if (c->wd_event[i] != NULL) (void)xdev_be_event_destroy(c->rec, c->wd_event[i]);
        c->wd_event[i] = NULL;
        c->wd_at[i] = 0;
    }
    xdev_core_error_restore(&saved);
    pthread_mutex_unlock(&g_lock);
}
