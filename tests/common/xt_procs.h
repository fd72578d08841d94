/* SPDX-License-Identifier: Apache-2.0 */
/* xt_procs.h - what the several-process communicator tests share: a group
 * id as hex on a command line, and the rank processes started as a
 * launcher would (fork + exec of this program: "child <rank> <hex id>"). */
#ifndef XT_PROCS_H
#define XT_PROCS_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xdev/communicator.h>

/* hex must hold 2 * XDEV_COMMUNICATOR_ID_BYTES + 1 chars. */
static inline void xt_id_to_hex(const xdev_communicator_id_t *id, char *hex) {
    for (size_t i = 0; i < sizeof id->bytes; i++)
        snprintf(hex + 2 * i, 3, "%02x", id->bytes[i]);
}

/* false on a malformed argument. */
static inline bool xt_id_from_hex(const char *hex, xdev_communicator_id_t *id) {
    if (strlen(hex) != 2 * sizeof id->bytes) return false;
    for (size_t i = 0; i < sizeof id->bytes; i++) {
        unsigned v = 0;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return false;
        id->bytes[i] = (unsigned char)v;
    }
    return true;
}

/* Start n copies of this program as ranks 0..n-1 and wait for them: 0 when
 * every one exited 0. */
static inline int xt_spawn_ranks(const char *argv0, int n, const xdev_communicator_id_t *id,
                                 const char *prog) {
    char hex[2 * XDEV_COMMUNICATOR_ID_BYTES + 1];
    xt_id_to_hex(id, hex);
    pid_t pids[64];
    for (int r = 0; r < n && r < 64; r++) {
        char rank[8];
        snprintf(rank, sizeof rank, "%d", r);
        pids[r] = fork();
        if (pids[r] < 0) return 1;
        if (pids[r] == 0) { /* a fresh process: exec, as a launcher does */
            execl("/proc/self/exe", argv0, "child", rank, hex, (char *)NULL);
            _exit(127);
        }
    }
    int bad = 0;
    for (int r = 0; r < n && r < 64; r++) {
        int status = 0;
        if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "%s: rank %d's process failed (status %d)\n", prog, r, status);
            bad = 1;
        }
    }
    return bad;
}

/* An object of a group this process made still in /dev/shm (the CPU
 * backend's ids name "/xdev-comm-<pid>-..."): true, its name in out. */
static inline bool xt_shm_left(char *out, size_t len) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "xdev-comm-%ld-", (long)getpid());
    DIR *dir = opendir("/dev/shm");
    if (dir == NULL) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(dir)) != NULL;)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(out, len, "%s", e->d_name);
            found = true;
        }
    closedir(dir);
    return found;
}

#endif
