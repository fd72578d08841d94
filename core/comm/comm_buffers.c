/* SPDX-License-Identifier: Apache-2.0 */
/* comm_buffers.c - the buffer check every collective makes: a pointer must
 * be live xdev device memory large enough for the call, and its device is
 * the one the collective runs on. Shared by torch.cuda.comm's functions
 * (local_comm.c) and the communicators' checks (comm_checks.c), and kept
 * apart from both so that neither depends on the other (comm_internal.h
 * draws the graph). */
#include <stdio.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "memory/alloc_lookup.h"

xdev_status_t xdev_comm_buffer_device(const void *p, size_t n, const char *arg, int i,
                                      xdev_device_record_t **rec) {
    char name[48];
    if (i >= 0)
        snprintf(name, sizeof name, "%s[%d]", arg, i);
    else
        snprintf(name, sizeof name, "%s", arg);
    if (p == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s is NULL", name);
    xdev_live_ref_t ref;
    xdev_status_t st = xdev_live_lookup(p, name, &ref);
    if (st != XDEV_SUCCESS) return st;
    if (!ref.known || ref.e.kind != XDEV_MEMORY_DEVICE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s (%p) is not device memory from xdev_malloc*: the collectives move "
                         "device buffers (copy host data with xdev_memcpy first)",
                         name, p);
    if (n > 0) {
        st = xdev_live_check_extent(&ref, p, n, name);
        if (st != XDEV_SUCCESS) return st;
    }
    *rec = &ref.e.be->devices[ref.e.index];
    return XDEV_SUCCESS;
}
