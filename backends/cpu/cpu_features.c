/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_features.c - the CPU's vendor and vector extensions, asked
 * once for the whole backend.
 *
 * The fills, conversions, scans and random fills each pick a code path by
 * what the CPU has. They used to ask __builtin_cpu_is / __builtin_cpu_supports
 * themselves, each with its own cache (and one without __builtin_cpu_init);
 * this is the one answer they share, so every file sees the same CPU and a
 * new path adds a bit here instead of another cache. */
#include <stdatomic.h>

#include "cpu/cpu_internal.h"

/* Set in the cached word once it holds the answer (0 = not asked yet). */
#define FEATURES_KNOWN (1u << 31)

/* The bits of this CPU, asked of the compiler's runtime (cpuid). */
static unsigned features_query(void) {
    unsigned f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) f |= XDEV_CPU_FEAT_AVX2;
    if (__builtin_cpu_supports("avx512f")) f |= XDEV_CPU_FEAT_AVX512F;
    if (__builtin_cpu_is("intel")) f |= XDEV_CPU_FEAT_INTEL;
    if (__builtin_cpu_is("amd")) f |= XDEV_CPU_FEAT_AMD;
#endif
    return f;
}

/* A benign race: threads that ask at the same time each compute the same
 * answer and store the same word; after that it is one relaxed load. */
unsigned xdev_cpu_features(void) {
    static atomic_uint cached;
    unsigned f = atomic_load_explicit(&cached, memory_order_relaxed);
    if (f == 0) {
        f = features_query() | FEATURES_KNOWN;
        atomic_store_explicit(&cached, f, memory_order_relaxed);
    }
    return f & ~FEATURES_KNOWN;
}
