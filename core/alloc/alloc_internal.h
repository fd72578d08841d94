/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_internal.h - data structures of the device caching allocator.
 *
 * Per device: segments obtained from the backend, cut into blocks. Free
 * blocks live in size-class bins of the stream pool they were allocated on
 * (a block is reused only on its own stream). Each bin keeps its blocks
 * sorted by (size, address), so the first fit found walking up from the
 * request's class is the best fit. A bitmap of non-empty bins makes the
 * walk O(1) for the common case.
 *
 * Arenas: a device's caching allocator is one or more arenas, each a whole
 * allocator (segments, stream pools, live table, statistics) under its own
 * lock. Every thread starts on the first (the "primary", which also holds
 * the device-wide settings and the history ring); a thread that keeps
 * finding its arena's lock held moves to an arena of its own, so threads
 * churning one device stop queueing on one lock. A block is freed into the
 * arena that handed it out, whichever thread frees it. Device figures are
 * the sum over arenas (see alloc_stats.c for what that means for peaks). */
#ifndef XDEV_CORE_ALLOC_INTERNAL_H
#define XDEV_CORE_ALLOC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc/alloc_config.h"
#include "runtime/trace_probe.h"
#include "runtime/registry.h"
#include "base/spin_lock.h"
#include "xdev/allocator.h"

#define XDEV_KIB ((size_t)1 << 10)
#define XDEV_MIB ((size_t)1 << 20)
#define XDEV_MIN_BLOCK ((size_t)512)         /* all sizes are rounded to this */
#define XDEV_SMALL_SIZE XDEV_MIB             /* largest "small" request */
#define XDEV_SMALL_BUFFER (2 * XDEV_MIB)     /* small-pool segment size */
#define XDEV_LARGE_BUFFER (20 * XDEV_MIB)    /* segment for 1-10 MiB requests */
#define XDEV_MIN_LARGE_ALLOC (10 * XDEV_MIB) /* from here, round to 2 MiB */
#define XDEV_ROUND_LARGE (2 * XDEV_MIB)
/* Largest request any allocator mode accepts (256 TiB, beyond every device):
 * keeps every size computation (rounding, segment sizing, statistics in
 * int64_t) far from overflow. Larger requests fail as out of memory. */
#define XDEV_MAX_ALLOC_SIZE ((size_t)1 << 48)

/* Size-class bins: 4 coarse bins below 64 KiB... every power of two from
 * 2^9 to 2^47 split into XDEV_BIN_SUB sub-bins. */
#define XDEV_BIN_SUB_LOG2 3
#define XDEV_BIN_SUB (1 << XDEV_BIN_SUB_LOG2)
#define XDEV_BIN_MIN_LOG2 9
#define XDEV_BIN_LEVELS 40
#define XDEV_BIN_COUNT (XDEV_BIN_LEVELS * XDEV_BIN_SUB)

enum { XDEV_POOL_SMALL = 0, XDEV_POOL_LARGE = 1, XDEV_POOL_KINDS = 2 };
/* The pool kind xdev_alloc_each_segment gives a managed allocation's segment. */
#define XDEV_SEGMENT_MANAGED 2

typedef enum {
    XDEV_BLOCK_FREE = 0,         /* cached, in a bin */
    XDEV_BLOCK_ACTIVE = 1,       /* handed to the user */
    XDEV_BLOCK_PENDING_FREE = 2, /* freed, waiting for events of record_stream streams */
} xdev_block_state_t;

struct xdev_segment;
struct xdev_stream_pool;

/* Streams besides its own that used a block (record_stream). */
#define XDEV_BLOCK_INLINE_STREAMS 2

typedef struct xdev_block {
    uintptr_t addr;
    size_t size;
    size_t requested; /* size the user asked for (while active) */
    struct xdev_segment *segment;
    struct xdev_block *prev, *next;         /* neighbours in the segment */
    struct xdev_block *bin_prev, *bin_next; /* bin list while free */
    struct xdev_block *hash_next;           /* pointer map chain while active */
    struct xdev_stream_pool *pool;          /* stream pool (caching mode) */
    xdev_stream_t stream;                   /* stream it was allocated on */
    int bin;                                /* bin index while free, else -1 */
    uint8_t state;
    bool managed; /* from xdev_malloc_managed (managed.c): its own allocation, any mode */
    /* A live lookup (alloc_lookup.c) returned it since it was handed out, so
     * threads' lookup caches may hold it: its free moves the arena's `frees`.
     * The free of a block no lookup saw (an FFT's work area, a temporary
     * only the library touched) leaves every cache's entries valid. */
    bool looked_up;
    /* Freed while a graph capture was under way and kept for the graph's
     * replays (mempool.c): still ACTIVE in its segment, so no allocation
     * gets it, but out of the live table and refused by every lookup
     * (alloc_lookup.c) as freed. Cleared when the last graph lets it go. */
    bool kept;
    int pending_events;
    int n_used_streams;
    xdev_stream_t used_streams[XDEV_BLOCK_INLINE_STREAMS];
    xdev_stream_t *more_used_streams; /* n_used_streams > inline: heap array */
    int more_cap;
    struct xdev_device_allocator *owner;
    const char *tag; /* xdev_memory_tag_push path at allocation (interned), or NULL */
} xdev_block_t;

typedef struct xdev_segment {
    uintptr_t base;
    size_t size;     /* bytes backed by memory (an expandable segment: mapped so far) */
    size_t va_size;  /* expandable: the address range reserved at base; else 0 */
    bool expandable; /* grows and shrinks at its end (expandable.c) */
    bool shrinking;  /* expandable: a release has the lock dropped; do not grow */
    int pool_kind;   /* XDEV_POOL_SMALL / LARGE */
    struct xdev_stream_pool *pool;
    xdev_block_t *first;
    struct xdev_segment *prev, *next; /* device's segment list */
    uint64_t serial;                  /* creation order, for snapshots */
    uint64_t free_since;              /* the arena's growth count when it last became wholly free */
    /* Sleep (alloc_sleep.c; expandable segments only): XDEV_SEG_AWAKE, or
     * going to sleep / asleep / waking; while not awake nothing is mapped
     * behind [base, base + size) (or is being unmapped or mapped) and
     * sleep_copy holds the contents (XDEV_MEMORY_SLEEP_KEEP) or is NULL:
     * from the pinned host cache (sleep_copy_pinned) or malloc'ed. */
    uint8_t sleep_state;
    bool sleep_copy_pinned;
    void *sleep_copy;
    /* Asleep: bytes at its front still mapped, left by a failed wake whose
     * unmapping failed too (0 otherwise); the next wake maps after them. */
    size_t sleep_mapped;
    /* Expandable: [base, base + whole_end) is mapped in whole pieces (a
     * wake's memory.va_map_whole), unmapped only whole (segment_map.c). */
    size_t whole_end;
} xdev_segment_t;

enum { XDEV_SEG_AWAKE = 0, XDEV_SEG_SLEEPING = 1, XDEV_SEG_ASLEEP = 2, XDEV_SEG_WAKING = 3 };

/* Free blocks of one stream, one pool kind. */
typedef struct xdev_bins {
    xdev_block_t *head[XDEV_BIN_COUNT];
    uint64_t level_mask;               /* bit L: some sub-bin of level L non-empty */
    uint8_t sub_mask[XDEV_BIN_LEVELS]; /* bit S: sub-bin S of level L non-empty */
} xdev_bins_t;

typedef struct xdev_stream_pool {
    xdev_stream_t stream;
    void *native;
    /* The memory pool (mempool.h) it belongs to: 0 for the device's cache.
     * A pool's segments stay reserved until it is dead (no reference left). */
    uint64_t mempool;
    bool mempool_dead;
    bool has_custom; /* segments come from `custom` (xdev_mempool_create's allocator) */
    xdev_allocator_t custom;
    xdev_bins_t bins[XDEV_POOL_KINDS];
    struct xdev_segment *expandable[XDEV_POOL_KINDS]; /* expandable_segments:true */
    /* Expandable segments only: the top-level tag (the first component of
     * the tag path, interned) every allocation of the pool was made under,
     * so that a top-level tag's memory has segments of its own and can
     * sleep (alloc_sleep.c); NULL = untagged. Without expandable segments
     * pools are not split by tag (this stays NULL). */
    const char *tag;
    int asleep; /* segments of the pool not awake: it hands out no block */
    struct xdev_stream_pool *next;
} xdev_stream_pool_t;

/* A block waiting for an event recorded on a stream that used it. */
typedef struct xdev_pending_event {
    void *event;          /* backend event; NULL when none could be recorded: */
    xdev_stream_t stream; /* then the block waits for this stream to be idle */
    xdev_block_t *block;
    struct xdev_pending_event *next;
} xdev_pending_event_t;

typedef enum {
    XDEV_ALLOC_MODE_CACHING = 0,
    XDEV_ALLOC_MODE_DIRECT = 1,    /* XDEV_NO_MEMORY_CACHING */
    XDEV_ALLOC_MODE_ASYNC = 2,     /* backend's stream-ordered allocator */
    XDEV_ALLOC_MODE_PLUGGABLE = 3, /* the application's allocator */
} xdev_alloc_mode_t;

/* Live blocks of one device by start address (alloc_ptrmap.c); guarded by
 * the device allocator's lock. */
typedef struct xdev_ptrtab {
    xdev_block_t **buckets;
    size_t mask;
    size_t count;
} xdev_ptrtab_t;

#define XDEV_TRACE_RING_DEFAULT 4096

/* Totals owed to the statistics (xdev_device_allocator_t's alloc_due):
 * blocks, their bytes, their requests' bytes. */
typedef struct xdev_alloc_due {
    int64_t n, bytes, requested;
} xdev_alloc_due_t;

typedef struct xdev_device_allocator {
    xdev_spin_lock_t lock; /* see spin_lock.h */
    /* Frees of blocks a live lookup returned, and sleeps, so far (written
     * under lock): a cached "this block is live" (alloc_lookup.c) holds
     * while the count is unchanged. */
    _Atomic uint64_t frees;
    xdev_block_t *stash; /* the last freed block, not yet binned (caching_allocator.c) */
    /* The stash's free is not in the statistics yet: its figures go in when
     * the stash is binned (xdev_caching_stash_flush, which every reader of
     * the statistics calls first) or, folded with the allocation that takes
     * it back, as one hot pair (caching_allocator.c). */
    bool stash_uncounted;
    /* Hot pairs since the totals were last brought up to date, per pool
     * kind: how many, their blocks' bytes and their requests' bytes (when
     * a pair's two requests were the same size). They only add to the
     * allocated and freed totals of allocation, allocated_bytes, active,
     * active_bytes and requested_bytes ("all" and the pool), which
     * xdev_caching_stash_flush does before any reader looks. */
    int64_t hot_pairs[XDEV_POOL_KINDS], hot_bytes[XDEV_POOL_KINDS], hot_requested[XDEV_POOL_KINDS];
    /* The allocated and freed totals of the caching mode's allocations and
     * frees (allocation, active, their bytes, requested_bytes) and of bin
     * insertions and removals (inactive_split and its bytes), per pool
     * kind, not yet in the statistics: a block's allocation or free moves
     * each figure's current value (and peak) at once and only adds here;
     * xdev_caching_stash_flush adds them in before any reader looks. */
    xdev_alloc_due_t alloc_due[XDEV_POOL_KINDS], free_due[XDEV_POOL_KINDS];
    xdev_alloc_due_t split_in_due[XDEV_POOL_KINDS], split_out_due[XDEV_POOL_KINDS];
    /* Bins insertions and removals in this arena so far, and the stash that
     * stash_is_best (caching_allocator.c) last found best with that count:
     * while nothing entered or left any bin, the answer holds. */
    uint64_t bins_changes;
    const xdev_block_t *stash_checked;
    uint64_t stash_checked_at;
    struct xdev_device_allocator *primary; /* the device's first arena (itself for the first) */
    int arena;                             /* index among the device's arenas */
    xdev_device_record_t *rec;             /* the device (backend context, state) */
    xdev_backend_t *be;                    /* = rec->be */
    int index;                             /* = rec->id.index */
    xdev_alloc_mode_t mode;
    xdev_alloc_mode_t default_mode; /* mode without a pluggable allocator */
    xdev_allocator_t pluggable;
    xdev_stream_pool_t *pools;
    xdev_segment_t *segments;
    xdev_pending_event_t *pending_head, *pending_tail;
    void **event_cache; /* reusable backend events */
    int event_cache_len, event_cache_cap;
    double fraction; /* set_per_process_memory_fraction; 0 = no cap */
    size_t total_memory;
    size_t limit;      /* fraction * total, SIZE_MAX when no cap */
    size_t high_water; /* most bytes ever reserved (growth policy) */
    uint64_t growths;  /* times the arena grew (the policy's clock) */
    xdev_memory_stats_t stats;
    /* Primary only: the device's history ring for snapshots
     * (xdev_memory_record_history), under trace_lock, which is taken inside
     * any arena's lock and never the other way round. */
    xdev_spin_lock_t trace_lock;
    atomic_bool recording; /* trace != NULL, read without trace_lock */
    xdev_memory_history_entry_t *trace;
    size_t trace_cap, trace_len, trace_next;
    /* Primary only: what all arenas have reserved (the memory-fraction cap
     * and the GC threshold are device-wide), the segment serial counter,
     * the arenas created so far. */
    _Atomic int64_t device_reserved;
    _Atomic uint64_t segment_serial;
    _Atomic(struct xdev_device_allocator *) arenas[XDEV_MAX_ARENAS];
    atomic_bool arenas_ok; /* the caching mode has allocated: threads may use other arenas */
    _Atomic int sleeping;  /* segments of all arenas not awake (alloc_sleep.c) */
    /* This arena's allocated/reserved bytes as last traced, so the stream
     * tracer's counters can add up the device without taking other locks. */
    _Atomic int64_t traced_allocated, traced_reserved;
    xdev_block_t *spare_blocks;   /* recycled block structs */
    xdev_ptrtab_t live;           /* active blocks by address */
    xdev_block_t *direct_blocks;  /* live blocks of the non-caching modes (prev/next) */
    xdev_block_t *managed_blocks; /* primary only: live managed allocations (prev/next) */
    bool used;                    /* an allocation happened: the allocator can no longer change */
} xdev_device_allocator_t;

/* Under da's lock: b left the live table (device_allocator.c take_live).
 * Threads' lookup caches may hold b only if a lookup returned it: then they
 * must look again. The mark is cleared here, so a block is unmarked
 * whenever it is free (block structs start zeroed) and the allocation path
 * never stores to it. A block kept for graph captures after this free
 * needs no second count: no lookup returns a kept block (alloc_lookup.c),
 * so it is never marked again and no cache can hold it. */
static inline void xdev_alloc_count_free(xdev_device_allocator_t *da, xdev_block_t *b) {
    if (!b->looked_up) return;
    b->looked_up = false;
    uint64_t n = atomic_load_explicit(&da->frees, memory_order_relaxed);
    atomic_store_explicit(&da->frees, n + 1, memory_order_release);
}

/* The allocator of a device (its primary arena), created on first use:
 * inline, every allocation asks; the first ask per device is
 * xdev_alloc_create's. */
extern _Atomic(struct xdev_device_allocator *) xdev_alloc_g_allocs[XDEV_MAX_DEVICE_TYPES]
                                                                  [XDEV_MAX_DEVICES];
xdev_status_t xdev_alloc_create(xdev_backend_t *be, int index, struct xdev_device_allocator **out);
static inline xdev_status_t xdev_alloc_get(xdev_backend_t *be, int index,
                                           struct xdev_device_allocator **out) {
    struct xdev_device_allocator *da =
        atomic_load_explicit(&xdev_alloc_g_allocs[be->type][index], memory_order_acquire);
    if (__builtin_expect(da == NULL, 0)) return xdev_alloc_create(be, index, out);
    *out = da;
    return XDEV_SUCCESS;
}
/* Validates an application's allocator and copies it, zero past its `size`
 * (an older header's struct); a refusal names `call` (device_allocator.c). */
xdev_status_t xdev_allocator_accept(const char *call, const xdev_allocator_t *in,
                                    xdev_allocator_t *out);

/* The arenas of a device created so far, primary first; returns how many. */
int xdev_alloc_arenas(xdev_device_allocator_t *primary, xdev_device_allocator_t **out);

/* Lock every arena of a device in index order (a consistent view for
 * snapshots), and unlock them. */
int xdev_alloc_lock_all(xdev_device_allocator_t *primary, xdev_device_allocator_t **out);
void xdev_alloc_unlock_all(xdev_device_allocator_t **arenas, int n);

/* The arena that holds a registered device range (its registry entry's
 * owner), or the device's primary for entries without one. */
struct xdev_ptr_entry;
xdev_device_allocator_t *xdev_alloc_owner(const struct xdev_ptr_entry *e);

/* The allocator's internal entry points, for core code that needs device
 * memory (FFT work areas): no public-call prefix, no re-validation.
 * malloc_on: `size` > 0 bytes usable by work on the checked `stream`.
 * free: a live allocation (as xdev_free, without its NULL / init checks). */
xdev_status_t xdev_alloc_malloc_on(xdev_stream_t stream, size_t size, void **ptr);
xdev_status_t xdev_alloc_free(void *ptr);

/* The settings loaded at init (device_allocator.c; written only by the
 * initialisation step, before any allocation): inline, the hot pair reads
 * them several times. */
extern xdev_alloc_config_t xdev_alloc_g_cfg;
static inline const xdev_alloc_config_t *xdev_alloc_settings(void) {
    return &xdev_alloc_g_cfg;
}
/* No roundup_power2_divisions anywhere: sizes round to 512 bytes (set
 * with the settings). */
extern bool xdev_alloc_g_round_plain;

/* Find the block containing addr on a device (lock held): NULL if none. */
xdev_block_t *xdev_alloc_find_block(xdev_device_allocator_t *da, uintptr_t addr,
                                    xdev_segment_t **seg_out);

/* Every device's primary arena created so far (for empty_cache and snapshots). */
int xdev_alloc_all(xdev_device_allocator_t **out, int cap);

/* torch's name of a history action (alloc_history.c): the stream tracer's
 * memory events, the JSON snapshot and the torch export. */
const char *xdev_alloc_history_action_name(xdev_memory_history_action_t a);

/* What the snapshots (observe/alloc_snapshot*.c) walk, alloc_history.c:
 * every segment of every arena of the device whose primary is given, all
 * arenas locked meanwhile. A segment (seg) is its blocks from `first` along
 * next; a non-caching allocation comes with seg NULL and is the one block
 * `first`. */
typedef void (*xdev_segment_fn)(void *ctx, const xdev_device_allocator_t *da, uintptr_t base,
                                size_t size, int pool_kind, const void *stream,
                                const xdev_block_t *first, const xdev_segment_t *seg);
void xdev_alloc_each_segment(xdev_device_allocator_t *primary, xdev_segment_fn fn, void *ctx);
void xdev_alloc_history_record(struct xdev_device_allocator *da,
                               xdev_memory_history_action_t action, uintptr_t addr, size_t size,
                               const void *stream, const char *tag);
/* This thread's tag path for new allocations (alloc_tag.c), or NULL:
 * inline, every allocation asks; until some thread pushes a tag it is one
 * relaxed load and a predictable branch (no TLS lookup). */
extern atomic_bool xdev_alloc_tags_used;
const char *xdev_alloc_tag_current_tls(void);
static inline const char *xdev_alloc_tag_current(void) {
    return __builtin_expect(atomic_load_explicit(&xdev_alloc_tags_used, memory_order_relaxed), 0)
               ? xdev_alloc_tag_current_tls()
               : NULL;
}
/* The first component of this thread's tag path ("a" of "a/b"), interned,
 * or NULL (alloc_tag.c). */
const char *xdev_alloc_tag_root_current(void);
/* Was `path` ever pushed in this process, or the first component of a
 * path pushed (alloc_tag.c)? */
bool xdev_alloc_tag_known(const char *path);
/* The error for an allocation asked of a pool whose memory is asleep, and
 * for a pointer into a sleeping segment (alloc_sleep.c). */
xdev_status_t xdev_alloc_asleep_error(const xdev_device_allocator_t *da, const char *tag,
                                      const char *what, const void *ptr);
/* The device's statistics, summed over its arenas (takes each arena's lock
 * in turn; da is the primary). */
void xdev_alloc_stats_copy(xdev_device_allocator_t *da, xdev_memory_stats_t *out);
/* out += in, field by field (peaks too: see alloc_stats.c). */
void xdev_alloc_stats_add(xdev_memory_stats_t *out, const xdev_memory_stats_t *in);
/* The xdev_memory_summary table of `stats` (alloc_stats.c). */
struct xdev_strbuf;
void xdev_alloc_summary_write(struct xdev_strbuf *sb, const xdev_device_allocator_t *da,
                              const xdev_memory_stats_t *stats, bool abbreviated);
/* The k-th oldest history entry of a primary, k < trace_len (trace_lock held). */
const xdev_memory_history_entry_t *xdev_alloc_history_entry(const xdev_device_allocator_t *da,
                                                            size_t k);

/* --- bins (alloc_bins.c) --- */
/* Insertion, removal, best fit: inline, alloc_bins.h. */
/* Is there a block other than `skip` of at least `size` bytes that comes
 * before (limit, addr) in best-fit order (smaller, or as large at a lower
 * address)? No max_split_size rules. */
bool xdev_bins_fit_before(const xdev_bins_t *bins, size_t size, size_t limit, uintptr_t addr,
                          const xdev_block_t *skip);

/* --- live-block table (alloc_ptrmap.c); the device lock must be held ---
 * Inline: every malloc inserts and every free removes. */
void xdev_ptrtab_grow(xdev_ptrtab_t *t); /* doubles it; unchanged without memory */

static inline size_t xdev_ptrtab_slot(const xdev_ptrtab_t *t, uintptr_t addr) {
    uint64_t x = (uint64_t)addr >> 9; /* blocks are 512-byte aligned */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & t->mask;
}

/* false: no memory for the table */
static inline bool xdev_ptrtab_insert(xdev_ptrtab_t *t, xdev_block_t *b) {
    if (__builtin_expect(t->buckets == NULL || t->count > t->mask, 0)) {
        xdev_ptrtab_grow(t);
        if (t->buckets == NULL) return false;
    }
    size_t j = xdev_ptrtab_slot(t, b->addr);
    b->hash_next = t->buckets[j];
    t->buckets[j] = b;
    t->count++;
    return true;
}

static inline xdev_block_t **xdev_ptrtab_link(xdev_ptrtab_t *t, uintptr_t addr) {
    if (t->buckets == NULL) return NULL;
    xdev_block_t **link = &t->buckets[xdev_ptrtab_slot(t, addr)];
    while (*link != NULL && (*link)->addr != addr)
        link = &(*link)->hash_next;
    return *link != NULL ? link : NULL;
}

static inline xdev_block_t *xdev_ptrtab_remove(xdev_ptrtab_t *t, uintptr_t addr) {
    xdev_block_t **link = xdev_ptrtab_link(t, addr);
    if (link == NULL) return NULL;
    xdev_block_t *b = *link;
    *link = b->hash_next;
    b->hash_next = NULL;
    t->count--;
    return b;
}

static inline xdev_block_t *xdev_ptrtab_find(xdev_ptrtab_t *t, uintptr_t addr) {
    xdev_block_t **link = xdev_ptrtab_link(t, addr);
    return link != NULL ? *link : NULL;
}

/* --- caching allocator (caching_allocator.c); called with da->lock held --- */
struct xdev_mempool;
/* `mp`: the memory pool the block comes from (NULL: the device's cache). */
xdev_status_t xdev_caching_malloc(xdev_device_allocator_t *da, size_t size, xdev_stream_t stream,
                                  struct xdev_mempool *mp, xdev_block_t **out);
/* A segment's memory from the backend, or from its memory pool's allocator
 * (mempool.c); and its return. */
xdev_status_t xdev_caching_segment_malloc(xdev_device_allocator_t *da,
                                          const xdev_stream_pool_t *pool, size_t size, void **p);
void xdev_caching_segment_free(xdev_device_allocator_t *da, const xdev_stream_pool_t *pool, void *p,
                               size_t size);
/* The out-of-memory failure for a request of `size` (alloc_oom.c; lock held,
 * dropped meanwhile to read the device's figures). */
xdev_status_t xdev_caching_oom_error(xdev_device_allocator_t *da, size_t size,
                                     xdev_status_t backend_st, const char *backend_msg);
/* Memory pool `id` has no reference left: its stream pools are marked dead
 * and their wholly free segments released (waiting for the device). */
void xdev_caching_release_mempool(xdev_device_allocator_t *da, uint64_t id);
void xdev_caching_free(xdev_device_allocator_t *da, xdev_block_t *b);
xdev_status_t xdev_caching_record_stream(xdev_device_allocator_t *da, xdev_block_t *b,
                                         xdev_stream_t stream);
/* Helpers shared with expandable.c (lock held): recycled block structs; the
 * bins with the inactive_split statistics; the device's synchronize called
 * with the lock dropped by the caller (its failure leaves no error). */
xdev_block_t *xdev_caching_block_new(xdev_device_allocator_t *da);
void xdev_caching_block_delete(xdev_device_allocator_t *da, xdev_block_t *b);
void xdev_caching_bins_add(xdev_device_allocator_t *da, xdev_block_t *b);
void xdev_caching_bins_del(xdev_device_allocator_t *da, xdev_block_t *b);
xdev_status_t xdev_caching_sync_unlocked(xdev_device_allocator_t *da);
/* Count `bytes` more against the device's reserve, all arenas together
 * (false, nothing counted, when the memory fraction's cap forbids it); and
 * take them off again. */
bool xdev_caching_reserve(xdev_device_allocator_t *da, size_t bytes);
void xdev_caching_unreserve(xdev_device_allocator_t *da, size_t bytes);
/* A new segment's fields (serial number included) and its place at the
 * head of the arena's segment list; and its removal from the list. */
void xdev_caching_segment_add(xdev_device_allocator_t *da, xdev_segment_t *seg, uintptr_t base,
                              size_t size, int kind, struct xdev_stream_pool *pool);
void xdev_caching_segment_unlink(xdev_device_allocator_t *da, xdev_segment_t *seg);
/* caching_release.c (lock held): wholly free segments of pool kind `kind`
 * (-1: both) of pool `only` (NULL: every pool) back to the backend up to `goal`
 * bytes, only from idle streams when idle_only, only those free for
 * min_age growths (the bytes released); every wholly free segment once the
 * device passed its work; the garbage-collection threshold's release
 * before `incoming` more bytes; xdev's trim before growing past the
 * high-water mark. caching_allocator.c's poll of the record_stream events
 * that hold blocks back, and its drop of the pools of destroyed streams. */
size_t xdev_caching_release_free_segments(xdev_device_allocator_t *da, int kind,
                                          const struct xdev_stream_pool *only, size_t goal,
                                          bool idle_only, uint64_t min_age);
size_t xdev_caching_release_all(xdev_device_allocator_t *da);
void xdev_caching_garbage_collect(xdev_device_allocator_t *da, size_t incoming);
void xdev_caching_trim_before_grow(xdev_device_allocator_t *da, int kind,
                                   struct xdev_stream_pool *pool, size_t incoming);
void xdev_caching_process_events(xdev_device_allocator_t *da);
void xdev_caching_prune_dead_pools(xdev_device_allocator_t *da);

/* Put the arena's stash (the last freed block, kept out of the bins for
 * the hot alloc/free pair) into the bins, its free counted, and the totals
 * owed (hot_pairs, alloc_due) into the statistics: every reader of the
 * arena's statistics calls this first (lock held). */
void xdev_caching_stash_flush(xdev_device_allocator_t *da);
/* The stash into the bins, its free counted, the statistics' owed totals
 * (alloc_due) left owed: for the allocator's own walks of blocks and
 * segments, which read no totals (lock held). */
void xdev_caching_stash_bin(xdev_device_allocator_t *da);

/* --- expandable segments (expandable.c); lock held --- */
/* Make the pool's expandable segment of `kind` end in a free block of at
 * least `size` bytes, mapping memory (and reserving its address range on
 * first use). XDEV_ERROR_OUT_OF_MEMORY: no memory (the caller retries after
 * releasing caches); XDEV_ERROR_NOT_READY: the segment is being shrunk by
 * another thread (the caller takes an ordinary segment). */
xdev_status_t xdev_expandable_grow(xdev_device_allocator_t *da, struct xdev_stream_pool *pool,
                                   int kind, size_t size);
/* Unmap the free tails of the arena's expandable segments (whole segments
 * when nothing is left), after waiting for the device with the lock
 * dropped; returns the bytes unmapped. */
size_t xdev_expandable_shrink(xdev_device_allocator_t *da);

/* --- a segment's mappings in whole pieces (segment_map.c); no lock needed:
 * the callers own the range (asleep, waking, or cut off the segment) --- */
/* The piece (bytes) sleep and wake work in, a whole number of units. */
size_t xdev_segment_piece(xdev_device_record_t *rec);
/* Can the backend map a piece as one mapping (memory.va_map_whole)? */
bool xdev_segment_can_map_whole(xdev_device_record_t *rec);
/* Where a cut of the segment's tail wanting to start at offset `off` (a
 * unit boundary) may start: `off` past the whole region, else the next
 * piece boundary (or whole_end). */
size_t xdev_segment_cut_offset(const xdev_segment_t *seg, size_t piece, size_t off);
/* Map / unmap [off, off + len) of the segment, each piece below whole_end
 * as one mapping, the rest by units; a range cutting a piece is refused
 * before any call. A failed map leaves none of the range mapped. */
xdev_status_t xdev_segment_map(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t off,
                               size_t len);
/* The order of an unmap's calls, and what a failing one ends. */
typedef enum {
    XDEV_UNMAP_FRONT, /* front to back; stops at a failure: *done bytes at the front are unmapped */
    XDEV_UNMAP_BACK,  /* back to front; stops at a failure: *done bytes at the back are unmapped */
    XDEV_UNMAP_EVERY  /* front to back, every call made (a rollback): *done bytes in all */
} xdev_unmap_order_t;
/* The first failure; done may be NULL. */
xdev_status_t xdev_segment_unmap(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t off,
                                 size_t len, xdev_unmap_order_t order, size_t *done);

/* True when a stream pool's stream has no queued work (a query, never a
 * wait); false for a destroyed stream. */
bool xdev_caching_pool_idle(const xdev_stream_pool_t *pool);
/* The growth policy's adoption (alloc_adopt.c): the smallest wholly free
 * segment of pool kind `kind`, at least rsize bytes, of another idle stream
 * of the device's cache, moved to `pool`; its single free block (out of the
 * bins), or NULL. */
xdev_block_t *xdev_caching_adopt_segment(xdev_device_allocator_t *da, xdev_stream_pool_t *pool,
                                         int kind, size_t rsize);

/* Return every fully free segment to the backend (waits for pending events). */
xdev_status_t xdev_caching_empty_cache(xdev_device_allocator_t *da);
/* Out of memory in arena `da`: release the other arenas' cached segments
 * (their locks taken one at a time, da's dropped meanwhile); bytes released. */
size_t xdev_alloc_release_other_arenas(xdev_device_allocator_t *da);

/* --- stats: inline, they run several times per allocation --- */
static inline void xdev_stat_add(xdev_stat_t *s, int64_t amount) {
    s->current += amount;
    if (amount > 0) {
        s->allocated += amount;
        if (s->current > s->peak) s->peak = s->current;
    } else {
        s->freed -= amount;
    }
}

/* Update a stat for pool kind and for "all". */
static inline void xdev_stat_update(xdev_stat_t stat[3], int pool_kind, int64_t amount) {
    xdev_stat_add(&stat[XDEV_STAT_ALL], amount);
    xdev_stat_add(&stat[pool_kind == XDEV_POOL_LARGE ? XDEV_STAT_LARGE_POOL : XDEV_STAT_SMALL_POOL],
                  amount);
}

/* A stat's current value moved, "all" and pool kind `kind`, its allocated
 * and freed totals left to the caller's deferred counters (alloc_due):
 * xdev_stat_up for an amount >= 0 (peaks follow), xdev_stat_down for one
 * taken off. */
_Static_assert(XDEV_STAT_SMALL_POOL - XDEV_POOL_SMALL == XDEV_STAT_SMALL_POOL &&
                   XDEV_STAT_SMALL_POOL - XDEV_POOL_LARGE == XDEV_STAT_LARGE_POOL,
               "xdev_stat_up maps a pool kind to its stat index by subtraction");
static inline void xdev_stat_up(xdev_stat_t stat[3], int kind, int64_t amount) {
    xdev_stat_t *a = &stat[XDEV_STAT_ALL], *p = &stat[XDEV_STAT_SMALL_POOL - kind];
    a->current += amount;
    if (a->current > a->peak) a->peak = a->current;
    p->current += amount;
    if (p->current > p->peak) p->peak = p->current;
}

static inline void xdev_stat_down(xdev_stat_t stat[3], int kind, int64_t amount) {
    stat[XDEV_STAT_ALL].current -= amount;
    stat[XDEV_STAT_SMALL_POOL - kind].current -= amount;
}

/* --- the hot pair, inline (the rest: caching_allocator.c; lock held) ---
 * A framework frees a tensor and allocates one of the same size on the
 * same stream right after: the block just freed waits in the arena's stash
 * (caching_allocator.c), and the pair then costs a few loads and stores,
 * inlined into xdev_malloc and xdev_free. Anything else goes to
 * xdev_caching_malloc / xdev_caching_free, which do the same when the
 * conditions below hold and everything else otherwise. */

/* torch's round_size: 512-byte steps, or power-of-two divisions where set. */
size_t xdev_caching_round_divided(size_t size);
static inline size_t xdev_caching_round(size_t size) {
    if (size < XDEV_MIN_BLOCK) return XDEV_MIN_BLOCK;
    if (__builtin_expect(xdev_alloc_g_round_plain, 1))
        return (size + XDEV_MIN_BLOCK - 1) & ~(XDEV_MIN_BLOCK - 1);
    return xdev_caching_round_divided(size);
}

/* The tag a new allocation's pool is keyed by (see pool_tag in
 * caching_allocator.c): with expandable segments the thread's top-level
 * tag, else none. */
static inline const char *xdev_caching_pool_tag(void) {
    return xdev_alloc_g_cfg.expandable_segments ? xdev_alloc_tag_root_current() : NULL;
}

/* Whether history entries go anywhere (the history ring or the stream
 * tracer): the two relaxed loads xdev_alloc_history_record starts with. */
static inline bool xdev_caching_history_on(const xdev_device_allocator_t *da) {
    return __builtin_expect(xdev_tracer_active(), 0) ||
           atomic_load_explicit(&da->primary->recording, memory_order_relaxed);
}

/* Would the allocator without a stash hand out the stash b for a request
 * of its size (caching_allocator.c says when)? The answer depends on the
 * block's size and neighbours and on the bins; each of those changes only
 * with a bin insertion or removal in the arena (a split or merge, a block
 * taken or freed), so an answer found for this block with no bin change
 * since still holds: the warm hot pair skips the search. */
bool xdev_caching_stash_is_best_slow(xdev_device_allocator_t *da, const xdev_block_t *b);
static inline bool xdev_caching_stash_is_best(xdev_device_allocator_t *da, const xdev_block_t *b) {
    if (da->stash_checked == b && da->stash_checked_at == da->bins_changes) return true;
    return xdev_caching_stash_is_best_slow(da, b);
}

/* add to a stat's allocated and freed totals ("all" and pool k), current
 * unchanged */
static inline void xdev_stat_pass(xdev_stat_t stat[3], int k, int64_t amount) {
    stat[XDEV_STAT_ALL].allocated += amount;
    stat[XDEV_STAT_ALL].freed += amount;
    stat[k].allocated += amount;
    stat[k].freed += amount;
}

/* The stash's uncounted free and its allocation again (`size` requested)
 * as one step: what counting the free then the allocation would leave.
 * Each figure's current value comes back to where it was before the free
 * (a value it already had: no new peak), but requested bytes, which moves
 * by the difference of the two requests (a peak where it grows); the
 * allocated and freed totals each grow by the block. */
static inline void xdev_caching_count_hot_pair(xdev_device_allocator_t *da, const xdev_block_t *b,
                                               size_t size) {
    int kind = b->segment->pool_kind;
    da->hot_pairs[kind]++; /* the totals, added up later (hot_pairs above) */
    da->hot_bytes[kind] += (int64_t)b->size;
    if (size == b->requested) {
        da->hot_requested[kind] += (int64_t)size;
    } else {
        xdev_stat_update(da->stats.requested_bytes, kind, -(int64_t)b->requested);
        xdev_stat_update(da->stats.requested_bytes, kind, (int64_t)size);
    }
}

/* The arena's stash, handed out for a request of `size` bytes on `stream`
 * from memory pool `mempool` (0: the device's cache) when it is what the
 * allocator would hand out and its free is not counted yet (else NULL:
 * xdev_caching_malloc decides). */
static inline xdev_block_t *xdev_caching_malloc_hot(xdev_device_allocator_t *da, size_t size,
                                                    xdev_stream_t stream, uint64_t mempool) {
    xdev_block_t *b = da->stash;
    if (b == NULL || !da->stash_uncounted || da->pending_head != NULL ||
        b->size != xdev_caching_round(size))
        return NULL;
    const xdev_stream_pool_t *pool = b->pool;
    if (pool->stream != stream || pool->mempool != mempool || pool->asleep != 0 ||
        pool->tag != xdev_caching_pool_tag() || !xdev_caching_stash_is_best(da, b))
        return NULL;
    da->stash = NULL;
    da->stash_uncounted = false;
    xdev_caching_count_hot_pair(da, b, size);
    b->state = XDEV_BLOCK_ACTIVE;
    b->stream = stream;
    b->requested = size;
    b->n_used_streams = 0;
    if (b->size >= xdev_alloc_g_cfg.max_split_size)
        xdev_stat_add(&da->stats.oversize_allocations, 1);
    b->tag = xdev_alloc_tag_current();
    if (xdev_caching_history_on(da))
        xdev_alloc_history_record(da, XDEV_MEMORY_HISTORY_ALLOC, b->addr, b->size, pool->native,
                                  b->tag);
    return b;
}

/* Free active block b into the stash, its free counted later, when the
 * stash is empty, no stream but its own used b and no history is kept;
 * false otherwise (xdev_caching_free decides). */
static inline bool xdev_caching_free_hot(xdev_device_allocator_t *da, xdev_block_t *b) {
    if (da->stash != NULL || b->n_used_streams != 0 || b->pending_events != 0 ||
        xdev_caching_history_on(da))
        return false;
    if (b->size >= xdev_alloc_g_cfg.max_split_size)
        xdev_stat_add(&da->stats.oversize_allocations, -1);
    b->state = XDEV_BLOCK_FREE;
    da->stash = b;
    da->stash_uncounted = true; /* counted when binned, or with the next allocation */
    return true;
}

/* --- pinned host cache (host_allocator.c) --- */
/* A duration statistic, torch's DurationStat: microseconds. */
typedef struct xdev_duration_stat {
    int64_t total, max, min, count;
} xdev_duration_stat_t;
/* Everything the pinned cache counts: the public struct, the segments
 * (backend host_alloc blocks held) and the time spent in host_alloc and
 * host_free (torch's host_memory_stats). */
typedef struct xdev_host_stats_full {
    xdev_host_memory_stats_t pub;
    xdev_stat_t segment;
    xdev_duration_stat_t alloc_time, free_time;
} xdev_host_stats_full_t;
/* A copy under the cache's lock (not in a forked child: the caller checks). */
void xdev_host_stats_full(xdev_host_stats_full_t *out);
/* torch's host_memory_stats keys (alloc_stats.c): items written up to cap,
 * the number there are returned. */
size_t xdev_host_stats_items(const xdev_host_stats_full_t *s, xdev_memory_stat_item_t *items,
                             size_t cap);
/* The pinned cache's rows of the summary table (alloc_stats.c). */
void xdev_host_summary_write(struct xdev_strbuf *sb, const xdev_host_stats_full_t *s);

/* An async copy on `stream` uses ptr: if it is a pinned block, it must not be
 * reused after xdev_host_free until the stream has passed the copy. */
void xdev_host_record_use(const void *ptr, xdev_stream_t stream);

/* --- managed memory (managed.c) --- */
/* xdev_free of a managed allocation: `b`, taken out of the live table of
 * `da` (its primary, locked), is given back once the device has passed its
 * work; the lock is released. A failed wait puts it back (still live). */
xdev_status_t xdev_managed_free_taken(xdev_device_allocator_t *da, xdev_block_t *b);

/* --- history (alloc_history.c) --- */
/* Append to the history ring when recording (and feed the stream tracer
 * when it runs); tag is the allocation's xdev_memory_tag_push path or NULL. */
void xdev_alloc_history_record(xdev_device_allocator_t *da, xdev_memory_history_action_t action,
                               uintptr_t addr, size_t size, const void *stream, const char *tag);

#endif
