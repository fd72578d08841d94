/* SPDX-License-Identifier: Apache-2.0 */
/* hooks.h - how the folders above runtime/ take part in what runtime does
 * without runtime calling up into them (core/README.md; tools/check_tree.sh,
 * rule core-layers): steps of initialisation, a backend's load, and a
 * thread's exit. Each part
 * above runtime/ that takes part registers its hooks in its
 * xdev_<part>_wire(), declared below; core/wiring.c, the one list of what
 * libxdev starts, calls them in order when libxdev loads, before any xdev
 * call can run; runtime (registry.c, thread_state.c) runs the hooks. The
 * probes that enqueuing code calls are the stream tracer's
 * (runtime/trace_probe.h) and the stream-order sanitizer's
 * (runtime/sanitizer_probe.h). */
#ifndef XDEV_CORE_HOOKS_H
#define XDEV_CORE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>

#include "xdev/error.h"

/* When an initialisation step runs (registry.c, init_once), in this order. */
typedef enum {
    /* After runtime's own variables, before any backend loads: settings whose
     * malformed value fails xdev_init like every other XDEV_* variable
     * (alloc/: XDEV_ALLOC_CONF, XDEV_NO_MEMORY_CACHING; kernel/:
     * XDEV_LAUNCH_CHECKS, XDEV_KERNEL_CACHE, XDEV_KERNEL_CACHE_MAX_MB). */
    XDEV_INIT_SETTINGS = 0,
    /* Once the backends are selected (observe/: XDEV_TRACE_FILE, whose exit
     * handler must run before the backends' runtimes tear down). */
    XDEV_INIT_BACKENDS_READY = 1,
    XDEV_INIT_PHASES = 2,
} xdev_init_phase_t;

/* A step: XDEV_SUCCESS, or a failure's status with its message set
 * (XDEV_FAIL): initialisation stops there and every call reports it. */
typedef xdev_status_t (*xdev_init_hook_t)(void);

/* Runs on a thread that exits, if it has runtime's per-thread block: a
 * folder whose hook must run calls xdev_thread_state() once first (alloc/:
 * the thread's arena, its open pool scopes; kernel/: its last compile log;
 * graph/: captures it left open). */
typedef void (*xdev_thread_exit_hook_t)(void);

/* Hooks of each kind (per phase); one more fails initialisation. */
#define XDEV_MAX_HOOKS 8

/* Runs once per backend as it loads, after its devices opened and before
 * any call can reach it (registry.c, load_locked, under the backend's
 * lock): the one moment a part above runtime/ may put its own slots in
 * front of the backend's (observe/shadow.c: XDEV_SHADOW). It may replace
 * tables in be->api_copy; it must not load another backend. */
struct xdev_backend;
typedef void (*xdev_backend_loaded_hook_t)(struct xdev_backend *be);

/* Runs when device memory xdev did not allocate gets a range of its own
 * (interop/foreign.c: xdev_memory_register, a DLPack import), once the
 * range is registered, with the registration's stream (the bytes are the
 * producer's once that stream reached what was queued on it); and when it
 * is given back (stream NULL, added false), after the work on its streams
 * and before the owner's release: observe/shadow.c mirrors it meanwhile. */
struct xdev_device_record;
struct xdev_stream;
typedef void (*xdev_foreign_hook_t)(struct xdev_device_record *rec, void *ptr, size_t bytes,
                                    struct xdev_stream *stream, bool added);

/* Runs on a thread whose outermost group of collectives ended
 * (comm/comm_group.c, xdev_group_end, after the backends' group ends: NCCL
 * launches a group's collectives there): observe/shadow.c takes the
 * outputs of the group's collectives in stream order from then on. */
typedef void (*xdev_group_end_hook_t)(void);
/* Runs when a stream handle goes (runtime/stream.c, xdev_stream_destroy),
 * once it is closing (no new use begins) and before its native stream is
 * destroyed, with nothing locked; a stream xdev owns has done its work by
 * then, a wrapped one (xdev_stream_wrap_native) was not waited for.
 * math/fft_plan_cache.c removes the FFT plans bound to it (their keys can
 * never match again). */
typedef void (*xdev_stream_destroy_hook_t)(struct xdev_stream *stream);

/* Register, from a part's xdev_<part>_wire() (not thread-safe: core/wiring.c
 * calls them while libxdev loads). Steps of one phase, and exit hooks, run
 * in the order core/wiring.c wires their parts. */
void xdev_hook_init_add(xdev_init_phase_t phase, xdev_init_hook_t fn);
void xdev_hook_thread_exit_add(xdev_thread_exit_hook_t fn);
void xdev_hook_backend_loaded_add(xdev_backend_loaded_hook_t fn);
void xdev_hook_foreign_add(xdev_foreign_hook_t fn);
void xdev_hook_group_end_add(xdev_group_end_hook_t fn);
void xdev_hook_stream_destroy_add(xdev_stream_destroy_hook_t fn);

/* registry.c: the steps of `phase`, up to the first failure (its status). */
xdev_status_t xdev_hooks_run_init(xdev_init_phase_t phase);

/* registry.c: every backend-loaded hook, in order. */
void xdev_hooks_run_backend_loaded(struct xdev_backend *be);

/* interop/foreign.c: every foreign-memory hook, in order. */
void xdev_hooks_run_foreign(struct xdev_device_record *rec, void *ptr, size_t bytes,
                            struct xdev_stream *stream, bool added);

/* comm/comm_group.c: every group-end hook, in order. */
void xdev_hooks_run_group_end(void);
/* runtime/stream.c: every stream-destroy hook, in order. */
void xdev_hooks_run_stream_destroy(struct xdev_stream *stream);

/* thread_state.c: every exit hook, on the exiting thread. */
void xdev_hooks_run_thread_exit(void);

/* The parts above runtime/ that register hooks or probes, each from its own
 * file; only core/wiring.c calls these (tools/check_tree.sh, rule wiring). */
void xdev_device_allocator_wire(void); /* alloc/device_allocator.c */
void xdev_mempool_wire(void);          /* alloc/mempool.c */
void xdev_module_wire(void);           /* kernel/module.c */
void xdev_compile_wire(void);          /* kernel/compile.c */
void xdev_kcache_wire(void);           /* kernel/kernel_cache.c */
void xdev_graph_wire(void);            /* graph/graph.c */
void xdev_fft_cache_wire(void);        /* math/fft_plan_cache.c */
void xdev_tracer_wire(void);           /* observe/tracer.c */
void xdev_oom_snapshot_wire(void);     /* observe/oom_snapshot.c */
void xdev_stream_sanitizer_wire(void); /* observe/stream_sanitizer.c */
void xdev_shadow_wire(void);           /* observe/shadow.c */
void xdev_comm_watchdog_wire(void);    /* comm/watchdog.c */

#endif
