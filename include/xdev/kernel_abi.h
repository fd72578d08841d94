/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/kernel_abi.h - what a kernel compiled for the host shares with the
 * backend that runs it (the CPU backend, or any host-memory backend).
 *
 * xdev/kernel_lang.h turns each XDEV_KERNEL of a kernel file compiled by the
 * host C compiler into an xdev_kernel_sig_t: the kernel's name, its
 * parameters (size, and whether each is a pointer, so launches can check
 * pointer arguments on every backend) and two entry points - `block` runs
 * every work-item of one block in a loop (for an XDEV_KERNEL_BLOCK kernel, a
 * loop per region between its barriers), `item` runs one work-item (a fiber
 * per work-item, for kernels that use xdev_barrier()). The GPU images of the
 * same file carry the sizes and kinds too (xdev/support/kernel_sig.h), for
 * kernels compiled at run time; where both exist the host table decides.
 *
 * Versioned with the kernel table of the backend ABI (xdev/backend.h):
 * fields are only appended. */
#ifndef XDEV_KERNEL_ABI_H
#define XDEV_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most parameters a kernel takes (the dialect's limit, and the launch API's). */
#define XDEV_KERNEL_MAX_PARAMS 24

/* xdev_kernel_sig_t.param_kinds: XDEV_KPARAM_VALUE, _POINTER, _READONLY, _FLOAT, _DOUBLE */
#include "xdev/support/kernel_sig.h"

/* xdev_kernel_sig_t.flags */
#define XDEV_KERNEL_USES_BARRIER (1u << 0) /* declared with XDEV_KERNEL_SYNC: fibers */
#define XDEV_KERNEL_REGIONS (1u << 1)      /* declared with XDEV_KERNEL_BLOCK: loops */

/* Most work-items in a block a host backend runs (a block-form kernel keeps
 * each XDEV_PRIVATE in an array of this many). */
#define XDEV_KERNEL_MAX_BLOCK_ITEMS 1024

/* Shared memory per block (static + dynamic) a host backend gives by
 * default, as CUDA does; a block-form kernel's XDEV_SHARED arrays up to
 * this size are locals of its body on the CPU (kernel_lang.h). */
#define XDEV_KERNEL_DEFAULT_SHARED_BYTES (48u * 1024u)

/* xdev_kctx_t.fault codes: why a host-run kernel stopped. */
#define XDEV_KFAULT_TRAP 1    /* xdev_trap() */
#define XDEV_KFAULT_BARRIER 2 /* xdev_barrier() in a kernel not declared XDEV_KERNEL_SYNC */
#define XDEV_KFAULT_SHARED 3  /* static shared memory over the block's limit */
#define XDEV_KFAULT_BARRIER_DIVERGE                                                                \
    4 /* some work-items of a block passed a barrier others never reached */
#define XDEV_KFAULT_SYNC_IN_REGION 5 /* xdev_block_sync() inside an XDEV_FOR_ITEMS region */

/* The state of one block as a host-run kernel sees it. The executor fills
 * it; the dialect's id functions read it. */
typedef struct xdev_kctx {
    int group[3];          /* this block's index in the grid */
    int block[3];          /* work-items per block, per dimension */
    int grid[3];           /* blocks per dimension */
    int in_region;         /* a block-form region is running (xdev_block_sync() there is a fault) */
    unsigned char *shared; /* the block's static shared memory */
    size_t reserved1;
    size_t shared_cap;    /* its size */
    void *dynamic_shared; /* the launch's dynamic shared bytes, for this block */
    /* xdev_barrier(): suspends this work-item until every work-item of the
     * block arrived (fiber mode); in loop mode it reports
     * XDEV_KFAULT_BARRIER. */
    void (*barrier)(struct xdev_kctx *ctx);
    /* Records a fault (XDEV_KFAULT_*): the launch fails, the stream's next
     * synchronisation reports it, the remaining blocks are skipped. */
    void (*fault)(struct xdev_kctx *ctx, int code);
    void *impl; /* the executor's */
} xdev_kctx_t;

typedef void (*xdev_kblock_fn)(xdev_kctx_t *ctx, void *const *args);
typedef void (*xdev_kitem_fn)(xdev_kctx_t *ctx, void *const *args, int lx, int ly, int lz);

/* One kernel, as its host compilation describes it. */
typedef struct xdev_kernel_sig {
    const char *name;
    xdev_kblock_fn block; /* every work-item of a block, in a loop */
    xdev_kitem_fn item;   /* one work-item */
    int nparams;
    uint32_t flags; /* XDEV_KERNEL_USES_BARRIER, XDEV_KERNEL_REGIONS */
    const uint32_t *param_sizes;
    const uint8_t *param_kinds;     /* XDEV_KPARAM_* */
    const char *const *param_names; /* as declared, for messages */
} xdev_kernel_sig_t;

/* Static shared memory for XDEV_SHARED: the same offset for every work-item
 * of a block (each starts from 0 in *used, a local of its own, and claims
 * the same sizes in order). A local rather than a context field, so that a
 * kernel without shared memory keeps no store per work-item and its block
 * loop vectorises. */
static inline void *xdev_kctx_shared_at(xdev_kctx_t *ctx, size_t *used, size_t bytes,
                                        size_t align) {
    size_t off = (*used + align - 1) & ~(align - 1);
    if (off + bytes > ctx->shared_cap) {
        ctx->fault(ctx, XDEV_KFAULT_SHARED);
        return NULL;
    }
    *used = off + bytes;
    return ctx->shared + off;
}

#ifdef __cplusplus
}
#endif
#endif
