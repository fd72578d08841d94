/* comm_internal.h - what the communicators' files share
 * (communicator.c: the communicator itself; comm_procs.c: ranks of other
 * processes). */
#ifndef XDEV_CORE_COMM_INTERNAL_H
#define XDEV_CORE_COMM_INTERNAL_H

#include "runtime/registry.h"
#include "xdev/communicator.h"

/* The device of `p`, which must be live xdev device memory holding n bytes;
 * errors name the argument (arg, index i; i < 0: no index). Shared by
 * torch.cuda.comm's functions (local_comm.c) and the communicators. */
xdev_status_t xdev_comm_buffer_device(const void *p, size_t n, const char *arg, int i,
                                      xdev_device_record_t **rec);

/* A group over recs[0..n) (n >= 2, distinct devices of one backend with
 * native communicators), made at its first use and kept (comm_cache.c):
 * true with *comms = its n ranks in order, locked for the caller until
 * xdev_comm_cache_put (failed: the call failed, do not use the group
 * again); false when the backend has none or the group could not be made
 * or is broken (the caller falls back; the error state is untouched). */
bool xdev_comm_cache_get(xdev_device_record_t *const *recs, int n, xdev_comm_t **comms);
void xdev_comm_cache_put(xdev_comm_t *comms, bool failed);

struct xdev_shm_group;

/* A communicator around a backend rank `native` (rank of nranks, on rec;
 * be its backend) or, for host-memory backends, a shared-memory group `shm`
 * (be NULL): the only rank of its group in this process; registered as
 * live. */
xdev_status_t xdev_comm_adopt(xdev_backend_t *be, xdev_device_record_t *rec, int nranks, int rank,
                              void *native, struct xdev_shm_group *shm, xdev_comm_t *out);

#endif
