/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_kernel.c - the CPU backend's kernel table: limits,
 * modules of host kernels, launches, and how a kernel's fault reaches the
 * stream's next synchronize.
 *
 * A module is the host table the image points at (xdev_kernel_sig_t
 * pointers, what xdev_add_kernels generates); a function is a signature.
 * A launch copies its argument bytes and enqueues one host-function op; the
 * op runs the grid on the device's pool (cpu_pool.c) - or, for a single
 * block, a one-thread device or a small grid of a kernel that ran fast
 * alone, on the stream worker alone - and when a
 * kernel faulted (xdev_trap(), a barrier in a kernel not declared
 * XDEV_KERNEL_SYNC, shared memory over the limit, a divergent barrier, or a
 * SIGSEGV/SIGBUS/SIGFPE/SIGILL of the kernel's code, caught by
 * cpu_fiber.c's handlers, installed at the first launch), it leaves the
 * first fault on the stream. The stream's next synchronize, or
 * the device's, reports it once (XDEV_ERROR_LAUNCH_FAILURE) and clears it, as
 * CUDA reports an asynchronous launch failure at the next synchronisation.
 *
 * Configuration, read at init: XDEV_CPU_THREADS (threads that run one
 * device's kernels, the stream worker among them; default the online cores
 * shared evenly between the CPU devices). Shared memory per block is 48 KiB
 * (xdev_cpu_state.shared_limit; CUDA's default). */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_pool.h"

/* Upper bound of XDEV_CPU_THREADS. */
#define XDEV_CPU_MAX_THREADS 1024

/* ---------------------------------------------------------- configuration */

/* A decimal integer in [1, max], or -1. */
static long parse_count(const char *value, long max) {
    long n = 0;
    if (value[0] == '\0') return -1;
    for (const char *p = value; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') return -1;
        n = n * 10 + (*p - '0');
        if (n > max) return -1;
    }
    return n >= 1 ? n : -1;
}

xdev_status_t xdev_cpu_kernel_config(const char *(*get_env)(const char *), int count, int cores) {
    const char *threads = get_env("XDEV_CPU_THREADS");
    long n = cores / (count > 0 ? count : 1);
    if (threads != NULL) {
        n = parse_count(threads, XDEV_CPU_MAX_THREADS);
        if (n < 0)
            return xdev_cpu_error(XDEV_ERROR_ENV,
                                  "XDEV_CPU_THREADS='%s' is not a thread count (expected an "
                                  "integer 1..%d: threads that run each CPU device's kernels)",
                                  threads, XDEV_CPU_MAX_THREADS);
    }
    xdev_cpu_state.threads = n >= 1 ? (int)n : 1;
    xdev_cpu_state.shared_limit = XDEV_CPU_DEFAULT_SHARED_BYTES;
    return XDEV_SUCCESS;
}

/* ----------------------------------------------------------------- faults */

/* Stream worker, after the launch ran: keep its fault for the next
 * synchronize unless an earlier one is still unreported. */
static void stream_keep_fault(const xdev_cpu_launch_t *l, int code) {
    xdev_cpu_stream_t *s = xdev_cpu_stream_self(); /* a graph's replay stream */
    if (s == NULL) s = l->stream;
    pthread_mutex_lock(&s->mu);
    if (!atomic_load_explicit(&s->fault_pending, memory_order_relaxed)) {
        xdev_cpu_kfault_t *f = &s->fault;
        f->code = code;
        memcpy(f->block, l->fault_block, sizeof f->block);
        f->shared_cap = l->fault_cap;
        f->dynamic_shared = l->dynamic_shared;
        f->signo = l->fault_signo;
        f->sicode = l->fault_sicode;
        f->addr = l->fault_addr;
        snprintf(f->kernel, sizeof f->kernel, "%s", l->sig->name);
        atomic_store_explicit(&s->fault_pending, true, memory_order_release);
    }
    pthread_mutex_unlock(&s->mu);
}

/* "SIGSEGV writing or reading address 0x...: no memory is mapped there". */
static void describe_signal(const xdev_cpu_kfault_t *f, char *buf, size_t n) {
    const char *name = f->signo == SIGSEGV  ? "SIGSEGV"
                       : f->signo == SIGBUS ? "SIGBUS"
                       : f->signo == SIGFPE ? "SIGFPE"
                       : f->signo == SIGILL ? "SIGILL"
                                            : "signal";
    const char *why = "";
    if (f->signo == SIGSEGV && f->sicode == SEGV_MAPERR) why = ": no memory is mapped there";
    if (f->signo == SIGSEGV && f->sicode == SEGV_ACCERR) why = ": the memory there forbids it";
    if (f->signo == SIGBUS && f->sicode == BUS_ADRALN) why = ": misaligned";
    if (f->signo == SIGBUS && f->sicode == BUS_ADRERR) why = ": past the end of a mapped file";
    if (f->signo == SIGFPE && f->sicode == FPE_INTDIV) why = ": integer division by zero";
    if (f->signo == SIGFPE && f->sicode == FPE_INTOVF) why = ": integer overflow";
    if (f->signo == SIGSEGV && f->sicode == SI_KERNEL)
        snprintf(buf, n,
                 "SIGSEGV, a general-protection fault (an address outside the canonical "
                 "range, e.g. far past any allocation; the processor does not say which)");
    else if (f->signo == SIGSEGV || f->signo == SIGBUS)
        snprintf(buf, n, "%s accessing address %p%s", name, f->addr, why);
    else
        snprintf(buf, n, "%s at instruction address %p%s", name, f->addr, why);
}

xdev_status_t xdev_cpu_stream_take_fault(xdev_cpu_stream_t *s) {
    if (!atomic_load_explicit(&s->fault_pending, memory_order_acquire)) return XDEV_SUCCESS;
    pthread_mutex_lock(&s->mu);
    bool pending = atomic_load_explicit(&s->fault_pending, memory_order_relaxed);
    xdev_cpu_kfault_t f = s->fault;
    atomic_store_explicit(&s->fault_pending, false, memory_order_relaxed);
    pthread_mutex_unlock(&s->mu);
    if (!pending) return XDEV_SUCCESS; /* another synchronize reported it */
    const int d = s->device, *b = f.block;
    switch (f.code) {
    case XDEV_KFAULT_TRAP:
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s' called xdev_trap() (block (%d,%d,%d))", d,
                              f.kernel, b[0], b[1], b[2]);
    case XDEV_KFAULT_BARRIER:
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s' called xdev_barrier() but is declared "
                              "XDEV_KERNEL, not XDEV_KERNEL_SYNC (block (%d,%d,%d))",
                              d, f.kernel, b[0], b[1], b[2]);
    case XDEV_CPU_KFAULT_BARRIER_REGION:
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s' called xdev_barrier() but is declared "
                              "XDEV_KERNEL_BLOCK (its regions meet at xdev_block_sync() between "
                              "XDEV_FOR_ITEMS regions; xdev_barrier() needs XDEV_KERNEL_SYNC) "
                              "(block (%d,%d,%d))",
                              d, f.kernel, b[0], b[1], b[2]);
    case XDEV_KFAULT_SYNC_IN_REGION:
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s' called xdev_block_sync() inside an "
                              "XDEV_FOR_ITEMS region (it separates regions, at the block's "
                              "level) (block (%d,%d,%d))",
                              d, f.kernel, b[0], b[1], b[2]);
    case XDEV_KFAULT_SHARED:
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s' claimed more XDEV_SHARED memory than its "
                              "block has: %zu bytes (the device's %zu-byte limit less the "
                              "launch's %zu dynamic bytes, rounded to 64) (block (%d,%d,%d))",
                              d, f.kernel, f.shared_cap, xdev_cpu_state.shared_limit,
                              f.dynamic_shared, b[0], b[1], b[2]);
    case XDEV_KFAULT_BARRIER_DIVERGE:
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s': in block (%d,%d,%d) some work-items returned "
                              "while others waited at xdev_barrier() (every work-item of a block "
                              "must reach each barrier)",
                              d, f.kernel, b[0], b[1], b[2]);
    case XDEV_CPU_KFAULT_SIGNAL: {
        char what[160];
        describe_signal(&f, what, sizeof what);
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s' faulted in block (%d,%d,%d): %s (the launch's "
                              "later blocks did not run; the device and its streams go on)",
                              d, f.kernel, b[0], b[1], b[2], what);
    }
    case XDEV_CPU_KFAULT_NOMEM:
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: kernel '%s' could not run: no host memory for a worker's "
                              "shared memory or work-item stacks",
                              d, f.kernel);
    default:
        return xdev_cpu_error(XDEV_ERROR_LAUNCH_FAILURE,
                              "cpu:%d: kernel '%s' failed with an unknown fault code (%d) "
                              "(block (%d,%d,%d))",
                              d, f.kernel, f.code, b[0], b[1], b[2]);
    }
}

/* ---------------------------------------------------------------- modules */

typedef struct cpu_module {
    const xdev_kernel_sig_t *const *table;
    size_t count;
} cpu_module_t;

static xdev_status_t kernel_limits(xdev_cpu_device_t *dev, xdev_launch_limits_t *out) {
    (void)dev;
    memset(out, 0, sizeof *out);
    out->max_block[0] = XDEV_CPU_MAX_BLOCK_ITEMS;
    out->max_block[1] = XDEV_CPU_MAX_BLOCK_ITEMS;
    out->max_block[2] = 64;
    out->max_threads_per_block = XDEV_CPU_MAX_BLOCK_ITEMS;
    out->max_grid[0] = 2147483647u;
    out->max_grid[1] = 65535u;
    out->max_grid[2] = 65535u;
    out->max_shared_bytes = xdev_cpu_state.shared_limit;
    out->warp_size = 1;
    return XDEV_SUCCESS;
}

/* The table is the caller's (the bundle's static data, or a library the
 * core keeps open until unload); each entry is checked once here, so a
 * launch can trust it. */
static xdev_status_t kernel_module_load(xdev_cpu_device_t *dev, const xdev_kernel_image_t *image,
                                        void **module) {
    if (image->format != XDEV_IMAGE_HOST_TABLE)
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu:%d: kernel image format %d cannot run on the CPU (it takes "
                              "host kernel tables, XDEV_IMAGE_HOST_TABLE)",
                              dev->index, (int)image->format);
    const xdev_kernel_sig_t *const *table = image->data;
    if (table == NULL && image->size != 0)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d: host kernel table of %zu entries has no data", dev->index,
                              image->size);
    for (size_t i = 0; i < image->size; i++) {
        const xdev_kernel_sig_t *k = table[i];
        const char *why = k == NULL          ? "is NULL"
                          : k->name == NULL  ? "has no name"
                          : k->block == NULL ? "has no block entry point"
                          : k->item == NULL  ? "has no work-item entry point"
                          : k->nparams < 0 || k->nparams > XDEV_KERNEL_MAX_PARAMS
                              ? "has a parameter count out of 0..24"
                          : k->nparams > 0 && (k->param_sizes == NULL || k->param_kinds == NULL)
                              ? "has no parameter sizes or kinds"
                              : NULL;
        if (why != NULL)
            return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                                  "cpu:%d: host kernel table entry %zu of %zu%s%s%s %s", dev->index,
                                  i, image->size, k != NULL && k->name != NULL ? " ('" : "",
                                  k != NULL && k->name != NULL ? k->name : "",
                                  k != NULL && k->name != NULL ? "')" : "", why);
    }
    cpu_module_t *m = malloc(sizeof *m);
    if (m == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: cannot load a kernel module: out of host memory",
                              dev->index);
    m->table = table;
    m->count = image->size;
    *module = m;
    return XDEV_SUCCESS;
}

static xdev_status_t kernel_module_unload(xdev_cpu_device_t *dev, void *module) {
    (void)dev;
    free(module);
    return XDEV_SUCCESS;
}

static xdev_status_t kernel_get_function(xdev_cpu_device_t *dev, void *module, const char *name,
                                         void **function, xdev_kernel_attributes_t *attrs) {
    (void)dev;
    const cpu_module_t *m = module;
    for (size_t i = 0; i < m->count; i++) {
        const xdev_kernel_sig_t *k = m->table[i];
        if (strcmp(k->name, name) != 0) continue;
        *function = (void *)k;
        attrs->name = k->name;
        attrs->nparams = k->nparams;
        attrs->max_threads_per_block = XDEV_CPU_MAX_BLOCK_ITEMS;
        attrs->static_shared_bytes = 0; /* claimed as the kernel runs */
        attrs->uses_barrier = (k->flags & XDEV_KERNEL_USES_BARRIER) != 0;
        attrs->cpu_form = attrs->uses_barrier                     ? XDEV_KERNEL_FORM_FIBERS
                          : (k->flags & XDEV_KERNEL_REGIONS) != 0 ? XDEV_KERNEL_FORM_REGIONS
                                                                  : XDEV_KERNEL_FORM_LOOP;
        for (int p = 0; p < k->nparams; p++) {
            attrs->param_sizes[p] = k->param_sizes[p];
            attrs->param_kinds[p] = k->param_kinds[p] & XDEV_KPARAM_POINTER;
        }
        return XDEV_SUCCESS;
    }
    return XDEV_ERROR_NOT_FOUND; /* the core writes the message */
}

/* --------------------------------------------------------------- launches */

/* Launch records kept for reuse, and the argument bytes each has room for
 * at least. A record is made by the launching thread and freed by the
 * stream worker after its op ran, so with malloc each launch paid the
 * allocator's slow paths on both threads (its thread caches never meet),
 * and the free sits between the kernel's end and the synchronize seeing it
 * (issue 50: ~400 of the ~1700 instructions a CPU launch costs). Under
 * ASan every record is malloc'd and freed, so a use after free shows. */
#define LAUNCH_SPARES 8
#define LAUNCH_MIN_BYTES 256
#if defined(__SANITIZE_ADDRESS__)
#define LAUNCH_RECYCLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LAUNCH_RECYCLE 0
#endif
#endif
#ifndef LAUNCH_RECYCLE
#define LAUNCH_RECYCLE 1
#endif

static _Alignas(64) _Atomic(xdev_cpu_launch_t *) launch_spares[LAUNCH_SPARES];
/* What the launching thread writes fits the first line (cpu_pool.h). */
_Static_assert(offsetof(xdev_cpu_launch_t, chunk) == 64, "a launch's fields moved lines");

/* A record with room for `bytes` argument bytes, or NULL (no memory). */
static xdev_cpu_launch_t *launch_new(size_t bytes) {
    if (LAUNCH_RECYCLE && bytes <= LAUNCH_MIN_BYTES) {
        for (int i = 0; i < LAUNCH_SPARES; i++) {
            if (atomic_load_explicit(&launch_spares[i], memory_order_relaxed) == NULL) continue;
            xdev_cpu_launch_t *l = atomic_exchange(&launch_spares[i], NULL);
            if (l != NULL) return l;
        }
    }
    size_t room = bytes > LAUNCH_MIN_BYTES ? bytes : LAUNCH_MIN_BYTES;
    size_t size = (sizeof(xdev_cpu_launch_t) + room + 63) & ~(size_t)63;
    xdev_cpu_launch_t *l = aligned_alloc(_Alignof(xdev_cpu_launch_t), size);
    if (l != NULL) l->room = room;
    return l;
}

/* The op's release (the stream worker, after the op ran; a graph, when it
 * is destroyed): keep the record for the next launch, or free it. */
static void launch_release(void *arg) {
    xdev_cpu_launch_t *l = arg;
    if (LAUNCH_RECYCLE && l->room == LAUNCH_MIN_BYTES) {
        for (int i = 0; i < LAUNCH_SPARES; i++) {
            xdev_cpu_launch_t *none = NULL;
            if (atomic_load_explicit(&launch_spares[i], memory_order_relaxed) == NULL &&
                atomic_compare_exchange_strong(&launch_spares[i], &none, l))
                return;
        }
    }
    free(l);
}

/* The launch op, on the stream's worker (again at each replay of a graph:
 * the per-run state starts afresh). */
static void run_launch(void *arg) {
    xdev_cpu_launch_t *l = arg;
    l->chunk = l->total;
    atomic_store_explicit(&l->next_block, 0, memory_order_relaxed);
    atomic_store_explicit(&l->seats, 0, memory_order_relaxed);
    atomic_store_explicit(&l->fault, 0, memory_order_relaxed);
    l->fault_cap = 0;
    memset(l->fault_block, 0, sizeof l->fault_block);
    l->fault_signo = l->fault_sicode = 0;
    l->fault_addr = NULL;
    xdev_cpu_pool_t *pool =
        atomic_load_explicit(&xdev_cpu_state.devices[l->device].pool, memory_order_acquire);
    if (pool != NULL && l->total > 1) {
        xdev_cpu_pool_run(pool, l);
    } else {
        xdev_cpu_exec_t *ex = xdev_cpu_exec_self();
        if (ex != NULL) {
            xdev_cpu_exec_blocks(ex, l, 0, l->total);
        } else {
            static const int origin[3] = {0, 0, 0};
            xdev_cpu_launch_fail(l, XDEV_CPU_KFAULT_NOMEM, origin, 0);
        }
    }
    int code = atomic_load(&l->fault);
    if (code != 0) stream_keep_fault(l, code);
}

static xdev_status_t kernel_launch(xdev_cpu_device_t *dev, const xdev_launch_desc_t *desc,
                                   void *stream) {
    if (desc->nargs < 0 || desc->nargs > XDEV_KERNEL_MAX_PARAMS)
        return xdev_cpu_error(
            XDEV_ERROR_INVALID_VALUE, "cpu:%d: launch of '%s' with %d arguments (at most %d)",
            dev->index, desc->name != NULL ? desc->name : "?", desc->nargs, XDEV_KERNEL_MAX_PARAMS);
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(dev->index, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    uint64_t total = (uint64_t)desc->grid.x * desc->grid.y * desc->grid.z;
    (void)xdev_cpu_fault_handlers_install(); /* once: kernel faults fail their launch */
    if (xdev_cpu_state.threads > 1 && total > 1 && xdev_cpu_pool_get(dev) == NULL)
        return XDEV_ERROR_OUT_OF_MEMORY; /* error set */

    size_t bytes = 0;
    for (int i = 0; i < desc->nargs; i++)
        bytes += (desc->arg_sizes[i] + 15) & ~(size_t)15;
    xdev_cpu_launch_t *l = launch_new(bytes);
    if (l == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: cannot launch '%s': out of host memory for its %zu "
                              "argument bytes",
                              dev->index, desc->name != NULL ? desc->name : "?", bytes);
    l->sig = desc->function;
    l->device = dev->index;
    l->stream = s;
    l->grid[0] = (int)desc->grid.x;
    l->grid[1] = (int)desc->grid.y;
    l->grid[2] = (int)desc->grid.z;
    l->block[0] = (int)desc->block.x;
    l->block[1] = (int)desc->block.y;
    l->block[2] = (int)desc->block.z;
    l->items = l->block[0] * l->block[1] * l->block[2];
    l->dynamic_shared = desc->shared_bytes;
    l->total = total; /* the run's state: run_launch */
    size_t off = 0;
    for (int i = 0; i < desc->nargs; i++) {
        l->args[i] = l->bytes + off;
        if (desc->arg_sizes[i] != 0) memcpy(l->bytes + off, desc->args[i], desc->arg_sizes[i]);
        off += (desc->arg_sizes[i] + 15) & ~(size_t)15;
    }
    for (int i = desc->nargs; i < XDEV_KERNEL_MAX_PARAMS; i++)
        l->args[i] = NULL;

    xdev_cpu_op_t *op;
    st = xdev_cpu_stream_begin_op(s, &op);
    if (st != XDEV_SUCCESS) {
        launch_release(l);
        return st;
    }
    op->kind = XDEV_CPU_OP_JOB;
    op->u.job.run = run_launch;
    op->u.job.release = launch_release;
    op->u.job.user = l;
    xdev_cpu_stream_push_unlock(s, op);
    return XDEV_SUCCESS;
}

const xdev_kernel_vtable_t xdev_cpu_kernel_vtable = {
    .size = sizeof(xdev_kernel_vtable_t),
    .limits = kernel_limits,
    .module_load = kernel_module_load,
    .module_unload = kernel_module_unload,
    .get_function = kernel_get_function,
    .launch = kernel_launch,
    .compile_target = xdev_cpu_kernel_compile_target, /* cpu_compile.c */
    .compile = xdev_cpu_kernel_compile,
};
