/* SPDX-License-Identifier: Apache-2.0 */
/* test_alloc_oom.c - an allocation that runs out of memory, explained (issue
 * 46, part 2): the message's fields, the out-of-memory observers
 * (xdev_memory_add_oom_observer) called once per failure with the right
 * figures, observers that allocate and free, and XDEV_OOM_SNAPSHOT's files.
 *
 * Out of memory is provoked on every backend the same way: a memory-fraction
 * cap of about 64 MiB (xdev_set_per_process_memory_fraction), so the
 * allocator, not the device, runs out. Suites (ctest entries):
 *   oom           the caching allocator
 *   oom.nocache   the same with XDEV_NO_MEMORY_CACHING=1 (the direct path)
 *   snapshot      XDEV_OOM_SNAPSHOT=<dir>/oom-%p.pickle
 * Malformed XDEV_OOM_SNAPSHOT values are tests/test_select.c's env_malformed
 * entries (select.env_oom_snapshot*). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xt.h"

#define MIB ((size_t)1 << 20)

static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
    XT_OK(xdev_empty_cache());
}

static void teardown(void) {
    XT_OK(xdev_set_per_process_memory_fraction(1.0, xt_dev(0)));
}

/* Cap device 0's allocator at about `cap` bytes; returns the cap in bytes. */
static size_t set_cap(size_t cap) {
    size_t free_b = 0, total = 0;
    XT_OK(xdev_mem_get_info(xt_dev(0), &free_b, &total));
    ck_assert_uint_gt(total, 4 * cap);
    double fraction = (double)cap / (double)total;
    XT_OK(xdev_set_per_process_memory_fraction(fraction, xt_dev(0)));
    return (size_t)(fraction * (double)total);
}

static bool caching(void) {
    const char *v = getenv("XDEV_NO_MEMORY_CACHING");
    return v == NULL || strcmp(v, "1") != 0;
}

/* ------------------------------------------------------------ the message */

START_TEST(message_fields) {
    set_cap(64 * MIB);
    void *keep = NULL, *p = NULL;
    /* Caching: an 8 MiB request gets a 20 MiB segment, 12 MiB of it free. */
    XT_OK(xdev_malloc_device(xt_dev(0), &keep, 8 * MIB));
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 60 * MIB),
           "xdev_malloc_device", xt_name(0), "tried to allocate 60.00 MiB", "total capacity of",
           "is free", "at most 64.00 MiB", "memory fraction", "8.00 MiB is allocated by xdev",
           "reserved by xdev but unallocated", "largest free cached block",
           "Try:", "a larger memory fraction (xdev_set_per_process_memory_fraction)",
           "XDEV_OOM_SNAPSHOT");
    if (caching()) {
        const char *m = xdev_last_error();
        ck_assert_msg(strstr(m, "12.00 MiB is reserved by xdev but unallocated") != NULL, "%s", m);
        ck_assert_msg(strstr(m, "the largest free cached block is 12.00 MiB") != NULL, "%s", m);
        ck_assert_msg(strstr(m, "expandable_segments:true") != NULL, "%s", m);
    }
    ck_assert_ptr_null(p);
    XT_OK(xdev_free(keep));
}
END_TEST

/* Without a cap: the message says so and does not advise raising one. */
START_TEST(message_without_cap) {
    void *p = NULL;
    size_t free_b = 0, total = 0;
    XT_OK(xdev_mem_get_info(xt_dev(0), &free_b, &total));
    /* More than the device holds (a real failure of the backend). */
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, total + 64 * MIB),
           "tried to allocate", "No memory fraction caps xdev", "Try:");
    ck_assert_msg(strstr(xdev_last_error(), "xdev_set_per_process_memory_fraction") == NULL, "%s",
                  xdev_last_error());
}
END_TEST

/* ------------------------------------------------------------ observers */

typedef struct seen {
    int calls;
    xdev_oom_info_t info;
    xdev_memory_stats_t stats;
    char message[2048];
    void *ballast; /* allocates_and_frees: freed by the observer */
    void *extra;   /* ... and allocated by it */
    xdev_status_t nested;
    xdev_status_t extra_st;
} seen_t;

static void record(const xdev_oom_info_t *info, void *user) {
    seen_t *s = user;
    s->calls++;
    s->info = *info;
    s->stats = *info->stats;
    snprintf(s->message, sizeof s->message, "%s", info->message);
}

START_TEST(observer_once_with_stats) {
    size_t cap = set_cap(64 * MIB);
    seen_t s = {0};
    XT_OK(xdev_memory_add_oom_observer(record, &s));
    void *keep = NULL, *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &keep, 8 * MIB));
    xdev_memory_stats_t before = xt_mem_stats(0);
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 60 * MIB), "60.00 MiB");
    char failed[2048];
    snprintf(failed, sizeof failed, "%s", xdev_last_error());
    ck_assert_int_eq(s.calls, 1);
    XT_DEV_EQ(s.info.device, xt_dev(0));
    ck_assert_uint_eq(s.info.requested, 60 * MIB);
    ck_assert_uint_eq(s.info.limit, cap);
    ck_assert_int_eq(s.stats.num_ooms, before.num_ooms + 1);
    ck_assert_int_eq(s.stats.allocated_bytes[XDEV_STAT_ALL].current,
                     before.allocated_bytes[XDEV_STAT_ALL].current);
    ck_assert_int_eq(s.stats.allocation[XDEV_STAT_ALL].current,
                     before.allocation[XDEV_STAT_ALL].current);
    int64_t unused = s.stats.reserved_bytes[XDEV_STAT_ALL].current -
                     s.stats.allocated_bytes[XDEV_STAT_ALL].current;
    ck_assert_int_eq((int64_t)s.info.reserved_unused, unused);
    if (caching()) {
        ck_assert_uint_eq(s.info.reserved_unused, 12 * MIB);
        ck_assert_uint_eq(s.info.largest_free_block, 12 * MIB);
    }
    ck_assert_uint_gt(s.info.device_total, 0);
    /* The observer saw the message the caller gets (without the call's prefix). */
    ck_assert_msg(strstr(failed, s.message) != NULL, "'%s' not in '%s'", s.message, failed);
    ck_assert_msg(strstr(s.message, "tried to allocate 60.00 MiB") != NULL, "%s", s.message);
    /* A success calls nothing; a second failure calls it once more. */
    XT_OK(xdev_malloc_device(xt_dev(0), &p, MIB));
    XT_OK(xdev_free(p));
    ck_assert_int_eq(s.calls, 1);
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 61 * MIB), "61.00 MiB");
    ck_assert_int_eq(s.calls, 2);
    ck_assert_uint_eq(s.info.requested, 61 * MIB);
    /* Removed: no call. */
    XT_OK(xdev_memory_remove_oom_observer(record, &s));
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 62 * MIB), "62.00 MiB");
    ck_assert_int_eq(s.calls, 2);
    XT_OK(xdev_free(keep));
}
END_TEST

/* Two observers each see the failure once; the stream-ordered malloc too. */
START_TEST(observer_two_and_malloc_stream) {
    set_cap(64 * MIB);
    seen_t a = {0}, b = {0};
    XT_OK(xdev_memory_add_oom_observer(record, &a));
    XT_OK(xdev_memory_add_oom_observer(record, &b));
    xdev_stream_t st = xt_new_stream(0);
    void *p = NULL;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_stream(&p, 80 * MIB, st), "80.00 MiB");
    ck_assert_int_eq(a.calls, 1);
    ck_assert_int_eq(b.calls, 1);
    XT_OK(xdev_memory_remove_oom_observer(record, &a));
    XT_OK(xdev_memory_remove_oom_observer(record, &b));
    XT_OK(xdev_stream_destroy(st));
}
END_TEST

/* Managed memory that runs out calls the observers too (once), and counts. */
START_TEST(observer_managed) {
    seen_t s = {0};
    XT_OK(xdev_memory_add_oom_observer(record, &s));
    xdev_memory_stats_t before = xt_mem_stats(0);
    void *p = NULL;
    size_t huge = (size_t)1 << 49;
    xdev_status_t st = xdev_malloc_managed(xt_dev(0), &p, huge, 0);
    XT_OK(xdev_memory_remove_oom_observer(record, &s));
    if (st == XDEV_ERROR_NOT_SUPPORTED) XT_SKIP("no managed memory: %s", xdev_last_error());
    ck_assert_int_eq(st, XDEV_ERROR_OUT_OF_MEMORY);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(s.calls, 1);
    ck_assert_uint_eq(s.info.requested, huge);
    ck_assert_int_eq(s.stats.num_ooms, before.num_ooms + 1);
    ck_assert_msg(strstr(s.message, "managed memory") != NULL, "%s", s.message);
}
END_TEST

/* An application's allocator (xdev_set_allocator) that runs out: the same
 * message, its words in place of the backend's, and the observers. Each
 * test runs in a fresh process (Check's fork): nothing was allocated yet. */
static xdev_status_t full_malloc(void *ctx, xdev_device_t d, size_t n, xdev_stream_t s,
                                 void **out) {
    (void)ctx;
    (void)d;
    (void)n;
    (void)s;
    *out = NULL;
    return XDEV_ERROR_OUT_OF_MEMORY;
}
static xdev_status_t full_free(void *ctx, xdev_device_t d, void *p, size_t n, xdev_stream_t s) {
    (void)ctx;
    (void)d;
    (void)p;
    (void)n;
    (void)s;
    return XDEV_SUCCESS;
}

START_TEST(pluggable_allocator_runs_out) {
    xdev_allocator_t a = {.size = sizeof a, .malloc = full_malloc, .free = full_free};
    XT_OK(xdev_set_allocator(xt_dev(0), &a));
    seen_t s = {0};
    XT_OK(xdev_memory_add_oom_observer(record, &s));
    void *p = NULL;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 3 * MIB),
           "tried to allocate 3.00 MiB", "the allocator installed with xdev_set_allocator", "Try:");
    ck_assert_int_eq(s.calls, 1);
    ck_assert_uint_eq(s.info.requested, 3 * MIB);
    XT_OK(xdev_memory_remove_oom_observer(record, &s));
}
END_TEST

/* The observer frees the application's ballast, allocates and frees memory,
 * empties the cache, and makes an allocation that fails itself (no observer
 * is called for that one, and no lock is held: none of this deadlocks). */
static void release_ballast(const xdev_oom_info_t *info, void *user) {
    seen_t *s = user;
    s->calls++;
    s->nested = xdev_malloc_device(info->device, &s->extra, 500 * MIB); /* fails: cap */
    if (s->ballast != NULL) {
        (void)xdev_free(s->ballast);
        s->ballast = NULL;
    }
    (void)xdev_empty_cache();
    void *tmp = NULL;
    s->extra_st = xdev_malloc_device(info->device, &tmp, MIB);
    if (s->extra_st == XDEV_SUCCESS) s->extra_st = xdev_free(tmp);
}

START_TEST(observer_allocates_and_frees) {
    set_cap(64 * MIB);
    seen_t s = {0};
    XT_OK(xdev_malloc_device(xt_dev(0), &s.ballast, 40 * MIB));
    XT_OK(xdev_memory_add_oom_observer(release_ballast, &s));
    void *p = NULL;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 40 * MIB),
           "tried to allocate 40.00 MiB");
    ck_assert_int_eq(s.calls, 1); /* the nested failure called no observer */
    ck_assert_int_eq(s.nested, XDEV_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(s.extra_st, XDEV_SUCCESS);
    ck_assert_ptr_null(s.ballast);
    /* The observer made room: the same request now succeeds. */
    XT_OK(xdev_malloc_device(xt_dev(0), &p, 40 * MIB));
    XT_OK(xdev_free(p));
    XT_OK(xdev_memory_remove_oom_observer(release_ballast, &s));
    ck_assert_int_eq(s.calls, 1);
}
END_TEST

/* The observer removes itself (from inside: no wait on its own call). */
static void remove_self(const xdev_oom_info_t *info, void *user) {
    (void)info;
    seen_t *s = user;
    s->calls++;
    s->extra_st = xdev_memory_remove_oom_observer(remove_self, user);
}

START_TEST(observer_removes_itself) {
    set_cap(64 * MIB);
    seen_t s = {0};
    XT_OK(xdev_memory_add_oom_observer(remove_self, &s));
    void *p = NULL;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 80 * MIB), "80.00 MiB");
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 80 * MIB), "80.00 MiB");
    ck_assert_int_eq(s.calls, 1);
    ck_assert_int_eq(s.extra_st, XDEV_SUCCESS);
}
END_TEST

static void noop(const xdev_oom_info_t *info, void *user) {
    (void)info;
    (void)user;
}

START_TEST(observer_bad_input) {
    int u[9];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_add_oom_observer(NULL, NULL), "fn");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_remove_oom_observer(NULL, NULL), "fn");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_remove_oom_observer(noop, &u[0]),
           "xdev_memory_remove_oom_observer", "not registered|no out-of-memory observer");
    XT_OK(xdev_memory_add_oom_observer(noop, &u[0]));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_add_oom_observer(noop, &u[0]),
           "xdev_memory_add_oom_observer", "already registered");
    for (int i = 1; i < 8; i++)
        XT_OK(xdev_memory_add_oom_observer(noop, &u[i]));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_add_oom_observer(noop, &u[8]), "8", "remove one");
    for (int i = 0; i < 8; i++)
        XT_OK(xdev_memory_remove_oom_observer(noop, &u[i]));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_remove_oom_observer(noop, &u[0]),
           "no out-of-memory observer");
}
END_TEST

/* ------------------------------------------------------------ XDEV_OOM_SNAPSHOT */

/* The path XDEV_OOM_SNAPSHOT names for this process. */
static void snapshot_path(char *out, size_t cap) {
    const char *t = getenv("XDEV_OOM_SNAPSHOT");
    ck_assert_ptr_nonnull(t);
    const char *pp = strstr(t, "%p");
    ck_assert_ptr_nonnull(pp);
    snprintf(out, cap, "%.*s%d%s", (int)(pp - t), t, (int)getpid(), pp + 2);
}

static bool file_size(const char *path, size_t *size) {
    struct stat st;
    if (stat(path, &st) != 0) return false;
    *size = (size_t)st.st_size;
    return true;
}

START_TEST(snapshot_written_at_first_oom) {
    char path[4096], html[4200];
    snapshot_path(path, sizeof path);
    snprintf(html, sizeof html, "%s.html", path);
    unlink(path);
    unlink(html);
    set_cap(64 * MIB);
    XT_OK(xdev_memory_record_history(xt_dev(0), true, 0));
    void *keep = NULL, *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &keep, 8 * MIB));
    size_t n = 0;
    ck_assert_msg(!file_size(path, &n), "%s exists before any out-of-memory", path);
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 60 * MIB), "60.00 MiB");
    ck_assert_msg(file_size(path, &n) && n > 0, "no snapshot at %s", path);
    ck_assert_msg(file_size(html, &n) && n > 0, "no page at %s", html);
    FILE *f = fopen(html, "rb");
    ck_assert_ptr_nonnull(f);
    char *text = calloc(1, n + 1);
    ck_assert_uint_eq(fread(text, 1, n, f), n);
    fclose(f);
    ck_assert_msg(strstr(text, "\"segments\"") != NULL, "the page holds no snapshot");
    ck_assert_msg(strstr(text, "\"oom\"") != NULL, "the page's history has no oom entry");
    free(text);
    const char *python = XT_PYTHON;
    if (python[0] != '\0') { /* loadable, with the segment of `keep` and the oom entry */
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %d 1 2", python, XT_CHECK_SNAPSHOT, path,
                 xt_dev(0).index);
        int rc = system(cmd);
        ck_assert_msg(rc == 0, "%s failed (%d)", cmd, rc);
    }
    /* Only the first out-of-memory of the process writes. */
    unlink(path);
    unlink(html);
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xt_dev(0), &p, 61 * MIB), "61.00 MiB");
    ck_assert_msg(!file_size(path, &n), "%s written again at the second out-of-memory", path);
    XT_OK(xdev_free(keep));
    if (python[0] == '\0') XT_SKIP("no Python 3 found at configure time: the pickle is not loaded");
}
END_TEST

static TCase *tc(const char *name) {
    TCase *t = tcase_create(name);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    return t;
}

int main(int argc, char **argv) {
    Suite *oom = suite_create("oom");
    TCase *t = tc("oom");
    tcase_add_test(t, message_fields);
    tcase_add_test(t, message_without_cap);
    tcase_add_test(t, observer_once_with_stats);
    tcase_add_test(t, observer_two_and_malloc_stream);
    tcase_add_test(t, observer_managed);
    tcase_add_test(t, pluggable_allocator_runs_out);
    tcase_add_test(t, observer_allocates_and_frees);
    tcase_add_test(t, observer_removes_itself);
    tcase_add_test(t, observer_bad_input);
    suite_add_tcase(oom, t);

    Suite *snap = suite_create("snapshot");
    t = tc("snapshot");
    tcase_add_test(t, snapshot_written_at_first_oom);
    suite_add_tcase(snap, t);

    SRunner *sr = srunner_create(oom);
    srunner_add_suite(sr, snap);
    return xt_run(sr, "oom", argc, argv);
}
