/* SPDX-License-Identifier: Apache-2.0 */
/* examples/particles.c - particle binning with the parallel primitives
 * (xdev/primitives.h), the same program on every backend:
 *
 *   1. positions x in [0, 1) and masses from a seeded generator (Philox:
 *      the same numbers on every backend);
 *   2. histogram: particles per bin (--bins even bins over [0, 1));
 *   3. scan: each bin's first slot (an inclusive scan of the counts after a
 *      leading 0: the bins' offsets);
 *   4. sort: the particles by position, their masses carried (a stable
 *      radix sort of key/value pairs), so each bin's particles are
 *      contiguous, in the offsets' order;
 *   5. segmented reduce: each bin's total mass (deterministic mode: the
 *      float sums have the same bits on the CPU and a GPU) and its heaviest
 *      particle.
 * Every stage runs on one stream, in stream order, with nothing copied back
 * until the end. The program checks the results on the host and prints
 * FNV-1a hashes of the integer results (counts, offsets, the argmax of each
 * bin) and of the masses' bits: on every backend they are the same.
 *
 *   particles [--n N (1048576)] [--bins B (64)] [--seed S (7)]
 *   prints the hashes and "particles: OK" */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

static void fail(const char *what, long long at) {
    fprintf(stderr, "particles: %s (at %lld)\n", what, at);
    exit(1);
}

static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv) {
    size_t n = (size_t)1 << 20, bins = 64;
    uint64_t seed = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0)
            n = (size_t)strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--bins") == 0)
            bins = (size_t)strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
        else
            fail("usage: particles [--n N] [--bins B] [--seed S]", i);
    }
    if (n == 0 || bins == 0 || bins > 1u << 20) fail("--n and --bins must be positive", 0);
    xdev_device_type_t type;
    XDEV_MUST(xdev_default_device_type(&type));
    xdev_device_t dev = {type, 0};
    char name[32];
    XDEV_MUST(xdev_device_format(dev, name, sizeof name));
    XDEV_MUST(xdev_set_device(dev));
    XDEV_MUST(xdev_set_deterministic(true)); /* the mass sums: one order, every backend */
    xdev_stream_t s;
    XDEV_MUST(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &s));

    float *x, *mass, *xs, *ms, *bin_mass;
    int64_t *counts, *offsets, *heaviest;
    XDEV_MUST(xdev_malloc_stream((void **)&x, n * sizeof *x, s));
    XDEV_MUST(xdev_malloc_stream((void **)&mass, n * sizeof *mass, s));
    XDEV_MUST(xdev_malloc_stream((void **)&xs, n * sizeof *xs, s));
    XDEV_MUST(xdev_malloc_stream((void **)&ms, n * sizeof *ms, s));
    XDEV_MUST(xdev_malloc_stream((void **)&bin_mass, bins * sizeof *bin_mass, s));
    XDEV_MUST(xdev_malloc_stream((void **)&counts, bins * sizeof *counts, s));
    XDEV_MUST(xdev_malloc_stream((void **)&offsets, (bins + 1) * sizeof *offsets, s));
    XDEV_MUST(xdev_malloc_stream((void **)&heaviest, bins * sizeof *heaviest, s));

    /* 1. positions and masses */
    xdev_generator_t gen;
    XDEV_MUST(xdev_generator_create(dev, seed, &gen));
    XDEV_MUST(xdev_rng_uniform(gen, XDEV_DTYPE_F32, x, n, s));
    XDEV_MUST(xdev_rng_uniform(gen, XDEV_DTYPE_F32, mass, n, s));
    /* 2. particles per bin */
    XDEV_MUST(xdev_prim_histogram_even(x, XDEV_DTYPE_F32, n, bins, 0.0, 1.0, counts, s));
    /* 3. offsets: 0, then the running total of the counts */
    XDEV_MUST(xdev_memset_async(offsets, 0, sizeof *offsets, s));
    XDEV_MUST(xdev_prim_scan(counts, XDEV_DTYPE_I64, bins, XDEV_PRIM_SUM, 0, offsets + 1, s));
    /* 4. the particles in position order, masses carried */
    XDEV_MUST(xdev_prim_sort_pairs(x, mass, XDEV_DTYPE_F32, sizeof(float), n, 0, 0, 0, xs, ms, s));
    /* 5. per bin: total mass and the heaviest particle (index within the bin) */
    XDEV_MUST(xdev_prim_segmented_reduce(ms, XDEV_DTYPE_F32, n, offsets, bins, XDEV_PRIM_SUM,
                                         bin_mass, s));
    XDEV_MUST(xdev_prim_segmented_reduce(ms, XDEV_DTYPE_F32, n, offsets, bins, XDEV_PRIM_ARGMAX,
                                         heaviest, s));

    float *hxs = malloc(n * sizeof *hxs);
    float *hms = malloc(n * sizeof *hms), *hbm = malloc(bins * sizeof *hbm);
    int64_t *hc = malloc(bins * sizeof *hc), *ho = malloc((bins + 1) * sizeof *ho);
    int64_t *hh = malloc(bins * sizeof *hh);
    if (!hxs || !hms || !hbm || !hc || !ho || !hh) fail("out of host memory", 0);
    XDEV_MUST(xdev_memcpy_async(hxs, xs, n * sizeof *hxs, s));
    XDEV_MUST(xdev_memcpy_async(hms, ms, n * sizeof *hms, s));
    XDEV_MUST(xdev_memcpy_async(hbm, bin_mass, bins * sizeof *hbm, s));
    XDEV_MUST(xdev_memcpy_async(hc, counts, bins * sizeof *hc, s));
    XDEV_MUST(xdev_memcpy_async(ho, offsets, (bins + 1) * sizeof *ho, s));
    XDEV_MUST(xdev_memcpy_async(hh, heaviest, bins * sizeof *hh, s));
    XDEV_MUST(xdev_stream_synchronize(s));

    /* The host's check: every particle counted once, the sorted positions
     * in order, each bin's particles in its own bin, the argmax the max. */
    int64_t total = 0;
    for (size_t b = 0; b < bins; b++) {
        if (ho[b] != total) fail("offset is not the running count", (long long)b);
        total += hc[b];
    }
    if (total != (int64_t)n || ho[bins] != total) fail("counts do not add up to n", total);
    for (size_t i = 1; i < n; i++)
        if (hxs[i] < hxs[i - 1]) fail("positions not sorted", (long long)i);
    for (size_t b = 0; b < bins; b++) {
        float best = -1.0f;
        int64_t at = -1;
        for (int64_t i = ho[b]; i < ho[b + 1]; i++) {
            size_t bin = (size_t)((double)hxs[i] * (double)bins);
            if (bin != b) fail("a particle in the wrong bin", (long long)i);
            if (hms[i] > best) best = hms[i], at = i - ho[b];
        }
        if (hh[b] != at) fail("heaviest particle differs from the host's", (long long)b);
    }
    printf("particles: %zu particles in %zu bins on %s\n", n, bins, name);
    printf("counts %016llx offsets %016llx heaviest %016llx masses %016llx\n",
           (unsigned long long)fnv(hc, bins * sizeof *hc),
           (unsigned long long)fnv(ho, (bins + 1) * sizeof *ho),
           (unsigned long long)fnv(hh, bins * sizeof *hh),
           (unsigned long long)fnv(hbm, bins * sizeof *hbm));
    printf("particles: OK\n");

    XDEV_MUST(xdev_generator_destroy(gen));
    void *bufs[] = {x, mass, xs, ms, bin_mass, counts, offsets, heaviest};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        XDEV_MUST(xdev_free(bufs[i]));
    XDEV_MUST(xdev_stream_destroy(s));
    free(hxs);
    free(hms);
    free(hbm);
    free(hc);
    free(ho);
    free(hh);
    return 0;
}
