/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/kernel_lang.h - the kernel dialect: one kernel file, in a small C
 * dialect, compiles unchanged with nvcc (CUDA), hipcc (HIP) and the host C
 * compiler (the CPU backend). xdev_add_kernels() in CMake does the three
 * compilations and embeds the results; xdev/kernel.h loads and launches.
 *
 *   #include <xdev/kernel_lang.h>
 *
 *   XDEV_KERNEL(saxpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a),
 *               XDEV_PTR(const float, x), XDEV_PTR(float, y)) {
 *       long i = xdev_global_id(0);
 *       if (i < n) y[i] = a * x[i] + y[i];
 *   }
 *
 * Declaring: XDEV_KERNEL(name, params...) for a kernel without barriers;
 * XDEV_KERNEL_BLOCK(name, params...) for one whose work-items meet at
 * barriers, written as regions (below); XDEV_KERNEL_SYNC(name, params...)
 * for a barrier kernel written as one work-item's program calling
 * xdev_barrier() (on GPUs the three are the same; on the CPU an XDEV_KERNEL
 * runs a block as one loop over its work-items, an XDEV_KERNEL_BLOCK a loop
 * per region - as fast as that loop - and an XDEV_KERNEL_SYNC each
 * work-item as a fiber, switching at every barrier: 20-250x slower; a
 * barrier in a kernel not declared SYNC fails the launch). Each parameter is XDEV_PARAM(type, name)
 * (passed by value: integers, floats, structs of them) or XDEV_PTR(type, name)
 * (`type *name`, device memory: xdev checks it at launch); a kernel without
 * parameters says XDEV_NO_PARAMS. At most XDEV_KERNEL_MAX_PARAMS (24).
 *
 * In a kernel body:
 *   xdev_global_id(d), xdev_global_size(d)     long, d = 0, 1, 2
 *   xdev_local_id(d), xdev_local_size(d)       int: within the block
 *   xdev_group_id(d), xdev_num_groups(d)       int: the block, the grid
 *   xdev_barrier()                             every work-item of the block
 *   XDEV_SHARED(type, name, count);            block-shared array (a pointer on the CPU)
 *   XDEV_DYNAMIC_SHARED(type, name);           the launch's dynamic shared bytes
 *   xdev_trap()                                stop the kernel: the launch fails
 * The block form - the body runs once per block; what the work-items do
 * is in regions, and the regions meet at xdev_block_sync():
 *
 *   XDEV_KERNEL_BLOCK(block_sum, XDEV_PARAM(int, n), XDEV_PTR(const int, x),
 *                     XDEV_PTR(long long, out)) {
 *       XDEV_SHARED(long long, part, 256);       // block level: before regions
 *       XDEV_FOR_ITEMS {                         // every work-item
 *           long i = xdev_global_id(0);
 *           part[xdev_local_id(0)] = i < n ? x[i] : 0;
 *       }
 *       xdev_block_sync();                       // __syncthreads() on GPUs
 *       for (int s = xdev_local_size(0) / 2; s > 0; s /= 2) {  // block-uniform
 *           XDEV_FOR_ITEMS_BELOW(s) { part[xdev_local_id(0)] += part[xdev_local_id(0) + s]; }
 *           xdev_block_sync();
 *       }
 *       XDEV_FOR_ITEMS_BELOW(1) { out[xdev_group_id(0)] = part[0]; }
 *   }
 *
 *   XDEV_FOR_ITEMS { ... }          a region: every work-item of the block runs it
 *   XDEV_FOR_ITEMS_BELOW(count) {}  a region of the work-items with
 *                                   xdev_local_id(0) < count (all y, z)
 *   xdev_block_sync();              between regions: every work-item finished
 *                                   the last region before any starts the next
 *   XDEV_PRIVATE(type, name);       block level: a value per work-item that
 *                                   lives across regions; in a region it is
 *                                   xdev_priv(name) (an lvalue)
 * Rules of the form: ids (xdev_local_id, xdev_global_id) exist only inside
 * regions (elsewhere the host compilation fails); code between regions is
 * the block's and must be the same for every work-item (loops over levels
 * or tiles with block-uniform bounds: xdev_local_size, xdev_group_id,
 * parameters); XDEV_SHARED, XDEV_DYNAMIC_SHARED and XDEV_PRIVATE go at the
 * block level, never inside a region; inside a region a work-item leaves it
 * with `continue` (not `return` or `break`, which on the CPU would end the
 * region, or the block, for the others too) and calls neither
 * xdev_barrier() nor xdev_block_sync() (the CPU fails the launch); a local of a region does not
 * survive the region (use XDEV_PRIVATE); regions without a xdev_block_sync() between them may run
 * in any interleaving on GPUs. On the CPU the floating-point environment (fesetround) is the
 * block's thread's, shared by the work-items; the fiber form keeps one per work-item.
 *
 * Anywhere (XDEV_DEVICE functions too): xdev_atomic_{add,min,max}_{i32,u32,
 * i64,u64,f32,f64} (return the old value),
 * xdev_atomic_cas_{u32,u64}, xdev_fence(), the C99 <math.h> functions
 * (sqrtf, expf, tanhf, fmaxf, ...), xdev_load_f16/bf16 and
 * xdev_store_f16/bf16 (uint16_t storage, rounding as xdev/support/half.h).
 *
 * The dialect's rules - what keeps one file valid C for the host compiler
 * and valid CUDA/HIP C++ for the device compilers:
 * - no calls to host functions (printf, malloc, the xdev API), no recursion,
 *   no function pointers, no variable-length arrays, no compound literals,
 *   no implicit conversion from void * (write the cast);
 * - no globals but constants (XDEV_CONSTANT type name[] = {...};);
 * - helper functions are XDEV_DEVICE; the ids, barriers and shared memory
 *   are used in the kernel body itself (pass ids to helpers as arguments);
 * - every work-item of a block reaches each xdev_barrier() (as on GPUs; on
 *   the CPU one that some skip fails the launch, not hangs);
 * - XDEV_SHARED gives an array on GPUs and a pointer on the CPU (a
 *   declaration and a check that returns when the block's shared memory is
 *   too small): do not take its sizeof, declare it where a statement may go;
 * - 64-bit doubles are fine everywhere xdev runs (f64 atomics need sm_60).
 * Kernel names are C symbols: unique across the files of one
 * xdev_add_kernels() target. */
#ifndef XDEV_KERNEL_LANG_H
#define XDEV_KERNEL_LANG_H

#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
#include "xdev/support/half.h" /* NVRTC and hiprtc have no <stdint.h>: half.h has the types */
#else
#include <stdint.h>
#endif

#include "xdev/support/kernel_sig.h"
#include "xdev/support/pp.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define XDEV_KERNEL_DEVICE_COMPILE 1
#else
#define XDEV_KERNEL_DEVICE_COMPILE 0
#endif

/* ---------------------------------------------------------------- parameters
 * A parameter is a tuple (kind, type, name); the macros below pick it apart. */
#define XDEV_PARAM(type, name) (V, type, name)
#define XDEV_PTR(type, name) (P, type, name)
#define XDEV_NO_PARAMS (N, void, xdev_no_params_)

#define XDEV__K(k, t, n) k
#define XDEV__T(k, t, n) t
#define XDEV__N(k, t, n) n
#define XDEV__PICK(what, i, tup) XDEV_PP_CAT(what, XDEV__K tup)(i, XDEV__T tup, XDEV__N tup)

#if XDEV_KERNEL_DEVICE_COMPILE
/* ============================================================ CUDA and HIP */
/* hipcc, unlike nvcc, declares the device builtins only in hip_runtime.h;
 * hiprtc includes its own runtime header before the source. */
#if defined(__HIPCC__) && !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
#define XDEV__GDECL_V(i, t, n) t n
#define XDEV__GDECL_P(i, t, n) t *n
#define XDEV__GDECL_N(i, t, n) void
#define XDEV__GDECL(i, tup) XDEV__PICK(XDEV__GDECL_, i, tup)

/* The kernel's signature beside it in the image (xdev/support/kernel_sig.h):
 * the backend reads it where no host table describes the kernel. */
template <class T> struct xdev__is_const {
    enum { value = 0 };
};
template <class T> struct xdev__is_const<const T> {
    enum { value = 1 };
};
template <class T> struct xdev__fp_kind {
    enum { value = 0 };
};
template <> struct xdev__fp_kind<float> {
    enum { value = XDEV_KPARAM_FLOAT };
};
template <> struct xdev__fp_kind<const float> {
    enum { value = XDEV_KPARAM_FLOAT };
};
template <> struct xdev__fp_kind<double> {
    enum { value = XDEV_KPARAM_DOUBLE };
};
template <> struct xdev__fp_kind<const double> {
    enum { value = XDEV_KPARAM_DOUBLE };
};
#define XDEV__DSIG_V(i, t, n) (unsigned)sizeof(t),
#define XDEV__DSIG_P(i, t, n)                                                                      \
    ((unsigned)sizeof(t *) |                                                                       \
     ((XDEV_KPARAM_POINTER | (xdev__is_const<t>::value ? XDEV_KPARAM_READONLY : 0u) |              \
       (unsigned)xdev__fp_kind<t>::value)                                                          \
      << XDEV_KERNEL_SIG_KIND_SHIFT)),
#define XDEV__DSIG_N(i, t, n)
#define XDEV__DSIG(i, tup) XDEV__PICK(XDEV__DSIG_, i, tup)

#define XDEV_KERNEL(name, ...)                                                                     \
    extern "C" __device__ unsigned xdev_sig__##name[] = {                                          \
        XDEV_KERNEL_SIG_MAGIC, XDEV_PP_MAPS(XDEV__DSIG, __VA_ARGS__) 0u};                          \
    extern "C" __global__ void name(XDEV_PP_MAPC(XDEV__GDECL, __VA_ARGS__))
#define XDEV_KERNEL_SYNC(name, ...) XDEV_KERNEL(name, __VA_ARGS__)
/* The block form: each thread is one work-item, a region a block it runs
 * once (a one-pass loop, so `continue` leaves it as on the CPU), the
 * separator a barrier, a private a local of the thread. */
#define XDEV_KERNEL_BLOCK(name, ...) XDEV_KERNEL(name, __VA_ARGS__)
#define XDEV_FOR_ITEMS for (int xdev_once_ = 1; xdev_once_; xdev_once_ = 0)
#define XDEV_FOR_ITEMS_BELOW(count)                                                                \
    for (int xdev_once_ = (int)threadIdx.x < (count); xdev_once_; xdev_once_ = 0)
#define xdev_block_sync() __syncthreads()
#define XDEV_PRIVATE(type, name) type name
#define xdev_priv(name) name
#define XDEV_DEVICE static __device__ inline
#define XDEV_CONSTANT static __constant__ const

#define XDEV__DIM(v, d) ((int)((d) == 0 ? v.x : (d) == 1 ? v.y : v.z))
#define xdev_local_id(d) XDEV__DIM(threadIdx, d)
#define xdev_group_id(d) XDEV__DIM(blockIdx, d)
#define xdev_local_size(d) XDEV__DIM(blockDim, d)
#define xdev_num_groups(d) XDEV__DIM(gridDim, d)
#define xdev_barrier() __syncthreads()
#define XDEV_SHARED(type, name, count) __shared__ type name[count]
#define XDEV_DYNAMIC_SHARED(type, name)                                                            \
    extern __shared__ unsigned long long xdev_dynamic_smem_[];                                     \
    type *const name = (type *)xdev_dynamic_smem_
#if defined(__HIPCC__)
#define xdev_trap() __builtin_trap()
#else
#define xdev_trap() __trap()
#endif
#define xdev_fence() __threadfence()

XDEV_DEVICE int xdev_atomic_add_i32(int *p, int v) {
    return atomicAdd(p, v);
}
XDEV_DEVICE unsigned xdev_atomic_add_u32(unsigned *p, unsigned v) {
    return atomicAdd(p, v);
}
XDEV_DEVICE unsigned long long xdev_atomic_add_u64(unsigned long long *p, unsigned long long v) {
    return atomicAdd(p, v);
}
XDEV_DEVICE long long xdev_atomic_add_i64(long long *p, long long v) {
    return (long long)atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
XDEV_DEVICE float xdev_atomic_add_f32(float *p, float v) {
    return atomicAdd(p, v);
}
XDEV_DEVICE double xdev_atomic_add_f64(double *p, double v) {
    return atomicAdd(p, v);
}
XDEV_DEVICE int xdev_atomic_min_i32(int *p, int v) {
    return atomicMin(p, v);
}
XDEV_DEVICE int xdev_atomic_max_i32(int *p, int v) {
    return atomicMax(p, v);
}
XDEV_DEVICE unsigned xdev_atomic_min_u32(unsigned *p, unsigned v) {
    return atomicMin(p, v);
}
XDEV_DEVICE unsigned xdev_atomic_max_u32(unsigned *p, unsigned v) {
    return atomicMax(p, v);
}
#if defined(__HIPCC__) /* ROCm 5.2 has no signed 64-bit atomicMin/Max: a CAS loop */
#define XDEV__I64_MINMAX(op, cmp)                                                                  \
    XDEV_DEVICE long long xdev_atomic_##op##_i64(long long *p, long long v) {                      \
        unsigned long long *w = (unsigned long long *)p, old = *(volatile unsigned long long *)w;  \
        while ((long long)v cmp(long long) old) {                                                  \
            unsigned long long seen = atomicCAS(w, old, (unsigned long long)v);                    \
            if (seen == old) break;                                                                \
            old = seen;                                                                            \
        }                                                                                          \
        return (long long)old;                                                                     \
    }
XDEV__I64_MINMAX(min, <)
XDEV__I64_MINMAX(max, >)
#else
XDEV_DEVICE long long xdev_atomic_min_i64(long long *p, long long v) {
    return atomicMin(p, v);
}
XDEV_DEVICE long long xdev_atomic_max_i64(long long *p, long long v) {
    return atomicMax(p, v);
}
#endif
XDEV_DEVICE unsigned long long xdev_atomic_min_u64(unsigned long long *p, unsigned long long v) {
    return atomicMin(p, v);
}
XDEV_DEVICE unsigned long long xdev_atomic_max_u64(unsigned long long *p, unsigned long long v) {
    return atomicMax(p, v);
}
XDEV_DEVICE uint32_t xdev_atomic_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired) {
    return atomicCAS((unsigned *)p, expected, desired);
}
XDEV_DEVICE uint64_t xdev_atomic_cas_u64(uint64_t *p, uint64_t expected, uint64_t desired) {
    return atomicCAS((unsigned long long *)p, (unsigned long long)expected,
                     (unsigned long long)desired);
}
#define XDEV__FBITS(f) __float_as_uint(f)
#define XDEV__LOAD_U32(p) (*(volatile uint32_t *)(p))
#define XDEV__LOAD_U64(p) (*(volatile uint64_t *)(p))
#define XDEV__DBITS(d) ((uint64_t)__double_as_longlong(d))
#define XDEV__BITSD(u) __longlong_as_double((long long)(u))
#define XDEV__BITSF(u) __uint_as_float(u)

#else
/* ==================================================================== host */
#include <math.h>

#include "xdev/kernel_abi.h"

#define XDEV__UNUSED __attribute__((unused))
#define XDEV__HDECL_V(i, t, n) , t n XDEV__UNUSED
#define XDEV__HDECL_P(i, t, n) , t *n XDEV__UNUSED
#define XDEV__HDECL_N(i, t, n)
#define XDEV__HDECL(i, tup) XDEV__PICK(XDEV__HDECL_, i, tup)
#define XDEV__UNPACK_V(i, t, n) t n = *(t *)xa_[i];
#define XDEV__UNPACK_P(i, t, n) t *n = *(t **)xa_[i];
#define XDEV__UNPACK_N(i, t, n)
#define XDEV__UNPACK(i, tup) XDEV__PICK(XDEV__UNPACK_, i, tup)
#define XDEV__HNAME_V(i, t, n) , n
#define XDEV__HNAME_P(i, t, n) , n
#define XDEV__HNAME_N(i, t, n)
#define XDEV__HNAME(i, tup) XDEV__PICK(XDEV__HNAME_, i, tup)
#define XDEV__SIZE_V(i, t, n) (uint32_t)sizeof(t),
#define XDEV__SIZE_P(i, t, n) (uint32_t)sizeof(t *),
#define XDEV__SIZE_N(i, t, n)
#define XDEV__SIZE(i, tup) XDEV__PICK(XDEV__SIZE_, i, tup)
#define XDEV__KIND_V(i, t, n) XDEV_KPARAM_VALUE,
#ifdef __cplusplus
#define XDEV__KIND_P(i, t, n) XDEV_KPARAM_POINTER,
#else /* pointee const: t * and const t * are then one type */
#define XDEV__KIND_P(i, t, n)                                                                      \
    (uint8_t)(XDEV_KPARAM_POINTER |                                                                \
              (__builtin_types_compatible_p(t *, const t *) ? XDEV_KPARAM_READONLY : 0u) |         \
              (__builtin_types_compatible_p(t, float)    ? XDEV_KPARAM_FLOAT                       \
               : __builtin_types_compatible_p(t, double) ? XDEV_KPARAM_DOUBLE                      \
                                                         : 0u)),
#endif
#define XDEV__KIND_N(i, t, n)
#define XDEV__KIND(i, tup) XDEV__PICK(XDEV__KIND_, i, tup)
#define XDEV__STR(x) #x
#define XDEV__PNAME_V(i, t, n) XDEV__STR(n),
#define XDEV__PNAME_P(i, t, n) XDEV__STR(n),
#define XDEV__PNAME_N(i, t, n)
#define XDEV__PNAME(i, tup) XDEV__PICK(XDEV__PNAME_, i, tup)

/* The body's form, as a type whose size the host XDEV_SHARED reads (a
 * constant: the body gets a null pointer of it). */
typedef char (*xdev__form_item_t)[1];
typedef char (*xdev__form_block_t)[2];
/* Whether a host XDEV_SHARED array is a local of the body: in the block
 * form, up to the CPU's default limit per block (a larger one cannot fit;
 * it stays a pointer into the block's memory, whose claim faults). */
#define XDEV__SHARED_LOCAL(type, count)                                                            \
    (sizeof *xfm_ == 2 && sizeof(type) * (size_t)(count) <= XDEV_KERNEL_DEFAULT_SHARED_BYTES)

/* The signature table of kernel `name` (its block and item entry points
 * defined before): sizes and pointer-ness for launch checks. */
#define XDEV__HOST_TABLE(name, flags_, ...)                                                        \
    static const uint32_t name##__xdev_sizes[] = {XDEV_PP_MAPS(XDEV__SIZE, __VA_ARGS__) 0u};       \
    static const uint8_t name##__xdev_kinds[] = {XDEV_PP_MAPS(XDEV__KIND, __VA_ARGS__) 0u};        \
    static const char *const name##__xdev_names[] = {XDEV_PP_MAPS(XDEV__PNAME, __VA_ARGS__) ""};   \
    extern const xdev_kernel_sig_t name##__xdev_sig;                                               \
    const xdev_kernel_sig_t name##__xdev_sig = {                                                   \
        #name,                                                                                     \
        name##__xdev_block,                                                                        \
        name##__xdev_item,                                                                         \
        (int)(sizeof name##__xdev_sizes / sizeof(uint32_t)) - 1,                                   \
        (flags_),                                                                                  \
        name##__xdev_sizes,                                                                        \
        name##__xdev_kinds,                                                                        \
        name##__xdev_names};

/* The body becomes a static inline function of the block's context and the
 * work-item's local ids; `block` loops it over the block (inlined, so the
 * loop optimises like a hand-written one), `item` runs one work-item. The
 * signature table records sizes and pointer-ness for launch checks. */
#define XDEV__HOST_KERNEL(name, flags_, ...)                                                       \
    static inline void name##__xdev_body(                                                          \
        xdev_kctx_t *xk_ XDEV__UNUSED, size_t *xsu_ XDEV__UNUSED,                                  \
        xdev__form_item_t xfm_ XDEV__UNUSED, int xl0_ XDEV__UNUSED, int xl1_ XDEV__UNUSED,         \
        int xl2_ XDEV__UNUSED XDEV_PP_MAPS(XDEV__HDECL, __VA_ARGS__));                             \
    static void name##__xdev_block(xdev_kctx_t *xk_, void *const *xa_ XDEV__UNUSED) {              \
        XDEV_PP_MAPS(XDEV__UNPACK, __VA_ARGS__)                                                    \
        for (int z_ = 0; z_ < xk_->block[2]; z_++)                                                 \
            for (int y_ = 0; y_ < xk_->block[1]; y_++)                                             \
                for (int x_ = 0; x_ < xk_->block[0]; x_++) {                                       \
                    size_t used_ = 0;                                                              \
                    name##__xdev_body(xk_, &used_, 0, x_, y_,                                      \
                                      z_ XDEV_PP_MAPS(XDEV__HNAME, __VA_ARGS__));                  \
                }                                                                                  \
    }                                                                                              \
    static void name##__xdev_item(xdev_kctx_t *xk_, void *const *xa_ XDEV__UNUSED, int x_, int y_, \
                                  int z_) {                                                        \
        XDEV_PP_MAPS(XDEV__UNPACK, __VA_ARGS__)                                                    \
        size_t used_ = 0;                                                                          \
        name##__xdev_body(xk_, &used_, 0, x_, y_, z_ XDEV_PP_MAPS(XDEV__HNAME, __VA_ARGS__));      \
    }                                                                                              \
    XDEV__HOST_TABLE(name, flags_, __VA_ARGS__)                                                    \
    static inline void name##__xdev_body(                                                          \
        xdev_kctx_t *xk_ XDEV__UNUSED, size_t *xsu_ XDEV__UNUSED,                                  \
        xdev__form_item_t xfm_ XDEV__UNUSED, int xl0_ XDEV__UNUSED, int xl1_ XDEV__UNUSED,         \
        int xl2_ XDEV__UNUSED XDEV_PP_MAPS(XDEV__HDECL, __VA_ARGS__))

#define XDEV_KERNEL(name, ...) XDEV__HOST_KERNEL(name, 0u, __VA_ARGS__)
#define XDEV_KERNEL_SYNC(name, ...) XDEV__HOST_KERNEL(name, XDEV_KERNEL_USES_BARRIER, __VA_ARGS__)

/* The block form (XDEV_KERNEL_BLOCK): the body runs once per block, on the
 * block's thread, with the block's sizes as xb0_..xb2_; each region
 * (XDEV_FOR_ITEMS) is a loop nest over the block's work-items, x innermost,
 * that defines the local ids xl0_..xl2_ the id macros read (the body is
 * inlined three times: for 16x16 and 32x32 blocks, whose loops then have
 * constant bounds - measured 1.7x faster for a tiled SGEMM - and any other
 * shape); the separator xdev_block_sync() does nothing between regions,
 * since a region's loop ends when every work-item has run it (the context's
 * in_region, set while a region runs, makes one inside a region a fault).
 * A private is an array with a slot per work-item; a shared array is a
 * local of the body (see XDEV_SHARED).
 * `item` runs the whole block as work-item (0,0,0) and nothing as the
 * others, which is what a fiber executor would need. */
#define XDEV_KERNEL_BLOCK(name, ...)                                                               \
    static inline __attribute__((always_inline)) void name##__xdev_body(                           \
        xdev_kctx_t *xk_ XDEV__UNUSED, size_t *xsu_ XDEV__UNUSED,                                  \
        xdev__form_block_t xfm_ XDEV__UNUSED, int xb0_ XDEV__UNUSED, int xb1_ XDEV__UNUSED,        \
        int xb2_ XDEV__UNUSED XDEV_PP_MAPS(XDEV__HDECL, __VA_ARGS__));                             \
    static void name##__xdev_block(xdev_kctx_t *xk_, void *const *xa_ XDEV__UNUSED) {              \
        XDEV_PP_MAPS(XDEV__UNPACK, __VA_ARGS__)                                                    \
        size_t used_ = 0;                                                                          \
        const int b0_ = xk_->block[0], b1_ = xk_->block[1], b2_ = xk_->block[2];                   \
        xk_->in_region = 0; /* a region a work-item left by `return` is over */                    \
        if (b0_ == 16 && b1_ == 16 && b2_ == 1)                                                    \
            name##__xdev_body(xk_, &used_, 0, 16, 16, 1 XDEV_PP_MAPS(XDEV__HNAME, __VA_ARGS__));   \
        else if (b0_ == 32 && b1_ == 32 && b2_ == 1)                                               \
            name##__xdev_body(xk_, &used_, 0, 32, 32, 1 XDEV_PP_MAPS(XDEV__HNAME, __VA_ARGS__));   \
        else                                                                                       \
            name##__xdev_body(xk_, &used_, 0, b0_, b1_,                                            \
                              b2_ XDEV_PP_MAPS(XDEV__HNAME, __VA_ARGS__));                         \
    }                                                                                              \
    static void name##__xdev_item(xdev_kctx_t *xk_, void *const *xa_, int x_, int y_, int z_) {    \
        if ((x_ | y_ | z_) == 0) name##__xdev_block(xk_, xa_);                                     \
    }                                                                                              \
    XDEV__HOST_TABLE(name, XDEV_KERNEL_REGIONS, __VA_ARGS__)                                       \
    static inline __attribute__((always_inline)) void name##__xdev_body(                           \
        xdev_kctx_t *xk_ XDEV__UNUSED, size_t *xsu_ XDEV__UNUSED,                                  \
        xdev__form_block_t xfm_ XDEV__UNUSED, int xb0_ XDEV__UNUSED, int xb1_ XDEV__UNUSED,        \
        int xb2_ XDEV__UNUSED XDEV_PP_MAPS(XDEV__HDECL, __VA_ARGS__))

#define XDEV__REGION(first_x)                                                                      \
    for (int xin_ = (xk_->in_region = 1); xin_; xin_ = xk_->in_region = 0)                         \
        for (int xl2_ = 0; xl2_ < xb2_; xl2_++)                                                    \
            for (int xl1_ = 0; xl1_ < xb1_; xl1_++)                                                \
                for (int xl0_ = 0; xl0_ < (first_x); xl0_++)
#define XDEV_FOR_ITEMS XDEV__REGION(xb0_)
#define XDEV_FOR_ITEMS_BELOW(count) XDEV__REGION((count) < xb0_ ? (count) : xb0_)
/* Between regions nothing; inside one (a separator the CPU cannot honour:
 * the region is one loop) a fault, as a divergent barrier is. */
#define xdev_block_sync() (xk_->in_region ? xk_->fault(xk_, XDEV_KFAULT_SYNC_IN_REGION) : (void)0)
#define XDEV_PRIVATE(type, name) type name##__xdev_priv[XDEV_KERNEL_MAX_BLOCK_ITEMS]
#define xdev_priv(name) name##__xdev_priv[(xl2_ * xb1_ + xl1_) * xb0_ + xl0_]
#define XDEV_DEVICE static inline
#define XDEV_CONSTANT static const

#define xdev_local_id(d) ((d) == 0 ? xl0_ : (d) == 1 ? xl1_ : xl2_)
#define xdev_group_id(d) (xk_->group[d])
#define xdev_local_size(d) (xk_->block[d])
#define xdev_num_groups(d) (xk_->grid[d])
#define xdev_barrier() (xk_->barrier(xk_))
/* Over the block's shared memory, the fault is recorded (the launch fails at
 * the next synchronisation) and the work-item returns here: the body never
 * sees a NULL array.
 * In the block form the body runs once per block on one thread, so the
 * array is a local of the body (what the claim returns only decides
 * whether it fits): the compiler then knows it aliases no parameter, and
 * vectorises a region's loads from global memory into it, and its stores
 * from it, as it does an OpenMP loop's local tile (through a pointer it
 * kept each load and store scalar and in order: the tiled transpose
 * took 1.5x the OpenMP loop's time on one thread). The other forms share
 * the block's memory between work-items; their local is one unused slot. */
#define XDEV_SHARED(type, name, count)                                                             \
    type name##__xdev_local[XDEV__SHARED_LOCAL(type, count) ? (size_t)(count) : 1u]                \
        __attribute__((aligned(64))); /* as the block's memory: a cast to a vector type holds */   \
    void *const name##__xdev_at =                                                                  \
        xdev_kctx_shared_at(xk_, xsu_, sizeof(type) * (size_t)(count), XDEV__ALIGNOF(type));       \
    type *const name = name##__xdev_at == NULL           ? (type *)0                               \
                       : XDEV__SHARED_LOCAL(type, count) ? name##__xdev_local                      \
                                                         : (type *)name##__xdev_at;                \
    if (name == NULL) return
#define XDEV_DYNAMIC_SHARED(type, name) type *const name = (type *)xk_->dynamic_shared
#define xdev_trap()                                                                                \
    do {                                                                                           \
        xk_->fault(xk_, XDEV_KFAULT_TRAP);                                                         \
        return;                                                                                    \
    } while (0)
#define xdev_fence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#ifdef __cplusplus
#define XDEV__ALIGNOF(t) alignof(t)
#else
#define XDEV__ALIGNOF(t) _Alignof(t)
#endif

#define XDEV__HOST_ADD(suffix, type)                                                               \
    static inline type xdev_atomic_add_##suffix(type *p, type v) {                                 \
        return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);                                         \
    }
/* min / max: a compare-and-swap loop (GCC has no __atomic_fetch_min). */
#define XDEV__HOST_MINMAX(op, suffix, type, better)                                                \
    static inline type xdev_atomic_##op##_##suffix(type *p, type v) {                              \
        type old = __atomic_load_n(p, __ATOMIC_RELAXED);                                           \
        while (better(v, old) &&                                                                   \
               !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {  \
        }                                                                                          \
        return old;                                                                                \
    }
#define XDEV__LESS(a, b) ((a) < (b))
#define XDEV__MORE(a, b) ((a) > (b))
XDEV__HOST_ADD(i32, int)
XDEV__HOST_ADD(u32, unsigned)
XDEV__HOST_ADD(i64, long long)
XDEV__HOST_ADD(u64, unsigned long long)
XDEV__HOST_MINMAX(min, i32, int, XDEV__LESS)
XDEV__HOST_MINMAX(max, i32, int, XDEV__MORE)
XDEV__HOST_MINMAX(min, u32, unsigned, XDEV__LESS)
XDEV__HOST_MINMAX(max, u32, unsigned, XDEV__MORE)
XDEV__HOST_MINMAX(min, i64, long long, XDEV__LESS)
XDEV__HOST_MINMAX(max, i64, long long, XDEV__MORE)
XDEV__HOST_MINMAX(min, u64, unsigned long long, XDEV__LESS)
XDEV__HOST_MINMAX(max, u64, unsigned long long, XDEV__MORE)

static inline uint32_t xdev_atomic_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired) {
    __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
}
static inline uint64_t xdev_atomic_cas_u64(uint64_t *p, uint64_t expected, uint64_t desired) {
    __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
}
static inline uint32_t xdev_kfbits_(float f) {
    union {
        float f;
        uint32_t u;
    } c = {f};
    return c.u;
}
static inline float xdev_kbitsf_(uint32_t u) {
    union {
        uint32_t u;
        float f;
    } c = {u};
    return c.f;
}
#define XDEV__FBITS(f) xdev_kfbits_(f)
#define XDEV__LOAD_U32(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define XDEV__LOAD_U64(p) __atomic_load_n((p), __ATOMIC_RELAXED)
static inline uint64_t xdev_kdbits_(double d) {
    union {
        double d;
        uint64_t u;
    } c = {d};
    return c.u;
}
static inline double xdev_kbitsd_(uint64_t u) {
    union {
        uint64_t u;
        double d;
    } c = {u};
    return c.d;
}
#define XDEV__DBITS(d) xdev_kdbits_(d)
#define XDEV__BITSD(u) xdev_kbitsd_(u)
#define XDEV__BITSF(u) xdev_kbitsf_(u)

static inline float xdev_atomic_add_f32(float *p, float v) {
    uint32_t *w = (uint32_t *)p, old = __atomic_load_n(w, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(w, &old, xdev_kfbits_(xdev_kbitsf_(old) + v), 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return xdev_kbitsf_(old);
}
static inline double xdev_atomic_add_f64(double *p, double v) {
    uint64_t *w = (uint64_t *)p, old = __atomic_load_n(w, __ATOMIC_RELAXED), nw;
    for (;;) {
        union {
            uint64_t u;
            double d;
        } a = {old}, b;
        b.d = a.d + v;
        nw = b.u;
        if (__atomic_compare_exchange_n(w, &old, nw, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return a.d;
    }
}
#endif /* host */

/* f32 min / max on every target: a compare-and-swap loop on the bits (NaN
 * in memory is replaced by v, as fminf would). */
#define XDEV__FMINMAX(op, cmp)                                                                     \
    XDEV_DEVICE float xdev_atomic_##op##_f32(float *p, float v) {                                  \
        uint32_t *w = (uint32_t *)p;                                                               \
        uint32_t old = XDEV__LOAD_U32(w);                                                          \
        for (;;) {                                                                                 \
            float cur = XDEV__BITSF(old);                                                          \
            if (!(v cmp cur) && cur == cur) return cur;                                            \
            uint32_t seen = xdev_atomic_cas_u32(w, old, XDEV__FBITS(v));                           \
            if (seen == old) return cur;                                                           \
            old = seen;                                                                            \
        }                                                                                          \
    }
XDEV__FMINMAX(min, <)
XDEV__FMINMAX(max, >)
/* f64 min / max: the same loop on 64-bit words. */
#define XDEV__DMINMAX(op, cmp)                                                                     \
    XDEV_DEVICE double xdev_atomic_##op##_f64(double *p, double v) {                               \
        uint64_t *w = (uint64_t *)p;                                                               \
        uint64_t old = XDEV__LOAD_U64(w);                                                          \
        for (;;) {                                                                                 \
            double cur = XDEV__BITSD(old);                                                         \
            if (!(v cmp cur) && cur == cur) return cur;                                            \
            uint64_t seen = xdev_atomic_cas_u64(w, old, XDEV__DBITS(v));                           \
            if (seen == old) return cur;                                                           \
            old = seen;                                                                            \
        }                                                                                          \
    }
XDEV__DMINMAX(min, <)
XDEV__DMINMAX(max, >)

/* ------------------------------------------------------------ f16 and bf16 */
#include "xdev/support/half.h"
XDEV_DEVICE float xdev_load_f16(const uint16_t *p) {
    return xdev_f16_to_f32(*p);
}
XDEV_DEVICE void xdev_store_f16(uint16_t *p, float v) {
    *p = xdev_f32_to_f16(v);
}
XDEV_DEVICE float xdev_load_bf16(const uint16_t *p) {
    return xdev_bf16_to_f32(*p);
}
XDEV_DEVICE void xdev_store_bf16(uint16_t *p, float v) {
    *p = xdev_f32_to_bf16(v);
}

#define xdev_global_id(d) ((long)xdev_group_id(d) * xdev_local_size(d) + xdev_local_id(d))
#define xdev_global_size(d) ((long)xdev_num_groups(d) * xdev_local_size(d))

#endif
