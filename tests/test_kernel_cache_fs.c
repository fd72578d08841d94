/* SPDX-License-Identifier: Apache-2.0 */
/* test_kernel_cache_fs.c - the kernel cache's unit test, second half:
 * threads and processes at once, the size bound, the on/off switch,
 * directories that cannot be used, the variables, the cost of a hit (the
 * first half, test_kernel_cache.c, holds hashing, keys, entries and main). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel_cache_test.h"

/* ------------------------------------------------------------ threads and processes */
#define CONC_KEYS 6
#define CONC_ITERS 150

typedef struct {
    int id;
    atomic_int *failures;
    atomic_int *hits; /* of shared keys, so that lookups did race with stores */
} worker_t;

static size_t conc_size(int k) {
    return 1000 + (size_t)k * 9001;
}

static void conc_report(atomic_int *failures, const char *fmt, int a, int b) {
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    atomic_fetch_add(failures, 1);
}

/* Stores and looks up shared keys (the same bytes for the same key in every
 * worker), file entries, and a key of its own that must hit once stored.
 * Every lookup is a miss or the exact bytes, never damaged. */
static void *conc_worker(void *arg) {
    worker_t *w = arg;
    unsigned char *want = malloc(conc_size(CONC_KEYS));
    char key[XDEV_KCACHE_KEY_LEN], own[XDEV_KCACHE_KEY_LEN], path[PATH_MAX], src[PATH_MAX];
    char name[64], why[512];
    PATHF(name, "own %d %d", w->id, (int)getpid());
    key1(name, own);
    for (int i = 0; i < CONC_ITERS; i++) {
        int k = (i / 4 * 5 + w->id) % CONC_KEYS; /* every key sees every operation */
        PATHF(name, "shared %d", k);
        key1(name, key);
        size_t n = conc_size(k);
        fill(want, n, (uint64_t)k);
        void *got;
        size_t size;
        bool damaged;
        switch ((i + w->id) % 4) {
        case 0:
            if (xdev_kcache_put(key, want, n, why, sizeof why) != XDEV_SUCCESS)
                conc_report(w->failures, "worker %d: put failed (key %d)", w->id, k);
            break;
        case 1:
            if (xdev_kcache_get(key, &got, &size, &damaged)) {
                atomic_fetch_add(w->hits, 1);
                if (size != n || memcmp(got, want, n) != 0)
                    conc_report(w->failures, "worker %d: wrong bytes for key %d", w->id, k);
                free(got);
            }
            if (damaged) conc_report(w->failures, "worker %d: key %d damaged", w->id, k);
            break;
        case 2:
            PATHF(src, "%s/src%d.so", g_root, k);
            if (xdev_kcache_put_file(key, ".so", src, why, sizeof why) != XDEV_SUCCESS)
                conc_report(w->failures, "worker %d: put_file failed (key %d)", w->id, k);
            break;
        case 3:
            if (xdev_kcache_get_file(key, ".so", path, sizeof path, &damaged)) {
                atomic_fetch_add(w->hits, 1);
                size_t fn = 0;
                unsigned char *fb = read_file(path, &fn);
                /* The file may be gone only if something trimmed: nothing does here. */
                if (fb == NULL || fn != n || memcmp(fb, want, n) != 0)
                    conc_report(w->failures, "worker %d: wrong file for key %d", w->id, k);
                free(fb);
            }
            if (damaged) conc_report(w->failures, "worker %d: file key %d damaged", w->id, k);
            break;
        }
        /* A key nobody else stores: stored, then it must hit. */
        fill(want, 3000, (uint64_t)(w->id * 1000 + i));
        if (xdev_kcache_put(own, want, 3000, why, sizeof why) != XDEV_SUCCESS ||
            !xdev_kcache_get(own, &got, &size, &damaged))
            conc_report(w->failures, "worker %d: own key missed at %d", w->id, i);
        else {
            if (size != 3000 || memcmp(got, want, 3000) != 0)
                conc_report(w->failures, "worker %d: own key wrong at %d", w->id, i);
            free(got);
        }
    }
    free(want);
    return NULL;
}

START_TEST(threads_and_processes) {
    unsigned char *b = malloc(conc_size(CONC_KEYS));
    for (int k = 0; k < CONC_KEYS; k++) {
        char src[PATH_MAX];
        PATHF(src, "%s/src%d.so", g_root, k);
        fill(b, conc_size(k), (uint64_t)k);
        write_file(src, b, conc_size(k));
    }
    free(b);
    /* Processes first (forked while this one has a single thread). */
    pid_t kids[4];
    for (int p = 0; p < 4; p++) {
        kids[p] = fork();
        ck_assert_int_ge(kids[p], 0);
        if (kids[p] == 0) {
            atomic_int failures = 0, hits = 0;
            worker_t w = {100 + p, &failures, &hits};
            conc_worker(&w);
            _exit(atomic_load(&failures) == 0 ? 0 : 1);
        }
    }
    atomic_int failures = 0, hits = 0;
    pthread_t th[8];
    worker_t ws[8];
    for (int t = 0; t < 8; t++) {
        ws[t] = (worker_t){t, &failures, &hits};
        ck_assert_int_eq(pthread_create(&th[t], NULL, conc_worker, &ws[t]), 0);
    }
    for (int t = 0; t < 8; t++)
        pthread_join(th[t], NULL);
    for (int p = 0; p < 4; p++) {
        int status = 0;
        ck_assert_int_eq(waitpid(kids[p], &status, 0), kids[p]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed", p);
    }
    ck_assert_int_eq(atomic_load(&failures), 0);
    ck_assert_int_gt(atomic_load(&hits), 100);
    expect_files(-1);
    /* Every shared key ends as its bytes. */
    unsigned char *want = malloc(conc_size(CONC_KEYS));
    for (int k = 0; k < CONC_KEYS; k++) {
        char name[32], key[XDEV_KCACHE_KEY_LEN];
        PATHF(name, "shared %d", k);
        key1(name, key);
        fill(want, conc_size(k), (uint64_t)k);
        expect_hit(key, want, conc_size(k));
        file_hit(key, want, conc_size(k), NULL);
    }
    free(want);
}
END_TEST

/* ------------------------------------------------------------ the bound */
static void set_age(const char *key, const char *suffix, int seconds_ago) {
    char path[PATH_MAX];
    entry_path(path, sizeof path, key, suffix);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct timespec t[2] = {{now.tv_sec - seconds_ago, 0}, {now.tv_sec - seconds_ago, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* 1 MiB bound, 300000-byte entries: the fourth store removes the least
 * recently used one (B: A was older but hit since), down to 90%. */
START_TEST(bound_trims_oldest_first) {
    setenv("XDEV_KERNEL_CACHE_MAX_MB", "1", 1);
    load();
    ck_assert_uint_eq(xdev_kcache_max_bytes(), 1u << 20);
    static unsigned char data[4][300000];
    char keys[4][XDEV_KCACHE_KEY_LEN];
    for (int i = 0; i < 4; i++) {
        char name[8] = {'e', (char)('A' + i), 0};
        key1(name, keys[i]);
        fill(data[i], sizeof data[i], (uint64_t)i + 10);
    }
    for (int i = 0; i < 3; i++)
        put_ok(keys[i], data[i], sizeof data[i]);
    set_age(keys[0], ".bin", 300);
    set_age(keys[1], ".bin", 200);
    set_age(keys[2], ".bin", 100);
    expect_hit(keys[0], data[0], sizeof data[0]); /* A: most recently used now */
    put_ok(keys[3], data[3], sizeof data[3]);
    expect_miss(keys[1], false);
    expect_hit(keys[0], data[0], sizeof data[0]);
    expect_hit(keys[2], data[2], sizeof data[2]);
    expect_hit(keys[3], data[3], sizeof data[3]);
    expect_files(3);
    /* Larger than the bound: refused softly, nothing stored. */
    static unsigned char big[(1 << 20) + 1];
    char why[512] = "", key[XDEV_KCACHE_KEY_LEN];
    key1("big", key);
    ck_assert_int_eq(xdev_kcache_put(key, big, sizeof big, why, sizeof why), XDEV_ERROR_IO);
    ck_assert_ptr_nonnull(strstr(why, "XDEV_KERNEL_CACHE_MAX_MB"));
    expect_miss(key, false);
    expect_files(3);
}
END_TEST

/* trim(0) empties the folder (file entries too), removes temporary files
 * older than an hour, keeps fresh ones and files that are not entries. */
START_TEST(trim_explicit) {
    char key[XDEV_KCACHE_KEY_LEN], why[512] = "";
    key1("t", key);
    put_ok(key, "abc", 3);
    ck_assert_int_eq(put_file(key, "t.so", "ELF!", 4, why), XDEV_SUCCESS);
    char stale[PATH_MAX], fresh[PATH_MAX], other[PATH_MAX];
    PATHF(stale, "%s/.tmp.1.1.1", g_dir);
    PATHF(fresh, "%s/.tmp.1.1.2", g_dir);
    PATHF(other, "%s/README", g_dir);
    write_file(stale, "s", 1);
    write_file(fresh, "f", 1);
    write_file(other, "o", 1);
    set_age("", ".tmp.1.1.1", 2 * 3600);
    int temps;
    ck_assert_int_eq(count_files(&temps), 6);
    ck_assert_int_eq(xdev_kcache_trim(UINT64_MAX, why, sizeof why), XDEV_SUCCESS);
    ck_assert_int_eq(count_files(&temps), 5); /* the stale temporary file went */
    ck_assert_int_eq(temps, 1);
    ck_assert_int_eq(xdev_kcache_trim(0, why, sizeof why), XDEV_SUCCESS);
    ck_assert_int_eq(count_files(&temps), 2); /* README and the fresh temporary file */
    expect_miss(key, false);
    file_miss(key, ".so", false);
    /* No folder yet: nothing to trim. */
    setenv("XDEV_CACHE_DIR", "/nonexistent-xdev-cache", 1);
    load();
    ck_assert_int_eq(xdev_kcache_trim(0, why, sizeof why), XDEV_SUCCESS);
}
END_TEST

/* ------------------------------------------------------------ the switch, directories */
START_TEST(cache_off) {
    char key[XDEV_KCACHE_KEY_LEN], path[PATH_MAX], why[512] = "";
    key1("off", key);
    put_ok(key, "on", 2); /* stored while on */
    setenv("XDEV_KERNEL_CACHE", "0", 1);
    load();
    ck_assert(!xdev_kcache_enabled());
    expect_miss(key, false);
    char k2[XDEV_KCACHE_KEY_LEN];
    key1("off 2", k2);
    ck_assert_int_eq(xdev_kcache_put(k2, "x", 1, why, sizeof why), XDEV_SUCCESS);
    ck_assert_int_eq(put_file(k2, "off.so", "so", 2, why), XDEV_SUCCESS);
    file_miss(k2, ".so", false);
    expect_files(1); /* nothing was added */
    setenv("XDEV_KERNEL_CACHE", "on", 1);
    load();
    expect_hit(key, "on", 2);
    expect_miss(k2, false);
    /* Off from the start: no folder is created. */
    setenv("XDEV_KERNEL_CACHE", "false", 1);
    PATHF(path, "%s/never", g_root);
    setenv("XDEV_CACHE_DIR", path, 1);
    load();
    ck_assert_int_eq(xdev_kcache_put(key, "x", 1, why, sizeof why), XDEV_SUCCESS);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), -1);
}
END_TEST

/* A store that cannot be done fails softly with a message naming the folder
 * and the reason; lookups miss; nothing is left behind. */
static void expect_soft_failure(const char *reason) {
    char key[XDEV_KCACHE_KEY_LEN], why[512] = "";
    key1("soft", key);
    ck_assert_int_eq(xdev_kcache_put(key, "data", 4, why, sizeof why), XDEV_ERROR_IO);
    ck_assert_msg(strstr(why, g_dir) != NULL && strstr(why, reason) != NULL, "why: %s", why);
    why[0] = '\0';
    ck_assert_int_eq(put_file(key, "soft.so", "so", 2, why), XDEV_ERROR_IO);
    ck_assert_msg(strstr(why, g_dir) != NULL && strstr(why, reason) != NULL, "why: %s", why);
    expect_miss(key, false);
    file_miss(key, ".so", false);
    ck_assert(xdev_kcache_put(key, "data", 4, NULL, 0) == XDEV_ERROR_IO); /* no buffer: fine */
}

/* A skip, said with its reason (this unit test has no xt.h): Check counts
 * the case passed, so the line is what records it. */
static void skip(const char *test, const char *why) {
    fprintf(stderr, "SKIP %s: %s\n", test, why);
}

static int chown_nobody(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return lchown(path, 65534, 65534) == 0 ? 0 : -1;
}

/* The read-only case's checks, as the user who owns the folder. */
static void read_only_checks(const char *key) {
    ck_assert_int_eq(chmod(g_dir, 0555), 0);
    expect_soft_failure("Permission denied");
    expect_hit(key, "kept", 4); /* what is there is still found */
    expect_files(1);
}

START_TEST(read_only_directory) {
    char key[XDEV_KCACHE_KEY_LEN];
    key1("kept", key);
    put_ok(key, "kept", 4);
    if (geteuid() != 0) {
        read_only_checks(key);
        return;
    }
    /* root writes through 0555 (CI runs as root): the case runs in a child
     * that has become nobody (uid 65534), owning the folder. */
    ck_assert_int_eq(nftw(g_root, chown_nobody, 16, FTW_PHYS), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(77);
        read_only_checks(key);
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(chown(g_root, 0, 0), 0); /* teardown removes it as root anyway */
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        skip(__func__, "running as root, and cannot become uid 65534 (setuid refused): chmod "
                       "0555 does not stop root");
        return;
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child as nobody: %#x",
                  (unsigned)status);
}
END_TEST

/* A cache folder below a regular file cannot be created, even by root. */
START_TEST(path_under_a_file) {
    char file[PATH_MAX];
    PATHF(file, "%s/a-file", g_root);
    write_file(file, "x", 1);
    setenv("XDEV_CACHE_DIR", file, 1);
    load();
    ck_assert(xdev_kcache_dir(g_dir, sizeof g_dir));
    expect_soft_failure("Not a directory");
    char why[512];
    ck_assert_int_eq(xdev_kcache_trim(0, why, sizeof why), XDEV_ERROR_IO);
    PATHF(g_cache, "%s/sub/dir", file);
    setenv("XDEV_CACHE_DIR", g_cache, 1);
    load();
    ck_assert(xdev_kcache_dir(g_dir, sizeof g_dir));
    expect_soft_failure("Not a directory");
    /* The first failure is the one to report. */
    ck_assert(xdev_kcache_first_problem());
    ck_assert(!xdev_kcache_first_problem());
}
END_TEST

/* A full disk, simulated with a file-size limit: the write fails midway,
 * the temporary file is removed, the store fails softly. */
START_TEST(disk_full) {
    static unsigned char data[200000];
    fill(data, sizeof data, 5);
    char key[XDEV_KCACHE_KEY_LEN], src[PATH_MAX], why[512] = "";
    key1("full", key);
    PATHF(src, "%s/big.so", g_root);
    write_file(src, data, sizeof data);
    put_ok(key, "x", 1); /* the folder exists */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 65536;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ck_assert_int_eq(xdev_kcache_put(key, data, sizeof data, why, sizeof why), XDEV_ERROR_IO);
    ck_assert_msg(strstr(why, "File too large") != NULL, "why: %s", why);
    ck_assert_int_eq(xdev_kcache_put_file(key, ".so", src, why, sizeof why), XDEV_ERROR_IO);
    ck_assert_msg(strstr(why, "File too large") != NULL, "why: %s", why);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    expect_files(1);
    expect_hit(key, "x", 1); /* the old entry is intact */
    put_ok(key, data, sizeof data);
    expect_hit(key, data, sizeof data);
}
END_TEST

/* A folder that others may write to, or another user owns, is not used. */
START_TEST(not_trusted_directory) {
    char key[XDEV_KCACHE_KEY_LEN], why[512] = "";
    key1("trust", key);
    put_ok(key, "t", 1);
    ck_assert_int_eq(chmod(g_dir, 0777), 0);
    expect_miss(key, false);
    ck_assert_int_eq(xdev_kcache_put(key, "t", 1, why, sizeof why), XDEV_ERROR_IO);
    ck_assert_msg(strstr(why, "others may write") != NULL, "why: %s", why);
    ck_assert_int_eq(chmod(g_dir, 0770), 0); /* group-writable is fine */
    expect_hit(key, "t", 1);
    /* Another owner: root gives the folder away; anyone else points it (a
     * symbolic link, which open follows) at "/", which root owns. */
    if (geteuid() == 0) {
        ck_assert_int_eq(chown(g_dir, 12345, 12345), 0);
    } else {
        struct stat rs;
        ck_assert_int_eq(stat("/", &rs), 0);
        if (rs.st_uid == geteuid() || (rs.st_mode & S_IWOTH) != 0) {
            skip(__func__, "another owner: '/' is this user's (or writable by others), and only "
                           "root can give a folder away");
            return;
        }
        char moved[PATH_MAX];
        PATHF(moved, "%s.mine", g_dir);
        ck_assert_int_eq(rename(g_dir, moved), 0);
        ck_assert_int_eq(symlink("/", g_dir), 0);
    }
    expect_miss(key, false);
    ck_assert_int_eq(xdev_kcache_put(key, "t", 1, why, sizeof why), XDEV_ERROR_IO);
    ck_assert_msg(strstr(why, "another user owns it") != NULL, "why: %s", why);
}
END_TEST

/* ------------------------------------------------------------ variables */
static void expect_env_error(const char *var, const char *value) {
    setenv(var, value, 1);
    ck_assert_int_eq(xdev_kcache_settings_load(), XDEV_ERROR_ENV);
    char want[128];
    PATHF(want, "%s='%s'", var, value);
    ck_assert_msg(strstr(xdev_last_error(), want) != NULL, "message: %s", xdev_last_error());
    unsetenv(var);
}

START_TEST(variables) {
    expect_env_error("XDEV_KERNEL_CACHE", "maybe");
    expect_env_error("XDEV_KERNEL_CACHE", "2");
    expect_env_error("XDEV_KERNEL_CACHE_MAX_MB", "abc");
    expect_env_error("XDEV_KERNEL_CACHE_MAX_MB", "0");
    expect_env_error("XDEV_KERNEL_CACHE_MAX_MB", "-5");
    expect_env_error("XDEV_KERNEL_CACHE_MAX_MB", "12M");
    expect_env_error("XDEV_KERNEL_CACHE_MAX_MB", "99999999999");
    load();
    ck_assert(xdev_kcache_enabled());
    ck_assert_uint_eq(xdev_kcache_max_bytes(), (uint64_t)XDEV_KCACHE_DEFAULT_MAX_MB << 20);
    setenv("XDEV_KERNEL_CACHE_MAX_MB", "5", 1);
    setenv("XDEV_KERNEL_CACHE", "", 1); /* empty: the default */
    load();
    ck_assert(xdev_kcache_enabled());
    ck_assert_uint_eq(xdev_kcache_max_bytes(), 5u << 20);
    setenv("XDEV_KERNEL_CACHE", "OFF", 1);
    load();
    ck_assert(!xdev_kcache_enabled());
}
END_TEST

static void expect_dir(const char *want) {
    char got[PATH_MAX];
    load();
    ck_assert_msg(xdev_kcache_dir(got, sizeof got), "no dir: %s", got);
    ck_assert_str_eq(got, want);
}

START_TEST(directory_choice) {
    setenv("XDEV_CACHE_DIR", "/x/y//", 1);
    expect_dir("/x/y/kernels-v1");
    ck_assert_int_eq(chdir(g_root), 0);
    setenv("XDEV_CACHE_DIR", "rel/c", 1);
    char want[PATH_MAX], cwd[1024];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    PATHF(want, "%s/rel/c/kernels-v1", cwd);
    expect_dir(want);
    setenv("XDEV_CACHE_DIR", "", 1); /* empty: unset */
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    expect_dir("/xdg/xdev/kernels-v1");
    setenv("XDG_CACHE_HOME", "relative", 1); /* ignored (XDG base directories) */
    expect_dir("/home/u/.cache/xdev/kernels-v1");
    unsetenv("XDG_CACHE_HOME");
    expect_dir("/home/u/.cache/xdev/kernels-v1");
    unsetenv("HOME");
    unsetenv("XDEV_CACHE_DIR");
    load();
    char why[512];
    ck_assert(!xdev_kcache_dir(why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "XDEV_CACHE_DIR"));
    char key[XDEV_KCACHE_KEY_LEN];
    key1("nowhere", key);
    ck_assert_int_eq(xdev_kcache_put(key, "x", 1, why, sizeof why), XDEV_ERROR_IO);
    ck_assert_ptr_nonnull(strstr(why, "no directory"));
    expect_miss(key, false);
    /* Too long. */
    char longer[PATH_MAX + 10];
    memset(longer, 'd', sizeof longer - 1);
    longer[0] = '/';
    longer[sizeof longer - 1] = '\0';
    setenv("XDEV_CACHE_DIR", longer, 1);
    load();
    ck_assert(!xdev_kcache_dir(why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "too long"));
}
END_TEST

/* ------------------------------------------------------------ cost */
static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A hit on a 100 KiB entry (open, read, SHA-256, touch): printed; bounded
 * loosely here (sanitizer and -O0 builds run it too). */
START_TEST(hit_cost) {
    static unsigned char data[100 * 1024];
    fill(data, sizeof data, 6);
    char key[XDEV_KCACHE_KEY_LEN], src[PATH_MAX], path[PATH_MAX], why[512];
    key1("cost", key);
    put_ok(key, data, sizeof data);
    PATHF(src, "%s/cost.so", g_root);
    write_file(src, data, sizeof data);
    ck_assert_int_eq(xdev_kcache_put_file(key, ".so", src, why, sizeof why), XDEV_SUCCESS);
    enum { N = 301 };
    static double get_t[N], file_t[N], put_t[N], sha_t[N];
    for (int i = 0; i < N; i++) {
        void *got;
        size_t size;
        bool damaged;
        double t0 = now_us();
        ck_assert(xdev_kcache_get(key, &got, &size, &damaged));
        double t1 = now_us();
        ck_assert(xdev_kcache_get_file(key, ".so", path, sizeof path, &damaged));
        double t2 = now_us();
        unsigned char d[32];
        xdev_sha256(got, size, d);
        double t3 = now_us();
        free(got);
        get_t[i] = t1 - t0;
        file_t[i] = t2 - t1;
        sha_t[i] = t3 - t2;
    }
    for (int i = 0; i < 51; i++) {
        double t0 = now_us();
        put_ok(key, data, sizeof data);
        put_t[i] = now_us() - t0;
    }
    qsort(get_t, N, sizeof(double), cmp_double);
    qsort(file_t, N, sizeof(double), cmp_double);
    qsort(sha_t, N, sizeof(double), cmp_double);
    qsort(put_t, 51, sizeof(double), cmp_double);
    fprintf(stderr,
            "hit_cost (100 KiB): get median %.1f us (min %.1f, p90 %.1f); get_file median %.1f "
            "us; SHA-256 alone %.1f us (%.0f MB/s); put median %.1f us\n",
            get_t[N / 2], get_t[0], get_t[N * 9 / 10], file_t[N / 2], sha_t[N / 2],
            (double)sizeof data / sha_t[N / 2], put_t[25]);
    ck_assert_msg(get_t[N / 2] < 50000.0, "a 100 KiB hit took %.0f us", get_t[N / 2]);
}
END_TEST

void kcache_add_fs_tests(TCase *tc) {
    tcase_add_test(tc, threads_and_processes);
    tcase_add_test(tc, bound_trims_oldest_first);
    tcase_add_test(tc, trim_explicit);
    tcase_add_test(tc, cache_off);
    tcase_add_test(tc, read_only_directory);
    tcase_add_test(tc, path_under_a_file);
    tcase_add_test(tc, disk_full);
    tcase_add_test(tc, not_trusted_directory);
    tcase_add_test(tc, variables);
    tcase_add_test(tc, directory_choice);
    tcase_add_test(tc, hit_cost);
}
