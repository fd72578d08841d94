/* SPDX-License-Identifier: Apache-2.0 */
/* process.c - fork and exit (see process.h for the behaviour and why). */
#include "runtime/process.h"

#include <pthread.h>

#include "base/error_internal.h"
#include "runtime/registry.h"

_Atomic int xdev_process_state;

/* Set when initialisation starts: only a child forked after that refuses. */
static atomic_bool g_initialised;

/* In the child: no lock, no allocation - just the flag every call checks. */
static void child_after_fork(void) {
    if (atomic_load_explicit(&g_initialised, memory_order_relaxed)) {
        atomic_store_explicit(&xdev_process_state, XDEV_PROCESS_FORKED, memory_order_relaxed);
        xdev_core_close_gate();
    }
}

/* Wired when libxdev is loaded (core/wiring.c) rather than at
 * initialisation, so that a fork racing with another thread's first xdev
 * call is still seen (glibc unregisters it if libxdev is unloaded). */
void xdev_process_wire(void) {
    (void)pthread_atfork(NULL, NULL, child_after_fork);
}

void xdev_process_mark_initialised(void) {
    atomic_store(&g_initialised, true);
}

xdev_status_t xdev_process_refuse(void) {
    if (atomic_load(&xdev_process_state) == XDEV_PROCESS_FORKED)
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "xdev was initialised in this process's parent before fork(): a forked "
                         "child cannot use it (the parent's stream workers are not in the child, "
                         "and its locks may be held for ever). Initialise xdev after fork() in "
                         "the child only, or start the child with exec (as torch requires for "
                         "CUDA)");
    return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                     "the process is exiting: xdev has stopped its stream workers");
}

/* From the library's destructor (core/wiring.c): runs at exit() (after the
 * atexit handlers) or when libxdev is unloaded, before the destructors of the libraries it depends
 * on (OpenBLAS), which must not run while a worker is inside them. Nothing to do in a forked child:
 * its workers are the parent's. */
void xdev_process_at_exit(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&xdev_process_state, &expected, XDEV_PROCESS_EXITING))
        return;
    xdev_core_close_gate();
    xdev_core_shutdown_at_exit();
}
