/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/shadow.h - shadow execution: every operation run on the CPU too, and
 * the first one whose results differ named.
 *
 * XDEV_SHADOW=cpu (read at initialisation; unset, empty or "off": off)
 * gives every device allocation a mirror in host memory, replays every
 * stream-ordered operation on the mirrors with the CPU backend's own
 * implementation of it, in the order the operations were enqueued, and
 * compares what each wrote. The first operation whose output differs is
 * reported with its call site (as the stream-order sanitizer names them),
 * the operation (kernel name and launch geometry, GEMM shape, fill, copy
 * direction...), the buffer, the first differing element, both values and
 * how many elements differ. Once reported, the mirror takes the device's
 * bytes, so one fault makes one report and later operations are compared
 * from the same state.
 *
 * The shadow works for any backend, shipped or a plugin: it puts its slots
 * in front of the backend's table when the backend loads (docs/observability.md
 * has how), so a backend author finds the first operation their backend
 * gets wrong by running the conformance suites, or any program, under it.
 * When the backend is the CPU itself, the mirrors are separate host
 * allocations replayed on a private CPU stream (the CPU shadowing itself
 * must give no report).
 *
 * Settings (read at initialisation; a malformed value fails xdev_init):
 *   XDEV_SHADOW=cpu|off
 *   XDEV_SHADOW_COMPARE=op|sync   op (default): after each operation, which
 *       waits for it (finds the culprit); sync: at each copy to the host,
 *       every mirror written since (cheaper; the report names the last
 *       operation that wrote the buffer)
 *   XDEV_SHADOW_ACTION=report|stop   stop: after the first report every
 *       stream-ordered call fails with XDEV_ERROR_BACKEND, its message
 *       quoting the report, until xdev_shadow_clear
 *   XDEV_SHADOW_TOLERANCE=<relative>  for floating results of BLAS and FFT
 *       and the floating sums and products of the primitives outside
 *       deterministic mode (default per dtype: f64 1e-12, f32 and c64 1e-5,
 *       f16 and bf16 1e-2), of the larger of the two values or of the
 *       largest magnitude among the op's results, times log2(count) for
 *       the primitives' reductions and scans, and what a kernel writes
 *       through a float or double pointer; everything else (copies, memsets,
 *       fills, conversions, random fills, other kernel outputs, sorts,
 *       histograms, compactions,
 *       integer and min/max results) is compared bit for bit; a compaction's
 *       outputs only below the count it wrote.
 *
 * What cannot be mirrored (a kernel whose module has no host build, an
 * operation whose backend call the shadow does not replay, a graph replay,
 * memory outside xdev's allocations) is reported once per operation and
 * reason (XDEV_SHADOW_NOT_MIRRORED), and the mirrors it wrote take the
 * device's bytes. Reports go to the handler (xdev_shadow_set_handler) or to
 * stderr, and are kept (the first XDEV_SHADOW_KEPT) for xdev_shadow_report_get.
 * Off, the shadow costs nothing: its slots are not installed. */
#ifndef XDEV_SHADOW_H
#define XDEV_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reports kept for xdev_shadow_report_get (all are counted). */
#define XDEV_SHADOW_KEPT 64

typedef enum xdev_shadow_report_kind {
    XDEV_SHADOW_DIFFERENCE = 0,   /* the device's output differs from the CPU's */
    XDEV_SHADOW_NOT_MIRRORED = 1, /* the operation could not be replayed on the CPU */
} xdev_shadow_report_kind_t;

/* One report. Strings are NUL-terminated (cut to fit). */
typedef struct xdev_shadow_report {
    xdev_shadow_report_kind_t kind;
    char op[64];          /* the call ("memset", "launch_kernel", "gemm") */
    char detail[192];     /* the operation ("kernel saxpy grid (1,1,1) block (256,1,1)") */
    char call_site[256];  /* "from /path/prog+0x1234 (main+0x56)" */
    char device[32];      /* "cuda:0" */
    const void *buffer;   /* the written pointer whose bytes differ (DIFFERENCE) */
    size_t element;       /* the first differing element, from buffer */
    size_t element_size;  /* bytes per element compared */
    size_t differing;     /* elements that differ in the operation's output */
    size_t elements;      /* elements compared */
    uint64_t device_bits; /* the first differing element's bits, device and CPU */
    uint64_t shadow_bits; /* (the low element_size bytes; 0 for NOT_MIRRORED) */
    char text[1024];      /* the whole report, as printed */
} xdev_shadow_report_t;

/* Called with each report's text (valid only during the call) on the
 * thread whose call made it; it may call xdev. */
typedef void (*xdev_shadow_handler_t)(const char *report, void *user_data);

/* True when XDEV_SHADOW=cpu turned shadow execution on (initialising xdev
 * if needed; false when initialisation fails). */
XDEV_API bool xdev_shadow_enabled(void);

/* Reports made since the process started or the last xdev_shadow_clear. */
XDEV_API uint64_t xdev_shadow_report_count(void);

/* Report `index` (0 = the first) into *out. XDEV_ERROR_INVALID_VALUE for a
 * NULL out, XDEV_ERROR_NOT_FOUND for an index past those kept. */
XDEV_API XDEV_RESULT xdev_status_t xdev_shadow_report_get(uint64_t index,
                                                          xdev_shadow_report_t *out);

/* Forget the reports (and the "cannot be mirrored" already said), and end
 * XDEV_SHADOW_ACTION=stop's refusal. */
XDEV_API XDEV_RESULT xdev_status_t xdev_shadow_clear(void);

/* Send reports to handler (NULL: back to stderr, the first 100 printed). */
XDEV_API XDEV_RESULT xdev_status_t xdev_shadow_set_handler(xdev_shadow_handler_t handler,
                                                           void *user_data);

#ifdef __cplusplus
}
#endif

#endif
