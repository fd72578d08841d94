/* SPDX-License-Identifier: Apache-2.0 */
/* trace_probe.c - the stream tracer's flag and probes (trace_probe.h), which
 * observe/tracer.c fills in when libxdev loads. */
#include "runtime/trace_probe.h"

_Atomic bool xdev_tracer_flag;
xdev_trace_probes_t xdev_trace_probes;

void xdev_trace_probes_set(const xdev_trace_probes_t *probes) {
    xdev_trace_probes = *probes;
}

void xdev_tracer_span_end(xdev_trace_span_t *sp, struct xdev_stream *s, const char *name,
                          const char *args_fmt, ...) {
    va_list ap;
    va_start(ap, args_fmt);
    xdev_trace_probes.span_end(sp, s, name, args_fmt, ap);
    va_end(ap);
}
