/* SPDX-License-Identifier: Apache-2.0 */
/* rng_internal.h - generator state shared by the seeding API
 * (rng_generator.c) and the fills (rng.c).
 *
 * A generator is a seed and an offset under a lock (the allocator's spin
 * lock: every random fill and every graph replay with a random-number cell
 * takes it, and a pthread mutex pair cost ~50 instructions more; zeroed
 * storage is an unlocked lock). Default generators live in a static table,
 * one per (device type, logical index), initialised at first use;
 * manual_seed_all bumps a global epoch that each default generator adopts
 * the next time it is locked, so the call also covers devices of backends
 * that load later (the epoch is read without the seed-all lock, which is
 * taken only when it moved). Lock order: a generator's lock, then the
 * global seed-all lock. */
#ifndef XDEV_CORE_RNG_INTERNAL_H
#define XDEV_CORE_RNG_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/handle_arena.h"
#include "base/spin_lock.h"
#include "runtime/registry.h"
#include "xdev/rng.h"

typedef struct xdev_rng_gen {
    xdev_spin_lock_t lock;
    uint64_t seed;
    uint64_t offset; /* word position of the next fill */
    uint64_t epoch;  /* default generators: the manual_seed_all epoch applied */
    bool ready;      /* default generators: initialised */
} xdev_rng_gen_t;

struct xdev_generator {
    xdev_handle_header_t hdr;
    xdev_device_t device; /* resolved */
    xdev_rng_gen_t gen;
};

/* XDEV_ERROR_INVALID_HANDLE (NULL: INVALID_VALUE) naming `arg` unless g is live. */
xdev_status_t xdev_generator_check(xdev_generator_t g, const char *arg);

/* The default generator of a resolved device, locked, with any pending
 * manual_seed_all applied. Unlock with xdev_rng_unlock. */
xdev_rng_gen_t *xdev_rng_default_lock(xdev_device_type_t type, int index);

/* An explicit generator's state, locked. */
xdev_rng_gen_t *xdev_rng_generator_lock(xdev_generator_t g);

void xdev_rng_unlock(xdev_rng_gen_t *g);

/* Random fills in graphs (rng_capture.c). reserve: a fill of `count`
 * elements of `words` words each on capturing stream s draws from gen
 * (NULL: the default generator): its start relative to the graph and the
 * Philox cell it reads. finish: record the cells' advance at the capture's
 * end (on its origin stream). replay: before a replay on s, bring the cells
 * to the generators' state and advance the generators. release: free the
 * cells (the device has passed every replay). */
struct xdev_capture;
xdev_status_t xdev_rng_capture_reserve(struct xdev_capture *cap, xdev_generator_t gen,
                                       struct xdev_stream *s, unsigned words, uint64_t count,
                                       uint64_t *rel_start, const uint64_t **cell);
xdev_status_t xdev_rng_capture_finish(struct xdev_capture *cap);
xdev_status_t xdev_rng_capture_replay(struct xdev_capture *cap, struct xdev_stream *s);
void xdev_rng_capture_release(struct xdev_capture *cap);
/* A replay failed after (some of) the cells were written: rewrite them all
 * at the next replay instead of trusting what they hold. */
void xdev_rng_capture_forget(struct xdev_capture *cap);

#endif
