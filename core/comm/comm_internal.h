/* SPDX-License-Identifier: Apache-2.0 */
/* comm_internal.h - what the files of core/comm share: the buffer check
 * (comm_buffers.c), the cached groups of torch.cuda.comm (comm_cache.c) and
 * adopting a rank made elsewhere (communicator.c, for comm_procs.c). The
 * communicator's record is private to its own three files (comm_record.h).
 *
 * Who calls whom among core/comm's files (an arrow: calls into; the public
 * xdev/communicator.h and xdev/comm.h calls count). No cycle: each file
 * calls only files below it in this list.
 *
 *   local_comm.c       torch.cuda.comm -> comm_cache.c, communicator.c
 *                      (xdev_reduce), comm_group.c, comm_buffers.c
 *   comm_cache.c       cached groups -> communicator.c (init_all, check)
 *   rendezvous.c       ranks a launcher started -> comm_procs.c,
 *                      transport.c, launcher.c
 *   comm_procs.c       ranks across processes -> communicator.c (adopt),
 *                      transport.c
 *   transport.c        picking and loading transports -> shm_comm.c,
 *                      launcher.c
 *   launcher.c         the launcher's variables -> nothing
 *   communicator.c     public calls, registry, routing -> comm_checks.c,
 *                      host_collectives.c, the backend, a transport's
 *                      table
 *   comm_checks.c      argument checks -> comm_buffers.c, host_reduce.c
 *   host_collectives.c the in-process host engine -> host_reduce.c
 *   shm_comm.c         the shared-memory engine -> host_reduce.c
 *   comm_group.c       group calls -> the backends only
 *   comm_buffers.c     the buffer check -> alloc/ only
 *   host_reduce.c      the elementwise reductions -> nothing
 *
 * Headers: comm_internal.h (local_comm, comm_cache, comm_procs,
 * communicator, comm_checks, comm_buffers, rendezvous, watchdog, shm_comm, transport,
 * launcher); comm_record.h
 * (communicator, comm_checks, host_collectives); shm_comm.h (transport, shm_comm);
 * host_reduce.h (comm_checks, host_collectives, host_reduce, shm_comm). */
#ifndef XDEV_CORE_COMM_INTERNAL_H
#define XDEV_CORE_COMM_INTERNAL_H

#include <time.h>

#include "base/env.h"
#include "runtime/registry.h"
#include "xdev/communicator.h"
#include "xdev/transport.h"

/* XDEV_COMM_TIMEOUT, the one deadline of ranks that wait for each other
 * (the rendezvous, shared-memory groups, the NCCL watchdog): seconds in
 * 1..86400, `fallback` when unset or empty; XDEV_ERROR_ENV otherwise. */
#define XDEV_COMM_TIMEOUT_DEFAULT_S 120
static inline xdev_status_t xdev_comm_timeout_s(int fallback, int *out) {
    return xdev_env_int("XDEV_COMM_TIMEOUT", fallback, 1, 86400, out);
}

/* CLOCK_MONOTONIC in milliseconds, for those deadlines. */
static inline long long xdev_comm_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The device of `p`, which must be live xdev device memory holding n bytes;
 * errors name the argument (arg, index i; i < 0: no index). Shared by
 * torch.cuda.comm's functions (local_comm.c) and the communicators'
 * checks (comm_checks.c); comm_buffers.c. */
xdev_status_t xdev_comm_buffer_device(const void *p, size_t n, const char *arg, int i,
                                      xdev_device_record_t **rec);

/* A group over recs[0..n) (n >= 2, distinct devices of one backend with
 * native communicators), made at its first use and kept (comm_cache.c):
 * true with *comms = its n ranks in order, locked for the caller until
 * xdev_comm_cache_put (failed: the call failed, do not use the group
 * again); false when the backend has none or the group could not be made
 * or is broken (the caller falls back; the error state is untouched). */
bool xdev_comm_cache_get(xdev_device_record_t *const *recs, int n, xdev_communicator_t **comms);
void xdev_comm_cache_put(xdev_communicator_t *comms, bool failed);

/* comms[0..n), just made by xdev_communicator_init_all, become a cached
 * group's (communicator.c): unwatched, their calls unchecked (below). */
void xdev_communicator_mark_cached(xdev_communicator_t *comms, int n);
/* Whether cached rank c may be used: its group has no error, and the
 * backend reports none for it (the watchdog does not look at it). Leaves
 * the thread's error state as it was. */
bool xdev_comm_cached_usable(xdev_communicator_t c);
/* Rank c's part of a broadcast (kind XDEV_COLL_BROADCAST) or sum
 * (XDEV_COLL_REDUCE) of the cached group c belongs to, onto its device's
 * current stream through the enqueue path (observers and the sanitizer see
 * it). What xdev_broadcast/xdev_reduce check (the handle, the dtype, the
 * root, each buffer on the rank's device with count elements, the overlap)
 * the caller has made sure of: torch.cuda.comm's functions check their
 * buffers and order the group's ranks by those buffers' devices. */
xdev_status_t xdev_comm_cached_collective(xdev_communicator_t c, xdev_collective_kind_t kind,
                                          const void *send, void *recv, size_t count,
                                          xdev_dtype_t dtype, int root);

/* A communicator around a backend rank `native` (rank of nranks, on rec;
 * be its backend) or, for host-memory backends, a group `xg` of transport
 * xp (be NULL): the only rank of its group in this process; registered as
 * live. */
xdev_status_t xdev_communicator_adopt(xdev_backend_t *be, xdev_device_record_t *rec, int nranks,
                                      int rank, void *native, const xdev_transport_t *xp, void *xg,
                                      xdev_communicator_t *out);

/* The transport of host-memory ranks in several processes named `name`
 * ("shm", or a module's), loaded if need be; XDEV_ERROR_INVALID_VALUE for
 * a name no transport can have (transport.c). */
xdev_status_t xdev_transport_named(const char *name, const xdev_transport_t **out);
/* The transport a new group uses: XDEV_HOST_COMM's, or (auto) shm unless
 * the launcher's ranks are not all on this host, then mpi. */
xdev_status_t xdev_transport_pick(const xdev_transport_t **out);

/* The launcher's variables (xdev_launch_info) without blaming the caller:
 * *found false, XDEV_SUCCESS, when no launcher's are set (launcher.c). */
xdev_status_t xdev_launch_read(xdev_launch_info_t *out, bool *found);
/* The job's id as the launcher gives it, "" when it gives none: the same
 * on every rank of a job, another in another job (launcher.c). */
void xdev_launch_job_id(char *buf, size_t len);

/* A group's id for ranks of a host-memory backend whose transport xp
 * meets by itself (XDEV_TRANSPORT_SELF_MEET): the call's number in its
 * transport part (comm_procs.c). */
void xdev_communicator_id_self_meet(xdev_device_type_t type, const xdev_transport_t *xp,
                                    uint64_t call, xdev_communicator_id_t *id);

#endif
