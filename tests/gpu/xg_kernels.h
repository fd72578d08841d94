/* SPDX-License-Identifier: Apache-2.0 */
/* xg_kernels.h - tiny device kernels for the CUDA tests, JIT-compiled from
 * PTX through the runtime (cudaLibraryLoadData), so the tests need no nvcc:
 * a timed spin (to keep a stream busy), a fill, and a store to a bad address
 * (to raise a sticky error). Each launch checks its own launch error. */
#ifndef XG_KERNELS_H
#define XG_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

/* Load the kernels into the current context (once); false with a message. */
bool xg_kernels_load(char *why, size_t len);

/* Keep `stream` busy for about `ms` milliseconds. */
cudaError_t xg_spin(cudaStream_t stream, double ms);

/* Set n 32-bit words at p to v. */
cudaError_t xg_fill(cudaStream_t stream, uint32_t *p, uint32_t v, size_t n);

/* Store to address `bad` (an illegal address raises cudaErrorIllegalAddress). */
cudaError_t xg_bad_store(cudaStream_t stream, uintptr_t bad);

#endif
