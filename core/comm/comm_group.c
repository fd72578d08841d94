/* SPDX-License-Identifier: Apache-2.0 */
/* comm_group.c - group calls (xdev_group_start/end, NCCL's
 * ncclGroupStart/End): a per-thread nesting depth, and each loaded backend
 * with communicators brackets the group too (NCCL enqueues a group's
 * collectives at its end). The host-memory communicators need no grouping. */
#include <stdatomic.h>
#include <stdbool.h>

#include "base/error_internal.h"
#include "comm/comm_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/registry.h"
#include "xdev/communicator.h"

static _Thread_local int tls_group_depth;

/* Each loaded backend with communicators brackets the group too (NCCL
 * launches a group's operations at its end). */
static xdev_status_t backends_group(bool start) {
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++) {
        xdev_backend_t *be = atomic_load(&xdev_core_loaded[t]);
        if (be == NULL || !XDEV_HAS(be, comm, group_start)) continue;
        xdev_status_t st = start ? xdev_be_comm_group_start(be) : xdev_be_comm_group_end(be);
        if (st != XDEV_SUCCESS) return st;
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_group_start(void) {
    XDEV_CHECK(xdev_core_ensure_init());
    if (tls_group_depth == 1 << 20)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "groups nested over 2^20 deep");
    XDEV_CHECK(backends_group(true));
    tls_group_depth++;
    return XDEV_SUCCESS;
}

int xdev_comm_group_depth(void) {
    return tls_group_depth;
}

xdev_status_t xdev_group_end(void) {
    XDEV_CHECK(xdev_core_ensure_init());
    if (tls_group_depth == 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "xdev_group_end without xdev_group_start on this thread");
    tls_group_depth--;
    xdev_status_t st = backends_group(false);
    if (tls_group_depth == 0) {
        xdev_comm_watch_flush(st == XDEV_SUCCESS); /* watchdog.c */
        xdev_hooks_run_group_end();                /* the shadow's staging copies */
    }
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}
