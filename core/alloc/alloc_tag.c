/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_tag.c - caller-supplied context for allocations: each thread keeps a
 * stack of tags (xdev_memory_tag_push/pop), and every allocation it makes
 * carries the stack's path ("train/forward/attn") into snapshot blocks,
 * history entries and the memory view. Paths are interned once, at push, so
 * an allocation stores one pointer and pays one thread-local read; interned
 * strings live until the process ends (their number is capped). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/thread_heap.h"
#include "base/utf8.h"
#include "alloc/alloc_internal.h"

#define TAG_DEPTH_MAX 32
#define TAG_LEN_MAX 255
#define TAG_PATH_MAX 1024
#define INTERN_MAX 65536

/* A thread's pushed tags, on the heap (made at its first push, freed at its
 * exit): libxdev's static TLS stays small (ctest tls.static_size), and a
 * thread that never tags pays one pointer. roots[i] is the first component
 * of stack[i] ("a" of "a/b/c"), interned too: with expandable segments the
 * allocator keys pools by it (alloc_sleep.c). */
typedef struct tag_stack {
    const char *stack[TAG_DEPTH_MAX];
    const char *roots[TAG_DEPTH_MAX];
    int depth;
} tag_stack_t;
static xdev_thread_heap_t g_tags = XDEV_THREAD_HEAP_INIT(sizeof(tag_stack_t), NULL);
static _Thread_local void *tls_tags; /* this thread's tag_stack_t, NULL before its first push */

/* Set (for good) by the first push of any thread, before that thread's
 * stack exists: xdev_alloc_tag_current (alloc_internal.h) reads no TLS
 * while it is false. Relaxed is enough: a thread that pushed reads its own
 * store, and a thread that never pushed has no tag whatever it reads. */
atomic_bool xdev_alloc_tags_used;

/* The thread's stack, made on first use; NULL without memory. */
static tag_stack_t *tags_for_push(void) {
    return xdev_thread_heap_get(&g_tags, &tls_tags);
}

/* Open-addressing set of interned paths (the table never shrinks). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char **g_slots;
static size_t g_cap, g_count;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot holding s, or the empty slot where it would go (g_cap > 0). */
static char **slot_of(char **slots, size_t cap, const char *s) {
    size_t j = hash_str(s) & (cap - 1);
    while (slots[j] != NULL && strcmp(slots[j], s) != 0)
        j = (j + 1) & (cap - 1);
    return &slots[j];
}

/* Double the table (lock held); false when out of memory. */
static bool grow_locked(void) {
    size_t cap = g_cap ? g_cap * 2 : 256;
    char **slots = calloc(cap, sizeof *slots);
    if (slots == NULL) return false;
    for (size_t i = 0; i < g_cap; i++)
        if (g_slots[i] != NULL) *slot_of(slots, cap, g_slots[i]) = g_slots[i];
    free(g_slots);
    g_slots = slots;
    g_cap = cap;
    return true;
}

/* The interned copy of s; NULL when out of memory or at the cap (lock held). */
static const char *intern_locked(const char *s) {
    if (g_cap > 0) {
        char **at = slot_of(g_slots, g_cap, s);
        if (*at != NULL) return *at;
    }
    if (g_count >= INTERN_MAX) return NULL;
    if ((g_count + 1) * 2 > g_cap && !grow_locked()) return NULL;
    char **at = slot_of(g_slots, g_cap, s);
    *at = strdup(s);
    if (*at == NULL) return NULL;
    g_count++;
    return *at;
}

const char *xdev_alloc_tag_current_tls(void) {
    const tag_stack_t *t = tls_tags;
    return t != NULL && t->depth > 0 ? t->stack[t->depth - 1] : NULL;
}

const char *xdev_alloc_tag_root_current(void) {
    const tag_stack_t *t = tls_tags;
    return t != NULL && t->depth > 0 ? t->roots[t->depth - 1] : NULL;
}

/* A path pushed, or the first component of one (interned at the push). */
bool xdev_alloc_tag_known(const char *path) {
    pthread_mutex_lock(&g_lock);
    bool known = g_cap > 0 && *slot_of(g_slots, g_cap, path) != NULL;
    pthread_mutex_unlock(&g_lock);
    return known;
}

xdev_status_t xdev_memory_tag_push(const char *tag) {
    XDEV_REQUIRE_ARG(tag);
    size_t len = strlen(tag);
    if (len == 0 || len > TAG_LEN_MAX)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "tag length %zu is not in 1..%d", len,
                             TAG_LEN_MAX);
    size_t bad;
    if (!xdev_utf8_valid(tag, len, &bad))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the tag is not UTF-8: byte %zu (0x%02x) begins no character", bad,
                             (unsigned char)tag[bad]);
    if (!atomic_load_explicit(&xdev_alloc_tags_used, memory_order_relaxed))
        atomic_store_explicit(&xdev_alloc_tags_used, true, memory_order_relaxed);
    tag_stack_t *t = tags_for_push();
    if (t == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                             "no host memory for this thread's tag stack");
    if (t->depth == TAG_DEPTH_MAX)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "this thread already has %d tags pushed (the most); pop one first",
                             TAG_DEPTH_MAX);
    char path[TAG_PATH_MAX];
    const char *parent = xdev_alloc_tag_current();
    int n = parent ? snprintf(path, sizeof path, "%s/%s", parent, tag)
                   : snprintf(path, sizeof path, "%s", tag);
    if (n < 0 || (size_t)n >= sizeof path)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the tag path '%.40s...' would be longer than %d bytes", path,
                             TAG_PATH_MAX - 1);
    /* the root: the parent's, or the new path's first component */
    char first[TAG_PATH_MAX];
    if (parent == NULL) {
        size_t first_len = strcspn(path, "/");
        memcpy(first, path, first_len);
        first[first_len] = '\0';
    }
    pthread_mutex_lock(&g_lock);
    const char *interned = intern_locked(path);
    const char *root = parent != NULL     ? t->roots[t->depth - 1]
                       : interned != NULL ? intern_locked(first)
                                          : NULL;
    pthread_mutex_unlock(&g_lock);
    if (interned == NULL || root == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                             "no room for tag path '%s' (host memory, or %d distinct paths)", path,
                             INTERN_MAX);
    t->roots[t->depth] = root;
    t->stack[t->depth++] = interned;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_memory_tag_pop(void) {
    tag_stack_t *t = tls_tags;
    if (t == NULL || t->depth == 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "no tag is pushed on this thread (xdev_memory_tag_push first)");
    t->depth--;
    return XDEV_SUCCESS;
}
