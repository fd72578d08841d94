/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_rtc_find.c - where run-time compilation's library
 * (NVRTC for CUDA, hiprtc for HIP) is looked for, in order, and its opening
 * (cuda_rtc.h; cuda_rtc.c compiles with it).
 *
 * Neither library is linked: cuda_rtc.c opens it on the first compilation,
 * through xc_rtc_open here. An explicit XDEV_NVRTC_PATH is the only place
 * looked; otherwise the toolkit's folders, the dynamic linker's search, then
 * PyTorch's CUDA wheels wherever a Python installation is cheaply guessed
 * (hiprtc: ROCm's folder, the dynamic linker, then the HIP runtime itself,
 * which held hiprtc before ROCm 6). Apart from the compiler because it is a
 * concept of its own - a search with its message naming every place tried -
 * and touches nothing of the compiler's but its name. On HIP's NVIDIA
 * platform (XC_RTC_LINKED) hiprtc is linked, and nothing here is built. */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_rtc.h"

#if XC_HAVE_RTC && !XC_RTC_LINKED

#ifndef XC_VENDOR_HIP
/* Newest first: CUDA 13's soname, CUDA 12's, then whatever libnvrtc.so is. */
static const char *const rtc_sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
#define RTC_SONAMES_TEXT "libnvrtc.so.13, libnvrtc.so.12 or libnvrtc.so"

/* Toolkit folders: $<var>/<sub> for each variable, then the fixed ones. */
static const char *const rtc_home_vars[] = {"CUDA_HOME", "CUDA_PATH"};
#define RTC_HOME_SUB "lib64"
static const char *const rtc_fixed_dirs[] = {"/usr/local/cuda/lib64"};
#define RTC_WHEELS 1
#else /* XC_VENDOR_HIP */
/* ROCm 6 and later ship hiprtc as its own library; before, it was part of
 * libamdhip64 (tried last, as the runtime this plugin already loaded). */
static const char *const rtc_sonames[] = {"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so"};
#define RTC_SONAMES_TEXT "libhiprtc.so.7, libhiprtc.so.6 or libhiprtc.so"
static const char *const rtc_home_vars[] = {"ROCM_PATH"};
#define RTC_HOME_SUB "lib"
static const char *const rtc_fixed_dirs[] = {"/opt/rocm/lib"};
#define RTC_WHEELS 0
#endif

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
static bool rtc_find(rtc_search_t *s, char *why, size_t len) {
#ifdef XC_RTC_ENV
    const char *given = env(XC_RTC_ENV);
    if (given != NULL) {
        struct stat st;
        if (stat(given, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (try_dir(s, given)) return true;
            snprintf(why, len,
                     XC_RTC_NAME " was not found: " XC_RTC_ENV
                                 "=%s is a folder without " RTC_SONAMES_TEXT "%s%s",
                     given, s->failed[0] != '\0' ? " that opens: " : "", s->failed);
        } else {
            if (try_open(s, given)) return true;
            snprintf(why, len, XC_RTC_NAME " was not found: " XC_RTC_ENV "=%s does not open: %s",
                     given, s->last);
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
    snprintf(why, len,
             XC_RTC_NAME " (the " XC_NAME " run-time compiler) was not found: no " RTC_SONAMES_TEXT
                         " in %s%s%s%s",
             s->tried, s->failed[0] != '\0' ? " (one that exists does not open: " : "", s->failed,
             s->failed[0] != '\0' ? ")" : "");
#ifdef XC_RTC_ENV
    size_t n = strlen(why);
    snprintf(why + n, len - n,
             "; set " XC_RTC_ENV " to the library or its folder (e.g. PyTorch's "
             "site-packages/nvidia/cu13/lib)");
#endif
    return false;
}

xdev_status_t xc_rtc_open(void **handle, char *path, size_t path_len, char *why, size_t why_len) {
    rtc_search_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, why_len, "out of host memory looking for " XC_RTC_NAME);
        return XDEV_ERROR_OUT_OF_MEMORY;
    }
    if (!rtc_find(s, why, why_len)) {
        free(s);
        return XDEV_ERROR_NOT_SUPPORTED;
    }
    snprintf(path, path_len, "%s", s->path);
    *handle = s->handle;
    free(s);
    return XDEV_SUCCESS;
}

#ifndef XC_VENDOR_HIP
/* The file rtc_find would load NVRTC from, found by its first steps
 * (XDEV_NVRTC_PATH; the toolkit's folders: the first soname that exists)
 * without loading it; false where only the dynamic linker or a wheel would
 * find it. A cache hit then needs no NVRTC at all (loading it costs a
 * fresh process several milliseconds). */
bool xc_rtc_locate(char *out, size_t len) {
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
#endif

#endif /* XC_HAVE_RTC && !XC_RTC_LINKED */
