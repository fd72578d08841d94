/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_rng.c - the CPU backend's random fills.
 *
 * A fill is enqueued as a host function, so it runs on the stream's worker
 * in stream order. It walks the Philox blocks its words span in chunks of
 * CHUNK_BLOCKS: one step computes the chunk's blocks (4 words each, in
 * position order), one converts them. The conversions are loops GCC
 * vectorises (xdev/support/philox.h's functions forced inline: no calls, no
 * branches); Philox itself is a plain loop GCC vectorises on the x86-64
 * baseline, and AVX2 intrinsics (8 blocks per register, no lane shuffles in
 * the rounds) where the CPU has AVX2, and the same 16 blocks at a time with
 * AVX-512, picked at run time. Every element
 * equals xdev_philox_element() of its block bit for bit: the conversions are the
 * shared ones, C11 mode forbids FMA contraction, and the tests compare both
 * variants with a scalar reference. XDEV_CPU_RNG_ISA=baseline|avx2|avx512
 * forces a variant (auto by default: the widest the CPU has). */
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
#define AVX2_INLINE static inline __attribute__((target("avx2"), always_inline))

/* hi and lo halves of a * m in each 32-bit lane: even lanes from one
 * vpmuludq, odd lanes from another on the shifted input, merged by blends
 * (GCC's own vectorisation shuffles across lanes instead, 2x slower). */
AVX2_INLINE void mulhilo8(__m256i a, __m256i m, __m256i *hi, __m256i *lo) {
    __m256i even = _mm256_mul_epu32(a, m);
    __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xaa);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xaa);
}

/* chunk_words with AVX2: Philox4x32-10 (xdev_philox4x32_10's rounds) on 8
 * blocks at a time, then a 4x8 transpose into position order. */
__attribute__((target("avx2"))) static inline void chunk_words_avx2(uint64_t seed, uint64_t b0,
                                                                    uint32_t *restrict w) {
    const __m256i m0 = _mm256_set1_epi32((int)XDEV_PHILOX_M0),
                  m1 = _mm256_set1_epi32((int)XDEV_PHILOX_M1);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 8) {
        uint64_t b = b0 + j; /* no carry into the high word below b0 + CHUNK_BLOCKS */
        __m256i x0 = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)b), iota);
        __m256i x1 = _mm256_set1_epi32((int)(uint32_t)(b >> 32));
        __m256i x2 = _mm256_setzero_si256(), x3 = _mm256_setzero_si256();
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            __m256i h0, l0, h1, l1;
            mulhilo8(x0, m0, &h0, &l0);
            mulhilo8(x2, m1, &h1, &l1);
            x0 = _mm256_xor_si256(_mm256_xor_si256(h1, x1), _mm256_set1_epi32((int)k0));
            x2 = _mm256_xor_si256(_mm256_xor_si256(h0, x3), _mm256_set1_epi32((int)k1));
            x1 = l1;
            x3 = l0;
            k0 += XDEV_PHILOX_W0;
            k1 += XDEV_PHILOX_W1;
        }
        /* lanes (128-bit halves): t0 = x0x1 of blocks 0,1 | 4,5; t1 = 2,3 | 6,7 */
        __m256i t0 = _mm256_unpacklo_epi32(x0, x1), t1 = _mm256_unpackhi_epi32(x0, x1);
        __m256i t2 = _mm256_unpacklo_epi32(x2, x3), t3 = _mm256_unpackhi_epi32(x2, x3);
        __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
        __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
        _mm256_storeu_si256((__m256i *)(w + 4 * j), _mm256_permute2x128_si256(u0, u1, 0x20));
        _mm256_storeu_si256((__m256i *)(w + 4 * j + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
        _mm256_storeu_si256((__m256i *)(w + 4 * j + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
        _mm256_storeu_si256((__m256i *)(w + 4 * j + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
    }
}
#endif

#ifdef HAVE_AVX2_PATH
/* The same with AVX-512: 16 blocks a round; the 4 x 16 words come out of
 * two unpack levels as one block per 128-bit lane (u0: blocks 0, 4, 8, 12;
 * u1: 1, 5, 9, 13; ...), each stored where its block's words go. */
#define AVX512_INLINE static inline __attribute__((target("avx512f"), always_inline))

AVX512_INLINE void mulhilo16(__m512i a, __m512i m, __m512i *hi, __m512i *lo) {
    __m512i even = _mm512_mul_epu32(a, m);
    __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    *hi = _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xaaaa, even, _mm512_slli_epi64(odd, 32));
}

__attribute__((target("avx512f"))) static inline void chunk_words_avx512(uint64_t seed, uint64_t b0,
                                                                         uint32_t *restrict w) {
    const __m512i m0 = _mm512_set1_epi32((int)XDEV_PHILOX_M0),
                  m1 = _mm512_set1_epi32((int)XDEV_PHILOX_M1);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (uint32_t j = 0; j < CHUNK_BLOCKS; j += 16) {
        uint64_t b = b0 + j; /* no carry into the high word below b0 + CHUNK_BLOCKS */
        __m512i x0 = _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)b), iota);
        __m512i x1 = _mm512_set1_epi32((int)(uint32_t)(b >> 32));
        __m512i x2 = _mm512_setzero_si512(), x3 = _mm512_setzero_si512();
        uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            __m512i h0, l0, h1, l1;
            mulhilo16(x0, m0, &h0, &l0);
            mulhilo16(x2, m1, &h1, &l1);
            x0 = _mm512_xor_si512(_mm512_xor_si512(h1, x1), _mm512_set1_epi32((int)k0));
            x2 = _mm512_xor_si512(_mm512_xor_si512(h0, x3), _mm512_set1_epi32((int)k1));
            x1 = l1;
            x3 = l0;
            k0 += XDEV_PHILOX_W0;
            k1 += XDEV_PHILOX_W1;
        }
        __m512i t0 = _mm512_unpacklo_epi32(x0, x1), t1 = _mm512_unpackhi_epi32(x0, x1);
        __m512i t2 = _mm512_unpacklo_epi32(x2, x3), t3 = _mm512_unpackhi_epi32(x2, x3);
        __m512i u[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2),
                        _mm512_unpacklo_epi64(t1, t3), _mm512_unpackhi_epi64(t1, t3)};
        uint32_t *out = w + 4 * j;
        for (int q = 0; q < 4; q++) { /* u[q], lane k: block 4k + q */
            _mm_storeu_si128((__m128i *)(out + 4 * q), _mm512_extracti32x4_epi32(u[q], 0));
            _mm_storeu_si128((__m128i *)(out + 16 + 4 * q), _mm512_extracti32x4_epi32(u[q], 1));
            _mm_storeu_si128((__m128i *)(out + 32 + 4 * q), _mm512_extracti32x4_epi32(u[q], 2));
            _mm_storeu_si128((__m128i *)(out + 48 + 4 * q), _mm512_extracti32x4_epi32(u[q], 3));
        }
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
    for (unsigned i = 0; i < CHUNK_WORDS * 4 / 16; i++)
        _mm_stream_si128(o + i, _mm_load_si128(s + i));
#else
    memcpy(dst, src, CHUNK_WORDS * 4);
#endif
}

FILL_INLINE void fill_body(const xdev_rng_fill_desc_t *d, int isa, bool nt) {
    const unsigned wpe = xdev_philox_words_per_element((int)d->format);
    const size_t esize = 4u * wpe;
    const xdev_philox_params_t pr = {(float)d->mean, (float)d->std, d->mean,     d->std,
                                     d->low,         d->range,      d->threshold};
    uint32_t w[CHUNK_WORDS] __attribute__((aligned(64)));
    uint64_t bounce[CHUNK_WORDS / 2] __attribute__((aligned(64)));       /* a chunk's output */
    const uint64_t first = d->offset, last = d->offset + d->count * wpe; /* word positions */
    unsigned char *out = d->out;
    for (uint64_t c = first / CHUNK_WORDS * CHUNK_WORDS;; c += CHUNK_WORDS) {
#ifdef HAVE_AVX2_PATH
        if (isa == ISA_AVX512)
            chunk_words_avx512(d->seed, c / 4, w);
        else if (isa == ISA_AVX2)
            chunk_words_avx2(d->seed, c / 4, w);
        else
#endif
            chunk_words(d->seed, c / 4, w);
        bool ends_here = last - c <= CHUNK_WORDS;
        uint64_t lo = c > first ? c : first, hi = ends_here ? last : c + CHUNK_WORDS;
        unsigned char *dst = out + (lo - first) / wpe * esize;
        if (lo == c && hi - c == CHUNK_WORDS && nt && ((uintptr_t)dst & 15) == 0) {
            chunk_convert(d, &pr, w, bounce);
            stream_chunk(dst, bounce);
        } else if (lo == c && hi - c == CHUNK_WORDS) {
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
