/* SPDX-License-Identifier: Apache-2.0 */
/* memory.c - what xdev knows about a pointer, copies with their direction
 * inferred from it, memset and memory info. Allocation itself lives in
 * device_allocator.c (device) and host_allocator.c (pinned). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/copy.h"
#include "runtime/capture.h"
#include "runtime/stream_internal.h"
#include "runtime/enqueue.h"
#include "alloc/alloc_internal.h"
#include "alloc/alloc_lookup.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "alloc/pointer_registry.h"
#include "runtime/sync_debug.h"

xdev_status_t xdev_pointer_get_info(const void *ptr, xdev_pointer_info_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    memset(out, 0, sizeof *out);
    xdev_live_ref_t ref;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    if (xdev_live_lookup(ptr, "ptr", &ref) != XDEV_SUCCESS) {
        xdev_core_error_restore(&saved); /* freed memory is simply not xdev's any more */
        ref.known = ref.asleep;          /* sleeping memory still is */
    }
    /* Past the bytes requested (in the allocator's rounding) is not the
     * allocation's, as for every other check. */
    if (ref.known && (uintptr_t)ptr - ref.base >= ref.size) ref.known = false;
    if (!ref.known) {
        out->kind = XDEV_MEMORY_HOST;
        out->device = (xdev_device_t){XDEV_DEVICE_CPU, -1};
        return XDEV_SUCCESS;
    }
    out->kind = ref.e.origin == XDEV_PTR_MANAGED ? XDEV_MEMORY_MANAGED : ref.e.kind;
    out->device = (xdev_device_t){ref.e.be->type, ref.e.index};
    out->base = (void *)ref.base;
    out->size = ref.size;
    out->block_size = ref.block_size;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_of(const void *ptr, xdev_device_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_live_ref_t ref;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_status_t st = xdev_live_lookup(ptr, "ptr", &ref);
    if (st != XDEV_SUCCESS && ref.asleep) /* sleeping memory is still the device's */
        xdev_core_error_restore(&saved);
    else
        XDEV_CHECK(st);
    if (!ref.known || ref.e.kind != XDEV_MEMORY_DEVICE)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "pointer %p is not device memory allocated by xdev", ptr);
    out->type = ref.e.be->type;
    out->index = ref.e.index;
    return XDEV_SUCCESS;
}

/* One side of a copy, as the registry knows it. */
typedef struct {
    bool known; /* allocated by xdev */
    xdev_ptr_entry_t e;
} side_t;

/* Look one side up: memory xdev does not manage is host memory; xdev's must
 * be a live allocation that holds all n bytes. */
static xdev_status_t lookup_side(const void *p, size_t n, const char *arg, side_t *s) {
    xdev_live_ref_t ref;
    xdev_status_t st = xdev_live_lookup(p, arg, &ref);
    if (st == XDEV_SUCCESS && ref.known) st = xdev_live_check_extent(&ref, p, n, arg);
    s->known = ref.known;
    s->e = ref.e;
    return st;
}

static bool is_device(const side_t *s) {
    /* Memory of a CPU device is host memory to every other backend. */
    return s->known && s->e.kind == XDEV_MEMORY_DEVICE;
}

/* A copy's executing backend, device and descriptor. */
typedef struct {
    xdev_backend_t *be;
    int index; /* device whose stream runs the copy */
    int alt;   /* the other device that may also run it (peer copies), else -1 */
    xdev_copy_desc_t desc;
    xdev_backend_t *cpu_side_be; /* a CPU device operand of a cross-backend copy */
    int cpu_side_index;
} copy_plan_t;

static void set_pinned(copy_plan_t *p, const side_t *dst, const side_t *src) {
    p->desc.dst_pinned = dst->known && dst->e.kind == XDEV_MEMORY_PINNED_HOST && dst->e.be == p->be;
    p->desc.src_pinned = src->known && src->e.kind == XDEV_MEMORY_PINNED_HOST && src->e.be == p->be;
}

/* Work out the copy kind and which backend/device runs it. */
static xdev_status_t plan_copy(void *dst, const void *src, size_t n, copy_plan_t *p) {
    side_t d, s;
    xdev_status_t st = lookup_side(dst, n, "dst", &d);
    if (st == XDEV_SUCCESS) st = lookup_side(src, n, "src", &s);
    if (st != XDEV_SUCCESS) return st;
    memset(p, 0, sizeof *p);
    p->desc.size = sizeof p->desc;
    p->desc.dst = dst;
    p->desc.src = src;
    p->desc.bytes = n;
    p->desc.dst_device = p->desc.src_device = NULL;
    p->alt = -1;
    p->cpu_side_index = -1;
    bool dd = is_device(&d), sd = is_device(&s);
    /* Across backends, the device memory of a backend whose device memory is
     * host memory (the CPU's) is host memory to the other one. */
    if (dd && sd && d.e.be != s.e.be) {
        side_t *cpu = (d.e.be->flags & XDEV_BACKEND_HOST_MEMORY)   ? &d
                      : (s.e.be->flags & XDEV_BACKEND_HOST_MEMORY) ? &s
                                                                   : NULL;
        if (cpu == NULL)
            return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "an asynchronous copy between %s and %s devices is not supported; "
                             "use xdev_memcpy, which stages through the host",
                             d.e.be->name, s.e.be->name);
        p->cpu_side_be = cpu->e.be;
        p->cpu_side_index = cpu->e.index;
        if (cpu == &d)
            dd = false;
        else
            sd = false;
    }
    if (dd && sd) {
        p->be = d.e.be;
        p->index = d.e.index;
        p->desc.dst_device = d.e.be->devices[d.e.index].ctx;
        p->desc.src_device = s.e.be->devices[s.e.index].ctx;
        if (d.e.index == s.e.index) {
            p->desc.kind = XDEV_COPY_DEVICE_TO_DEVICE;
        } else {
            p->desc.kind = XDEV_COPY_PEER;
            p->alt = s.e.index;
        }
    } else if (dd || sd) {
        const side_t *dev = dd ? &d : &s;
        p->be = dev->e.be;
        p->index = dev->e.index;
        xdev_backend_device_t *phys = p->be->devices[p->index].ctx;
        if (dd) {
            p->desc.kind = XDEV_COPY_HOST_TO_DEVICE;
            p->desc.dst_device = phys;
        } else {
            p->desc.kind = XDEV_COPY_DEVICE_TO_HOST;
            p->desc.src_device = phys;
        }
    } else {
        p->desc.kind = XDEV_COPY_HOST_TO_HOST;
        p->be = NULL; /* chosen by the stream */
    }
    if (p->be != NULL) set_pinned(p, &d, &s);
    return XDEV_SUCCESS;
}

/* Choose the stream that runs a planned copy: the caller's (checked) or the
 * current stream of the planned device. */
static xdev_status_t copy_stream(copy_plan_t *p, const void *dst, const void *src,
                                 xdev_stream_t *stream) {
    if (*stream != NULL) {
        xdev_status_t st = xdev_stream_check(*stream, "stream");
        if (st != XDEV_SUCCESS) return st;
    }
    if (p->be == NULL) { /* host to host: any stream; default: current device's */
        if (*stream == NULL) {
            xdev_device_record_t *rec;
            xdev_device_t cur = {xdev_core_default_type(), -1};
            xdev_status_t st = xdev_device_lookup(cur, &rec);
            if (st == XDEV_SUCCESS) st = xdev_core_current_stream(rec, stream);
            if (st != XDEV_SUCCESS) return st;
        }
        p->be = (*stream)->be;
        p->index = (*stream)->device.index;
        side_t d = {0}, s = {0};
        d.known = xdev_ptr_lookup(dst, &d.e);
        s.known = xdev_ptr_lookup(src, &s.e);
        set_pinned(p, &d, &s);
        return XDEV_SUCCESS;
    }
    if (*stream == NULL) return xdev_core_current_stream(&p->be->devices[p->index], stream);
    xdev_stream_t s = *stream;
    if (s->be != p->be || (s->device.index != p->index && s->device.index != p->alt)) {
        char want[64];
        if (p->alt >= 0)
            snprintf(want, sizeof want, "%s:%d or %s:%d", p->be->name, p->index, p->be->name,
                     p->alt);
        else
            snprintf(want, sizeof want, "%s:%d", p->be->name, p->index);
        return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                         "the copy involves %s but the stream belongs to %s:%d", want, s->be->name,
                         s->device.index);
    }
    return XDEV_SUCCESS;
}

/* A copy with pageable host memory waits for the host (CUDA makes it
 * synchronous): it cannot be recorded, nor run beside a capture whose mode
 * covers this thread. */
static xdev_status_t capture_copy_check(const copy_plan_t *p, xdev_stream_t s) {
    bool host_side = p->desc.kind == XDEV_COPY_HOST_TO_DEVICE ||
                     p->desc.kind == XDEV_COPY_DEVICE_TO_HOST ||
                     p->desc.kind == XDEV_COPY_HOST_TO_HOST;
    bool pageable = host_side && !(p->desc.kind == XDEV_COPY_HOST_TO_DEVICE ? p->desc.src_pinned
                                   : p->desc.kind == XDEV_COPY_DEVICE_TO_HOST
                                       ? p->desc.dst_pinned
                                       : p->desc.src_pinned && p->desc.dst_pinned);
    if (!pageable) return XDEV_SUCCESS;
    xdev_capture_t *cap = atomic_load_explicit(&s->capture, memory_order_acquire);
    if (cap != NULL)
        return xdev_capture_refuse(cap, "an asynchronous copy with pageable host memory (use "
                                        "xdev_host_alloc memory)");
    return xdev_capture_unsafe_slow("an asynchronous copy with pageable host memory");
}

/* Copy kinds as the trace names them. */
static const char *copy_kind_name(xdev_copy_kind_t k) {
    static const char *const names[] = {"HtoH", "HtoD", "DtoH", "DtoD", "peer"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* The enqueue path's steps of a copy (runtime/enqueue.h), q->ctx the plan. */
static xdev_status_t copy_capture(xdev_enqueue_t *q) {
    if (XDEV_UNLIKELY(atomic_load_explicit(&xdev_captures_active, memory_order_relaxed) != 0))
        return capture_copy_check(q->ctx, q->stream);
    return XDEV_SUCCESS;
}

static xdev_status_t copy_call(xdev_enqueue_t *q) {
    const copy_plan_t *p = q->ctx;
    return xdev_be_memory_memcpy_async(q->stream->rec, &p->desc, q->stream->native);
}

static void copy_trace_args(xdev_enqueue_t *q) {
    const copy_plan_t *p = q->ctx;
    xdev_enqueue_span_args(q, "\"kind\":\"%s\",\"bytes\":%zu,\"pinned\":%s",
                           copy_kind_name(p->desc.kind), p->desc.bytes,
                           p->desc.dst_pinned || p->desc.src_pinned ? "true" : "false");
}

static int copy_uses(const xdev_enqueue_t *q, xdev_op_use_t *out, int cap) {
    const copy_plan_t *p = q->ctx;
    (void)cap; /* >= 2 */
    out[0] = (xdev_op_use_t){p->desc.src, p->desc.bytes, XDEV_OP_READ, 0};
    out[1] = (xdev_op_use_t){p->desc.dst, p->desc.bytes, XDEV_OP_WRITE, 0};
    return 2;
}

/* Once enqueued: pinned blocks must not be reused before the stream passes
 * the copy. */
static xdev_status_t copy_finish(xdev_enqueue_t *q, xdev_status_t st) {
    const copy_plan_t *p = q->ctx;
    if (st == XDEV_SUCCESS && p->desc.kind != XDEV_COPY_DEVICE_TO_DEVICE &&
        p->desc.kind != XDEV_COPY_PEER) {
        xdev_host_record_use(p->desc.dst, q->stream);
        xdev_host_record_use(p->desc.src, q->stream);
    }
    return st;
}

static xdev_status_t enqueue_copy(const copy_plan_t *p, xdev_stream_t s) {
    xdev_enqueue_t q = {
        .kind = XDEV_OP_COPY,
        .name = "memcpy",
        .stream = s,
        .ctx = (void *)p,
        .get_uses = copy_uses,
        .capture = copy_capture,
        .call = copy_call,
        .trace_args = copy_trace_args,
        .finish = copy_finish,
    };
    return xdev_enqueue(&q);
}

/* A copy between a CPU device and another backend's device runs on the
 * other backend's stream, which cannot wait for a CPU-stream event: the host
 * waits for the CPU device's current stream instead, so the copy sees the
 * work queued there before it (as a pageable CUDA copy would). */
static xdev_status_t order_cpu_side(const copy_plan_t *p, const char *call) {
    if (p->cpu_side_be == NULL) return XDEV_SUCCESS;
    xdev_status_t dst = xdev_sync_debug_wait(call, &p->cpu_side_be->devices[p->cpu_side_index],
                                             "a copy with another backend's device first waits "
                                             "for the CPU device's stream");
    if (dst != XDEV_SUCCESS) return dst;
    xdev_stream_t cpu_stream;
    xdev_status_t st =
        xdev_core_current_stream(&p->cpu_side_be->devices[p->cpu_side_index], &cpu_stream);
    if (st == XDEV_SUCCESS) st = xdev_be_stream_synchronize(cpu_stream->rec, cpu_stream->native);
    if (st == XDEV_SUCCESS) xdev_order_on_host_waits_stream(cpu_stream);
    return st;
}

xdev_status_t xdev_core_memcpy_async(void *dst, const void *src, size_t n, xdev_stream_t stream) {
    copy_plan_t p;
    xdev_status_t st = plan_copy(dst, src, n, &p);
    if (st == XDEV_SUCCESS) st = copy_stream(&p, dst, src, &stream);
    /* CUDA and HIP return from a device-to-host copy into pageable memory
     * only once the data is there: the host waits for the stream. */
    if (st == XDEV_SUCCESS && p.desc.kind == XDEV_COPY_DEVICE_TO_HOST && !p.desc.dst_pinned &&
        !(p.be->flags & XDEV_BACKEND_HOST_MEMORY))
        st = xdev_sync_debug_wait("xdev_memcpy_async", stream->rec,
                                  "a device-to-host copy into pageable memory");
    if (st == XDEV_SUCCESS) st = order_cpu_side(&p, "xdev_memcpy_async");
    if (st == XDEV_SUCCESS) st = enqueue_copy(&p, stream);
    return st;
}

xdev_status_t xdev_memcpy_async(void *dst, const void *src, size_t n, xdev_stream_t stream) {
    if (n == 0) return XDEV_SUCCESS;
    XDEV_REQUIRE_ARG(dst);
    XDEV_REQUIRE_ARG(src);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(xdev_core_memcpy_async(dst, src, n, stream));
    return XDEV_SUCCESS;
}

static xdev_status_t memcpy_sync(void *dst, const void *src, size_t n);

/* Copy between devices of two GPU backends by staging through host memory. */
static xdev_status_t staged_copy(void *dst, const void *src, size_t n) {
    void *tmp = malloc(n);
    if (tmp == NULL)
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to stage a %zu-byte copy", n);
    xdev_status_t st = memcpy_sync(tmp, src, n);
    if (st == XDEV_SUCCESS) st = memcpy_sync(dst, tmp, n);
    free(tmp);
    return st;
}

/* xdev_memcpy without the public checks: plan, order, enqueue, wait. */
static xdev_status_t memcpy_sync(void *dst, const void *src, size_t n) {
    copy_plan_t p;
    xdev_status_t st = plan_copy(dst, src, n, &p);
    if (st == XDEV_ERROR_NOT_SUPPORTED) return staged_copy(dst, src, n);
    if (st != XDEV_SUCCESS) return st;
    if (p.be == NULL) { /* plain host memory on both sides */
        memmove(dst, src, n);
        return XDEV_SUCCESS;
    }
    xdev_stream_t s = NULL;
    if ((st = copy_stream(&p, dst, src, &s)) != XDEV_SUCCESS) return st;
    if ((st = xdev_sync_debug_wait("xdev_memcpy", s->rec, "a blocking copy")) != XDEV_SUCCESS)
        return st;
    /* Order after work already queued on the operands' current streams. */
    if (p.alt >= 0) {
        xdev_stream_t other;
        st = xdev_core_current_stream(&p.be->devices[p.alt], &other);
        if (st == XDEV_SUCCESS) st = xdev_core_stream_wait_stream(s, other);
        if (st != XDEV_SUCCESS) return st;
    }
    if ((st = order_cpu_side(&p, "xdev_memcpy")) != XDEV_SUCCESS) return st;
    if ((st = enqueue_copy(&p, s)) != XDEV_SUCCESS) return st;
    st = xdev_be_stream_synchronize(s->rec, s->native);
    xdev_order_on_host_waits_stream(s); /* the copy is blocking: later work is after it */
    return st;
}

xdev_status_t xdev_memcpy(void *dst, const void *src, size_t n) {
    if (n == 0) return XDEV_SUCCESS;
    XDEV_REQUIRE_ARG(dst);
    XDEV_REQUIRE_ARG(src);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(xdev_capture_check_unsafe("xdev_memcpy (a blocking copy)"));
    XDEV_CHECK(memcpy_sync(dst, src, n));
    return XDEV_SUCCESS;
}

/* The enqueue path's steps of a memset (runtime/enqueue.h). */
typedef struct {
    void *dst;
    int value;
    size_t n;
} memset_args_t;

static xdev_status_t memset_call(xdev_enqueue_t *q) {
    const memset_args_t *a = q->ctx;
    return xdev_be_memory_memset_async(q->stream->rec, a->dst, a->value, a->n, q->stream->native);
}

static void memset_trace_args(xdev_enqueue_t *q) {
    const memset_args_t *a = q->ctx;
    xdev_enqueue_span_args(q, "\"bytes\":%zu,\"value\":%d", a->n, a->value);
}

xdev_status_t xdev_memset_async(void *dst, int value, size_t n, xdev_stream_t stream) {
    if (n == 0) return XDEV_SUCCESS;
    XDEV_REQUIRE_ARG(dst);
    XDEV_CHECK(xdev_core_ensure_init());
    side_t d;
    XDEV_CHECK(lookup_side(dst, n, "dst", &d));
    if (!is_device(&d))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "dst %p is not device memory allocated by xdev (use memset for host "
                             "memory)",
                             dst);
    if (stream == NULL) {
        XDEV_CHECK(xdev_core_current_stream(&d.e.be->devices[d.e.index], &stream));
    } else {
        XDEV_CHECK(xdev_stream_check(stream, "stream"));
        if (stream->be != d.e.be || stream->device.index != d.e.index)
            return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                                 "dst is on %s:%d but the stream belongs to %s:%d", d.e.be->name,
                                 d.e.index, stream->be->name, stream->device.index);
    }
    memset_args_t a = {dst, value, n};
    const xdev_op_use_t use = {dst, n, XDEV_OP_WRITE, 0};
    xdev_enqueue_t q = {
        .kind = XDEV_OP_MEMSET,
        .name = "memset",
        .stream = stream,
        .ctx = &a,
        .uses = &use,
        .nuses = 1,
        .call = memset_call,
        .trace_args = memset_trace_args,
    };
    XDEV_CHECK(xdev_enqueue(&q));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_mem_get_info(xdev_device_t device, size_t *free_bytes, size_t *total_bytes) {
    XDEV_REQUIRE_ARG(free_bytes);
    XDEV_REQUIRE_ARG(total_bytes);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(xdev_be_memory_mem_get_info(rec, free_bytes, total_bytes));
    return XDEV_SUCCESS;
}
