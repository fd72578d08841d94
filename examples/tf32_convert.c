/* SPDX-License-Identifier: Apache-2.0 */
/* examples/tf32_convert.c - the TF32 experiment of torch's CUDA semantics notes,
 * written against xdev, with the f64 -> f32 step done on the device:
 *
 *   a_full = torch.randn(n, n, dtype=torch.double, device='cuda')
 *   b_full = torch.randn(n, n, dtype=torch.double, device='cuda')
 *   ab_full = a_full @ b_full
 *   a, b = a_full.float(), b_full.float()        # xdev_convert_async
 *   ab_tf32 = a @ b                              # TF32 allowed
 *   error = (ab_tf32 - ab_full).abs().max(); relative = error / ab_full.abs().mean()
 *
 * Runs on the default device of whichever backend loads (the CPU has no TF32:
 * there the f32 GEMM is plain f32 and the error is f32 rounding's).
 *
 *   tf32_convert [--n 512] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

#define TRY(call)                                                                                  \
    do {                                                                                           \
        xdev_status_t st_ = (call);                                                                \
        if (st_ != XDEV_SUCCESS) {                                                                 \
            fprintf(stderr, "%s failed: %s\n", #call, xdev_last_error());                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    int64_t n = 512;
    if (argc == 3 && strcmp(argv[1], "--n") == 0) n = atoll(argv[2]);
    if (n < 1 || n > 16384) {
        fprintf(stderr, "usage: tf32_convert [--n 1..16384]\n");
        return 2;
    }
    const size_t nn = (size_t)(n * n);
    xdev_device_t dev;
    TRY(xdev_get_device(&dev));
    char name[XDEV_DEVICE_NAME_MAX];
    TRY(xdev_device_format(dev, name, sizeof name));

    double *a_full, *b_full, *ab_full, *ab_tf32_64;
    float *a, *b, *ab_tf32;
    TRY(xdev_malloc((void **)&a_full, nn * 8));
    TRY(xdev_malloc((void **)&b_full, nn * 8));
    TRY(xdev_malloc((void **)&ab_full, nn * 8));
    TRY(xdev_malloc((void **)&ab_tf32_64, nn * 8));
    TRY(xdev_malloc((void **)&a, nn * 4));
    TRY(xdev_malloc((void **)&b, nn * 4));
    TRY(xdev_malloc((void **)&ab_tf32, nn * 4));

    TRY(xdev_manual_seed(0));
    TRY(xdev_rng_normal(NULL, XDEV_DTYPE_F64, a_full, nn, 0.0, 1.0, NULL));
    TRY(xdev_rng_normal(NULL, XDEV_DTYPE_F64, b_full, nn, 0.0, 1.0, NULL));
    TRY(xdev_gemm(XDEV_DTYPE_F64, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, n, n, n, 1.0, a_full, n, b_full,
                  n, 0.0, ab_full, n, NULL));
    /* a_full.float(), b_full.float(): on the device, in stream order. */
    TRY(xdev_convert_async(a, XDEV_DTYPE_F32, a_full, XDEV_DTYPE_F64, nn, NULL));
    TRY(xdev_convert_async(b, XDEV_DTYPE_F32, b_full, XDEV_DTYPE_F64, nn, NULL));
    TRY(xdev_blas_set_allow_tf32(true));
    TRY(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, n, n, n, 1.0, a, n, b, n, 0.0,
                  ab_tf32, n, NULL));
    /* Back to f64 on the device for the comparison (exact). */
    TRY(xdev_convert_async(ab_tf32_64, XDEV_DTYPE_F64, ab_tf32, XDEV_DTYPE_F32, nn, NULL));

    double *h_full = malloc(nn * 8), *h_tf32 = malloc(nn * 8);
    if (h_full == NULL || h_tf32 == NULL) return 1;
    TRY(xdev_memcpy(h_full, ab_full, nn * 8)); /* waits for the stream's work */
    TRY(xdev_memcpy(h_tf32, ab_tf32_64, nn * 8));
    double mean = 0.0, err = 0.0;
    for (size_t i = 0; i < nn; i++) {
        mean += fabs(h_full[i]);
        double e = fabs(h_tf32[i] - h_full[i]);
        if (e > err) err = e;
    }
    mean /= (double)nn;
    printf("device: %s, n = %lld\n", name, (long long)n);
    printf("mean |ab_full| = %.4f, max error = %.6f, relative error = %.7f\n", mean, err,
           err / mean);
    int ok = mean > 0.5 * sqrt((double)n) && err / mean < 0.05; /* TF32 at worst: ~2e-3 */
    printf("%s\n", ok ? "OK" : "UNEXPECTED");

    free(h_full);
    free(h_tf32);
    void *bufs[] = {a_full, b_full, ab_full, ab_tf32_64, a, b, ab_tf32};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        TRY(xdev_free(bufs[i]));
    return ok ? 0 : 1;
}
