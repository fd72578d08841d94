/* SPDX-License-Identifier: Apache-2.0 */
/* wiring.c - every part of libxdev that starts when it loads, in one ordered
 * list (the only constructor and destructor in libxdev: tools/check_tree.sh,
 * rule wiring). A part takes part through its xdev_<part>_wire(), written in
 * its own file; this list is where a reader sees them all.
 *
 * Why at load and not in xdev_init's initialisation (registry.c, init_once):
 * - the backends must be in the table before the first xdev call, not only
 *   before initialisation: xdev_device_parse and xdev_device_type_name name
 *   them before any init, and xdev_backend_register refuses an application's
 *   backend that reuses a shipped name without XDEV_BACKEND_REPLACE;
 * - the fork handler must be registered before another thread's first call
 *   can fork (runtime/process.c);
 * - the hook lists and the tracer's probes are read without a lock, which is
 *   sound because they are written here, before any other thread can call
 *   xdev (and a thread that exits before initialisation runs the exit hooks).
 * What does run at initialisation runs from runtime's hooks (runtime/hooks.h:
 * the settings steps before any backend loads, the steps once they are
 * selected), in the order of this list. A constructor runs when libxdev is
 * dlopen'ed late as when it is linked; nothing here touches thread-local
 * storage.
 *
 * This file sits above core's layered folders (core/README.md): it is the
 * only file that names them all, and no folder calls into it. The backends
 * built into libxdev include no core header, so their entry points are
 * declared here. */
#include "runtime/hooks.h"
#include "runtime/process.h"
#include "runtime/registry.h"

void xdev_cpu_backend_wire(void);     /* backends/cpu/cpu_backend.c */
void xdev_shipped_plugins_wire(void); /* backends/plugins.c */
bool xdev_shipped_plugin_present(const char *name, char *why, size_t len); /* the same */

/* Bottom to top, as the layers; then the backends built into libxdev. */
__attribute__((constructor)) static void xdev_wire(void) {
    /* runtime/: the fork handler (a child forked after init refuses). */
    xdev_process_wire();
    /* alloc/: XDEV_ALLOC_CONF and XDEV_NO_MEMORY_CACHING (a settings step),
     * a thread's arena returned at its exit; a thread's open pool scopes
     * ended at its exit. */
    xdev_device_allocator_wire();
    xdev_mempool_wire();
    /* kernel/: XDEV_LAUNCH_CHECKS (a settings step); a thread's last
     * compile log freed at its exit; XDEV_KERNEL_CACHE and
     * XDEV_KERNEL_CACHE_MAX_MB (a settings step). */
    xdev_module_wire();
    xdev_compile_wire();
    xdev_kcache_wire();
    /* math/: a destroyed stream's FFT plans destroyed with it. */
    xdev_fft_cache_wire();
    /* graph/: captures a thread left open abandoned at its exit. */
    xdev_graph_wire();
    /* observe/: the tracer's probes; XDEV_TRACE_FILE (a step once the
     * backends are selected). */
    xdev_tracer_wire();
    /* observe/: XDEV_OOM_SNAPSHOT (a settings step), written from the
     * allocator's out-of-memory observer. */
    xdev_oom_snapshot_wire();
    /* observe/: the stream-order sanitizer's probes (runtime/sanitizer_probe.h),
     * through which the enqueue path, runtime's stream ordering, alloc/,
     * interop/ and comm/ reach it. */
    xdev_stream_sanitizer_wire();
    /* observe/: XDEV_SHADOW and its settings (a settings step), its slots put
     * in front of each backend's as it loads, and its enqueue observer. */
    xdev_shadow_wire();
    /* comm/: a thread's pending watches (a group it left open) ended at its
     * exit. */
    xdev_comm_watchdog_wire();
    /* backends/: the CPU backend, then the shipped plugins by name (cuda,
     * hip; loaded on first use). */
    xdev_cpu_backend_wire();
    xdev_shipped_plugins_wire();
    /* runtime/: their presence probes (no driver: auto does not load them). */
    xdev_registry_presence_wire(xdev_shipped_plugin_present);
}

/* At exit() (after the atexit handlers) or when libxdev is unloaded: the
 * stream workers stop before the libraries xdev uses shut down
 * (runtime/process.c). */
__attribute__((destructor)) static void xdev_unwire(void) {
    xdev_process_at_exit();
}
