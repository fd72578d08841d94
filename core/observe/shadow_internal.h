/* SPDX-License-Identifier: Apache-2.0 */
/* shadow_internal.h - the two halves of shadow execution (xdev/shadow.h):
 *
 * shadow_slots.c  the slots put in front of each backend's table when it
 *                 loads (runtime/hooks.h, backend-loaded hook): a device
 *                 allocation gets its mirror; a stream-ordered backend call
 *                 (copy, memset, fill, conversion, add, random fill, BLAS,
 *                 FFT, primitive, kernel launch) runs, then is recorded, with its arguments
 *                 copied, on the calling thread's pending list.
 * shadow_replay.c that pending list, and the replay of its records on the
 *                 mirrors with the CPU backend's own slots.
 * shadow.c        the settings, the enqueue observer (runtime/enqueue.h,
 *                 step 5: the op's pending records replayed, its written
 *                 operands compared) and the reports.
 *
 * Why the slots and not each call: the backend call is where an op's
 * arguments are typed the same for every op of a kind, whoever made it; the
 * shadow replays exactly what the backend was asked to do, and a call added
 * later is shadowed when it reaches a shadowed slot. Why step 5 for the
 * rest: there the op is whole (one per call however many slots it used), it
 * succeeded, its call site and written operands are known, and a capture's
 * records (which run at the graph's replay) can be dropped. */
#ifndef XDEV_CORE_SHADOW_INTERNAL_H
#define XDEV_CORE_SHADOW_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtime/enqueue.h"
#include "runtime/registry.h"
#include "xdev/dtype.h"
#include "xdev/shadow.h"

typedef enum {
    SH_COPY,
    SH_MEMSET,
    SH_FILL,
    SH_CONVERT,
    SH_ADD,
    SH_RNG,
    SH_GEMM,
    SH_VEC,
    SH_LAUNCH,
    SH_FFT,
    /* The primitives (xdev/primitives.h): u.prim, replayed through the CPU
     * backend's slot of the same name. They stay one run at the end, from
     * SH_REDUCE to SH_KIND_END: sh_kind_is_prim is that range, so a new
     * primitive goes after SH_RLE and a new kind of any other sort before
     * SH_REDUCE. */
    SH_REDUCE,
    SH_SCAN,
    SH_SORT,
    SH_SEGMENTED_SORT,
    SH_SEGMENTED_REDUCE,
    SH_HISTOGRAM,
    SH_SELECT, /* select_flagged (select_if runs on it) */
    SH_UNIQUE,
    SH_RLE,
    SH_SELECT_COMPARE, /* select_if's `in0 OP literal` (ABI 3.9) */
    SH_KIND_END        /* not a kind: one past the last primitive */
} sh_kind_t;

/* Ten primitives: a new one needs its slot in prim_fn, its detail in
 * prim_detail and its wrapper (shadow_compute.c), and a compaction its
 * place in xdev_shadow_prim_written's counted ones; then bump this. */
_Static_assert(SH_KIND_END - SH_REDUCE == 10, "a primitive kind was added or removed");

/* A primitive's record: the one test of that. The replay's dispatch
 * (shadow_compute.c, handed by shadow_replay.c's replay step every kind it
 * does not replay itself) and the reports (shadow.c, shadow_graph.c) ask
 * it, so there is no list of the primitives to miss one in. */
static inline bool sh_kind_is_prim(sh_kind_t kind) {
    return kind >= SH_REDUCE && kind < SH_KIND_END;
}

/* One backend call to replay. Pointers are the real device's; the replay
 * translates them to mirrors. */
typedef struct sh_rec {
    sh_kind_t kind;
    char detail[192]; /* what the op did, for reports */
    size_t elem;      /* bytes per element compared */
    xdev_dtype_t dtype;
    bool tolerant;          /* floating BLAS results: within the tolerance */
    double tol_scale;       /* the tolerance times this (> 1: a long reduction's) */
    const char *unmirrored; /* set when it cannot be replayed (why) */
    /* A host output (a copy to the host, a BLAS result on the host): the
     * replay writes scratch instead, compared with host_dst in step 5. */
    void *host_dst;
    void *scratch;
    size_t scratch_n;
    union {
        xdev_copy_desc_t copy;
        struct {
            void *dst;
            int value;
            size_t n;
        } memset;
        struct {
            void *dst;
            unsigned char pattern[16];
            size_t size, count;
        } fill;
        struct {
            void *dst;
            xdev_dtype_t dd;
            const void *src;
            xdev_dtype_t sd;
            size_t count;
        } convert;
        struct {
            void *dst;
            const void *src;
            xdev_dtype_t dtype;
            size_t count;
        } add;
        xdev_rng_fill_desc_t rng;
        xdev_blas_gemm_desc_t gemm;
        struct {
            xdev_blas_routine_t routine;
            xdev_blas_vec_desc_t d;
        } vec;
        struct {
            xdev_launch_desc_t d;
            void *shadow_fn;     /* the host build's function, NULL: none */
            unsigned char *heap; /* the argument bytes, copied */
        } launch;
        struct {
            xdev_fft_exec_desc_t d;
            void *plan;          /* the shadow device's plan, NULL: none */
            size_t work_size;    /* its work bytes */
            struct sh_plan *ref; /* keeps the plan (shadow_compute.c) */
        } fft;
        xdev_prim_desc_t prim;
    } u;
} sh_rec_t;

/* Records one thread can hold between its op's backend calls and step 5. */
#define SH_PENDING 8

typedef struct sh_pending {
    int n;
    bool overflow;
    sh_rec_t recs[SH_PENDING];
} sh_pending_t;

/* The calling thread's pending records (shadow_replay.c). */
sh_pending_t *xdev_shadow_pending(void);
/* Free what the records hold and empty the list. */
void xdev_shadow_pending_clear(sh_pending_t *p);

/* One mirrored allocation: [base, base + size) of a backend's device. */
typedef struct sh_mirror {
    uintptr_t base;
    size_t size;
    unsigned char *mirror;
    xdev_device_type_t type;
    xdev_backend_device_t *ctx;
    bool host_memory; /* the host reads the device's bytes directly */
    /* Made while a capture was under way: its bytes are read before the next
     * operation outside any capture (a read during one, a blocking copy,
     * would invalidate the capture on CUDA). */
    bool unread;
    /* COMPARE=sync: written since the last comparison, and by what. */
    bool dirty;
    const void *last_stream; /* the writer's stream (xdev_stream_t) */
    char last_op[64], last_detail[192], last_site[256];
} sh_mirror_t;

/* g_lock of shadow_slots.c guards the mirrors and the replays. */
void xdev_shadow_lock(void);
void xdev_shadow_unlock(void);
/* The mirror holding p (lock held), or NULL. */
sh_mirror_t *xdev_shadow_find(const void *p);
/* Call fn on every mirror (lock held). */
void xdev_shadow_each(void (*fn)(sh_mirror_t *m, void *user), void *user);

/* Replay the thread's records on the mirrors, in order (lock held); a
 * record that could not be replayed gets its reason in unmirrored
 * (shadow_replay.c). */
void xdev_shadow_replay(sh_pending_t *p);

/* The device's bytes [p, p + n) of mirror m into out (lock held; the work
 * writing them has finished). False when the backend failed. */
bool xdev_shadow_read_device(const sh_mirror_t *m, const void *p, size_t n, void *out);

/* Wait for a stream of the real device (its native handle). */
void xdev_shadow_wait_stream(xdev_device_record_t *rec, void *native);

/* shadow_slots.c's helpers for shadow_compute.c (xdev_shadow_pend:
 * shadow_replay.c's). */
/* The backend's own table (before the shadow's slots) of a device context. */
const xdev_backend_api_t *xdev_shadow_orig(const xdev_backend_device_t *ctx);
/* A new record on the thread's list, or NULL (the op is then reported as
 * not mirrored). */
sh_rec_t *xdev_shadow_pend(sh_kind_t kind, size_t elem, xdev_dtype_t dtype);
/* The mirror of device pointer p (lock held), or NULL. */
void *xdev_shadow_to_mirror(const void *p);
/* The shadow device: the CPU backend's own table, its device, the
 * shadow's stream (lock held; false without a CPU backend). */
bool xdev_shadow_device(const xdev_backend_api_t **api, xdev_backend_device_t **dev, void **stream);

/* shadow_compute.c: kernels, FFT and the primitives. Replay one of their
 * records on the shadow device (lock held); put their slots in front of
 * api's (the backend of type t loading). */
xdev_status_t xdev_shadow_replay_compute(sh_rec_t *r, const xdev_backend_api_t *c,
                                         xdev_backend_device_t *dv, void *s);
void xdev_shadow_install_compute(xdev_backend_api_t *api, int t);
/* What a record holds of shadow_compute.c's (a plan's reference), released
 * (lock not held). */
void xdev_shadow_record_release(sh_rec_t *r);
/* A primitive's written operand [p, p + len) in mirror m, before it is
 * compared (lock held, the op finished): h becomes how with the operand's
 * element size, and the bytes to compare are returned. The outputs of a
 * compaction end at the count the device wrote (compared before them: the
 * first operand, which the mirror then holds); past it they are
 * unspecified, not compared, and the mirror takes the device's bytes. */
size_t xdev_shadow_prim_written(const sh_rec_t *how, sh_mirror_t *m, const void *p, size_t len,
                                sh_rec_t *h);

/* In a shadow slot before the backend call: the refusal of
 * XDEV_SHADOW_ACTION=stop after a difference. */
#define SH_STOPPED_CHECK()                                                                         \
    do {                                                                                           \
        if (atomic_load_explicit(&xdev_shadow_stopped, memory_order_acquire))                      \
            return xdev_shadow_stop_status();                                                      \
        xdev_shadow_read_unread();                                                                 \
    } while (0)

/* How operand u of the op `how` recorded is compared: how itself, or for
 * a kernel's pointer to float or double (u->fp) a copy in *tmp comparing
 * its elements as that dtype within the tolerance. */
const sh_rec_t *xdev_shadow_use_rec(const sh_rec_t *how, const xdev_op_use_t *u, sh_rec_t *tmp);

/* The mirrors made during a capture take the device's bytes, once no
 * capture is under way (each wrapped call starts with it: before its op
 * writes them). */
void xdev_shadow_read_unread(void);

/* An event recorded now on a real stream (lock held; NULL on failure),
 * and whether the stream has reached it (waiting for it when wait); once
 * reached the event is gone. */
void *xdev_shadow_mark(xdev_device_record_t *rec, void *native);
bool xdev_shadow_mark_reached(xdev_device_record_t *rec, void *ev, bool wait);

/* A copy of [p, p + n) of mirror m's device enqueued on a real stream now,
 * into staging memory (lock held; NULL when it cannot be made); and, once
 * the stream passed it, the staging read into out (NULL: not read) and
 * freed. */
void *xdev_shadow_stage(xdev_device_record_t *rec, void *native, const sh_mirror_t *m,
                        const void *p, size_t n);
void xdev_shadow_unstage(const sh_mirror_t *m, void *staging, void *out, size_t n);

/* shadow_collective.c: the outputs of a collective, which the shadow does
 * not replay, taken into the mirrors in stream order (lock held). Deferred
 * ranges whose stream passed them are applied, those this op uses (uses[0..
 * n)) moved into out, to be waited for without the lock (returns how many);
 * a moved range applied; a collective's written ranges (and those of the
 * earlier ones it waited for that had no staging) deferred - false when
 * there is no room (the caller then waits); and, on the hook of a group's
 * end, the ranges its collectives wrote staged behind them. */
#define SH_DEFERRED 64
typedef struct {
    xdev_device_record_t *rec;
    void *mark;
    const void *p;
    size_t n;
    void *staging;     /* the bytes, taken in stream order; NULL: read the device's */
    sh_mirror_t where; /* the staging's device (type, context, host_memory) */
} sh_deferred_t;
int xdev_shadow_settle(const xdev_op_use_t *uses, int n, sh_deferred_t *out);
void xdev_shadow_apply_deferred(const sh_deferred_t *e);
bool xdev_shadow_defer(const xdev_enqueue_t *q, const xdev_op_use_t *uses, int n,
                       const sh_deferred_t *wait, int nwait);
void xdev_shadow_group_ended(void); /* takes the lock */
void xdev_shadow_thread_exit(void); /* a thread exiting inside a group; takes the lock */

/* shadow.c's comparisons, for shadow_graph.c (lock held). */
typedef struct {
    size_t lo, hi;
} span_t;
/* [p, p + n) clipped to its mirror; false when p is not mirrored. */
bool xdev_shadow_clip(const void *p, size_t n, sh_mirror_t **m, size_t *len);
/* The device's bytes of [p, p + n) copied into the mirror. */
void xdev_shadow_resync(sh_mirror_t *m, const void *p, size_t n);
/* The element-aligned span of mirror bytes that differ from before. */
span_t xdev_shadow_written_span(const unsigned char *sh, const unsigned char *before, size_t n,
                                const sh_rec_t *how);
/* Compare the device's [p, p + n) with m's mirror (only span of it when
 * before is set), report a difference as q's (its name, detail, the call
 * site frames), and let the mirror take the device's bytes; true when they
 * differed. */
bool xdev_shadow_check_range(const xdev_enqueue_t *q, sh_mirror_t *m, const void *p, size_t n,
                             const sh_rec_t *how, const unsigned char *before, const span_t *span,
                             const char *detail, bool last_writer, void *const *frames,
                             int nframes);
bool xdev_shadow_check_host(const xdev_enqueue_t *q, const sh_rec_t *r, void *const *frames,
                            int nframes);
/* "not mirrored", once per call and reason. */
void xdev_shadow_report_unmirrored(const xdev_enqueue_t *q, const char *detail, const char *why,
                                   void *const *frames, int nframes);

/* shadow_graph.c: a capture's ops (their records, operands and call sites)
 * kept for its graph, taking p's records (lock not held); and a replay of
 * that graph replayed on the mirrors op by op and compared (lock held; it
 * waits for the stream without it). False when the graph's ops cannot be
 * replayed: *why says why (the caller copies its outputs). */
void xdev_shadow_graph_record(const xdev_enqueue_t *q, const xdev_op_use_t *uses, int n,
                              sh_pending_t *p);
bool xdev_shadow_graph_replay(const xdev_enqueue_t *q, sh_pending_t *p, void *const *frames,
                              int nframes, const char **why);

/* Settings (shadow.c). */
extern bool xdev_shadow_on;
extern _Atomic bool xdev_shadow_stopped;
/* The refusal while stopped (sets the thread's message). */
xdev_status_t xdev_shadow_stop_status(void);

/* Foreign memory registered (added) or given back (runtime/hooks.h). */
void xdev_shadow_foreign(xdev_device_record_t *rec, void *ptr, size_t bytes,
                         struct xdev_stream *stream, bool added);

/* Put the shadow's slots in front of be's (the backend-loaded hook). */
void xdev_shadow_backend_loaded(xdev_backend_t *be);

#endif
