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
 *   comm_procs.c       ranks across processes -> communicator.c (adopt),
 *                      shm_comm.c
 *   communicator.c     public calls, registry, routing -> comm_checks.c,
 *                      host_collectives.c, shm_comm.c, the backend
 *   comm_checks.c      argument checks -> comm_buffers.c, host_reduce.c
 *   host_collectives.c the in-process host engine -> host_reduce.c
 *   shm_comm.c         the shared-memory engine -> host_reduce.c
 *   comm_group.c       group calls -> the backends only
 *   comm_buffers.c     the buffer check -> memory/ only
 *   host_reduce.c      the elementwise reductions -> nothing
 *
 * Headers: comm_internal.h (local_comm, comm_cache, comm_procs,
 * communicator, comm_checks, comm_buffers, rendezvous, watchdog, shm_comm); comm_record.h
 * (communicator, comm_checks, host_collectives); shm_comm.h (comm_procs, communicator, shm_comm);
 * host_reduce.h (comm_checks, host_collectives, host_reduce, shm_comm). */
#ifndef XDEV_CORE_COMM_INTERNAL_H
#define XDEV_CORE_COMM_INTERNAL_H

#include <time.h>

#include "base/env.h"
#include "runtime/registry.h"
#include "xdev/communicator.h"

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

struct xdev_shm_group;

/* A communicator around a backend rank `native` (rank of nranks, on rec;
 * be its backend) or, for host-memory backends, a shared-memory group `shm`
 * (be NULL): the only rank of its group in this process; registered as
 * live. */
xdev_status_t xdev_communicator_adopt(xdev_backend_t *be, xdev_device_record_t *rec, int nranks,
                                      int rank, void *native, struct xdev_shm_group *shm,
                                      xdev_communicator_t *out);

#endif
