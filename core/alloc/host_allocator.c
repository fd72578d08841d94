/* SPDX-License-Identifier: Apache-2.0 */
/* host_allocator.c - caching allocator for pinned (page-locked) host memory.
 *
 * torch rounds pinned requests to powers of two, so a 65 MiB buffer costs
 * 128 MiB. Here sizes round to one of 8 classes per power of two (at most
 * 12.5% over, 4 KiB minimum) and each class keeps its own free list. A block
 * that async copies used is reusable only after events recorded on those
 * copies' streams at free time have passed, so a host free never races a
 * queued copy. XDEV_ALLOC_CONF=pinned_max_cached_mb caps what stays cached. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc/alloc_internal.h"
#include "alloc/alloc_lookup.h"
#include "alloc/dlpack_exports.h"
#include "base/error_internal.h"
#include "runtime/dispatch.h"
#include "alloc/pointer_registry.h"
#include "runtime/process.h"
#include "runtime/stream_internal.h"

#define HOST_MIN ((size_t)4096)
#define HOST_SUB_LOG2 3
#define HOST_CLASSES (64 << HOST_SUB_LOG2)
#define HOST_INLINE_STREAMS 4

typedef struct host_block {
    void *ptr;
    size_t size; /* class size */
    size_t requested;
    int cls;
    bool live;   /* handed out */
    int pending; /* events to pass before reuse */
    int n_streams;
    xdev_stream_t streams[HOST_INLINE_STREAMS]; /* streams of async copies that used it */
    bool overflow; /* more streams than fit: synchronize them all at free */
    struct host_block *next_free;
} host_block_t;

typedef struct host_pending {
    xdev_device_record_t *rec; /* the stream's device */
    void *event;
    host_block_t *block;
    struct host_pending *next;
} host_pending_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block_t *g_free[HOST_CLASSES];
static host_pending_t *g_pending;
static size_t g_cached_bytes;
static xdev_host_memory_stats_t g_stats;
static xdev_stat_t g_segment;                          /* backend blocks held */
static xdev_duration_stat_t g_alloc_time, g_free_time; /* in the backend's calls, us */

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void duration_add(xdev_duration_stat_t *d, int64_t us) {
    d->total += us;
    if (d->count == 0 || us > d->max) d->max = us;
    if (d->count == 0 || us < d->min) d->min = us;
    d->count++;
}

/* The backend's host_alloc / host_free, timed (torch's host_alloc_time and
 * host_free_time). */
static xdev_status_t timed_host_alloc(xdev_backend_t *be, size_t bytes, void **p) {
    int64_t t0 = now_us();
    xdev_status_t st = xdev_be_memory_host_alloc(be, bytes, p);
    duration_add(&g_alloc_time, now_us() - t0);
    return st;
}

static xdev_status_t timed_host_free(xdev_backend_t *be, void *p) {
    int64_t t0 = now_us();
    xdev_status_t st = xdev_be_memory_host_free(be, p);
    duration_add(&g_free_time, now_us() - t0);
    return st;
}

/* Class of a request: 8 steps per power of two above 4 KiB. */
static int size_class(size_t size, size_t *rounded) {
    if (size <= HOST_MIN) {
        *rounded = HOST_MIN;
        return 0;
    }
    int l2 = 63 - __builtin_clzll((unsigned long long)(size - 1));
    size_t step = ((size_t)1 << l2) >> HOST_SUB_LOG2;
    size_t r = (size + step - 1) / step * step;
    *rounded = r;
    int sub = (int)((r - ((size_t)1 << l2)) / step); /* 1..8; 8 = next power */
    return (l2 - 12) * (1 << HOST_SUB_LOG2) + sub;
}

static void release_block(xdev_backend_t *be, host_block_t *b) {
    xdev_ptr_entry_t e;
    (void)xdev_ptr_remove(b->ptr, XDEV_MEMORY_PINNED_HOST, &e);
    (void)timed_host_free(be, b->ptr);
    xdev_stat_add(&g_stats.reserved_bytes, -(int64_t)b->size);
    xdev_stat_add(&g_segment, -1);
    g_stats.num_host_free++;
    free(b);
}

static void make_free(host_block_t *b) {
    b->next_free = g_free[b->cls];
    g_free[b->cls] = b;
    g_cached_bytes += b->size;
}

/* Complete pending blocks whose events have passed. Never waits under the
 * lock: the copy an event marks may sit behind a host function that calls
 * xdev_host_alloc/xdev_host_free. */
static void process_pending(void) {
    host_pending_t **link = &g_pending;
    while (*link != NULL) {
        host_pending_t *p = *link;
        if (xdev_be_event_query(p->rec, p->event) == XDEV_ERROR_NOT_READY) {
            link = &p->next;
            continue;
        }
        *link = p->next;
        (void)xdev_be_event_destroy(p->rec, p->event);
        if (--p->block->pending == 0) make_free(p->block);
        free(p);
    }
}

/* Release cached blocks, largest classes first, until at most `cap` bytes stay. */
static void trim_to(xdev_backend_t *be, size_t cap) {
    for (int c = HOST_CLASSES - 1; c >= 0 && g_cached_bytes > cap; c--) {
        while (g_free[c] != NULL && g_cached_bytes > cap) {
            host_block_t *b = g_free[c];
            g_free[c] = b->next_free;
            g_cached_bytes -= b->size;
            release_block(be, b);
        }
    }
}

static void trim(xdev_backend_t *be) {
    trim_to(be, xdev_alloc_settings()->pinned_max_cached);
}

/* Wait for every pending block's events with the lock dropped (held on
 * entry and exit), then make those blocks free. */
static void wait_pending(void) {
    host_pending_t *list = g_pending;
    g_pending = NULL;
    if (list == NULL) return;
    pthread_mutex_unlock(&g_lock);
    for (host_pending_t *p = list; p != NULL; p = p->next) {
        (void)xdev_be_event_synchronize(p->rec, p->event);
    }
    pthread_mutex_lock(&g_lock);
    g_pending = list;
    process_pending(); /* every event has passed (or failed): all complete */
}

/* Wait for pending blocks and return every cached block to the backend. */
static void drain(xdev_backend_t *be) {
    wait_pending();
    trim_to(be, 0);
}

xdev_status_t xdev_host_alloc(void **ptr, size_t size) {
    XDEV_REQUIRE_ARG(ptr);
    *ptr = NULL;
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_backend_t *be;
    XDEV_CHECK(xdev_backend_acquire(xdev_core_default_type(), &be));
    if (size == 0) return XDEV_SUCCESS;
    if (!XDEV_HAS(be, memory, host_alloc)) /* the group memory.host, whole */
        XDEV_CHECK(xdev_backend_not_supported(be, "memory.host_alloc"));
    size_t rounded = 0;
    int cls = size <= XDEV_MAX_ALLOC_SIZE ? size_class(size, &rounded) : HOST_CLASSES;
    if (cls >= HOST_CLASSES)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "%zu bytes of pinned memory is too large",
                             size);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    if (g_pending != NULL) process_pending();
    host_block_t *b = g_free[cls];
    if (b != NULL) {
        g_free[cls] = b->next_free;
        g_cached_bytes -= b->size;
    } else {
        b = calloc(1, sizeof *b);
        void *p = NULL;
        st = b ? timed_host_alloc(be, rounded, &p)
               : XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory");
        if (st == XDEV_ERROR_OUT_OF_MEMORY && b != NULL) {
            /* return the cache to the system and try once more */
            drain(be);
            st = timed_host_alloc(be, rounded, &p);
        }
        if (st == XDEV_SUCCESS) {
            b->ptr = p;
            b->size = rounded;
            b->cls = cls;
            xdev_ptr_entry_t e = {(uintptr_t)p,    rounded, XDEV_MEMORY_PINNED_HOST, be, 0, b,
                                  XDEV_PTR_PINNED, NULL};
            st = xdev_ptr_insert(&e);
            if (st != XDEV_SUCCESS)
                (void)timed_host_free(be, p);
            else {
                xdev_stat_add(&g_stats.reserved_bytes, (int64_t)rounded);
                xdev_stat_add(&g_segment, 1);
                g_stats.num_host_alloc++;
            }
        }
        if (st != XDEV_SUCCESS) {
            free(b);
            b = NULL;
        }
    }
    if (b != NULL) {
        b->live = true;
        b->requested = size;
        b->n_streams = 0;
        b->overflow = false;
        xdev_stat_add(&g_stats.allocation, 1);
        xdev_stat_add(&g_stats.allocated_bytes, (int64_t)b->size);
        xdev_stat_add(&g_stats.requested_bytes, (int64_t)size);
        *ptr = b->ptr;
    }
    pthread_mutex_unlock(&g_lock);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

/* The live pinned block starting at ptr, with the lock held; NULL + message. */
static host_block_t *live_block(const void *ptr) {
    xdev_ptr_entry_t e;
    if (!xdev_ptr_lookup(ptr, &e)) {
        XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                  "pointer %p was not allocated by xdev_host_alloc (or was already freed)", ptr);
        return NULL;
    }
    if (e.origin == XDEV_PTR_FOREIGN) {
        XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                  "pointer %p is memory xdev did not allocate (not from xdev_host_alloc): give "
                  "it back with %s",
                  ptr,
                  e.kind == XDEV_MEMORY_PINNED_HOST ? "xdev_host_unregister"
                                                    : "xdev_memory_unregister");
        return NULL;
    }
    if (e.kind != XDEV_MEMORY_PINNED_HOST) {
        XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                  "pointer %p is device memory from xdev_malloc; free it with xdev_free", ptr);
        return NULL;
    }
    host_block_t *b = e.data;
    if (e.base != (uintptr_t)ptr) {
        XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                  "pointer %p points into a pinned block at %p; free the start of the block", ptr,
                  (void *)e.base);
        return NULL;
    }
    if (!b->live) {
        XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "pointer %p: double free of pinned memory", ptr);
        return NULL;
    }
    return b;
}

xdev_status_t xdev_host_free(void *ptr) {
    if (ptr == NULL) return XDEV_SUCCESS;
    XDEV_CHECK(xdev_core_ensure_init());
    int held = xdev_exports_check_free(
        ptr, XDEV_MEMORY_PINNED_HOST); /* a DLPack consumer holds it: put off */
    if (held < 0) XDEV_CHECK(XDEV_ERROR_INVALID_VALUE);
    if (held > 0) return XDEV_SUCCESS;
    xdev_backend_t *be;
    XDEV_CHECK(xdev_backend_acquire(xdev_core_default_type(), &be));
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    host_block_t *b = live_block(ptr);
    if (b == NULL) {
        st = xdev_last_status();
        pthread_mutex_unlock(&g_lock);
        XDEV_CHECK(st);
    }
    b->live = false;
    xdev_stat_add(&g_stats.allocation, -1);
    xdev_stat_add(&g_stats.allocated_bytes, -(int64_t)b->size);
    xdev_stat_add(&g_stats.requested_bytes, -(int64_t)b->requested);
    xdev_stream_t must_sync[HOST_INLINE_STREAMS]; /* streams that got no event */
    int n_sync = 0;
    for (int i = 0; i < b->n_streams; i++) {
        xdev_stream_t s = b->streams[i];
        if (!xdev_core_stream_acquire(s)) continue;
        host_pending_t *p = malloc(sizeof *p);
        void *event = NULL;
        xdev_error_state_t saved; /* a failure here is handled: it leaves no error behind */
        xdev_core_error_save(&saved);
        bool deferred = p != NULL && xdev_be_event_create(s->rec, 0, &event) == XDEV_SUCCESS;
        if (deferred && xdev_be_event_record(s->rec, event, s->native) != XDEV_SUCCESS) {
            (void)xdev_be_event_destroy(s->rec, event); /* made but never recorded */
            deferred = false;
        }
        xdev_core_error_restore(&saved);
        if (!deferred) {
            free(p); /* cannot defer: wait for the stream, after unlocking */
            must_sync[n_sync++] = s;
            continue;
        }
        *p = (host_pending_t){s->rec, event, b, g_pending};
        g_pending = p;
        b->pending++;
    }
    if (n_sync > 0 || b->overflow) {
        /* Wait with the lock dropped; the extra count keeps the block from
         * being reused meanwhile. */
        b->pending++;
        pthread_mutex_unlock(&g_lock);
        xdev_error_state_t saved; /* best effort: failures leave no error behind */
        xdev_core_error_save(&saved);
        for (int i = 0; i < n_sync; i++)
            (void)xdev_core_stream_synchronize_always(must_sync[i]);
        if (b->overflow) (void)xdev_core_synchronize_always();
        xdev_core_error_restore(&saved);
        pthread_mutex_lock(&g_lock);
        b->pending--;
    }
    if (b->pending == 0) make_free(b);
    trim(be);
    pthread_mutex_unlock(&g_lock);
    return XDEV_SUCCESS;
}

int xdev_host_live_extent(const void *ptr, uintptr_t *base, size_t *size, size_t *block_size) {
    int live = 0;
    pthread_mutex_lock(&g_lock);
    xdev_ptr_entry_t e; /* again under the lock: blocks are released under it */
    if (xdev_ptr_lookup(ptr, &e) && e.origin == XDEV_PTR_PINNED) {
        const host_block_t *b = e.data;
        live = b->live ? 1 : -1;
        *base = e.base;
        *size = b->requested;
        *block_size = b->size;
    }
    pthread_mutex_unlock(&g_lock);
    return live;
}

void xdev_host_record_use(const void *ptr, xdev_stream_t stream) {
    xdev_ptr_entry_t e;
    if (!xdev_ptr_lookup(ptr, &e) || e.origin != XDEV_PTR_PINNED) return; /* xdev_host_alloc's */
    pthread_mutex_lock(&g_lock);
    host_block_t *b = e.data;
    if (b->live) {
        bool seen = false;
        for (int i = 0; i < b->n_streams; i++)
            seen |= b->streams[i] == stream;
        if (!seen) {
            if (b->n_streams < HOST_INLINE_STREAMS)
                b->streams[b->n_streams++] = stream;
            else
                b->overflow = true;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

xdev_status_t xdev_host_memory_stats(xdev_host_memory_stats_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_process_check()); /* takes the cache's lock: not in a forked child */
    pthread_mutex_lock(&g_lock);
    *out = g_stats;
    pthread_mutex_unlock(&g_lock);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_host_empty_cache(void) {
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_backend_t *be;
    XDEV_CHECK(xdev_backend_acquire(xdev_core_default_type(), &be));
    pthread_mutex_lock(&g_lock);
    drain(be);
    pthread_mutex_unlock(&g_lock);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_reset_peak_host_memory_stats(void) {
    XDEV_CHECK(xdev_process_check());
    pthread_mutex_lock(&g_lock);
    g_stats.allocation.peak = g_stats.allocation.current;
    g_stats.allocated_bytes.peak = g_stats.allocated_bytes.current;
    g_stats.requested_bytes.peak = g_stats.requested_bytes.current;
    g_stats.reserved_bytes.peak = g_stats.reserved_bytes.current;
    g_segment.peak = g_segment.current;
    pthread_mutex_unlock(&g_lock);
    return XDEV_SUCCESS;
}

/* torch.cuda.reset_accumulated_host_memory_stats: the totals allocated and
 * freed, the call counts and the durations restart from zero. */
xdev_status_t xdev_reset_accumulated_host_memory_stats(void) {
    XDEV_CHECK(xdev_process_check());
    pthread_mutex_lock(&g_lock);
    xdev_stat_t *all[] = {&g_stats.allocation, &g_stats.allocated_bytes, &g_stats.requested_bytes,
                          &g_stats.reserved_bytes, &g_segment};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        all[i]->allocated = all[i]->freed = 0;
    g_stats.num_host_alloc = g_stats.num_host_free = 0;
    memset(&g_alloc_time, 0, sizeof g_alloc_time);
    memset(&g_free_time, 0, sizeof g_free_time);
    pthread_mutex_unlock(&g_lock);
    return XDEV_SUCCESS;
}

void xdev_host_stats_full(xdev_host_stats_full_t *out) {
    pthread_mutex_lock(&g_lock);
    out->pub = g_stats;
    out->segment = g_segment;
    out->alloc_time = g_alloc_time;
    out->free_time = g_free_time;
    pthread_mutex_unlock(&g_lock);
}

xdev_status_t xdev_host_memory_stats_items(xdev_memory_stat_item_t *items, size_t cap,
                                           size_t *count) {
    XDEV_REQUIRE_ARG(count);
    if (cap > 0) XDEV_REQUIRE_ARG(items);
    XDEV_CHECK(xdev_process_check()); /* takes the cache's lock: not in a forked child */
    xdev_host_stats_full_t s;
    xdev_host_stats_full(&s);
    *count = xdev_host_stats_items(&s, items, cap);
    return XDEV_SUCCESS;
}
