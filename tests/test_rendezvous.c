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
 * with a message naming it), ranks that disagree on the world size (each
 * told, naming both sizes), strangers on rank 0's port (silent clients and
 * junk writers, which must not delay the ranks), and malformed or missing
 * variables.
 *
 * Time bounds: what the code promises plus SLACK_MS, room for a loaded
 * 2-core machine under ThreadSanitizer (process start, library init). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xdev/xdev.h"
#include "xt.h"

#define SLACK_MS 2500

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
    double ms;          /* how long xdev_communicator_init_env took */
    char message[400];
} outcome_t;

/* The environment of rank r: NAME=VALUE strings, "%d" replaced by r. */
typedef struct spawn {
    const char *vars[12];
    int world; /* ranks that sum; 0: init is expected to fail */
} spawn_t;

/* Lower RLIMIT_NOFILE, soft and hard (so that it cannot be raised again), to
 * the highest descriptor open once xdev is up, fill the free ones below it
 * but `room` of them. */
static void leave_fds(int room) {
    int top = 0, fill[4096], n = 0;
    (void)xdev_init();
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) _exit(5);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && atoi(e->d_name) > top) top = atoi(e->d_name);
    closedir(d);
    struct rlimit rl = {(rlim_t)top + 1, (rlim_t)top + 1};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(6);
    while (n < 4096 && (fill[n] = dup(0)) >= 0)
        n++;
    for (int i = 0; i < room && i < n; i++)
        close(fill[i]);
}

static void rank_main(int r, const spawn_t *sp, int fd) {
    clear_launcher_env();
    for (int i = 0; sp->vars[i] != NULL; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, sp->vars[i], r);
        char *eq = strchr(buf, '=');
        *eq = '\0';
        setenv(buf, eq + 1, 1);
    }
    const char *room = getenv("TEST_NOFILE_ROOM"); /* RLIMIT_NOFILE leaves this many */
    if (room != NULL) leave_fds(atoi(room));
    outcome_t o = {0};
    xdev_communicator_t c = NULL;
    double t0 = xt_now_ms();
    o.init = xdev_communicator_init_env(&c, XDEV_DEVICE_CPU);
    o.ms = xt_now_ms() - t0;
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

/* Fork rank r with the environment sp; *fd reads its outcome. */
static pid_t start_rank(int r, const spawn_t *sp, int *fd) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    fflush(NULL); /* a rank exits through exit(): nothing buffered twice */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        rank_main(r, sp, p[1]);
    }
    close(p[1]);
    *fd = p[0];
    return pid;
}

static void collect(int r, int fd, pid_t pid, outcome_t *out) {
    memset(out, 0, sizeof *out);
    ssize_t got = read(fd, out, sizeof *out);
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(got == (ssize_t)sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "rank %d died (status %d)", r, status);
}

/* Start ranks 0..n-1, rank r with the environment sp[r] (rank 0 last,
 * after a pause), and collect their outcomes. */
static void launch_each(const spawn_t *const *sp, int n, outcome_t *out) {
    int fds[16];
    pid_t pids[16];
    ck_assert_int_le(n, 16);
    for (int k = 0; k < n; k++) {
        int r = (k + 1) % n; /* 1, 2, ..., n-1, then 0 */
        if (r == 0 && n > 1) xt_sleep_ms(300);
        pids[r] = start_rank(r, sp[r], &fds[r]);
    }
    for (int r = 0; r < n; r++)
        collect(r, fds[r], pids[r], &out[r]);
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
    /* Rank 0 starts 300 ms after rank 1 and answers at its 2 s deadline;
     * rank 1 waits for that answer (up to 10 s past its own deadline). */
    ck_assert_msg(ms < 2000 + 300 + SLACK_MS, "the ranks took %.0f ms to give up (timeout 2 s)",
                  ms);
}
END_TEST

/* Rank 0 or 1 told that the other says another world size: both sizes
 * named, XDEV_ERROR_INVALID_VALUE. */
static void expect_sizes(const outcome_t *o, int r, const char *sizes) {
    ck_assert_msg(o[r].init == XDEV_ERROR_INVALID_VALUE && xt_icontains(o[r].message, sizes) &&
                      xt_icontains(o[r].message, "xdev_communicator_init_env"),
                  "rank %d: %s: %s", r, xdev_status_string(o[r].init), o[r].message);
}

/* Rank 1 says the world has 2 ranks, rank 0 says 3: rank 1 is told so at
 * once, rank 0 gives up at the timeout (rank 2 never comes), and both fail
 * with XDEV_ERROR_INVALID_VALUE naming both sizes. */
START_TEST(disagreeing_world_sizes) {
    ports();
    spawn_t of3 = {{"RANK=%d", "WORLD_SIZE=3", "MASTER_ADDR=127.0.0.1", g_port_minus1,
                    "XDEV_COMM_TIMEOUT=2", NULL},
                   0};
    spawn_t of2 = of3;
    of2.vars[1] = "WORLD_SIZE=2";
    const spawn_t *each[2] = {&of3, &of2};
    outcome_t o[2];
    double t0 = xt_now_ms();
    launch_each(each, 2, o);
    double ms = xt_now_ms() - t0;
    expect_sizes(o, 1, "world has 2 ranks, rank 0 says 3");
    expect_sizes(o, 0, "rank 1 says the world has 2 ranks, rank 0 says 3");
    ck_assert_msg(xt_icontains(o[0].message, "rank 2"), "rank 0: %s", o[0].message);
    ck_assert_msg(ms < 2000 + 300 + SLACK_MS, "the ranks took %.0f ms (timeout 2 s)", ms);
}
END_TEST

/* The same with every rank there (rank 1 says 2, ranks 0 and 2 say 3):
 * nobody waits for the timeout; every rank is told, naming both sizes. */
START_TEST(disagreeing_world_sizes_all_came) {
    ports();
    spawn_t of3 = {{"RANK=%d", "WORLD_SIZE=3", "MASTER_ADDR=127.0.0.1", g_port_minus1,
                    "XDEV_COMM_TIMEOUT=20", NULL},
                   0};
    spawn_t of2 = of3;
    of2.vars[1] = "WORLD_SIZE=2";
    const spawn_t *each[3] = {&of3, &of2, &of3};
    outcome_t o[3];
    double t0 = xt_now_ms();
    launch_each(each, 3, o);
    double ms = xt_now_ms() - t0;
    for (int r = 0; r < 3; r++)
        expect_sizes(o, r, "rank 1 says the world has 2 ranks, rank 0 says 3");
    ck_assert_msg(ms < 300 + SLACK_MS, "the ranks took %.0f ms to be told (timeout 20 s)", ms);
}
END_TEST

/* ------------------------------------------------------------ strangers */

#define N_SILENT 50

/* A non-blocking TCP connection to 127.0.0.1:port, made within 2 s (a
 * listener whose backlog is full lets it wait); -1 if refused or late. */
static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int e = 0;
    socklen_t len = sizeof e;
    struct pollfd pf = {fd, POLLOUT, 0};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 &&
        (errno != EINPROGRESS || poll(&pf, 1, 2000) != 1 ||
         getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0 || e != 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A group of three beside a stranger: rank 0 starts, then the stranger's
 * process (strangers_main, flood_main) with the port rank 0 listens on; it
 * reports through `to` and goes once `from` closes. Ranks 1 and 2 start
 * when the test has read what it waits for (stranger_join). */
typedef struct beside {
    spawn_t sp;
    int fds[3];
    pid_t pids[3], stranger;
    int to, from; /* the test's ends of the stranger's pipes */
} beside_t;

static void stranger_start(beside_t *b, void (*stranger)(int port, int to, int from)) {
    ports();
    int port = atoi(strchr(g_port, '=') + 1);
    b->sp = (spawn_t){{"RANK=%d", "WORLD_SIZE=3", "MASTER_ADDR=127.0.0.1", g_port_minus1,
                       "XDEV_COMM_TIMEOUT=20", NULL},
                      3};
    b->pids[0] = start_rank(0, &b->sp, &b->fds[0]);
    int to[2], from[2];
    ck_assert_int_eq(pipe(to), 0);
    ck_assert_int_eq(pipe(from), 0);
    fflush(NULL);
    b->stranger = fork();
    ck_assert_int_ge(b->stranger, 0);
    if (b->stranger == 0) {
        close(to[0]);
        close(from[1]);
        stranger(port, to[1], from[0]);
    }
    close(to[1]);
    close(from[0]);
    b->to = to[0];
    b->from = from[1];
}

/* Ranks 1 and 2 start, the stranger still there; every rank's outcome in
 * o, then the stranger may go. Returns how long ranks 1 and 2 took to join
 * (ms, their start to the last outcome). */
static double stranger_join(beside_t *b, outcome_t o[3]) {
    double t_ranks = xt_now_ms();
    for (int r = 1; r < 3; r++)
        b->pids[r] = start_rank(r, &b->sp, &b->fds[r]);
    for (int r = 0; r < 3; r++)
        collect(r, b->fds[r], b->pids[r], &o[r]);
    double ms = xt_now_ms() - t_ranks;
    close(b->from);
    close(b->to);
    int status = 0;
    waitpid(b->stranger, &status, 0);
    return ms;
}

/* What the strangers' process reports. */
typedef struct strangers {
    int silent;    /* silent connections made (N_SILENT) */
    int junk;      /* junk writers connected */
    int cut_off;   /* the endless junk writer's connection was closed by rank 0 */
    double cut_ms; /* after how long */
} strangers_t;

/* The strangers: once rank 0 listens, N_SILENT clients that connect and say
 * nothing, and junk writers: random bytes, the hello's magic and then
 * silence (a slow client), a hello of another protocol version, one that
 * connects and leaves, and one that writes without end, until rank 0 cuts
 * it off (at most 3 s). Then reports through `to` and holds the others
 * until `from` closes. */
static void strangers_main(int port, int to, int from) {
    strangers_t st = {0};
    int fds[N_SILENT + 8], nfd = 0, endless = -1;
    for (int i = 0; i < 1000; i++) { /* rank 0 may not listen yet */
        int fd = dial(port);
        if (fd >= 0) {
            fds[nfd++] = fd;
            break;
        }
        xt_sleep_ms(10);
    }
    for (; nfd > 0 && nfd < N_SILENT; nfd++)
        if ((fds[nfd] = dial(port)) < 0) break;
    st.silent = nfd;
    static const char *const junk[] = {"GET / HTTP/1.0\r\n\r\n", "xdevrdv",
                                       "xdevrdv0abcdefghijklmnop",
                                       "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"};
    for (size_t j = 0; j < sizeof junk / sizeof junk[0]; j++) {
        int fd = dial(port);
        if (fd < 0) continue;
        (void)send(fd, junk[j], strlen(junk[j]), MSG_NOSIGNAL);
        fds[nfd++] = fd;
        st.junk++;
    }
    int leaver = dial(port);
    if (leaver >= 0) close(leaver);
    endless = dial(port);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    double t0 = xt_now_ms();
    while (endless >= 0 && xt_now_ms() - t0 < 3000) {
        ssize_t k = send(endless, buf, sizeof buf, MSG_NOSIGNAL);
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            st.cut_off = 1;
            st.cut_ms = xt_now_ms() - t0;
            break;
        }
        if (k < 0) xt_sleep_ms(5);
    }
    if (write(to, &st, sizeof st) != (ssize_t)sizeof st) _exit(3);
    char c;
    if (read(from, &c, 1) < 0) _exit(4); /* until the test is done with the ranks */
    _exit(0);
}

/* Rank 0 listens; 50 silent clients and the junk writers connect, the
 * endless writer is cut off rather than read without end; then ranks 1
 * and 2 start, the strangers still connected. The group forms at once: no
 * stranger holds up the ranks. */
START_TEST(strangers_on_the_port) {
    beside_t b;
    stranger_start(&b, strangers_main);
    strangers_t st = {0};
    ck_assert_int_eq(read(b.to, &st, sizeof st), (ssize_t)sizeof st);
    outcome_t o[3];
    double ms = stranger_join(&b, o);
    expect_group(o, 3);
    printf("strangers_on_the_port: %d silent clients, %d junk writers; the endless one cut off "
           "after %.0f ms; ranks 1 and 2 joined in %.0f ms\n",
           st.silent, st.junk, st.cut_ms, ms);
    /* Served one at a time, 5 s each, the silent clients alone would take
     * 250 s; concurrently the ranks join as soon as they start. */
    ck_assert_msg(ms < 1000 + SLACK_MS, "the ranks took %.0f ms to join past the strangers", ms);
    ck_assert_msg(st.silent == N_SILENT && st.junk == 4,
                  "rank 0 let only %d of %d silent clients and %d of 4 junk writers connect",
                  st.silent, N_SILENT, st.junk);
    ck_assert_msg(st.cut_off, "rank 0 read the endless junk writer for 3 s without cutting it off");
}
END_TEST

/* ------------------------------------------------------------ a flood */

/* The flood: once rank 0 listens, silent connections as fast as they open
 * (far above 64 a second), held open, until `from` closes; `to` gets a byte
 * once FLOOD_AHEAD of them are made. */
#define FLOOD_AHEAD 1000
#define FLOOD_MAX 3000

static void flood_main(int port, int to, int from) {
    static int fds[FLOOD_MAX];
    int n = 0;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < 1000; i++) { /* rank 0 may not listen yet */
        int fd = dial(port);
        if (fd >= 0) {
            fds[n++] = fd;
            break;
        }
        xt_sleep_ms(10);
    }
    (void)fcntl(from, F_SETFL, O_NONBLOCK);
    bool told = false;
    for (;;) {
        char c;
        if (read(from, &c, 1) == 0) break; /* the test is done */
        if (n < FLOOD_MAX) {
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0 &&
                errno != EINPROGRESS) {
                close(fd);
                fd = -1;
            }
            if (fd >= 0) fds[n++] = fd;
        } else {
            xt_sleep_ms(5);
        }
        if (!told && n >= FLOOD_AHEAD) {
            told = true;
            if (write(to, "f", 1) != 1) _exit(3);
        }
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    _exit(0);
}

/* A stranger opens silent connections faster than 64 a second while ranks
 * 1 and 2 join: rank 0 takes every connection at once, dropping the oldest
 * silent one, so the ranks' connections do not wait in the listen backlog
 * behind the flood (and a rank dropped before its hello was read connects
 * again). */
START_TEST(flood_of_silent_connections) {
    beside_t b;
    stranger_start(&b, flood_main);
    char c = 0;
    ck_assert_int_eq(read(b.to, &c, 1), 1);
    outcome_t o[3];
    double ms = stranger_join(&b, o);
    expect_group(o, 3);
    printf("flood_of_silent_connections: ranks 1 and 2 joined in %.0f ms past %d silent "
           "connections and more coming\n",
           ms, FLOOD_AHEAD);
    ck_assert_msg(ms < 1000 + SLACK_MS, "the ranks took %.0f ms to join past the flood", ms);
}
END_TEST

/* ------------------------------------------------------------ limits */

/* Rank 0 may hold only a few descriptors (RLIMIT_NOFILE, soft and hard, a
 * few above what xdev holds at init) and 5 ranks come: rank 0 fails at its
 * timeout naming the limit and the world size, not blaming the ranks. */
START_TEST(rank0_out_of_descriptors) {
    ports();
    spawn_t sp = {{"RANK=%d", "WORLD_SIZE=6", "MASTER_ADDR=127.0.0.1", g_port_minus1,
                   "XDEV_COMM_TIMEOUT=2", NULL},
                  0};
    spawn_t sp0 = sp;
    sp0.vars[5] = "TEST_NOFILE_ROOM=4";
    const spawn_t *each[6] = {&sp0, &sp, &sp, &sp, &sp, &sp};
    outcome_t o[6];
    launch_each(each, 6, o);
    ck_assert_msg(o[0].init == XDEV_ERROR_IO && xt_icontains(o[0].message, "RLIMIT_NOFILE") &&
                      xt_icontains(o[0].message, "6 ranks") &&
                      !xt_icontains(o[0].message, "never reached"),
                  "rank 0: %s: %s", xdev_status_string(o[0].init), o[0].message);
}
END_TEST

/* The endpoint is 127.0.0.1: rank 0 listens there only, not on every
 * interface (127.0.0.2 is another address of the host: refused). */
START_TEST(local_endpoint_binds_loopback) {
    ports();
    int port = atoi(strchr(g_port, '=') + 1);
    spawn_t sp = {{"RANK=%d", "WORLD_SIZE=2", "XDEV_RENDEZVOUS_ADDR=127.0.0.1", g_port,
                   "XDEV_COMM_TIMEOUT=20", NULL},
                  2};
    int fds[2];
    pid_t pids[2];
    pids[0] = start_rank(0, &sp, &fds[0]);
    int fd = -1;
    for (int i = 0; i < 1000 && fd < 0; i++) { /* until rank 0 listens */
        fd = dial(port);
        if (fd < 0) xt_sleep_ms(10);
    }
    ck_assert_int_ge(fd, 0);
    close(fd);
    int other = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(other, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1)};
    int r = connect(other, (struct sockaddr *)&a, sizeof a);
    int e = errno;
    close(other);
    pids[1] = start_rank(1, &sp, &fds[1]);
    outcome_t o[2];
    for (int k = 0; k < 2; k++)
        collect(k, fds[k], pids[k], &o[k]);
    expect_group(o, 2);
    ck_assert_msg(r != 0 && e == ECONNREFUSED,
                  "rank 0 of a job on 127.0.0.1 accepted a connection on 127.0.0.2 (%s)",
                  r == 0 ? "connected" : strerror(e));
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
    tcase_add_test(tc, disagreeing_world_sizes_all_came);
    tcase_add_test(tc, strangers_on_the_port);
    tcase_add_test(tc, flood_of_silent_connections);
    tcase_add_test(tc, rank0_out_of_descriptors);
    tcase_add_test(tc, local_endpoint_binds_loopback);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "rendezvous", argc, argv);
}
