/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/transport.h - the ABI of a communicator transport: how the ranks of
 * a host-memory backend (the CPU) in several processes meet and exchange
 * data.
 *
 * Two ship with xdev: "shm", POSIX shared memory among processes of one
 * host (built into libxdev), and "mpi", MPI between processes on any hosts
 * started by mpirun or srun (the module libxdevcomm-mpi.so, built where
 * CMake finds MPI; transports/mpi/). A module is a shared library
 * libxdevcomm-<name>.so, looked for where backend plugins are
 * (XDEV_PLUGIN_PATH, beside libxdev, its xdev/ folder, the install libdir),
 * that exports XDEV_TRANSPORT_ENTRY_SYMBOL returning its table. The core
 * loads it on first use (XDEV_HOST_COMM picks the transport:
 * docs/configuration.md).
 *
 * The core has checked every argument before a slot is called: the buffers
 * are host-addressable and large enough, the dtype and op are supported,
 * a root or peer is a rank of the group. Slots never abort, exit or print;
 * a failure returns its status and writes why into err (NUL-terminated,
 * errlen bytes). */
#ifndef XDEV_TRANSPORT_H
#define XDEV_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "xdev/backend.h"
#include "xdev/communicator.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XDEV_TRANSPORT_ABI 1u
#define XDEV_TRANSPORT_ENTRY_SYMBOL "xdev_transport_entry"
/* The transport's part of a communicator id (xdev_communicator_id_t). */
#define XDEV_TRANSPORT_ID_BYTES 128
/* A transport's name, with its NUL, fits in this many bytes. */
#define XDEV_TRANSPORT_NAME_BYTES 16

/* flags: the processes its own launcher started meet without an id handed
 * round: xdev_communicator_init_env gives join, on every rank, an id that
 * is all zeros but for the call's number (a uint64_t at its start: the
 * process's first init_env is 0, the next 1, ...). MPI's world. */
#define XDEV_TRANSPORT_SELF_MEET 1u

/* What the core gives a group when it joins. */
typedef struct xdev_transport_join {
    size_t size;                               /* sizeof(xdev_transport_join_t) */
    unsigned char id[XDEV_TRANSPORT_ID_BYTES]; /* from the transport's unique_id */
    int nranks;                                /* the group's size, >= 1 */
    int rank;                                  /* this process's rank, < nranks */
    int timeout_s;        /* XDEV_COMM_TIMEOUT: the longest any wait may take */
    const char *launcher; /* "openmpi", "torchrun", ... or NULL */
} xdev_transport_join_t;

typedef struct xdev_transport {
    size_t size;      /* sizeof(xdev_transport_t) */
    uint32_t abi;     /* XDEV_TRANSPORT_ABI */
    const char *name; /* "shm", "mpi": the module's <name> */
    uint32_t flags;   /* XDEV_TRANSPORT_SELF_MEET */
    /* A new group's id (every rank is given the same bytes). */
    xdev_status_t (*unique_id)(unsigned char id[XDEV_TRANSPORT_ID_BYTES], char *err, size_t errlen);
    /* Join the group, returning once every rank has joined (or failing
     * after j->timeout_s seconds, naming who did not come). */
    xdev_status_t (*join)(const xdev_transport_join_t *j, void **group, char *err, size_t errlen);
    /* This rank's part of d. Collectives run in the order of seq (0, 1,
     * ... per group); a send or recv is the seq-th between this rank and
     * d->root in that direction. A send never waits for its recv (the data
     * is taken at once); a recv whose count or dtype differ from its send's
     * fails, writing nothing. Called from the rank's stream thread, possibly
     * from several threads at once (one per stream). */
    xdev_status_t (*run)(void *group, const xdev_collective_desc_t *d, uint64_t seq, char *err,
                         size_t errlen);
    /* Make every call waiting in the group, and every later one, fail. */
    void (*abort)(void *group);
    /* This rank leaves; its calls have all returned. */
    void (*leave)(void *group);
} xdev_transport_t;

typedef const xdev_transport_t *(*xdev_transport_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
