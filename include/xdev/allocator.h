/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/allocator.h - the caching device allocator's controls, statistics,
 * summary, history and tags, pluggable allocators, and the pinned host
 * cache. Its snapshots are xdev/memviz.h's, beside the memory view that
 * draws them (included at the end of this header).
 *
 * Device memory from xdev_malloc* comes from a per-device caching allocator
 * following torch.cuda's: blocks are cut from large segments, cached on free
 * and reused only on the stream they were allocated on (the current stream at
 * allocation), unless xdev_record_stream says other streams use them.
 * XDEV_NO_MEMORY_CACHING=1 sends every malloc/free to the backend, and
 * XDEV_ALLOC_CONF tunes it (see docs/memory.md). */
#ifndef XDEV_ALLOCATOR_H
#define XDEV_ALLOCATOR_H

#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocate on the device of `stream`, for use on that stream (NULL = the
 * current stream of the current device). */
XDEV_API XDEV_RESULT xdev_status_t xdev_malloc_stream(void **ptr, size_t size,
                                                      xdev_stream_t stream);

/* Mark ptr (from xdev_malloc*) as used by `stream`, so that after
 * xdev_free the block is not reused until the work queued on `stream` so far
 * has finished. The allocation's own stream needs no call. */
XDEV_API XDEV_RESULT xdev_status_t xdev_record_stream(void *ptr, xdev_stream_t stream);

/* Return every cached, unused segment of every device to its backend. */
XDEV_API XDEV_RESULT xdev_status_t xdev_empty_cache(void);

/* Cap the memory the allocator reserves on `device` to fraction * total
 * memory; allocations beyond fail as out of memory. 1.0 = no cap. */
XDEV_API XDEV_RESULT xdev_status_t xdev_set_per_process_memory_fraction(double fraction,
                                                                        xdev_device_t device);

/* One statistic, with torch's meaning: current value, peak since the last
 * reset, and the amounts allocated and freed since the last reset.
 *
 * Threads: a device's caching allocator starts as one cache under one lock.
 * A thread that keeps finding that lock held (several threads allocating on
 * the device at once) moves to a cache of its own, an "arena" (at most
 * thread_arenas per device, XDEV_ALLOC_CONF, default 16; 1 = never), so
 * threads stop queueing on one lock. Stream rules are per arena as before:
 * a block is reused only on its stream, after record_stream's events. A
 * block is freed into its arena whichever thread frees it; empty_cache, the
 * memory fraction cap and the out-of-memory retry cover every arena. The
 * price is memory: each arena keeps its own cached segments. The device's
 * statistics are the sum over its arenas: current values and totals are
 * exact; a peak is the sum of the arenas' peaks, the device's true peak
 * while one arena is in use (any single-threaded program) and otherwise an
 * upper bound (arenas need not peak at the same moment). */
typedef struct xdev_stat {
    int64_t current;
    int64_t peak;
    int64_t allocated;
    int64_t freed;
} xdev_stat_t;

/* Index of the pool a statistic covers. */
enum { XDEV_STAT_ALL = 0, XDEV_STAT_LARGE_POOL = 1, XDEV_STAT_SMALL_POOL = 2, XDEV_STAT_POOLS = 3 };

typedef struct xdev_memory_stats {
    xdev_stat_t allocation[XDEV_STAT_POOLS];      /* live allocations */
    xdev_stat_t segment[XDEV_STAT_POOLS];         /* segments from the backend */
    xdev_stat_t active[XDEV_STAT_POOLS];          /* allocated or waiting for streams */
    xdev_stat_t inactive_split[XDEV_STAT_POOLS];  /* free blocks inside partly used segments */
    xdev_stat_t allocated_bytes[XDEV_STAT_POOLS]; /* rounded sizes handed out */
    xdev_stat_t reserved_bytes[XDEV_STAT_POOLS];  /* segment bytes */
    xdev_stat_t active_bytes[XDEV_STAT_POOLS];
    xdev_stat_t inactive_split_bytes[XDEV_STAT_POOLS];
    xdev_stat_t requested_bytes[XDEV_STAT_POOLS]; /* sizes as requested */
    int64_t num_alloc_retries;                    /* allocations that freed the cache and retried */
    int64_t num_ooms;                             /* allocations that failed for lack of memory */
    int64_t num_sync_all_streams;                 /* times the allocator waited for all streams */
    int64_t num_device_alloc;                     /* backend malloc calls */
    int64_t num_device_free;                      /* backend free calls */
    int64_t max_split_size;                       /* bytes; -1 = no limit */
    xdev_stat_t oversize_allocations;             /* allocations >= max_split_size */
    xdev_stat_t oversize_segments;
    /* Managed memory (xdev_malloc_managed), apart from the figures above:
     * live allocations and their bytes (as requested: each is the backend's
     * own allocation). */
    xdev_stat_t managed_allocation;
    xdev_stat_t managed_bytes;
} xdev_memory_stats_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_memory_stats(xdev_device_t device,
                                                     xdev_memory_stats_t *out);

/* Key/value view with torch's key names, in this order (130 keys):
 *
 *   <metric>.<pool>.<field>   for each metric, pool and field:
 *     metric: allocation, segment, active, inactive_split, allocated_bytes,
 *             reserved_bytes, active_bytes, inactive_split_bytes,
 *             requested_bytes (the members of xdev_memory_stats_t)
 *     pool:   all, large_pool (blocks over 1 MiB), small_pool (up to 1 MiB)
 *     field:  current, peak, allocated, freed (xdev_stat_t)
 *   num_alloc_retries, num_ooms, num_sync_all_streams, num_device_alloc,
 *   num_device_free, max_split_size (bytes; -1 = no limit)
 *   oversize_allocations.<field>, oversize_segments.<field>
 *   managed_allocation.<field>, managed_bytes.<field>   (!) xdev's: managed memory
 *
 * The count of allocations is "allocation.*", torch's real key (what
 * torch.cuda.memory_stats() returns and memory_summary() reads). Some of
 * torch's documentation, and pages copied from it, spell it "allocated.*":
 * xdev has no "allocated.*" key. Byte counts are the rounded sizes the
 * allocator hands out ("allocated_bytes") or the sizes asked for
 * ("requested_bytes"). "allocated"/"freed" accumulate since the last
 * xdev_reset_accumulated_memory_stats, "peak" since the last
 * xdev_reset_peak_memory_stats. Keys fit xdev_memory_stat_item_t.key. */
typedef struct xdev_memory_stat_item {
    char key[48];
    int64_t value;
} xdev_memory_stat_item_t;

/* Write up to `cap` items; *count = the number there are (call with cap 0 to
 * size the array). */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_stats_items(const xdev_memory_stats_t *stats,
                                                           xdev_memory_stat_item_t *items,
                                                           size_t cap, size_t *count);

XDEV_API XDEV_RESULT xdev_status_t xdev_memory_allocated(xdev_device_t device, size_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_max_memory_allocated(xdev_device_t device, size_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_reserved(xdev_device_t device, size_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_max_memory_reserved(xdev_device_t device, size_t *out);

/* Peaks restart from the current values. */
XDEV_API XDEV_RESULT xdev_status_t xdev_reset_peak_memory_stats(xdev_device_t device);
/* "allocated"/"freed" totals and the counters restart from zero. */
XDEV_API XDEV_RESULT xdev_status_t xdev_reset_accumulated_memory_stats(xdev_device_t device);

/* A table like torch.cuda.memory_summary(); *out is malloc'ed: free() it. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_summary(xdev_device_t device, bool abbreviated,
                                                       char **out);

/* What an entry of the allocator's history records (xdev_memory_record_history,
 * torch's _record_memory_history; the snapshot's "device_traces"). Not the
 * stream trace of xdev/trace.h. */
typedef enum xdev_memory_history_action {
    XDEV_MEMORY_HISTORY_ALLOC = 0,
    XDEV_MEMORY_HISTORY_FREE_REQUESTED = 1, /* xdev_free while streams still use the block */
    XDEV_MEMORY_HISTORY_FREE_COMPLETED = 2, /* the block became reusable */
    XDEV_MEMORY_HISTORY_SEGMENT_ALLOC = 3,
    XDEV_MEMORY_HISTORY_SEGMENT_FREE = 4,
    XDEV_MEMORY_HISTORY_OOM = 5,
} xdev_memory_history_action_t;

typedef struct xdev_memory_history_entry {
    xdev_memory_history_action_t action;
    uintptr_t addr;
    size_t size;
    const void *stream; /* native stream */
    uint64_t time_ns;   /* CLOCK_MONOTONIC */
    const char *tag;    /* xdev_memory_tag_push path of the allocation, or NULL */
} xdev_memory_history_entry_t;

/* Start (enabled) or stop recording alloc/free/segment events of `device` in a
 * ring of max_entries (0 = 4096), included in the snapshot. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_record_history(xdev_device_t device, bool enabled,
                                                              size_t max_entries);

/* Context for allocations (torch records stacks; a C program names its
 * phases): allocations this thread makes after push carry the path of the
 * pushed tags joined by '/' ("step/forward/attn") into snapshot blocks,
 * history entries and the memory view (xdev/memviz.h), until the matching
 * pop. Per thread; at most 32 deep; a tag is 1..255 bytes of UTF-8 (any
 * character, control characters included: the snapshot escapes them; bytes
 * that are not UTF-8 are XDEV_ERROR_INVALID_VALUE, for the snapshot JSON
 * and the torch pickle hold only UTF-8) and a path at most 1023; at most
 * 65536 distinct paths per process (kept until exit). */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_tag_push(const char *tag);
/* Drop this thread's innermost tag; error when none is pushed. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_tag_pop(void);

/* Sleep and wake by tag (vLLM's sleep mode, for any memory xdev allocated):
 * xdev_memory_sleep gives the device memory of the allocations made under
 * the top-level tag `tag` (the first part of their tag path: "model" covers
 * "model/attn"; a path with '/' is INVALID_VALUE; NULL: every allocation of
 * the device) back to the driver - xdev_mem_get_info and
 * nvidia-smi show it free - and xdev_memory_wake brings it back at the SAME
 * addresses, so pointers the application holds, kernel arguments and
 * captured graphs stay valid. KEEP copies the contents to pinned host memory
 * and back; DISCARD leaves them undefined after wake.
 *
 * Rules (docs/memory.md, "Sleep and wake"):
 * - Only expandable segments can sleep: set
 *   XDEV_ALLOC_CONF=expandable_segments:true (then each top-level tag gets
 *   segments of its own); otherwise XDEV_ERROR_NOT_SUPPORTED. A segment of
 *   the tag that is not expandable refuses the whole call, naming it.
 * - Sleep first waits for all work queued on the device.
 * - While asleep, calls that check their pointers (copies, memset, fills,
 *   BLAS, FFT, RNG, primitives, element-wise, kernel pointer arguments with
 *   XDEV_LAUNCH_CHECKS=full) fail with XDEV_ERROR_INVALID_VALUE naming the
 *   sleeping tag, as does an allocation with that tag on that device and
 *   the replay of a graph whose own pool sleeps; a pointer the core cannot
 *   see (inside a struct passed to a kernel, a tagged buffer a replayed
 *   graph uses) reaches the device unmapped: a fault. xdev_free of a
 *   sleeping allocation is allowed.
 * - Memory pools of live graphs (and xdev_mempool_create's) sleep only with
 *   tag NULL, each pool as a whole; a tag never reaches into them.
 * - The allocator's statistics still count sleeping memory as reserved.
 * Errors: a tag never pushed, or one with no memory on the device, or all
 * of it asleep already (sleep) / none asleep (wake): INVALID_VALUE; another
 * thread sleeping or waking the same memory: NOT_READY; wake without device
 * memory: OUT_OF_MEMORY, what could not be mapped stays asleep. A forked
 * child cannot call either (xdev refuses every call in it). */
typedef enum xdev_memory_sleep_mode {
    XDEV_MEMORY_SLEEP_KEEP = 0,    /* contents kept in pinned host memory */
    XDEV_MEMORY_SLEEP_DISCARD = 1, /* contents undefined after wake */
} xdev_memory_sleep_mode_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_memory_sleep(xdev_device_t device, const char *tag,
                                                     xdev_memory_sleep_mode_t mode);
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_wake(xdev_device_t device, const char *tag);

/* An application's own device allocator (torch's CUDAPluggableAllocator,
 * RMM's device_memory_resource). Install it before the device's first
 * allocation. free gets the size and the stream of the allocation. */
typedef struct xdev_allocator {
    size_t size; /* sizeof(xdev_allocator_t) */
    void *ctx;
    xdev_status_t (*malloc)(void *ctx, xdev_device_t device, size_t size, xdev_stream_t stream,
                            void **out);
    xdev_status_t (*free)(void *ctx, xdev_device_t device, void *ptr, size_t size,
                          xdev_stream_t stream);
    /* optional: drop cached memory on xdev_empty_cache */
    void (*empty_cache)(void *ctx, xdev_device_t device);
} xdev_allocator_t;

/* Install `allocator` for `device` (NULL = xdev's own again). Fails with
 * XDEV_ERROR_INVALID_VALUE once the device has allocated memory. */
XDEV_API XDEV_RESULT xdev_status_t xdev_set_allocator(xdev_device_t device,
                                                      const xdev_allocator_t *allocator);

/* What an out-of-memory observer is told about one failed device allocation
 * (torch's _cuda_attach_out_of_memory_observer gets device, request, device
 * total and free; this has those and the allocator's picture). Valid during
 * the call only. */
typedef struct xdev_oom_info {
    xdev_device_t device;
    size_t requested;                 /* bytes asked for */
    size_t device_free;               /* the device's free memory (xdev_mem_get_info; 0 unknown) */
    size_t device_total;              /* its capacity (0 unknown) */
    size_t reserved_unused;           /* reserved by xdev's cache but unallocated */
    size_t largest_free_block;        /* the largest free cached block (fragmentation) */
    size_t limit;                     /* the memory-fraction cap in bytes, SIZE_MAX when none */
    const xdev_memory_stats_t *stats; /* the device's statistics after the failure */
    const char *message;              /* the failing call's message (without its prefix) */
} xdev_oom_info_t;

typedef void (*xdev_oom_observer_t)(const xdev_oom_info_t *info, void *user);

/* Call `fn(info, user)` whenever a device allocation (xdev_malloc*,
 * xdev_malloc_managed, and the allocations xdev makes for its own work
 * areas) fails for lack of memory:
 * once per failed call, on the failing thread, after the allocator's own
 * retry (cache released) failed and before the call returns, with no
 * allocator lock held, so the observer may allocate and free (to drop a
 * cache of its own, or write a snapshot: xdev_memory_snapshot_torch_write).
 * The failing call's status and message are kept whatever the observer does.
 * An allocation that fails inside an observer calls no observer again. At
 * most 8 observers; the same (fn, user) twice is XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_add_oom_observer(xdev_oom_observer_t fn, void *user);
/* Remove (fn, user); XDEV_ERROR_INVALID_VALUE when it is not registered.
 * Returns once no other thread is inside that observer (from inside an
 * observer it does not wait). */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_remove_oom_observer(xdev_oom_observer_t fn,
                                                                   void *user);

/* Pinned host memory cache (xdev_host_alloc / xdev_host_free). */
typedef struct xdev_host_memory_stats {
    xdev_stat_t allocation;      /* live blocks */
    xdev_stat_t allocated_bytes; /* bytes in live blocks (rounded) */
    xdev_stat_t requested_bytes; /* bytes as requested */
    xdev_stat_t reserved_bytes;  /* pinned bytes held (live + cached) */
    int64_t num_host_alloc;      /* backend host_alloc calls */
    int64_t num_host_free;       /* backend host_free calls */
} xdev_host_memory_stats_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_host_memory_stats(xdev_host_memory_stats_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_host_empty_cache(void);
XDEV_API XDEV_RESULT xdev_status_t xdev_reset_peak_host_memory_stats(void);
/* "allocated"/"freed" totals, the call counts and the durations restart
 * from zero (torch.cuda.reset_accumulated_host_memory_stats). */
XDEV_API XDEV_RESULT xdev_status_t xdev_reset_accumulated_host_memory_stats(void);

/* torch.cuda.host_memory_stats(): the pinned cache's statistics as key/value
 * items with torch's keys, in this order (32 keys):
 *
 *   <metric>.<field>   metric: allocation (live blocks), segment (backend
 *                      blocks held, live or cached), allocated_bytes,
 *                      reserved_bytes, requested_bytes (xdev's: the sizes
 *                      asked for); field: current, peak, allocated, freed,
 *                      as the device statistics' (xdev_stat_t)
 *   host_alloc_time.<d>, host_free_time.<d>   microseconds in the backend's
 *                      host_alloc / host_free calls; d: total, max, min,
 *                      count, avg
 *   num_host_alloc, num_host_free
 *
 * Write up to `cap` items; *count = the number there are (cap 0 sizes the
 * array). The same items are the snapshot's "host_stats" and the rows of
 * xdev_memory_summary's pinned-memory section. */
XDEV_API XDEV_RESULT xdev_status_t xdev_host_memory_stats_items(xdev_memory_stat_item_t *items,
                                                                size_t cap, size_t *count);

/* ------------------------------------------------------------ Deprecated names
 * The history's old names, XDEV_TRACE_* / xdev_memory_trace_*, which read as
 * the stream trace's (xdev/trace.h); kept as macros until the next major
 * version. Do not use them in new code. */
#define XDEV_TRACE_ALLOC XDEV_MEMORY_HISTORY_ALLOC
#define XDEV_TRACE_FREE_REQUESTED XDEV_MEMORY_HISTORY_FREE_REQUESTED
#define XDEV_TRACE_FREE_COMPLETED XDEV_MEMORY_HISTORY_FREE_COMPLETED
#define XDEV_TRACE_SEGMENT_ALLOC XDEV_MEMORY_HISTORY_SEGMENT_ALLOC
#define XDEV_TRACE_SEGMENT_FREE XDEV_MEMORY_HISTORY_SEGMENT_FREE
#define XDEV_TRACE_OOM XDEV_MEMORY_HISTORY_OOM
#define xdev_memory_trace_action_t xdev_memory_history_action_t
#define xdev_memory_trace_entry_t xdev_memory_history_entry_t

#ifdef __cplusplus
}
#endif

#include "xdev/memviz.h"
#endif
