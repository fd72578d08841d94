/* SPDX-License-Identifier: Apache-2.0 */
/* shadow_compute.c - shadow execution's slots for the calls that compute
 * (shadow_internal.h): kernels, FFT and the primitives, and their replays on
 * the shadow device. Each needs more than its arguments: a kernel the host
 * build of its module (kernel/module.c offers a bundle's host table to the
 * backend first, so a GPU backend's refusal of it hands the shadow the host
 * build), an FFT the shadow device's own plan (made when the backend makes
 * its plan), a primitive the shadow device's own temporaries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "observe/shadow_internal.h"
#include "xdev/primitives.h"

/* ------------------------------------------------------------ kernels */
/* Modules and functions of the real device and their host builds on the
 * shadow device (NULL: the module has no image the CPU takes). */
#define SH_MAX_KERNELS 1024
typedef struct {
    void *real, *shadow;
} sh_pair_t;
static sh_pair_t g_modules[SH_MAX_KERNELS], g_functions[SH_MAX_KERNELS];
static int g_nmodules, g_nfunctions;

static void *lookup_pair(const void *real, int n, const void *tab, size_t stride) {
    for (int i = 0; i < n; i++) {
        void *const *e = (void *const *)((const char *)tab + (size_t)i * stride);
        if (e[0] == real) return e[1];
    }
    return NULL;
}

/* The host build a GPU backend refused on this thread (kernel/module.c
 * offers a bundle's host table first, then its device images, on one
 * thread): loaded on the shadow device, it pairs with the device image the
 * backend takes next. */
static _Thread_local void *t_host_build;

/* Unload a module of the shadow device (lock held). */
static void shadow_module_unload(void *sm) {
    const xdev_backend_api_t *c;
    xdev_backend_device_t *dv;
    void *s;
    if (!xdev_shadow_device(&c, &dv, &s)) return;
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    (void)c->stream->synchronize(dv, s);
    (void)c->kernel->module_unload(dv, sm);
    xdev_core_error_restore(&saved);
}

/* image loaded on the shadow device (lock held), or NULL. */
static void *shadow_module_load(const xdev_kernel_image_t *image) {
    void *sm = NULL, *s;
    const xdev_backend_api_t *c;
    xdev_backend_device_t *dv;
    if (xdev_shadow_device(&c, &dv, &s) && XDEV_BACKEND_SLOT(c->kernel, module_load) != NULL) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        if (c->kernel->module_load(dv, image, &sm) != XDEV_SUCCESS) sm = NULL;
        xdev_core_error_restore(&saved);
    }
    return sm;
}

static xdev_status_t w_module_load(xdev_backend_device_t *dev, const xdev_kernel_image_t *image,
                                   void **module) {
    xdev_status_t st = xdev_shadow_orig(dev)->kernel->module_load(dev, image, module);
    bool host = image->format == XDEV_IMAGE_HOST_TABLE;
    if (st == XDEV_ERROR_NOT_SUPPORTED && host) { /* a GPU: its device image comes next */
        xdev_shadow_lock();
        void *old = t_host_build;
        t_host_build = shadow_module_load(image);
        if (old != NULL) shadow_module_unload(old);
        xdev_shadow_unlock();
    }
    if (st != XDEV_SUCCESS) return st;
    xdev_shadow_lock();
    void *sm = host ? shadow_module_load(image) : t_host_build;
    if (!host) t_host_build = NULL; /* the module owns it now */
    if (g_nmodules < SH_MAX_KERNELS) g_modules[g_nmodules++] = (sh_pair_t){*module, sm};
    xdev_shadow_unlock();
    return st;
}

static xdev_status_t w_module_unload(xdev_backend_device_t *dev, void *module) {
    xdev_shadow_lock();
    for (int i = 0; i < g_nmodules; i++)
        if (g_modules[i].real == module) {
            if (g_modules[i].shadow != NULL) shadow_module_unload(g_modules[i].shadow);
            g_modules[i] = g_modules[--g_nmodules];
            break;
        }
    xdev_shadow_unlock();
    return xdev_shadow_orig(dev)->kernel->module_unload(dev, module);
}

static xdev_status_t w_get_function(xdev_backend_device_t *dev, void *module, const char *name,
                                    void **function, xdev_kernel_attributes_t *attrs) {
    xdev_status_t st =
        xdev_shadow_orig(dev)->kernel->get_function(dev, module, name, function, attrs);
    if (st != XDEV_SUCCESS) return st;
    xdev_shadow_lock();
    void *sm = lookup_pair(module, g_nmodules, g_modules, sizeof g_modules[0]), *sf = NULL;
    const xdev_backend_api_t *c;
    xdev_backend_device_t *dv;
    void *s;
    if (sm != NULL && xdev_shadow_device(&c, &dv, &s)) {
        xdev_kernel_attributes_t a = {0};
        a.nparams = -1;
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        if (c->kernel->get_function(dv, sm, name, &sf, &a) != XDEV_SUCCESS) sf = NULL;
        xdev_core_error_restore(&saved);
    }
    if (g_nfunctions < SH_MAX_KERNELS &&
        lookup_pair(*function, g_nfunctions, g_functions, sizeof g_functions[0]) == NULL)
        g_functions[g_nfunctions++] = (sh_pair_t){*function, sf};
    xdev_shadow_unlock();
    return st;
}

static xdev_status_t w_launch(xdev_backend_device_t *dev, const xdev_launch_desc_t *d, void *s) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(dev)->kernel->launch(dev, d, s);
    sh_rec_t *r = st == XDEV_SUCCESS ? xdev_shadow_pend(SH_LAUNCH, 4, XDEV_DTYPE_U8) : NULL;
    if (r == NULL) return st;
    snprintf(r->detail, sizeof r->detail,
             "kernel %s grid (%u,%u,%u) block (%u,%u,%u) shared %zu bytes",
             d->name != NULL ? d->name : "?", d->grid.x, d->grid.y, d->grid.z, d->block.x,
             d->block.y, d->block.z, d->shared_bytes);
    xdev_shadow_lock();
    r->u.launch.shadow_fn =
        lookup_pair(d->function, g_nfunctions, g_functions, sizeof g_functions[0]);
    xdev_shadow_unlock();
    r->u.launch.d = *d;
    size_t total = 0;
    for (int i = 0; i < d->nargs; i++)
        total += d->arg_sizes[i];
    size_t head = (size_t)d->nargs * (sizeof(void *) + sizeof(size_t));
    unsigned char *heap = malloc(head + total + 1);
    if (heap == NULL) {
        r->unmirrored = "no host memory to keep the launch's arguments";
        return st;
    }
    void **args = (void **)heap;
    size_t *sizes = (size_t *)(heap + (size_t)d->nargs * sizeof(void *));
    unsigned char *bytes = heap + head;
    for (int i = 0; i < d->nargs; i++) {
        memcpy(bytes, d->args[i], d->arg_sizes[i]);
        args[i] = bytes;
        sizes[i] = d->arg_sizes[i];
        bytes += d->arg_sizes[i];
    }
    r->u.launch.heap = heap;
    r->u.launch.d.args = args;
    r->u.launch.d.arg_sizes = sizes;
    r->u.launch.d.name = NULL; /* may not outlive the call */
    if (r->u.launch.shadow_fn == NULL)
        r->unmirrored = "the kernel's module has no host build the CPU can run";
    return st;
}

/* ------------------------------------------------------------ FFT */

/* The backend's plans and the shadow device's (lock held). A record holds
 * a reference: the backend's plan may leave the plan cache (on another
 * thread) between an exec and its replay. */
#define SH_MAX_PLANS 256
typedef struct sh_plan {
    void *real, *shadow;
    size_t work;
    xdev_fft_precision_t precision;
    int refs; /* the table's (until plan_destroy) and the records' */
} sh_plan_t;
static sh_plan_t *g_plans[SH_MAX_PLANS];
static int g_nplans;

/* Drop a reference (lock held); the last destroys the shadow plan. */
static void plan_unref(sh_plan_t *p) {
    if (--p->refs > 0) return;
    const xdev_backend_api_t *c;
    xdev_backend_device_t *dv;
    void *s;
    if (p->shadow != NULL && xdev_shadow_device(&c, &dv, &s)) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        (void)c->stream->synchronize(dv, s);
        (void)c->fft->plan_destroy(dv, p->shadow);
        xdev_core_error_restore(&saved);
    }
    free(p);
}

void xdev_shadow_record_release(sh_rec_t *r) {
    if (r->kind == SH_FFT && r->u.fft.ref != NULL) {
        xdev_shadow_lock();
        plan_unref(r->u.fft.ref);
        xdev_shadow_unlock();
        r->u.fft.ref = NULL;
    }
}

static xdev_status_t w_plan_create(const xdev_fft_plan_desc_t *d, void **plan, size_t *work) {
    xdev_status_t st = xdev_shadow_orig(d->device)->fft->plan_create(d, plan, work);
    if (st != XDEV_SUCCESS) return st;
    xdev_shadow_lock();
    const xdev_backend_api_t *c;
    xdev_backend_device_t *dv;
    void *s;
    sh_plan_t *p = g_nplans < SH_MAX_PLANS ? calloc(1, sizeof *p) : NULL;
    if (p != NULL && xdev_shadow_device(&c, &dv, &s) &&
        XDEV_BACKEND_SLOT(c->fft, plan_create) != NULL) {
        xdev_fft_plan_desc_t sd = *d;
        sd.device = dv;
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        if (c->fft->plan_create(&sd, &p->shadow, &p->work) != XDEV_SUCCESS) p->shadow = NULL;
        xdev_core_error_restore(&saved);
    }
    if (p != NULL) {
        p->real = *plan;
        p->precision = d->precision;
        p->refs = 1;
        g_plans[g_nplans++] = p;
    }
    xdev_shadow_unlock();
    return st;
}

static xdev_status_t w_plan_destroy(xdev_backend_device_t *dev, void *plan) {
    xdev_shadow_lock();
    for (int i = 0; i < g_nplans; i++)
        if (g_plans[i]->real == plan) {
            sh_plan_t *p = g_plans[i];
            g_plans[i] = g_plans[--g_nplans];
            plan_unref(p);
            break;
        }
    xdev_shadow_unlock();
    return xdev_shadow_orig(dev)->fft->plan_destroy(dev, plan);
}

static xdev_status_t w_fft_exec(const xdev_fft_exec_desc_t *d) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(d->device)->fft->exec(d);
    if (st != XDEV_SUCCESS) return st;
    xdev_shadow_lock();
    int i = 0;
    while (i < g_nplans && g_plans[i]->real != d->plan)
        i++;
    sh_plan_t *p = i < g_nplans ? g_plans[i] : NULL;
    bool f64 = p != NULL && p->precision == XDEV_FFT_F64;
    sh_rec_t *r = xdev_shadow_pend(SH_FFT, f64 ? 8 : 4, f64 ? XDEV_DTYPE_F64 : XDEV_DTYPE_F32);
    if (r != NULL) {
        r->tolerant = true;
        memcpy(&r->u.fft.d, d, d->size < sizeof r->u.fft.d ? d->size : sizeof r->u.fft.d);
        r->u.fft.plan = p != NULL ? p->shadow : NULL;
        r->u.fft.work_size = p != NULL ? p->work : 0;
        r->u.fft.ref = p;
        if (p != NULL) p->refs++;
        snprintf(r->detail, sizeof r->detail, "fft %s, direction %d, scale %g", f64 ? "f64" : "f32",
                 (int)d->direction, d->scale);
        if (r->u.fft.plan == NULL) r->unmirrored = "the CPU backend made no plan for this FFT";
    }
    xdev_shadow_unlock();
    return st;
}

/* ------------------------------------------------------------ primitives */

typedef xdev_status_t (*sh_prim_fn)(const xdev_prim_desc_t *d, size_t *temp_bytes);

/* The slot of table p that runs a primitive record of kind k (NULL: none). */
static sh_prim_fn prim_fn(const xdev_prim_vtable_t *p, sh_kind_t k) {
    if (p == NULL) return NULL;
    switch (k) {
    case SH_REDUCE:
        return XDEV_BACKEND_SLOT(p, reduce);
    case SH_SCAN:
        return XDEV_BACKEND_SLOT(p, scan);
    case SH_SORT:
        return XDEV_BACKEND_SLOT(p, sort);
    case SH_SEGMENTED_SORT:
        return XDEV_BACKEND_SLOT(p, segmented_sort);
    case SH_SEGMENTED_REDUCE:
        return XDEV_BACKEND_SLOT(p, segmented_reduce);
    case SH_HISTOGRAM:
        return XDEV_BACKEND_SLOT(p, histogram_even);
    case SH_SELECT:
        return XDEV_BACKEND_SLOT(p, select_flagged);
    case SH_UNIQUE:
        return XDEV_BACKEND_SLOT(p, unique);
    case SH_RLE:
        return XDEV_BACKEND_SLOT(p, run_length_encode);
    case SH_SELECT_COMPARE:
        return XDEV_BACKEND_SLOT(p, select_compare);
    default:
        return NULL;
    }
}

static const char *const k_prim_ops[] = {"sum", "prod", "min", "max", "argmin", "argmax"};
static const char *prim_op_name(int op) {
    return op >= 0 && op < 6 ? k_prim_ops[op] : "?";
}

/* What the record's report says the call did. */
static void prim_detail(sh_rec_t *r, const xdev_prim_desc_t *d) {
    const char *dt = xdev_dtype_name(d->dtype) != NULL ? xdev_dtype_name(d->dtype) : "?";
    const char *det = (d->flags & XDEV_PRIM_FLAG_DETERMINISTIC) ? ", deterministic" : "";
    const char *desc = (d->flags & XDEV_PRIM_DESCENDING) ? ", descending" : "";
    char vals[48] = "";
    if (d->values_in != NULL) snprintf(vals, sizeof vals, " with %zu-byte values", d->value_size);
    switch (r->kind) {
    case SH_REDUCE:
    case SH_SCAN:
        snprintf(r->detail, sizeof r->detail, "%s op %d (%s) of %zu %s elements%s",
                 r->kind == SH_SCAN ? "scan" : "reduce", d->op, prim_op_name(d->op), d->count, dt,
                 det);
        break;
    case SH_SEGMENTED_REDUCE:
        snprintf(r->detail, sizeof r->detail,
                 "segmented_reduce op %d (%s) of %zu %s elements in %zu segments%s", d->op,
                 prim_op_name(d->op), d->count, dt, d->num_segments, det);
        break;
    case SH_SORT:
    case SH_SEGMENTED_SORT:
        snprintf(r->detail, sizeof r->detail, "%s of %zu %s keys%s, bits [%u, %u)%s",
                 r->kind == SH_SORT ? "sort" : "segmented_sort", d->count, dt, vals, d->begin_bit,
                 d->end_bit, desc);
        if (r->kind == SH_SEGMENTED_SORT) {
            size_t l = strlen(r->detail);
            snprintf(r->detail + l, sizeof r->detail - l, ", %zu segments", d->num_segments);
        }
        break;
    case SH_HISTOGRAM:
        snprintf(r->detail, sizeof r->detail,
                 "histogram_even of %zu %s samples, %zu bins over [%g, %g)", d->count, dt,
                 d->num_bins, d->lower, d->upper);
        break;
    case SH_SELECT:
        snprintf(r->detail, sizeof r->detail, "%s of %zu %zu-byte items",
                 d->flag_size > 1 ? "select_if's compaction" : "select_flagged", d->count,
                 xdev_dtype_size(d->dtype));
        break;
    case SH_SELECT_COMPARE: {
        static const char *const ops[] = {"<", "<=", ">", ">=", "==", "!="};
        const char *op = d->compare_op >= 0 && d->compare_op < 6 ? ops[d->compare_op] : "?";
        const char *ct =
            xdev_dtype_name(d->compare_dtype) != NULL ? xdev_dtype_name(d->compare_dtype) : "?";
        if (d->compare_dtype == XDEV_DTYPE_I64)
            snprintf(r->detail, sizeof r->detail,
                     "select_if (compare) of %zu %s items: in0 %s %lld in %s", d->count, dt, op,
                     (long long)d->compare_ivalue, ct);
        else
            snprintf(r->detail, sizeof r->detail,
                     "select_if (compare) of %zu %s items: in0 %s %.17g in %s", d->count, dt, op,
                     d->compare_value, ct);
        break;
    }
    default:
        snprintf(r->detail, sizeof r->detail, "%s of %zu %s items",
                 r->kind == SH_UNIQUE ? "unique" : "run_length_encode", d->count, dt);
        break;
    }
}

/* A primitive: run, then recorded with its descriptor (every operand is
 * device memory the replay finds a mirror of; the rest are values). */
static xdev_status_t prim_slot(sh_kind_t k, const xdev_prim_desc_t *d, size_t *temp_bytes) {
    sh_prim_fn fn = prim_fn(xdev_shadow_orig(d->device)->prim, k);
    if (d->temp == NULL) return fn(d, temp_bytes); /* the size query: no work */
    SH_STOPPED_CHECK();
    xdev_status_t st = fn(d, temp_bytes);
    bool red = k == SH_REDUCE || k == SH_SEGMENTED_REDUCE;
    bool arg = red && (d->op == XDEV_PRIM_ARGMIN || d->op == XDEV_PRIM_ARGMAX);
    size_t es = k == SH_HISTOGRAM || arg ? 8 : xdev_dtype_size(d->dtype);
    sh_rec_t *r = st == XDEV_SUCCESS ? xdev_shadow_pend(k, es <= 8 ? es : 8, d->dtype) : NULL;
    if (r == NULL) return st;
    memcpy(&r->u.prim, d, d->size < sizeof r->u.prim ? d->size : sizeof r->u.prim);
    r->u.prim.size = sizeof r->u.prim; /* the fields past d->size stay zero */
    /* temp stays the device's (step 5's COMPARE=sync copies it into the
     * mirror); the replay has temporaries of its own. */
    /* Floating sums and products within the tolerance: their order of
     * additions is the backend's. Bitwise: integers, min and max (exact in
     * any order), the arg ops, and deterministic mode (one order everywhere,
     * xdev/primitives.h); sorts, histograms and compactions move or count. */
    bool sum = d->op == XDEV_PRIM_SUM || (k != SH_SCAN && d->op == XDEV_PRIM_PROD);
    r->tolerant = (red || k == SH_SCAN) && sum && ((XDEV_DTYPE_FLOAT_MASK >> d->dtype) & 1u) &&
                  !(d->flags & XDEV_PRIM_FLAG_DETERMINISTIC);
    /* Rounding grows with the length of the reduction, whose order is the
     * backend's: log2(count) times the tolerance (an f32 product of 65537
     * elements differed by 1.04e-5 of the result between CUB and the CPU). */
    r->tol_scale = d->count > 2 ? log2((double)d->count) : 1;
    prim_detail(r, d);
    return st;
}

#define SH_PRIM_WRAPPER(name, kind)                                                                \
    static xdev_status_t w_##name(const xdev_prim_desc_t *d, size_t *temp_bytes) {                 \
        return prim_slot(kind, d, temp_bytes);                                                     \
    }
SH_PRIM_WRAPPER(reduce, SH_REDUCE)
SH_PRIM_WRAPPER(scan, SH_SCAN)
SH_PRIM_WRAPPER(sort, SH_SORT)
SH_PRIM_WRAPPER(segmented_sort, SH_SEGMENTED_SORT)
SH_PRIM_WRAPPER(segmented_reduce, SH_SEGMENTED_REDUCE)
SH_PRIM_WRAPPER(histogram_even, SH_HISTOGRAM)
SH_PRIM_WRAPPER(select_flagged, SH_SELECT)
SH_PRIM_WRAPPER(unique, SH_UNIQUE)
SH_PRIM_WRAPPER(run_length_encode, SH_RLE)
SH_PRIM_WRAPPER(select_compare, SH_SELECT_COMPARE)

/* Replay a primitive on the mirrors with the CPU's slot of the same name
 * and temporaries of its own (lock held). */
static xdev_status_t replay_prim(sh_rec_t *r, const xdev_backend_api_t *c,
                                 xdev_backend_device_t *dv, void *s) {
    sh_prim_fn fn = prim_fn(c->prim, r->kind);
    if (fn == NULL) return XDEV_ERROR_NOT_SUPPORTED;
    xdev_prim_desc_t d = r->u.prim;
    /* Every operand a mirror's: NULL stays NULL (an operand the call has not). */
    const void **ops[] = {&d.in,
                          (const void **)&d.out,
                          &d.values_in,
                          (const void **)&d.values_out,
                          (const void **)&d.offsets,
                          &d.select_flags,
                          (const void **)&d.num_out};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (*ops[i] == NULL) continue;
        if ((*ops[i] = xdev_shadow_to_mirror(*ops[i])) == NULL) {
            r->unmirrored = "an operand is outside the mirrored device allocations";
            return XDEV_SUCCESS;
        }
    }
    d.device = dv;
    d.stream = s;
    d.temp = NULL;
    size_t tb = 0;
    xdev_status_t st = fn(&d, &tb);
    if (st != XDEV_SUCCESS) return st;
    d.temp = malloc(tb ? tb : 1);
    d.temp_bytes = tb;
    if (d.temp == NULL) return XDEV_ERROR_OUT_OF_MEMORY;
    st = fn(&d, &tb);
    if (st == XDEV_SUCCESS) st = c->stream->synchronize(dv, s); /* before the temp is freed */
    free(d.temp);
    return st;
}

size_t xdev_shadow_prim_written(const sh_rec_t *how, sh_mirror_t *m, const void *p, size_t len,
                                sh_rec_t *h) {
    *h = *how;
    if (!sh_kind_is_prim(how->kind)) return len;
    const xdev_prim_desc_t *d = &how->u.prim;
    bool counted = how->kind == SH_SELECT || how->kind == SH_SELECT_COMPARE ||
                   how->kind == SH_UNIQUE || how->kind == SH_RLE;
    bool bounded = false;
    if (p == d->num_out) {
        h->elem = sizeof(int64_t);
    } else if (d->values_out != NULL && p == d->values_out) {
        h->elem = how->kind == SH_RLE ? sizeof(int64_t) : d->value_size;
        bounded = counted;
    } else if (p == d->out) {
        bounded = counted;
    }
    if (!bounded || d->num_out == NULL) return len;
    const void *kp = xdev_shadow_to_mirror(d->num_out);
    if (kp == NULL) return len;
    int64_t k;
    memcpy(&k, kp, sizeof k);
    size_t keep = k <= 0 ? 0 : (uint64_t)k > d->count ? d->count : (size_t)k;
    size_t bytes = keep > len / (h->elem ? h->elem : 1) ? len : keep * h->elem;
    /* The unspecified tail: the mirror takes the device's, uncompared. */
    if (bytes < len) xdev_shadow_resync(m, (const unsigned char *)p + bytes, len - bytes);
    return bytes;
}

/* ------------------------------------------------------------ replay */

xdev_status_t xdev_shadow_replay_compute(sh_rec_t *r, const xdev_backend_api_t *c,
                                         xdev_backend_device_t *dv, void *s) {
    switch (r->kind) {
    case SH_LAUNCH: {
        xdev_launch_desc_t d = r->u.launch.d;
        d.function = r->u.launch.shadow_fn;
        /* Pointer arguments into a mirrored allocation become the mirror's. */
        for (int i = 0; i < d.nargs; i++)
            if (d.arg_sizes[i] == sizeof(void *)) {
                void *p;
                memcpy(&p, d.args[i], sizeof p);
                void *m = xdev_shadow_to_mirror(p);
                if (m != NULL) memcpy(d.args[i], &m, sizeof m);
            }
        return c->kernel->launch(dv, &d, s);
    }
    case SH_FFT: {
        xdev_fft_exec_desc_t d = r->u.fft.d;
        d.in = xdev_shadow_to_mirror(d.in);
        d.out = xdev_shadow_to_mirror(d.out);
        if (d.in == NULL || d.out == NULL) {
            r->unmirrored = "an operand is outside the mirrored device allocations";
            return XDEV_SUCCESS;
        }
        d.plan = r->u.fft.plan;
        d.work_size = r->u.fft.work_size;
        d.work = d.work_size ? malloc(d.work_size) : NULL;
        if (d.work_size && d.work == NULL) return XDEV_ERROR_OUT_OF_MEMORY;
        d.device = dv;
        d.stream = s;
        xdev_status_t st = c->fft->exec(&d);
        if (st == XDEV_SUCCESS) st = c->stream->synchronize(dv, s); /* before the work is freed */
        free(d.work);
        return st;
    }
    default:
        if (sh_kind_is_prim(r->kind)) return replay_prim(r, c, dv, s);
        return XDEV_ERROR_INTERNAL;
    }
}

/* ------------------------------------------------------------ install */

static xdev_kernel_vtable_t g_wkernel[XDEV_MAX_DEVICE_TYPES];
static xdev_fft_vtable_t g_wfft[XDEV_MAX_DEVICE_TYPES];
static xdev_prim_vtable_t g_wprim[XDEV_MAX_DEVICE_TYPES];

#define SH_COPY_TABLE(w, t) memcpy(&(w), (t), (t)->size < sizeof(w) ? (t)->size : sizeof(w))
#define SH_WRAP(w, orig, slot, fn)                                                                 \
    do {                                                                                           \
        if (XDEV_BACKEND_SLOT(orig, slot) != NULL) (w).slot = fn;                                  \
    } while (0)

void xdev_shadow_install_compute(xdev_backend_api_t *api, int t) {
    if (api->kernel != NULL && XDEV_BACKEND_SLOT(api->kernel, module_load) != NULL) {
        const xdev_kernel_vtable_t *k = api->kernel;
        SH_COPY_TABLE(g_wkernel[t], k);
        SH_WRAP(g_wkernel[t], k, module_load, w_module_load);
        SH_WRAP(g_wkernel[t], k, module_unload, w_module_unload);
        SH_WRAP(g_wkernel[t], k, get_function, w_get_function);
        SH_WRAP(g_wkernel[t], k, launch, w_launch);
        api->kernel = &g_wkernel[t];
    }
    if (api->fft != NULL && XDEV_BACKEND_SLOT(api->fft, plan_create) != NULL) {
        const xdev_fft_vtable_t *f = api->fft;
        SH_COPY_TABLE(g_wfft[t], f);
        SH_WRAP(g_wfft[t], f, plan_create, w_plan_create);
        SH_WRAP(g_wfft[t], f, plan_destroy, w_plan_destroy);
        SH_WRAP(g_wfft[t], f, exec, w_fft_exec);
        api->fft = &g_wfft[t];
    }
    if (api->prim != NULL) { /* a backend may have any of the primitives */
        const xdev_prim_vtable_t *p = api->prim;
        SH_COPY_TABLE(g_wprim[t], p);
        SH_WRAP(g_wprim[t], p, reduce, w_reduce);
        SH_WRAP(g_wprim[t], p, scan, w_scan);
        SH_WRAP(g_wprim[t], p, sort, w_sort);
        SH_WRAP(g_wprim[t], p, segmented_sort, w_segmented_sort);
        SH_WRAP(g_wprim[t], p, segmented_reduce, w_segmented_reduce);
        SH_WRAP(g_wprim[t], p, histogram_even, w_histogram_even);
        SH_WRAP(g_wprim[t], p, select_flagged, w_select_flagged);
        SH_WRAP(g_wprim[t], p, unique, w_unique);
        SH_WRAP(g_wprim[t], p, run_length_encode, w_run_length_encode);
        SH_WRAP(g_wprim[t], p, select_compare, w_select_compare);
        api->prim = &g_wprim[t];
    }
}
