/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_stream.c - the stream vtable and each device's list of live streams.
 *
 * The queue itself is cpu_queue.c. This file owns stream lifetime: every
 * stream (the lazily created default stream included) is on its device's
 * list, so device synchronize can wait for all of them and shutdown can
 * stop them. A stream's native handle is its xdev_cpu_stream_t pointer. */
#include <stdlib.h>

#include "cpu/cpu_internal.h"

static void link_stream(xdev_cpu_device_t *d, xdev_cpu_stream_t *s) {
    s->prev = NULL;
    s->next = d->streams;
    if (d->streams != NULL) d->streams->prev = s;
    d->streams = s;
}

static void unlink_stream(xdev_cpu_device_t *d, xdev_cpu_stream_t *s) {
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        d->streams = s->next;
    if (s->next != NULL) s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static xdev_status_t stream_get_default(xdev_cpu_device_t *dev, void **out) {
    int device = dev->index;
    xdev_cpu_device_t *d = dev;
    xdev_cpu_stream_t *s = atomic_load_explicit(&d->default_stream, memory_order_acquire);
    if (s == NULL) {
        pthread_mutex_lock(&d->mu);
        s = atomic_load_explicit(&d->default_stream, memory_order_relaxed);
        if (s == NULL) {
            s = xdev_cpu_stream_new(device, XDEV_STREAM_PRIORITY_NORMAL, true);
            if (s != NULL) {
                link_stream(d, s);
                atomic_store_explicit(&d->default_stream, s, memory_order_release);
            }
        }
        pthread_mutex_unlock(&d->mu);
        if (s == NULL) return XDEV_ERROR_OUT_OF_MEMORY; /* error already set */
    }
    *out = s;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_cpu_stream_resolve(int device, void *stream, xdev_cpu_stream_t **out) {
    if (stream != NULL) {
        *out = stream;
        return XDEV_SUCCESS;
    }
    void *def;
    xdev_status_t st = stream_get_default(&xdev_cpu_state.devices[device], &def);
    if (st == XDEV_SUCCESS) *out = def;
    return st;
}

static xdev_status_t stream_create(xdev_cpu_device_t *dev, int priority, void **out) {
    int device = dev->index;
    xdev_cpu_device_t *d = dev;
    xdev_cpu_stream_t *s = xdev_cpu_stream_new(device, priority, false);
    if (s == NULL) return XDEV_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&d->mu);
    link_stream(d, s);
    pthread_mutex_unlock(&d->mu);
    *out = s;
    return XDEV_SUCCESS;
}

static xdev_status_t stream_destroy(xdev_cpu_device_t *dev, void *stream) {
    int device = dev->index;
    xdev_cpu_device_t *d = dev;
    xdev_cpu_stream_t *s = stream;
    if (s == NULL || s->is_default)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d the default stream belongs to the backend and cannot be "
                              "destroyed",
                              device);
    xdev_status_t st = xdev_cpu_stream_stop(s); /* drains and joins */
    if (st != XDEV_SUCCESS) return st;
    d = &xdev_cpu_state.devices[s->device]; /* the list it is on, whatever `device` said */
    pthread_mutex_lock(&d->mu);
    unlink_stream(d, s);
    pthread_mutex_unlock(&d->mu);
    xdev_cpu_stream_release(s);
    return XDEV_SUCCESS;
}

static xdev_status_t stream_query(xdev_cpu_device_t *dev, void *stream) {
    int device = dev->index;
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(device, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    return xdev_cpu_stream_idle(s) ? XDEV_SUCCESS : XDEV_ERROR_NOT_READY;
}

static xdev_status_t stream_synchronize(xdev_cpu_device_t *dev, void *stream) {
    int device = dev->index;
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(device, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    st = xdev_cpu_stream_wait_for(s, xdev_cpu_stream_enqueued(s));
    return st != XDEV_SUCCESS ? st : xdev_cpu_stream_take_fault(s); /* a kernel's, once */
}

/* The event's latest record is captured under the stream's lock (see
 * event_record); an event never recorded, or already reached, enqueues nothing. */
static xdev_status_t stream_wait_event(xdev_cpu_device_t *dev, void *stream, void *event) {
    int device = dev->index;
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(device, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    bool handled = false;
    st = xdev_cpu_graph_wait(s, event, &handled);
    if (st != XDEV_SUCCESS || handled) return st;
    xdev_cpu_op_t *op;
    st = xdev_cpu_stream_begin_op(s, &op);
    if (st != XDEV_SUCCESS) return st;
    uint64_t seq = xdev_cpu_event_capture(event);
    if (seq == 0) {
        xdev_cpu_stream_cancel_unlock(s, op);
        return XDEV_SUCCESS;
    }
    op->kind = XDEV_CPU_OP_WAIT;
    op->u.mark.event = event;
    op->u.mark.seq = seq;
    xdev_cpu_stream_push_unlock(s, op);
    return XDEV_SUCCESS;
}

static xdev_status_t stream_launch_host_func(xdev_cpu_device_t *dev, void *stream,
                                             xdev_host_fn_t fn, void *user) {
    xdev_cpu_op_t op = {.kind = XDEV_CPU_OP_HOST_FN};
    op.u.host.fn = fn;
    op.u.host.user = user;
    return xdev_cpu_stream_enqueue(dev->index, stream, &op);
}

/* Snapshot (stream, enqueued) pairs under the device lock, pinning each
 * stream, then wait without the lock: streams may be created or destroyed
 * meanwhile (even by host functions) without deadlock. */
xdev_status_t xdev_cpu_device_sync_streams(xdev_cpu_device_t *d) {
    pthread_mutex_lock(&d->mu);
    size_t n = 0;
    for (xdev_cpu_stream_t *s = d->streams; s != NULL; s = s->next)
        n++;
    struct pin {
        xdev_cpu_stream_t *stream;
        uint64_t target;
    } *pins = n != 0 ? malloc(n * sizeof *pins) : NULL;
    if (n != 0 && pins == NULL) {
        pthread_mutex_unlock(&d->mu);
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d cannot synchronize the device: out of host memory", d->index);
    }
    size_t i = 0;
    for (xdev_cpu_stream_t *s = d->streams; s != NULL; s = s->next, i++) {
        xdev_cpu_stream_retain(s);
        pins[i].stream = s;
        pins[i].target = xdev_cpu_stream_enqueued(s);
    }
    pthread_mutex_unlock(&d->mu);
    xdev_status_t st = XDEV_SUCCESS, fault = XDEV_SUCCESS;
    for (i = 0; i < n; i++) {
        if (st == XDEV_SUCCESS) st = xdev_cpu_stream_wait_for(pins[i].stream, pins[i].target);
        /* The first stream's kernel fault is reported (and cleared); every
         * stream is still waited for. */
        if (st == XDEV_SUCCESS && fault == XDEV_SUCCESS)
            fault = xdev_cpu_stream_take_fault(pins[i].stream);
        xdev_cpu_stream_release(pins[i].stream);
    }
    free(pins);
    return st != XDEV_SUCCESS ? st : fault;
}

/* How long process exit waits, in all, for workers to finish their op. */
#define XDEV_CPU_EXIT_WAIT_S 5

/* Process exit: every worker is told to drop what it has not started (all
 * at once, under each device's lock), then each is joined, pinned and
 * without the lock, against one deadline (xdev_cpu_stream_abandon). Streams
 * stay allocated and listed: a thread may still be destroying one, a worker
 * that did not end in time (a host function that blocks) still uses it, and
 * the process is ending. */
void xdev_cpu_streams_shutdown(void) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += XDEV_CPU_EXIT_WAIT_S;
    for (int i = 0; i < xdev_cpu_state.count; i++) {
        xdev_cpu_device_t *d = &xdev_cpu_state.devices[i];
        pthread_mutex_lock(&d->mu);
        for (xdev_cpu_stream_t *s = d->streams; s != NULL; s = s->next)
            atomic_store(&s->discard, true);
        pthread_mutex_unlock(&d->mu);
    }
    for (int i = 0; i < xdev_cpu_state.count; i++) {
        xdev_cpu_device_t *d = &xdev_cpu_state.devices[i];
        pthread_mutex_lock(&d->mu);
        size_t n = 0;
        for (xdev_cpu_stream_t *s = d->streams; s != NULL; s = s->next)
            n++;
        xdev_cpu_stream_t **pins = n != 0 ? malloc(n * sizeof *pins) : NULL;
        size_t k = 0;
        for (xdev_cpu_stream_t *s = d->streams; s != NULL && pins != NULL; s = s->next) {
            xdev_cpu_stream_retain(s);
            pins[k++] = s;
        }
        pthread_mutex_unlock(&d->mu);
        for (size_t j = 0; j < k; j++) {
            (void)xdev_cpu_stream_abandon(pins[j], &deadline);
            xdev_cpu_stream_release(pins[j]);
        }
        free(pins); /* out of memory: nothing awaited, the work is dropped all the same */
    }
}

const xdev_stream_vtable_t xdev_cpu_stream_vtable = {
    .size = sizeof(xdev_stream_vtable_t),
    .create = stream_create,
    .destroy = stream_destroy,
    .get_default = stream_get_default,
    .query = stream_query,
    .synchronize = stream_synchronize,
    .wait_event = stream_wait_event,
    .launch_host_func = stream_launch_host_func,
};
