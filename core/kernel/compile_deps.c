/* SPDX-License-Identifier: Apache-2.0 */
/* compile_deps.c - the part of a run-time compile's cache key that comes
 * from the files the compiler read besides the source (headers through -I,
 * xdev's own, the system's), so that a changed header is never served the
 * image built from its old text (issue 41). kernel_cache.h says what is
 * recorded and why; this is ccache's "direct mode" idea, written anew.
 *
 * A manifest, stored as a bytes entry under the base key (source, options,
 * compiler, versions), lists every file the last miss's compile read: its
 * path as the compiler named it, the SHA-256 of its content, and its size,
 * times, inode and device. A lookup re-checks each file: one whose stat
 * fields all match keeps its recorded hash (a changed file changes its ctime,
 * which no call can set back), any other is read and hashed again. The image
 * key hashes the base key with every path and content hash, so any change
 * finds another key. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "kernel/kernel_cache.h"

#define MANIFEST_MAGIC "xdev-deps 1\n"
/* A file changed this close to a compile's start (or after it) is "too new":
 * the compile may have read another text than the one hashed afterwards, and
 * a coarse timestamp cannot tell (filesystems stamp to 1 s at worst). */
#define TOO_NEW_NS 1000000000LL
/* Bounds of the -I directory walk (backends that cannot list their reads). */
#define TREE_MAX_FILES 4096
#define TREE_MAX_BYTES (64ull << 20)
#define TREE_MAX_DEPTH 8
/* The most one file may hold to be hashed: a header larger is not cached. */
#define FILE_MAX_BYTES (64ll << 20)
/* The most symlinks followed along one path (as the kernel's own bound). */
#define LINKS_MAX 40

/* The SHA-256 of a file's content in hex; false if it cannot be read, is no
 * longer a regular file (a FIFO swapped in after the stat must not block the
 * lookup: O_NONBLOCK, then fstat of what was opened) or holds more than
 * FILE_MAX_BYTES. */
static bool hash_file(const char *path, char hex[XDEV_KCACHE_KEY_LEN], uint64_t *bytes) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > FILE_MAX_BYTES) {
        close(fd);
        return false;
    }
    unsigned char buf[16384], d[32];
    xdev_sha256_t s;
    xdev_sha256_init(&s);
    uint64_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            close(fd);
            return false;
        }
        if (r == 0) break;
        xdev_sha256_update(&s, buf, (size_t)r);
        n += (uint64_t)r;
        if (n > (uint64_t)FILE_MAX_BYTES) { /* grew while read */
            close(fd);
            return false;
        }
    }
    close(fd);
    xdev_sha256_final(&s, d);
    xdev_sha256_hex(d, hex);
    if (bytes != NULL) *bytes = n;
    return true;
}

static long long ns_of(struct timespec t) {
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Whether a symlink along path (any component, and the links those name in
 * turn) changed at or after limit (ns): the file stat() finds now may not be
 * the one the compiler opened through it (inc -> v1 switched to an old v2
 * during the compile). A link's ctime is set when it is made and cannot be
 * set back; stat() of the file follows links and cannot see them. Also true
 * when the path cannot be resolved within LINKS_MAX links. */
static bool links_too_new(const char *path, long long limit, int depth) {
    if (depth > LINKS_MAX) return true;
    size_t len = strlen(path);
    char *p = malloc(len + 1);
    if (p == NULL) return true;
    memcpy(p, path, len + 1);
    bool bad = false;
    for (size_t i = 1; i <= len && !bad; i++) {
        if (i < len && p[i] != '/') continue;
        char keep = p[i];
        p[i] = '\0'; /* the prefix up to this component */
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlink(p, target, sizeof target - 1);
            bad = ns_of(st.st_ctim) >= limit || n <= 0;
            if (!bad) { /* what the link names, then the rest of the path */
                target[n] = '\0';
                char *slash = strrchr(p, '/');
                size_t dl = target[0] == '/' || slash == NULL ? 0 : (size_t)(slash - p) + 1;
                size_t need = dl + (size_t)n + (len - i) + 1;
                char *next = malloc(need);
                if (next == NULL) {
                    bad = true;
                } else {
                    snprintf(next, need, "%.*s%s%s", (int)dl, p, target, path + i);
                    bad = links_too_new(next, limit, depth + 1);
                    free(next);
                }
            }
            free(p);
            return bad;
        }
        p[i] = keep;
    }
    free(p);
    return bad;
}

/* One manifest line's stat fields. */
typedef struct {
    unsigned long long size, ino, dev;
    long long mtime, ctime;
} stamp_t;

static stamp_t stamp_of(const struct stat *st) {
    return (stamp_t){(unsigned long long)st->st_size, (unsigned long long)st->st_ino,
                     (unsigned long long)st->st_dev, ns_of(st->st_mtim), ns_of(st->st_ctim)};
}

/* The files a compile read, each path beside its content hash: what the
 * manifest lists and the image key hashes. The lookup and the store both
 * build one, a pair at a time. */
typedef struct {
    char **paths;
    char (*hashes)[XDEV_KCACHE_KEY_LEN];
    int n, cap;
} dep_list_t;

/* Room for pair n: both lists grow together (false, no host memory: the
 * lists stay as they were, still freed by dep_list_free). */
static bool dep_list_room(dep_list_t *d) {
    if (d->n < d->cap) return true;
    int cap = d->cap > 0 ? 2 * d->cap : 64;
    char **p2 = realloc(d->paths, (size_t)cap * sizeof *d->paths);
    if (p2 != NULL) d->paths = p2;
    char(*h2)[XDEV_KCACHE_KEY_LEN] = realloc(d->hashes, (size_t)cap * sizeof *d->hashes);
    if (h2 != NULL) d->hashes = h2;
    if (p2 == NULL || h2 == NULL) return false;
    d->cap = cap;
    return true;
}

static void dep_list_free(dep_list_t *d) {
    free(d->paths);
    free(d->hashes);
}

/* The image key: base, then each (path, content hash), in the manifest's order. */
static void image_key(const char *base, const dep_list_t *d, char out[XDEV_KCACHE_KEY_LEN]) {
    const char **parts = malloc(((size_t)d->n * 2 + 2) * sizeof *parts);
    if (parts == NULL) { /* no key can be made: one no entry will ever have */
        out[0] = '\0';
        return;
    }
    parts[0] = "xdev image key from the files read, v1";
    parts[1] = base;
    for (int i = 0; i < d->n; i++) {
        parts[2 + 2 * i] = d->paths[i];
        parts[3 + 2 * i] = d->hashes[i];
    }
    xdev_kcache_key(parts, NULL, 2 * d->n + 2, out);
    free(parts);
}

bool xdev_kdeps_image_key(const char *base_key, char out[XDEV_KCACHE_KEY_LEN]) {
    void *data = NULL;
    size_t size = 0;
    out[0] = '\0';
    if (!xdev_kcache_get(base_key, &data, &size, NULL)) return false;
    char *text = realloc(data, size + 1);
    if (text == NULL) {
        free(data);
        return false;
    }
    text[size] = '\0';
    bool ok = strncmp(text, MANIFEST_MAGIC, strlen(MANIFEST_MAGIC)) == 0;
    dep_list_t d = {0};
    for (char *line = text + strlen(MANIFEST_MAGIC); ok && *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end == NULL) {
            ok = false;
            break;
        }
        *end = '\0';
        char hex[XDEV_KCACHE_KEY_LEN];
        stamp_t want;
        int at = -1;
        if (sscanf(line, "%64s %llu %lld %lld %llu %llu %n", hex, &want.size, &want.mtime,
                   &want.ctime, &want.ino, &want.dev, &at) != 6 ||
            at <= 0 || line[at] == '\0' || !xdev_kcache_key_valid(hex)) {
            ok = false;
            break;
        }
        if (!dep_list_room(&d)) {
            ok = false;
            break;
        }
        d.paths[d.n] = line + at;
        struct stat st;
        if (stat(d.paths[d.n], &st) != 0 || !S_ISREG(st.st_mode)) {
            ok = false; /* gone: the compile would read something else */
            break;
        }
        stamp_t now = stamp_of(&st);
        if (memcmp(&now, &want, sizeof now) == 0)
            memcpy(d.hashes[d.n], hex, sizeof hex);
        else if (!hash_file(d.paths[d.n], d.hashes[d.n], NULL))
            ok = false;
        d.n++;
        line = end + 1;
    }
    if (ok) image_key(base_key, &d, out);
    dep_list_free(&d);
    free(text);
    return ok && out[0] != '\0';
}

xdev_status_t xdev_kdeps_store(const char *base_key, const char *deps, const struct timespec *start,
                               char out[XDEV_KCACHE_KEY_LEN], char *why, size_t why_len) {
    out[0] = '\0';
    xdev_strbuf_t sb = {0};
    xdev_strbuf_printf(&sb, "%s", MANIFEST_MAGIC);
    dep_list_t d = {0};
    char *list = strdup(deps);
    xdev_status_t st = list != NULL ? XDEV_SUCCESS : XDEV_ERROR_OUT_OF_MEMORY;
    if (list == NULL) snprintf(why, why_len, "no host memory for the list of files read");
    for (char *p = list, *save = NULL; st == XDEV_SUCCESS; p = NULL) {
        char *path = strtok_r(p, "\n", &save);
        if (path == NULL) break;
        if (!dep_list_room(&d)) {
            st = XDEV_ERROR_OUT_OF_MEMORY;
            snprintf(why, why_len, "no host memory for the list of files read");
            break;
        }
        struct stat sb1, sb2;
        if (stat(path, &sb1) != 0 || !S_ISREG(sb1.st_mode) ||
            !hash_file(path, d.hashes[d.n], NULL) || stat(path, &sb2) != 0) {
            st = XDEV_ERROR_NOT_FOUND;
            snprintf(why, why_len, "'%s', which the compiler read, cannot be read now", path);
            break;
        }
        stamp_t s1 = stamp_of(&sb1), s2 = stamp_of(&sb2);
        long long limit = ns_of(*start) - TOO_NEW_NS;
        if (memcmp(&s1, &s2, sizeof s1) != 0 || s1.mtime >= limit || s1.ctime >= limit ||
            links_too_new(path, limit, 0)) {
            st = XDEV_ERROR_NOT_FOUND;
            snprintf(why, why_len,
                     "'%s' (or a symlink along its path) changed less than a second before the "
                     "compile (or during it)",
                     path);
            break;
        }
        d.paths[d.n] = path;
        xdev_strbuf_printf(&sb, "%s %llu %lld %lld %llu %llu %s\n", d.hashes[d.n], s1.size,
                           s1.mtime, s1.ctime, s1.ino, s1.dev, path);
        d.n++;
    }
    if (st == XDEV_SUCCESS && sb.failed) {
        st = XDEV_ERROR_OUT_OF_MEMORY;
        snprintf(why, why_len, "no host memory for the list of files read");
    }
    if (st == XDEV_SUCCESS) {
        image_key(base_key, &d, out);
        st = xdev_kcache_put(base_key, sb.buf, strlen(sb.buf), why, why_len);
        if (out[0] == '\0' && st == XDEV_SUCCESS) st = XDEV_ERROR_OUT_OF_MEMORY;
    }
    dep_list_free(&d);
    free(list);
    free(sb.buf);
    if (st != XDEV_SUCCESS) out[0] = '\0';
    return st;
}

/* ------------------------------------------------------------ -I walk */

typedef struct {
    xdev_sha256_t s;
    int files;
    uint64_t bytes;
    bool over;
    bool too_new;    /* a file (or a link to it) changed since limit */
    long long limit; /* ns; 0: no too-new rule (the lookup before a compile) */
} tree_t;

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Hashes every regular file under dir (sorted by name, so every process
 * walks in the same order): its path relative to the walk's root and its
 * content's hash. After a compile (limit set), a file or a symlink along its
 * path changed since limit makes the key unusable (t->too_new). */
static void walk(tree_t *t, const char *dir, const char *rel, int depth) {
    struct dirent **ents = NULL;
    int n = depth > TREE_MAX_DEPTH ? -1 : scandir(dir, &ents, NULL, by_name);
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char path[4096], sub[4096];
        struct stat st;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !t->over && !t->too_new &&
            (size_t)snprintf(path, sizeof path, "%s/%s", dir, name) < sizeof path &&
            (size_t)snprintf(sub, sizeof sub, "%s/%s", rel, name) < sizeof sub &&
            stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                walk(t, path, sub, depth + 1);
            } else if (S_ISREG(st.st_mode)) {
                char hex[XDEV_KCACHE_KEY_LEN];
                uint64_t got = 0;
                if (t->limit != 0 &&
                    (ns_of(st.st_mtim) >= t->limit || ns_of(st.st_ctim) >= t->limit ||
                     links_too_new(path, t->limit, 0))) {
                    t->too_new = true;
                } else if (++t->files > TREE_MAX_FILES || !hash_file(path, hex, &got) ||
                           (t->bytes += got) > TREE_MAX_BYTES) {
                    t->over = true;
                } else {
                    xdev_sha256_update(&t->s, sub, strlen(sub) + 1);
                    xdev_sha256_update(&t->s, hex, sizeof hex);
                }
            }
        }
        free(ents[i]);
    }
    free(ents);
}

/* The directory an include-path option names (options[*i], and the next one
 * for the separated forms: *i then steps over it), or NULL. */
static const char *include_dir_of(const char *const *options, int n, int *i) {
    static const char *const flags[] = {"-I", "--include-path", "-isystem", "-iquote",
                                        "-idirafter"};
    const char *o = options[*i];
    for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
        size_t l = strlen(flags[f]);
        if (strncmp(o, flags[f], l) != 0) continue;
        if (o[l] == '\0') return *i + 1 < n ? options[++*i] : NULL;
        if (o[l] == '=' && f == 1) return o + l + 1; /* --include-path=<dir> */
        if (f != 1) return o + l;                    /* -I<dir>, -isystem<dir>, ... */
    }
    return NULL;
}

/* Why the files read cannot be told from the include trees, or NULL: an
 * option that makes the compiler read a named file (-include, --pre-include,
 * -imacros), or a source #include that names an absolute path, climbs out
 * with "..", or is a macro (none of them is under a walked tree). */
static const char *tree_unkeyable(const char *source, const char *const *options, int n) {
    for (int i = 0; i < n; i++)
        if (strncmp(options[i], "-include", 8) == 0 ||
            strncmp(options[i], "--pre-include", 13) == 0 ||
            strncmp(options[i], "-imacros", 8) == 0)
            return "an option names a file to include (-include, --pre-include, -imacros)";
    for (const char *p = source != NULL ? strchr(source, '#') : NULL; p != NULL;
         p = strchr(p + 1, '#')) {
        const char *q = p + 1;
        while (*q == ' ' || *q == '\t')
            q++;
        if (strncmp(q, "include", 7) != 0) continue;
        q += 7;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q != '"' && *q != '<') return "an #include names a macro";
        char close = *q == '"' ? '"' : '>';
        const char *end = strchr(q + 1, close), *nl = strchr(q + 1, '\n');
        if (q[1] == '/') return "an #include names an absolute path";
        const char *d = strstr(q + 1, "..");
        if (d != NULL && (end == NULL || d < end) && (nl == NULL || d < nl))
            return "an #include climbs out with \"..\"";
    }
    return NULL;
}

xdev_status_t xdev_kdeps_tree_key(const char *base_key, const char *source,
                                  const char *const *options, int n, const struct timespec *start,
                                  char out[XDEV_KCACHE_KEY_LEN], char *why, size_t why_len) {
    out[0] = '\0';
    const char *no = tree_unkeyable(source, options, n);
    if (no != NULL) {
        snprintf(why, why_len, "%s: what the compiler reads is not known, not cached", no);
        return XDEV_ERROR_NOT_FOUND;
    }
    tree_t t = {.files = 0, .limit = start != NULL ? ns_of(*start) - TOO_NEW_NS : 0};
    xdev_sha256_init(&t.s);
    xdev_sha256_update(&t.s, "xdev image key from the -I trees, v1", 37);
    xdev_sha256_update(&t.s, base_key, XDEV_KCACHE_KEY_LEN);
    for (int i = 0; i < n && !t.over && !t.too_new; i++) {
        const char *dir = include_dir_of(options, n, &i);
        if (dir == NULL) continue;
        xdev_sha256_update(&t.s, dir, strlen(dir) + 1);
        if (t.limit != 0 && links_too_new(dir, t.limit, 0)) t.too_new = true;
        walk(&t, dir, "", 0);
    }
    if (t.too_new) {
        snprintf(why, why_len,
                 "a file under the include directories (or a symlink to it) changed less than a "
                 "second before the compile (or during it): not cached");
        return XDEV_ERROR_NOT_FOUND;
    }
    if (t.over) {
        snprintf(why, why_len,
                 "the include directories hold more than %d files or %llu MiB (or one cannot be "
                 "read): not cached",
                 TREE_MAX_FILES, (unsigned long long)(TREE_MAX_BYTES >> 20));
        return XDEV_ERROR_NOT_FOUND;
    }
    unsigned char d[32];
    xdev_sha256_final(&t.s, d);
    xdev_sha256_hex(d, out);
    return XDEV_SUCCESS;
}
