/* SPDX-License-Identifier: Apache-2.0 */
/* registry.h - the backends the core knows (by registration), their load
 * state, and one record per visible device.
 *
 * A backend is a registered factory (runtime/backend_table.c): built in, or
 * a plugin libxdev-<name>.so. It is loaded lazily, at most once, under its
 * lock: the ones XDEV_BACKEND names at initialisation, the others on their
 * first use ("hip:0"). Loading opens every visible device (device.open) and
 * fills its xdev_device_record_t; from then on every call on a device finds
 * its backend, the backend's context and the core's per-device state in
 * that record, through xdev_device_lookup (runtime/device_record.h). */
#ifndef XDEV_CORE_REGISTRY_H
#define XDEV_CORE_REGISTRY_H

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>

#include "xdev/backend.h"
#include "xdev/runtime.h"

/* Most devices of one type that xdev exposes (fixed-size per-thread state). */
#define XDEV_MAX_DEVICES 64

struct xdev_stream;
struct xdev_backend;

/* One visible device: everything a call on it needs, in one place. */
#define XDEV_MARKER_SLOTS 4

typedef struct xdev_device_record {
    struct xdev_backend *be;
    xdev_backend_device_t *ctx;                   /* the backend's context (device.open) */
    xdev_device_t id;                             /* logical: type and visible index */
    int physical;                                 /* the backend's index */
    _Atomic(struct xdev_stream *) default_stream; /* created on first use */
    _Atomic uint64_t peer_enabled;                /* bit p: enable_peer_access(this, p) done */
    /* Spare private events for wait_stream's markers (stream.c): a wait
     * reads its event when it is enqueued, so a marker is reusable at once;
     * kept for the life of the process, as the default stream is. */
    _Atomic(void *) markers[XDEV_MARKER_SLOTS];
} xdev_device_record_t;

typedef struct xdev_backend {
    xdev_device_type_t type;
    const char *name;
    uint32_t flags;    /* the factory's XDEV_BACKEND_* */
    _Atomic int state; /* xdev_backend_state_t */
    pthread_mutex_t lock;
    const xdev_backend_api_t *api; /* = &api_copy once loaded */
    /* The backend's API table as this libxdev knows it: the backend's bytes
     * (as many as its size says), zeros after them, so a table added by a
     * later minor reads as absent for an older plugin. */
    xdev_backend_api_t api_copy;
    void *dl_handle;
    char path[PATH_MAX];
    char reason[4096];
    size_t reason_detail;      /* where the backend's own message starts in reason */
    xdev_status_t fail_status; /* why it failed: XDEV_ERROR_ENV for a malformed variable */
    int device_count;          /* visible */
    /* Why XDEV_BACKEND=auto passed over this plugin without loading it (its
     * presence probe found no driver); "" when it did not. The backend stays
     * not tried: named or asked about, it loads as any other. */
    char passed_over[512];
    xdev_device_record_t devices[XDEV_MAX_DEVICES];
} xdev_backend_t;

/* Nonzero once initialisation succeeded, while the process may use xdev
 * (cleared in a forked child and at exit): the one load on fast paths. */
extern _Atomic int xdev_core_ready;

/* Loaded backends by type (NULL until loaded): the resolver's fast path. */
extern _Atomic(xdev_backend_t *) xdev_core_loaded[XDEV_MAX_DEVICE_TYPES];

/* Run initialisation once; return its (sticky) status, setting the message.
 * In a forked child or during exit, the refusal of process.h. The common
 * case (initialised, the process usable) is one load, inline in each of the
 * ~90 public entry points that start with it: the call cost more than the
 * check (8 instructions of the ~400 in an xdev_malloc + xdev_free pair). */
xdev_status_t xdev_core_ensure_init_slow(void);
static inline xdev_status_t xdev_core_ensure_init(void) {
    if (__builtin_expect(atomic_load_explicit(&xdev_core_ready, memory_order_acquire) != 0, 1))
        return XDEV_SUCCESS;
    return xdev_core_ensure_init_slow();
}

/* Fork child / exit (process.c): close the fast path. */
void xdev_core_close_gate(void);

/* At process exit (process.c): each loaded backend's at_exit slot. */
void xdev_core_shutdown_at_exit(void);

/* The backend of `type`, loading it if needed; XDEV_ERROR_BACKEND_UNAVAILABLE
 * with its reason when it cannot be used. Does not require any device. */
xdev_status_t xdev_backend_acquire(xdev_device_type_t type, xdev_backend_t **out);

/* XDEV_ERROR_INVALID_DEVICE unless a backend is registered for `type` (ask
 * once xdev has initialised: plugins found by name register then). */
xdev_status_t xdev_core_check_type(xdev_device_type_t type);

/* Set this thread's current device index of a type (device.c). */
void xdev_core_set_current_index(xdev_device_type_t type, int index);

/* Default device type chosen at initialisation (written only there, before
 * xdev_core_ready is set): read inline. */
extern xdev_device_type_t xdev_core_default_type_v;
static inline xdev_device_type_t xdev_core_default_type(void) {
    return xdev_core_default_type_v;
}

/* XDEV_LAUNCH_BLOCKING as read at initialisation. */
extern bool xdev_core_launch_blocking;

/* XDEV_VISIBLE_DEVICES (visible.c): read and check it at initialisation
 * (malformed: XDEV_ERROR_ENV); when a backend loads, number its devices
 * through it (be->devices[].physical, be->device_count; accelerators only),
 * matching UUID entries against device.get_properties_ext. False, with
 * be->reason, when an entry is ambiguous or selects a device twice. */
xdev_status_t xdev_visible_read_env(void);

/* xdev_synchronize without the sync debug mode's check (registry.c): for a
 * free that must wait for every device whatever the mode. */
xdev_status_t xdev_core_synchronize_always(void);
bool xdev_visible_apply(xdev_backend_t *be, const xdev_backend_api_t *api, int physical);

/* The device's extended properties (device_ext.c), size set to the core's;
 * NOT_SUPPORTED naming the backend without device.get_properties_ext. */
xdev_status_t xdev_core_props_ext(xdev_device_record_t *rec, xdev_device_properties_ext_t *out);

/* XDEV_ERROR_NOT_SUPPORTED: "the <backend> backend does not implement <slot>". */
xdev_status_t xdev_backend_not_supported(const xdev_backend_t *be, const char *slot);

/* Host services given to backends. */
extern const xdev_host_services_t xdev_core_host_services;

/* Try to load a plugin into `be` (plugin_loader.c); fills path/reason. */
xdev_status_t xdev_plugin_load(xdev_backend_t *be, const xdev_backend_api_t **api);

/* Register by name every plugin file in the plugin directories that is not
 * registered yet (plugin_loader.c); before the table is sealed. */
void xdev_plugin_discover(void);

/* The record of a backend type (type < XDEV_MAX_DEVICE_TYPES), loaded or
 * not (XDEV_LOG). */
xdev_backend_t *xdev_backend_record(xdev_device_type_t type);

/* The first dir/<file> of the plugin directories that exists, into path
 * (true); else false, with the paths tried in `tried` (plugin_loader.c).
 * For modules other than backends (transports: core/comm/transport.c). */
bool xdev_plugin_find(const char *file, char *path, size_t plen, char *tried, size_t tlen);

/* Whether dir/<file> exists in one of XDEV_PLUGIN_PATH's directories: a
 * plugin the user pointed xdev at, which auto always loads (plugin_loader.c). */
bool xdev_plugin_on_user_path(const char *file);

/* A cheap test, before any dlopen, of whether the shipped plugin `name`
 * could find a device: false, with the reason and what to install in `why`,
 * when its driver is plainly absent (no device files, no driver library);
 * true otherwise and for names it does not know. XDEV_BACKEND=auto passes
 * over a plugin it rules out, so a machine without a GPU does not pay for
 * loading CUDA's or HIP's runtime at every start. Set once, at load
 * (core/wiring.c, from backends/plugins.c). */
typedef bool (*xdev_presence_probe_fn)(const char *name, char *why, size_t len);
void xdev_registry_presence_wire(xdev_presence_probe_fn probe);

/* One line per directory searched for plugins, in order (XDEV_LOG). */
void xdev_plugin_dirs_print(FILE *f);

/* XDEV_LOG (init_log.c): read it (malformed: XDEV_ERROR_ENV), and at the
 * end of initialisation print the plugin search, each backend's verdict
 * and the selection, or why initialisation failed, to stderr. */
xdev_status_t xdev_init_log_read_env(void);
/* Whether XDEV_LOG=1 was read at initialisation (other folders' lines). */
bool xdev_init_log_enabled(void);
/* "xdev: <line>\n" on stderr, whole (the sync debug mode's warnings). */
void xdev_log_line(const char *line);
void xdev_init_log_print(xdev_status_t init_status, const char *message);

/* Check a backend's api struct against this core's ABI (plugin_loader.c). */
xdev_status_t xdev_backend_api_validate(const xdev_backend_api_t *api, const char *origin,
                                        const char *expected_name, xdev_device_type_t expected);

/* ---------------------------------------------------------- backend table
 * (backend_table.c) The registered factories, by type. Registration closes
 * when initialisation starts (xdev_backend_table_seal). */
void xdev_backend_table_seal(void);
/* A copy of the factory of `type`; false when none is registered. */
bool xdev_backend_table_get(xdev_device_type_t type, xdev_backend_factory_t *out);
/* Register a plugin found by name (libxdev-<name>.so, type assigned, flags
 * from its API once loaded) unless the name is known, malformed or the table
 * sealed or full: true when added. Never sets the thread's error. */
bool xdev_backend_table_add_plugin(const char *name, size_t len);
/* The type registered under name[0..len), or -1. */
int xdev_backend_table_find(const char *name, size_t len);

/* The same, ignoring case (XDEV_BACKEND takes CUDA as cuda, as the boolean
 * variables take any case; names are registered in lower case). */
int xdev_backend_table_find_nocase(const char *name, size_t len);
/* "cuda, hip or cpu": the registered names, accelerators first by
 * auto_order, then the others by type (`last` joins the final two). */
void xdev_backend_table_names(char *buf, size_t len, const char *last);
/* The registered types in that order; returns how many. */
int xdev_backend_table_order(xdev_device_type_t *types, int cap);

#endif
