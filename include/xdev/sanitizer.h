/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/sanitizer.h - the stream-order sanitizer: device memory used on two
 * streams without an order between the uses.
 *
 * Streams run concurrently. When one stream writes an allocation and
 * another reads or writes it, the second use must be ordered after the
 * first: an event recorded after the first and waited on before the second
 * (xdev_event_record + xdev_stream_wait_event), xdev_stream_wait_stream, or
 * a synchronize on the host between them (stream, event or device). Without
 * one the result depends on timing: a blocking copy on the default stream
 * right after a GEMM on a side stream may return the old data, with
 * success. The same holds for a free: a block freed on its stream may be
 * handed out again to work on that stream at once, so a use on another
 * stream must be ordered before the free, or named with
 * xdev_record_stream.
 *
 * XDEV_SANITIZE=streams (read at initialisation) turns the sanitizer on.
 * xdev then records, for every allocation of xdev_malloc*, which work on
 * which stream last wrote it and which read it since: copies, memsets,
 * fills, conversions, GEMM and the BLAS vector routines, FFTs, random
 * fills, kernels' pointer arguments (written, unless the parameter is a
 * pointer to const), the collectives, and frees. A use not ordered after
 * a conflicting one (two writes, or a write and a read) is reported,
 * naming both calls, where they were made from, their streams, and the
 * allocation with the bytes each touched. The call itself goes ahead: a
 * report is a diagnosis, not an error. Reports go to the handler
 * (xdev_sanitizer_set_handler), or to stderr, one block each, when there
 * is none; only the first 100 are printed there (all are counted).
 *
 * Not checked: work recorded in a graph capture (and graph replays), host
 * memory and pinned host blocks, memory xdev did not allocate, kernels
 * without a signature (launched by name from a native image or source
 * compiled at run time), and the host reading memory that a copy into it
 * has not finished writing. Orders the application makes itself (host
 * functions that wait for each other) are not seen: such code is
 * reported.
 *
 * The sanitizer costs a lock, a lookup and a stack walk per checked use
 * (docs/observability.md has the measured cost); off, it costs one relaxed
 * load per call. */
#ifndef XDEV_SANITIZER_H
#define XDEV_SANITIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called with each report (a NUL-terminated text of a few lines, valid
 * only during the call), on the thread whose call found the race. It may
 * call xdev. */
typedef void (*xdev_sanitizer_handler_t)(const char *report, void *user_data);

/* True when XDEV_SANITIZE=streams turned the sanitizer on (initialising
 * xdev if needed; false when initialisation fails). */
XDEV_API bool xdev_sanitizer_enabled(void);

/* Send reports to handler (NULL: back to stderr). Allowed whether or not
 * the sanitizer is on. */
XDEV_API XDEV_RESULT xdev_status_t xdev_sanitizer_set_handler(xdev_sanitizer_handler_t handler,
                                                              void *user_data);

/* The number of races reported since the process started. */
XDEV_API uint64_t xdev_sanitizer_report_count(void);

#ifdef __cplusplus
}
#endif

#endif
