/* SPDX-License-Identifier: Apache-2.0 */
/* test_kernel_cache.c - the on-disk cache of compiled kernel images
 * (core/kernel/kernel_cache.c, compiled in white-box with the environment
 * parsers, the error formatter and runtime's hooks). Each case runs in its own
 * process (Check forks) with a fresh temporary XDEV_CACHE_DIR: SHA-256 known
 * answers, keys, round trips, damaged entries and their repair, file entries,
 * threads and processes at once, the size bound, the switch, directories that
 * cannot be written, the variables, and the cost of a hit. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel_cache_test.h"

char g_root[512];       /* this case's temporary directory */
char g_cache[PATH_MAX]; /* XDEV_CACHE_DIR: g_root/cache */
char g_dir[PATH_MAX];   /* its entries: g_cache/kernels-v1 */

int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    chmod(path, 0700); /* a case may leave a folder read-only */
    return remove(path);
}

/* Loads the settings from the environment as xdev_init does; asserts success. */
void load(void) {
    ck_assert_msg(xdev_kcache_settings_load() == XDEV_SUCCESS, "settings: %s", xdev_last_error());
}

void setup(void) {
    const char *t = getenv("TMPDIR");
    PATHF(g_root, "%s/xdev-kcache-XXXXXX", t != NULL && *t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(g_root));
    PATHF(g_cache, "%s/cache", g_root);
    setenv("XDEV_CACHE_DIR", g_cache, 1);
    unsetenv("XDEV_KERNEL_CACHE");
    unsetenv("XDEV_KERNEL_CACHE_MAX_MB");
    load();
    ck_assert(xdev_kcache_dir(g_dir, sizeof g_dir));
    char want[PATH_MAX];
    PATHF(want, "%s/kernels-v%d", g_cache, XDEV_KCACHE_FORMAT);
    ck_assert_str_eq(g_dir, want);
}

void teardown(void) {
    nftw(g_root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ helpers */
void fill(unsigned char *p, size_t n, uint64_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)(x >> 32);
    }
}

void key1(const char *s, char key[XDEV_KCACHE_KEY_LEN]) {
    xdev_kcache_key(&s, NULL, 1, key);
}

void entry_path(char *out, size_t len, const char *key, const char *suffix) {
    ck_assert((size_t)snprintf(out, len, "%s/%s%s", g_dir, key, suffix) < len);
}

void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* The whole file into a malloc'd buffer; NULL if it cannot be read. */
unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

/* Files in the entries' folder: all, and temporary ones. */
int count_files(int *temps) {
    int n = 0;
    *temps = 0;
    DIR *d = opendir(g_dir);
    if (d == NULL) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        n++;
        if (strncmp(e->d_name, ".tmp.", 5) == 0) ++*temps;
    }
    closedir(d);
    return n;
}

void put_ok(const char *key, const void *data, size_t n) {
    char why[512] = "";
    ck_assert_msg(xdev_kcache_put(key, data, n, why, sizeof why) == XDEV_SUCCESS, "put: %s", why);
}

/* A hit with exactly these bytes. */
void expect_hit(const char *key, const void *data, size_t n) {
    void *got = NULL;
    size_t size = 1;
    bool damaged = true;
    bool hit = xdev_kcache_get(key, &got, &size, &damaged);
    ck_assert_msg(hit && !damaged, "%s: %s", key, damaged ? "damaged" : "a miss");
    ck_assert_uint_eq(size, n);
    ck_assert(n == 0 || memcmp(got, data, n) == 0);
    free(got);
}

/* A miss, damaged or not. */
void expect_miss(const char *key, bool want_damaged) {
    void *got = (void *)1;
    size_t size = 1;
    bool damaged = !want_damaged;
    ck_assert(!xdev_kcache_get(key, &got, &size, &damaged));
    ck_assert_ptr_null(got);
    ck_assert_uint_eq(size, 0);
    ck_assert_msg(damaged == want_damaged, "damaged %d, expected %d", damaged, want_damaged);
}

/* A file entry's lookup: a hit with exactly these bytes (its path in path, if
 * not NULL), or a miss, damaged or not. */
void file_hit(const char *key, const void *data, size_t n, char *path) {
    char p[PATH_MAX];
    bool damaged = true;
    ck_assert_msg(xdev_kcache_get_file(key, ".so", p, sizeof p, &damaged), "file %s missed", key);
    ck_assert(!damaged);
    size_t got_n = 0;
    unsigned char *got = read_file(p, &got_n);
    ck_assert(got != NULL && got_n == n && memcmp(got, data, n) == 0);
    free(got);
    if (path != NULL) memcpy(path, p, sizeof p);
}

void file_miss(const char *key, const char *ext, bool want_damaged) {
    char p[PATH_MAX] = "x";
    bool damaged = !want_damaged;
    ck_assert(!xdev_kcache_get_file(key, ext, p, sizeof p, &damaged));
    ck_assert_str_eq(p, "");
    ck_assert_msg(damaged == want_damaged, "damaged %d, expected %d", damaged, want_damaged);
}

/* Stores n bytes as a file entry (written to g_root/<name> first). */
xdev_status_t put_file(const char *key, const char *name, const void *data, size_t n, char *why) {
    char src[PATH_MAX];
    PATHF(src, "%s/%s", g_root, name);
    write_file(src, data, n);
    return xdev_kcache_put_file(key, ".so", src, why, 512);
}

/* The folder holds `files` files (-1: any number), no temporary one. */
void expect_files(int files) {
    int temps;
    int n = count_files(&temps);
    ck_assert_int_eq(temps, 0);
    if (files >= 0) ck_assert_int_eq(n, files);
}

void sha_hex(const void *data, size_t n, char out[XDEV_KCACHE_KEY_LEN]) {
    unsigned char d[32];
    xdev_sha256(data, n, d);
    xdev_sha256_hex(d, out);
}

/* ------------------------------------------------------------ SHA-256 and keys */
/* FIPS 180-2 appendix B's examples (and the empty message), one-shot and fed
 * in uneven pieces across block boundaries. */
START_TEST(sha256_known_answers) {
    char hex[XDEV_KCACHE_KEY_LEN];
    sha_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_hex(m448, strlen(m448), hex);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    sha_hex(million, sizeof million, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* The same million in pieces of 1, 2, ... 130 bytes. */
    xdev_sha256_t s;
    unsigned char d[32];
    xdev_sha256_init(&s);
    for (size_t off = 0, step = 1; off < sizeof million; off += step, step = step % 130 + 1)
        xdev_sha256_update(&s, million + off,
                           off + step <= sizeof million ? step : sizeof million - off);
    xdev_sha256_final(&s, d);
    xdev_sha256_hex(d, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* Lengths around the padding boundary (55, 56, 63, 64, 65): pieces = one shot. */
    unsigned char buf[200];
    fill(buf, sizeof buf, 7);
    for (size_t n = 50; n < 140; n++) {
        char one[XDEV_KCACHE_KEY_LEN];
        sha_hex(buf, n, one);
        xdev_sha256_init(&s);
        xdev_sha256_update(&s, buf, n / 3);
        xdev_sha256_update(&s, buf + n / 3, n - n / 3);
        xdev_sha256_final(&s, d);
        xdev_sha256_hex(d, hex);
        ck_assert_str_eq(hex, one);
    }
}
END_TEST

/* A key is 64 lowercase hex digits, the same for the same parts in every
 * process (pinned: a change of the encoding must bump XDEV_KCACHE_FORMAT). */
START_TEST(key_format_and_pin) {
    const char *parts[] = {"XDEV_KERNEL void k(float *x) {}",
                           "-O3",
                           "cuda",
                           "sm_90",
                           "nvcc 13.0.48",
                           "xdev-dialect 1"};
    char a[XDEV_KCACHE_KEY_LEN], b[XDEV_KCACHE_KEY_LEN];
    xdev_kcache_key(parts, NULL, 6, a);
    xdev_kcache_key(parts, NULL, 6, b);
    ck_assert_str_eq(a, b);
    ck_assert(xdev_kcache_key_valid(a));
    ck_assert_str_eq(a, "3b853a16805de30e2678f10bef207792373e6fa1dfbea5040746de176c7871f8");
    ck_assert(!xdev_kcache_key_valid(NULL));
    ck_assert(!xdev_kcache_key_valid(""));
    ck_assert(!xdev_kcache_key_valid("../../etc/passwd"));
    char upper[XDEV_KCACHE_KEY_LEN];
    memcpy(upper, a, sizeof upper);
    for (int i = 0; i < 64; i++)
        if (upper[i] >= 'a') upper[i] = (char)(upper[i] - 'a' + 'A');
    ck_assert(!xdev_kcache_key_valid(upper));
    char longer[80];
    PATHF(longer, "%s0", a);
    ck_assert(!xdev_kcache_key_valid(longer));
    ck_assert(!xdev_kcache_key_valid(a + 1));
}
END_TEST

/* Any part changed (a byte more, a bit flipped), boundaries moved, parts
 * reordered, added or removed: another key. Lengths given or from strlen, and
 * NULL or "", are the same; embedded NULs count. */
START_TEST(key_sensitivity) {
    enum { BASE = 6, MAXP = 8 };
    struct {
        const char *p[MAXP];
        int n;
    } cases[BASE * 2 + 12] = {{{"source", "-O3", "cuda", "sm_90", "nvcc 13.0", "dialect 1"}, BASE},
                              {{"ab", "c"}, 2},
                              {{"a", "bc"}, 2},
                              {{"abc"}, 1},
                              {{"c", "ab"}, 2},
                              {{"a", ""}, 2},
                              {{"a"}, 1},
                              {{"", "a"}, 2},
                              {{""}, 1},
                              {{"", ""}, 2},
                              {{NULL}, 0}};
    static char changed[2 * BASE][32];
    int n = 11;
    for (int i = 0; i < BASE; i++)
        for (int how = 0; how < 2; how++, n++) {
            cases[n] = cases[0];
            PATHF(changed[2 * i + how], how ? "%s " : "%s", cases[0].p[i]);
            if (!how) changed[2 * i][0] ^= 1;
            cases[n].p[i] = changed[2 * i + how];
        }
    char keys[BASE * 2 + 12][XDEV_KCACHE_KEY_LEN];
    for (int i = 0; i < n; i++)
        xdev_kcache_key(cases[i].p, NULL, cases[i].n, keys[i]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(keys[i], keys[j]) != 0, "cases %d and %d share a key", i, j);
    char k[XDEV_KCACHE_KEY_LEN];
    const size_t lens[] = {2, 1};
    xdev_kcache_key(cases[1].p, lens, 2, k); /* ("ab", "c") with lengths */
    ck_assert_str_eq(k, keys[1]);
    const char *null_part[] = {NULL};
    xdev_kcache_key(null_part, NULL, 1, k);
    ck_assert_str_eq(k, keys[8]); /* ("") */
    const char *nul[] = {"a\0b"};
    const size_t l3 = 3, l1 = 1;
    xdev_kcache_key(nul, &l1, 1, k);
    ck_assert_str_eq(k, keys[6]); /* ("a") */
    xdev_kcache_key(nul, &l3, 1, k);
    for (int i = 0; i < n; i++)
        ck_assert_str_ne(k, keys[i]);
}
END_TEST

/* ------------------------------------------------------------ entries */
START_TEST(round_trip) {
    static unsigned char data[100 * 1024];
    fill(data, sizeof data, 1);
    char key[XDEV_KCACHE_KEY_LEN], other[XDEV_KCACHE_KEY_LEN], empty[XDEV_KCACHE_KEY_LEN];
    key1("round trip", key);
    key1("other", other);
    key1("empty", empty);
    put_ok(key, data, sizeof data);
    put_ok(other, data, 1000);
    put_ok(empty, NULL, 0);
    expect_hit(key, data, sizeof data);
    expect_hit(other, data, 1000);
    expect_hit(empty, NULL, 0);
    /* A store replaces. */
    put_ok(other, data + 5, 777);
    expect_hit(other, data + 5, 777);
    /* The folder is private. */
    struct stat st;
    ck_assert_int_eq(stat(g_dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    expect_files(3);
}
END_TEST

START_TEST(miss) {
    char key[XDEV_KCACHE_KEY_LEN];
    key1("never stored", key);
    expect_miss(key, false); /* before the folder exists */
    put_ok(key, "x", 1);
    key1("still never stored", key);
    expect_miss(key, false);
    void *got = (void *)1;
    size_t size = 1;
    bool damaged = true;
    ck_assert(!xdev_kcache_get("not a key", &got, &size, &damaged));
    ck_assert(!damaged);
    file_miss(key, ".so", false);
    char why[512] = "";
    ck_assert_int_eq(xdev_kcache_put("../x", "x", 1, why, sizeof why), XDEV_ERROR_INVALID_VALUE);
    ck_assert_ptr_nonnull(strstr(why, "64 lowercase hex"));
}
END_TEST

/* Each way an entry can be damaged: a miss that says so, never its bytes;
 * the next store repairs it. */
START_TEST(damaged_entries) {
    static unsigned char data[5000];
    fill(data, sizeof data, 2);
    char key[XDEV_KCACHE_KEY_LEN], other[XDEV_KCACHE_KEY_LEN], path[PATH_MAX], opath[PATH_MAX];
    key1("damaged", key);
    key1("elsewhere", other);
    entry_path(path, sizeof path, key, ".bin");
    entry_path(opath, sizeof opath, other, ".bin");
    /* Each: a byte of the entry flipped (at, by) and its length (-1: kept). */
    static const struct {
        int at, by, len;
    } ways[] = {
        {128 + 1234, 0x10, -1}, /* a payload bit */
        {0, 0, 128 + 2500},     /* truncated */
        {16, 1, 128 + 4999},    /* the header's length, and the file's to match */
        {17, 1, -1},            /* the header's length, not the file's */
        {24 + 5, 0x80, -1},     /* the header's hash */
        {0, 'X' ^ 'Y', -1},     /* the magic */
        {8, 2, -1},             /* the format version */
        {60, 1, -1},            /* the key */
        {0, 0, 60},             /* shorter than a header */
        {0, 0, 0},              /* empty */
        {-1, 0, -1},            /* garbage */
    };
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        put_ok(key, data, sizeof data);
        expect_hit(key, data, sizeof data);
        size_t n;
        unsigned char *b = read_file(path, &n);
        ck_assert(b != NULL && n == 128 + sizeof data);
        if (ways[w].at >= 0)
            b[ways[w].at] ^= (unsigned char)ways[w].by;
        else
            fill(b, n, 99);
        write_file(path, b, ways[w].len >= 0 ? (size_t)ways[w].len : n);
        free(b);
        expect_miss(key, true);
        expect_miss(key, true); /* still, until stored again */
    }
    put_ok(key, data, sizeof data);
    expect_hit(key, data, sizeof data);
    /* Another key's good entry under this key's name: the key in the header
     * does not match. */
    put_ok(other, data, 100);
    ck_assert_int_eq(rename(opath, path), 0);
    expect_miss(key, true);
    put_ok(key, data, sizeof data);
    expect_hit(key, data, sizeof data);
    /* A symbolic link or a folder under the entry's name. */
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(symlink("/etc/passwd", path), 0);
    expect_miss(key, true);
    put_ok(key, data, sizeof data); /* rename replaces the link itself */
    expect_hit(key, data, sizeof data);
}
END_TEST

/* File entries: the path of a verified copy, named by its hash; a tampered
 * file or .sum is a damaged miss, a missing file a plain one; a store repairs. */
START_TEST(file_entries) {
    static unsigned char so[70000];
    fill(so, sizeof so, 3);
    char key[XDEV_KCACHE_KEY_LEN], path[PATH_MAX], sum[PATH_MAX], why[512] = "";
    key1("file entry", key);
    file_miss(key, ".so", false);
    ck_assert_int_eq(put_file(key, "built.so", so, sizeof so, why), XDEV_SUCCESS);
    file_hit(key, so, sizeof so, path);
    char hex[XDEV_KCACHE_KEY_LEN], want[PATH_MAX];
    sha_hex(so, sizeof so, hex);
    PATHF(want, "%s/%s-%s.so", g_dir, key, hex);
    ck_assert_str_eq(path, want);
    /* Not a bytes entry, not under another extension, not into a small buffer. */
    expect_miss(key, false);
    file_miss(key, ".dll", false);
    file_miss(key, "so", false);
    char tiny[16];
    bool damaged;
    ck_assert(!xdev_kcache_get_file(key, ".so", tiny, sizeof tiny, &damaged));
    /* The file tampered with: one byte, then truncated. */
    so[4000] ^= 1;
    write_file(want, so, sizeof so);
    file_miss(key, ".so", true);
    write_file(want, so, sizeof so - 10);
    file_miss(key, ".so", true);
    so[4000] ^= 1;
    ck_assert_int_eq(put_file(key, "built.so", so, sizeof so, why), XDEV_SUCCESS);
    file_hit(key, so, sizeof so, NULL);
    /* The .sum: its length, key, size damaged; its hash changed names a file
     * that is not there (a plain miss). */
    entry_path(sum, sizeof sum, key, ".sum");
    size_t n;
    unsigned char *b = read_file(sum, &n);
    ck_assert_uint_eq(n, 128);
    static const int at[] = {17, 60, 0};
    for (int i = 0; i < 3; i++) {
        b[at[i]] ^= 1;
        write_file(sum, b, n);
        file_miss(key, ".so", true);
        b[at[i]] ^= 1;
    }
    write_file(sum, b, n - 1);
    file_miss(key, ".so", true);
    b[30] ^= 4;
    write_file(sum, b, n);
    file_miss(key, ".so", false);
    b[30] ^= 4;
    write_file(sum, b, n);
    file_hit(key, so, sizeof so, NULL);
    free(b);
    /* The file removed (another process's trim): a plain miss. */
    ck_assert_int_eq(unlink(want), 0);
    file_miss(key, ".so", false);
    /* Another build of the same key: a new name, the .sum moves to it. */
    so[0] ^= 0xff;
    ck_assert_int_eq(put_file(key, "built.so", so, sizeof so, why), XDEV_SUCCESS);
    file_hit(key, so, sizeof so, path);
    ck_assert_str_ne(path, want);
    /* Bad arguments and an unreadable source. */
    PATHF(path, "%s/built.so", g_root);
    ck_assert_int_eq(xdev_kcache_put_file(key, "so", path, why, sizeof why),
                     XDEV_ERROR_INVALID_VALUE);
    ck_assert_int_eq(xdev_kcache_put_file(key, "./../x", path, why, sizeof why),
                     XDEV_ERROR_INVALID_VALUE);
    ck_assert_int_eq(xdev_kcache_put_file(key, ".so", "/nonexistent/x.so", why, sizeof why),
                     XDEV_ERROR_IO);
    ck_assert_ptr_nonnull(strstr(why, "/nonexistent/x.so"));
    ck_assert_int_eq(xdev_kcache_put_file(key, ".so", g_root, why, sizeof why), XDEV_ERROR_IO);
    expect_files(-1);
}
END_TEST

/* compile_deps.c's file hashing, white-box (its three sources compiled into
 * this file: the test target links neither). A header swapped for a FIFO
 * after the lookup's stat hung the lookup (a blocking open and read); a
 * header of any size was hashed in full. Both are now refused (a miss). */
#include "base/strbuf.c"
#include "base/utf8.c"
#include "kernel/compile_deps.c"

START_TEST(deps_hash_refuses_fifo_and_huge) {
    char path[PATH_MAX + 32], hex[XDEV_KCACHE_KEY_LEN];
    PATHF(path, "%s/fifo.h", g_root);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_msg(!hash_file(path, hex, NULL), "a FIFO was hashed");
    PATHF(path, "%s/big.h", g_root);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "#define X 1\n", 12), 12);
    uint64_t got = 0;
    ck_assert(hash_file(path, hex, &got)); /* a small one still hashes */
    ck_assert_int_eq(got, 12);
    ck_assert_int_eq(ftruncate(fd, FILE_MAX_BYTES + 1), 0); /* sparse: no disk used */
    close(fd);
    ck_assert_msg(!hash_file(path, hex, NULL), "a file over 64 MiB was hashed");
}
END_TEST

int main(void) {
    Suite *s = suite_create("kernel_cache");
    TCase *tc = tcase_create("kernel_cache");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, sha256_known_answers);
    tcase_add_test(tc, key_format_and_pin);
    tcase_add_test(tc, key_sensitivity);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, miss);
    tcase_add_test(tc, damaged_entries);
    tcase_add_test(tc, file_entries);
    tcase_add_test(tc, deps_hash_refuses_fifo_and_huge);
    kcache_add_fs_tests(tc);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
