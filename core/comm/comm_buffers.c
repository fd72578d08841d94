/* SPDX-License-Identifier: Apache-2.0 */
/* comm_buffers.c - the buffer check every collective makes: a pointer must
 * be live xdev device memory large enough for the call, and its device is
 * the one the collective runs on. Shared by torch.cuda.comm's functions
 * (local_comm.c) and the communicators' checks (comm_checks.c), and kept
 * apart from both so that neither depends on the other (comm_internal.h
 * draws the graph). The lookup goes through the per-thread cache the kernel
 * launches use (collectives pass the same few buffers again and again), and
 * the argument's name is formatted only for a message. */
#include <stdio.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "alloc/alloc_lookup.h"

typedef struct arg_name {
    const char *arg;
    int i;
} arg_name_t;

static void label(const void *ctx, char *buf, size_t len) {
    const arg_name_t *a = ctx;
    if (a->i >= 0)
        snprintf(buf, len, "%s[%d]", a->arg, a->i);
    else
        snprintf(buf, len, "%s", a->arg);
}

xdev_status_t xdev_comm_buffer_device(const void *p, size_t n, const char *arg, int i,
                                      xdev_device_record_t **rec) {
    arg_name_t at = {arg, i};
    char name[48];
    if (p == NULL) {
        label(&at, name, sizeof name);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s is NULL", name);
    }
    xdev_live_ref_t ref;
    xdev_status_t st = xdev_live_lookup_cached(p, label, &at, &ref);
    if (st != XDEV_SUCCESS) return st;
    if (!ref.known || ref.e.kind != XDEV_MEMORY_DEVICE) {
        label(&at, name, sizeof name);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s (%p) is not device memory from xdev_malloc*: the collectives move "
                         "device buffers (copy host data with xdev_memcpy first)",
                         name, p);
    }
    size_t off = (size_t)((uintptr_t)p - ref.base);
    if (n > 0 && (off > ref.size || n > ref.size - off)) {
        label(&at, name, sizeof name);
        return xdev_live_check_extent(&ref, p, n, name);
    }
    *rec = &ref.e.be->devices[ref.e.index];
    return XDEV_SUCCESS;
}
