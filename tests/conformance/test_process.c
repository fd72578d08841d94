/* SPDX-License-Identifier: Apache-2.0 */
/* test_process.c - xdev across fork() and at process exit (issue 16, items
 * 11 and 12; behaviour in core/runtime/process.h and include/xdev/runtime.h).
 *
 * fork: after xdev initialised, every call in a forked child must come back
 * promptly with XDEV_ERROR_BACKEND_UNAVAILABLE naming fork - also while other
 * parent threads were inside the allocator at the moment of the fork (their
 * locks stay held in the child). A child forked before initialisation uses
 * xdev normally. Each child runs under a deadline: a hang fails the test.
 *
 * exit: tests/process/exit_helper leaves GEMMs queued on several streams and
 * returns from main, calls exit(), pthread_exit() or exits inside a host
 * function or while other threads churn streams; every run must end with
 * status 0 within a deadline. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xt.h"

#define CHILD_DEADLINE_MS 10000

static void setup(void) {
    xt_reset_state();
}

/* Wait for pid at most ms; kill it on timeout. Returns its wait status, or
 * -1 on timeout. */
static int wait_deadline(pid_t pid, int ms) {
    double t0 = xt_now_ms();
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -2;
        if (xt_now_ms() - t0 > ms) {
            kill(pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            return -1;
        }
        xt_sleep_ms(2);
    }
}

/* Run fn in a forked child; it reports through its exit code (0 = pass, any
 * other = the number of the failed check). */
static void run_forked(const char *what, int (*fn)(void *), void *arg) {
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(CHILD_DEADLINE_MS / 1000 + 5); /* belt and braces */
        _exit(fn(arg));
    }
    int status = wait_deadline(pid, CHILD_DEADLINE_MS);
    ck_assert_msg(status != -1, "%s: the forked child hung (killed after %d ms)", what,
                  CHILD_DEADLINE_MS);
    ck_assert_msg(status >= 0 && WIFEXITED(status), "%s: the forked child died (signal %d)", what,
                  status >= 0 && WIFSIGNALED(status) ? WTERMSIG(status) : -1);
    ck_assert_msg(WEXITSTATUS(status) == 0, "%s: check %d failed in the child", what,
                  WEXITSTATUS(status));
}

/* In a child: the call must fail with BACKEND_UNAVAILABLE naming fork. */
static bool refused(xdev_status_t st) {
    if (st != XDEV_ERROR_BACKEND_UNAVAILABLE) {
        fprintf(stderr, "child: expected XDEV_ERROR_BACKEND_UNAVAILABLE, got %s: %s\n",
                xdev_status_string(st), xdev_last_error());
        return false;
    }
    if (!xt_icontains(xdev_last_error(), "fork")) {
        fprintf(stderr, "child: the message does not mention fork: %s\n", xdev_last_error());
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ fork after init */

typedef struct parent_state {
    xdev_stream_t s; /* a stream whose worker runs in the parent */
    xdev_event_t e;
    void *dev;
    void *pinned;
    xdev_generator_t gen;
} parent_state_t;

static void noop(void *u) {
    (void)u;
}

static int child_after_init(void *arg) {
    parent_state_t *p = arg;
    char host[64];
    void *q = NULL;
    int n = 0;
    xdev_memory_stats_t ms;
    xdev_host_memory_stats_t hs;
    xdev_device_t d;
    xdev_backend_info_t info;
    bool flag;
    uint64_t u;
    int check = 0;
#define EXPECT_REFUSED(call)                                                                       \
    do {                                                                                           \
        check++;                                                                                   \
        if (!refused(call)) {                                                                      \
            fprintf(stderr, "child check %d: %s\n", check, #call);                                 \
            return check;                                                                          \
        }                                                                                          \
    } while (0)
    EXPECT_REFUSED(xdev_launch_host_func(p->s, noop, NULL));
    EXPECT_REFUSED(xdev_stream_synchronize(p->s));
    EXPECT_REFUSED(xdev_memcpy(host, p->dev, sizeof host));
    EXPECT_REFUSED(xdev_memcpy_async(p->dev, host, sizeof host, p->s));
    EXPECT_REFUSED(xdev_memset_async(p->dev, 0, sizeof host, NULL));
    EXPECT_REFUSED(xdev_stream_destroy(p->s));
    EXPECT_REFUSED(xdev_event_record(p->e, p->s));
    EXPECT_REFUSED(xdev_event_synchronize(p->e));
    EXPECT_REFUSED(xdev_malloc(&q, 64));
    EXPECT_REFUSED(xdev_free(p->dev));
    EXPECT_REFUSED(xdev_host_alloc(&q, 64));
    EXPECT_REFUSED(xdev_host_free(p->pinned));
    EXPECT_REFUSED(xdev_host_memory_stats(&hs));
    EXPECT_REFUSED(xdev_empty_cache());
    EXPECT_REFUSED(xdev_synchronize());
    EXPECT_REFUSED(xdev_device_synchronize(xt_dev(0)));
    EXPECT_REFUSED(xdev_device_count(xt_type(), &n));
    EXPECT_REFUSED(xdev_memory_stats(xt_dev(0), &ms));
    EXPECT_REFUSED(xdev_device_of(p->dev, &d));
    EXPECT_REFUSED(xdev_manual_seed(1));
    EXPECT_REFUSED(xdev_manual_seed_all(1));
    EXPECT_REFUSED(xdev_generator_get_offset(p->gen, &u));
    EXPECT_REFUSED(xdev_rng_uniform(p->gen, XDEV_DTYPE_F32, p->dev, 16, p->s));
    EXPECT_REFUSED(xdev_blas_get_allow_tf32(&flag));
    EXPECT_REFUSED(xdev_ipc_collect());
    EXPECT_REFUSED(xdev_get_device_index(xt_type(), &n));
    EXPECT_REFUSED(xdev_backend_get_info(xt_type(), &info));
    EXPECT_REFUSED(xdev_init());
#undef EXPECT_REFUSED
    return 0;
}

START_TEST(fork_after_init_refuses) {
    parent_state_t p;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &p.s));
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &p.e));
    XT_OK(xdev_malloc_device(xt_dev(0), &p.dev, 4096));
    XT_OK(xdev_host_alloc(&p.pinned, 4096));
    XT_OK(xdev_generator_create(xt_dev(0), 1, &p.gen));
    /* the stream's worker exists in the parent: work ran on it */
    XT_OK(xdev_launch_host_func(p.s, noop, NULL));
    XT_OK(xdev_memset_async(p.dev, 1, 4096, p.s));
    XT_OK(xdev_stream_synchronize(p.s));
    run_forked("every call after fork", child_after_init, &p);
    /* the parent is unaffected */
    XT_OK(xdev_launch_host_func(p.s, noop, NULL));
    XT_OK(xdev_stream_synchronize(p.s));
    XT_OK(xdev_free(p.dev));
    XT_OK(xdev_host_free(p.pinned));
    XT_OK(xdev_generator_destroy(p.gen));
    XT_OK(xdev_event_destroy(p.e));
    XT_OK(xdev_stream_destroy(p.s));
}
END_TEST

/* Parent threads allocate and free as fast as they can while the test
 * forks: the child often starts with an allocator lock held for ever. */
typedef struct churn {
    atomic_bool stop;
    atomic_int rounds;
} churn_t;

static void *churn_main(void *arg) {
    churn_t *c = arg;
    while (!atomic_load(&c->stop)) {
        void *p = NULL;
        if (xdev_malloc(&p, 4096) == XDEV_SUCCESS) (void)xdev_free(p);
        void *h = NULL;
        if (xdev_host_alloc(&h, 4096) == XDEV_SUCCESS) (void)xdev_host_free(h);
        atomic_fetch_add(&c->rounds, 1);
    }
    return NULL;
}

static int child_allocates(void *arg) {
    (void)arg;
    void *p = NULL;
    if (!refused(xdev_malloc(&p, 4096))) return 1;
    if (!refused(xdev_host_alloc(&p, 4096))) return 2;
    xdev_memory_stats_t ms;
    if (!refused(xdev_memory_stats(xt_dev(0), &ms))) return 3;
    return 0;
}

START_TEST(fork_while_parent_threads_allocate) {
    enum { THREADS = 3 };
    churn_t c;
    atomic_init(&c.stop, false);
    atomic_init(&c.rounds, 0);
    XT_OK(xdev_init());
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, churn_main, &c), 0);
    while (atomic_load(&c.rounds) < 100)
        xt_sleep_ms(1);
    int forks = xt_iters(40, 8);
    for (int i = 0; i < forks; i++)
        run_forked("xdev_malloc while parent threads allocate", child_allocates, NULL);
    atomic_store(&c.stop, true);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
}
END_TEST

/* ------------------------------------------------------------ fork before init */

static int child_fresh(void *arg) {
    (void)arg;
    void *p = NULL;
    char in[256], out[256];
    memset(in, 7, sizeof in);
    if (xdev_malloc(&p, sizeof in) != XDEV_SUCCESS) return 1;
    if (xdev_memcpy(p, in, sizeof in) != XDEV_SUCCESS) return 2;
    if (xdev_memcpy(out, p, sizeof out) != XDEV_SUCCESS) return 3;
    if (memcmp(in, out, sizeof in) != 0) return 4;
    xdev_stream_t s;
    if (xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s) != XDEV_SUCCESS) return 5;
    if (xdev_launch_host_func(s, noop, NULL) != XDEV_SUCCESS) return 6;
    if (xdev_stream_synchronize(s) != XDEV_SUCCESS) return 7;
    if (xdev_stream_destroy(s) != XDEV_SUCCESS) return 8;
    if (xdev_free(p) != XDEV_SUCCESS) return 9;
    /* This child owns a live runtime (the default stream's worker runs): it
     * ends through exit(), whose library destructor stops that worker. */
    exit(0);
}

START_TEST(fork_before_init_works) {
    /* Check's runner process has not initialised xdev, and neither has
     * this test's process: its child starts xdev from scratch. */
    run_forked("a child forked before xdev initialised", child_fresh, NULL);
    XT_OK(xdev_init()); /* and the parent can still start it */
}
END_TEST

/* ------------------------------------------------------------ exit */

/* Run the helper `runs` times in `mode`; each must exit 0 within 20 s. */
static void run_helper(const char *mode, int runs) {
    const char *helper = getenv("XT_EXIT_HELPER");
    ck_assert_msg(helper && *helper, "XT_EXIT_HELPER is not set");
    for (int i = 0; i < runs; i++) {
        fflush(NULL);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            /* OpenBLAS (pthread build) starts a thread pool when it is loaded,
             * which by itself keeps a process alive after pthread_exit() from
             * main; with one thread it starts none, leaving xdev's workers as
             * the only other threads. */
            if (strcmp(mode, "pthread_exit") == 0) setenv("OPENBLAS_NUM_THREADS", "1", 1);
            /* The helper leaves its allocations to the exit on purpose. */
            char asan[512];
            const char *prev = getenv("ASAN_OPTIONS");
            snprintf(asan, sizeof asan, "%s%sdetect_leaks=0", prev ? prev : "",
                     prev && *prev ? ":" : "");
            setenv("ASAN_OPTIONS", asan, 1);
            execl(helper, helper, mode, (char *)NULL);
            _exit(127);
        }
        int status = wait_deadline(pid, 20000);
        ck_assert_msg(status != -1, "%s run %d: the process did not end within 20 s", mode, i);
        ck_assert_msg(status >= 0 && WIFEXITED(status), "%s run %d: killed by signal %d", mode, i,
                      status >= 0 && WIFSIGNALED(status) ? WTERMSIG(status) : -1);
        ck_assert_msg(WEXITSTATUS(status) == 0, "%s run %d: exit status %d", mode, i,
                      WEXITSTATUS(status));
    }
}

START_TEST(exit_return_from_main) {
    run_helper("return", xt_iters(40, 4));
}
END_TEST

START_TEST(exit_call) {
    run_helper("exit", xt_iters(40, 4));
}
END_TEST

/* xdev's idle workers retire, so the process ends about a second after
 * the last work. Run with OPENBLAS_NUM_THREADS=1 (see run_helper): the
 * pthread OpenBLAS's own pool keeps any process alive after pthread_exit()
 * from main, xdev or not (docs/semantics.md, "Processes"). */
START_TEST(exit_pthread_exit_from_main) {
#if defined(__SANITIZE_THREAD__)
    /* TSan's runtime thread keeps the process alive after main's pthread_exit. */
    fprintf(stderr, "SKIP exit_pthread_exit_from_main: under ThreadSanitizer its own background "
                    "thread keeps a process alive after pthread_exit() from main\n");
    return;
#endif
    run_helper("pthread_exit", xt_iters(10, 2));
}
END_TEST

/* exit() while other threads create, use, synchronize and destroy streams. */
START_TEST(exit_while_threads_busy) {
    run_helper("exit_busy", xt_iters(40, 4));
}
END_TEST

START_TEST(exit_inside_host_function) {
    run_helper("host_fn_exit", xt_iters(20, 2));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("process");
    TCase *f = tcase_create("fork");
    tcase_add_checked_fixture(f, setup, NULL);
    tcase_set_timeout(f, 120);
    tcase_add_test(f, fork_after_init_refuses);
    tcase_add_test(f, fork_while_parent_threads_allocate);
    suite_add_tcase(s, f);
    TCase *fresh = tcase_create("fork_fresh"); /* no fixture: it would initialise xdev */
    tcase_set_timeout(fresh, 120);
    tcase_add_test(fresh, fork_before_init_works);
    suite_add_tcase(s, fresh);
    TCase *x = tcase_create("exit");
    tcase_set_timeout(x, 600);
    tcase_add_test(x, exit_return_from_main);
    tcase_add_test(x, exit_call);
    tcase_add_test(x, exit_pthread_exit_from_main);
    tcase_add_test(x, exit_inside_host_function);
    tcase_add_test(x, exit_while_threads_busy);
    suite_add_tcase(s, x);
    return xt_run(srunner_create(s), "process", argc, argv);
}
