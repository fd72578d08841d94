/* SPDX-License-Identifier: Apache-2.0 */
/* device_name.c - "cuda:1"-style device names: parse and format. The type
 * names are the registered backends' (backend_table.c). */
#include <limits.h>
#include <stdbool.h>
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
        /* what is wrong, in order: a character that is no digit (a space, a
         * sign), then a leading zero */
        for (const char *q = p; *q; q++) {
            if (*q >= '0' && *q <= '9') continue;
            char shown[8];
            if ((unsigned char)*q < 32 || *q == 127)
                snprintf(shown, sizeof shown, "\\x%02x", (unsigned)(unsigned char)*q);
            else
                snprintf(shown, sizeof shown, "%c", *q);
            bool space = *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r';
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "'%s': the index after ':' is decimal digits only, but "
                                 "character %d is '%s'%s",
                                 name, (int)(q - name), shown,
                                 space ? " (white space: trim the name)" : "");
        }
        if (p[0] == '0' && p[1] != '\0') {
            const char *digits = p + strspn(p, "0");
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "'%s': the index has a leading zero (write '%.*s:%s')", name,
                                 (int)tlen, name, *digits ? digits : "0");
        }
        long v = 0;
        for (; *p; p++) {
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
