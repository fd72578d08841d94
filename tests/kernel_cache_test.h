/* SPDX-License-Identifier: Apache-2.0 */
/* kernel_cache_test.h - what the two files of the kernel cache's unit test
 * (test_kernel_cache.c: hashing, keys, entries; test_kernel_cache_fs.c:
 * concurrency, the bound, directories, variables, cost) share: the per-case
 * directories and the helpers. */
#ifndef XDEV_TESTS_KERNEL_CACHE_TEST_H
#define XDEV_TESTS_KERNEL_CACHE_TEST_H

#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <ftw.h>

#include "kernel/kernel_cache.h"

extern char g_root[512];       /* this case's temporary directory */
extern char g_cache[PATH_MAX]; /* XDEV_CACHE_DIR: g_root/cache */
extern char g_dir[PATH_MAX];   /* its entries: g_cache/kernels-v1 */

/* snprintf into an array, asserting that it fits. */
#define PATHF(buf, ...) ck_assert((size_t)snprintf((buf), sizeof(buf), __VA_ARGS__) < sizeof(buf))

int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw);
void load(void);
void setup(void);
void teardown(void);
void fill(unsigned char *p, size_t n, uint64_t seed);
void key1(const char *s, char key[XDEV_KCACHE_KEY_LEN]);
void entry_path(char *out, size_t len, const char *key, const char *suffix);
void write_file(const char *path, const void *data, size_t n);
unsigned char *read_file(const char *path, size_t *n);
int count_files(int *temps);
void put_ok(const char *key, const void *data, size_t n);
void expect_hit(const char *key, const void *data, size_t n);
void expect_miss(const char *key, bool want_damaged);
void file_hit(const char *key, const void *data, size_t n, char *path);
void file_miss(const char *key, const char *ext, bool want_damaged);
xdev_status_t put_file(const char *key, const char *name, const void *data, size_t n, char *why);
void expect_files(int files);
void sha_hex(const void *data, size_t n, char out[XDEV_KCACHE_KEY_LEN]);

/* The cases of test_kernel_cache_fs.c. */
void kcache_add_fs_tests(TCase *tc);

#endif
