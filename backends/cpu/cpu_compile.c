/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_compile.c - run-time compilation for CPU devices: the
 * kernel table's compile_target and compile slots over the system C
 * compiler.
 *
 * The compiler is XDEV_CC (a command name looked up on PATH, or an absolute
 * path; no arguments), default `cc`. It is read and looked up at each call,
 * not at init, so a process that never compiles never needs a compiler and a
 * malformed value only fails run-time compilation. compile_target
 * identifies the compiler without running it, once per compiler path and
 * process: "cc: <real path> <size> <mtime> <inode> <uname -m>" (identify();
 * the last compiler identified still answers when none is found any more, so
 * cached images stay usable);
 * compile writes the source into the core's private work directory, builds
 * a shared object from it (XDEV_IMAGE_HOST_LIBRARY: the core opens it
 * itself) and hands back its bytes.
 *
 * The compiler runs as a child made by posix_spawn - no shell, so no option
 * or path is ever interpreted, and safe in multithreaded programs. Its stdin
 * is /dev/null; its stdout and stderr go into one pipe made O_CLOEXEC, so no
 * other child of the process inherits either end. It runs in its own process
 * group, so a compilation over its time limit is killed together with the
 * compiler's own children (cc1, as, ld). Only the child's own pid is waited
 * for: the application's SIGCHLD disposition and handlers are untouched. If
 * the application reaps the child first (SIGCHLD ignored, or a handler
 * calling waitpid(-1)), its exit status is lost and the outcome is judged by
 * the output it left (the shared object).
 *
 * A compilation is killed after XDEV_CC_TIMEOUT_S seconds (1 to 86400,
 * default 120), read at each compile like XDEV_CC. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_clock.h"
#include "cpu/cpu_internal.h"

extern char **environ;

/* A compilation's time limit by default (XDEV_CC_TIMEOUT_S), and its most. */
#define CC_COMPILE_TIMEOUT_S 120
#define CC_TIMEOUT_MAX_S 86400
/* Most compiler output kept (out->log); the rest is counted and dropped. */
#define CC_LOG_CAP (256u * 1024u)
/* How much of the log a failure's message quotes. */
#define CC_QUOTE_LINES 12
#define CC_QUOTE_BYTES 1200
/* Longest path handled (XDEV_CC, a PATH candidate, a work file). */
#define CC_PATH_MAX 4096
/* PATH when the environment has none (what execvp uses). */
#define CC_DEFAULT_PATH "/bin:/usr/bin"

typedef const char *(*cc_env_fn)(const char *name);

static const char *plain_getenv(const char *name) {
    return getenv(name);
}

/* The core's get_env (one environment for tests and embedders), else getenv. */
static cc_env_fn cc_env(void) {
    cc_env_fn get = XDEV_BACKEND_SLOT(xdev_cpu_state.host, get_env);
    return get != NULL ? get : plain_getenv;
}

/* ------------------------------------------------------------ the compiler */

typedef struct cc_tool {
    const char *name;       /* XDEV_CC's value, or "cc" */
    char path[CC_PATH_MAX]; /* the file that runs */
} cc_tool_t;

/* XDEV_CC names one program: no whitespace or control characters, nothing a
 * shell would read as syntax (it is never given to one, but a value holding
 * such characters is a command line, not a program name), and a path only
 * if absolute (a relative one would depend on the working directory). */
static bool cc_name_ok(const char *v) {
    if (v[0] == '\0' || strlen(v) >= CC_PATH_MAX) return false;
    for (const unsigned char *p = (const unsigned char *)v; *p != '\0'; p++)
        if (*p <= ' ' || *p == 0x7f || strchr("|&;<>()$`\\\"'*?[]{}#~=%!^", *p) != NULL)
            return false;
    return strchr(v, '/') == NULL || v[0] == '/';
}

/* Whether `path` is a file this process may execute; why not in errno (0:
 * not a regular file). */
static bool cc_executable(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return false;
    if (!S_ISREG(st.st_mode)) {
        errno = 0;
        return false;
    }
    return access(path, X_OK) == 0;
}

/* The compiler to run: XDEV_CC checked, then found as execvp would find it
 * (the first executable PATH entry). XDEV_ERROR_ENV for a malformed value,
 * XDEV_ERROR_NOT_SUPPORTED when there is none, each naming what was tried;
 * `quiet`: the latter without a message (the caller may still succeed). */
static xdev_status_t cc_find(int device, cc_tool_t *t, bool quiet) {
    const cc_env_fn get_env = cc_env();
    const char *v = get_env("XDEV_CC");
    if (v != NULL && !cc_name_ok(v))
        return xdev_cpu_error(XDEV_ERROR_ENV,
                              "XDEV_CC='%s' is not a C compiler's name (expected a command name "
                              "looked up on PATH, or an absolute path, without arguments, spaces "
                              "or shell characters; unset = cc)",
                              v);
    t->name = v != NULL ? v : "cc";
    if (t->name[0] == '/') {
        if (cc_executable(t->name)) {
            snprintf(t->path, sizeof t->path, "%s", t->name);
            return XDEV_SUCCESS;
        }
        if (quiet) return XDEV_ERROR_NOT_SUPPORTED;
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu:%d: no C compiler for run-time compilation: XDEV_CC='%s' is "
                              "not an executable file (%s)",
                              device, t->name, errno != 0 ? strerror(errno) : "not a regular file");
    }
    const char *path = get_env("PATH");
    const bool path_set = path != NULL;
    if (path == NULL) path = CC_DEFAULT_PATH;
    for (const char *p = path;;) {
        const char *end = strchr(p, ':');
        int n = (int)(end != NULL ? (size_t)(end - p) : strlen(p));
        int w = n == 0 ? snprintf(t->path, sizeof t->path, "./%s", t->name) /* "" is "." */
                       : snprintf(t->path, sizeof t->path, "%.*s/%s", n, p, t->name);
        if (w > 0 && (size_t)w < sizeof t->path && cc_executable(t->path)) return XDEV_SUCCESS;
        if (end == NULL) break;
        p = end + 1;
    }
    if (quiet) return XDEV_ERROR_NOT_SUPPORTED;
    return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                          "cpu:%d: no C compiler for run-time compilation: %s'%s' was looked up "
                          "on PATH (%s%s) and not found; install one or set XDEV_CC to a C "
                          "compiler's name or absolute path",
                          device, v != NULL ? "XDEV_CC=" : "XDEV_CC is unset and its default ",
                          t->name, path_set ? "" : "unset, so ", path);
}

/* ------------------------------------------------------------ running it */

typedef struct cc_run {
    bool timed_out; /* killed at the time limit */
    bool waited;    /* false: the application reaped the child itself */
    int status;     /* waitpid's, when waited */
    char *log;      /* malloc'd, NUL-terminated: stdout and stderr as they came */
    size_t log_len;
    size_t dropped; /* bytes past cap */
} cc_run_t;

static long long now_ms(void) {
    return (long long)(xdev_cpu_now_ns() / 1000000);
}

/* Append n bytes to the log, growing it up to `cap` bytes. False: out of
 * memory. */
static bool log_append(cc_run_t *r, size_t *alloc, size_t cap, const char *b, size_t n) {
    size_t keep = r->log_len + n <= cap ? n : cap - r->log_len;
    r->dropped += n - keep;
    if (r->log_len + keep + 1 > *alloc) {
        size_t want = *alloc;
        while (want < r->log_len + keep + 1)
            want *= 2;
        if (want > cap + 1) want = cap + 1;
        char *grown = realloc(r->log, want);
        if (grown == NULL) return false;
        r->log = grown;
        *alloc = want;
    }
    memcpy(r->log + r->log_len, b, keep);
    r->log_len += keep;
    r->log[r->log_len] = '\0';
    return true;
}

/* Reap our own child, waiting at most until `deadline` (then kill its
 * group and wait for it). Lost to the application (ECHILD): r->waited stays
 * false. */
static void cc_reap(pid_t pid, long long deadline, cc_run_t *r) {
    long sleep_us = 100;
    for (;;) {
        pid_t w = waitpid(pid, &r->status, r->timed_out ? 0 : WNOHANG);
        if (w == pid) {
            r->waited = true;
            return;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return; /* ECHILD: someone else reaped it */
        if (now_ms() >= deadline) {
            r->timed_out = true;
            kill(-pid, SIGKILL);
            continue;
        }
        struct timespec ts = {0, sleep_us * 1000};
        nanosleep(&ts, NULL);
        if (sleep_us < 10000) sleep_us *= 2;
    }
}

/* Run argv (argv[0] a path) with stdout and stderr captured into r->log
 * (at most `cap` bytes kept), stopping it after timeout_s seconds. A failure
 * to start it is reported (message set, XDEV_ERROR_NOT_SUPPORTED for a
 * compiler that cannot be executed); how it ended is left in r. */
static xdev_status_t cc_spawn(int device, char *const argv[], int timeout_s, size_t cap,
                              cc_run_t *r) {
    memset(r, 0, sizeof *r);
    size_t alloc = 4096;
    r->log = malloc(alloc);
    if (r->log == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: cannot run the C compiler: out of host memory", device);
    r->log[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        int e = errno;
        free(r->log);
        r->log = NULL;
        return xdev_cpu_error(XDEV_ERROR_BACKEND,
                              "cpu:%d: cannot run the C compiler '%s': pipe: %s", device, argv[0],
                              strerror(e));
    }
    /* Both pipe ends are close-on-exec: the child keeps only the dup2'd
     * copies as its stdout and stderr. Its signal mask is emptied (it must
     * not inherit a mask the calling thread set) and SIGPIPE restored, so
     * an orphaned compiler dies when nobody reads it any more. */
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = posix_spawnattr_init(&at);
        if (rc != 0) posix_spawn_file_actions_destroy(&fa);
    }
    pid_t pid = -1;
    if (rc == 0) {
        rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
        if (rc == 0) rc = posix_spawnattr_setsigmask(&at, &none);
        if (rc == 0) rc = posix_spawnattr_setsigdefault(&at, &dflt);
        if (rc == 0) rc = posix_spawnattr_setpgroup(&at, 0);
        if (rc == 0)
            rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                   POSIX_SPAWN_SETPGROUP);
        if (rc == 0) rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
        posix_spawnattr_destroy(&at);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        free(r->log);
        r->log = NULL;
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu:%d: cannot run the C compiler '%s': posix_spawn: %s", device,
                              argv[0], strerror(rc));
    }

    /* Read until every writer is gone (EOF) or the time is up. */
    const long long deadline = now_ms() + (long long)timeout_s * 1000;
    bool nomem = false;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            r->timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (n < 0 && errno != EINTR) break;
        if (n <= 0) continue;
        char buf[4096];
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) break;
        if (!nomem && !log_append(r, &alloc, cap, buf, (size_t)got)) nomem = true;
    }
    close(fds[0]);
    cc_reap(pid, deadline, r);
    if (nomem) {
        free(r->log);
        r->log = NULL;
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: out of host memory for the C compiler's output", device);
    }
    return XDEV_SUCCESS;
}

/* How the child ended, for a message: "exited with status 1". */
static void describe_end(const cc_run_t *r, int timeout_s, char *buf, size_t len) {
    if (r->timed_out)
        snprintf(buf, len, "did not finish within %d s and was killed", timeout_s);
    else if (!r->waited)
        snprintf(buf, len, "ended with an unknown status (the process reaped it itself)");
    else if (WIFEXITED(r->status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(r->status));
    else if (WIFSIGNALED(r->status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(r->status),
                 strsignal(WTERMSIG(r->status)));
    else
        snprintf(buf, len, "ended with wait status %#x", (unsigned)r->status);
}

/* The start of `log` for a message: at most CC_QUOTE_LINES lines and
 * CC_QUOTE_BYTES bytes, cut at a line end or else at a UTF-8 character
 * boundary, without the final newline. */
static void quote_log(const char *log, char *buf, size_t len) {
    size_t n = 0, lines = 0, limit = CC_QUOTE_BYTES < len - 1 ? CC_QUOTE_BYTES : len - 1;
    while (log[n] != '\0' && n < limit) {
        if (log[n] == '\n' && ++lines == CC_QUOTE_LINES) break;
        n++;
    }
    while (n > 0 && log[n] != '\0' && log[n] != '\n' && ((unsigned char)log[n] & 0xC0) == 0x80)
        n--;
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == '\r'))
        n--;
    memcpy(buf, log, n);
    buf[n] = '\0';
    if (n == 0) snprintf(buf, len, "(no output)");
}

/* ------------------------------------------------------------ compile_target */

/* The last compiler identified (its path and target line): identify() runs
 * once per compiler and process. The lock is held only to copy. Once one
 * was identified, it still answers when no compiler can be found any more
 * (XDEV_CC changed to a missing one, PATH emptied): the images the core
 * cached from it stay loadable, and compile reports the missing compiler.
 * A different compiler that is found is identified anew, so a key never
 * names a compiler other than the one that would build its image. */
static pthread_mutex_t g_target_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_target_path[CC_PATH_MAX];
static char g_target_line[512];

/* "cc: <real path> <size> <mtime> <inode> <machine>" of the compiler at
 * t->path: its identity for the cache key, as ccache's default check does
 * (a compiler that changes changes its file), without running it - a
 * --version run costs a process spawn (~1.5 ms), which would make every
 * cache hit of a fresh process pay more than the hit itself. */
static xdev_status_t identify(int device, const cc_tool_t *t, char *line, size_t len) {
    char real[PATH_MAX];
    struct stat sb;
    if (realpath(t->path, real) == NULL || stat(real, &sb) != 0)
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu:%d: the C compiler '%s' cannot be examined: %s", device, t->path,
                              strerror(errno));
    struct utsname u;
    const char *machine = uname(&u) == 0 ? u.machine : "unknown";
    int n = snprintf(line, len, "cc: %s %lld %lld.%09ld %llu %s", real, (long long)sb.st_size,
                     (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec,
                     (unsigned long long)sb.st_ino, machine);
    if (n < 0 || (size_t)n >= len)
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "cpu:%d: the C compiler's path '%s' is too long for its identity",
                              device, real);
    return XDEV_SUCCESS;
}

/* The kernel table's compile_target slot. */
xdev_status_t xdev_cpu_kernel_compile_target(xdev_cpu_device_t *dev, char *id, size_t len,
                                             xdev_image_format_t *format) {
    cc_tool_t *t = malloc(sizeof *t);
    if (t == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: cannot identify the C compiler: out of host memory",
                              dev->index);
    xdev_status_t st = cc_find(dev->index, t, true);
    char line[sizeof g_target_line] = "";
    if (st == XDEV_SUCCESS || st == XDEV_ERROR_NOT_SUPPORTED) {
        pthread_mutex_lock(&g_target_mu);
        if (st == XDEV_ERROR_NOT_SUPPORTED || strcmp(g_target_path, t->path) == 0)
            memcpy(line, g_target_line, sizeof line); /* "" when none was identified */
        pthread_mutex_unlock(&g_target_mu);
    }
    if (st == XDEV_ERROR_NOT_SUPPORTED)
        st = line[0] != '\0' ? XDEV_SUCCESS                   /* the last one identified */
                             : cc_find(dev->index, t, false); /* the message */
    if (st == XDEV_SUCCESS && line[0] == '\0') {
        /* Not identified yet: two threads may both identify it the first
         * time, which is harmless; the lock is not held while it runs. */
        st = identify(dev->index, t, line, sizeof line);
        if (st == XDEV_SUCCESS) {
            pthread_mutex_lock(&g_target_mu);
            memcpy(g_target_path, t->path, sizeof g_target_path);
            memcpy(g_target_line, line, sizeof g_target_line);
            pthread_mutex_unlock(&g_target_mu);
        }
    }
    free(t);
    if (st != XDEV_SUCCESS) return st;
    size_t n = strlen(line);
    if (n >= len)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d: the compiler's target line needs %zu bytes, the buffer "
                              "holds %zu: '%s'",
                              dev->index, n + 1, len, line);
    memcpy(id, line, n + 1);
    *format = XDEV_IMAGE_HOST_LIBRARY;
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ compile */

/* Write all of `text` to a new file at path (0600, not following a link). */
static xdev_status_t write_source(int device, const char *path, const char *text,
                                  const char *name) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int e = fd < 0 ? errno : 0;
    for (size_t left = strlen(text); e == 0 && left > 0;) {
        ssize_t n = write(fd, text, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            e = n < 0 ? errno : EIO;
            break;
        }
        text += n;
        left -= (size_t)n;
    }
    if (fd >= 0 && close(fd) != 0 && e == 0) e = errno;
    if (e == 0) return XDEV_SUCCESS;
    if (fd >= 0) unlink(path);
    return xdev_cpu_error(XDEV_ERROR_IO, "cpu:%d: cannot write the source of '%s' to '%s': %s",
                          device, name, path, strerror(e));
}

/* The whole file at path into malloc'd memory; 0 or errno (ENODATA: empty). */
static int read_file(const char *path, void **data, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : 0;
    char *buf = NULL;
    size_t total = e == 0 ? (size_t)st.st_size : 0;
    if (e == 0 && total == 0) e = ENODATA;
    if (e == 0 && (buf = malloc(total)) == NULL) e = ENOMEM;
    for (size_t got = 0; e == 0 && got < total;) {
        ssize_t n = read(fd, buf + got, total - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            e = n < 0 ? errno : EIO; /* shrank while read */
        else
            got += (size_t)n;
    }
    close(fd);
    if (e != 0) {
        free(buf);
        return e;
    }
    *data = buf;
    *size = total;
    return 0;
}

/* The work files of one compilation and the compiler's command line. */
typedef struct cc_job {
    cc_tool_t tool;
    char src[CC_PATH_MAX]; /* <work_dir>/<name>.c */
    char so[CC_PATH_MAX];  /* <work_dir>/<name>.so */
    char dep[CC_PATH_MAX]; /* <work_dir>/<name>.d: what it read (-MD -MF) */
    char *include_opt;     /* -I<include_dir> */
    char **argv;
} cc_job_t;

static void job_free(cc_job_t *j) {
    if (j == NULL) return;
    free(j->include_opt);
    free(j->argv);
    free(j);
}

/* The command line: cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden
 * -Werror=implicit-function-declaration -Wl,-z,defs -I<include> -MD -MF <dep>
 * [options] -o <so> <src> -lm. -MD writes the files the preprocessor read
 * into <dep> (make's syntax), which the core keys the cached image on. -fvisibility=hidden keeps
 * the kernels' own symbols private: the table the core appended to the source is declared with
 * default visibility and is all the object exports. A call of an unknown
 * function is a compile error here (as nvcc makes it), not a library that
 * fails to load: -Werror=implicit-function-declaration, and -z defs for
 * anything still unresolved. -lm, last, for the <math.h> functions the
 * dialect offers kernels. */
static xdev_status_t job_argv(int device, cc_job_t *j, const xdev_compile_desc_t *desc) {
    const char *inc = desc->include_dir != NULL ? desc->include_dir : "";
    if (inc[0] != '\0') {
        j->include_opt = malloc(strlen(inc) + 3);
        if (j->include_opt == NULL) goto nomem;
        snprintf(j->include_opt, strlen(inc) + 3, "-I%s", inc);
    }
    int nopt = desc->options != NULL && desc->noptions > 0 ? desc->noptions : 0;
    j->argv = malloc(((size_t)nopt + 17) * sizeof *j->argv);
    if (j->argv == NULL) goto nomem;
    int a = 0;
    static const char *const head[] = {"-std=c11",
                                       "-O2",
                                       "-fPIC",
                                       "-shared",
                                       "-fvisibility=hidden",
                                       "-Werror=implicit-function-declaration",
                                       "-Wl,-z,defs"};
    j->argv[a++] = j->tool.path;
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        j->argv[a++] = (char *)head[i];
    if (j->include_opt != NULL) j->argv[a++] = j->include_opt;
    j->argv[a++] = "-MD";
    j->argv[a++] = "-MF";
    j->argv[a++] = j->dep;
    for (int i = 0; i < nopt; i++)
        j->argv[a++] = (char *)desc->options[i];
    j->argv[a++] = "-o";
    j->argv[a++] = j->so;
    j->argv[a++] = j->src;
    j->argv[a++] = "-lm";
    j->argv[a] = NULL;
    return XDEV_SUCCESS;
nomem:
    return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                          "cpu:%d: cannot compile '%s': out of host memory", device, desc->name);
}

/* The files listed in the make rule at path (what -MD wrote), the source
 * left out, one a line: malloc'd, or NULL when there is no such file or it
 * cannot be read whole (the core then keys on the include directories). A
 * name holding a newline cannot be listed: NULL too. */
static char *read_deps(const char *path, const char *src) {
    void *data = NULL;
    size_t size = 0;
    if (read_file(path, &data, &size) != 0) return NULL;
    char *text = data, *out = malloc(size + 2), *w = out, *tok = out;
    bool target = true, ok = out != NULL;
    for (size_t i = 0; ok && i <= size; i++) {
        char c = i < size ? text[i] : ' ';
        if (c == '\\' && i + 1 < size && text[i + 1] == '\n') {
            i++; /* a continued line */
            c = ' ';
        } else if (c == '\\' && i + 1 < size && (text[i + 1] == ' ' || text[i + 1] == '#')) {
            *w++ = text[++i]; /* an escaped space or '#' */
            continue;
        } else if (c == '$' && i + 1 < size && text[i + 1] == '$') {
            *w++ = text[++i];
            continue;
        }
        if (target && c == ':' && i + 1 <= size &&
            (i + 1 == size || text[i + 1] == ' ' || text[i + 1] == '\n')) {
            target = false; /* the rule's target (the .so) ends here */
            w = tok = out;
            continue;
        }
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            *w++ = c;
            continue;
        }
        if (target || w == tok) continue;
        *w = '\0';
        if (strcmp(tok, src) == 0) {
            w = tok; /* the source: the core hashes it already */
        } else {
            *w++ = '\n';
            tok = w;
        }
    }
    if (ok && !target) {
        *w = '\0';
    } else {
        free(out);
        out = NULL;
    }
    free(data);
    return out;
}

/* XDEV_CC_TIMEOUT_S: whole seconds, 1 to CC_TIMEOUT_MAX_S; unset or empty
 * is the default. XDEV_ERROR_ENV naming the value otherwise. */
static xdev_status_t cc_timeout(int *out) {
    const char *v = cc_env()("XDEV_CC_TIMEOUT_S");
    *out = CC_COMPILE_TIMEOUT_S;
    if (v == NULL || v[0] == '\0') return XDEV_SUCCESS;
    long n = 0;
    bool ok = strlen(v) <= 6;
    for (const char *p = v; ok && *p != '\0'; p++)
        ok = *p >= '0' && *p <= '9' && (n = n * 10 + (*p - '0')) <= CC_TIMEOUT_MAX_S;
    if (!ok || n < 1)
        return xdev_cpu_error(XDEV_ERROR_ENV,
                              "XDEV_CC_TIMEOUT_S='%s' is not a time limit (expected whole seconds, "
                              "1 to %d; unset = %d)",
                              v, CC_TIMEOUT_MAX_S, CC_COMPILE_TIMEOUT_S);
    *out = (int)n;
    return XDEV_SUCCESS;
}

/* What became of a compiler run that started (limit: its time limit, s): on
 * success out->data holds the shared object; else a message quoting the
 * start of the log. */
static xdev_status_t job_result(int device, const cc_job_t *j, const char *name, const cc_run_t *r,
                                int limit, xdev_compiled_t *out) {
    char how[160], quote[CC_QUOTE_BYTES + 1];
    describe_end(r, limit, how, sizeof how);
    quote_log(r->log, quote, sizeof quote);
    const bool exited_ok = r->waited && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
    if (r->timed_out || (r->waited && !exited_ok))
        return xdev_cpu_error(XDEV_ERROR_COMPILE,
                              "cpu:%d: kernel source '%s' did not compile: '%s' %s; the "
                              "compiler said:\n%s",
                              device, name, j->tool.path, how, quote);
    void *data = NULL;
    size_t size = 0;
    int e = read_file(j->so, &data, &size);
    if (e == ENOMEM)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: out of host memory for the shared object compiled from '%s'",
                              device, name);
    if (e != 0 && !r->waited)
        return xdev_cpu_error(XDEV_ERROR_COMPILE,
                              "cpu:%d: kernel source '%s' did not compile: '%s' %s and left no "
                              "shared object; the compiler said:\n%s",
                              device, name, j->tool.path, how, quote);
    if (e != 0)
        return xdev_cpu_error(XDEV_ERROR_COMPILE,
                              "cpu:%d: '%s' compiled '%s' but produced no usable shared object "
                              "'%s' (%s; an option such as -E, -S, -c or -fsyntax-only?)",
                              device, j->tool.path, name, j->so,
                              e == ENODATA ? "empty" : strerror(e));
    out->format = XDEV_IMAGE_HOST_LIBRARY;
    out->data = data;
    out->data_size = size;
    return XDEV_SUCCESS;
}

/* The kernel table's compile slot. */
xdev_status_t xdev_cpu_kernel_compile(xdev_cpu_device_t *dev, const xdev_compile_desc_t *desc,
                                      xdev_compiled_t *out) {
    const int d = dev->index;
    out->data = NULL;
    out->data_size = 0;
    out->log = NULL;
    if (out->size >= offsetof(xdev_compiled_t, deps) + sizeof out->deps) out->deps = NULL;
    cc_job_t *j = calloc(1, sizeof *j);
    if (j == NULL)
        return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                              "cpu:%d: cannot compile '%s': out of host memory", d, desc->name);
    xdev_status_t st = cc_find(d, &j->tool, false);
    if (st != XDEV_SUCCESS) goto done;
    int a = snprintf(j->src, sizeof j->src, "%s/%s.c", desc->work_dir, desc->name);
    int b = snprintf(j->so, sizeof j->so, "%s/%s.so", desc->work_dir, desc->name);
    int c = snprintf(j->dep, sizeof j->dep, "%s/%s.d", desc->work_dir, desc->name);
    if (a < 0 || b < 0 || c < 0 || (size_t)a >= sizeof j->src || (size_t)b >= sizeof j->so ||
        (size_t)c >= sizeof j->dep) {
        st = xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                            "cpu:%d: cannot compile '%s': the work directory's path is too long "
                            "(%zu bytes)",
                            d, desc->name, strlen(desc->work_dir));
        goto done;
    }
    int limit = CC_COMPILE_TIMEOUT_S;
    st = cc_timeout(&limit);
    if (st != XDEV_SUCCESS) goto done;
    st = job_argv(d, j, desc);
    if (st != XDEV_SUCCESS) goto done;
    st = write_source(d, j->src, desc->source, desc->name);
    if (st != XDEV_SUCCESS) goto done;
    unlink(j->so); /* judged by its presence when the exit status is lost */
    cc_run_t r;
    st = cc_spawn(d, j->argv, limit, CC_LOG_CAP, &r);
    if (st == XDEV_SUCCESS) {
        if (r.dropped > 0) {
            char note[96];
            int n = snprintf(note, sizeof note,
                             "\n[xdev: %zu more bytes of compiler output dropped]\n", r.dropped);
            char *grown = realloc(r.log, r.log_len + (size_t)n + 1);
            if (grown != NULL) {
                memcpy(grown + r.log_len, note, (size_t)n + 1);
                r.log = grown;
                r.log_len += (size_t)n;
            }
        }
        st = job_result(d, j, desc->name, &r, limit, out);
        out->log = r.log; /* the core frees it, also on failure */
        if (st == XDEV_SUCCESS && out->size >= offsetof(xdev_compiled_t, deps) + sizeof out->deps)
            out->deps = read_deps(j->dep, j->src);
    }
    unlink(j->src);
    unlink(j->so);
    unlink(j->dep);
done:
    job_free(j);
    return st;
}
