/* SPDX-License-Identifier: Apache-2.0 */
/* test_rendezvous.c - xdev_communicator_init_env: ranks started by a
 * launcher find each other from its variables alone.
 *
 * Each test plays a launcher: it forks the ranks, each with the variables
 * torchrun, Open MPI's mpirun or Slurm's srun would set, and each child
 * makes its communicator with xdev_communicator_init_env on the CPU backend,
 * sums its rank + 1 with xdev_all_reduce and checks the total. Rank 0 is
 * started last, so the others must retry until it listens. Failures: a
 * rank that never comes (every other rank fails within XDEV_COMM_TIMEOUT
 * with a message naming it), ranks that disagree on the world size, and
 * malformed or missing variables. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xdev/xdev.h"
#include "xt.h"

static const char *const k_launcher_vars[] = {"RANK",
                                              "WORLD_SIZE",
                                              "LOCAL_RANK",
                                              "LOCAL_WORLD_SIZE",
                                              "MASTER_ADDR",
                                              "MASTER_PORT",
                                              "OMPI_COMM_WORLD_RANK",
                                              "OMPI_COMM_WORLD_SIZE",
                                              "OMPI_COMM_WORLD_LOCAL_RANK",
                                              "OMPI_COMM_WORLD_LOCAL_SIZE",
                                              "OMPI_MCA_ess_base_jobid",
                                              "PMI_RANK",
                                              "PMI_SIZE",
                                              "SLURM_PROCID",
                                              "SLURM_NTASKS",
                                              "SLURM_LOCALID",
                                              "SLURM_STEP_ID",
                                              "TORCHELASTIC_RUN_ID",
                                              "PMIX_NAMESPACE",
                                              "PMI_JOBID",
                                              "MPI_LOCALRANKID",
                                              "MPI_LOCALNRANKS",
                                              "SLURM_JOB_ID",
                                              "SLURM_STEP_NUM_NODES",
                                              "SLURM_NNODES"};

static void clear_launcher_env(void) {
    for (size_t i = 0; i < sizeof k_launcher_vars / sizeof k_launcher_vars[0]; i++)
        unsetenv(k_launcher_vars[i]);
}

/* A TCP port free right now (the kernel's choice). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* What a rank reports back to the launcher. */
typedef struct outcome {
    xdev_status_t init; /* xdev_communicator_init_env */
    int sum_ok;         /* the all_reduce gave 1 + 2 + ... + world */
    int rank, size;     /* as the communicator says */
    char message[400];
} outcome_t;

/* The environment of rank r: NAME=VALUE strings, "%d" replaced by r. */
typedef struct spawn {
    const char *vars[12];
    int world; /* ranks that sum; 0: init is expected to fail */
} spawn_t;

static void rank_main(int r, const spawn_t *sp, int fd) {
    clear_launcher_env();
    for (int i = 0; sp->vars[i] != NULL; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, sp->vars[i], r);
        char *eq = strchr(buf, '=');
        *eq = '\0';
        setenv(buf, eq + 1, 1);
    }
    outcome_t o = {0};
    xdev_communicator_t c = NULL;
    o.init = xdev_communicator_init_env(&c, XDEV_DEVICE_CPU);
    snprintf(o.message, sizeof o.message, "%s", xdev_last_error());
    if (o.init == XDEV_SUCCESS) {
        (void)xdev_communicator_rank(c, &o.rank);
        (void)xdev_communicator_size(c, &o.size);
        xdev_device_t dev;
        int64_t *d = NULL, h = r + 1;
        if (xdev_communicator_device(c, &dev) == XDEV_SUCCESS &&
            xdev_malloc_device(dev, (void **)&d, sizeof h) == XDEV_SUCCESS &&
            xdev_memcpy(d, &h, sizeof h) == XDEV_SUCCESS &&
            xdev_all_reduce(c, d, d, 1, XDEV_DTYPE_I64, XDEV_REDUCE_SUM, NULL) == XDEV_SUCCESS &&
            xdev_memcpy(&h, d, sizeof h) == XDEV_SUCCESS)
            o.sum_ok = h == (int64_t)o.size * (o.size + 1) / 2;
        (void)xdev_free(d);
        (void)xdev_communicator_destroy(c);
    }
    if (write(fd, &o, sizeof o) != (ssize_t)sizeof o) _exit(3);
    exit(0); /* not _exit: xdev's exit handler stops its worker threads (ThreadSanitizer) */
}

/* Start ranks 0..n-1, rank r with the environment sp[r] (rank 0 last,
 * after a pause), and collect their outcomes. */
static void launch_each(const spawn_t *const *sp, int n, outcome_t *out) {
    int fds[16][2];
    pid_t pids[16];
    ck_assert_int_le(n, 16);
    for (int k = 0; k < n; k++) {
        int r = (k + 1) % n; /* 1, 2, ..., n-1, then 0 */
        ck_assert_int_eq(pipe(fds[r]), 0);
        if (r == 0 && n > 1) xt_sleep_ms(300);
        fflush(NULL); /* a rank exits through exit(): nothing buffered twice */
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0) {
            close(fds[r][0]);
            rank_main(r, sp[r], fds[r][1]);
        }
        close(fds[r][1]);
    }
    for (int r = 0; r < n; r++) {
        memset(&out[r], 0, sizeof out[r]);
        ssize_t got = read(fds[r][0], &out[r], sizeof out[r]);
        close(fds[r][0]);
        int status = 0;
        waitpid(pids[r], &status, 0);
        ck_assert_msg(got == (ssize_t)sizeof out[r] && WIFEXITED(status) &&
                          WEXITSTATUS(status) == 0,
                      "rank %d died (status %d)", r, status);
    }
}

static void launch(const spawn_t *sp, int n, outcome_t *out) {
    const spawn_t *each[16];
    for (int r = 0; r < n && r < 16; r++)
        each[r] = sp;
    launch_each(each, n, out);
}

static void expect_group(const outcome_t *o, int n) {
    for (int r = 0; r < n; r++) {
        ck_assert_msg(o[r].init == XDEV_SUCCESS, "rank %d: %s: %s", r,
                      xdev_status_string(o[r].init), o[r].message);
        ck_assert_int_eq(o[r].rank, r);
        ck_assert_int_eq(o[r].size, n);
        ck_assert_msg(o[r].sum_ok, "rank %d: the all_reduce gave the wrong sum", r);
    }
}

/* Rank 1 was turned away at once (saying told1); rank 0 gave up at its
 * timeout (saying told0). */
static void expect_turned_away(const outcome_t *o, const char *told1, const char *told0) {
    ck_assert_msg(o[1].init == XDEV_ERROR_INVALID_VALUE && xt_icontains(o[1].message, told1),
                  "rank 1: %s: %s", xdev_status_string(o[1].init), o[1].message);
    ck_assert_msg(o[0].init == XDEV_ERROR_IO && xt_icontains(o[0].message, told0), "rank 0: %s: %s",
                  xdev_status_string(o[0].init), o[0].message);
}

static char g_port[32], g_port_minus1[32], g_job[64], g_slurm_job[64], g_other_job[64];

static void ports(void) {
    int p = free_port();
    snprintf(g_port, sizeof g_port, "XDEV_RENDEZVOUS_PORT=%d", p);
    snprintf(g_port_minus1, sizeof g_port_minus1, "MASTER_PORT=%d", p - 1);
    snprintf(g_job, sizeof g_job, "OMPI_MCA_ess_base_jobid=xdev-test-%d-%ld", (int)getpid(),
             (long)time(NULL));
    snprintf(g_other_job, sizeof g_other_job, "OMPI_MCA_ess_base_jobid=xdev-other-%d-%ld",
             (int)getpid(), (long)time(NULL));
    snprintf(g_slurm_job, sizeof g_slurm_job, "SLURM_JOB_ID=%d%ld", (int)getpid(),
             (long)time(NULL) % 100000);
}

START_TEST(torchrun_variables) {
    ports();
    spawn_t sp = {{"RANK=%d", "WORLD_SIZE=3", "LOCAL_RANK=%d", "LOCAL_WORLD_SIZE=3",
                   "MASTER_ADDR=127.0.0.1", g_port_minus1, NULL},
                  3};
    outcome_t o[3];
    launch(&sp, 3, o);
    expect_group(o, 3);
}
END_TEST

START_TEST(openmpi_variables_on_one_host) {
    ports(); /* no MASTER_ADDR / MASTER_PORT: 127.0.0.1, a port from the job id */
    spawn_t sp = {{"OMPI_COMM_WORLD_RANK=%d", "OMPI_COMM_WORLD_SIZE=3",
                   "OMPI_COMM_WORLD_LOCAL_RANK=%d", "OMPI_COMM_WORLD_LOCAL_SIZE=3", g_job, NULL},
                  3};
    outcome_t o[3];
    launch(&sp, 3, o);
    expect_group(o, 3);
}
END_TEST

START_TEST(slurm_variables_with_port) {
    ports();
    spawn_t sp = {{"SLURM_PROCID=%d", "SLURM_NTASKS=2", "SLURM_LOCALID=%d",
                   "XDEV_RENDEZVOUS_ADDR=localhost", g_port, NULL},
                  2};
    outcome_t o[2];
    launch(&sp, 2, o);
    expect_group(o, 2);
}
END_TEST

/* srun on one node: no address, a port from SLURM_JOB_ID and the step. */
START_TEST(slurm_one_node) {
    ports();
    spawn_t sp = {{"SLURM_PROCID=%d", "SLURM_NTASKS=2", "SLURM_LOCALID=%d",
                   "SLURM_STEP_NUM_NODES=1", "SLURM_STEP_ID=0", g_slurm_job, NULL},
                  2};
    outcome_t o[2];
    launch(&sp, 2, o);
    expect_group(o, 2);
}
END_TEST

/* A rank of another job reaching the same port is turned away. */
START_TEST(other_job_turned_away) {
    ports();
    spawn_t ours = {{"OMPI_COMM_WORLD_RANK=%d", "OMPI_COMM_WORLD_SIZE=2",
                     "XDEV_RENDEZVOUS_ADDR=127.0.0.1", g_port, g_job, "XDEV_COMM_TIMEOUT=2", NULL},
                    0};
    spawn_t theirs = ours;
    theirs.vars[4] = g_other_job;
    const spawn_t *each[2] = {&ours, &theirs};
    outcome_t o[2];
    launch_each(each, 2, o);
    expect_turned_away(o, "another job", "rank 1");
}
END_TEST

START_TEST(world_of_one) {
    spawn_t sp = {{"RANK=0", "WORLD_SIZE=1", NULL}, 1};
    outcome_t o[1];
    launch(&sp, 1, o);
    expect_group(o, 1);
}
END_TEST

/* WORLD_SIZE=3 but only ranks 0 and 1 run: both fail within the timeout,
 * naming rank 2. */
START_TEST(missing_rank_times_out) {
    ports();
    spawn_t sp = {{"RANK=%d", "WORLD_SIZE=3", "MASTER_ADDR=127.0.0.1", g_port_minus1,
                   "XDEV_COMM_TIMEOUT=2", NULL},
                  0};
    outcome_t o[2];
    double t0 = xt_now_ms();
    launch(&sp, 2, o);
    double ms = xt_now_ms() - t0;
    for (int r = 0; r < 2; r++) {
        ck_assert_msg(o[r].init == XDEV_ERROR_IO, "rank %d: %s: %s", r,
                      xdev_status_string(o[r].init), o[r].message);
        ck_assert_msg(xt_icontains(o[r].message, "rank 2") &&
                          xt_icontains(o[r].message, "XDEV_COMM_TIMEOUT") &&
                          xt_icontains(o[r].message, "xdev_communicator_init_env"),
                      "rank %d: %s", r, o[r].message);
    }
    ck_assert_msg(ms < 2000 + 300 + 8000, "the ranks took %.0f ms to give up (timeout 2 s)", ms);
}
END_TEST

/* Rank 1 says the world has 2 ranks, rank 0 says 3: rank 1 is told so at
 * once, rank 0 gives up at the timeout saying why. */
START_TEST(disagreeing_world_sizes) {
    ports();
    spawn_t of3 = {{"RANK=%d", "WORLD_SIZE=3", "MASTER_ADDR=127.0.0.1", g_port_minus1,
                    "XDEV_COMM_TIMEOUT=2", NULL},
                   0};
    spawn_t of2 = of3;
    of2.vars[1] = "WORLD_SIZE=2";
    const spawn_t *each[2] = {&of3, &of2};
    outcome_t o[2];
    launch_each(each, 2, o);
    expect_turned_away(o, "world has 2 ranks, rank 0 says 3", "another world size");
}
END_TEST

START_TEST(launch_info_variables) {
    clear_launcher_env();
    xdev_launch_info_t li;
    XT_ERR(XDEV_ERROR_NOT_FOUND, xdev_launch_info(&li), "RANK", "OMPI_COMM_WORLD_RANK");
    setenv("RANK", "x", 1);
    setenv("WORLD_SIZE", "2", 1);
    XT_ERR(XDEV_ERROR_ENV, xdev_launch_info(&li), "RANK='x'");
    setenv("RANK", "2", 1);
    XT_ERR(XDEV_ERROR_ENV, xdev_launch_info(&li), "RANK=2", "WORLD_SIZE=2");
    setenv("RANK", "", 1);
    XT_ERR(XDEV_ERROR_ENV, xdev_launch_info(&li), "RANK", "empty");
    setenv("RANK", "1", 1);
    unsetenv("WORLD_SIZE");
    XT_ERR(XDEV_ERROR_ENV, xdev_launch_info(&li), "WORLD_SIZE", "torchrun");
    clear_launcher_env();
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_LOCALID", "0", 1);
    setenv("MASTER_ADDR", "node7", 1);
    XT_OK(xdev_launch_info(&li));
    ck_assert_str_eq(li.launcher, "slurm");
    ck_assert_int_eq(li.rank, 1);
    ck_assert_int_eq(li.world_size, 4);
    ck_assert_int_eq(li.local_rank, 0);
    ck_assert_int_eq(li.local_world_size, -1);
    ck_assert_str_eq(li.master_addr, "node7");
    ck_assert_int_eq(li.master_port, 0);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_launch_info(NULL), "out");
    clear_launcher_env();
}
END_TEST

int main(int argc, char **argv) {
    clear_launcher_env();
    Suite *s = suite_create("rendezvous");
    TCase *tc = tcase_create("rendezvous");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, launch_info_variables);
    tcase_add_test(tc, torchrun_variables);
    tcase_add_test(tc, openmpi_variables_on_one_host);
    tcase_add_test(tc, slurm_variables_with_port);
    tcase_add_test(tc, slurm_one_node);
    tcase_add_test(tc, other_job_turned_away);
    tcase_add_test(tc, world_of_one);
    tcase_add_test(tc, missing_rank_times_out);
    tcase_add_test(tc, disagreeing_world_sizes);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "rendezvous", argc, argv);
}
