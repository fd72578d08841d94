/* SPDX-License-Identifier: Apache-2.0 */
/* test_kernel_rtc.c - the `kernel_rtc` conformance suite: kernels compiled
 * at run time (xdev_module_compile) on the backend under test, and the
 * on-disk cache: compile and launch with options, a cache hit that needs no
 * compiler, a damaged entry rebuilt, threads and processes compiling the
 * same source at once, an unwritable cache, compile errors with the log.
 * Each test points XDEV_CACHE_DIR at a fresh directory before xdev starts.
 * Conformance: XDEV_BACKEND=<backend>. */
/* nftw and RTLD_DEFAULT: _GNU_SOURCE, which the build defines */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xdev/kernel.h"
#include "xt.h"

static const char k_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "#ifndef FACTOR\n"
    "#define FACTOR 1\n"
    "#endif\n"
    "/* out[i] = i * FACTOR + k */\n"
    "XDEV_KERNEL(rtc_affine, XDEV_PARAM(int, n), XDEV_PARAM(int, k), XDEV_PTR(int, out)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (i < n) out[i] = (int)i * FACTOR + k;\n"
    "}\n";

/* These tests start xdev themselves (the cache directory is read at
 * initialisation) and fork: each needs a process of its own. */
#define REQUIRE_OWN_PROCESS()                                                                      \
    do {                                                                                           \
        const char *fork_ = getenv("CK_FORK");                                                     \
        if (fork_ != NULL && strcmp(fork_, "no") == 0)                                             \
            XT_SKIP("CK_FORK=no: needs a process of its own (xdev reads XDEV_CACHE_DIR once)");    \
    } while (0)

/* A fresh cache directory for this test's process (xdev not started yet). */
static char g_cache[256];
static void fresh_cache(void) {
    snprintf(g_cache, sizeof g_cache, "/tmp/xdev-rtc-cache-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_cache));
    ck_assert_int_eq(setenv("XDEV_CACHE_DIR", g_cache, 1), 0);
}

static int drop_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 ? 0 : 0;
}

/* After each test (in its process): the test's cache directory goes. */
static void drop_cache(void) {
    if (g_cache[0] != '\0') (void)nftw(g_cache, drop_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Files in the cache's entry folder whose name ends with `suffix`. */
static int count_entries(const char *suffix, char *first, size_t len) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/kernels-v1", g_cache);
    DIR *d = opendir(dir);
    if (d == NULL) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        if (l > s && strcmp(e->d_name + l - s, suffix) == 0 && e->d_name[0] != '.') {
            if (n++ == 0 && first != NULL) snprintf(first, len, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

/* Compile with FACTOR=factor, launch, check; true when all matched. */
static bool run_affine(int factor, const char *name) {
    char def[32];
    snprintf(def, sizeof def, "-DFACTOR=%d", factor);
    const char *opts[] = {def};
    xdev_compile_options_t o = {.size = sizeof o, .name = name, .options = opts, .noptions = 1};
    xdev_module_t m = NULL;
    if (xdev_module_compile(xt_dev(0), k_source, &o, &m) != XDEV_SUCCESS) {
        fprintf(stderr, "compile: %s\n", xdev_last_error());
        return false;
    }
    xdev_kernel_t k = NULL;
    int n = 1000, add = 7, *d = NULL, *h = malloc((size_t)n * sizeof(int));
    xdev_launch_config_t cfg = {.grid = {4, 1, 1}, .block = {256, 1, 1}};
    bool ok = xdev_module_get_kernel(m, "rtc_affine", &k) == XDEV_SUCCESS &&
              xdev_malloc_device(xt_dev(0), (void **)&d, (size_t)n * sizeof(int)) == XDEV_SUCCESS &&
              XDEV_LAUNCH(k, &cfg, n, add, d) == XDEV_SUCCESS &&
              xdev_memcpy(h, d, (size_t)n * sizeof(int)) == XDEV_SUCCESS;
    if (!ok) fprintf(stderr, "run: %s\n", xdev_last_error());
    for (int i = 0; ok && i < n; i++)
        ok = h[i] == i * factor + add;
    if (d != NULL) (void)xdev_free(d);
    free(h);
    (void)xdev_module_unload(m);
    return ok;
}

START_TEST(compile_and_launch) {
    fresh_cache();
    ck_assert(run_affine(3, "affine"));
    ck_assert(run_affine(5, "affine")); /* another option: another binary */
    xdev_module_t m = NULL;
    XT_OK(xdev_module_compile(xt_dev(0), k_source, NULL, &m)); /* no options */
    xdev_kernel_t k;
    XT_OK(xdev_module_get_kernel(m, "rtc_affine", &k));
    xdev_kernel_attributes_t a;
    XT_OK(xdev_kernel_get_attributes(k, &a));
    ck_assert_int_eq(a.nparams, 3); /* the source declares the signature on every backend */
    XT_OK(xdev_module_unload(m));
}
END_TEST

/* The second compile of the same source and options is a cache hit: it
 * works with the compiler gone. */
START_TEST(cache_hit_needs_no_compiler) {
    REQUIRE_OWN_PROCESS();
    fresh_cache();
    ck_assert(run_affine(4, "hit"));
    ck_assert_int_gt(count_entries(".sum", NULL, 0) + count_entries(".bin", NULL, 0), 0);
    if (!xt_host_addressable()) {
        ck_assert(run_affine(4, "hit")); /* the GPU compilers cannot be hidden from here */
        return;
    }
    ck_assert_int_eq(setenv("XDEV_CC", "/nonexistent/cc", 1), 0);
    ck_assert(run_affine(4, "hit"));
    xdev_module_t m = NULL;
    xdev_compile_options_t o = {.size = sizeof o, .name = "miss"};
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_module_compile(xt_dev(0), k_source, &o, &m),
           "/nonexistent/cc");
}
END_TEST

/* The whole of a file, malloc'd; NULL if it cannot be read. */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    unsigned char *buf = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len)) != NULL &&
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = len > 0 ? (size_t)len : 0;
    return buf;
}

/* A damaged entry is detected, rebuilt and never loaded. The damage is one
 * that would change the results if it were loaded: the entry's bytes are
 * replaced by those of another build (FACTOR 7 instead of 6) of the same
 * length, so only the check of the content's SHA-256 tells them apart (a
 * flipped byte in the section headers, which dlopen never reads, would load
 * and run correctly and prove nothing). */
START_TEST(damaged_entry_rebuilt) {
    REQUIRE_OWN_PROCESS();
    fresh_cache();
    const char *suffix = xt_host_addressable() ? ".so" : ".bin";
    ck_assert(run_affine(6, "damaged"));
    char six[600] = "", path[1024] = "";
    ck_assert_int_eq(count_entries(suffix, six, sizeof six), 1);
    ck_assert(run_affine(7, "damaged")); /* another entry: the wrong code for FACTOR 6 */
    ck_assert_int_eq(count_entries(suffix, NULL, 0), 2);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/kernels-v1", g_cache);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (l > strlen(suffix) && strcmp(e->d_name + l - strlen(suffix), suffix) == 0 &&
            strcmp(p, six) != 0 && e->d_name[0] != '.')
            snprintf(path, sizeof path, "%s", p);
    }
    closedir(d);
    ck_assert_msg(path[0] != '\0', "the FACTOR 7 entry");
    size_t n6 = 0, n7 = 0;
    unsigned char *b6 = slurp(six, &n6), *b7 = slurp(path, &n7);
    ck_assert(b6 != NULL && b7 != NULL);
    if (!xt_host_addressable()) {
        /* A .bin holds a header of its own (the key, the hash): keep FACTOR
         * 6's, put FACTOR 7's payload under it. */
        ck_assert_uint_gt(n6, 128);
        memcpy(b6 + 128, b7 + 128, (n6 < n7 ? n6 : n7) - 128);
    } else {
        /* Padded or cut to the length the .sum records (what would differ
         * is the section headers at the end, which dlopen does not read). */
        unsigned char *w = calloc(1, n6);
        ck_assert_ptr_nonnull(w);
        memcpy(w, b7, n6 < n7 ? n6 : n7);
        free(b6);
        b6 = w;
    }
    FILE *f = fopen(six, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b6, 1, n6, f), n6);
    ck_assert_int_eq(fclose(f), 0);
    free(b6);
    free(b7);
    ck_assert_msg(run_affine(6, "damaged"), "the damaged entry was loaded"); /* rebuilt */
}
END_TEST

static void *compile_thread(void *arg) {
    atomic_int *fails = arg;
    if (!run_affine(9, "threads")) atomic_fetch_add(fails, 1);
    return NULL;
}

START_TEST(threads_and_processes_compile_at_once) {
    REQUIRE_OWN_PROCESS();
    fresh_cache();
    enum { PROCS = 3, THREADS = 4 };
    pid_t pids[PROCS];
    fflush(NULL); /* the children end through exit(): nothing buffered twice */
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        ck_assert_int_ge(pids[p], 0);
        /* exit(), not _exit(): libxdev's destructor stops the stream workers
         * the child started (under TSan an unjoined thread is a failure). */
        if (pids[p] == 0) exit(run_affine(11, "procs") ? 0 : 1);
    }
    pthread_t t[THREADS];
    atomic_int fails = 0;
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, compile_thread, &fails), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&fails), 0);
    for (int p = 0; p < PROCS; p++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[p], &status, 0), pids[p]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed", p);
    }
}
END_TEST

/* A cache that cannot be written (its path runs through a regular file,
 * which stops root too) only costs a compile. */
START_TEST(unwritable_cache_still_runs) {
    REQUIRE_OWN_PROCESS();
    char file[] = "/tmp/xdev-rtc-file-XXXXXX";
    int fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/cache", file);
    ck_assert_int_eq(setenv("XDEV_CACHE_DIR", dir, 1), 0);
    ck_assert(run_affine(2, "nocache"));
    ck_assert_msg(strstr(xdev_compile_log(), "kernel cache cannot be written") != NULL,
                  "said once, in the compile's log: %s", xdev_compile_log());
    ck_assert(run_affine(2, "nocache"));
    ck_assert_msg(strstr(xdev_compile_log(), "kernel cache cannot be written") == NULL,
                  "said only once: %s", xdev_compile_log());
    unlink(file);
}
END_TEST

START_TEST(compile_errors) {
    fresh_cache();
    xdev_module_t m = NULL;
    const char *bad = "#include <xdev/kernel_lang.h>\n"
                      "XDEV_KERNEL(broken, XDEV_PTR(int, out)) { out[0] = undeclared_thing; }\n";
    XT_ERR(XDEV_ERROR_COMPILE, xdev_module_compile(xt_dev(0), bad, NULL, &m), "undeclared_thing");
    ck_assert_ptr_null(m);
    { /* the device is named once (issue 41: "xdev_module_compile: cpu:0: cpu:0: ...") */
        const char *e = xdev_last_error(), *p = strstr(e, ":0: ");
        ck_assert_msg(p != NULL, "the device: %s", e);
        const char *w = p;
        while (w > e && w[-1] != ' ')
            w--;
        size_t len = (size_t)(p + 4 - w);
        ck_assert_msg(strncmp(p + 4, w, len) != 0, "the device named twice: %.200s", e);
    }
    ck_assert_msg(strstr(xdev_compile_log(), "undeclared_thing") != NULL, "log: %s",
                  xdev_compile_log());
    const char *opts[] = {"--no-such-option-for-xdev"};
    xdev_compile_options_t o = {.size = sizeof o, .options = opts, .noptions = 1};
    XT_ERR(XDEV_ERROR_COMPILE, xdev_module_compile(xt_dev(0), k_source, &o, &m), "no-such-option");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_compile(xt_dev(0), NULL, NULL, &m), "source");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_compile(xt_dev(0), "", NULL, &m), "empty");
    xdev_compile_options_t badname = {.size = sizeof o, .name = "no spaces"};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_compile(xt_dev(0), k_source, &badname, &m),
           "name");
    xdev_compile_options_t badsize = {.size = 1};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_module_compile(xt_dev(0), k_source, &badsize, &m),
           "size");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_module_compile(xt_dev(99), k_source, NULL, &m), "99");
    ck_assert(run_affine(1, "after_errors")); /* nothing broken */
}
END_TEST

/* xdev_elementwise: generated, compiled once, launched; every dtype. */
START_TEST(elementwise_expressions) {
    fresh_cache();
    enum { N = 3000 };
    float *fa = NULL, *fb = NULL, *fo = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&fa, N * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&fb, N * sizeof(float)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&fo, N * sizeof(float)));
    float *h = malloc(N * sizeof(float)), *g = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) {
        h[i] = (float)(i % 50) - 25.0f;
        g[i] = (float)(i % 7);
    }
    XT_OK(xdev_memcpy(fa, h, N * sizeof(float)));
    XT_OK(xdev_memcpy(fb, g, N * sizeof(float)));
    const void *in2[] = {fa, fb};
    for (int rep = 0; rep < 3; rep++) { /* the first compiles, the others only launch */
        XT_OK(xdev_elementwise("in0 * 2.5f + in1", XDEV_DTYPE_F32, 2, in2, fo, N, NULL));
        float *r = malloc(N * sizeof(float));
        XT_OK(xdev_memcpy(r, fo, N * sizeof(float)));
        for (int i = 0; i < N; i++)
            ck_assert_msg(r[i] == h[i] * 2.5f + g[i], "[%d] %g", i, (double)r[i]);
        free(r);
    }
    XT_OK(xdev_elementwise("fmaxf(in0, 0.0f)", XDEV_DTYPE_F32, 1, in2, fo, N, NULL));
    XT_OK(xdev_memcpy(g, fo, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        ck_assert(g[i] == (h[i] > 0.0f ? h[i] : 0.0f));
    long long *ia = NULL, *io = NULL, hi[N];
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&ia, N * sizeof(long long)));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&io, N * sizeof(long long)));
    for (int i = 0; i < N; i++)
        hi[i] = (long long)i * 1000003LL;
    XT_OK(xdev_memcpy(ia, hi, sizeof hi));
    const void *in1[] = {ia};
    XT_OK(xdev_elementwise("in0 * in0 - 3", XDEV_DTYPE_I64, 1, in1, io, N, NULL));
    long long ho[N];
    XT_OK(xdev_memcpy(ho, io, sizeof ho));
    for (int i = 0; i < N; i++)
        ck_assert(ho[i] == hi[i] * hi[i] - 3);
    XT_OK(xdev_elementwise("7", XDEV_DTYPE_I64, 0, NULL, io, 10, NULL)); /* a fill */
    XT_OK(xdev_memcpy(ho, io, 10 * sizeof(long long)));
    for (int i = 0; i < 10; i++)
        ck_assert(ho[i] == 7);
    /* f64 and i32, the other two dtypes. */
    double *da = NULL, *dout = NULL, dh[N], dr[N];
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&da, sizeof dh));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&dout, sizeof dh));
    for (int i = 0; i < N; i++)
        dh[i] = (double)i * 0.25 - 100.0;
    XT_OK(xdev_memcpy(da, dh, sizeof dh));
    const void *ind[] = {da};
    XT_OK(xdev_elementwise("in0 * in0 + 0.5", XDEV_DTYPE_F64, 1, ind, dout, N, NULL));
    XT_OK(xdev_memcpy(dr, dout, sizeof dr));
    for (int i = 0; i < N; i++)
        ck_assert_msg(dr[i] == dh[i] * dh[i] + 0.5, "f64 [%d] %g", i, dr[i]);
    int *ja = NULL, *jo = NULL, jh[N], jr[N];
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&ja, sizeof jh));
    XT_OK(xdev_malloc_device(xt_dev(0), (void **)&jo, sizeof jh));
    for (int i = 0; i < N; i++)
        jh[i] = i * 7 - 5000;
    XT_OK(xdev_memcpy(ja, jh, sizeof jh));
    const void *inj[] = {ja};
    XT_OK(xdev_elementwise("in0 * 3 - 7", XDEV_DTYPE_I32, 1, inj, jo, N, NULL));
    XT_OK(xdev_memcpy(jr, jo, sizeof jr));
    for (int i = 0; i < N; i++)
        ck_assert_msg(jr[i] == jh[i] * 3 - 7, "i32 [%d] %d", i, jr[i]);
    XT_OK(xdev_free(da));
    XT_OK(xdev_free(dout));
    XT_OK(xdev_free(ja));
    XT_OK(xdev_free(jo));
    /* bad input */
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_elementwise("in0; system(0)", XDEV_DTYPE_F32, 1, in2, fo, N, NULL), "';'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_elementwise("(in0 + 1", XDEV_DTYPE_F32, 1, in2, fo, N, NULL), "unbalanced");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_elementwise("in0", XDEV_DTYPE_F16, 1, in2, fo, N, NULL),
           "dtype");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_elementwise("in0", XDEV_DTYPE_F32, 9, in2, fo, N, NULL),
           "ninputs");
    XT_ERR(XDEV_ERROR_COMPILE,
           xdev_elementwise("no_such_function(in0)", XDEV_DTYPE_F32, 1, in2, fo, N, NULL),
           "no_such_function");
    const void *hostin[] = {h};
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_elementwise("in0", XDEV_DTYPE_F32, 1, hostin, fo, N, NULL), "inputs[0]");
    if (xt_has_devices(__func__, 2, "operands on two devices")) {
        float *other = NULL;
        XT_OK(xdev_malloc_device(xt_dev(1), (void **)&other, N * sizeof(float)));
        const void *mixed[] = {fa, other};
        XT_ERR(XDEV_ERROR_CROSS_DEVICE,
               xdev_elementwise("in0 + in1", XDEV_DTYPE_F32, 2, mixed, fo, N, NULL), "inputs[1]");
        XT_OK(xdev_free(other));
    }
    XT_OK(xdev_elementwise_cache_clear()); /* and compiled again after it */
    XT_OK(xdev_elementwise("in0 * in0 - 3", XDEV_DTYPE_I64, 1, in1, io, N, NULL));
    XT_OK(xdev_memcpy(ho, io, sizeof ho));
    ck_assert(ho[N - 1] == hi[N - 1] * hi[N - 1] - 3);
    XT_OK(xdev_elementwise_cache_clear());
    void *ptrs[] = {fa, fb, fo, ia, io};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        XT_OK(xdev_free(ptrs[i]));
    free(h);
    free(g);
}
END_TEST

/* ------------------------------------------------------------ stale kernels */

static const char k_inc_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "#include \"rtc_inc.h\"\n"
    "#ifndef EXTRA\n"
    "#define EXTRA 0\n"
    "#endif\n"
    "XDEV_KERNEL(rtc_inc, XDEV_PARAM(int, n), XDEV_PTR(int, out)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (i < n) out[i] = (int)i + BONUS + EXTRA;\n"
    "}\n";

/* In a child process (a new process, as a rerun of the application is):
 * compile k_inc_source with -I<dir> and `def`, launch it and check out[i] ==
 * i + want. 0 when all matched; 2 when it did not compile (its status in
 * *st), 1 when the results differ. `version`, when not NULL, is given to the
 * test hook that stands for another xdev version. */
static bool g_child_no_deps; /* the child compiles as NVRTC does: no list of files read */
static int child_inc(const char *dir, const char *def, int want, const char *version,
                     xdev_status_t *st_out) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        if (version != NULL) {
            void (*hook)(const char *) =
                (void (*)(const char *))dlsym(RTLD_DEFAULT, "xdev_kcompile_test_version");
            if (hook == NULL) {
                fprintf(stderr, "no xdev_kcompile_test_version hook in libxdev\n");
                exit(3);
            }
            hook(version);
        }
        if (g_child_no_deps) {
            void (*nd)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "xdev_kcompile_test_no_deps");
            if (nd == NULL) {
                fprintf(stderr, "no xdev_kcompile_test_no_deps hook in libxdev\n");
                exit(3);
            }
            nd(1);
        }
        char inc[600];
        snprintf(inc, sizeof inc, "-I%s", dir);
        const char *opts[] = {inc, def};
        xdev_compile_options_t o = {
            .size = sizeof o, .name = "inc", .options = opts, .noptions = def != NULL ? 2 : 1};
        xdev_module_t m = NULL;
        xdev_status_t st = xdev_module_compile(xt_dev(0), k_inc_source, &o, &m);
        if (write(fds[1], &st, sizeof st) != sizeof st) exit(4);
        if (st != XDEV_SUCCESS) {
            fprintf(stderr, "child: %s\n", xdev_last_error());
            exit(2);
        }
        xdev_kernel_t k = NULL;
        int n = 300, *d = NULL, h[300];
        xdev_launch_config_t cfg = {.grid = {2, 1, 1}, .block = {256, 1, 1}};
        bool ok = xdev_module_get_kernel(m, "rtc_inc", &k) == XDEV_SUCCESS &&
                  xdev_malloc_device(xt_dev(0), (void **)&d, sizeof h) == XDEV_SUCCESS &&
                  XDEV_LAUNCH(k, &cfg, n, d) == XDEV_SUCCESS &&
                  xdev_memcpy(h, d, sizeof h) == XDEV_SUCCESS;
        for (int i = 0; ok && i < n; i++)
            if (h[i] != i + want) {
                fprintf(stderr, "child: out[%d] = %d, want %d (a stale kernel)\n", i, h[i],
                        i + want);
                ok = false;
            }
        (void)xdev_free(d);
        (void)xdev_module_unload(m);
        exit(ok ? 0 : 1); /* exit(): libxdev's destructor stops its workers */
    }
    close(fds[1]);
    xdev_status_t st = XDEV_ERROR_BACKEND;
    if (read(fds[0], &st, sizeof st) != sizeof st) st = XDEV_ERROR_BACKEND;
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status), "the child died: %#x", (unsigned)status);
    if (st_out != NULL) *st_out = st;
    return WEXITSTATUS(status);
}

static void write_text(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, mode), 0);
}

/* Files changed less than a second before a compile are not cached (what the
 * compile read of them cannot be told from a later change in the same
 * timestamp tick): the tests let a second pass after writing one. */
static void let_settle(void) {
    struct timespec ts = {1, 150 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Lines in the file the wrapper compiler appends to at each run. */
static int compiles(const char *log) {
    FILE *f = fopen(log, "r");
    if (f == NULL) return 0;
    int n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

/* The wrapper compiler `cc` (XDEV_CC): counts its runs in `log`, then runs
 * the system's cc with `extra` options first. */
static void write_wrapper(const char *cc, const char *log, const char *extra) {
    char script[1024];
    snprintf(script, sizeof script, "#!/bin/sh\necho run >> '%s'\nexec cc %s \"$@\"\n", log, extra);
    write_text(cc, script, 0700);
}

/* Issue 41: a kernel including a header through -I kept running the old
 * image in a new process after the header changed (the key hashed only the
 * source and options). Each run is a new process; on the CPU a wrapper
 * compiler counts the compiles, so that a hit and a miss are both seen. */
START_TEST(no_stale_kernel) {
    REQUIRE_OWN_PROCESS();
    fresh_cache();
    const bool cpu = xt_host_addressable();
    char dir[300], hdr[400], cc[400], log[400];
    snprintf(dir, sizeof dir, "%s/inc", g_cache);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(hdr, sizeof hdr, "%s/rtc_inc.h", dir);
    snprintf(cc, sizeof cc, "%s/mycc", g_cache);
    snprintf(log, sizeof log, "%s/runs", g_cache);
    if (cpu) {
        write_wrapper(cc, log, "");
        ck_assert_int_eq(setenv("XDEV_CC", cc, 1), 0);
    }
    write_text(hdr, "#define BONUS 10\n", 0600);
    let_settle();
    xdev_status_t st;
    ck_assert_int_eq(child_inc(dir, NULL, 10, NULL, NULL), 0); /* compiled, stored */
    if (cpu) {
        ck_assert_int_eq(compiles(log), 1);
        ck_assert_int_eq(child_inc(dir, NULL, 10, NULL, NULL), 0);
        ck_assert_msg(compiles(log) == 1, "not a hit: %d compiles", compiles(log));
    }
    /* Another xdev version: a miss. */
    ck_assert_int_eq(child_inc(dir, NULL, 10, "99.0.0-test", &st), 0);
    if (cpu) ck_assert_msg(compiles(log) == 2, "another xdev version hit: %d", compiles(log));
    /* The header changes, same length, its modification time put back. */
    struct stat before;
    ck_assert_int_eq(stat(hdr, &before), 0);
    write_text(hdr, "#define BONUS 20\n", 0600);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    ck_assert_int_eq(utimensat(AT_FDCWD, hdr, times, 0), 0);
    let_settle();
    ck_assert_msg(child_inc(dir, NULL, 20, NULL, NULL) == 0, "the header's change was missed");
    if (cpu) { /* and the new build is a hit in turn */
        ck_assert_int_eq(compiles(log), 3);
        ck_assert_int_eq(child_inc(dir, NULL, 20, NULL, NULL), 0);
        ck_assert_msg(compiles(log) == 3, "not a hit: %d compiles", compiles(log));
    }
    /* A changed -D. */
    ck_assert_int_eq(child_inc(dir, "-DEXTRA=5", 25, NULL, NULL), 0);
    ck_assert_int_eq(child_inc(dir, "-DEXTRA=6", 26, NULL, NULL), 0);
    if (!cpu) return; /* the GPU compilers are libraries: not replaced from here */
    /* A changed compiler: the same wrapper, now adding -DEXTRA=3. */
    write_wrapper(cc, log, "-DEXTRA=3");
    ck_assert_msg(child_inc(dir, NULL, 23, NULL, NULL) == 0, "the compiler's change was missed");
    ck_assert_int_eq(unsetenv("XDEV_CC"), 0);
}
END_TEST

/* A wrapper compiler `cc` that counts its runs in `log`, runs `before`, then
 * the system's cc, then `after` (shell lines). */
static void write_wrapper2(const char *cc, const char *log, const char *before, const char *after) {
    char script[4096];
    snprintf(script, sizeof script, "#!/bin/sh\necho run >> '%s'\n%s\ncc \"$@\" || exit $?\n%s\n",
             log, before, after);
    write_text(cc, script, 0700);
}

/* A backend that cannot list what its compiler read (NVRTC, hiprtc; forced
 * on the CPU by a test hook) keys the image on the -I trees' contents. That
 * key was taken before the compile only: a header edited between the walk
 * and the compiler's read filed image(v2) under key(v1), and once v1 was
 * back, key(v1) served image(v2). Now the trees are walked again after the
 * compile and the image is cached only under an unchanged key. */
START_TEST(tree_key_checked_after_compile) {
    REQUIRE_OWN_PROCESS();
    if (!xt_host_addressable())
        XT_SKIP("needs the CPU backend (a wrapper compiler through XDEV_CC)");
    fresh_cache();
    char dir[300], hdr[400], cc[400], log[400], flag[400], edit[1600];
    snprintf(dir, sizeof dir, "%s/inc", g_cache);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(hdr, sizeof hdr, "%s/rtc_inc.h", dir);
    snprintf(cc, sizeof cc, "%s/mycc", g_cache);
    snprintf(log, sizeof log, "%s/runs", g_cache);
    snprintf(flag, sizeof flag, "%s/once", g_cache);
    snprintf(edit, sizeof edit, "if [ -f '%s' ]; then rm '%s'; echo '#define BONUS 20' > '%s'; fi",
             flag, flag, hdr);
    ck_assert_int_eq(setenv("XDEV_CC", cc, 1), 0);
    g_child_no_deps = true;
    write_text(hdr, "#define BONUS 10\n", 0600);
    /* One wrapper throughout (its text is part of the key); its first run
     * changes the header after the walk, before the read. */
    write_wrapper2(cc, log, edit, "");
    write_text(flag, "", 0600);
    let_settle();
    ck_assert_int_eq(child_inc(dir, NULL, 20, NULL, NULL), 0);
    write_text(hdr, "#define BONUS 10\n", 0600); /* v1 back (as a git checkout would) */
    let_settle();
    ck_assert_msg(child_inc(dir, NULL, 10, NULL, NULL) == 0, "key(v1) served image(v2)");
    ck_assert_int_eq(compiles(log), 2);
    ck_assert_int_eq(child_inc(dir, NULL, 10, NULL, NULL), 0); /* settled: cached, a hit */
    ck_assert_msg(compiles(log) == 2, "not a hit: %d compiles", compiles(log));
    g_child_no_deps = false;
    ck_assert_int_eq(unsetenv("XDEV_CC"), 0);
}
END_TEST

/* The too-new rule looked only at each header's own times (stat follows
 * links): a compile that read inc/rtc_inc.h through inc -> v1, with inc
 * switched to an old v2 during it, filed v1's image under v2's key. Now a
 * symlink along a header's path changed since a second before the compile
 * keeps the image out of the cache. */
START_TEST(symlink_swapped_during_compile) {
    REQUIRE_OWN_PROCESS();
    if (!xt_host_addressable())
        XT_SKIP("needs the CPU backend (a wrapper compiler through XDEV_CC)");
    fresh_cache();
    char v1[300], v2[300], link[300], path[400], cc[400], log[400], flag[400], swap[2000];
    snprintf(v1, sizeof v1, "%s/v1", g_cache);
    snprintf(v2, sizeof v2, "%s/v2", g_cache);
    snprintf(link, sizeof link, "%s/inc", g_cache);
    ck_assert_int_eq(mkdir(v1, 0700), 0);
    ck_assert_int_eq(mkdir(v2, 0700), 0);
    snprintf(path, sizeof path, "%s/rtc_inc.h", v1);
    write_text(path, "#define BONUS 10\n", 0600);
    snprintf(path, sizeof path, "%s/rtc_inc.h", v2);
    write_text(path, "#define BONUS 20\n", 0600);
    ck_assert_int_eq(symlink(v1, link), 0);
    snprintf(cc, sizeof cc, "%s/mycc", g_cache);
    snprintf(log, sizeof log, "%s/runs", g_cache);
    snprintf(flag, sizeof flag, "%s/once", g_cache);
    snprintf(swap, sizeof swap, "if [ -f '%s' ]; then rm '%s'; ln -sfn '%s' '%s'; fi", flag, flag,
             v2, link);
    ck_assert_int_eq(setenv("XDEV_CC", cc, 1), 0);
    /* One wrapper throughout (its text is part of the key); its first run
     * points inc at v2 once the compiler has read v1. */
    write_wrapper2(cc, log, "", swap);
    write_text(flag, "", 0600);
    let_settle();
    ck_assert_int_eq(child_inc(link, NULL, 10, NULL, NULL), 0);
    let_settle(); /* the switched link is old now: the next compile is cached */
    ck_assert_msg(child_inc(link, NULL, 20, NULL, NULL) == 0, "v2's key served v1's image");
    ck_assert_int_eq(compiles(log), 2);
    ck_assert_int_eq(child_inc(link, NULL, 20, NULL, NULL), 0);
    ck_assert_msg(compiles(log) == 2, "not a hit: %d compiles", compiles(log));
    ck_assert_int_eq(unsetenv("XDEV_CC"), 0);
}
END_TEST

/* The compiler's time limit (XDEV_CC_TIMEOUT_S): a compiler that never
 * finishes is killed with its own children (its process group), and the
 * compile fails saying so, in about the limit. */
START_TEST(compiler_time_limit_kills) {
    REQUIRE_OWN_PROCESS();
    if (!xt_host_addressable()) XT_SKIP("the time limit is the CPU backend's C compiler's");
    fresh_cache();
    char cc[400], pidfile[400], script[1024];
    snprintf(cc, sizeof cc, "%s/slowcc", g_cache);
    snprintf(pidfile, sizeof pidfile, "%s/pid", g_cache);
    snprintf(script, sizeof script, "#!/bin/sh\nsleep 60 &\necho $! > '%s'\nwait\n", pidfile);
    write_text(cc, script, 0700);
    ck_assert_int_eq(setenv("XDEV_CC", cc, 1), 0);
    ck_assert_int_eq(setenv("XDEV_CC_TIMEOUT_S", "1", 1), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    xdev_module_t m = NULL;
    XT_ERR(XDEV_ERROR_COMPILE, xdev_module_compile(xt_dev(0), k_source, NULL, &m),
           "did not finish within 1 s and was killed");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(s >= 0.9 && s < 10.0, "killed after %.2f s, the limit is 1 s", s);
    FILE *f = fopen(pidfile, "r");
    ck_assert_ptr_nonnull(f);
    int pid = 0;
    ck_assert_int_eq(fscanf(f, "%d", &pid), 1);
    fclose(f);
    bool gone = false; /* the compiler's child too: gone, or a zombie nobody reaped yet */
    for (int i = 0; i < 200 && !gone; i++) {
        char path[64], state = 0;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *p = fopen(path, "r");
        gone = p == NULL || (fscanf(p, "%*d %*s %c", &state) == 1 && state == 'Z');
        if (p != NULL) fclose(p);
        if (!gone) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    ck_assert_msg(gone, "the compiler's child %d still runs", pid);
    ck_assert_int_eq(setenv("XDEV_CC_TIMEOUT_S", "0", 1), 0);
    XT_ERR(XDEV_ERROR_ENV, xdev_module_compile(xt_dev(0), k_source, NULL, &m),
           "XDEV_CC_TIMEOUT_S='0'");
    unsetenv("XDEV_CC_TIMEOUT_S");
    unsetenv("XDEV_CC");
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("kernel_rtc");
    TCase *tc = tcase_create("kernel_rtc");
    tcase_set_timeout(tc, 240);
    tcase_add_checked_fixture(tc, NULL, drop_cache);
    tcase_add_test(tc, compile_and_launch);
    tcase_add_test(tc, cache_hit_needs_no_compiler);
    tcase_add_test(tc, damaged_entry_rebuilt);
    tcase_add_test(tc, threads_and_processes_compile_at_once);
    tcase_add_test(tc, unwritable_cache_still_runs);
    tcase_add_test(tc, compile_errors);
    tcase_add_test(tc, elementwise_expressions);
    tcase_add_test(tc, no_stale_kernel);
    tcase_add_test(tc, tree_key_checked_after_compile);
    tcase_add_test(tc, symlink_swapped_during_compile);
    tcase_add_test(tc, compiler_time_limit_kills);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    return xt_run(sr, "kernel_rtc", argc, argv);
}
