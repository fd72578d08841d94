/* SPDX-License-Identifier: Apache-2.0 */
/* rng_test.h - helpers shared by the random-number suites (test_rng.c,
 * test_rng_api.c): the seven fills with fixed parameters and their scalar
 * reference. */
#ifndef RNG_TEST_H
#define RNG_TEST_H

#include <stddef.h>

#include "xdev/backend.h"
#include "xdev/xdev.h"

typedef struct rt_fill {
    xdev_rng_fill_kind_t kind;
    xdev_rng_format_t format;
    const char *name;
} rt_fill_t;

#define RT_FILLS 7
extern const rt_fill_t rt_fills[RT_FILLS];

/* Bytes per element. */
size_t rt_esize(const rt_fill_t *f);
/* The public call for f (normal: mean 1.5, std 2.5; int32 [-1000, 123457);
 * int64 [INT64_MIN/3, INT64_MAX/2); bernoulli p = 0.3). */
xdev_status_t rt_fill(xdev_generator_t g, const rt_fill_t *f, void *out, size_t n, xdev_stream_t s);
/* What that call must write from a generator (seed, offset), element by element. */
void rt_reference(const rt_fill_t *f, uint64_t seed, uint64_t offset, size_t n, void *out);

/* Block b of stream `seed`: Philox4x32-10 (xdev/support/philox.h). */
void rt_block(uint64_t seed, uint64_t b, uint32_t out[4]);

void *rt_dalloc(xdev_device_t dev, size_t bytes);
/* Wait for the buffer's device, then copy it to the host. */
void rt_fetch(void *host, const void *dev, size_t bytes);

#endif
