/* SPDX-License-Identifier: Apache-2.0 */
/* operands.c - resolve the device and stream of a BLAS/FFT call from its
 * operands through the pointer registry (see operands.h). */
#include "math/operands.h"

#include <stdio.h>

#include "alloc/alloc_lookup.h"
#include "base/error_internal.h"
#include "alloc/pointer_registry.h"
#include "runtime/stream_internal.h"

/* The operand's name, for a failed lookup's message. */
static void operand_label(const void *ctx, char *buf, size_t len) {
    snprintf(buf, len, "%s", ((const xdev_operand_t *)ctx)->name);
}

/* Look one operand up: a live device allocation of xdev, covering `bytes`.
 * Through the per-thread cache of allocations found live, as kernel
 * launches do (a BLAS or FFT call passes the same buffers again and again:
 * a hit is a few loads while the arena has freed no looked-up block, where the
 * registry walk under its read lock cost ~300 instructions an operand). */
/* The whole lookup: a cache miss, or any error (worded here). */
static __attribute__((noinline)) xdev_status_t
lookup_slow(const xdev_operand_t *op, const char *what, xdev_backend_t **be, int *index) {
    if (op->ptr == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument '%s' is NULL", op->name);
    xdev_live_ref_t ref;
    xdev_status_t st =
        xdev_live_lookup_cached(op->ptr, operand_label, op, &ref); /* refuses freed */
    if (st != XDEV_SUCCESS) return st;
    if (!ref.known)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p) is host memory that xdev did not allocate; %s needs device "
                         "memory from xdev_malloc (copy the data there with xdev_memcpy)",
                         op->name, op->ptr, what);
    if (ref.e.kind != XDEV_MEMORY_DEVICE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p) is pinned host memory from xdev_host_alloc; %s needs device "
                         "memory from xdev_malloc",
                         op->name, op->ptr, what);
    size_t offset = (uintptr_t)op->ptr - ref.base;
    if (offset > ref.size || op->bytes > ref.size - offset)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' (%p): the %s touches %zu bytes from there, past the end of its "
                         "allocation (%zu bytes at %p); check the sizes, leading dimensions, "
                         "strides and batch",
                         op->name, op->ptr, what, op->bytes, ref.size, (void *)ref.base);
    *be = ref.e.be; /* only where it runs: copying the whole entry cost more than the checks */
    *index = ref.e.index;
    return XDEV_SUCCESS;
}

/* An operand's backend and device: the thread's cache of live allocations
 * inline (xdev_live_hit), else the whole lookup. */
static inline __attribute__((always_inline)) xdev_status_t
lookup(const xdev_operand_t *op, const char *what, xdev_backend_t **be, int *index) {
    const void *hbe;
    if (__builtin_expect(xdev_live_hit(op->ptr, op->bytes, &hbe, index), 1)) {
        *be = (xdev_backend_t *)hbe;
        return XDEV_SUCCESS;
    }
    return lookup_slow(op, what, be, index);
}

xdev_status_t xdev_operands_resolve(const xdev_operand_t *ops, int count, xdev_stream_t stream,
                                    const char *what, xdev_exec_target_t *out) {
    xdev_backend_t *be = NULL; /* set by lookup on success (GCC -O3 cannot tell) */
    int index = 0;
    xdev_status_t st = lookup(&ops[0], what, &be, &index);
    if (st != XDEV_SUCCESS) return st;
    for (int i = 1; i < count; i++) {
        xdev_backend_t *ebe = NULL;
        int eindex = 0;
        st = lookup(&ops[i], what, &ebe, &eindex);
        if (st != XDEV_SUCCESS) return st;
        if (ebe == be && eindex == index) continue;
        bool peer = ebe == be && ((atomic_load(&be->devices[index].peer_enabled) >> eindex) & 1u);
        if (!peer)
            return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "'%s' is on %s:%d but '%s' (which decides where the %s runs) is on "
                             "%s:%d; copy it to %s:%d%s",
                             ops[i].name, ebe->name, eindex, ops[0].name, what, be->name, index,
                             be->name, index,
                             ebe == be ? " or enable peer access with "
                                         "xdev_device_enable_peer_access"
                                       : "");
    }
    if (stream == NULL) {
        st = xdev_core_current_stream(&be->devices[index], &stream);
        if (st != XDEV_SUCCESS) return st;
    } else {
        st = xdev_stream_check(stream, "stream");
        if (st != XDEV_SUCCESS) return st;
        if (stream->be != be || stream->device.index != index)
            return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "the stream belongs to %s:%d but the %s runs on %s:%d, the device of "
                             "'%s'",
                             stream->be->name, stream->device.index, what, be->name, index,
                             ops[0].name);
    }
    out->rec = &be->devices[index];
    out->be = be;
    out->index = index;
    out->stream = stream;
    return XDEV_SUCCESS;
}
