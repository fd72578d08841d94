/* SPDX-License-Identifier: Apache-2.0 */
/* fault.c - the fault injector (fault.h). One counter for the process:
 * the suite drives one scenario at a time, and a call counted on another
 * thread (a host function's) is a point like any other. */
#include "runtime/fault.h"

#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"

_Atomic int xdev_fault_armed;
static _Atomic long g_calls;
static _Atomic long g_fail_at;
static _Atomic bool g_fired;
static char g_slot[64]; /* the slot failed last (set before g_fired is read) */

void xdev_fault_inject_begin(long fail_at) {
    atomic_store(&g_calls, 0);
    atomic_store(&g_fail_at, fail_at);
    atomic_store(&g_fired, false);
    atomic_store(&xdev_fault_armed, 1);
}

long xdev_fault_inject_end(bool *fired) {
    atomic_store(&xdev_fault_armed, 0);
    if (fired != NULL) *fired = atomic_load(&g_fired);
    return atomic_load(&g_calls);
}

/* The slots that give something back: like free(), a caller could do
 * nothing about their failure, so xdev treats them as done and they are not
 * failure points. */
static bool releases(const char *slot) {
    static const char *const list[] = {
        "memory.free",         "memory.free_async",     "memory.host_free",     "memory.va_release",
        "memory.va_unmap",     "memory.va_unmap_whole", "event.destroy",        "stream.destroy",
        "fft.plan_destroy",    "graph.destroy",         "kernel.module_unload", "comm.destroy",
        "ipc.close_mem_handle"};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (strcmp(slot, list[i]) == 0) return true;
    return false;
}

bool xdev_fault_trip(const char *slot) {
    if (releases(slot)) return false;
    long n = atomic_fetch_add(&g_calls, 1) + 1;
    if (n != atomic_load(&g_fail_at)) return false;
    atomic_store(&g_fired, true);
    return true;
}

/* The slots whose real failure is running out of memory. */
static bool allocates(const char *slot) {
    static const char *const list[] = {"memory.malloc",       "memory.host_alloc",
                                       "memory.malloc_async", "memory.va_reserve",
                                       "memory.va_map",       "memory.va_map_whole"};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (strcmp(slot, list[i]) == 0) return true;
    return false;
}

const char *xdev_fault_failed_slot(void) {
    return g_slot;
}

xdev_status_t xdev_fault_fail(const xdev_backend_t *be, const char *slot) {
    snprintf(g_slot, sizeof g_slot, "%s.%s", be->name, slot);
    return XDEV_FAIL(allocates(slot) ? XDEV_ERROR_OUT_OF_MEMORY : XDEV_ERROR_BACKEND,
                     "%s: %s failed (fault injected at backend call %ld)", be->name, slot,
                     atomic_load(&g_calls));
}
