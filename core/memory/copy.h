/* SPDX-License-Identifier: Apache-2.0 */
/* copy.h - the stream-ordered copy without the public call's checks, for
 * core code that copies (the collectives of comm/). */
#ifndef XDEV_CORE_COPY_H
#define XDEV_CORE_COPY_H

#include <stddef.h>

#include "xdev/stream.h"

/* xdev_memcpy_async's work (plan, stream, ordering, enqueue) for n > 0 and
 * non-NULL pointers; messages unprefixed. stream NULL: the current stream
 * of the device the copy runs on. */
xdev_status_t xdev_core_memcpy_async(void *dst, const void *src, size_t n, xdev_stream_t stream);

#endif
