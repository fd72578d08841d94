/* SPDX-License-Identifier: Apache-2.0 */
/* test_comm_faults.c - communicator ranks in separate processes on the CPU
 * backend when things go wrong (ctest comm.faults):
 *
 *   kill [trials]  a group of three processes in which one SIGKILLs itself
 *                  while its all_reduce runs; the survivors must see the
 *                  collective fail (naming the dead rank, or the abort),
 *                  return from xdev_communicator_abort - called from a second
 *                  thread while the main one waits, in every other trial -
 *                  and exit, with /dev/shm left clean. Default 100 trials.
 *   nranks         ranks told different nranks (creator more, creator
 *                  fewer): every rank fails at once with both counts, no
 *                  crash; a lone rank fails after XDEV_COMM_TIMEOUT=1; a
 *                  malformed XDEV_COMM_TIMEOUT is refused.
 *
 * Each process is this program again (fork + exec, as a launcher starts
 * ranks); the parent gives every trial a deadline and kills what is left
 * when it passes, so a hang is a failure, not a stuck CI. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xdev/xdev.h>

#include "xt_procs.h"

#define NPROC 3
#define COUNT 400000      /* f32 elements: 1.6 MB, two staging chunks */
#define TRIAL_DEADLINE 30 /* seconds for one trial's processes (sanitizer builds are slow) */

static const char *g_argv0;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ ranks */

static int rank_fail(int rank, const char *what) {
    fprintf(stderr, "test_comm_faults rank %d: %s: %s\n", rank, what, xdev_last_error());
    return 1;
}

typedef struct aborter {
    xdev_communicator_t comm;
    unsigned delay_us;
    xdev_status_t st;
} aborter_t;

static void *abort_later(void *arg) {
    aborter_t *a = arg;
    usleep(a->delay_us);
    a->st = xdev_communicator_abort(a->comm);
    return NULL;
}

/* A rank of the kill trial: rank NPROC-1 dies in its collective after
 * `warm` good ones; the others run collectives until one fails. */
static int kill_rank(int rank, const char *hex, unsigned seed) {
    xdev_communicator_id_t id;
    if (!xt_id_from_hex(hex, &id)) return 2;
    xdev_communicator_t c;
    if (xdev_communicator_init_rank(&c, NPROC, &id, rank, (xdev_device_t){XDEV_DEVICE_CPU, 0}) != 0)
        return rank_fail(rank, "init_rank");
    float *buf = NULL;
    if (xdev_malloc((void **)&buf, COUNT * sizeof(float)) != 0) return rank_fail(rank, "malloc");
    if (xdev_fill_async(buf, XDEV_DTYPE_F32, xdev_scalar_f64(1.0), COUNT, NULL) != 0)
        return rank_fail(rank, "fill");
    unsigned warm = seed % 3;
    if (rank == NPROC - 1) {                 /* the victim */
        for (unsigned i = 0; i <= warm; i++) /* (an abort may already have failed it) */
            (void)xdev_all_reduce(c, buf, buf, COUNT, XDEV_DTYPE_F32, XDEV_REDUCE_MAX, NULL);
        usleep(seed % 3000); /* the last one is queued or running: die in it */
        kill(getpid(), SIGKILL);
        return 3;
    }
    aborter_t ab = {c, seed % 5000, XDEV_SUCCESS};
    pthread_t th;
    bool threaded = seed % 2 == 1 && rank == 1;
    if (threaded && pthread_create(&th, NULL, abort_later, &ab) != 0) return 4;
    double t0 = now_s();
    xdev_status_t st = XDEV_SUCCESS;
    for (int i = 0; i < 100000 && st == XDEV_SUCCESS; i++) {
        st = xdev_all_reduce(c, buf, buf, COUNT, XDEV_DTYPE_F32, XDEV_REDUCE_MAX, NULL);
        if (st == XDEV_SUCCESS) st = xdev_synchronize();
        if (st == XDEV_SUCCESS) st = xdev_communicator_check(c);
    }
    double waited = now_s() - t0;
    if (st == XDEV_SUCCESS) {
        fprintf(stderr, "rank %d: 100000 collectives passed with a dead peer\n", rank);
        return 5;
    }
    if (strstr(xdev_last_error(), "died") == NULL && strstr(xdev_last_error(), "abort") == NULL) {
        fprintf(stderr, "rank %d: the failure does not say why: %s\n", rank, xdev_last_error());
        return 6;
    }
    if (xdev_communicator_abort(c) != XDEV_SUCCESS) return rank_fail(rank, "abort");
    if (threaded) {
        pthread_join(th, NULL);
        if (ab.st != XDEV_SUCCESS) return rank_fail(rank, "abort from a second thread");
    }
    if (xdev_communicator_destroy(c) != XDEV_SUCCESS) return rank_fail(rank, "destroy");
    if (xdev_free(buf) != XDEV_SUCCESS) return rank_fail(rank, "free");
    if (getenv("XT_VERBOSE")) fprintf(stderr, "rank %d failed after %.3f s\n", rank, waited);
    return 0;
}

/* A rank of the nranks scenario: init_rank must fail, quickly, with a
 * message holding `want`. */
static int join_rank(int nranks, int rank, const char *hex, const char *want) {
    xdev_communicator_id_t id;
    if (!xt_id_from_hex(hex, &id)) return 2;
    xdev_communicator_t c;
    xdev_status_t st =
        xdev_communicator_init_rank(&c, nranks, &id, rank, (xdev_device_t){XDEV_DEVICE_CPU, 0});
    if (st == XDEV_SUCCESS) {
        fprintf(stderr, "rank %d of %d: init_rank succeeded\n", rank, nranks);
        return 1;
    }
    if (strstr(xdev_last_error(), want) == NULL) {
        fprintf(stderr, "rank %d of %d: the message lacks '%s': %s\n", rank, nranks, want,
                xdev_last_error());
        return 1;
    }
    return 0;
}

/* ----------------------------------------------------------------- parent */

/* Start this program with args; its pid. */
static pid_t start(char *const args[]) {
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", args);
        _exit(127);
    }
    return pid;
}

/* Wait for n children (reaping each as it ends, so a dead one is no
 * zombie) until deadline; kills the rest when it passes. 0 when all exited
 * 0 (a victim killed by SIGKILL counts as expected when `victim`). */
static int reap(pid_t *pids, int n, pid_t victim, double deadline, const char *what) {
    int left = n, bad = 0;
    while (left > 0) {
        int status = 0;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p == 0) {
            if (now_s() > deadline) {
                fprintf(stderr, "%s: %d process(es) still running after the deadline: a hang\n",
                        what, left);
                for (int i = 0; i < n; i++)
                    if (pids[i] > 0) kill(pids[i], SIGKILL);
                bad = 1;
                deadline = 1e300;
            }
            usleep(2000);
            continue;
        }
        if (p < 0) break;
        for (int i = 0; i < n; i++)
            if (pids[i] == p) {
                pids[i] = -1;
                left--;
                bool ok = p == victim ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
                                      : WIFEXITED(status) && WEXITSTATUS(status) == 0;
                if (!ok) {
                    fprintf(stderr, "%s: process %d (%s) ended with status %#x\n", what, i,
                            p == victim ? "victim" : "rank", status);
                    bad = 1;
                }
            }
    }
    return bad;
}

static int check_clean(const char *what) {
    char left[300];
    if (!xt_shm_left(left, sizeof left)) return 0;
    fprintf(stderr, "%s: /dev/shm still holds %s\n", what, left);
    char path[320];
    snprintf(path, sizeof path, "/dev/shm/%s", left);
    unlink(path); /* so the next trial starts clean */
    return 1;
}

static int kill_trials(int trials) {
    int bad = 0;
    double worst = 0;
    for (int t = 0; t < trials; t++) {
        xdev_communicator_id_t id;
        if (xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id) != XDEV_SUCCESS)
            return rank_fail(-1, "id");
        char hex[2 * XDEV_COMMUNICATOR_ID_BYTES + 1], rank[8], seed[16];
        xt_id_to_hex(&id, hex);
        snprintf(seed, sizeof seed, "%u", (unsigned)(t * 2654435761u % 1000003u) + (unsigned)t);
        pid_t pids[NPROC];
        double t0 = now_s();
        for (int r = 0; r < NPROC; r++) {
            snprintf(rank, sizeof rank, "%d", r);
            char *args[] = {(char *)g_argv0, "kill-rank", rank, hex, seed, NULL};
            pids[r] = start(args);
        }
        char what[64];
        snprintf(what, sizeof what, "kill trial %d (seed %s)", t, seed);
        pid_t victim = pids[NPROC - 1];
        bad |= reap(pids, NPROC, victim, t0 + TRIAL_DEADLINE, what);
        double took = now_s() - t0;
        if (took > worst) worst = took;
        bad |= check_clean(what);
        if (bad) return 1;
    }
    printf("test_comm_faults: %d kill trials passed (slowest %.2f s)\n", trials, worst);
    return 0;
}

/* Two ranks started in order, the first creating the group: told
 * n_first and n_second ranks. */
static int disagree(int n_first, int n_second) {
    xdev_communicator_id_t id;
    if (xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id) != XDEV_SUCCESS)
        return rank_fail(-1, "id");
    char hex[2 * XDEV_COMMUNICATOR_ID_BYTES + 1], n1[8], n2[8], want[96];
    xt_id_to_hex(&id, hex);
    snprintf(n1, sizeof n1, "%d", n_first);
    snprintf(n2, sizeof n2, "%d", n_second);
    snprintf(want, sizeof want, "has %d ranks but rank 1 was told %d", n_first, n_second);
    char *a1[] = {(char *)g_argv0, "join-rank", n1, "0", hex, "told the group has", NULL};
    char *a2[] = {(char *)g_argv0, "join-rank", n2, "1", hex, want, NULL};
    /* The creator's object is named in the id after its 16-byte header and
     * the transport's name ("shm", 16 bytes). */
    char path[160];
    if (strcmp((const char *)id.bytes + 16, "shm") != 0) return rank_fail(-1, "shm transport");
    snprintf(path, sizeof path, "/dev/shm%s", (const char *)id.bytes + 32);
    double t0 = now_s();
    pid_t pids[2] = {start(a1), -1};
    struct stat sb;
    while (stat(path, &sb) != 0 && now_s() < t0 + 10) /* the creator made it */
        usleep(1000);
    pids[1] = start(a2);
    char what[64];
    snprintf(what, sizeof what, "creator told %d, joiner %d", n_first, n_second);
    int bad = reap(pids, 2, -1, t0 + 10, what); /* each told at once, not after 120 s */
    if (!bad) printf("test_comm_faults: %s: both failed in %.2f s\n", what, now_s() - t0);
    return bad | check_clean(what);
}

static int nranks_cases(void) {
    int bad = disagree(3, 2) | disagree(2, 3);
    /* a lone rank: the others never come */
    xdev_communicator_id_t id;
    if (xdev_communicator_unique_id(XDEV_DEVICE_CPU, &id) != XDEV_SUCCESS)
        return rank_fail(-1, "id");
    char hex[2 * XDEV_COMMUNICATOR_ID_BYTES + 1];
    xt_id_to_hex(&id, hex);
    setenv("XDEV_COMM_TIMEOUT", "1", 1);
    char *a[] = {(char *)g_argv0, "join-rank", "2", "0", hex, "1 of 2 ranks joined", NULL};
    double t0 = now_s();
    pid_t pid = start(a);
    bad |= reap(&pid, 1, -1, t0 + 15, "lone rank, XDEV_COMM_TIMEOUT=1");
    bad |= check_clean("lone rank");
    setenv("XDEV_COMM_TIMEOUT", "1s", 1);
    char *m[] = {(char *)g_argv0, "join-rank", "2", "0", hex, "XDEV_COMM_TIMEOUT='1s'", NULL};
    pid = start(m);
    bad |= reap(&pid, 1, -1, now_s() + 15, "malformed XDEV_COMM_TIMEOUT");
    unsetenv("XDEV_COMM_TIMEOUT");
    if (!bad) printf("test_comm_faults: lone rank and malformed timeout: ok\n");
    return bad;
}

int main(int argc, char **argv) {
    g_argv0 = argv[0];
    if (argc == 5 && strcmp(argv[1], "kill-rank") == 0)
        return kill_rank(atoi(argv[2]), argv[3], (unsigned)strtoul(argv[4], NULL, 10));
    if (argc == 6 && strcmp(argv[1], "join-rank") == 0)
        return join_rank(atoi(argv[2]), atoi(argv[3]), argv[4], argv[5]);
    if (argc >= 2 && strcmp(argv[1], "kill") == 0)
        return kill_trials(argc >= 3 ? atoi(argv[2]) : 100);
    if (argc == 2 && strcmp(argv[1], "nranks") == 0) return nranks_cases();
    fprintf(stderr, "usage: %s kill [trials] | nranks\n", argv[0]);
    return 2;
}
