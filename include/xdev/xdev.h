/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/xdev.h - the whole public API of xdev, a portable device runtime.
 *
 * Names - one rule for every public name:
 * - torch's name where torch has one, its module path dropped:
 *   xdev_synchronize (torch.cuda.synchronize), xdev_memory_allocated,
 *   xdev_comm_broadcast (torch.cuda.comm.broadcast), xdev_all_reduce
 *   (torch.distributed.all_reduce); xdev_malloc / xdev_free stand for
 *   torch.cuda.caching_allocator_alloc / _delete.
 * - otherwise xdev_<object>_<verb>: xdev_stream_create, xdev_event_record,
 *   xdev_communicator_init_rank, xdev_communicator_rank (a query: the noun).
 * - arguments: the object first, then inputs, outputs (results returned
 *   through pointers) last; a buffer the call fills keeps its capacity
 *   beside it (buf, len), and a call that mirrors a C, CUDA or NCCL function
 *   keeps that function's order (xdev_malloc(&p, n) as cudaMalloc,
 *   xdev_memcpy(dst, src, n) as memcpy, xdev_communicator_init_rank(&comm,
 *   ...) as ncclCommInitRank). Every function returns xdev_status_t.
 * - types xdev_<object>_t; macros and enum values XDEV_<OBJECT>_<NAME>
 *   (XDEV_STREAM_PRIORITY_HIGH, XDEV_MEMORY_HISTORY_ALLOC).
 * - every name a header exports starts with xdev_ or XDEV_, the installed
 *   support headers' too (xdev_philox_*, xdev_cvt_*, xdev_f32_to_f16), but
 *   for xdev/dlpack.h, which declares DLPack's own names (DLTensor, kDLCPU).
 * So xdev_comm_* is torch.cuda.comm's functions only (xdev/comm.h), and the
 * communicator object is xdev_communicator_* (xdev/communicator.h).
 *
 * Deprecated names, kept as macros (no cost, source compatible; a program
 * built against an old function name must be rebuilt: the library exports
 * only the new symbol) until the next major version, each marked
 * "Deprecated" in its header:
 * - xdev_comm_t, xdev_comm_id_t, XDEV_COMM_ID_BYTES, xdev_comm_init_all,
 *   _init_rank, _unique_id, _destroy, _abort, _check, _rank, _size, _device
 *   -> xdev_communicator_t, ..., XDEV_COMMUNICATOR_ID_BYTES,
 *   xdev_communicator_init_all, ... (xdev/communicator.h);
 * - XDEV_TRACE_ALLOC, _FREE_REQUESTED, _FREE_COMPLETED, _SEGMENT_ALLOC,
 *   _SEGMENT_FREE, _OOM, xdev_memory_trace_action_t, _entry_t (the
 *   allocator's history, not xdev/trace.h) -> XDEV_MEMORY_HISTORY_*,
 *   xdev_memory_history_action_t, _entry_t (xdev/allocator.h);
 * - xph_*, XPH_* -> xdev_philox_*, XDEV_PHILOX_* (xph_philox4x32_10 ->
 *   xdev_philox4x32_10) (xdev/support/philox.h);
 * - xcv_*, XCV_FN -> xdev_cvt_*, XDEV_CVT_FN (xdev/support/convert.h);
 * - XDEV_DEVICE_TYPE_COUNT -> XDEV_MAX_DEVICE_TYPES (xdev/device.h). */
#ifndef XDEV_XDEV_H
#define XDEV_XDEV_H

#include "xdev/error.h"
#include "xdev/check.h"
#include "xdev/device.h"
#include "xdev/runtime.h"
#include "xdev/stream.h"
#include "xdev/event.h"
#include "xdev/memory.h"
#include "xdev/allocator.h"
#include "xdev/memviz.h"
#include "xdev/comm.h"
#include "xdev/communicator.h"
#include "xdev/trace.h"
#include "xdev/sanitizer.h"
#include "xdev/shadow.h"
#include "xdev/ipc.h"
#include "xdev/system.h"
#include "xdev/blas.h"
#include "xdev/fft.h"
#include "xdev/rng.h"
#include "xdev/dtype.h"
#include "xdev/ops.h"
#include "xdev/primitives.h"
#include "xdev/kernel.h"
#include "xdev/mempool.h"
#include "xdev/graph.h"
#include "xdev/interop.h"

#endif
