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
 *   xdev_prim_select_if         compaction of the items that pass a predicate
 *   xdev_prim_unique, xdev_prim_run_length_encode   over sorted input
 * All of them follow the same rules (a backend may implement some: the
 * others are XDEV_ERROR_NOT_SUPPORTED naming it and the primitive):
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
 * dtypes of reduce, scan and segmented reduce (xdev/dtype.h): f32, f64,
 * f16, bf16, i32, i64, u32, u64. f16 and bf16 accumulate in f32 (as torch
 * does) and round once to the dtype when written; integers wrap (two's
 * complement) on overflow. The other primitives list their dtypes below.
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
#include <stdint.h>

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

/* ------------------------------------------------------------------ sort
 * Key dtypes: u8, u16, u32, u64, i8, i16, i32, i64, f16, bf16, f32, f64.
 * The order is the key's total order: integers by value; floats
 *   -inf < ... < -0 < +0 < ... < +inf < NaN,
 * -0 before +0, every NaN (either sign, any payload) after +inf and equal
 * to every other NaN (torch.sort: NaN last). Sorts are stable: keys equal
 * in that order keep their input order. XDEV_PRIM_DESCENDING reverses the
 * order, not the stability: NaN first, then +inf ... +0, -0 ... -inf, and
 * equal keys still in input order (torch.sort(descending=True, stable=True)).
 * Output keys are the input keys' bits, moved (a NaN's payload is kept).
 *
 * Bit range: the sort orders keys by bits [begin_bit, end_bit) of the
 * key's order image, an unsigned integer of the key's width whose unsigned
 * order is the order above (CUB's and rocPRIM's begin_bit/end_bit):
 *   unsigned: the key; signed: the key with its sign bit flipped;
 *   floats: NaN -> all ones; sign set -> ~bits; else bits | sign bit.
 * Keys equal in those bits are equal (stable). begin_bit = end_bit = 0
 * means every bit; otherwise 0 <= begin_bit < end_bit <= the key's bits
 * (XDEV_ERROR_INVALID_VALUE naming the range). Sorting on fewer bits is
 * faster where keys are known to fit them (e.g. bin numbers < 2^10).
 *
 * keys_out == keys_in (and values_out == values_in) sorts in place; any
 * other overlap between the inputs and the outputs, or between the keys
 * and the values, is refused. */
#define XDEV_PRIM_DESCENDING (1u << 1) /* xdev_prim_sort_* flags */

/* keys_out[0 .. count) = keys_in[0 .. count) sorted (torch.sort's values). */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_sort_keys(const void *keys_in, xdev_dtype_t dtype,
                                                       size_t count, unsigned flags,
                                                       unsigned begin_bit, unsigned end_bit,
                                                       void *keys_out, xdev_stream_t stream);

/* The same, carrying a value of value_size bytes (1, 2, 4 or 8: any type,
 * moved as bits) with each key: values_out[i] is the value that came with
 * keys_out[i] (torch.sort's indices when values_in holds 0 .. count-1).
 * values_in and values_out are aligned to value_size. */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_sort_pairs(const void *keys_in, const void *values_in,
                                                        xdev_dtype_t dtype, size_t value_size,
                                                        size_t count, unsigned flags,
                                                        unsigned begin_bit, unsigned end_bit,
                                                        void *keys_out, void *values_out,
                                                        xdev_stream_t stream);

/* ------------------------------------------------------------- segmented
 * Segments: `offsets` is device memory holding num_segments + 1 int64_t
 * (checked against its allocation); segment s is [offsets[s],
 * offsets[s + 1]) of the count items. Segments may be empty. The offsets
 * are read on the device as the work runs, so xdev cannot check their
 * values when the call is made: each bound is clamped to [0, count] and an
 * end below its begin makes the segment empty, so malformed offsets never
 * reach memory outside the buffers (the results are then the application's
 * problem). Offsets out of order make segments overlap: a segmented reduce
 * reads each segment as its clamped bounds say (overlapping windows are
 * fine), while a segmented sort, which writes its segments, also begins
 * each segment no earlier than the furthest end of the segments before it
 * (segment s is [max(b_s, e_0, .., e_{s-1}), e_s), with b and e the
 * clamped bounds), so no item is in two segments (every shipped backend
 * reads the bounds once into its temporaries: docs/bounds.md). Items before offsets[0]
 * or from offsets[num_segments] on belong to no segment. num_segments = 0
 * does nothing (offsets may then be NULL). */

/* out[s] = op over in[offsets[s] .. offsets[s + 1]) for s < num_segments
 * (torch.segment_reduce with offsets; dtypes and ops of xdev_prim_reduce;
 * out holds num_segments elements of dtype, or int64_t for ARGMIN/ARGMAX).
 * An empty segment writes its op's identity, as torch.segment_reduce does
 * without `initial`: SUM 0, PROD 1, MIN the dtype's largest value (+inf
 * for floats), MAX its lowest (-inf); ARGMIN and ARGMAX write -1. ARGMIN
 * and ARGMAX give the index within the segment (0 = offsets[s], as CUB's
 * DeviceSegmentedReduce), with xdev_prim_reduce's rules for NaN and ties.
 * Deterministic mode: each segment's floating-point sum is the one
 * xdev_prim_reduce would give for that segment alone (the order above,
 * with chunks counted from the segment's start). in and out may not
 * overlap; count = 0 is allowed (every segment is empty). */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_segmented_reduce(const void *in, xdev_dtype_t dtype,
                                                              size_t count, const int64_t *offsets,
                                                              size_t num_segments,
                                                              xdev_prim_op_t op, void *out,
                                                              xdev_stream_t stream);

/* Each segment of keys_in sorted on its own, by the rules of
 * xdev_prim_sort_keys (order, stability, flags, bit range, in place). With
 * values_in and values_out non-NULL each key carries its value (value_size
 * 1, 2, 4 or 8) as xdev_prim_sort_pairs; both NULL (value_size ignored)
 * sorts keys only. Items of keys_out (values_out) in no segment are not
 * written. */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_segmented_sort(
    const void *keys_in, const void *values_in, xdev_dtype_t dtype, size_t value_size, size_t count,
    const int64_t *offsets, size_t num_segments, unsigned flags, unsigned begin_bit,
    unsigned end_bit, void *keys_out, void *values_out, xdev_stream_t stream);

/* ------------------------------------------------------------- histogram */

/* counts[b] = the number of samples in bin b, for b < num_bins (counts is
 * num_bins int64_t in device memory, overwritten: the call zeroes it
 * first), with num_bins even bins over [lower, upper) (CUB's HistogramEven
 * with num_levels = num_bins + 1; torch.histc's bins without its
 * inclusive upper edge). Sample dtypes: u8, u16, u32, u64, i8, i16, i32,
 * i64, f16, bf16, f32, f64. A sample x is converted to double (exact but
 * for 64-bit integers past 2^53, rounded to nearest) and, when
 * lower <= x < upper, counted in bin
 *   b = min(num_bins - 1, floor(((x - lower) * num_bins) / (upper - lower)))
 * evaluated in double exactly as written (the same bin on every backend);
 * samples below lower, at or above upper, and NaN are counted nowhere.
 * lower and upper are finite with lower < upper and a finite upper - lower
 * (XDEV_ERROR_INVALID_VALUE otherwise), 1 <= num_bins <= 2^31;
 * count = 0 writes zero counts. samples and counts may not overlap. */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_histogram_even(const void *samples, xdev_dtype_t dtype,
                                                            size_t count, size_t num_bins,
                                                            double lower, double upper,
                                                            int64_t *counts, xdev_stream_t stream);

/* ---------------------------------------------------------------- select
 * Compactions write the items they keep to out[0 .. k), in input order,
 * and k to *num_out (one int64_t in device memory, written even when k =
 * 0); out must hold count items (the most a compaction can write), from
 * which only the first k are written. in, out, num_out and flags may not
 * overlap. count = 0 writes *num_out = 0. */

/* Keep in[i] where flags[i] != 0 (torch.masked_select, CUB's
 * DeviceSelect::Flagged). Items are item_size bytes (1, 2, 4 or 8: any
 * type, moved as bits) aligned to item_size; flags is count uint8_t. */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_select_flagged(const void *in, size_t item_size,
                                                            const uint8_t *flags, size_t count,
                                                            void *out, int64_t *num_out,
                                                            xdev_stream_t stream);

/* Keep in[i] where `predicate` is true (non-zero): one C expression over
 * in0 (element i, of dtype), written like xdev_elementwise's (xdev/kernel.h:
 * the same dialect, checks and compile cache), e.g. "in0 > 0.5f" or
 * "(in0 & 1) == 0". dtype is f32, f64, i32 or i64 (xdev_elementwise's).
 * One comparison of in0 with a decimal literal - `in0 OP lit` or `lit OP
 * in0`, OP one of < <= > >= == !=, lit an integer (optional unary minus,
 * no suffix) or, for f32 and f64 items, a floating literal with or without
 * the f suffix, e.g. "in0 > 0.5f", "-3 <= in0" - needs no compile where
 * the backend has the select_compare slot (CPU, CUDA, HIP): the items are
 * compared in place, as C compares them (an f32 item against 0.1 in
 * double, against 0.1f in float; NaN compares false but for !=). Every
 * other predicate (and hex, octal or suffixed integers, integer items
 * against a floating literal) runs with xdev_elementwise into a temporary
 * flags buffer from the caching allocator, then xdev_prim_select_flagged's
 * slot, so it needs a backend that compiles kernels (xdev_module_compile)
 * and has select_flagged; a predicate the compiler refuses is
 * XDEV_ERROR_COMPILE, no compiler XDEV_ERROR_NOT_SUPPORTED. */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_select_if(const void *in, xdev_dtype_t dtype,
                                                       size_t count, const char *predicate,
                                                       void *out, int64_t *num_out,
                                                       xdev_stream_t stream);

/* Over sorted input (or any input: each run of equal consecutive items is
 * one, as std::unique and torch.unique_consecutive). Equality is the
 * dtype's ==: integers by value, floats by IEEE == (-0 and +0 are equal:
 * the first of a run is kept; every NaN is a run of its own, as torch's).
 * dtypes: those of the sort keys. */

/* out[0 .. k) = the first item of each run of in[0 .. count), k to
 * *num_out (CUB's DeviceSelect::Unique). */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_unique(const void *in, xdev_dtype_t dtype,
                                                    size_t count, void *out, int64_t *num_out,
                                                    xdev_stream_t stream);

/* unique_out[r] = the first item of run r, lengths[r] = its length (int64_t;
 * unique_out and lengths hold count entries each), for r < k; k to
 * *num_runs (CUB's DeviceRunLengthEncode::Encode; torch.unique_consecutive
 * with return_counts). */
XDEV_API XDEV_RESULT xdev_status_t xdev_prim_run_length_encode(const void *in, xdev_dtype_t dtype,
                                                               size_t count, void *unique_out,
                                                               int64_t *lengths, int64_t *num_runs,
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
