/* SPDX-License-Identifier: Apache-2.0 */
/* kernel_internal.h - modules and kernels as the core keeps them.
 *
 * A module is the code of one bundle (or one native image) loaded for one
 * device: up to XDEV_MODULE_MAX_NATIVE backend modules (one per image the
 * backend took), and the host signatures when known. A kernel handle is a
 * function found in it, with the attributes launches are checked against.
 * Both are handle-arena objects, so a stale handle (an unloaded module's
 * kernel) is reported, not dereferenced. */
#ifndef XDEV_CORE_KERNEL_INTERNAL_H
#define XDEV_CORE_KERNEL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/handle_arena.h"
#include "runtime/enqueue.h"
#include "runtime/registry.h"
#include "xdev/kernel.h"

#define XDEV_MODULE_MAX_NATIVE 32

struct xdev_kernel;

struct xdev_module {
    xdev_handle_header_t hdr;
    xdev_device_record_t *rec;
    xdev_backend_t *be;
    xdev_device_t device;
    const xdev_kernel_sig_t *const *sigs; /* NULL: a native image without signatures */
    int nsigs;
    void *dl; /* a host library's handle (XDEV_IMAGE_HOST_LIBRARY) */
    int nnative;
    void *native[XDEV_MODULE_MAX_NATIVE];
    xdev_launch_limits_t limits;
    _Atomic int active;   /* launches between their checks and their enqueue */
    _Atomic bool closing; /* unload has begun: no new launch */
    pthread_mutex_t lock; /* kernels */
    struct xdev_kernel *kernels;
    char name[64];
};

struct xdev_kernel {
    xdev_handle_header_t hdr;
    struct xdev_module *module;
    void *function;               /* the backend's */
    const xdev_kernel_sig_t *sig; /* NULL when nothing describes the parameters */
    xdev_kernel_attributes_t attrs;
    /* sig for a kernel described only by its image (a GPU kernel compiled at
     * run time, xdev/support/kernel_sig.h): sizes in attrs, no entries */
    xdev_kernel_sig_t image_sig;
    uint8_t image_kinds[XDEV_KERNEL_MAX_PARAMS];
    /* bit i: parameter i is a pointer checked at launch (a kernel with a
     * signature; XDEV_KERNEL_MAX_PARAMS fits) */
    uint32_t pointer_params;
    int max_threads;        /* min(device limit, kernel's own) */
    const char *trace_name; /* the name, interned: trace records outlive the module */
    struct xdev_kernel *next;
    char name[128];
};

extern xdev_handle_arena_t xdev_module_arena;
extern xdev_handle_arena_t xdev_kernel_arena;
/* The kernel arena's magic and slot size, for launch.c's inline handle
 * check (xdev_handle_is_live_as). */
#define XDEV_KERNEL_MAGIC 0x4b45524eu /* "KERN" */
#define XDEV_KERNEL_SLOT ((sizeof(struct xdev_kernel) + 63) / 64 * 64)

/* A new module for the device with nothing loaded yet (XDEV_ERROR_NOT_SUPPORTED
 * when its backend runs no kernels). */
xdev_status_t xdev_kmodule_new(xdev_device_t device, const char *name, struct xdev_module **out);
/* Offer one image to the module's backend: kept (*taken), skipped (not its
 * kind), or a failure. */
xdev_status_t xdev_kmodule_offer(struct xdev_module *m, const xdev_kernel_image_t *img,
                                 bool *taken);
/* Open a host kernel library for m (dlopen; m keeps the handle and its
 * table): *out is the HOST_TABLE image to offer. */
xdev_status_t xdev_kmodule_open_library(struct xdev_module *m, const char *path,
                                        xdev_kernel_image_t *out);
/* The end of a load: *out = m, or (st failed) m released and the failure's
 * message prefixed with the device. */
xdev_status_t xdev_kmodule_finish(struct xdev_module *m, xdev_status_t st, xdev_module_t *out);

/* XDEV_LAUNCH_CHECKS: true (default "full") checks pointer arguments
 * against the allocator's records; "basic" skips that. Set by module.c's
 * initialisation step; read inline by every launch. */
extern bool xdev_kernel_pointer_checks;
static inline bool xdev_kernel_check_pointers(void) {
    return xdev_kernel_pointer_checks;
}

/* A launch that is another op to the enqueue path (runtime/enqueue.h): an
 * element-wise kernel, whose operands' extents its caller knows. */
typedef struct xdev_launch_as {
    xdev_op_kind_t kind;
    const char *name; /* the op's name for the sanitizer and observers */
    const xdev_op_use_t *uses;
    int nuses;
} xdev_launch_as_t;

/* xdev_launch_kernel without the public prefix; as NULL: a kernel launch
 * (operands from the kernel's signature), else the op `as` describes. */
xdev_status_t xdev_core_launch_kernel(xdev_kernel_t k, const xdev_launch_config_t *config,
                                      const xdev_arg_t *args, int nargs,
                                      const xdev_launch_as_t *as);

/* compile_report.c: the clock a compile is timed by (CLOCK_MONOTONIC ns,
 * the tracer's); forget the thread's last result (a compile begins); report
 * a compile that reached its cache lookup (xdev_compile_last_info, XDEV_LOG,
 * the trace). `key`: the image's cache key, "" when none. */
uint64_t xdev_kcompile_now(void);
void xdev_kcompile_forget(void);
void xdev_kcompile_report(const char *name, const char *backend, int index,
                          xdev_compile_cache_t cache, bool stored, xdev_status_t status,
                          uint64_t begin_ns, const char *key);

#endif
