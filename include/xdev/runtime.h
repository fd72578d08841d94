/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/runtime.h - initialisation, version, and what backends were found.
 *
 * Backends are chosen by XDEV_BACKEND (auto | cuda | hip | cpu | a list of
 * distinct names such as "cuda,cpu"). auto = the first of cuda, hip that
 * loads and has a device, else cpu. A backend named explicitly that cannot
 * be used is an error. The one selected gives the default device type; the
 * others load on first use and work beside it (xdev/device.h says which
 * calls act on the default type and which on every backend). Probing a
 * backend that is missing leaves no error behind (xdev/error.h). */
#ifndef XDEV_RUNTIME_H
#define XDEV_RUNTIME_H

#include "xdev/device.h"
#include "xdev/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loaded library's version, "MAJOR.MINOR.PATCH": the XDEV_VERSION_STRING
 * it was built with. These headers' own version (XDEV_VERSION_MAJOR, _MINOR,
 * _PATCH, _STRING) is in xdev/version.h, generated from CMake's
 * project(VERSION). */
XDEV_API const char *xdev_version_string(void);

/* Initialise xdev: read the environment, load and select backends. Optional
 * (every call initialises lazily), idempotent and thread-safe. Returns the
 * selection's status each time: an explicitly requested backend that cannot
 * be used is an error whose message says why. */
XDEV_API XDEV_RESULT xdev_status_t xdev_init(void);

/* Processes: fork and exit.
 *
 * fork(): a child forked after xdev initialised in the parent (any call that
 * initialises it, not only xdev_init) cannot use it - the parent's stream
 * worker threads are not in the child, and a lock another parent thread held
 * at the fork stays held for ever. Every xdev call in such a child returns
 * XDEV_ERROR_BACKEND_UNAVAILABLE at once, with a message naming fork (torch
 * refuses CUDA in a forked child the same way); xdev_last_error() and the
 * rest of the error state still work there, and so do the helpers that touch
 * no runtime state (names, parsing, formatting, xdev_status_string). Use
 * xdev in the parent only, initialise it only in the child, or exec. A child
 * forked before xdev initialised is a fresh process and uses it normally.
 *
 * exit: returning from main, exit() (also from a host function or another
 * thread) or unloading libxdev stops the CPU backend's stream workers: each
 * finishes the op it is running, drops the ops not started (their events
 * still complete) and is joined, 5 s at most in all, before the libraries
 * xdev uses (OpenBLAS, FFTW) shut down. Calls made after that fail at once
 * with XDEV_ERROR_BACKEND_UNAVAILABLE. Queued work is therefore NOT finished
 * at exit: call xdev_synchronize() first for the work you need.
 *
 * pthread_exit() from main: a CPU stream worker ends its thread after 1 s
 * without work (the next enqueue starts another), so xdev keeps no thread
 * alive and the process ends once the queued work has run. (The pthread
 * build of OpenBLAS starts a thread pool of its own when it is loaded, which
 * keeps such a process alive unless OPENBLAS_NUM_THREADS=1.) */

typedef enum xdev_backend_state {
    XDEV_BACKEND_NOT_TRIED = 0, /* not needed yet (loaded on first use) */
    XDEV_BACKEND_LOADED = 1,    /* usable */
    XDEV_BACKEND_FAILED = 2,    /* could not load or initialise; see reason */
} xdev_backend_state_t;

typedef struct xdev_backend_info {
    xdev_device_type_t type;
    const char *name; /* "cuda" */
    xdev_backend_state_t state;
    const char *reason; /* why it failed (paths tried, dlopen error, no device) */
    const char *path;   /* the plugin file loaded ("built-in" for cpu) */
    int device_count;   /* visible devices */
    unsigned abi_major, abi_minor;
    bool is_default; /* provides the default device type */
} xdev_backend_info_t;

/* Describe backend `type`, loading it if not tried yet. Strings stay valid
 * for the life of the process. Works, and succeeds, even when xdev_init
 * failed (to show why); a backend that cannot be used is described (state
 * XDEV_BACKEND_FAILED, reason), not an error. */
XDEV_API XDEV_RESULT xdev_status_t xdev_backend_get_info(xdev_device_type_t type,
                                                         xdev_backend_info_t *out);

/* Launch blocking (XDEV_LAUNCH_BLOCKING=1): every enqueue waits for its
 * stream. False when xdev cannot initialise; never changes the thread's
 * error state. */
XDEV_API bool xdev_launch_blocking(void);

/* Sync debug mode (torch.cuda.set_sync_debug_mode): flag every call that
 * makes the host wait for a device - blocking copies (xdev_memcpy with
 * device memory; an asynchronous device-to-host copy into pageable memory
 * on an accelerator; a copy that first waits for a CPU device's stream),
 * device, stream and event synchronizes (xdev_synchronize,
 * xdev_device_synchronize, xdev_stream_synchronize, xdev_event_synchronize,
 * destroying a stream with work queued), and an allocation that must wait
 * for the device to free cached memory (the caching allocator's retry after
 * out of memory). Stream-ordered calls (asynchronous copies, memset,
 * launches, event records, stream waits, queries) are never flagged.
 * - OFF: nothing (the default);
 * - WARN: the first time each call site makes such a call, one line on
 *   stderr: "xdev: sync debug: <call> waits for <device>, called from
 *   /path/prog+0x1234 (main+0x56)" (the site named as the stream-order
 *   sanitizer names it; addr2line names the line); the call then waits;
 * - ERROR: the call fails with XDEV_ERROR_SYNC_DEBUG before it waits (and
 *   changes nothing).
 * XDEV_SYNC_DEBUG=off|warn|error sets the mode at initialisation (anything
 * else: XDEV_ERROR_ENV); these calls change it for the whole process. */
typedef enum xdev_sync_debug_mode {
    XDEV_SYNC_DEBUG_OFF = 0,
    XDEV_SYNC_DEBUG_WARN = 1,
    XDEV_SYNC_DEBUG_ERROR = 2,
} xdev_sync_debug_mode_t;

/* A mode outside the enum is XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_set_sync_debug_mode(xdev_sync_debug_mode_t mode);
XDEV_API XDEV_RESULT xdev_status_t xdev_get_sync_debug_mode(xdev_sync_debug_mode_t *out);

#ifdef __cplusplus
}
#endif
#endif
