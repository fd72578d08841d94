/* SPDX-License-Identifier: Apache-2.0 */
/* tracer.h - the stream tracer behind xdev_trace_start / XDEV_TRACE_FILE:
 * what each stream ran, as Trace Event Format JSON (Perfetto,
 * chrome://tracing). Work enqueued anywhere in the core reaches it through
 * the probes of runtime/trace_probe.h, which tracer.c registers when libxdev
 * loads, as it does XDEV_TRACE_FILE's start (an initialisation step once
 * the backends are selected, runtime/hooks.h); observe/'s own files call it
 * directly. */
#ifndef XDEV_CORE_TRACER_H
#define XDEV_CORE_TRACER_H

#include "runtime/trace_probe.h"

/* A marker on this thread's host track (trace.c): 'B' range begin, 'E'
 * range end, 'i' instant (msg NULL for 'E'). */
void xdev_tracer_marker(char phase, const char *msg);

#endif
