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
 * the callers align their cuts with xdev_segment_cut_offset). */
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

/* The next mapping of [at, end): a whole piece where `at` lies below
 * whole_end (an error naming the cut when `at` is not where one starts or
 * the piece runs past `end`), else the unit-mapped rest, all of it. The
 * piece size (a backend call) is asked only inside the whole region. */
static xdev_status_t next_span(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t at,
                               size_t end, const char *what, size_t *len, bool *whole) {
    *whole = at < seg->whole_end;
    if (!*whole) {
        *len = end - at;
        return XDEV_SUCCESS;
    }
    const size_t piece = xdev_segment_piece(rec);
    size_t next = at / piece * piece + piece;
    if (next > seg->whole_end) next = seg->whole_end;
    if (at % piece != 0 || next > end)
        return XDEV_FAIL(XDEV_ERROR_INTERNAL,
                         "%s [%zu, %zu) of the segment at %p would cut its piece at offset %zu, "
                         "mapped whole",
                         what, at, end, (void *)seg->base, at / piece * piece);
    *len = next - at;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_segment_unmap(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t off,
                                 size_t len) {
    const size_t end = off + len;
    xdev_status_t first = XDEV_SUCCESS;
    for (size_t at = off, n = 0; at < end; at += n) {
        bool whole;
        xdev_status_t st = next_span(rec, seg, at, end, "unmapping", &n, &whole);
        if (st != XDEV_SUCCESS) return first != XDEV_SUCCESS ? first : st;
        void *addr = (void *)(seg->base + at);
        st = whole ? xdev_be_memory_va_unmap_whole(rec, addr, n)
                   : xdev_be_memory_va_unmap(rec, addr, n);
        if (first == XDEV_SUCCESS) first = st; /* the rest still goes, as unit unmaps do */
    }
    return first;
}

xdev_status_t xdev_segment_map(xdev_device_record_t *rec, const xdev_segment_t *seg, size_t off,
                               size_t len) {
    const size_t end = off + len;
    xdev_status_t st = XDEV_SUCCESS;
    size_t at = off;
    while (st == XDEV_SUCCESS && at < end) {
        size_t n = 0;
        bool whole;
        st = next_span(rec, seg, at, end, "mapping", &n, &whole);
        void *addr = (void *)(seg->base + at);
        if (st == XDEV_SUCCESS)
            st = whole ? xdev_be_memory_va_map_whole(rec, addr, n)
                       : xdev_be_memory_va_map(rec, addr, n);
        if (st == XDEV_SUCCESS) at += n;
    }
    if (st != XDEV_SUCCESS && at > off) { /* none of the range stays mapped */
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        (void)xdev_segment_unmap(rec, seg, off, at - off);
        xdev_core_error_restore(&saved);
    }
    return st;
}
