/* SPDX-License-Identifier: Apache-2.0 */
/* test_bounds.c - every public call that takes a pointer and a count (or a
 * shape, leading dimension, increment, batch) refuses one that runs past an
 * operand's allocation, on the backend under test (docs/bounds.md is the
 * audit this table guards, issue 41 item 1).
 *
 * One row per check. Each row's operands are fresh allocations of exactly
 * the bytes the row asks for, each followed by a guard allocation; all are
 * filled with a sentinel. The row's call with one thing too large (a count
 * one past, a leading dimension, an increment or a batch too big) must
 * return XDEV_ERROR_INVALID_VALUE with a message naming the call and the
 * operand, and leave every operand and guard as it was (checked after the
 * devices synchronized): nothing ran. The same call with the exact sizes
 * must then succeed and still leave the guards alone, so no row passes by
 * refusing everything. Conformance: XDEV_BACKEND=<backend>,
 * XDEV_CPU_DEVICES=2 (the rows with operands on two devices skip on one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define MAXB 5        /* operands per row */
#define GUARD 512     /* bytes of the guard allocation after each operand */
#define SENTINEL 0x5a /* every operand and guard byte before the call */
#define F32 XDEV_DTYPE_F32

typedef struct ctx {
    void *b[MAXB];                /* the operands */
    xdev_communicator_t comm1;    /* one rank on device 0 */
    xdev_communicator_t comm2[2]; /* two ranks on devices 0 and 1 */
    const char *skip;             /* set by a row the backend cannot run: why */
    char msg[1024];               /* a row that calls more after the checked call keeps its
                                     message here */
} ctx_t;

typedef xdev_status_t (*row_fn)(ctx_t *c, int over);

typedef struct row {
    const char *name;   /* "<call>/<what is too large>" */
    const char *call;   /* the public call the message must name */
    const char *needle; /* the operand the message must name */
    int dev[MAXB];      /* device of each operand */
    size_t bytes[MAXB]; /* requested bytes of each operand, 0 = none */
    int comm;           /* communicator ranks the row needs (0, 1 or 2) */
    row_fn fn;          /* over = 1: the over-length call; 0: the exact one */
} row_t;

static void setup(void) {
    xt_reset_state();
}

/* ------------------------------------------------------------- the rows */

static xdev_status_t ew_out(ctx_t *c, int over) { /* issue 41: 4096 over 1024 floats */
    const void *in[2] = {c->b[1], c->b[2]};
    return xdev_elementwise("in0 + in1", F32, 2, in, c->b[0], over ? 4096 : 1024, NULL);
}
static xdev_status_t ew_in(ctx_t *c, int over) { /* issue 41: 10 floats read as 1000 */
    const void *in[2] = {c->b[1], c->b[2]};
    return xdev_elementwise("in0 * in1", F32, 2, in, c->b[0], over ? 1000 : 10, NULL);
}
static xdev_status_t gemm_lda(ctx_t *c, int over) { /* 16 x 16: lda 17 spans 1084 bytes */
    return xdev_gemm(F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 16, 16, 16, 1.0, c->b[1], over ? 17 : 16,
                     c->b[2], 16, 0.0, c->b[0], 16, NULL);
}
static xdev_status_t gemm_batch(ctx_t *c, int over) { /* 2 matrices of 16 x 16, 3 asked */
    return xdev_gemm_strided_batched(F32, XDEV_BLAS_OP_N, XDEV_BLAS_OP_N, 16, 16, 16, 1.0, c->b[1],
                                     16, 256, c->b[2], 16, 256, 0.0, c->b[0], 16, 256, over ? 3 : 2,
                                     NULL);
}
static xdev_status_t axpy_incy(ctx_t *c, int over) { /* y holds 256 x 2 floats */
    return xdev_axpy(F32, 256, 2.0, c->b[1], 1, c->b[0], over ? 3 : 2, NULL);
}
static xdev_status_t dot_n(ctx_t *c, int over) {
    return xdev_dot(F32, over ? 257 : 256, c->b[1], 1, c->b[2], 1, c->b[0], NULL);
}
static xdev_status_t nrm2_result(ctx_t *c, int over) { /* result 2 bytes before the end */
    return xdev_nrm2(F32, 256, c->b[1], 1, (char *)c->b[0] + (over ? 2 : 0), NULL);
}
static xdev_status_t scal_n(ctx_t *c, int over) {
    return xdev_scal(F32, over ? 257 : 256, 2.0, c->b[0], 1, NULL);
}
static xdev_status_t fft_batch(ctx_t *c, int over) { /* 2 transforms of 64 complex */
    const int64_t n[1] = {64};
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, n, over ? 3 : 2);
    return xdev_fft_exec(&d, c->b[1], c->b[0], XDEV_FFT_FORWARD, XDEV_FFT_NORM_BACKWARD, NULL);
}
static xdev_status_t rng_uniform(ctx_t *c, int over) {
    return xdev_rng_uniform(NULL, F32, c->b[0], over ? 257 : 256, NULL);
}
static xdev_status_t rng_normal(ctx_t *c, int over) {
    return xdev_rng_normal(NULL, XDEV_DTYPE_F64, c->b[0], over ? 257 : 256, 0.0, 1.0, NULL);
}
static xdev_status_t rng_integers(ctx_t *c, int over) {
    return xdev_rng_integers(NULL, XDEV_RNG_INT64, c->b[0], over ? 129 : 128, 0, 10, NULL);
}
static xdev_status_t rng_bernoulli(ctx_t *c, int over) {
    return xdev_rng_bernoulli(NULL, c->b[0], over ? 257 : 256, 0.5, NULL);
}
static xdev_status_t fill_count(ctx_t *c, int over) {
    return xdev_fill_async(c->b[0], F32, xdev_scalar_f64(1.0), over ? 257 : 256, NULL);
}
static xdev_status_t convert_src(ctx_t *c, int over) { /* dst has room for 512 doubles */
    return xdev_convert_async(c->b[0], XDEV_DTYPE_F64, c->b[1], F32, over ? 257 : 256, NULL);
}
static xdev_status_t convert_dst(ctx_t *c, int over) { /* src has 1024 floats */
    return xdev_convert_async(c->b[0], XDEV_DTYPE_F16, c->b[1], F32, over ? 257 : 256, NULL);
}
static xdev_status_t memcpy_src(ctx_t *c, int over) {
    return xdev_memcpy(c->b[0], c->b[1], over ? 1025 : 1024);
}
static xdev_status_t memcpy_async_dst(ctx_t *c, int over) {
    return xdev_memcpy_async(c->b[0], c->b[1], over ? 1025 : 1024, NULL);
}
static xdev_status_t memcpy_from_host(ctx_t *c, int over) {
    static unsigned char host[2048];
    return xdev_memcpy(c->b[0], host, over ? 1025 : 1024);
}
static xdev_status_t memset_n(ctx_t *c, int over) {
    return xdev_memset_async(c->b[0], 1, over ? 1025 : 1024, NULL);
}
static xdev_status_t comm_broadcast(ctx_t *c, int over) { /* dsts[0] on device 1 holds 512 */
    void *dsts[1] = {c->b[1]};
    return xdev_comm_broadcast(c->b[0], over ? 1024 : 512, dsts, 1);
}
static xdev_status_t comm_broadcast_coalesced(ctx_t *c, int over) {
    const void *srcs[1] = {c->b[0]};
    void *dsts[1] = {c->b[1]};
    const size_t sizes[1] = {over ? 512 : 256};
    return xdev_comm_broadcast_coalesced(srcs, sizes, 1, dsts, 1, 0);
}
static xdev_status_t comm_reduce_add(ctx_t *c, int over) { /* srcs[1] holds 128 floats */
    const void *srcs[2] = {c->b[1], c->b[2]};
    return xdev_comm_reduce_add(srcs, 2, c->b[0], over ? 256 : 128, F32);
}
static xdev_status_t comm_scatter(ctx_t *c, int over) { /* dsts[1] holds 256 bytes */
    void *dsts[2] = {c->b[1], c->b[2]};
    const size_t chunks[2] = {512, over ? 512 : 256};
    return xdev_comm_scatter(c->b[0], 512 + chunks[1], dsts, chunks, 2, NULL);
}
static xdev_status_t comm_gather(ctx_t *c, int over) { /* srcs[1] holds 512 bytes */
    const void *srcs[2] = {c->b[1], c->b[2]};
    const size_t chunks[2] = {512, over ? 1024 : 512};
    return xdev_comm_gather(srcs, chunks, 2, c->b[0]);
}
static xdev_status_t all_reduce(ctx_t *c, int over) { /* recvbuf holds 128 floats */
    return xdev_all_reduce(c->comm1, c->b[1], c->b[0], over ? 256 : 128, F32, XDEV_REDUCE_SUM,
                           NULL);
}
static xdev_status_t broadcast(ctx_t *c, int over) { /* sendbuf holds 128 floats */
    return xdev_broadcast(c->comm1, c->b[1], c->b[0], over ? 256 : 128, F32, 0, NULL);
}
static xdev_status_t reduce(ctx_t *c, int over) {
    return xdev_reduce(c->comm1, c->b[1], c->b[0], over ? 256 : 128, F32, XDEV_REDUCE_SUM, 0, NULL);
}
static xdev_status_t all_gather(ctx_t *c, int over) {
    return xdev_all_gather(c->comm1, c->b[1], c->b[0], over ? 256 : 128, F32, NULL);
}
static xdev_status_t reduce_scatter(ctx_t *c, int over) {
    return xdev_reduce_scatter(c->comm1, c->b[1], c->b[0], over ? 256 : 128, F32, XDEV_REDUCE_SUM,
                               NULL);
}
/* A call that makes more calls after the one checked keeps its message. */
static xdev_status_t keep(ctx_t *c, xdev_status_t st) {
    snprintf(c->msg, sizeof c->msg, "%s", st != XDEV_SUCCESS ? xdev_last_error() : "");
    return st;
}
static xdev_status_t memcpy_pinned_src(ctx_t *c, int over) { /* 1000 pinned bytes */
    void *h = NULL;
    xdev_status_t got = xdev_host_alloc(&h, 1000);
    if (got == XDEV_ERROR_NOT_SUPPORTED) {
        c->skip = "the backend has no pinned host memory (xdev_host_alloc is not supported)";
        return got;
    }
    XT_OK(got);
    xdev_status_t st = keep(c, xdev_memcpy(c->b[0], h, over ? 1001 : 1000));
    XT_OK(xdev_host_free(h));
    return st;
}
/* Registered memory is checked against the bytes registered: 1024 of a
 * 2048-byte host buffer (as a CPU device's memory) taken as device memory. */
static xdev_status_t foreign_memset(ctx_t *c, int over) {
    if (!xt_host_addressable()) {
        c->skip = "registers host memory as device memory: the CPU backend only";
        return XDEV_ERROR_NOT_SUPPORTED;
    }
    static unsigned char h[2048];
    if (over) memset(h, SENTINEL, sizeof h);
    XT_OK(xdev_memory_register(xt_dev(0), h, 1024, NULL, NULL, NULL));
    xdev_status_t st = keep(c, xdev_memset_async(h, 1, over ? 1025 : 1024, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    XT_OK(xdev_memory_unregister(h));
    size_t k = over ? 0 : 1024;
    while (k < sizeof h && h[k] == SENTINEL)
        k++;
    ck_assert_msg(k == sizeof h, "foreign_memset: byte %zu of the host buffer was written", k);
    return st;
}

/* Managed memory of its own (1024 bytes, sentinel-filled by the host):
 * prefetch and advice measured against it. */
static xdev_status_t managed_row(ctx_t *c, int over, bool advise) {
    unsigned char *m = NULL;
    xdev_status_t st = xdev_malloc_managed(xt_dev(0), (void **)&m, 1024, 0);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        c->skip = "the backend has no managed memory";
        return st;
    }
    XT_OK(st);
    memset(m, SENTINEL, 1024);
    size_t n = over ? 1025 : 1024;
    st = keep(c, advise ? xdev_mem_advise(m, n, XDEV_MEM_ADVISE_SET_READ_MOSTLY, xt_dev(0).index)
                        : xdev_mem_prefetch_async(m, n, xt_dev(0).index, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
    for (size_t k = 0; k < 1024; k++)
        ck_assert_msg(m[k] == SENTINEL, "managed_row: byte %zu changed", k);
    XT_OK(xdev_free(m));
    return st;
}
static xdev_status_t managed_prefetch(ctx_t *c, int over) {
    return managed_row(c, over, false);
}
static xdev_status_t managed_advise(ctx_t *c, int over) {
    return managed_row(c, over, true);
}

/* send/recv: the over-length side fails alone; the exact pair meets in a group. */
static xdev_status_t p2p(ctx_t *c, int over, bool send_over) {
    if (over)
        return send_over ? xdev_send(c->comm2[0], c->b[0], 256, F32, 1, NULL)
                         : xdev_recv(c->comm2[1], c->b[1], 256, F32, 0, NULL);
    xdev_status_t st = xdev_group_start();
    if (st != XDEV_SUCCESS) return st;
    xdev_status_t a = xdev_send(c->comm2[0], c->b[0], 128, F32, 1, NULL);
    xdev_status_t b = a == XDEV_SUCCESS ? xdev_recv(c->comm2[1], c->b[1], 128, F32, 0, NULL) : a;
    st = xdev_group_end();
    return b != XDEV_SUCCESS ? b : st;
}
static xdev_status_t send_count(ctx_t *c, int over) {
    return p2p(c, over, true);
}
static xdev_status_t recv_count(ctx_t *c, int over) {
    return p2p(c, over, false);
}

/* The parallel primitives (xdev/primitives.h). Operands hold the sentinel:
 * as offsets (0x5a5a... past any count) every segment is empty, as flags
 * every item is kept; the exact calls still write inside their outputs. */
#define U32 XDEV_DTYPE_U32
static xdev_status_t prim_reduce_in(ctx_t *c, int over) { /* in holds 256 floats */
    return xdev_prim_reduce(c->b[1], F32, over ? 257 : 256, XDEV_PRIM_SUM, c->b[0], NULL);
}
static xdev_status_t prim_reduce_argmax(ctx_t *c, int over) { /* out: 4 bytes, an index is 8 */
    return xdev_prim_reduce(c->b[1], F32, 256, over ? XDEV_PRIM_ARGMAX : XDEV_PRIM_MAX, c->b[0],
                            NULL);
}
static xdev_status_t prim_scan_out(ctx_t *c, int over) { /* out holds 256 floats */
    return xdev_prim_scan(c->b[1], F32, over ? 257 : 256, XDEV_PRIM_SUM, 0, c->b[0], NULL);
}
static xdev_status_t prim_scan_in(ctx_t *c, int over) { /* in holds 256 floats */
    return xdev_prim_scan(c->b[1], F32, over ? 257 : 256, XDEV_PRIM_MAX, XDEV_PRIM_EXCLUSIVE,
                          c->b[0], NULL);
}
static xdev_status_t prim_sort_keys_out(ctx_t *c, int over) { /* keys_out holds 256 u32 */
    return xdev_prim_sort_keys(c->b[1], U32, over ? 257 : 256, 0, 0, 0, c->b[0], NULL);
}
static xdev_status_t prim_sort_pairs_values_in(ctx_t *c, int over) { /* values_in: 256 u32 */
    return xdev_prim_sort_pairs(c->b[2], c->b[3], U32, 4, over ? 257 : 256, 0, 0, 0, c->b[0],
                                c->b[1], NULL);
}
static xdev_status_t prim_sort_pairs_values_out(ctx_t *c, int over) { /* values_out: 256 u64 */
    return xdev_prim_sort_pairs(c->b[2], c->b[3], U32, 8, over ? 257 : 256, XDEV_PRIM_DESCENDING, 0,
                                0, c->b[0], c->b[1], NULL);
}
static xdev_status_t prim_segsort_offsets(ctx_t *c, int over) { /* offsets: 5 (4 segments) */
    return xdev_prim_segmented_sort(c->b[1], NULL, U32, 0, 256, c->b[2], over ? 5 : 4, 0, 0, 0,
                                    c->b[0], NULL, NULL);
}
static xdev_status_t prim_segsort_values_out(ctx_t *c, int over) { /* values_out: 256 u32 */
    return xdev_prim_segmented_sort(c->b[2], c->b[3], U32, 4, over ? 257 : 256, c->b[4], 4, 0, 0, 0,
                                    c->b[0], c->b[1], NULL);
}
static xdev_status_t prim_segreduce_out(ctx_t *c, int over) { /* out: 4 floats; offsets: 6 */
    return xdev_prim_segmented_reduce(c->b[2], F32, 256, c->b[1], over ? 5 : 4, XDEV_PRIM_SUM,
                                      c->b[0], NULL);
}
static xdev_status_t prim_segreduce_offsets(ctx_t *c, int over) { /* offsets: 5 (4 segments) */
    return xdev_prim_segmented_reduce(c->b[2], F32, 256, c->b[1], over ? 5 : 4, XDEV_PRIM_MIN,
                                      c->b[0], NULL);
}
static xdev_status_t prim_segreduce_in(ctx_t *c, int over) { /* in holds 256 floats */
    return xdev_prim_segmented_reduce(c->b[2], F32, over ? 257 : 256, c->b[1], 4, XDEV_PRIM_ARGMAX,
                                      c->b[0], NULL);
}
static xdev_status_t prim_histogram_counts(ctx_t *c, int over) { /* counts: 16 bins */
    return xdev_prim_histogram_even(c->b[1], F32, 256, over ? 17 : 16, 0.0, 1.0, c->b[0], NULL);
}
static xdev_status_t prim_histogram_samples(ctx_t *c, int over) { /* samples: 256 floats */
    return xdev_prim_histogram_even(c->b[1], F32, over ? 257 : 256, 16, 0.0, 1.0, c->b[0], NULL);
}
static xdev_status_t prim_select_flags(ctx_t *c, int over) { /* flags: 256 */
    return xdev_prim_select_flagged(c->b[2], 4, c->b[3], over ? 257 : 256, c->b[1], c->b[0], NULL);
}
/* num_out 4 bytes before its allocation's end (20 bytes; aligned): room
 * for an int32, not for the int64 count; the exact call leaves it 12. */
static xdev_status_t prim_select_num_out(ctx_t *c, int over) {
    return xdev_prim_select_flagged(c->b[2], 4, c->b[3], 256, c->b[1],
                                    (int64_t *)((char *)c->b[0] + (over ? 16 : 8)), NULL);
}
static xdev_status_t prim_select_if_out(ctx_t *c, int over) { /* out holds 256 floats */
    return xdev_prim_select_if(c->b[2], F32, over ? 257 : 256, "in0 > 0.5f", c->b[1], c->b[0],
                               NULL);
}
static xdev_status_t prim_unique_out(ctx_t *c, int over) { /* out holds 256 u32 */
    return xdev_prim_unique(c->b[2], U32, over ? 257 : 256, c->b[1], c->b[0], NULL);
}
static xdev_status_t prim_unique_num_out(ctx_t *c, int over) {
    return xdev_prim_unique(c->b[2], U32, 256, c->b[1],
                            (int64_t *)((char *)c->b[0] + (over ? 16 : 8)), NULL);
}
static xdev_status_t prim_rle_lengths(ctx_t *c, int over) { /* lengths: 256 int64 */
    return xdev_prim_run_length_encode(c->b[3], U32, over ? 257 : 256, c->b[1], c->b[2], c->b[0],
                                       NULL);
}
static xdev_status_t prim_rle_num_runs(ctx_t *c, int over) {
    return xdev_prim_run_length_encode(c->b[3], U32, 256, c->b[1], c->b[2],
                                       (int64_t *)((char *)c->b[0] + (over ? 16 : 8)), NULL);
}

/* Graphs: the call made while a stream of device 0 captures is refused at
 * capture (nothing is recorded to write later); the exact one replays. */
static xdev_status_t captured(ctx_t *c, int over, row_fn call) {
    xdev_stream_t s = NULL;
    xdev_graph_t g = NULL;
    xdev_status_t st = xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s);
    if (st == XDEV_SUCCESS) st = xdev_graph_create(&g);
    if (st == XDEV_SUCCESS) st = xdev_stream_set_current(s);
    if (st == XDEV_SUCCESS) st = xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL);
    if (st == XDEV_ERROR_NOT_SUPPORTED) { /* a backend without graphs: nothing to capture */
        c->skip = "the backend cannot capture (its graph table is NULL)";
        XT_OK(xdev_graph_destroy(g));
        XT_OK(xdev_stream_destroy(s));
        return st;
    }
    if (st != XDEV_SUCCESS) return st;
    xdev_status_t got = call(c, over);
    snprintf(c->msg, sizeof c->msg, "%s", got != XDEV_SUCCESS ? xdev_last_error() : "");
    st = xdev_graph_capture_end(g);
    if (got == XDEV_SUCCESS && st == XDEV_SUCCESS) st = xdev_graph_replay(g, s);
    if (st == XDEV_SUCCESS) st = xdev_stream_synchronize(s);
    if (got == XDEV_SUCCESS && st != XDEV_SUCCESS) {
        got = st;
        snprintf(c->msg, sizeof c->msg, "%s", xdev_last_error());
    }
    xt_reset_state();
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    return got;
}
static xdev_status_t graph_fill(ctx_t *c, int over) {
    return captured(c, over, fill_count);
}
static xdev_status_t graph_elementwise(ctx_t *c, int over) {
    return captured(c, over, ew_out);
}
static xdev_status_t graph_memset(ctx_t *c, int over) {
    return captured(c, over, memset_n);
}
static xdev_status_t graph_prim_scan(ctx_t *c, int over) {
    return captured(c, over, prim_scan_out);
}
static xdev_status_t graph_prim_segsort(ctx_t *c, int over) {
    return captured(c, over, prim_segsort_offsets);
}

#define B(...)                                                                                     \
    { __VA_ARGS__ }
static const row_t g_rows[] = {
    {"elementwise/count_past_out", "xdev_elementwise", "out", B(0), B(4096, 16384, 16384), 0,
     ew_out},
    {"elementwise/count_past_input", "xdev_elementwise", "inputs[1]", B(0), B(4096, 4096, 40), 0,
     ew_in},
    {"gemm/lda_too_large", "xdev_gemm", "'a'", B(0), B(1024, 1024, 1024), 0, gemm_lda},
    {"gemm_strided_batched/batch", "xdev_gemm_strided_batched", "'c'", B(0), B(2048, 2048, 2048), 0,
     gemm_batch},
    {"axpy/incy", "xdev_axpy", "'y'", B(0), B(2048, 1024), 0, axpy_incy},
    {"dot/n", "xdev_dot", "'x'", B(0), B(4, 1024, 4096), 0, dot_n},
    {"nrm2/result", "xdev_nrm2", "'result'", B(0), B(4, 1024), 0, nrm2_result},
    {"scal/n", "xdev_scal", "'x'", B(0), B(1024), 0, scal_n},
    {"fft_exec/batch", "xdev_fft_exec", "'out'", B(0), B(1024, 1024), 0, fft_batch},
    {"rng_uniform/n", "xdev_rng_uniform", "'out'", B(0), B(1024), 0, rng_uniform},
    {"rng_normal/n", "xdev_rng_normal", "'out'", B(0), B(2048), 0, rng_normal},
    {"rng_integers/n", "xdev_rng_integers", "'out'", B(0), B(1024), 0, rng_integers},
    {"rng_bernoulli/n", "xdev_rng_bernoulli", "'out'", B(0), B(1024), 0, rng_bernoulli},
    {"fill_async/count", "xdev_fill_async", "'dst'", B(0), B(1024), 0, fill_count},
    {"convert_async/src", "xdev_convert_async", "'src'", B(0), B(4096, 1024), 0, convert_src},
    {"convert_async/dst", "xdev_convert_async", "'dst'", B(0), B(512, 4096), 0, convert_dst},
    {"memcpy/src", "xdev_memcpy", "src", B(0), B(4096, 1024), 0, memcpy_src},
    {"memcpy_async/dst", "xdev_memcpy_async", "dst", B(0), B(1024, 4096), 0, memcpy_async_dst},
    {"memcpy/host_to_device", "xdev_memcpy", "dst", B(0), B(1024), 0, memcpy_from_host},
    {"memset_async/n", "xdev_memset_async", "dst", B(0), B(1024), 0, memset_n},
    {"memcpy/pinned_src", "xdev_memcpy", "src", B(0), B(4096), 0, memcpy_pinned_src},
    {"memset_async/registered_memory", "xdev_memset_async", "dst", B(0), B(512), 0, foreign_memset},
    {"mem_prefetch_async/bytes", "xdev_mem_prefetch_async", "ptr", B(0), B(512), 0,
     managed_prefetch},
    {"mem_advise/bytes", "xdev_mem_advise", "ptr", B(0), B(512), 0, managed_advise},
    {"comm_broadcast/dst", "xdev_comm_broadcast", "dsts[0]", B(0, 1), B(1024, 512), 0,
     comm_broadcast},
    {"comm_broadcast_coalesced/dst", "xdev_comm_broadcast_coalesced", "dsts[0]", B(0, 1),
     B(512, 256), 0, comm_broadcast_coalesced},
    {"comm_reduce_add/src", "xdev_comm_reduce_add", "srcs[1]", B(0, 0, 1), B(1024, 1024, 512), 0,
     comm_reduce_add},
    {"comm_scatter/dst", "xdev_comm_scatter", "dsts[1]", B(0, 0, 1), B(1024, 512, 256), 0,
     comm_scatter},
    {"comm_gather/src", "xdev_comm_gather", "srcs[1]", B(0, 0, 1), B(2048, 512, 512), 0,
     comm_gather},
    {"all_reduce/recvbuf", "xdev_all_reduce", "recvbuf", B(0), B(512, 1024), 1, all_reduce},
    {"broadcast/sendbuf", "xdev_broadcast", "sendbuf", B(0), B(1024, 512), 1, broadcast},
    {"reduce/recvbuf", "xdev_reduce", "recvbuf", B(0), B(512, 1024), 1, reduce},
    {"all_gather/recvbuf", "xdev_all_gather", "recvbuf", B(0), B(512, 1024), 1, all_gather},
    {"reduce_scatter/sendbuf", "xdev_reduce_scatter", "sendbuf", B(0), B(1024, 512), 1,
     reduce_scatter},
    {"send/sendbuf", "xdev_send", "sendbuf", B(0, 1), B(512, 512), 2, send_count},
    {"recv/recvbuf", "xdev_recv", "recvbuf", B(0, 1), B(512, 512), 2, recv_count},
    {"graph/fill_async", "xdev_fill_async", "'dst'", B(0), B(1024), 0, graph_fill},
    {"graph/elementwise", "xdev_elementwise", "out", B(0), B(4096, 16384, 16384), 0,
     graph_elementwise},
    {"graph/memset_async", "xdev_memset_async", "dst", B(0), B(1024), 0, graph_memset},
    {"prim_reduce/count_past_in", "xdev_prim_reduce", "'in'", B(0), B(4, 1024), 0, prim_reduce_in},
    {"prim_reduce/argmax_out", "xdev_prim_reduce", "'out'", B(0), B(4, 1024), 0,
     prim_reduce_argmax},
    {"prim_scan/count_past_out", "xdev_prim_scan", "'out'", B(0), B(1024, 2048), 0, prim_scan_out},
    {"prim_scan/count_past_in", "xdev_prim_scan", "'in'", B(0), B(2048, 1024), 0, prim_scan_in},
    {"prim_sort_keys/keys_out", "xdev_prim_sort_keys", "'keys_out'", B(0), B(1024, 2048), 0,
     prim_sort_keys_out},
    {"prim_sort_pairs/values_in", "xdev_prim_sort_pairs", "'values_in'", B(0),
     B(2048, 2048, 2048, 1024), 0, prim_sort_pairs_values_in},
    {"prim_sort_pairs/values_out", "xdev_prim_sort_pairs", "'values_out'", B(0),
     B(2048, 2048, 2048, 4096), 0, prim_sort_pairs_values_out},
    {"prim_segmented_sort/offsets", "xdev_prim_segmented_sort", "'offsets'", B(0),
     B(1024, 1024, 40), 0, prim_segsort_offsets},
    {"prim_segmented_sort/values_out", "xdev_prim_segmented_sort", "'values_out'", B(0),
     B(2048, 1024, 2048, 2048, 40), 0, prim_segsort_values_out},
    {"prim_segmented_reduce/out", "xdev_prim_segmented_reduce", "'out'", B(0), B(16, 48, 1024), 0,
     prim_segreduce_out},
    {"prim_segmented_reduce/offsets", "xdev_prim_segmented_reduce", "'offsets'", B(0),
     B(64, 40, 1024), 0, prim_segreduce_offsets},
    {"prim_segmented_reduce/in", "xdev_prim_segmented_reduce", "'in'", B(0), B(64, 40, 1024), 0,
     prim_segreduce_in},
    {"prim_histogram_even/counts", "xdev_prim_histogram_even", "'counts'", B(0), B(128, 1024), 0,
     prim_histogram_counts},
    {"prim_histogram_even/samples", "xdev_prim_histogram_even", "'samples'", B(0), B(128, 1024), 0,
     prim_histogram_samples},
    {"prim_select_flagged/flags", "xdev_prim_select_flagged", "'flags'", B(0),
     B(8, 2048, 2048, 256), 0, prim_select_flags},
    {"prim_select_flagged/num_out", "xdev_prim_select_flagged", "'num_out'", B(0),
     B(20, 1024, 1024, 256), 0, prim_select_num_out},
    {"prim_select_if/out", "xdev_prim_select_if", "'out'", B(0), B(8, 1024, 2048), 0,
     prim_select_if_out},
    {"prim_unique/out", "xdev_prim_unique", "'out'", B(0), B(8, 1024, 2048), 0, prim_unique_out},
    {"prim_unique/num_out", "xdev_prim_unique", "'num_out'", B(0), B(20, 1024, 1024), 0,
     prim_unique_num_out},
    {"prim_run_length_encode/lengths", "xdev_prim_run_length_encode", "'lengths'", B(0),
     B(8, 2048, 2048, 2048), 0, prim_rle_lengths},
    {"prim_run_length_encode/num_runs", "xdev_prim_run_length_encode", "'num_runs'", B(0),
     B(20, 1024, 2048, 1024), 0, prim_rle_num_runs},
    {"graph/prim_scan", "xdev_prim_scan", "'out'", B(0), B(1024, 2048), 0, graph_prim_scan},
    {"graph/prim_segmented_sort", "xdev_prim_segmented_sort", "'offsets'", B(0), B(1024, 1024, 40),
     0, graph_prim_segsort},
};
#define NROWS ((int)(sizeof g_rows / sizeof g_rows[0]))

/* ------------------------------------------------------------- the runner */

static void sync_devices(void) {
    for (int d = 0; d < xt_device_count() && d < 2; d++)
        XT_OK(xdev_device_synchronize(xt_dev(d)));
}

/* Every byte of [p, p + n) is still the sentinel. */
static void expect_untouched(const row_t *r, const void *p, size_t n, const char *what, int i,
                             const char *when) {
    unsigned char *h = malloc(n);
    xt_peek(h, p, n);
    size_t k = 0;
    while (k < n && h[k] == SENTINEL)
        k++;
    ck_assert_msg(k == n, "%s: %s %d was written (byte %zu of %zu = 0x%02x) %s", r->name, what, i,
                  k, n, k < n ? h[k] : 0, when);
    free(h);
}

static bool has_comm(ctx_t *c, int ranks, const char *test, const char *row) {
    xdev_status_t st;
    if (ranks == 1) {
        xdev_device_t d = xt_dev(0);
        st = xdev_communicator_init_all(&c->comm1, 1, &d);
    } else {
        xdev_device_t d[2] = {xt_dev(0), xt_dev(1)};
        st = xdev_communicator_init_all(c->comm2, 2, d);
    }
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        xt_skip(test, "%s: the backend has no communicators: %s", row, xdev_last_error());
        return false;
    }
    XT_OK(st);
    return true;
}

START_TEST(bounds_row) {
    const row_t *r = &g_rows[_i];
    int ndev = 1;
    for (int i = 0; i < MAXB; i++)
        if (r->bytes[i] && r->dev[i] + 1 > ndev) ndev = r->dev[i] + 1;
    if (r->comm > ndev) ndev = r->comm;
    if (!xt_has_devices(__func__, ndev, r->name)) return;
    ctx_t c = {0};
    if (r->comm > 0 && !has_comm(&c, r->comm, __func__, r->name)) return;
    void *guard[MAXB] = {0};
    for (int i = 0; i < MAXB && r->bytes[i]; i++) {
        XT_OK(xdev_malloc_device(xt_dev(r->dev[i]), &c.b[i], r->bytes[i]));
        XT_OK(xdev_malloc_device(xt_dev(r->dev[i]), &guard[i], GUARD));
        XT_OK(xdev_set_device(xt_dev(r->dev[i])));
        XT_OK(xdev_memset_async(c.b[i], SENTINEL, r->bytes[i], NULL));
        XT_OK(xdev_memset_async(guard[i], SENTINEL, GUARD, NULL));
    }
    XT_OK(xdev_set_device(xt_dev(0)));
    sync_devices();

    /* The over-length call: refused, naming the call and the operand. */
    xdev_status_t st = r->fn(&c, 1);
    if (c.skip != NULL) {
        xt_skip(__func__, "%s: %s", r->name, c.skip);
        return;
    }
    const char *msg = c.msg[0] ? c.msg : xdev_last_error();
    ck_assert_msg(st == XDEV_ERROR_INVALID_VALUE,
                  "%s: the over-length %s returned %s, not XDEV_ERROR_INVALID_VALUE (\"%s\")",
                  r->name, r->call, xdev_status_string(st), msg);
    ck_assert_msg(strstr(msg, r->call) != NULL, "%s: the message does not name %s: \"%s\"", r->name,
                  r->call, msg);
    ck_assert_msg(xt_icontains(msg, r->needle), "%s: the message does not name %s: \"%s\"", r->name,
                  r->needle, msg);
    xt_reset_state();
    sync_devices();
    for (int i = 0; i < MAXB && r->bytes[i]; i++) {
        expect_untouched(r, c.b[i], r->bytes[i], "operand", i, "by the refused call");
        expect_untouched(r, guard[i], GUARD, "the guard after operand", i, "by the refused call");
    }

    /* The exact call: it runs, inside its operands. */
    c.msg[0] = '\0';
    st = r->fn(&c, 0);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        xt_skip(__func__, "%s: the exact call is not supported here: %s", r->name,
                c.msg[0] ? c.msg : xdev_last_error());
    } else {
        ck_assert_msg(st == XDEV_SUCCESS, "%s: the exact %s returned %s: \"%s\"", r->name, r->call,
                      xdev_status_string(st), c.msg[0] ? c.msg : xdev_last_error());
        xt_reset_state();
        sync_devices();
        for (int i = 0; i < MAXB && r->bytes[i]; i++)
            expect_untouched(r, guard[i], GUARD, "the guard after operand", i, "by the exact call");
    }
    xt_reset_state();
    for (int i = 0; i < MAXB && r->bytes[i]; i++) {
        XT_OK(xdev_free(c.b[i]));
        XT_OK(xdev_free(guard[i]));
    }
    XT_OK(xdev_elementwise_cache_clear()); /* the kernels it compiled, for LeakSanitizer */
    if (c.comm1 != NULL) XT_OK(xdev_communicator_destroy(c.comm1));
    for (int i = 0; i < 2; i++)
        if (c.comm2[i] != NULL) XT_OK(xdev_communicator_destroy(c.comm2[i]));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("bounds");
    TCase *tc = tcase_create("table");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, bounds_row, 0, NROWS);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "bounds", argc, argv);
}
