/* SPDX-License-Identifier: Apache-2.0 */
/* bench/kernels/barrier_kernels.c - the kernels of bench/barrier_cpu_bench.c:
 * five idioms of block code that meet at barriers, each twice - in the block
 * form (XDEV_KERNEL_BLOCK: regions the CPU runs as loops) and as one
 * work-item's program with xdev_barrier() (XDEV_KERNEL_SYNC: a fiber per
 * work-item) - with the same arithmetic in the same order, so that both
 * forms and the benchmark's OpenMP loops give the same bits. Plus a kernel
 * of barriers only, which measures a fiber switch. Blocks: 1-D of up to
 * 1024 items (reduce, stencil, scan), 16 x 16 (transpose, sgemm). */
#include <xdev/kernel_lang.h>

#define BK_R 4     /* stencil radius */
#define BK_TILE 16 /* transpose and sgemm tile */

XDEV_CONSTANT float bk_w[2 * BK_R + 1] = {0.02f, 0.05f, 0.1f,  0.2f, 0.26f,
                                          0.2f,  0.1f,  0.05f, 0.02f};

/* ------------------------------------------------ block tree reduction */

XDEV_KERNEL_BLOCK(bk_reduce, XDEV_PARAM(long, n), XDEV_PTR(const float, x), XDEV_PTR(float, out)) {
    XDEV_SHARED(float, part, 1024);
    XDEV_FOR_ITEMS {
        long i = xdev_global_id(0);
        part[xdev_local_id(0)] = i < n ? x[i] : 0.0f;
    }
    xdev_block_sync();
    for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {
        XDEV_FOR_ITEMS_BELOW(s) {
            int t = xdev_local_id(0);
            part[t] += part[t + s];
        }
        xdev_block_sync();
    }
    XDEV_FOR_ITEMS_BELOW(1) {
        out[xdev_group_id(0)] = part[0];
    }
}

XDEV_KERNEL_SYNC(bk_reduce_fiber, XDEV_PARAM(long, n), XDEV_PTR(const float, x),
                 XDEV_PTR(float, out)) {
    XDEV_SHARED(float, part, 1024);
    int t = xdev_local_id(0);
    long i = xdev_global_id(0);
    part[t] = i < n ? x[i] : 0.0f;
    xdev_barrier();
    for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        xdev_barrier();
    }
    if (t == 0) out[xdev_group_id(0)] = part[0];
}

/* ------------------------------------------ 1-D stencil, tile with halo */

XDEV_KERNEL_BLOCK(bk_stencil, XDEV_PARAM(long, n), XDEV_PTR(const float, x), XDEV_PTR(float, y)) {
    XDEV_SHARED(float, tile, 1024 + 2 * BK_R);
    XDEV_FOR_ITEMS {
        int t = xdev_local_id(0), b = xdev_local_size(0);
        long i = xdev_global_id(0);
        tile[t + BK_R] = i < n ? x[i] : 0.0f;
        if (t < BK_R) {
            tile[t] = i - BK_R >= 0 ? x[i - BK_R] : 0.0f;
            tile[t + b + BK_R] = i + b < n ? x[i + b] : 0.0f;
        }
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        int t = xdev_local_id(0);
        long i = xdev_global_id(0);
        float s = 0.0f;
        for (int k = 0; k <= 2 * BK_R; k++)
            s += bk_w[k] * tile[t + k];
        if (i < n) y[i] = s;
    }
}

XDEV_KERNEL_SYNC(bk_stencil_fiber, XDEV_PARAM(long, n), XDEV_PTR(const float, x),
                 XDEV_PTR(float, y)) {
    XDEV_SHARED(float, tile, 1024 + 2 * BK_R);
    int t = xdev_local_id(0), b = xdev_local_size(0);
    long i = xdev_global_id(0);
    tile[t + BK_R] = i < n ? x[i] : 0.0f;
    if (t < BK_R) {
        tile[t] = i - BK_R >= 0 ? x[i - BK_R] : 0.0f;
        tile[t + b + BK_R] = i + b < n ? x[i + b] : 0.0f;
    }
    xdev_barrier();
    float s = 0.0f;
    for (int k = 0; k <= 2 * BK_R; k++)
        s += bk_w[k] * tile[t + k];
    if (i < n) y[i] = s;
}

/* ---------------------- transpose of a rows x cols matrix through a tile */

XDEV_KERNEL_BLOCK(bk_transpose, XDEV_PARAM(int, rows), XDEV_PARAM(int, cols),
                  XDEV_PTR(const float, a), XDEV_PTR(float, at)) {
    XDEV_SHARED(float, tile, BK_TILE *(BK_TILE + 1));
    XDEV_FOR_ITEMS {
        int tx = xdev_local_id(0), ty = xdev_local_id(1);
        long r = xdev_global_id(1), c = xdev_global_id(0);
        tile[ty * (BK_TILE + 1) + tx] = a[r * cols + c];
    }
    xdev_block_sync();
    XDEV_FOR_ITEMS {
        int tx = xdev_local_id(0), ty = xdev_local_id(1);
        long r = (long)xdev_group_id(0) * BK_TILE + ty, c = (long)xdev_group_id(1) * BK_TILE + tx;
        at[r * rows + c] = tile[tx * (BK_TILE + 1) + ty];
    }
}

XDEV_KERNEL_SYNC(bk_transpose_fiber, XDEV_PARAM(int, rows), XDEV_PARAM(int, cols),
                 XDEV_PTR(const float, a), XDEV_PTR(float, at)) {
    XDEV_SHARED(float, tile, BK_TILE *(BK_TILE + 1));
    int tx = xdev_local_id(0), ty = xdev_local_id(1);
    tile[ty * (BK_TILE + 1) + tx] = a[xdev_global_id(1) * cols + xdev_global_id(0)];
    xdev_barrier();
    long r = (long)xdev_group_id(0) * BK_TILE + ty, c = (long)xdev_group_id(1) * BK_TILE + tx;
    at[r * rows + c] = tile[tx * (BK_TILE + 1) + ty];
}

/* ----------------------- C = A B, n x n (n a multiple of 16), 16x16 tiles */

XDEV_KERNEL_BLOCK(bk_sgemm, XDEV_PARAM(int, n), XDEV_PTR(const float, a), XDEV_PTR(const float, b),
                  XDEV_PTR(float, c)) {
    XDEV_SHARED(float, as, BK_TILE *BK_TILE);
    XDEV_SHARED(float, bs, BK_TILE *BK_TILE);
    XDEV_PRIVATE(float, acc); /* the item's sum, kept across the tiles' barriers */
    XDEV_FOR_ITEMS {
        xdev_priv(acc) = 0.0f;
    }
    for (int t0 = 0; t0 < n; t0 += BK_TILE) {
        XDEV_FOR_ITEMS {
            int tx = xdev_local_id(0), ty = xdev_local_id(1);
            as[ty * BK_TILE + tx] = a[xdev_global_id(1) * n + t0 + tx];
            bs[ty * BK_TILE + tx] = b[(long)(t0 + ty) * n + xdev_global_id(0)];
        }
        xdev_block_sync();
        XDEV_FOR_ITEMS {
            int tx = xdev_local_id(0), ty = xdev_local_id(1);
            float s = xdev_priv(acc);
            for (int k = 0; k < BK_TILE; k++)
                s += as[ty * BK_TILE + k] * bs[k * BK_TILE + tx];
            xdev_priv(acc) = s;
        }
        xdev_block_sync();
    }
    XDEV_FOR_ITEMS {
        c[xdev_global_id(1) * n + xdev_global_id(0)] = xdev_priv(acc);
    }
}

XDEV_KERNEL_SYNC(bk_sgemm_fiber, XDEV_PARAM(int, n), XDEV_PTR(const float, a),
                 XDEV_PTR(const float, b), XDEV_PTR(float, c)) {
    XDEV_SHARED(float, as, BK_TILE *BK_TILE);
    XDEV_SHARED(float, bs, BK_TILE *BK_TILE);
    int tx = xdev_local_id(0), ty = xdev_local_id(1);
    float acc = 0.0f;
    for (int t0 = 0; t0 < n; t0 += BK_TILE) {
        as[ty * BK_TILE + tx] = a[xdev_global_id(1) * n + t0 + tx];
        bs[ty * BK_TILE + tx] = b[(long)(t0 + ty) * n + xdev_global_id(0)];
        xdev_barrier();
        for (int k = 0; k < BK_TILE; k++)
            acc += as[ty * BK_TILE + k] * bs[k * BK_TILE + tx];
        xdev_barrier();
    }
    c[xdev_global_id(1) * n + xdev_global_id(0)] = acc;
}

/* ----------------- inclusive scan of each block's slice (Hillis-Steele) */

XDEV_KERNEL_BLOCK(bk_scan, XDEV_PARAM(long, n), XDEV_PTR(const unsigned, x),
                  XDEV_PTR(unsigned, y)) {
    XDEV_SHARED(unsigned, buf, 1024);
    XDEV_PRIVATE(unsigned, add); /* read before the barrier, added after it */
    XDEV_FOR_ITEMS {
        long i = xdev_global_id(0);
        buf[xdev_local_id(0)] = i < n ? x[i] : 0u;
    }
    xdev_block_sync();
    for (int off = 1; off < xdev_local_size(0); off *= 2) {
        XDEV_FOR_ITEMS {
            int t = xdev_local_id(0);
            xdev_priv(add) = t >= off ? buf[t - off] : 0u;
        }
        xdev_block_sync();
        XDEV_FOR_ITEMS {
            buf[xdev_local_id(0)] += xdev_priv(add);
        }
        xdev_block_sync();
    }
    XDEV_FOR_ITEMS {
        long i = xdev_global_id(0);
        if (i < n) y[i] = buf[xdev_local_id(0)];
    }
}

XDEV_KERNEL_SYNC(bk_scan_fiber, XDEV_PARAM(long, n), XDEV_PTR(const unsigned, x),
                 XDEV_PTR(unsigned, y)) {
    XDEV_SHARED(unsigned, buf, 1024);
    int t = xdev_local_id(0);
    long i = xdev_global_id(0);
    buf[t] = i < n ? x[i] : 0u;
    xdev_barrier();
    for (int off = 1; off < xdev_local_size(0); off *= 2) {
        unsigned add = t >= off ? buf[t - off] : 0u;
        xdev_barrier();
        buf[t] += add;
        xdev_barrier();
    }
    if (i < n) y[i] = buf[t];
}

/* ----------------------------------- barriers only: the fiber switch */

XDEV_KERNEL_SYNC(bk_barriers, XDEV_PARAM(int, rounds), XDEV_PTR(int, out)) {
    for (int r = 0; r < rounds; r++)
        xdev_barrier();
    if (xdev_local_id(0) == 0) out[xdev_group_id(0)] = rounds;
}
