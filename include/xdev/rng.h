/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/rng.h - random numbers: torch.cuda's per-device generators and
 * seeding API, explicit generator objects, and fills in stream order.
 *
 * Generators. Every device has a default generator (created at first use
 * with seed XDEV_RNG_DEFAULT_SEED, torch's default) holding a 64-bit seed and
 * a 64-bit offset. Explicit generators (xdev_generator_create) hold the same
 * and belong to one device. A fill with generator NULL uses the default
 * generator of the output's device.
 *
 * The numbers: Philox4x32-10 (Salmon et al., SC'11). A generator's stream is
 * the sequence of 32-bit words w[p], p = 0, 1, 2, ...: word p is output p % 4
 * of Philox4x32-10 with counter {p/4 (low 32 bits), p/4 (high 32 bits), 0, 0}
 * and key {seed (low 32 bits), seed (high 32 bits)}. The offset is the
 * position of the next unused word. A fill of n elements of W words each
 * (W = 2 for f64 and int64, else 1) starts at p0 = the offset rounded up to
 * a multiple of W; element i takes words p0 + W*i .. p0 + W*i + W-1 (always
 * inside one 4-word block), and the offset becomes p0 + W*n. So:
 * - consecutive fills never reuse a word;
 * - element i depends only on (seed, p0 + W*i): splitting one fill into
 *   several of the same total, at any element counts, gives the same numbers;
 * - the numbers do not depend on the backend, the GPU model or the launch
 *   configuration: every backend evaluates the same integer and IEEE
 *   operations (no FMA contraction, no vendor math library), bit for bit.
 *
 * Conversions, for element i at word position p (words w[p], w[p+1]):
 * - uniform f32:  (w[p] >> 8) * 2^-24                            in [0, 1)
 * - uniform f64:  ((w[p] << 21) | (w[p+1] >> 11)) * 2^-53       in [0, 1)
 * - normal: Box-Muller over a pair of elements. f32: the pair is the words
 *   (2k, 2k+1) with k = p/2: u1 = w[2k] * 2^-32 + 2^-33 in (0, 1], angle
 *   2 pi w[2k+1] / 2^32; the element at the even position gets
 *   r cos(angle), the odd one r sin(angle), r = sqrt(-2 log u1); result
 *   mean + std * z in float. f64: the pair is the block 4k..4k+3 (k = p/4):
 *   u1 = (K + 1) * 2^-53 with K the 53 bits of w[4k], w[4k+1] taken as for
 *   uniform f64, angle 2 pi A / 2^53 with A the top 53 bits of
 *   (w[4k+2] << 32) | w[4k+3]; the element at 4k gets the cosine, 4k+2 the
 *   sine; result mean + std * z in double. log, sin and cos are xdev's own
 *   polynomials (under 1 ulp on these arguments), xdev/support/philox.h.
 * - integers in [low, high), R = high - low: int32 low + floor(w[p] R / 2^32);
 *   int64 low + floor(u R / 2^64), u = (w[p] << 32) | w[p+1]. No rejection,
 *   so the bias is at most R / 2^32 (int32) or R / 2^64 (int64), relative.
 * - bernoulli(p): 1.0f when w[p] < round(prob * 2^32), else 0.0f.
 *
 * State bytes (XDEV_RNG_STATE_SIZE = 24, little-endian): "XRNG", version
 * (uint32, XDEV_RNG_STATE_VERSION), seed (uint64), offset (uint64). A state
 * that is short, has the wrong magic or an unknown version is refused with
 * XDEV_ERROR_INVALID_VALUE saying which.
 *
 * Thread safety: a generator's seed and offset are updated under its own
 * lock; each fill reserves its words when it is enqueued, so fills from
 * several threads never overlap (their order is the order of the calls). */
#ifndef XDEV_RNG_H
#define XDEV_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "xdev/blas.h"
#include "xdev/device.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XDEV_RNG_DEFAULT_SEED 67280421310721ull /* torch's default_rng_seed_val */
#define XDEV_RNG_STATE_SIZE 24
#define XDEV_RNG_STATE_VERSION 1u

/* ------------------------------------------------------------ torch.cuda API */

/* Which generators each call acts on (torch's split between torch.cuda.* and
 * torch.manual_seed):
 *   xdev_manual_seed, xdev_seed       the current device of the DEFAULT type
 *                                     (torch.cuda.manual_seed / seed)
 *   xdev_manual_seed_all, xdev_seed_all
 *                                     every device of EVERY backend: the CPU
 *                                     devices and every GPU, backends loaded
 *                                     later included (torch.manual_seed, which
 *                                     seeds the CPU and all GPUs). This is the
 *                                     one call a program makes to be
 *                                     reproducible whatever devices it uses.
 *   xdev_initial_seed, xdev_get/set_rng_state
 *                                     the device named (index -1: current)
 *   xdev_get/set_rng_state_all        every device of the DEFAULT type
 *                                     (torch.cuda.get_rng_state_all); for
 *                                     another type, loop xdev_get_rng_state
 *                                     over xdev_device_count(type) devices.
 * Explicit generators are never affected by the seeding calls. */

/* Seed the default generator of the current device of the default type
 * (torch.cuda.manual_seed); its offset restarts at 0. Other devices and
 * other backends are unchanged: see xdev_manual_seed_all. */
XDEV_API XDEV_RESULT xdev_status_t xdev_manual_seed(uint64_t seed);

/* Seed the default generator of every device of every backend - the CPU
 * devices and every GPU - those loaded later included, offsets restarting at
 * 0 (torch.manual_seed; torch.cuda.manual_seed_all queues the call until CUDA
 * initialises in the same way). Explicit generators are not affected. */
XDEV_API XDEV_RESULT xdev_status_t xdev_manual_seed_all(uint64_t seed);

/* manual_seed / manual_seed_all with a non-deterministic seed (getrandom):
 * xdev_seed for the current device of the default type, xdev_seed_all the
 * same seed for every device of every backend. Read it with
 * xdev_initial_seed. */
XDEV_API XDEV_RESULT xdev_status_t xdev_seed(void);
XDEV_API XDEV_RESULT xdev_status_t xdev_seed_all(void);

/* The seed of a device's default generator (index -1: the current device). */
XDEV_API XDEV_RESULT xdev_status_t xdev_initial_seed(xdev_device_t device, uint64_t *seed);

/* A device's default generator state as XDEV_RNG_STATE_SIZE bytes
 * (len >= XDEV_RNG_STATE_SIZE), and back (len == XDEV_RNG_STATE_SIZE). */
XDEV_API XDEV_RESULT xdev_status_t xdev_get_rng_state(xdev_device_t device, void *state,
                                                      size_t len);
XDEV_API XDEV_RESULT xdev_status_t xdev_set_rng_state(xdev_device_t device, const void *state,
                                                      size_t len);

/* Every device of the default type, in index order: count * STATE_SIZE
 * bytes. get: *count (may be NULL) = the device count; states may be NULL
 * with len 0 to ask for the count only. set: len must be exactly the device
 * count times XDEV_RNG_STATE_SIZE; all states are checked before any is set. */
XDEV_API XDEV_RESULT xdev_status_t xdev_get_rng_state_all(void *states, size_t len, size_t *count);
XDEV_API XDEV_RESULT xdev_status_t xdev_set_rng_state_all(const void *states, size_t len);

/* ------------------------------------------------------------ generator objects */

typedef struct xdev_generator *xdev_generator_t;

/* A generator of `device` (index -1: the current device of that type),
 * seeded with `seed`, offset 0. It fills buffers of that device only. */
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_create(xdev_device_t device, uint64_t seed,
                                                         xdev_generator_t *out);
/* Fills already enqueued with it are unaffected. */
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_destroy(xdev_generator_t gen);
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_manual_seed(xdev_generator_t gen, uint64_t seed);
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_initial_seed(xdev_generator_t gen,
                                                               uint64_t *seed);
/* The word position of the next fill (torch's Generator.get_offset/set_offset). */
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_get_offset(xdev_generator_t gen,
                                                             uint64_t *offset);
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_set_offset(xdev_generator_t gen, uint64_t offset);
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_get_state(xdev_generator_t gen, void *state,
                                                            size_t len);
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_set_state(xdev_generator_t gen, const void *state,
                                                            size_t len);
XDEV_API XDEV_RESULT xdev_status_t xdev_generator_get_device(xdev_generator_t gen,
                                                             xdev_device_t *out);

/* ------------------------------------------------------------ fills
 * `out` is device memory from xdev_malloc* with room for n elements; the
 * fill is enqueued on `stream`, or on the current stream of out's device
 * when NULL, and runs in stream order like any other work. gen NULL = the
 * default generator of out's device; an explicit generator must belong to
 * out's device (else XDEV_ERROR_CROSS_DEVICE). n = 0 does nothing and
 * consumes nothing. */

typedef enum xdev_rng_int {
    XDEV_RNG_INT32 = 0, /* int32_t */
    XDEV_RNG_INT64 = 1, /* int64_t */
} xdev_rng_int_t;

/* Uniform in [0, 1): dtype XDEV_DTYPE_F32 or XDEV_DTYPE_F64 (torch.rand). */
XDEV_API XDEV_RESULT xdev_status_t xdev_rng_uniform(xdev_generator_t gen, xdev_dtype_t dtype,
                                                    void *out, size_t n, xdev_stream_t stream);

/* Normal with mean and standard deviation std >= 0 (finite): f32 or f64. */
XDEV_API XDEV_RESULT xdev_status_t xdev_rng_normal(xdev_generator_t gen, xdev_dtype_t dtype,
                                                   void *out, size_t n, double mean, double std,
                                                   xdev_stream_t stream);

/* Uniform integers in [low, high), low < high (torch.randint); for
 * XDEV_RNG_INT32 both bounds must lie in [INT32_MIN, INT32_MAX + 1]. */
XDEV_API XDEV_RESULT xdev_status_t xdev_rng_integers(xdev_generator_t gen, xdev_rng_int_t type,
                                                     void *out, size_t n, int64_t low, int64_t high,
                                                     xdev_stream_t stream);

/* An f32 mask: 1.0f with probability p in [0, 1], else 0.0f (torch.bernoulli). */
XDEV_API XDEV_RESULT xdev_status_t xdev_rng_bernoulli(xdev_generator_t gen, float *out, size_t n,
                                                      double p, xdev_stream_t stream);

#ifdef __cplusplus
}
#endif
#endif
