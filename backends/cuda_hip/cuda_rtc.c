/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_rtc.c - run-time compilation, the kernel table's
 * compile_target and compile slots (xdev_module_compile): kernel source in
 * the dialect (xdev/kernel_lang.h) becomes an image module_load takes.
 *
 * CUDA compiles through NVRTC, HIP through hiprtc. Neither is linked: the
 * library is opened with dlopen on the first compilation (a process that
 * never compiles never loads it, and a machine without it still runs
 * everything else) and stays open. Where it is looked for, in order, and
 * why, is the vendor section below; a compiler that is not found makes both
 * slots XDEV_ERROR_NOT_SUPPORTED with a message naming every place tried.
 *
 * Written in NVRTC's names; vendor/hip_vendor.h maps them to hiprtc's. What
 * differs in meaning (where the library is, the code target, the image
 * format, the options naming the target) is the vendor section. The part
 * that takes the target as a string ("sm_90", "gfx90a:xnack-") rather than
 * from a device, xc_rtc_target_for and xc_rtc_compile_for, runs without a
 * GPU, so it can be tried where only the toolkit is. On HIP's NVIDIA
 * platform (XC_RTC_LINKED) hiprtc is inline wrappers over NVRTC, which the
 * plugin links: nothing is searched for, and the image is PTX. */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_internal.h"

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

#define XC_RTC_NAME "NVRTC"
#define XC_RTC_ENV "XDEV_NVRTC_PATH"
#define XC_RTC_STD "--std=c++17"
/* The image getter every NVRTC has (PTX); CUBIN where it can (CUDA 11.1+). */
#define XC_RTC_CODE_SIZE nvrtcGetPTXSize
#define XC_RTC_CODE nvrtcGetPTX

/* Newest first: CUDA 13's soname, CUDA 12's, then whatever libnvrtc.so is. */
static const char *const rtc_sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
#define RTC_SONAMES_TEXT "libnvrtc.so.13, libnvrtc.so.12 or libnvrtc.so"

/* Toolkit folders: $<var>/<sub> for each variable, then the fixed ones. */
static const char *const rtc_home_vars[] = {"CUDA_HOME", "CUDA_PATH"};
#define RTC_HOME_SUB "lib64"
static const char *const rtc_fixed_dirs[] = {"/usr/local/cuda/lib64"};
#define RTC_WHEELS 1
#else /* XC_VENDOR_HIP */
#include <hip/hiprtc.h>

#define XC_RTC_NAME "hiprtc"
#define XC_RTC_STD "-std=c++17"
#define XC_RTC_CODE_SIZE hiprtcGetCodeSize
#define XC_RTC_CODE hiprtcGetCode

#if !XC_RTC_LINKED
/* ROCm 6 and later ship hiprtc as its own library; before, it was part of
 * libamdhip64 (tried last, as the runtime this plugin already loaded). */
static const char *const rtc_sonames[] = {"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so"};
#define RTC_SONAMES_TEXT "libhiprtc.so.7, libhiprtc.so.6 or libhiprtc.so"
static const char *const rtc_home_vars[] = {"ROCM_PATH"};
#define RTC_HOME_SUB "lib"
static const char *const rtc_fixed_dirs[] = {"/opt/rocm/lib"};
#define RTC_WHEELS 0
#endif
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

#if !XC_RTC_LINKED
/* ------------------------------------------------------------ finding the library */

/* Where the search went, for the message when it finds nothing (on the
 * heap: folders are PATH_MAX each). */
#define RTC_MAX_DIRS 24
typedef struct rtc_search {
    void *handle;
    char path[PATH_MAX];
    char tried[1100];                  /* "; "-separated places */
    char failed[480];                  /* the first library that exists but did not open: dlerror */
    char last[480];                    /* the last dlopen failure */
    char dirs[RTC_MAX_DIRS][PATH_MAX]; /* folders searched so far, each once */
    size_t ndirs;
} rtc_search_t;

__attribute__((format(printf, 2, 3))) static void note(rtc_search_t *s, const char *fmt, ...) {
    size_t used = strlen(s->tried);
    if (used + 8 >= sizeof s->tried) return; /* full: "..." is already there */
    if (used > 0) used += (size_t)snprintf(s->tried + used, sizeof s->tried - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->tried + used, sizeof s->tried - used, fmt, ap);
    va_end(ap);
    if (n < 0 || used + (size_t)n >= sizeof s->tried)
        memcpy(s->tried + sizeof s->tried - 4, "...", 4);
}

/* True the first time `dir` is seen (a folder reached two ways is searched
 * once); false also when the list is full. */
static bool first_visit(rtc_search_t *s, const char *dir) {
    for (size_t i = 0; i < s->ndirs; i++)
        if (strcmp(s->dirs[i], dir) == 0) return false;
    if (s->ndirs == RTC_MAX_DIRS || strlen(dir) >= PATH_MAX) return false;
    snprintf(s->dirs[s->ndirs++], PATH_MAX, "%s", dir);
    return true;
}

/* dlopen `name` (a path, or a bare soname for the dynamic linker's search);
 * the first failure of a library that exists is kept (a broken install says
 * why rather than "not found"). */
static bool try_open(rtc_search_t *s, const char *name) {
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
        s->handle = h;
        snprintf(s->path, sizeof s->path, "%s", name);
        return true;
    }
    const char *err = dlerror();
    snprintf(s->last, sizeof s->last, "%s", err != NULL ? err : "dlopen failed");
    if (s->failed[0] == '\0' && strchr(name, '/') != NULL && access(name, F_OK) == 0)
        snprintf(s->failed, sizeof s->failed, "%s", s->last);
    return false;
}

/* Each soname in `dir`, where the file exists. */
static bool try_dir(rtc_search_t *s, const char *dir) {
    for (size_t i = 0; i < sizeof rtc_sonames / sizeof rtc_sonames[0]; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, rtc_sonames[i]) >= (int)sizeof path) continue;
        if (access(path, F_OK) == 0 && try_open(s, path)) return true;
    }
    return false;
}

static const char *env(const char *name) {
    const char *v = xc_state.host->get_env(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

#if RTC_WHEELS
/* Each file `pattern` matches, last first (libnvrtc.so.12 before .so.11.2). */
static bool try_glob(rtc_search_t *s, const char *pattern) {
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) return false;
    bool found = false;
    for (size_t i = g.gl_pathc; i > 0 && !found; i--)
        found = try_open(s, g.gl_pathv[i - 1]);
    globfree(&g);
    return found;
}

/* PyTorch's CUDA wheels under one Python site folder: CUDA 13's keep every
 * library in nvidia/cu13/lib, CUDA 12's NVRTC has its own package. */
static bool try_site(rtc_search_t *s, const char *site) {
    static const char *const wheels[] = {"nvidia/cu13/lib/libnvrtc.so.13",
                                         "nvidia/cuda_nvrtc/lib/libnvrtc.so.*"};
    for (size_t i = 0; i < sizeof wheels / sizeof wheels[0]; i++) {
        char pattern[PATH_MAX];
        if (snprintf(pattern, sizeof pattern, "%s/%s", site, wheels[i]) >= (int)sizeof pattern)
            continue;
        if (try_glob(s, pattern)) return true;
    }
    return false;
}

/* The site folders of an installation prefix: lib or lib64, any python3
 * version, site-packages (pip, venvs) or dist-packages (Debian). */
static bool try_prefix(rtc_search_t *s, const char *prefix) {
    static const char *const sites[] = {
        "lib/python3*/site-packages",
        "lib/python3*/dist-packages",
        "lib64/python3*/site-packages",
    };
    for (size_t i = 0; i < sizeof sites / sizeof sites[0]; i++) {
        char site[PATH_MAX];
        if (snprintf(site, sizeof site, "%s/%s", prefix, sites[i]) >= (int)sizeof site) continue;
        if (try_site(s, site)) return true;
    }
    return false;
}

/* Each prefix once; "a, b" for the message. */
static bool try_prefix_once(rtc_search_t *s, const char *prefix, char *shown, size_t len) {
    if (prefix[0] == '\0' || !first_visit(s, prefix)) return false;
    size_t used = strlen(shown);
    snprintf(shown + used, len - used, "%s%s", used > 0 ? ", " : "", prefix);
    return try_prefix(s, prefix);
}

/* PyTorch's wheels, wherever a Python installation is cheaply guessed:
 * PYTHONPATH's folders, the active virtual or conda environment, the prefix
 * of each PATH folder ending in /bin (a venv or conda on PATH), the user's
 * ~/.local, then /usr/local, /usr and /opt/conda. */
static bool try_wheels(rtc_search_t *s) {
    const char *pp = env("PYTHONPATH");
    if (pp != NULL) {
        note(s, "PyTorch's wheels in PYTHONPATH's folders");
        char *copy = strdup(pp), *save = NULL;
        bool found = false;
        for (char *dir = copy != NULL ? strtok_r(copy, ":", &save) : NULL; dir != NULL && !found;
             dir = strtok_r(NULL, ":", &save))
            found = try_site(s, dir);
        free(copy);
        if (found) return true;
    }
    char shown[700] = "";
    bool found = false;
    const char *envs[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
    for (size_t i = 0; i < sizeof envs / sizeof envs[0] && !found; i++) {
        const char *v = env(envs[i]);
        if (v != NULL) found = try_prefix_once(s, v, shown, sizeof shown);
    }
    const char *path = env("PATH");
    char *copy = path != NULL && !found ? strdup(path) : NULL, *save = NULL;
    for (char *dir = copy != NULL ? strtok_r(copy, ":", &save) : NULL; dir != NULL && !found;
         dir = strtok_r(NULL, ":", &save)) {
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
            n--;
        if (n <= 4 || memcmp(dir + n - 4, "/bin", 4) != 0) continue;
        dir[n - 4] = '\0'; /* /venv/bin -> /venv */
        found = try_prefix_once(s, dir, shown, sizeof shown);
    }
    free(copy);
    char local[PATH_MAX] = "";
    const char *home = env("HOME");
    if (home != NULL) snprintf(local, sizeof local, "%s/.local", home);
    const char *fixed[] = {local, "/usr/local", "/usr", "/opt/conda"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && !found; i++)
        found = try_prefix_once(s, fixed[i], shown, sizeof shown);
    note(s,
         "PyTorch's wheels (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib in lib/python3*/site-packages "
         "or dist-packages, lib64/python3*/site-packages) under %s",
         shown);
    return found;
}
#else
/* hiprtc before ROCm 6 is part of the HIP runtime: the libamdhip64 this
 * plugin is linked with (found from one of its functions). */
static bool try_runtime(rtc_search_t *s) {
    Dl_info info;
    if (dladdr((void *)hipRuntimeGetVersion, &info) == 0 || info.dli_fname == NULL) return false;
    note(s, "the HIP runtime %s (hiprtc before ROCm 6)", info.dli_fname);
    return try_open(s, info.dli_fname);
}
#endif

/* Search in the documented order (README: "Run-time compilation"). An
 * explicit XDEV_NVRTC_PATH is the only place looked: one that does not open
 * is an error, never a silent fallback to another copy. */
static bool rtc_find(rtc_search_t *s) {
#ifdef XC_RTC_ENV
    const char *given = env(XC_RTC_ENV);
    if (given != NULL) {
        struct stat st;
        if (stat(given, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (try_dir(s, given)) return true;
            snprintf(g_rtc.why, sizeof g_rtc.why,
                     XC_RTC_NAME " was not found: " XC_RTC_ENV
                                 "=%s is a folder without " RTC_SONAMES_TEXT "%s%s",
                     given, s->failed[0] != '\0' ? " that opens: " : "", s->failed);
        } else {
            if (try_open(s, given)) return true;
            snprintf(g_rtc.why, sizeof g_rtc.why,
                     XC_RTC_NAME " was not found: " XC_RTC_ENV "=%s does not open: %s", given,
                     s->last);
        }
        return false;
    }
    note(s, XC_RTC_ENV " (unset)");
#endif
    /* the toolkit's folders */
    for (size_t i = 0; i < sizeof rtc_home_vars / sizeof rtc_home_vars[0]; i++) {
        const char *home = env(rtc_home_vars[i]);
        char dir[PATH_MAX];
        if (home == NULL ||
            snprintf(dir, sizeof dir, "%s/" RTC_HOME_SUB, home) >= (int)sizeof dir ||
            !first_visit(s, dir))
            continue;
        note(s, "%s", dir);
        if (try_dir(s, dir)) return true;
    }
    for (size_t i = 0; i < sizeof rtc_fixed_dirs / sizeof rtc_fixed_dirs[0]; i++) {
        if (!first_visit(s, rtc_fixed_dirs[i])) continue;
        note(s, "%s", rtc_fixed_dirs[i]);
        if (try_dir(s, rtc_fixed_dirs[i])) return true;
    }
    note(s, "the dynamic linker's search path (LD_LIBRARY_PATH, ld.so.cache)");
    for (size_t i = 0; i < sizeof rtc_sonames / sizeof rtc_sonames[0]; i++)
        if (try_open(s, rtc_sonames[i])) return true;
#if RTC_WHEELS
    if (try_wheels(s)) return true;
#else
    if (try_runtime(s)) return true;
#endif
    snprintf(g_rtc.why, sizeof g_rtc.why,
             XC_RTC_NAME " (the " XC_NAME " run-time compiler) was not found: no " RTC_SONAMES_TEXT
                         " in %s%s%s%s",
             s->tried, s->failed[0] != '\0' ? " (one that exists does not open: " : "", s->failed,
             s->failed[0] != '\0' ? ")" : "");
#ifdef XC_RTC_ENV
    size_t n = strlen(g_rtc.why);
    snprintf(g_rtc.why + n, sizeof g_rtc.why - n,
             "; set " XC_RTC_ENV " to the library or its folder (e.g. PyTorch's "
             "site-packages/nvidia/cu13/lib)");
#endif
    return false;
}
#endif /* !XC_RTC_LINKED */

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
    rtc_search_t *s = calloc(1, sizeof *s);
    g_rtc.status = XDEV_ERROR_NOT_SUPPORTED;
    if (s == NULL) {
        g_rtc.status = XDEV_ERROR_OUT_OF_MEMORY;
        snprintf(g_rtc.why, sizeof g_rtc.why, "out of host memory looking for " XC_RTC_NAME);
        return;
    }
    if (!rtc_find(s)) {
        free(s);
        return;
    }
    snprintf(g_rtc.path, sizeof g_rtc.path, "%s", s->path);
    void *h = s->handle;
    free(s);
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

/* The file rtc_find would load NVRTC from, found by its first steps
 * (XDEV_NVRTC_PATH; the toolkit's folders: the first soname that exists)
 * without loading it; false where only the dynamic linker or a wheel would
 * find it. A cache hit then needs no NVRTC at all (loading it costs a
 * fresh process several milliseconds). */
static bool rtc_locate(char *out, size_t len) {
    struct stat st;
    const char *given = env(XC_RTC_ENV);
    const char *dirs[8];
    char homes[2][PATH_MAX];
    int nd = 0;
    if (given != NULL) {
        if (stat(given, &st) != 0) return false;
        if (!S_ISDIR(st.st_mode)) return snprintf(out, len, "%s", given) < (int)len;
        dirs[nd++] = given;
    } else {
        for (size_t i = 0; i < sizeof rtc_home_vars / sizeof rtc_home_vars[0] && i < 2; i++) {
            const char *home = env(rtc_home_vars[i]);
            if (home != NULL && snprintf(homes[i], sizeof homes[i], "%s/" RTC_HOME_SUB, home) <
                                    (int)sizeof homes[i])
                dirs[nd++] = homes[i];
        }
        for (size_t i = 0; i < sizeof rtc_fixed_dirs / sizeof rtc_fixed_dirs[0]; i++)
            dirs[nd++] = rtc_fixed_dirs[i];
    }
    for (int d = 0; d < nd; d++)
        for (size_t i = 0; i < sizeof rtc_sonames / sizeof rtc_sonames[0]; i++)
            if (snprintf(out, len, "%s/%s", dirs[d], rtc_sonames[i]) < (int)len &&
                stat(out, &st) == 0 && S_ISREG(st.st_mode))
                return true;
    return false;
}

/* "nvrtc-file <real path> <size> <mtime> <arch>": NVRTC named by its file,
 * as the CPU backend names its compiler (a new NVRTC is a new file). */
static bool rtc_file_target(const char *arch, char *id, size_t len) {
    char path[PATH_MAX], real[PATH_MAX];
    struct stat st;
    if (!rtc_locate(path, sizeof path) || realpath(path, real) == NULL || stat(real, &st) != 0)
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
