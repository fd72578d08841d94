/* SPDX-License-Identifier: Apache-2.0 */
/* test_interop.c - memory xdev did not allocate (xdev/interop.h), on the
 * CPU backend, whose device memory is host memory, so that malloc plays
 * the other library: registered memory is taken by every call and checked
 * like xdev's own (bounds, free refused, overlap refused), giving it back
 * waits for the streams that used it before the release runs; host memory
 * registers as pinned; DLPack tensors go both ways (xdev's GEMM writes
 * into an imported tensor; an exported allocation outlives xdev_free until
 * the consumer's deleter); and bad input is refused saying why. The same
 * exchanges with NumPy: tests/interop_numpy.py; with PyTorch on CUDA:
 * tests/gpu/interop_torch.py. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"
#include "xt.h"

static const xdev_device_t k_cpu0 = {XDEV_DEVICE_CPU, 0};

static void count_release(void *ctx) {
    atomic_fetch_add((atomic_int *)ctx, 1);
}

START_TEST(registered_memory_is_taken_and_checked) {
    char *p = malloc(4096);
    atomic_int released = 0;
    XT_OK(xdev_memory_register(k_cpu0, p, 4096, NULL, count_release, &released));
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(p + 100, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    ck_assert_ptr_eq(info.base, p);
    ck_assert_uint_eq(info.size, 4096);
    xdev_device_t d;
    XT_OK(xdev_device_of(p, &d));
    XT_DEV_EQ(d, k_cpu0);
    XT_OK(xdev_memset_async(p, 7, 4096, NULL));
    XT_OK(xdev_synchronize());
    ck_assert_int_eq(p[4095], 7);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(p, 0, 4097, NULL), "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(p), "xdev_memory_unregister");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_unregister(p + 8), "points 8 bytes into");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_unregister(p), "xdev_memory_unregister");
    ck_assert_int_eq(atomic_load(&released), 0);
    XT_OK(xdev_memory_unregister(p));
    ck_assert_int_eq(atomic_load(&released), 1);
    XT_OK(xdev_pointer_get_info(p, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_unregister(p), "not registered");
    ck_assert_int_eq(atomic_load(&released), 1);
    free(p);
}
END_TEST

START_TEST(overlaps_and_bad_input_refused) {
    char *p = malloc(8192);
    XT_OK(xdev_memory_register(k_cpu0, p, 4096, NULL, NULL, NULL));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_register(k_cpu0, p + 4000, 1000, NULL, NULL, NULL),
           "overlaps memory registered");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_register(p + 10, 10), "overlaps memory registered");
    XT_OK(xdev_memory_register(k_cpu0, p + 4096, 4096, NULL, NULL, NULL)); /* adjacent: fine */
    void *mine;
    XT_OK(xdev_malloc_device(k_cpu0, &mine, 1000));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_register(k_cpu0, mine, 10, NULL, NULL, NULL),
           "xdev's device memory");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_unregister(mine), "xdev_free");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_register(k_cpu0, NULL, 10, NULL, NULL, NULL),
           "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_register(k_cpu0, p, 0, NULL, NULL, NULL),
           "bytes is 0");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE,
           xdev_memory_register((xdev_device_t){XDEV_DEVICE_CPU, 99}, p, 1, NULL, NULL, NULL),
           "99");
    XT_OK(xdev_free(mine));
    XT_OK(xdev_memory_unregister(p));
    XT_OK(xdev_memory_unregister(p + 4096));
    free(p);
}
END_TEST

typedef struct unreg_task {
    void *ptr;
    xdev_status_t st;
} unreg_task_t;

static void *unregister_thread(void *arg) {
    unreg_task_t *t = arg;
    t->st = xdev_memory_unregister(t->ptr);
    return NULL;
}

/* The release waits for the work queued on the registration's stream and
 * on streams given to xdev_record_stream: a gate holds each in turn. */
START_TEST(release_waits_for_the_streams) {
    for (int which = 0; which < 2; which++) {
        xdev_stream_t s1, s2;
        XT_OK(xdev_stream_create(k_cpu0, XDEV_STREAM_PRIORITY_NORMAL, &s1));
        XT_OK(xdev_stream_create(k_cpu0, XDEV_STREAM_PRIORITY_NORMAL, &s2));
        char *p = malloc(1 << 16);
        atomic_int released = 0;
        XT_OK(xdev_memory_register(k_cpu0, p, 1 << 16, s1, count_release, &released));
        XT_OK(xdev_record_stream(p, s2));
        xdev_stream_t busy = which == 0 ? s1 : s2;
        xt_gate_t gate;
        xt_gate_init(&gate);
        XT_OK(xdev_launch_host_func(busy, xt_gate_wait_fn, &gate));
        XT_OK(xdev_memset_async(p, 5, 1 << 16, busy));
        ck_assert(xt_gate_wait_entered(&gate, 5000));
        unreg_task_t t = {p, XDEV_ERROR_INVALID_VALUE};
        pthread_t th;
        pthread_create(&th, NULL, unregister_thread, &t);
        xt_sleep_ms(100);
        ck_assert_msg(atomic_load(&released) == 0, "released while stream %d still used it", which);
        xt_gate_open(&gate);
        pthread_join(th, NULL);
        XT_OK(t.st);
        ck_assert_int_eq(atomic_load(&released), 1);
        ck_assert_int_eq(p[(1 << 16) - 1], 5); /* the memset ran before the release */
        xt_gate_destroy(&gate);
        XT_OK(xdev_stream_destroy(s1));
        XT_OK(xdev_stream_destroy(s2));
        free(p);
    }
}
END_TEST

/* From a host function of its own stream the wait would be for itself. */
typedef struct inside {
    void *ptr;
    xdev_status_t st;
} inside_t;

static void unregister_inside(void *arg) {
    inside_t *in = arg;
    in->st = xdev_memory_unregister(in->ptr);
}

START_TEST(unregister_inside_a_host_function_fails) {
    xdev_stream_t s;
    XT_OK(xdev_stream_create(k_cpu0, XDEV_STREAM_PRIORITY_NORMAL, &s));
    char *p = malloc(256);
    XT_OK(xdev_memory_register(k_cpu0, p, 256, s, NULL, NULL));
    inside_t in = {p, XDEV_SUCCESS};
    XT_OK(xdev_launch_host_func(s, unregister_inside, &in));
    XT_OK(xdev_stream_synchronize(s));
    ck_assert_int_ne(in.st, XDEV_SUCCESS);
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(p, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE); /* still registered */
    XT_OK(xdev_memory_unregister(p));
    XT_OK(xdev_stream_destroy(s));
    free(p);
}
END_TEST

START_TEST(host_memory_registers_as_pinned) {
    char *h = malloc(1 << 20);
    memset(h, 3, 1 << 20);
    XT_OK(xdev_host_register(h, 1 << 20));
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(h + 5, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_PINNED_HOST);
    ck_assert_ptr_eq(info.base, h);
    void *d;
    XT_OK(xdev_malloc_device(k_cpu0, &d, 1 << 20));
    XT_OK(xdev_memcpy_async(d, h, 1 << 20, NULL));
    XT_OK(xdev_synchronize());
    unsigned char last;
    XT_OK(xdev_memcpy(&last, (char *)d + (1 << 20) - 1, 1));
    ck_assert_int_eq(last, 3);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_free(h), "xdev_host_unregister");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_unregister(h), "xdev_host_unregister");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_register(h, 0), "bytes is 0");
    XT_OK(xdev_host_unregister(h));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_host_unregister(h), "not registered");
    XT_OK(xdev_pointer_get_info(h, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
    XT_OK(xdev_free(d));
    free(h);
}
END_TEST

/* ------------------------------------------------------------ DLPack */

typedef struct fake_tensor {
    DLManagedTensorVersioned m;
    int64_t shape[2], strides[2];
    atomic_int deleted;
} fake_tensor_t;

static void fake_deleter(DLManagedTensorVersioned *self) {
    atomic_fetch_add(&((fake_tensor_t *)self->manager_ctx)->deleted, 1);
}

/* A 2-D f32 tensor over data, as another library would make it. */
static void fake(fake_tensor_t *t, void *data, int64_t rows, int64_t cols, const int64_t *strides) {
    memset(t, 0, sizeof *t);
    t->shape[0] = rows;
    t->shape[1] = cols;
    if (strides != NULL) memcpy(t->strides, strides, sizeof t->strides);
    t->m =
        (DLManagedTensorVersioned){.version = {1, 0},
                                   .manager_ctx = t,
                                   .deleter = fake_deleter,
                                   .dl_tensor = {.data = data,
                                                 .device = {kDLCPU, 0},
                                                 .ndim = 2,
                                                 .dtype = {kDLFloat, 32, 1},
                                                 .shape = t->shape,
                                                 .strides = strides != NULL ? t->strides : NULL}};
}

/* C = A B with every operand another library's (row-major 2x3 times
 * 3x2), written by xdev's GEMM straight into the imported memory. */
START_TEST(import_and_gemm_into_it) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[4] = {-1, -1, -1, -1};
    fake_tensor_t ta, tb, tc;
    fake(&ta, a, 2, 3, NULL);
    fake(&tb, b, 3, 2, NULL);
    fake(&tc, c, 2, 2, NULL);
    xdev_tensor_view_t va, vb, vc;
    XT_OK(xdev_dlpack_import(&ta.m, XDEV_DLPACK_CONTIGUOUS, NULL, &va));
    XT_OK(xdev_dlpack_import(&tb.m, XDEV_DLPACK_CONTIGUOUS, NULL, &vb));
    XT_OK(xdev_dlpack_import(&tc.m, XDEV_DLPACK_CONTIGUOUS | XDEV_DLPACK_WRITABLE, NULL, &vc));
    ck_assert_ptr_eq(vc.data, c);
    ck_assert_uint_eq(vc.bytes, sizeof c);
    ck_assert_int_eq(vc.dtype, XDEV_DTYPE_F32);
    XT_DEV_EQ(vc.device, k_cpu0);
    ck_assert(vc.contiguous && !vc.read_only);
    ck_assert_int_eq(vc.strides[0], 2);
    ck_assert_int_eq(vc.strides[1], 1);
    /* row-major C = A B: column-major C^T = B^T A^T */
    XT_OK(xdev_gemm(XDEV_DTYPE_F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 2, 2, 3, 1.0, vb.data, 2,
                    va.data, 3, 0.0, vc.data, 2, NULL));
    XT_OK(xdev_synchronize());
    const float want[4] = {4, 5, 10, 11};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(c[i] == want[i], "c[%d] = %g, expected %g", i, c[i], want[i]);
    xdev_tensor_view_t again;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dlpack_import(&tc.m, 0, NULL, &again), "consumed once");
    ck_assert_int_eq(atomic_load(&tc.deleted), 0);
    XT_OK(xdev_memory_unregister(va.base));
    XT_OK(xdev_memory_unregister(vb.base));
    XT_OK(xdev_memory_unregister(vc.base));
    ck_assert_int_eq(atomic_load(&ta.deleted) + atomic_load(&tb.deleted) + atomic_load(&tc.deleted),
                     3);
}
END_TEST

START_TEST(import_refusals) {
    float buf[64];
    fake_tensor_t t;
    xdev_tensor_view_t v;
    const int64_t cols_first[2] = {1, 4}; /* a transposed 4x4 view */
    fake(&t, buf, 4, 4, cols_first);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dlpack_import(&t.m, XDEV_DLPACK_CONTIGUOUS, NULL, &v),
           "not contiguous");
    XT_OK(xdev_dlpack_import(&t.m, 0, NULL, &v)); /* strided is fine when not required */
    ck_assert(!v.contiguous);
    ck_assert_uint_eq(v.bytes, 16 * sizeof(float));
    XT_OK(xdev_memory_unregister(v.base));
    fake(&t, buf, 4, 4, NULL);
    t.m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dlpack_import(&t.m, XDEV_DLPACK_WRITABLE, NULL, &v),
           "read-only");
    fake(&t, buf, 4, 4, NULL);
    t.m.dl_tensor.dtype = (DLDataType){kDLBool, 8, 1};
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_dlpack_import(&t.m, 0, NULL, &v), "no xdev dtype");
    fake(&t, buf, 4, 4, NULL);
    t.m.dl_tensor.device = (DLDevice){kDLVulkan, 0};
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_dlpack_import(&t.m, 0, NULL, &v), "no xdev backend");
    fake(&t, buf, 4, 4, NULL);
    t.m.dl_tensor.device = (DLDevice){kDLCUDA, 7};
    XT_ERR_ANY(XT_BIT(XDEV_ERROR_INVALID_DEVICE), xdev_dlpack_import(&t.m, 0, NULL, &v),
               "cuda device 7");
    fake(&t, buf, 4, 4, NULL);
    t.m.version.major = 2;
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_dlpack_import(&t.m, 0, NULL, &v), "DLPack 2.0");
    fake(&t, buf, 4, 4, NULL);
    t.shape[1] = -1;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dlpack_import(&t.m, 0, NULL, &v), "negative");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dlpack_import(NULL, 0, NULL, &v), "NULL");
    ck_assert_int_eq(atomic_load(&t.deleted), 0); /* a refused tensor stays the caller's */
}
END_TEST

/* A byte_offset whose sum with data wraps the address space, or lands far
 * outside any tensor (a non-canonical address), is refused naming it;
 * nothing is registered, and a sane offset still works. */
START_TEST(import_refuses_wild_byte_offsets) {
    float buf[64];
    fake_tensor_t t;
    xdev_tensor_view_t v;
    const uint64_t wild[] = {UINT64_MAX - 100, (uint64_t)1 << 62, (uint64_t)1 << 56,
                             UINT64_MAX - (uintptr_t)buf + 1};
    for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
        fake(&t, buf, 4, 4, NULL);
        t.m.dl_tensor.byte_offset = wild[i];
        XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dlpack_import(&t.m, 0, NULL, &v), "byte_offset");
        xdev_pointer_info_t info; /* nothing registered at the wrapped address */
        XT_OK(xdev_pointer_get_info((const char *)buf + wild[i], &info));
        ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
    }
    /* negative strides reaching below address 0 from a small data pointer */
    fake(&t, (void *)(uintptr_t)64, 4, 4, (const int64_t[2]){-64, 1});
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_dlpack_import(&t.m, 0, NULL, &v), "address");
    fake(&t, buf, 4, 4, NULL);
    t.m.dl_tensor.byte_offset = 16 * sizeof(float); /* rows 4..7 of buf */
    XT_OK(xdev_dlpack_import(&t.m, 0, NULL, &v));
    ck_assert_ptr_eq(v.data, buf + 16);
    XT_OK(xdev_memory_unregister(v.base));
    ck_assert_int_eq(atomic_load(&t.deleted), 1);
}
END_TEST

/* An export of any CPU device's memory comes back to that device: DLPack
 * calls all of them host memory (kDLCPU, 0), so the device comes from the
 * allocation. Imported with the device's own stream and with none. */
START_TEST(export_of_every_device_comes_back) {
    XT_REQUIRE_DEVICES(2);
    int n = xt_device_count();
    for (int i = 0; i < n; i++) {
        xdev_device_t dev = {XDEV_DEVICE_CPU, i};
        xdev_stream_t s;
        XT_OK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &s));
        float *d;
        XT_OK(xdev_malloc_device(dev, (void **)&d, 8 * sizeof(float)));
        const int64_t eight = 8;
        for (int with_stream = 0; with_stream < 2; with_stream++) {
            DLManagedTensorVersioned *t;
            XT_OK(xdev_dlpack_export(d, 1, &eight, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t));
            xdev_tensor_view_t v;
            XT_OK(xdev_dlpack_import(t, XDEV_DLPACK_CONTIGUOUS, with_stream ? s : NULL, &v));
            XT_DEV_EQ(v.device, dev);
            ck_assert_ptr_eq(v.data, d);
            XT_OK(xdev_fill_async(v.data, XDEV_DTYPE_F32, xdev_scalar_f64(i + 0.5), 8, s));
            XT_OK(xdev_stream_synchronize(s));
            float h[8];
            XT_OK(xdev_memcpy(h, d, sizeof h));
            ck_assert(h[7] == (float)i + 0.5f);
            XT_OK(xdev_memory_unregister(v.base));
        }
        XT_OK(xdev_free(d));
        XT_OK(xdev_stream_destroy(s));
    }
}
END_TEST

/* An xdev allocation handed out: the consumer reads it; xdev_free while the
 * consumer holds it waits for the deleter. */
START_TEST(export_outlives_free_until_the_deleter) {
    float *d;
    XT_OK(xdev_malloc_device(k_cpu0, (void **)&d, 64 * sizeof(float)));
    float h[64];
    for (int i = 0; i < 64; i++)
        h[i] = (float)i;
    XT_OK(xdev_memcpy(d, h, sizeof h));
    const int64_t shape[2] = {3, 4}, strides[2] = {8, 2}; /* every other column of 8 */
    DLManagedTensorVersioned *t;
    XT_OK(xdev_dlpack_export(d + 4, 2, shape, strides, XDEV_DTYPE_F32,
                             DLPACK_FLAG_BITMASK_READ_ONLY, NULL, NULL, &t));
    ck_assert_uint_eq(t->version.major, 1);
    ck_assert(t->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
    ck_assert_int_eq(t->dl_tensor.device.device_type, kDLCPU);
    ck_assert_ptr_eq(t->dl_tensor.data, d);                         /* the allocation's start ... */
    ck_assert_uint_eq(t->dl_tensor.byte_offset, 4 * sizeof(float)); /* ... and the view's offset */
    ck_assert_int_eq(t->dl_tensor.dtype.code, kDLFloat);
    ck_assert_int_eq(t->dl_tensor.strides[0], 8);
    const float *first = (const float *)((char *)t->dl_tensor.data + t->dl_tensor.byte_offset);
    ck_assert(first[1 * 8 + 2 * 2] == 4 + 8 + 4); /* element (1, 2) */
    XT_OK(xdev_free(d));                          /* held by the consumer: put off */
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(d, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(d), "double free");
    t->deleter(t);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(d, 0, 4, NULL), "use after free");
    /* an unversioned export, compact */
    XT_OK(xdev_malloc_device(k_cpu0, (void **)&d, 16));
    DLManagedTensor *u;
    const int64_t four = 4;
    XT_OK(xdev_dlpack_export_unversioned(d, 1, &four, NULL, XDEV_DTYPE_I32, NULL, NULL, &u));
    ck_assert_int_eq(u->dl_tensor.strides[0], 1);
    ck_assert_int_eq(u->dl_tensor.dtype.code, kDLInt);
    u->deleter(u); /* not freed by the deleter: still the program's */
    XT_OK(xdev_pointer_get_info(d, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    XT_OK(xdev_free(d));
}
END_TEST

/* An xdev export coming back (a torch tensor made from xdev memory, handed
 * to xdev again): the import is an alias of xdev's own allocation, and its
 * give-back calls the export's deleter, which lets the allocation go. */
START_TEST(export_comes_back) {
    float *d;
    XT_OK(xdev_malloc_device(k_cpu0, (void **)&d, 8 * sizeof(float)));
    const int64_t eight = 8;
    DLManagedTensorVersioned *t;
    XT_OK(xdev_dlpack_export(d, 1, &eight, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t));
    xdev_tensor_view_t v;
    XT_OK(xdev_dlpack_import(t, XDEV_DLPACK_CONTIGUOUS, NULL, &v));
    ck_assert_ptr_eq(v.data, d);
    XT_OK(xdev_fill_async(v.data, XDEV_DTYPE_F32, xdev_scalar_f64(2.5), 8, NULL));
    float h[8];
    XT_OK(xdev_memcpy(h, d, sizeof h));
    ck_assert(h[7] == 2.5f);
    XT_OK(xdev_free(d)); /* the export holds it */
    xdev_pointer_info_t info;
    XT_OK(xdev_pointer_get_info(d, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_DEVICE);
    XT_OK(xdev_memory_unregister(v.base)); /* the export's deleter: the free happens */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memset_async(d, 0, 4, NULL), "use after free");
    /* pinned host memory the same way; freed with the wrong function: refused */
    float *ph;
    XT_OK(xdev_host_alloc((void **)&ph, 8 * sizeof(float)));
    XT_OK(xdev_dlpack_export(ph, 1, &eight, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t));
    XT_OK(xdev_dlpack_import(t, 0, NULL, &v));
    ck_assert_int_eq(v.kind, XDEV_MEMORY_PINNED_HOST); /* xdev's own: an alias of it */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_free(ph), "xdev_host_free");
    XT_OK(xdev_host_free(ph)); /* put off: the export holds it */
    XT_OK(xdev_pointer_get_info(ph, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_PINNED_HOST);
    XT_OK(xdev_memory_unregister(v.base));
    XT_OK(xdev_pointer_get_info(ph, &info));
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST); /* freed at the deleter */
}
END_TEST

START_TEST(export_refusals) {
    float *d;
    XT_OK(xdev_malloc_device(k_cpu0, (void **)&d, 16 * sizeof(float)));
    DLManagedTensorVersioned *t;
    const int64_t big[1] = {17}, ok[1] = {16};
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_dlpack_export(d, 1, big, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t), "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_dlpack_export(d, 1, ok, NULL, XDEV_DTYPE_F32, 1u << 1, NULL, NULL, &t), "flags");
    float host[16];
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_dlpack_export(host, 1, ok, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t),
           "not memory xdev allocated");
    char *p = malloc(64);
    XT_OK(xdev_memory_register(k_cpu0, p, 64, NULL, NULL, NULL));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_dlpack_export(p, 1, ok, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t),
           "did not allocate");
    XT_OK(xdev_memory_unregister(p));
    free(p);
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_dlpack_export(d, 1, ok, NULL, (xdev_dtype_t)99, 0, NULL, NULL, &t), "dtype");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_dlpack_export(d, 1, NULL, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t), "shape");
    XT_OK(xdev_free(d));
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_dlpack_export(d, 1, ok, NULL, XDEV_DTYPE_F32, 0, NULL, NULL, &t), "use after free");
}
END_TEST

/* DLPack's handshake: the consumer's stream waits for the producer's work
 * (a gated host function, then a fill), the host never does. */
START_TEST(export_orders_the_consumer_stream) {
    xdev_stream_t prod, cons;
    XT_OK(xdev_stream_create(k_cpu0, XDEV_STREAM_PRIORITY_NORMAL, &prod));
    XT_OK(xdev_stream_create(k_cpu0, XDEV_STREAM_PRIORITY_NORMAL, &cons));
    int32_t *d;
    XT_OK(xdev_malloc_device(k_cpu0, (void **)&d, 4 * sizeof(int32_t)));
    xt_gate_t gate;
    xt_gate_init(&gate);
    XT_OK(xdev_launch_host_func(prod, xt_gate_wait_fn, &gate));
    XT_OK(xdev_fill_async(d, XDEV_DTYPE_I32, xdev_scalar_f64(9), 4, prod));
    const int64_t four = 4;
    DLManagedTensorVersioned *t;
    double t0 = xt_now_ms();
    XT_OK(xdev_dlpack_export(d, 1, &four, NULL, XDEV_DTYPE_I32, 0, prod, cons, &t));
    ck_assert_msg(xt_now_ms() - t0 < 1000, "the export waited on the host");
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(cons, xt_flag_fn, &flag));
    xt_sleep_ms(100);
    ck_assert_int_eq(atomic_load(&flag), 0); /* the consumer's stream waits for the producer */
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(cons));
    ck_assert_int_eq(atomic_load(&flag), 1);
    ck_assert_int_eq(((int32_t *)t->dl_tensor.data)[3], 9);
    t->deleter(t);
    xt_gate_destroy(&gate);
    XT_OK(xdev_free(d));
    XT_OK(xdev_stream_destroy(prod));
    XT_OK(xdev_stream_destroy(cons));
}
END_TEST

int main(int argc, char **argv) {
    Suite *su = suite_create("interop");
    TCase *tc = tcase_create("interop");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, registered_memory_is_taken_and_checked);
    tcase_add_test(tc, overlaps_and_bad_input_refused);
    tcase_add_test(tc, release_waits_for_the_streams);
    tcase_add_test(tc, unregister_inside_a_host_function_fails);
    tcase_add_test(tc, host_memory_registers_as_pinned);
    tcase_add_test(tc, import_and_gemm_into_it);
    tcase_add_test(tc, import_refusals);
    tcase_add_test(tc, import_refuses_wild_byte_offsets);
    tcase_add_test(tc, export_outlives_free_until_the_deleter);
    tcase_add_test(tc, export_comes_back);
    tcase_add_test(tc, export_of_every_device_comes_back);
    tcase_add_test(tc, export_refusals);
    tcase_add_test(tc, export_orders_the_consumer_stream);
    suite_add_tcase(su, tc);
    return xt_run(srunner_create(su), "interop", argc, argv);
}
