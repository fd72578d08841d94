/* SPDX-License-Identifier: Apache-2.0 */
/* launch.c - xdev_launch_kernel: the checks no vendor runtime makes, then
 * one backend call.
 *
 * xdev knows every allocation, so before a launch it checks what CUDA
 * would only report as an illegal address later (or never): each pointer
 * argument is live memory of the kernel's device (a peer with access
 * enabled, or pinned host memory) or NULL, each argument's size matches the
 * kernel's parameter, and grid, block and shared sizes fit the device. The
 * pointer checks are one allocator lookup per pointer argument;
 * XDEV_LAUNCH_CHECKS=basic skips them (for memory xdev did not allocate).
 * Everything else costs a few comparisons. */
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"
#include "kernel/kernel_internal.h"
#include "alloc/alloc_lookup.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "runtime/enqueue.h"

static const char *const k_axis[3] = {"x", "y", "z"};

static __attribute__((noinline, cold)) xdev_status_t
check_dims_slow(const struct xdev_kernel *k, const xdev_launch_config_t *c) {
    const xdev_launch_limits_t *l = &k->module->limits;
    const unsigned g[3] = {c->grid.x, c->grid.y, c->grid.z};
    const unsigned b[3] = {c->block.x, c->block.y, c->block.z};
    for (int d = 0; d < 3; d++) {
        if (g[d] == 0 || g[d] > l->max_grid[d])
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "kernel '%s': grid.%s = %u; %s:%d takes 1 .. %u blocks in %s", k->name,
                             k_axis[d], g[d], k->module->be->name, k->module->device.index,
                             l->max_grid[d], k_axis[d]);
        if (b[d] == 0 || b[d] > l->max_block[d])
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "kernel '%s': block.%s = %u; %s:%d takes 1 .. %u work-items in %s",
                             k->name, k_axis[d], b[d], k->module->be->name, k->module->device.index,
                             l->max_block[d], k_axis[d]);
    }
    unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
    if (threads > (unsigned long long)k->max_threads)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "kernel '%s': a block of %ux%ux%u = %llu work-items; at most %d on %s:%d "
                         "for this kernel",
                         k->name, b[0], b[1], b[2], threads, k->max_threads, k->module->be->name,
                         k->module->device.index);
    size_t shared = c->shared_bytes + k->attrs.static_shared_bytes;
    if (c->shared_bytes > l->max_shared_bytes || shared > l->max_shared_bytes)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "kernel '%s': %zu bytes of dynamic shared memory (+ %zu static) per "
                         "block; %s:%d has %zu",
                         k->name, c->shared_bytes, k->attrs.static_shared_bytes,
                         k->module->be->name, k->module->device.index, l->max_shared_bytes);
    return XDEV_SUCCESS;
}

/* Grid, block and shared sizes within the device's limits: the common case
 * in one pass without branches (for unsigned v, v - 1 < max is exactly
 * 1 <= v <= max), check_dims_slow to name what is wrong. */
static inline xdev_status_t check_dims(const struct xdev_kernel *k, const xdev_launch_config_t *c) {
    const xdev_launch_limits_t *l = &k->module->limits;
    unsigned b0 = c->block.x, b1 = c->block.y, b2 = c->block.z;
    bool ok = (c->grid.x - 1u < l->max_grid[0]) & (c->grid.y - 1u < l->max_grid[1]) &
              (c->grid.z - 1u < l->max_grid[2]) & (b0 - 1u < l->max_block[0]) &
              (b1 - 1u < l->max_block[1]) & (b2 - 1u < l->max_block[2]);
    size_t shared = c->shared_bytes + k->attrs.static_shared_bytes;
    ok = ok & ((unsigned long long)b0 * b1 * b2 <= (unsigned long long)k->max_threads) &
         (c->shared_bytes <= l->max_shared_bytes) & (shared <= l->max_shared_bytes);
    if (__builtin_expect(ok, 1)) return XDEV_SUCCESS;
    return check_dims_slow(k, c);
}

/* "argument 3 'y'" (or without the name when the signature is unknown). */
static void arg_label(const struct xdev_kernel *k, int i, char *buf, size_t n) {
    if (k->sig != NULL && k->sig->param_names != NULL)
        snprintf(buf, n, "argument %d '%s' of kernel '%s'", i, k->sig->param_names[i], k->name);
    else
        snprintf(buf, n, "argument %d of kernel '%s'", i, k->name);
}

typedef struct arg_ref {
    const struct xdev_kernel *k;
    int i;
} arg_ref_t;

/* The lookup quotes what this writes ("'x' (0x...) points into ..."): the
 * parameter's bare name, or "argument 2" when the signature has none;
 * check_pointer then says which kernel's argument it is. */
static void arg_label_fn(const void *ctx, char *buf, size_t n) {
    const arg_ref_t *a = ctx;
    if (a->k->sig != NULL && a->k->sig->param_names != NULL)
        snprintf(buf, n, "%s", a->k->sig->param_names[a->i]);
    else
        snprintf(buf, n, "argument %d", a->i);
}

/* A pointer argument: NULL, or memory the kernel's device can use. The
 * lookup is cached per thread (alloc/alloc_lookup.h); messages are
 * formatted only on a failure. */
static xdev_status_t check_pointer(const struct xdev_kernel *k, int i, const void *p) {
    if (p == NULL) return XDEV_SUCCESS;
    const struct xdev_module *m = k->module;
    const void *hbe; /* the thread's cache, inline: the common case */
    int hindex;
    if (__builtin_expect(xdev_live_hit(p, 0, &hbe, &hindex), 1) && hbe == m->be &&
        hindex == m->device.index)
        return XDEV_SUCCESS;
    xdev_live_ref_t ref;
    arg_ref_t at = {k, i};
    xdev_status_t st = xdev_live_lookup_cached(p, arg_label_fn, &at, &ref); /* refuses freed */
    if (st != XDEV_SUCCESS)
        return XDEV_FAIL(st, "argument %d of kernel '%s': %s", i, k->name, xdev_last_error());
    /* The caller's bytes, not the allocator's rounding: a pointer may point
     * up to one past the end of what was requested, as in C. */
    bool inside = !ref.known || (uintptr_t)p - ref.base <= ref.size;
    if (__builtin_expect(inside && ref.known && ref.e.kind == XDEV_MEMORY_DEVICE &&
                             ref.e.be == m->be && ref.e.index == m->device.index,
                         1))
        return XDEV_SUCCESS;
    char label[192];
    arg_label(k, i, label, sizeof label);
    if (!inside)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s (%p) is %zu bytes into an allocation of %zu bytes (at %p): past "
                         "its end",
                         label, p, (size_t)((uintptr_t)p - ref.base), ref.size, (void *)ref.base);
    if (!ref.known)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "%s is %p, not memory xdev allocated (a host pointer? kernels take "
                         "device memory from xdev_malloc, or pinned host memory; "
                         "XDEV_LAUNCH_CHECKS=basic allows other memory)",
                         label, p);
    if (ref.e.kind != XDEV_MEMORY_DEVICE) return XDEV_SUCCESS; /* pinned host: mapped */
    if (ref.e.be == m->be && ref.e.index == m->device.index) return XDEV_SUCCESS;
    if (ref.e.be == m->be &&
        ((atomic_load(&m->be->devices[m->device.index].peer_enabled) >> ref.e.index) & 1u))
        return XDEV_SUCCESS;
    return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                     "%s (%p) is memory of %s:%d; the kernel runs on %s:%d%s", label, p,
                     ref.e.be->name, ref.e.index, m->be->name, m->device.index,
                     ref.e.be == m->be ? " (enable peer access to use it there)" : "");
}

/* The first argument without a value or of the wrong size, worded; NULL
 * args or a count the kernel does not take. Out of line: check_args only
 * comes here when its one pass found something wrong. */
static __attribute__((noinline, cold)) xdev_status_t
args_failed(const struct xdev_kernel *k, const xdev_arg_t *args, int nargs) {
    const xdev_kernel_attributes_t *a = &k->attrs;
    if (nargs < 0 || nargs > XDEV_KERNEL_MAX_PARAMS)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "kernel '%s': nargs = %d; 0 .. %d", k->name,
                         nargs, XDEV_KERNEL_MAX_PARAMS);
    if (nargs > 0 && args == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "kernel '%s': args is NULL with nargs = %d",
                         k->name, nargs);
    if (a->nparams >= 0 && nargs != a->nparams)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "kernel '%s' takes %d argument%s, %d given",
                         k->name, a->nparams, a->nparams == 1 ? "" : "s", nargs);
    char label[192];
    for (int i = 0; i < nargs; i++) {
        if (args[i].value == NULL || args[i].size == 0) {
            arg_label(k, i, label, sizeof label);
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s has no value (value %p, size %zu)",
                             label, args[i].value, args[i].size);
        }
        if (a->param_sizes[i] != 0 && args[i].size != a->param_sizes[i]) {
            arg_label(k, i, label, sizeof label);
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "%s is %zu bytes; the parameter is %u bytes (pass a variable of the "
                             "parameter's type)",
                             label, args[i].size, a->param_sizes[i]);
        }
    }
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "kernel '%s': its arguments",
                     k->name); /* unreached */
}

/* The arguments into the backend's arrays, checked: the count, each one's
 * value and size against the parameter's (one pass without early exits;
 * args_failed words what is wrong), then each pointer parameter's value
 * (k->pointer_params; XDEV_LAUNCH_CHECKS=basic skips them), from the
 * argument's first bytes. A pointer is read only once every size is known
 * right, so a wrong size is reported before an earlier argument's pointer. */
static inline xdev_status_t check_args(const struct xdev_kernel *k, const xdev_arg_t *args,
                                       int nargs, void **argv, size_t *sizes) {
    const xdev_kernel_attributes_t *a = &k->attrs;
    if (XDEV_UNLIKELY((unsigned)nargs > XDEV_KERNEL_MAX_PARAMS || (nargs > 0 && args == NULL) ||
                      (a->nparams >= 0 && nargs != a->nparams)))
        return args_failed(k, args, nargs);
    bool bad = false;
    for (int i = 0; i < nargs; i++) {
        const void *v = args[i].value;
        size_t n = args[i].size, want = a->param_sizes[i]; /* 0: any size but 0 */
        bad |= (v == NULL) | (want != 0 ? n != want : n == 0);
        argv[i] = (void *)v;
        sizes[i] = n;
    }
    if (XDEV_UNLIKELY(bad)) return args_failed(k, args, nargs);
    /* only the arguments given (nargs is nparams here: a kernel with a mask
     * has a signature, hence a count) */
    uint32_t given = (1u << nargs) - 1u; /* nargs <= XDEV_KERNEL_MAX_PARAMS < 32 */
    for (uint32_t m = xdev_kernel_check_pointers() ? k->pointer_params & given : 0; m != 0;
         m &= m - 1) {
        int i = __builtin_ctz(m);
        void *p;
        if (sizes[i] < sizeof p) continue; /* a parameter of unknown size: not read past its end */
        memcpy(&p, args[i].value, sizeof p);
        xdev_status_t st = check_pointer(k, i, p);
        if (st != XDEV_SUCCESS) return st;
    }
    return XDEV_SUCCESS;
}

static xdev_status_t resolve_stream(const struct xdev_kernel *k, xdev_stream_t given,
                                    xdev_stream_t *out) {
    const struct xdev_module *m = k->module;
    if (given == NULL) return xdev_core_current_stream(m->rec, out);
    xdev_status_t st = xdev_stream_check(given, "config->stream");
    if (st != XDEV_SUCCESS) return st;
    if (given->rec != m->rec)
        return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                         "kernel '%s': config->stream is a stream of %s:%d; the kernel's module "
                         "was loaded for %s:%d",
                         k->name, given->be->name, given->device.index, m->be->name,
                         m->device.index);
    *out = given;
    return XDEV_SUCCESS;
}

/* One launch as the enqueue path (runtime/enqueue.h) sees it. */
typedef struct {
    const struct xdev_kernel *k;
    const xdev_launch_config_t *c;
    const xdev_arg_t *args;
    int nargs;
    const xdev_launch_desc_t *d;
} launch_op_t;

/* What a launch touches, for the sanitizer and observers: each pointer
 * argument from where it points to its allocation's end (the kernel's
 * extent is not known), read for a pointer to const, else written. */
static int launch_uses(const xdev_enqueue_t *q, xdev_op_use_t *out, int cap) {
    const launch_op_t *o = q->ctx;
    const struct xdev_kernel *k = o->k;
    if (k->sig == NULL || k->sig->param_kinds == NULL) return 0; /* no signature: not checked */
    int n = 0;
    for (int i = 0; i < o->nargs && i < k->sig->nparams && n < cap; i++) {
        uint8_t kind = k->sig->param_kinds[i];
        if (!(kind & XDEV_KPARAM_POINTER) || o->args[i].size != sizeof(void *)) continue;
        void *p;
        memcpy(&p, o->args[i].value, sizeof p);
        out[n++] = (xdev_op_use_t){p, SIZE_MAX,
                                   (kind & XDEV_KPARAM_READONLY) ? XDEV_OP_READ : XDEV_OP_WRITE,
                                   (kind & XDEV_KPARAM_FLOAT)    ? 4
                                   : (kind & XDEV_KPARAM_DOUBLE) ? 8
                                                                 : 0};
    }
    return n;
}

/* The backend's launch between NVTX/roctx markers. */
static xdev_status_t launch_call(xdev_enqueue_t *q) {
    const launch_op_t *o = q->ctx;
    const struct xdev_module *m = o->k->module;
    bool marked = XDEV_HAS(m->be, trace, range_push); /* the group trace.range, whole */
    if (marked) (void)xdev_be_trace_range_push(m->be, o->k->name);
    xdev_status_t st = xdev_be_kernel_launch(m->rec, o->d, q->stream->native);
    if (marked) (void)xdev_be_trace_range_pop(m->be);
    return st;
}

/* The span's arguments: the sizes, and how a host backend runs the kernel
 * (its cpu_form) in the format itself, as the tracer keeps 6 values. */
static void launch_trace_args(xdev_enqueue_t *q) {
    const launch_op_t *o = q->ctx;
    const xdev_launch_config_t *c = o->c;
#define XDEV__LAUNCH_ARGS "\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d]"
    static const char *const fmts[] = {XDEV__LAUNCH_ARGS,
                                       XDEV__LAUNCH_ARGS ",\"cpu_form\":\"loop\"",
                                       XDEV__LAUNCH_ARGS ",\"cpu_form\":\"regions\"",
                                       XDEV__LAUNCH_ARGS ",\"cpu_form\":\"fibers\""};
#undef XDEV__LAUNCH_ARGS
    int f = o->k->attrs.cpu_form >= 0 && o->k->attrs.cpu_form <= 3 ? o->k->attrs.cpu_form : 0;
    xdev_enqueue_span_args(q, fmts[f], (int)c->grid.x, (int)c->grid.y, (int)c->grid.z,
                           (int)c->block.x, (int)c->block.y, (int)c->block.z);
}

/* Checks, then the backend's launch through the enqueue path, as `as`
 * describes the op (NULL: a kernel launch, its operands from the
 * signature). */
static xdev_status_t launch(struct xdev_kernel *k, const xdev_launch_config_t *c,
                            const xdev_arg_t *args, int nargs, const xdev_launch_as_t *as) {
    xdev_status_t st = check_dims(k, c);
    void *argv[XDEV_KERNEL_MAX_PARAMS];
    size_t sizes[XDEV_KERNEL_MAX_PARAMS];
    if (st == XDEV_SUCCESS) st = check_args(k, args, nargs, argv, sizes);
    xdev_stream_t s = NULL;
    if (st == XDEV_SUCCESS) st = resolve_stream(k, c->stream, &s);
    if (st != XDEV_SUCCESS) return st;
    xdev_launch_desc_t d = {
        .size = sizeof d,
        .function = k->function,
        .grid = c->grid,
        .block = c->block,
        .shared_bytes = c->shared_bytes,
        .nargs = nargs,
        .args = argv,
        .arg_sizes = sizes,
        .name = k->name,
    };
    launch_op_t o = {k, c, args, nargs, &d};
    xdev_enqueue_t q; /* set field by field: an initializer clears it with rep stos */
    xdev_enqueue_set(&q, XDEV_OP_KERNEL, k->name, s, &o, launch_call);
    q.span = k->trace_name;
    q.get_uses = launch_uses;
    q.trace_args = launch_trace_args;
    if (as != NULL) {
        q.kind = as->kind;
        q.name = as->name;
        q.get_uses = NULL;
        q.uses = as->uses;
        q.nuses = as->nuses;
    }
    return xdev_enqueue(&q);
}

/* xdev_launch_kernel's body: the kernel's handle and module held across
 * the launch. */
xdev_status_t xdev_core_launch_kernel(xdev_kernel_t k, const xdev_launch_config_t *config,
                                      const xdev_arg_t *args, int nargs,
                                      const xdev_launch_as_t *as) {
    if (XDEV_UNLIKELY(k == NULL || !xdev_handle_is_live_as(&xdev_kernel_arena, k, XDEV_KERNEL_MAGIC,
                                                           XDEV_KERNEL_SLOT)))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE,
                         k != NULL && xdev_handle_is_slot(&xdev_kernel_arena, k)
                             ? "kernel %p: its module was unloaded"
                             : "kernel %p is not an xdev kernel (from xdev_module_get_kernel)",
                         (void *)k);
    if (config == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'config' is NULL");
    struct xdev_module *m = k->module;
    atomic_fetch_add_explicit(&m->active, 1, memory_order_acq_rel);
    xdev_status_t st;
    /* Unload sets closing, then waits for `active` to drain: seen here, or
     * the kernel handle is already dead (re-checked after the increment:
     * k is a slot of the arena, so its magic alone tells, as a free clears
     * it). */
    if (XDEV_UNLIKELY(atomic_load_explicit(&m->closing, memory_order_acquire) ||
                      atomic_load_explicit(&k->hdr.magic, memory_order_acquire) !=
                          XDEV_KERNEL_MAGIC))
        st = XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "kernel '%s': its module is being unloaded",
                       k->name);
    else
        st = launch(k, config, args, nargs, as);
    atomic_fetch_sub_explicit(&m->active, 1, memory_order_release);
    return st;
}

xdev_status_t xdev_launch_kernel(xdev_kernel_t k, const xdev_launch_config_t *config,
                                 const xdev_arg_t *args, int nargs) {
    xdev_status_t st = xdev_core_launch_kernel(k, config, args, nargs, NULL);
    if (XDEV_UNLIKELY(st != XDEV_SUCCESS)) return xdev_core_blame(st, __func__);
    return XDEV_SUCCESS;
}
