/* SPDX-License-Identifier: Apache-2.0 */
/* module.c - loading kernel modules for a device, finding kernels in them,
 * unloading (xdev/kernel.h).
 *
 * A bundle (what xdev_add_kernels embeds) is offered to the backend image
 * by image - its host table first, then each device image - and the backend
 * keeps those it can run (XDEV_ERROR_NOT_SUPPORTED: not its kind). The host
 * table also gives every kernel's signature, whichever device runs it, so
 * launches check argument counts, sizes and pointers on every backend. */
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "kernel/kernel_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "xdev/backend_support.h"

#define MODULE_MAGIC 0x4d4f444cu /* "MODL" */
#define MODULE_SLOT ((sizeof(struct xdev_module) + 63) / 64 * 64)

xdev_handle_arena_t xdev_module_arena = XDEV_HANDLE_ARENA_INIT("module", MODULE_MAGIC, MODULE_SLOT);
xdev_handle_arena_t xdev_kernel_arena =
    XDEV_HANDLE_ARENA_INIT("kernel", XDEV_KERNEL_MAGIC, XDEV_KERNEL_SLOT);

bool xdev_kernel_pointer_checks = true;

/* XDEV_LAUNCH_CHECKS=full|basic: an initialisation step. */
static xdev_status_t settings_load(void) {
    const char *v = xdev_env_get("XDEV_LAUNCH_CHECKS");
    xdev_kernel_pointer_checks = true;
    if (v == NULL || *v == '\0' || strcmp(v, "full") == 0) return XDEV_SUCCESS;
    if (strcmp(v, "basic") == 0) {
        xdev_kernel_pointer_checks = false;
        return XDEV_SUCCESS;
    }
    return XDEV_FAIL(XDEV_ERROR_ENV,
                     "XDEV_LAUNCH_CHECKS='%s': expected 'full' (the default: pointer arguments "
                     "are checked against xdev's allocations) or 'basic'",
                     v);
}

void xdev_module_wire(void) {
    xdev_hook_init_add(XDEV_INIT_SETTINGS, settings_load);
}

/* CUDA's limits, for a backend without kernel.limits. */
static void default_limits(xdev_launch_limits_t *l) {
    *l = (xdev_launch_limits_t){.max_block = {1024, 1024, 64},
                                .max_threads_per_block = 1024,
                                .max_grid = {2147483647u, 65535, 65535},
                                .max_shared_bytes = 48 << 10,
                                .warp_size = 32};
}

static xdev_status_t device_limits(xdev_device_record_t *rec, xdev_launch_limits_t *out) {
    default_limits(out);
    if (!XDEV_HAS(rec->be, kernel, limits)) return XDEV_SUCCESS;
    return xdev_be_kernel_limits(rec, out);
}

xdev_status_t xdev_device_launch_limits(xdev_device_t device, xdev_launch_limits_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(device_limits(rec, out));
    return XDEV_SUCCESS;
}

/* The group kernel.module (checked whole when the backend loaded). */
static bool backend_has_kernels(xdev_backend_t *be) {
    return XDEV_HAS(be, kernel, module_load);
}

/* A new module for the device, with nothing loaded yet. */
xdev_status_t xdev_kmodule_new(xdev_device_t device, const char *name, struct xdev_module **out) {
    xdev_status_t st = xdev_core_ensure_init();
    xdev_device_record_t *rec = NULL;
    if (st == XDEV_SUCCESS) st = xdev_device_lookup(device, &rec);
    if (st != XDEV_SUCCESS) return st;
    if (!backend_has_kernels(rec->be))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend does not run kernels (its kernel table has no "
                         "module_load / get_function / launch)",
                         rec->be->name);
    xdev_launch_limits_t limits;
    if ((st = device_limits(rec, &limits)) != XDEV_SUCCESS) return st;
    struct xdev_module *m = xdev_handle_alloc(&xdev_module_arena);
    if (m == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a kernel module");
    m->rec = rec;
    m->be = rec->be;
    m->device = rec->id;
    m->limits = limits;
    pthread_mutex_init(&m->lock, NULL);
    snprintf(m->name, sizeof m->name, "%s", name);
    *out = m;
    return XDEV_SUCCESS;
}

/* Give back everything a module holds (its native modules, kernels, library). */
static void module_release(struct xdev_module *m) {
    xdev_error_state_t saved; /* a backend's unload failure is not the caller's error */
    xdev_core_error_save(&saved);
    for (int i = 0; i < m->nnative; i++)
        if (XDEV_HAS(m->be, kernel, module_unload))
            (void)xdev_be_kernel_module_unload(m->rec, m->native[i]);
    xdev_core_error_restore(&saved);
    for (struct xdev_kernel *k = m->kernels, *next; k != NULL; k = next) {
        next = k->next;
        xdev_handle_free(&xdev_kernel_arena, k);
    }
    if (m->dl != NULL) dlclose(m->dl);
    pthread_mutex_destroy(&m->lock);
    xdev_handle_free(&xdev_module_arena, m);
}

/* Offer one image: kept (loaded), skipped (*taken false: not the backend's
 * kind), or a failure. */
xdev_status_t xdev_kmodule_offer(struct xdev_module *m, const xdev_kernel_image_t *img,
                                 bool *taken) {
    *taken = false;
    if (m->nnative == XDEV_MODULE_MAX_NATIVE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "more than %d images for %s:%d in one module",
                         XDEV_MODULE_MAX_NATIVE, m->be->name, m->device.index);
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    void *native = NULL;
    xdev_status_t st = xdev_be_kernel_module_load(m->rec, img, &native);
    if (st == XDEV_ERROR_NOT_SUPPORTED) {
        xdev_core_error_restore(&saved);
        return XDEV_SUCCESS;
    }
    if (st != XDEV_SUCCESS) return st;
    m->native[m->nnative++] = native;
    *taken = true;
    return XDEV_SUCCESS;
}

/* The end of a load: the module, or (on failure) nothing left behind and
 * the failure's message prefixed with the device - unless the backend's
 * message names it first already ("cpu:0: ..."), which would say it twice. */
xdev_status_t xdev_kmodule_finish(struct xdev_module *m, xdev_status_t st, xdev_module_t *out) {
    if (st == XDEV_SUCCESS) {
        *out = m;
        return XDEV_SUCCESS;
    }
    char why[1024];
    snprintf(why, sizeof why, "%s", xdev_last_error());
    xdev_device_t d = m->device;
    const char *be = m->be->name;
    module_release(m);
    char prefix[96];
    int n = snprintf(prefix, sizeof prefix, "%s:%d: ", be, d.index);
    if (n > 0 && (size_t)n < sizeof prefix && strncmp(why, prefix, (size_t)n) == 0)
        return XDEV_FAIL(st, "%s", why);
    return XDEV_FAIL(st, "%s:%d: %s", be, d.index, why);
}

static xdev_status_t check_bundle(const xdev_kernel_bundle_t *b) {
    if (b->size < sizeof *b)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "bundle->size is %zu, not sizeof(xdev_kernel_bundle_t) (%zu): not a "
                         "bundle made by xdev_add_kernels?",
                         b->size, sizeof *b);
    if (b->nkernels < 0 || b->nimages < 0 || (b->nkernels > 0 && b->kernels == NULL) ||
        (b->nimages > 0 && b->images == NULL))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "bundle '%s': %d kernels at %p, %d images at %p is not a valid bundle",
                         b->name ? b->name : "?", b->nkernels, (const void *)b->kernels, b->nimages,
                         (const void *)b->images);
    for (int i = 0; i < b->nkernels; i++)
        if (b->kernels[i] == NULL || b->kernels[i]->name == NULL || b->kernels[i]->nparams < 0 ||
            b->kernels[i]->nparams > XDEV_KERNEL_MAX_PARAMS)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "bundle '%s': kernel entry %d is not a valid signature",
                             b->name ? b->name : "?", i);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_module_load(xdev_device_t device, const xdev_kernel_bundle_t *bundle,
                               xdev_module_t *out) {
    XDEV_REQUIRE_ARG(bundle);
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    xdev_status_t st = check_bundle(bundle);
    if (st != XDEV_SUCCESS) return xdev_core_blame(st, __func__);
    struct xdev_module *m;
    XDEV_CHECK(xdev_kmodule_new(device, bundle->name ? bundle->name : "bundle", &m));
    m->sigs = bundle->kernels;
    m->nsigs = bundle->nkernels;
    bool taken;
    xdev_kernel_image_t host = {XDEV_IMAGE_HOST_TABLE, bundle->kernels, (size_t)bundle->nkernels};
    st = bundle->nkernels > 0 ? xdev_kmodule_offer(m, &host, &taken) : XDEV_SUCCESS;
    for (int i = 0; st == XDEV_SUCCESS && i < bundle->nimages; i++)
        st = xdev_kmodule_offer(m, &bundle->images[i], &taken);
    if (st == XDEV_SUCCESS && m->nnative == 0) {
        char have[256] = "host kernels";
        size_t len = strlen(have);
        for (int i = 0; i < bundle->nimages && len < sizeof have; i++)
            len += (size_t)snprintf(have + len, sizeof have - len, ", %s",
                                    xdev_support_image_format_name(bundle->images[i].format));
        st = XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                       "bundle '%s' has no code the %s backend runs (it holds: %s); was the %s "
                       "toolchain found when it was built?",
                       m->name, m->be->name, have,
                       strcmp(m->be->name, "cuda") == 0  ? "CUDA (nvcc)"
                       : strcmp(m->be->name, "hip") == 0 ? "HIP (hipcc)"
                                                         : "device");
    }
    XDEV_CHECK(xdev_kmodule_finish(m, st, out));
    return XDEV_SUCCESS;
}

/* A host library's kernel table (dlopen; the module keeps the handle). */
xdev_status_t xdev_kmodule_open_library(struct xdev_module *m, const char *path,
                                        xdev_kernel_image_t *out) {
    m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (m->dl == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "cannot load the host kernel library '%s': %s",
                         path, dlerror());
    const xdev_kernel_sig_t *const *table = dlsym(m->dl, "xdev_kernel_table");
    const int *count = dlsym(m->dl, "xdev_kernel_table_size");
    if (table == NULL || count == NULL || *count < 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' exports no xdev_kernel_table / xdev_kernel_table_size: not a "
                         "library built with xdev_add_kernel_library",
                         path);
    m->sigs = table;
    m->nsigs = *count;
    *out = (xdev_kernel_image_t){XDEV_IMAGE_HOST_TABLE, table, (size_t)*count};
    return XDEV_SUCCESS;
}

xdev_status_t xdev_module_load_image(xdev_device_t device, const xdev_kernel_image_t *image,
                                     xdev_module_t *out) {
    XDEV_REQUIRE_ARG(image);
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    if (image->data == NULL || (image->size == 0 && image->format != XDEV_IMAGE_HOST_LIBRARY &&
                                image->format != XDEV_IMAGE_PTX))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "image->data is NULL or image->size is 0");
    if (image->format < XDEV_IMAGE_PTX || image->format > XDEV_IMAGE_HOST_LIBRARY)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "image->format %d is not an xdev_image_format_t", (int)image->format);
    struct xdev_module *m;
    XDEV_CHECK(xdev_kmodule_new(device, xdev_support_image_format_name(image->format), &m));
    xdev_kernel_image_t img = *image;
    xdev_status_t st = XDEV_SUCCESS;
    if (image->format == XDEV_IMAGE_HOST_LIBRARY)
        st = xdev_kmodule_open_library(m, (const char *)image->data, &img);
    else if (image->format == XDEV_IMAGE_HOST_TABLE) {
        m->sigs = (const xdev_kernel_sig_t *const *)image->data;
        m->nsigs = (int)image->size;
    }
    bool taken = false;
    if (st == XDEV_SUCCESS) st = xdev_kmodule_offer(m, &img, &taken);
    if (st == XDEV_SUCCESS && !taken)
        st = XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED, "the %s backend does not load %s images",
                       m->be->name, xdev_support_image_format_name(image->format));
    XDEV_CHECK(xdev_kmodule_finish(m, st, out));
    return XDEV_SUCCESS;
}

static xdev_status_t module_check(xdev_module_t m, const char *arg) {
    if (m == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "module argument '%s' is NULL", arg);
    if (xdev_handle_is_live(&xdev_module_arena, m)) return XDEV_SUCCESS;
    if (xdev_handle_is_slot(&xdev_module_arena, m))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "module '%s' (%p) has been unloaded", arg,
                         (void *)m);
    return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "'%s' (%p) is not an xdev module", arg, (void *)m);
}

xdev_status_t xdev_module_unload(xdev_module_t m) {
    xdev_status_t st = module_check(m, "module");
    if (st != XDEV_SUCCESS) return xdev_core_blame(st, __func__);
    bool was = false;
    if (!atomic_compare_exchange_strong(&m->closing, &was, true))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE, "module %p is being unloaded already",
                             (void *)m);
    while (atomic_load(&m->active) > 0) /* launches past their checks: let them enqueue */
        sched_yield();
    /* Launches already queued may still run the code. */
    st = xdev_be_device_synchronize(m->rec);
    char why[1024] = "";
    if (st != XDEV_SUCCESS) snprintf(why, sizeof why, "%s", xdev_last_error());
    xdev_device_t d = m->device;
    const char *be = m->be->name;
    module_release(m);
    if (st != XDEV_SUCCESS)
        return XDEV_API_FAIL(st,
                             "%s:%d: the module was unloaded, but waiting for its queued "
                             "launches failed: %s",
                             be, d.index, why);
    return XDEV_SUCCESS;
}

/* Kernel names as trace records keep them: a string per distinct name for
 * the life of the process (a trace is written after its modules may have
 * been unloaded). NULL when out of memory (the trace then says "kernel"). */
typedef struct interned {
    struct interned *next;
    char name[];
} interned_t;
static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static interned_t *g_interned;

static const char *intern(const char *name) {
    pthread_mutex_lock(&g_intern_lock);
    interned_t *e = g_interned;
    while (e != NULL && strcmp(e->name, name) != 0)
        e = e->next;
    if (e == NULL && (e = malloc(sizeof *e + strlen(name) + 1)) != NULL) {
        strcpy(e->name, name);
        e->next = g_interned;
        g_interned = e;
    }
    pthread_mutex_unlock(&g_intern_lock);
    return e != NULL ? e->name : "kernel";
}

/* A kernel name: printable, no quote or backslash (it goes into traces). */
static bool name_ok(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof(((struct xdev_kernel *)0)->name)) return false;
    for (size_t i = 0; i < n; i++)
        if (name[i] <= ' ' || name[i] > '~' || name[i] == '"' || name[i] == '\\') return false;
    return true;
}

static const xdev_kernel_sig_t *find_sig(struct xdev_module *m, const char *name) {
    for (int i = 0; i < m->nsigs; i++)
        if (strcmp(m->sigs[i]->name, name) == 0) return m->sigs[i];
    return NULL;
}

static xdev_status_t not_found(struct xdev_module *m, const char *name, const char *where) {
    char have[512] = "";
    size_t len = 0;
    for (int i = 0; i < m->nsigs && len < sizeof have; i++)
        len += (size_t)snprintf(have + len, sizeof have - len, "%s%s", i ? ", " : "",
                                m->sigs[i]->name);
    if (m->sigs == NULL)
        return XDEV_FAIL(XDEV_ERROR_NOT_FOUND, "no kernel '%s' in module '%s' on %s:%d%s", name,
                         m->name, m->be->name, m->device.index, where);
    return XDEV_FAIL(XDEV_ERROR_NOT_FOUND, "no kernel '%s' in module '%s' on %s:%d%s (it has: %s)",
                     name, m->name, m->be->name, m->device.index, where, have);
}

/* Find `name` in the backend's modules and describe it. */
static xdev_status_t kernel_new(struct xdev_module *m, const char *name, struct xdev_kernel **out) {
    const xdev_kernel_sig_t *sig = find_sig(m, name);
    if (m->sigs != NULL && sig == NULL) return not_found(m, name, "");
    xdev_kernel_attributes_t attrs;
    void *fn = NULL;
    xdev_status_t st = XDEV_ERROR_NOT_FOUND;
    for (int i = 0; i < m->nnative && st == XDEV_ERROR_NOT_FOUND; i++) {
        memset(&attrs, 0, sizeof attrs);
        attrs.nparams = -1;
        st = xdev_be_kernel_get_function(m->rec, m->native[i], name, &fn, &attrs);
    }
    if (st == XDEV_ERROR_NOT_FOUND)
        return not_found(m, name,
                         sig ? ": it has a signature but no code for this device (was its file "
                               "compiled for it?)"
                             : "");
    if (st != XDEV_SUCCESS) return st;
    if (sig != NULL) { /* the host compilation's signature is authoritative */
        attrs.nparams = sig->nparams;
        for (int i = 0; i < sig->nparams; i++) {
            attrs.param_sizes[i] = sig->param_sizes[i];
            attrs.param_kinds[i] = sig->param_kinds[i];
        }
        attrs.uses_barrier = (sig->flags & XDEV_KERNEL_USES_BARRIER) != 0;
        attrs.cpu_form = (sig->flags & XDEV_KERNEL_USES_BARRIER) ? XDEV_KERNEL_FORM_FIBERS
                         : (sig->flags & XDEV_KERNEL_REGIONS)    ? XDEV_KERNEL_FORM_REGIONS
                                                                 : XDEV_KERNEL_FORM_LOOP;
    }
    struct xdev_kernel *k = xdev_handle_alloc(&xdev_kernel_arena);
    if (k == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a kernel handle");
    if (sig == NULL && attrs.nparams > 0) /* the backend read the image's own (kernel_sig.h) */
        for (int i = 0; i < attrs.nparams; i++)
            if (attrs.param_kinds[i] & XDEV_KPARAM_POINTER) {
                k->image_sig = (xdev_kernel_sig_t){.name = k->name,
                                                   .nparams = attrs.nparams,
                                                   .param_sizes = k->attrs.param_sizes,
                                                   .param_kinds = k->image_kinds};
                memcpy(k->image_kinds, attrs.param_kinds, sizeof k->image_kinds);
                sig = &k->image_sig;
                break;
            }
    for (int i = 0; i < XDEV_KERNEL_MAX_PARAMS; i++) /* attributes report POINTER alone */
        attrs.param_kinds[i] &= XDEV_KPARAM_POINTER;
    k->module = m;
    k->function = fn;
    k->sig = sig;
    k->pointer_params = 0;
    _Static_assert(XDEV_KERNEL_MAX_PARAMS < 32, "pointer_params holds one bit a parameter");
    for (int i = 0; sig != NULL && i < attrs.nparams; i++)
        if (attrs.param_kinds[i] & XDEV_KPARAM_POINTER) k->pointer_params |= 1u << i;
    snprintf(k->name, sizeof k->name, "%s", name);
    k->trace_name = intern(name);
    k->attrs = attrs;
    k->attrs.name = k->name;
    k->attrs.device = m->device;
    k->max_threads = (int)m->limits.max_threads_per_block;
    if (attrs.max_threads_per_block > 0 && attrs.max_threads_per_block < k->max_threads)
        k->max_threads = attrs.max_threads_per_block;
    k->attrs.max_threads_per_block = k->max_threads;
    *out = k;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_module_get_kernel(xdev_module_t m, const char *name, xdev_kernel_t *out) {
    XDEV_REQUIRE_ARG(name);
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    xdev_status_t st = module_check(m, "module");
    if (st != XDEV_SUCCESS) return xdev_core_blame(st, __func__);
    if (!name_ok(name))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "kernel name '%.200s' is empty, too long (127 bytes at most) or has "
                             "a space, quote, backslash or non-ASCII byte",
                             name);
    pthread_mutex_lock(&m->lock);
    struct xdev_kernel *k = m->kernels;
    while (k != NULL && strcmp(k->name, name) != 0)
        k = k->next;
    st = XDEV_SUCCESS;
    if (k == NULL && (st = kernel_new(m, name, &k)) == XDEV_SUCCESS) {
        k->next = m->kernels;
        m->kernels = k;
    }
    pthread_mutex_unlock(&m->lock);
    if (st != XDEV_SUCCESS) return xdev_core_blame(st, __func__);
    *out = k;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_kernel_get_attributes(xdev_kernel_t k, xdev_kernel_attributes_t *out) {
    XDEV_REQUIRE_ARG(out);
    if (k == NULL || !xdev_handle_is_live(&xdev_kernel_arena, k))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_HANDLE,
                             "kernel %p is not a live kernel (its module was unloaded?)",
                             (void *)k);
    *out = k->attrs;
    return XDEV_SUCCESS;
}
