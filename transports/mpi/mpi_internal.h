/* SPDX-License-Identifier: Apache-2.0 */
/* mpi_internal.h - what the MPI transport's files share: a group (one
 * rank's view of an MPI communicator made for an xdev group), the calls
 * that post and wait for MPI requests, and the sends still in flight.
 *
 *   mpi_transport.c  the table, MPI's start and end, join, leave, abort,
 *                    waiting with a deadline, naming a dead rank
 *   mpi_ops.c        one collective, send or recv as MPI requests
 *   mpi_sends.c      sends that outlive their call, and the thread that
 *                    keeps them moving */
#ifndef XDEV_MPI_INTERNAL_H
#define XDEV_MPI_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "xdev/transport.h"

typedef struct mpi_group {
    MPI_Comm comm;
    int nranks, rank, timeout_s;
    pthread_mutex_t m; /* the turns below */
    pthread_cond_t cv;
    uint64_t next_coll;  /* the collective whose turn it is to be posted */
    uint64_t *send_turn; /* per peer: the send whose turn it is */
    uint64_t *recv_turn; /* per peer: the recv whose turn it is */
    _Atomic bool aborted;
    char why[256];  /* why it was aborted (under m) */
    long *pid;      /* each rank's process id */
    uint64_t *host; /* and a hash of its host's name */
} mpi_group_t;

/* Around every MPI call of the transport: one thread in MPI at a time.
 * Each call is short (a post or a test), and this keeps the transport
 * within what every MPI library does well, whatever thread level it gives
 * (with less than MPI_THREAD_MULTIPLE the program's own MPI calls must not
 * overlap xdev's collectives: docs/scale.md). */
void xm_lock(void);
void xm_unlock(void);

/* Now, in milliseconds (CLOCK_MONOTONIC). */
long long xm_now_ms(void);

/* Wait for reqs[0..n) until deadline_ms: XDEV_SUCCESS, or a failure
 * described in err (`what` names the call; the group is aborted: MPI
 * cannot take back a request that never completes). */
xdev_status_t xm_wait(mpi_group_t *g, MPI_Request *reqs, int n, long long deadline_ms,
                      const char *what, char *err, size_t errlen);
/* An MPI call's failure (rc) as a status and message; aborts the group. */
xdev_status_t xm_fail(mpi_group_t *g, int rc, const char *what, char *err, size_t errlen);
/* Mark g aborted with reason `why` (the first reason stays). */
void xm_abort(mpi_group_t *g, const char *why);

/* Wait until *turn == seq; false at the deadline or abort. */
bool xm_take_turn(mpi_group_t *g, const uint64_t *turn, uint64_t seq, long long deadline_ms);
/* A turn not had: the group's abort reason, or (the deadline passed) a
 * message naming the `before` ("collective", "send") that never started;
 * the group is then aborted. */
xdev_status_t xm_turn_failed(mpi_group_t *g, const char *what, const char *before, char *err,
                             size_t errlen);
/* *turn moves on and waiters are woken. */
void xm_pass_turn(mpi_group_t *g, uint64_t *turn);

/* fmin or fmax over float and double, as an MPI op (a NaN loses to a
 * number, as in xdev's other engines; MPI_MIN compares with <). */
MPI_Op xm_float_op(bool max);

/* The call's name ("xdev_all_reduce") for messages. */
const char *xm_kind_name(xdev_collective_kind_t kind);

/* This rank's part of collective d (mpi_ops.c). */
xdev_status_t xm_collective(mpi_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                            char *err, size_t errlen);
/* A send (returns once the data is copied and posted) or a recv. */
xdev_status_t xm_send(mpi_group_t *g, const xdev_collective_desc_t *d, uint64_t seq, char *err,
                      size_t errlen);
xdev_status_t xm_recv(mpi_group_t *g, const xdev_collective_desc_t *d, uint64_t seq, char *err,
                      size_t errlen);

/* Sends in flight (mpi_sends.c): reqs[0..n) own buf until they complete;
 * a thread keeps MPI moving them on meanwhile (with MPI_THREAD_MULTIPLE;
 * otherwise the next transport call does). */
xdev_status_t xm_sends_add(MPI_Request *reqs, int n, void *buf, char *err, size_t errlen);
/* Complete what can be completed now. */
void xm_sends_poll(void);
/* Wait up to deadline_ms for every send in flight; false if some remain. */
bool xm_sends_drain(long long deadline_ms);
/* Wait up to deadline_ms until the thread has nothing left and has ended
 * (after a drain); false if it still runs. */
bool xm_sends_quiesce(long long deadline_ms);
/* Stop the thread for good (before MPI_Finalize). */
void xm_sends_stop(void);

#endif
