/* SPDX-License-Identifier: Apache-2.0 */
/* shadow_collective.c - the outputs of collectives in shadow execution: the
 * shadow replays no collective, so what one wrote reaches the mirrors as
 * the device's bytes, taken in stream order (step 5 of shadow.c defers
 * them here; inside a group, until the group ends). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "comm/comm_record.h"
#include "observe/shadow_internal.h"
#include "runtime/device_record.h"
#include "runtime/enqueue.h"
#include "runtime/stream_internal.h"

/* The outputs of a collective that was not replayed, to copy into the
 * mirrors once its stream passes it. A collective's ranks meet on their
 * streams, and the next rank is enqueued after this one's step 5 (a group,
 * one thread): waiting here would wait for a rank not yet enqueued. So the
 * bytes are taken in stream order instead: a copy into staging memory is
 * enqueued right behind the collective (xdev_shadow_stage), then a mark;
 * once a later op finds the mark reached, or before a later op that uses
 * the bytes is replayed, the staging is copied into the mirror (lock held).
 * Reading the device's bytes then instead raced with a later collective on
 * the same buffer, which another rank's thread runs (ThreadSanitizer saw it
 * in cpu/communicator.shadow); the staging copy is the collective's output
 * exactly, whatever runs after it. */
static sh_deferred_t g_deferred[SH_DEFERRED];
static int g_ndeferred;

static bool overlaps_any(const void *p, size_t n, const xdev_op_use_t *uses, int nuses) {
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    for (int i = 0; i < nuses; i++) {
        uintptr_t a = (uintptr_t)uses[i].p;
        uintptr_t b = uses[i].n > UINTPTR_MAX - a ? UINTPTR_MAX : a + uses[i].n;
        if (a < hi && lo < b) return true;
    }
    return false;
}

/* A deferred collective's output into its mirror (its mark reached; lock
 * held): from the staging, or the device's bytes where there is none. */
void xdev_shadow_apply_deferred(const sh_deferred_t *e) {
    sh_mirror_t *m;
    size_t len;
    bool mirrored = xdev_shadow_clip(e->p, e->n, &m, &len);
    if (e->staging != NULL)
        xdev_shadow_unstage(&e->where, e->staging,
                            mirrored && len == e->n ? xdev_shadow_to_mirror(e->p) : NULL, e->n);
    else if (mirrored)
        xdev_shadow_resync(m, e->p, len);
}

/* Copy into the mirrors what the deferred collectives wrote whose stream
 * passed them; move those whose bytes this op uses into out (their marks to
 * be waited for without the lock: the collective may wait for a rank whose
 * thread waits for the lock). Returns how many were moved. */
int xdev_shadow_settle(const xdev_op_use_t *uses, int n, sh_deferred_t *out) {
    int kept = 0, moved = 0;
    if (g_ndeferred == 0) return 0;
    for (int i = 0; i < g_ndeferred; i++) {
        if (overlaps_any(g_deferred[i].p, g_deferred[i].n, uses, n))
            out[moved++] = g_deferred[i];
        else if (xdev_shadow_mark_reached(g_deferred[i].rec, g_deferred[i].mark, false))
            xdev_shadow_apply_deferred(&g_deferred[i]);
        else
            g_deferred[kept++] = g_deferred[i];
    }
    g_ndeferred = kept;
    return moved;
}

/* The outputs of collectives enqueued inside a group (xdev_group_start ..
 * end) on some thread: a backend may launch a group's collectives only at
 * its end (NCCL does), so a staging copy enqueued now would run before the
 * collective and take the bytes it has not written yet (the comm and
 * communicator suites under XDEV_SHADOW=cpu on two H200s). They wait here,
 * by thread, until that thread's group ends (xdev_shadow_group_ended), or
 * go when the thread exits inside it. Lock held. */
typedef struct {
    pthread_t owner;
    xdev_device_record_t *rec;
    void *native;
    const void *p;
    size_t n;
} grouped_t;
static grouped_t *g_grouped; /* grows: a group may hold any number of collectives */
static int g_ngrouped, g_cgrouped;

/* Room for one more grouped range (lock held); false without memory. */
static bool grouped_room(void) {
    if (g_ngrouped < g_cgrouped) return true;
    int cap = g_cgrouped ? 2 * g_cgrouped : 64;
    grouped_t *g = realloc(g_grouped, (size_t)cap * sizeof *g);
    if (g == NULL) return false;
    g_grouped = g;
    g_cgrouped = cap;
    return true;
}

/* This thread's ranges out of the list (lock held): into *out (malloc'd,
 * NULL when none or without memory: then they are dropped, their mirrors
 * left as they were); returns how many were taken. */
static int take_mine(grouped_t **out) {
    const pthread_t me = pthread_self();
    int nmine = 0, kept = 0;
    for (int i = 0; i < g_ngrouped; i++)
        nmine += pthread_equal(g_grouped[i].owner, me) != 0;
    *out = nmine > 0 ? malloc((size_t)nmine * sizeof **out) : NULL;
    nmine = 0;
    for (int i = 0; i < g_ngrouped; i++) {
        if (!pthread_equal(g_grouped[i].owner, me))
            g_grouped[kept++] = g_grouped[i];
        else if (*out != NULL)
            (*out)[nmine++] = g_grouped[i];
    }
    g_ngrouped = kept;
    return nmine;
}

/* Defer the copy of [p, p + n) (within mirror m) into its mirror until the
 * stream `native` of rec passes a mark recorded now, the bytes staged
 * behind what is queued on it; false when there is no room or no mark. */
static bool defer_now(xdev_device_record_t *rec, void *native, sh_mirror_t *m, const void *p,
                      size_t len) {
    if (g_ndeferred == SH_DEFERRED) return false;
    sh_mirror_t where = {.type = m->type, .ctx = m->ctx, .host_memory = m->host_memory};
    void *staging = xdev_shadow_stage(rec, native, m, p, len);
    void *mark = xdev_shadow_mark(rec, native);
    if (mark == NULL) {
        /* The staging copy may be queued: it is freed once the stream passed it. */
        if (staging != NULL) xdev_shadow_wait_stream(rec, native);
        xdev_shadow_unstage(&where, staging, NULL, 0);
        return false;
    }
    g_deferred[g_ndeferred++] = (sh_deferred_t){rec, mark, p, len, staging, where};
    return true;
}

/* Defer the copy of [p, p + n) into its mirror until q's stream passes the
 * collective (inside a group: until the group ends); false when there is
 * no room or no mark. */
static bool defer_range(const xdev_enqueue_t *q, const void *p, size_t n) {
    sh_mirror_t *m;
    size_t len;
    if (!xdev_shadow_clip(p, n, &m, &len)) return true;
    if (xdev_comm_group_depth() == 0)
        return defer_now(q->stream->rec, q->stream->native, m, p, len);
    if (!grouped_room()) return false;
    (void)xdev_thread_state(); /* so that its exit hook runs (runtime/hooks.h) */
    g_grouped[g_ngrouped++] =
        (grouped_t){pthread_self(), q->stream->rec, q->stream->native, p, len};
    return true;
}

/* This thread's group ended (runtime/hooks.h): its collectives are
 * launched, so their outputs are staged behind them now; where that cannot
 * be, the device's bytes once the stream passed them (no rank is left to
 * enqueue: waiting is safe). */
void xdev_shadow_group_ended(void) {
    if (!xdev_shadow_on) return;
    grouped_t *mine;
    xdev_shadow_lock();
    const int nmine = take_mine(&mine);
    for (int i = 0; i < nmine; i++) {
        sh_mirror_t *m;
        size_t len;
        if (!xdev_shadow_clip(mine[i].p, mine[i].n, &m, &len) ||
            defer_now(mine[i].rec, mine[i].native, m, mine[i].p, len))
            continue;
        xdev_shadow_unlock();
        xdev_shadow_wait_stream(mine[i].rec, mine[i].native);
        xdev_shadow_lock();
        if (xdev_shadow_clip(mine[i].p, mine[i].n, &m, &len)) xdev_shadow_resync(m, mine[i].p, len);
    }
    xdev_shadow_unlock();
    free(mine);
}

/* A thread that exits inside a group (its collectives never launched):
 * its ranges go, so that no later thread given the same id takes them. */
void xdev_shadow_thread_exit(void) {
    if (!xdev_shadow_on) return;
    grouped_t *mine;
    xdev_shadow_lock();
    (void)take_mine(&mine);
    xdev_shadow_unlock();
    free(mine);
}

/* Defer the copy of a collective's outputs (what it writes: what it reads
 * is in the mirrors already), and of earlier collectives' it waited for
 * that had no staging (wait[0..nwait)); false when that is not possible
 * (the caller then waits). */
bool xdev_shadow_defer(const xdev_enqueue_t *q, const xdev_op_use_t *uses, int n,
                       const sh_deferred_t *wait, int nwait) {
    int writes = 0;
    for (int i = 0; i < n; i++)
        writes += uses[i].mode == XDEV_OP_WRITE;
    /* (inside a group the ranges wait in their own, growing list) */
    if (xdev_comm_group_depth() == 0 && g_ndeferred + writes + nwait > SH_DEFERRED) return false;
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        if (uses[i].mode == XDEV_OP_WRITE) ok = defer_range(q, uses[i].p, uses[i].n);
    for (int i = 0; i < nwait && ok; i++)
        ok = defer_range(q, wait[i].p, wait[i].n);
    return ok;
}
