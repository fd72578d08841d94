/* SPDX-License-Identifier: Apache-2.0 */
/* comm_cache.c - the communicators torch.cuda.comm's functions borrow.
 *
 * torch.cuda.comm.reduce_add sums through NCCL where it can, with
 * communicators torch.cuda.nccl keeps per set of devices. xdev does the
 * same: the first reduce_add over an ordered set of devices of a backend
 * with native communicators (CUDA: NCCL) makes a group over them
 * (xdev_communicator_init_all) and keeps it for the life of the process; later
 * calls over the same set reuse it. A set whose group cannot be made (no
 * NCCL, init failure) is remembered as such, so the caller falls back to
 * copies without retrying, and the failed attempt leaves the thread's error
 * state as it was. One cached group is used at a time, process-wide (as
 * torch's AutoNcclGroup does): NCCL communicators are not for concurrent
 * use, and two threads enqueueing collectives of different groups onto the
 * same streams in opposite orders would deadlock the devices.
 * xdev_comm_cache_get returns with that lock held until xdev_comm_cache_put.
 * A group that failed a call, or reports an asynchronous error, is not used
 * again: later calls over its set fall back to copies. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "xdev/communicator.h"

typedef struct entry {
    int n;
    xdev_device_record_t *recs[XDEV_MAX_DEVICES];
    xdev_communicator_t comms[XDEV_MAX_DEVICES];
    bool usable; /* false: the group could not be made, or failed; fall back */
    struct entry *next;
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* the list, creation */
static pthread_mutex_t g_use = PTHREAD_MUTEX_INITIALIZER;  /* one group in use at a time */
static entry_t *g_entries;

static entry_t *find(xdev_device_record_t *const *recs, int n) {
    for (entry_t *e = g_entries; e != NULL; e = e->next)
        if (e->n == n && memcmp(e->recs, recs, (size_t)n * sizeof *recs) == 0) return e;
    return NULL;
}

/* A new entry for the set, its group made now (or marked unusable). Called
 * with g_lock held: NCCL's init of a few ranks takes a fraction of a second
 * once per set, and holding the lock keeps two threads from making two. */
static entry_t *make(xdev_device_record_t *const *recs, int n) {
    entry_t *e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->n = n;
    memcpy(e->recs, recs, (size_t)n * sizeof *recs);
    xdev_device_t devs[XDEV_MAX_DEVICES];
    for (int i = 0; i < n; i++)
        devs[i] = recs[i]->id;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    e->usable = xdev_communicator_init_all(e->comms, n, devs) == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    if (e->usable) xdev_communicator_mark_cached(e->comms, n); /* before anyone uses it */
    e->next = g_entries;
    g_entries = e;
    return e;
}

bool xdev_comm_cache_get(xdev_device_record_t *const *recs, int n, xdev_communicator_t **comms) {
    xdev_backend_t *be = recs[0]->be;
    if (n < 2 || (be->flags & XDEV_BACKEND_HOST_MEMORY) || !XDEV_HAS(be, comm, init_all))
        return false;
    pthread_mutex_lock(&g_lock);
    entry_t *e = find(recs, n);
    if (e == NULL) e = make(recs, n);
    pthread_mutex_unlock(&g_lock);
    if (e == NULL) return false;
    pthread_mutex_lock(&g_use);
    /* a group NCCL reports broken is dropped, not reused */
    if (e->usable && !xdev_comm_cached_usable(e->comms[0])) e->usable = false;
    if (!e->usable) {
        pthread_mutex_unlock(&g_use);
        return false;
    }
    *comms = e->comms;
    return true;
}

void xdev_comm_cache_put(xdev_communicator_t *comms, bool failed) {
    entry_t *e = (entry_t *)((char *)comms - offsetof(entry_t, comms));
    if (failed) e->usable = false; /* under g_use, as every reader */
    pthread_mutex_unlock(&g_use);
}
