/* SPDX-License-Identifier: Apache-2.0 */
/* operands.h - where a math call (BLAS, FFT) runs, decided from its operands.
 *
 * Every operand must be device memory that xdev allocated, all on one device
 * or on devices whose memory the executing device may access (peer access
 * enabled). The call runs on the device of the output (operand 0), on the
 * stream given or that device's current stream, as torch runs an op on the
 * device of its tensors. */
#ifndef XDEV_CORE_OPERANDS_H
#define XDEV_CORE_OPERANDS_H

#include <stddef.h>

#include "runtime/enqueue.h"
#include "runtime/registry.h"
#include "xdev/stream.h"

typedef struct xdev_operand {
    const char *name; /* argument name for messages ("a", "x") */
    const void *ptr;
    size_t bytes; /* extent the call touches from ptr */
} xdev_operand_t;

typedef struct xdev_exec_target {
    xdev_device_record_t *rec; /* the device it runs on */
    xdev_backend_t *be;        /* = rec->be */
    int index;                 /* = rec->id.index */
    xdev_stream_t stream;
} xdev_exec_target_t;

/* Check ops[0..count-1] (ops[0] = the output) and pick device and stream.
 * `what` names the operation in messages ("GEMM"). Errors: NULL or
 * non-device operands, extents past their allocation
 * (XDEV_ERROR_INVALID_VALUE); operands or stream on another device
 * (XDEV_ERROR_CROSS_DEVICE); a dead stream (XDEV_ERROR_INVALID_HANDLE). */
xdev_status_t xdev_operands_resolve(const xdev_operand_t *ops, int count, xdev_stream_t stream,
                                    const char *what, xdev_exec_target_t *out);

/* ops[0..count) (count <= XDEV_OP_MAX_USES) as the enqueue path's operands
 * (runtime/enqueue.h): the first `written` written, the rest read. */
static inline int xdev_operands_uses(const xdev_operand_t *ops, int count, int written,
                                     xdev_op_use_t *out) {
    for (int i = 0; i < count; i++)
        out[i] = (xdev_op_use_t){ops[i].ptr, ops[i].bytes,
                                 i < written ? XDEV_OP_WRITE : XDEV_OP_READ, 0};
    return count;
}

/* a * b + c with overflow detection (sizes from user input). Inline: an
 * FFT exec's layout checks call it a dozen times. */
static inline bool xdev_size_mul_add(size_t a, size_t b, size_t c, size_t *out) {
    size_t p;
    if (__builtin_mul_overflow(a, b, &p)) return false;
    return !__builtin_add_overflow(p, c, out);
}

#endif
