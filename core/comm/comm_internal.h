/* comm_internal.h - what the communicators' files share
 * (communicator.c: the communicator itself; comm_procs.c: ranks of other
 * processes). */
#ifndef XDEV_CORE_COMM_INTERNAL_H
#define XDEV_CORE_COMM_INTERNAL_H

#include "runtime/registry.h"
#include "xdev/communicator.h"

/* A communicator around a backend rank `native` (rank of nranks, on rec),
 * the only rank of its group in this process; registered as live. */
xdev_status_t xdev_comm_adopt(xdev_backend_t *be, xdev_device_record_t *rec, int nranks, int rank,
                              void *native, xdev_comm_t *out);

#endif
