/* SPDX-License-Identifier: Apache-2.0 */
/* compile.c - kernels compiled at run time (xdev_module_compile), through
 * the backend's compiler slots and the on-disk cache (kernel_cache.h).
 *
 * For a backend whose images are host libraries, the source gets the table
 * the library must export (xdev_kernel_table: one entry per XDEV_KERNEL the
 * source declares, found by scanning it as xdev_add_kernels does), so its
 * kernels carry their signatures. The cache's base key covers xdev's
 * version and the dialect's, the backend, compile_target's line (compiler
 * and architecture), the image format, every option and the source as
 * compiled; the image key adds the files the compiler read
 * (kernel_cache.h, compile_deps.c). */
#include <dirent.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error_internal.h"
#include "base/strbuf.h"
#include "kernel/kernel_cache.h"
#include "kernel/kernel_internal.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "xdev/version.h"

/* Bumped when the dialect's headers change what a source compiles to. */
#define XDEV_DIALECT_VERSION "xdev-kernel-dialect-2" /* 2: entries carry their format */

static _Thread_local char *tls_log;

static _Atomic(const char *) g_test_version;

XDEV_API void xdev_kcompile_test_version(const char *v) {
    atomic_store(&g_test_version, v);
}

static atomic_int g_test_no_deps;

XDEV_API void xdev_kcompile_test_no_deps(int on) {
    atomic_store(&g_test_no_deps, on != 0);
}

const char *xdev_compile_log(void) {
    return tls_log != NULL ? tls_log : "";
}

static void set_log(char *log) {
    free(tls_log);
    tls_log = log;
}

/* A thread's last log goes with the thread (runtime/hooks.h). */
static void thread_exit(void) {
    set_log(NULL);
}

void xdev_compile_wire(void) {
    xdev_hook_thread_exit_add(thread_exit);
}

/* The first directory holding xdev/kernel_lang.h: installed, else the tree
 * libxdev was built from. */
static const char *include_dir(void) {
    static const char *const dirs[] = {XDEV_INSTALL_INCLUDEDIR, XDEV_SOURCE_INCLUDEDIR};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/xdev/kernel_lang.h", dirs[i]);
        if (access(path, R_OK) == 0) return dirs[i];
    }
    return NULL;
}

static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Append the names of the kernels `src` declares (XDEV_KERNEL(name, ...,
 * XDEV_KERNEL_SYNC(name, ... or XDEV_KERNEL_BLOCK(name, ... outside
 * comments, strings and preprocessor lines) to sb as the table a host
 * library exports. Returns the count. */
static int append_table(xdev_strbuf_t *sb, const char *src) {
    xdev_strbuf_t names = {0};

    int n = 0;
    bool line_start = true;
    for (const char *p = src; *p != '\0';) {
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
            continue;
        }
        if ((p[0] == '/' && p[1] == '/') || (line_start && *p == '#')) {
            while (*p != '\0' && *p != '\n')
                p += (p[0] == '\\' && p[1] == '\n') ? 2 : 1;
            continue;
        }
        if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p != '\0' && *p != q)
                p += (p[0] == '\\' && p[1] != '\0') ? 2 : 1;
            if (*p != '\0') p++;
            continue;
        }
        if (*p == '\n')
            line_start = true;
        else if (*p != ' ' && *p != '\t')
            line_start = false;
        size_t kw = 0;
        if ((p == src || !ident_char(p[-1])) && strncmp(p, "XDEV_KERNEL", 11) == 0)
            kw = strncmp(p + 11, "_SYNC", 5) == 0    ? 16
                 : strncmp(p + 11, "_BLOCK", 6) == 0 ? 17
                                                     : 11;
        if (kw == 0 || ident_char(p[kw])) {
            p++;
            continue;
        }
        const char *q = p + kw;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
            q++;
        if (*q++ != '(') {
            p += kw;
            continue;
        }
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
            q++;
        const char *name = q;
        while (ident_char(*q))
            q++;
        if (q > name) {
            xdev_strbuf_printf(sb, "extern const xdev_kernel_sig_t %.*s__xdev_sig;\n",
                               (int)(q - name), name);
            xdev_strbuf_printf(&names, "    &%.*s__xdev_sig,\n", (int)(q - name), name);
            n++;
        }
        p = q;
    }
    xdev_strbuf_printf(sb,
                       "__attribute__((visibility(\"default\"))) const xdev_kernel_sig_t "
                       "*const xdev_kernel_table[] = {\n%s    0};\n"
                       "__attribute__((visibility(\"default\"))) const int "
                       "xdev_kernel_table_size = %d;\n",
                       names.buf ? names.buf : "", n);
    free(names.buf);
    return n;
}

static bool name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63) return false;
    for (size_t i = 0; i < n; i++)
        if (!ident_char(s[i])) return false;
    return true;
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            (void)unlink(path);
        }
        closedir(d);
    }
    (void)rmdir(dir);
}

/* Write bytes to path (a new file). */
static bool write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* A soft failure of the cache: the module is still loaded (compiled into
 * a temporary directory), and the first such failure of the process is
 * said once, at the end of that compile's log (xdev_compile_log; xdev
 * never prints). */
static void cache_problem(const char *why) {
    if (!xdev_kcache_first_problem()) return;
    const char *log = tls_log != NULL ? tls_log : "";
    size_t n = strlen(log) + strlen(why) + 160;
    char *s = malloc(n);
    if (s == NULL) return;
    snprintf(s, n,
             "%s%sxdev: the kernel cache cannot be written (%s): compiled without it; said "
             "once per process\n",
             log, log[0] != '\0' && log[strlen(log) - 1] != '\n' ? "\n" : "", why);
    set_log(s);
}

typedef struct job {
    struct xdev_module *m;
    const char *name;
    const char *source; /* as compiled */
    const xdev_compile_options_t *opts;
    xdev_image_format_t format;
    char base[XDEV_KCACHE_KEY_LEN]; /* what is known before compiling */
    char key[XDEV_KCACHE_KEY_LEN];  /* the image's: "" when it is not cached */
    char work[4096];                /* a temporary directory, "" until made */
    bool stored;                    /* the compiled image went into the cache */
} job_t;

/* Compile (the backend), store in the cache, load: the cache miss. */
static xdev_status_t compile_and_load(job_t *j) {
    struct xdev_module *m = j->m;
    const char *inc = include_dir();
    if (inc == NULL)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "xdev's headers (xdev/kernel_lang.h) are found neither in %s nor in %s",
                         XDEV_INSTALL_INCLUDEDIR, XDEV_SOURCE_INCLUDEDIR);
    const char *tmp = getenv("TMPDIR");
    snprintf(j->work, sizeof j->work, "%s/xdev-compile-XXXXXX",
             tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    if (mkdtemp(j->work) == NULL) {
        j->work[0] = '\0';
        return XDEV_FAIL(XDEV_ERROR_IO, "cannot make a temporary directory for the compiler");
    }
    xdev_compile_desc_t d = {
        .size = sizeof d,
        .source = j->source,
        .name = j->name,
        .options = j->opts ? j->opts->options : NULL,
        .noptions = j->opts ? j->opts->noptions : 0,
        .include_dir = inc,
        .work_dir = j->work,
    };
    xdev_compiled_t c = {.size = sizeof c};
    struct timespec start;
    clock_gettime(CLOCK_REALTIME, &start);
    xdev_status_t st = xdev_be_kernel_compile(m->rec, &d, &c);
    set_log(c.log);
    if (atomic_load(&g_test_no_deps)) { /* the test hook: as NVRTC, no list of files read */
        free(c.deps);
        c.deps = NULL;
    }
    char why[512];
    if (st == XDEV_SUCCESS && c.deps != NULL) { /* keyed on what it read */
        xdev_status_t ks = xdev_kdeps_store(j->base, c.deps, &start, j->key, why, sizeof why);
        if (ks != XDEV_SUCCESS && ks != XDEV_ERROR_NOT_FOUND) cache_problem(why);
    } else if (st == XDEV_SUCCESS && j->key[0] != '\0') {
        /* Keyed on the include trees, walked before the compile: cached only
         * when a walk now (with the too-new rule) finds the same key, so an
         * edit between the walk and the compiler's read is not filed under
         * the old text's key. */
        char after[XDEV_KCACHE_KEY_LEN];
        if (xdev_kdeps_tree_key(j->base, j->source, d.options, d.noptions, &start, after, why,
                                sizeof why) != XDEV_SUCCESS ||
            strcmp(after, j->key) != 0)
            j->key[0] = '\0';
    }
    free(c.deps);
    if (st != XDEV_SUCCESS) {
        free(c.data);
        return st;
    }
    xdev_kernel_image_t img = {c.format, c.data, c.data_size};
    if (c.format == XDEV_IMAGE_HOST_LIBRARY) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s-built.so", j->work, j->name);
        if (!write_file(path, c.data, c.data_size)) {
            free(c.data);
            return XDEV_FAIL(XDEV_ERROR_IO, "cannot write the compiled library to %s", path);
        }
        free(c.data);
        if (j->key[0] != '\0' &&
            xdev_kcache_put_file(j->key, ".so", path, why, sizeof why) != XDEV_SUCCESS)
            cache_problem(why);
        else
            j->stored = j->key[0] != '\0';
        st = xdev_kmodule_open_library(m, path, &img); /* dlopen keeps it open once unlinked */
        bool taken = false;
        if (st == XDEV_SUCCESS) st = xdev_kmodule_offer(m, &img, &taken);
        return st;
    }
    /* The entry carries the image's format (4 bytes first): compile_target
     * may name a compiler without asking it what it will produce. */
    unsigned char *entry = j->key[0] != '\0' ? malloc(c.data_size + 4) : NULL;
    if (entry != NULL) {
        uint32_t f = (uint32_t)c.format;
        memcpy(entry, &f, 4);
        memcpy(entry + 4, c.data, c.data_size);
        if (xdev_kcache_put(j->key, entry, c.data_size + 4, why, sizeof why) != XDEV_SUCCESS)
            cache_problem(why);
        else
            j->stored = true;
        free(entry);
    }
    bool taken = false;
    st = xdev_kmodule_offer(m, &img, &taken);
    free(c.data);
    return st;
}

/* A cache hit: load what it holds. *hit false when there is none. */
static xdev_status_t load_cached(job_t *j, bool *hit) {
    *hit = false;
    bool damaged = false, taken = false;
    if (j->key[0] == '\0') return XDEV_SUCCESS;
    if (j->format == XDEV_IMAGE_HOST_LIBRARY) {
        char path[4096];
        if (!xdev_kcache_get_file(j->key, ".so", path, sizeof path, &damaged)) return XDEV_SUCCESS;
        xdev_kernel_image_t img;
        xdev_error_state_t saved; /* an entry that does not load is a miss: compile again */
        xdev_core_error_save(&saved);
        xdev_status_t st = xdev_kmodule_open_library(j->m, path, &img);
        if (st == XDEV_SUCCESS) st = xdev_kmodule_offer(j->m, &img, &taken);
        if (st == XDEV_SUCCESS && taken) {
            *hit = true;
            return XDEV_SUCCESS;
        }
        xdev_core_error_restore(&saved);
        if (j->m->dl != NULL) dlclose(j->m->dl);
        j->m->dl = NULL;
        j->m->sigs = NULL;
        j->m->nsigs = 0;
        return XDEV_SUCCESS;
    }
    void *data = NULL;
    size_t size = 0;
    if (!xdev_kcache_get(j->key, &data, &size, &damaged)) return XDEV_SUCCESS;
    uint32_t f = 0;
    if (size > 4) memcpy(&f, data, 4);
    if (size <= 4 || f < XDEV_IMAGE_PTX || f > XDEV_IMAGE_HIP_CODE) { /* not ours: compile */
        free(data);
        return XDEV_SUCCESS;
    }
    xdev_kernel_image_t img = {(xdev_image_format_t)f, (unsigned char *)data + 4, size - 4};
    xdev_error_state_t saved; /* an entry the backend refuses is a miss: compile again */
    xdev_core_error_save(&saved);
    xdev_status_t st = xdev_kmodule_offer(j->m, &img, &taken);
    free(data);
    *hit = st == XDEV_SUCCESS && taken;
    if (!*hit) xdev_core_error_restore(&saved);
    return XDEV_SUCCESS;
}

static xdev_status_t check_options(const char *source, const xdev_compile_options_t *o) {
    if (source[0] == '\0') return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "source is empty");
    if (o == NULL) return XDEV_SUCCESS;
    if (o->size < sizeof *o)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "options->size is %zu, not sizeof(xdev_compile_options_t) (%zu)", o->size,
                         sizeof *o);
    if (o->name != NULL && !name_ok(o->name))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "options->name '%.80s' is not 1 to 63 letters, digits or '_'", o->name);
    if (o->noptions < 0 || o->noptions > 1024 || (o->noptions > 0 && o->options == NULL))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "options->noptions = %d with options %p",
                         o->noptions, (const void *)o->options);
    for (int i = 0; i < o->noptions; i++)
        if (o->options[i] == NULL)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "options->options[%d] is NULL", i);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_module_compile(xdev_device_t device, const char *source,
                                  const xdev_compile_options_t *options, xdev_module_t *out) {
    set_log(NULL);
    xdev_kcompile_forget();
    uint64_t begin = xdev_kcompile_now();
    XDEV_REQUIRE_ARG(source);
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    XDEV_CHECK(check_options(source, options));
    job_t j = {.name = options && options->name ? options->name : "kernels",
               .opts = options,
               .source = source};
    XDEV_CHECK(xdev_kmodule_new(device, j.name, &j.m));
    struct xdev_module *m = j.m;
    xdev_status_t st = XDEV_SUCCESS;
    if (!XDEV_HAS(m->be, kernel, compile)) /* the group kernel.compile, whole */
        st = XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                       "the %s backend cannot compile kernels at run time (no kernel.compile)",
                       m->be->name);
    char target[512] = "";
    if (st == XDEV_SUCCESS)
        st = xdev_be_kernel_compile_target(m->rec, target, sizeof target, &j.format);
    xdev_strbuf_t sb = {0};
    if (st == XDEV_SUCCESS && j.format == XDEV_IMAGE_HOST_LIBRARY) {
        xdev_strbuf_printf(&sb, "%s\n/* xdev_module_compile: the library's kernel table */\n",
                           source);
        if (append_table(&sb, source) == 0)
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "the source declares no kernel (XDEV_KERNEL(name, ...))");
        if (sb.failed) st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for the source");
        j.source = sb.buf;
    }
    if (st == XDEV_SUCCESS) {
        int nopt = options ? options->noptions : 0;
        const char **parts = calloc((size_t)nopt + 6, sizeof *parts);
        if (parts == NULL) {
            st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a cache key");
        } else {
            char fmt[16];
            snprintf(fmt, sizeof fmt, "%d", (int)j.format);
            parts[0] = XDEV_DIALECT_VERSION;
            parts[1] = m->be->name;
            parts[2] = target;
            parts[3] = fmt;
            for (int i = 0; i < nopt; i++)
                parts[4 + i] = options->options[i];
            parts[4 + nopt] = j.source;
            const char *v = atomic_load(&g_test_version);
            parts[5 + nopt] = v != NULL ? v : XDEV_VERSION_STRING;
            xdev_kcache_key(parts, NULL, nopt + 6, j.base);
            free(parts);
        }
    }
    /* The image key: from the files the last compile read (a manifest), else
     * from the include directories' contents, for a backend that cannot say
     * what its compiler read (it then never stores a manifest). */
    if (st == XDEV_SUCCESS &&
        (atomic_load(&g_test_no_deps) || !xdev_kdeps_image_key(j.base, j.key))) {
        char why[512];
        (void)xdev_kdeps_tree_key(j.base, j.source, options ? options->options : NULL,
                                  options ? options->noptions : 0, NULL, j.key, why, sizeof why);
    }
    bool hit = false, looked = st == XDEV_SUCCESS;
    /* XDEV_KERNEL_CACHE=0: a store "succeeds" storing nothing */
    if (st == XDEV_SUCCESS) st = load_cached(&j, &hit);
    if (st == XDEV_SUCCESS && !hit) st = compile_and_load(&j);
    if (looked) /* hit or miss, told (compile_report.c) */
        xdev_kcompile_report(j.name, m->be->name, m->device.index,
                             hit                     ? XDEV_COMPILE_CACHE_HIT
                             : xdev_kcache_enabled() ? XDEV_COMPILE_CACHE_MISS
                                                     : XDEV_COMPILE_CACHE_OFF,
                             j.stored && xdev_kcache_enabled(), st, begin,
                             hit || (j.stored && xdev_kcache_enabled()) ? j.key : "");
    if (j.work[0] != '\0') remove_tree(j.work);
    free(sb.buf);
    XDEV_CHECK(xdev_kmodule_finish(m, st, out));
    return XDEV_SUCCESS;
}
