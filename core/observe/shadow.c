/* SPDX-License-Identifier: Apache-2.0 */
/* shadow.c - shadow execution (xdev/shadow.h): its settings, its step in the
 * enqueue path and its reports. The slots that record each backend call and
 * the replays are shadow_slots.c (shadow_internal.h says why the work is
 * split between the backend's table and step 5); the outputs of
 * collectives, which are not replayed, shadow_collective.c.
 *
 * Step 5 (an enqueue observer, runtime/enqueue.h) for each op that
 * succeeded: a capture's records are dropped (they run when the graph is
 * replayed); otherwise the thread's records are replayed on the mirrors,
 * then, with COMPARE=op, the real stream is waited for and every operand the
 * op wrote is compared with its mirror (a host output with the replay's
 * scratch). A difference is reported once: the mirror then takes the
 * device's bytes. An op that wrote mirrored memory but could not be
 * replayed is reported once per call and reason, and its outputs are
 * copied into the mirrors. With COMPARE=sync the written mirrors are only
 * marked, and compared when a copy brings device data to the host. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "base/strbuf.h"
#include "base/call_site.h"
#include "observe/shadow_internal.h"
#include "runtime/device_record.h"
#include "runtime/enqueue.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"

bool xdev_shadow_on;
_Atomic bool xdev_shadow_stopped;
static bool g_compare_sync;
static bool g_action_stop;
static double g_tolerance = -1; /* < 0: the dtype's default */

/* ------------------------------------------------------------ settings */

/* XDEV_SHADOW and its settings: read before any backend loads (a settings
 * step), each refused with the values it takes, on or off. */
static xdev_status_t read_env(void) {
    const char *v = xdev_env_get("XDEV_SHADOW");
    if (v == NULL || v[0] == '\0' || strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
        xdev_shadow_on = false;
    else if (strcmp(v, "cpu") == 0)
        xdev_shadow_on = true;
    else
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_SHADOW='%s' is not a shadow device: use 'cpu' (replay every "
                         "operation on the CPU and compare) or 'off'",
                         v);
    v = xdev_env_get("XDEV_SHADOW_COMPARE");
    if (v == NULL || v[0] == '\0' || strcmp(v, "op") == 0)
        g_compare_sync = false;
    else if (strcmp(v, "sync") == 0)
        g_compare_sync = true;
    else
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_SHADOW_COMPARE='%s' is not a time to compare: use 'op' (after each "
                         "operation) or 'sync' (when a copy brings device data to the host)",
                         v);
    v = xdev_env_get("XDEV_SHADOW_ACTION");
    if (v == NULL || v[0] == '\0' || strcmp(v, "report") == 0)
        g_action_stop = false;
    else if (strcmp(v, "stop") == 0)
        g_action_stop = true;
    else
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_SHADOW_ACTION='%s' is not an action: use 'report' (go on) or "
                         "'stop' (fail the calls after the first difference)",
                         v);
    v = xdev_env_get("XDEV_SHADOW_TOLERANCE");
    g_tolerance = -1;
    if (v != NULL && v[0] != '\0') {
        char *end;
        double t = strtod(v, &end);
        if (*end != '\0' || !(t >= 0 && t < 1))
            return XDEV_FAIL(XDEV_ERROR_ENV,
                             "XDEV_SHADOW_TOLERANCE='%s' is not a relative tolerance: use a "
                             "number from 0 (bitwise) to below 1, such as 1e-5",
                             v);
        g_tolerance = t;
    }
    atomic_store(&xdev_shadow_stopped, false);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ reports */

static pthread_mutex_t g_report_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_shadow_report_t g_kept[XDEV_SHADOW_KEPT];
static _Atomic uint64_t g_count;
static xdev_shadow_handler_t g_handler;
static void *g_handler_user;
static char g_said[64][160]; /* "op|reason" already reported as not mirrored */
static int g_nsaid;
static char g_stop_text[600];

#define SH_PRINTED 100

static void deliver(xdev_shadow_report_t *r) {
    pthread_mutex_lock(&g_report_lock);
    uint64_t n = atomic_fetch_add(&g_count, 1);
    if (n < XDEV_SHADOW_KEPT) g_kept[n] = *r;
    if (r->kind == XDEV_SHADOW_DIFFERENCE && g_action_stop && !atomic_load(&xdev_shadow_stopped)) {
        snprintf(g_stop_text, sizeof g_stop_text, "%.*s", (int)strcspn(r->text, "\n"), r->text);
        atomic_store_explicit(&xdev_shadow_stopped, true, memory_order_release);
    }
    xdev_shadow_handler_t fn = g_handler;
    void *user = g_handler_user;
    pthread_mutex_unlock(&g_report_lock);
    if (fn != NULL)
        fn(r->text, user);
    else if (n < SH_PRINTED)
        fprintf(stderr, "%s%s", r->text,
                n + 1 == SH_PRINTED ? "xdev shadow: further reports are counted, not printed "
                                      "(xdev_shadow_report_count)\n"
                                    : "");
}

xdev_status_t xdev_shadow_stop_status(void) {
    pthread_mutex_lock(&g_report_lock);
    char text[sizeof g_stop_text];
    memcpy(text, g_stop_text, sizeof text);
    pthread_mutex_unlock(&g_report_lock);
    return XDEV_FAIL(XDEV_ERROR_BACKEND,
                     "shadow execution stopped after its first difference "
                     "(XDEV_SHADOW_ACTION=stop): %s; xdev_shadow_clear() lets calls run again",
                     text);
}

/* The op's common part of a report: what ran where, called from where. */
static void report_head(xdev_shadow_report_t *r, xdev_strbuf_t *b, const xdev_enqueue_t *q,
                        const char *detail, void *const *frames, int nframes) {
    snprintf(r->op, sizeof r->op, "%s", q->name);
    snprintf(r->detail, sizeof r->detail, "%s", detail);
    snprintf(r->device, sizeof r->device, XDEV_REC_FMT, XDEV_REC_ARGS(q->stream->rec));
    xdev_strbuf_t site = {0};
    xdev_call_site_describe(&site, frames, nframes);
    snprintf(r->call_site, sizeof r->call_site, "%s", site.buf != NULL ? site.buf : "");
    free(site.buf);
    char sname[160];
    xdev_order_stream_describe(xdev_order_stream_id(q->stream), sname, sizeof sname);
    xdev_strbuf_printf(b, "%s (%s) on %s, called %s", r->op, r->detail, sname, r->call_site);
}

static void finish_text(xdev_shadow_report_t *r, xdev_strbuf_t *b) {
    snprintf(r->text, sizeof r->text, "%s", b->buf != NULL ? b->buf : "xdev shadow: (no memory)\n");
    free(b->buf);
}

/* "cannot be mirrored", once per call and reason. */
void xdev_shadow_report_unmirrored(const xdev_enqueue_t *q, const char *detail, const char *why,
                                   void *const *frames, int nframes) {
    char key[160];
    snprintf(key, sizeof key, "%s|%s", q->name, why);
    pthread_mutex_lock(&g_report_lock);
    bool said = false;
    for (int i = 0; i < g_nsaid && !said; i++)
        said = strcmp(g_said[i], key) == 0;
    if (!said && g_nsaid < 64) snprintf(g_said[g_nsaid++], sizeof g_said[0], "%s", key);
    pthread_mutex_unlock(&g_report_lock);
    if (said) return;
    xdev_shadow_report_t r = {.kind = XDEV_SHADOW_NOT_MIRRORED};
    xdev_strbuf_t b = {0};
    xdev_strbuf_printf(&b, "xdev shadow: not mirrored on the CPU: ");
    report_head(&r, &b, q, detail, frames, nframes);
    xdev_strbuf_printf(&b,
                       "\n  %s; its outputs were copied into the mirrors (reported once "
                       "per call and reason)\n",
                       why);
    finish_text(&r, &b);
    deliver(&r);
}

/* ------------------------------------------------------------ comparing */

static float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 1023u;
    float f;
    if (e == 0)
        f = ldexpf((float)m, -24);
    else if (e == 31)
        f = m ? NAN : INFINITY;
    else
        f = ldexpf((float)(m | 1024u), (int)e - 25);
    return s ? -f : f;
}

/* Element i of buffer p as a double (floating dtypes; complex by part). */
static double value_of(const unsigned char *p, size_t i, size_t elem, xdev_dtype_t t) {
    if (elem == 8) {
        double d;
        memcpy(&d, p + i * 8, 8);
        return d;
    }
    if (elem == 4) {
        float f;
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + i * 2, 2);
    if (t == XDEV_DTYPE_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return half_to_float(h);
}

static double default_tolerance(xdev_dtype_t t) {
    if (g_tolerance >= 0) return g_tolerance;
    return t == XDEV_DTYPE_F64 || t == XDEV_DTYPE_C128   ? 1e-12
           : t == XDEV_DTYPE_F16 || t == XDEV_DTYPE_BF16 ? 1e-2
                                                         : 1e-5;
}

typedef struct {
    size_t first, differing, elements;
    uint64_t dev_bits, sh_bits;
} diff_t;

/* Compare n bytes element by element; true when they differ. before (or
 * NULL): the mirror's bytes before the replay; only elements the replay
 * changed are compared then (a kernel's pointer, whose extent is unknown:
 * the rest of the allocation may be another stream's). */
static bool compare(const unsigned char *dev, const unsigned char *sh, size_t n,
                    const sh_rec_t *how, const unsigned char *before, diff_t *d) {
    size_t elem = how != NULL && how->elem != 0 && how->elem <= 8 ? how->elem : 1;
    if (n % elem != 0) elem = 1;
    bool tol = how != NULL && how->tolerant && elem >= 2;
    double eps = tol ? default_tolerance(how->dtype) * fmax(how->tol_scale, 1) : 0;
    memset(d, 0, sizeof *d);
    d->elements = n / elem;
    if (!tol && memcmp(dev, sh, n) == 0) return false;
    /* The tolerance is relative to the larger of the two values, or to the
     * largest magnitude among the compared results where that is more: a
     * sum, product or transform rounds by a fraction of its operands' size,
     * so an element that cancels to near zero (an FFT's small bins: cuFFT
     * and FFTW differ there by 2e-5 of the element, 1e-6 of the largest)
     * is not a difference. */
    double scale = 0;
    for (size_t i = 0; tol && i < d->elements; i++) {
        if (before != NULL && memcmp(before + i * elem, sh + i * elem, elem) == 0) continue;
        double b = fabs(value_of(sh, i, elem, how->dtype));
        if (isfinite(b) && b > scale) scale = b;
    }
    size_t total = d->elements;
    if (before != NULL) d->elements = 0; /* counted below: those the replay wrote */
    for (size_t i = 0; i < total; i++) {
        bool differ;
        if (before != NULL && memcmp(before + i * elem, sh + i * elem, elem) == 0) continue;
        if (tol) {
            double a = value_of(dev, i, elem, how->dtype), b = value_of(sh, i, elem, how->dtype);
            differ = !(a == b || (isnan(a) && isnan(b)) ||
                       fabs(a - b) <= eps * fmax(fmax(fabs(a), fabs(b)), scale));
        } else {
            differ = memcmp(dev + i * elem, sh + i * elem, elem) != 0;
        }
        if (before != NULL) d->elements++;
        if (!differ) continue;
        if (d->differing++ == 0) {
            d->first = i;
            memcpy(&d->dev_bits, dev + i * elem, elem);
            memcpy(&d->sh_bits, sh + i * elem, elem);
        }
    }
    return d->differing > 0;
}

/* writer: COMPARE=sync's mirror, whose last writer the report names. */
static void report_difference(const xdev_enqueue_t *q, const sh_mirror_t *writer,
                              const char *detail, const void *p, const sh_mirror_t *m, size_t n,
                              const sh_rec_t *how, const diff_t *d, void *const *frames,
                              int nframes) {
    xdev_shadow_report_t r = {.kind = XDEV_SHADOW_DIFFERENCE};
    xdev_strbuf_t b = {0};
    xdev_strbuf_printf(&b, "xdev shadow: first difference from the CPU: ");
    report_head(&r, &b, q, detail, frames, nframes);
    if (writer != NULL) { /* COMPARE=sync: the buffer's last writer */
        snprintf(r.op, sizeof r.op, "%s", writer->last_op);
        snprintf(r.detail, sizeof r.detail, "%s", writer->last_detail);
        snprintf(r.call_site, sizeof r.call_site, "%s", writer->last_site);
        xdev_strbuf_printf(&b,
                           "\n  compared here; the buffer was last written by %s (%s), "
                           "called %s",
                           writer->last_op, writer->last_detail, writer->last_site);
    }
    size_t elem = d->elements ? n / d->elements : 1;
    r.buffer = p;
    r.element = d->first;
    r.element_size = elem;
    r.differing = d->differing;
    r.elements = d->elements;
    r.device_bits = d->dev_bits;
    r.shadow_bits = d->sh_bits;
    xdev_strbuf_printf(&b, "\n  buffer %p", p);
    if (m != NULL)
        xdev_strbuf_printf(&b, " (bytes [%zu, %zu) of the allocation at %p, %zu bytes)",
                           (size_t)((uintptr_t)p - m->base), (size_t)((uintptr_t)p - m->base) + n,
                           (void *)m->base, m->size);
    else
        xdev_strbuf_printf(&b, " (host memory, %zu bytes)", n);
    int w = (int)(2 * elem);
    xdev_strbuf_printf(&b, ": element %zu (%zu bytes) is 0x%0*llx on %s, 0x%0*llx on the CPU",
                       d->first, elem, w, (unsigned long long)d->dev_bits, r.device, w,
                       (unsigned long long)d->sh_bits);
    if (how != NULL && how->tolerant) {
        unsigned char a[8], c[8];
        memcpy(a, &d->dev_bits, 8);
        memcpy(c, &d->sh_bits, 8);
        xdev_strbuf_printf(&b,
                           " (%.9g and %.9g, relative tolerance %g of the larger or of the "
                           "results' largest magnitude)",
                           value_of(a, 0, elem, how->dtype), value_of(c, 0, elem, how->dtype),
                           default_tolerance(how->dtype) * fmax(how->tol_scale, 1));
    }
    xdev_strbuf_printf(&b, "; %zu of %zu elements differ\n", d->differing, d->elements);
    finish_text(&r, &b);
    deliver(&r);
}

/* The device's bytes of [p, p + n) (in m) against the mirror's; a
 * difference is reported and the mirror takes the device's bytes. */

/* The element-aligned span of mirror bytes [sh, sh + n) that differ from
 * before (lock held, right after the replay: other threads' replays may
 * change the mirror outside it once the lock is released). */
span_t xdev_shadow_written_span(const unsigned char *sh, const unsigned char *before, size_t n,
                                const sh_rec_t *how) {
    span_t sp = {0, n};
    while (sp.lo < n && sh[sp.lo] == before[sp.lo])
        sp.lo++;
    if (sp.lo == n) return (span_t){0, 0};
    while (sp.hi > sp.lo && sh[sp.hi - 1] == before[sp.hi - 1])
        sp.hi--;
    size_t elem = how != NULL && how->elem != 0 && how->elem <= 8 ? how->elem : 1;
    sp.lo -= sp.lo % elem;
    size_t up = sp.hi + (elem - sp.hi % elem) % elem;
    sp.hi = up > n ? n : up;
    return sp;
}

const sh_rec_t *xdev_shadow_use_rec(const sh_rec_t *how, const xdev_op_use_t *u, sh_rec_t *tmp) {
    if (how == NULL || u->fp == 0) return how;
    *tmp = *how;
    tmp->tolerant = true;
    tmp->elem = u->fp;
    tmp->dtype = u->fp == 8 ? XDEV_DTYPE_F64 : XDEV_DTYPE_F32;
    tmp->tol_scale = 1;
    return tmp;
}

/* before (or NULL): the mirror's bytes before the replay, of which only
 * span was written. */
bool xdev_shadow_check_range(const xdev_enqueue_t *q, sh_mirror_t *m, const void *p, size_t n,
                             const sh_rec_t *how, const unsigned char *before, const span_t *span,
                             const char *detail, bool last_writer, void *const *frames,
                             int nframes) {
    if (before != NULL) { /* only the span the replay wrote: the rest may be another stream's */
        if (span->lo >= span->hi) return false;
        p = (const unsigned char *)p + span->lo;
        before += span->lo;
        n = span->hi - span->lo;
    }
    unsigned char *dev = malloc(n ? n : 1);
    if (dev == NULL || !xdev_shadow_read_device(m, p, n, dev)) {
        free(dev);
        return false;
    }
    unsigned char *sh = m->mirror + ((uintptr_t)p - m->base);
    diff_t d;
    bool differ = compare(dev, sh, n, how, before, &d);
    if (differ)
        report_difference(q, last_writer ? m : NULL, detail, p, m, n, how, &d, frames, nframes);
    /* The mirror takes the device's bits whenever they were compared: after
     * a difference (one report per fault), and after a GEMM or FFT equal
     * within its tolerance - else the copy that later brings its result to
     * the host, compared bit for bit, reported the rounding (on the H200,
     * cuda/blas.shadow: 10 copies "differ" by one unit in the last place). */
    memcpy(sh, dev, n);
    free(dev);
    return differ;
}

/* [p, p + n) clipped to its mirror; false when p is not mirrored. */
bool xdev_shadow_clip(const void *p, size_t n, sh_mirror_t **m, size_t *len) {
    *m = xdev_shadow_find(p);
    if (*m == NULL) return false;
    size_t off = (uintptr_t)p - (*m)->base;
    *len = n > (*m)->size - off ? (*m)->size - off : n;
    return *len > 0;
}

/* Copy the device's bytes into the mirror (an op that was not replayed). */
void xdev_shadow_resync(sh_mirror_t *m, const void *p, size_t n) {
    (void)xdev_shadow_read_device(m, p, n, m->mirror + ((uintptr_t)p - m->base));
}

typedef struct {
    const xdev_enqueue_t *q;
    void *const *frames;
    int nframes;
    bool all;                  /* resync every mirror of the device (a graph replay) */
    const char *detail;        /* the comparing op's */
    bool found;                /* a difference was reported */
    const sh_mirror_t *source; /* the mirror a copy to the host reads */
} sweep_t;

static void sweep_one(sh_mirror_t *m, void *user) {
    sweep_t *s = user;
    if (s->all) {
        if (m->type == s->q->stream->rec->be->type) xdev_shadow_resync(m, (void *)m->base, m->size);
        return;
    }
    /* Only what this stream wrote, or the copy reads: other streams' work
     * may still run (and is ordered before the copy only if the program
     * ordered it, when it is the buffer the copy reads). */
    if (!m->dirty || (m->last_stream != s->q->stream && m != s->source)) return;
    m->dirty = false;
    s->found |= xdev_shadow_check_range(s->q, m, (void *)m->base, m->size, NULL, NULL, NULL,
                                        s->detail, true, s->frames, s->nframes);
}

/* A record's host output (a copy to the host, a BLAS result) against the
 * replay's scratch; true when it differed (reported, lock held). */
bool xdev_shadow_check_host(const xdev_enqueue_t *q, const sh_rec_t *r, void *const *frames,
                            int nframes) {
    diff_t d;
    if (r->host_dst == NULL || !compare(r->host_dst, r->scratch, r->scratch_n, r, NULL, &d))
        return false;
    report_difference(q, NULL, r->detail, r->host_dst, NULL, r->scratch_n, r, &d, frames, nframes);
    return true;
}

/* ------------------------------------------------------------ step 5 */

static void shadow_observe(const xdev_enqueue_t *q, const xdev_op_use_t *uses, int n, void *user) {
    (void)user;
    sh_pending_t *p = xdev_shadow_pending();
    if (p == NULL) return; /* no host memory for this thread's records: nothing to replay */
    if (atomic_load_explicit(&q->stream->capture, memory_order_acquire) != NULL) {
        xdev_shadow_graph_record(q, uses, n, p); /* recorded, not run: replayed with the graph */
        return;
    }
    bool writes = false;
    for (int i = 0; i < n; i++)
        writes |= uses[i].mode == XDEV_OP_WRITE && uses[i].p != NULL && uses[i].n != 0;
    bool replay = q->kind == XDEV_OP_GRAPH_REPLAY;
    if (p->n == 0 && !writes && !replay) return; /* events, waits, host functions */
    void *frames[XDEV_CALL_SITE_FRAMES];
    int nframes = xdev_call_site_capture(frames, XDEV_CALL_SITE_FRAMES);
    const sh_rec_t *how = p->n > 0 ? &p->recs[p->n - 1] : NULL;
    const char *detail = how != NULL ? how->detail : q->name;
    const char *why = p->overflow ? "more backend calls than the shadow keeps for one operation"
                      : p->n == 0 && !replay
                          ? "the shadow does not replay this operation's backend call"
                          : NULL;
    /* The collectives this op depends on reach the mirrors first; the
     * waits (for them, for the op) are made without the lock. */
    sh_deferred_t wait_for[SH_DEFERRED];
    int nwait = 0;
    xdev_shadow_lock();
    nwait = xdev_shadow_settle(uses, n, wait_for);
    xdev_shadow_unlock();
    for (int i = 0; i < nwait; i++)
        (void)xdev_shadow_mark_reached(wait_for[i].rec, wait_for[i].mark, true);
    xdev_shadow_lock();
    /* This op uses what such a collective wrote: its staged bytes reach the
     * mirrors first, and the op is replayed on them. Without a staging, the
     * mirrors take the device's bytes once this op finished too (it is
     * running already: a copy into them now would race with it), and it is
     * not replayed. */
    int unstaged = 0;
    for (int i = 0; i < nwait; i++) {
        if (wait_for[i].staging != NULL)
            xdev_shadow_apply_deferred(&wait_for[i]);
        else
            wait_for[unstaged++] = wait_for[i];
    }
    nwait = unstaged;
    if (nwait > 0 && why == NULL)
        why = "it uses the output of a collective, which the shadow does not replay";
    char graph_why[256];
    if (replay && why == NULL) { /* the captured ops, replayed op by op (shadow_graph.c) */
        const char *gwhy = NULL;
        if (xdev_shadow_graph_replay(q, p, frames, nframes, &gwhy)) {
            xdev_shadow_unlock();
            xdev_shadow_pending_clear(p);
            return;
        }
        /* copied: the graph's records may be dropped once the lock is released */
        snprintf(graph_why, sizeof graph_why, "%s", gwhy != NULL ? gwhy : "?");
        why = graph_why;
    }
    /* Operands of unknown extent (a kernel's pointers: to the allocation's
     * end): the mirror's bytes before the replay, so that only what the
     * replay wrote is compared (COMPARE=op). */
    unsigned char *before[XDEV_OP_MAX_USES] = {0};
    for (int i = 0; i < n && !g_compare_sync; i++) {
        sh_mirror_t *m;
        size_t len;
        if (uses[i].mode == XDEV_OP_WRITE && uses[i].n == SIZE_MAX &&
            xdev_shadow_clip(uses[i].p, uses[i].n, &m, &len) && (before[i] = malloc(len)) != NULL)
            memcpy(before[i], m->mirror + ((uintptr_t)uses[i].p - m->base), len);
    }
    if (nwait == 0) xdev_shadow_replay(p);
    span_t span[XDEV_OP_MAX_USES] = {{0, 0}};
    for (int i = 0; i < n; i++) {
        sh_mirror_t *m;
        size_t len;
        sh_rec_t tmp;
        if (before[i] != NULL && xdev_shadow_clip(uses[i].p, uses[i].n, &m, &len))
            span[i] =
                xdev_shadow_written_span(m->mirror + ((uintptr_t)uses[i].p - m->base), before[i],
                                         len, xdev_shadow_use_rec(how, &uses[i], &tmp));
    }
    for (int i = 0; i < p->n && why == NULL; i++)
        why = p->recs[i].unmirrored;
    bool to_host = false, host_checked = !g_compare_sync;
    for (int i = 0; i < p->n; i++)
        to_host |= p->recs[i].host_dst != NULL;
    bool deferred = why != NULL && q->kind == XDEV_OP_COLLECTIVE &&
                    xdev_shadow_defer(q, uses, n, wait_for, nwait);
    /* A primitive is compared now at either setting: a compaction's outputs
     * end at the count it wrote on the device (the rest is unspecified),
     * and the device's temporaries, which the replay does not write (it has
     * its own), reach the mirror once the op finished - else COMPARE=sync
     * compared them whole when a kernel's unbounded pointer later marked
     * their allocation written. */
    bool at_op = how != NULL && sh_kind_is_prim(how->kind) && why == NULL;
    if (!deferred && (why != NULL || !g_compare_sync || to_host || at_op)) {
        xdev_shadow_unlock();
        xdev_shadow_wait_stream(q->stream->rec, q->stream->native);
        xdev_shadow_lock();
    }
    if (deferred) {
        /* copied into the mirrors later (settle) */
    } else if (why != NULL) {
        sweep_t s = {q, frames, nframes, replay, detail, false, NULL};
        if (replay) xdev_shadow_each(sweep_one, &s);
        for (int i = 0; i < n; i++) {
            sh_mirror_t *m;
            size_t len;
            if (xdev_shadow_clip(uses[i].p, uses[i].n, &m,
                                 &len)) /* reads too: a c2r FFT writes its input */
                xdev_shadow_resync(m, uses[i].p, len);
        }
        for (int i = 0; i < nwait; i++) {
            sh_mirror_t *m;
            size_t len;
            if (xdev_shadow_clip(wait_for[i].p, wait_for[i].n, &m, &len))
                xdev_shadow_resync(m, wait_for[i].p, len);
        }
    } else if (g_compare_sync && !at_op) {
        xdev_strbuf_t site = {0};
        xdev_call_site_describe(&site, frames, nframes);
        for (int i = 0; i < n; i++) {
            sh_mirror_t *m;
            size_t len;
            if (uses[i].mode != XDEV_OP_WRITE || !xdev_shadow_clip(uses[i].p, uses[i].n, &m, &len))
                continue;
            m->dirty = true;
            m->last_stream = q->stream;
            snprintf(m->last_op, sizeof m->last_op, "%s", q->name);
            snprintf(m->last_detail, sizeof m->last_detail, "%s", detail);
            snprintf(m->last_site, sizeof m->last_site, "%s", site.buf != NULL ? site.buf : "");
        }
        free(site.buf);
        if (to_host) { /* device data reaches the host: every written mirror is compared */
            const sh_mirror_t *src = NULL;
            for (int i = 0; i < p->n && src == NULL; i++)
                if (p->recs[i].kind == SH_COPY) src = xdev_shadow_find(p->recs[i].u.copy.src);
            sweep_t s = {q, frames, nframes, false, detail, false, src};
            xdev_shadow_each(sweep_one, &s);
            /* The copy's expected bytes came from the mirror before it took
             * the device's: compare the copy itself only when it was equal. */
            host_checked = !s.found;
        }
    } else {
        bool found = false;
        for (int i = 0; i < n; i++) {
            sh_mirror_t *m;
            size_t len;
            if (uses[i].mode != XDEV_OP_WRITE || !xdev_shadow_clip(uses[i].p, uses[i].n, &m, &len))
                continue;
            if (found) { /* one report per op: its other outputs are the device's too */
                if (before[i] == NULL) xdev_shadow_resync(m, uses[i].p, len);
                continue;
            }
            /* A primitive's operand: its element size, and a compaction's
             * outputs only up to the count (its first operand, compared). */
            sh_rec_t h;
            const sh_rec_t *hw = xdev_shadow_use_rec(how, &uses[i], &h);
            if (how != NULL && sh_kind_is_prim(how->kind)) {
                len = xdev_shadow_prim_written(how, m, uses[i].p, len, &h);
                hw = &h;
                if (len == 0) continue;
            }
            found = xdev_shadow_check_range(q, m, uses[i].p, len, hw, before[i], &span[i], detail,
                                            false, frames, nframes);
        }
    }
    if (at_op && g_compare_sync && how->u.prim.temp != NULL) {
        sh_mirror_t *m;
        size_t len;
        if (xdev_shadow_clip(how->u.prim.temp, how->u.prim.temp_bytes, &m, &len))
            xdev_shadow_resync(m, how->u.prim.temp, len);
    }
    /* Host outputs (copies to the host, BLAS results) against the replay's. */
    for (int i = 0; i < p->n && why == NULL && host_checked; i++) {
        (void)xdev_shadow_check_host(q, &p->recs[i], frames, nframes);
    }
    xdev_shadow_unlock();
    for (int i = 0; i < n; i++)
        free(before[i]);
    xdev_shadow_pending_clear(p);
    if (why != NULL) xdev_shadow_report_unmirrored(q, detail, why, frames, nframes);
}

/* ------------------------------------------------------------ public */

bool xdev_shadow_enabled(void) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    bool ok = xdev_core_ensure_init() == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    return ok && xdev_shadow_on;
}

uint64_t xdev_shadow_report_count(void) {
    return atomic_load(&g_count);
}

xdev_status_t xdev_shadow_report_get(uint64_t index, xdev_shadow_report_t *out) {
    XDEV_REQUIRE_ARG(out);
    pthread_mutex_lock(&g_report_lock);
    uint64_t n = atomic_load(&g_count);
    bool ok = index < n && index < XDEV_SHADOW_KEPT;
    if (ok) *out = g_kept[index];
    pthread_mutex_unlock(&g_report_lock);
    if (!ok)
        return XDEV_API_FAIL(XDEV_ERROR_NOT_FOUND,
                             "report %llu is not kept: %llu made, the first %d kept",
                             (unsigned long long)index, (unsigned long long)n, XDEV_SHADOW_KEPT);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_shadow_clear(void) {
    pthread_mutex_lock(&g_report_lock);
    atomic_store(&g_count, 0);
    g_nsaid = 0;
    g_stop_text[0] = '\0';
    atomic_store_explicit(&xdev_shadow_stopped, false, memory_order_release);
    pthread_mutex_unlock(&g_report_lock);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_shadow_set_handler(xdev_shadow_handler_t handler, void *user_data) {
    pthread_mutex_lock(&g_report_lock);
    g_handler = handler;
    g_handler_user = handler != NULL ? user_data : NULL;
    pthread_mutex_unlock(&g_report_lock);
    return XDEV_SUCCESS;
}

/* XDEV_SHADOW on: the observer joins step 5 (before any backend loads, so
 * no op is missed). */
static xdev_status_t start(void) {
    xdev_status_t st = read_env();
    if (st == XDEV_SUCCESS && xdev_shadow_on) st = xdev_enqueue_observer_add(shadow_observe, NULL);
    return st;
}

/* Wired when libxdev loads (core/wiring.c): XDEV_SHADOW's settings step and
 * the hook that puts the shadow's slots in front of each backend's. */
void xdev_shadow_wire(void) {
    xdev_hook_init_add(XDEV_INIT_SETTINGS, start);
    xdev_hook_backend_loaded_add(xdev_shadow_backend_loaded);
    xdev_hook_foreign_add(xdev_shadow_foreign);
    xdev_hook_group_end_add(xdev_shadow_group_ended);
    xdev_hook_thread_exit_add(xdev_shadow_thread_exit);
}
