/* SPDX-License-Identifier: Apache-2.0 */
/* test_errors.c - status strings and the thread-local last error.
 * Conformance: runs on the backend XDEV_BACKEND selects (xt_type()). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "xdev/backend.h"
#include "xt.h"

static const struct {
    xdev_status_t status;
    const char *name;
} k_statuses[] = {
    {XDEV_SUCCESS, "XDEV_SUCCESS"},
    {XDEV_ERROR_INVALID_VALUE, "XDEV_ERROR_INVALID_VALUE"},
    {XDEV_ERROR_INVALID_DEVICE, "XDEV_ERROR_INVALID_DEVICE"},
    {XDEV_ERROR_INVALID_HANDLE, "XDEV_ERROR_INVALID_HANDLE"},
    {XDEV_ERROR_OUT_OF_MEMORY, "XDEV_ERROR_OUT_OF_MEMORY"},
    {XDEV_ERROR_NOT_SUPPORTED, "XDEV_ERROR_NOT_SUPPORTED"},
    {XDEV_ERROR_NOT_READY, "XDEV_ERROR_NOT_READY"},
    {XDEV_ERROR_CROSS_DEVICE, "XDEV_ERROR_CROSS_DEVICE"},
    {XDEV_ERROR_BACKEND_UNAVAILABLE, "XDEV_ERROR_BACKEND_UNAVAILABLE"},
    {XDEV_ERROR_BACKEND, "XDEV_ERROR_BACKEND"},
    {XDEV_ERROR_ENV, "XDEV_ERROR_ENV"},
    {XDEV_ERROR_INTERNAL, "XDEV_ERROR_INTERNAL"},
    {XDEV_ERROR_IO, "XDEV_ERROR_IO"},
    {XDEV_ERROR_NOT_FOUND, "XDEV_ERROR_NOT_FOUND"},
    {XDEV_ERROR_LAUNCH_FAILURE, "XDEV_ERROR_LAUNCH_FAILURE"},
    {XDEV_ERROR_COMPILE, "XDEV_ERROR_COMPILE"},
    {XDEV_ERROR_CAPTURE, "XDEV_ERROR_CAPTURE"},
    {XDEV_ERROR_SYNC_DEBUG, "XDEV_ERROR_SYNC_DEBUG"},
};
#define N_STATUSES (sizeof k_statuses / sizeof k_statuses[0])

START_TEST(status_string_every_code) {
    for (size_t i = 0; i < N_STATUSES; i++) {
        const char *s = xdev_status_string(k_statuses[i].status);
        ck_assert_ptr_nonnull(s);
        ck_assert_str_eq(s, k_statuses[i].name);
        ck_assert_int_eq((int)k_statuses[i].status, (int)i);
    }
}
END_TEST

START_TEST(status_string_unknown_code) {
    const char *s = xdev_status_string((xdev_status_t)999);
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(s[0] != '\0', "unknown status gives an empty string");
    for (size_t i = 0; i < N_STATUSES; i++)
        ck_assert_msg(strcmp(s, k_statuses[i].name) != 0, "status 999 named %s", s);
    ck_assert_ptr_nonnull(xdev_status_string((xdev_status_t)-1));
}
END_TEST

START_TEST(last_error_set_and_clear) {
    xdev_clear_error();
    ck_assert_str_eq(xdev_last_error(), "");
    ck_assert_int_eq(xdev_last_status(), XDEV_SUCCESS);

    xdev_device_t d;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse(NULL, &d), "name");

    /* A later successful call does not erase the last failure's record. */
    int count = 0;
    XT_OK(xdev_device_count(xt_type(), &count));
    ck_assert_int_eq(xdev_last_status(), XDEV_ERROR_INVALID_VALUE);
    ck_assert_msg(xdev_last_error()[0] != '\0', "a successful call erased the last error");

    /* A second failure replaces the first. */
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xt_dev(1000)), "1000");
    ck_assert_int_eq(xdev_last_status(), XDEV_ERROR_INVALID_DEVICE);

    xdev_clear_error();
    ck_assert_str_eq(xdev_last_error(), "");
    ck_assert_int_eq(xdev_last_status(), XDEV_SUCCESS);
}
END_TEST

typedef struct {
    char seen_before[256];
    xdev_status_t status_before;
    xdev_status_t status_after;
    char seen_after[256];
} thread_view_t;

static void *other_thread(void *arg) {
    thread_view_t *v = arg;
    snprintf(v->seen_before, sizeof v->seen_before, "%s", xdev_last_error());
    v->status_before = xdev_last_status();
    xdev_stream_t s;
    (void)xdev_stream_create(xt_dev(0), 5, &s); /* bad priority: INVALID_VALUE */
    v->status_after = xdev_last_status();
    snprintf(v->seen_after, sizeof v->seen_after, "%s", xdev_last_error());
    return NULL;
}

START_TEST(last_error_is_thread_local) {
    xdev_device_t d;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_parse("gpu:0", &d), "gpu:0");
    char mine[512];
    snprintf(mine, sizeof mine, "%s", xdev_last_error());

    thread_view_t v;
    memset(&v, 0, sizeof v);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, other_thread, &v), 0);
    pthread_join(t, NULL);

    ck_assert_msg(v.seen_before[0] == '\0', "new thread sees another thread's error: \"%s\"",
                  v.seen_before);
    ck_assert_int_eq(v.status_before, XDEV_SUCCESS);
    ck_assert_int_eq(v.status_after, XDEV_ERROR_INVALID_VALUE);
    ck_assert_msg(v.seen_after[0] != '\0', "thread's own error message is empty");

    /* This thread's error is untouched by the other thread's failure. */
    ck_assert_int_eq(xdev_last_status(), XDEV_ERROR_INVALID_VALUE);
    ck_assert_str_eq(xdev_last_error(), mine);
}
END_TEST

START_TEST(version_string) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", XDEV_VERSION_MAJOR, XDEV_VERSION_MINOR,
             XDEV_VERSION_PATCH);
    ck_assert_ptr_nonnull(xdev_version_string());
    ck_assert_str_eq(xdev_version_string(), want);
}
END_TEST

START_TEST(init_idempotent) {
    XT_OK(xdev_init());
    XT_OK(xdev_init());
    ck_assert(!xdev_launch_blocking());
}
END_TEST

START_TEST(null_out_params_runtime) {
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_backend_get_info(xt_type(), NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_default_device_type(NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_count(xt_type(), NULL), "count");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_device(NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_device_index(xt_type(), NULL), "index");
}
END_TEST

/* The backend under test (on the CPU, XDEV_CPU_DEVICES=4 under ctest). */
START_TEST(backend_info_default) {
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(xt_type(), &info));
    ck_assert_int_eq(info.type, xt_type());
    ck_assert_str_eq(info.name, xt_type_name());
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
    ck_assert_ptr_nonnull(info.path);
    if (xt_type() == XDEV_DEVICE_CPU) {
        ck_assert_str_eq(info.path, "built-in");
        if (xt_cpu_devices_env() >= 0) ck_assert_int_eq(info.device_count, xt_cpu_devices_env());
    } else {
        char file[64];
        snprintf(file, sizeof file, "libxdev-%s.so", xt_type_name());
        ck_assert_msg(strstr(info.path, file) != NULL, "plugin path \"%s\" does not name %s",
                      info.path, file);
        ck_assert_int_ge(info.device_count, 1);
    }
    ck_assert_int_eq(info.device_count, xt_device_count());
    ck_assert_uint_eq(info.abi_major, XDEV_BACKEND_ABI_MAJOR);
    ck_assert_uint_eq(info.abi_minor, XDEV_BACKEND_ABI_MINOR);
    ck_assert(info.is_default);
    XT_ERR(XT_BAD_TYPE, xdev_backend_get_info((xdev_device_type_t)17, &info), "17|type");
}
END_TEST

static Suite *errors_suite(void) {
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("errors");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, status_string_every_code);
    tcase_add_test(tc, status_string_unknown_code);
    tcase_add_test(tc, last_error_set_and_clear);
    tcase_add_test(tc, last_error_is_thread_local);
    tcase_add_test(tc, version_string);
    tcase_add_test(tc, init_idempotent);
    tcase_add_test(tc, null_out_params_runtime);
    tcase_add_test(tc, backend_info_default);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) {
    return xt_run(srunner_create(errors_suite()), "errors", argc, argv);
}
