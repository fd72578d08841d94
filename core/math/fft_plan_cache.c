/* SPDX-License-Identifier: Apache-2.0 */
/* fft_plan_cache.c - per-device LRU cache of backend FFT plans and its
 * public controls (max_size, size, clear, stats), as torch's cuFFT plan
 * cache. A hash table finds a key in O(1); a doubly linked list keeps the
 * recency order (head = most recently used, tail = next to evict). */
#include "math/fft_plan_cache.h"

#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/spin_lock.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"

typedef struct fft_entry {
    xdev_fft_key_t key;
    uint64_t hash;
    void *plan;
    size_t work_size;
    bool ran;                        /* an exec was enqueued with the plan */
    bool captured;                   /* an exec was captured: kept when its stream goes */
    struct fft_entry *newer, *older; /* recency list */
    struct fft_entry *chain;         /* hash bucket */
} fft_entry_t;

struct xdev_fft_cache {
    /* A spin lock (base/spin_lock.h), not a pthread mutex: every exec takes
     * it, and its uncontended pair costs a tenth of pthread's; it sleeps
     * once spinning fails, so a plan made under it burns no waiting core.
     * calloc's zeroes are unlocked. */
    xdev_spin_lock_t lock;
    xdev_device_record_t *rec;
    xdev_backend_t *be;
    int index;
    /* Under lock: */
    fft_entry_t **buckets;
    size_t nbuckets; /* power of two */
    fft_entry_t *newest, *oldest;
    int64_t size, max_size;
    int64_t hits, misses, evictions;
    uint64_t drops;     /* entries dropped ever (xdev_fft_hit_t) */
    fft_entry_t *dead;  /* dropped, destroyed by unlock after the lock is released */
    fft_entry_t *limbo; /* dropped, whose wait failed: destroyed after the next wait that works */
};

static pthread_mutex_t g_create_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic(xdev_fft_cache_t *) xdev_fft_caches[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];

xdev_status_t xdev_fft_cache_create(xdev_backend_t *be, int index, xdev_fft_cache_t **out) {
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_create_lock);
    xdev_fft_cache_t *c = atomic_load(&xdev_fft_caches[be->type][index]);
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        if (c == NULL) {
            st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for an FFT plan cache");
        } else {
            c->rec = &be->devices[index];
            c->be = be;
            c->index = index;
            c->max_size = XDEV_FFT_PLAN_CACHE_DEFAULT_MAX;
            atomic_store_explicit(&xdev_fft_caches[be->type][index], c, memory_order_release);
        }
    }
    pthread_mutex_unlock(&g_create_lock);
    *out = c;
    return st;
}

void xdev_fft_cache_lock(xdev_fft_cache_t *c) {
    xdev_spin_lock(&c->lock);
}

static void destroy_dead(xdev_fft_cache_t *c, fft_entry_t *dead);

/* Plans dropped under the lock are destroyed after it is released: their
 * destruction waits for the device, and a host function on one of its
 * streams may be waiting for this lock (an FFT inside a host function). */
void xdev_fft_cache_unlock(xdev_fft_cache_t *c) {
    fft_entry_t *dead = c->dead;
    c->dead = NULL;
    xdev_spin_unlock(&c->lock);
    if (dead != NULL) destroy_dead(c, dead);
}

/* The key's 64-bit words (it is all int64_t, no padding), each folded in
 * with a multiply, then the high bits mixed down into the low ones that
 * pick the bucket. Byte-wise FNV-1a over the 168 bytes cost ~1100
 * instructions, a third of a cached exec's host time. */
static uint64_t key_hash(const xdev_fft_key_t *k) {
    _Static_assert(sizeof *k % sizeof(uint64_t) == 0, "the FFT key is whole 64-bit words");
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const unsigned char *p = (const unsigned char *)k;
    for (size_t i = 0; i < sizeof *k; i += sizeof(uint64_t)) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    h ^= h >> 32;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static void list_unlink(xdev_fft_cache_t *c, fft_entry_t *e) {
    if (e->newer != NULL)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    if (e->older != NULL)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void list_push_newest(xdev_fft_cache_t *c, fft_entry_t *e) {
    e->newer = NULL;
    e->older = c->newest;
    if (c->newest != NULL) c->newest->newer = e;
    c->newest = e;
    if (c->oldest == NULL) c->oldest = e;
}

static void bucket_unlink(xdev_fft_cache_t *c, fft_entry_t *e) {
    fft_entry_t **pp = &c->buckets[e->hash & (c->nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
}

/* Double the bucket array when the table is full (load factor 1). Failure
 * to grow only makes chains longer. */
static void maybe_grow(xdev_fft_cache_t *c) {
    if (c->buckets != NULL && (size_t)c->size < c->nbuckets) return;
    size_t n = c->nbuckets ? c->nbuckets * 2 : 64;
    fft_entry_t **b = calloc(n, sizeof *b);
    if (b == NULL) return;
    for (fft_entry_t *e = c->newest; e != NULL; e = e->older) {
        e->chain = b[e->hash & (n - 1)];
        b[e->hash & (n - 1)] = e;
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = n;
}

void xdev_fft_cache_destroy_plan(xdev_fft_cache_t *c, void *plan) {
    (void)xdev_be_fft_plan_destroy(c->rec, plan);
}

/* Plans are destroyed only after the execs queued with them, so no backend
 * has to track them per exec (an event per exec costs ~0.4 us on a GPU):
 * destroy_dead waits for the device, not for the streams the plans ran on,
 * which another thread may have destroyed meanwhile. torch's eviction waits
 * the same way (cufftDestroy frees with cudaFree, which synchronizes). A
 * wait that fails (from a host function of the device, or after a device
 * fault) destroys nothing: the plans wait in limbo for the next wait that
 * works, since destroying a plan whose kernels may still be queued would
 * free memory they use. */
static void destroy_list(xdev_fft_cache_t *c, fft_entry_t *list) {
    for (fft_entry_t *e = list, *next; e != NULL; e = next) {
        next = e->older;
        xdev_fft_cache_destroy_plan(c, e->plan);
        free(e);
    }
}

/* Put a list of dropped entries in limbo (the lock not held). */
static void park(xdev_fft_cache_t *c, fft_entry_t *list) {
    xdev_spin_lock(&c->lock);
    while (list != NULL) {
        fft_entry_t *e = list;
        list = e->older;
        e->older = c->limbo;
        c->limbo = e;
    }
    xdev_spin_unlock(&c->lock);
}

/* After a wait that worked: the plans in limbo can go too. */
static void destroy_limbo(xdev_fft_cache_t *c) {
    xdev_spin_lock(&c->lock);
    fft_entry_t *limbo = c->limbo;
    c->limbo = NULL;
    xdev_spin_unlock(&c->lock);
    destroy_list(c, limbo);
}

static void destroy_dead(xdev_fft_cache_t *c, fft_entry_t *dead) {
    bool ran = false;
    for (fft_entry_t *e = dead; e != NULL; e = e->older)
        ran |= e->ran;
    xdev_error_state_t saved; /* an eviction's failure is nobody's call's error */
    xdev_core_error_save(&saved);
    if (ran && xdev_be_device_synchronize(c->rec) != XDEV_SUCCESS) {
        park(c, dead);
    } else {
        destroy_list(c, dead);
        if (ran) destroy_limbo(c);
    }
    xdev_core_error_restore(&saved);
}

/* Out of the table and the recency list; counted as a drop (the memo of
 * xdev_fft_hit_t sees it). Its recency link is free for a list of the dead. */
static void unlink_entry(xdev_fft_cache_t *c, fft_entry_t *e) {
    list_unlink(c, e);
    bucket_unlink(c, e);
    c->size--;
    c->drops++;
}

static void drop(xdev_fft_cache_t *c, fft_entry_t *e) {
    unlink_entry(c, e);
    e->older = c->dead;
    c->dead = e;
}

static void evict_to(xdev_fft_cache_t *c, int64_t limit) {
    while (c->size > limit && c->oldest != NULL) {
        drop(c, c->oldest);
        c->evictions++;
    }
}

static xdev_status_t create_plan(xdev_fft_cache_t *c, const xdev_fft_key_t *k, void **plan,
                                 size_t *work_size) {
    xdev_fft_plan_desc_t d = {
        .size = sizeof d,
        .type = (xdev_fft_type_t)k->type,
        .precision = (xdev_fft_precision_t)k->precision,
        .rank = (int)k->rank,
        .batch = k->batch,
        .istride = k->istride,
        .idist = k->idist,
        .ostride = k->ostride,
        .odist = k->odist,
        .device = c->rec->ctx,
    };
    for (int i = 0; i < XDEV_FFT_MAX_RANK; i++) {
        d.n[i] = k->n[i];
        d.inembed[i] = k->inembed[i];
        d.onembed[i] = k->onembed[i];
    }
    *plan = NULL;
    *work_size = 0;
    return xdev_be_fft_plan_create(c->rec, &d, plan, work_size);
}

/* A hit, counted: the entry becomes the most recently used. */
static void take(xdev_fft_cache_t *c, fft_entry_t *e, unsigned how, void **plan,
                 size_t *work_size) {
    c->hits++;
    e->captured |= (how & XDEV_FFT_TAKE_CAPTURED) != 0;
    if (c->newest != e) {
        list_unlink(c, e);
        list_push_newest(c, e);
    }
    e->ran = true;
    *plan = e->plan;
    *work_size = e->work_size;
}

/* A cached plan for the exec that holds `have` bytes of work area: taken
 * (a hit) when its area fits, else nothing taken or counted (*plan NULL);
 * *work_size is its area either way. */
static void take_if_fits(xdev_fft_cache_t *c, fft_entry_t *e, unsigned how, size_t have,
                         void **plan, size_t *work_size) {
    *plan = NULL;
    *work_size = e->work_size;
    if (e->work_size <= have) take(c, e, how, plan, work_size);
}

static fft_entry_t *find(const xdev_fft_cache_t *c, const xdev_fft_key_t *key, uint64_t h) {
    if (c->buckets == NULL) return NULL;
    for (fft_entry_t *e = c->buckets[h & (c->nbuckets - 1)]; e != NULL; e = e->chain)
        if (e->hash == h && memcmp(&e->key, key, sizeof *key) == 0) return e;
    return NULL;
}

/* A plan just made for `key`, counted as a miss: inserted as the most
 * recently used (evicting the least recently used beyond max_size), or
 * transient (caching disabled, a closing stream, no memory). */
static void insert(xdev_fft_cache_t *c, const xdev_fft_key_t *key, uint64_t h, unsigned how,
                   void *plan, size_t work_size, bool *transient, xdev_fft_hit_t *hit) {
    c->misses++;
    *transient = false;
    *hit = (xdev_fft_hit_t){c, NULL, c->drops};
    fft_entry_t *e =
        c->max_size > 0 && !(how & XDEV_FFT_TAKE_NO_INSERT) ? calloc(1, sizeof *e) : NULL;
    if (e == NULL) { /* caching disabled, a closing stream, or no memory: use once */
        *transient = true;
        return;
    }
    e->key = *key;
    e->hash = h;
    e->plan = plan;
    e->work_size = work_size;
    e->ran = true;
    e->captured = (how & XDEV_FFT_TAKE_CAPTURED) != 0;
    evict_to(c, c->max_size - 1);
    c->size++;
    maybe_grow(c);
    if (c->buckets == NULL) { /* no memory for the table: use once */
        c->size--;
        free(e);
        *transient = true;
        return;
    }
    e->chain = c->buckets[h & (c->nbuckets - 1)];
    c->buckets[h & (c->nbuckets - 1)] = e;
    list_push_newest(c, e);
    *hit = (xdev_fft_hit_t){c, e, c->drops}; /* after evict_to's drops */
}

xdev_status_t xdev_fft_cache_acquire_hit(xdev_fft_cache_t *c, const xdev_fft_key_t *key,
                                         unsigned how, size_t have, void **plan, size_t *work_size,
                                         bool *transient, xdev_fft_hit_t *hit) {
    uint64_t h = key_hash(key);
    *plan = NULL;
    *transient = false;
    *hit = (xdev_fft_hit_t){c, NULL, c->drops};
    fft_entry_t *e = find(c, key, h);
    if (e != NULL) {
        hit->entry = e;
        take_if_fits(c, e, how, have, plan, work_size);
        return XDEV_SUCCESS;
    }
    xdev_status_t st = create_plan(c, key, plan, work_size);
    if (st != XDEV_SUCCESS) return st;
    if (*work_size > have) return XDEV_SUCCESS; /* made, not counted: the caller's own for now */
    insert(c, key, h, how, *plan, *work_size, transient, hit);
    return XDEV_SUCCESS;
}

bool xdev_fft_cache_acquire_again(xdev_fft_cache_t *c, const xdev_fft_hit_t *hit, unsigned how,
                                  size_t have, void **plan, size_t *work_size) {
    if (hit->c != c || hit->entry == NULL || hit->drops != c->drops) return false;
    take_if_fits(c, hit->entry, how, have, plan, work_size);
    return true;
}

void xdev_fft_cache_insert_made(xdev_fft_cache_t *c, const xdev_fft_key_t *key, unsigned how,
                                void *made, size_t made_work, size_t have, void **plan,
                                size_t *work_size, bool *transient, xdev_fft_hit_t *hit,
                                void **spare) {
    uint64_t h = key_hash(key);
    fft_entry_t *e = find(c, key, h);
    *spare = NULL;
    if (e != NULL) { /* another exec cached one meanwhile: made goes */
        take_if_fits(c, e, how, have, plan, work_size);
        *transient = false;
        *hit = (xdev_fft_hit_t){c, e, c->drops};
        *spare = made;
        return;
    }
    *plan = made;
    *work_size = made_work;
    insert(c, key, h, how, made, made_work, transient, hit);
}

/* ------------------------------------------------------------- public controls */

static xdev_status_t cache_for(xdev_device_t device, xdev_fft_cache_t **out) {
    xdev_device_record_t *rec;
    xdev_status_t st = xdev_device_lookup(device, &rec);
    if (st != XDEV_SUCCESS) return st;
    return xdev_fft_cache_get(rec->be, rec->id.index, out);
}

/* device's cache figures, read under its lock at one moment: what every
 * getter below answers from. */
static xdev_status_t read_stats(xdev_device_t device, xdev_fft_plan_cache_stats_t *out) {
    xdev_fft_cache_t *c;
    xdev_status_t st = cache_for(device, &c); /* the caller's XDEV_CHECK names it */
    if (st != XDEV_SUCCESS) return st;
    xdev_spin_lock(&c->lock);
    out->size = c->size;
    out->max_size = c->max_size;
    out->hits = c->hits;
    out->misses = c->misses;
    out->evictions = c->evictions;
    xdev_spin_unlock(&c->lock);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_fft_plan_cache_max_size(xdev_device_t device, int64_t *out) {
    XDEV_REQUIRE_ARG(out);
    xdev_fft_plan_cache_stats_t s;
    XDEV_CHECK(read_stats(device, &s));
    *out = s.max_size;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_fft_plan_cache_set_max_size(xdev_device_t device, int64_t max_size) {
    if (max_size < 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "max_size = %lld: the plan cache size must not be negative (0 "
                             "disables caching)",
                             (long long)max_size);
    xdev_fft_cache_t *c;
    XDEV_CHECK(cache_for(device, &c));
    xdev_spin_lock(&c->lock);
    c->max_size = max_size;
    evict_to(c, max_size);
    xdev_fft_cache_unlock(c);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_fft_plan_cache_size(xdev_device_t device, int64_t *out) {
    XDEV_REQUIRE_ARG(out);
    xdev_fft_plan_cache_stats_t s;
    XDEV_CHECK(read_stats(device, &s));
    *out = s.size;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_fft_plan_cache_clear(xdev_device_t device) {
    xdev_fft_cache_t *c;
    XDEV_CHECK(cache_for(device, &c));
    xdev_spin_lock(&c->lock);
    while (c->oldest != NULL)
        drop(c, c->oldest);
    xdev_fft_cache_unlock(c);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_fft_plan_cache_stats(xdev_device_t device, xdev_fft_plan_cache_stats_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(read_stats(device, out));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_fft_plan_cache_reset_stats(xdev_device_t device) {
    xdev_fft_cache_t *c;
    XDEV_CHECK(cache_for(device, &c));
    xdev_spin_lock(&c->lock);
    c->hits = c->misses = c->evictions = 0;
    xdev_spin_unlock(&c->lock);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- a stream's end */

/* The stream-destroy hook: the plans bound to `stream` (any generation of
 * its handle) leave the cache - their keys can never match again, and cuFFT
 * does not say what destroying a plan whose stream is gone does - except
 * those a capture used (a graph's kernels run them, on any stream, until an
 * eviction or a clear). A stream xdev owns was synchronized by its destroy,
 * and its plans are destroyed now, while it still exists (after waiting for
 * what another thread queued meanwhile). A wrapped stream belongs to its
 * owner: nothing waits for it here (a wait could take a kernel fault that
 * is the owner's to see, or block on the owner's work), so its plans go to
 * limbo, destroyed after the next device wait that works. A plan taken
 * after this sweep by a call already inside xdev_fft_exec is not cached
 * (XDEV_FFT_TAKE_NO_INSERT: the stream is closing). */
static void forget_stream(xdev_stream_t stream) {
    /* a stream no FFT ran on: no lock, no walk (a destroy inside a host
     * function must not wait for a lock an exec may hold while it waits
     * for the device) */
    if (!atomic_load_explicit(&stream->fft_plans, memory_order_seq_cst)) return;
    xdev_fft_cache_t *c = atomic_load_explicit(
        &xdev_fft_caches[stream->be->type][stream->device.index], memory_order_acquire);
    if (c == NULL) return; /* no FFT ever ran on the device */
    int64_t key = (int64_t)(uintptr_t)stream;
    fft_entry_t *mine = NULL;
    xdev_spin_lock(&c->lock);
    for (fft_entry_t *e = c->newest, *next; e != NULL; e = next) {
        next = e->older;
        if (e->key.stream != key || e->captured) continue;
        unlink_entry(c, e);
        e->older = mine;
        mine = e;
    }
    xdev_fft_cache_unlock(c);
    if (mine == NULL) return;
    if (!stream->owned) {
        park(c, mine);
        return;
    }
    xdev_error_state_t saved; /* the destroy's caller gets no error from here */
    xdev_core_error_save(&saved);
    if (xdev_be_stream_synchronize(stream->rec, stream->native) != XDEV_SUCCESS)
        park(c, mine);
    else
        destroy_list(c, mine);
    xdev_core_error_restore(&saved);
}

void xdev_fft_cache_wire(void) {
    xdev_hook_stream_destroy_add(forget_stream);
}
