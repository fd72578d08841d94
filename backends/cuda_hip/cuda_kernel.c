/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_kernel.c - the kernel table: launch limits, modules
 * loaded from images, functions found in them, and launches.
 *
 * Written in the names of CUDA's driver API (cuModuleLoadDataEx,
 * cuModuleGetFunction, cuFuncGetAttribute, cuLaunchKernel), which is where
 * modules live. The two plugins reach those calls differently, and the one
 * vendor section below says how:
 * - CUDA: the plugin links only the static runtime, so the driver's calls are
 *   looked up once through cudaGetDriverEntryPointByVersion (as cuda_vmm.c
 *   does) and called through pointers. Modules belong to the device's
 *   primary context, which the runtime's device guard makes current; a
 *   thread that never made a runtime call that binds it has no current
 *   context, so the slots bind it (cudaSetDevice, which since CUDA 12 makes
 *   the primary context current) before a driver call. cuFuncGetParamInfo
 *   (driver 12.4+) gives each parameter's size; without it they are unknown.
 * - HIP: libamdhip64 exports the twins (hipModuleLoadDataEx,
 *   hipModuleGetFunction, hipFuncGetAttribute, hipModuleLaunchKernel), which
 *   vendor/hip_vendor.h maps the driver names to; HIP has no context to bind
 *   and no parameter query, so parameter sizes are unknown there.
 * Which image formats each takes (XC_IMAGE_TAKES) and how a device's code
 * target is named in messages (xc_vendor_arch_name) are in vendor/.
 *
 * The core checks every argument, size and limit before a slot is called,
 * and waits for the device before module_unload; what is left here is the
 * vendor's own failures, reported as "<call>: <NAME> (<code>): <text>" with
 * what the error means for this call (a JIT log, the device's code target, a
 * lost context). Device numbers in them are the vendor's (physical) ones; the
 * core prefixes module_load failures with the xdev device name. */
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* ============================================================ vendor section */
#ifndef XC_VENDOR_HIP
#include <cuda.h>

/* The driver's calls this file makes, found once (lookup). */
static struct {
    pthread_once_t once;
    char missing[48]; /* the first required call the driver lacks */
    CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    /* optional: driver 12.4+ */
    CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *);
    /* optional: a kernel's signature in its image (device_signature) */
    CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
} g_drv = {.once = PTHREAD_ONCE_INIT};

/* A driver call through its pointer. */
#define XK(call) g_drv.call

static void lookup(void) {
    static const xc_driver_sym_t required[] = {
#define SYM(name) {#name, offsetof(__typeof__(g_drv), name)}
        SYM(cuModuleLoadDataEx), SYM(cuModuleUnload),   SYM(cuModuleGetFunction),
        SYM(cuFuncGetAttribute), SYM(cuLaunchKernel),   SYM(cuCtxGetCurrent),
        SYM(cuGetErrorName),     SYM(cuGetErrorString),
#undef SYM
    };
    const char *missing = xc_driver_lookup(required, sizeof required / sizeof required[0], &g_drv);
    if (missing != NULL) {
        snprintf(g_drv.missing, sizeof g_drv.missing, "%s", missing);
        return;
    }
    void *fn = xc_driver_entry("cuFuncGetParamInfo", 12040);
    memcpy(&g_drv.cuFuncGetParamInfo, &fn, sizeof fn);
    fn = xc_driver_entry("cuModuleGetGlobal", 12000);
    memcpy(&g_drv.cuModuleGetGlobal, &fn, sizeof fn);
    fn = xc_driver_entry("cuMemcpyDtoH", 12000);
    memcpy(&g_drv.cuMemcpyDtoH, &fn, sizeof fn);
}

static bool has_global_reads(void) {
    return g_drv.cuModuleGetGlobal != NULL && g_drv.cuMemcpyDtoH != NULL;
}

/* XDEV_ERROR_NOT_SUPPORTED naming the call a driver too old lacks. */
static xdev_status_t drv_ready(int device) {
    pthread_once(&g_drv.once, lookup);
    if (g_drv.missing[0] != '\0')
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "kernels need the CUDA driver's %s, which this driver (device %d) lacks",
                        g_drv.missing, device);
    return XDEV_SUCCESS;
}

static void drv_error_text(CUresult r, const char **name, const char **text) {
    if (g_drv.cuGetErrorName == NULL || g_drv.cuGetErrorName(r, name) != CUDA_SUCCESS)
        *name = "CUDA_ERROR_UNKNOWN";
    if (g_drv.cuGetErrorString == NULL || g_drv.cuGetErrorString(r, text) != CUDA_SUCCESS)
        *text = "unrecognized error code";
}

/* A fault of an earlier kernel: the context is lost, every later call of
 * the process fails with it. */
static bool drv_is_fault(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
        return true;
    default:
        return false;
    }
}

/* Make the device's primary context current for the driver calls (the guard
 * made `device` the runtime's current device). */
static xdev_status_t bind_context(int device) {
    CUcontext ctx = NULL;
    if (g_drv.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != NULL) return XDEV_SUCCESS;
    XC_CALL(cudaSetDevice(device), XC_STR(cudaSetDevice) "(%d)", device);
    if (g_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == NULL)
        return xc_error(XDEV_ERROR_BACKEND,
                        "no CUDA context is current after cudaSetDevice(%d) (the device's "
                        "primary context)",
                        device);
    return XDEV_SUCCESS;
}

/* The context each device's modules were loaded in (its primary context):
 * a launch from a thread where it is current needs neither the runtime's
 * cudaGetDevice nor a guard - one cuCtxGetCurrent (the launch's fast path). */
static _Atomic(CUcontext) g_loaded_ctx[XC_MAX_DEVICES];

static void note_loaded_context(int device) {
    CUcontext ctx = NULL;
    if (g_drv.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != NULL)
        atomic_store_explicit(&g_loaded_ctx[device], ctx, memory_order_relaxed);
}

static bool loaded_context_current(int device) {
    CUcontext want = atomic_load_explicit(&g_loaded_ctx[device], memory_order_relaxed), cur = NULL;
    return want != NULL && g_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == want;
}

/* Each parameter's size (the first XDEV_KERNEL_MAX_PARAMS of them) and the
 * count, or -1 when the driver cannot say. */
static int param_info(CUfunction f, uint32_t *sizes) {
    if (g_drv.cuFuncGetParamInfo == NULL) return -1;
    for (size_t i = 0; i <= 32768; i++) { /* a kernel's parameters fit in 32 KiB */
        size_t offset = 0, size = 0;
        CUresult r = g_drv.cuFuncGetParamInfo(f, i, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE) return (int)i; /* past the last one */
        if (r != CUDA_SUCCESS) return -1;
        if (i < XDEV_KERNEL_MAX_PARAMS) sizes[i] = (uint32_t)size;
    }
    return -1;
}

#else /* XC_VENDOR_HIP: libamdhip64's own calls, under the driver names */

#define XK(call) call

static xdev_status_t drv_ready(int device) {
    (void)device;
    return XDEV_SUCCESS;
}

static void drv_error_text(CUresult r, const char **name, const char **text) {
    *name = cudaGetErrorName(r);
    *text = cudaGetErrorString(r);
}

static bool drv_is_fault(CUresult r) {
    return r == hipErrorIllegalAddress || r == hipErrorLaunchFailure || r == hipErrorAssert ||
           r == hipErrorLaunchTimeOut;
}

#if defined(__HIP_PLATFORM_NVIDIA__)
/* On HIP's NVIDIA platform the module calls are CUDA's driver calls, which
 * act on the thread's current context, not on the runtime's device: a
 * thread that made no runtime call needing one has none (the H200 run:
 * hipModuleLoadDataEx answered "invalid device context"). So make the
 * device's primary context current, as the CUDA branch does. */
static xdev_status_t bind_context(int device) {
    hipCtx_t ctx = NULL;
    if (hipCtxGetCurrent(&ctx) == hipSuccess && ctx != NULL) return XDEV_SUCCESS;
    XC_CALL(cudaSetDevice(device), XC_STR(cudaSetDevice) "(%d)", device);
    if (hipCtxGetCurrent(&ctx) != hipSuccess || ctx == NULL)
        return xc_error(XDEV_ERROR_BACKEND,
                        "no context is current after hipSetDevice(%d) (the device's "
                        "primary context, on HIP's NVIDIA platform)",
                        device);
    return XDEV_SUCCESS;
}
#else
/* HIP's module calls act on the current device: the guard is enough. */
static xdev_status_t bind_context(int device) {
    (void)device;
    return XDEV_SUCCESS;
}
#endif

static void note_loaded_context(int device) {
    (void)device;
}

static bool loaded_context_current(int device) {
    (void)device;
    return false; /* HIP: the guard decides */
}

static bool has_global_reads(void) {
    return true; /* hipModuleGetGlobal, hipMemcpyDtoH */
}

/* HIP 5.2 has no parameter query. */
static int param_info(CUfunction f, uint32_t *sizes) {
    (void)f;
    (void)sizes;
    return -1;
}
#endif /* vendor section */

/* ============================================================ shared */

/* Every slot's start: the driver's calls found, the device current (the
 * guard, ended by the caller when this succeeds) with its context bound. */
static xdev_status_t enter(int device, xc_guard_t *g) {
    xdev_status_t st = drv_ready(device);
    if (st != XDEV_SUCCESS) return st;
    if ((st = xc_guard_begin(g, device)) != XDEV_SUCCESS) return st;
    if ((st = bind_context(device)) != XDEV_SUCCESS) {
        xc_guard_end(g);
        return st;
    }
    return XDEV_SUCCESS;
}

/* Report a failed driver call: "<what>: <NAME> (<code>): <text>[; <hint>]".
 * Out of memory and faults get their own statuses, the rest is
 * XDEV_ERROR_BACKEND. Not XDEV_ERROR_NOT_SUPPORTED, even for an image without
 * code for the device: from module_load that status means "not a format this
 * backend takes", and the core drops the message and offers the next image. */
__attribute__((format(printf, 3, 4))) static xdev_status_t drv_fail(CUresult r, const char *hint,
                                                                    const char *what, ...) {
    (void)cudaGetLastError(); /* HIP records module failures as the thread's last error */
    char call[512];
    va_list ap;
    va_start(ap, what);
    vsnprintf(call, sizeof call, what, ap);
    va_end(ap);
    const char *name = NULL, *text = NULL;
    drv_error_text(r, &name, &text);
    xdev_status_t status = XDEV_ERROR_BACKEND;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) status = XDEV_ERROR_OUT_OF_MEMORY;
    if (drv_is_fault(r)) {
        status = XDEV_ERROR_LAUNCH_FAILURE;
        if (hint == NULL)
            hint = "an earlier kernel on this device faulted; its context is lost and every "
                   "later call on the device fails until the process exits";
    }
    return xc_error(status, "%s: %s (%d): %s%s%s", call, name, (int)r, text,
                    hint != NULL ? "; " : "", hint != NULL ? hint : "");
}

/* kernel.limits: the device's attributes. Shared memory is the default
 * per-block limit (48 KiB on NVIDIA); opting a kernel into more is not
 * offered. */
static xdev_status_t kernel_limits(xc_device_t *dev, xdev_launch_limits_t *out) {
    int device = dev->index;
    static const struct {
        enum cudaDeviceAttr attr;
        const char *name;
    } attrs[] = {
#define ATTR(a) {a, #a}
        ATTR(cudaDevAttrMaxBlockDimX), ATTR(cudaDevAttrMaxBlockDimY),
        ATTR(cudaDevAttrMaxBlockDimZ), ATTR(cudaDevAttrMaxThreadsPerBlock),
        ATTR(cudaDevAttrMaxGridDimX),  ATTR(cudaDevAttrMaxGridDimY),
        ATTR(cudaDevAttrMaxGridDimZ),  ATTR(cudaDevAttrMaxSharedMemoryPerBlock),
        ATTR(cudaDevAttrWarpSize),
#undef ATTR
    };
    int v[sizeof attrs / sizeof attrs[0]];
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        XC_CALL(cudaDeviceGetAttribute(&v[i], attrs[i].attr, device),
                XC_STR(cudaDeviceGetAttribute) "(%s, %d)", attrs[i].name, device);
        if (v[i] <= 0)
            return xc_error(XDEV_ERROR_BACKEND, XC_STR(cudaDeviceGetAttribute) "(%s, %d) gave %d",
                            attrs[i].name, device, v[i]);
    }
    for (int d = 0; d < 3; d++) {
        out->max_block[d] = (unsigned)v[d];
        out->max_grid[d] = (unsigned)v[4 + d];
    }
    out->max_threads_per_block = (unsigned)v[3];
    out->max_shared_bytes = (size_t)v[7];
    out->warp_size = v[8];
    return XDEV_SUCCESS;
}

/* Flatten the JIT's error log into one line for a message. */
static void one_line(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' || s[i] == '\r') s[i] = ' ';
}

static xdev_status_t kernel_module_load(xc_device_t *dev, const xdev_kernel_image_t *image,
                                        void **module) {
    int device = dev->index;
    if (!XC_IMAGE_TAKES(image->format))
        return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                        "a %s image cannot be loaded: the " XC_NAME
                        " backend takes " XC_IMAGE_KINDS,
                        xdev_support_image_format_name(image->format));
    if (image->format == XDEV_IMAGE_PTX && memchr(image->data, '\0', image->size) == NULL)
        return xc_error(XDEV_ERROR_INVALID_VALUE,
                        "the PTX image has no terminating NUL within its %zu bytes", image->size);
    xc_guard_t g;
    xdev_status_t st = enter(device, &g);
    if (st != XDEV_SUCCESS) return st;
    /* The JIT's error log (PTX that does not compile says where and why). */
    char log[1024] = "";
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log};
    CUmodule m = NULL;
    CUresult r = XK(cuModuleLoadDataEx)(&m, image->data, 2, opts, vals);
    if (r == CUDA_SUCCESS) note_loaded_context(device);
    xc_guard_end(&g);
    if (r != CUDA_SUCCESS) {
        log[sizeof log - 1] = '\0';
        one_line(log);
        char hint[sizeof log + 160] = "";
        if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) {
            char arch[64];
            xc_vendor_arch_name(device, arch, sizeof arch);
            snprintf(hint, sizeof hint, "the image has no code for %s%s", arch,
                     XC_IMAGE_TAKES(XDEV_IMAGE_PTX) ? " and no PTX the driver can compile for it"
                                                    : "");
        } else if (log[0] != '\0') {
            snprintf(hint, sizeof hint, "JIT log: %s", log);
        }
        return drv_fail(r, hint[0] != '\0' ? hint : NULL,
                        XC_STR(cuModuleLoadDataEx) "(%s image, %zu bytes)",
                        xdev_support_image_format_name(image->format), image->size);
    }
    *module = m;
    return XDEV_SUCCESS;
}

/* The core synchronized the device and no launch uses the module. */
static xdev_status_t kernel_module_unload(xc_device_t *dev, void *module) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = enter(device, &g);
    if (st != XDEV_SUCCESS) return st;
    CUresult r = XK(cuModuleUnload)((CUmodule)module);
    xc_guard_end(&g);
    if (r != CUDA_SUCCESS) return drv_fail(r, NULL, XC_STR(cuModuleUnload) " on device %d", device);
    return XDEV_SUCCESS;
}

/* The signature the dialect compiled into the image beside kernel `name`
 * (xdev/support/kernel_sig.h): the parameter count, sizes and kinds, so a
 * kernel compiled at run time is checked at launch like one with a host
 * table. Kept only when it agrees with the driver's own count and sizes
 * (where it can say). The copy is synchronous: the thread's capture mode is
 * relaxed around it, since another thread's global-mode capture forbids
 * such calls and this one touches no stream. Nothing changes when the image
 * has none (a kernel not written in the dialect) or the read fails. */
static void device_signature(CUmodule m, const char *name, xdev_kernel_attributes_t *attrs) {
    char sym[160];
    if (!has_global_reads() ||
        snprintf(sym, sizeof sym, XDEV_KERNEL_SIG_PREFIX "%s", name) >= (int)sizeof sym)
        return;
    CUdeviceptr p = 0;
    size_t bytes = 0;
    unsigned words[XDEV_KERNEL_MAX_PARAMS + 2];
    if (XK(cuModuleGetGlobal)(&p, &bytes, m, sym) != CUDA_SUCCESS || bytes < 2 * sizeof(unsigned) ||
        bytes > sizeof words || bytes % sizeof(unsigned) != 0) {
        (void)cudaGetLastError(); /* HIP records the miss as the thread's last error */
        return;
    }
    xc_capture_mode_t mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    CUresult r = XK(cuMemcpyDtoH)(words, p, bytes);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    int n = (int)(bytes / sizeof(unsigned)) - 2;
    if (r != CUDA_SUCCESS || words[0] != XDEV_KERNEL_SIG_MAGIC || words[n + 1] != 0u ||
        (attrs->nparams >= 0 && attrs->nparams != n)) {
        (void)cudaGetLastError();
        return;
    }
    const unsigned size_mask = (1u << XDEV_KERNEL_SIG_KIND_SHIFT) - 1u;
    for (int i = 0; i < n; i++)
        if (attrs->nparams >= 0 && attrs->param_sizes[i] != (words[1 + i] & size_mask)) return;
    attrs->nparams = n;
    for (int i = 0; i < n; i++) {
        attrs->param_sizes[i] = words[1 + i] & size_mask;
        attrs->param_kinds[i] = (uint8_t)(words[1 + i] >> XDEV_KERNEL_SIG_KIND_SHIFT);
    }
}

static xdev_status_t kernel_get_function(xc_device_t *dev, void *module, const char *name,
                                         void **function, xdev_kernel_attributes_t *attrs) {
    int device = dev->index;
    xc_guard_t g;
    xdev_status_t st = enter(device, &g);
    if (st != XDEV_SUCCESS) return st;
    CUfunction f = NULL;
    int max_threads = 0, static_shared = 0;
    const char *call = XC_STR(cuModuleGetFunction);
    CUresult r = XK(cuModuleGetFunction)(&f, (CUmodule)module, name);
    if (r == CUDA_SUCCESS) {
        call = XC_STR(cuFuncGetAttribute) "(" XC_STR(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) ")";
        r = XK(cuFuncGetAttribute)(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    }
    if (r == CUDA_SUCCESS) {
        call = XC_STR(cuFuncGetAttribute) "(" XC_STR(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) ")";
        r = XK(cuFuncGetAttribute)(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
    }
    int nparams = r == CUDA_SUCCESS ? param_info(f, attrs->param_sizes) : -1;
    if (r == CUDA_SUCCESS) {
        attrs->nparams = nparams;
        device_signature((CUmodule)module, name, attrs);
        nparams = attrs->nparams;
    }
    xc_guard_end(&g);
    if (r == CUDA_ERROR_NOT_FOUND) {
        (void)cudaGetLastError();
        return XDEV_ERROR_NOT_FOUND; /* the core names the kernel and what the module has */
    }
    if (r != CUDA_SUCCESS)
        return drv_fail(r, NULL, "kernel '%s': %s on device %d", name, call, device);
    attrs->max_threads_per_block = max_threads;
    attrs->static_shared_bytes = static_shared > 0 ? (size_t)static_shared : 0;
    attrs->nparams = nparams;
    if (nparams < 0) memset(attrs->param_sizes, 0, sizeof attrs->param_sizes);
    *function = f;
    return XDEV_SUCCESS;
}

/* Enqueue on `stream` with the device current (an implicit stream means the
 * current device's; the function belongs to the device's context). */
static CUresult launch_now(const xdev_launch_desc_t *desc, void *stream) {
    return XK(cuLaunchKernel)((CUfunction)desc->function, desc->grid.x, desc->grid.y, desc->grid.z,
                              desc->block.x, desc->block.y, desc->block.z,
                              (unsigned)desc->shared_bytes, (CUstream)stream, (void **)desc->args,
                              NULL);
}

static xdev_status_t kernel_launch(xc_device_t *dev, const xdev_launch_desc_t *desc, void *stream) {
    int device = dev->index;
    CUresult r;
    if (loaded_context_current(device)) { /* the common case: this device's context is current */
        r = launch_now(desc, stream);
    } else {
        xc_guard_t g;
        xdev_status_t st = enter(device, &g);
        if (st != XDEV_SUCCESS) return st;
        r = launch_now(desc, stream);
        xc_guard_end(&g);
    }
    if (r != CUDA_SUCCESS)
        return drv_fail(
            r, NULL,
            "kernel '%s': " XC_STR(cuLaunchKernel) "(device %d, grid %ux%ux%u, block "
                                                   "%ux%ux%u, %zu dynamic shared bytes)",
            desc->name != NULL ? desc->name : "?", device, desc->grid.x, desc->grid.y, desc->grid.z,
            desc->block.x, desc->block.y, desc->block.z, desc->shared_bytes);
    return XDEV_SUCCESS;
}

const xdev_kernel_vtable_t xc_kernel_vtable = {
    .size = sizeof(xdev_kernel_vtable_t),
    .limits = kernel_limits,
    .module_load = kernel_module_load,
    .module_unload = kernel_module_unload,
    .get_function = kernel_get_function,
    .launch = kernel_launch,
#if XC_HAVE_RTC
    .compile_target = xc_rtc_compile_target, /* cuda_rtc.c */
    .compile = xc_rtc_compile,
#endif
};
