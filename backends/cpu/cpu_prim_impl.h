/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_prim_impl.h - what the CPU backend's reduce and segmented
 * reduce (cpu_primitives.c) and its scan (cpu_prim_scan.c) share: the job,
 * the per-chunk partial, and the per-dtype kernels of the fixed order of
 * xdev/primitives.h (static inline: each file instantiates what it uses). */
#ifndef XDEV_CPU_PRIM_IMPL_H
#define XDEV_CPU_PRIM_IMPL_H
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"
#include "xdev/primitives.h"
#include "xdev/support/half.h"

#define CH ((size_t)XDEV_PRIM_CHUNK)
#define LANES XDEV_PRIM_LANES

/* One chunk's result: a value (of the accumulation type) and an index. */
typedef struct partial {
    union {
        float f;
        double d;
        uint32_t u32;
        uint64_t u64;
    } v;
    int64_t idx;
} partial_t;

typedef struct prim_job {
    int device;
    int op;
    bool exclusive;
    bool any_order; /* integer scan sums: exact in any order, so step 1 runs in vector lanes */
    xdev_dtype_t dtype;
    const void *in;
    void *out;
    size_t count, chunks;
    partial_t *part;        /* the core's temporary storage: `chunks` partials */
    const int64_t *offsets; /* segmented reduce: num_segments + 1 bounds */
    size_t num_segments;
} prim_job_t;

/* ------------------------------------------------------------ the types
 * TYPE(SUF, ACC, SUM, LOAD, STORE, ISNAN, Z, ONE, LO, HI, LT) makes the
 * kernels of one dtype: ACC the accumulation type, SUM the type + and *
 * run in (unsigned for integers: they wrap), Z the exact identity of +
 * (-0.0 for floats), LO/HI the lowest and largest values (the identities
 * of max and min), LT a strict less-than. */

/* NaN-propagating min and max that keep `a` on ties (a comes first). */
#define PICK_MIN(ISNAN, LT, a, b) (ISNAN(a) ? (a) : ISNAN(b) ? (b) : LT(b, a) ? (b) : (a))
#define PICK_MAX(ISNAN, LT, a, b) (ISNAN(a) ? (a) : ISNAN(b) ? (b) : LT(a, b) ? (b) : (a))

#define NO_NAN(x) 0
#define F_NAN(x) ((x) != (x))
#define LESS(a, b) ((a) < (b))

#define TYPE(SUF, ACC, SUM, FIELD, LOAD, STORE, ISNAN, Z, ONE, LO, HI)                             \
    static inline ACC load_##SUF(const void *in, size_t i) {                                       \
        return LOAD(in, i);                                                                        \
    }                                                                                              \
    /* Steps 1 and 2 of the reduce order: 32 lanes, then the shuffle-down tree. */                 \
    static inline ACC chunk_sum_##SUF(const void *in, size_t b, size_t e, bool prod) {             \
        SUM acc[LANES];                                                                            \
        for (int l = 0; l < LANES; l++)                                                            \
            acc[l] = prod ? (SUM)(ONE) : (SUM)(Z);                                                 \
        size_t full = b + (e - b) / LANES * LANES, i = b;                                          \
        if (prod) {                                                                                \
            for (; i < full; i += LANES)                                                           \
                for (int l = 0; l < LANES; l++)                                                    \
                    acc[l] = acc[l] * (SUM)load_##SUF(in, i + l);                                  \
            for (int l = 0; i + l < e; l++)                                                        \
                acc[l] = acc[l] * (SUM)load_##SUF(in, i + l);                                      \
            for (int w = LANES / 2; w > 0; w /= 2)                                                 \
                for (int l = 0; l < w; l++)                                                        \
                    acc[l] = acc[l] * acc[l + w];                                                  \
        } else {                                                                                   \
            for (; i < full; i += LANES)                                                           \
                for (int l = 0; l < LANES; l++)                                                    \
                    acc[l] = acc[l] + (SUM)load_##SUF(in, i + l);                                  \
            for (int l = 0; i + l < e; l++)                                                        \
                acc[l] = acc[l] + (SUM)load_##SUF(in, i + l);                                      \
            for (int w = LANES / 2; w > 0; w /= 2)                                                 \
                for (int l = 0; l < w; l++)                                                        \
                    acc[l] = acc[l] + acc[l + w];                                                  \
        }                                                                                          \
        return (ACC)acc[0];                                                                        \
    }                                                                                              \
    /* The first extremum of [b, e) (NaN first). */                                                \
    static inline partial_t chunk_ext_##SUF(const void *in, size_t b, size_t e, bool max) {        \
        ACC best = load_##SUF(in, b);                                                              \
        size_t at = b;                                                                             \
        for (size_t i = b + 1; i < e && !ISNAN(best); i++) {                                       \
            ACC v = load_##SUF(in, i);                                                             \
            if (ISNAN(v) || (max ? LESS(best, v) : LESS(v, best))) best = v, at = i;               \
        }                                                                                          \
        partial_t p;                                                                               \
        p.v.FIELD = best;                                                                          \
        p.idx = (int64_t)at;                                                                       \
        return p;                                                                                  \
    }                                                                                              \
    static inline ACC op_##SUF(int op, ACC a, ACC b) {                                             \
        if (op == XDEV_PRIM_SUM) return (ACC)((SUM)a + (SUM)b);                                    \
        if (op == XDEV_PRIM_MIN) return PICK_MIN(ISNAN, LESS, a, b);                               \
        return PICK_MAX(ISNAN, LESS, a, b);                                                        \
    }                                                                                              \
    static inline ACC identity_##SUF(int op) {                                                     \
        return op == XDEV_PRIM_SUM ? (ACC)(Z) : op == XDEV_PRIM_MIN ? (ACC)(HI) : (ACC)(LO);       \
    }                                                                                              \
    /* Scan step 1: the chunk's total, left to right from the identity. */                         \
    static inline ACC chunk_total_##SUF(const void *in, size_t b, size_t e, int op) {              \
        ACC r = identity_##SUF(op);                                                                \
        for (size_t i = b; i < e; i++)                                                             \
            r = op_##SUF(op, r, load_##SUF(in, i));                                                \
        return r;                                                                                  \
    }                                                                                              \
    /* Scan step 3: the chunk's outputs from its offset (reads before it writes: in place). */     \
    static inline void chunk_scan_##SUF(const prim_job_t *j, size_t b, size_t e, ACC r) {          \
        for (size_t i = b; i < e; i++) {                                                           \
            ACC v = load_##SUF(j->in, i);                                                          \
            if (j->exclusive) {                                                                    \
                STORE(j->out, i, i == 0 && j->op == XDEV_PRIM_SUM ? (ACC)0 : r);                   \
                r = op_##SUF(j->op, r, v);                                                         \
            } else {                                                                               \
                r = op_##SUF(j->op, r, v);                                                         \
                STORE(j->out, i, r);                                                               \
            }                                                                                      \
        }                                                                                          \
    }

#define LD_F32(p, i) (((const float *)(p))[i])
#define LD_F64(p, i) (((const double *)(p))[i])
#define LD_F16(p, i) xdev_f16_to_f32(((const uint16_t *)(p))[i])
#define LD_BF16(p, i) xdev_bf16_to_f32(((const uint16_t *)(p))[i])
#define LD_I32(p, i) (((const int32_t *)(p))[i])
#define LD_I64(p, i) (((const int64_t *)(p))[i])
#define ST_F32(p, i, v) (((float *)(p))[i] = (v))
#define ST_F64(p, i, v) (((double *)(p))[i] = (v))
#define ST_F16(p, i, v) (((uint16_t *)(p))[i] = xdev_f32_to_f16(v))
#define ST_BF16(p, i, v) (((uint16_t *)(p))[i] = xdev_f32_to_bf16(v))
#define ST_I32(p, i, v) (((int32_t *)(p))[i] = (v))
#define ST_I64(p, i, v) (((int64_t *)(p))[i] = (v))
#define LD_U32(p, i) (((const uint32_t *)(p))[i])
#define LD_U64(p, i) (((const uint64_t *)(p))[i])
#define ST_U32(p, i, v) (((uint32_t *)(p))[i] = (v))
#define ST_U64(p, i, v) (((uint64_t *)(p))[i] = (v))

TYPE(f32, float, float, f, LD_F32, ST_F32, F_NAN, -0.0f, 1.0f, -INFINITY, INFINITY)
TYPE(f16, float, float, f, LD_F16, ST_F16, F_NAN, -0.0f, 1.0f, -INFINITY, INFINITY)
TYPE(bf16, float, float, f, LD_BF16, ST_BF16, F_NAN, -0.0f, 1.0f, -INFINITY, INFINITY)
TYPE(f64, double, double, d, LD_F64, ST_F64, F_NAN, -0.0, 1.0, -INFINITY, INFINITY)
TYPE(i32, int32_t, uint32_t, u32, LD_I32, ST_I32, NO_NAN, 0, 1, INT32_MIN, INT32_MAX)
TYPE(i64, int64_t, uint64_t, u64, LD_I64, ST_I64, NO_NAN, 0, 1, INT64_MIN, INT64_MAX)
TYPE(u32, uint32_t, uint32_t, u32, LD_U32, ST_U32, NO_NAN, 0, 1, 0, UINT32_MAX)
TYPE(u64, uint64_t, uint64_t, u64, LD_U64, ST_U64, NO_NAN, 0, 1, 0, UINT64_MAX)

/* The scan's stream job (cpu_prim_scan.c): `arg` is a prim_job_t. */
void xdev_cpu_prim_scan_job(void *arg);

#endif /* XDEV_CPU_PRIM_IMPL_H */
