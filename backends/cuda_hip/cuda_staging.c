/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_staging.c - large copies between pageable host memory
 * and a device, pipelined through pinned staging buffers.
 *
 * A pageable cudaMemcpy copies through the driver's own small staging area
 * with one thread (5-11 GB/s for large copies on the H100 host measured).
 * Here each device has STAGE_BUFS pinned buffers of one chunk each; for host
 * to device, chunk k is copied into buffer k % STAGE_BUFS by several threads
 * (cuda_hostcopy.c) while the DMA of the chunks before it runs, and each
 * chunk's DMA is queued on the caller's stream with an event marking when
 * its buffer is free again. Device to host runs the pipeline the other way
 * round.
 *
 * Ordering: every DMA is on the caller's stream, so the copy is ordered with
 * the stream's work like any cudaMemcpyAsync. Host side, as CUDA's pageable
 * copies: host to device returns once the source has been read (DMA may
 * still be pending; the source may be reused), device to host returns when
 * the data is in the destination.
 *
 * Copies of a few MiB use smaller chunks (chunk_for) to keep the pipeline
 * full. Used where the host side is not pinned as far as the driver knows
 * (cudaPointerGetAttributes: unregistered) and the copy is large enough to
 * win: host to device from STAGE_MIN_H2D (the driver's own path reaches
 * 11-15 GB/s at 1-8 MiB; staged there it did no better on the H200: 12.1,
 * 12.8, 12.3, 11.0 GB/s at 1, 2, 4, 8 MiB against 12.5, 13.6, 12.9, 14.6
 * unstaged, same run; 3.1-3.7x at 64-512 MiB), device to host from
 * STAGE_MIN_D2H (the driver's path is 5-10 GB/s; 1.6x at 4 MiB, 2.3x at
 * 8 MiB). Tuning:
 * XDEV_CUDA_STAGE_CHUNK_KB (chunk size, default 4096), XDEV_CUDA_STAGING=0
 * (off: plain cudaMemcpyAsync), XDEV_CUDA_COPY_THREADS (cuda_hostcopy.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cuda_internal.h"

#define STAGE_MIN_H2D ((size_t)16 << 20)
#define STAGE_MIN_D2H ((size_t)1 << 20)
#define STAGE_BUFS 4
#define DEFAULT_CHUNK ((size_t)4 << 20)
#define MIN_CHUNK ((size_t)256 << 10)

typedef struct stage_ctx {
    pthread_mutex_t lock;
    bool ready, failed;
    char *buf[STAGE_BUFS];
    cudaEvent_t done[STAGE_BUFS];
    bool used[STAGE_BUFS]; /* done[i] was recorded: wait for it before reuse */
} stage_ctx_t;

static stage_ctx_t g_ctx[XC_MAX_DEVICES];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_enabled = true;
static size_t g_chunk = DEFAULT_CHUNK;

static const char *env(const char *name) {
    const xdev_host_services_t *h = xc_state.host;
    return h && XDEV_BACKEND_HAS_SLOT(h, get_env) && h->get_env ? h->get_env(name) : NULL;
}

/* 1: on, 0: off, -1: malformed (the forms core's boolean variables take). */
static int parse_switch(const char *v) {
    static const char *const on[] = {"1", "true", "yes", "on"}, *const off[] = {"0", "false", "no",
                                                                                "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, on[i]) == 0) return 1;
        if (strcasecmp(v, off[i]) == 0) return 0;
    }
    return -1;
}

/* A positive decimal integer within [lo, hi] (no sign, no spaces). */
bool xc_env_int(const char *v, long lo, long hi, long *out) {
    if (v[0] < '0' || v[0] > '9') return false;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (end == NULL || *end != '\0' || n < lo || n > hi) return false;
    *out = n;
    return true;
}

xdev_status_t xc_staging_check_env(void) {
    const char *v = env(XC_ENV("STAGING"));
    if (v != NULL && *v != '\0' && parse_switch(v) < 0)
        return xc_error(XDEV_ERROR_ENV,
                        XC_ENV("STAGING") "='%s' is malformed (expected 1, true, yes, on or 0, "
                                          "false, no, off, any case; empty = on)",
                        v);
    long kb;
    v = env(XC_ENV("STAGE_CHUNK_KB"));
    if (v != NULL && *v != '\0' && !xc_env_int(v, 64, 1L << 20, &kb))
        return xc_error(XDEV_ERROR_ENV,
                        XC_ENV("STAGE_CHUNK_KB") "='%s' is malformed (expected an integer number "
                                                 "of KiB from 64 to 1048576; empty = 4096)",
                        v);
    return XDEV_SUCCESS;
}

/* Values were validated by xc_staging_check_env at plugin init. */
static void read_config(void) {
    const char *v = env(XC_ENV("STAGING"));
    if (v != NULL && *v != '\0' && parse_switch(v) == 0) g_enabled = false;
    v = env(XC_ENV("STAGE_CHUNK_KB"));
    long kb;
    if (v != NULL && *v != '\0' && xc_env_int(v, 64, 1L << 20, &kb)) g_chunk = (size_t)kb << 10;
    for (int i = 0; i < XC_MAX_DEVICES; i++)
        pthread_mutex_init(&g_ctx[i].lock, NULL);
}

bool xc_staging_wanted(const xdev_copy_desc_t *c) {
    const void *host;
    if (c->kind == XDEV_COPY_HOST_TO_DEVICE && !c->src_pinned)
        host = c->src;
    else if (c->kind == XDEV_COPY_DEVICE_TO_HOST && !c->dst_pinned)
        host = c->dst;
    else
        return false;
    if (c->bytes < (c->kind == XDEV_COPY_HOST_TO_DEVICE ? STAGE_MIN_H2D : STAGE_MIN_D2H))
        return false;
    pthread_once(&g_once, read_config);
    if (!g_enabled) return false;
    /* Pinned or registered by someone else (torch, cudaHostRegister), or
     * managed: the DMA engine can use it directly. */
    return xc_vendor_host_is_pageable(host);
}

/* Chunk size for an n-byte copy: at least STAGE_BUFS chunks so that even a
 * copy of a few MiB overlaps host copies with DMA; 64 KiB multiples, at
 * least MIN_CHUNK, at most the buffers' size. */
static size_t chunk_for(size_t n) {
    size_t chunk = (n / STAGE_BUFS + 65535) & ~(size_t)65535;
    if (chunk < MIN_CHUNK) chunk = MIN_CHUNK;
    return chunk < g_chunk ? chunk : g_chunk;
}

/* Free what ctx_setup made, after the DMAs that use it. */
static void ctx_release(stage_ctx_t *ctx) {
    for (int i = 0; i < STAGE_BUFS; i++) {
        if (ctx->used[i]) (void)cudaEventSynchronize(ctx->done[i]);
        if (ctx->done[i] != NULL) (void)cudaEventDestroy(ctx->done[i]);
        if (ctx->buf[i] != NULL) (void)cudaFreeHost(ctx->buf[i]);
        ctx->done[i] = NULL;
        ctx->buf[i] = NULL;
        ctx->used[i] = false;
    }
    ctx->ready = false;
}

/* Allocate the device's buffers and events; the device is current. */
static xdev_status_t ctx_setup(stage_ctx_t *ctx, int device) {
    for (int i = 0; i < STAGE_BUFS; i++) {
        XC_CALL(cudaHostAlloc((void **)&ctx->buf[i], g_chunk, cudaHostAllocPortable),
                XC_STR(cudaHostAlloc) "(%zu-byte staging buffer)", g_chunk);
        XC_CALL(cudaEventCreateWithFlags(&ctx->done[i], cudaEventDisableTiming),
                XC_STR(cudaEventCreateWithFlags) "(staging event) on device %d", device);
    }
    ctx->ready = true;
    return XDEV_SUCCESS;
}

/* Wait until buffer i's last DMA is done. */
static xdev_status_t buffer_free(stage_ctx_t *ctx, int i) {
    if (!ctx->used[i]) return XDEV_SUCCESS;
    XC_CALL(cudaEventSynchronize(ctx->done[i]), XC_STR(cudaEventSynchronize) "(staging buffer)");
    ctx->used[i] = false;
    return XDEV_SUCCESS;
}

/* Queue one chunk's DMA and mark its buffer busy until it is done. */
static xdev_status_t dma(stage_ctx_t *ctx, int i, void *dst, const void *src, size_t n,
                         xc_copy_kind_t kind, cudaStream_t s) {
    XC_CALL(cudaMemcpyAsync(dst, src, n, kind, s),
            XC_STR(cudaMemcpyAsync) "(%zu-byte staged chunk, %s)", n,
            kind == cudaMemcpyHostToDevice ? "host to device" : "device to host");
    XC_CALL(cudaEventRecord(ctx->done[i], s), XC_STR(cudaEventRecord) "(staging event)");
    ctx->used[i] = true;
    return XDEV_SUCCESS;
}

static xdev_status_t to_device(stage_ctx_t *ctx, char *dst, const char *src, size_t n, size_t chunk,
                               cudaStream_t s) {
    size_t chunks = (n + chunk - 1) / chunk;
    for (size_t k = 0; k < chunks; k++) {
        int i = (int)(k % STAGE_BUFS);
        size_t off = k * chunk, len = n - off < chunk ? n - off : chunk;
        xdev_status_t st = buffer_free(ctx, i);
        if (st != XDEV_SUCCESS) return st;
        xc_parallel_memcpy(ctx->buf[i], src + off, len);
        st = dma(ctx, i, dst + off, ctx->buf[i], len, cudaMemcpyHostToDevice, s);
        if (st != XDEV_SUCCESS) return st;
    }
    return XDEV_SUCCESS;
}

static xdev_status_t to_host(stage_ctx_t *ctx, char *dst, const char *src, size_t n, size_t chunk,
                             cudaStream_t s) {
    size_t chunks = (n + chunk - 1) / chunk, issued = 0;
    for (size_t k = 0; k < chunks; k++) {
        /* Keep up to STAGE_BUFS chunks in flight ahead of the one drained. */
        for (; issued < chunks && issued < k + STAGE_BUFS; issued++) {
            int i = (int)(issued % STAGE_BUFS);
            size_t off = issued * chunk, len = n - off < chunk ? n - off : chunk;
            xdev_status_t st = buffer_free(ctx, i);
            if (st == XDEV_SUCCESS)
                st = dma(ctx, i, ctx->buf[i], src + off, len, cudaMemcpyDeviceToHost, s);
            if (st != XDEV_SUCCESS) return st;
        }
        int i = (int)(k % STAGE_BUFS);
        size_t off = k * chunk, len = n - off < chunk ? n - off : chunk;
        xdev_status_t st = buffer_free(ctx, i);
        if (st != XDEV_SUCCESS) return st;
        xc_parallel_memcpy(dst + off, ctx->buf[i], len);
    }
    return XDEV_SUCCESS;
}

xdev_status_t xc_staged_copy(const xdev_copy_desc_t *c, int device, cudaStream_t stream) {
    pthread_once(&g_once, read_config);
    stage_ctx_t *ctx = &g_ctx[device];
    pthread_mutex_lock(&ctx->lock);
    xdev_status_t st = XDEV_SUCCESS;
    if (!ctx->ready && !ctx->failed && ctx_setup(ctx, device) != XDEV_SUCCESS) {
        ctx_release(ctx); /* e.g. no pinned memory left: use the driver's path */
        ctx->failed = true;
    }
    if (ctx->ready) {
        size_t chunk = chunk_for(c->bytes);
        if (c->kind == XDEV_COPY_HOST_TO_DEVICE)
            st = to_device(ctx, c->dst, c->src, c->bytes, chunk, stream);
        else
            st = to_host(ctx, c->dst, c->src, c->bytes, chunk, stream);
    }
    bool staged = ctx->ready;
    pthread_mutex_unlock(&ctx->lock);
    if (staged) return st;
    /* Staging could not be set up: the driver's own pageable path. */
    xc_copy_kind_t kind =
        c->kind == XDEV_COPY_HOST_TO_DEVICE ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    XC_CALL(cudaMemcpyAsync(c->dst, c->src, c->bytes, kind, stream),
            XC_STR(cudaMemcpyAsync) "(%zu bytes, pageable) on device %d", c->bytes, device);
    return XDEV_SUCCESS;
}
