/* SPDX-License-Identifier: Apache-2.0 */
/* kernel_cache.h - the on-disk cache of compiled kernel images (issue 27).
 *
 * Kernels compiled at run time are kept across processes so that a second
 * run skips the compiler. An entry is found by a key, a SHA-256 over every
 * string that changes the binary (source, options, backend, device
 * architecture, compiler identity and version, xdev's dialect version): the
 * caller lists them, xdev_kcache_key hashes them.
 *
 * Where: XDEV_CACHE_DIR if set, else $XDG_CACHE_HOME/xdev (an absolute
 * XDG_CACHE_HOME), else $HOME/.cache/xdev; entries live in its
 * "kernels-v<XDEV_KCACHE_FORMAT>" folder, created 0700 on the first store. A
 * folder not owned by this user, or writable by others, is not used (it
 * could hold code someone else planted).
 *
 * Two kinds of entry, each published by rename(2) of a temporary file written
 * in the same folder (O_EXCL, named by pid, thread and a counter), so that
 * threads and processes storing and looking up the same key at once never see
 * a partial entry:
 *   <key>.bin             a header (magic, format version, kind, payload
 *                         length, SHA-256 of the payload, the key) and the
 *                         payload bytes (xdev_kcache_put / _get);
 *   <key>.sum + <key>-<sha256 of the payload><ext>
 *                         a payload that must be a plain file (a host kernel
 *                         library for dlopen): the file, named by its own
 *                         hash, then the header alone in <key>.sum naming it
 *                         (xdev_kcache_put_file / _get_file). A name never
 *                         holds other bytes than its hash says, so a path
 *                         handed out stays valid even while another process
 *                         stores a different build of the same key.
 * A lookup checks the header, the length, the payload's hash and the key;
 * any mismatch is a miss with *damaged set, and its bytes are never returned.
 * The caller rebuilds and stores again, which replaces the entry. Nothing is
 * fsync'ed: after a crash a torn entry fails the check the same way.
 *
 * Bounded: after every store, if the folder holds more than
 * XDEV_KERNEL_CACHE_MAX_MB (default 1024), its least recently used files
 * (mtime; a hit sets its entry's to now) are removed until it holds at most
 * 90% of that; files others remove meanwhile are skipped. XDEV_KERNEL_CACHE=0
 * turns the cache off: lookups miss, stores do nothing.
 *
 * A store that cannot be done (no directory, read-only, full, not owned) is a
 * soft failure: a status the caller may ignore, and a message in the caller's
 * buffer that it can report once (xdev_kcache_first_problem); no partial file
 * is left behind. None of these functions touches the thread's error state but
 * xdev_kcache_settings_load, an initialisation step. All are thread-safe once
 * initialisation has run. */
#ifndef XDEV_CORE_KERNEL_CACHE_H
#define XDEV_CORE_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sha256.h"
#include "xdev/error.h"

struct timespec;

/* Format of the entries and of the folder that holds them ("kernels-v1"). A
 * change of the header, of the names or of xdev_kcache_key's encoding bumps it. */
#define XDEV_KCACHE_FORMAT 1
/* A key: SHA-256 in lowercase hex (64 characters and a NUL). */
#define XDEV_KCACHE_KEY_LEN 65
/* Longest extension of a file entry (".so"), without its NUL. */
#define XDEV_KCACHE_EXT_MAX 15
/* Default bound, in MiB (XDEV_KERNEL_CACHE_MAX_MB). */
#define XDEV_KCACHE_DEFAULT_MAX_MB 1024

/* ------------------------------------------------------------ settings */
/* Reads XDEV_KERNEL_CACHE, XDEV_KERNEL_CACHE_MAX_MB and the directory
 * variables: the initialisation step (runtime/hooks.h, XDEV_INIT_SETTINGS)
 * registered when libxdev loads; a malformed value is XDEV_ERROR_ENV with the
 * thread's message set. A relative XDEV_CACHE_DIR is taken from the working
 * directory now. Not thread-safe (initialisation, or a test between cases). */
xdev_status_t xdev_kcache_settings_load(void);

/* Whether the cache is on (XDEV_KERNEL_CACHE). */
bool xdev_kcache_enabled(void);
/* The size bound in bytes (XDEV_KERNEL_CACHE_MAX_MB). */
uint64_t xdev_kcache_max_bytes(void);
/* The entries' folder (".../kernels-v1") into buf: true, or false when there
 * is none (no variable names one, or it is too long: buf gets the reason) or
 * buf is too small. The folder may not exist yet. */
bool xdev_kcache_dir(char *buf, size_t len);

/* True the first time it is called in this process, false after: a caller
 * reports its first soft failure and stays quiet about the rest. */
bool xdev_kcache_first_problem(void);

/* ------------------------------------------------------------ keys */
/* The key of n strings: SHA-256 over a domain tag, n, and each string's
 * length (64-bit) and bytes, so that part boundaries count (("ab","c") and
 * ("a","bc") differ) and no part can forge another. lens[i] is the length of
 * parts[i] (embedded NULs allowed), or lens == NULL for NUL-terminated parts.
 * A NULL part counts as "" (its length must then be 0). */
void xdev_kcache_key(const char *const *parts, const size_t *lens, int n,
                     char out[XDEV_KCACHE_KEY_LEN]);
/* Whether key is 64 lowercase hex digits (what every call below requires: a
 * key never names a path outside the folder). */
bool xdev_kcache_key_valid(const char *key);

/* ------------------------------------------------------------ entries */
/* Looks key up: true with *data (malloc'd, the caller frees; never NULL) and
 * *size on a verified hit, whose mtime becomes now. false on a miss: absent,
 * cache off, unreadable, out of memory, or damaged - then *damaged is true
 * (damaged may be NULL). */
bool xdev_kcache_get(const char *key, void **data, size_t *size, bool *damaged);

/* Stores size bytes under key, replacing what was there, then trims the
 * folder to its bound. XDEV_SUCCESS (also when the cache is off), or a soft
 * failure (XDEV_ERROR_IO: no directory, not writable, full, not owned, larger
 * than the bound; XDEV_ERROR_INVALID_VALUE: malformed key;
 * XDEV_ERROR_OUT_OF_MEMORY) with its message in why (why may be NULL). */
xdev_status_t xdev_kcache_put(const char *key, const void *data, size_t size, char *why,
                              size_t why_len);

/* A file entry: the file at src_path is copied into the folder as
 * "<key>-<its sha256><ext>" and "<key>.sum" is published for it. ext is 1 to
 * XDEV_KCACHE_EXT_MAX characters, a '.' then letters, digits, '_', '-' or '.'
 * (".so"). Status and why as xdev_kcache_put. */
xdev_status_t xdev_kcache_put_file(const char *key, const char *ext, const char *src_path,
                                   char *why, size_t why_len);

/* Looks a file entry up: true with the path of its file, verified now (length
 * and SHA-256 against <key>.sum), in path; its mtime and the .sum's become
 * now. false on a miss (*damaged as xdev_kcache_get; a path that does not fit
 * in path_len is a miss). The file at that path never changes; another
 * process's trim could still remove it before the caller opens it, so a
 * failed open is a miss too. */
bool xdev_kcache_get_file(const char *key, const char *ext, char *path, size_t path_len,
                          bool *damaged);

/* If the folder holds more than bound bytes, removes its least recently used
 * files until it holds at most 90% of bound (bound 0 empties it), and any
 * temporary file a writer left more than an hour ago. Stores call it with
 * xdev_kcache_max_bytes(). XDEV_SUCCESS, or XDEV_ERROR_IO / _OUT_OF_MEMORY
 * with why (nothing to do when the folder does not exist). */
xdev_status_t xdev_kcache_trim(uint64_t bound, char *why, size_t why_len);

/* ------------------------------------------------------------ files read
 * (compile_deps.c) A run-time compile's image depends on every file the
 * compiler read, not only on the source and options: a header found through
 * -I can change between two runs. xdev_module_compile keys its lookups in two
 * steps. The base key hashes what is known before compiling (source,
 * options, backend, compiler identity, image format, xdev's version and
 * dialect). Under it, a manifest (a bytes entry) lists the files the last
 * compile read, each with its content's SHA-256 and its stat fields (size,
 * mtime, ctime, inode, device); the image itself is stored under a key
 * hashing the base key with every (path, content hash). A lookup stats each
 * listed file, reuses the recorded hash when every stat field matches (a
 * write changes ctime, which no call can set back) and hashes the content
 * again otherwise: a changed file gives another image key, a missing one a
 * miss. A compile that read a file changed less than a second before it
 * started is not cached (what it read cannot be told from a later change in
 * the same timestamp tick). Known limit, as ccache's: a header created in an
 * include directory searched before the one where the compiler found it last
 * time is not noticed until the listed files change. */

/* The image key for base_key from its manifest and the files as they are
 * now: true, or false when there is no manifest (or it is damaged, or a
 * listed file is gone or unreadable). */
bool xdev_kdeps_image_key(const char *base_key, char out[XDEV_KCACHE_KEY_LEN]);

/* After a miss's compile that started at *start (CLOCK_REALTIME) and read
 * the files in deps (one path a line, as the compiler named them): hashes
 * them, stores the manifest under base_key and gives the image key in out.
 * XDEV_SUCCESS, or a failure with why: XDEV_ERROR_NOT_FOUND when a file is
 * too new or unreadable (the image must not be cached), or a soft failure of
 * the store. */
xdev_status_t xdev_kdeps_store(const char *base_key, const char *deps, const struct timespec *start,
                               char out[XDEV_KCACHE_KEY_LEN], char *why, size_t why_len);

/* For a backend that cannot list what its compiler read (NVRTC, hiprtc):
 * the image key hashes base_key with the content of every regular file under
 * each include directory the options name (-I, -isystem, -iquote,
 * -idirafter, joined or separated, --include-path[=]<dir>), walked in name
 * order. Taken before the compile (start NULL) for the lookup, and again
 * after it with start (the compile's CLOCK_REALTIME start): the image is
 * cached only when the two keys agree and no file, nor a symlink along its
 * path, changed since a second before start (a header edited between the
 * walk and the compiler's read must not file image(v2) under key(v1)).
 * XDEV_ERROR_NOT_FOUND with why (not cached) when they hold more than 4096
 * files or 64 MiB, when a file is too new, or when the files read cannot be
 * told from the trees: -include, --pre-include or -imacros among the
 * options, or an #include in source naming an absolute path, "..", or a
 * macro. */
xdev_status_t xdev_kdeps_tree_key(const char *base_key, const char *source,
                                  const char *const *options, int n, const struct timespec *start,
                                  char out[XDEV_KCACHE_KEY_LEN], char *why, size_t why_len);

/* A test hook (exported, in no public header): the xdev version a compile's
 * key names is v instead of xdev_version_string()'s (NULL: the real one), as
 * if another xdev had built the entries. compile.c. */
XDEV_API void xdev_kcompile_test_version(const char *v);

/* A test hook (exported, in no public header): on != 0 makes every compile
 * behave as a backend that cannot list what its compiler read (NVRTC,
 * hiprtc), so that the -I walk's keying runs on the CPU. compile.c. */
XDEV_API void xdev_kcompile_test_no_deps(int on);

#endif
