/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/primitives.h - device-wide parallel primitives: the building blocks
 * every algorithm needs (CUB's DeviceReduce/DeviceScan/DeviceRadixSort/...,
 * rocPRIM, Kokkos parallel_reduce/parallel_scan), on every backend.
 *
 * The family (issue 44), one prefix (xdev_prim_: xdev_reduce is the
 * communicator's, torch.distributed.reduce) and one shape for all of them:
 *   xdev_prim_reduce            sum, prod, min, max, argmin, argmax of a buffer
 *   xdev_prim_scan              inclusive / exclusive sum, max, min
 *   xdev_prim_sort_keys         radix sort of keys, ascending or descending, stable
 *   xdev_prim_sort_pairs        the same carrying a value per key
 *   xdev_prim_segmented_reduce  reduce per segment of an offsets array
 *   xdev_prim_segmented_sort    sort per segment
 *   xdev_prim_histogram_even    counts in even bins over [lower, upper)
 *   xdev_prim_select_flagged    compaction of the items whose flag is set
 *   xdev_prim_unique, xdev_prim_run_length_encode   over sorted input
 * This header declares the ones implemented so far (reduce and scan); the
 * others come with the same rules:
 * - stream-ordered like every op: the call checks its arguments, enqueues on
 *   `stream` (NULL: the current stream of the device of `out`, as torch runs
 *   an op on its tensors' device) and returns; results, counts included,
 *   are written to device memory;
 * - every pointer and count is checked against its allocation (a count past
 *   a buffer is XDEV_ERROR_INVALID_VALUE naming the operand, and nothing is
 *   written), buffers must be aligned to their element, and an input and an
 *   output may not overlap unless the call says it works in place;
 * - temporary storage comes from the caching allocator on the call's
 *   stream (a capture's pool in a graph capture): there is no two-call size
 *   query, and a call can be captured in a graph (xdev/graph.h) and replayed;
 * - a backend without the primitives is XDEV_ERROR_NOT_SUPPORTED naming the
 *   backend and the primitive; so is a dtype a primitive does not take.
 *
 * dtypes (xdev/dtype.h): f32, f64, f16, bf16, i32, i64. f16 and bf16
 * accumulate in f32 (as torch does) and round once to the dtype when
 * written; integers wrap (two's complement) on overflow.
 *
 * NaN and signed zeros, as torch: min and max propagate NaN (the result is
 * NaN when any element is NaN; scans: NaN from the first NaN on); argmin
 * and argmax give the index of the first NaN when there is one, else of the
 * first element equal to the extremum (-0 and +0 compare equal, so the first
 * of them wins, and min/max return the value at that index).
 *
 * Deterministic sums (xdev_set_deterministic, XDEV_DETERMINISTIC=1): a
 * floating-point sum is defined by one fixed order of additions that
 * depends on the count alone, so the bits are the same on every run, for
 * every thread count and launch geometry, and on every backend (the CPU
 * and a GPU give the same bits for the same input). With A the
 * accumulation type (f32 for f16/bf16/f32, f64 for f64), z = -0.0 (the
 * exact identity of +) and C = XDEV_PRIM_CHUNK:
 *
 * reduce sum (prod the same with * and the identity 1):
 *   1. chunk c holds elements [c*C, min(n, (c+1)*C)); in it, lane l
 *      (0 <= l < 32) sums its elements c*C + l + 32*k, k = 0, 1, ...,
 *      left to right starting from z: s_l = ((z + x_l) + x_{l+32}) + ...;
 *   2. the 32 lane sums combine as a warp's shuffle-down tree: for
 *      w = 16, 8, 4, 2, 1: s_l = s_l + s_{l+w} (l < w); the chunk's sum is s_0;
 *   3. the chunk sums p_0 .. p_{m-1} combine in rounds of pairs until one
 *      is left: p'_i = p_{2i} + p_{2i+1}, and when the count is odd the last
 *      one carries over unchanged (p'_{m/2} = p_{m-1});
 *   4. n = 0 gives +0 (prod: 1); the result is rounded once to the dtype.
 * scan sum (min and max use the same order; they are exact anyway):
 *   1. chunk totals T_c = sequential left-to-right sums from z of chunk c;
 *   2. chunk offsets O_0 = z, O_{c+1} = O_c + T_c, left to right;
 *   3. in chunk c, r = O_c, then for each element in order: the exclusive
 *      output is r (+0 for element 0), then r = r + x_i and the inclusive
 *      output is r (each rounded to the dtype).
 * The CPU backend always computes sums this way (it costs nothing there:
 * the 32 lanes are vector registers). A GPU backend runs its vendor's
 * fastest reduction (CUB) unless deterministic mode is on; then it must run
 * this order (one warp per chunk for reduce, one thread per chunk for scan:
 * the reduce should cost little, the scan several times CUB's).
 * Integer sums and min/max are exact in any order: deterministic always.
 * Not covered: atomics in the application's own kernels. */
#ifndef XDEV_PRIMITIVES_H
#define XDEV_PRIMITIVES_H

#include <stdbool.h>
#include <stddef.h>

#include "xdev/dtype.h"
#include "xdev/error.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Elements per chunk of the deterministic order above. */
#define XDEV_PRIM_CHUNK 4096
/* Lanes per chunk of the deterministic reduce (a warp). */
#define XDEV_PRIM_LANES 32

/* What a reduce or scan computes. Scans take SUM, MIN and MAX. */
typedef enum xdev_prim_op {
    XDEV_PRIM_SUM = 0,
    XDEV_PRIM_PROD = 1,
    XDEV_PRIM_MIN = 2,
    XDEV_PRIM_MAX = 3,
    XDEV_PRIM_ARGMIN = 4, /* an int64_t index (torch.argmin) */
    XDEV_PRIM_ARGMAX = 5,
} xdev_prim_op_t;

/* xdev_prim_scan flags. */
#define XDEV_PRIM_EXCLUSIVE (1u << 0) /* out[i] combines in[0 .. i-1] (out[0] = the identity) */

/* *out = op over in[0 .. count). `out` holds one element of `dtype`, or an
 * int64_t for ARGMIN/ARGMAX, in device memory of the device that runs the
 * call (`in` on it or on a peer with access enabled). count = 0: SUM writes
 * 0, PROD 1; MIN, MAX, ARGMIN and ARGMAX refuse it (XDEV_ERROR_INVALID_VALUE,
 * as torch raises: an empty input has no extremum). `in` may be NULL only
 * when count = 0; in and out may not overlap. */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_reduce(const void *in, xdev_dtype_t dtype,
                                                    size_t count, xdev_prim_op_t op, void *out,
                                                    xdev_stream_t stream);

/* out[i] = op over in[0 .. i] (flags XDEV_PRIM_EXCLUSIVE: in[0 .. i-1], and
 * the identity for i = 0: 0 for SUM, the dtype's largest value (+inf) for
 * MIN, its lowest (-inf) for MAX), for i < count; op is SUM, MIN or MAX
 * (torch.cumsum, torch.cummin/cummax values). out == in scans in place;
 * other overlaps are refused. count = 0 does nothing. */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_scan(const void *in, xdev_dtype_t dtype, size_t count,
                                                  xdev_prim_op_t op, unsigned flags, void *out,
                                                  xdev_stream_t stream);

/* Deterministic mode for the whole process (torch's
 * use_deterministic_algorithms): floating-point sums follow the fixed order
 * above on every backend. XDEV_DETERMINISTIC=1 turns it on at start (a
 * malformed value fails these calls and every primitive, naming it).
 * Primitives read the mode when they are called (a captured graph keeps
 * the mode of its capture). */
XDEV_API XDEV_RESULT xdev_status_t xdev_set_deterministic(bool on);
XDEV_API XDEV_RESULT xdev_status_t xdev_get_deterministic(bool *out);

#ifdef __cplusplus
}
#endif

#endif
