/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_rtc.c - run-time compilation, the kernel table's
 * compile_target and compile slots (xdev_module_compile): kernel source in
 * the dialect (xdev/kernel_lang.h) becomes an image module_load takes.
 *
 * CUDA compiles through NVRTC, HIP through hiprtc. Neither is linked: the
 * library is opened with dlopen on the first compilation (a process that
 * never compiles never loads it, and a machine without it still runs
 * everything else) and stays open. Where it is looked for, in order, and
 * why, is cuda_rtc_find.c; a compiler that is not found makes both slots
 * XDEV_ERROR_NOT_SUPPORTED with a message naming every place tried.
 *
 * Written in NVRTC's names; vendor/hip_vendor.h maps them to hiprtc's. What
 * differs in meaning (the code target, the image format, the options
 * naming the target) is the vendor section; where the library is,
 * cuda_rtc_find.c's. The part that takes the target as a string ("sm_90",
 * "gfx90a:xnack-") rather than from a device, xc_rtc_target_for and
 * xc_rtc_compile_for, runs without a GPU, so it can be tried where only the
 * toolkit is. On HIP's NVIDIA
 * platform (XC_RTC_LINKED) hiprtc is inline wrappers over NVRTC, which the
 * plugin links: nothing is searched for, and the image is PTX. */
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_rtc.h"

#if XC_HAVE_RTC

/* What a target compiles to: the image format, the option that selects the
 * code, and how messages name it. */
typedef struct rtc_plan {
    xdev_image_format_t format;
    char option[160]; /* "--gpu-architecture=sm_90" */
    char what[160];   /* "sm_90 cubin" */
} rtc_plan_t;

/* ============================================================ vendor section */
#ifndef XC_VENDOR_HIP
#include <nvrtc.h>

#define XC_RTC_STD "--std=c++17"
/* The image getter every NVRTC has (PTX); CUBIN where it can (CUDA 11.1+). */
#define XC_RTC_CODE_SIZE nvrtcGetPTXSize
#define XC_RTC_CODE nvrtcGetPTX
#else /* XC_VENDOR_HIP */
#include <hip/hiprtc.h>

#define XC_RTC_STD "-std=c++17"
#define XC_RTC_CODE_SIZE hiprtcGetCodeSize
#define XC_RTC_CODE hiprtcGetCode
#endif

/* The library, opened once (rtc_load). */
static struct {
    pthread_once_t once;
    xdev_status_t status;
    char why[1800]; /* the failure's message */
    char path[PATH_MAX];
    int major, minor; /* nvrtcVersion */
    __typeof__(nvrtcVersion) *version;
    __typeof__(nvrtcGetErrorString) *error_string;
    __typeof__(nvrtcCreateProgram) *create;
    __typeof__(nvrtcCompileProgram) *compile;
    __typeof__(nvrtcDestroyProgram) *destroy;
    __typeof__(nvrtcGetProgramLogSize) *log_size;
    __typeof__(nvrtcGetProgramLog) *log;
    __typeof__(XC_RTC_CODE_SIZE) *code_size;
    __typeof__(XC_RTC_CODE) *code;
#ifndef XC_VENDOR_HIP
    /* optional: CUDA 11.1+ (CUBIN), 11.2+ (the architectures it knows) */
    __typeof__(nvrtcGetCUBINSize) *cubin_size;
    __typeof__(nvrtcGetCUBIN) *cubin;
    __typeof__(nvrtcGetNumSupportedArchs) *num_archs;
    __typeof__(nvrtcGetSupportedArchs) *archs;
    int narchs; /* -1: unknown */
    int arch[64];
#endif
} g_rtc = {.once = PTHREAD_ONCE_INIT};

#ifndef XC_VENDOR_HIP
/* NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name when it
 * compiles, through the dynamic linker's search, which does not include the
 * folder NVRTC itself came from (a wheel's, or XDEV_NVRTC_PATH's): opened
 * here first from that folder, the dynamic linker finds it already loaded.
 * Where it is not there, NVRTC's own search stands (and its log says). */
static void preload_builtins(void) {
    const char *slash = strrchr(g_rtc.path, '/');
    if (slash == NULL) return; /* found by the dynamic linker: so is its builtins library */
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%.*s/libnvrtc-builtins.so.%d.%d", (int)(slash - g_rtc.path),
                 g_rtc.path, g_rtc.major, g_rtc.minor) >= (int)sizeof path ||
        access(path, F_OK) != 0)
        return;
    if (dlopen(path, RTLD_NOW | RTLD_LOCAL) == NULL) (void)dlerror(); /* stays open */
}
#endif

#if XC_RTC_LINKED
/* hiprtc's calls (hip_vendor.h names them for NVRTC's), linked. */
static void rtc_load(void) {
    g_rtc.version = nvrtcVersion;
    g_rtc.error_string = nvrtcGetErrorString;
    g_rtc.create = nvrtcCreateProgram;
    g_rtc.compile = nvrtcCompileProgram;
    g_rtc.destroy = nvrtcDestroyProgram;
    g_rtc.log_size = nvrtcGetProgramLogSize;
    g_rtc.log = nvrtcGetProgramLog;
    g_rtc.code_size = XC_RTC_CODE_SIZE;
    g_rtc.code = XC_RTC_CODE;
    snprintf(g_rtc.path, sizeof g_rtc.path, "NVRTC, linked (hiprtc on HIP's NVIDIA platform)");
    nvrtcResult r = g_rtc.version(&g_rtc.major, &g_rtc.minor);
    g_rtc.status = r == NVRTC_SUCCESS ? XDEV_SUCCESS : XDEV_ERROR_BACKEND;
    if (r != NVRTC_SUCCESS)
        snprintf(g_rtc.why, sizeof g_rtc.why, "%.200s: " XC_STR(nvrtcVersion) " failed: %.900s",
                 g_rtc.path, g_rtc.error_string(r));
}
#else
/* Open the library and find its calls (once per process). */
static void rtc_load(void) {
    void *h = NULL;
    g_rtc.status = xc_rtc_open(&h, g_rtc.path, sizeof g_rtc.path, g_rtc.why, sizeof g_rtc.why);
    if (g_rtc.status != XDEV_SUCCESS) return;
    g_rtc.status = XDEV_ERROR_NOT_SUPPORTED; /* until its calls are found */
    static const struct {
        const char *name;
        size_t offset;
        bool required;
    } syms[] = {
#define SYM(call, field, required)                                                                 \
    { XC_STR(call), offsetof(__typeof__(g_rtc), field), required }
        SYM(nvrtcVersion, version, true),
        SYM(nvrtcGetErrorString, error_string, true),
        SYM(nvrtcCreateProgram, create, true),
        SYM(nvrtcCompileProgram, compile, true),
        SYM(nvrtcDestroyProgram, destroy, true),
        SYM(nvrtcGetProgramLogSize, log_size, true),
        SYM(nvrtcGetProgramLog, log, true),
        SYM(XC_RTC_CODE_SIZE, code_size, true),
        SYM(XC_RTC_CODE, code, true),
#ifndef XC_VENDOR_HIP
        SYM(nvrtcGetCUBINSize, cubin_size, false),
        SYM(nvrtcGetCUBIN, cubin, false),
        SYM(nvrtcGetNumSupportedArchs, num_archs, false),
        SYM(nvrtcGetSupportedArchs, archs, false),
#endif
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *fn = dlsym(h, syms[i].name);
        if (fn == NULL && syms[i].required) {
            snprintf(g_rtc.why, sizeof g_rtc.why,
                     "%.1024s has no %s: not " XC_RTC_NAME ", or one too old for xdev", g_rtc.path,
                     syms[i].name);
            return; /* the handle stays open: unloading a library is not worth the risk */
        }
        memcpy((char *)&g_rtc + syms[i].offset, &fn, sizeof fn);
    }
    nvrtcResult r = g_rtc.version(&g_rtc.major, &g_rtc.minor);
    if (r != NVRTC_SUCCESS) {
        snprintf(g_rtc.why, sizeof g_rtc.why, "%.1024s: " XC_STR(nvrtcVersion) " failed: %s",
                 g_rtc.path, g_rtc.error_string(r));
        g_rtc.status = XDEV_ERROR_BACKEND;
        return;
    }
#ifndef XC_VENDOR_HIP
    preload_builtins();
    if (g_rtc.cubin_size == NULL || g_rtc.cubin == NULL) { /* both or neither */
        g_rtc.cubin_size = NULL;
        g_rtc.cubin = NULL;
    }
    g_rtc.narchs = -1;
    int n = 0;
    if (g_rtc.num_archs != NULL && g_rtc.archs != NULL && g_rtc.num_archs(&n) == NVRTC_SUCCESS &&
        n > 0 && n <= (int)(sizeof g_rtc.arch / sizeof g_rtc.arch[0]) &&
        g_rtc.archs(g_rtc.arch) == NVRTC_SUCCESS)
        g_rtc.narchs = n;
#endif
    g_rtc.status = XDEV_SUCCESS;
}
#endif /* XC_RTC_LINKED */

static xdev_status_t rtc_ready(void) {
    pthread_once(&g_rtc.once, rtc_load);
    if (g_rtc.status != XDEV_SUCCESS) return xc_error(g_rtc.status, "%s", g_rtc.why);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ targets */
#ifndef XC_VENDOR_HIP
/* "sm_90" -> 90 (major * 10 + minor, as NVRTC numbers architectures). */
static int parse_sm(const char *arch) {
    if (strncmp(arch, "sm_", 3) != 0 || arch[3] < '1' || arch[3] > '9') return -1;
    int cc = 0;
    for (const char *p = arch + 3; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || cc > 10000) return -1;
        cc = cc * 10 + (*p - '0');
    }
    return cc;
}

/* The device's own code (CUBIN) where this NVRTC knows the architecture and
 * can emit it; else PTX, for the newest architecture it knows that is not
 * newer than the device (the driver compiles PTX for later GPUs). */
static xdev_status_t rtc_plan(const char *arch, rtc_plan_t *plan) {
    int cc = parse_sm(arch);
    if (cc < 0)
        return xc_error(XDEV_ERROR_INVALID_VALUE,
                        "'%s' is not a CUDA architecture (sm_<major><minor>, e.g. sm_90)", arch);
    int target = cc;
    if (g_rtc.narchs > 0) {
        target = -1;
        for (int i = 0; i < g_rtc.narchs; i++)
            if (g_rtc.arch[i] <= cc && g_rtc.arch[i] > target) target = g_rtc.arch[i];
        if (target < 0)
            return xc_error(XDEV_ERROR_NOT_SUPPORTED,
                            "NVRTC %d.%d (%s) compiles for sm_%d and later; the device is %s",
                            g_rtc.major, g_rtc.minor, g_rtc.path, g_rtc.arch[0], arch);
    }
    bool cubin = g_rtc.cubin != NULL && target == cc;
    plan->format = cubin ? XDEV_IMAGE_CUBIN : XDEV_IMAGE_PTX;
    snprintf(plan->option, sizeof plan->option, "--gpu-architecture=%s_%d",
             cubin ? "sm" : "compute", target);
    snprintf(plan->what, sizeof plan->what, "%s_%d %s", cubin ? "sm" : "compute", target,
             cubin ? "cubin" : "PTX");
    return XDEV_SUCCESS;
}

static xdev_status_t rtc_target_line(const char *arch, char *id, size_t len) {
    int n = snprintf(id, len, "nvrtc %d.%d %s", g_rtc.major, g_rtc.minor, arch);
    if (n < 0 || (size_t)n >= len)
        return xc_error(XDEV_ERROR_INVALID_VALUE, "the compile target needs %d bytes, %zu given",
                        n + 1, len);
    return XDEV_SUCCESS;
}

/* "nvrtc-file <real path> <size> <mtime> <arch>": NVRTC named by its file,
 * as the CPU backend names its compiler (a new NVRTC is a new file). */
static bool rtc_file_target(const char *arch, char *id, size_t len) {
    char path[PATH_MAX], real[PATH_MAX];
    struct stat st;
    if (!xc_rtc_locate(path, sizeof path) || realpath(path, real) == NULL || stat(real, &st) != 0)
        return false;
    int n = snprintf(id, len, "nvrtc-file %s %lld %lld.%09ld %s", real, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, arch);
    return n > 0 && (size_t)n < len;
}

/* "sm_90" for the device's compute capability. */
static xdev_status_t rtc_device_arch(int device, char *arch, size_t len) {
    int major = 0, minor = 0;
    XC_CALL(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
            XC_STR(cudaDeviceGetAttribute) "(cudaDevAttrComputeCapabilityMajor, %d)", device);
    XC_CALL(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
            XC_STR(cudaDeviceGetAttribute) "(cudaDevAttrComputeCapabilityMinor, %d)", device);
    snprintf(arch, len, "sm_%d%d", major, minor);
    return XDEV_SUCCESS;
}
#else
#if XC_RTC_LINKED
/* PTX for "sm_90" (compute_90): hiprtcGetCode is nvrtcGetPTX there. */
static xdev_status_t rtc_plan(const char *arch, rtc_plan_t *plan) {
    const char *cc = arch + 3;
    if (strncmp(arch, "sm_", 3) != 0 || cc[0] < '1' || cc[0] > '9' || strlen(cc) > 4 ||
        strspn(cc, "0123456789") != strlen(cc))
        return xc_error(XDEV_ERROR_INVALID_VALUE,
                        "'%s' is not a CUDA architecture (sm_<major><minor>, e.g. sm_90)", arch);
    plan->format = XDEV_IMAGE_PTX;
    snprintf(plan->option, sizeof plan->option, "--gpu-architecture=compute_%s", cc);
    snprintf(plan->what, sizeof plan->what, "compute_%s PTX", cc);
    return XDEV_SUCCESS;
}
#else
/* A code object for the device's target id ("gfx90a:sramecc+:xnack-"). */
static xdev_status_t rtc_plan(const char *arch, rtc_plan_t *plan) {
    if (arch[0] == '\0' || strchr(arch, ' ') != NULL)
        return xc_error(XDEV_ERROR_INVALID_VALUE, "'%s' is not an AMD GPU target (e.g. gfx90a)",
                        arch);
    plan->format = XDEV_IMAGE_HIP_CODE;
    snprintf(plan->option, sizeof plan->option, "--offload-arch=%s", arch);
    snprintf(plan->what, sizeof plan->what, "%s code object", arch);
    return XDEV_SUCCESS;
}
#endif

/* hiprtc's version alone has not told ROCm releases apart: the runtime's
 * version goes into the line too. */
static xdev_status_t rtc_target_line(const char *arch, char *id, size_t len) {
    int runtime = 0;
    if (hipRuntimeGetVersion(&runtime) != hipSuccess) {
        (void)hipGetLastError();
        runtime = 0;
    }
    int n = snprintf(id, len, "hiprtc %d.%d hip %d %s", g_rtc.major, g_rtc.minor, runtime, arch);
    if (n < 0 || (size_t)n >= len)
        return xc_error(XDEV_ERROR_INVALID_VALUE, "the compile target needs %d bytes, %zu given",
                        n + 1, len);
    return XDEV_SUCCESS;
}

static xdev_status_t rtc_device_arch(int device, char *arch, size_t len) {
    hipDeviceProp_t p;
    memset(&p, 0, sizeof p);
    XC_CALL(hipGetDeviceProperties(&p, device), "hipGetDeviceProperties(%d)", device);
#if XC_RTC_LINKED
    snprintf(arch, len, "sm_%d%d", p.major, p.minor); /* no gcnArchName there */
#else
    snprintf(arch, len, "%.*s", (int)strnlen(p.gcnArchName, sizeof p.gcnArchName), p.gcnArchName);
#endif
    return XDEV_SUCCESS;
}
#endif /* vendor section */

/* ============================================================ shared */

/* The first lines of a compiler log that say something (not blank, not the
 * caret under a quoted source line), joined with " | ", for a message. */
static void log_head(const char *log, char *out, size_t len) {
    size_t k = 0;
    int lines = 0;
    out[0] = '\0';
    for (const char *p = log; p != NULL && *p != '\0' && lines < 4;) {
        const char *end = strchr(p, '\n');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        const char *q = p;
        while (q < p + n && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        size_t m = n - (size_t)(q - p);
        while (m > 0 && (q[m - 1] == ' ' || q[m - 1] == '\r'))
            m--;
        bool caret = m > 0 && strspn(q, "^~ ") >= m;
        if (m > 0 && !caret) {
            int w = snprintf(out + k, len - k, "%s%.*s", k > 0 ? " | " : "", (int)m, q);
            if (w < 0 || k + (size_t)w >= len) {
                if (len > 4) memcpy(out + len - 4, "...", 4);
                return;
            }
            k += (size_t)w;
            lines++;
        }
        p = end != NULL ? end + 1 : NULL;
    }
}

/* The compiler's whole output, malloc'd ("" when it wrote none; NULL only
 * when even that cannot be had). */
static char *program_log(nvrtcProgram prog) {
    size_t size = 0;
    if (g_rtc.log_size(prog, &size) != NVRTC_SUCCESS) size = 0;
    char *log = malloc(size + 1);
    if (log == NULL) return NULL;
    if (size == 0 || g_rtc.log(prog, log) != NVRTC_SUCCESS) size = 0;
    log[size] = '\0';
    return log;
}

static xdev_status_t rtc_fail(nvrtcResult r, const char *call, const char *name,
                              const rtc_plan_t *plan) {
    return xc_error(r == NVRTC_ERROR_OUT_OF_MEMORY ? XDEV_ERROR_OUT_OF_MEMORY : XDEV_ERROR_BACKEND,
                    "%s('%s', %s): %s (%d)", call, name, plan->what, g_rtc.error_string(r), (int)r);
}

xdev_status_t xc_rtc_target_for(const char *arch, char *id, size_t len,
                                xdev_image_format_t *format) {
    xdev_status_t st = rtc_ready();
    if (st != XDEV_SUCCESS) return st;
    rtc_plan_t plan;
    if ((st = rtc_plan(arch, &plan)) != XDEV_SUCCESS) return st;
    if ((st = rtc_target_line(arch, id, len)) != XDEV_SUCCESS) return st;
    *format = plan.format;
    return XDEV_SUCCESS;
}

xdev_status_t xc_rtc_compile_for(const char *arch, const xdev_compile_desc_t *desc,
                                 xdev_compiled_t *out) {
    out->data = NULL;
    out->data_size = 0;
    out->log = NULL;
    xdev_status_t st = rtc_ready();
    if (st != XDEV_SUCCESS) return st;
    rtc_plan_t plan;
    if ((st = rtc_plan(arch, &plan)) != XDEV_SUCCESS) return st;
    const char *name = desc->name != NULL && desc->name[0] != '\0' ? desc->name : "kernels";
    /* The target, xdev's headers, C++17, then the caller's options as they are. */
    int nopts = 0;
    const char **opts = calloc((size_t)desc->noptions + 3, sizeof *opts);
    char *include = NULL;
    if (desc->include_dir != NULL) {
        size_t n = strlen(desc->include_dir) + 3;
        if ((include = malloc(n)) != NULL) snprintf(include, n, "-I%s", desc->include_dir);
    }
    if (opts == NULL || (desc->include_dir != NULL && include == NULL)) {
        free(opts);
        free(include);
        return xc_error(XDEV_ERROR_OUT_OF_MEMORY, "out of host memory compiling '%s'", name);
    }
    opts[nopts++] = plan.option;
    if (include != NULL) opts[nopts++] = include;
    opts[nopts++] = XC_RTC_STD;
    for (int i = 0; i < desc->noptions; i++)
        opts[nopts++] = desc->options[i];

    nvrtcProgram prog = NULL;
    nvrtcResult r = g_rtc.create(&prog, desc->source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        free(opts);
        free(include);
        return rtc_fail(r, XC_STR(nvrtcCreateProgram), name, &plan);
    }
    r = g_rtc.compile(prog, nopts, opts);
    free(opts);
    free(include);
    out->log = program_log(prog);
    if (r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION) {
        char head[700];
        log_head(out->log, head, sizeof head);
        (void)g_rtc.destroy(&prog);
        return xc_error(XDEV_ERROR_COMPILE, XC_STR(nvrtcCompileProgram) "('%s', %s): %s: %s", name,
                        plan.what, g_rtc.error_string(r),
                        head[0] != '\0' ? head : "the compiler wrote no log");
    }
    if (r != NVRTC_SUCCESS) {
        (void)g_rtc.destroy(&prog);
        return rtc_fail(r, XC_STR(nvrtcCompileProgram), name, &plan);
    }
    __typeof__(g_rtc.code_size) get_size = g_rtc.code_size;
    __typeof__(g_rtc.code) get = g_rtc.code;
    const char *get_name = XC_STR(XC_RTC_CODE);
#ifndef XC_VENDOR_HIP
    if (plan.format == XDEV_IMAGE_CUBIN) {
        get_size = g_rtc.cubin_size;
        get = g_rtc.cubin;
        get_name = XC_STR(nvrtcGetCUBIN);
    }
#endif
    size_t size = 0;
    r = get_size(prog, &size);
    char *data = r == NVRTC_SUCCESS && size > 0 ? malloc(size) : NULL;
    if (data != NULL) r = get(prog, data);
    (void)g_rtc.destroy(&prog);
    if (r != NVRTC_SUCCESS) {
        free(data);
        return rtc_fail(r, get_name, name, &plan);
    }
    if (data == NULL)
        return xc_error(size == 0 ? XDEV_ERROR_BACKEND : XDEV_ERROR_OUT_OF_MEMORY,
                        "%s('%s', %s): %zu bytes of image%s", get_name, name, plan.what, size,
                        size == 0 ? " (the compiler produced nothing)" : ": out of host memory");
    out->format = plan.format;
    out->data = data;
    out->data_size = size; /* PTX: the text and its NUL */
    return XDEV_SUCCESS;
}

/* kernel.compile_target: the compiler, its version and the device's code
 * target, which with the source and options decide the image. */
xdev_status_t xc_rtc_compile_target(xc_device_t *dev, char *id, size_t len,
                                    xdev_image_format_t *format) {
#ifndef XC_VENDOR_HIP
    /* NVRTC named by its file: no need to load it (the image's format is
     * the compile's, kept with the cached image by the core). */
    char sm[32];
    if (rtc_device_arch(dev->index, sm, sizeof sm) == XDEV_SUCCESS &&
        rtc_file_target(sm, id, len)) {
        *format = XDEV_IMAGE_CUBIN;
        return XDEV_SUCCESS;
    }
#endif
    xdev_status_t st = rtc_ready(); /* "no compiler" before any device call */
    if (st != XDEV_SUCCESS) return st;
    char arch[300];
    if ((st = rtc_device_arch(dev->index, arch, sizeof arch)) != XDEV_SUCCESS) return st;
    return xc_rtc_target_for(arch, id, len, format);
}

/* kernel.compile: for the device's code target. */
xdev_status_t xc_rtc_compile(xc_device_t *dev, const xdev_compile_desc_t *desc,
                             xdev_compiled_t *out) {
    out->data = NULL;
    out->data_size = 0;
    out->log = NULL;
    xdev_status_t st = rtc_ready();
    if (st != XDEV_SUCCESS) return st;
    char arch[300];
    if ((st = rtc_device_arch(dev->index, arch, sizeof arch)) != XDEV_SUCCESS) return st;
    return xc_rtc_compile_for(arch, desc, out);
}

#endif /* XC_HAVE_RTC */
