/* SPDX-License-Identifier: Apache-2.0 */
/* comm_checks.c - the argument checks of the communicator calls
 * (xdev/communicator.h), made before anything is queued, so that a bad
 * call fails at once and writes nothing: dtype, reduction op, root and peer
 * ranks, each buffer (live device memory of the rank's device, large
 * enough: comm_buffers.c), the in-place and overlap rules of each
 * collective, and the stream. The same checks serve every route
 * (communicator.c): backend communicators, shared memory, the host engine.
 * Errors are XDEV_FAIL's; the public call that was made blames them. */
#include <stdint.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "comm/comm_record.h"
#include "comm/host_reduce.h"
#include "runtime/device_record.h"
#include "runtime/stream_internal.h"

/* buf must be live device memory of the rank's device holding `bytes`. */
static xdev_status_t rank_buffer(xdev_communicator_t c, const void *buf, size_t bytes,
                                 const char *arg) {
    xdev_device_record_t *rec;
    xdev_status_t st = xdev_comm_buffer_device(buf, bytes, arg, -1, &rec);
    if (st == XDEV_SUCCESS && rec != c->rec)
        st = XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                       "%s (%p) is on " XDEV_REC_FMT " but rank %d's device is " XDEV_REC_FMT, arg,
                       buf, XDEV_REC_ARGS(rec), c->rank, XDEV_REC_ARGS(c->rec));
    return st;
}

static bool overlap(const void *a, size_t n, const void *b, size_t m) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return n > 0 && m > 0 && x < y + m && y < x + n;
}

static xdev_status_t check_reduce_args(xdev_dtype_t dtype, xdev_reduce_op_t op) {
    if ((unsigned)op > XDEV_REDUCE_AVG)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "unknown reduction op %d", (int)op);
    if (!xdev_host_reduce_supports(dtype))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "dtype %s cannot be reduced (f16, bf16, f32, f64, i32, i64)",
                         xdev_dtype_name(dtype));
    return XDEV_SUCCESS;
}

static xdev_status_t check_dtype(xdev_dtype_t dtype) {
    if ((unsigned)dtype >= XDEV_DTYPE_COUNT)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "unknown dtype %d", (int)dtype);
    return XDEV_SUCCESS;
}

static xdev_status_t check_rank(xdev_communicator_t c, int r, const char *what) {
    if (r < 0 || r >= c->g->nranks)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s %d is not a rank of 0..%d", what, r,
                         c->g->nranks - 1);
    return XDEV_SUCCESS;
}

/* count x dtype bytes, times `parts`, without overflow. */
static xdev_status_t span(size_t count, xdev_dtype_t dtype, size_t parts, size_t *out) {
    size_t e = xdev_dtype_size(dtype);
    if (count > SIZE_MAX / e / parts)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "count %zu overflows the buffer size", count);
    *out = count * e * parts;
    return XDEV_SUCCESS;
}

/* The send/recv buffers of a collective: send_parts and recv_parts are the
 * buffers' sizes in units of count elements. */
static xdev_status_t buffers(xdev_communicator_t c, const void *send, size_t send_parts, void *recv,
                             size_t recv_parts, size_t count, xdev_dtype_t dtype) {
    size_t sb = 0, rb = 0;
    xdev_status_t st = XDEV_SUCCESS;
    if (send_parts > 0) st = span(count, dtype, send_parts, &sb);
    if (st == XDEV_SUCCESS && recv_parts > 0) st = span(count, dtype, recv_parts, &rb);
    if (st == XDEV_SUCCESS && send_parts > 0) st = rank_buffer(c, send, sb, "sendbuf");
    if (st == XDEV_SUCCESS && recv_parts > 0) st = rank_buffer(c, recv, rb, "recvbuf");
    if (st == XDEV_SUCCESS && send_parts > 0 && recv_parts > 0 && send != recv &&
        overlap(send, sb, recv, rb))
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "sendbuf and recvbuf overlap without being the same buffer");
    return st;
}

xdev_status_t xdev_communicator_check_collective(xdev_communicator_t comm, kind_t kind,
                                                 const void *send, void *recv, size_t count,
                                                 xdev_dtype_t dtype, xdev_reduce_op_t op,
                                                 int root) {
    xdev_status_t st = check_dtype(dtype);
    if (st != XDEV_SUCCESS) return st;
    int n = comm->g->nranks;
    if (kind_reduces(kind)) st = check_reduce_args(dtype, op);
    if (st == XDEV_SUCCESS && (kind == K_BROADCAST || kind == K_REDUCE))
        st = check_rank(comm, root, "root");
    if (st != XDEV_SUCCESS) return st;
    bool is_root = comm->rank == root;
    size_t part = count * xdev_dtype_size(dtype); /* used once buffers() passed: no overflow */
    switch (kind) {
    case K_ALL_REDUCE:
        st = buffers(comm, send, 1, recv, 1, count, dtype);
        break;
    case K_BROADCAST:
        st = buffers(comm, send, is_root ? 1 : 0, recv, 1, count, dtype);
        break;
    case K_REDUCE:
        st = buffers(comm, send, 1, recv, is_root ? 1 : 0, count, dtype);
        break;
    case K_ALL_GATHER: /* in place: sendbuf is this rank's part of recvbuf */
        st = buffers(comm, NULL, 0, recv, (size_t)n, count, dtype);
        if (st == XDEV_SUCCESS) st = rank_buffer(comm, send, part, "sendbuf");
        if (st == XDEV_SUCCESS && send != (char *)recv + (size_t)comm->rank * part &&
            overlap(send, part, recv, (size_t)n * part))
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "sendbuf overlaps recvbuf other than as this rank's part of it");
        break;
    case K_REDUCE_SCATTER: /* in place: recvbuf is this rank's part of sendbuf */
        st = buffers(comm, send, (size_t)n, NULL, 0, count, dtype);
        if (st == XDEV_SUCCESS) st = rank_buffer(comm, recv, part, "recvbuf");
        if (st == XDEV_SUCCESS && recv != (const char *)send + (size_t)comm->rank * part &&
            overlap(recv, part, send, (size_t)n * part))
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "recvbuf overlaps sendbuf other than as this rank's part of it "
                           "(sendbuf + rank * count elements, the in-place position)");
        break;
    }
    return st;
}

xdev_status_t xdev_communicator_check_p2p(xdev_communicator_t comm, bool is_send, const void *buf,
                                          size_t count, xdev_dtype_t dtype, int peer) {
    xdev_status_t st = check_dtype(dtype);
    if (st == XDEV_SUCCESS) st = check_rank(comm, peer, "peer");
    if (st == XDEV_SUCCESS && peer == comm->rank)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "peer %d is this rank itself", peer);
    size_t bytes = 0;
    if (st == XDEV_SUCCESS) st = span(count, dtype, 1, &bytes);
    if (st == XDEV_SUCCESS) st = rank_buffer(comm, buf, bytes, is_send ? "sendbuf" : "recvbuf");
    return st;
}

/* The stream a rank's task goes on: `stream`, which must be on the rank's
 * device, or the device's current stream. */
xdev_status_t xdev_communicator_rank_stream(xdev_communicator_t c, xdev_stream_t *stream) {
    if (*stream == NULL) return xdev_core_current_stream(c->rec, stream);
    xdev_status_t st = xdev_stream_check(*stream, "stream");
    if (st != XDEV_SUCCESS) return st;
    if ((*stream)->rec != c->rec)
        return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                         "stream is on " XDEV_REC_FMT " but rank %d's device is " XDEV_REC_FMT,
                         XDEV_REC_ARGS((*stream)->rec), c->rank, XDEV_REC_ARGS(c->rec));
    return XDEV_SUCCESS;
}
