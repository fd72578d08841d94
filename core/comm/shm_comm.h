/* SPDX-License-Identifier: Apache-2.0 */
/* shm_comm.h - communicator ranks in several processes for host-memory
 * backends, through POSIX shared memory (shm_comm.c). */
#ifndef XDEV_CORE_SHM_COMM_H
#define XDEV_CORE_SHM_COMM_H

#include <stddef.h>

#include "xdev/backend.h"

typedef struct xdev_shm_group xdev_shm_group_t;

/* A new group's id: a shared-memory object name in len bytes. */
xdev_status_t xdev_shm_unique_id(void *id, size_t len);
/* Join the group `id` names as rank of nranks; returns once all joined. */
xdev_status_t xdev_shm_join(const void *id, size_t len, int nranks, int rank,
                            xdev_shm_group_t **out);
/* This rank's part of a collective (buffers host-addressable); on failure
 * err says why (the ranks disagreed, or the group was aborted). */
xdev_status_t xdev_shm_run(xdev_shm_group_t *g, const xdev_collective_desc_t *d, char *err,
                           size_t errlen);
/* This rank's seq-th send to / recv from d->root (d->kind XDEV_COLL_SEND or
 * _RECV): a send never waits for the receiver; a recv waits for the send
 * (up to the timeout) and fails, writing nothing, if count or dtype differ. */
xdev_status_t xdev_shm_p2p(xdev_shm_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                           char *err, size_t errlen);
void xdev_shm_abort(xdev_shm_group_t *g);
void xdev_shm_leave(xdev_shm_group_t *g);

#endif
