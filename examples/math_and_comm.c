/* SPDX-License-Identifier: Apache-2.0 */
/* examples/math_and_comm.c - the math and collectives of xdev on the default
 * device, checked as it goes: random numbers (a Philox generator, normal
 * f32), a GEMM, an FFT and its inverse, then torch.cuda.comm's broadcast
 * and reduce_add when the device type has two devices or more
 * (XDEV_CPU_DEVICES=2 gives the CPU backend two). Every call is checked
 * with XDEV_MUST (xdev/check.h): a failure prints the call and xdev's
 * message and exits.
 *
 *   math_and_comm          prints one line per part and "math_and_comm: OK" */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "xdev/xdev.h"

#define N 64     /* GEMM size */
#define NFFT 256 /* FFT length */

static void fail(const char *what) {
    fprintf(stderr, "math_and_comm: %s\n", what);
    exit(1);
}

int main(void) {
    xdev_device_type_t type;
    XDEV_MUST(xdev_default_device_type(&type));
    xdev_device_t dev = {type, 0};
    char name[32];
    XDEV_MUST(xdev_device_format(dev, name, sizeof name));
    XDEV_MUST(xdev_set_device(dev));
    xdev_stream_t s;
    XDEV_MUST(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
    XDEV_MUST(xdev_stream_set_name(s, "math")); /* shows in traces and the memory view */

    /* Random numbers: 65536 normals, mean 1, std 2, from a seeded generator. */
    enum { NR = 1 << 16 };
    xdev_generator_t gen;
    XDEV_MUST(xdev_generator_create(dev, 42, &gen));
    float *d_r = NULL, *h_r = malloc(NR * sizeof *h_r);
    XDEV_MUST(xdev_malloc_stream((void **)&d_r, NR * sizeof *d_r, s));
    XDEV_MUST(xdev_rng_normal(gen, XDEV_DTYPE_F32, d_r, NR, 1.0, 2.0, s));
    XDEV_MUST(xdev_memcpy_async(h_r, d_r, NR * sizeof *d_r, s));
    XDEV_MUST(xdev_stream_synchronize(s));
    double sum = 0, sq = 0;
    for (int i = 0; i < NR; i++)
        sum += h_r[i], sq += (double)h_r[i] * h_r[i];
    double mean = sum / NR, sd = sqrt(sq / NR - mean * mean);
    if (fabs(mean - 1.0) > 0.05 || fabs(sd - 2.0) > 0.05) fail("normals off");
    printf("rng: %d normals on %s, mean %.3f, std %.3f\n", NR, name, mean, sd);

    /* GEMM: C = A B with A = 2 I, so C = 2 B whatever the layout. */
    float *h = calloc(3 * N * N, sizeof *h), *a = h, *b = h + N * N, *c = h + 2 * N * N;
    for (int i = 0; i < N; i++)
        a[i * N + i] = 2.0f;
    for (int i = 0; i < N * N; i++)
        b[i] = h_r[i]; /* the random numbers, as data */
    float *d_abc = NULL;
    XDEV_MUST(xdev_malloc_stream((void **)&d_abc, 3 * N * N * sizeof *d_abc, s));
    XDEV_MUST(xdev_memcpy_async(d_abc, h, 2 * N * N * sizeof *h, s));
    XDEV_MUST(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, N, N, N, 1.0, d_abc, N,
                        d_abc + N * N, N, 0.0, d_abc + 2 * N * N, N, s));
    XDEV_MUST(xdev_memcpy_async(c, d_abc + 2 * N * N, N * N * sizeof *c, s));
    XDEV_MUST(xdev_stream_synchronize(s));
    for (int i = 0; i < N * N; i++)
        if (fabsf(c[i] - 2.0f * b[i]) > 1e-5f * (1.0f + fabsf(b[i]))) fail("GEMM wrong");
    printf("gemm: %dx%d f32, C = 2 B as expected\n", N, N);

    /* FFT: a unit impulse transforms to all ones; the inverse (scaled 1/N,
     * torch's default) gives the impulse back. */
    float *x = calloc(2 * NFFT, sizeof *x); /* complex: re, im */
    x[0] = 1.0f;
    float *d_x = NULL, *d_y = NULL;
    XDEV_MUST(xdev_malloc_stream((void **)&d_x, 2 * NFFT * sizeof *x, s));
    XDEV_MUST(xdev_malloc_stream((void **)&d_y, 2 * NFFT * sizeof *x, s));
    XDEV_MUST(xdev_memcpy_async(d_x, x, 2 * NFFT * sizeof *x, s));
    int64_t len = NFFT;
    xdev_fft_desc_t fd = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &len, 1);
    XDEV_MUST(xdev_fft_exec(&fd, d_x, d_y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_BACKWARD, s));
    XDEV_MUST(xdev_memcpy_async(x, d_y, 2 * NFFT * sizeof *x, s));
    XDEV_MUST(xdev_stream_synchronize(s));
    for (int i = 0; i < NFFT; i++)
        if (fabsf(x[2 * i] - 1.0f) > 1e-5f || fabsf(x[2 * i + 1]) > 1e-5f) fail("FFT wrong");
    XDEV_MUST(xdev_fft_exec(&fd, d_y, d_x, XDEV_FFT_INVERSE, XDEV_FFT_NORM_BACKWARD, s));
    XDEV_MUST(xdev_memcpy_async(x, d_x, 2 * NFFT * sizeof *x, s));
    XDEV_MUST(xdev_stream_synchronize(s));
    if (fabsf(x[0] - 1.0f) > 1e-5f || fabsf(x[2]) > 1e-5f) fail("inverse FFT wrong");
    printf("fft: c2c %d points, forward and back\n", NFFT);

    /* torch.cuda.comm: broadcast device 0's buffer to device 1, then
     * reduce_add both onto device 0 (= twice the buffer). */
    int ndev = 0;
    XDEV_MUST(xdev_device_count(type, &ndev));
    if (ndev < 2) {
        printf("comm: one %s device, skipped (XDEV_CPU_DEVICES=2 runs it on the CPU)\n",
               xdev_device_type_name(type));
    } else {
        xdev_device_t dev1 = {type, 1};
        float *on1 = NULL, *sum0 = NULL;
        XDEV_MUST(xdev_malloc_device(dev1, (void **)&on1, NR * sizeof *on1));
        XDEV_MUST(xdev_malloc_device(dev, (void **)&sum0, NR * sizeof *sum0));
        XDEV_MUST(xdev_stream_synchronize(s)); /* d_r is written on s: the calls below use */
        void *dsts[1] = {on1};                 /* the devices' current streams */
        XDEV_MUST(xdev_comm_broadcast(d_r, NR * sizeof *d_r, dsts, 1));
        void *srcs[2] = {d_r, on1};
        XDEV_MUST(xdev_comm_reduce_add(srcs, 2, sum0, NR, XDEV_DTYPE_F32));
        XDEV_MUST(xdev_memcpy(h_r, sum0, NR * sizeof *h_r)); /* on the current stream: ordered */
        if (fabsf(h_r[7] - 2.0f * b[7]) > 1e-6f) fail("broadcast + reduce_add wrong");
        printf("comm: broadcast to %s:1 and reduce_add back, %d floats\n",
               xdev_device_type_name(type), NR);
        XDEV_MUST(xdev_free(sum0));
        XDEV_MUST(xdev_free(on1));
    }

    XDEV_MUST(xdev_free(d_y));
    XDEV_MUST(xdev_free(d_x));
    XDEV_MUST(xdev_free(d_abc));
    XDEV_MUST(xdev_free(d_r));
    XDEV_MUST(xdev_generator_destroy(gen));
    XDEV_MUST(xdev_stream_destroy(s));
    free(x), free(h), free(h_r);
    printf("math_and_comm: OK\n");
    return 0;
}
