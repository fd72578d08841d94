/* SPDX-License-Identifier: Apache-2.0 */
/* bench/gpu/copy_bench.c - host<->device copy bandwidth through xdev against
 * the raw CUDA runtime, on the same buffers and the same stream of cuda:0:
 *
 *   pinned   xdev_memcpy_async + synchronize   vs cudaMemcpyAsync + cudaStreamSynchronize
 *   pageable xdev_memcpy (staged pipeline)     vs cudaMemcpy
 *   pageable H2D* xdev_memcpy                   vs cudaMemcpyAsync + cudaStreamSynchronize
 *
 * cudaMemcpy from pageable memory may return once the last piece is in the
 * driver's staging buffer, before it reaches the device (CUDA's "API
 * synchronization behavior"); xdev_memcpy returns when the data is on the
 * device (as torch's copy_ does: an async copy, then a stream synchronize),
 * so H2D* times the raw runtime doing the same.
 *
 *   copy_bench [--sizes-mb 4,64,512] [--reps 10] [--pageable-only]
 *
 * Each size runs --reps times, alternating xdev and raw; GB/s of the median
 * (GB = 1e9 bytes). Pageable results are checked byte for byte once. Needs
 * XDEV_BACKEND=cuda (or auto on a GPU machine). */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gpu_bench.h"

typedef enum { PIN_H2D, PIN_D2H, PAGE_H2D, PAGE_D2H, PAGE_H2D_WAIT, NCASES } case_t;
static const char *const k_names[NCASES] = {"pinned H2D", "pinned D2H", "pageable H2D",
                                            "pageable D2H", "pageable H2D*"};

typedef struct {
    void *dev;
    void *pinned;
    unsigned char *pageable, *check;
    size_t n;
    xdev_stream_t xs;
    cudaStream_t cs;
} bufs_t;

/* One timed copy, in seconds. */
static double once(const bufs_t *b, case_t c, bool xdev) {
    double t0 = now_s();
    switch (c) {
    case PIN_H2D:
        if (xdev) {
            CHECK(xdev_memcpy_async(b->dev, b->pinned, b->n, b->xs));
            CHECK(xdev_stream_synchronize(b->xs));
        } else {
            CCHECK(cudaMemcpyAsync(b->dev, b->pinned, b->n, cudaMemcpyHostToDevice, b->cs));
            CCHECK(cudaStreamSynchronize(b->cs));
        }
        break;
    case PIN_D2H:
        if (xdev) {
            CHECK(xdev_memcpy_async(b->pinned, b->dev, b->n, b->xs));
            CHECK(xdev_stream_synchronize(b->xs));
        } else {
            CCHECK(cudaMemcpyAsync(b->pinned, b->dev, b->n, cudaMemcpyDeviceToHost, b->cs));
            CCHECK(cudaStreamSynchronize(b->cs));
        }
        break;
    case PAGE_H2D:
        if (xdev)
            CHECK(xdev_memcpy(b->dev, b->pageable, b->n));
        else
            CCHECK(cudaMemcpy(b->dev, b->pageable, b->n, cudaMemcpyHostToDevice));
        break;
    case PAGE_D2H:
        if (xdev)
            CHECK(xdev_memcpy(b->pageable, b->dev, b->n));
        else
            CCHECK(cudaMemcpy(b->pageable, b->dev, b->n, cudaMemcpyDeviceToHost));
        break;
    case PAGE_H2D_WAIT: /* raw: returns when the data is on the device, as xdev_memcpy does */
        if (xdev) {
            CHECK(xdev_memcpy(b->dev, b->pageable, b->n));
        } else {
            CCHECK(cudaMemcpyAsync(b->dev, b->pageable, b->n, cudaMemcpyHostToDevice, 0));
            CCHECK(cudaStreamSynchronize(0));
        }
        break;
    default:
        break;
    }
    return now_s() - t0;
}

/* xdev's pageable copies must be exact (the staging pipeline). */
static void verify(bufs_t *b) {
    for (size_t i = 0; i < b->n; i++)
        b->pageable[i] = (unsigned char)(i * 7 + (i >> 13));
    CHECK(xdev_memcpy(b->dev, b->pageable, b->n));
    memset(b->check, 0, b->n);
    CHECK(xdev_memcpy(b->check, b->dev, b->n));
    if (memcmp(b->check, b->pageable, b->n) != 0) {
        fprintf(stderr, "copy_bench: pageable round trip of %zu bytes differs\n", b->n);
        exit(1);
    }
}

int main(int argc, char **argv) {
    size_t sizes_mb[16] = {4, 64, 512};
    int nsizes = 3, reps = 10;
    bool pageable_only = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--pageable-only") == 0) {
            pageable_only = true;
        } else if (strcmp(argv[i], "--sizes-mb") == 0 && i + 1 < argc) {
            nsizes = 0;
            for (char *tok = strtok(argv[++i], ","); tok && nsizes < 16; tok = strtok(NULL, ","))
                sizes_mb[nsizes++] = (size_t)atol(tok);
        } else {
            fprintf(stderr, "usage: copy_bench [--sizes-mb 4,64,512] [--reps 10] "
                            "[--pageable-only]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 1000) return 2;
    CHECK(xdev_init());
    xdev_device_t d;
    CHECK(xdev_get_device(&d));
    if (d.type != XDEV_DEVICE_CUDA) {
        fprintf(stderr, "copy_bench: the default device is not cuda (set XDEV_BACKEND=cuda)\n");
        return 1;
    }
    const char *threads = getenv("XDEV_CUDA_COPY_THREADS");
    printf("copy_bench on cuda:%d, XDEV_CUDA_COPY_THREADS=%s; GB/s (1e9 B/s) of the median of %d\n",
           d.index, threads ? threads : "(default)", reps);
    printf("| %-13s | %8s | %10s | %10s | %7s |\n", "copy", "MiB", "xdev GB/s", "raw GB/s",
           "ratio");
    double *tx = malloc(sizeof(double) * (size_t)reps), *tr = malloc(sizeof(double) * (size_t)reps);
    for (int si = 0; si < nsizes; si++) {
        bufs_t b = {.n = sizes_mb[si] << 20};
        CHECK(xdev_malloc(&b.dev, b.n));
        CHECK(xdev_host_alloc(&b.pinned, b.n));
        b.pageable = malloc(b.n);
        b.check = malloc(b.n);
        if (!b.pageable || !b.check) return 1;
        memset(b.pinned, 1, b.n);
        CHECK(xdev_stream_create(d, XDEV_STREAM_PRIORITY_NORMAL, &b.xs));
        void *h = NULL;
        CHECK(xdev_stream_native_handle(b.xs, &h));
        b.cs = (cudaStream_t)h;
        verify(&b);
        for (int c = pageable_only ? PAGE_H2D : 0; c < NCASES; c++) {
            (void)once(&b, (case_t)c, true); /* warm-up: staging buffers, workers */
            (void)once(&b, (case_t)c, false);
            for (int r = 0; r < reps; r++) {
                tx[r] = once(&b, (case_t)c, true);
                tr[r] = once(&b, (case_t)c, false);
            }
            double gx = (double)b.n / median(tx, reps) / 1e9;
            double gr = (double)b.n / median(tr, reps) / 1e9;
            printf("| %-13s | %8zu | %10.2f | %10.2f | %6.2fx |\n", k_names[c], sizes_mb[si], gx,
                   gr, gx / gr);
        }
        CHECK(xdev_stream_destroy(b.xs));
        CHECK(xdev_free(b.dev));
        CHECK(xdev_host_free(b.pinned));
        free(b.pageable);
        free(b.check);
        CHECK(xdev_empty_cache());
    }
    free(tx);
    free(tr);
    return 0;
}
