/* SPDX-License-Identifier: Apache-2.0 */
/* kernel_cache.c - the on-disk cache of compiled kernel images
 * (kernel_cache.h says what an entry is and why it is safe to share).
 *
 * Keys and integrity use SHA-256 (base/sha256.h, written from FIPS 180-4:
 * they need a hash without practical collisions; xdev depends on no crypto
 * library). Every
 * entry operation opens the folder once and works relative to it (openat,
 * renameat, unlinkat), after checking that this user owns it. */
#include "kernel/kernel_cache.h"
#include "base/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "runtime/hooks.h"

/* ================================================================ settings */

/* Room kept after the folder's path for an entry's name ("<key>-<hash><ext>")
 * or a temporary one. */
#define NAME_ROOM 160
#define HEADER_SIZE 128
#define STALE_TEMP_SECONDS 3600
#define TEMP_PREFIX ".tmp."

enum { KIND_BYTES = 1, KIND_FILE = 2 };

static const unsigned char MAGIC[8] = {'X', 'D', 'E', 'V', 'K', 'C', 'H', '\n'};

/* Written by the initialisation step, read afterwards. */
static bool g_enabled = true;
static uint64_t g_max_bytes = (uint64_t)XDEV_KCACHE_DEFAULT_MAX_MB << 20;
static char g_dir[PATH_MAX - NAME_ROOM];
static char g_dir_problem[256] =
    "the kernel cache's settings were not read (xdev_init has not run)";
static atomic_bool g_problem_reported;
static atomic_uint g_temp_counter;

/* `base` (a directory xdev may create) with its trailing slashes dropped,
 * then "/kernels-v<format>", into g_dir. */
static void set_dir(const char *base, const char *sub) {
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/')
        n--;
    int w =
        snprintf(g_dir, sizeof g_dir, "%.*s%s/kernels-v%d", (int)n, base, sub, XDEV_KCACHE_FORMAT);
    if (w < 0 || (size_t)w >= sizeof g_dir) {
        snprintf(g_dir_problem, sizeof g_dir_problem,
                 "the kernel cache's directory '%.64s...' is too long (at most %zu characters)",
                 base, sizeof g_dir - 1);
        g_dir[0] = '\0';
    }
}

/* XDEV_CACHE_DIR, else an absolute $XDG_CACHE_HOME/xdev (the XDG base
 * directory rule: a relative one is ignored), else $HOME/.cache/xdev. */
static void resolve_dir(void) {
    const char *v = xdev_env_get("XDEV_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    g_dir[0] = '\0';
    if (v != NULL && v[0] != '\0') {
        char cwd[PATH_MAX], joined[PATH_MAX];
        if (v[0] == '/')
            set_dir(v, "");
        else if (getcwd(cwd, sizeof cwd) != NULL &&
                 (size_t)snprintf(joined, sizeof joined, "%s/%s", cwd, v) < sizeof joined)
            set_dir(joined, "");
        else
            snprintf(g_dir_problem, sizeof g_dir_problem,
                     "XDEV_CACHE_DIR='%.128s' is relative and the working directory is unknown "
                     "or too long",
                     v);
    } else if (xdg != NULL && xdg[0] == '/') {
        set_dir(xdg, "/xdev");
    } else if (home != NULL && home[0] == '/') {
        set_dir(home, "/.cache/xdev");
    } else {
        snprintf(g_dir_problem, sizeof g_dir_problem,
                 "the kernel cache has no directory: XDEV_CACHE_DIR is unset and neither "
                 "XDG_CACHE_HOME nor HOME is an absolute path");
    }
}

xdev_status_t xdev_kcache_settings_load(void) {
    bool on = true;
    int mb = XDEV_KCACHE_DEFAULT_MAX_MB;
    g_enabled = true;
    g_max_bytes = (uint64_t)XDEV_KCACHE_DEFAULT_MAX_MB << 20;
    resolve_dir();
    xdev_status_t st = xdev_env_bool("XDEV_KERNEL_CACHE", true, &on);
    if (st != XDEV_SUCCESS) return st;
    st = xdev_env_int("XDEV_KERNEL_CACHE_MAX_MB", XDEV_KCACHE_DEFAULT_MAX_MB, 1, 1 << 20, &mb);
    if (st != XDEV_SUCCESS) return st;
    g_enabled = on;
    g_max_bytes = (uint64_t)mb << 20;
    return XDEV_SUCCESS;
}

/* Settings are read by initialisation before any backend loads, so that a
 * malformed value fails xdev_init like every other variable. */
void xdev_kcache_wire(void) {
    xdev_hook_init_add(XDEV_INIT_SETTINGS, xdev_kcache_settings_load);
}

bool xdev_kcache_enabled(void) {
    return g_enabled;
}

uint64_t xdev_kcache_max_bytes(void) {
    return g_max_bytes;
}

bool xdev_kcache_dir(char *buf, size_t len) {
    if (len == 0) return false;
    bool ok = g_dir[0] != '\0';
    int w = snprintf(buf, len, "%s", ok ? g_dir : g_dir_problem);
    return ok && w >= 0 && (size_t)w < len;
}

bool xdev_kcache_first_problem(void) {
    return !atomic_exchange(&g_problem_reported, true);
}

/* ================================================================ keys */

static void put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void xdev_kcache_key(const char *const *parts, const size_t *lens, int n,
                     char out[XDEV_KCACHE_KEY_LEN]) {
    static const char tag[] = "xdev kernel cache key v1"; /* hashed with its NUL */
    unsigned char len8[8], digest[32];
    xdev_sha256_t s;
    xdev_sha256_init(&s);
    xdev_sha256_update(&s, tag, sizeof tag);
    put_le64(len8, n > 0 ? (uint64_t)n : 0);
    xdev_sha256_update(&s, len8, 8);
    for (int i = 0; i < n; i++) {
        const char *p = parts[i] != NULL ? parts[i] : "";
        size_t len = lens != NULL ? lens[i] : strlen(p);
        if (parts[i] == NULL) len = 0;
        put_le64(len8, len);
        xdev_sha256_update(&s, len8, 8);
        xdev_sha256_update(&s, p, len);
    }
    xdev_sha256_final(&s, digest);
    xdev_sha256_hex(digest, out);
}

bool xdev_kcache_key_valid(const char *key) {
    if (key == NULL) return false;
    for (int i = 0; i < 64; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) return false;
    return key[64] == '\0';
}

/* An extension: '.', then 1 to XDEV_KCACHE_EXT_MAX-1 of [A-Za-z0-9_.-]. */
static bool ext_valid(const char *ext) {
    if (ext == NULL || ext[0] != '.') return false;
    size_t n = strlen(ext);
    if (n < 2 || n > XDEV_KCACHE_EXT_MAX) return false;
    for (size_t i = 1; i < n; i++) {
        char c = ext[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

/* ================================================================ files */

/* Fills why (if any) and returns st: every soft failure goes through here, so
 * none touches the thread's error state. */
__attribute__((format(printf, 4, 5))) static xdev_status_t
soft(xdev_status_t st, char *why, size_t why_len, const char *fmt, ...) {
    if (why != NULL && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return st;
}

static void encode_header(unsigned char *h, int kind, uint64_t len, const unsigned char sha[32],
                          const char *key) {
    memset(h, 0, HEADER_SIZE);
    memcpy(h, MAGIC, 8);
    h[8] = XDEV_KCACHE_FORMAT; /* 32-bit little endian */
    h[12] = (unsigned char)kind;
    put_le64(h + 16, len);
    memcpy(h + 24, sha, 32);
    memcpy(h + 56, key, 64);
}

/* Whether h is a header of this format and kind for key; its length and hash. */
static bool decode_header(const unsigned char *h, int kind, const char *key, uint64_t *len,
                          unsigned char sha[32]) {
    static const unsigned char version[4] = {XDEV_KCACHE_FORMAT, 0, 0, 0};
    const unsigned char kind4[4] = {(unsigned char)kind, 0, 0, 0};
    static const unsigned char zero[8];
    if (memcmp(h, MAGIC, 8) != 0 || memcmp(h + 8, version, 4) != 0 ||
        memcmp(h + 12, kind4, 4) != 0 || memcmp(h + 56, key, 64) != 0 ||
        memcmp(h + 120, zero, 8) != 0)
        return false;
    *len = get_le64(h + 16);
    memcpy(sha, h + 24, 32);
    return true;
}

/* write(2) until done; -1 with errno (a write of 0 bytes is a full disk). */
static int write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* read(2) until n bytes or the end: the count, or -1 with errno. */
static ssize_t read_all(int fd, void *data, size_t n) {
    char *p = data;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* The folder, opened; created first (with its parents, 0700) when `create`
 * and missing. Refused unless this user owns it and others cannot write it. A
 * folder that does not exist (and is not created) is XDEV_ERROR_NOT_FOUND,
 * quietly. */
static xdev_status_t open_dir(bool create, int *dfd, char *why, size_t why_len) {
    if (g_dir[0] == '\0') return soft(XDEV_ERROR_IO, why, why_len, "%s", g_dir_problem);
    int fd = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), e = errno;
    if (fd < 0 && e == ENOENT && create) {
        /* Each prefix in turn; the last mkdir's failure is the reason. */
        char path[sizeof g_dir];
        memcpy(path, g_dir, sizeof path);
        for (char *p = path + 1;; p++) {
            char c = *p;
            if (c != '/' && c != '\0') continue;
            *p = '\0';
            e = mkdir(path, 0700) != 0 && errno != EEXIST ? errno : 0;
            *p = c;
            if (c == '\0') break;
        }
        fd = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 && e == 0) e = errno;
    }
    if (fd < 0) {
        if (!create && e == ENOENT) return XDEV_ERROR_NOT_FOUND;
        return soft(XDEV_ERROR_IO, why, why_len, "cannot %s the kernel cache '%s': %s",
                    create ? "create" : "open", g_dir, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        e = errno;
        close(fd);
        return soft(XDEV_ERROR_IO, why, why_len, "cannot examine the kernel cache '%s': %s", g_dir,
                    strerror(e));
    }
    if (st.st_uid != geteuid() || (st.st_mode & S_IWOTH) != 0) {
        close(fd);
        return soft(XDEV_ERROR_IO, why, why_len,
                    "the kernel cache '%s' is not used: %s (uid %u, mode %03o) while it must be "
                    "owned by this user (uid %u) and not writable by others, since it holds code "
                    "that xdev loads",
                    g_dir,
                    st.st_uid != geteuid() ? "another user owns it" : "others may write to it",
                    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
    }
    *dfd = fd;
    return XDEV_SUCCESS;
}

/* A new temporary file in the folder, named by pid, thread and a counter
 * (O_EXCL: a name a dead process left is skipped). */
static int make_temp(int dfd, char name[64]) {
    for (int tries = 0; tries < 64; tries++) {
        unsigned c = atomic_fetch_add_explicit(&g_temp_counter, 1, memory_order_relaxed);
        snprintf(name, 64, TEMP_PREFIX "%ld.%ld.%u", (long)getpid(), (long)syscall(SYS_gettid), c);
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Publishes the bytes of head then body as `name`: a temporary file, renamed
 * into place once complete; on any failure the temporary file is removed. */
static xdev_status_t publish(int dfd, const char *name, const void *head, size_t head_len,
                             const void *body, size_t body_len, char *why, size_t why_len) {
    char tmp[64];
    int fd = make_temp(dfd, tmp);
    if (fd < 0)
        return soft(XDEV_ERROR_IO, why, why_len,
                    "cannot store in the kernel cache '%s': creating a file: %s", g_dir,
                    strerror(errno));
    int failed = write_all(fd, head, head_len) != 0 || write_all(fd, body, body_len) != 0;
    int e = errno;
    if (close(fd) != 0 && !failed) failed = 1, e = errno;
    if (!failed && renameat(dfd, tmp, dfd, name) != 0) failed = 2, e = errno;
    if (!failed) return XDEV_SUCCESS;
    unlinkat(dfd, tmp, 0);
    return soft(XDEV_ERROR_IO, why, why_len, "cannot store in the kernel cache '%s': %s %s: %s",
                g_dir, failed == 2 ? "renaming into" : "writing", name, strerror(e));
}

xdev_status_t xdev_kcache_put(const char *key, const void *data, size_t size, char *why,
                              size_t why_len) {
    if (!g_enabled) return XDEV_SUCCESS;
    if (!xdev_kcache_key_valid(key))
        return soft(XDEV_ERROR_INVALID_VALUE, why, why_len,
                    "kernel cache: a key must be 64 lowercase hex digits");
    if ((uint64_t)size > g_max_bytes - HEADER_SIZE)
        return soft(XDEV_ERROR_IO, why, why_len,
                    "kernel cache: an entry of %zu bytes is larger than XDEV_KERNEL_CACHE_MAX_MB "
                    "(%llu MiB)",
                    size, (unsigned long long)(g_max_bytes >> 20));
    int dfd;
    xdev_status_t st = open_dir(true, &dfd, why, why_len);
    if (st != XDEV_SUCCESS) return st;
    unsigned char sha[32], head[HEADER_SIZE];
    xdev_sha256(data, size, sha);
    encode_header(head, KIND_BYTES, size, sha, key);
    char name[80];
    snprintf(name, sizeof name, "%s.bin", key);
    st = publish(dfd, name, head, HEADER_SIZE, data, size, why, why_len);
    close(dfd);
    if (st != XDEV_SUCCESS) return st;
    return xdev_kcache_trim(g_max_bytes, why, why_len);
}

/* Opens `name` in the folder for a lookup: the fd, or -1 with *damaged set
 * when it is there but not a regular file of at least min_size bytes. */
static int open_entry(int dfd, const char *name, off_t min_size, struct stat *st, bool *damaged) {
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ELOOP) *damaged = true; /* a symbolic link: never ours */
        return -1;
    }
    if (fstat(fd, st) != 0) {
        close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode) || st->st_size < min_size) {
        *damaged = true; /* something else under our name, or too short */
        close(fd);
        return -1;
    }
    return fd;
}

bool xdev_kcache_get(const char *key, void **data, size_t *size, bool *damaged) {
    bool dmg = false, hit = false;
    *data = NULL;
    *size = 0;
    int dfd = -1, fd = -1;
    char name[80];
    struct stat st;
    unsigned char head[HEADER_SIZE], want[32], got[32];
    uint64_t len = 0;
    void *buf = NULL;
    if (!g_enabled || !xdev_kcache_key_valid(key) || open_dir(false, &dfd, NULL, 0) != XDEV_SUCCESS)
        goto out;
    snprintf(name, sizeof name, "%s.bin", key);
    if ((fd = open_entry(dfd, name, HEADER_SIZE, &st, &dmg)) < 0) goto out;
    dmg = true; /* until the checks pass */
    if (read_all(fd, head, HEADER_SIZE) != HEADER_SIZE ||
        !decode_header(head, KIND_BYTES, key, &len, want) ||
        len != (uint64_t)st.st_size - HEADER_SIZE || len >= SIZE_MAX)
        goto out;
    if ((buf = malloc(len > 0 ? (size_t)len : 1)) == NULL) {
        dmg = false; /* out of memory: a plain miss */
        goto out;
    }
    ssize_t r = read_all(fd, buf, (size_t)len);
    if (r < 0) dmg = false; /* an I/O error says nothing of the entry */
    if (r < 0 || (uint64_t)r != len) goto out;
    xdev_sha256(buf, (size_t)len, got);
    if (memcmp(got, want, 32) != 0) goto out;
    dmg = false;
    hit = true;
    futimens(fd, NULL); /* most recently used (best effort: a read-only folder keeps its order) */
    *data = buf;
    *size = (size_t)len;
    buf = NULL;
out:
    free(buf);
    if (fd >= 0) close(fd);
    if (dfd >= 0) close(dfd);
    if (damaged != NULL) *damaged = dmg;
    return hit;
}

/* The payload file's name: "<key>-<sha256 hex><ext>". */
static void file_name(char *out, size_t len, const char *key, const unsigned char sha[32],
                      const char *ext) {
    char hex[XDEV_KCACHE_KEY_LEN];
    xdev_sha256_hex(sha, hex);
    snprintf(out, len, "%s-%s%s", key, hex, ext);
}

xdev_status_t xdev_kcache_put_file(const char *key, const char *ext, const char *src_path,
                                   char *why, size_t why_len) {
    if (!g_enabled) return XDEV_SUCCESS;
    if (!xdev_kcache_key_valid(key) || !ext_valid(ext))
        return soft(XDEV_ERROR_INVALID_VALUE, why, why_len,
                    "kernel cache: malformed key or extension (64 lowercase hex digits; '.' and "
                    "at most %d letters, digits, '_', '-' or '.')",
                    XDEV_KCACHE_EXT_MAX - 1);
    int src = open(src_path, O_RDONLY | O_CLOEXEC);
    struct stat sst;
    if (src < 0 || fstat(src, &sst) != 0 || !S_ISREG(sst.st_mode)) {
        int e = src < 0 ? errno : EINVAL;
        if (src >= 0) close(src);
        return soft(XDEV_ERROR_IO, why, why_len, "kernel cache: cannot read '%s': %s", src_path,
                    e == EINVAL ? "not a regular file" : strerror(e));
    }
    if ((uint64_t)sst.st_size > g_max_bytes - HEADER_SIZE) {
        close(src);
        return soft(XDEV_ERROR_IO, why, why_len,
                    "kernel cache: '%s' (%lld bytes) is larger than XDEV_KERNEL_CACHE_MAX_MB "
                    "(%llu MiB)",
                    src_path, (long long)sst.st_size, (unsigned long long)(g_max_bytes >> 20));
    }
    int dfd;
    xdev_status_t st = open_dir(true, &dfd, why, why_len);
    if (st != XDEV_SUCCESS) {
        close(src);
        return st;
    }
    /* Copy into a temporary file, hashing what is copied. */
    char tmp[64], name[200];
    unsigned char chunk[16384], sha[32], head[HEADER_SIZE];
    xdev_sha256_t hs;
    xdev_sha256_init(&hs);
    uint64_t copied = 0;
    int fd = make_temp(dfd, tmp), e = 0;
    const char *what = "creating a file";
    if (fd < 0) e = errno;
    while (fd >= 0 && e == 0) {
        ssize_t r = read(src, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r < 0) e = errno, what = "reading the file to store";
            break;
        }
        xdev_sha256_update(&hs, chunk, (size_t)r);
        if (write_all(fd, chunk, (size_t)r) != 0) e = errno, what = "writing a file";
        copied += (uint64_t)r;
    }
    close(src);
    if (fd >= 0 && close(fd) != 0 && e == 0) e = errno, what = "writing a file";
    if (e == 0) {
        xdev_sha256_final(&hs, sha);
        file_name(name, sizeof name, key, sha, ext);
        if (renameat(dfd, tmp, dfd, name) != 0) e = errno, what = "renaming into place";
    }
    if (e != 0) {
        if (fd >= 0) unlinkat(dfd, tmp, 0);
        close(dfd);
        return soft(XDEV_ERROR_IO, why, why_len, "cannot store in the kernel cache '%s': %s: %s",
                    g_dir, what, strerror(e));
    }
    /* Then the .sum naming it: readers find the file only once it is complete.
     * If this fails, the file stays as an unused (complete) one for trim. */
    encode_header(head, KIND_FILE, copied, sha, key);
    snprintf(name, sizeof name, "%s.sum", key);
    st = publish(dfd, name, head, HEADER_SIZE, NULL, 0, why, why_len);
    close(dfd);
    if (st != XDEV_SUCCESS) return st;
    return xdev_kcache_trim(g_max_bytes, why, why_len);
}

bool xdev_kcache_get_file(const char *key, const char *ext, char *path, size_t path_len,
                          bool *damaged) {
    bool dmg = false, hit = false;
    int dfd = -1, sfd = -1, fd = -1;
    char name[200];
    struct stat st;
    unsigned char head[HEADER_SIZE], want[32], chunk[16384], got[32];
    uint64_t len = 0, seen = 0;
    if (path_len > 0) path[0] = '\0';
    if (!g_enabled || !xdev_kcache_key_valid(key) || !ext_valid(ext) ||
        open_dir(false, &dfd, NULL, 0) != XDEV_SUCCESS)
        goto out;
    snprintf(name, sizeof name, "%s.sum", key);
    if ((sfd = open_entry(dfd, name, HEADER_SIZE, &st, &dmg)) < 0) goto out;
    dmg = true;
    if (st.st_size != HEADER_SIZE || read_all(sfd, head, HEADER_SIZE) != HEADER_SIZE ||
        !decode_header(head, KIND_FILE, key, &len, want))
        goto out;
    file_name(name, sizeof name, key, want, ext);
    dmg = false; /* the file gone (another process's trim) is a plain miss */
    if ((fd = open_entry(dfd, name, 0, &st, &dmg)) < 0) goto out;
    dmg = true;
    if ((uint64_t)st.st_size != len) goto out;
    xdev_sha256_t hs;
    xdev_sha256_init(&hs);
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) dmg = false;
        if (r < 0) goto out;
        if (r == 0) break;
        xdev_sha256_update(&hs, chunk, (size_t)r);
        seen += (uint64_t)r;
    }
    xdev_sha256_final(&hs, got);
    if (seen != len || memcmp(got, want, 32) != 0) goto out;
    dmg = false;
    int w = snprintf(path, path_len, "%s/%s", g_dir, name);
    if (w < 0 || (size_t)w >= path_len) {
        if (path_len > 0) path[0] = '\0';
        goto out;
    }
    futimens(sfd, NULL); /* most recently used, both */
    futimens(fd, NULL);
    hit = true;
out:
    if (fd >= 0) close(fd);
    if (sfd >= 0) close(sfd);
    if (dfd >= 0) close(dfd);
    if (damaged != NULL) *damaged = dmg;
    return hit;
}

/* ================================================================ trim */

#define TRIM_NAME_MAX 176

typedef struct {
    struct timespec mtime;
    uint64_t size;
    char name[TRIM_NAME_MAX];
} trim_item_t;

/* Whether name is one of ours: a temporary file, or "<64 hex>" then '.' or '-'. */
static bool trim_name_ours(const char *name, bool *temp) {
    *temp = strncmp(name, TEMP_PREFIX, sizeof TEMP_PREFIX - 1) == 0;
    if (*temp) return true;
    if (strlen(name) >= TRIM_NAME_MAX) return false;
    for (int i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return name[64] == '.' || name[64] == '-';
}

/* Oldest first; equal times by name, so every process picks the same order. */
static int trim_order(const void *pa, const void *pb) {
    const trim_item_t *a = pa, *b = pb;
    if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
    if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
    return strcmp(a->name, b->name);
}

xdev_status_t xdev_kcache_trim(uint64_t bound, char *why, size_t why_len) {
    int dfd;
    xdev_status_t st = open_dir(false, &dfd, why, why_len);
    if (st == XDEV_ERROR_NOT_FOUND) return XDEV_SUCCESS; /* nothing stored yet */
    if (st != XDEV_SUCCESS) return st;
    int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (d == NULL) {
        int e = errno;
        if (lfd >= 0) close(lfd);
        close(dfd);
        return soft(XDEV_ERROR_IO, why, why_len, "cannot list the kernel cache '%s': %s", g_dir,
                    strerror(e));
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    trim_item_t *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    st = XDEV_SUCCESS;
    for (struct dirent *ent; (ent = readdir(d)) != NULL;) {
        bool temp;
        struct stat fs;
        if (!trim_name_ours(ent->d_name, &temp)) continue;
        if (fstatat(dfd, ent->d_name, &fs, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(fs.st_mode))
            continue; /* removed meanwhile, or not a file of ours */
        if (temp) {
            /* A writer's file in progress counts but stays; one left by a
             * writer that died goes. */
            if (now.tv_sec - fs.st_mtim.tv_sec > STALE_TEMP_SECONDS)
                unlinkat(dfd, ent->d_name, 0);
            else
                total += (uint64_t)fs.st_size;
            continue;
        }
        if (n == cap) {
            size_t ncap = cap > 0 ? 2 * cap : 64;
            trim_item_t *grown = realloc(items, ncap * sizeof *items);
            if (grown == NULL) {
                st = soft(XDEV_ERROR_OUT_OF_MEMORY, why, why_len,
                          "kernel cache: no host memory to list '%s'", g_dir);
                break;
            }
            items = grown;
            cap = ncap;
        }
        items[n].mtime = fs.st_mtim;
        items[n].size = (uint64_t)fs.st_size;
        memcpy(items[n].name, ent->d_name, strlen(ent->d_name) + 1); /* fits: trim_name_ours */
        total += items[n].size;
        n++;
    }
    closedir(d);
    if (st == XDEV_SUCCESS && total > bound) {
        uint64_t target = bound - bound / 10;
        qsort(items, n, sizeof *items, trim_order);
        /* Another process trimming at once may remove the same files:
         * ENOENT counts as removed. */
        for (size_t i = 0; i < n && total > target; i++)
            if (unlinkat(dfd, items[i].name, 0) == 0 || errno == ENOENT) total -= items[i].size;
    }
    free(items);
    close(dfd);
    return st;
}
