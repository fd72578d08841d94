/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_fft_scale.cu - multiplies an FFT's output by the
 * normalisation factor (xdev_fft_exec_desc_t.scale) on the exec's stream.
 *
 * Neither cuFFT nor hipFFT scales, so a small kernel walks the output
 * layout of the plan (batch x up to 3 dimensions, each with its pitch) and
 * scales each element's real parts in place; gaps between elements and
 * batches are not touched. Device code like cuda_ops.cu: nvcc builds it for
 * the CUDA plugin, hipcc (XC_VENDOR_HIP) for the HIP one. */
#include "vendor/xc_vendor.h" /* the device runtime (CUDA or HIP), outside extern "C" */
extern "C" {
#include "cuda_internal.h"
}

namespace {

/* The kernel's layout parameter (by value). */
struct scale_layout {
    long long dims[4];  /* batch, then the output's sizes right-aligned to rank 3 */
    long long pitch[4]; /* odist, then each dimension's pitch in elements */
};

template <typename T> __global__ void scale_kernel(T *p, scale_layout L, int parts, T s) {
    unsigned long long total = (unsigned long long)(L.dims[0] * L.dims[1] * L.dims[2] * L.dims[3]);
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < total; i += stride) {
        unsigned long long r = i;
        long long off = 0;
        for (int k = 3; k >= 0; k--) { /* element i's offset: its index in each dimension */
            unsigned long long q = r / (unsigned long long)L.dims[k];
            off += (long long)(r - q * (unsigned long long)L.dims[k]) * L.pitch[k];
            r = q;
        }
        for (int c = 0; c < parts; c++)
            p[off * parts + c] *= s;
    }
}

} // namespace

extern "C" xdev_status_t xc_fft_scale(const xdev_fft_plan_desc_t *d, void *out, double scale,
                                      cudaStream_t stream) {
    scale_layout L = {{d->batch, 1, 1, 1}, {d->odist, 0, 0, 0}};
    int off = XDEV_FFT_MAX_RANK - d->rank + 1; /* right-align the dimensions */
    long long pitch = d->ostride;
    for (int i = d->rank - 1; i >= 0; i--) {
        L.dims[off + i] = d->n[i];
        if (i == d->rank - 1 && d->type == XDEV_FFT_R2C) L.dims[off + i] = d->n[i] / 2 + 1;
        L.pitch[off + i] = pitch;
        pitch *= d->onembed[i];
    }
    int parts = d->type == XDEV_FFT_C2R ? 1 : 2; /* reals per output element */
    unsigned long long total = 1;
    for (int i = 0; i < 4; i++)
        total *= (unsigned long long)L.dims[i];
    unsigned blocks = (unsigned)((total + 255) / 256);
    if (blocks > 4096) blocks = 4096; /* grid-stride beyond */
    if (blocks == 0) return XDEV_SUCCESS;
    if (d->precision == XDEV_FFT_F32)
        scale_kernel<float><<<blocks, 256, 0, stream>>>((float *)out, L, parts, (float)scale);
    else
        scale_kernel<double><<<blocks, 256, 0, stream>>>((double *)out, L, parts, scale);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return xc_fail(err, "FFT output scaling kernel (by %g, %llu elements) on device %d", scale,
                       total, d->device->index);
    return XDEV_SUCCESS;
}
