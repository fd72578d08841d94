/* SPDX-License-Identifier: Apache-2.0 */
/* host_reduce.h - elementwise reductions over host-addressable buffers
 * (host_reduce.c), for the host-memory communicator. */
#ifndef XDEV_CORE_HOST_REDUCE_H
#define XDEV_CORE_HOST_REDUCE_H

#include <stdbool.h>
#include <stddef.h>

#include "xdev/communicator.h"
#include "xdev/dtype.h"

/* The dtypes the reductions take: f16, bf16, f32, f64, i32, i64. */
bool xdev_host_reduce_supports(xdev_dtype_t dtype);

/* dst[i] = op over srcs[0..n)[i] for i < count (dst may be a source). */
void xdev_host_reduce(void *dst, const void *const *srcs, int n, size_t count, xdev_dtype_t dtype,
                      xdev_reduce_op_t op);

#endif
