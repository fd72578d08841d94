/* alloc_ptrmap.c - address -> live block, for xdev_free and record_stream.
 *
 * Sharded by address hash so that threads freeing on different devices (or
 * just different blocks) rarely meet on a lock; each shard is a chained hash
 * table that doubles when its load passes 1. Blocks chain through hash_next. */
#include <stdlib.h>

#include "alloc_internal.h"

#define SHARDS 64

typedef struct {
    pthread_mutex_t lock;
    xdev_block_t **buckets;
    size_t mask; /* bucket count - 1 */
    size_t count;
    char pad[64 - sizeof(pthread_mutex_t) % 64];
} shard_t;

static shard_t g_shards[SHARDS] = {[0 ... SHARDS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};

static uint64_t mix(uintptr_t a) {
    uint64_t x = (uint64_t)a >> 9;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static void grow(shard_t *s) {
    size_t n = s->buckets ? (s->mask + 1) * 2 : 64;
    xdev_block_t **nb = calloc(n, sizeof *nb);
    if (nb == NULL) return; /* keep the longer chains */
    if (s->buckets != NULL) {
        for (size_t i = 0; i <= s->mask; i++) {
            xdev_block_t *b = s->buckets[i];
            while (b != NULL) {
                xdev_block_t *next = b->hash_next;
                size_t j = (mix(b->addr) >> 6) & (n - 1);
                b->hash_next = nb[j];
                nb[j] = b;
                b = next;
            }
        }
        free(s->buckets);
    }
    s->buckets = nb;
    s->mask = n - 1;
}

void xdev_ptrmap_insert(xdev_block_t *b) {
    uint64_t h = mix(b->addr);
    shard_t *s = &g_shards[h & (SHARDS - 1)];
    pthread_mutex_lock(&s->lock);
    if (s->buckets == NULL || s->count > s->mask) grow(s);
    size_t j = (h >> 6) & s->mask;
    b->hash_next = s->buckets[j];
    s->buckets[j] = b;
    s->count++;
    pthread_mutex_unlock(&s->lock);
}

static xdev_block_t *take(uintptr_t addr, bool remove) {
    uint64_t h = mix(addr);
    shard_t *s = &g_shards[h & (SHARDS - 1)];
    xdev_block_t *found = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->buckets != NULL) {
        xdev_block_t **link = &s->buckets[(h >> 6) & s->mask];
        for (; *link != NULL; link = &(*link)->hash_next) {
            if ((*link)->addr == addr) {
                found = *link;
                if (remove) {
                    *link = found->hash_next;
                    found->hash_next = NULL;
                    s->count--;
                }
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

xdev_block_t *xdev_ptrmap_remove(uintptr_t addr) {
    return take(addr, true);
}

xdev_block_t *xdev_ptrmap_find(uintptr_t addr) {
    return take(addr, false);
}
