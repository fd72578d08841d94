/* SPDX-License-Identifier: Apache-2.0 */
/* rng_capture.c - random fills inside graphs (xdev/graph.h, "Random numbers").
 *
 * A fill recorded in a capture cannot carry the generator's offset by
 * value: each replay must draw new numbers. So a captured fill reads its
 * Philox key and base offset from a small device cell (the fill
 * descriptor's philox_state) and carries only its offset relative to the
 * graph's start. Per generator the capture keeps one cell of 4 words: key,
 * base offset, the graph's total draw, 0. The capture ends with an ops.add
 * of the total into the base, recorded on the origin stream after
 * everything else, so a replay leaves the cell ready for the next one; a
 * replay writes the cell (ops.fill) only when the generator moved in
 * between (eager fills, a reseed) - the steady replay loop costs nothing.
 * Each replay starts at the generator's offset rounded up to 4 words and
 * advances it by the total (rounded up to 4 words too), so it draws what
 * eager fills from there would. */
#include <string.h>

#include "base/error_internal.h"
#include "math/rng_internal.h"
#include "alloc/alloc_internal.h"
#include "runtime/capture.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/enqueue.h"
#include "runtime/stream_internal.h"

#define CELL_BYTES (4 * sizeof(uint64_t))

/* The entry of generator gen in cap (lock held), or -1. */
static int find_rng(const xdev_capture_t *cap, xdev_generator_t gen) {
    for (int i = 0; i < cap->nrng; i++)
        if (cap->rng[i].generator == (void *)gen) return i;
    return -1;
}

xdev_status_t xdev_rng_capture_reserve(xdev_capture_t *cap, xdev_generator_t gen, xdev_stream_t s,
                                       unsigned words, uint64_t count, uint64_t *rel_start,
                                       const uint64_t **cell) {
    if (!XDEV_HAS(s->be, ops, fill) || !XDEV_HAS(s->be, ops, add))
        return xdev_backend_not_supported(s->be, "ops.fill and ops.add (random fills in graphs)");
    pthread_mutex_lock(&cap->lock);
    int i = find_rng(cap, gen);
    pthread_mutex_unlock(&cap->lock);
    void *fresh = NULL;
    if (i < 0) { /* a cell from the capture's pool, allocated without the lock */
        xdev_status_t st = xdev_alloc_malloc_on(s, CELL_BYTES, &fresh);
        if (st != XDEV_SUCCESS) return st;
    }
    pthread_mutex_lock(&cap->lock);
    i = find_rng(cap, gen); /* another thread's fill may have added it meanwhile */
    bool full = i < 0 && cap->nrng == XDEV_CAPTURE_MAX_RNG;
    if (i < 0 && !full) {
        i = cap->nrng++;
        memset(&cap->rng[i], 0, sizeof cap->rng[i]);
        cap->rng[i].generator = gen;
        cap->rng[i].cell = fresh;
        fresh = NULL;
    }
    if (!full) {
        xdev_capture_rng_t *e = &cap->rng[i];
        uint64_t start = e->total;
        if (start % words != 0) start += words - start % words;
        e->total = start + count * words;
        *rel_start = start;
        *cell = e->cell;
    }
    pthread_mutex_unlock(&cap->lock);
    if (fresh != NULL) (void)xdev_alloc_free(fresh);
    if (full)
        return XDEV_FAIL(XDEV_ERROR_CAPTURE, "a graph may draw from at most %d generators",
                         XDEV_CAPTURE_MAX_RNG);
    return XDEV_SUCCESS;
}

/* The cell's advance at the graph's end (q->ctx the cell). */
static xdev_status_t advance_call(xdev_enqueue_t *q) {
    uint64_t *cell = q->ctx;
    xdev_status_t st =
        xdev_be_ops_add(q->stream->rec, &cell[1], &cell[2], XDEV_DTYPE_I64, 1, q->stream->native);
    q->cancel = st != XDEV_SUCCESS;
    return st;
}

xdev_status_t xdev_rng_capture_finish(xdev_capture_t *cap) {
    xdev_stream_t s = cap->origin;
    for (int i = 0; i < cap->nrng; i++) {
        /* whole Philox blocks: the next replay's rounded start is where
         * this one left the cell, so steady replays write nothing */
        cap->rng[i].total = (cap->rng[i].total + 3) & ~(uint64_t)3;
        uint64_t *cell = cap->rng[i].cell;
        /* Recorded through the enqueue path like every op (its observers
         * see it: shadow execution replays it with the graph); no span and
         * no XDEV_LAUNCH_BLOCKING wait, as a capture's own work. */
        const xdev_op_use_t uses[2] = {{&cell[2], sizeof cell[2], XDEV_OP_READ, 0},
                                       {&cell[1], sizeof cell[1], XDEV_OP_WRITE, 0}};
        xdev_enqueue_t q = {.kind = XDEV_OP_RNG,
                            .name = "rng_capture_advance",
                            .stream = s,
                            .rec = s->rec,
                            .ctx = cell,
                            .flags = XDEV_ENQUEUE_NO_SPAN | XDEV_ENQUEUE_WAIT_LATER,
                            .uses = uses,
                            .nuses = 2,
                            .call = advance_call};
        xdev_status_t st = xdev_enqueue(&q);
        if (st != XDEV_SUCCESS) return st;
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_rng_capture_replay(xdev_capture_t *cap, xdev_stream_t s) {
    for (int i = 0; i < cap->nrng; i++) {
        xdev_capture_rng_t *e = &cap->rng[i];
        xdev_generator_t gen = e->generator;
        if (gen != NULL) {
            xdev_status_t st = xdev_generator_check(gen, "the graph's generator");
            if (st != XDEV_SUCCESS) {
                xdev_rng_capture_forget(cap);
                return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE,
                                 "the graph draws from a generator that has been destroyed");
            }
        }
        xdev_rng_gen_t *g = gen != NULL ? xdev_rng_generator_lock(gen)
                                        : xdev_rng_default_lock(s->device.type, s->device.index);
        uint64_t base = (g->offset + 3) & ~(uint64_t)3, end;
        if (base < g->offset || __builtin_add_overflow(base, e->total, &end)) {
            xdev_rng_unlock(g);
            xdev_rng_capture_forget(cap);
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the generator's offset (%llu words) leaves no room for the graph's "
                             "%llu words before 2^64; reseed it",
                             (unsigned long long)g->offset, (unsigned long long)e->total);
        }
        xdev_status_t st = XDEV_SUCCESS;
        if (!e->total_written) {
            const uint64_t tail[2] = {e->total, 0};
            st = xdev_be_ops_fill(s->rec, &e->cell[2], tail, sizeof tail, 1, s->native);
            e->total_written = st == XDEV_SUCCESS;
        }
        if (st == XDEV_SUCCESS && (!e->known || e->key != g->seed || e->next_offset != base)) {
            const uint64_t head[2] = {g->seed, base};
            st = xdev_be_ops_fill(s->rec, &e->cell[0], head, sizeof head, 1, s->native);
        }
        if (st == XDEV_SUCCESS) {
            g->offset = end;
            e->known = true;
            e->key = g->seed;
            e->next_offset = end;
        } else {
            e->known = false;
        }
        xdev_rng_unlock(g);
        if (st != XDEV_SUCCESS) {
            xdev_rng_capture_forget(cap);
            return st;
        }
    }
    return XDEV_SUCCESS;
}

void xdev_rng_capture_forget(xdev_capture_t *cap) {
    for (int i = 0; i < cap->nrng; i++)
        cap->rng[i].known = false;
}

void xdev_rng_capture_release(xdev_capture_t *cap) {
    for (int i = 0; i < cap->nrng; i++)
        if (cap->rng[i].cell != NULL) (void)xdev_alloc_free(cap->rng[i].cell);
    cap->nrng = 0;
}
