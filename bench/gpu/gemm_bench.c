/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/gemm_bench.c - square GEMM throughput through xdev_gemm against
 * a direct cublasGemmEx on the same buffers and the same stream of cuda:0:
 *
 *   f32   xdev with TF32 off   vs cublasGemmEx(32F, CUBLAS_COMPUTE_32F)
 *   tf32  xdev with TF32 on    vs cublasGemmEx(32F, CUBLAS_COMPUTE_32F_FAST_TF32)
 *   bf16  xdev bf16            vs cublasGemmEx(16BF, CUBLAS_COMPUTE_32F)
 *
 *   gemm_bench [--sizes 4096,8192] [--modes f32,tf32,bf16] [--rounds 7]
 *
 * Each round times `reps` back-to-back GEMMs (reps sized to ~50 ms) between
 * two CUDA events, alternating xdev and direct rounds after a warm-up of
 * each; GFLOP/s (2 n^3 per GEMM) of the median round; ratio = xdev / direct
 * (goal >= 0.98). Inputs are random in [-1, 1). Needs XDEV_BACKEND=cuda. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <cublas_v2.h>

#include "gpu_bench.h"

#define BCHECK(call)                                                                               \
    do {                                                                                           \
        cublasStatus_t bs_ = (call);                                                               \
        if (bs_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                          \
                    cublasGetStatusName(bs_));                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef enum { MODE_F32, MODE_TF32, MODE_BF16, NMODES } mode_t_;
static const char *const k_mode_names[NMODES] = {"f32", "tf32", "bf16"};

typedef struct ctx {
    mode_t_ mode;
    int64_t n;
    void *a, *b, *c;
    xdev_stream_t xs;
    cudaStream_t cs;
    cublasHandle_t h;
    cudaEvent_t e0, e1;
} ctx_t;

static uint16_t to_bf16(float f) { /* round to nearest even */
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* Fill a device matrix of n*n elements with random values. */
static void fill(void *dev, int64_t n, bool bf16, uint64_t seed) {
    size_t count = (size_t)(n * n), es = bf16 ? 2 : 4;
    unsigned char *host = malloc(count * es);
    if (host == NULL) exit(1);
    uint64_t st = seed;
    for (size_t i = 0; i < count; i++) {
        float v = (float)gb_uniform(&st);
        if (bf16)
            ((uint16_t *)host)[i] = to_bf16(v);
        else
            ((float *)host)[i] = v;
    }
    CHECK(xdev_memcpy(dev, host, count * es));
    free(host);
}

static void one_gemm(const ctx_t *x, bool xdev) {
    int n = (int)x->n;
    if (xdev) {
        xdev_dtype_t t = x->mode == MODE_BF16 ? XDEV_DTYPE_BF16 : XDEV_DTYPE_F32;
        CHECK(xdev_gemm(t, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, n, n, n, 1.0, x->a, n, x->b, n, 0.0,
                        x->c, n, x->xs));
        return;
    }
    const float alpha = 1.0f, beta = 0.0f;
    cudaDataType ty = x->mode == MODE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t ct =
        x->mode == MODE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    BCHECK(cublasGemmEx(x->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, x->a, ty, n, x->b, ty, n,
                        &beta, x->c, ty, n, ct, CUBLAS_GEMM_DEFAULT));
}

/* Seconds per GEMM over one round of `reps`. */
static double round_s(const ctx_t *x, bool xdev, int reps) {
    CCHECK(cudaEventRecord(x->e0, x->cs));
    for (int r = 0; r < reps; r++)
        one_gemm(x, xdev);
    CCHECK(cudaEventRecord(x->e1, x->cs));
    CCHECK(cudaEventSynchronize(x->e1));
    float ms = 0.0f;
    CCHECK(cudaEventElapsedTime(&ms, x->e0, x->e1));
    return (double)ms * 1e-3 / reps;
}

static void run_case(ctx_t *x, int rounds) {
    CHECK(xdev_blas_set_allow_tf32(x->mode == MODE_TF32));
    (void)round_s(x, true, 1); /* warm-up: handles, cuBLAS heuristics, workspace */
    (void)round_s(x, false, 1);
    double est = round_s(x, false, 2);
    int reps = (int)ceil(0.05 / est);
    if (reps < 2) reps = 2;
    if (reps > 200) reps = 200;
    double tx[64], td[64];
    for (int r = 0; r < rounds; r++) {
        tx[r] = round_s(x, true, reps);
        td[r] = round_s(x, false, reps);
    }
    double flop = 2.0 * (double)x->n * (double)x->n * (double)x->n;
    double gx = flop / median(tx, rounds) / 1e9, gd = flop / median(td, rounds) / 1e9;
    printf("| %-5s | %6lld | %5d | %12.0f | %12.0f | %6.3f |\n", k_mode_names[x->mode],
           (long long)x->n, reps, gx, gd, gx / gd);
    fflush(stdout);
}

static bool parse_list(const char *arg, int64_t *out, int *count) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    *count = 0;
    for (char *tok = strtok(buf, ","); tok && *count < 8; tok = strtok(NULL, ","))
        out[(*count)++] = atoll(tok);
    return *count > 0;
}

int main(int argc, char **argv) {
    int64_t sizes[8] = {4096, 8192};
    int nsizes = 2, rounds = 7;
    bool modes[NMODES] = {true, true, true};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            if (!parse_list(argv[++i], sizes, &nsizes)) return 2;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--modes") == 0 && i + 1 < argc) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            for (int k = 0; k < NMODES; k++)
                modes[k] = false;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
                for (int k = 0; k < NMODES; k++)
                    if (strcmp(tok, k_mode_names[k]) == 0) modes[k] = true;
        } else {
            fprintf(stderr, "usage: gemm_bench [--sizes 4096,8192] [--modes f32,tf32,bf16] "
                            "[--rounds 7]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 64) return 2;
    xdev_device_t d = gb_cuda_device("gemm_bench");
    xdev_device_properties_t props;
    CHECK(xdev_get_device_properties(d, &props));
    printf("gemm_bench on cuda:%d (%s): GFLOP/s of the median of %d rounds, xdev_gemm vs "
           "cublasGemmEx\n",
           d.index, props.name, rounds);
    printf("| %-5s | %6s | %5s | %12s | %12s | %6s |\n", "mode", "n", "reps", "xdev GFLOP/s",
           "cuBLAS GFLOP/s", "ratio");
    ctx_t x = {0};
    CHECK(xdev_stream_create(d, XDEV_STREAM_PRIORITY_NORMAL, &x.xs));
    void *native = NULL;
    CHECK(xdev_stream_native_handle(x.xs, &native));
    x.cs = (cudaStream_t)native;
    BCHECK(cublasCreate(&x.h));
    BCHECK(cublasSetStream(x.h, x.cs));
    CCHECK(cudaEventCreate(&x.e0));
    CCHECK(cudaEventCreate(&x.e1));
    for (int si = 0; si < nsizes; si++)
        for (int m = 0; m < NMODES; m++) {
            if (!modes[m]) continue;
            x.mode = (mode_t_)m;
            x.n = sizes[si];
            size_t bytes = (size_t)(x.n * x.n) * (m == MODE_BF16 ? 2 : 4);
            CHECK(xdev_malloc_device(d, &x.a, bytes));
            CHECK(xdev_malloc_device(d, &x.b, bytes));
            CHECK(xdev_malloc_device(d, &x.c, bytes));
            fill(x.a, x.n, m == MODE_BF16, 1 + (uint64_t)si);
            fill(x.b, x.n, m == MODE_BF16, 99 + (uint64_t)si);
            run_case(&x, rounds);
            CHECK(xdev_stream_synchronize(x.xs));
            CHECK(xdev_free(x.a));
            CHECK(xdev_free(x.b));
            CHECK(xdev_free(x.c));
        }
    CCHECK(cudaEventDestroy(x.e0));
    CCHECK(cudaEventDestroy(x.e1));
    BCHECK(cublasDestroy(x.h));
    CHECK(xdev_stream_destroy(x.xs));
    return 0;
}
