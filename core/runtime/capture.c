/* SPDX-License-Identifier: Apache-2.0 */
/* capture.c - the captures under way and the rule against calls that cannot
 * be recorded (capture.h). One process-wide list under a mutex: captures are
 * rare and short, and the fast path is the counter's relaxed load. */
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"
#include "runtime/capture.h"
#include "runtime/device_record.h"
#include "runtime/stream_internal.h"

_Atomic int xdev_captures_active;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_capture_t *g_list;

static const char *mode_name(int mode) {
    return mode == 0 ? "global" : mode == 1 ? "thread_local" : "relaxed";
}

xdev_status_t xdev_capture_start(xdev_capture_t *c, xdev_stream_t origin) {
    static _Atomic uint64_t serials;
    c->serial = atomic_fetch_add(&serials, 1) + 1;
    pthread_mutex_init(&c->lock, NULL);
    c->origin = origin;
    c->thread = pthread_self();
    c->streams[0] = origin;
    c->nstreams = 1;
    c->invalid = XDEV_SUCCESS;
    c->active = true;
    pthread_mutex_lock(&g_lock); /* the list lock: the capture seen through the stream is whole */
    xdev_capture_t *none = NULL;
    if (!atomic_compare_exchange_strong(&origin->capture, &none, c)) {
        pthread_mutex_unlock(&g_lock); /* c->lock: the caller's to destroy with c */
        return XDEV_FAIL(XDEV_ERROR_CAPTURE,
                         "the stream is already capturing (another graph's capture); end that "
                         "capture first");
    }
    c->next = g_list;
    g_list = c;
    atomic_fetch_add(&xdev_captures_active, 1);
    pthread_mutex_unlock(&g_lock);
    return XDEV_SUCCESS;
}

void xdev_capture_stop(xdev_capture_t *c) {
    pthread_mutex_lock(&g_lock);
    for (xdev_capture_t **p = &g_list; *p != NULL; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            atomic_fetch_sub(&xdev_captures_active, 1);
            break;
        }
    pthread_mutex_lock(&c->lock);
    c->active = false;
    for (int i = 0; i < c->nstreams; i++) {
        xdev_capture_t *want = c;
        atomic_compare_exchange_strong(&c->streams[i]->capture, &want, NULL);
    }
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_unlock(&g_lock);
}

void xdev_capture_invalidate(xdev_capture_t *c, xdev_status_t st, const char *reason) {
    pthread_mutex_lock(&c->lock);
    if (c->invalid == XDEV_SUCCESS) {
        c->invalid = st;
        snprintf(c->reason, sizeof c->reason, "%s", reason);
    }
    pthread_mutex_unlock(&c->lock);
}

xdev_status_t xdev_capture_join_id(uint64_t id, xdev_stream_t s) {
    pthread_mutex_lock(&g_lock);
    xdev_capture_t *c = g_list;
    while (c != NULL && c->id != id)
        c = c->next;
    xdev_status_t st = XDEV_SUCCESS;
    if (c != NULL) {
        pthread_mutex_lock(&c->lock);
        xdev_capture_t *none = NULL;
        if (c->rec != s->rec) {
            st = XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                           "the event was recorded in the capture of graph %llu on " XDEV_REC_FMT
                           ", but the waiting stream belongs to " XDEV_REC_FMT
                           " (a graph is one device's work)",
                           (unsigned long long)id, XDEV_REC_ARGS(c->rec), XDEV_REC_ARGS(s->rec));
        } else if (c->nstreams == XDEV_CAPTURE_MAX_STREAMS) {
            st = XDEV_FAIL(XDEV_ERROR_CAPTURE,
                           "graph %llu's capture already spans %d streams, the most it may",
                           (unsigned long long)id, XDEV_CAPTURE_MAX_STREAMS);
        } else if (atomic_compare_exchange_strong(&s->capture, &none, c)) {
            c->streams[c->nstreams++] = s;
        } else if (none != c) {
            st = XDEV_FAIL(XDEV_ERROR_CAPTURE,
                           "the stream captures graph %llu and cannot wait on work of graph "
                           "%llu's capture",
                           (unsigned long long)none->id, (unsigned long long)id);
        }
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

bool xdev_capture_is_active(uint64_t id) {
    if (id == 0 || atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) == 0)
        return false;
    pthread_mutex_lock(&g_lock);
    bool found = false;
    for (xdev_capture_t *c = g_list; c != NULL && !found; c = c->next)
        found = c->id == id;
    pthread_mutex_unlock(&g_lock);
    return found;
}

xdev_status_t xdev_capture_refuse(xdev_capture_t *c, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "%s is not allowed during the capture of graph %llu (it would wait for work that is "
             "being recorded, not run); the capture is now invalid",
             what, (unsigned long long)c->id);
    xdev_capture_invalidate(c, XDEV_ERROR_CAPTURE, msg);
    return XDEV_FAIL(XDEV_ERROR_CAPTURE, "%s", msg);
}

xdev_status_t xdev_capture_unsafe_slow(const char *what) {
    pthread_t self = pthread_self();
    xdev_capture_t *hit[16];
    int n = 0;
    uint64_t first_id = 0;
    int first_mode = 0;
    pthread_mutex_lock(&g_lock);
    for (xdev_capture_t *c = g_list; c != NULL && n < 16; c = c->next) {
        bool covers = c->mode == 0 || (c->mode == 1 && pthread_equal(c->thread, self));
        if (!covers) continue;
        if (n == 0) {
            first_id = c->id;
            first_mode = c->mode;
        }
        hit[n++] = c;
    }
    char msg[512];
    if (n > 0)
        snprintf(msg, sizeof msg,
                 "%s is not allowed while graph %llu is being captured (mode %s%s); the capture "
                 "is now invalid: do this before capture_begin or after capture_end",
                 what, (unsigned long long)first_id, mode_name(first_mode),
                 first_mode == 0 ? ": no thread may" : ": not on the capturing thread");
    for (int i = 0; i < n; i++)
        xdev_capture_invalidate(hit[i], XDEV_ERROR_CAPTURE, msg);
    pthread_mutex_unlock(&g_lock);
    if (n == 0) return XDEV_SUCCESS;
    return XDEV_FAIL(XDEV_ERROR_CAPTURE, "%s", msg);
}

int xdev_capture_owned_by_self(void **owners, int cap) {
    if (atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) == 0) return 0;
    pthread_t self = pthread_self();
    int n = 0;
    pthread_mutex_lock(&g_lock);
    for (xdev_capture_t *c = g_list; c != NULL && n < cap; c = c->next)
        if (c->mode != 2 && pthread_equal(c->thread, self)) owners[n++] = c->owner;
    pthread_mutex_unlock(&g_lock);
    return n;
}

bool xdev_capture_on_device(const xdev_device_record_t *rec) {
    if (atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) == 0) return false;
    pthread_mutex_lock(&g_lock);
    bool found = false;
    for (xdev_capture_t *c = g_list; c != NULL && !found; c = c->next)
        found = c->rec == rec;
    pthread_mutex_unlock(&g_lock);
    return found;
}

xdev_status_t xdev_capture_refuse_id(uint64_t id, const char *what) {
    pthread_mutex_lock(&g_lock);
    xdev_capture_t *c = g_list;
    while (c != NULL && c->id != id)
        c = c->next;
    char msg[512];
    if (c != NULL) {
        snprintf(msg, sizeof msg,
                 "%s: the event was recorded during the capture of graph %llu, which records "
                 "work instead of running it; the capture is now invalid (wait for the event "
                 "after capture_end and a replay)",
                 what, (unsigned long long)id);
        xdev_capture_invalidate(c, XDEV_ERROR_CAPTURE, msg);
    }
    pthread_mutex_unlock(&g_lock);
    if (c == NULL) return XDEV_SUCCESS;
    return XDEV_FAIL(XDEV_ERROR_CAPTURE, "%s", msg);
}

int xdev_capture_lock_all_on_device(const xdev_device_record_t *rec, xdev_capture_t **out,
                                    int cap) {
    pthread_mutex_lock(&g_lock);
    int n = 0;
    for (xdev_capture_t *c = g_list; c != NULL && n < cap; c = c->next)
        if (c->rec == rec) {
            pthread_mutex_lock(&c->lock);
            out[n++] = c;
        }
    pthread_mutex_unlock(&g_lock);
    return n;
}
