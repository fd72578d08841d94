/* SPDX-License-Identifier: Apache-2.0 */
/* visible.c - XDEV_VISIBLE_DEVICES: which physical accelerators are visible
 * and their numbering, as CUDA_VISIBLE_DEVICES does. An entry is an index
 * ("2"), a GPU UUID or its prefix ("GPU-8d3f", as nvidia-smi -L prints
 * them; torch and CUDA accept prefixes) or a MIG instance ("MIG-<uuid>").
 * The text is checked at initialisation (malformed: XDEV_ERROR_ENV, like
 * every XDEV_* variable); the UUIDs are matched when a backend loads,
 * against what its device.get_properties_ext slot says of each physical
 * device. A UUID that matches no device selects nothing (as an index past
 * the count does); one that matches several, or a device selected twice,
 * makes the backend unusable with the reason. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "runtime/registry.h"

#define VISIBLE_INDEX_MAX (1 << 20)
#define VISIBLE_FORMS                                                                              \
    "expected a comma list of at most 64 distinct entries without spaces, each a device index "    \
    "0..1048576, a GPU UUID or its prefix (GPU-8d3f...) or a MIG instance (MIG-...), such as "     \
    "2,0 or GPU-8d3f0a1e; empty for no device"

typedef struct {
    int index;                /* -1: by UUID */
    char uuid[XDEV_UUID_MAX]; /* "GPU-..." / "MIG-..." as written */
} visible_entry_t;

static visible_entry_t g_entries[XDEV_MAX_DEVICES];
static int g_count = -1; /* -1: unset */

/* A UUID entry: the prefix then at least one character of its alphabet
 * (hex digits and dashes for GPU-, also letters, digits and '/' for MIG-). */
static bool uuid_entry(const char *p, size_t n) {
    bool mig = n > 4 && strncmp(p, "MIG-", 4) == 0;
    if (!mig && !(n > 4 && strncmp(p, "GPU-", 4) == 0)) return false;
    for (size_t i = 4; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!(isxdigit(c) || c == '-' || (mig && (isalnum(c) || c == '/')))) return false;
    }
    return true;
}

xdev_status_t xdev_visible_read_env(void) {
    const char *name = "XDEV_VISIBLE_DEVICES";
    const char *v = xdev_env_get(name);
    g_count = -1;
    if (v == NULL) return XDEV_SUCCESS;
    int n = 0;
    for (const char *p = v; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (n == XDEV_MAX_DEVICES)
            return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s': more than %d entries (%s)", name, v,
                             XDEV_MAX_DEVICES, VISIBLE_FORMS);
        visible_entry_t *e = &g_entries[n];
        memset(e, 0, sizeof *e);
        if (len > 0 && strspn(p, "0123456789") == len) {
            errno = 0;
            long idx = strtol(p, NULL, 10);
            if (len > 8 || idx > VISIBLE_INDEX_MAX)
                return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s': index %.*s is too large (%s)", name, v,
                                 (int)len, p, VISIBLE_FORMS);
            e->index = (int)idx;
            for (int i = 0; i < n; i++)
                if (g_entries[i].index == e->index)
                    return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s': index %ld listed twice (%s)", name,
                                     v, idx, VISIBLE_FORMS);
        } else if (uuid_entry(p, len) && len < XDEV_UUID_MAX) {
            e->index = -1;
            memcpy(e->uuid, p, len);
        } else {
            return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s': entry '%.*s' is not a device (%s)", name, v,
                             (int)len, p, VISIBLE_FORMS);
        }
        n++;
        if (end == NULL) break;
        p = end + 1;
        if (*p == '\0')
            return XDEV_FAIL(XDEV_ERROR_ENV, "%s='%s': trailing comma (%s)", name, v,
                             VISIBLE_FORMS);
    }
    g_count = n; /* "" = no devices visible, as CUDA_VISIBLE_DEVICES="" */
    return XDEV_SUCCESS;
}

/* The UUIDs of the backend's physical devices, through device.open and
 * device.get_properties_ext (open is cheap and may be repeated: the
 * contexts live as long as the process). False with the reason set. */
static bool physical_uuids(xdev_backend_t *be, const xdev_backend_api_t *api, int physical,
                           char (*uuids)[XDEV_UUID_MAX]) {
    xdev_status_t (*ext)(xdev_backend_device_t *, xdev_device_properties_ext_t *) =
        XDEV_BACKEND_SLOT(api->device, get_properties_ext);
    if (ext == NULL) {
        snprintf(be->reason, sizeof be->reason,
                 "XDEV_VISIBLE_DEVICES='%s' names devices by UUID, but the %s backend cannot "
                 "report UUIDs (it does not implement device.get_properties_ext)",
                 xdev_env_get("XDEV_VISIBLE_DEVICES"), be->name);
        return false;
    }
    for (int i = 0; i < physical && i < XDEV_MAX_DEVICES; i++) {
        xdev_backend_device_t *ctx = NULL;
        xdev_device_properties_ext_t p;
        memset(&p, 0, sizeof p);
        p.size = sizeof p;
        xdev_status_t st = api->device->open(i, &ctx);
        if (st == XDEV_SUCCESS) st = ext(ctx, &p);
        if (st != XDEV_SUCCESS) {
            snprintf(be->reason, sizeof be->reason,
                     "XDEV_VISIBLE_DEVICES: reading the UUID of %s device %d failed: %s", be->name,
                     i, xdev_last_error());
            return false;
        }
        memcpy(uuids[i], p.uuid, XDEV_UUID_MAX);
        uuids[i][XDEV_UUID_MAX - 1] = '\0';
    }
    return true;
}

/* The physical device entry `e` selects: its index (may be >= physical:
 * none), or the one UUID it is a prefix of (case aside); -1 for none, -2
 * (reason set) when it is ambiguous. */
static int resolve(xdev_backend_t *be, const visible_entry_t *e, int physical,
                   char (*uuids)[XDEV_UUID_MAX]) {
    if (e->index >= 0) return e->index < physical ? e->index : -1;
    int found = -1, matches = 0;
    size_t n = strlen(e->uuid);
    for (int i = 0; i < physical && i < XDEV_MAX_DEVICES; i++)
        if (strncasecmp(uuids[i], e->uuid, n) == 0) {
            if (matches++ == 0) found = i;
        }
    if (matches > 1) {
        /* bounded widths: the whole reason fits its buffer (gcc 13's
         * -Wformat-truncation counted an entry of 6399 bytes) */
        snprintf(be->reason, sizeof be->reason,
                 "XDEV_VISIBLE_DEVICES entry '%.100s' is a prefix of %d %.32s devices' UUIDs "
                 "(%.100s, ...): give more of the UUID",
                 e->uuid, matches, be->name, uuids[found]);
        return -2;
    }
    return found;
}

bool xdev_visible_apply(xdev_backend_t *be, const xdev_backend_api_t *api, int physical) {
    int n = 0;
    if (g_count < 0 || !(be->flags & XDEV_BACKEND_ACCELERATOR)) {
        for (int i = 0; i < physical && n < XDEV_MAX_DEVICES; i++)
            be->devices[n++].physical = i;
        be->device_count = n;
        if (n == 0)
            snprintf(be->reason, sizeof be->reason, "no %s device found (the backend reports 0)",
                     be->name);
        return true;
    }
    bool by_uuid = false;
    for (int i = 0; i < g_count; i++)
        by_uuid |= g_entries[i].index < 0;
    static char uuids[XDEV_MAX_DEVICES][XDEV_UUID_MAX]; /* under the backend's load lock */
    if (by_uuid && physical > 0 && !physical_uuids(be, api, physical, uuids)) return false;
    for (int i = 0; i < g_count; i++) {
        int phys = resolve(be, &g_entries[i], physical, uuids);
        if (phys == -2) return false;
        if (phys < 0) continue;
        for (int j = 0; j < n; j++)
            if (be->devices[j].physical == phys) {
                snprintf(be->reason, sizeof be->reason,
                         "XDEV_VISIBLE_DEVICES='%s' selects %s device %d twice (entry '%s')",
                         xdev_env_get("XDEV_VISIBLE_DEVICES"), be->name, phys,
                         g_entries[i].index >= 0 ? "an index" : g_entries[i].uuid);
                return false;
            }
        be->devices[n++].physical = phys;
    }
    be->device_count = n;
    if (n == 0 && physical > 0)
        snprintf(be->reason, sizeof be->reason,
                 "no %s device visible: XDEV_VISIBLE_DEVICES='%s' selects none of the %d physical "
                 "devices",
                 be->name, xdev_env_get("XDEV_VISIBLE_DEVICES"), physical);
    else if (n == 0)
        snprintf(be->reason, sizeof be->reason, "no %s device found (the backend reports 0)",
                 be->name);
    return true;
}
