/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c - initialisation, backend selection (XDEV_BACKEND), lazy
 * loading of each registered backend (opening its devices into records),
 * XDEV_VISIBLE_DEVICES renumbering of the accelerators (visible.c; never of
 * the others: XDEV_CPU_DEVICES governs the CPU), backend info.
 * Loading a backend is a probe: its failure is kept as the backend's reason
 * and never left in the calling thread's error state (xdev/error.h).
 * Initialisation also runs the steps that the folders above registered
 * (runtime/hooks.h): the allocator's settings (alloc/), so that a malformed
 * XDEV_ALLOC_CONF fails xdev_init like every other variable, and
 * XDEV_TRACE_FILE (observe/) once the backends are selected. */
#include "runtime/registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "runtime/capture.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/process.h"
#include "runtime/stream_order.h"
#include "runtime/sync_debug.h"

static xdev_backend_t g_backends[XDEV_MAX_DEVICE_TYPES];
_Atomic int xdev_core_ready;
_Atomic(xdev_backend_t *) xdev_core_loaded[XDEV_MAX_DEVICE_TYPES];

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static xdev_status_t g_init_status;
static char g_init_message[4096];
xdev_device_type_t xdev_core_default_type_v = XDEV_DEVICE_CPU;
bool xdev_core_launch_blocking;

static xdev_status_t host_set_error(xdev_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    xdev_core_fail_v(status, fmt, ap);
    va_end(ap);
    return status;
}

const xdev_host_services_t xdev_core_host_services = {
    .size = sizeof(xdev_host_services_t),
    .abi_major = XDEV_BACKEND_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .set_error = host_set_error,
    .set_error_v = xdev_core_fail_v,
    .set_vendor_error = xdev_core_fail_vendor,
    .get_env = xdev_env_get,
};

const char *xdev_version_string(void) {
#define XDEV_STR_(x) #x
#define XDEV_STR(x) XDEV_STR_(x)
    return XDEV_STR(XDEV_VERSION_MAJOR) "." XDEV_STR(XDEV_VERSION_MINOR) "." XDEV_STR(
        XDEV_VERSION_PATCH);
}

/* reason = "<plugin path>: <what>: <this thread's last error>". */
static void set_reason(xdev_backend_t *be, const char *what) {
    char msg[sizeof be->reason];
    int head = snprintf(msg, sizeof msg, "%s: %s: ", be->path, what);
    if (head < 0 || (size_t)head >= sizeof msg) head = 0;
    if (snprintf(msg + head, sizeof msg - (size_t)head, "%s", xdev_last_error()) < 0) msg[0] = 0;
    memcpy(be->reason, msg, sizeof msg); /* a message longer than the reason is cut */
    be->reason_detail = (size_t)head;
}

/* Open every visible device into its record; false (reason set) on failure. */
static bool open_devices(xdev_backend_t *be, const xdev_backend_api_t *api) {
    xdev_status_t (*open)(int, xdev_backend_device_t **) = XDEV_BACKEND_SLOT(api->device, open);
    for (int i = 0; i < be->device_count; i++) {
        xdev_device_record_t *rec = &be->devices[i];
        rec->be = be;
        rec->id = (xdev_device_t){be->type, i};
        xdev_status_t st = xdev_fault_point("device.open") ? xdev_fault_fail(be, "device.open")
                                                           : open(rec->physical, &rec->ctx);
        if (st != XDEV_SUCCESS) {
            char what[64];
            snprintf(what, sizeof what, "opening device %d failed", rec->physical);
            set_reason(be, what);
            return false;
        }
    }
    return true;
}

/* Load and initialise one backend; called with be->lock held. */
static void load_locked(xdev_backend_t *be) {
    const xdev_backend_api_t *api = NULL;
    xdev_backend_factory_t f;
    xdev_status_t st;
    if (!xdev_backend_table_get(be->type, &f)) {
        snprintf(be->reason, sizeof be->reason, "no backend is registered for %s", be->name);
        st = XDEV_ERROR_BACKEND_UNAVAILABLE;
    } else if (f.entry != NULL) {
        snprintf(be->path, sizeof be->path, "built-in");
        api = f.entry();
        char origin[64];
        snprintf(origin, sizeof origin, "the built-in %s backend", be->name);
        st = xdev_backend_api_validate(api, origin, be->name, be->type);
        if (st != XDEV_SUCCESS) set_reason(be, "refused");
    } else {
        st = xdev_plugin_load(be, &api); /* validates too */
    }
    if (st == XDEV_SUCCESS && api->size >= offsetof(xdev_backend_api_t, flags) + sizeof api->flags)
        be->flags |= api->flags & (XDEV_BACKEND_ACCELERATOR | XDEV_BACKEND_HOST_MEMORY);
    /* The backend's initialisation calls are failure points (runtime/fault.h). */
    if (st == XDEV_SUCCESS) {
        st = xdev_fault_point("backend.init") ? xdev_fault_fail(be, "backend.init")
                                              : api->init(&xdev_core_host_services);
        if (st != XDEV_SUCCESS) set_reason(be, "initialisation failed");
    }
    int physical = 0;
    if (st == XDEV_SUCCESS) {
        st = xdev_fault_point("device.count") ? xdev_fault_fail(be, "device.count")
                                              : api->device->count(&physical);
        if (st != XDEV_SUCCESS) set_reason(be, "counting devices failed");
    }
    if (st == XDEV_SUCCESS) {
        if (!xdev_visible_apply(be, api, physical) || !open_devices(be, api))
            st = XDEV_ERROR_BACKEND_UNAVAILABLE;
    }
    if (st != XDEV_SUCCESS) {
        if (be->reason[0] == '\0') snprintf(be->reason, sizeof be->reason, "%s", xdev_last_error());
        be->fail_status = st == XDEV_ERROR_ENV ? XDEV_ERROR_ENV : XDEV_ERROR_BACKEND_UNAVAILABLE;
        be->device_count = 0;
        atomic_store(&be->state, XDEV_BACKEND_FAILED);
        return;
    }
    memset(&be->api_copy, 0, sizeof be->api_copy);
    memcpy(&be->api_copy, api, api->size < sizeof be->api_copy ? api->size : sizeof be->api_copy);
    be->api = &be->api_copy;
    xdev_hooks_run_backend_loaded(be); /* XDEV_SHADOW's slots go in front (observe/shadow.c) */
    atomic_store_explicit(&be->state, XDEV_BACKEND_LOADED, memory_order_release);
    atomic_store_explicit(&xdev_core_loaded[be->type], be, memory_order_release);
}

xdev_backend_t *xdev_backend_record(xdev_device_type_t type) {
    return &g_backends[type];
}

/* Load a backend at most once. A failure is recorded in be->reason and
 * be->fail_status only: the caller decides whether it is an error, so the
 * thread's error state is restored (a probe during XDEV_BACKEND=auto or
 * xdev_device_count must leave nothing behind). */
static xdev_backend_t *load_backend(xdev_device_type_t type) {
    xdev_backend_t *be = &g_backends[type];
    if (atomic_load_explicit(&be->state, memory_order_acquire) == XDEV_BACKEND_NOT_TRIED) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        pthread_mutex_lock(&be->lock);
        if (atomic_load(&be->state) == XDEV_BACKEND_NOT_TRIED) load_locked(be);
        pthread_mutex_unlock(&be->lock);
        xdev_core_error_restore(&saved);
    }
    return be;
}

static bool usable(const xdev_backend_t *be) {
    return atomic_load(&be->state) == XDEV_BACKEND_LOADED && be->device_count > 0;
}

/* Status to report for a backend that cannot be used. */
static xdev_status_t failure_status(const xdev_backend_t *be) {
    return atomic_load(&be->state) == XDEV_BACKEND_FAILED ? be->fail_status
                                                          : XDEV_ERROR_BACKEND_UNAVAILABLE;
}

/* Every form XDEV_BACKEND accepts, for its messages: the names known now
 * (registered, and the plugins found on the plugin path) and the rule that
 * any other name is a plugin to look for. */
static void accepted_forms(char *buf, size_t len) {
    char names[256];
    xdev_backend_table_names(names, sizeof names, " or ");
    xdev_device_type_t order[XDEV_MAX_DEVICE_TYPES];
    int n = xdev_backend_table_order(order, XDEV_MAX_DEVICE_TYPES);
    const char *ex1 = n > 0 ? xdev_device_type_name(order[0]) : "cuda";
    const char *ex2 = xdev_device_type_name(XDEV_DEVICE_CPU) != NULL ? "cpu"
                      : n > 1 ? xdev_device_type_name(order[n - 1])
                              : "cpu";
    snprintf(buf, len,
             "expected auto, a backend's name (%s; any other name is a plugin to load, "
             "libxdev-<name>.so on the plugin path), or a comma list of distinct names in order "
             "of preference such as %s,%s; unset or empty means auto",
             names, ex1, strcmp(ex1, ex2) != 0 ? ex2 : "cpu");
}

/* When no backend could be used and one of those tried failed on a
 * malformed variable of its own (XDEV_CPU_THREADS=0), that variable is the
 * error, whatever else failed: its message first, then which backend read
 * it. XDEV_SUCCESS when none did. */
static xdev_status_t env_failure(const xdev_device_type_t *types, int n, const char *spec) {
    for (int i = 0; i < n; i++) {
        const xdev_backend_t *be = &g_backends[types[i]];
        if (failure_status(be) != XDEV_ERROR_ENV) continue;
        const char *detail =
            be->reason_detail < strlen(be->reason) ? be->reason + be->reason_detail : be->reason;
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "%s (the %s backend cannot start with it; XDEV_BACKEND=%s)", detail,
                         be->name, spec);
    }
    return XDEV_SUCCESS;
}

static xdev_presence_probe_fn g_presence; /* backends/plugins.c's, set at load */

void xdev_registry_presence_wire(xdev_presence_probe_fn probe) {
    g_presence = probe;
}

/* Auto only: true (be->passed_over says why) when `be` is a plugin not yet
 * tried, not on XDEV_PLUGIN_PATH (a plugin the user points at is always
 * loaded: it may be anything under a shipped name), whose presence probe
 * finds no driver: loading it would cost its runtime's start-up and could
 * only fail. The backend stays not tried, so asking for it later loads it. */
static bool pass_over(xdev_backend_t *be) {
    xdev_backend_factory_t f;
    if (g_presence == NULL || atomic_load(&be->state) != XDEV_BACKEND_NOT_TRIED ||
        !xdev_backend_table_get(be->type, &f) || f.entry != NULL)
        return false;
    char file[64];
    snprintf(file, sizeof file, "libxdev-%s.so", be->name);
    if (xdev_plugin_on_user_path(file)) return false;
    return !g_presence(be->name, be->passed_over, sizeof be->passed_over);
}

/* "cpu, cuda" - the backends that can be used here, loading each (this is
 * an error path: the cost of a probe no longer matters), or "none". */
static void usable_names(char *buf, size_t len) {
    xdev_device_type_t order[XDEV_MAX_DEVICE_TYPES];
    int n = xdev_backend_table_order(order, XDEV_MAX_DEVICE_TYPES);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < len; i++) {
        xdev_backend_t *be = load_backend(order[i]);
        if (!usable(be)) continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", be->name);
        if (w > 0) used = used + (size_t)w < len ? used + (size_t)w : len - 1;
    }
    if (used == 0) snprintf(buf, len, "none");
}

/* Parse XDEV_BACKEND and pick the default device type. */
static xdev_status_t select_backend(void) {
    const char *spec = xdev_env_get("XDEV_BACKEND");
    if (spec == NULL || spec[0] == '\0' || strcasecmp(spec, "auto") == 0) {
        /* Accelerators by auto_order, then the others (the CPU). */
        xdev_device_type_t order[XDEV_MAX_DEVICE_TYPES];
        int n = xdev_backend_table_order(order, XDEV_MAX_DEVICE_TYPES);
        const xdev_backend_t *last = NULL;
        for (int i = 0; i < n; i++) {
            if (pass_over(&g_backends[order[i]])) continue;
            xdev_backend_t *be = load_backend(order[i]);
            if (usable(be)) {
                xdev_core_default_type_v = order[i];
                return XDEV_SUCCESS;
            }
            if (!(be->flags & XDEV_BACKEND_ACCELERATOR)) last = be;
        }
        xdev_status_t env = env_failure(order, n, "auto");
        if (env != XDEV_SUCCESS) return env;
        if (last == NULL)
            return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                             "XDEV_BACKEND=auto: no backend can be used and none but "
                             "accelerators is registered");
        return XDEV_FAIL(failure_status(last), "XDEV_BACKEND=auto: no backend can be used; %s: %s",
                         last->name, last->reason);
    }
    /* An ordered list: the first usable one wins; each must be a known name,
     * listed once. */
    int list[XDEV_MAX_DEVICE_TYPES];
    int n = 0;
    for (const char *p = spec;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int t = xdev_backend_table_find_nocase(p, len);
        bool twice = false;
        for (int i = 0; t >= 0 && i < n; i++)
            twice = twice || list[i] == t;
        if (t < 0 || twice) {
            /* a name not registered became a plugin to look for (register_by_name):
             * one that is still unknown cannot be a backend's name */
            const char *why = twice ? "is listed twice"
                              : len == 4 && strncasecmp(p, "auto", 4) == 0
                                  ? "cannot be part of a list"
                                  : "is not a backend's name (1 to 15 of a-z, 0-9 and _)";
            char forms[1024];
            accepted_forms(forms, sizeof forms);
            return XDEV_FAIL(XDEV_ERROR_ENV, "XDEV_BACKEND='%s': '%.*s' %s (%s)", spec, (int)len, p,
                             why, forms);
        }
        list[n++] = t;
        if (comma == NULL) break;
        p = comma + 1;
    }
    char why[3500] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        xdev_backend_t *be = load_backend((xdev_device_type_t)list[i]);
        if (usable(be)) {
            xdev_core_default_type_v = (xdev_device_type_t)list[i];
            return XDEV_SUCCESS;
        }
        int w = snprintf(why + used, sizeof why - used, "%s%s: %s", i ? "; " : "", be->name,
                         be->reason);
        if (w > 0) used = used + (size_t)w < sizeof why ? used + (size_t)w : sizeof why - 1;
    }
    /* A malformed variable is reported as such, whichever backend it broke. */
    xdev_device_type_t tried[XDEV_MAX_DEVICE_TYPES];
    for (int i = 0; i < n; i++)
        tried[i] = (xdev_device_type_t)list[i];
    xdev_status_t env = env_failure(tried, n, spec);
    if (env != XDEV_SUCCESS) return env;
    xdev_status_t st = XDEV_ERROR_BACKEND_UNAVAILABLE;
    char avail[256];
    usable_names(avail, sizeof avail);
    if (n == 1)
        return XDEV_FAIL(st,
                         "XDEV_BACKEND=%s: the %s backend cannot be used: %s (usable here: %s; "
                         "xdev-info says why each other one is not)",
                         spec, g_backends[list[0]].name, g_backends[list[0]].reason, avail);
    return XDEV_FAIL(st,
                     "XDEV_BACKEND=%s: none of the listed backends can be used: %s (usable here: "
                     "%s; xdev-info says why each other one is not)",
                     spec, why, avail);
}

/* A backend is a name: each name XDEV_BACKEND lists that no backend was
 * registered under becomes a plugin to load (so that a missing one is
 * reported with the paths tried), and so does every libxdev-<name>.so on
 * the plugin path ("foo:0" then works without XDEV_BACKEND naming it). */
static void register_by_name(void) {
    const char *spec = xdev_env_get("XDEV_BACKEND");
    for (const char *p = spec; p != NULL && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char low[16]; /* plugin files are named in lower case, as XDEV_BACKEND is read */
        for (size_t i = 0; i < len && i < sizeof low; i++)
            low[i] = (char)tolower((unsigned char)p[i]);
        if (len < sizeof low)
            (void)xdev_backend_table_add_plugin(low, len); /* a known name is left as it is */
        if (comma == NULL) break;
        p = comma + 1;
    }
    xdev_plugin_discover();
}

/* Runs once, on whichever thread gets there first (an xdev call, or
 * xdev_backend_get_info which works even when selection fails): the outcome
 * is kept in g_init_status/g_init_message, and xdev_core_ensure_init reports
 * it to every caller, so the thread's own error state is restored here. */
static void init_once(void) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_process_mark_initialised(); /* first: a child forked from now on refuses */
    register_by_name();
    xdev_backend_table_seal(); /* the registered backends are fixed from here on */
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++) {
        xdev_backend_t *be = &g_backends[t];
        xdev_backend_factory_t f;
        be->type = (xdev_device_type_t)t;
        be->name = xdev_backend_table_get(be->type, &f) ? f.name : "unregistered";
        be->flags = f.flags;
        pthread_mutex_init(&be->lock, NULL);
    }
    xdev_status_t st = xdev_init_log_read_env();
    if (st == XDEV_SUCCESS) st = xdev_visible_read_env();
    if (st == XDEV_SUCCESS)
        st = xdev_env_bool("XDEV_LAUNCH_BLOCKING", false, &xdev_core_launch_blocking);
    if (st == XDEV_SUCCESS) st = xdev_order_read_env();
    if (st == XDEV_SUCCESS) st = xdev_sync_debug_read_env();
    if (st == XDEV_SUCCESS) st = xdev_hooks_run_init(XDEV_INIT_SETTINGS);
    if (st == XDEV_SUCCESS) st = select_backend();
    if (st == XDEV_SUCCESS) st = xdev_hooks_run_init(XDEV_INIT_BACKENDS_READY);
    g_init_status = st;
    if (st != XDEV_SUCCESS)
        snprintf(g_init_message, sizeof g_init_message, "%s", xdev_last_error());
    else if (xdev_process_check() == XDEV_SUCCESS)
        atomic_store_explicit(&xdev_core_ready, 1, memory_order_release);
    xdev_init_log_print(st, g_init_message);
    xdev_core_error_restore(&saved);
}

void xdev_core_close_gate(void) {
    atomic_store(&xdev_core_ready, 0);
}

xdev_status_t xdev_core_ensure_init_slow(void) {
    if (atomic_load_explicit(&xdev_core_ready, memory_order_acquire) != 0) return XDEV_SUCCESS;
    xdev_status_t pst = xdev_process_check(); /* a forked child, or exiting */
    if (pst != XDEV_SUCCESS) return pst;
    pthread_once(&g_init_once, init_once);
    if (g_init_status != XDEV_SUCCESS)
        return XDEV_FAIL(g_init_status, "xdev could not initialise: %s", g_init_message);
    return xdev_process_check(); /* the process may have begun exiting meanwhile */
}

xdev_status_t xdev_init(void) {
    XDEV_CHECK(xdev_core_ensure_init());
    return XDEV_SUCCESS;
}

/* A bool query: never changes the thread's error state (xdev/error.h). */
bool xdev_launch_blocking(void) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    (void)xdev_core_ensure_init();
    xdev_core_error_restore(&saved);
    return xdev_core_launch_blocking;
}

/* Every device of every loaded backend, so that a program that put work on
 * the CPU beside a GPU (or picked the CPU on a GPU machine) waits for all of
 * it. A backend never loaded holds no work and is not loaded here (that
 * could start a GPU runtime). Every device is waited for even after one
 * fails; the first failure is reported. */
static xdev_status_t synchronize_all(bool debug_check) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st == XDEV_SUCCESS) st = xdev_capture_check_unsafe("xdev_synchronize");
    if (st == XDEV_SUCCESS && debug_check)
        st = xdev_sync_debug_wait("xdev_synchronize", NULL, "a synchronize of every device");
    if (st != XDEV_SUCCESS) return st;
    xdev_status_t first = XDEV_SUCCESS;
    xdev_error_state_t first_error;
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++) {
        xdev_backend_t *be = atomic_load_explicit(&xdev_core_loaded[t], memory_order_acquire);
        for (int i = 0; be != NULL && i < be->device_count; i++) {
            xdev_status_t dst = xdev_be_device_synchronize(&be->devices[i]);
            if (dst != XDEV_SUCCESS && first == XDEV_SUCCESS) {
                first = dst;
                xdev_core_error_save(&first_error);
            }
        }
    }
    xdev_order_on_host_waits_device(NULL); /* waited, even for work that failed */
    if (first == XDEV_SUCCESS) return XDEV_SUCCESS;
    xdev_core_error_restore(&first_error);
    return first;
}

xdev_status_t xdev_core_synchronize_always(void) {
    return synchronize_all(false);
}

xdev_status_t xdev_synchronize(void) {
    XDEV_CHECK(synchronize_all(true));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_core_check_type(xdev_device_type_t type) {
    if (xdev_device_type_name(type) != NULL) return XDEV_SUCCESS; /* NULL out of range too */
    return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE,
                     "unknown device type %d (no backend is registered for it)", (int)type);
}

xdev_status_t xdev_backend_not_supported(const xdev_backend_t *be, const char *slot) {
    return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED, "the %s backend does not implement %s", be->name,
                     slot);
}

xdev_status_t xdev_backend_acquire(xdev_device_type_t type, xdev_backend_t **out) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    st = xdev_core_check_type(type);
    if (st != XDEV_SUCCESS) return st;
    xdev_backend_t *be = &g_backends[type];
    if (atomic_load_explicit(&be->state, memory_order_acquire) != XDEV_BACKEND_LOADED) {
        load_backend(type);
        if (atomic_load(&be->state) != XDEV_BACKEND_LOADED)
            return XDEV_FAIL(failure_status(be), "the %s backend cannot be used: %s", be->name,
                             be->reason);
    }
    *out = be;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_backend_get_info(xdev_device_type_t type, xdev_backend_info_t *out) {
    XDEV_REQUIRE_ARG(out);
    if ((unsigned)type >= XDEV_MAX_DEVICE_TYPES)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_DEVICE, "unknown device type %d", (int)type);
    XDEV_CHECK(xdev_process_check());      /* a forked child, or exiting */
    pthread_once(&g_init_once, init_once); /* info works even when selection failed */
    XDEV_CHECK(xdev_core_check_type(type));
    xdev_backend_t *be = load_backend(type);
    int state = atomic_load(&be->state);
    memset(out, 0, sizeof *out);
    out->type = type;
    out->name = be->name;
    out->state = (xdev_backend_state_t)state;
    out->path = be->path[0] ? be->path : NULL;
    out->reason = be->reason[0] ? be->reason : NULL;
    if (state == XDEV_BACKEND_LOADED) {
        out->device_count = be->device_count;
        out->abi_major = be->api->abi_major;
        out->abi_minor = be->api->abi_minor;
    }
    out->is_default = g_init_status == XDEV_SUCCESS && type == xdev_core_default_type_v;
    return XDEV_SUCCESS;
}

/* Each loaded backend's at_exit (built in or plugin alike): the slot's
 * contract (xdev/backend.h) is to stop the backend's own threads only. */
void xdev_core_shutdown_at_exit(void) {
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++) {
        xdev_backend_t *be = atomic_load(&xdev_core_loaded[t]);
        if (be == NULL) continue;
        void (*at_exit)(void) = XDEV_BACKEND_SLOT(be->api, at_exit);
        if (at_exit != NULL) at_exit();
    }
}

/* Here, not in backend_table.c, because it initialises xdev first (plugins
 * found by name are registered then). */
xdev_status_t xdev_device_type_find(const char *name, xdev_device_type_t *out) {
    XDEV_REQUIRE_ARG(name);
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init()); /* plugins found by name are registered by then */
    int t = xdev_backend_table_find(name, strlen(name));
    if (t < 0) {
        char names[256];
        xdev_backend_table_names(names, sizeof names, " or ");
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "no backend is registered under the name '%s' (registered: %s)", name,
                             names);
    }
    *out = (xdev_device_type_t)t;
    return XDEV_SUCCESS;
}
