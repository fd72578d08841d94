/* SPDX-License-Identifier: Apache-2.0 */
/* test_snapshot_torch.c - xdev_memory_snapshot_torch: the pickled snapshot
 * PyTorch's memory viewer reads. Allocates, frees and records history on the
 * backend under test, then has Python's pickle load the bytes and check the
 * structure (check_torch_snapshot.py; skipped, with the reason, where no
 * Python 3 was found at configure time); a managed allocation among them
 * (segment_type "managed") where the backend has managed memory.
 * XT_KEEP_SNAPSHOT=<path> keeps the
 * file (tests/gpu/run.sh hands it to torch.cuda._memory_viz). Conformance:
 * XDEV_BACKEND=<backend under test>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xt.h"

static void *take(size_t *size) {
    void *data = NULL;
    XT_OK(xdev_memory_snapshot_torch(xt_type(), &data, size));
    ck_assert_ptr_nonnull(data);
    return data;
}

START_TEST(pickle_loads_in_python) {
    XT_OK(xdev_memory_record_history(xt_dev(0), true, 0));
    void *p[6];
    const size_t sizes[6] = {512, 4096, 1 << 20, 3 << 20, 12345, 64};
    for (int i = 0; i < 6; i++)
        XT_OK(xdev_malloc_device(xt_dev(0), &p[i], sizes[i]));
    XT_OK(xdev_free(p[1]));
    XT_OK(xdev_free(p[4]));
    /* a managed allocation, its own "managed" segment (where the backend has managed memory) */
    void *managed = NULL;
    if (xdev_malloc_managed(xt_dev(0), &managed, 8192, 0) != XDEV_SUCCESS) {
        managed = NULL;
        xdev_clear_error();
    }
    size_t size = 0;
    unsigned char *data = take(&size);
    ck_assert_uint_gt(size, 16);
    ck_assert_msg(data[0] == 0x80 && data[1] == 2, "no pickle protocol 2 header");
    ck_assert_msg(data[size - 1] == '.', "the pickle does not end with STOP");

    const char *keep = getenv("XT_KEEP_SNAPSHOT");
    char path[4096];
    if (keep && *keep) {
        snprintf(path, sizeof path, "%s", keep);
    } else {
        snprintf(path, sizeof path, "/tmp/xt-snapshot-%d.pickle", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(data, 1, size, f), size);
    fclose(f);
    free(data);

    const char *python = XT_PYTHON;
    if (python[0] == '\0') {
        if (!keep) unlink(path);
        XT_SKIP("no Python 3 found at configure time: the pickle is not loaded");
    }
    /* 6 allocations (+2 frees) in the history; at least one segment. */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' 0 1 8", python, XT_CHECK_SNAPSHOT, path);
    int rc = system(cmd);
    if (!keep) unlink(path);
    ck_assert_msg(rc == 0, "%s failed (%d)", cmd, rc);
    for (int i = 0; i < 6; i++)
        if (i != 1 && i != 4) XT_OK(xdev_free(p[i]));
    if (managed != NULL) XT_OK(xdev_free(managed));
}
END_TEST

START_TEST(bad_input) {
    void *data = (void *)1;
    size_t size = 1;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_snapshot_torch(xt_type(), NULL, &size), "data");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_memory_snapshot_torch(xt_type(), &data, NULL), "size");
    XT_ERR(XT_BAD_TYPE, xdev_memory_snapshot_torch((xdev_device_type_t)77, &data, &size), "77");
    ck_assert_ptr_null(data);
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("snapshot_torch");
    TCase *tc = tcase_create("snapshot_torch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pickle_loads_in_python);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "snapshot_torch", argc, argv);
}
