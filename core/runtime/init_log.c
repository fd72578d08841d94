/* SPDX-License-Identifier: Apache-2.0 */
/* init_log.c - XDEV_LOG: on request, why xdev chose the backend it chose.
 *
 * The library prints nothing unless asked. With XDEV_LOG=1 (any boolean
 * spelling), initialisation ends by writing to stderr, one "xdev: " line
 * each: XDEV_BACKEND and XDEV_PLUGIN_PATH as read, the directories searched
 * for plugins in order, each registered backend's verdict (loaded: where
 * from and how many devices; failed: the reason, with the paths tried; not
 * tried: auto stopped before it), then the selection or the reason
 * initialisation failed. xdev-info shows the same from outside a program;
 * this shows it inside the program that is not doing what one expected. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/env.h"
#include "runtime/registry.h"

static bool g_log;

xdev_status_t xdev_init_log_read_env(void) {
    return xdev_env_bool("XDEV_LOG", false, &g_log);
}

bool xdev_init_log_enabled(void) {
    return g_log;
}

/* The library's one log channel: "xdev: <line>" on stderr, whole lines
 * (a lock keeps two threads' lines apart). Only what the user asked for is
 * written here: XDEV_LOG's report, the sync debug mode's warnings. */
void xdev_log_line(const char *line) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    fprintf(stderr, "xdev: %s\n", line);
    fflush(stderr);
    pthread_mutex_unlock(&lock);
}

static const char *shown(const char *v) {
    return v == NULL ? "(unset)" : v[0] == '\0' ? "(empty)" : v;
}

void xdev_init_log_print(xdev_status_t init_status, const char *message) {
    if (!g_log) return;
    FILE *f = stderr;
    fprintf(f, "xdev: XDEV_BACKEND=%s, XDEV_PLUGIN_PATH=%s\n", shown(xdev_env_get("XDEV_BACKEND")),
            shown(xdev_env_get("XDEV_PLUGIN_PATH")));
    xdev_plugin_dirs_print(f);
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++) {
        xdev_backend_factory_t factory;
        if (!xdev_backend_table_get((xdev_device_type_t)t, &factory)) continue; /* unregistered */
        xdev_backend_t *be = xdev_backend_record((xdev_device_type_t)t);
        int state = atomic_load(&be->state);
        if (state == XDEV_BACKEND_LOADED)
            fprintf(f, "xdev: backend %s: loaded (%s%s), %d device%s\n", be->name,
                    strcmp(be->path, "built-in") == 0 ? "built into libxdev" : "from ",
                    strcmp(be->path, "built-in") == 0 ? "" : be->path, be->device_count,
                    be->device_count == 1 ? "" : "s");
        else if (state == XDEV_BACKEND_FAILED)
            fprintf(f, "xdev: backend %s: cannot be used: %s\n", be->name, be->reason);
        else if (be->passed_over[0] != '\0')
            fprintf(f, "xdev: backend %s: passed over by auto: %s (not loaded; loaded if named)\n",
                    be->name, be->passed_over);
        else
            fprintf(f, "xdev: backend %s: not tried (loaded on first use)\n", be->name);
    }
    if (init_status == XDEV_SUCCESS)
        fprintf(f, "xdev: selected %s: the default device type\n",
                xdev_backend_record(xdev_core_default_type())->name);
    else
        fprintf(f, "xdev: initialisation failed: %s\n", message);
    fflush(f);
}
