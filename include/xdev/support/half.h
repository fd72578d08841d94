/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/support/half.h - IEEE 754 binary16 and bfloat16 <-> float
 * conversions, for any backend that computes f16/bf16 work in f32 (the CPU
 * backend's GEMM) and has to round exactly as GPUs do.
 *
 * float -> 16 bit rounds to nearest, ties to even, as hardware does:
 * overflow gives infinity, tiny values give subnormals or signed zero, NaN
 * stays NaN (quieted, payload kept where it fits). 16 bit -> float is exact. */
#ifndef XDEV_SUPPORT_HALF_H
#define XDEV_SUPPORT_HALF_H

#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
/* The run-time compilers (NVRTC, hiprtc: xdev_module_compile) have no C
 * headers: the fixed-width types are defined here, once (xdev/kernel_lang.h
 * includes this file first under them), as the builtin types the host's
 * <stdint.h> names on LP64 Linux; hiprtc's runtime header, included before
 * any source, already declares the 32- and 64-bit ones. memcpy: the one NVRTC
 * declares for device code (it has no __builtin_memcpy), clang's builtin
 * under hiprtc. Every other compilation (nvcc, hipcc, the host's C or C++)
 * takes the C headers and is unchanged. */
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
#if defined(__CUDACC_RTC__)
typedef int int32_t;
typedef unsigned int uint32_t;
#if defined(__LP64__)
typedef long int64_t;
typedef unsigned long uint64_t;
#else
typedef long long int64_t;
typedef unsigned long long uint64_t;
#endif
#define XDEV_HALF_MEMCPY memcpy
#else
#define XDEV_HALF_MEMCPY __builtin_memcpy
#endif
static_assert(sizeof(int8_t) == 1 && sizeof(uint8_t) == 1, "8-bit types");
static_assert(sizeof(int16_t) == 2 && sizeof(uint16_t) == 2, "16-bit types");
static_assert(sizeof(int32_t) == 4 && sizeof(uint32_t) == 4, "32-bit types");
static_assert(sizeof(int64_t) == 8 && sizeof(uint64_t) == 8, "64-bit types");
static_assert((int8_t)-1 < 0 && (int16_t)-1 < 0 && (int32_t)-1 < 0 && (int64_t)-1 < 0,
              "signed types");
static_assert((uint8_t)-1 > 0 && (uint16_t)-1 > 0 && (uint32_t)-1 > 0 && (uint64_t)-1 > 0,
              "unsigned types");
#else
#include <stdint.h>
#include <string.h>
#define XDEV_HALF_MEMCPY memcpy
#endif

/* Callable from kernels too (xdev/kernel_lang.h's f16/bf16 helpers). */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define XDEV_HALF_FN static __host__ __device__ inline
#else
#define XDEV_HALF_FN static inline
#endif

XDEV_HALF_FN uint32_t xdev_f32_bits(float f) {
    uint32_t x;
    XDEV_HALF_MEMCPY(&x, &f, sizeof x);
    return x;
}

XDEV_HALF_FN float xdev_bits_f32(uint32_t x) {
    float f;
    XDEV_HALF_MEMCPY(&f, &x, sizeof f);
    return f;
}

XDEV_HALF_FN uint16_t xdev_f32_to_f16(float f) {
    uint32_t x = xdev_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, or NaN made quiet */
        return (uint16_t)(sign | 0x7c00u |
                          (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {                                   /* below 2^-14: subnormal half */
        if (ax < 0x33000000u) return sign;                    /* <= 2^-25 rounds to zero */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14 .. 24: value = m * 2^(e-150) = r * 2^-24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++; /* may carry into the normal range */
        return (uint16_t)(sign | r);
    }
    uint32_t r = (ax >> 13) - (112u << 10); /* rebias the exponent (127 -> 15) */
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++; /* a carry may round up to inf */
    return (uint16_t)(sign | r);
}

XDEV_HALF_FN float xdev_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        if (m == 0) return xdev_bits_f32(sign);
        e = 113; /* subnormal m * 2^-24: normalise */
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        return xdev_bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
    }
    if (e == 31) return xdev_bits_f32(sign | 0x7f800000u | (m << 13));
    return xdev_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

XDEV_HALF_FN uint16_t xdev_f32_to_bf16(float f) {
    uint32_t x = xdev_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

XDEV_HALF_FN float xdev_bf16_to_f32(uint16_t h) {
    return xdev_bits_f32((uint32_t)h << 16);
}

#endif
