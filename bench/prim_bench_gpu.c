/* SPDX-License-Identifier: Apache-2.0 */
/* bench/prim_bench_gpu.c - prim_bench's GPU run (--device cuda:0): every
 * primitive of xdev/primitives.h against CUB called directly
 * (bench/gpu/prim_cub_anchor.cu), in a file of its own so that prim_bench.c
 * (options, the CPU run) stays readable and under the size rule.
 *
 * What is timed, each at 2^min-log2 .. 2^max-log2 items n, on data made
 * from the index alone (the same bits on every side and every run):
 *   reduce, scan      f32 sum, inclusive f32 sum of make_f32 (in [-1, 1])
 *   sort_keys         u32 keys mix(i), every bit, ascending
 *   sort_pairs        the same keys carrying u32 values i
 *   seg_reduce        f32 sum per segment, seg_sort u32 keys per segment:
 *                     n / 1000 segments of 800 .. 1200 items (the last one
 *                     1000 .. 2200; int64 offsets, the same on both sides)
 *   histogram         f32 samples, 256 even bins over [-1, 1), int64 counts
 *   select_flagged    u32 items, u8 flags (about half set), int64 count
 *   select_if         f32 items where "in0 > 0.5f" (about a quarter)
 *   unique, rle       sorted u32 with runs of about 8 (int64 lengths, count)
 * Three sides, each a fresh process run --runs times: xdev, xdev in
 * deterministic mode (the f32 sums only: the modes differ nowhere else),
 * and CUB. Each side times a primitive with prim_bench.h's one loop (10
 * calls a batch, ended by a synchronize; one warm-up batch; the best of
 * --reps), its inputs copied in and its outputs allocated (CUB: its
 * temporaries too) before the timing. In the first process of each side
 * (--check 1) every output is then checked against the host's reference:
 * exact for the integer results (sortedness and the same multiset, stable
 * pairs, counts, compacted items, bins), within a rounding bound for the
 * f32 sums (whose order CUB chooses); a wrong one prints a FAILED line. The
 * parent also compares the two sides' digests of each output: the exact
 * primitives must give the same bits on xdev and CUB (FAILED otherwise). */
#define _POSIX_C_SOURCE 200809L /* posix_spawn, strtok_r */

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_side.h"
#include "bench_util.h"
#include "prim_anchor.h"
#include "prim_bench.h"
#include "xdev/primitives.h"
#include "xdev/xdev.h"

static const char *const prim_names[PRIM_COUNT] = {
    "reduce",    "scan",           "sort_keys", "sort_pairs", "seg_reduce", "seg_sort",
    "histogram", "select_flagged", "select_if", "unique",     "rle"};

/* The f32 sums: their order is CUB's choice, and deterministic mode (the
 * det side) changes it; every other result is defined bit for bit, and
 * xdev's and CUB's must be the same. */
static bool float_sum(int p) {
    return p == PRIM_REDUCE || p == PRIM_SCAN || p == PRIM_SEG_REDUCE;
}
static bool exact(int p) {
    return !float_sum(p);
}
#define FLOAT_SUMS ((1u << PRIM_REDUCE) | (1u << PRIM_SCAN) | (1u << PRIM_SEG_REDUCE))

#define SEG_ITEMS 1000
#define HIST_BINS 256
#define SELECT_IF_PRED "in0 > 0.5f" /* the CUB side's above_half */
#define CALLS 10                    /* calls a batch */

bool prim_parse_list(const char *list, unsigned *mask) {
    char buf[512];
    unsigned m = 0;
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, PROG ": --prims: the list is too long\n");
        return false;
    }
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        int p = -1;
        for (int q = 0; q < PRIM_COUNT; q++)
            if (strcmp(t, prim_names[q]) == 0) p = q;
        if (strcmp(t, "all") == 0) {
            m |= (1u << PRIM_COUNT) - 1;
        } else if (p < 0) {
            fprintf(stderr, PROG ": --prims: no primitive '%s' (all, or a list of:", t);
            for (int q = 0; q < PRIM_COUNT; q++)
                fprintf(stderr, " %s", prim_names[q]);
            fprintf(stderr, ")\n");
            return false;
        } else {
            m |= 1u << p;
        }
    }
    if (m == 0) {
        fprintf(stderr, PROG ": --prims: an empty list\n");
        return false;
    }
    *mask = m;
    return true;
}

static bool wants(unsigned m, int p) {
    return (m >> p) & 1u;
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, PROG ": no host memory for %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

/* ================================================================ data */

typedef struct hdata {
    prim_data_t d;
    float *f32;
    uint32_t *keys, *vals, *runs;
    uint8_t *flags;
    int64_t *offsets;
} hdata_t;

/* The inputs of the primitives in m, n items each, from the index alone. */
static void make_data(hdata_t *h, size_t n, unsigned m) {
    memset(h, 0, sizeof *h);
    h->d.n = n;
    if (wants(m, PRIM_REDUCE) || wants(m, PRIM_SCAN) || wants(m, PRIM_SEG_REDUCE) ||
        wants(m, PRIM_HISTOGRAM) || wants(m, PRIM_SELECT_IF))
        h->d.f32 = h->f32 = make_f32(n);
    if (wants(m, PRIM_SORT_KEYS) || wants(m, PRIM_SORT_PAIRS) || wants(m, PRIM_SEG_SORT) ||
        wants(m, PRIM_SELECT_FLAGGED)) {
        h->d.keys = h->keys = xmalloc(n * 4);
        for (size_t i = 0; i < n; i++)
            h->keys[i] = (uint32_t)mix(i); /* the CPU run's sort keys */
    }
    if (wants(m, PRIM_SORT_PAIRS)) {
        h->d.vals = h->vals = xmalloc(n * 4);
        for (size_t i = 0; i < n; i++)
            h->vals[i] = (uint32_t)i;
    }
    if (wants(m, PRIM_SELECT_FLAGGED)) {
        h->d.flags = h->flags = xmalloc(n);
        for (size_t i = 0; i < n; i++)
            h->flags[i] = (uint8_t)((mix(i + (1ull << 40)) >> 17) & 1u);
    }
    if (wants(m, PRIM_UNIQUE) || wants(m, PRIM_RLE)) { /* a new run where 1 in 8 says so */
        h->d.runs = h->runs = xmalloc(n * 4);
        uint32_t v = 0;
        for (size_t i = 0; i < n; i++) {
            if (i > 0 && (mix(i + (2ull << 40)) & 7u) == 0) v++;
            h->runs[i] = v;
        }
    }
    if (wants(m, PRIM_SEG_REDUCE) || wants(m, PRIM_SEG_SORT)) {
        size_t ns = n / SEG_ITEMS > 0 ? n / SEG_ITEMS : 1;
        h->d.offsets = h->offsets = xmalloc((ns + 1) * 8);
        h->d.num_segments = ns;
        h->offsets[0] = 0; /* segment s begins at s * 1000 less 0 .. 199 */
        for (size_t s = 1; s < ns; s++)
            h->offsets[s] = (int64_t)(s * SEG_ITEMS - mix(s + (3ull << 40)) % 200u);
        h->offsets[ns] = (int64_t)n;
    }
    h->d.num_bins = HIST_BINS;
    h->d.lower = -1.0;
    h->d.upper = 1.0;
}

static void free_data(hdata_t *h) {
    free(h->f32);
    free(h->keys);
    free(h->vals);
    free(h->runs);
    free(h->flags);
    free(h->offsets);
}

/* ============================================================ xdev side */

/* The xdev side's buffers of one primitive and size (the CUB side's twin). */
static struct xside {
    xdev_device_t dev;
    xdev_stream_t s;
    int prim;
    size_t n, ns, out_bytes, aux_bytes;
    int nb;
    double lower, upper;
    void *in, *in2, *out, *aux;
    int64_t *off, *num;
} X;

static int x_fail(const char *what) {
    fprintf(stderr, PROG " xdev side: %s (%zu items): %s\n", what, X.n, xdev_last_error());
    return 1;
}

static int x_alloc(void **p, size_t bytes, const void *src) {
    if (xdev_malloc_device(X.dev, p, bytes > 0 ? bytes : 1) != XDEV_SUCCESS)
        return x_fail("xdev_malloc_device");
    if (src != NULL && xdev_memcpy(*p, src, bytes) != XDEV_SUCCESS) return x_fail("xdev_memcpy");
    return 0;
}

static int x_setup(int prim, const prim_data_t *d) {
    const size_t n = d->n;
    X.prim = prim;
    X.n = n;
    X.ns = d->num_segments;
    X.nb = d->num_bins;
    X.lower = d->lower;
    X.upper = d->upper;
    const bool f32_in = prim == PRIM_REDUCE || prim == PRIM_SCAN || prim == PRIM_SEG_REDUCE ||
                        prim == PRIM_HISTOGRAM || prim == PRIM_SELECT_IF;
    const void *src = f32_in                                    ? (const void *)d->f32
                      : prim == PRIM_UNIQUE || prim == PRIM_RLE ? (const void *)d->runs
                                                                : (const void *)d->keys;
    if (src == NULL) {
        fprintf(stderr, PROG " xdev side: %s's input is missing\n", prim_names[prim]);
        return 1;
    }
    X.out_bytes = prim == PRIM_REDUCE       ? 4
                  : prim == PRIM_SEG_REDUCE ? X.ns * 4
                  : prim == PRIM_HISTOGRAM  ? (size_t)X.nb * 8
                                            : n * 4;
    if (x_alloc(&X.in, n * 4, src) || x_alloc(&X.out, X.out_bytes, NULL)) return 1;
    if (prim == PRIM_SORT_PAIRS) {
        X.aux_bytes = n * 4;
        if (x_alloc(&X.in2, n * 4, d->vals) || x_alloc(&X.aux, X.aux_bytes, NULL)) return 1;
    } else if (prim == PRIM_SELECT_FLAGGED) {
        if (x_alloc(&X.in2, n, d->flags)) return 1;
    } else if (prim == PRIM_RLE) {
        X.aux_bytes = n * 8;
        if (x_alloc(&X.aux, X.aux_bytes, NULL)) return 1;
    }
    if ((prim == PRIM_SEG_REDUCE || prim == PRIM_SEG_SORT) &&
        x_alloc((void **)&X.off, (X.ns + 1) * 8, d->offsets))
        return 1;
    if ((prim == PRIM_SELECT_FLAGGED || prim == PRIM_SELECT_IF || prim == PRIM_UNIQUE ||
         prim == PRIM_RLE) &&
        x_alloc((void **)&X.num, 8, NULL))
        return 1;
    return 0;
}

static int x_run(void) {
    xdev_status_t st = XDEV_ERROR_INVALID_VALUE;
    const size_t n = X.n;
    switch (X.prim) {
    case PRIM_REDUCE:
        st = xdev_prim_reduce(X.in, XDEV_DTYPE_F32, n, XDEV_PRIM_SUM, X.out, X.s);
        break;
    case PRIM_SCAN:
        st = xdev_prim_scan(X.in, XDEV_DTYPE_F32, n, XDEV_PRIM_SUM, 0u, X.out, X.s);
        break;
    case PRIM_SORT_KEYS:
        st = xdev_prim_sort_keys(X.in, XDEV_DTYPE_U32, n, 0u, 0u, 0u, X.out, X.s);
        break;
    case PRIM_SORT_PAIRS:
        st = xdev_prim_sort_pairs(X.in, X.in2, XDEV_DTYPE_U32, 4, n, 0u, 0u, 0u, X.out, X.aux, X.s);
        break;
    case PRIM_SEG_REDUCE:
        st = xdev_prim_segmented_reduce(X.in, XDEV_DTYPE_F32, n, X.off, X.ns, XDEV_PRIM_SUM, X.out,
                                        X.s);
        break;
    case PRIM_SEG_SORT:
        st = xdev_prim_segmented_sort(X.in, NULL, XDEV_DTYPE_U32, 0, n, X.off, X.ns, 0u, 0u, 0u,
                                      X.out, NULL, X.s);
        break;
    case PRIM_HISTOGRAM:
        st = xdev_prim_histogram_even(X.in, XDEV_DTYPE_F32, n, (size_t)X.nb, X.lower, X.upper,
                                      X.out, X.s);
        break;
    case PRIM_SELECT_FLAGGED:
        st = xdev_prim_select_flagged(X.in, 4, X.in2, n, X.out, X.num, X.s);
        break;
    case PRIM_SELECT_IF:
        st = xdev_prim_select_if(X.in, XDEV_DTYPE_F32, n, SELECT_IF_PRED, X.out, X.num, X.s);
        break;
    case PRIM_UNIQUE:
        st = xdev_prim_unique(X.in, XDEV_DTYPE_U32, n, X.out, X.num, X.s);
        break;
    case PRIM_RLE:
        st = xdev_prim_run_length_encode(X.in, XDEV_DTYPE_U32, n, X.out, X.aux, X.num, X.s);
        break;
    default:
        break;
    }
    return st != XDEV_SUCCESS ? x_fail(prim_names[X.prim]) : 0;
}

static int x_sync(void) {
    return xdev_stream_synchronize(X.s) != XDEV_SUCCESS ? x_fail("xdev_stream_synchronize") : 0;
}

static int x_fetch(int which, void *host, size_t bytes) {
    const void *src = which == PRIM_OUT_MAIN ? X.out : which == PRIM_OUT_AUX ? X.aux : X.num;
    const size_t have = which == PRIM_OUT_MAIN  ? X.out_bytes
                        : which == PRIM_OUT_AUX ? X.aux_bytes
                        : X.num != NULL         ? 8
                                                : 0;
    if (src == NULL || bytes > have) {
        fprintf(stderr, PROG " xdev side: a fetch past an output\n");
        return 1;
    }
    return xdev_memcpy(host, src, bytes) != XDEV_SUCCESS ? x_fail("xdev_memcpy(result)") : 0;
}

static void x_teardown(void) {
    void *bufs[] = {X.in, X.in2, X.out, X.aux, X.off, X.num};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i] != NULL) CHECK(xdev_free(bufs[i]));
    X.in = X.in2 = X.out = X.aux = NULL;
    X.off = X.num = NULL;
    X.out_bytes = X.aux_bytes = 0;
}

/* ============================================================== checks */

typedef struct impl {
    int (*setup)(int prim, const prim_data_t *d);
    int (*run)(void);
    int (*sync)(void);
    int (*fetch)(int which, void *host, size_t bytes);
    void (*teardown)(void);
} impl_t;

static uint64_t hash_words(uint64_t h, const void *p, size_t bytes) { /* FNV-1a over 32-bit words */
    const unsigned char *b = p;
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        uint32_t w;
        memcpy(&w, b + i, 4);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}
#define HASH0 0xcbf29ce484222325ull

static void fetch(const impl_t *im, int which, void *host, size_t bytes) {
    if (im->fetch(which, host, bytes) != 0) exit(1);
}

/* |got - want| within a rounding bound of a sum whose absolute values sum
 * to `abs` (any order of f32 additions stays well inside it). */
static bool near(double got, double want, double abs) {
    return fabs(got - want) <= 1e-5 * abs + 1e-4;
}

/* The host's reference of the compactions: whether input item i is kept
 * (select_flagged, select_if) or begins a run (unique, rle). */
typedef bool (*keep_fn)(const hdata_t *h, size_t i);
static bool keep_flagged(const hdata_t *h, size_t i) {
    return h->flags[i] != 0;
}
static bool keep_if(const hdata_t *h, size_t i) {
    return h->f32[i] > 0.5f;
}
static bool keep_unique(const hdata_t *h, size_t i) {
    return i == 0 || h->runs[i] != h->runs[i - 1];
}

/* The output of primitive p of side `side` against the host's reference:
 * true when right (else a FAILED line saying where); *digest hashes it. */
static bool check(int p, const hdata_t *h, const impl_t *im, const char *side, int log2n,
                  uint64_t *digest) {
    const size_t n = h->d.n, ns = h->d.num_segments;
    char why[160] = "";
    uint64_t dg = HASH0;
    if (p == PRIM_REDUCE || p == PRIM_SCAN) {
        const size_t m = p == PRIM_REDUCE ? 1 : n;
        float *o = xmalloc(m * 4);
        fetch(im, PRIM_OUT_MAIN, o, m * 4);
        double ref = 0, abs = 0;
        for (size_t i = 0; i < n && why[0] == 0; i++) {
            ref += h->f32[i];
            abs += fabs(h->f32[i]);
            if (p == PRIM_SCAN && !near(o[i], ref, abs))
                snprintf(why, sizeof why, "out[%zu] = %.9g, the host's %.9g", i, o[i], ref);
        }
        if (p == PRIM_REDUCE && !near(o[0], ref, abs))
            snprintf(why, sizeof why, "the sum %.9g, the host's %.9g", o[0], ref);
        dg = hash_words(dg, o, m * 4);
        free(o);
    } else if (p == PRIM_SORT_KEYS || p == PRIM_SORT_PAIRS || p == PRIM_SEG_SORT) {
        uint32_t *o = xmalloc(n * 4), *v = NULL;
        fetch(im, PRIM_OUT_MAIN, o, n * 4);
        if (p == PRIM_SORT_PAIRS) {
            v = xmalloc(n * 4);
            fetch(im, PRIM_OUT_AUX, v, n * 4);
        }
        /* Sorted (in each segment), stable (pairs: the values, which are
         * the input indices, rise along equal keys), and the same multiset
         * as the input: of (segment, key) for seg_sort, of (value, key) for
         * the pairs (every pair out is a pair in, every index once), by a
         * sum of their hashes - sequential passes, no gather (the host
         * checks 2^28 items in a few seconds). */
        uint64_t in_sum = 0, out_sum = 0;
        size_t s = 0; /* seg_sort: item i's segment (the offsets cover 0 .. n) */
        for (size_t i = 0; i < n && why[0] == 0; i++) {
            bool start = i == 0;
            if (p == PRIM_SEG_SORT)
                while (s + 1 < ns && (size_t)h->offsets[s + 1] <= i) {
                    s++;
                    start = true;
                }
            const uint64_t tag_in = p == PRIM_SEG_SORT ? (uint64_t)s << 32
                                    : v != NULL        ? (uint64_t)i << 32
                                                       : 0;
            const uint64_t tag_out = p == PRIM_SEG_SORT ? (uint64_t)s << 32
                                     : v != NULL        ? (uint64_t)v[i] << 32
                                                        : 0;
            in_sum += mix(tag_in | h->keys[i]);
            out_sum += mix(tag_out | o[i]);
            if (!start && o[i] < o[i - 1])
                snprintf(why, sizeof why, "keys out of order at %zu", i);
            else if (v != NULL && !start && o[i] == o[i - 1] && v[i] <= v[i - 1])
                snprintf(why, sizeof why, "equal keys out of input order at %zu", i);
        }
        if (why[0] == 0 && in_sum != out_sum)
            snprintf(why, sizeof why, "the keys (and values) out are not those in (multiset hash)");
        dg = hash_words(dg, o, n * 4);
        if (v != NULL) dg = hash_words(dg, v, n * 4);
        free(o);
        free(v);
    } else if (p == PRIM_SEG_REDUCE) {
        float *o = xmalloc(ns * 4);
        fetch(im, PRIM_OUT_MAIN, o, ns * 4);
        for (size_t s = 0; s < ns && why[0] == 0; s++) {
            double ref = 0, abs = 0;
            for (int64_t i = h->offsets[s]; i < h->offsets[s + 1]; i++) {
                ref += h->f32[i];
                abs += fabs(h->f32[i]);
            }
            if (!near(o[s], ref, abs))
                snprintf(why, sizeof why, "segment %zu: %.9g, the host's %.9g", s, o[s], ref);
        }
        dg = hash_words(dg, o, ns * 4);
        free(o);
    } else if (p == PRIM_HISTOGRAM) {
        const size_t nb = (size_t)h->d.num_bins;
        int64_t *o = xmalloc(nb * 8), *ref = calloc(nb, 8);
        if (ref == NULL) exit(1);
        fetch(im, PRIM_OUT_MAIN, o, nb * 8);
        const double lo = h->d.lower, hi = h->d.upper;
        for (size_t i = 0; i < n; i++) { /* xdev/primitives.h's formula, in double */
            const double x = h->f32[i];
            if (!(x >= lo && x < hi)) continue;
            const double q = floor(((x - lo) * (double)nb) / (hi - lo));
            ref[q >= (double)(nb - 1) ? nb - 1 : (size_t)q]++;
        }
        for (size_t b = 0; b < nb && why[0] == 0; b++)
            if (o[b] != ref[b])
                snprintf(why, sizeof why, "bin %zu: %" PRId64 ", the host's %" PRId64, b, o[b],
                         ref[b]);
        dg = hash_words(dg, o, nb * 8);
        free(o);
        free(ref);
    } else { /* select_flagged, select_if, unique, rle: count, items (, lengths) */
        int64_t k = -1;
        fetch(im, PRIM_OUT_COUNT, &k, 8);
        const keep_fn keep = p == PRIM_SELECT_FLAGGED ? keep_flagged
                             : p == PRIM_SELECT_IF    ? keep_if
                                                      : keep_unique;
        const uint32_t *in = p == PRIM_SELECT_FLAGGED ? h->keys
                             : p == PRIM_SELECT_IF    ? (const uint32_t *)(const void *)h->f32
                                                      : h->runs;
        int64_t want = 0;
        for (size_t i = 0; i < n; i++)
            want += keep(h, i);
        dg = hash_words(dg, &k, 8);
        if (k != want) {
            snprintf(why, sizeof why, "count %" PRId64 ", the host's %" PRId64, k, want);
        } else {
            uint32_t *o = xmalloc((size_t)k * 4);
            int64_t *len = NULL;
            fetch(im, PRIM_OUT_MAIN, o, (size_t)k * 4);
            if (p == PRIM_RLE) {
                len = xmalloc((size_t)k * 8);
                fetch(im, PRIM_OUT_AUX, len, (size_t)k * 8);
            }
            size_t j = 0, run = 0;
            for (size_t i = 0; i <= n && why[0] == 0; i++) {
                const bool kept = i < n && keep(h, i);
                if (len != NULL && (kept || i == n) && i > 0) { /* run j - 1 ends before i */
                    if (len[j - 1] != (int64_t)(i - run))
                        snprintf(why, sizeof why, "run %zu: length %" PRId64 ", the host's %zu",
                                 j - 1, len[j - 1], i - run);
                    run = i;
                }
                if (!kept) continue;
                uint32_t bits;
                memcpy(&bits, in + i, 4); /* select_if: the f32's bits */
                if (o[j] != bits)
                    snprintf(why, sizeof why, "item %zu: %08x, the host's %08x (input %zu)", j,
                             o[j], bits, i);
                j++;
            }
            dg = hash_words(dg, o, (size_t)k * 4);
            if (len != NULL) dg = hash_words(dg, len, (size_t)k * 8);
            free(o);
            free(len);
        }
    }
    *digest = dg;
    if (why[0] != 0)
        printf("FAILED: %s side, %s of 2^%d: the output is wrong: %s\n", side, prim_names[p], log2n,
               why);
    return why[0] == 0;
}

/* ================================================================ sides */

static int i_call(void *p) {
    return ((const impl_t *)p)->run();
}
static int i_sync(void *p) {
    return ((const impl_t *)p)->sync();
}

void gpu_side(const char *side) {
    const bool det = strcmp(side, "det") == 0, cub = strcmp(side, "cub") == 0;
    impl_t im = {x_setup, x_run, x_sync, x_fetch, x_teardown};
    if (cub) {
#ifdef PRIM_BENCH_CUB
        im = (impl_t){prim_cub_setup, prim_cub_run, prim_cub_sync, prim_cub_fetch,
                      prim_cub_teardown};
#else
        printf("@missing\n");
        return;
#endif
    } else {
        CHECK(xdev_init());
        CHECK(xdev_device_parse(opt.device, &X.dev));
        CHECK(xdev_set_deterministic(det));
        CHECK(xdev_stream_create(X.dev, XDEV_STREAM_PRIORITY_NORMAL, &X.s));
    }
    const unsigned m = det ? opt.prims & FLOAT_SUMS : opt.prims;
    for (int k = opt.min_log2; k <= opt.max_log2; k++) {
        hdata_t h;
        make_data(&h, (size_t)1 << k, m);
        for (int p = 0; p < PRIM_COUNT; p++) {
            if (!wants(m, p)) continue;
            /* One untimed call first: a primitive that cannot run here is a
             * FAILED row (exit status 1), and the others are still timed. */
            if (im.setup(p, &h.d) != 0 || im.run() != 0 || im.sync() != 0) {
                printf("FAILED: %s side, %s of 2^%d: the call failed (its message is on stderr)\n",
                       side, prim_names[p], k);
                printf("@%s %d 0 1 0 0 00000000\n", prim_names[p], k);
                im.teardown();
                continue;
            }
            timed_t t = {i_call, i_sync, NULL, &im, CALLS};
            const double ns = time_best(&t);
            uint64_t digest = 0;
            bool good = true;
            if (opt.check) good = check(p, &h, &im, side, k, &digest);
            float sum = 0; /* the reduce's bits, every process (the deterministic ones) */
            if (p == PRIM_REDUCE) fetch(&im, PRIM_OUT_MAIN, &sum, 4);
            printf("@%s %d %.1f %d %d %016" PRIx64 " %08x\n", prim_names[p], k, ns, opt.check, good,
                   digest, f32_bits(sum));
            im.teardown();
        }
        free_data(&h);
    }
    if (!cub) { /* select_if's predicate kernel too: nothing left for a leak checker */
        CHECK(xdev_stream_destroy(X.s));
        CHECK(xdev_elementwise_cache_clear());
    }
}

/* =============================================================== parent */

typedef struct gres {
    double ns[PRIM_COUNT][MAXLOG + 1]; /* best over the processes; 0: none */
    uint64_t digest[PRIM_COUNT][MAXLOG + 1];
    bool checked[PRIM_COUNT][MAXLOG + 1], bad[PRIM_COUNT][MAXLOG + 1];
    char bits[MAXLOG + 1][9];
    bool missing;
} gres_t;

static void on_gpu_line(void *ctx, const char *line) {
    gres_t *r = ctx;
    char name[32], bits[9];
    int k, checked, good;
    double ns;
    uint64_t dg;
    if (strncmp(line, "missing", 7) == 0) r->missing = true;
    if (sscanf(line, "%31s %d %lf %d %d %" SCNx64 " %8s", name, &k, &ns, &checked, &good, &dg,
               bits) != 7 ||
        k < 0 || k > MAXLOG)
        return;
    for (int p = 0; p < PRIM_COUNT; p++)
        if (strcmp(name, prim_names[p]) == 0) {
            if (r->ns[p][k] == 0 || ns < r->ns[p][k]) r->ns[p][k] = ns;
            if (checked) {
                r->checked[p][k] = true;
                r->digest[p][k] = dg;
                r->bad[p][k] = r->bad[p][k] || !good;
            }
            if (p == PRIM_REDUCE) snprintf(r->bits[k], sizeof r->bits[k], "%s", bits);
        }
}

/* One side, opt.runs fresh processes (the first checks the outputs). */
static bool run_gpu_side(const char *side, gres_t *r) {
    char a[4][16], list[256] = "", tb[48];
    snprintf(a[0], 16, "%d", opt.min_log2);
    snprintf(a[1], 16, "%d", opt.max_log2);
    snprintf(a[2], 16, "%d", opt.reps);
    for (int p = 0; p < PRIM_COUNT; p++)
        if (wants(opt.prims, p)) {
            if (list[0] != 0) strcat(list, ",");
            strcat(list, prim_names[p]);
        }
    snprintf(tb, sizeof tb, "XDEV_CPU_THREADS=%d", opt.threads);
    char *argv[] = {PROG, "--side",     (char *)side, "--device", opt.device, "--min-log2",
                    a[0], "--max-log2", a[1],         "--reps",   a[2],       "--prims",
                    list, "--check",    a[3],         NULL};
    const char *over[] = {tb, NULL};
    char **envp = bench_env_with(over);
    memset(r, 0, sizeof *r);
    bool ok = true;
    for (int i = 0; i < opt.runs && ok && !r->missing; i++) {
        snprintf(a[3], 16, "%d", i == 0 && opt.check);
        ok = bench_run_side(PROG, "/proc/self/exe", side, argv, envp, on_gpu_line, r);
    }
    free(envp);
    return ok;
}

int gpu_parent(void) {
    static gres_t rx, rd, rc;
    bool ok = true, missing = false;
    const double t0 = now_s();
    const bool det = (opt.prims & FLOAT_SUMS) != 0;
    printf("%s: %s, 2^%d .. 2^%d items, best of %d processes x %d batches of %d calls (each "
           "side a fresh process)\n\n",
           PROG, opt.device, opt.min_log2, opt.max_log2, opt.runs, opt.reps, CALLS);
    ok = run_gpu_side("xdev", &rx) && ok;
    if (det) ok = run_gpu_side("det", &rd) && ok;
    ok = run_gpu_side("cub", &rc) && ok;
    if (rc.missing) {
        printf("ANCHOR MISSING: the CUB side (bench/gpu/prim_cub_anchor.cu) is not built: "
               "not compared\n");
        missing = true;
    }
    printf("| primitive      | n    | xdev us   | CUB us    | xdev Gitem/s | CUB Gitem/s | "
           "xdev speed / CUB's | goal >= 0.95x | outputs     | deterministic us | "
           "det time / xdev's | goal (reduce) <= 1.25x |\n");
    printf("|----------------|------|----------:|----------:|-------------:|------------:|"
           "-------------------:|---------------|-------------|-----------------:|"
           "------------------:|------------------------|\n");
    for (int p = 0; p < PRIM_COUNT; p++) {
        if (!wants(opt.prims, p)) continue;
        for (int k = opt.min_log2; k <= opt.max_log2; k++) {
            const double n = (double)((size_t)1 << k);
            const double x = rx.ns[p][k], c = rc.ns[p][k], d = rd.ns[p][k];
            const double sp = x > 0 ? c / x : 0, dr = x > 0 ? d / x : 0;
            const bool both = rx.checked[p][k] && rc.checked[p][k];
            const bool bad = rx.bad[p][k] || rc.bad[p][k] || rd.bad[p][k];
            const bool same = both && rx.digest[p][k] == rc.digest[p][k];
            const bool ran = x > 0 && c > 0 && (d > 0 || !float_sum(p));
            const char *outs = bad && !ran ? "call failed"
                               : bad       ? "WRONG"
                               : !both     ? "-"
                               : same      ? "same bits"
                               : exact(p)  ? "DIFFER"
                                           : "float order";
            if (bad || (both && !same && exact(p))) ok = false;
            char dus[32] = "-", drs[32] = "-"; /* the deterministic side: the f32 sums */
            if (d > 0) snprintf(dus, sizeof dus, "%.1f", d * 1e-3);
            if (d > 0 && x > 0) snprintf(drs, sizeof drs, "%.3fx", dr);
            printf("| %-14s | 2^%-2d | %9.1f | %9.1f | %12.3f | %11.3f | %17.3fx | %-13s | %-11s "
                   "| %16s | %17s | %-22s |\n",
                   prim_names[p], k, x * 1e-3, c * 1e-3, x > 0 ? n / x : 0, c > 0 ? n / c : 0, sp,
                   c > 0 && x > 0 ? verdict(sp >= 0.95) : "-", outs, dus, drs,
                   p != PRIM_REDUCE ? (float_sum(p) ? "(shown)" : "-")
                   : d > 0 && x > 0 ? verdict(dr <= 1.25)
                                    : "-");
        }
    }
    for (int p = 0; p < PRIM_COUNT; p++)
        for (int k = opt.min_log2; k <= opt.max_log2 && wants(opt.prims, p); k++)
            if (!rx.bad[p][k] && !rc.bad[p][k] && rx.checked[p][k] && rc.checked[p][k] &&
                exact(p) && rx.digest[p][k] != rc.digest[p][k])
                printf("FAILED: %s of 2^%d: xdev's and CUB's outputs differ (digests %016" PRIx64
                       " and %016" PRIx64 "; each passed the host's check)\n",
                       prim_names[p], k, rx.digest[p][k], rc.digest[p][k]);
    if (wants(opt.prims, PRIM_REDUCE)) {
        printf("\ndeterministic f32 sum bits (the CPU's run of this program prints the same):");
        for (int k = opt.min_log2; k <= opt.max_log2; k++)
            printf(" 2^%d:%s", k, rd.bits[k]);
        printf("\n");
    }
    printf("\n%s: the %s run took %.0f s\n", PROG, opt.device, now_s() - t0);
    if (!ok) printf("a side or an output FAILED (the messages are above)\n");
    return !ok ? 1 : missing ? 3 : 0;
}
