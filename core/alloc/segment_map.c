/* SPDX-License-Identifier: Apache-2.0 */
/* segment_map.c - mapping and unmapping parts of an expandable segment that
 * is partly mapped in whole pieces.
 *
 * Why: on CUDA a mapping per granularity unit (2 MiB) costs about 40 us in
 * the driver (cuMemCreate, and cuMemSetAccess per mapping), so mapping
 * 40 GiB back at wake ran no faster than the copy it overlaps. One mapping
 * per 32 MiB piece (memory.va_map_whole) costs about 30 times less a byte,
 * but the driver unmaps a mapping only whole. So a segment woken that way
 * remembers it: [base, base + whole_end) is pieces [k*P, min((k+1)*P,
 * whole_end)) of P = xdev_segment_piece bytes, each one mapping; the rest
 * (grown after the wake) is unit mappings. Every map and unmap of a
 * segment's memory but growth goes through here, split along that
 * structure; a range that would cut a piece is refused (an internal error:
 * the callers align their cuts with xdev_segment_cut_offset) before any call.
 *
 * An unmap of a range can take several backend calls, and one after the
 * first can fail: the caller must then know exactly what is still mapped
 * (an allocator handing out memory that is not mapped faults on the device;
 * one unmapping a range twice gets a driver error). So an unmap stops at
 * its first failure and says how much it gave back, from the range's front
 * (sleep: the rest of a segment comes back mapped from its start) or its
 * back (a shrink: what stays mapped is still the segment's tail). */
#include <stdint.h>

#include "alloc/alloc_internal.h"
#include "base/error_internal.h"
#include "runtime/dispatch.h"

/* Sleep and wake work a segment a piece at a time (so that mapping one
 * piece overlaps the copy of the next), and a woken piece is one mapping. */
#define PIECE ((size_t)32 << 20)

size_t xdev_segment_piece(xdev_device_record_t *rec) {
    size_t gran = 0;
    if (xdev_be_memory_va_granularity(rec, &gran) != XDEV_SUCCESS || gran == 0) return PIECE;
    return gran >= PIECE ? gran : PIECE / gran * gran;
}

bool xdev_segment_can_map_whole(xdev_device_record_t *rec) {
    return XDEV_HAS(rec->be, memory, va_map_whole);
}

size_t xdev_segment_cut_offset(const xdev_segment_t *seg, size_t piece, size_t off) {
    if (off >= seg->whole_end) return off;
    size_t up = (off + piece - 1) / piece * piece;
    return up < seg->whole_end ? up : seg->whole_end;
}

/* Refuse [off, end) when it would cut a whole piece: below whole_end it
 * must start and end where pieces do (or end at or past whole_end). Checked
 * before any call, so that a refused range is left as it was. */
static xdev_status_t check_range(const xdev_segment_t *seg, size_t piece, size_t off, size_t end,
                                 const char *what) {
    size_t bad = SIZE_MAX;
    if (off < seg->whole_end && off % piece != 0)
        bad = off;
    else if (end < seg->whole_end && end % piece != 0)
        bad = end;
    if (bad == SIZE_MAX) return XDEV_SUCCESS;
    return XDEV_FAIL(XDEV_ERROR_INTERNAL,
                     "%s [%zu, %zu) of the segment at %p would cut its piece at offset %zu, "
                     "mapped whole",
                     what, off, end, (void *)seg->base, bad / piece * piece);
}

/* The mapping of the checked range [off, end) that starts at `at` (forward)
 * or ends at `at` (backward): a whole piece below whole_end, else the
 * unit-mapped rest of the range, all of it. [*from, *to). */
static bool span_of(const xdev_segment_t *seg, size_t piece, size_t off, size_t end, size_t at,
                    bool backward, size_t *from, size_t *to) {
    if (!backward) {
        *from = at;
        if (at >= seg->whole_end) {
            *to = end;
            return false;
        }
        size_t next = at / piece * piece + piece;
        *to = next < seg->whole_end ? next : seg->whole_end;
        return true;
    }
    *to = at;
    if (at > seg->whole_end) {
        *from = off > seg->whole_end ? off : seg->whole_end;
        return false;
    }
    *from = (at - 1) / piece * piece;
    return true;
}

/* The piece size (a backend call), asked only when the range reaches into
 * the whole region. */
static size_t piece_for(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t off) {
    return off < seg->whole_end ? xdev_segment_piece(rec) : 1;
}

xdev_status_t xdev_segment_unmap(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t off,
                                 size_t len, xdev_unmap_order_t order, size_t *done) {
    const size_t end = off + len, piece = piece_for(rec, seg, off);
    const bool backward = order == XDEV_UNMAP_BACK;
    size_t unmapped = 0;
    if (done != NULL) *done = 0;
    xdev_status_t first = check_range(seg, piece, off, end, "unmapping");
    if (first != XDEV_SUCCESS) return first;
    for (size_t at = backward ? end : off; backward ? at > off : at < end;) {
        size_t from, to;
        bool whole = span_of(seg, piece, off, end, at, backward, &from, &to);
        void *addr = (void *)(seg->base + from);
        xdev_status_t st = whole ? xdev_be_memory_va_unmap_whole(rec, addr, to - from)
                                 : xdev_be_memory_va_unmap(rec, addr, to - from);
        if (st == XDEV_SUCCESS) unmapped += to - from;
        if (first == XDEV_SUCCESS) first = st;
        /* a failure ends FRONT and BACK: what was unmapped stays one end of
         * the range; EVERY (a rollback) gives back all it can */
        if (st != XDEV_SUCCESS && order != XDEV_UNMAP_EVERY) break;
        at = backward ? from : to;
    }
    if (done != NULL) *done = unmapped;
    return first;
}

xdev_status_t xdev_segment_map(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t off,
                               size_t len) {
    const size_t end = off + len, piece = piece_for(rec, seg, off);
    xdev_status_t st = check_range(seg, piece, off, end, "mapping");
    size_t at = off;
    while (st == XDEV_SUCCESS && at < end) {
        size_t from, to;
        bool whole = span_of(seg, piece, off, end, at, false, &from, &to);
        void *addr = (void *)(seg->base + from);
        st = whole ? xdev_be_memory_va_map_whole(rec, addr, to - from)
                   : xdev_be_memory_va_map(rec, addr, to - from);
        if (st == XDEV_SUCCESS) at = to;
    }
    if (st != XDEV_SUCCESS && at > off) { /* none of the range stays mapped */
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        (void)xdev_segment_unmap(rec, seg, off, at - off, XDEV_UNMAP_EVERY, NULL);
        xdev_core_error_restore(&saved);
    }
    return st;
}
