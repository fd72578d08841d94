/* SPDX-License-Identifier: Apache-2.0 */
/* bench/rtc_source.h - what the run-time compile benchmarks
 * (kernel_rtc_bench, gpu/nvrtc_bench) share: the kernel source every side
 * compiles, and the runner of one side in a fresh process. Include after
 * defining _XOPEN_SOURCE 700 (nftw). */
#ifndef XDEV_BENCH_RTC_SOURCE_H
#define XDEV_BENCH_RTC_SOURCE_H

static const char xdev_bench_rtc_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "XDEV_KERNEL(rtc_bench, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),\n"
    "            XDEV_PTR(float, y)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + y[i] + (float)SALT;\n"
    "}\n";

#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Run `self --side what salt` in a fresh process: the milliseconds it
 * prints, or -1 when it fails. */
static inline double xdev_bench_run_side(const char *self, const char *what, int salt) {
    char salt_s[16];
    snprintf(salt_s, sizeof salt_s, "%d", salt);
    int fds[2];
    if (pipe(fds) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {(char *)self, "--side", (char *)what, salt_s, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    char buf[64] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    buf[n] = '\0';
    return atof(buf);
}

static inline int xdev_bench_remove_one(const char *path, const struct stat *st, int flag,
                                        struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path);
    return 0;
}

/* The run's cache directory and everything in it. */
static inline void xdev_bench_remove_tree(const char *dir) {
    (void)nftw(dir, xdev_bench_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
