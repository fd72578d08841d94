/* SPDX-License-Identifier: Apache-2.0 */
/* sync_debug.c - torch.cuda.set_sync_debug_mode: the mode, XDEV_SYNC_DEBUG,
 * and what a flagged wait does (sync_debug.h). Warnings go through the
 * library's one log channel (xdev_log_line, init_log.c), once per call site:
 * a loop that synchronizes a million times is one line, and the site is
 * named as the stream-order sanitizer names it (base/call_site.h). */
#include "runtime/sync_debug.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/call_site.h"
#include "base/env.h"
#include "base/error_internal.h"
#include "base/strbuf.h"
#include "runtime/registry.h"

_Atomic int xdev_sync_debug_flag;

#define XDEV_SYNC_SITES 1024 /* call sites remembered; past that every call warns */

static pthread_mutex_t g_sites_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t g_sites[XDEV_SYNC_SITES]; /* open addressing, 0 = empty */
static size_t g_nsites;

xdev_status_t xdev_sync_debug_read_env(void) {
    const char *v = xdev_env_get("XDEV_SYNC_DEBUG");
    int mode;
    if (v == NULL || v[0] == '\0' || strcmp(v, "off") == 0)
        mode = XDEV_SYNC_DEBUG_OFF;
    else if (strcmp(v, "warn") == 0)
        mode = XDEV_SYNC_DEBUG_WARN;
    else if (strcmp(v, "error") == 0)
        mode = XDEV_SYNC_DEBUG_ERROR;
    else
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_SYNC_DEBUG='%s' is not a sync debug mode: use 'warn' (one line per "
                         "call site that waits for a device), 'error' (such calls fail) or 'off'",
                         v);
    atomic_store_explicit(&xdev_sync_debug_flag, mode, memory_order_relaxed);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_set_sync_debug_mode(xdev_sync_debug_mode_t mode) {
    if (mode != XDEV_SYNC_DEBUG_OFF && mode != XDEV_SYNC_DEBUG_WARN &&
        mode != XDEV_SYNC_DEBUG_ERROR)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "mode %d is not XDEV_SYNC_DEBUG_OFF (0), _WARN (1) or _ERROR (2)",
                             (int)mode);
    XDEV_CHECK(xdev_core_ensure_init()); /* XDEV_SYNC_DEBUG is read first, then overridden */
    atomic_store_explicit(&xdev_sync_debug_flag, (int)mode, memory_order_relaxed);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_get_sync_debug_mode(xdev_sync_debug_mode_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    *out =
        (xdev_sync_debug_mode_t)atomic_load_explicit(&xdev_sync_debug_flag, memory_order_relaxed);
    return XDEV_SUCCESS;
}

/* True the first time `site` is seen (and whenever the table is full). */
static bool first_time(uintptr_t site) {
    if (site == 0) return true;
    bool fresh = true;
    pthread_mutex_lock(&g_sites_lock);
    size_t i = (site >> 4) % XDEV_SYNC_SITES;
    for (size_t probe = 0; probe < XDEV_SYNC_SITES; probe++, i = (i + 1) % XDEV_SYNC_SITES) {
        if (g_sites[i] == site) {
            fresh = false;
            break;
        }
        if (g_sites[i] == 0) {
            if (g_nsites + 1 < XDEV_SYNC_SITES) { /* one slot stays empty: probes end */
                g_sites[i] = site;
                g_nsites++;
            }
            break;
        }
    }
    pthread_mutex_unlock(&g_sites_lock);
    return fresh;
}

static void describe_device(char *buf, size_t len, const xdev_device_record_t *rec) {
    if (rec == NULL)
        snprintf(buf, len, "every device");
    else
        snprintf(buf, len, XDEV_REC_FMT, XDEV_REC_ARGS(rec));
}

xdev_status_t xdev_sync_debug_slow(const char *call, const xdev_device_record_t *rec,
                                   const char *what) {
    int mode = atomic_load_explicit(&xdev_sync_debug_flag, memory_order_relaxed);
    char dev[64];
    describe_device(dev, sizeof dev, rec);
    if (mode == XDEV_SYNC_DEBUG_ERROR)
        return XDEV_FAIL(XDEV_ERROR_SYNC_DEBUG,
                         "would wait for %s (%s), and the sync debug mode is error "
                         "(xdev_set_sync_debug_mode / XDEV_SYNC_DEBUG): nothing was done; use the "
                         "stream-ordered form, or set the mode to warn or off",
                         dev, what);
    void *frames[XDEV_CALL_SITE_FRAMES];
    int n = xdev_call_site_capture(frames, XDEV_CALL_SITE_FRAMES);
    if (!first_time((uintptr_t)xdev_call_site_pick(frames, n))) return XDEV_SUCCESS;
    xdev_strbuf_t b = {0};
    xdev_strbuf_printf(&b, "sync debug: %s waits for %s (%s), called ", call, dev, what);
    xdev_call_site_describe(&b, frames, n);
    if (!b.failed && b.buf != NULL) xdev_log_line(b.buf);
    free(b.buf);
    return XDEV_SUCCESS;
}
