/* SPDX-License-Identifier: Apache-2.0 */
/* examples/kernels/heat_kernels.c - the device code of examples/heat.c, in
 * xdev's kernel dialect (one source for the CPU, CUDA and HIP; built by
 * xdev_add_kernels in examples/CMakeLists.txt). */
#include <xdev/kernel_lang.h>

/* Initial temperatures from random integers (exact on every device). */
XDEV_KERNEL(heat_init, XDEV_PARAM(long, n), XDEV_PTR(const int, seedling), XDEV_PTR(float, u),
            XDEV_PTR(unsigned long long, checksum)) {
    long i = xdev_global_id(0);
    if (i >= n) return;
    int v = seedling[i] & 1023; /* 0 .. 1023 */
    u[i] = (float)v / 1024.0f;
    xdev_atomic_add_u64(checksum, (unsigned long long)v * (unsigned long long)(i % 7 + 1));
}

/* One explicit Euler step of u_t = lap(u) on an nx x ny grid whose edges
 * are held (the top edge hot, the others cold): v = u + r * lap(u). */
XDEV_KERNEL(heat_step, XDEV_PARAM(int, nx), XDEV_PARAM(int, ny), XDEV_PARAM(float, r),
            XDEV_PTR(const float, u), XDEV_PTR(float, v), XDEV_PTR(float, diff)) {
    long x = xdev_global_id(0), y = xdev_global_id(1);
    if (x >= nx || y >= ny) return;
    long c = y * nx + x;
    float next;
    if (y == 0)
        next = 1.0f;
    else if (x == 0 || y == ny - 1 || x == nx - 1)
        next = 0.0f;
    else
        next = u[c] + r * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] - 4.0f * u[c]);
    v[c] = next;
    diff[c] = next - u[c];
}

/* Partial sums of u, one per block of 256: a tree in shared memory, in the
 * block form - regions of work-items between barriers, the level loop
 * outside them - which the CPU runs as plain loops (docs/kernels.md). */
XDEV_KERNEL_BLOCK(heat_partial_sums, XDEV_PARAM(long, n), XDEV_PTR(const float, u),
                  XDEV_PTR(double, partial)) {
    XDEV_SHARED(double, part, 256);
    XDEV_FOR_ITEMS {
        long i = xdev_global_id(0);
        part[xdev_local_id(0)] = i < n ? (double)u[i] : 0.0;
    }
    xdev_block_sync();
    for (int s = 128; s > 0; s /= 2) {
        XDEV_FOR_ITEMS_BELOW(s) {
            int t = xdev_local_id(0);
            part[t] += part[t + s];
        }
        xdev_block_sync();
    }
    XDEV_FOR_ITEMS_BELOW(1) {
        partial[xdev_group_id(0)] = part[0];
    }
}
