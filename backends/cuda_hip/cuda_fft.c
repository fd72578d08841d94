/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_fft.c - the fft table over cuFFT.
 *
 * A plan is cufftCreate + cufftSetAutoAllocation(0) + cufftMakePlanMany64
 * with the core's normalised layout (every embedding, stride and distance
 * filled in), made with the plan's device current: C2C/R2C/C2R for f32,
 * Z2Z/D2Z/Z2D for f64. One cuFFT plan serves both directions and in- or
 * out-of-place execs. Its work size goes back to the core, which allocates
 * the work area from the caching allocator on the exec's stream; an exec
 * sets the stream (cufftSetStream) and the work area (cufftSetWorkArea),
 * each only when it differs from the plan's last one, runs cufftExec*, then
 * applies desc->scale when it is not 1 (cuda_fft_scale.cu).
 *
 * Destroying a plan: the core's plan cache waits for the plan's device
 * before it calls plan_destroy (core/math/fft_plan_cache.c), so an exec costs no
 * completion event here and plan_destroy is a plain cufftDestroy. */
#ifdef XC_HAVE_CUFFT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include XC_FFT_HEADER

typedef struct fft_plan {
    cufftHandle h;
    cufftType type;
    xdev_fft_plan_desc_t d; /* the layout, for the scaling kernel */
    size_t work_size;
    void *stream; /* last cufftSetStream */
    void *work;   /* last cufftSetWorkArea */
    bool stream_set, work_set;
} fft_plan_t;

static const char *result_name(cufftResult r) {
    switch (r) {
    case CUFFT_INVALID_PLAN:
        return XC_STR(CUFFT_INVALID_PLAN);
    case CUFFT_ALLOC_FAILED:
        return XC_STR(CUFFT_ALLOC_FAILED);
    case CUFFT_INVALID_TYPE:
        return XC_STR(CUFFT_INVALID_TYPE);
    case CUFFT_INVALID_VALUE:
        return XC_STR(CUFFT_INVALID_VALUE);
    case CUFFT_INTERNAL_ERROR:
        return XC_STR(CUFFT_INTERNAL_ERROR);
    case CUFFT_EXEC_FAILED:
        return XC_STR(CUFFT_EXEC_FAILED);
    case CUFFT_SETUP_FAILED:
        return XC_STR(CUFFT_SETUP_FAILED);
    case CUFFT_INVALID_SIZE:
        return XC_STR(CUFFT_INVALID_SIZE);
    case CUFFT_UNALIGNED_DATA:
        return XC_STR(CUFFT_UNALIGNED_DATA);
    case CUFFT_INVALID_DEVICE:
        return XC_STR(CUFFT_INVALID_DEVICE);
    case CUFFT_NO_WORKSPACE:
        return XC_STR(CUFFT_NO_WORKSPACE);
    case CUFFT_NOT_IMPLEMENTED:
        return XC_STR(CUFFT_NOT_IMPLEMENTED);
    case CUFFT_NOT_SUPPORTED:
        return XC_STR(CUFFT_NOT_SUPPORTED);
    default:
        return XC_STR(cufftResult);
    }
}

/* Report a failed cuFFT call as "<what>: <result name> (<code>)". */
static xdev_status_t fft_fail(cufftResult r, const char *what, int device) {
    (void)cudaGetLastError(); /* a failed launch inside cuFFT leaves a non-sticky error */
    xdev_status_t status = XDEV_ERROR_BACKEND;
    if (r == CUFFT_ALLOC_FAILED) status = XDEV_ERROR_OUT_OF_MEMORY;
    if (r == CUFFT_NOT_SUPPORTED || r == CUFFT_NOT_IMPLEMENTED || r == CUFFT_INVALID_SIZE)
        status = XDEV_ERROR_NOT_SUPPORTED;
    return xc_error(status, "%s on device %d: %s (%d)", what, device, result_name(r), (int)r);
}

static cufftType type_of(const xdev_fft_plan_desc_t *d) {
    bool f32 = d->precision == XDEV_FFT_F32;
    switch (d->type) {
    case XDEV_FFT_R2C:
        return f32 ? CUFFT_R2C : CUFFT_D2Z;
    case XDEV_FFT_C2R:
        return f32 ? CUFFT_C2R : CUFFT_Z2D;
    default:
        return f32 ? CUFFT_C2C : CUFFT_Z2Z;
    }
}

static xdev_status_t fft_plan_create(const xdev_fft_plan_desc_t *desc, void **plan,
                                     size_t *work_size) {
    fft_plan_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return xc_error(XDEV_ERROR_OUT_OF_MEMORY, XC_NAME ":%d no host memory for an FFT plan",
                        desc->device->index);
    memcpy(&p->d, desc, desc->size < sizeof p->d ? desc->size : sizeof p->d);
    p->type = type_of(&p->d);
    long long n[XDEV_FFT_MAX_RANK], inembed[XDEV_FFT_MAX_RANK], onembed[XDEV_FFT_MAX_RANK];
    for (int i = 0; i < XDEV_FFT_MAX_RANK; i++) {
        n[i] = p->d.n[i];
        inembed[i] = p->d.inembed[i];
        onembed[i] = p->d.onembed[i];
    }
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, desc->device->index);
    if (st != XDEV_SUCCESS) {
        free(p);
        return st;
    }
    cufftResult r = cufftCreate(&p->h);
    if (r != CUFFT_SUCCESS) {
        st = fft_fail(r, XC_STR(cufftCreate), desc->device->index);
        xc_guard_end(&g);
        free(p);
        return st;
    }
    r = cufftSetAutoAllocation(p->h, 0); /* the core provides the work area */
    size_t ws = 0;
    if (r == CUFFT_SUCCESS)
        r = cufftMakePlanMany64(p->h, p->d.rank, n, inembed, p->d.istride, p->d.idist, onembed,
                                p->d.ostride, p->d.odist, p->type, p->d.batch, &ws);
    if (r != CUFFT_SUCCESS) {
        char what[256];
        snprintf(what, sizeof what,
                 XC_STR(cufftMakePlanMany64) "(rank %d, n %lldx%lldx%lld, batch %lld, type 0x%x)",
                 p->d.rank, n[0], p->d.rank > 1 ? n[1] : 1, p->d.rank > 2 ? n[2] : 1,
                 (long long)p->d.batch, (unsigned)p->type);
        st = fft_fail(r, what, desc->device->index);
        (void)cufftDestroy(p->h);
        xc_guard_end(&g);
        free(p);
        return st;
    }
    xc_guard_end(&g);
    p->work_size = ws;
    *plan = p;
    *work_size = ws;
    return XDEV_SUCCESS;
}

/* Release a plan; the core has waited for its queued execs. */
static xdev_status_t fft_plan_destroy(xc_device_t *dev, void *plan) {
    int device = dev->index;
    fft_plan_t *p = plan;
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, device);
    if (st != XDEV_SUCCESS) return st;
    cufftResult r = cufftDestroy(p->h);
    xc_guard_end(&g);
    free(p);
    if (r != CUFFT_SUCCESS) return fft_fail(r, XC_STR(cufftDestroy), device);
    return XDEV_SUCCESS;
}

static cufftResult run(const fft_plan_t *p, const xdev_fft_exec_desc_t *x) {
    int dir = x->direction == XDEV_FFT_INVERSE ? CUFFT_INVERSE : CUFFT_FORWARD;
    switch (p->type) {
    case CUFFT_C2C:
        return cufftExecC2C(p->h, x->in, x->out, dir);
    case CUFFT_R2C:
        return cufftExecR2C(p->h, x->in, x->out);
    case CUFFT_C2R:
        return cufftExecC2R(p->h, x->in, x->out);
    case CUFFT_Z2Z:
        return cufftExecZ2Z(p->h, x->in, x->out, dir);
    case CUFFT_D2Z:
        return cufftExecD2Z(p->h, x->in, x->out);
    default:
        return cufftExecZ2D(p->h, x->in, x->out);
    }
}

/* With the device current (the core serialises execs of one plan). */
static xdev_status_t exec_locked(fft_plan_t *p, const xdev_fft_exec_desc_t *x) {
    cufftResult r;
#ifndef XC_HAVE_KERNELS /* refused before the transform writes anything */
    if (x->scale != 1.0)
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        XC_NAME ": FFT output scaling by %g needs device code, and this plugin was "
                                "built without a device compiler (nvcc / hipcc)",
                        x->scale);
#endif
    if (!p->stream_set || p->stream != x->stream) {
        if ((r = cufftSetStream(p->h, (cudaStream_t)x->stream)) != CUFFT_SUCCESS)
            return fft_fail(r, XC_STR(cufftSetStream), x->device->index);
        p->stream = x->stream;
        p->stream_set = true;
    }
    if (p->work_size > 0 && (!p->work_set || p->work != x->work)) {
        if (x->work == NULL)
            return xc_error(XDEV_ERROR_INVALID_VALUE,
                            XC_NAME ":%d FFT exec without the plan's %zu-byte work area",
                            x->device->index, p->work_size);
        if ((r = cufftSetWorkArea(p->h, x->work)) != CUFFT_SUCCESS)
            return fft_fail(r, XC_STR(cufftSetWorkArea), x->device->index);
        p->work = x->work;
        p->work_set = true;
    }
    if ((r = run(p, x)) != CUFFT_SUCCESS) {
        p->work_set = false; /* re-set next time, whatever cuFFT kept */
        return fft_fail(r, "cufftExec", x->device->index);
    }
#ifdef XC_HAVE_KERNELS
    if (x->scale != 1.0) return xc_fft_scale(&p->d, x->out, x->scale, (cudaStream_t)x->stream);
#endif
    return XDEV_SUCCESS;
}

static xdev_status_t fft_exec(const xdev_fft_exec_desc_t *x) {
    xc_guard_t g;
    xdev_status_t st = xc_guard_begin(&g, x->device->index);
    if (st != XDEV_SUCCESS) return st;
    st = exec_locked(x->plan, x);
    xc_guard_end(&g);
    return st;
}

const xdev_fft_vtable_t xc_fft_vtable = {
    .size = sizeof(xdev_fft_vtable_t),
    .plan_create = fft_plan_create,
    .plan_destroy = fft_plan_destroy,
    .exec = fft_exec,
};

#else /* !XC_HAVE_CUFFT: the toolkit had no cuFFT; the fft table is NULL */
typedef int xc_fft_unused_t;
#endif
