/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/fft_overhead_bench.c - the host cost of an xdev_fft_exec whose
 * plan is in the cache (lookup, work area from the caching allocator,
 * cufftSetStream/SetWorkArea when they change, cufftExec*, completion
 * event) against a direct cufftExec* on a cuFFT plan made once with
 * cufftPlanMany (auto-allocated work area, stream set once), same buffers,
 * same stream of cuda:0.
 *
 *   fft_overhead_bench [--calls 32] [--rounds 300] [--evict KIB]
 *
 * A round enqueues --calls transforms back to back and times the enqueue
 * on the host (the stream is drained after each round, outside the timed
 * region); ns/call of the median round, xdev and direct alternating. The
 * overhead (goal <= 1 us) is xdev minus direct. Each case's xdev and direct
 * outputs are compared once. Needs XDEV_BACKEND=cuda.
 *
 * --evict KIB writes one byte of every 64-byte line of a host buffer of
 * that many KiB (at most 65536) before every call, on both sides alike, and
 * times each call alone (two clock reads a call on both sides; the writes
 * are outside the timing). The overhead then is xdev's path with the
 * caches as a large host call leaves them: how much of an overhead is
 * cache misses. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <cufft.h>

#include "gpu_bench.h"

#define FCHECK(call)                                                                               \
    do {                                                                                           \
        cufftResult fr_ = (call);                                                                  \
        if (fr_ != CUFFT_SUCCESS) {                                                                \
            fprintf(stderr, "%s:%d: %s: cufftResult %d\n", __FILE__, __LINE__, #call, (int)fr_);   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef struct fcase {
    const char *name;
    xdev_fft_type_t type;
    xdev_fft_precision_t prec;
    int rank;
    int64_t n[3];
    int64_t batch;
} fcase_t;

static const fcase_t k_cases[] = {
    {"c2c f32 256 x1", XDEV_FFT_C2C, XDEV_FFT_F32, 1, {256}, 1},
    {"c2c f32 4096 x64", XDEV_FFT_C2C, XDEV_FFT_F32, 1, {4096}, 64},
    {"c2c f32 10007 x4 (Bluestein)", XDEV_FFT_C2C, XDEV_FFT_F32, 1, {10007}, 4},
    {"r2c f32 512x512", XDEV_FFT_R2C, XDEV_FFT_F32, 2, {512, 512}, 1},
    {"c2c f64 1024 x32", XDEV_FFT_C2C, XDEV_FFT_F64, 1, {1024}, 32},
};

typedef struct ctx {
    const fcase_t *c;
    xdev_fft_desc_t desc;
    void *in, *out_x, *out_d;
    size_t in_bytes, out_bytes;
    cufftHandle plan;
    cufftType ctype;
    xdev_stream_t xs;
    cudaStream_t cs;
} ctx_t;

static void one(const ctx_t *x, bool xdev) {
    if (xdev) {
        CHECK(
            xdev_fft_exec(&x->desc, x->in, x->out_x, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, x->xs));
        return;
    }
    switch (x->ctype) {
    case CUFFT_C2C:
        FCHECK(cufftExecC2C(x->plan, x->in, x->out_d, CUFFT_FORWARD));
        break;
    case CUFFT_R2C:
        FCHECK(cufftExecR2C(x->plan, x->in, x->out_d));
        break;
    default:
        FCHECK(cufftExecZ2Z(x->plan, x->in, x->out_d, CUFFT_FORWARD));
        break;
    }
}

/* --evict's buffer (NULL: none) and its size. */
static volatile unsigned char *g_evict;
static size_t g_evict_bytes;

/* Host seconds per call over one round of `calls`; with --evict, the calls
 * alone, each timed after the buffer was written. */
static double round_s(const ctx_t *x, bool xdev, int calls) {
    double t = 0;
    if (g_evict_bytes > 0) {
        for (int i = 0; i < calls; i++) {
            gb_evict(g_evict, g_evict_bytes);
            double t0 = now_s();
            one(x, xdev);
            t += now_s() - t0;
        }
    } else {
        double t0 = now_s();
        for (int i = 0; i < calls; i++)
            one(x, xdev);
        t = now_s() - t0;
    }
    CCHECK(cudaStreamSynchronize(x->cs));
    return t / calls;
}

static void setup(ctx_t *x, xdev_device_t d) {
    const fcase_t *c = x->c;
    x->desc = xdev_fft_desc_basic(c->type, c->prec, c->rank, c->n, c->batch);
    int64_t total = 1, half = 1;
    for (int i = 0; i < c->rank; i++) {
        total *= c->n[i];
        half *= i == c->rank - 1 && c->type == XDEV_FFT_R2C ? c->n[i] / 2 + 1 : c->n[i];
    }
    size_t real = c->prec == XDEV_FFT_F32 ? 4 : 8;
    x->in_bytes = (size_t)(total * c->batch) * real * (c->type == XDEV_FFT_R2C ? 1 : 2);
    x->out_bytes = (size_t)(half * c->batch) * real * 2;
    CHECK(xdev_malloc_device(d, &x->in, x->in_bytes));
    CHECK(xdev_malloc_device(d, &x->out_x, x->out_bytes));
    CHECK(xdev_malloc_device(d, &x->out_d, x->out_bytes));
    size_t nreal = x->in_bytes / real;
    void *h = malloc(x->in_bytes);
    if (h == NULL) exit(1);
    uint64_t st = 7;
    for (size_t i = 0; i < nreal; i++) {
        if (real == 4)
            ((float *)h)[i] = (float)gb_uniform(&st);
        else
            ((double *)h)[i] = gb_uniform(&st);
    }
    CHECK(xdev_memcpy(x->in, h, x->in_bytes));
    free(h);
    x->ctype = c->type == XDEV_FFT_R2C   ? CUFFT_R2C
               : c->prec == XDEV_FFT_F32 ? CUFFT_C2C
                                         : CUFFT_Z2Z;
    int n[3] = {(int)c->n[0], (int)c->n[1], (int)c->n[2]};
    FCHECK(cufftPlanMany(&x->plan, c->rank, n, NULL, 1, 0, NULL, 1, 0, x->ctype, (int)c->batch));
    FCHECK(cufftSetStream(x->plan, x->cs));
}

/* The two outputs agree (same library, same algorithm: to rounding). */
static void compare(const ctx_t *x) {
    size_t count = x->out_bytes / (x->c->prec == XDEV_FFT_F32 ? 4 : 8);
    unsigned char *a = malloc(x->out_bytes), *b = malloc(x->out_bytes);
    if (!a || !b) exit(1);
    CHECK(xdev_stream_synchronize(x->xs));
    CHECK(xdev_memcpy(a, x->out_x, x->out_bytes));
    CHECK(xdev_memcpy(b, x->out_d, x->out_bytes));
    double worst = 0, mag = 0;
    for (size_t i = 0; i < count; i++) {
        double u = x->c->prec == XDEV_FFT_F32 ? ((float *)a)[i] : ((double *)a)[i];
        double v = x->c->prec == XDEV_FFT_F32 ? ((float *)b)[i] : ((double *)b)[i];
        worst = fmax(worst, fabs(u - v));
        mag = fmax(mag, fabs(v));
    }
    if (!(worst <= 1e-5 * (mag + 1.0))) {
        fprintf(stderr, "fft_overhead_bench: %s: xdev and cuFFT differ by %g (max |out| %g)\n",
                x->c->name, worst, mag);
        exit(1);
    }
    free(a);
    free(b);
}

int main(int argc, char **argv) {
    int calls = 32, rounds = 300;
    long evict_kb = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            calls = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--evict") == 0 && i + 1 < argc) {
            char *end = NULL;
            evict_kb = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0') evict_kb = -1; /* refused below */
        } else {
            fprintf(stderr,
                    "usage: fft_overhead_bench [--calls 32] [--rounds 300] [--evict KIB]\n");
            return 2;
        }
    }
    if (calls < 1 || calls > 1000 || rounds < 1 || rounds > 10000 || evict_kb < 0 ||
        evict_kb > 65536) {
        fprintf(stderr, "fft_overhead_bench: --calls 1..1000, --rounds 1..10000, --evict "
                        "0..65536 (KiB)\n");
        return 2;
    }
    g_evict_bytes = (size_t)evict_kb * 1024;
    if (g_evict_bytes > 0 && (g_evict = calloc(g_evict_bytes, 1)) == NULL) return 1;
    xdev_device_t d = gb_cuda_device("fft_overhead_bench");
    printf("fft_overhead_bench on cuda:%d: host ns per call (median of %d rounds of %d calls), "
           "xdev_fft_exec (plan-cache hit) vs direct cufftExec\n",
           d.index, rounds, calls);
    if (g_evict_bytes > 0)
        printf("--evict: %zu KiB written before every call, each call timed alone (both columns)\n",
               g_evict_bytes / 1024);
    printf("| %-30s | %9s | %10s | %10s | %9s |\n", "transform", "work KiB", "xdev ns", "cuFFT ns",
           "overhead");
    double *tx = malloc(sizeof(double) * (size_t)rounds),
           *td = malloc(sizeof(double) * (size_t)rounds);
    if (!tx || !td) return 1;
    for (size_t ci = 0; ci < sizeof k_cases / sizeof k_cases[0]; ci++) {
        ctx_t x = {.c = &k_cases[ci]};
        CHECK(xdev_stream_create(d, XDEV_STREAM_PRIORITY_NORMAL, &x.xs));
        void *native = NULL;
        CHECK(xdev_stream_native_handle(x.xs, &native));
        x.cs = (cudaStream_t)native;
        setup(&x, d);
        size_t ws = 0;
        FCHECK(cufftGetSize(x.plan, &ws));
        for (int w = 0; w < 3; w++) { /* warm-up: plan creation, allocator, modules */
            (void)round_s(&x, true, calls);
            (void)round_s(&x, false, calls);
        }
        compare(&x);
        for (int r = 0; r < rounds; r++) {
            tx[r] = round_s(&x, true, calls);
            td[r] = round_s(&x, false, calls);
        }
        double mx = median(tx, rounds) * 1e9, md = median(td, rounds) * 1e9;
        printf("| %-30s | %9.1f | %10.0f | %10.0f | %+9.0f |\n", x.c->name, (double)ws / 1024.0, mx,
               md, mx - md);
        fflush(stdout);
        FCHECK(cufftDestroy(x.plan));
        CHECK(xdev_free(x.in));
        CHECK(xdev_free(x.out_x));
        CHECK(xdev_free(x.out_d));
        CHECK(xdev_stream_destroy(x.xs));
    }
    xdev_fft_plan_cache_stats_t st;
    CHECK(xdev_fft_plan_cache_stats(d, &st));
    printf("plan cache on cuda:%d: %lld plans, %lld hits, %lld misses\n", d.index,
           (long long)st.size, (long long)st.hits, (long long)st.misses);
    free(tx);
    free(td);
    free((void *)g_evict);
    return 0;
}
