/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/communicator.h - communicators and the collectives data-parallel
 * training is built on (NCCL's model): all_reduce, all_gather,
 * reduce_scatter, broadcast, reduce, send/recv, group calls.
 *
 * A communicator (xdev_communicator_t, its calls xdev_communicator_*) is one
 * rank of a group of ranks, each on its own device; the collectives keep
 * torch.distributed's names (xdev_all_reduce ...).
 * xdev_communicator_init_all makes the ranks of a group over devices of this
 * process (rank i on devices[i]). Every rank calls the same collectives in
 * the same order with matching counts, dtypes, operations and roots (NCCL's
 * contract): a collective is enqueued on the rank's stream (NULL: the
 * current stream of the rank's device) and the call returns without
 * waiting; the result is ready for work queued after it on that stream.
 * What is checked at the call (buffers on the rank's device and large
 * enough, dtype, operation, root and peer in range, stream on the device)
 * fails the call; what only the ranks together can see (a rank asked for a
 * different count, dtype, operation or root than another) fails the
 * collective: no rank's output is written, and xdev_communicator_check reports it
 * on every rank.
 *
 * Buffers: sendbuf and recvbuf may be the same (in place); otherwise they
 * must not overlap (XDEV_ERROR_INVALID_VALUE). all_gather's recvbuf holds
 * nranks x count elements (rank k's part at k x count) and its in-place
 * form is sendbuf = recvbuf + rank x count; reduce_scatter's sendbuf holds
 * nranks x count (the part for rank k at k x count) and its in-place form
 * is recvbuf = sendbuf + rank x count; any other overlap is refused. Reductions: f16, bf16, f32,
 * f64, i32, i64 (sum, prod, min, max, avg; f16/bf16 accumulate in float and round once; avg of
 * integers truncates); data movement (broadcast, all_gather, send, recv): any dtype.
 *
 * Backends. CPU (devices are host memory, e.g. XDEV_CPU_DEVICES=4): each
 * rank's part runs as a host function on its stream's worker; the ranks of
 * a collective meet there and the last to arrive computes every rank's
 * result, so collectives of different devices run concurrently and each is
 * ordered on its stream. A send is copied aside when its stream reaches it
 * and the matching recv takes it, so send/recv pairs need no group; the
 * agreement checks and abort above are this implementation's. CUDA: NCCL,
 * opened at run time (XDEV_NCCL_PATH, else libnccl.so.2; not found: init
 * says so and where it looked); a thread that issues the calls of several
 * ranks must put them in a group (xdev_group_start/end), as NCCL requires,
 * and ranks that disagree are NCCL's undefined behaviour. HIP: the same
 * over RCCL (librccl.so.1, XDEV_RCCL_PATH) where the plugin was built with
 * rccl/rccl.h (ROCm's package; not in Debian 12: no communicators there).
 * Ranks in several processes (xdev_communicator_unique_id, xdev_communicator_init_rank):
 * CUDA through NCCL; the CPU backend through POSIX shared memory (the id
 * names the object; each collective moves through 1 MiB staging slots per
 * rank; ranks that disagree are reported as above, and so are ranks told
 * different nranks, at once, by xdev_communicator_init_rank on every rank; nothing
 * is locked across processes, so a process killed at any point hangs no
 * other: a rank waiting for a peer whose process died (or that destroyed
 * its rank) aborts the group within a fraction of a second, naming it -
 * same pid namespace; otherwise a rank that does not arrive within
 * XDEV_COMM_TIMEOUT seconds, default 120, aborts it; a send is a shared-memory object
 * of its own, made without waiting for the receiver, so every rank may send
 * before it receives - it holds /dev/shm pages until its recv runs, and a
 * full /dev/shm fails it (XDEV_ERROR_OUT_OF_MEMORY from xdev_communicator_check);
 * a recv whose count or dtype differs from its send writes nothing and is
 * reported by the receiving rank's xdev_communicator_check; the last rank to
 * leave - or to survive, when a peer died - removes the group's objects
 * from /dev/shm; they stay only if every rank dies). */
#ifndef XDEV_COMMUNICATOR_H
#define XDEV_COMMUNICATOR_H

#include <stddef.h>

#include "xdev/device.h"
#include "xdev/dtype.h"
#include "xdev/error.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xdev_communicator *xdev_communicator_t;

typedef enum xdev_reduce_op {
    XDEV_REDUCE_SUM = 0,
    XDEV_REDUCE_PROD = 1,
    XDEV_REDUCE_MIN = 2,
    XDEV_REDUCE_MAX = 3,
    XDEV_REDUCE_AVG = 4,
} xdev_reduce_op_t;

/* n communicators, comms[i] the rank i of n on devices[i] (distinct
 * devices of one type; 1 <= n <= 64). On failure no communicator is made. */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_init_all(xdev_communicator_t *comms, int n,
                                                              const xdev_device_t *devices);

/* A group of ranks in several processes (NCCL's model): one process makes
 * the id and passes its bytes to every other (the launcher's job: a file,
 * an environment variable, MPI); each process then makes its rank. */
#define XDEV_COMMUNICATOR_ID_BYTES 160
typedef struct xdev_communicator_id {
    unsigned char bytes[XDEV_COMMUNICATOR_ID_BYTES];
} xdev_communicator_id_t;

/* A new group's id for devices of `type`. */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_unique_id(xdev_device_type_t type,
                                                               xdev_communicator_id_t *id);

/* This process's rank `rank` of `nranks` on `device`, in the group `id`
 * names; returns once every rank has joined (NCCL's ncclCommInitRank). The
 * id's device type must be the device's. */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_init_rank(xdev_communicator_t *comm,
                                                               int nranks,
                                                               const xdev_communicator_id_t *id,
                                                               int rank, xdev_device_t device);

/* What the launcher that started this process told it. */
typedef struct xdev_launch_info {
    const char *launcher;  /* "torchrun", "openmpi", "mpich" or "slurm" */
    int rank, world_size;  /* RANK and WORLD_SIZE, or the launcher's names for them */
    int local_rank;        /* among the ranks on this host; -1 when not told */
    int local_world_size;  /* ranks on this host; -1 when not told */
    char master_addr[256]; /* MASTER_ADDR, or "" */
    int master_port;       /* MASTER_PORT, or 0 */
} xdev_launch_info_t;

/* Read the launcher's variables, first found of: torchrun (RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), Open MPI's mpirun
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE), MPICH/Hydra
 * (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS), Slurm's srun
 * (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID); MASTER_ADDR and MASTER_PORT
 * with any of them. XDEV_ERROR_NOT_FOUND when none is set; XDEV_ERROR_ENV
 * naming a variable that is not a number or a rank not below the size. */
XDEV_API XDEV_RESULT xdev_status_t xdev_launch_info(xdev_launch_info_t *out);

/* This process's rank of the group its launcher started (torchrun, mpirun,
 * srun: xdev_launch_info), on devices of `type`: device local_rank modulo
 * the devices of that type here (the rank when the launcher gives no local
 * rank). Rank 0 makes the group's id and hands it to the others over TCP:
 * it listens at XDEV_RENDEZVOUS_ADDR:XDEV_RENDEZVOUS_PORT, else at
 * MASTER_ADDR:MASTER_PORT+1 (torchrun's own store holds MASTER_PORT), else,
 * when every rank runs on this host (mpirun, srun on one node), on
 * 127.0.0.1 at a port derived from the job's id; the others connect,
 * retrying until rank 0 is up. Then xdev_communicator_init_rank. A rank
 * that never comes makes the others fail once XDEV_COMM_TIMEOUT seconds
 * (default 120) have passed since the call, XDEV_ERROR_IO naming it; ranks
 * that disagree on the world size or device type fail, every one of them
 * (the one that disagrees at once, the others once all have come or at the
 * timeout), with XDEV_ERROR_INVALID_VALUE naming both sizes or types, and
 * a rank of another job (its job id differs) reaching the port with
 * XDEV_ERROR_INVALID_VALUE saying so. Rank 0 serves every connection at
 * once, each with its own deadline: other clients of the port (scanners,
 * health checks, junk) delay no rank.
 *
 * Backend ranks (NCCL) are watched (docs/collectives.md): a collective
 * still running after XDEV_COMM_TIMEOUT seconds (default 600 for them)
 * aborts the group, and the waiting call, xdev_communicator_check and
 * every later call fail with XDEV_ERROR_IO saying so. */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_init_env(xdev_communicator_t *comm,
                                                              xdev_device_type_t type);

/* Free a rank, after its queued collectives have run (it waits for them:
 * xdev_communicator_abort first when a peer will never join). A destroyed
 * communicator is an invalid handle to every call. */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_destroy(xdev_communicator_t comm);

/* Stop the whole group: collectives waiting for a peer return without
 * writing; later calls on any of its ranks fail. Destroy the ranks after. */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_abort(xdev_communicator_t comm);

/* The group's asynchronous error: XDEV_SUCCESS, or the status and message
 * of the first collective the ranks disagreed on (or the abort). */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_check(xdev_communicator_t comm);

XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_rank(xdev_communicator_t comm, int *rank);
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_size(xdev_communicator_t comm, int *nranks);
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_device(xdev_communicator_t comm,
                                                            xdev_device_t *device);

/* What carries the rank's collectives (a static string): the backend's
 * name for its own communicators ("cuda": NCCL; "hip": RCCL), "local" for
 * host-memory ranks of one process (xdev_communicator_init_all on the CPU),
 * else the transport of host-memory ranks in several processes: "shm"
 * (shared memory, one host) or "mpi" (docs/scale.md). */
XDEV_API XDEV_RESULT xdev_status_t xdev_communicator_engine(xdev_communicator_t comm,
                                                            const char **name);

/* recvbuf = op over every rank's sendbuf (count elements). */
XDEV_API XDEV_RESULT xdev_status_t xdev_all_reduce(xdev_communicator_t comm, const void *sendbuf,
                                                   void *recvbuf, size_t count, xdev_dtype_t dtype,
                                                   xdev_reduce_op_t op, xdev_stream_t stream);
/* recvbuf = root's sendbuf on every rank (sendbuf is read on root only and
 * may be NULL elsewhere). */
XDEV_API XDEV_RESULT xdev_status_t xdev_broadcast(xdev_communicator_t comm, const void *sendbuf,
                                                  void *recvbuf, size_t count, xdev_dtype_t dtype,
                                                  int root, xdev_stream_t stream);
/* root's recvbuf = op over every rank's sendbuf (recvbuf may be NULL off
 * root). */
XDEV_API XDEV_RESULT xdev_status_t xdev_reduce(xdev_communicator_t comm, const void *sendbuf,
                                               void *recvbuf, size_t count, xdev_dtype_t dtype,
                                               xdev_reduce_op_t op, int root, xdev_stream_t stream);
/* recvbuf[k x count ...] = rank k's sendbuf (count elements each). */
XDEV_API XDEV_RESULT xdev_status_t xdev_all_gather(xdev_communicator_t comm, const void *sendbuf,
                                                   void *recvbuf, size_t count, xdev_dtype_t dtype,
                                                   xdev_stream_t stream);
/* recvbuf = op over every rank's sendbuf[rank x count ...] (count elements). */
XDEV_API XDEV_RESULT xdev_status_t xdev_reduce_scatter(xdev_communicator_t comm,
                                                       const void *sendbuf, void *recvbuf,
                                                       size_t count, xdev_dtype_t dtype,
                                                       xdev_reduce_op_t op, xdev_stream_t stream);
/* Point to point: the n-th send from rank a to rank b meets the n-th recv on
 * b from a, which must name the same count and dtype. */
XDEV_API XDEV_RESULT xdev_status_t xdev_send(xdev_communicator_t comm, const void *sendbuf,
                                             size_t count, xdev_dtype_t dtype, int peer,
                                             xdev_stream_t stream);
XDEV_API XDEV_RESULT xdev_status_t xdev_recv(xdev_communicator_t comm, void *recvbuf, size_t count,
                                             xdev_dtype_t dtype, int peer, xdev_stream_t stream);

/* Group calls (ncclGroupStart/End): the operations issued by this thread in
 * between form one group. Nesting is allowed; group_end without start is an
 * error. On CUDA (NCCL) a group's collectives are enqueued on their streams
 * at the outermost group_end, so other work the thread enqueues on those
 * streams inside the group runs before them: put only collectives in a
 * group. On the CPU backend operations are enqueued as issued (nothing
 * there needs fusing), so a group only brackets them. */
XDEV_API XDEV_RESULT xdev_status_t xdev_group_start(void);
XDEV_API XDEV_RESULT xdev_status_t xdev_group_end(void);

/* ------------------------------------------------------------ Deprecated names
 * The communicator's old names, xdev_comm_* (a prefix that now means only
 * torch.cuda.comm's functions, xdev/comm.h), kept as macros that cost
 * nothing until the next major version (the rule: xdev/xdev.h). Source
 * compatible; a program built against them must be rebuilt, since the
 * library exports only the new symbols. Do not use them in new code. */
#define xdev_comm_t xdev_communicator_t
#define xdev_comm_id_t xdev_communicator_id_t
#define XDEV_COMM_ID_BYTES XDEV_COMMUNICATOR_ID_BYTES
#define xdev_comm_init_all xdev_communicator_init_all
#define xdev_comm_unique_id xdev_communicator_unique_id
#define xdev_comm_init_rank xdev_communicator_init_rank
#define xdev_comm_destroy xdev_communicator_destroy
#define xdev_comm_abort xdev_communicator_abort
#define xdev_comm_check xdev_communicator_check
#define xdev_comm_rank xdev_communicator_rank
#define xdev_comm_size xdev_communicator_size
#define xdev_comm_device xdev_communicator_device

#ifdef __cplusplus
}
#endif
#endif
