/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_prim_scan.c - the CPU backend's scan (xdev_prim_scan):
 * sums, min and max over the device's worker pool, floating sums in the
 * fixed order of xdev/primitives.h (so the bits equal a GPU's deterministic
 * mode for any thread count), as one pass over memory. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu_clock.h"
#include "cpu_prim_impl.h"

/* ------------------------------------------------------------ scan
 * A chained scan over tiles of TILE chunks, claimed in order by the pool's
 * threads from one counter. A tile's thread sums its chunks (step 1: TILE
 * sequential sums side by side, independent chains whose additions
 * overlap), waits for the carry out of the tile before it (the offset of
 * its first chunk), turns its totals into offsets left to right (step 2)
 * and passes its own carry on, then writes its outputs (step 3) from the
 * tile it read a step before, still in the core's L2: the input crosses memory
 * once, as in a copy (the two-pass form read it twice, one dependent add
 * per element per thread). Every value is the one the fixed order gives
 * (the same additions in the same order), for any thread count. The wait
 * cannot deadlock: the tile before was claimed earlier by a body that is
 * running and waits only on tiles before it. A thread holds two tiles
 * with their totals out; once the older one's carry is out it claims a
 * third and takes its totals while it writes the older one's outputs
 * (scan_claim: one walk over both tiles, in vector lanes or, for f32/f64
 * sums, in the scalar walk - 16 independent chains instead of 8, the next
 * input coming from memory while this output goes out); between the two it
 * waits on nothing, so the argument holds. */

#define TILE 8 /* chunks per tile: 32 Ki elements, 128-256 KiB of input */

typedef struct scan_slot {
    partial_t tot[TILE]; /* its chunks' totals (state >= 1) */
    partial_t carry;     /* the offset after the tile (state 2) */
    atomic_uint state;   /* 0: nothing yet; 1: tot; 2: tot and carry */
} scan_slot_t;

typedef struct scan_run {
    const prim_job_t *j;
    size_t tiles;
    atomic_size_t next; /* first tile not yet claimed */
    scan_slot_t *slot;  /* one per tile */
} scan_run_t;

/* The TILE chunks of a tile run side by side, chunk k SKEW elements behind
 * chunk k - 1: chunks are 16 or 32 KiB apart, so element i of every chunk
 * would fall in the same L1 set (and alias in the 4 KiB store/load check);
 * skewed, each stream has its own set. STEP(k, x) does element x of chunk k
 * (in order within each chunk, as the fixed order needs). */
#define SKEW 16
#define SKEWED(b, STEP, SUF, SUM, ACC, PUT)                                                        \
    do {                                                                                           \
        for (size_t it = 0; it < (TILE - 1) * SKEW; it++)                                          \
            for (size_t k = 0; k < TILE; k++)                                                      \
                if (k * SKEW <= it) STEP(k, (b) + k * CH + it - k * SKEW, SUF, SUM, ACC, PUT);     \
        for (size_t it = (TILE - 1) * SKEW; it < CH; it++)                                         \
            for (size_t k = 0; k < TILE; k++)                                                      \
                STEP(k, (b) + k * CH + it - k * SKEW, SUF, SUM, ACC, PUT);                         \
        for (size_t it = CH; it < CH + (TILE - 1) * SKEW; it++)                                    \
            for (size_t k = 0; k < TILE; k++)                                                      \
                if (it - k * SKEW < CH) STEP(k, (b) + k * CH + it - k * SKEW, SUF, SUM, ACC, PUT); \
    } while (0)
#define SUM_STEP(k, x, SUF, SUM, ACC, PUT) r[k] = r[k] + (SUM)load_##SUF(in, x)
#define MIN_STEP(k, x, SUF, SUM, ACC, PUT) r[k] = op_##SUF(XDEV_PRIM_MIN, r[k], load_##SUF(in, x))
#define MAX_STEP(k, x, SUF, SUM, ACC, PUT) r[k] = op_##SUF(XDEV_PRIM_MAX, r[k], load_##SUF(in, x))
#define INCL_STEP(k, x, SUF, SUM, ACC, PUT)                                                        \
    do {                                                                                           \
        r[k] = r[k] + (SUM)load_##SUF(in, x);                                                      \
        PUT(out, x, (ACC)r[k]);                                                                    \
    } while (0)
#define EXCL_STEP(k, x, SUF, SUM, ACC, PUT)                                                        \
    do {                                                                                           \
        SUM v_ = (SUM)load_##SUF(in, x);                                                           \
        PUT(out, x, (ACC)r[k]);                                                                    \
        r[k] = r[k] + v_;                                                                          \
    } while (0)
/* Min and max outputs (op constant, so each step is a compare and a pick
 * with no test of the op). */
#define EXT_STEP(k, x, SUF, ACC, PUT, OP, EXCL)                                                    \
    do {                                                                                           \
        ACC v_ = load_##SUF(in, x);                                                                \
        if (EXCL) PUT(out, x, r[k]);                                                               \
        r[k] = op_##SUF(OP, r[k], v_);                                                             \
        if (!(EXCL)) PUT(out, x, r[k]);                                                            \
    } while (0)
#define MIN_INCL_STEP(k, x, SUF, SUM, ACC, PUT) EXT_STEP(k, x, SUF, ACC, PUT, XDEV_PRIM_MIN, 0)
#define MIN_EXCL_STEP(k, x, SUF, SUM, ACC, PUT) EXT_STEP(k, x, SUF, ACC, PUT, XDEV_PRIM_MIN, 1)
#define MAX_INCL_STEP(k, x, SUF, SUM, ACC, PUT) EXT_STEP(k, x, SUF, ACC, PUT, XDEV_PRIM_MAX, 0)
#define MAX_EXCL_STEP(k, x, SUF, SUM, ACC, PUT) EXT_STEP(k, x, SUF, ACC, PUT, XDEV_PRIM_MAX, 1)
/* Step 3 of chunk k of a tile and step 1 of chunk k of the tile d2
 * elements on (totals in s[]), side by side: 16 independent chains instead
 * of 8 (a floating add's latency, 4 cycles on older Intel cores, hides
 * behind the other chains), and the next tile's input is read while this
 * one's outputs are written. Each chain still adds in its chunk's order:
 * the same bits. The next tile's element is loaded before this one's
 * output is stored (a later load whose address matches an earlier store's
 * low 12 bits waits on Intel: tiles are 2^17 bytes apart). Measured on the
 * 2-core AMD VM, 1 thread, f32: 1.06x at 2^20 (cache), 1.1x at 2^24; the
 * walk is then bound by its two scalar adds per element (without the
 * stores it ran only 8% faster), not by their latency. */
#define FUSED_INCL_STEP(k, x, SUF, SUM, ACC, PUT)                                                  \
    do {                                                                                           \
        SUM w_ = (SUM)load_##SUF(in, (x) + d2), v_ = (SUM)load_##SUF(in, x);                       \
        s[k] = s[k] + w_;                                                                          \
        r[k] = r[k] + v_;                                                                          \
        PUT(out, x, (ACC)r[k]);                                                                    \
    } while (0)
#define FUSED_EXCL_STEP(k, x, SUF, SUM, ACC, PUT)                                                  \
    do {                                                                                           \
        s[k] = s[k] + (SUM)load_##SUF(in, (x) + d2);                                               \
        PUT(out, x, (ACC)r[k]);                                                                    \
        r[k] = r[k] + (SUM)load_##SUF(in, x); /* after the store: not in place */                  \
    } while (0)

/* ------------------------------------------------------------ vector lanes
 * Full tiles of sums where the CPU has AVX2 (asked once at run time): lane
 * k of a register is chunk k's running sum, so each lane does exactly the
 * additions of the SKEWED walk above, in the same order (a vector add
 * rounds each lane as the scalar add does): the same bits. A block of W
 * consecutive elements of each chunk is loaded (one row per chunk),
 * transposed in registers (column m: element m of every chunk), summed
 * column by column, transposed back and stored: one vector store per W
 * outputs of a chunk instead of W scalar stores. The chunks run level, not
 * skewed: rows stay aligned and nothing is left for scalar ramps (skewed by
 * SKEW, with the ramps one element at a time, f32 moved 0.57x of a copy's
 * bytes on the 2-core VM; level, 0.77x: the set conflicts the skew avoids
 * for the scalar walk cost less here than the ramps did). 32-bit lanes:
 * 8 chunks in one register, blocks of 8; 64-bit lanes: chunks 0-3 and 4-7
 * in two, blocks of 4. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SCAN_VEC 1
#define AVX2_INLINE static inline __attribute__((target("avx2"), always_inline))

enum { V_TOTALS, V_INCL, V_EXCL };
#define V_PUT(T, a, v) (nt ? _mm256_stream_##T(a, v) : _mm256_storeu_##T(a, v))

/* 8 x 8 of 32-bit values: r[k] lane m <-> r[m] lane k. */
AVX2_INLINE void tr8x8(__m256 *r) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

/* 4 x 4 of 64-bit values. */
AVX2_INLINE void tr4x4(__m256d *r) {
    __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

AVX2_INLINE __m256 add_f32x8(__m256 a, __m256 b) {
    return _mm256_add_ps(a, b);
}
AVX2_INLINE __m256 add_u32x8(__m256 a, __m256 b) {
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
}
AVX2_INLINE __m256d add_f64x4(__m256d a, __m256d b) {
    return _mm256_add_pd(a, b);
}
AVX2_INLINE __m256d add_u64x4(__m256d a, __m256d b) {
    return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(a), _mm256_castpd_si256(b)));
}

/* Column m of a block into the running sums acc (and, but for V_TOTALS,
 * the column's outputs into v[m]). */
#define V_COLUMNS(V, ADD, acc, v, W, mode)                                                         \
    for (int c_ = 0; c_ < (W); c_++) {                                                             \
        V t_ = (v)[c_];                                                                            \
        if ((mode) == V_INCL) {                                                                    \
            (acc) = ADD((acc), t_);                                                                \
            (v)[c_] = (acc);                                                                       \
        } else {                                                                                   \
            if ((mode) == V_EXCL) (v)[c_] = (acc);                                                 \
            (acc) = ADD((acc), t_);                                                                \
        }                                                                                          \
    }

/* One tile of 32-bit lanes (E: float or uint32_t) from x (its first chunk)
 * into y (unless V_TOTALS); r[k] in: chunk k's offset (0 or -0 for
 * totals); out: its sum. */
#define V_TILE32(NAME, E, ADD)                                                                     \
    AVX2_INLINE void NAME##_body(const E *x, E *y, E *r, int mode, bool nt, const E *x2, E *r2,    \
                                 bool two) {                                                       \
        __m256 acc = _mm256_loadu_ps((const float *)r), acc2 = acc;                                \
        if (two) acc2 = _mm256_loadu_ps((const float *)r2);                                        \
        for (size_t p = 0; p < CH; p += 8) {                                                       \
            __m256 v[8], w[8];                                                                     \
            for (int k = 0; k < 8; k++)                                                            \
                v[k] = _mm256_loadu_ps((const float *)(x + k * CH + p));                           \
            tr8x8(v);                                                                              \
            if (two) {                                                                             \
                for (int k = 0; k < 8; k++)                                                        \
                    w[k] = _mm256_loadu_ps((const float *)(x2 + k * CH + p));                      \
                tr8x8(w);                                                                          \
                for (int m = 0; m < 8; m++) { /* the two chains interleaved */                     \
                    V_COLUMNS(__m256, ADD, acc, v + m, 1, mode);                                   \
                    V_COLUMNS(__m256, ADD, acc2, w + m, 1, V_TOTALS);                              \
                }                                                                                  \
            } else {                                                                               \
                V_COLUMNS(__m256, ADD, acc, v, 8, mode);                                           \
            }                                                                                      \
            if (mode == V_TOTALS) continue;                                                        \
            tr8x8(v);                                                                              \
            for (int k = 0; k < 8; k++)                                                            \
                V_PUT(ps, (float *)(y + k * CH + p), v[k]);                                        \
        }                                                                                          \
        _mm256_storeu_ps((float *)r, acc);                                                         \
        if (two) _mm256_storeu_ps((float *)r2, acc2);                                              \
    }                                                                                              \
    V_DISPATCH(NAME, E)

/* The same with 64-bit lanes: chunks 0-3 in one register, 4-7 in another. */
#define V_TILE64(NAME, E, ADD)                                                                     \
    AVX2_INLINE void NAME##_body(const E *x, E *y, E *r, int mode, bool nt, const E *x2, E *r2,    \
                                 bool two) {                                                       \
        __m256d acc[2], acc2[2];                                                                   \
        for (int g = 0; g < 2; g++) {                                                              \
            acc[g] = acc2[g] = _mm256_loadu_pd((const double *)(r + 4 * g));                       \
            if (two) acc2[g] = _mm256_loadu_pd((const double *)(r2 + 4 * g));                      \
        }                                                                                          \
        for (size_t p = 0; p < CH; p += 4) {                                                       \
            __m256d a[2][4], b[2][4];                                                              \
            for (int g = 0; g < 2; g++) {                                                          \
                for (int k = 0; k < 4; k++)                                                        \
                    a[g][k] = _mm256_loadu_pd((const double *)(x + (k + 4 * g) * CH + p));         \
                tr4x4(a[g]);                                                                       \
                if (!two) continue;                                                                \
                for (int k = 0; k < 4; k++)                                                        \
                    b[g][k] = _mm256_loadu_pd((const double *)(x2 + (k + 4 * g) * CH + p));        \
                tr4x4(b[g]);                                                                       \
            }                                                                                      \
            for (int m = 0; m < 4; m++) /* the independent chains interleaved */                   \
                for (int g = 0; g < 2; g++) {                                                      \
                    V_COLUMNS(__m256d, ADD, acc[g], a[g] + m, 1, mode);                            \
                    if (two) V_COLUMNS(__m256d, ADD, acc2[g], b[g] + m, 1, V_TOTALS);              \
                }                                                                                  \
            if (mode == V_TOTALS) continue;                                                        \
            for (int g = 0; g < 2; g++) {                                                          \
                tr4x4(a[g]);                                                                       \
                for (int k = 0; k < 4; k++)                                                        \
                    V_PUT(pd, (double *)(y + (k + 4 * g) * CH + p), a[g][k]);                      \
            }                                                                                      \
        }                                                                                          \
        for (int g = 0; g < 2; g++) {                                                              \
            _mm256_storeu_pd((double *)(r + 4 * g), acc[g]);                                       \
            if (two) _mm256_storeu_pd((double *)(r2 + 4 * g), acc2[g]);                            \
        }                                                                                          \
    }                                                                                              \
    V_DISPATCH(NAME, E)

/* NAME: the body with mode and `two` constant (x2 NULL: one tile). */
#define V_DISPATCH(NAME, E)                                                                        \
    __attribute__((target("avx2"))) static void NAME(const E *x, E *y, E *r, int mode, bool nt,    \
                                                     const E *x2, E *r2) {                         \
        if (mode == V_TOTALS)                                                                      \
            NAME##_body(x, y, r, V_TOTALS, nt, x2, r2, false);                                     \
        else if (mode == V_INCL && x2 != NULL)                                                     \
            NAME##_body(x, y, r, V_INCL, nt, x2, r2, true);                                        \
        else if (mode == V_INCL)                                                                   \
            NAME##_body(x, y, r, V_INCL, nt, x2, r2, false);                                       \
        else if (x2 != NULL)                                                                       \
            NAME##_body(x, y, r, V_EXCL, nt, x2, r2, true);                                        \
        else                                                                                       \
            NAME##_body(x, y, r, V_EXCL, nt, x2, r2, false);                                       \
    }

V_TILE32(vtile_f32, float, add_f32x8)
V_TILE32(vtile_u32, uint32_t, add_u32x8)
V_TILE64(vtile_f64, double, add_f64x4)
V_TILE64(vtile_u64, uint64_t, add_u64x4)

/* Whether this CPU runs the vector tiles (asked once): wherever it has AVX2
 * unless XDEV_CPU_SCAN_ISA=baseline. Measured 2026-11-29, f32 2^24..2^26,
 * prim_bench: on the 2-core AMD EPYC VM the lanes moved 1.0-1.2x of a copy's
 * bytes against the scalar walk's 0.4-0.7x; on the GPU machine's 16-core
 * Intel Xeon (16 threads) the lanes that never stream (below) moved 148.7,
 * 87.0 and 67.5 GB/s at 2^24, 2^25, 2^26, the scalar walk 106.1, 70.2 and
 * 60.2, and the lanes streaming past the cache 17-21. */
static bool scan_vec_ok(void) {
    if (xdev_cpu_state.scan_isa == 1) return false;
    return (xdev_cpu_features() & XDEV_CPU_FEAT_AVX2) != 0;
}

/* Whether the vector tiles may stream their outputs past the cache: on AMD
 * CPUs under auto, and under XDEV_CPU_SCAN_ISA=avx2; never on others under
 * auto (the Xeon above: 8x slower streaming) nor under avx2-cached. */
static bool scan_stream_ok(void) {
    if (xdev_cpu_state.scan_isa == 2) return true;
    if (xdev_cpu_state.scan_isa != 0) return false;
    return (xdev_cpu_features() & XDEV_CPU_FEAT_AMD) != 0;
}

/* Output bytes from which the vector tiles store past the cache (as a
 * large copy's memcpy does): more than a core's share of a last-level cache.
 * A store that misses the cache first reads its line: the output would
 * cross memory twice. On the 2-core AMD VM streaming pays even where input
 * and output fit its 32 MiB L3 (2^21-2^22 f32, 1 thread: 0.145-0.154
 * against 0.199-0.228 ns an element with the bound at the L3's size). On
 * the 16-core Xeon streaming was what made the lanes slow (scan_stream_ok).
 * -DXDEV_CPU_SCAN_STREAM_BYTES=N moves the bound at build time. */
#ifdef XDEV_CPU_SCAN_STREAM_BYTES
#define SCAN_STREAM_BYTES ((size_t)(XDEV_CPU_SCAN_STREAM_BYTES))
#else
#define SCAN_STREAM_BYTES ((size_t)8 << 20)
#endif

/* A full tile's sums (op SUM) in vector lanes, chunks [c0, c0 + TILE):
 * mode V_TOTALS leaves chunk k's total in tot[k]; otherwise the outputs
 * from the offsets in j->part, and where c2 != SIZE_MAX the totals of the
 * full tile at chunk c2 into tot side by side (two independent chains, and
 * the next tile's input comes in while this one's outputs go out). False
 * where this CPU or dtype has no such path (the scalar walk then runs). */
static bool scan_vec_tile(const prim_job_t *j, size_t c0, partial_t *tot, int mode, size_t c2) {
    if (!scan_vec_ok()) return false;
    const size_t b = c0 * CH, b2 = c2 * CH;
    const bool nt = mode != V_TOTALS && ((uintptr_t)j->out & 31) == 0 &&
                    j->count * xdev_dtype_size(j->dtype) >= SCAN_STREAM_BYTES && scan_stream_ok();
    const bool two = mode != V_TOTALS && c2 != SIZE_MAX;
    union {
        float f[TILE];
        double d[TILE];
        uint32_t u32[TILE];
        uint64_t u64[TILE];
    } r, r2;
    switch (j->dtype) {
#define V_CASE(DT, FIELD, E, FN)                                                                   \
    case DT:                                                                                       \
        for (int k = 0; k < TILE; k++) {                                                           \
            r.FIELD[k] =                                                                           \
                mode == V_TOTALS ? (E)identity_##FN(XDEV_PRIM_SUM) : (E)j->part[c0 + k].v.FIELD;   \
            r2.FIELD[k] = (E)identity_##FN(XDEV_PRIM_SUM);                                         \
        }                                                                                          \
        vtile_##FN((const E *)j->in + b, (E *)j->out + b, r.FIELD, mode, nt,                       \
                   two ? (const E *)j->in + b2 : NULL, r2.FIELD);                                  \
        if (nt) _mm_sfence();                                                                      \
        if (mode == V_EXCL && c0 == 0) ((E *)j->out)[0] = (E)0; /* +0, not the identity -0 */      \
        for (int k = 0; k < TILE && (mode == V_TOTALS || two); k++)                                \
            tot[k].v.FIELD = mode == V_TOTALS ? r.FIELD[k] : r2.FIELD[k];                          \
        return true;
        V_CASE(XDEV_DTYPE_F32, f, float, f32)
        V_CASE(XDEV_DTYPE_F64, d, double, f64)
        V_CASE(XDEV_DTYPE_I32, u32, uint32_t, u32)
        V_CASE(XDEV_DTYPE_U32, u32, uint32_t, u32)
        V_CASE(XDEV_DTYPE_I64, u64, uint64_t, u64)
        V_CASE(XDEV_DTYPE_U64, u64, uint64_t, u64)
    default:
        return false;
    }
}
#else
enum { V_TOTALS, V_INCL, V_EXCL };
static bool scan_vec_tile(const prim_job_t *j, size_t c0, partial_t *tot, int mode, size_t c2) {
    (void)j, (void)c0, (void)tot, (void)mode, (void)c2;
    return false;
}
#endif

/* Steps 1 and 3 of one full tile, chunks [c0, c0 + TILE), per dtype. Step 1
 * leaves each chunk's total in part[c]; step 3 reads its offset there. */
#define TILE_FNS(SUF, ACC, SUM, FIELD, LOAD, STORE)                                                \
    static void tile_totals_##SUF(const prim_job_t *j, size_t c0, partial_t *tot) {                \
        const size_t b = c0 * CH;                                                                  \
        const void *in = j->in;                                                                    \
        if (j->op == XDEV_PRIM_SUM) {                                                              \
            if (scan_vec_tile(j, c0, tot, V_TOTALS, SIZE_MAX)) return;                             \
            SUM r[TILE];                                                                           \
            for (int k = 0; k < TILE; k++)                                                         \
                r[k] = (SUM)identity_##SUF(XDEV_PRIM_SUM);                                         \
            SKEWED(b, SUM_STEP, SUF, SUM, ACC, -);                                                 \
            for (int k = 0; k < TILE; k++)                                                         \
                tot[k].v.FIELD = r[k];                                                             \
        } else {                                                                                   \
            const int op = j->op;                                                                  \
            ACC r[TILE];                                                                           \
            for (int k = 0; k < TILE; k++)                                                         \
                r[k] = identity_##SUF(op);                                                         \
            if (op == XDEV_PRIM_MIN)                                                               \
                SKEWED(b, MIN_STEP, SUF, SUM, ACC, -);                                             \
            else                                                                                   \
                SKEWED(b, MAX_STEP, SUF, SUM, ACC, -);                                             \
            for (int k = 0; k < TILE; k++)                                                         \
                tot[k].v.FIELD = (SUM)r[k];                                                        \
        }                                                                                          \
    }                                                                                              \
    /* (Each element is read before it is written: in place works.) */                             \
    static void tile_outputs_##SUF(const prim_job_t *j, size_t c0) {                               \
        const size_t b = c0 * CH;                                                                  \
        const void *in = j->in;                                                                    \
        void *out = j->out;                                                                        \
        if (j->op != XDEV_PRIM_SUM) { /* the 8 chunks side by side, as the sums */                 \
            ACC r[TILE];                                                                           \
            for (int k = 0; k < TILE; k++)                                                         \
                r[k] = (ACC)(SUM)j->part[c0 + k].v.FIELD;                                          \
            if (j->op == XDEV_PRIM_MIN && j->exclusive)                                            \
                SKEWED(b, MIN_EXCL_STEP, SUF, SUM, ACC, STORE);                                    \
            else if (j->op == XDEV_PRIM_MIN)                                                       \
                SKEWED(b, MIN_INCL_STEP, SUF, SUM, ACC, STORE);                                    \
            else if (j->exclusive)                                                                 \
                SKEWED(b, MAX_EXCL_STEP, SUF, SUM, ACC, STORE);                                    \
            else                                                                                   \
                SKEWED(b, MAX_INCL_STEP, SUF, SUM, ACC, STORE);                                    \
            return;                                                                                \
        }                                                                                          \
        if (!scan_vec_tile(j, c0, NULL, j->exclusive ? V_EXCL : V_INCL, SIZE_MAX)) {               \
            SUM r[TILE];                                                                           \
            for (int k = 0; k < TILE; k++)                                                         \
                r[k] = (SUM)j->part[c0 + k].v.FIELD;                                               \
            if (j->exclusive)                                                                      \
                SKEWED(b, EXCL_STEP, SUF, SUM, ACC, STORE);                                        \
            else                                                                                   \
                SKEWED(b, INCL_STEP, SUF, SUM, ACC, STORE);                                        \
        }                                                                                          \
        if (j->exclusive && c0 == 0) STORE(out, 0, (ACC)0); /* +0, not the identity -0 */          \
    }

#define FUSED_FNS(SUF, ACC, SUM, FIELD, STORE)                                                     \
    /* Step 3 of the full tile at chunk c0 and step 1 of the full tile at                          \
     * chunk c2 (> c0) into tot2, in one scalar walk (sums whose step 1 is                         \
     * not in the reduce's lanes). */                                                              \
    static void tile_fused_##SUF(const prim_job_t *j, size_t c0, size_t c2, partial_t *tot2) {     \
        const size_t b = c0 * CH, d2 = (c2 - c0) * CH;                                             \
        const void *in = j->in;                                                                    \
        void *out = j->out;                                                                        \
        SUM r[TILE], s[TILE];                                                                      \
        for (int k = 0; k < TILE; k++) {                                                           \
            r[k] = (SUM)j->part[c0 + k].v.FIELD;                                                   \
            s[k] = (SUM)identity_##SUF(XDEV_PRIM_SUM);                                             \
        }                                                                                          \
        if (j->exclusive)                                                                          \
            SKEWED(b, FUSED_EXCL_STEP, SUF, SUM, ACC, STORE);                                      \
        else                                                                                       \
            SKEWED(b, FUSED_INCL_STEP, SUF, SUM, ACC, STORE);                                      \
        for (int k = 0; k < TILE; k++)                                                             \
            tot2[k].v.FIELD = s[k];                                                                \
        if (j->exclusive && c0 == 0) STORE(out, 0, (ACC)0); /* +0, not the identity -0 */          \
    }

TILE_FNS(f32, float, float, f, LD_F32, ST_F32)
TILE_FNS(f16, float, float, f, LD_F16, ST_F16)
TILE_FNS(bf16, float, float, f, LD_BF16, ST_BF16)
TILE_FNS(f64, double, double, d, LD_F64, ST_F64)
TILE_FNS(i32, int32_t, uint32_t, u32, LD_I32, ST_I32)
TILE_FNS(i64, int64_t, uint64_t, u64, LD_I64, ST_I64)
TILE_FNS(u32, uint32_t, uint32_t, u32, LD_U32, ST_U32)
TILE_FNS(u64, uint64_t, uint64_t, u64, LD_U64, ST_U64)
FUSED_FNS(f32, float, float, f, ST_F32)
FUSED_FNS(f64, double, double, d, ST_F64)

#define SCAN_DTYPES(X)                                                                             \
    X(XDEV_DTYPE_F32, f32, float, float, f)                                                        \
    X(XDEV_DTYPE_F16, f16, float, float, f)                                                        \
    X(XDEV_DTYPE_BF16, bf16, float, float, f)                                                      \
    X(XDEV_DTYPE_F64, f64, double, double, d)                                                      \
    X(XDEV_DTYPE_I32, i32, int32_t, uint32_t, u32)                                                 \
    X(XDEV_DTYPE_I64, i64, int64_t, uint64_t, u64)                                                 \
    X(XDEV_DTYPE_U32, u32, uint32_t, uint32_t, u32)                                                \
    X(XDEV_DTYPE_U64, u64, uint64_t, uint64_t, u64)

/* Step 1 of chunks [c0, c1): their totals into tot[0 .. c1 - c0). */
static void scan_totals(const prim_job_t *j, size_t c0, size_t c1, partial_t *tot) {
    bool full = c1 - c0 == TILE && c1 * CH <= j->count;
    if (j->op == XDEV_PRIM_SUM && j->any_order) { /* the reduce's vector lanes */
        for (size_t c = c0; c < c1; c++) {
            size_t b = c * CH, e = b + CH < j->count ? b + CH : j->count;
            switch (j->dtype) {
#define LANES_CASE(DT, SUF, ACC, SUM, FIELD)                                                       \
    case DT:                                                                                       \
        tot[c - c0].v.FIELD = (SUM)chunk_sum_##SUF(j->in, b, e, false);                            \
        break;
                SCAN_DTYPES(LANES_CASE)
            default:
                break;
            }
        }
        return;
    }
    switch (j->dtype) {
#define TOTALS_CASE(DT, SUF, ACC, SUM, FIELD)                                                      \
    case DT:                                                                                       \
        if (full)                                                                                  \
            tile_totals_##SUF(j, c0, tot);                                                         \
        else                                                                                       \
            for (size_t c = c0; c < c1; c++) {                                                     \
                size_t e = (c + 1) * CH < j->count ? (c + 1) * CH : j->count;                      \
                tot[c - c0].v.FIELD = (SUM)chunk_total_##SUF(j->in, c * CH, e, j->op);             \
            }                                                                                      \
        break;
        SCAN_DTYPES(TOTALS_CASE)
    default:
        break;
    }
}

/* Step 2 over n chunks: *o (the offset of the first) and their totals give
 * each one's offset (into off[], unless NULL); *o ends as the offset after
 * the last. */
static void scan_offsets(const prim_job_t *j, size_t n, const partial_t *tot, partial_t *off,
                         partial_t *o) {
    switch (j->dtype) {
#define OFFSETS_CASE(DT, SUF, ACC, SUM, FIELD)                                                     \
    case DT:                                                                                       \
        for (size_t c = 0; c < n; c++) {                                                           \
            if (off != NULL) off[c] = *o;                                                          \
            o->v.FIELD = (SUM)op_##SUF(j->op, (ACC)o->v.FIELD, (ACC)tot[c].v.FIELD);               \
        }                                                                                          \
        break;
        SCAN_DTYPES(OFFSETS_CASE)
    default:
        break;
    }
}

/* Step 3 of chunks [c0, c1) from their offsets in part[]. */
static void scan_outputs(const prim_job_t *j, size_t c0, size_t c1) {
    bool full = c1 - c0 == TILE && c1 * CH <= j->count;
    switch (j->dtype) {
#define OUTPUTS_CASE(DT, SUF, ACC, SUM, FIELD)                                                     \
    case DT:                                                                                       \
        if (full)                                                                                  \
            tile_outputs_##SUF(j, c0);                                                             \
        else                                                                                       \
            for (size_t c = c0; c < c1; c++) {                                                     \
                size_t e = (c + 1) * CH < j->count ? (c + 1) * CH : j->count;                      \
                chunk_scan_##SUF(j, c *CH, e, (ACC)j->part[c].v.FIELD);                            \
            }                                                                                      \
        break;
        SCAN_DTYPES(OUTPUTS_CASE)
    default:
        break;
    }
}

/* Step 3 of the full tile at chunk c0 and step 1 of the full tile at chunk
 * c2 side by side in the scalar walk (op SUM); false where step 1 runs in
 * the reduce's lanes (integers: exact in any order), for f16/bf16 (their
 * conversions, not the adds, bound them) and for an exclusive scan in place
 * (the fused exclusive step reads an element after writing its output: it
 * needs no register for the element, where 16 chains leave none free - with
 * one, exclusive f32 ran 1.35x slower than the separate walks). */
static bool scan_fused_scalar(const prim_job_t *j, size_t c0, size_t c2, partial_t *tot2) {
    if (j->any_order || (j->exclusive && j->in == j->out)) return false;
    switch (j->dtype) {
    case XDEV_DTYPE_F32:
        tile_fused_f32(j, c0, c2, tot2);
        return true;
    case XDEV_DTYPE_F64:
        tile_fused_f64(j, c0, c2, tot2);
        return true;
    default:
        return false;
    }
}

/* The offset of chunk 0: the op's identity. */
static partial_t scan_identity(const prim_job_t *j) {
    partial_t o;
    memset(&o, 0, sizeof o);
    switch (j->dtype) {
#define IDENTITY_CASE(DT, SUF, ACC, SUM, FIELD)                                                    \
    case DT:                                                                                       \
        o.v.FIELD = (SUM)identity_##SUF(j->op);                                                    \
        break;
        SCAN_DTYPES(IDENTITY_CASE)
    default:
        break;
    }
    return o;
}

/* Tile p's state once it is not 0, or 0 after about patience_ns (-1: wait)
 * (pause-spins, then yields: on a busy machine its thread may get the core). */
#define SCAN_HELP_NS 100000 /* a tile's totals take 10-30 us; a time slice, milliseconds */
static unsigned scan_state(scan_slot_t *s, bool until_carry, int64_t patience_ns) {
    int64_t start = 0;
    for (unsigned i = 0;; i++) {
        unsigned st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == 2 || (st == 1 && !until_carry)) return st;
        if (i < 64) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        if (start == 0) start = xdev_cpu_now_ns();
        if (patience_ns >= 0 && xdev_cpu_now_ns() - start > patience_ns) return st;
        sched_yield();
    }
}

/* The carry into tile t (t > 0): the nearest tile before it whose carry is
 * out, then the totals of the tiles between, in order - the same additions
 * as a strict chain, so the same bits. A tile whose totals are not out yet
 * (its thread may be descheduled on a busy machine) has them computed here
 * from its input instead of waited for, except in place (its thread may be
 * about to overwrite that input). At most LOOKBACK tiles back; then wait. */
#define LOOKBACK 32
static partial_t scan_carry_in(const prim_job_t *j, scan_slot_t *slot, size_t t) {
    partial_t own[LOOKBACK][TILE]; /* totals computed here */
    const partial_t *tot[LOOKBACK];
    const bool may_help = j->in != j->out;
    size_t n = 0, p = t;
    partial_t o;
    for (;;) {
        if (p == 0) {
            o = scan_identity(j);
            break;
        }
        scan_slot_t *s = &slot[--p];
        unsigned st = n == LOOKBACK ? scan_state(s, true, -1)
                                    : scan_state(s, false, may_help ? SCAN_HELP_NS : -1);
        if (st == 2) {
            o = s->carry;
            break;
        }
        if (st == 1) {
            tot[n++] = s->tot;
        } else {
            scan_totals(j, p * TILE, (p + 1) * TILE, own[n]); /* p < t: a full tile */
            tot[n] = own[n];
            n++;
        }
    }
    while (n > 0) /* tot[n - 1] is the tile right after the carry's */
        scan_offsets(j, TILE, tot[--n], NULL, &o);
    return o;
}

/* A tile's chunks [*c0, *c1). */
static void tile_chunks(const prim_job_t *j, size_t t, size_t *c0, size_t *c1) {
    *c0 = t * TILE;
    *c1 = *c0 + TILE < j->chunks ? *c0 + TILE : j->chunks;
}

/* Whether tile t is TILE whole chunks. */
static bool tile_full(const prim_job_t *j, size_t t) {
    return (t + 1) * TILE <= j->chunks && (t + 1) * TILE * CH <= j->count;
}

/* Step 2 of tile t (its totals in tot): the carry into it in *o (from the
 * tiles before it when slot is set: they run on other threads), its chunks'
 * offsets into part[], and the carry out of it into *o (published). */
static void tile_carry(const prim_job_t *j, size_t t, partial_t *o, scan_slot_t *slot,
                       const partial_t *tot) {
    size_t c0, c1;
    tile_chunks(j, t, &c0, &c1);
    if (slot != NULL) *o = t == 0 ? scan_identity(j) : scan_carry_in(j, slot, t);
    if (j->chunks > 1)
        scan_offsets(j, c1 - c0, tot, &j->part[c0], o);
    else
        j->part[0] = *o; /* its offset: the identity */
    if (slot != NULL) {
        slot[t].carry = *o;
        atomic_store_explicit(&slot[t].state, 2u, memory_order_release);
    }
}

/* Step 3 of tile t, then step 1 of tile t2 (SIZE_MAX: none) into tot2
 * (published) - side by side in vector lanes where both are full tiles of
 * sums. */
static void tile_outputs_then_totals(const prim_job_t *j, size_t t, size_t t2, scan_slot_t *slot,
                                     partial_t *tot2) {
    size_t c0, c1;
    tile_chunks(j, t, &c0, &c1);
    bool fused = t2 != SIZE_MAX && j->op == XDEV_PRIM_SUM && tile_full(j, t) && tile_full(j, t2) &&
                 (scan_vec_tile(j, c0, tot2, j->exclusive ? V_EXCL : V_INCL, t2 * TILE) ||
                  scan_fused_scalar(j, c0, t2 * TILE, tot2));
    if (!fused) scan_outputs(j, c0, c1);
    if (t2 == SIZE_MAX) return;
    if (!fused && j->chunks > 1) { /* one chunk needs no total */
        size_t d0, d1;
        tile_chunks(j, t2, &d0, &d1);
        scan_totals(j, d0, d1, tot2);
    }
    if (slot != NULL) atomic_store_explicit(&slot[t2].state, 1u, memory_order_release);
}

/* One thread alone (r->slot NULL): its tiles in order, the carry passed
 * on in a local, each tile's totals taken while the one before writes its
 * outputs. */
static void scan_alone(scan_run_t *r) {
    const prim_job_t *j = r->j;
    partial_t own[2][TILE], o = scan_identity(j);
    size_t t = 0;
    if (j->chunks > 1) {
        size_t c0, c1;
        tile_chunks(j, 0, &c0, &c1);
        scan_totals(j, c0, c1, own[0]);
    }
    for (;;) {
        tile_carry(j, t, &o, NULL, own[t & 1]);
        size_t t2 = t + 1 < r->tiles ? t + 1 : SIZE_MAX;
        tile_outputs_then_totals(j, t, t2, NULL, t2 == SIZE_MAX ? NULL : own[t2 & 1]);
        if (t2 == SIZE_MAX) break;
        t = t2;
    }
}

/* The next tile in order with its totals taken and published (SIZE_MAX:
 * none left). */
static size_t claim_totals(scan_run_t *r) {
    size_t t = atomic_fetch_add(&r->next, 1);
    if (t >= r->tiles) return SIZE_MAX;
    if (r->j->chunks > 1) {
        size_t c0, c1;
        tile_chunks(r->j, t, &c0, &c1);
        scan_totals(r->j, c0, c1, r->slot[t].tot);
    }
    atomic_store_explicit(&r->slot[t].state, 1u, memory_order_release);
    return t;
}

/* Pool body: claim tiles in order until none is left. A thread holds two
 * tiles whose totals are out: it takes the carry into the older (t), then
 * writes t's outputs while it takes the totals of a newly claimed third.
 * The tiles before t were claimed a whole step earlier than they would be
 * with one held tile, so their totals are out when t's carry is taken: on
 * the 16-core Xeon threads holding one tile waited 28% of their time for a
 * predecessor's totals (f32 2^24-2^25), and two held tiles moved 0.78-0.95x
 * of a copy's bytes at 2^24-2^26 against one tile's 0.62-0.84x (16 threads,
 * three alternated rounds in one run). LOOKBACK spans the tiles in flight
 * (two per thread), so a carry rarely waits at its limit. Totals are published in the step
 * that claims their tile, waiting on nothing; a carry waits only on tiles
 * claimed before it, and the lowest tile without a carry has every tile
 * before it done: nothing deadlocks. */
static void scan_claim(void *arg, size_t w0, size_t w1) {
    scan_run_t *r = arg;
    const prim_job_t *j = r->j;
    partial_t o;
    (void)w0;
    (void)w1;
    size_t t = claim_totals(r);
    size_t u = t == SIZE_MAX ? SIZE_MAX : claim_totals(r);
    while (t != SIZE_MAX) {
        tile_carry(j, t, &o, r->slot, r->slot[t].tot);
        size_t t3 = atomic_fetch_add(&r->next, 1);
        if (t3 >= r->tiles) t3 = SIZE_MAX;
        tile_outputs_then_totals(j, t, t3, r->slot, t3 == SIZE_MAX ? NULL : r->slot[t3].tot);
        t = u;
        u = t3;
    }
}

void xdev_cpu_prim_scan_job(void *arg) {
    const prim_job_t *j = arg; /* (immutable: a captured graph runs it again) */
    size_t tiles = (j->chunks + TILE - 1) / TILE;
    size_t workers = (size_t)(xdev_cpu_state.threads > 0 ? xdev_cpu_state.threads : 1);
    scan_run_t r = {.j = j, .tiles = tiles};
    atomic_init(&r.next, 0);
    if (workers > tiles) workers = tiles;
    r.slot = workers > 1 ? calloc(tiles, sizeof *r.slot) : NULL;
    if (r.slot == NULL) { /* one thread (or no memory for the slots): in order, here */
        scan_alone(&r);
        return;
    }
    for (size_t t = 0; t < tiles; t++)
        atomic_init(&r.slot[t].state, 0u);
    xdev_cpu_parallel_for(j->device, workers, 1, scan_claim, &r);
    free(r.slot);
}
