/* SPDX-License-Identifier: Apache-2.0 */
/* test_kernel.c - the `kernel` conformance suite: modules and launches
 * (xdev/kernel.h) of the kernels in kernels/conformance_kernels.c, built for
 * every toolchain by xdev_add_kernels, on the backend under test: saxpy; a
 * block reduction with shared memory and barriers; dynamic shared memory;
 * every atomic; a 2-D stencil; 3-D ids; every argument type; f16/bf16
 * rounding; many threads launching (more streams than the CPU pool posts
 * launches); stream order; traps; bad input, with nothing enqueued. Conformance:
 * XDEV_BACKEND=<backend> (cpu: XDEV_CPU_DEVICES=2). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance_kernels.h"
#include "xdev/kernel.h"
#include "xdev/support/half.h"
#include "xdev/trace.h"
#include "xt.h"

static void setup(void) {
    xt_reset_state();
}

static void *dalloc(int device, size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(device), &p, bytes));
    return p;
}

/* Zero n bytes on the device's current stream. */
static void zero(void *d, size_t n) {
    XT_OK(xdev_memset_async(d, 0, n, NULL));
}

static xdev_module_t load(int device) {
    xdev_module_t m = NULL;
    XT_OK(xdev_module_load(xt_dev(device), conformance_kernels_bundle(), &m));
    return m;
}

static xdev_kernel_t kernel(xdev_module_t m, const char *name) {
    xdev_kernel_t k = NULL;
    XT_OK(xdev_module_get_kernel(m, name, &k));
    return k;
}

static xdev_launch_config_t cfg1(unsigned grid, unsigned block) {
    return (xdev_launch_config_t){.grid = {grid, 1, 1}, .block = {block, 1, 1}};
}

/* ------------------------------------------------------------- kernels */

START_TEST(saxpy) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "saxpy");
    const long sizes[] = {1, 255, 256, 257, 100003};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        long n = sizes[c];
        size_t bytes = (size_t)n * sizeof(float);
        float *hx = malloc(bytes), *hy = malloc(bytes);
        for (long i = 0; i < n; i++) {
            hx[i] = (float)(i % 1000);
            hy[i] = (float)(i % 7);
        }
        float *x = dalloc(0, bytes), *y = dalloc(0, bytes);
        XT_OK(xdev_memcpy(x, hx, bytes));
        XT_OK(xdev_memcpy(y, hy, bytes));
        float a = 2.0f;
        xdev_launch_config_t cfg = cfg1((unsigned)((n + 255) / 256), 256);
        XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y));
        XT_OK(xdev_memcpy(hy, y, bytes)); /* ordered after the launch on the current stream */
        for (long i = 0; i < n; i++)
            ck_assert_msg(hy[i] == 2.0f * (float)(i % 1000) + (float)(i % 7), "n %ld: y[%ld] = %g",
                          n, i, (double)hy[i]);
        XT_OK(xdev_free(x));
        XT_OK(xdev_free(y));
        free(hx);
        free(hy);
    }
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* block_sum (block form: loops between barriers on the CPU) and
 * block_sum_fiber (fibers): each block's sum as the host computes it, and
 * the two forms' outputs identical. */
START_TEST(block_reduction_shared_barrier) {
    xdev_module_t m = load(0);
    xdev_kernel_t k[2] = {kernel(m, "block_sum"), kernel(m, "block_sum_fiber")};
    const unsigned blocks[] = {1, 32, 256, 1024};
    int n = 300007;
    int *hx = malloc((size_t)n * sizeof(int));
    long long want = 0;
    for (int i = 0; i < n; i++) {
        hx[i] = (int)(((long)i * 7919) % 20011) - 10000;
        want += hx[i];
    }
    int *x = dalloc(0, (size_t)n * sizeof(int));
    XT_OK(xdev_memcpy(x, hx, (size_t)n * sizeof(int)));
    for (size_t c = 0; c < sizeof blocks / sizeof blocks[0]; c++) {
        unsigned b = blocks[c], g = (unsigned)((n + (int)b - 1) / (int)b);
        long long *out = dalloc(0, g * sizeof(long long)), *h[2];
        for (int f = 0; f < 2; f++) {
            h[f] = malloc(g * sizeof(long long));
            XT_OK(xdev_memset_async(out, 0xff, g * sizeof(long long), NULL));
            xdev_launch_config_t cfg = cfg1(g, b);
            XT_OK(XDEV_LAUNCH(k[f], &cfg, n, x, out));
            XT_OK(xdev_memcpy(h[f], out, g * sizeof(long long)));
        }
        long long got = 0;
        for (unsigned i = 0; i < g; i++) {
            long long part = 0;
            for (unsigned j = 0; j < b && (long)i * b + j < n; j++)
                part += hx[(long)i * b + j];
            ck_assert_msg(h[0][i] == part, "block_sum block %u of %u: %lld, want %lld", i, b,
                          h[0][i], part);
            ck_assert_msg(h[1][i] == part, "block_sum_fiber block %u of %u: %lld, want %lld", i, b,
                          h[1][i], part);
            got += h[0][i];
        }
        ck_assert(got == want);
        XT_OK(xdev_free(out));
        free(h[0]);
        free(h[1]);
    }
    XT_OK(xdev_free(x));
    free(hx);
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* block_reverse in both forms, through dynamic shared memory. */
START_TEST(dynamic_shared) {
    xdev_module_t m = load(0);
    const char *names[] = {"block_reverse", "block_reverse_fiber"};
    unsigned b = 128, g = 50;
    size_t n = (size_t)b * g;
    int *hx = malloc(n * sizeof(int));
    int *x = dalloc(0, n * sizeof(int)), *y = dalloc(0, n * sizeof(int));
    for (int f = 0; f < 2; f++) {
        xdev_kernel_t k = kernel(m, names[f]);
        for (size_t i = 0; i < n; i++)
            hx[i] = (int)i * 3;
        XT_OK(xdev_memcpy(x, hx, n * sizeof(int)));
        zero(y, n * sizeof(int));
        xdev_launch_config_t cfg = cfg1(g, b);
        cfg.shared_bytes = b * sizeof(int);
        XT_OK(XDEV_LAUNCH(k, &cfg, x, y));
        XT_OK(xdev_memcpy(hx, y, n * sizeof(int)));
        for (size_t i = 0; i < n; i++) {
            size_t blk = i / b, t = i % b;
            ck_assert_msg(hx[i] == (int)(blk * b + (b - 1 - t)) * 3, "%s: y[%zu] = %d", names[f], i,
                          hx[i]);
        }
    }
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    free(hx);
    XT_OK(xdev_module_unload(m));
}
END_TEST

START_TEST(atomics_histogram) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "atomics");
    int n = 200000, nbins = 61;
    int *hx = malloc((size_t)n * sizeof(int));
    unsigned *want_bins = calloc((size_t)nbins, sizeof(unsigned));
    long long sum = 0;
    int lo = INT32_MAX, hi = INT32_MIN;
    for (int i = 0; i < n; i++) {
        hx[i] = (int)(((unsigned)i * 2654435761u) % 100000u);
        want_bins[(unsigned)hx[i] % (unsigned)nbins]++;
        sum += hx[i];
        lo = hx[i] < lo ? hx[i] : lo;
        hi = hx[i] > hi ? hx[i] : hi;
    }
    int *x = dalloc(0, (size_t)n * sizeof(int));
    unsigned *bins = dalloc(0, (size_t)nbins * sizeof(unsigned));
    int *i32 = dalloc(0, 3 * sizeof(int));
    unsigned *u32 = dalloc(0, 2 * sizeof(unsigned));
    long long *i64 = dalloc(0, 3 * sizeof(long long));
    unsigned long long *u64 = dalloc(0, 3 * sizeof(unsigned long long));
    float *f32 = dalloc(0, 3 * sizeof(float));
    double *f64 = dalloc(0, 3 * sizeof(double));
    int hi32[3] = {0, INT32_MAX, INT32_MIN};
    unsigned hu32[2] = {UINT32_MAX, 0};
    long long hi64[3] = {0, INT64_MAX, INT64_MIN};
    unsigned long long hu64[3] = {0, UINT64_MAX, 0};
    float hf32[3] = {0.0f, INFINITY, -INFINITY};
    double hf64[3] = {0.0, INFINITY, -INFINITY};
    XT_OK(xdev_memcpy(x, hx, (size_t)n * sizeof(int)));
    zero(bins, (size_t)nbins * sizeof(unsigned));
    XT_OK(xdev_memcpy(i32, hi32, sizeof hi32));
    XT_OK(xdev_memcpy(u32, hu32, sizeof hu32));
    XT_OK(xdev_memcpy(i64, hi64, sizeof hi64));
    XT_OK(xdev_memcpy(u64, hu64, sizeof hu64));
    XT_OK(xdev_memcpy(f32, hf32, sizeof hf32));
    XT_OK(xdev_memcpy(f64, hf64, sizeof hf64));
    xdev_launch_config_t cfg = cfg1((unsigned)((n + 127) / 128), 128);
    XT_OK(XDEV_LAUNCH(k, &cfg, n, x, bins, nbins, i32, u32, i64, u64, f32, f64));
    unsigned *got_bins = malloc((size_t)nbins * sizeof(unsigned));
    XT_OK(xdev_memcpy(got_bins, bins, (size_t)nbins * sizeof(unsigned)));
    for (int b = 0; b < nbins; b++)
        ck_assert_uint_eq(got_bins[b], want_bins[b]);
    XT_OK(xdev_memcpy(hi32, i32, sizeof hi32));
    XT_OK(xdev_memcpy(hu32, u32, sizeof hu32));
    XT_OK(xdev_memcpy(hi64, i64, sizeof hi64));
    XT_OK(xdev_memcpy(hu64, u64, sizeof hu64));
    XT_OK(xdev_memcpy(hf32, f32, sizeof hf32));
    XT_OK(xdev_memcpy(hf64, f64, sizeof hf64));
    ck_assert_int_eq(hi32[0], (int)(uint32_t)(uint64_t)sum); /* wraps like the device */
    ck_assert_int_eq(hi32[1], lo);
    ck_assert_int_eq(hi32[2], hi);
    ck_assert_uint_eq(hu32[0], (unsigned)lo);
    ck_assert_uint_eq(hu32[1], (unsigned)hi);
    ck_assert(hi64[0] == (long long)((unsigned long long)sum * 1000000007ull)); /* wraps */
    ck_assert(hi64[1] == -(long long)hi * 4294967296ll);
    ck_assert(hi64[2] == (long long)hi * 4294967296ll);
    ck_assert(hu64[0] == (unsigned long long)sum);
    ck_assert(hu64[1] == (unsigned long long)lo + 4294967296ull);
    ck_assert(hu64[2] == (unsigned long long)hi + 4294967296ull);
    ck_assert(hf32[0] == (float)n); /* n < 2^24: every partial sum is exact */
    ck_assert(hf32[1] == (float)lo - 0.5f);
    ck_assert(hf32[2] == (float)hi + 0.5f);
    ck_assert(hf64[0] == (double)sum);
    ck_assert(hf64[1] == (double)lo - 0.25);
    ck_assert(hf64[2] == (double)hi + 0.25);
    void *all[] = {x, bins, i32, u32, i64, u64, f32, f64};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        XT_OK(xdev_free(all[i]));
    free(hx);
    free(want_bins);
    free(got_bins);
    XT_OK(xdev_module_unload(m));
}
END_TEST

START_TEST(stencil_2d) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "stencil");
    int nx = 67, ny = 45;
    size_t n = (size_t)nx * ny;
    float *hu = malloc(n * sizeof(float)), *ho = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        hu[i] = (float)((i * 37) % 101);
    float *u = dalloc(0, n * sizeof(float)), *out = dalloc(0, n * sizeof(float));
    XT_OK(xdev_memcpy(u, hu, n * sizeof(float)));
    zero(out, n * sizeof(float));
    xdev_launch_config_t cfg = {.grid = {(unsigned)(nx + 15) / 16, (unsigned)(ny + 7) / 8, 1},
                                .block = {16, 8, 1}};
    XT_OK(XDEV_LAUNCH(k, &cfg, nx, ny, u, out));
    XT_OK(xdev_memcpy(ho, out, n * sizeof(float)));
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            size_t c = (size_t)y * nx + x;
            float want = 0.0f;
            if (x > 0 && y > 0 && x < nx - 1 && y < ny - 1)
                want = hu[c - 1] + hu[c + 1] + hu[c - nx] + hu[c + nx] - 4.0f * hu[c];
            ck_assert_msg(ho[c] == want, "(%d,%d): %g, want %g", x, y, (double)ho[c], (double)want);
        }
    XT_OK(xdev_free(u));
    XT_OK(xdev_free(out));
    free(hu);
    free(ho);
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* ids3d (a plain kernel) and ids3d_block (block form, a private across a
 * barrier) in a 3-D launch. */
START_TEST(ids_3d) {
    xdev_module_t m = load(0);
    xdev_launch_config_t cfg = {.grid = {3, 2, 2}, .block = {4, 3, 2}};
    int sx = 12, sy = 6, sz = 4;
    size_t n = (size_t)sx * sy * sz * 4;
    int *d = dalloc(0, n * sizeof(int)), *h = malloc(n * sizeof(int));
    const char *names[] = {"ids3d", "ids3d_block"};
    for (int f = 0; f < 2; f++) {
        zero(d, n * sizeof(int));
        XT_OK(XDEV_LAUNCH(kernel(m, names[f]), &cfg, d));
        XT_OK(xdev_memcpy(h, d, n * sizeof(int)));
        for (int z = 0; z < sz; z++)
            for (int y = 0; y < sy; y++)
                for (int x = 0; x < sx; x++) {
                    int *e = &h[4 * ((z * sy + y) * sx + x)];
                    int want = x % 4 + 10 * (y % 3) + 100 * (z % 2) +
                               1000 * (x / 4 + 10 * (y / 3) + 100 * (z / 2)) + 1000000 * 12;
                    ck_assert_msg(e[0] == x && e[1] == y && e[2] == z && e[3] == want,
                                  "%s at (%d,%d,%d): %d %d %d %d, want %d", names[f], x, y, z, e[0],
                                  e[1], e[2], e[3], want);
                }
    }
    XT_OK(xdev_free(d));
    free(h);
    XT_OK(xdev_module_unload(m));
}
END_TEST

typedef struct conf_pod {
    int a;
    double b;
    float c[3];
} conf_pod_t;

START_TEST(every_argument_type) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "arg_types");
    signed char i8 = -100;
    short i16 = -30000;
    int i32 = -2000000000;
    unsigned u32 = 4000000000u;
    long long i64 = -(1ll << 50);
    unsigned long long u64 = 1ull << 60;
    float f32 = 0.1f;
    double f64 = 1.0 / 3.0;
    uint16_t f16bits = xdev_f32_to_f16(-2.5f);
    conf_pod_t pod = {7, 2.25, {1.0f, 2.0f, 4.5f}};
    double *out = dalloc(0, 12 * sizeof(double)), h[12];
    xdev_launch_config_t cfg = cfg1(1, 32);
    XT_OK(XDEV_LAUNCH(k, &cfg, i8, i16, i32, u32, i64, u64, f32, f64, f16bits, pod, out));
    XT_OK(xdev_memcpy(h, out, sizeof h));
    const double want[12] = {-100,        -30000,      -2000000000,  4000000000.0,
                             (double)i64, (double)u64, (double)0.1f, 1.0 / 3.0,
                             -2.5,        7,           2.25,         7.5};
    for (int i = 0; i < 12; i++)
        ck_assert_msg(h[i] == want[i], "out[%d] = %.17g, want %.17g", i, h[i], want[i]);
    xdev_kernel_attributes_t a;
    XT_OK(xdev_kernel_get_attributes(k, &a));
    ck_assert_int_eq(a.nparams, 11);
    ck_assert_uint_eq(a.param_sizes[0], 1);
    ck_assert_uint_eq(a.param_sizes[9], sizeof(conf_pod_t));
    ck_assert_uint_eq(a.param_kinds[9], XDEV_KPARAM_VALUE);
    ck_assert_uint_eq(a.param_kinds[10], XDEV_KPARAM_POINTER);
    ck_assert_str_eq(a.name, "arg_types");
    ck_assert_int_eq(a.uses_barrier, 0);
    ck_assert_int_gt(a.max_threads_per_block, 0);
    ck_assert_int_eq(a.cpu_form, XDEV_KERNEL_FORM_LOOP);
    XT_OK(xdev_kernel_get_attributes(kernel(m, "block_sum_fiber"), &a));
    ck_assert_int_eq(a.uses_barrier, 1);
    ck_assert_int_eq(a.cpu_form, XDEV_KERNEL_FORM_FIBERS);
    XT_OK(xdev_kernel_get_attributes(kernel(m, "block_sum"), &a));
    ck_assert_int_eq(a.uses_barrier, 0);
    ck_assert_int_eq(a.cpu_form, XDEV_KERNEL_FORM_REGIONS);
    XT_OK(xdev_free(out));
    XT_OK(xdev_module_unload(m));
}
END_TEST

START_TEST(half_rounding) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "half_round_trip");
    int n = 4096;
    float *hx = malloc((size_t)n * sizeof(float));
    uint32_t s = 12345;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        uint32_t bits = s;
        if (i < 8)
            bits = (uint32_t[]){0,           0x80000000u, 0x7f800000u, 0x477ff000u,
                                0x33000001u, 0x38800000u, 0x7fc00001u, 0x3f800001u}[i];
        memcpy(&hx[i], &bits, sizeof bits);
    }
    float *x = dalloc(0, (size_t)n * sizeof(float));
    uint16_t *h = dalloc(0, (size_t)n * 2), *b = dalloc(0, (size_t)n * 2);
    uint16_t *gh = malloc((size_t)n * 2), *gb = malloc((size_t)n * 2);
    XT_OK(xdev_memcpy(x, hx, (size_t)n * sizeof(float)));
    xdev_launch_config_t cfg = cfg1((unsigned)(n + 255) / 256, 256);
    XT_OK(XDEV_LAUNCH(k, &cfg, n, x, h, b));
    XT_OK(xdev_memcpy(gh, h, (size_t)n * 2));
    XT_OK(xdev_memcpy(gb, b, (size_t)n * 2));
    for (int i = 0; i < n; i++) {
        ck_assert_msg(gh[i] == xdev_f32_to_f16(hx[i]), "f16 of %a: %04x, want %04x", (double)hx[i],
                      gh[i], xdev_f32_to_f16(hx[i]));
        ck_assert_msg(gb[i] == xdev_f32_to_bf16(hx[i]), "bf16 of %a: %04x, want %04x",
                      (double)hx[i], gb[i], xdev_f32_to_bf16(hx[i]));
    }
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(h));
    XT_OK(xdev_free(b));
    free(hx);
    free(gh);
    free(gb);
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* A shared library of host kernels (xdev_add_kernel_library), opened by
 * path on a host-memory device; a device that runs no host code refuses it. */
START_TEST(host_library_image) {
    xdev_kernel_image_t img = {XDEV_IMAGE_HOST_LIBRARY, XT_KERNEL_LIBRARY, 0};
    xdev_module_t m = NULL;
    if (!xt_host_addressable()) {
        XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_module_load_image(xt_dev(0), &img, &m), "host");
        ck_assert_ptr_null(m);
        return;
    }
    XT_OK(xdev_module_load_image(xt_dev(0), &img, &m));
    xdev_kernel_t k = kernel(m, "lib_iota");
    xdev_kernel_attributes_t a;
    XT_OK(xdev_kernel_get_attributes(k, &a));
    ck_assert_int_eq(a.nparams, 3);
    ck_assert_uint_eq(a.param_kinds[2], XDEV_KPARAM_POINTER);
    int n = 1000, mul = 3;
    int *out = dalloc(0, (size_t)n * sizeof(int)), *h = malloc((size_t)n * sizeof(int));
    xdev_launch_config_t cfg = cfg1(4, 256);
    XT_OK(XDEV_LAUNCH(k, &cfg, n, mul, out));
    XT_OK(xdev_memcpy(h, out, (size_t)n * sizeof(int)));
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(h[i], 3 * i);
    xdev_kernel_t none = NULL;
    XT_ERR(XDEV_ERROR_NOT_FOUND, xdev_module_get_kernel(m, "saxpy", &none), "lib_iota");
    XT_OK(xdev_module_unload(m));
    XT_OK(xdev_free(out));
    free(h);
    xdev_kernel_image_t missing = {XDEV_IMAGE_HOST_LIBRARY, "/nonexistent/libk.so", 0};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_load_image(xt_dev(0), &missing, &m),
           "/nonexistent/libk.so");
    xdev_kernel_image_t ptx = {XDEV_IMAGE_PTX, ".version 8.0\n", 13};
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_module_load_image(xt_dev(0), &ptx, &m), "PTX");
}
END_TEST

/* ------------------------------------------------------------- streams */

/* A launch on a stream runs after what was queued there before it and
 * before what comes after it, whatever the host does meanwhile. */
START_TEST(stream_order) {
    xdev_module_t m = load(0);
    xdev_kernel_t slow = kernel(m, "slow_fill"), sax = kernel(m, "saxpy");
    xdev_stream_t s = xt_new_stream(0);
    int n = 1 << 16, spins = 2000;
    int *a = dalloc(0, 2 * (size_t)n * sizeof(int));
    int *h = malloc((size_t)n * sizeof(int));
    XT_OK(xdev_memset_async(a, 0xff, 2 * (size_t)n * sizeof(int), s));
    xdev_launch_config_t cfg = cfg1((unsigned)n / 256, 256);
    cfg.stream = s;
    XT_OK(XDEV_LAUNCH(slow, &cfg, n, spins, a));
    XT_OK(xdev_memcpy_async(h, a, (size_t)n * sizeof(int), s));
    XT_OK(xdev_stream_synchronize(s));
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(h[i], i);
    /* A kernel on another device's stream is refused; so is a destroyed one. */
    (void)sax;
    XT_OK(xdev_stream_destroy(s));
    cfg.stream = s;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, XDEV_LAUNCH(slow, &cfg, n, spins, a), "destroyed");
    XT_OK(xdev_free(a));
    free(h);
    XT_OK(xdev_module_unload(m));
}
END_TEST

typedef struct {
    pthread_t thread;
    xdev_kernel_t k;
    int id, iters;
    atomic_int *failures;
} worker_t;

static void *worker_main(void *arg) {
    worker_t *w = arg;
    xdev_stream_t s = NULL;
    long n = 10000 + w->id;
    size_t bytes = (size_t)n * sizeof(float);
    float *x = NULL, *y = NULL, *h = malloc(bytes);
    bool ok = xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s) == XDEV_SUCCESS &&
              xdev_malloc_device(xt_dev(0), (void **)&x, bytes) == XDEV_SUCCESS &&
              xdev_malloc_device(xt_dev(0), (void **)&y, bytes) == XDEV_SUCCESS;
    for (long i = 0; ok && i < n; i++)
        h[i] = 1.0f;
    ok = ok && xdev_memcpy_async(x, h, bytes, s) == XDEV_SUCCESS &&
         xdev_memset_async(y, 0, bytes, s) == XDEV_SUCCESS;
    float a = (float)(w->id + 1);
    xdev_launch_config_t cfg = cfg1((unsigned)((n + 127) / 128), 128);
    cfg.stream = s;
    for (int it = 0; ok && it < w->iters; it++)
        ok = XDEV_LAUNCH(w->k, &cfg, n, a, x, y) == XDEV_SUCCESS;
    ok = ok && xdev_memcpy_async(h, y, bytes, s) == XDEV_SUCCESS &&
         xdev_stream_synchronize(s) == XDEV_SUCCESS;
    for (long i = 0; ok && i < n; i++)
        ok = h[i] == a * (float)w->iters;
    if (!ok) {
        fprintf(stderr, "worker %d: %s\n", w->id, xdev_last_error());
        atomic_fetch_add(w->failures, 1);
    }
    (void)xdev_free(x);
    (void)xdev_free(y);
    if (s != NULL) (void)xdev_stream_destroy(s);
    free(h);
    return NULL;
}

/* `threads` threads, each launching saxpy `iters` times on its own stream. */
static void launch_from_threads(int threads, int iters) {
    xdev_module_t m = load(0);
    worker_t w[32];
    ck_assert_int_le(threads, 32);
    atomic_int failures = 0;
    for (int i = 0; i < threads; i++) {
        w[i] = (worker_t){.k = kernel(m, "saxpy"), .id = i, .iters = iters, .failures = &failures};
        ck_assert_int_eq(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(w[i].thread, NULL);
    ck_assert_int_eq(atomic_load(&failures), 0);
    XT_OK(xdev_module_unload(m));
}

START_TEST(many_threads_launching) {
    launch_from_threads(8, xt_iters(100, 10));
}
END_TEST

/* More streams launching at once than the CPU pool posts launches (16):
 * the launches past that run on their stream workers alone, the others on
 * the pool, every result right (kernel.cpu_pool runs it with a pool). */
START_TEST(more_streams_than_pool_posts) {
    launch_from_threads(24, xt_iters(40, 5));
}
END_TEST

/* A launch appears in the stream trace, named. */
START_TEST(traced) {
    char path[] = "/tmp/xdev-kernel-trace-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "empty");
    XT_OK(xdev_trace_start(path));
    xdev_launch_config_t cfg = cfg1(2, 32);
    XT_OK(xdev_launch_kernel(k, &cfg, NULL, 0));
    int *x = dalloc(0, 64 * sizeof(int));
    long long *out = dalloc(0, 2 * sizeof(long long));
    zero(x, 64 * sizeof(int));
    int n = 64;
    XT_OK(XDEV_LAUNCH(kernel(m, "block_sum"), &cfg, n, x, out));
    xdev_launch_config_t cfg3 = cfg1(3, 32); /* told apart by the grid */
    XT_OK(XDEV_LAUNCH(kernel(m, "block_sum_fiber"), &cfg3, n, x, out));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    XT_OK(xdev_trace_stop());
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(out));
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = '\0';
    fclose(f);
    unlink(path);
    ck_assert_msg(strstr(buf, "\"name\":\"empty\",\"cat\":\"stream\"") != NULL &&
                      strstr(buf, "\"grid\":[2,1,1],\"block\":[32,1,1]") != NULL,
                  "no launch of 'empty' in %s", buf);
    /* Which form each ran (what the CPU does with it), beside its sizes. */
    ck_assert_msg(strstr(buf, "\"block\":[32,1,1],\"cpu_form\":\"loop\"") != NULL &&
                      strstr(buf, "\"grid\":[2,1,1],\"block\":[32,1,1],\"cpu_form\":"
                                  "\"regions\"") != NULL &&
                      strstr(buf, "\"grid\":[3,1,1],\"block\":[32,1,1],\"cpu_form\":"
                                  "\"fibers\"") != NULL,
                  "no cpu_form in the launch spans of %s", buf);
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* ------------------------------------------------------------- faults */

START_TEST(trap_reported_at_sync) {
    if (getenv("XG_UNDER_SANITIZER") != NULL)
        XT_SKIP("compute-sanitizer counts the planted trap as an error (tests/gpu/run.sh)");
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "trap_if");
    int *out = dalloc(0, 64 * sizeof(int));
    int flag = 1;
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t cfg = cfg1(2, 32);
    cfg.stream = s;
    xdev_status_t st;
    if (xdev_launch_blocking()) { /* the launch waits for its kernel: it fails itself */
        st = XDEV_LAUNCH(k, &cfg, flag, out);
    } else {
        XT_OK(XDEV_LAUNCH(k, &cfg, flag, out)); /* enqueued fine: the fault comes later */
        st = xdev_stream_synchronize(s);
    }
    ck_assert_msg(st == XDEV_ERROR_LAUNCH_FAILURE || st == XDEV_ERROR_BACKEND,
                  "a trapping kernel: %s (%s)", xdev_status_string(st), xdev_last_error());
    if (st == XDEV_ERROR_LAUNCH_FAILURE && xt_host_addressable()) /* the CPU names the kernel */
        ck_assert_msg(strstr(xdev_last_error(), "trap_if") != NULL, "%s", xdev_last_error());
    /* On a GPU the context is lost (as with CUDA): the unload reports it. */
    (void)xdev_stream_destroy(s);
    (void)xdev_module_unload(m);
    (void)xdev_free(out);
}
END_TEST

START_TEST(undeclared_barrier) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "undeclared_barrier");
    xdev_launch_limits_t lim;
    XT_OK(xdev_device_launch_limits(xt_dev(0), &lim));
    if (lim.warp_size != 1) XT_SKIP("GPUs run xdev_barrier() in any kernel");
    int *out = dalloc(0, 64 * sizeof(int));
    xdev_stream_t s = xt_new_stream(0);
    xdev_launch_config_t cfg = cfg1(2, 32);
    cfg.stream = s;
    if (xdev_launch_blocking()) {
        XT_ERR(XDEV_ERROR_LAUNCH_FAILURE, XDEV_LAUNCH(k, &cfg, out), "XDEV_KERNEL_SYNC");
    } else {
        XT_OK(XDEV_LAUNCH(k, &cfg, out));
        XT_ERR(XDEV_ERROR_LAUNCH_FAILURE, xdev_stream_synchronize(s), "XDEV_KERNEL_SYNC");
    }
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(out));
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* ------------------------------------------------------------- bad input */

START_TEST(bad_input) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "saxpy"), none = NULL;
    XT_ERR(XDEV_ERROR_NOT_FOUND, xdev_module_get_kernel(m, "saxpyy", &none), "saxpyy");
    ck_assert_ptr_null(none);
    ck_assert_msg(strstr(xdev_last_error(), "block_sum") != NULL, "lists the kernels: %s",
                  xdev_last_error());
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_get_kernel(m, "", &none), "name");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_get_kernel(m, NULL, &none), "name");
    xdev_module_t m2 = NULL;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_load(xt_dev(0), NULL, &m2), "bundle");
    xdev_kernel_bundle_t bogus = {.size = 3};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_load(xt_dev(0), &bogus, &m2), "size");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE,
           xdev_module_load(xt_dev(99), conformance_kernels_bundle(), &m2), "99");
    xdev_kernel_image_t img = {(xdev_image_format_t)42, "x", 1};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_load_image(xt_dev(0), &img, &m2), "format");

    long n = 1000;
    float a = 1.0f;
    float *x = dalloc(0, (size_t)n * sizeof(float)), *y = dalloc(0, (size_t)n * sizeof(float));
    float *ones = malloc((size_t)n * sizeof(float));
    for (long i = 0; i < n; i++)
        ones[i] = 1.0f;
    XT_OK(xdev_memcpy(x, ones, (size_t)n * sizeof(float)));
    zero(y, (size_t)n * sizeof(float)); /* any launch that ran would change it */
    xdev_launch_config_t cfg = cfg1(4, 256);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_launch_kernel(k, NULL, NULL, 0), "config");
    xdev_launch_config_t bad = cfg;
    bad.grid.y = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &bad, n, a, x, y), "grid.y = 0");
    bad = cfg;
    bad.block.x = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &bad, n, a, x, y), "block.x = 0");
    bad = cfg;
    bad.block = (xdev_dim3_t){64, 32, 1}; /* 2048 work-items */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &bad, n, a, x, y), "2048");
    bad = cfg;
    bad.block.z = 65;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &bad, n, a, x, y), "block.z");
    xdev_launch_limits_t lim;
    XT_OK(xdev_device_launch_limits(xt_dev(0), &lim));
    bad = cfg;
    bad.shared_bytes = lim.max_shared_bytes + 1;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &bad, n, a, x, y), "shared");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x), "takes 4 arguments, 3 given");
    int small = 5;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, small, a, x, y), "'n'");
    double wide = 1.0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, wide, x, y), "'a'");
    float *host = malloc((size_t)n * sizeof(float));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, host, y), "'x'");
    float *freed = dalloc(0, 4096);
    XT_OK(xdev_free(freed));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x, freed), "'y'");
    const xdev_arg_t noval[4] = {{NULL, 8}, {&a, 4}, {&x, 8}, {&y, 8}};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_launch_kernel(k, &cfg, noval, 4), "no value");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_launch_kernel(k, &cfg, NULL, 4), "args");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, XDEV_LAUNCH((xdev_kernel_t)x, &cfg, n, a, x, y),
           "not an xdev kernel");
    if (xt_has_devices(__func__, 2, "other device")) {
        float *other = dalloc(1, (size_t)n * sizeof(float));
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, XDEV_LAUNCH(k, &cfg, n, a, x, other), "'y'");
        xdev_launch_config_t on1 = cfg;
        on1.stream = xt_new_stream(1);
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, XDEV_LAUNCH(k, &on1, n, a, x, y), "config->stream");
        XT_OK(xdev_stream_destroy(on1.stream));
        XT_OK(xdev_free(other));
    }
    /* Nothing above was enqueued: y is untouched. */
    float *hy = calloc((size_t)n, sizeof(float));
    XT_OK(xdev_memcpy(hy, y, (size_t)n * sizeof(float)));
    for (long i = 0; i < n; i++)
        ck_assert(hy[i] == 0.0f);

    XT_OK(xdev_module_unload(m));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, XDEV_LAUNCH(k, &cfg, n, a, x, y), "unloaded");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_module_unload(m), "unloaded");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_module_get_kernel(m, "saxpy", &none), "unloaded");
    xdev_kernel_attributes_t at;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_kernel_get_attributes(k, &at), "unloaded");
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
    free(host);
    free(hy);
    free(ones);
}
END_TEST

/* The pointer checks remember allocations found live; a free forgets them:
 * a pointer launched fine, then freed, is refused at the next launch, and
 * live again once the allocator hands its address out again. */
START_TEST(freed_after_launch) {
    xdev_module_t m = load(0);
    xdev_kernel_t k = kernel(m, "saxpy");
    long n = 256;
    float a = 1.0f;
    float *x = dalloc(0, 1024), *y = dalloc(0, 1024);
    zero(x, 1024);
    zero(y, 1024);
    xdev_launch_config_t cfg = cfg1(1, 256);
    for (int i = 0; i < 3; i++)
        XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    XT_OK(xdev_free(y));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, XDEV_LAUNCH(k, &cfg, n, a, x, y), "'y'");
    float *y2 = dalloc(0, 1024);
    XT_OK(XDEV_LAUNCH(k, &cfg, n, a, x, y2)); /* maybe y's address again: live now */
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y2));
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* Unload waits for the launches already queued, then the module is gone;
 * loading again works (nothing leaked, the name is free). */
START_TEST(unload_waits_and_reload) {
    for (int round = 0; round < 3; round++) {
        xdev_module_t m = load(0);
        xdev_kernel_t k = kernel(m, "slow_fill");
        int n = 1 << 14, spins = 500;
        int *a = dalloc(0, 2 * (size_t)n * sizeof(int)), *h = malloc((size_t)n * sizeof(int));
        xdev_launch_config_t cfg = cfg1((unsigned)n / 128, 128);
        XT_OK(XDEV_LAUNCH(k, &cfg, n, spins, a));
        XT_OK(xdev_module_unload(m));
        XT_OK(xdev_memcpy(h, a, (size_t)n * sizeof(int)));
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(h[i], i);
        XT_OK(xdev_free(a));
        free(h);
    }
}
END_TEST

/* XDEV_CPU_THREADS=0x3 (suite cpu_threads_bad): the CPU backend refuses
 * to start, naming the variable, as for every malformed XDEV_* value. */
START_TEST(cpu_threads_malformed) {
    XT_ERR(XDEV_ERROR_ENV, xdev_init(), "XDEV_CPU_THREADS");
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("kernel");
    TCase *tc = tcase_create("kernel");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, saxpy);
    tcase_add_test(tc, block_reduction_shared_barrier);
    tcase_add_test(tc, dynamic_shared);
    tcase_add_test(tc, atomics_histogram);
    tcase_add_test(tc, stencil_2d);
    tcase_add_test(tc, ids_3d);
    tcase_add_test(tc, every_argument_type);
    tcase_add_test(tc, half_rounding);
    tcase_add_test(tc, host_library_image);
    tcase_add_test(tc, stream_order);
    tcase_add_test(tc, many_threads_launching);
    tcase_add_test(tc, more_streams_than_pool_posts);
    tcase_add_test(tc, traced);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, freed_after_launch);
    tcase_add_test(tc, unload_waits_and_reload);
    tcase_add_test(tc, undeclared_barrier);
    tcase_add_test(tc, trap_reported_at_sync);
    suite_add_tcase(s, tc);
    Suite *bad = suite_create("cpu_threads_bad");
    TCase *tb = tcase_create("cpu_threads_bad");
    tcase_add_test(tb, cpu_threads_malformed);
    suite_add_tcase(bad, tb);
    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, bad);
    return xt_run(sr, "kernel", argc, argv);
}
