/* SPDX-License-Identifier: Apache-2.0 */
/* test_comm.c - torch.cuda.comm over devices (xdev/comm.h) on the backend
 * under test: broadcast, broadcast_coalesced (packed buckets and large
 * buffers), reduce_add of every dtype (sums checked against the host, f16 and
 * bf16 rounded after each add as the devices do; NCCL's order within a few
 * ulps on CUDA beyond two sources; in place; the documented order of
 * additions), broadcast_coalesced refusing overlapping outputs, scatter and
 * gather round trips with uneven chunks and given streams; stream order (a
 * source still being written on its device's stream is read only after);
 * bad input. Conformance: XDEV_BACKEND=<backend>, XDEV_CPU_DEVICES=4. */
#include <stdlib.h>
#include <string.h>

#include "xdev/support/half.h"
#include "xt.h"

#define MIB ((size_t)1 << 20)

static void setup(void) {
    xt_reset_state();
}

static void *dalloc(int dev, size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(dev), &p, bytes));
    return p;
}

static void sync_all(int ndev) {
    for (int d = 0; d < ndev; d++)
        XT_OK(xdev_device_synchronize(xt_dev(d)));
}

/* bytes of pattern k at p on dev (through the device's current stream). */
static void put(int dev, void *p, size_t bytes, unsigned k) {
    unsigned char *h = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        h[i] = (unsigned char)(i * 31u + k * 7u + 1u);
    XT_OK(xdev_set_device(xt_dev(dev)));
    XT_OK(xdev_memcpy(p, h, bytes));
    free(h);
}

static void expect(const void *p, size_t bytes, unsigned k, const char *what) {
    unsigned char *h = malloc(bytes);
    xt_peek(h, p, bytes);
    size_t i = 0;
    while (i < bytes && h[i] == (unsigned char)(i * 31u + k * 7u + 1u))
        i++;
    ck_assert_msg(i == bytes, "%s: byte %zu of %zu is %u", what, i, bytes, i < bytes ? h[i] : 0);
    free(h);
}

START_TEST(broadcast_to_every_device) {
    XT_REQUIRE_DEVICES(2);
    int n = xt_device_count() < 4 ? xt_device_count() : 4;
    size_t bytes = 3 * MIB + 5;
    void *src = dalloc(0, bytes), *dsts[4];
    put(0, src, bytes, 3);
    dsts[0] = src; /* the source's own device: left as is */
    for (int d = 1; d < n; d++)
        dsts[d] = dalloc(d, bytes);
    XT_OK(xdev_comm_broadcast(src, bytes, dsts, n));
    sync_all(n);
    for (int d = 0; d < n; d++)
        expect(dsts[d], bytes, 3, xt_name(d));
    for (int d = 0; d < n; d++)
        XT_OK(xdev_free(dsts[d]));
}
END_TEST

/* A destination on the source's device that is not the source itself gets
 * its own copy (with communicators, the root's receive buffer); the source
 * is left as it was. */
START_TEST(broadcast_to_source_device_buffer) {
    XT_REQUIRE_DEVICES(2);
    int n = xt_device_count() < 4 ? xt_device_count() : 4;
    size_t bytes = MIB + 3;
    void *src = dalloc(0, bytes), *dsts[4];
    put(0, src, bytes, 5);
    for (int d = 0; d < n; d++) {
        dsts[d] = dalloc(d, bytes);
        put(d, dsts[d], bytes, 9);
    }
    XT_OK(xdev_comm_broadcast(src, bytes, dsts, n));
    sync_all(n);
    expect(src, bytes, 5, "src");
    for (int d = 0; d < n; d++)
        expect(dsts[d], bytes, 5, xt_name(d));
    for (int d = 0; d < n; d++)
        XT_OK(xdev_free(dsts[d]));
    XT_OK(xdev_free(src));
}
END_TEST

/* The source is still being produced on its device's current stream (a host
 * function holds the stream, then a fill writes the source): the broadcast,
 * and a read queued after it on the destination's current stream, see the
 * fill's values. */
START_TEST(broadcast_is_stream_ordered) {
    XT_REQUIRE_DEVICES(2);
    size_t count = 1 << 18;
    float *src = dalloc(0, count * 4), *dst = dalloc(1, count * 4);
    XT_OK(xdev_set_device(xt_dev(1)));
    XT_OK(xdev_fill_async(dst, XDEV_DTYPE_F32, xdev_scalar_f64(-1.0), count, NULL));
    XT_OK(xdev_set_device(xt_dev(0)));
    xt_sleep_task_t task = {40, NULL};
    XT_OK(xdev_launch_host_func(NULL, xt_sleep_fn, &task));
    XT_OK(xdev_fill_async(src, XDEV_DTYPE_F32, xdev_scalar_f64(7.0), count, NULL));
    void *dsts[1] = {dst};
    XT_OK(xdev_comm_broadcast(src, count * 4, dsts, 1));
    float *host = NULL;
    XT_OK(xdev_host_alloc((void **)&host, count * 4));
    XT_OK(xdev_set_device(xt_dev(1)));
    XT_OK(xdev_memcpy_async(host, dst, count * 4, NULL));
    xdev_stream_t s1;
    XT_OK(xdev_stream_current(xt_dev(1), &s1));
    XT_OK(xdev_stream_synchronize(s1));
    size_t bad = 0;
    while (bad < count && host[bad] == 7.0f)
        bad++;
    ck_assert_msg(bad == count, "host[%zu] = %g: read before the broadcast", bad,
                  bad < count ? host[bad] : 0.0);
    XT_OK(xdev_host_free(host));
    XT_OK(xdev_free(src));
    XT_OK(xdev_free(dst));
}
END_TEST

/* The host's sum of value(d, i) over devices in order, each add rounded as
 * the dtype rounds. */
static double value(int d, size_t i, xdev_dtype_t t) {
    double v = (double)((int)((i * 7 + (size_t)d * 13) % 41) - 20);
    if (t == XDEV_DTYPE_F32 || t == XDEV_DTYPE_F64 || t == XDEV_DTYPE_F16 || t == XDEV_DTYPE_BF16)
        return v * 0.37;
    /* i64 beyond 32 bits (exact in a double: |v| <= 20 x 100003 x 1000003 < 2^53) */
    return t == XDEV_DTYPE_I64 ? v * 100003.0 * 1000003.0 : v * 100003.0;
}

/* acc[i] += add[i] the way the dtype adds (host reference). */
static void host_add(void *acc, const void *add, size_t i, xdev_dtype_t t) {
    switch ((int)t) {
    case XDEV_DTYPE_F32:
        ((float *)acc)[i] += ((const float *)add)[i];
        break;
    case XDEV_DTYPE_F64:
        ((double *)acc)[i] += ((const double *)add)[i];
        break;
    case XDEV_DTYPE_I32:
        ((uint32_t *)acc)[i] += ((const uint32_t *)add)[i];
        break;
    case XDEV_DTYPE_I64:
        ((uint64_t *)acc)[i] += ((const uint64_t *)add)[i];
        break;
    case XDEV_DTYPE_F16:
        ((uint16_t *)acc)[i] = xdev_f32_to_f16(xdev_f16_to_f32(((uint16_t *)acc)[i]) +
                                               xdev_f16_to_f32(((const uint16_t *)add)[i]));
        break;
    default:
        ((uint16_t *)acc)[i] = xdev_f32_to_bf16(xdev_bf16_to_f32(((uint16_t *)acc)[i]) +
                                                xdev_bf16_to_f32(((const uint16_t *)add)[i]));
        break;
    }
}

/* Where reduce_add goes through NCCL (CUDA) with more than two sources, the
 * order of additions is NCCL's (xdev/comm.h): floating sums are checked to a
 * few units in the last place of sums below 32 instead of bit for bit. */
static void expect_sum(const void *got, const void *want, size_t count, xdev_dtype_t t, int n) {
    bool exact =
        n <= 2 || xt_dev(0).type == XDEV_DEVICE_CPU || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64;
    if (exact) {
        ck_assert_msg(memcmp(got, want, count * xdev_dtype_size(t)) == 0,
                      "reduce_add %s differs from the host", xdev_dtype_name(t));
        return;
    }
    double tol = t == XDEV_DTYPE_F16 ? 0.07 : t == XDEV_DTYPE_BF16 ? 1.0 : 1e-4;
    for (size_t i = 0; i < count; i++) {
        double g = xt_load(t, got, i), w = xt_load(t, want, i);
        ck_assert_msg(g - w <= tol && w - g <= tol, "reduce_add %s [%zu]: %g, host %g",
                      xdev_dtype_name(t), i, g, w);
    }
}

START_TEST(reduce_add_every_dtype) {
    static const xdev_dtype_t types[] = {XDEV_DTYPE_F32, XDEV_DTYPE_F64, XDEV_DTYPE_I32,
                                         XDEV_DTYPE_I64, XDEV_DTYPE_F16, XDEV_DTYPE_BF16};
    int n = xt_device_count() < 4 ? xt_device_count() : 4;
    size_t count = 100003;
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        xdev_dtype_t t = types[k];
        size_t es = xdev_dtype_size(t), bytes = count * es;
        void *srcs[4] = {NULL}, *host[4] = {NULL};
        for (int d = 0; d < n; d++) {
            srcs[d] = dalloc(d, bytes);
            host[d] = malloc(bytes);
            for (size_t i = 0; i < count; i++)
                xt_store(t, host[d], i, value(d, i, t));
            XT_OK(xdev_set_device(xt_dev(d)));
            XT_OK(xdev_memcpy(srcs[d], host[d], bytes));
        }
        /* dst on the last source's device: that source first (torch's order) */
        for (size_t i = 0; i < count; i++)
            for (int d = 0; d < n - 1; d++)
                host_add(host[n - 1], host[d], i, t);
        void *dst = dalloc(n - 1, bytes); /* its own buffer on the last device */
        XT_OK(xdev_comm_reduce_add((const void *const *)srcs, n, dst, count, t));
        sync_all(n);
        void *got = malloc(bytes);
        xt_peek(got, dst, bytes);
        expect_sum(got, host[n - 1], count, t, n);
        free(got);
        XT_OK(xdev_free(dst));
        for (int d = 0; d < n; d++) {
            XT_OK(xdev_free(srcs[d]));
            free(host[d]);
        }
    }
}
END_TEST

/* dst is one of the sources: summed in place, starting from it. */
START_TEST(reduce_add_in_place) {
    XT_REQUIRE_DEVICES(2);
    int n = xt_device_count() < 3 ? xt_device_count() : 3;
    size_t count = 4096;
    float *srcs[3];
    for (int d = 0; d < n; d++) {
        srcs[d] = dalloc(d, count * 4);
        XT_OK(xdev_set_device(xt_dev(d)));
        XT_OK(xdev_fill_async(srcs[d], XDEV_DTYPE_F32, xdev_scalar_f64(d + 1.0), count, NULL));
    }
    XT_OK(xdev_comm_reduce_add((const void *const *)srcs, n, srcs[1], count, XDEV_DTYPE_F32));
    sync_all(n);
    float *h = malloc(count * 4);
    xt_peek(h, srcs[1], count * 4);
    float want = n == 3 ? 6.0f : 3.0f;
    size_t i = 0;
    while (i < count && h[i] == want)
        i++;
    ck_assert_msg(i == count, "h[%zu] = %g, want %g", i, i < count ? h[i] : 0.0, want);
    free(h);
    for (int d = 0; d < n; d++)
        XT_OK(xdev_free(srcs[d]));
}
END_TEST

/* Does reduce_add over devices 0 and 1 go through communicators (CUDA +
 * NCCL) rather than copies and adds? */
static bool reduce_add_by_comm(void) {
    xdev_communicator_t probe[2];
    xdev_device_t devs[2] = {xt_dev(0), xt_dev(1)};
    bool comm = false;
    if (xt_type() != XDEV_DEVICE_CPU &&
        xdev_communicator_init_all(probe, 2, devs) == XDEV_SUCCESS) {
        comm = true;
        XT_OK(xdev_communicator_destroy(probe[0]));
        XT_OK(xdev_communicator_destroy(probe[1]));
    }
    xdev_clear_error();
    return comm;
}

/* The order of additions comm.h documents (torch's): the source on dst's
 * device first, then the others in order; with none there, source order.
 * 1e8, -1e8 and 1 in f32 tell the orders apart: (1 + 1e8) - 1e8 = 0 (1 is
 * below half an ulp of 1e8) but (1e8 - 1e8) + 1 = 1. */
START_TEST(reduce_add_order) {
    XT_REQUIRE_DEVICES(3);
    if (reduce_add_by_comm())
        XT_SKIP("reduce_add runs as one NCCL reduce here: NCCL chooses the order");
    const float v[3] = {1e8f, -1e8f, 1.0f};
    float *srcs[3], h;
    for (int d = 0; d < 3; d++) {
        srcs[d] = dalloc(d, sizeof(float));
        XT_OK(xdev_set_device(xt_dev(d)));
        XT_OK(xdev_memcpy(srcs[d], &v[d], sizeof(float)));
    }
    float *own = dalloc(2, sizeof(float));
    XT_OK(xdev_comm_reduce_add((const void *const *)srcs, 3, own, 1, XDEV_DTYPE_F32));
    sync_all(3);
    xt_peek(&h, own, sizeof h);
    ck_assert_msg(h == 0.0f, "dst on srcs[2]'s device: %g, want (src2 + src0) + src1 = 0", h);
    if (xt_device_count() >= 4) {
        float *apart = dalloc(3, sizeof(float));
        XT_OK(xdev_comm_reduce_add((const void *const *)srcs, 3, apart, 1, XDEV_DTYPE_F32));
        sync_all(4);
        xt_peek(&h, apart, sizeof h);
        ck_assert_msg(h == 1.0f, "dst on no source's device: %g, want src0 + src1 + src2 = 1", h);
        XT_OK(xdev_free(apart));
    }
    XT_OK(xdev_comm_reduce_add((const void *const *)srcs, 3, srcs[2], 1, XDEV_DTYPE_F32));
    sync_all(3);
    xt_peek(&h, srcs[2], sizeof h);
    ck_assert_msg(h == 0.0f, "in place onto srcs[2]: %g, want (src2 + src0) + src1 = 0", h);
    XT_OK(xdev_free(own));
    for (int d = 0; d < 3; d++)
        XT_OK(xdev_free(srcs[d]));
}
END_TEST

/* broadcast_coalesced refuses outputs that overlap one another. */
START_TEST(broadcast_coalesced_overlap) {
    XT_REQUIRE_DEVICES(2);
    const size_t sizes[2] = {4096, 4096};
    void *srcs[2] = {dalloc(0, 4096), dalloc(0, 4096)}, *big = dalloc(1, 3 * 4096);
    void *dsts[2] = {big, (char *)big + 2048}; /* buffer 1 lands inside buffer 0 */
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_comm_broadcast_coalesced((const void *const *)srcs, sizes, 2, dsts, 1, 0),
           "dsts[0]", "overlaps dsts[1]");
    dsts[1] = big; /* the same output twice */
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_comm_broadcast_coalesced((const void *const *)srcs, sizes, 2, dsts, 1, 0),
           "overlaps");
    dsts[1] = (char *)big + 4096; /* adjacent: fine */
    XT_OK(xdev_comm_broadcast_coalesced((const void *const *)srcs, sizes, 2, dsts, 1, 0));
    sync_all(2);
    XT_OK(xdev_free(big));
    XT_OK(xdev_free(srcs[0]));
    XT_OK(xdev_free(srcs[1]));
}
END_TEST

/* Which way reduce_add went: with communicators (CUDA + NCCL) and dst on a
 * source's device it is one reduce, which takes no temporary from the
 * caching allocator; the copies-and-adds fallback (CPU, no NCCL) takes one
 * per remote source. So the count of allocations on dst's device tells. */
START_TEST(reduce_add_path) {
    XT_REQUIRE_DEVICES(2);
    size_t count = 4096, bytes = count * 4;
    void *srcs[2] = {dalloc(0, bytes), dalloc(1, bytes)}, *dst = dalloc(0, bytes);
    float *h = malloc(bytes);
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < count; i++)
            h[i] = (float)(d + 1) * (float)(i % 13);
        XT_OK(xdev_set_device(xt_dev(d)));
        XT_OK(xdev_memcpy(srcs[d], h, bytes));
    }
    bool comm = reduce_add_by_comm();
    /* once to make the group (its first use), then counted */
    XT_OK(xdev_comm_reduce_add((const void *const *)srcs, 2, dst, count, XDEV_DTYPE_F32));
    sync_all(2);
    int64_t before = xt_mem_stats(0).allocation[0].allocated;
    XT_OK(xdev_comm_reduce_add((const void *const *)srcs, 2, dst, count, XDEV_DTYPE_F32));
    sync_all(2);
    int64_t took = xt_mem_stats(0).allocation[0].allocated - before;
    ck_assert_msg(took == (comm ? 0 : 1),
                  "reduce_add took %lld temporaries; communicators %s: want %d (%s path)",
                  (long long)took, comm ? "present" : "absent", comm ? 0 : 1,
                  comm ? "NCCL" : "copy");
    xt_peek(h, dst, bytes);
    for (size_t i = 0; i < count; i++)
        ck_assert_msg(h[i] == 3.0f * (float)(i % 13), "dst[%zu] = %g", i, h[i]);
    free(h);
    XT_OK(xdev_free(dst));
    XT_OK(xdev_free(srcs[0]));
    XT_OK(xdev_free(srcs[1]));
}
END_TEST

START_TEST(scatter_gather_round_trip) {
    int n = xt_device_count() < 4 ? xt_device_count() : 4;
    size_t chunks[4] = {1000, 3 * MIB, 17, 65536}, bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += chunks[i];
    void *src = dalloc(0, bytes), *back = dalloc(n - 1, bytes), *dsts[4];
    put(0, src, bytes, 9);
    xdev_stream_t streams[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < n; i++)
        dsts[i] = dalloc(i, chunks[i]);
    streams[n - 1] = xt_new_stream(n - 1);
    XT_OK(xdev_comm_scatter(src, bytes, dsts, chunks, n, streams));
    XT_OK(xdev_stream_synchronize(streams[n - 1]));
    XT_OK(xdev_comm_gather((const void *const *)dsts, chunks, n, back));
    sync_all(n);
    expect(back, bytes, 9, "gathered");
    /* equal chunks when chunk_bytes is NULL */
    size_t even = 4096 * (size_t)n;
    void *esrc = dalloc(0, even), *edst[4];
    put(0, esrc, even, 5);
    for (int i = 0; i < n; i++)
        edst[i] = dalloc(i, 4096);
    XT_OK(xdev_comm_scatter(esrc, even, edst, NULL, n, NULL));
    sync_all(n);
    unsigned char *whole = malloc(even);
    xt_peek(whole, esrc, even);
    for (int i = 0; i < n; i++) {
        unsigned char part[4096];
        xt_peek(part, edst[i], 4096);
        ck_assert(memcmp(part, whole + (size_t)i * 4096, 4096) == 0);
        XT_OK(xdev_free(edst[i]));
    }
    free(whole);
    XT_OK(xdev_free(esrc));
    for (int i = 0; i < n; i++)
        XT_OK(xdev_free(dsts[i]));
    XT_OK(xdev_stream_destroy(streams[n - 1]));
    XT_OK(xdev_free(src));
    XT_OK(xdev_free(back));
}
END_TEST

START_TEST(broadcast_coalesced_buckets) {
    XT_REQUIRE_DEVICES(2);
    int ndev = xt_device_count() - 1 < 3 ? xt_device_count() - 1 : 3;
    enum { NBUF = 6 };
    const size_t sizes[NBUF] = {100, 3000, 2 * MIB, 7, 512, 1000};
    void *srcs[NBUF], *dsts[3 * NBUF];
    for (int j = 0; j < NBUF; j++) {
        srcs[j] = dalloc(0, sizes[j]);
        put(0, srcs[j], sizes[j], (unsigned)j);
        for (int d = 0; d < ndev; d++)
            dsts[d * NBUF + j] = dalloc(d + 1, sizes[j]);
    }
    /* 4 KiB buckets: {100, 3000} packed, 2 MiB alone, {7, 512, 1000} packed */
    XT_OK(xdev_comm_broadcast_coalesced((const void *const *)srcs, sizes, NBUF, dsts, ndev, 4096));
    sync_all(ndev + 1);
    for (int d = 0; d < ndev; d++)
        for (int j = 0; j < NBUF; j++)
            expect(dsts[d * NBUF + j], sizes[j], (unsigned)j, xt_name(d + 1));
    for (int j = 0; j < NBUF; j++) {
        XT_OK(xdev_free(srcs[j]));
        for (int d = 0; d < ndev; d++)
            XT_OK(xdev_free(dsts[d * NBUF + j]));
    }
}
END_TEST

START_TEST(comm_bad_input) {
    void *a = dalloc(0, 4096), *dsts[2] = {NULL, NULL};
    char host[4096];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_broadcast(a, 4096, NULL, 1), "dsts");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_broadcast(a, 4096, dsts, 0), "n = 0");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_broadcast(a, 4096, dsts, 65), "n = 65");
    dsts[0] = host;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_broadcast(a, 4096, dsts, 1), "dsts[0]",
           "not device memory");
    dsts[0] = a;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_broadcast(a, 8192, dsts, 1), "src");
    void *b = dalloc(0, 4096);
    dsts[0] = b;
    dsts[1] = a;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_broadcast(a, 4096, dsts, 2), "both on", xt_name(0));
    dsts[0] = (char *)a + 1024;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_broadcast(a, 2048, dsts, 1), "overlaps");
    const void *srcs[2] = {a, b};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_reduce_add(srcs, 1, b, 16, XDEV_DTYPE_C64), "dtype");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_reduce_add(srcs, 2, host, 16, XDEV_DTYPE_F32),
           "dst");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_reduce_add(srcs, 2, b, 16, XDEV_DTYPE_F32),
           "both on");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_comm_reduce_add(srcs, 1, (char *)a + 2, 16, XDEV_DTYPE_F32), "aligned");
    size_t chunks[1] = {1000};
    dsts[0] = b;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_scatter(a, 4096, dsts, chunks, 1, NULL),
           "add up to 1000");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_scatter(a, 4095, dsts, NULL, 2, NULL), "equal");
    if (xt_device_count() >= 2) {
        xdev_stream_t other = xt_new_stream(1);
        xdev_stream_t streams[1] = {other};
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_comm_scatter(a, 4096, dsts, NULL, 1, streams),
               "streams[0]");
        XT_OK(xdev_stream_destroy(other));
        void *c = dalloc(1, 4096);
        const void *two[2] = {a, c};
        size_t sz[2] = {4096, 4096};
        void *outs[2] = {b, b};
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_comm_broadcast_coalesced(two, sz, 2, outs, 1, 0),
               "srcs[1]");
        XT_OK(xdev_free(c));
    }
    size_t gchunks[2] = {4096, 4096};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_comm_gather(srcs, gchunks, 2, b), "dst");
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("comm");
    TCase *tc = tcase_create("comm");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, broadcast_to_every_device);
    tcase_add_test(tc, broadcast_to_source_device_buffer);
    tcase_add_test(tc, broadcast_is_stream_ordered);
    tcase_add_test(tc, reduce_add_every_dtype);
    tcase_add_test(tc, reduce_add_in_place);
    tcase_add_test(tc, reduce_add_path);
    tcase_add_test(tc, reduce_add_order);
    tcase_add_test(tc, broadcast_coalesced_overlap);
    tcase_add_test(tc, scatter_gather_round_trip);
    tcase_add_test(tc, broadcast_coalesced_buckets);
    tcase_add_test(tc, comm_bad_input);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "comm", argc, argv);
}
