/* SPDX-License-Identifier: Apache-2.0 */
/* examples/heat.c - a 2-D heat-equation solver that runs its own kernels
 * on whichever device xdev picked: the same source on the CPU, CUDA or HIP.
 *
 * The plate starts at random temperatures (xdev's RNG: the same integers on
 * every device for a seed); its top edge is held hot, the other edges cold.
 * Each step is one launch of heat_step (examples/kernels/heat_kernels.c, a
 * 5-point stencil, explicit Euler). Every --report steps the program
 * measures the step's change with xdev_nrm2 (BLAS) and the plate's total
 * heat with a block reduction kernel (shared memory and barriers), and
 * prints both: the curve is the same on every device within float rounding
 * (the stencil's float arithmetic may be fused differently by each
 * compiler: within 1e-4 relative), and the initial checksum, an integer
 * kernel with atomics, is bit-identical.
 *
 *   heat [--disable-gpu] [--n SIDE] [--steps N] [--report K] [--seed S]
 *
 * Checks its own physics (the change shrinks, the heat stays between the
 * boundary values) and prints OK, or exits non-zero with xdev's message. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heat_kernels.h"
#include "xdev/kernel.h"
#include "xdev/xdev.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        xdev_status_t check_status_ = (call);                                                      \
        if (check_status_ != XDEV_SUCCESS) {                                                       \
            fprintf(stderr, "heat: %s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,         \
                    xdev_status_string(check_status_), xdev_last_error());                         \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int usage(FILE *out) {
    fprintf(out, "usage: heat [--disable-gpu] [--n SIDE] [--steps N] [--report K] [--seed S]\n"
                 "  --disable-gpu  use the CPU even when a GPU backend is the default\n"
                 "  --n SIDE       grid of SIDE x SIDE points (default 512)\n"
                 "  --steps N      time steps (default 2000)\n"
                 "  --report K     print the change and total heat every K steps (default 250)\n"
                 "  --seed S       seed of the initial temperatures (default 42)\n");
    return out == stdout ? 0 : 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return false;
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    bool disable_gpu = false;
    long side = 512, steps = 2000, report = 250, seed = 42;
    for (int i = 1; i < argc; i++) {
        long *dst = NULL, lo = 1, hi = 1L << 30;
        if (strcmp(argv[i], "--disable-gpu") == 0) {
            disable_gpu = true;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0) return usage(stdout);
        if (strcmp(argv[i], "--n") == 0) dst = &side, lo = 3, hi = 16384;
        if (strcmp(argv[i], "--steps") == 0) dst = &steps;
        if (strcmp(argv[i], "--report") == 0) dst = &report;
        if (strcmp(argv[i], "--seed") == 0) dst = &seed, lo = 0, hi = 0x7fffffffL;
        if (dst == NULL || i + 1 == argc || !parse_long(argv[++i], lo, hi, dst))
            return usage(stderr);
    }
    int nx = (int)side, ny = (int)side;
    long n = (long)nx * ny, blocks = (n + 255) / 256;
    float r = 0.2f; /* r <= 1/4 keeps explicit Euler stable */
    xdev_module_t mod = NULL;
    xdev_generator_t gen = NULL;
    int *seedling = NULL;
    float *u = NULL, *v = NULL, *diff = NULL, *norm = NULL;
    double *partial = NULL, *host_partial = NULL;
    unsigned long long *checksum = NULL;
    int rc = 1;

    CHECK(xdev_init());
    xdev_device_type_t type;
    CHECK(xdev_default_device_type(&type));
    xdev_device_t device = {disable_gpu ? XDEV_DEVICE_CPU : type, 0};
    char name[XDEV_DEVICE_NAME_MAX];
    xdev_device_properties_t props;
    CHECK(xdev_device_format(device, name, sizeof name));
    CHECK(xdev_get_device_properties(device, &props));
    printf("device: %s (%s), grid %dx%d, %ld steps, seed %ld\n", name, props.name, nx, ny, steps,
           seed);
    CHECK(xdev_set_device(device));

    /* The kernels of this program, built for every toolchain found. */
    xdev_kernel_t k_init, k_step, k_sums;
    CHECK(xdev_module_load(device, heat_kernels_bundle(), &mod));
    CHECK(xdev_module_get_kernel(mod, "heat_init", &k_init));
    CHECK(xdev_module_get_kernel(mod, "heat_step", &k_step));
    CHECK(xdev_module_get_kernel(mod, "heat_partial_sums", &k_sums));

    CHECK(xdev_malloc_device(device, (void **)&seedling, (size_t)n * sizeof(int)));
    CHECK(xdev_malloc_device(device, (void **)&u, (size_t)n * sizeof(float)));
    CHECK(xdev_malloc_device(device, (void **)&v, (size_t)n * sizeof(float)));
    CHECK(xdev_malloc_device(device, (void **)&diff, (size_t)n * sizeof(float)));
    CHECK(xdev_malloc_device(device, (void **)&norm, sizeof(float)));
    CHECK(xdev_malloc_device(device, (void **)&partial, (size_t)blocks * sizeof(double)));
    CHECK(xdev_malloc_device(device, (void **)&checksum, sizeof *checksum));
    host_partial = malloc((size_t)blocks * sizeof(double));
    if (host_partial == NULL) goto fail;

    /* Initial state: random integers -> temperatures in [0, 1). */
    CHECK(xdev_generator_create(device, (uint64_t)seed, &gen));
    CHECK(xdev_rng_integers(gen, XDEV_RNG_INT32, seedling, (size_t)n, 0, 1 << 30, NULL));
    CHECK(xdev_memset_async(checksum, 0, sizeof *checksum, NULL));
    xdev_launch_config_t flat = {.grid = {(unsigned)blocks, 1, 1}, .block = {256, 1, 1}};
    CHECK(XDEV_LAUNCH(k_init, &flat, n, seedling, u, checksum));
    unsigned long long sum0 = 0;
    CHECK(xdev_memcpy(&sum0, checksum, sizeof sum0));
    printf("initial checksum %llu (integer kernel: identical on every device)\n", sum0);

    xdev_launch_config_t grid2d = {.grid = {(unsigned)(nx + 15) / 16, (unsigned)(ny + 15) / 16, 1},
                                   .block = {16, 16, 1}};
    double last_change = 1e300, t0 = now_ms();
    bool physics_ok = true;
    for (long s = 1; s <= steps; s++) {
        CHECK(XDEV_LAUNCH(k_step, &grid2d, nx, ny, r, u, v, diff));
        float *t = u;
        u = v, v = t;
        if (s % report != 0 && s != steps) continue;
        float change;
        CHECK(xdev_nrm2(XDEV_DTYPE_F32, n, diff, 1, norm, NULL));
        CHECK(xdev_memcpy(&change, norm, sizeof change));
        CHECK(XDEV_LAUNCH(k_sums, &flat, n, u, partial));
        CHECK(xdev_memcpy(host_partial, partial, (size_t)blocks * sizeof(double)));
        double heat = 0.0;
        for (long b = 0; b < blocks; b++)
            heat += host_partial[b];
        double ms = now_ms() - t0;
        printf("step %6ld  change %.6e  mean temperature %.6f  (%.3f ms/step)\n", s, (double)change,
               heat / (double)n, ms / (double)s);
        physics_ok = physics_ok && (double)change <= last_change * 1.0001 && heat >= 0.0 &&
                     heat <= (double)n;
        last_change = (double)change;
    }
    if (!physics_ok) {
        fprintf(stderr, "heat: the change grew or the heat left [0, 1] per point: wrong results\n");
        goto fail;
    }
    printf("device %s: OK\n", name);
    rc = 0;
fail:
    if (gen != NULL) (void)xdev_generator_destroy(gen);
    void *bufs[] = {seedling, u, v, diff, norm, partial, checksum};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i] != NULL) (void)xdev_free(bufs[i]);
    if (mod != NULL) (void)xdev_module_unload(mod);
    free(host_partial);
    return rc;
}
