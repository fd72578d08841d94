/* registry.h - the backends the core knows, their load state and devices.
 *
 * One xdev_backend_t per device type. The built-in CPU backend and the
 * plugins (libxdev-cuda.so, libxdev-hip.so) are loaded lazily, at most once,
 * under the backend's lock: the ones XDEV_BACKEND names at initialisation,
 * the others on their first use ("hip:0"). Everything else in core reaches a
 * backend's vtables through xdev_backend_acquire(). */
#ifndef XDEV_CORE_REGISTRY_H
#define XDEV_CORE_REGISTRY_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "xdev/backend.h"
#include "xdev/runtime.h"

/* Most devices of one type that xdev exposes (fixed-size per-thread state). */
#define XDEV_MAX_DEVICES 64

struct xdev_stream;

/* Per visible device. */
typedef struct xdev_device_state {
    int physical;                                 /* backend's index */
    _Atomic(struct xdev_stream *) default_stream; /* created on first use */
    _Atomic uint64_t peer_enabled;                /* bit p: enable_peer_access(this, p) done */
} xdev_device_state_t;

typedef struct xdev_backend {
    xdev_device_type_t type;
    const char *name;
    _Atomic int state; /* xdev_backend_state_t */
    pthread_mutex_t lock;
    const xdev_backend_api_t *api;
    void *dl_handle;
    char path[PATH_MAX];
    char reason[4096];
    xdev_status_t fail_status; /* why it failed: XDEV_ERROR_ENV for a malformed variable */
    int device_count;          /* visible */
    xdev_device_state_t devices[XDEV_MAX_DEVICES];
} xdev_backend_t;

/* Run initialisation once; return its (sticky) status, setting the message.
 * In a forked child or during exit, the refusal of process.h. */
xdev_status_t xdev_core_ensure_init(void);

/* At process exit (process.c): stop the built-in CPU backend's workers.
 * Plugins' shutdown slots are not called then: their vendor runtimes have
 * already torn themselves down (atexit handlers run before library
 * destructors). */
void xdev_core_shutdown_at_exit(void);

/* The backend of `type`, loading it if needed; XDEV_ERROR_BACKEND_UNAVAILABLE
 * with its reason when it cannot be used. Does not require any device. */
xdev_status_t xdev_backend_acquire(xdev_device_type_t type, xdev_backend_t **out);

/* The backend for a device and its state, checking the index (after
 * resolving -1 to the current device). */
xdev_status_t xdev_backend_for_device(xdev_device_t device, xdev_backend_t **be_out,
                                      xdev_device_t *resolved);

/* Set this thread's current device index of a type (device.c). */
void xdev_core_set_current_index(xdev_device_type_t type, int index);

/* Default device type chosen at initialisation. */
xdev_device_type_t xdev_core_default_type(void);

/* XDEV_LAUNCH_BLOCKING as read at initialisation. */
extern bool xdev_core_launch_blocking;

/* XDEV_ERROR_NOT_SUPPORTED: "the <backend> backend does not implement <slot>". */
xdev_status_t xdev_backend_not_supported(const xdev_backend_t *be, const char *slot);

/* Host services given to backends. */
extern const xdev_host_services_t xdev_core_host_services;

/* Try to load a plugin into `be` (plugin_loader.c); fills path/reason. */
xdev_status_t xdev_plugin_load(xdev_backend_t *be, const xdev_backend_api_t **api);

/* Check a backend's api struct against this core's ABI (plugin_loader.c). */
xdev_status_t xdev_backend_api_validate(const xdev_backend_api_t *api, const char *origin,
                                        xdev_device_type_t expected);

#endif
