/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_fill.c - the stores of a typed fill (cpu_ops.c cuts the
 * fill into parts on the device's worker pool): a bit pattern of 1, 2, 4, 8
 * or 16 bytes repeated, written the fastest way measured for the fill's
 * size on this CPU. Every path writes the same bytes; only the kind of
 * store differs. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "cpu_internal.h"
#include "cpu_math.h"

typedef struct fill {
    unsigned char *dst;
    size_t count, size; /* elements; bytes per element */
    unsigned char pattern[16];
} fill_t;

/* Elements [0, n) of the pattern, written by a loop. */
static void fill_loop(const fill_t *f, size_t n) {
    switch (f->size) {
    case 1:
        memset(f->dst, f->pattern[0], n);
        break;
    case 2: {
        uint16_t v, *d = (void *)f->dst;
        memcpy(&v, f->pattern, 2);
        for (size_t i = 0; i < n; i++)
            d[i] = v;
        break;
    }
    case 4: {
        uint32_t v, *d = (void *)f->dst;
        memcpy(&v, f->pattern, 4);
        for (size_t i = 0; i < n; i++)
            d[i] = v;
        break;
    }
    case 8: {
        uint64_t v, *d = (void *)f->dst;
        memcpy(&v, f->pattern, 8);
        for (size_t i = 0; i < n; i++)
            d[i] = v;
        break;
    }
    default: { /* 16: a complex double */
        uint64_t lo, hi, *d = (void *)f->dst;
        memcpy(&lo, f->pattern, 8);
        memcpy(&hi, f->pattern + 8, 8);
        for (size_t i = 0; i < n; i++) {
            d[2 * i] = lo;
            d[2 * i + 1] = hi;
        }
        break;
    }
    }
}

/* f's elements [first, first + n) with the loop. */
static void fill_span(const fill_t *f, size_t first, size_t n) {
    fill_t part = *f;
    part.dst = f->dst + first * f->size;
    fill_loop(&part, n);
}

/* A loop for the first FILL_CHUNK bytes, then copies of them (memcpy runs at
 * store bandwidth; the chunk stays in the L1 cache). */
#define FILL_CHUNK 8192
static void fill_copies(const fill_t *f) {
    const size_t total = f->count * f->size;
    if (f->size == 1 || total <= 2 * FILL_CHUNK) {
        fill_loop(f, f->count);
    } else {
        fill_loop(f, FILL_CHUNK / f->size);
        size_t done = FILL_CHUNK;
        while (done < total) {
            size_t n = total - done < FILL_CHUNK ? total - done : FILL_CHUNK;
            memcpy(f->dst + done, f->dst, n);
            done += n;
        }
    }
}

/* The sizes of this CPU's L2 and last-level caches, read once from sysfs
 * (what the kernel was told; sysconf's figure is CPUID's, which on a VM can
 * name the host's cache: 384 MiB of L3 on the 2-core AMD VM, 32 MiB in
 * sysfs), else sysconf, else 512 KiB and 32 MiB. */
static size_t g_l2_bytes, g_llc_bytes;
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;

static size_t cache_size(const char *path, int sc_name, size_t fallback) {
    size_t bytes = 0;
    FILE *fp = fopen(path, "r");
    if (fp != NULL) {
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(fp, "%lu%c", &v, &unit) >= 1)
            bytes = (size_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
        fclose(fp);
    }
    if (bytes == 0 && sc_name >= 0) {
        long v = sysconf(sc_name);
        if (v > 0) bytes = (size_t)v;
    }
    return bytes != 0 ? bytes : fallback;
}

static void cache_load(void) {
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    const int sc2 = _SC_LEVEL2_CACHE_SIZE, sc3 = _SC_LEVEL3_CACHE_SIZE;
#else
    const int sc2 = -1, sc3 = -1;
#endif
    g_l2_bytes = cache_size("/sys/devices/system/cpu/cpu0/cache/index2/size", sc2, 512u << 10);
    g_llc_bytes = cache_size("/sys/devices/system/cpu/cpu0/cache/index3/size", sc3, 32u << 20);
}

static size_t l2_bytes(void) {
    pthread_once(&g_cache_once, cache_load);
    return g_l2_bytes;
}

static size_t llc_bytes(void) {
    pthread_once(&g_cache_once, cache_load);
    return g_llc_bytes;
}

/* Elements of f before dst reaches a multiple of `align` (the element
 * divides align and dst is aligned to the element, so it gets there). */
static size_t head_to(const fill_t *f, size_t align) {
    size_t head = (align - ((uintptr_t)f->dst & (align - 1))) % align / f->size;
    return head < f->count ? head : f->count;
}

/* The pattern repeated over `out` (out_size a multiple of the element). */
static void pattern_repeat(const fill_t *f, unsigned char *out, size_t out_size) {
    for (size_t k = 0; k < out_size; k += f->size)
        memcpy(out + k, f->pattern, f->size);
}

/* f with streaming stores, which write whole lines without reading them
 * first: an ordinary store that misses the cache reads its line, so a fill
 * larger than the cache moved its bytes twice (on a 2-core AMD EPYC VM the
 * f32 fill ran at 0.65x of memset, which streams at that size; on a
 * 16-core Xeon with 300 MiB of L3 an ordinary fill of 256 MiB beat memset,
 * hence the test against the cache's size). */
static void fill_streamed(const fill_t *f) {
#if defined(__x86_64__)
    const size_t head = head_to(f, 16);
    unsigned char pat[16];
    pattern_repeat(f, pat, 16);
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)pat);
    fill_span(f, 0, head);
    unsigned char *d = f->dst + head * f->size;
    const size_t bytes = (f->count - head) * f->size;
    size_t k = 0;
    for (; k + 64 <= bytes; k += 64) {
        _mm_stream_si128((__m128i *)(void *)(d + k), v);
        _mm_stream_si128((__m128i *)(void *)(d + k + 16), v);
        _mm_stream_si128((__m128i *)(void *)(d + k + 32), v);
        _mm_stream_si128((__m128i *)(void *)(d + k + 48), v);
    }
    for (; k + 16 <= bytes; k += 16)
        _mm_stream_si128((__m128i *)(void *)(d + k), v);
    fill_span(f, head + k / f->size, (bytes - k) / f->size);
    _mm_sfence(); /* the streamed stores before the job reports done */
#else
    fill_copies(f);
#endif
}

/* ---- AMD CPUs
 * Measured 2026-11-29 on the 2-core AMD EPYC VM (sysfs: 1 MiB L2, 32 MiB
 * L3), GB/s of one thread filling one buffer again and again (256 MiB: two
 * threads, a half each; a standalone program, best of 11):
 *
 *   buffer           2 KiB  4-512 KiB  1-8 MiB  256 MiB
 *   memset             269    153-176  134-177     42
 *   rep stosq          154    153-176  134-178     44
 *   AVX2 32 B stores   273    264-275  120-157      -
 *   SSE2 loop (-O3)     83      46-68    68-70     16
 *   8 KiB + copies       -    121-137       49      -
 *   16 B streamed        -      43-62       42     42
 *
 * glibc's memset is `rep stosb` above 2 KiB here (stosq matches it to the
 * digit from 4 KiB to 8 MiB): the CPU writes such a string's lines without
 * reading them first, in the caches and past them, which no ordinary store
 * does (the loop moves half of memset's bytes or less from L3 sizes up). In
 * the L1 and L2 caches, though, AVX2 stores beat it by 1.5x. So: AVX2
 * stores while the fill fits in half an L2; above, `rep stosq`
 * for elements up to 8 bytes, AVX2 stores up to the L3's size for 16-byte
 * ones (a string store takes 8 bytes at most) and streaming past it. Intel
 * CPUs: below. Other CPUs keep the loop and its copies (unmeasured there)
 * and streaming past the L3. */

/* The CPU's vendor as the fills choose by it: neither AMD nor Intel (or
 * not x86-64), AMD, AMD with AVX2, Intel, Intel with AVX2 (from the
 * backend's one cached xdev_cpu_features()). */
enum { CPU_OTHER, CPU_AMD, CPU_AMD_AVX2, CPU_INTEL, CPU_INTEL_AVX2 };
static int cpu_kind(void) {
#if defined(__x86_64__)
    const unsigned f = xdev_cpu_features();
    const bool avx2 = (f & XDEV_CPU_FEAT_AVX2) != 0;
    return (f & XDEV_CPU_FEAT_INTEL) ? (avx2 ? CPU_INTEL_AVX2 : CPU_INTEL)
           : (f & XDEV_CPU_FEAT_AMD) ? (avx2 ? CPU_AMD_AVX2 : CPU_AMD)
                                     : CPU_OTHER;
#else
    return CPU_OTHER;
#endif
}

#if defined(__x86_64__)
/* f with `rep stosq` of the pattern repeated to 8 bytes (size <= 8). */
static void fill_stosq(const fill_t *f) {
    const size_t head = head_to(f, 8);
    uint64_t v;
    pattern_repeat(f, (unsigned char *)&v, 8);
    fill_span(f, 0, head);
    void *d = f->dst + head * f->size;
    size_t words = (f->count - head) * f->size / 8;
    const size_t tail = f->count - head - words * 8 / f->size;
    __asm__ volatile("rep stosq" : "+D"(d), "+c"(words) : "a"(v) : "memory");
    fill_span(f, f->count - tail, tail);
}

/* f with aligned 32-byte AVX2 stores, 4 a round. */
__attribute__((target("avx2"))) static void fill_avx2(const fill_t *f) {
    const size_t head = head_to(f, 32);
    unsigned char pat[32];
    pattern_repeat(f, pat, 32);
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)pat);
    fill_span(f, 0, head);
    unsigned char *d = f->dst + head * f->size;
    const size_t bytes = (f->count - head) * f->size;
    size_t k = 0;
    for (; k + 128 <= bytes; k += 128) {
        _mm256_store_si256((__m256i *)(void *)(d + k), v);
        _mm256_store_si256((__m256i *)(void *)(d + k + 32), v);
        _mm256_store_si256((__m256i *)(void *)(d + k + 64), v);
        _mm256_store_si256((__m256i *)(void *)(d + k + 96), v);
    }
    for (; k + 32 <= bytes; k += 32)
        _mm256_store_si256((__m256i *)(void *)(d + k), v);
    fill_span(f, head + k / f->size, (bytes - k) / f->size);
}

/* f as memset when each byte of the pattern equals the next (any u8, 0,
 * -1): memset_async's very stores. False: a pattern of several bytes. */
static bool fill_one_byte(const fill_t *f) {
    if (memcmp(f->pattern, f->pattern + 1, f->size - 1) != 0) return false;
    memset(f->dst, f->pattern[0], f->count * f->size);
    return true;
}
#endif

/* ---- Intel CPUs
 * On the 16-core Xeon of the GPU machine (2 MiB L2 a core, 300 MiB L3),
 * ops_bench on 16 threads: the loop and its copies gave 1.01-1.06x of
 * memset at 1 MiB and 1.29-1.58x at 256 MiB (memset streams there), but
 * 0.76-0.82x at 16 MiB, where glibc's memset is `rep stosb`. So from half
 * an L2 up to the L3's size elements up to 8 bytes take `rep stosq` too:
 * 0.92-0.98x at 16 MiB (H200 host, 2026-11-29), c128 0.82x with the loop;
 * 16-byte elements there take AVX2 stores, as on AMD. */
static bool fill_intel(const fill_t *f, size_t total, bool avx2) {
#if defined(__x86_64__)
    if (total <= l2_bytes() / 2 || total > llc_bytes()) return false;
    if (f->size == 16) {
        if (!avx2) return false;
        fill_avx2(f);
        return true;
    }
    if (!fill_one_byte(f)) fill_stosq(f);
    return true;
#else
    (void)f, (void)total, (void)avx2;
#endif
    return false;
}

/* f as the tables above say for this CPU's vendor, in a fill of `total`
 * bytes. False: the generic paths below (another vendor, an Intel fill
 * outside the string stores' range, an AMD 16-byte element past the L3). */
static bool fill_vendor(const fill_t *f, size_t total) {
#if defined(__x86_64__)
    const int kind = cpu_kind();
    if (kind == CPU_INTEL || kind == CPU_INTEL_AVX2)
        return fill_intel(f, total, kind == CPU_INTEL_AVX2);
    if (kind == CPU_OTHER) return false;
    if (fill_one_byte(f)) return true;
    /* the whole fill, not a thread's share: a fill split over threads
     * writes chunks another core wrote last time, and an ordinary store
     * first reads such a line from that core (1 MiB on 2 threads, ops_bench:
     * AVX2 stores 0.88-0.97x of memset, rep stosq 0.99-1.01x) */
    const bool in_l2 = total <= l2_bytes() / 2;
    if (kind == CPU_AMD_AVX2 && (in_l2 || (f->size == 16 && total <= llc_bytes()))) {
        fill_avx2(f);
        return true;
    }
    if (f->size <= 8) {
        fill_stosq(f);
        return true;
    }
#else
    (void)f, (void)total;
#endif
    return false;
}

void xdev_cpu_fill_part(void *dst, const unsigned char *pattern, size_t size, size_t count,
                        size_t total) {
    fill_t f = {dst, count, size, {0}};
    memcpy(f.pattern, pattern, size);
    if ((uintptr_t)dst % size != 0) { /* the core never asks this; the paths below align */
        fill_copies(&f);
        return;
    }
    if (fill_vendor(&f, total)) return;
    if (size > 1 && total > llc_bytes())
        fill_streamed(&f);
    else
        fill_copies(&f);
}
