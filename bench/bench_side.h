/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_side.h - one side of a comparison in a fresh process, for the
 * programs that time each side in a process of its own (kernel_cpu_bench,
 * gpu/kernel_launch_bench, graph_bench and gpu/graph_raw_bench through
 * graph_step.h): the program is started again (posix_spawn) with its side's
 * arguments and environment, its standard output piped back; "@" lines are
 * the side's results, handed to the caller's parser, the rest is printed as
 * it comes. A file that includes it defines _POSIX_C_SOURCE 200809L first. */
#ifndef XDEV_BENCH_SIDE_H
#define XDEV_BENCH_SIDE_H

#include <errno.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* This process's environment with each "NAME=value" of `over` (NULL-
 * terminated, or NULL) replacing or adding that variable; free() the array
 * only (the strings are environ's and over's). */
static inline char **bench_env_with(const char *const *over) {
    size_t ne = 0, nover = 0;
    while (environ[ne] != NULL)
        ne++;
    while (over != NULL && over[nover] != NULL)
        nover++;
    char **envp = (char **)calloc(ne + nover + 1, sizeof *envp);
    if (envp == NULL) {
        perror("bench: environment");
        exit(1);
    }
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        bool replaced = false;
        for (size_t j = 0; j < nover && !replaced; j++) {
            size_t len = (size_t)(strchr(over[j], '=') - over[j]) + 1;
            replaced = strncmp(environ[i], over[j], len) == 0;
        }
        if (!replaced) envp[k++] = environ[i];
    }
    for (size_t j = 0; j < nover; j++)
        envp[k++] = (char *)over[j];
    envp[k] = NULL;
    return envp;
}

/* Run exe with argv and envp (NULL: this environment); each "@" line of its
 * output goes, without the '@', to on_line(ctx, line). False, said on
 * stderr or stdout naming `side`, when it could not start or did not exit 0
 * (its own message is then above). */
static inline bool bench_run_side(const char *prog, const char *exe, const char *side,
                                  char *const argv[], char *const envp[],
                                  void (*on_line)(void *ctx, const char *line), void *ctx) {
    int fds[2];
    if (pipe(fds) != 0) {
        perror("bench: pipe");
        exit(1);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    fflush(stdout);
    int err = posix_spawn(&pid, exe, &fa, NULL, argv, envp != NULL ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err != 0) {
        fprintf(stderr, "%s: cannot start side %s (%s): %s\n", prog, side, exe, strerror(err));
        close(fds[0]);
        return false;
    }
    FILE *in = fdopen(fds[0], "r");
    char line[512];
    while (in != NULL && fgets(line, sizeof line, in) != NULL) {
        if (line[0] == '@')
            on_line(ctx, line + 1);
        else
            fputs(line, stdout);
    }
    if (in != NULL) fclose(in);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("side %s FAILED (%s %d; its message is above)\n", side,
               WIFEXITED(status) ? "exit status" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return false;
    }
    return true;
}

#endif
