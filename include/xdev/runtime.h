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

#ifdef __cplusplus
extern "C" {
#endif

#define XDEV_VERSION_MAJOR 0
#define XDEV_VERSION_MINOR 1
#define XDEV_VERSION_PATCH 0

/* "0.1.0" */
XDEV_API const char *xdev_version_string(void);

/* Initialise xdev: read the environment, load and select backends. Optional
 * (every call initialises lazily), idempotent and thread-safe. Returns the
 * selection's status each time: an explicitly requested backend that cannot
 * be used is an error whose message says why. */
XDEV_API xdev_status_t xdev_init(void);

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
XDEV_API xdev_status_t xdev_backend_get_info(xdev_device_type_t type, xdev_backend_info_t *out);

/* Launch blocking (XDEV_LAUNCH_BLOCKING=1): every enqueue waits for its
 * stream. False when xdev cannot initialise; never changes the thread's
 * error state. */
XDEV_API bool xdev_launch_blocking(void);

#ifdef __cplusplus
}
#endif
#endif
