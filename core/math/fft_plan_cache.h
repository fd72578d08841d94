/* SPDX-License-Identifier: Apache-2.0 */
/* fft_plan_cache.h - the per-device LRU cache of backend FFT plans
 * (torch.backends.cuda.cufft_plan_cache), shared by every backend.
 *
 * One cache per (device type, logical device), created on first use. A key
 * holds everything that makes two plans differ, normalised (no defaults
 * left) so that equal layouts written differently share a plan. The cache's
 * lock is held from taking the plan through the backend's exec call, as
 * torch does: a plan is never evicted while a thread is enqueuing it, and
 * backends need not make one plan safe for concurrent execs. The exec's
 * work area is allocated with the lock released (an allocation that fails
 * calls the OOM observers, which may call the FFT functions): a lookup that
 * finds it too small takes nothing and counts nothing (a plan it had to
 * make stays the exec's own), and the exec looks again once it holds the
 * area (math/fft.c). A destroyed stream's plans leave with it (runtime's
 * stream-destroy hook, xdev_fft_cache_wire). */
#ifndef XDEV_CORE_FFT_PLAN_CACHE_H
#define XDEV_CORE_FFT_PLAN_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/registry.h"
#include "xdev/fft.h"

#define XDEV_FFT_PLAN_CACHE_DEFAULT_MAX 4096

/* All int64_t, so keys compare and hash as bytes (no padding). */
typedef struct xdev_fft_key {
    int64_t type, precision, rank;
    int64_t n[XDEV_FFT_MAX_RANK];
    int64_t batch;
    int64_t inembed[XDEV_FFT_MAX_RANK];
    int64_t istride, idist;
    int64_t onembed[XDEV_FFT_MAX_RANK];
    int64_t ostride, odist;
    /* The stream (its handle slot and that slot's generation): a cuFFT or
     * hipFFT plan must not run on two streams at once (its launch state is
     * per plan), so each stream gets its own plan. */
    int64_t stream, stream_generation;
} xdev_fft_key_t;

typedef struct xdev_fft_cache xdev_fft_cache_t;

/* Each device's cache once made (read by xdev_fft_cache_get; written once
 * per device, under fft_plan_cache.c's creation lock; never freed). */
extern _Atomic(xdev_fft_cache_t *) xdev_fft_caches[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];

/* xdev_fft_cache_get's first call for a device: make its cache. */
xdev_status_t xdev_fft_cache_create(xdev_backend_t *be, int index, xdev_fft_cache_t **out);

/* The cache of a resolved device of `be`, created on first use. Inline: an
 * exec's lookup is one load (a call cost ~25 instructions). */
static inline xdev_status_t xdev_fft_cache_get(xdev_backend_t *be, int index,
                                               xdev_fft_cache_t **out) {
    xdev_fft_cache_t *c =
        atomic_load_explicit(&xdev_fft_caches[be->type][index], memory_order_acquire);
    if (__builtin_expect(c != NULL, 1)) {
        *out = c;
        return XDEV_SUCCESS;
    }
    return xdev_fft_cache_create(be, index, out);
}

void xdev_fft_cache_lock(xdev_fft_cache_t *c);
/* Unlock, then destroy the plans evicted meanwhile (waiting for the device
 * without the lock). */
void xdev_fft_cache_unlock(xdev_fft_cache_t *c);

/* Where a thread found its last plan: the entry and the cache's drop count
 * then. While the count is unchanged the entry is still cached, under the
 * same key (entries are freed only after they are dropped, and every drop
 * counts), so a thread that runs the same transform again on the same
 * stream may take it without hashing the key (xdev_fft_cache_acquire_again).
 * Zeroed: none. */
typedef struct xdev_fft_hit {
    xdev_fft_cache_t *c;
    void *entry;
    uint64_t drops;
} xdev_fft_hit_t;

/* How the exec takes its plan (`how` below, bits). */
enum {
    /* its stream is being destroyed (closing): a miss is not cached but
     * transient, since that stream's plans are being removed (the stream
     * destroy hook) and one inserted now would outlive it */
    XDEV_FFT_TAKE_NO_INSERT = 1u,
    /* into a capture: the graph's kernels use the plan, so destroying the
     * stream does not remove it (an eviction or a clear still may, as in
     * torch) */
    XDEV_FFT_TAKE_CAPTURED = 2u,
};

/* With the lock held: the plan for `key` (about to be executed) when its
 * work area fits in the `have` bytes the exec holds, from the cache (a hit,
 * now most recently used) or created by the backend (a miss, inserted,
 * evicting the least recently used plan beyond max_size), taken as `how`
 * says; *work_size is the plan's work area and *hit records where it is
 * (its entry NULL when the plan is transient). An evicted plan is destroyed
 * only after its device has finished the work queued so far. With max_size
 * 0 (or NO_INSERT) the new plan is not cached: *transient is set and the
 * caller synchronizes the exec's stream and destroys it with
 * xdev_fft_cache_destroy_plan after use.
 * When the work area does not fit, nothing is counted and the caller
 * allocates *work_size bytes with the lock released (an allocation that
 * fails calls the OOM observers, which may call the FFT functions):
 *   - a cached plan: *plan is NULL; *hit says where it was, for
 *     xdev_fft_cache_acquire_again;
 *   - a plan made now: *plan is it, the caller's own (not cached, not
 *     counted), for xdev_fft_cache_insert_made, or for
 *     xdev_fft_cache_destroy_plan (it never ran) when the exec fails.
 * So the statistics count one lookup per exec that gets its work area, and
 * every miss made the plan it counts. */
xdev_status_t xdev_fft_cache_acquire_hit(xdev_fft_cache_t *c, const xdev_fft_key_t *key,
                                         unsigned how, size_t have, void **plan, size_t *work_size,
                                         bool *transient, xdev_fft_hit_t *hit);

/* With the lock held: true when the entry of `hit` is still in c, with its
 * plan taken as xdev_fft_cache_acquire_hit takes a cached one (*plan NULL,
 * nothing counted, when its work area does not fit in `have`); false
 * (nothing changed) when it may not be. */
bool xdev_fft_cache_acquire_again(xdev_fft_cache_t *c, const xdev_fft_hit_t *hit, unsigned how,
                                  size_t have, void **plan, size_t *work_size);

/* With the lock held: `made`, a plan xdev_fft_cache_acquire_hit made for
 * `key` whose work area (made_work bytes) the exec now holds (have >=
 * made_work). When another exec cached a plan for key meanwhile, *spare =
 * made, for the caller to destroy after unlocking (it never ran), and that
 * plan is taken (a hit) if its work area fits in `have`, else nothing is
 * taken or counted (*plan NULL, *work_size its size, *hit where it is, as
 * acquire_hit answers a cached plan that does not fit). Without one, made
 * is counted as a miss and inserted, or transient as acquire_hit says. */
void xdev_fft_cache_insert_made(xdev_fft_cache_t *c, const xdev_fft_key_t *key, unsigned how,
                                void *made, size_t made_work, size_t have, void **plan,
                                size_t *work_size, bool *transient, xdev_fft_hit_t *hit,
                                void **spare);

/* Give a plan back to the backend (no lock needed; the caller has waited
 * for the work that used it). */
void xdev_fft_cache_destroy_plan(xdev_fft_cache_t *c, void *plan);

#endif
