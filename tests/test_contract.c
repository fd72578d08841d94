/* SPDX-License-Identifier: Apache-2.0 */
/* test_contract.c - the library-wide contract of issue 16 (items 13, 15-17).
 *
 *   error_state     a successful call leaves the thread's error state as it
 *                   was: probing a missing backend (auto selection,
 *                   xdev_device_count, xdev_is_available, backend info) leaves
 *                   nothing behind, a real failure stays until cleared
 *   visible_empty   XDEV_VISIBLE_DEVICES="" hides the accelerators only: the
 *                   CPU stays usable and counting cuda gives 0 with success
 *   visible_cpu     XDEV_VISIBLE_DEVICES never renumbers the CPU devices
 *   env_messages    every malformed XDEV_* value is refused with a message
 *                   that lists exactly the accepted forms (each case in a
 *                   forked child: xdev reads the environment once)
 *   all_backends    with the fake cuda plugin and the CPU both loaded:
 *                   manual_seed_all / seed_all reach every device of every
 *                   backend, manual_seed only the current device of the
 *                   default type, xdev_synchronize waits for CPU streams too,
 *                   a NULL stream is the default type's current stream
 *
 * Each scenario is its own ctest entry with its own environment
 * (tests/contract.cmake). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xt.h"

/* The error state is exactly (status, message). */
static void expect_state(xdev_status_t status, const char *message, const char *after) {
    ck_assert_msg(xdev_last_status() == status && strcmp(xdev_last_error(), message) == 0,
                  "after %s: state %s \"%s\", expected %s \"%s\"", after,
                  xdev_status_string(xdev_last_status()), xdev_last_error(),
                  xdev_status_string(status), message);
}

/* ------------------------------------------------------------ item 13 */

/* The very first call may be xdev_backend_get_info, which initialises (and
 * under XDEV_BACKEND=auto probes cuda and hip) on this thread. */
START_TEST(error_state_clean_after_success) {
    xdev_clear_error();
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_HIP, &info));
    expect_state(XDEV_SUCCESS, "", "xdev_backend_get_info(hip) as the first call");
    XT_OK(xdev_init());
    expect_state(XDEV_SUCCESS, "", "xdev_init");

    static const xdev_device_type_t accel[] = {XDEV_DEVICE_CUDA, XDEV_DEVICE_HIP};
    for (size_t i = 0; i < 2; i++) {
        const char *name = xdev_device_type_name(accel[i]);
        int n = -1;
        xdev_clear_error();
        XT_OK(xdev_device_count(accel[i], &n));
        ck_assert_int_ge(n, 0);
        expect_state(XDEV_SUCCESS, "", xt_fmt("xdev_device_count(%s) = %d", name, n));
        (void)xdev_is_available(accel[i]);
        expect_state(XDEV_SUCCESS, "", xt_fmt("xdev_is_available(%s)", name));
        XT_OK(xdev_backend_get_info(accel[i], &info));
        expect_state(XDEV_SUCCESS, "", xt_fmt("xdev_backend_get_info(%s)", name));
        (void)xdev_device_peer_enabled((xdev_device_t){accel[i], 0}, (xdev_device_t){accel[i], 1});
        expect_state(XDEV_SUCCESS, "", xt_fmt("xdev_device_peer_enabled(%s)", name));
    }
    (void)xdev_launch_blocking();
    (void)xdev_device_peer_enabled(xdev_cpu(0), xdev_cpu(999));
    expect_state(XDEV_SUCCESS, "", "the bool queries");
    int n = 0;
    XT_OK(xdev_device_count(XDEV_DEVICE_CPU, &n));
    XT_OK(xdev_synchronize());
    expect_state(XDEV_SUCCESS, "", "xdev_synchronize");
}
END_TEST

/* A failure stays until cleared: later successful calls, probes included,
 * neither clear nor replace it. */
START_TEST(error_state_is_sticky) {
    XT_OK(xdev_init());
    xdev_clear_error();
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xdev_cpu(999)), "999");
    char first[2048];
    snprintf(first, sizeof first, "%s", xdev_last_error());
    int n = 0;
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    XT_OK(xdev_device_count(XDEV_DEVICE_HIP, &n));
    (void)xdev_is_available(XDEV_DEVICE_HIP);
    XT_OK(xdev_device_count(XDEV_DEVICE_CPU, &n));
    XT_OK(xdev_synchronize());
    expect_state(XDEV_ERROR_INVALID_DEVICE, first, "successful calls after a failure");
    xdev_clear_error();
    expect_state(XDEV_SUCCESS, "", "xdev_clear_error");
}
END_TEST

/* ------------------------------------------------------------ item 15 */

START_TEST(visible_empty_keeps_cpu) {
    const char *v = getenv("XDEV_VISIBLE_DEVICES");
    ck_assert_msg(v != NULL && v[0] == '\0', "XDEV_VISIBLE_DEVICES must be set and empty here");
    xdev_clear_error();
    XT_OK(xdev_init());
    xdev_device_type_t type;
    XT_OK(xdev_default_device_type(&type));
    ck_assert_int_eq(type, XDEV_DEVICE_CPU);
    int n = -1;
    XT_OK(xdev_device_count(XDEV_DEVICE_CPU, &n));
    ck_assert_int_eq(n, 2); /* XDEV_CPU_DEVICES=2, all of them */
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    ck_assert_int_eq(n, 0); /* the fake plugin's 2 devices are hidden */
    ck_assert(!xdev_is_available(XDEV_DEVICE_CUDA));
    expect_state(XDEV_SUCCESS, "", "counting hidden cuda devices");
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
    ck_assert_int_eq(info.device_count, 0);
    ck_assert_msg(info.reason && strstr(info.reason, "XDEV_VISIBLE_DEVICES"), "reason: %s",
                  info.reason ? info.reason : "(null)");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xdev_cuda(0)), "cuda:0");
    void *p = NULL;
    XT_OK(xdev_malloc_device(xdev_cpu(1), &p, 256));
    XT_OK(xdev_memset_async(p, 7, 256, NULL));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(visible_never_renumbers_cpu) {
    XT_OK(xdev_init());
    int n = -1;
    XT_OK(xdev_device_count(XDEV_DEVICE_CPU, &n));
    ck_assert_int_eq(n, 4); /* XDEV_CPU_DEVICES=4; XDEV_VISIBLE_DEVICES=3,1 ignored */
    for (int i = 0; i < n; i++) {
        xdev_device_properties_t p;
        XT_OK(xdev_get_device_properties(xdev_cpu(i), &p));
        ck_assert_int_eq(p.physical_index, i);
    }
}
END_TEST

/* ------------------------------------------------------------ item 16 */

typedef enum { VIA_INIT, VIA_TF32, VIA_RNG } via_t;

typedef struct env_case {
    const char *var, *value;
    via_t via;             /* the call that reads the variable */
    const char *extra_var; /* another variable the case needs, or NULL */
    const char *extra_value;
    const char *needles[10]; /* each accepted form, NULL-terminated */
} env_case_t;

#define BOOL_FORMS "1", "true", "yes", "on", "0", "false", "no", "off", "empty"
#define INDEX_FORMS "comma list", "distinct", "0..1048576", "at most 64", "2,0", "empty|no device"
#define BACKEND_FORMS "auto", "cuda", "hip", "cpu", "comma list", "cuda,cpu", "empty"

static const env_case_t k_env_cases[] = {
    {"XDEV_LAUNCH_BLOCKING", "maybe", VIA_INIT, NULL, NULL, {BOOL_FORMS}},
    {"XDEV_LAUNCH_BLOCKING", "2", VIA_INIT, NULL, NULL, {BOOL_FORMS}},
    {"XDEV_NO_MEMORY_CACHING", "enabled", VIA_INIT, NULL, NULL, {BOOL_FORMS}},
    {"XDEV_ALLOW_TF32", "maybe", VIA_TF32, NULL, NULL, {BOOL_FORMS}},
    {"XDEV_VISIBLE_DEVICES", "1,x", VIA_INIT, NULL, NULL, {INDEX_FORMS}},
    {"XDEV_VISIBLE_DEVICES", "0,0", VIA_INIT, NULL, NULL, {INDEX_FORMS}},
    {"XDEV_VISIBLE_DEVICES", "1,", VIA_INIT, NULL, NULL, {INDEX_FORMS}},
    {"XDEV_VISIBLE_DEVICES", "99999999", VIA_INIT, NULL, NULL, {INDEX_FORMS}},
    {"XDEV_VISIBLE_DEVICES", " 1", VIA_INIT, NULL, NULL, {INDEX_FORMS}},
    /* a well-formed unknown name is a plugin to look for (select.bogus); this is no name */
    {"XDEV_BACKEND", "cu-da", VIA_INIT, NULL, NULL, {BACKEND_FORMS}}, /* CUDA is cuda */
    {"XDEV_BACKEND", "cuda,auto", VIA_INIT, NULL, NULL, {BACKEND_FORMS}},
    {"XDEV_BACKEND", "cpu,cpu", VIA_INIT, NULL, NULL, {BACKEND_FORMS}},
    {"XDEV_BACKEND", "cuda,", VIA_INIT, NULL, NULL, {BACKEND_FORMS}},
    {"XDEV_CPU_DEVICES", "abc", VIA_INIT, "XDEV_BACKEND", "cpu", {"1..64"}},
    {"XDEV_CPU_DEVICES", "65", VIA_INIT, "XDEV_BACKEND", "cpu", {"1..64"}},
    {"XDEV_CPU_MEMORY", "lots", VIA_INIT, "XDEV_BACKEND", "cpu", {"positive", "K, M, G or T"}},
    {"XDEV_CPU_RNG_ISA", "avx9", VIA_RNG, "XDEV_BACKEND", "cpu", {"auto", "baseline", "empty"}},
    {"XDEV_CPU_SCAN_ISA",
     "avx9",
     VIA_INIT,
     "XDEV_BACKEND",
     "cpu",
     {"auto", "baseline", "avx2-cached", "empty"}},
};

/* In a forked child: set the variable, make the call that reads it, write
 * "<status>\n<message>" to fd. */
static void env_child(const env_case_t *c, int fd) {
    setenv(c->var, c->value, 1);
    if (c->extra_var) setenv(c->extra_var, c->extra_value, 1);
    xdev_status_t st = xdev_init();
    if (st == XDEV_SUCCESS && c->via == VIA_TF32) {
        bool on;
        st = xdev_blas_get_allow_tf32(&on);
    } else if (st == XDEV_SUCCESS && c->via == VIA_RNG) {
        void *p = NULL;
        st = xdev_malloc_device(xdev_cpu(0), &p, 64);
        if (st == XDEV_SUCCESS) st = xdev_rng_uniform(NULL, XDEV_DTYPE_F32, p, 16, NULL);
    }
    char out[2300];
    int len = snprintf(out, sizeof out, "%d\n%s", (int)st, xdev_last_error());
    if (len > (int)sizeof out - 1) len = (int)sizeof out - 1;
    ssize_t w = write(fd, out, (size_t)len);
    _exit(w == len ? 0 : 3);
}

START_TEST(env_messages_list_accepted_forms) {
    for (size_t i = 0; i < sizeof k_env_cases / sizeof k_env_cases[0]; i++) {
        const env_case_t *c = &k_env_cases[i];
        int fds[2];
        ck_assert_int_eq(pipe(fds), 0);
        fflush(NULL);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            close(fds[0]);
            env_child(c, fds[1]);
        }
        close(fds[1]);
        char buf[2400];
        size_t got = 0;
        for (;;) {
            ssize_t r = read(fds[0], buf + got, sizeof buf - 1 - got);
            if (r > 0) got += (size_t)r;
            if (r == 0 || got == sizeof buf - 1 || (r < 0 && errno != EINTR)) break;
        }
        buf[got] = '\0';
        close(fds[0]);
        int wst = 0;
        ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
        ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "%s='%s': the child failed", c->var,
                      c->value);
        char *msg = strchr(buf, '\n');
        ck_assert_ptr_nonnull(msg);
        *msg++ = '\0';
        int st = atoi(buf);
        printf("%s='%s': %s: %s\n", c->var, c->value, xdev_status_string(st), msg);
        ck_assert_msg(st == XDEV_ERROR_ENV, "%s='%s': %s, expected XDEV_ERROR_ENV: %s", c->var,
                      c->value, xdev_status_string(st), msg);
        ck_assert_msg(strstr(msg, c->var) && strstr(msg, xt_fmt("'%s'", c->value)),
                      "%s='%s': the message names neither the variable nor the value: %s", c->var,
                      c->value, msg);
        for (size_t k = 0; k < 10 && c->needles[k]; k++)
            ck_assert_msg(xt_icontains(msg, c->needles[k]),
                          "%s='%s': the message does not list the accepted form '%s': %s", c->var,
                          c->value, c->needles[k], msg);
        /* The old, wrong list: "expected 0 or 1" for a variable that takes 8 words. */
        ck_assert_msg(!strstr(msg, "expected 0 or 1)"), "%s='%s': %s", c->var, c->value, msg);
    }
}
END_TEST

/* ------------------------------------------------------------ item 17 */

static uint64_t seed_of(xdev_device_t d) {
    uint64_t s = 0;
    XT_OK(xdev_initial_seed(d, &s));
    return s;
}

static const xdev_device_t k_all_devices[] = {
    {XDEV_DEVICE_CPU, 0}, {XDEV_DEVICE_CPU, 1}, {XDEV_DEVICE_CUDA, 0}, {XDEV_DEVICE_CUDA, 1}};
#define N_ALL 4

START_TEST(seed_all_reaches_every_backend) {
    XT_OK(xdev_init());
    xdev_device_type_t type;
    XT_OK(xdev_default_device_type(&type));
    ck_assert_int_eq(type, XDEV_DEVICE_CUDA); /* the fake plugin */
    XT_OK(xdev_manual_seed_all(1234));
    for (int i = 0; i < N_ALL; i++)
        ck_assert_uint_eq(seed_of(k_all_devices[i]), 1234);

    /* manual_seed: the current device of the default type only (torch.cuda.manual_seed). */
    XT_OK(xdev_set_device(xdev_cuda(1)));
    XT_OK(xdev_manual_seed(77));
    ck_assert_uint_eq(seed_of(xdev_cuda(1)), 77);
    ck_assert_uint_eq(seed_of(xdev_cuda(0)), 1234);
    ck_assert_uint_eq(seed_of(xdev_cpu(0)), 1234);
    ck_assert_uint_eq(seed_of(xdev_cpu(1)), 1234);
    XT_OK(xdev_set_device(xdev_cuda(0)));

    /* seed_all: one non-deterministic seed, everywhere. */
    XT_OK(xdev_seed_all());
    uint64_t s = seed_of(xdev_cpu(0));
    for (int i = 0; i < N_ALL; i++)
        ck_assert_uint_eq(seed_of(k_all_devices[i]), s);

    /* get_rng_state_all covers the default type (2 fake cuda devices). */
    size_t count = 0;
    XT_OK(xdev_get_rng_state_all(NULL, 0, &count));
    ck_assert_uint_eq(count, 2);
}
END_TEST

START_TEST(synchronize_waits_for_every_backend) {
    XT_OK(xdev_init());
    xdev_device_type_t type;
    XT_OK(xdev_default_device_type(&type));
    ck_assert_int_eq(type, XDEV_DEVICE_CUDA);
    xdev_stream_t s;
    XT_OK(xdev_stream_create(xdev_cpu(1), XDEV_STREAM_PRIORITY_NORMAL, &s));
    atomic_int done = 0;
    xt_sleep_task_t nap = {300, &done};
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &nap));
    atomic_int on_default = 0;
    xt_sleep_task_t nap0 = {200, &on_default};
    XT_OK(xdev_launch_host_func(NULL, xt_sleep_fn, &nap0)); /* cuda:0: runs at enqueue */
    ck_assert_int_eq(atomic_load(&on_default), 1);
    ck_assert_int_eq(atomic_load(&done), 0);
    XT_OK(xdev_synchronize());
    ck_assert_msg(atomic_load(&done) == 1,
                  "xdev_synchronize returned before the work queued on cpu:1 finished");
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* A NULL stream means the current stream of the current device of the
 * default type: here fake cuda, whose host functions run at enqueue, so it
 * does not wait behind a blocked CPU stream. */
START_TEST(null_stream_is_default_type) {
    XT_OK(xdev_init());
    xt_gate_t gate;
    xt_gate_init(&gate);
    xdev_stream_t cpu0;
    XT_OK(xdev_stream_current(xdev_cpu(0), &cpu0));
    XT_OK(xdev_launch_host_func(cpu0, xt_gate_wait_fn, &gate));
    ck_assert(xt_gate_wait_entered(&gate, 5000));
    atomic_int flag = 0;
    XT_OK(xdev_launch_host_func(NULL, xt_flag_fn, &flag));
    ck_assert_int_eq(atomic_load(&flag), 1);
    xt_gate_open(&gate);
    XT_OK(xdev_synchronize());
    xt_gate_destroy(&gate);
}
END_TEST

/* ------------------------------------------------------------ main */

typedef struct scenario {
    const char *name;
    const TTest *tests[3];
} scenario_t;

int main(int argc, char **argv) {
    const scenario_t scenarios[] = {
        {"error_state", {error_state_clean_after_success, error_state_is_sticky, NULL}},
        {"visible_empty", {visible_empty_keeps_cpu, NULL, NULL}},
        {"visible_cpu", {visible_never_renumbers_cpu, NULL, NULL}},
        {"env_messages", {env_messages_list_accepted_forms, NULL, NULL}},
        {"all_backends",
         {seed_all_reaches_every_backend, synchronize_waits_for_every_backend,
          null_stream_is_default_type}},
    };
    if (argc < 2) {
        fprintf(stderr, "usage: %s <scenario>\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(scenarios[i].name, argv[1]) != 0) continue;
        Suite *s = suite_create(scenarios[i].name);
        TCase *tc = tcase_create(scenarios[i].name);
        tcase_set_timeout(tc, 120);
        for (int k = 0; k < 3 && scenarios[i].tests[k]; k++)
            tcase_add_test(tc, scenarios[i].tests[k]);
        suite_add_tcase(s, tc);
        return xt_run(srunner_create(s), scenarios[i].name, 2, argv);
    }
    fprintf(stderr, "unknown scenario '%s'\n", argv[1]);
    return 2;
}
