/* SPDX-License-Identifier: Apache-2.0 */
/* test_cuda_interop.c - memory xdev did not allocate, on CUDA (xdev/interop.h):
 * cudaMalloc'd memory registered with xdev and used by its copies and GEMM
 * (bounds checked, xdev_free refused), given back with cudaFree as the
 * release once xdev's stream is done with it; malloc'd host memory
 * page-locked with xdev_host_register (CUDA then reports it as registered
 * host memory); a DLPack tensor over cudaMalloc'd memory imported and
 * written by xdev's GEMM; xdev memory exported as a kDLCUDA tensor, and every
 * GPU's export coming back to its own device. Run by
 * ctest (cuda.interop) and under compute-sanitizer (tests/gpu/run.sh step
 * interop). Exits 77 where the CUDA backend cannot be used. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

static int g_bad;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != XDEV_SUCCESS) {                                                              \
            fprintf(stderr, "test_cuda_interop:%d: %s: %s\n", __LINE__, #call, xdev_last_error()); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "test_cuda_interop:%d: ", __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            g_bad++;                                                                               \
        }                                                                                          \
    } while (0)

static const xdev_device_t k_dev = {XDEV_DEVICE_CUDA, 0};
static int g_released;

static void cuda_release(void *p) {
    EXPECT(cudaFree(p) == cudaSuccess, "cudaFree in the release");
    g_released++;
}

/* Row-major C (2x2) = A (2x3) B (3x2) through xdev_gemm on device pointers. */
static void gemm_2x3x2(const float *a, const float *b, float *c, xdev_stream_t s) {
    CHECK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 2, 2, 3, 1.0, b, 2, a, 3, 0.0,
                    c, 2, s));
}

static const float k_a[6] = {1, 2, 3, 4, 5, 6}, k_b[6] = {1, 0, 0, 1, 1, 1};
static const float k_c[4] = {4, 5, 10, 11};

static void registered_cuda_memory(void) {
    float *a, *b, *c;
    EXPECT(cudaMalloc((void **)&a, sizeof k_a) == cudaSuccess, "cudaMalloc");
    EXPECT(cudaMalloc((void **)&b, sizeof k_b) == cudaSuccess, "cudaMalloc");
    EXPECT(cudaMalloc((void **)&c, sizeof k_c) == cudaSuccess, "cudaMalloc");
    xdev_stream_t s;
    CHECK(xdev_stream_create(k_dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
    CHECK(xdev_memory_register(k_dev, a, sizeof k_a, s, cuda_release, a));
    CHECK(xdev_memory_register(k_dev, b, sizeof k_b, s, cuda_release, b));
    CHECK(xdev_memory_register(k_dev, c, sizeof k_c, s, cuda_release, c));
    CHECK(xdev_memcpy_async(a, k_a, sizeof k_a, s)); /* direction from the registration */
    CHECK(xdev_memcpy_async(b, k_b, sizeof k_b, s));
    gemm_2x3x2(a, b, c, s);
    float got[4];
    CHECK(xdev_memcpy_async(got, c, sizeof got, s));
    CHECK(xdev_stream_synchronize(s));
    EXPECT(memcmp(got, k_c, sizeof got) == 0, "GEMM into cudaMalloc'd memory: %g %g %g %g", got[0],
           got[1], got[2], got[3]);
    EXPECT(xdev_memset_async(c, 0, sizeof k_c + 4, s) == XDEV_ERROR_INVALID_VALUE,
           "a memset past the registered bytes was taken");
    EXPECT(xdev_free(c) == XDEV_ERROR_INVALID_VALUE, "xdev_free took cudaMalloc'd memory");
    xdev_device_t d;
    CHECK(xdev_device_of(c, &d));
    EXPECT(d.type == XDEV_DEVICE_CUDA && d.index == 0, "device_of");
    CHECK(xdev_memory_unregister(a));
    CHECK(xdev_memory_unregister(b));
    CHECK(xdev_memory_unregister(c));
    EXPECT(g_released == 3, "%d releases, expected 3", g_released);
    CHECK(xdev_stream_destroy(s));
    printf("test_cuda_interop: cudaMalloc'd memory: registered, GEMM, bounds, given back: %s\n",
           g_bad ? "WRONG" : "ok");
}

static void registered_host_memory(void) {
    size_t n = (size_t)8 << 20;
    char *h = malloc(n);
    memset(h, 0x5a, n);
    CHECK(xdev_host_register(h, n));
    struct cudaPointerAttributes attr;
    EXPECT(cudaPointerGetAttributes(&attr, h) == cudaSuccess && attr.type == cudaMemoryTypeHost,
           "CUDA does not see the registered memory as page-locked host memory");
    void *d;
    CHECK(xdev_malloc_device(k_dev, &d, n));
    CHECK(xdev_memcpy_async(d, h, n, NULL));
    memset(h, 0, n);
    CHECK(xdev_memcpy_async(h, d, n, NULL));
    CHECK(xdev_synchronize());
    EXPECT((unsigned char)h[n - 1] == 0x5a, "the round trip through the device lost the data");
    CHECK(xdev_host_unregister(h));
    EXPECT(cudaPointerGetAttributes(&attr, h) == cudaSuccess &&
               attr.type == cudaMemoryTypeUnregistered,
           "still page-locked after xdev_host_unregister");
    CHECK(xdev_free(d));
    free(h);
    printf("test_cuda_interop: host memory page-locked and back: %s\n", g_bad ? "WRONG" : "ok");
}

typedef struct fake {
    DLManagedTensorVersioned m;
    int64_t shape[2];
    int deleted;
} fake_t;

static void fake_deleter(DLManagedTensorVersioned *self) {
    fake_t *f = self->manager_ctx;
    EXPECT(cudaFree(f->m.dl_tensor.data) == cudaSuccess, "cudaFree in the deleter");
    f->deleted++;
}

static void fake(fake_t *f, int64_t rows, int64_t cols) {
    memset(f, 0, sizeof *f);
    f->shape[0] = rows;
    f->shape[1] = cols;
    void *p = NULL;
    EXPECT(cudaMalloc(&p, (size_t)(rows * cols) * sizeof(float)) == cudaSuccess, "cudaMalloc");
    f->m = (DLManagedTensorVersioned){.version = {1, 0},
                                      .manager_ctx = f,
                                      .deleter = fake_deleter,
                                      .dl_tensor = {.data = p,
                                                    .device = {kDLCUDA, 0},
                                                    .ndim = 2,
                                                    .dtype = {kDLFloat, 32, 1},
                                                    .shape = f->shape}};
}

static void dlpack_both_ways(void) {
    fake_t ta, tb, tc;
    fake(&ta, 2, 3);
    fake(&tb, 3, 2);
    fake(&tc, 2, 2);
    xdev_tensor_view_t va, vb, vc;
    CHECK(xdev_dlpack_import(&ta.m, XDEV_DLPACK_CONTIGUOUS, NULL, &va));
    CHECK(xdev_dlpack_import(&tb.m, XDEV_DLPACK_CONTIGUOUS, NULL, &vb));
    CHECK(xdev_dlpack_import(&tc.m, XDEV_DLPACK_CONTIGUOUS | XDEV_DLPACK_WRITABLE, NULL, &vc));
    EXPECT(vc.device.type == XDEV_DEVICE_CUDA && vc.device.index == 0, "the view's device");
    CHECK(xdev_memcpy(va.data, k_a, sizeof k_a));
    CHECK(xdev_memcpy(vb.data, k_b, sizeof k_b));
    gemm_2x3x2(va.data, vb.data, vc.data, NULL);
    float got[4];
    CHECK(xdev_memcpy(got, vc.data, sizeof got));
    EXPECT(memcmp(got, k_c, sizeof got) == 0, "GEMM into an imported kDLCUDA tensor");
    CHECK(xdev_memory_unregister(va.base));
    CHECK(xdev_memory_unregister(vb.base));
    CHECK(xdev_memory_unregister(vc.base));
    EXPECT(ta.deleted + tb.deleted + tc.deleted == 3, "deleters: %d",
           ta.deleted + tb.deleted + tc.deleted);
    float *d;
    CHECK(xdev_malloc_device(k_dev, (void **)&d, 64));
    const int64_t n = 16;
    DLManagedTensorVersioned *t;
    CHECK(xdev_dlpack_export(d, 1, &n, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t));
    EXPECT(t->dl_tensor.device.device_type == kDLCUDA && t->dl_tensor.device.device_id == 0,
           "exported device %d:%d", (int)t->dl_tensor.device.device_type,
           (int)t->dl_tensor.device.device_id);
    t->deleter(t);
    CHECK(xdev_free(d));
    printf("test_cuda_interop: DLPack kDLCUDA tensors in and out: %s\n", g_bad ? "WRONG" : "ok");
}

/* An export of every GPU's memory comes back to that GPU (its ordinal is the
 * allocation's), imported with that device's own stream. */
static void exports_come_back_to_their_device(int count) {
    for (int i = 0; i < count; i++) {
        xdev_device_t dev = {XDEV_DEVICE_CUDA, i};
        xdev_stream_t s;
        CHECK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
        float *d;
        CHECK(xdev_malloc_device(dev, (void **)&d, 8 * sizeof(float)));
        const int64_t eight = 8;
        DLManagedTensorVersioned *t;
        CHECK(xdev_dlpack_export(d, 1, &eight, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t));
        xdev_tensor_view_t v;
        CHECK(xdev_dlpack_import(t, XDEV_DLPACK_CONTIGUOUS, s, &v));
        EXPECT(v.device.type == XDEV_DEVICE_CUDA && v.device.index == i && v.data == d,
               "cuda:%d's export came back as %d:%d", i, (int)v.device.type, v.device.index);
        CHECK(xdev_fill_async(v.data, XDEV_DTYPE_F32, xdev_scalar_f64(i + 0.5), 8, s));
        CHECK(xdev_stream_synchronize(s));
        float h[8];
        CHECK(xdev_memcpy(h, d, sizeof h));
        EXPECT(h[7] == (float)i + 0.5f, "cuda:%d: %g after the fill", i, h[7]);
        CHECK(xdev_memory_unregister(v.base));
        CHECK(xdev_free(d));
        CHECK(xdev_stream_destroy(s));
    }
    printf("test_cuda_interop: exports of %d GPU%s came back to their device: %s\n", count,
           count == 1 ? "" : "s", g_bad ? "WRONG" : "ok");
}

int main(void) {
    int count = 0;
    if (xdev_device_count(XDEV_DEVICE_CUDA, &count) != XDEV_SUCCESS || count < 1) {
        printf("SKIP: no usable CUDA device: %s\n", xdev_last_error());
        return 77;
    }
    registered_cuda_memory();
    registered_host_memory();
    dlpack_both_ways();
    exports_come_back_to_their_device(count);
    return g_bad ? 1 : 0;
}
