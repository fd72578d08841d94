/* backends/cpu/cpu_backend.h - the CPU backend as the core sees it.
 *
 * The CPU backend is built into libxdev, so instead of a plugin entry point
 * it exposes this one function; the core registers its table beside the
 * plugins it loads. Everything else in backends/cpu/ is internal. */
#ifndef XDEV_CPU_BACKEND_H
#define XDEV_CPU_BACKEND_H

#include "xdev/backend.h"

/* The CPU backend's ABI table (static storage; never NULL). */
const xdev_backend_api_t *xdev_cpu_backend_api(void);

#endif
