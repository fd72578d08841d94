/* SPDX-License-Identifier: Apache-2.0 */
/* tools/xdev_kernels.c - xdev-kernels: what the CMake function
 * xdev_add_kernels does (cmake/xdevKernels.cmake), for any build system.
 *
 * Compiles each kernel file (xdev/kernel_lang.h) with the host C compiler
 * (always: the CPU device runs that code), with nvcc into a fatbin and with
 * hipcc into an AMD code object where they are found, embeds the device
 * binaries, and writes into the output folder:
 *   NAME.h      const xdev_kernel_bundle_t *NAME_bundle(void);
 *   NAME.c      the bundle: the kernels' host signatures and the images
 *   libNAME.a   the host objects and NAME.c compiled: link it into the program
 *   NAME.objs/  the intermediate files
 * The kernel names are read from the host objects' symbols (<name>__xdev_sig,
 * what XDEV_KERNEL defines), so they are exactly what the compiler saw.
 * Exit 0 done, 1 a step failed (its reason on stderr), 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xdev/version.h"

extern char **environ;

#ifndef XDEV_KERNELS_INCLUDE_FROM_BIN
#define XDEV_KERNELS_INCLUDE_FROM_BIN "../include"
#endif
#ifndef XDEV_KERNELS_SOURCE_INCLUDE
#define XDEV_KERNELS_SOURCE_INCLUDE ""
#endif
#ifndef XDEV_KERNELS_BUILD_INCLUDE
#define XDEV_KERNELS_BUILD_INCLUDE ""
#endif

#define MAX_ITEMS 256
#define DEFAULT_CUDA_ARCHS "80,90"
#define DEFAULT_HIP_ARCHS "gfx906,gfx908,gfx90a,gfx942,gfx1030,gfx1100"

typedef struct list {
    const char *v[MAX_ITEMS];
    int n;
} list_t;

static struct {
    const char *name, *out, *cc, *nvcc, *hipcc, *nm, *ar;
    const char *cuda_archs, *hip_archs;
    bool no_cuda, no_hip, quiet, verbose;
    list_t sources, incs, defs, host_flags, xdev_incs;
} o;

static void say_usage(FILE *f) {
    fprintf(
        f, "usage: xdev-kernels --name NAME [options] KERNEL.c...\n"
           "\n"
           "Builds kernel files (xdev/kernel_lang.h) as xdev_add_kernels() does in CMake:\n"
           "each file with the host C compiler (always), with nvcc into a fatbin and with\n"
           "hipcc into an AMD code object where they are found; embeds the device binaries\n"
           "and writes, in the output folder:\n"
           "  NAME.h      declares const xdev_kernel_bundle_t *NAME_bundle(void)\n"
           "  NAME.c      the bundle (the kernels' host signatures, the embedded images)\n"
           "  libNAME.a   the host objects and NAME.c compiled: link it into the program\n"
           "  NAME.objs/  intermediate files\n"
           "\n"
           "Options:\n"
           "  --name NAME         the bundle's name, a C identifier (required)\n"
           "  --out DIR           the output folder (default: .; made if missing)\n"
           "  -I DIR, -D N[=V]    include folder / definition for every compile of the files\n"
           "  --host-flag FLAG    an extra flag for the host compiles (repeatable)\n"
           "  --cuda-archs LIST   compute capabilities, e.g. 80,90,90a (default " DEFAULT_CUDA_ARCHS
           ")\n"
           "  --hip-archs LIST    AMD targets (default " DEFAULT_HIP_ARCHS ";\n"
           "                      those hipcc refuses are dropped)\n"
           "  --no-cuda, --no-hip build no CUDA / HIP image even where the compiler is found\n"
           "  --xdev-include DIR  xdev's headers (default: found from this program's place)\n"
           "  --quiet             print nothing but errors\n"
           "  -v, --verbose       print each command run\n"
           "  --help, --version\n"
           "\n"
           "Compilers: $CC (default cc), $NVCC (default nvcc on PATH, then\n"
           "$CUDA_PATH/bin, /usr/local/cuda/bin, /opt/cuda/bin), $HIPCC (default hipcc on\n"
           "PATH, then /opt/rocm/bin); $NM and $AR (default nm, ar).\n"
           "Exit status: 0 done, 1 a step failed (the reason on stderr), 2 bad usage.\n");
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "xdev-kernels: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (xdev-kernels --help says more)\n");
    return 2;
}

static void add(list_t *l, const char *v) {
    if (l->n < MAX_ITEMS) l->v[l->n++] = v;
}

static bool is_ident(const char *s) {
    if (s == NULL || !(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* printf into a path buffer; false when it did not fit (the path is then
 * unusable, and the caller says so). A function, not snprintf at each
 * place, so one check covers every path built here. */
static bool pathf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool pathf(char *buf, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}

static bool exists(const char *path) {
    return access(path, F_OK) == 0;
}

/* ------------------------------------------------------------ running programs */
/* Run argv (argv[0] looked up on PATH); with `out`, its standard output is
 * kept there (cut to len). Returns its exit status, or -1 (message said)
 * when it could not be started. */
static int run(char *const argv[], char *out, size_t len) {
    if (o.verbose && out == NULL) {
        fprintf(stderr, "xdev-kernels:");
        for (int i = 0; argv[i] != NULL; i++)
            fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, "\n");
    }
    int fds[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out != NULL) {
        if (pipe(fds) != 0) return -1;
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (out != NULL) close(fds[1]);
    if (err != 0) {
        if (out != NULL) close(fds[0]);
        fprintf(stderr, "xdev-kernels: cannot run %s: %s\n", argv[0], strerror(err));
        return -1;
    }
    if (out != NULL) {
        size_t used = 0;
        ssize_t r;
        char sink[4096];
        while ((r = read(fds[0], used + 1 < len ? out + used : sink,
                         used + 1 < len ? len - 1 - used : sizeof sink)) > 0)
            if (used + 1 < len) used += (size_t)r;
        out[used] = '\0';
        close(fds[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* argv under construction. */
typedef struct cmd {
    char *v[MAX_ITEMS * 3];
    int n;
} cmd_t;

static void arg(cmd_t *c, const char *s) {
    if (c->n + 1 < (int)(sizeof c->v / sizeof c->v[0])) c->v[c->n++] = (char *)s;
    c->v[c->n] = NULL;
}

/* The -I and -D flags every compile of the kernel files gets. */
static void common_flags(cmd_t *c) {
    static char buf[MAX_ITEMS * 3][PATH_MAX + 3];
    int k = 0;
    for (int i = 0; i < o.xdev_incs.n; i++) {
        (void)pathf(buf[k], sizeof buf[k], "-I%s", o.xdev_incs.v[i]);
        arg(c, buf[k++]);
    }
    for (int i = 0; i < o.incs.n; i++) {
        (void)pathf(buf[k], sizeof buf[k], "-I%s", o.incs.v[i]);
        arg(c, buf[k++]);
    }
    for (int i = 0; i < o.defs.n; i++) {
        snprintf(buf[k], sizeof buf[k], "-D%s", o.defs.v[i]);
        arg(c, buf[k++]);
    }
}

/* A program's path: $var, else the first of `name` on PATH and `dirs`; NULL when none. */
static const char *find_tool(const char *var, const char *name, const char *const *dirs) {
    const char *v = getenv(var);
    if (v != NULL && v[0] != '\0') return v;
    static char found[2][PATH_MAX];
    static int slot;
    char *path = found[slot++ % 2];
    const char *p = getenv("PATH");
    for (; p != NULL && *p;) {
        const char *colon = strchr(p, ':');
        int len = colon ? (int)(colon - p) : (int)strlen(p);
        (void)pathf(path, PATH_MAX, "%.*s/%s", len, p, name);
        if (len > 0 && access(path, X_OK) == 0) return path;
        if (colon == NULL) break;
        p = colon + 1;
    }
    for (int i = 0; dirs != NULL && dirs[i] != NULL; i++) {
        (void)pathf(path, PATH_MAX, "%s/%s", dirs[i], name);
        if (access(path, X_OK) == 0) return path;
    }
    return NULL;
}

/* ------------------------------------------------------------ the kernels */
typedef struct kernel {
    char name[128];
    int file;                 /* index into o.sources */
    unsigned long long value; /* its address in the object: the order of definition */
} kernel_t;

static kernel_t g_kernels[MAX_ITEMS * 8];
static int g_nkernels;

/* The kernels the host object of source `file` defines (nm: <name>__xdev_sig);
 * 0 when it defines one at least, else 1 (message said). */
static int read_kernels(const char *object, int file) {
    char *argv[] = {(char *)o.nm, "-P", "-p", "-g", "--defined-only", (char *)object, NULL};
    static char out[1 << 20];
    int rc = run(argv, out, sizeof out);
    if (rc != 0) {
        fprintf(stderr, "xdev-kernels: %s failed on %s (exit %d)\n", o.nm, object, rc);
        return 1;
    }
    int found = 0, first = g_nkernels;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *sp = strchr(line, ' ');
        if (sp == NULL) continue;
        *sp = '\0';
        unsigned long long value = 0; /* "name type value size": the address orders them */
        if (sp[1] != '\0' && sp[2] == ' ') value = strtoull(sp + 3, NULL, 16);
        size_t len = strlen(line), suf = strlen("__xdev_sig");
        if (len <= suf || strcmp(line + len - suf, "__xdev_sig") != 0) continue;
        line[len - suf] = '\0';
        if (!is_ident(line)) continue; /* a tool's own symbol (ASan's __odr_asan.<name>) */
        for (int i = 0; i < g_nkernels; i++)
            if (strcmp(g_kernels[i].name, line) == 0) {
                const char *a = o.sources.v[g_kernels[i].file], *b = o.sources.v[file];
                fprintf(stderr,
                        "xdev-kernels: kernel '%s' is declared %s%s%s%s: kernel names are C "
                        "symbols (%s__xdev_sig) and must be unique across a bundle's files\n",
                        line, a == b ? "twice in " : "in both ", a, a == b ? "" : " and ",
                        a == b ? "" : b, line);
                return 1;
            }
        if (g_nkernels < (int)(sizeof g_kernels / sizeof g_kernels[0])) {
            snprintf(g_kernels[g_nkernels].name, sizeof g_kernels[0].name, "%s", line);
            g_kernels[g_nkernels].value = value;
            g_kernels[g_nkernels++].file = file;
            found++;
        }
    }
    /* by address in the object: the same order on every run, whatever nm prints first */
    for (int i = first + 1; i < g_nkernels; i++)
        for (int j = i; j > first && g_kernels[j - 1].value > g_kernels[j].value; j--) {
            kernel_t t = g_kernels[j];
            g_kernels[j] = g_kernels[j - 1];
            g_kernels[j - 1] = t;
        }
    if (found == 0) {
        fprintf(stderr,
                "xdev-kernels: %s declares no kernel (no XDEV_KERNEL(name, ...) or "
                "XDEV_KERNEL_SYNC/_BLOCK(name, ...) that the compiler saw)\n",
                o.sources.v[file]);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ device toolchains */
typedef struct image {
    const char *format; /* FATBIN, HIP_CODE */
    char path[PATH_MAX];
    char what[512];
} image_t;

static image_t g_images[MAX_ITEMS * 2];
static int g_nimages;

/* nvcc -gencode flags for the archs nvcc supports (SASS each, PTX for the
 * highest plain one, as xdevKernels.cmake does); desc names them. */
static int cuda_flags(const char *nvcc, list_t *flags, char *desc, size_t dlen) {
    static char codes[1 << 14];
    char *argv[] = {(char *)nvcc, "--list-gpu-code", NULL};
    bool known = run(argv, codes, sizeof codes) == 0;
    static char buf[64][96];
    int k = 0, ptx = -1;
    desc[0] = '\0';
    char archs[1024];
    snprintf(archs, sizeof archs, "%s", o.cuda_archs);
    for (char *a = strtok(archs, ", "); a != NULL && k < 60; a = strtok(NULL, ", ")) {
        char *end;
        long num = strtol(a, &end, 10);
        if (end == a || num <= 0 || (*end != '\0' && !((*end == 'a' || *end == 'f') && !end[1]))) {
            fprintf(stderr,
                    "xdev-kernels: --cuda-archs entry '%s' is not a compute capability like 80, "
                    "90 or 90a\n",
                    a);
            return -1;
        }
        char sm[32];
        snprintf(sm, sizeof sm, "sm_%ld", num);
        if (known && strstr(codes, sm) == NULL) {
            if (!o.quiet)
                fprintf(stderr, "xdev-kernels: %s does not support sm_%s: dropped\n", nvcc, a);
            continue;
        }
        snprintf(buf[k], sizeof buf[k], "-gencode=arch=compute_%s,code=sm_%s", a, a);
        add(flags, buf[k++]);
        size_t used = strlen(desc);
        snprintf(desc + used, dlen - used, "%ssm_%s", used ? " " : "", a);
        if (*end == '\0' && num > ptx) ptx = (int)num;
    }
    if (ptx >= 0) {
        snprintf(buf[k], sizeof buf[k], "-gencode=arch=compute_%d,code=compute_%d", ptx, ptx);
        add(flags, buf[k++]);
        size_t used = strlen(desc);
        snprintf(desc + used, dlen - used, " compute_%d", ptx);
    }
    return flags->n;
}

/* --offload-arch flags for the targets hipcc accepts, each tried on a
 * one-line kernel (ROCm versions differ in the targets they know). */
static int hip_flags(const char *hipcc, const char *objs, list_t *flags, char *desc, size_t dlen) {
    char probe[PATH_MAX], probe_out[PATH_MAX];
    (void)pathf(probe, sizeof probe, "%s/probe.hip", objs);
    (void)pathf(probe_out, sizeof probe_out, "%s/probe.co", objs);
    FILE *f = fopen(probe, "w");
    if (f == NULL) return -1;
    fputs("#include <hip/hip_runtime.h>\nextern \"C\" __global__ void k(int *p) { *p = 1; }\n", f);
    fclose(f);
    static char buf[64][96];
    int k = 0;
    desc[0] = '\0';
    char archs[1024];
    snprintf(archs, sizeof archs, "%s", o.hip_archs);
    char *save = NULL;
    for (char *a = strtok_r(archs, ", ", &save); a != NULL && k < 60;
         a = strtok_r(NULL, ", ", &save)) {
        if (strncmp(a, "gfx", 3) != 0 || !a[3]) {
            fprintf(stderr,
                    "xdev-kernels: --hip-archs entry '%s' is not an AMD target like gfx90a\n", a);
            return -1;
        }
        snprintf(buf[k], sizeof buf[k], "--offload-arch=%s", a);
        char *argv[] = {(char *)hipcc, "--genco", "-x",      "hip", buf[k],
                        probe,         "-o",      probe_out, NULL};
        char sink[256];
        if (run(argv, sink, sizeof sink) != 0) {
            if (!o.quiet)
                fprintf(stderr, "xdev-kernels: %s does not support %s: dropped\n", hipcc, a);
            continue;
        }
        add(flags, buf[k++]);
        size_t used = strlen(desc);
        snprintf(desc + used, dlen - used, "%s%s", used ? " " : "", a);
    }
    return flags->n;
}

/* ------------------------------------------------------------ writing the bundle */
/* The image file as a C array of little-endian 64-bit words (fatbins need
 * 8-byte alignment) named sym, and sym_BYTES (as xdevKernels.cmake embeds). */
static int embed(FILE *out, const char *path, int index) {
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
        fprintf(stderr, "xdev-kernels: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(out, "static const uint64_t xdev_kimg_%d[] = {\n", index);
    unsigned char b[8];
    size_t n, total = 0;
    int col = 0;
    while ((n = fread(b, 1, 8, in)) > 0) {
        memset(b + n, 0, 8 - n);
        uint64_t w = 0;
        for (int i = 7; i >= 0; i--)
            w = (w << 8) | b[i];
        fprintf(out, "0x%016llxu,%s", (unsigned long long)w, ++col % 6 == 0 ? "\n" : "");
        total += n;
    }
    if (total == 0) fprintf(out, "0x0u,");
    fclose(in);
    fprintf(out, "};\n#define XDEV_KIMG_%d_BYTES ((size_t)%zu)\n\n", index, total);
    return 0;
}

static int write_header(const char *path, const char *built) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "xdev-kernels: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(f,
            "/* Generated by xdev-kernels --name %s: do not edit.\n * Images: %s. */\n"
            "#ifndef XDEV_KERNELS_%s_H\n#define XDEV_KERNELS_%s_H\n\n"
            "#include \"xdev/kernel.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
            "/* The kernels of bundle %s, for xdev_module_load(). */\n"
            "const xdev_kernel_bundle_t *%s_bundle(void);\n\n"
            "#ifdef __cplusplus\n}\n#endif\n#endif\n",
            o.name, built, o.name, o.name, o.name, o.name);
    return fclose(f) == 0 ? 0 : 1;
}

static int write_bundle(const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "xdev-kernels: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(f,
            "/* Generated by xdev-kernels --name %s: do not edit. */\n#include <stddef.h>\n"
            "#include <stdint.h>\n\n#include \"xdev/kernel.h\"\n#include \"%s.h\"\n\n"
            "#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__\n"
            "#error \"xdev-kernels embeds images as little-endian 64-bit words\"\n#endif\n\n"
            "#if defined(__GNUC__)\n#define XDEV_KGEN_EXPORT "
            "__attribute__((visibility(\"default\")))\n#else\n#define XDEV_KGEN_EXPORT\n#endif\n\n",
            o.name, o.name);
    for (int i = 0; i < g_nkernels; i++)
        fprintf(f, "extern const xdev_kernel_sig_t %s__xdev_sig;\n", g_kernels[i].name);
    fprintf(f, "\nstatic const xdev_kernel_sig_t *const xdev_kgen_kernels[] = {\n");
    for (int i = 0; i < g_nkernels; i++) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", o.sources.v[g_kernels[i].file]);
        fprintf(f, "    &%s__xdev_sig, /* %s */\n", g_kernels[i].name, basename(tmp));
    }
    fprintf(f, "};\n\n");
    int rc = 0;
    for (int i = 0; i < g_nimages && rc == 0; i++)
        rc = embed(f, g_images[i].path, i);
    if (g_nimages > 0) {
        fprintf(f, "static const xdev_kernel_image_t xdev_kgen_images[] = {\n");
        for (int i = 0; i < g_nimages; i++)
            fprintf(f,
                    "    {.format = XDEV_IMAGE_%s, .data = xdev_kimg_%d, .size = "
                    "XDEV_KIMG_%d_BYTES}, /* %s */\n",
                    g_images[i].format, i, i, g_images[i].what);
        fprintf(f, "};\n\n");
    }
    fprintf(f,
            "static const xdev_kernel_bundle_t xdev_kgen_bundle = {\n"
            "    .size = sizeof(xdev_kernel_bundle_t),\n    .name = \"%s\",\n"
            "    .kernels = xdev_kgen_kernels,\n    .nkernels = %d,\n"
            "    .images = %s,\n    .nimages = %d,\n};\n\n"
            "XDEV_KGEN_EXPORT const xdev_kernel_bundle_t *%s_bundle(void) {\n"
            "    return &xdev_kgen_bundle;\n}\n",
            o.name, g_nkernels, g_nimages ? "xdev_kgen_images" : "NULL", g_nimages, o.name);
    if (fclose(f) != 0) rc = 1;
    return rc;
}

/* ------------------------------------------------------------ setup */
/* xdev's include folders: --xdev-include, else the installed one relative
 * to this program, else the build tree's (a program run from the build). */
static int find_xdev_includes(void) {
    if (o.xdev_incs.n > 0) {
        char probe[PATH_MAX];
        (void)pathf(probe, sizeof probe, "%s/xdev/kernel_lang.h", o.xdev_incs.v[0]);
        if (exists(probe)) return 0;
        fprintf(stderr, "xdev-kernels: --xdev-include %s holds no xdev/kernel_lang.h\n",
                o.xdev_incs.v[0]);
        return 1;
    }
    static char self[PATH_MAX], inc[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        (void)pathf(inc, sizeof inc, "%s/" XDEV_KERNELS_INCLUDE_FROM_BIN, dirname(self));
        (void)pathf(probe, sizeof probe, "%s/xdev/kernel_lang.h", inc);
        if (exists(probe)) {
            add(&o.xdev_incs, inc);
            return 0;
        }
    }
    /* the build tree's: the sources' headers and the generated xdev/version.h */
    (void)pathf(probe, sizeof probe, "%s/xdev/kernel_lang.h", XDEV_KERNELS_SOURCE_INCLUDE);
    if (XDEV_KERNELS_SOURCE_INCLUDE[0] != '\0' && exists(probe)) {
        add(&o.xdev_incs, XDEV_KERNELS_SOURCE_INCLUDE);
        add(&o.xdev_incs, XDEV_KERNELS_BUILD_INCLUDE);
        return 0;
    }
    fprintf(stderr,
            "xdev-kernels: xdev's headers (xdev/kernel_lang.h) are not in %s: give "
            "--xdev-include DIR (pkg-config --variable=includedir xdev)\n",
            inc);
    return 1;
}

static int parse(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE(field)                                                                                \
    do {                                                                                           \
        if (next == NULL) return usage_error("%s needs a value", a);                               \
        field = next;                                                                              \
        i++;                                                                                       \
    } while (0)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            say_usage(stdout);
            exit(0);
        } else if (strcmp(a, "--version") == 0) {
            printf("xdev-kernels (xdev %s)\n", XDEV_VERSION_STRING);
            exit(0);
        } else if (strcmp(a, "--name") == 0) {
            TAKE(o.name);
        } else if (strcmp(a, "--out") == 0) {
            TAKE(o.out);
        } else if (strcmp(a, "--cuda-archs") == 0) {
            TAKE(o.cuda_archs);
        } else if (strcmp(a, "--hip-archs") == 0) {
            TAKE(o.hip_archs);
        } else if (strcmp(a, "--xdev-include") == 0) {
            const char *d = NULL;
            TAKE(d);
            add(&o.xdev_incs, d);
        } else if (strcmp(a, "--host-flag") == 0) {
            const char *d = NULL;
            TAKE(d);
            add(&o.host_flags, d);
        } else if (strcmp(a, "-I") == 0 || strcmp(a, "-D") == 0) {
            const char *d = NULL;
            TAKE(d);
            add(a[1] == 'I' ? &o.incs : &o.defs, d);
        } else if (strncmp(a, "-I", 2) == 0 || strncmp(a, "-D", 2) == 0) {
            add(a[1] == 'I' ? &o.incs : &o.defs, a + 2);
        } else if (strcmp(a, "--no-cuda") == 0) {
            o.no_cuda = true;
        } else if (strcmp(a, "--no-hip") == 0) {
            o.no_hip = true;
        } else if (strcmp(a, "--quiet") == 0) {
            o.quiet = true;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            o.verbose = true;
        } else if (a[0] == '-') {
            return usage_error("unknown option '%s'", a);
        } else {
            add(&o.sources, a);
        }
#undef TAKE
    }
    if (o.name == NULL) return usage_error("%s", "--name NAME is required");
    if (!is_ident(o.name)) return usage_error("--name '%s' is not a C identifier", o.name);
    if (o.sources.n == 0) return usage_error("%s", "no kernel file given");
    if (strlen(o.name) > 200) return usage_error("--name '%.40s...' is too long", o.name);
    if (strlen(o.out) + 2 * strlen(o.name) + 300 > PATH_MAX) /* every path built below fits */
        return usage_error("--out '%s' is too long a path", o.out);
    for (int i = 0; i < o.sources.n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(o.sources.v[i], o.sources.v[j]) == 0)
                return usage_error("%s is given twice", o.sources.v[i]);
    return 0;
}

/* Makes the folder (one level) unless it exists; false (said) on failure. */
static bool make_dir(const char *dir) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return true;
    if (mkdir(dir, 0777) == 0) return true;
    fprintf(stderr, "xdev-kernels: cannot make the folder %s: %s\n", dir, strerror(errno));
    return false;
}

int main(int argc, char **argv) {
    o.out = ".";
    o.cuda_archs = DEFAULT_CUDA_ARCHS;
    o.hip_archs = DEFAULT_HIP_ARCHS;
    const char *env_cc = getenv("CC");
    o.cc = env_cc != NULL && env_cc[0] ? env_cc : "cc";
    o.nm = getenv("NM") != NULL && getenv("NM")[0] ? getenv("NM") : "nm";
    o.ar = getenv("AR") != NULL && getenv("AR")[0] ? getenv("AR") : "ar";
    int rc = parse(argc, argv);
    if (rc != 0) return rc;
    for (int i = 0; i < o.sources.n; i++)
        if (!exists(o.sources.v[i])) {
            fprintf(stderr, "xdev-kernels: %s: no such file\n", o.sources.v[i]);
            return 1;
        }
    if (find_xdev_includes() != 0) return 1;
    static char objs[PATH_MAX];
    (void)pathf(objs, sizeof objs, "%s/%s.objs", o.out, o.name);
    if (!make_dir(o.out) || !make_dir(objs)) return 1;

    /* The host objects, and the kernels they define. */
    static char host_obj[MAX_ITEMS][PATH_MAX];
    for (int i = 0; i < o.sources.n; i++) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", o.sources.v[i]);
        char *stem = basename(tmp), *dot = strrchr(stem, '.');
        if (dot != NULL) *dot = '\0';
        (void)pathf(host_obj[i], sizeof host_obj[i], "%s/%d_%s.o", objs, i, stem);
        cmd_t c = {.n = 0};
        arg(&c, o.cc);
        arg(&c, "-O3");
        arg(&c, "-fno-math-errno");
        arg(&c, "-fPIC");
        common_flags(&c);
        for (int k = 0; k < o.host_flags.n; k++)
            arg(&c, o.host_flags.v[k]);
        arg(&c, "-c");
        arg(&c, o.sources.v[i]);
        arg(&c, "-o");
        arg(&c, host_obj[i]);
        if ((rc = run(c.v, NULL, 0)) != 0) {
            fprintf(stderr, "xdev-kernels: the host compile of %s failed (%s exit %d)\n",
                    o.sources.v[i], o.cc, rc);
            return 1;
        }
        if (read_kernels(host_obj[i], i) != 0) return 1;
    }

    /* The device images: one per file and toolchain found. */
    char built[2048] = "host";
    static const char *const cuda_dirs[] = {"/usr/local/cuda/bin", "/opt/cuda/bin", NULL};
    static const char *const rocm_dirs[] = {"/opt/rocm/bin", NULL};
    for (int tc = 0; tc < 2; tc++) {
        bool cuda = tc == 0;
        if (cuda ? o.no_cuda : o.no_hip) continue;
        const char *tool = NULL;
        if (cuda) {
            char cuda_path[PATH_MAX];
            const char *cp = getenv("CUDA_PATH");
            (void)pathf(cuda_path, sizeof cuda_path, "%s/bin", cp != NULL ? cp : "/nonexistent");
            const char *dirs[] = {cuda_path, cuda_dirs[0], cuda_dirs[1], NULL};
            tool = find_tool("NVCC", "nvcc", dirs);
        } else {
            tool = find_tool("HIPCC", "hipcc", rocm_dirs);
        }
        if (tool == NULL) {
            if (!o.quiet)
                fprintf(stderr, "xdev-kernels: no %s found: %s has no %s images\n",
                        cuda ? "nvcc" : "hipcc", o.name, cuda ? "CUDA" : "HIP");
            continue;
        }
        list_t flags = {.n = 0};
        char desc[1024];
        int nf = cuda ? cuda_flags(tool, &flags, desc, sizeof desc)
                      : hip_flags(tool, objs, &flags, desc, sizeof desc);
        if (nf < 0) return 1;
        if (nf == 0) continue;
        size_t used = strlen(built);
        snprintf(built + used, sizeof built - used, ", %s (%s)", cuda ? "cuda" : "hip", desc);
        for (int i = 0; i < o.sources.n; i++) {
            image_t *img = &g_images[g_nimages];
            char tmp[PATH_MAX];
            snprintf(tmp, sizeof tmp, "%s", o.sources.v[i]);
            char *fname = basename(tmp);
            (void)pathf(img->path, sizeof img->path, "%.*s.%s", (int)(strlen(host_obj[i]) - 2),
                        host_obj[i], cuda ? "fatbin" : "hipco");
            img->format = cuda ? "FATBIN" : "HIP_CODE";
            (void)pathf(img->what, sizeof img->what, "%s: %s %s", fname, cuda ? "nvcc" : "hipcc",
                        desc);
            cmd_t c = {.n = 0};
            arg(&c, tool);
            if (cuda) {
                arg(&c, "-fatbin");
                arg(&c, "-x");
                arg(&c, "cu");
            } else {
                arg(&c, "--genco");
                arg(&c, "-x");
                arg(&c, "hip");
                arg(&c, "-O3");
            }
            arg(&c, "-std=c++17");
            for (int k = 0; k < flags.n; k++)
                arg(&c, flags.v[k]);
            common_flags(&c);
            arg(&c, "-o");
            arg(&c, img->path);
            arg(&c, o.sources.v[i]);
            if ((rc = run(c.v, NULL, 0)) != 0) {
                fprintf(stderr, "xdev-kernels: %s failed on %s (exit %d)\n", tool, o.sources.v[i],
                        rc);
                return 1;
            }
            g_nimages++;
        }
    }

    /* NAME.h, NAME.c, libNAME.a. */
    char header[PATH_MAX], bundle[PATH_MAX], bundle_obj[PATH_MAX], archive[PATH_MAX];
    (void)pathf(header, sizeof header, "%s/%s.h", o.out, o.name);
    (void)pathf(bundle, sizeof bundle, "%s/%s.c", o.out, o.name);
    (void)pathf(bundle_obj, sizeof bundle_obj, "%s/%s.bundle.o", objs, o.name);
    (void)pathf(archive, sizeof archive, "%s/lib%s.a", o.out, o.name);
    if (write_header(header, built) != 0 || write_bundle(bundle) != 0) return 1;
    cmd_t c = {.n = 0};
    char inc_out[PATH_MAX + 2];
    (void)pathf(inc_out, sizeof inc_out, "-I%s", o.out);
    arg(&c, o.cc);
    arg(&c, "-O2");
    arg(&c, "-fPIC");
    arg(&c, inc_out);
    common_flags(&c);
    arg(&c, "-c");
    arg(&c, bundle);
    arg(&c, "-o");
    arg(&c, bundle_obj);
    if ((rc = run(c.v, NULL, 0)) != 0) {
        fprintf(stderr, "xdev-kernels: compiling the bundle %s failed (%s exit %d)\n", bundle, o.cc,
                rc);
        return 1;
    }
    (void)unlink(archive); /* ar adds to an archive: start afresh */
    cmd_t a = {.n = 0};
    arg(&a, o.ar);
    arg(&a, "rcs");
    arg(&a, archive);
    arg(&a, bundle_obj);
    for (int i = 0; i < o.sources.n; i++)
        arg(&a, host_obj[i]);
    if ((rc = run(a.v, NULL, 0)) != 0) {
        fprintf(stderr, "xdev-kernels: %s failed making %s (exit %d)\n", o.ar, archive, rc);
        return 1;
    }
    if (!o.quiet) {
        printf("xdev-kernels: bundle %s: %d kernel%s (", o.name, g_nkernels,
               g_nkernels == 1 ? "" : "s");
        for (int i = 0; i < g_nkernels; i++)
            printf("%s%s", i ? " " : "", g_kernels[i].name);
        printf("), images: %s; wrote %s, %s, %s\n", built, header, bundle, archive);
    }
    return 0;
}
