/* SPDX-License-Identifier: Apache-2.0 */
/* process.h - xdev across fork() and at process exit.
 *
 * fork: a child forked after xdev initialised in the parent cannot use it -
 * the stream worker threads stayed in the parent, and locks a parent thread
 * held at the fork stay held - so every call in such a child fails at once
 * (torch refuses CUDA in a forked child the same way). A child forked before
 * xdev initialised is unaffected.
 *
 * exit: when the process exits (return from main, exit()) or libxdev is
 * unloaded, the CPU backend's stream workers finish the op they are running,
 * drop the ops not started, and are joined (within a bound) before the
 * libraries xdev uses (OpenBLAS) shut down; later calls fail at once. Idle
 * workers retire by themselves (cpu_queue.c), so pthread_exit() from main
 * ends the process. */
#ifndef XDEV_CORE_PROCESS_H
#define XDEV_CORE_PROCESS_H

#include <stdatomic.h>
#include <stdbool.h>

#include "xdev/error.h"

/* 0 while xdev can be used; else XDEV_PROCESS_FORKED or XDEV_PROCESS_EXITING. */
enum { XDEV_PROCESS_FORKED = 1, XDEV_PROCESS_EXITING = 2 };
extern _Atomic int xdev_process_state;

/* Called first thing in initialisation: from then on a forked child refuses
 * (the fork handler itself is registered when libxdev loads, xdev_process_wire). */
void xdev_process_mark_initialised(void);

/* When libxdev loads (core/wiring.c): the fork handler. */
void xdev_process_wire(void);

/* When the process exits or libxdev is unloaded (core/wiring.c's
 * destructor): stop the stream workers; later calls fail at once. */
void xdev_process_at_exit(void);

/* The error for a call made in a forked child or during exit. */
xdev_status_t xdev_process_refuse(void);

/* XDEV_SUCCESS, or the refusal: one relaxed load on the fast path. */
static inline xdev_status_t xdev_process_check(void) {
    return atomic_load_explicit(&xdev_process_state, memory_order_relaxed) == 0
               ? XDEV_SUCCESS
               : xdev_process_refuse();
}

#endif
