/* SPDX-License-Identifier: Apache-2.0 */
/* stream_order.c - the vector clocks of the stream-order sanitizer (see
 * stream_order.h). Clocks are dense arrays indexed by stream id - 1; a
 * destroyed stream's id goes to the next new stream (state_of says why that
 * is sound), so clocks stay as long as the most streams alive at once. The
 * host's clock is merged into a stream's lazily: every view of a stream
 * takes the larger of the two entries. */
#include "runtime/stream_order.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/event_internal.h"
#include "runtime/sanitizer_probe.h"
#include "runtime/stream_internal.h"
#include "runtime/stream_names.h"

_Atomic bool xdev_sanitize_flag;
xdev_san_probes_t xdev_san_probes; /* observe/stream_sanitizer.c fills them in */

void xdev_san_probes_set(const xdev_san_probes_t *probes) {
    xdev_san_probes = *probes;
}

typedef struct clock {
    size_t n;
    uint64_t *v;
} clock_t_;

typedef struct stream_state {
    clock_t_ clock;            /* entry id - 1 is the stream's own count */
    xdev_device_record_t *rec; /* its device */
    const void *handle;        /* for its name (may be gone by a report) */
    bool is_default;
} stream_state_t;

struct xdev_order_clock {
    clock_t_ clock;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static stream_state_t *g_streams; /* index id - 1 */
static size_t g_nstreams, g_cap;
static clock_t_ g_host;
static uint32_t *g_free; /* ids of destroyed streams, for the next new ones */
static size_t g_nfree, g_freecap;

xdev_status_t xdev_order_read_env(void) {
    const char *v = xdev_env_get("XDEV_SANITIZE");
    bool on = false;
    if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0 || strcmp(v, "off") == 0 ||
        strcmp(v, "none") == 0)
        on = false;
    else if (strcmp(v, "streams") == 0)
        on = true;
    else
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_SANITIZE='%s' is not a sanitizer: use 'streams' (the stream-order "
                         "sanitizer) or 'off'",
                         v);
    atomic_store_explicit(&xdev_sanitize_flag, on, memory_order_relaxed);
    return XDEV_SUCCESS;
}

/* Entry i (0-based) of c, 0 past its end. */
static inline uint64_t entry(const clock_t_ *c, size_t i) {
    return i < c->n ? c->v[i] : 0;
}

static bool grow(clock_t_ *c, size_t n) {
    if (n <= c->n) return true;
    uint64_t *v = realloc(c->v, n * sizeof *v);
    if (v == NULL) return false;
    memset(v + c->n, 0, (n - c->n) * sizeof *v);
    c->v = v;
    c->n = n;
    return true;
}

/* dst = max(dst, src), entry by entry. */
static bool merge(clock_t_ *dst, const clock_t_ *src) {
    if (!grow(dst, src->n)) return false;
    for (size_t i = 0; i < src->n; i++)
        if (src->v[i] > dst->v[i]) dst->v[i] = src->v[i];
    return true;
}

/* s's state, assigning it an id on first use (g_lock held); NULL when out
 * of memory. A handle arena slot is zeroed when reused, so a new stream in
 * an old stream's slot starts with id 0.
 *
 * The id of a destroyed stream is given to the next new one, so that clocks
 * stay as long as the most streams alive at once, not all ever made. That
 * is sound because a stream's destroy waited for its work and merged its
 * clock into the host's (xdev_order_on_stream_destroy): every use the old
 * stream made is ordered before all later work, and the new stream's count
 * continues from the old one's, so its epochs are never mistaken for the
 * old ones. */
static stream_state_t *state_of(xdev_stream_t s) {
    if (s->order_id != 0) return &g_streams[s->order_id - 1];
    if (g_nfree > 0) {
        uint32_t id = g_free[--g_nfree];
        stream_state_t *st = &g_streams[id - 1];
        uint64_t own = st->clock.v[id - 1];
        memset(st->clock.v, 0, st->clock.n * sizeof *st->clock.v); /* knows nothing yet */
        st->clock.v[id - 1] = own;
        st->rec = s->rec;
        st->handle = s;
        st->is_default = s->is_default;
        s->order_id = id;
        return st;
    }
    if (g_nstreams == g_cap) {
        size_t cap = g_cap ? 2 * g_cap : 16;
        stream_state_t *t = realloc(g_streams, cap * sizeof *t);
        if (t == NULL) return NULL;
        g_streams = t;
        g_cap = cap;
    }
    stream_state_t *st = &g_streams[g_nstreams];
    memset(st, 0, sizeof *st);
    st->rec = s->rec;
    st->handle = s;
    st->is_default = s->is_default;
    if (!grow(&st->clock, g_nstreams + 1)) return NULL;
    s->order_id = (uint32_t)++g_nstreams;
    return st;
}

uint32_t xdev_order_stream_id(xdev_stream_t s) {
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = state_of(s);
    pthread_mutex_unlock(&g_lock);
    return st != NULL ? s->order_id : 0;
}

/* The view of st (id self) with the host's clock merged in (g_lock held). */
static bool make_view(const stream_state_t *st, uint32_t self, xdev_order_view_t *view) {
    size_t n = st->clock.n > g_host.n ? st->clock.n : g_host.n;
    view->self = self;
    view->n = n;
    view->v = n <= XDEV_ORDER_LOCAL ? view->local : malloc(n * sizeof *view->v);
    if (view->v == NULL) return false;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = entry(&st->clock, i), b = entry(&g_host, i);
        view->v[i] = a > b ? a : b;
    }
    return true;
}

bool xdev_order_tick(xdev_stream_t s, xdev_order_epoch_t *epoch, xdev_order_view_t *view) {
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = state_of(s);
    bool ok = st != NULL;
    if (ok) {
        uint32_t id = s->order_id;
        epoch->stream = id;
        epoch->seq = ++st->clock.v[id - 1];
        if (view != NULL) ok = make_view(st, id, view);
    }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

bool xdev_order_view(xdev_stream_t s, xdev_order_view_t *view) {
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = state_of(s);
    bool ok = st != NULL && make_view(st, s->order_id, view);
    pthread_mutex_unlock(&g_lock);
    return ok;
}

void xdev_order_view_free(xdev_order_view_t *view) {
    if (view->v != view->local) free(view->v);
    view->v = NULL;
    view->n = 0;
}

void xdev_order_stream_describe(uint32_t id, char *buf, size_t len) {
    pthread_mutex_lock(&g_lock);
    stream_state_t st = id >= 1 && id <= g_nstreams ? g_streams[id - 1] : (stream_state_t){0};
    pthread_mutex_unlock(&g_lock);
    if (st.rec == NULL) {
        snprintf(buf, len, "stream #%u", id);
        return;
    }
    char name[XDEV_STREAM_NAME_MAX + 1];
    if (xdev_stream_names_by_handle(st.handle, name, sizeof name))
        snprintf(buf, len, "stream '%s' (%p) of " XDEV_REC_FMT, name, st.handle,
                 XDEV_REC_ARGS(st.rec));
    else
        snprintf(buf, len, "%sstream %p of " XDEV_REC_FMT, st.is_default ? "the default " : "",
                 st.handle, XDEV_REC_ARGS(st.rec));
}

/* ------------------------------------------------------------ orderings
 * Out of host memory, an ordering is lost: later reports may then be
 * false, never missed (a missed merge only makes clocks smaller). */

void xdev_order_on_event_record(xdev_event_t e, xdev_stream_t s) {
    if (!xdev_sanitizing() || atomic_load(&s->capture) != NULL) return;
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = state_of(s);
    if (st != NULL) {
        if (e->order == NULL) e->order = calloc(1, sizeof *e->order);
        if (e->order != NULL && grow(&e->order->clock, st->clock.n)) {
            memcpy(e->order->clock.v, st->clock.v, st->clock.n * sizeof *st->clock.v);
            memset(e->order->clock.v + st->clock.n, 0,
                   (e->order->clock.n - st->clock.n) * sizeof *st->clock.v);
        }
    }
    pthread_mutex_unlock(&g_lock);
}

void xdev_order_on_wait_event(xdev_stream_t s, xdev_event_t e) {
    if (!xdev_sanitizing() || atomic_load(&s->capture) != NULL) return;
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = state_of(s);
    if (st != NULL && e->order != NULL) (void)merge(&st->clock, &e->order->clock);
    pthread_mutex_unlock(&g_lock);
}

void xdev_order_on_wait_stream(xdev_stream_t s, xdev_stream_t other) {
    if (!xdev_sanitizing() || atomic_load(&s->capture) != NULL) return;
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = state_of(s);
    stream_state_t *ot = state_of(other);
    st = st != NULL ? &g_streams[s->order_id - 1] : NULL; /* state_of(other) may move the table */
    if (st != NULL && ot != NULL) (void)merge(&st->clock, &g_streams[other->order_id - 1].clock);
    pthread_mutex_unlock(&g_lock);
}

void xdev_order_on_host_waits_stream(xdev_stream_t s) {
    if (!xdev_sanitizing()) return;
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = state_of(s);
    if (st != NULL) (void)merge(&g_host, &st->clock);
    pthread_mutex_unlock(&g_lock);
}

void xdev_order_on_host_waits_event(xdev_event_t e) {
    if (!xdev_sanitizing()) return;
    pthread_mutex_lock(&g_lock);
    if (e->order != NULL) (void)merge(&g_host, &e->order->clock);
    pthread_mutex_unlock(&g_lock);
}

void xdev_order_on_host_waits_device(xdev_device_record_t *rec) {
    if (!xdev_sanitizing()) return;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nstreams; i++)
        if (rec == NULL || g_streams[i].rec == rec) (void)merge(&g_host, &g_streams[i].clock);
    pthread_mutex_unlock(&g_lock);
}

void xdev_order_on_stream_destroy(xdev_stream_t s) {
    if (!xdev_sanitizing() || s->order_id == 0) return;
    pthread_mutex_lock(&g_lock);
    stream_state_t *st = &g_streams[s->order_id - 1];
    (void)merge(&g_host, &st->clock); /* its work is done (the caller waited) */
    if (g_nfree == g_freecap) {
        size_t cap = g_freecap ? 2 * g_freecap : 16;
        uint32_t *f = realloc(g_free, cap * sizeof *f);
        if (f != NULL) {
            g_free = f;
            g_freecap = cap;
        }
    }
    if (g_nfree < g_freecap) g_free[g_nfree++] = s->order_id; /* else the id is not reused */
    st->handle = NULL;
    s->order_id = 0;
    pthread_mutex_unlock(&g_lock);
}

/* The test hook: the longest clock among the host's and every stream's
 * (events copy a stream's, so theirs are never longer), and the ids given
 * out. */
size_t xdev_order_clock_length(void) {
    pthread_mutex_lock(&g_lock);
    size_t n = g_host.n > g_nstreams ? g_host.n : g_nstreams;
    for (size_t i = 0; i < g_nstreams; i++)
        if (g_streams[i].clock.n > n) n = g_streams[i].clock.n;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void xdev_order_on_event_destroy(xdev_event_t e) {
    pthread_mutex_lock(&g_lock);
    if (e->order != NULL) free(e->order->clock.v);
    free(e->order);
    e->order = NULL;
    pthread_mutex_unlock(&g_lock);
}
