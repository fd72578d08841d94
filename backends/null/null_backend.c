/* SPDX-License-Identifier: Apache-2.0 */
/* backends/null/null_backend.c - the skeleton a new backend starts from: a
 * tiny but real device whose memory is host memory.
 *
 * It implements exactly the slots xdev/backend_slots.h marks REQUIRED and
 * leaves every optional one NULL, so the core's fallbacks (or its
 * NOT_SUPPORTED naming this backend and the slot) apply - a stub that
 * returned NOT_SUPPORTED itself would disable them. The required slots'
 * declarations are generated from the slot list (NULL_DECLARE below): a
 * slot added to the list as REQUIRED fails to link here until written.
 *
 * The device: NULL_BACKEND_DEVICES devices (default 1) of host memory
 * (malloc); each stream is a FIFO run in order by a worker thread of its
 * own, so streams are asynchronous and run concurrently, as the ABI expects;
 * an event marks a position in a stream (record enqueues "reached n", query
 * compares, wait_event enqueues a wait). Copy the folder, rename, and
 * replace the host-memory parts with your device's (README.md in this folder
 * has the steps; tests/outoftree/ builds this file against an installed
 * xdev exactly as they say). The name and type are macros only so that the
 * tests can also build it as a replacement for the shipped "hip". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/backend_support.h"

#ifndef NULL_BACKEND_NAME
#ifdef XDEV_BACKEND_NAME /* xdev_add_backend(<name> ...) defines it */
#define NULL_BACKEND_NAME XDEV_BACKEND_NAME
#else
#define NULL_BACKEND_NAME "null"
#endif
#endif
#ifndef NULL_BACKEND_TYPE
#define NULL_BACKEND_TYPE XDEV_DEVICE_TYPE_ANY /* a new backend: xdev gives it a type */
#endif
#ifndef NULL_BACKEND_FLAGS
#define NULL_BACKEND_FLAGS XDEV_BACKEND_HOST_MEMORY /* its memory is host memory */
#endif
#define NULL_MAX_DEVICES 8
#define NULL_ALIGN 256

static const xdev_host_services_t *g_host;

/* ----------------------------------------------------------------- queues */

typedef enum { T_HOST_FN, T_COPY, T_SET, T_RECORD, T_WAIT } task_kind_t;

/* One record of an event: reached once its stream passes it. An event is
 * its latest record (CUDA's semantics: a wait or query concerns the record
 * made last before it); records on two streams may be reached out of order,
 * so each is its own object, shared by the event and the waits that took it. */
typedef struct mark {
    _Atomic int refs;
    bool reached; /* under g_event_m */
} mark_t;

typedef struct null_event {
    unsigned flags;
    mark_t *last; /* under g_event_m; NULL: never recorded */
} null_event_t;

typedef struct task {
    struct task *next;
    task_kind_t kind;
    xdev_host_fn_t fn;
    void *user;
    void *dst;
    const void *src;
    size_t bytes;
    int value;
    mark_t *mark;
} task_t;

typedef struct null_stream {
    pthread_mutex_t m;
    pthread_cond_t cv; /* work arrived, work done, stop */
    task_t *head, *tail;
    size_t pending; /* queued or running */
    bool stop;
    pthread_t thread;
    struct null_stream *next; /* the device's streams */
    int refs;                 /* under the device's m: the list's, and each device sync's */
} null_stream_t;

/* The backend's device context: whatever a slot needs about one device. */
struct xdev_backend_device {
    int index;
    pthread_mutex_t m; /* streams */
    null_stream_t *streams;
    null_stream_t *default_stream;
};

static xdev_backend_device_t g_devices[NULL_MAX_DEVICES];
static int g_device_count = 1;

/* Events are few and waits rare: one lock and condition for all of them. */
static pthread_mutex_t g_event_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_event_cv = PTHREAD_COND_INITIALIZER;

static void mark_put(mark_t *m) {
    if (m != NULL && atomic_fetch_sub(&m->refs, 1) == 1) free(m);
}

/* The event's latest record, with a reference for the caller (NULL: none). */
static mark_t *mark_get(null_event_t *e) {
    pthread_mutex_lock(&g_event_m);
    mark_t *m = e->last;
    if (m != NULL) atomic_fetch_add(&m->refs, 1);
    pthread_mutex_unlock(&g_event_m);
    return m;
}

/* Run one task of stream s. A record marks its event reached and counts
 * itself done in one step (under the stream's lock): whoever sees the event
 * reached sees the stream idle if nothing came after it, and whoever sees
 * the stream idle sees the event reached (as CUDA's query after either
 * synchronize). */
static void run_task(null_stream_t *s, task_t *t) {
    switch (t->kind) {
    case T_HOST_FN:
        t->fn(t->user);
        break;
    case T_COPY:
        memmove(t->dst, t->src, t->bytes);
        break;
    case T_SET:
        memset(t->dst, t->value, t->bytes);
        break;
    case T_RECORD: /* both at once: reached and counted (stream lock, then events') */
        pthread_mutex_lock(&s->m);
        pthread_mutex_lock(&g_event_m);
        t->mark->reached = true;
        pthread_cond_broadcast(&g_event_cv);
        pthread_mutex_unlock(&g_event_m);
        s->pending--;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->m);
        mark_put(t->mark);
        break;
    case T_WAIT:
        pthread_mutex_lock(&g_event_m);
        while (!t->mark->reached)
            pthread_cond_wait(&g_event_cv, &g_event_m);
        pthread_mutex_unlock(&g_event_m);
        mark_put(t->mark);
        break;
    }
}

/* A stream's worker: its tasks in order, one at a time. */
static void *worker(void *arg) {
    null_stream_t *s = arg;
    pthread_mutex_lock(&s->m);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->cv, &s->m);
        if (s->head == NULL) break; /* stopped and drained */
        task_t *t = s->head;
        s->head = t->next;
        if (s->head == NULL) s->tail = NULL;
        pthread_mutex_unlock(&s->m);
        bool counted = t->kind == T_RECORD; /* run_task counted it */
        run_task(s, t);
        free(t);
        pthread_mutex_lock(&s->m);
        if (!counted) s->pending--;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->m);
    return NULL;
}

static xdev_status_t enqueue(null_stream_t *s, task_t proto) {
    task_t *t = malloc(sizeof *t);
    if (t == NULL)
        return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a task");
    *t = proto;
    t->next = NULL;
    pthread_mutex_lock(&s->m);
    if (s->tail != NULL)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    s->pending++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->m);
    return XDEV_SUCCESS;
}

/* Wait for everything queued on s. From s's own worker (a host function
 * that synchronizes) everything before the running task is done already and
 * nothing after it can run first: waiting would deadlock, so return. */
static void drain(null_stream_t *s) {
    if (pthread_equal(pthread_self(), s->thread)) return;
    pthread_mutex_lock(&s->m);
    while (s->pending > 0)
        pthread_cond_wait(&s->cv, &s->m);
    pthread_mutex_unlock(&s->m);
}

static xdev_status_t new_stream(xdev_backend_device_t *dev, null_stream_t **out) {
    null_stream_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a stream");
    pthread_mutex_init(&s->m, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        free(s);
        return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY,
                                 NULL_BACKEND_NAME ":%d: no thread for a stream", dev->index);
    }
    pthread_mutex_lock(&dev->m);
    s->refs = 1; /* the device's list */
    s->next = dev->streams;
    dev->streams = s;
    pthread_mutex_unlock(&dev->m);
    *out = s;
    return XDEV_SUCCESS;
}

/* Stop the worker (after the queue drains) and free the stream. */
static void free_stream(null_stream_t *s) {
    pthread_mutex_lock(&s->m);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->m);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->m);
    free(s);
}

/* Drop a reference to s; the last one frees it (a device sync may hold one
 * while another thread destroys the stream). */
static void stream_put(xdev_backend_device_t *dev, null_stream_t *s) {
    pthread_mutex_lock(&dev->m);
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&dev->m);
    if (last) free_stream(s);
}

/* ------------------------------------------------- the REQUIRED slots */
/* Declared from the slot list: the compiler checks each definition below. */
#define NULL_DECLARE(table, slot, need, kind, since, p, a) NULL_DECLARE_##need(table, slot, kind, p)
#define NULL_DECLARE_REQUIRED(table, slot, kind, p)                                                \
    static xdev_status_t null_##table##_##slot XDEV_SLOT_PARAMS(kind, p);
#define NULL_DECLARE_OPTIONAL(table, slot, kind, p)
#define NULL_DECLARE_TABLE(table, list) list(NULL_DECLARE)
XDEV_BACKEND_TABLES(NULL_DECLARE_TABLE)

static xdev_status_t null_device_count(int *count) {
    *count = g_device_count;
    return XDEV_SUCCESS;
}

static xdev_status_t null_device_open(int index, xdev_backend_device_t **out) {
    xdev_backend_device_t *d = &g_devices[index];
    d->index = index;
    pthread_mutex_init(&d->m, NULL);
    xdev_status_t st = new_stream(d, &d->default_stream);
    if (st == XDEV_SUCCESS) *out = d;
    return st;
}

static xdev_status_t null_device_get_properties(xdev_backend_device_t *dev,
                                                xdev_device_properties_t *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, NULL_BACKEND_NAME " host-memory device %d", dev->index);
    p->capability_major = 1;           /* the skeleton's own numbering */
    p->total_memory = (size_t)1 << 30; /* nominal: malloc decides */
    p->multiprocessor_count = 1;
    p->physical_index = dev->index;
    p->integrated = true;
    return XDEV_SUCCESS;
}

/* Drain every stream of the device, each held by a reference so that a
 * stream destroyed meanwhile by another thread stays valid until drained. */
static xdev_status_t null_device_synchronize(xdev_backend_device_t *dev) {
    pthread_mutex_lock(&dev->m);
    size_t n = 0;
    for (null_stream_t *s = dev->streams; s != NULL; s = s->next)
        n++;
    null_stream_t **held = malloc((n > 0 ? n : 1) * sizeof *held);
    if (held == NULL) {
        pthread_mutex_unlock(&dev->m);
        return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY,
                                 NULL_BACKEND_NAME ":%d: no host memory to synchronize",
                                 dev->index);
    }
    n = 0;
    for (null_stream_t *s = dev->streams; s != NULL; s = s->next) {
        s->refs++;
        held[n++] = s;
    }
    pthread_mutex_unlock(&dev->m);
    for (size_t i = 0; i < n; i++) {
        drain(held[i]);
        stream_put(dev, held[i]);
    }
    free(held);
    return XDEV_SUCCESS;
}

static xdev_status_t null_stream_create(xdev_backend_device_t *dev, int priority, void **out) {
    (void)priority; /* one priority here */
    null_stream_t *s = NULL;
    xdev_status_t st = new_stream(dev, &s);
    if (st == XDEV_SUCCESS) *out = s;
    return st;
}

static xdev_status_t null_stream_destroy(xdev_backend_device_t *dev, void *stream) {
    null_stream_t *s = stream;
    drain(s);
    pthread_mutex_lock(&dev->m);
    for (null_stream_t **l = &dev->streams; *l != NULL; l = &(*l)->next)
        if (*l == s) {
            *l = s->next;
            break;
        }
    pthread_mutex_unlock(&dev->m);
    stream_put(dev, s); /* the list's reference */
    return XDEV_SUCCESS;
}

static xdev_status_t null_stream_get_default(xdev_backend_device_t *dev, void **out) {
    *out = dev->default_stream;
    return XDEV_SUCCESS;
}

static xdev_status_t null_stream_query(xdev_backend_device_t *dev, void *stream) {
    (void)dev;
    null_stream_t *s = stream;
    pthread_mutex_lock(&s->m);
    bool idle = s->pending == 0;
    pthread_mutex_unlock(&s->m);
    return idle ? XDEV_SUCCESS : XDEV_ERROR_NOT_READY;
}

static xdev_status_t null_stream_synchronize(xdev_backend_device_t *dev, void *stream) {
    (void)dev;
    drain(stream);
    return XDEV_SUCCESS;
}

static xdev_status_t null_stream_wait_event(xdev_backend_device_t *dev, void *stream, void *event) {
    (void)dev;
    mark_t *m = mark_get(event);
    if (m == NULL) return XDEV_SUCCESS; /* never recorded: nothing to wait for */
    xdev_status_t st = enqueue(stream, (task_t){.kind = T_WAIT, .mark = m});
    if (st != XDEV_SUCCESS) mark_put(m);
    return st;
}

static xdev_status_t null_stream_launch_host_func(xdev_backend_device_t *dev, void *stream,
                                                  xdev_host_fn_t fn, void *user) {
    (void)dev;
    return enqueue(stream, (task_t){.kind = T_HOST_FN, .fn = fn, .user = user});
}

static xdev_status_t null_event_create(xdev_backend_device_t *dev, unsigned flags, void **out) {
    (void)dev;
    null_event_t *e = calloc(1, sizeof *e);
    if (e == NULL)
        return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory for an event");
    e->flags = flags;
    *out = e;
    return XDEV_SUCCESS;
}

static xdev_status_t null_event_destroy(xdev_backend_device_t *dev, void *event) {
    (void)dev;
    null_event_t *e = event;
    mark_put(e->last);
    free(e);
    return XDEV_SUCCESS;
}

static xdev_status_t null_event_record(xdev_backend_device_t *dev, void *event, void *stream) {
    (void)dev;
    null_event_t *e = event;
    mark_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a record");
    atomic_store(&m->refs, 2); /* the event's and the record task's */
    xdev_status_t st = enqueue(stream, (task_t){.kind = T_RECORD, .mark = m});
    if (st != XDEV_SUCCESS) {
        free(m);
        return st;
    }
    pthread_mutex_lock(&g_event_m);
    mark_t *old = e->last;
    e->last = m;
    pthread_mutex_unlock(&g_event_m);
    mark_put(old);
    return XDEV_SUCCESS;
}

static xdev_status_t null_event_query(xdev_backend_device_t *dev, void *event) {
    (void)dev;
    null_event_t *e = event;
    pthread_mutex_lock(&g_event_m);
    bool reached = e->last == NULL || e->last->reached;
    pthread_mutex_unlock(&g_event_m);
    return reached ? XDEV_SUCCESS : XDEV_ERROR_NOT_READY;
}

static xdev_status_t null_event_synchronize(xdev_backend_device_t *dev, void *event) {
    (void)dev;
    mark_t *m = mark_get(event);
    if (m == NULL) return XDEV_SUCCESS;
    pthread_mutex_lock(&g_event_m);
    while (!m->reached)
        pthread_cond_wait(&g_event_cv, &g_event_m);
    pthread_mutex_unlock(&g_event_m);
    mark_put(m);
    return XDEV_SUCCESS;
}

static xdev_status_t null_memory_malloc(xdev_backend_device_t *dev, size_t bytes, void **out) {
    size_t rounded = (bytes + NULL_ALIGN - 1) / NULL_ALIGN * NULL_ALIGN;
    void *p = aligned_alloc(NULL_ALIGN, rounded > 0 ? rounded : NULL_ALIGN);
    if (p == NULL)
        return xdev_support_fail(g_host, XDEV_ERROR_OUT_OF_MEMORY,
                                 NULL_BACKEND_NAME ":%d: out of memory allocating %zu bytes",
                                 dev->index, bytes);
    *out = p;
    return XDEV_SUCCESS;
}

static xdev_status_t null_memory_free(xdev_backend_device_t *dev, void *ptr) {
    (void)dev;
    free(ptr);
    return XDEV_SUCCESS;
}

/* Every side is host-addressable here, whatever the copy's kind. */
static xdev_status_t null_memory_memcpy_async(xdev_backend_device_t *dev,
                                              const xdev_copy_desc_t *copy, void *stream) {
    (void)dev;
    if (copy->bytes == 0) return XDEV_SUCCESS;
    return enqueue(
        stream, (task_t){.kind = T_COPY, .dst = copy->dst, .src = copy->src, .bytes = copy->bytes});
}

static xdev_status_t null_memory_memset_async(xdev_backend_device_t *dev, void *dst, int value,
                                              size_t bytes, void *stream) {
    (void)dev;
    if (bytes == 0) return XDEV_SUCCESS;
    return enqueue(stream, (task_t){.kind = T_SET, .dst = dst, .value = value, .bytes = bytes});
}

/* -------------------------------------------------------------- tables */
/* A table holds the REQUIRED slots, each null_<table>_<slot>; optional ones stay NULL. */
#define NULL_SLOT(table, slot, need, kind, since, p, a) NULL_SLOT_##need(table, slot)
#define NULL_SLOT_REQUIRED(table, slot) .slot = null_##table##_##slot,
#define NULL_SLOT_OPTIONAL(table, slot)

static const xdev_device_vtable_t g_device = {.size = sizeof g_device,
                                              XDEV_SLOTS_DEVICE(NULL_SLOT)};
static const xdev_stream_vtable_t g_stream = {.size = sizeof g_stream,
                                              XDEV_SLOTS_STREAM(NULL_SLOT)};
static const xdev_event_vtable_t g_event = {.size = sizeof g_event, XDEV_SLOTS_EVENT(NULL_SLOT)};
static const xdev_memory_vtable_t g_memory = {.size = sizeof g_memory,
                                              XDEV_SLOTS_MEMORY(NULL_SLOT)};

static xdev_status_t null_init(const xdev_host_services_t *host) {
    g_host = host;
    const char *v = host->get_env("NULL_BACKEND_DEVICES"); /* the skeleton's own variable */
    if (v != NULL && v[0] != '\0') {
        char *end = NULL;
        long n = strtol(v, &end, 10);
        if (*end != '\0' || n < 1 || n > NULL_MAX_DEVICES)
            return xdev_support_fail(host, XDEV_ERROR_ENV,
                                     "NULL_BACKEND_DEVICES='%s' is not an integer in 1..%d", v,
                                     NULL_MAX_DEVICES);
        g_device_count = (int)n;
    }
    return XDEV_SUCCESS;
}

/* At exit: stop the streams' threads (the ABI's at_exit contract). */
static void null_at_exit(void) {
    for (int i = 0; i < g_device_count; i++) {
        xdev_backend_device_t *d = &g_devices[i];
        if (d->default_stream == NULL) continue;
        pthread_mutex_lock(&d->m);
        null_stream_t *s = d->streams;
        d->streams = NULL;
        pthread_mutex_unlock(&d->m);
        while (s != NULL) { /* stopped and freed: nothing of the backend outlives it */
            null_stream_t *next = s->next;
            free_stream(s);
            s = next;
        }
        d->default_stream = NULL;
    }
}

static const xdev_backend_api_t g_api = {
    .size = sizeof(xdev_backend_api_t),
    .abi_major = XDEV_BACKEND_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .name = NULL_BACKEND_NAME,
    .type = NULL_BACKEND_TYPE,
    .init = null_init,
    .at_exit = null_at_exit,
    .device = &g_device,
    .stream = &g_stream,
    .event = &g_event,
    .memory = &g_memory,
    /* blas, fft, rng, trace, ipc, ops, comm, kernel, graph, prim: NULL (optional) */
    .flags = NULL_BACKEND_FLAGS,
};

XDEV_API const xdev_backend_api_t *xdev_backend_entry(void);
const xdev_backend_api_t *xdev_backend_entry(void) {
    return &g_api;
}
