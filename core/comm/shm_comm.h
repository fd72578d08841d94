/* SPDX-License-Identifier: Apache-2.0 */
/* shm_comm.h - the "shm" transport (xdev/transport.h): communicator ranks
 * of a host-memory backend in several processes of one host, through POSIX
 * shared memory (shm_comm.c). Built in, unlike the transports of
 * transports/, which the core loads as modules (transport.c). */
#ifndef XDEV_CORE_SHM_COMM_H
#define XDEV_CORE_SHM_COMM_H

#include "xdev/transport.h"

typedef struct xdev_shm_group xdev_shm_group_t;

extern const xdev_transport_t xdev_shm_transport;

#endif
