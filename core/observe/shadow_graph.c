/* SPDX-License-Identifier: Apache-2.0 */
/* shadow_graph.c - graph replays under shadow execution (shadow_internal.h).
 *
 * Work enqueued on a capturing stream runs only when the graph is replayed,
 * and the backend replays it as one launch. So at capture the shadow keeps,
 * for the capture, each op's records (taken from the thread's pending list
 * with their copied arguments, as for a live op), its written operands and
 * its call site; at each replay (step 5 of XDEV_OP_GRAPH_REPLAY) it replays
 * them on the mirrors in capture order, waits for the replay, and compares
 * each op's written operands with the device's, naming the op and its
 * capture call site. The device's bytes are those after the whole graph: an
 * op's output that a later op of the graph writes again is compared through
 * that later op (the first op in capture order whose last write differs is
 * named: a wrong memset then a copy of its buffer names the memset). A
 * capture holding an op the shadow cannot replay leaves its replays
 * unmirrored, as before: the mirrors take the device's bytes.
 *
 * Captures are told apart by their serial (runtime/capture.h), which the
 * replay finds through its graph; at most SH_GRAPHS are kept, the oldest
 * dropped (its replays then "not mirrored"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/call_site.h"
#include "observe/shadow_internal.h"
#include "runtime/capture.h"

#define SH_GRAPHS 64

typedef struct {
    char name[48];
    void *frames[XDEV_CALL_SITE_FRAMES];
    int nframes;
    xdev_op_use_t uses[XDEV_OP_MAX_USES];
    int nuses;
    sh_rec_t *recs;
    int nrecs;
} sh_gop_t;

typedef struct {
    uint64_t serial, id;
    sh_gop_t *ops;
    int n, cap;
    char why[256]; /* an op that cannot be replayed: every replay is unmirrored ("": none) */
    bool busy;     /* a replay uses it (not dropped meanwhile) */
} sh_gcap_t;

static sh_gcap_t *g_caps[SH_GRAPHS]; /* under the shadow's lock */
static int g_ncaps;
static uint64_t g_dropped_max; /* the newest serial dropped for room */

static void free_ops(sh_gop_t *ops, int n) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < ops[i].nrecs; j++) {
            if (ops[i].recs[j].kind == SH_LAUNCH) free(ops[i].recs[j].u.launch.heap);
            xdev_shadow_record_release(&ops[i].recs[j]);
        }
        free(ops[i].recs);
    }
    free(ops);
}

/* The kept capture of serial, made when make (lock held); *dropped: one
 * evicted to make room, freed by the caller without the lock. */
static sh_gcap_t *find(uint64_t serial, bool make, sh_gcap_t **dropped) {
    for (int i = 0; i < g_ncaps; i++)
        if (g_caps[i]->serial == serial) return g_caps[i];
    if (!make) return NULL;
    if (g_ncaps == SH_GRAPHS) {
        int victim = -1;
        for (int i = 0; i < g_ncaps && victim < 0; i++)
            if (!g_caps[i]->busy) victim = i;
        if (victim < 0) return NULL;
        *dropped = g_caps[victim];
        if (g_caps[victim]->serial > g_dropped_max) g_dropped_max = g_caps[victim]->serial;
        memmove(&g_caps[victim], &g_caps[victim + 1],
                (size_t)(g_ncaps - victim - 1) * sizeof g_caps[0]);
        g_ncaps--;
    }
    sh_gcap_t *c = calloc(1, sizeof *c);
    if (c != NULL) {
        c->serial = serial;
        g_caps[g_ncaps++] = c;
    }
    return c;
}

void xdev_shadow_graph_record(const xdev_enqueue_t *q, const xdev_op_use_t *uses, int n,
                              sh_pending_t *p) {
    const xdev_capture_t *cap = atomic_load_explicit(&q->stream->capture, memory_order_acquire);
    bool writes = false;
    for (int i = 0; i < n; i++)
        writes |= uses[i].mode == XDEV_OP_WRITE && uses[i].p != NULL && uses[i].n != 0;
    if (cap == NULL) {
        xdev_shadow_pending_clear(p);
        return;
    }
    bool nothing = p->n == 0 && !writes; /* events, waits: nothing to replay */
    const char *why = nothing       ? NULL
                      : p->overflow ? "more backend calls than the shadow keeps for one operation"
                      : p->n == 0   ? "the shadow does not replay this operation's backend call"
                                    : NULL;
    for (int i = 0; i < p->n && why == NULL; i++)
        why = p->recs[i].unmirrored;
    sh_gop_t op = {.nuses = n < XDEV_OP_MAX_USES ? n : XDEV_OP_MAX_USES};
    snprintf(op.name, sizeof op.name, "%s", q->name);
    if (op.nuses > 0) memcpy(op.uses, uses, (size_t)op.nuses * sizeof uses[0]);
    op.nframes = xdev_call_site_capture(op.frames, XDEV_CALL_SITE_FRAMES);
    if (why == NULL && !nothing) {
        op.recs = malloc((size_t)p->n * sizeof *op.recs);
        if (op.recs == NULL) why = "no host memory for the shadow's records of a captured op";
    }
    sh_gcap_t *dropped = NULL;
    xdev_shadow_lock();
    sh_gcap_t *c = find(cap->serial, true, &dropped);
    bool kept = false;
    if (c != NULL) {
        c->id = cap->id;
        if (nothing) {
            /* the capture is known (an empty graph is one), the op not kept */
        } else if (why == NULL && c->n == c->cap) {
            int nc = c->cap ? 2 * c->cap : 8;
            sh_gop_t *r = realloc(c->ops, (size_t)nc * sizeof *r);
            if (r == NULL)
                why = "no host memory for the shadow's records of a captured op";
            else {
                c->ops = r;
                c->cap = nc;
            }
        }
        if (nothing) {
        } else if (why == NULL) { /* the records move to the capture: p gives them up unfreed */
            memcpy(op.recs, p->recs, (size_t)p->n * sizeof *op.recs);
            op.nrecs = p->n;
            c->ops[c->n++] = op;
            p->n = 0;
            kept = true;
        } else if (c->why[0] == '\0') {
            snprintf(c->why, sizeof c->why,
                     "its capture holds an op the shadow cannot replay (%s): %s", q->name, why);
        }
    }
    xdev_shadow_unlock();
    if (!kept) free(op.recs);
    if (dropped != NULL) {
        free_ops(dropped->ops, dropped->n);
        free(dropped);
    }
    xdev_shadow_pending_clear(p);
}

/* Does an op after op i write bytes of [a, a + len)? */
static bool written_later(const sh_gcap_t *c, int i, uintptr_t a, size_t len,
                          span_t *const *spans) {
    for (int j = i + 1; j < c->n; j++)
        for (int u = 0; u < c->ops[j].nuses; u++) {
            const xdev_op_use_t *w = &c->ops[j].uses[u];
            if (w->mode != XDEV_OP_WRITE || w->p == NULL) continue;
            uintptr_t b = (uintptr_t)w->p;
            size_t n = w->n;
            if (n == SIZE_MAX) { /* a kernel's pointer: what its replay wrote */
                b += spans[j][u].lo;
                n = spans[j][u].hi - spans[j][u].lo;
            }
            if (n != 0 && b < a + len && a < b + n) return true;
        }
    return false;
}

bool xdev_shadow_graph_replay(const xdev_enqueue_t *q, sh_pending_t *p, void *const *frames,
                              int nframes, const char **why) {
    uint64_t serial = xdev_graph_capture_serial(q->ctx);
    sh_gcap_t *c = find(serial, false, NULL);
    if (c == NULL && serial > g_dropped_max) { /* nothing was enqueued in its capture */
        xdev_shadow_replay(p);
        for (int i = 0; i < p->n; i++)
            if (p->recs[i].unmirrored != NULL) {
                *why = p->recs[i].unmirrored;
                return false;
            }
        return true;
    }
    if (c == NULL || c->why[0] != '\0') {
        *why = c != NULL ? c->why
                         : "the shadow dropped its records of this graph's capture (it keeps "
                           "the newest 64 captures)";
        return false;
    }
    /* What the replay's own calls did first (the random-number cells). */
    xdev_shadow_replay(p);
    for (int i = 0; i < p->n; i++)
        if (p->recs[i].unmirrored != NULL) {
            *why = p->recs[i].unmirrored;
            return false;
        }
    c->busy = true;
    span_t **spans = calloc((size_t)c->n + 1, sizeof *spans);
    sh_rec_t **scratch = calloc((size_t)c->n + 1, sizeof *scratch); /* each op's replayed records */
    *why = spans == NULL || scratch == NULL ? "no host memory for a graph's replay" : NULL;
    /* Replay op by op, keeping what a kernel's replay wrote of its pointers. */
    for (int i = 0; i < c->n && *why == NULL; i++) {
        sh_gop_t *op = &c->ops[i];
        spans[i] = calloc((size_t)op->nuses + 1, sizeof **spans);
        scratch[i] = calloc((size_t)op->nrecs + 1, sizeof **scratch);
        if (spans[i] == NULL || scratch[i] == NULL) {
            *why = "no host memory for a graph's replay";
            break;
        }
        unsigned char *before[XDEV_OP_MAX_USES] = {0};
        for (int u = 0; u < op->nuses; u++) {
            sh_mirror_t *m;
            size_t len;
            if (op->uses[u].mode == XDEV_OP_WRITE && op->uses[u].n == SIZE_MAX &&
                xdev_shadow_clip(op->uses[u].p, op->uses[u].n, &m, &len) &&
                (before[u] = malloc(len)) != NULL)
                memcpy(before[u], m->mirror + ((uintptr_t)op->uses[u].p - m->base), len);
        }
        sh_pending_t tmp = {.n = op->nrecs};
        memcpy(tmp.recs, op->recs, (size_t)op->nrecs * sizeof *op->recs);
        for (int r = 0; r < tmp.n; r++)
            tmp.recs[r].scratch = NULL;
        xdev_shadow_replay(&tmp);
        memcpy(scratch[i], tmp.recs, (size_t)op->nrecs * sizeof *op->recs);
        for (int u = 0; u < op->nuses; u++) {
            sh_mirror_t *m;
            size_t len;
            sh_rec_t as_fp;
            if (before[u] != NULL && xdev_shadow_clip(op->uses[u].p, op->uses[u].n, &m, &len))
                spans[i][u] = xdev_shadow_written_span(
                    m->mirror + ((uintptr_t)op->uses[u].p - m->base), before[u], len,
                    xdev_shadow_use_rec(op->nrecs > 0 ? &op->recs[op->nrecs - 1] : NULL,
                                        &op->uses[u], &as_fp));
            free(before[u]);
        }
        for (int r = 0; r < tmp.n && *why == NULL; r++)
            *why = tmp.recs[r].unmirrored;
    }
    /* The device's bytes once the replay finished. */
    xdev_shadow_unlock();
    xdev_shadow_wait_stream(q->stream->rec, q->stream->native);
    xdev_shadow_lock();
    bool found = *why != NULL; /* unmirrored: the mirrors take the device's bytes below */
    for (int i = 0; i < c->n && spans != NULL && scratch != NULL; i++) {
        sh_gop_t *op = &c->ops[i];
        if (spans[i] == NULL) break;
        const sh_rec_t *how = op->nrecs > 0 ? &op->recs[op->nrecs - 1] : NULL;
        char detail[256];
        snprintf(detail, sizeof detail, "%s; captured in graph %llu, replayed",
                 how != NULL ? how->detail : op->name, (unsigned long long)c->id);
        xdev_enqueue_t fq = *q;
        fq.name = op->name;
        for (int u = 0; u < op->nuses; u++) {
            const xdev_op_use_t *w = &op->uses[u];
            sh_mirror_t *m;
            size_t len;
            if (w->mode != XDEV_OP_WRITE || !xdev_shadow_clip(w->p, w->n, &m, &len)) continue;
            uintptr_t a = (uintptr_t)w->p;
            if (w->n == SIZE_MAX) {
                a += spans[i][u].lo;
                len = spans[i][u].hi - spans[i][u].lo;
            }
            if (len == 0) continue;
            if (found) {
                xdev_shadow_resync(m, (const void *)a, len);
            } else if (!written_later(c, i, a, len, spans)) {
                /* a primitive's operand: its element size and count (shadow.c) */
                sh_rec_t h;
                const sh_rec_t *hw = xdev_shadow_use_rec(how, w, &h);
                if (how != NULL && sh_kind_is_prim(how->kind)) {
                    len = xdev_shadow_prim_written(how, m, (const void *)a, len, &h);
                    hw = &h;
                }
                if (len != 0)
                    found = xdev_shadow_check_range(&fq, m, (const void *)a, len, hw, NULL, NULL,
                                                    detail, false, op->frames, op->nframes);
            }
        }
        for (int r = 0; r < op->nrecs && !found && scratch[i] != NULL; r++)
            found = xdev_shadow_check_host(&fq, &scratch[i][r], op->frames, op->nframes);
    }
    if (found) /* later ops' outputs too: one report per fault */
        for (int i = 0; i < c->n; i++)
            for (int u = 0; u < c->ops[i].nuses; u++) {
                const xdev_op_use_t *w = &c->ops[i].uses[u];
                sh_mirror_t *m;
                size_t len;
                if (w->mode == XDEV_OP_WRITE && xdev_shadow_clip(w->p, w->n, &m, &len))
                    xdev_shadow_resync(m, w->p, len);
            }
    for (int i = 0; i < c->n && spans != NULL && scratch != NULL; i++) {
        free(spans[i]);
        if (scratch[i] != NULL)
            for (int r = 0; r < c->ops[i].nrecs; r++)
                free(scratch[i][r].scratch);
        free(scratch[i]);
    }
    free(spans);
    free(scratch);
    c->busy = false;
    (void)frames;
    (void)nframes;
    return *why == NULL;
}
