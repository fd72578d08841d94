/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/comm.h - torch.cuda.comm over devices of one process: broadcast,
 * broadcast_coalesced, reduce_add, scatter, gather.
 *
 * C has no tensors to return, so the caller allocates the outputs
 * (xdev_malloc_device on each device) and passes them: the device of each
 * buffer is the device its memory belongs to. All buffers are xdev device
 * memory of one device type; buffers that must be on distinct devices say
 * so below. Stream semantics are torch's cross-device copy's: each piece is
 * ordered after the work queued so far on the current streams of both
 * devices involved (or the streams given), runs without the host waiting,
 * and the current stream of each output's device is ordered after it - so
 * work queued afterwards on those streams sees the results. Nothing waits
 * on the host: the call returns once everything is enqueued.
 *
 * On the CPU backend (XDEV_CPU_DEVICES=4 makes four devices) the copies run
 * on the devices' stream workers; on CUDA they are peer copies (staged by
 * the driver where peer access is off). xdev_comm_* names only these
 * torch.cuda.comm functions; communicators (xdev_communicator_*) and their
 * collectives (xdev_all_reduce, ...) are in xdev/communicator.h. */
#ifndef XDEV_COMM_H
#define XDEV_COMM_H

#include <stddef.h>

#include "xdev/dtype.h"
#include "xdev/error.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.cuda.comm.broadcast: `bytes` of src to each of dsts[0..n), which are
 * on distinct devices (src's own device may be among them: a dst equal to
 * src is left as is). */
XDEV_API XDEV_RESULT xdev_status_t xdev_comm_broadcast(const void *src, size_t bytes,
                                                       void *const *dsts, int n);

/* torch.cuda.comm.broadcast_coalesced: nbuf buffers srcs[j] of sizes[j]
 * bytes, all on one device, to ndev devices: dsts[d * nbuf + j] is buffer j
 * on destination d (destinations on distinct devices; no two outputs may
 * overlap: XDEV_ERROR_INVALID_VALUE naming both). Buffers smaller than
 * bucket_bytes (0 = 10 MiB, torch's default) travel packed in buckets of up
 * to that size, one device-to-device copy per bucket. */
XDEV_API XDEV_RESULT xdev_status_t xdev_comm_broadcast_coalesced(const void *const *srcs,
                                                                 const size_t *sizes, int nbuf,
                                                                 void *const *dsts, int ndev,
                                                                 size_t bucket_bytes);

/* torch.cuda.comm.reduce_add: dst = the sum of srcs[0..n) (count elements
 * of dtype each; f16, bf16, f32, f64, i32, i64), the sources on distinct
 * devices. dst may be one of the sources (summed in place) or a buffer of
 * its own on any device of the type. The sum is taken on dst's device in
 * torch.cuda.comm.reduce_add's order: the source on dst's device first
 * (dst itself when in place), then the others in source order - in place
 * onto srcs[2] of three, dst = (src2 + src0) + src1 - and with no source
 * on dst's device, src0 + src1 + src2 (f16/bf16 rounded after each add).
 * Where the backend has communicators (CUDA with NCCL) and dst is on one
 * of the sources' devices, the sum is instead one NCCL reduce over the
 * sources, as torch.cuda.comm.reduce_add does: no temporary, full link
 * bandwidth, and NCCL's order of additions (the same bits for two sources;
 * with more, floating sums may differ from source order in the last
 * bits). Its first call over a set of devices makes NCCL communicators for
 * that set (a fraction of a second), kept for the process as torch keeps
 * its own; calls over one set are serialised on the host. */
XDEV_API XDEV_RESULT xdev_status_t xdev_comm_reduce_add(const void *const *srcs, int n, void *dst,
                                                        size_t count, xdev_dtype_t dtype);

/* torch.cuda.comm.scatter: src cut into n chunks, chunk i (chunk_bytes[i]
 * bytes; NULL = `bytes` / n each, which must divide evenly) to dsts[i], the
 * destinations on distinct devices; streams[i] (streams NULL, or an entry
 * NULL = the current stream of dsts[i]'s device) orders chunk i there. The
 * chunks must add up to `bytes`. */
XDEV_API XDEV_RESULT xdev_status_t xdev_comm_scatter(const void *src, size_t bytes,
                                                     void *const *dsts, const size_t *chunk_bytes,
                                                     int n, const xdev_stream_t *streams);

/* torch.cuda.comm.gather: srcs[i] (chunk_bytes[i] bytes; the sources on
 * distinct devices) concatenated in order into dst, which holds their sum. */
XDEV_API XDEV_RESULT xdev_status_t xdev_comm_gather(const void *const *srcs,
                                                    const size_t *chunk_bytes, int n, void *dst);

/* C has no implicit conversion from an array of `void *` (void **) to the
 * `const void *const *` these sources are read through, so these macros
 * take void *[], const void *[] and pointers of either kind without a cast
 * (anything else goes to the function as written, checked by its
 * prototype). C++ converts by itself. `(xdev_comm_gather)(...)` calls the
 * function without the macro. */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define XDEV_CONST_BUFFERS(p)                                                                      \
    _Generic((p),                                                                                  \
        void **: (const void *const *)(p),                                                         \
        void *const *: (const void *const *)(p),                                                   \
        const void **: (const void *const *)(p),                                                   \
        default: (p))
#define xdev_comm_broadcast_coalesced(srcs, ...)                                                   \
    xdev_comm_broadcast_coalesced(XDEV_CONST_BUFFERS(srcs), __VA_ARGS__)
#define xdev_comm_reduce_add(srcs, ...) xdev_comm_reduce_add(XDEV_CONST_BUFFERS(srcs), __VA_ARGS__)
#define xdev_comm_gather(srcs, ...) xdev_comm_gather(XDEV_CONST_BUFFERS(srcs), __VA_ARGS__)
#endif

#ifdef __cplusplus
}
#endif
#endif
