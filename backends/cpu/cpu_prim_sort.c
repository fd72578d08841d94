/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_prim_sort.c - the CPU backend's sorts (the prim table's
 * sort and segmented_sort slots, xdev/primitives.h), run on the device's
 * worker pool like the other primitives.
 *
 * An LSD radix sort with 8-bit digits over the key's order image, computed
 * on the fly from the key's bits (unsigned: the key; signed: the sign bit
 * flipped; floats: NaN -> all ones, negative -> ~bits, else bits | sign;
 * descending: the image complemented), so the keys themselves are moved
 * and a NaN keeps its payload. Each pass cuts the range into fixed tiles:
 * the pool counts each tile's digits, the stream's worker turns the counts
 * into per-tile offsets (digit-major, tiles in order: stable), the pool
 * scatters each tile's items from them. A pass whose digit is the same for
 * every item is skipped. Keys and values ping-pong between the output and
 * the temporary buffers, aimed so that the last pass writes the output; a
 * range that still ends in a temporary (a skipped pass, in place) is
 * copied out.
 * Segments: small ones sorted whole by one pool thread each (insertion
 * sort up to 32 items, else a serial radix sort), large ones one after the
 * other by the parallel sort. The stream's worker reads the offsets once
 * into the temporaries, clamped to [0, count] and each segment's begin to
 * the furthest end before it (xdev/primitives.h), so segments never
 * overlap and no two threads sort one item (a radix pass racing another
 * would scatter by counts that no longer hold, past its segment), however
 * the offsets change while it runs. Every pool body writes only its own
 * tile or segment, so running a body again (the pool's fallback) gives the
 * same bytes, and the job is never changed by running (a graph replays
 * it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_math.h"
#include "xdev/primitives.h"

#define TILE ((size_t)1 << 14)       /* items per tile of the parallel passes */
#define SERIAL_MAX ((size_t)1 << 16) /* segments up to this run on one thread */
#define INSERTION_MAX 32
#define ALIGN64(x) (((x) + 63u) & ~(size_t)63u)

/* How a key's bits become its order image. */
enum { K_UNSIGNED, K_SIGNED, K_FLOAT };

typedef struct kinfo {
    unsigned width; /* bytes: 1, 2, 4, 8 */
    int kind;
    uint64_t sign, all, inf; /* the sign bit, all width bits, +inf's bits (floats) */
    bool desc;
    uint32_t begin_bit, end_bit;
} kinfo_t;

static bool key_info(xdev_dtype_t t, bool desc, uint32_t b, uint32_t e, kinfo_t *k) {
    memset(k, 0, sizeof *k);
    switch (t) {
    case XDEV_DTYPE_U8:
    case XDEV_DTYPE_U16:
    case XDEV_DTYPE_U32:
    case XDEV_DTYPE_U64:
        k->kind = K_UNSIGNED;
        break;
    case XDEV_DTYPE_I8:
    case XDEV_DTYPE_I16:
    case XDEV_DTYPE_I32:
    case XDEV_DTYPE_I64:
        k->kind = K_SIGNED;
        break;
    case XDEV_DTYPE_F16:
        k->kind = K_FLOAT, k->inf = 0x7c00u;
        break;
    case XDEV_DTYPE_BF16:
        k->kind = K_FLOAT, k->inf = 0x7f80u;
        break;
    case XDEV_DTYPE_F32:
        k->kind = K_FLOAT, k->inf = 0x7f800000u;
        break;
    case XDEV_DTYPE_F64:
        k->kind = K_FLOAT, k->inf = 0x7ff0000000000000ull;
        break;
    default:
        return false;
    }
    k->width =
        t == XDEV_DTYPE_U8 || t == XDEV_DTYPE_I8 ? 1
        : t == XDEV_DTYPE_U16 || t == XDEV_DTYPE_I16 || t == XDEV_DTYPE_F16 || t == XDEV_DTYPE_BF16
            ? 2
        : t == XDEV_DTYPE_U32 || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_F32 ? 4
                                                                            : 8;
    k->all = k->width == 8 ? ~0ull : (1ull << (8 * k->width)) - 1u;
    k->sign = 1ull << (8 * k->width - 1);
    k->desc = desc;
    k->begin_bit = b;
    k->end_bit = e;
    return true;
}

/* The order image of key bits x (xdev/primitives.h), complemented when
 * descending: its unsigned order is the sort's order. */
static inline uint64_t image(uint64_t x, const kinfo_t *k) {
    uint64_t r;
    if (k->kind == K_UNSIGNED)
        r = x;
    else if (k->kind == K_SIGNED)
        r = x ^ k->sign;
    else if ((x & ~k->sign) > k->inf)
        r = k->all; /* every NaN: after +inf, equal to each other */
    else
        r = (x & k->sign) ? ~x & k->all : x | k->sign;
    return k->desc ? ~r & k->all : r;
}

/* ------------------------------------------------------------ one pass */

/* One radix pass over [lo, hi) of the buffers (every buffer is indexed
 * alike: item i of the range is at index i everywhere). */
typedef struct rpass {
    const kinfo_t *k;
    const void *ksrc;
    void *kdst;
    const void *vsrc;
    void *vdst;
    size_t vs; /* value bytes; 0: keys only */
    size_t lo, hi, tile;
    size_t *hist; /* 256 per tile */
    unsigned shift;
    uint64_t mask;
} rpass_t;

static inline void move_value(void *dst, size_t di, const void *src, size_t si, size_t vs) {
    switch (vs) {
    case 1:
        ((uint8_t *)dst)[di] = ((const uint8_t *)src)[si];
        break;
    case 2:
        ((uint16_t *)dst)[di] = ((const uint16_t *)src)[si];
        break;
    case 4:
        ((uint32_t *)dst)[di] = ((const uint32_t *)src)[si];
        break;
    case 8:
        ((uint64_t *)dst)[di] = ((const uint64_t *)src)[si];
        break;
    default:
        break;
    }
}

/* hist_W counts tile t's digits; scatter_W moves tile t's items to the
 * offsets hist holds for it. One pair per key width. */
#define PASS_FNS(W, T)                                                                             \
    static void hist_##W(const rpass_t *p, size_t t) {                                             \
        const T *src = p->ksrc;                                                                    \
        size_t b = p->lo + t * p->tile, e = b + p->tile < p->hi ? b + p->tile : p->hi;             \
        size_t *h = p->hist + t * 256;                                                             \
        memset(h, 0, 256 * sizeof *h);                                                             \
        for (size_t i = b; i < e; i++)                                                             \
            h[(image(src[i], p->k) >> p->shift) & p->mask]++;                                      \
    }                                                                                              \
    static void scatter_##W(const rpass_t *p, size_t t) {                                          \
        const T *src = p->ksrc;                                                                    \
        T *dst = p->kdst;                                                                          \
        size_t b = p->lo + t * p->tile, e = b + p->tile < p->hi ? b + p->tile : p->hi;             \
        size_t off[256];                                                                           \
        memcpy(off, p->hist + t * 256, sizeof off);                                                \
        if (p->vs == 0) {                                                                          \
            for (size_t i = b; i < e; i++)                                                         \
                dst[off[(image(src[i], p->k) >> p->shift) & p->mask]++] = src[i];                  \
        } else {                                                                                   \
            for (size_t i = b; i < e; i++) {                                                       \
                size_t o = off[(image(src[i], p->k) >> p->shift) & p->mask]++;                     \
                dst[o] = src[i];                                                                   \
                move_value(p->vdst, o, p->vsrc, i, p->vs);                                         \
            }                                                                                      \
        }                                                                                          \
    }
PASS_FNS(1, uint8_t)
PASS_FNS(2, uint16_t)
PASS_FNS(4, uint32_t)
PASS_FNS(8, uint64_t)

static void hist_tiles(void *ctx, size_t t0, size_t t1) {
    const rpass_t *p = ctx;
    for (size_t t = t0; t < t1; t++)
        switch (p->k->width) {
        case 1:
            hist_1(p, t);
            break;
        case 2:
            hist_2(p, t);
            break;
        case 4:
            hist_4(p, t);
            break;
        default:
            hist_8(p, t);
            break;
        }
}

static void scatter_tiles(void *ctx, size_t t0, size_t t1) {
    const rpass_t *p = ctx;
    for (size_t t = t0; t < t1; t++)
        switch (p->k->width) {
        case 1:
            scatter_1(p, t);
            break;
        case 2:
            scatter_2(p, t);
            break;
        case 4:
            scatter_4(p, t);
            break;
        default:
            scatter_8(p, t);
            break;
        }
}

/* The counts become each tile's first offset per digit (digit-major, tiles
 * in order: stable). False when one digit holds every item: nothing moves. */
static bool offsets(size_t *hist, size_t tiles, size_t lo, size_t n) {
    size_t run = lo;
    for (unsigned d = 0; d < 256; d++) {
        size_t digit_total = 0;
        for (size_t t = 0; t < tiles; t++) {
            size_t c = hist[t * 256 + d];
            hist[t * 256 + d] = run;
            run += c;
            digit_total += c;
        }
        if (digit_total == n) return false;
    }
    return true;
}

/* ------------------------------------------------------------ a range */

/* The buffers of one sort: keys and values in, out and temporary, all
 * indexed alike. */
typedef struct bufs {
    const void *kin, *vin;
    void *kout, *vout, *ktmp, *vtmp;
    size_t vs;
} bufs_t;

/* Copy [lo, hi) of one buffer of `size`-byte items to another. */
static void copy_range(void *dst, const void *src, size_t lo, size_t hi, size_t size) {
    if (dst != src && hi > lo)
        memcpy((char *)dst + lo * size, (const char *)src + lo * size, (hi - lo) * size);
}

/* Radix sort of [lo, hi) into kout/vout. `device` >= 0: the passes run on
 * its pool with `hist` (256 per tile of TILE items); -1: on this thread
 * with one tile (hist: 256 entries). */
static void radix_range(int device, const kinfo_t *k, const bufs_t *b, size_t lo, size_t hi,
                        size_t *hist) {
    const size_t n = hi - lo;
    const size_t tile = device >= 0 ? TILE : n;
    const size_t tiles = (n + tile - 1) / tile;
    const void *ksrc = b->kin, *vsrc = b->vin;
    for (uint32_t bit = k->begin_bit; bit < k->end_bit; bit += 8) {
        unsigned nb = k->end_bit - bit < 8 ? k->end_bit - bit : 8;
        /* Aim the passes so that the last one writes the output (no final
         * copy unless a pass is skipped or the sort is in place). */
        const bool last_odd = ((k->end_bit - bit + 7) / 8) % 2 == 1;
        void *kdst = last_odd ? b->kout : b->ktmp, *vdst = last_odd ? b->vout : b->vtmp;
        if (kdst == ksrc) kdst = kdst == b->kout ? b->ktmp : b->kout;
        if (vdst == vsrc) vdst = vdst == b->vout ? b->vtmp : b->vout;
        rpass_t p = {k,  ksrc, kdst, vsrc, vdst,          b->vs,
                     lo, hi,   tile, hist, (unsigned)bit, (1ull << nb) - 1u};
        if (device >= 0)
            xdev_cpu_parallel_for(device, tiles, 1, hist_tiles, &p);
        else
            hist_tiles(&p, 0, 1);
        if (!offsets(hist, tiles, lo, n)) continue; /* one digit for all: skip the pass */
        if (device >= 0)
            xdev_cpu_parallel_for(device, tiles, 1, scatter_tiles, &p);
        else
            scatter_tiles(&p, 0, 1);
        ksrc = kdst;
        vsrc = vdst;
    }
    copy_range(b->kout, ksrc, lo, hi, k->width);
    if (b->vs > 0) copy_range(b->vout, vsrc, lo, hi, b->vs);
}

static inline uint64_t load_key(const void *p, size_t i, unsigned w) {
    switch (w) {
    case 1:
        return ((const uint8_t *)p)[i];
    case 2:
        return ((const uint16_t *)p)[i];
    case 4:
        return ((const uint32_t *)p)[i];
    default:
        return ((const uint64_t *)p)[i];
    }
}

static inline void store_key(void *p, size_t i, unsigned w, uint64_t v) {
    switch (w) {
    case 1:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case 2:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case 4:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)p)[i] = v;
        break;
    }
}

/* Stable insertion sort of [lo, hi) (a few items) into kout/vout, on the
 * image's bits [begin_bit, end_bit). */
static void insertion_range(const kinfo_t *k, const bufs_t *b, size_t lo, size_t hi) {
    const unsigned w = k->width;
    const unsigned span = k->end_bit - k->begin_bit;
    const uint64_t m = span >= 64 ? ~0ull : (1ull << span) - 1u;
    copy_range(b->kout, b->kin, lo, hi, w);
    if (b->vs > 0) copy_range(b->vout, b->vin, lo, hi, b->vs);
    for (size_t i = lo + 1; i < hi; i++) {
        uint64_t x = load_key(b->kout, i, w);
        uint64_t xi = (image(x, k) >> k->begin_bit) & m;
        uint64_t v = 0;
        if (b->vs > 0) memcpy(&v, (char *)b->vout + i * b->vs, b->vs);
        size_t j = i;
        while (j > lo) {
            uint64_t y = load_key(b->kout, j - 1, w);
            if (((image(y, k) >> k->begin_bit) & m) <= xi) break; /* equal: stays first */
            store_key(b->kout, j, w, y);
            if (b->vs > 0) move_value(b->vout, j, b->vout, j - 1, b->vs);
            j--;
        }
        store_key(b->kout, j, w, x);
        if (b->vs > 0) memcpy((char *)b->vout + j * b->vs, &v, b->vs);
    }
}

/* [lo, hi) on this thread: insertion or serial radix sort. */
static void serial_range(const kinfo_t *k, const bufs_t *b, size_t lo, size_t hi) {
    if (hi - lo <= INSERTION_MAX) {
        insertion_range(k, b, lo, hi);
        return;
    }
    size_t hist[256];
    radix_range(-1, k, b, lo, hi, hist);
}

/* ------------------------------------------------------------ the jobs */

typedef struct sort_job {
    int device;
    kinfo_t k;
    bufs_t b;
    size_t count;
    const int64_t *offsets; /* segmented: num_segments + 1 */
    size_t num_segments;
    size_t *hist;
    size_t *bounds; /* segmented: 2 per segment, the clamped [lo, hi) (temporaries) */
} sort_job_t;

/* Segment s clamped to [0, count] (an end below its begin: empty). */
static void segment(const sort_job_t *j, size_t s, size_t *lo, size_t *hi) {
    int64_t b = j->offsets[s], e = j->offsets[s + 1];
    int64_t c = (int64_t)j->count;
    b = b < 0 ? 0 : b > c ? c : b;
    e = e < b ? b : e > c ? c : e;
    *lo = (size_t)b;
    *hi = (size_t)e;
}

static void sort_job(void *arg) {
    const sort_job_t *j = arg;
    if (j->count <= SERIAL_MAX)
        serial_range(&j->k, &j->b, 0, j->count);
    else
        radix_range(j->device, &j->k, &j->b, 0, j->count, j->hist);
}

/* Pool body: the small segments of [s0, s1), each whole on this thread. */
static void small_segments(void *arg, size_t s0, size_t s1) {
    const sort_job_t *j = arg;
    for (size_t s = s0; s < s1; s++) {
        size_t lo = j->bounds[2 * s], hi = j->bounds[2 * s + 1];
        if (hi - lo <= SERIAL_MAX) serial_range(&j->k, &j->b, lo, hi);
    }
}

/* Read the offsets once into j->bounds: each segment clamped, and begun
 * no earlier than the furthest end before it (an overlap is cut off the
 * later segment), so the segments are apart. */
static void read_bounds(const sort_job_t *j) {
    size_t end = 0;
    for (size_t s = 0; s < j->num_segments; s++) {
        size_t lo, hi;
        segment(j, s, &lo, &hi);
        if (lo < end) lo = end;
        if (hi < lo) hi = lo;
        j->bounds[2 * s] = lo;
        j->bounds[2 * s + 1] = hi;
        end = hi;
    }
}

static void segmented_job(void *arg) {
    const sort_job_t *j = arg;
    read_bounds(j);
    xdev_cpu_parallel_for(j->device, j->num_segments, 1, small_segments, (void *)j);
    for (size_t s = 0; s < j->num_segments; s++) { /* then the large ones, each on the pool */
        size_t lo = j->bounds[2 * s], hi = j->bounds[2 * s + 1];
        if (hi - lo > SERIAL_MAX) radix_range(j->device, &j->k, &j->b, lo, hi, j->hist);
    }
}

/* The size query or the enqueue of either sort. */
static xdev_status_t sort_submit(const xdev_prim_desc_t *d, size_t *temp_bytes, bool segmented) {
    xdev_cpu_device_t *dev = d->device;
    const char *what = segmented ? "segmented_sort" : "sort";
    kinfo_t k;
    if (!key_info(d->dtype, (d->flags & XDEV_PRIM_DESCENDING) != 0, d->begin_bit, d->end_bit, &k))
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED, "cpu: %s of keys of dtype %d", what,
                              (int)d->dtype);
    if (d->end_bit > 8 * k.width || d->begin_bit >= d->end_bit)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: %s on bits [%u, %u) of %u-bit keys",
                              what, d->begin_bit, d->end_bit, 8 * k.width);
    const size_t vs = d->values_in != NULL ? d->value_size : 0;
    const size_t n = d->count, tiles = (n + TILE - 1) / TILE;
    const size_t kbytes = ALIGN64(n * k.width), vbytes = ALIGN64(n * vs);
    const size_t hbytes = tiles * 256 * sizeof(size_t);
    const size_t need =
        kbytes + vbytes + hbytes + (segmented ? 2 * d->num_segments : 0) * sizeof(size_t);
    if (d->temp == NULL) {
        *temp_bytes = need;
        return XDEV_SUCCESS;
    }
    if (d->temp_bytes < need)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "cpu: %zu temporary bytes for a %s of %zu",
                              d->temp_bytes, what, n);
    sort_job_t *j = calloc(1, sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a %s",
                              dev->index, what);
    char *t = d->temp;
    j->device = dev->index;
    j->k = k;
    j->b = (bufs_t){d->in, vs ? d->values_in : NULL, d->out, vs ? d->values_out : NULL,
                    t,     vs ? t + kbytes : NULL,   vs};
    j->count = n;
    j->offsets = segmented ? d->offsets : NULL;
    j->num_segments = segmented ? d->num_segments : 0;
    j->hist = (size_t *)(void *)(t + kbytes + vbytes);
    j->bounds = segmented ? (size_t *)(void *)(t + kbytes + vbytes + hbytes) : NULL;
    xdev_status_t st = xdev_cpu_stream_enqueue_job(dev->index, d->stream,
                                                   segmented ? segmented_job : sort_job, free, j);
    if (st != XDEV_SUCCESS) free(j);
    return st;
}

xdev_status_t xdev_cpu_prim_sort(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return sort_submit(d, temp_bytes, false);
}

xdev_status_t xdev_cpu_prim_segmented_sort(const xdev_prim_desc_t *d, size_t *temp_bytes) {
    return sort_submit(d, temp_bytes, true);
}
