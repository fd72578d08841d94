/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_rng.c - the CPU backend's random fills.
 *
 * A fill is enqueued as a host function, so it runs on the stream's worker
 * in stream order. It walks the Philox blocks its words span in chunks of
 * CHUNK_BLOCKS: one step computes the chunk's blocks (4 words each, in
 * position order), one converts them. The conversions are loops GCC
 * vectorises (xdev/support/philox.h's functions forced inline: no calls, no
 * branches); Philox itself is a plain loop GCC vectorises on the x86-64
 * baseline, and AVX2 intrinsics (8 blocks at a time, one per 64-bit lane:
 * no lane shuffles in the rounds) where the CPU has AVX2, and the same 16
 * blocks at a time with AVX-512, picked at run time. Normal f32 with vectors
 * keeps the words by word instead (normal_chunk_avx2): the Box-Muller loop
 * then reads and writes contiguous rows, and one transpose puts the values
 * in position order, streamed straight to a large fill's output. Every
 * element equals xdev_philox_element() of its block bit for bit: the
 * conversions are the shared ones, C11 mode forbids FMA contraction, and the
 * tests compare every variant with a scalar reference.
 * XDEV_CPU_RNG_ISA=baseline|avx2|avx512 forces a variant (auto by default:
 * the widest the CPU has).
 *
 * Measured 2026-11-29 (normal f32, 2^24 elements, one pool thread, the
 * loaded 2-core AMD EPYC VM, medians of 5 alternated runs): AVX-512 2.08 ->
 * 3.31 GB/s, AVX2 0.96 -> 1.20 GB/s with the 64-bit-lane rounds and the
 * by-word normal path; per element the AVX-512 loops went from about 9.5
 * instructions (Philox 4.9, Box-Muller 2.9, bounce-buffer streaming 1.5) to
 * 5.3 (2.1, 2.6, 0.6), and callgrind counts the AVX2 path's from 17.4 to
 * 14.3 (uniform f32: 11.5 to 8.2). */
#define XDEV_PHILOX_FN static inline __attribute__((always_inline))
#include "xdev/support/philox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"
#include "cpu/cpu_math.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif

/* 512 words: 2 KiB of words, up to 2 KiB of output. A chunk starts at a
 * multiple of CHUNK_BLOCKS blocks, so its block indices never carry into
 * the counter's high word inside the chunk. */
#define CHUNK_BLOCKS 128u
#define CHUNK_WORDS (4u * CHUNK_BLOCKS)

#define FILL_INLINE static inline __attribute__((always_inline))

/* Blocks b0 .. b0+CHUNK_BLOCKS-1 of the stream: w[4j + k] = word k of b0 + j. */
FILL_INLINE void chunk_words(uint64_t seed, uint64_t b0, uint32_t *restrict w) {
    const uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j++) {
        uint64_t b = b0 + j;
        const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0u, 0u};
        const uint32_t key[2] = {k0, k1};
        uint32_t out[4];
        xdev_philox4x32_10(ctr, key, out);
        w[4 * j + 0] = out[0];
        w[4 * j + 1] = out[1];
        w[4 * j + 2] = out[2];
        w[4 * j + 3] = out[3];
    }
}

#ifdef HAVE_AVX2_PATH
/* The vector generators keep each block in one 64-bit lane: vpmuludq
 * multiplies the low 32 bits of every lane into a full 64-bit product, whose
 * low half is the round's lo word as it stands (the high half rides along
 * unread: vpmuludq never looks at it) and whose high half a 32-bit swap
 * within the lane (vpshufd) brings down. A round is then 2 multiplies, 2
 * swaps and the xors per register, against the 4 multiplies, shifts and
 * blends of 32-bit lanes. Blocks b, b+2, b+4, ... go in one register, b+1,
 * b+3, ... in another; at the end one blend per word interleaves them into
 * 32-bit lanes in block order. */
#define AVX2_INLINE static inline __attribute__((target("avx2"), always_inline))

/* The round keys of `seed` (key word 0 of round r at 2r, word 1 at 2r + 1),
 * broadcast once per chunk: the unrolled rounds read them from memory. */
AVX2_INLINE void round_keys8(uint64_t seed, __m256i keys[20]) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        keys[2 * r] = _mm256_set1_epi32((int)k0);
        keys[2 * r + 1] = _mm256_set1_epi32((int)k1);
        k0 += XDEV_PHILOX_W0;
        k1 += XDEV_PHILOX_W1;
    }
}

/* Philox4x32-10 (xdev_philox4x32_10's rounds) on blocks b .. b+7 (b's low
 * word + 7 does not carry): x[k], lane m = word k of block b + m. */
AVX2_INLINE void philox8_avx2(const __m256i keys[20], uint64_t b, __m256i x[4]) {
    const __m256i m0 = _mm256_set1_epi32((int)XDEV_PHILOX_M0),
                  m1 = _mm256_set1_epi32((int)XDEV_PHILOX_M1);
    const __m256i lo = _mm256_set1_epi64x((long long)(uint32_t)b);
    __m256i e0 = _mm256_add_epi64(lo, _mm256_setr_epi64x(0, 2, 4, 6)); /* even blocks */
    __m256i o0 = _mm256_add_epi64(lo, _mm256_setr_epi64x(1, 3, 5, 7)); /* odd blocks */
    __m256i e1 = _mm256_set1_epi32((int)(uint32_t)(b >> 32)), o1 = e1;
    __m256i e2 = _mm256_setzero_si256(), e3 = e2, o2 = e2, o3 = e2;
#pragma GCC unroll 10
    for (int r = 0; r < 10; r++) {
        const __m256i kk0 = keys[2 * r], kk1 = keys[2 * r + 1];
        __m256i pe0 = _mm256_mul_epu32(e0, m0), pe2 = _mm256_mul_epu32(e2, m1);
        __m256i po0 = _mm256_mul_epu32(o0, m0), po2 = _mm256_mul_epu32(o2, m1);
        e0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi32(pe2, 0xb1), e1), kk0);
        e2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi32(pe0, 0xb1), e3), kk1);
        o0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi32(po2, 0xb1), o1), kk0);
        o2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_shuffle_epi32(po0, 0xb1), o3), kk1);
        e1 = pe2;
        e3 = pe0;
        o1 = po2;
        o3 = po0;
    }
    x[0] = _mm256_blend_epi32(e0, _mm256_shuffle_epi32(o0, 0xb1), 0xaa);
    x[1] = _mm256_blend_epi32(e1, _mm256_shuffle_epi32(o1, 0xb1), 0xaa);
    x[2] = _mm256_blend_epi32(e2, _mm256_shuffle_epi32(o2, 0xb1), 0xaa);
    x[3] = _mm256_blend_epi32(e3, _mm256_shuffle_epi32(o3, 0xb1), 0xaa);
}

/* x[k] lane m = word (or element) k of block m, into position order at
 * out[4m + k] (32 values): a 4x8 transpose, 4 stores (streamed past the
 * cache when `stream`: out then 32-byte aligned). */
AVX2_INLINE void transpose8_store(const __m256i x[4], void *out, bool stream) {
    /* lanes (128-bit halves): t0 = x0x1 of blocks 0,1 | 4,5; t1 = 2,3 | 6,7 */
    __m256i t0 = _mm256_unpacklo_epi32(x[0], x[1]), t1 = _mm256_unpackhi_epi32(x[0], x[1]);
    __m256i t2 = _mm256_unpacklo_epi32(x[2], x[3]), t3 = _mm256_unpackhi_epi32(x[2], x[3]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i r[4] = {
        _mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u2, u3, 0x20),
        _mm256_permute2x128_si256(u0, u1, 0x31), _mm256_permute2x128_si256(u2, u3, 0x31)};
    __m256i *o = out;
    for (int q = 0; q < 4; q++) {
        if (stream)
            _mm256_stream_si256(o + q, r[q]);
        else
            _mm256_storeu_si256(o + q, r[q]);
    }
}

/* chunk_words with AVX2: 8 blocks at a time, transposed into position order. */
__attribute__((target("avx2"))) static inline void chunk_words_avx2(uint64_t seed, uint64_t b0,
                                                                    uint32_t *restrict w) {
    __m256i keys[20];
    round_keys8(seed, keys);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 8) {
        __m256i x[4];
        philox8_avx2(keys, b0 + j, x); /* no carry into the high word below b0 + CHUNK_BLOCKS */
        transpose8_store(x, w + 4 * j, false);
    }
}

/* The same with AVX-512: 16 blocks a round, 8 in each register. */
#define AVX512_INLINE static inline __attribute__((target("avx512f"), always_inline))

AVX512_INLINE void round_keys16(uint64_t seed, __m512i keys[20]) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        keys[2 * r] = _mm512_set1_epi32((int)k0);
        keys[2 * r + 1] = _mm512_set1_epi32((int)k1);
        k0 += XDEV_PHILOX_W0;
        k1 += XDEV_PHILOX_W1;
    }
}

AVX512_INLINE void philox16_avx512(const __m512i keys[20], uint64_t b, __m512i x[4]) {
    const __m512i m0 = _mm512_set1_epi32((int)XDEV_PHILOX_M0),
                  m1 = _mm512_set1_epi32((int)XDEV_PHILOX_M1);
    const __m512i lo = _mm512_set1_epi64((long long)(uint32_t)b);
    __m512i e0 = _mm512_add_epi64(lo, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14));
    __m512i o0 = _mm512_add_epi64(lo, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15));
    __m512i e1 = _mm512_set1_epi32((int)(uint32_t)(b >> 32)), o1 = e1;
    __m512i e2 = _mm512_setzero_si512(), e3 = e2, o2 = e2, o3 = e2;
#pragma GCC unroll 10
    for (int r = 0; r < 10; r++) {
        const __m512i kk0 = keys[2 * r], kk1 = keys[2 * r + 1];
        __m512i pe0 = _mm512_mul_epu32(e0, m0), pe2 = _mm512_mul_epu32(e2, m1);
        __m512i po0 = _mm512_mul_epu32(o0, m0), po2 = _mm512_mul_epu32(o2, m1);
        /* 0x96: a ^ b ^ c */
        e0 = _mm512_ternarylogic_epi32(_mm512_shuffle_epi32(pe2, _MM_PERM_CDAB), e1, kk0, 0x96);
        e2 = _mm512_ternarylogic_epi32(_mm512_shuffle_epi32(pe0, _MM_PERM_CDAB), e3, kk1, 0x96);
        o0 = _mm512_ternarylogic_epi32(_mm512_shuffle_epi32(po2, _MM_PERM_CDAB), o1, kk0, 0x96);
        o2 = _mm512_ternarylogic_epi32(_mm512_shuffle_epi32(po0, _MM_PERM_CDAB), o3, kk1, 0x96);
        e1 = pe2;
        e3 = pe0;
        o1 = po2;
        o3 = po0;
    }
    x[0] = _mm512_mask_shuffle_epi32(e0, 0xaaaa, o0, _MM_PERM_CDAB);
    x[1] = _mm512_mask_shuffle_epi32(e1, 0xaaaa, o1, _MM_PERM_CDAB);
    x[2] = _mm512_mask_shuffle_epi32(e2, 0xaaaa, o2, _MM_PERM_CDAB);
    x[3] = _mm512_mask_shuffle_epi32(e3, 0xaaaa, o3, _MM_PERM_CDAB);
}

/* x[k] lane m = value k of block m, into out[4m + k] (64 values): two unpack
 * levels leave one block per 128-bit lane (u0: blocks 0, 4, 8, 12; u1: 1, 5,
 * 9, 13; ...), two levels of 128-bit shuffles gather 4 consecutive blocks per
 * register; 4 stores (streamed when `stream`: out then 64-byte aligned). */
AVX512_INLINE void transpose16_store(const __m512i x[4], void *out, bool stream) {
    __m512i t0 = _mm512_unpacklo_epi32(x[0], x[1]), t1 = _mm512_unpackhi_epi32(x[0], x[1]);
    __m512i t2 = _mm512_unpacklo_epi32(x[2], x[3]), t3 = _mm512_unpackhi_epi32(x[2], x[3]);
    __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    /* v0 = u0.0 u0.1 u1.0 u1.1, v1 = u2.0 u2.1 u3.0 u3.1 (v2, v3: lanes 2, 3) */
    __m512i v0 = _mm512_shuffle_i32x4(u0, u1, 0x44), v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
    __m512i v2 = _mm512_shuffle_i32x4(u0, u1, 0xee), v3 = _mm512_shuffle_i32x4(u2, u3, 0xee);
    __m512i r[4] = {_mm512_shuffle_i32x4(v0, v1, 0x88), _mm512_shuffle_i32x4(v0, v1, 0xdd),
                    _mm512_shuffle_i32x4(v2, v3, 0x88), _mm512_shuffle_i32x4(v2, v3, 0xdd)};
    __m512i *o = out;
    for (int q = 0; q < 4; q++) {
        if (stream)
            _mm512_stream_si512(o + q, r[q]);
        else
            _mm512_storeu_si512(o + q, r[q]);
    }
}

__attribute__((target("avx512f"))) static inline void chunk_words_avx512(uint64_t seed, uint64_t b0,
                                                                         uint32_t *restrict w) {
    __m512i keys[20];
    round_keys16(seed, keys);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 16) {
        __m512i x[4];
        philox16_avx512(keys, b0 + j, x);
        transpose16_store(x, w + 4 * j, false);
    }
}

/* Normal f32 in block order: a[i], b[i] (i < 2 CHUNK_BLOCKS) are the pair
 * (radius word, angle word) of pair i, z[i] and z[i + 2 CHUNK_BLOCKS] its two
 * elements. Contiguous loads and stores, so the loop GCC vectorises has no
 * lane shuffles (word 2j, 2j+1 of position order would need them). */
FILL_INLINE void normal_pairs(const uint32_t *restrict a, const uint32_t *restrict b, float mean,
                              float std, float *restrict z) {
    for (uint32_t i = 0; i < 2 * CHUNK_BLOCKS; i++) {
        float z0, z1;
        xdev_philox_normal_f32_pair(a[i], b[i], &z0, &z1);
        z[i] = xdev_philox_affine_f32(z0, mean, std);
        z[i + 2 * CHUNK_BLOCKS] = xdev_philox_affine_f32(z1, mean, std);
    }
}

/* Layout of a normal chunk's words and values, CHUNK_BLOCKS each row, so that
 * normal_pairs reads rows A, B and writes rows Z0, Z1:
 * A = word 0 of every block, then word 2; B = word 1, then word 3; so Z0 =
 * element 0 of every block, then element 2; Z1 = element 1, then 3. */
enum { ROW_W0 = 0, ROW_W2 = 1, ROW_W1 = 2, ROW_W3 = 3 };

/* A chunk of normal f32 (blocks b0 .. b0 + CHUNK_BLOCKS - 1, b0 a multiple
 * of CHUNK_BLOCKS) into out in position order, AVX2: Philox words stored by
 * word (no transpose), converted in one vectorised loop, the values
 * transposed into position order once. */
__attribute__((target("avx2"))) static void
normal_chunk_avx2(uint64_t seed, uint64_t b0, float mean, float std, void *out, bool stream) {
    uint32_t w[4 * CHUNK_BLOCKS] __attribute__((aligned(64)));
    float z[4 * CHUNK_BLOCKS] __attribute__((aligned(64)));
    __m256i keys[20];
    round_keys8(seed, keys);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 8) {
        __m256i x[4];
        philox8_avx2(keys, b0 + j, x);
        _mm256_store_si256((__m256i *)(w + ROW_W0 * CHUNK_BLOCKS + j), x[0]);
        _mm256_store_si256((__m256i *)(w + ROW_W1 * CHUNK_BLOCKS + j), x[1]);
        _mm256_store_si256((__m256i *)(w + ROW_W2 * CHUNK_BLOCKS + j), x[2]);
        _mm256_store_si256((__m256i *)(w + ROW_W3 * CHUNK_BLOCKS + j), x[3]);
    }
    normal_pairs(w, w + 2 * CHUNK_BLOCKS, mean, std, z);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 8) {
        const __m256i x[4] = {_mm256_load_si256((const __m256i *)(z + ROW_W0 * CHUNK_BLOCKS + j)),
                              _mm256_load_si256((const __m256i *)(z + ROW_W1 * CHUNK_BLOCKS + j)),
                              _mm256_load_si256((const __m256i *)(z + ROW_W2 * CHUNK_BLOCKS + j)),
                              _mm256_load_si256((const __m256i *)(z + ROW_W3 * CHUNK_BLOCKS + j))};
        transpose8_store(x, (float *)out + 4 * j, stream);
    }
}

__attribute__((target("avx512f"))) static void
normal_chunk_avx512(uint64_t seed, uint64_t b0, float mean, float std, void *out, bool stream) {
    uint32_t w[4 * CHUNK_BLOCKS] __attribute__((aligned(64)));
    float z[4 * CHUNK_BLOCKS] __attribute__((aligned(64)));
    __m512i keys[20];
    round_keys16(seed, keys);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 16) {
        __m512i x[4];
        philox16_avx512(keys, b0 + j, x);
        _mm512_store_si512(w + ROW_W0 * CHUNK_BLOCKS + j, x[0]);
        _mm512_store_si512(w + ROW_W1 * CHUNK_BLOCKS + j, x[1]);
        _mm512_store_si512(w + ROW_W2 * CHUNK_BLOCKS + j, x[2]);
        _mm512_store_si512(w + ROW_W3 * CHUNK_BLOCKS + j, x[3]);
    }
    normal_pairs(w, w + 2 * CHUNK_BLOCKS, mean, std, z);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 16) {
        const __m512i x[4] = {_mm512_load_si512(z + ROW_W0 * CHUNK_BLOCKS + j),
                              _mm512_load_si512(z + ROW_W1 * CHUNK_BLOCKS + j),
                              _mm512_load_si512(z + ROW_W2 * CHUNK_BLOCKS + j),
                              _mm512_load_si512(z + ROW_W3 * CHUNK_BLOCKS + j)};
        transpose16_store(x, (float *)out + 4 * j, stream);
    }
}
#endif

/* Every element whose words lie in the chunk, in position order, into dst
 * (CHUNK_WORDS / words-per-element elements). */
FILL_INLINE void chunk_convert(const xdev_rng_fill_desc_t *d, const xdev_philox_params_t *pr,
                               const uint32_t *restrict w, void *restrict dst) {
    switch (d->kind * 4 + d->format) {
    case XDEV_RNG_FILL_UNIFORM * 4 + XDEV_RNG_FORMAT_F32: {
        float *o = dst;
        for (uint32_t i = 0; i < CHUNK_WORDS; i++)
            o[i] = xdev_philox_uniform_f32(w[i]);
        break;
    }
    case XDEV_RNG_FILL_UNIFORM * 4 + XDEV_RNG_FORMAT_F64: {
        double *o = dst;
        for (uint32_t i = 0; i < CHUNK_WORDS / 2; i++)
            o[i] = xdev_philox_uniform_f64(w[2 * i], w[2 * i + 1]);
        break;
    }
    case XDEV_RNG_FILL_NORMAL * 4 + XDEV_RNG_FORMAT_F32: {
        float *o = dst;
        for (uint32_t i = 0; i < CHUNK_WORDS / 2; i++) {
            float z0, z1;
            xdev_philox_normal_f32_pair(w[2 * i], w[2 * i + 1], &z0, &z1);
            o[2 * i] = xdev_philox_affine_f32(z0, pr->mean_f, pr->std_f);
            o[2 * i + 1] = xdev_philox_affine_f32(z1, pr->mean_f, pr->std_f);
        }
        break;
    }
    case XDEV_RNG_FILL_NORMAL * 4 + XDEV_RNG_FORMAT_F64: {
        double *o = dst;
        for (uint32_t i = 0; i < CHUNK_BLOCKS; i++) {
            double z0, z1;
            xdev_philox_normal_f64_pair(w + 4 * i, &z0, &z1);
            o[2 * i] = xdev_philox_affine_f64(z0, pr->mean, pr->std);
            o[2 * i + 1] = xdev_philox_affine_f64(z1, pr->mean, pr->std);
        }
        break;
    }
    case XDEV_RNG_FILL_INTEGERS * 4 + XDEV_RNG_FORMAT_I32: {
        int32_t *o = dst;
        for (uint32_t i = 0; i < CHUNK_WORDS; i++)
            o[i] = xdev_philox_int32(w[i], pr->low, pr->range);
        break;
    }
    case XDEV_RNG_FILL_INTEGERS * 4 + XDEV_RNG_FORMAT_I64: {
        int64_t *o = dst;
        for (uint32_t i = 0; i < CHUNK_WORDS / 2; i++)
            o[i] = xdev_philox_int64(w[2 * i], w[2 * i + 1], pr->low, pr->range);
        break;
    }
    default: { /* bernoulli */
        float *o = dst;
        for (uint32_t i = 0; i < CHUNK_WORDS; i++)
            o[i] = xdev_philox_bernoulli(w[i], pr->threshold);
        break;
    }
    }
}

/* The whole fill: chunks aligned to CHUNK_BLOCKS; a chunk entirely inside
 * the fill converts straight into the output, the partial first and last
 * ones through a bounce buffer. Word positions stay below 2^64 (the core
 * checks), so the comparisons are written not to overflow near the end. */
enum { ISA_BASELINE = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };

/* A chunk's output (CHUNK_WORDS * 4 bytes, from the bounce buffer) into
 * 16-byte aligned dst with non-temporal stores: a large fill is not read
 * back soon, and a store that misses the cache first reads its line, which
 * doubles the memory traffic of a fill (random uniform was 0.75x of a
 * copy's bandwidth). The caller fences once at the end. */
FILL_INLINE void stream_chunk(void *dst, const void *src) {
#ifdef HAVE_AVX2_PATH
    const __m128i *s = src;
    __m128i *o = dst;
#pragma GCC unroll 8 /* 4 stores a line: the loop's own count and branch were a third of it */
    for (unsigned i = 0; i < CHUNK_WORDS * 4 / 16; i++)
        _mm_stream_si128(o + i, _mm_load_si128(s + i));
#else
    memcpy(dst, src, CHUNK_WORDS * 4);
#endif
}

#ifdef HAVE_AVX2_PATH
/* One whole chunk of normal f32 by the vector path (normal_chunk_*), into out
 * (streamed when `stream`: out then aligned to the vector's size). */
FILL_INLINE void normal_chunk(int isa, uint64_t seed, uint64_t b0, const xdev_philox_params_t *pr,
                              void *out, bool stream) {
    if (isa == ISA_AVX512)
        normal_chunk_avx512(seed, b0, pr->mean_f, pr->std_f, out, stream);
    else
        normal_chunk_avx2(seed, b0, pr->mean_f, pr->std_f, out, stream);
}
#endif

FILL_INLINE void fill_body(const xdev_rng_fill_desc_t *d, int isa, bool nt) {
    const unsigned wpe = xdev_philox_words_per_element((int)d->format);
    const size_t esize = 4u * wpe;
    const xdev_philox_params_t pr = {(float)d->mean, (float)d->std, d->mean,     d->std,
                                     d->low,         d->range,      d->threshold};
    uint32_t w[CHUNK_WORDS] __attribute__((aligned(64)));
    uint64_t bounce[CHUNK_WORDS / 2] __attribute__((aligned(64)));       /* a chunk's output */
    const uint64_t first = d->offset, last = d->offset + d->count * wpe; /* word positions */
    unsigned char *out = d->out;
#ifdef HAVE_AVX2_PATH
    /* normal f32 with vectors: its own chunk path (normal_chunk_avx2) */
    const bool normal_vec =
        isa != ISA_BASELINE && d->kind == XDEV_RNG_FILL_NORMAL && d->format == XDEV_RNG_FORMAT_F32;
    const uintptr_t vec_mask = isa == ISA_AVX512 ? 63u : 31u; /* a streamed store's alignment */
#endif
    for (uint64_t c = first / CHUNK_WORDS * CHUNK_WORDS;; c += CHUNK_WORDS) {
        bool ends_here = last - c <= CHUNK_WORDS;
        uint64_t lo = c > first ? c : first, hi = ends_here ? last : c + CHUNK_WORDS;
        unsigned char *dst = out + (lo - first) / wpe * esize;
        const bool whole = lo == c && hi - c == CHUNK_WORDS;
#ifdef HAVE_AVX2_PATH
        if (normal_vec) {
            if (whole && nt && ((uintptr_t)dst & vec_mask) == 0) {
                normal_chunk(isa, d->seed, c / 4, &pr, dst, true);
            } else if (whole && nt && ((uintptr_t)dst & 15) == 0) {
                normal_chunk(isa, d->seed, c / 4, &pr, bounce, false);
                stream_chunk(dst, bounce);
            } else if (whole) {
                normal_chunk(isa, d->seed, c / 4, &pr, dst, false);
            } else {
                normal_chunk(isa, d->seed, c / 4, &pr, bounce, false);
                memcpy(dst, (unsigned char *)bounce + (lo - c) / wpe * esize,
                       (hi - lo) / wpe * esize);
            }
            if (ends_here) break;
            continue;
        }
        if (isa == ISA_AVX512)
            chunk_words_avx512(d->seed, c / 4, w);
        else if (isa == ISA_AVX2)
            chunk_words_avx2(d->seed, c / 4, w);
        else
#endif
            chunk_words(d->seed, c / 4, w);
        if (whole && nt && ((uintptr_t)dst & 15) == 0) {
            chunk_convert(d, &pr, w, bounce);
            stream_chunk(dst, bounce);
        } else if (whole) {
            chunk_convert(d, &pr, w, dst);
        } else {
            chunk_convert(d, &pr, w, bounce);
            memcpy(dst, (unsigned char *)bounce + (lo - c) / wpe * esize, (hi - lo) / wpe * esize);
        }
        if (ends_here) break;
    }
#ifdef HAVE_AVX2_PATH
    if (nt) _mm_sfence(); /* the streamed stores before the job reports done */
#endif
}

#ifdef HAVE_AVX2_PATH
__attribute__((target("avx2"))) static void fill_avx2(const xdev_rng_fill_desc_t *d, bool nt) {
    fill_body(d, ISA_AVX2, nt);
}
__attribute__((target("avx2,avx512f"))) static void fill_avx512(const xdev_rng_fill_desc_t *d,
                                                                bool nt) {
    fill_body(d, ISA_AVX512, nt);
}
#define FILL_AVX2 fill_avx2
#define FILL_AVX512 fill_avx512
#else
#define FILL_AVX2 fill_baseline   /* never chosen: avx2 is false */
#define FILL_AVX512 fill_baseline /* never chosen: avx512 is false */
#endif

static void fill_baseline(const xdev_rng_fill_desc_t *d, bool nt) {
    fill_body(d, ISA_BASELINE, nt);
}

/* The variant in use: XDEV_CPU_RNG_ISA = auto (default: avx2 where the CPU
 * has it), avx2 or baseline, read at the first fill (a diagnostic knob: the
 * tests run both variants against the same reference). */
static pthread_once_t g_isa_once = PTHREAD_ONCE_INIT;
static void (*g_fill)(const xdev_rng_fill_desc_t *, bool nt);
static xdev_status_t g_isa_status;
static char g_isa_message[256];

static void isa_select(void) {
    const xdev_host_services_t *host = xdev_cpu_state.host;
    const char *(*get_env)(const char *) = host ? XDEV_BACKEND_SLOT(host, get_env) : NULL;
    const char *v = get_env ? get_env("XDEV_CPU_RNG_ISA") : getenv("XDEV_CPU_RNG_ISA");
    bool avx2 = false, avx512 = false;
#ifdef HAVE_AVX2_PATH
    const unsigned f = xdev_cpu_features();
    avx2 = (f & XDEV_CPU_FEAT_AVX2) != 0;
    avx512 = avx2 && (f & XDEV_CPU_FEAT_AVX512F) != 0;
#endif
    bool is_auto = v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0;
    g_fill = fill_baseline;
    if (is_auto || strcmp(v, "baseline") == 0) {
        if (is_auto && avx2) g_fill = avx512 ? FILL_AVX512 : FILL_AVX2;
    } else if (strcmp(v, "avx2") == 0 && avx2) {
        g_fill = FILL_AVX2;
    } else if (strcmp(v, "avx512") == 0 && avx512) {
        g_fill = FILL_AVX512;
    } else {
        g_isa_status = XDEV_ERROR_ENV;
        /* Say exactly what is accepted here: a path only where it can run. */
        bool known = strcmp(v, "avx2") == 0 || strcmp(v, "avx512") == 0;
        snprintf(g_isa_message, sizeof g_isa_message, "XDEV_CPU_RNG_ISA='%s' %s (expected %s)", v,
                 known ? "cannot be used: this CPU or build has no such path"
                       : "is not a code path",
                 avx512 ? "auto, avx512, avx2 or baseline; unset or empty means auto"
                 : avx2 ? "auto, avx2 or baseline on this machine; unset or empty means auto"
                        : "auto or baseline on this machine; unset or empty means auto");
    }
}

/* Output bytes from which a fill streams past the cache (stream_chunk):
 * more than a core's share of a last-level cache. */
#define RNG_STREAM_BYTES ((size_t)8 << 20)

/* Elements [begin, end) of the fill `arg`: a fill of their own (an element
 * depends only on the key and its word position, so any split gives the
 * same bits). */
static void fill_range(void *arg, size_t begin, size_t end) {
    const xdev_rng_fill_desc_t *d = arg;
    /* words * 4 bytes per element: the whole fill's output decides */
    bool nt =
        (size_t)d->count * xdev_philox_words_per_element((int)d->format) * 4 >= RNG_STREAM_BYTES;
    unsigned words = xdev_philox_words_per_element((int)d->format);
    xdev_rng_fill_desc_t part = *d;
    part.out = (unsigned char *)d->out + begin * 4u * words;
    part.offset = d->offset + (uint64_t)begin * words;
    part.count = end - begin;
    g_fill(&part, nt);
}

/* Elements per chunk at least (a multiple of every format's elements per
 * Philox block, so chunks start on a block). */
#define RNG_GRAIN 65536

/* A captured fill (philox_state set) takes its key and base from the
 * graph's cell as it runs, so each replay draws new numbers. The elements
 * are spread over the device's worker pool. */
static void fill_job(void *arg) {
    const xdev_rng_fill_desc_t *d = arg;
    xdev_rng_fill_desc_t run = *d;
    if (d->philox_state != NULL) {
        run.seed = d->philox_state[0];
        run.offset = d->philox_state[1] + d->offset;
        run.philox_state = NULL;
    }
    xdev_cpu_parallel_for(d->device->index, (size_t)run.count, RNG_GRAIN, fill_range, &run);
}

static xdev_status_t cpu_rng_fill(const xdev_rng_fill_desc_t *d) {
    pthread_once(&g_isa_once, isa_select);
    if (g_isa_status != XDEV_SUCCESS) return xdev_cpu_error(g_isa_status, "cpu: %s", g_isa_message);
    xdev_rng_fill_desc_t *job = calloc(1, sizeof *job);
    if (job == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY, "cpu:%d no host memory for a random fill",
                              d->device->index);
    memcpy(job, d, d->size < sizeof *job ? d->size : sizeof *job);
    job->size = sizeof *job;
    if (d->size < sizeof *job) job->philox_state = NULL; /* a core older than ABI 3.2 */
    xdev_status_t st =
        xdev_cpu_stream_enqueue_job(d->device->index, d->stream, fill_job, free, job);
    if (st != XDEV_SUCCESS) free(job);
    return st;
}

const xdev_rng_vtable_t xdev_cpu_rng_vtable = {
    .size = sizeof(xdev_rng_vtable_t),
    .fill = cpu_rng_fill,
};
