/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_math.h - the CPU backend's optional BLAS and FFT tables
 * (cpu_blas.c over OpenBLAS, cpu_fft.c over FFTW3), registered in
 * cpu_backend.c. Both enqueue their work as host functions on the CPU
 * stream, so it runs on the stream's worker in stream order. */
#ifndef XDEV_CPU_MATH_H
#define XDEV_CPU_MATH_H

#include "xdev/backend.h"

extern const xdev_blas_vtable_t xdev_cpu_blas_vtable;
extern const xdev_fft_vtable_t xdev_cpu_fft_vtable;
extern const xdev_rng_vtable_t xdev_cpu_rng_vtable;   /* cpu_rng.c */
extern const xdev_ops_vtable_t xdev_cpu_ops_vtable;   /* cpu_ops.c */
extern const xdev_prim_vtable_t xdev_cpu_prim_vtable; /* cpu_primitives.c */
/* The prim table's sort slots (cpu_prim_sort.c). */
xdev_status_t xdev_cpu_prim_sort(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t xdev_cpu_prim_segmented_sort(const xdev_prim_desc_t *d, size_t *temp_bytes);

/* cpu_fill.c: count elements at dst of the pattern (size bytes: 1, 2, 4, 8
 * or 16), part of a fill of `total` bytes in all (which picks the stores). */
void xdev_cpu_fill_part(void *dst, const unsigned char *pattern, size_t size, size_t count,
                        size_t total);

/* cpu_prim_select.c: the prim slots of histogram and the compactions. */
xdev_status_t xdev_cpu_prim_histogram_even(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t xdev_cpu_prim_select_flagged(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t xdev_cpu_prim_select_compare(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t xdev_cpu_prim_unique(const xdev_prim_desc_t *d, size_t *temp_bytes);
xdev_status_t xdev_cpu_prim_run_length_encode(const xdev_prim_desc_t *d, size_t *temp_bytes);

#endif
