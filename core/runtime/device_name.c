/* SPDX-License-Identifier: Apache-2.0 */
/* device_name.c - "cuda:1"-style device names: parse and format. The type
 * names are the registered backends' (backend_table.c). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"
#include "runtime/registry.h"
#include "xdev/device.h"

xdev_status_t xdev_device_parse(const char *name, xdev_device_t *out) {
    XDEV_REQUIRE_ARG(name);
    XDEV_REQUIRE_ARG(out);
    const char *colon = strchr(name, ':');
    size_t tlen = colon ? (size_t)(colon - name) : strlen(name);
    int type = xdev_backend_table_find(name, tlen);
    if (type < 0) {
        char names[256];
        xdev_backend_table_names(names, sizeof names, " or ");
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "'%s' is not a device name: unknown type '%.*s' (expected %s, "
                             "optionally followed by :index)",
                             name, (int)tlen, name, names);
    }
    int index = -1;
    if (colon != NULL) {
        const char *p = colon + 1;
        if (*p == '\0')
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "'%s': missing index after ':'", name);
        if (p[0] == '0' && p[1] != '\0')
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "'%s': index has a leading zero", name);
        long v = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9')
                return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                     "'%s': index must be a non-negative decimal integer", name);
            v = v * 10 + (*p - '0');
            if (v > INT_MAX)
                return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "'%s': index too large", name);
        }
        index = (int)v;
    }
    out->type = (xdev_device_type_t)type;
    out->index = index;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_format(xdev_device_t device, char *buf, size_t len) {
    XDEV_REQUIRE_ARG(buf);
    const char *tn = xdev_device_type_name(device.type);
    if (tn == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_DEVICE, "unknown device type %d", (int)device.type);
    if (device.index < -1)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "device index %d is negative", device.index);
    int n = device.index < 0 ? snprintf(buf, len, "%s", tn)
                             : snprintf(buf, len, "%s:%d", tn, device.index);
    if (n < 0 || (size_t)n >= len)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "buffer of %zu bytes too small for the device name (need %d)", len,
                             n + 1);
    return XDEV_SUCCESS;
}
