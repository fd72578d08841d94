/* SPDX-License-Identifier: Apache-2.0 */
/* rng_bench.c - random fill throughput (GB/s of output) per kind and dtype
 * on the default backend; on the CPU backend also a plain scalar loop (one
 * Philox block at a time, conversions element by element, not vectorised)
 * producing the same numbers, so the vectorised path's gain is measured in
 * the same run.
 *
 *   rng_bench [elements] [reps]     (default 2^26 on GPUs, 2^24 on the CPU; 10)
 *
 * The fill runs on the device's current stream. A rep is timed with two
 * timing events around the fill on GPUs (as bench/gpu/rng_torch.py times
 * torch for the same sizes), with the wall clock around fill + synchronize
 * on the CPU. On the CPU each rep also times a device-to-device copy of the
 * fill's bytes (xdev_memcpy_async), alternated with the fill, and prints the
 * fill's GB/s over the copy's (both count the bytes written): the ratio
 * issue 50 sets goals on, robust to a shared machine's load. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xdev/support/philox.h"
#include "xdev/xdev.h"
#include "bench_util.h"

typedef struct kind {
    const char *name;
    int kind, format;
} kind_t;

static const kind_t k_kinds[] = {
    {"uniform f32", XDEV_PHILOX_UNIFORM, XDEV_PHILOX_F32},
    {"uniform f64", XDEV_PHILOX_UNIFORM, XDEV_PHILOX_F64},
    {"normal f32", XDEV_PHILOX_NORMAL, XDEV_PHILOX_F32},
    {"normal f64", XDEV_PHILOX_NORMAL, XDEV_PHILOX_F64},
    {"integers int32", XDEV_PHILOX_INTEGERS, XDEV_PHILOX_I32},
    {"integers int64", XDEV_PHILOX_INTEGERS, XDEV_PHILOX_I64},
    {"bernoulli f32", XDEV_PHILOX_BERNOULLI, XDEV_PHILOX_F32},
};

static void fill(const kind_t *k, void *out, size_t n) {
    xdev_dtype_t dt = k->format == XDEV_PHILOX_F64 ? XDEV_DTYPE_F64 : XDEV_DTYPE_F32;
    switch (k->kind) {
    case XDEV_PHILOX_UNIFORM:
        CHECK(xdev_rng_uniform(NULL, dt, out, n, NULL));
        break;
    case XDEV_PHILOX_NORMAL:
        CHECK(xdev_rng_normal(NULL, dt, out, n, 0.0, 1.0, NULL));
        break;
    case XDEV_PHILOX_INTEGERS:
        CHECK(xdev_rng_integers(NULL,
                                k->format == XDEV_PHILOX_I32 ? XDEV_RNG_INT32 : XDEV_RNG_INT64, out,
                                n, -1000, 1000000, NULL));
        break;
    default:
        CHECK(xdev_rng_bernoulli(NULL, out, n, 0.5, NULL));
        break;
    }
}

/* The same numbers as the fill above from word 0, one block at a time,
 * without vectorisation (the baseline the CPU backend's loops are measured
 * against). */
__attribute__((optimize("no-tree-vectorize"))) static void scalar_fill(const kind_t *k, void *out,
                                                                       size_t n) {
    const xdev_philox_params_t pr = {0.0f, 1.0f, 0.0, 1.0, -1000, 1001000, (uint64_t)1 << 31};
    unsigned wpe = xdev_philox_words_per_element(k->format), per = 4 / wpe;
    size_t es = 4u * wpe;
    for (uint64_t b = 0; b * per < n; b++) {
        uint32_t w[4];
        xdev_philox_block(XDEV_RNG_DEFAULT_SEED, b, w);
        for (unsigned e = 0; e < per && b * per + e < n; e++)
            xdev_philox_element(k->kind, k->format, w, e * wpe, &pr,
                                (char *)out + (b * per + e) * es);
    }
}

int main(int argc, char **argv) {
    xdev_device_t dev;
    CHECK(xdev_get_device(&dev));
    bool cpu = dev.type == XDEV_DEVICE_CPU;
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)1 << (cpu ? 24 : 26);
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    if (n == 0 || reps <= 0) {
        fprintf(stderr, "usage: rng_bench [elements] [reps]\n");
        return 2;
    }
    char name[XDEV_DEVICE_NAME_MAX];
    xdev_device_properties_t props;
    CHECK(xdev_device_format(dev, name, sizeof name));
    CHECK(xdev_get_device_properties(dev, &props));
    const char *isa = getenv("XDEV_CPU_RNG_ISA");
    printf("rng_bench: %s (%s), %zu elements, best of %d%s%s\n", name, props.name, n, reps,
           cpu ? ", XDEV_CPU_RNG_ISA=" : "", cpu ? (isa ? isa : "auto") : "");
    printf("%-16s %12s %12s%s\n", "fill", "MB", "xdev GB/s",
           cpu ? "  scalar GB/s  speedup  same bits  copy GB/s  / copy" : "");
    void *d = NULL, *d2 = NULL, *h = cpu ? malloc(n * 8) : NULL,
         *check = cpu ? malloc(n * 8) : NULL;
    CHECK(xdev_malloc_device(dev, &d, n * 8));
    if (cpu) CHECK(xdev_malloc_device(dev, &d2, n * 8));
    xdev_event_t ev[2];
    CHECK(xdev_event_create(XDEV_EVENT_TIMING, &ev[0]));
    CHECK(xdev_event_create(XDEV_EVENT_TIMING, &ev[1]));
    for (size_t i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; i++) {
        const kind_t *k = &k_kinds[i];
        size_t bytes = n * 4u * xdev_philox_words_per_element(k->format);
        fill(k, d, n); /* warm up (pages, kernels) */
        CHECK(xdev_device_synchronize(dev));
        double best = 1e30, cbest = 1e30;
        for (int r = 0; r < reps; r++) {
            double t;
            if (cpu) { /* wall clock: the fill runs on the stream's worker */
                double t0 = now_s();
                CHECK(xdev_memcpy_async(d2, d, bytes, NULL));
                CHECK(xdev_device_synchronize(dev));
                t = now_s() - t0;
                cbest = t < cbest ? t : cbest;
                t0 = now_s();
                fill(k, d, n);
                CHECK(xdev_device_synchronize(dev));
                t = now_s() - t0;
            } else { /* device time between two events, as torch is timed */
                float ms = 0;
                CHECK(xdev_event_record(ev[0], NULL));
                fill(k, d, n);
                CHECK(xdev_event_record(ev[1], NULL));
                CHECK(xdev_event_synchronize(ev[1]));
                CHECK(xdev_event_elapsed_time(ev[0], ev[1], &ms));
                t = ms * 1e-3;
            }
            best = t < best ? t : best;
        }
        printf("%-16s %12.1f %12.2f", k->name, (double)bytes / 1e6, (double)bytes / best / 1e9);
        if (cpu) {
            /* From a fresh default generator the fill is scalar_fill's output. */
            CHECK(xdev_manual_seed(XDEV_RNG_DEFAULT_SEED));
            fill(k, d, n);
            CHECK(xdev_device_synchronize(dev));
            CHECK(xdev_memcpy(check, d, bytes));
            double sbest = 1e30;
            scalar_fill(k, h, n);
            for (int r = 0; r < (reps < 3 ? reps : 3); r++) {
                double t0 = now_s();
                scalar_fill(k, h, n);
                double t = now_s() - t0;
                sbest = t < sbest ? t : sbest;
            }
            printf("  %11.2f  %6.1fx  %-9s  %9.2f  %5.2fx", (double)bytes / sbest / 1e9,
                   sbest / best, memcmp(check, h, bytes) == 0 ? "yes" : "NO",
                   (double)bytes / cbest / 1e9, cbest / best);
        }
        printf("\n");
    }
    CHECK(xdev_event_destroy(ev[0]));
    CHECK(xdev_event_destroy(ev[1]));
    CHECK(xdev_free(d));
    if (d2 != NULL) CHECK(xdev_free(d2));
    free(h);
    free(check);
    return 0;
}
