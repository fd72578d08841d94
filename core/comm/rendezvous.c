/* SPDX-License-Identifier: Apache-2.0 */
/* rendezvous.c - a communicator made from what the launcher set
 * (xdev_communicator_init_env): the rank and world size as launcher.c reads
 * them, the group's id carried from rank 0 to the others over one small
 * TCP exchange, then xdev_communicator_init_rank on the device of the local
 * rank. Host-memory ranks whose transport meets by itself (MPI, under
 * mpirun or srun) need no exchange: every rank makes the same id.
 *
 * The exchange: rank 0 listens on the rendezvous port, every other rank
 * connects (retrying while rank 0 is not up yet) and says who it is (rank,
 * world size, device type); once all have come, rank 0 answers each with
 * the id, or with why they cannot form one group (sizes or types that
 * differ, a rank twice: every rank fails, naming both sides). A rank that
 * never comes makes every other fail at the deadline (XDEV_COMM_TIMEOUT,
 * default 120 s) with a message naming it. Rank 0 serves every connection
 * at once, each with its own deadline, so strangers on the port (scanners,
 * health checks, junk) delay no rank; see gather(). The port is closed
 * again as soon as the id has gone out. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "xdev/communicator.h"
#include "runtime/registry.h"
#include "xdev/device.h"

#define HELLO_MAGIC "xdevrdv2"
#define ANSWER_GRACE_MS 10000

/* FNV-1a of s. */
static uint32_t hash32(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Where rank 0 listens: XDEV_RENDEZVOUS_ADDR/_PORT, else MASTER_ADDR and
 * MASTER_PORT + 1 (torchrun's agent holds MASTER_PORT itself), else, when
 * every rank runs on this host, 127.0.0.1 and a port from the job's id. */
static xdev_status_t endpoint(const xdev_launch_info_t *li, char *addr, size_t alen, int *port) {
    const char *a = xdev_env_get("XDEV_RENDEZVOUS_ADDR");
    int p;
    XDEV_CHECK(xdev_env_int("XDEV_RENDEZVOUS_PORT", -1, 1, 65535, &p));
    bool local = li->local_world_size > 0 && li->local_world_size == li->world_size;
    if (a != NULL && a[0] != '\0')
        snprintf(addr, alen, "%s", a);
    else if (li->master_addr[0] != '\0')
        snprintf(addr, alen, "%s", li->master_addr);
    else if (local || li->world_size == 1)
        snprintf(addr, alen, "127.0.0.1");
    else
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "%s started %d ranks not all on this host, and neither MASTER_ADDR nor "
                         "XDEV_RENDEZVOUS_ADDR names rank 0's host: set MASTER_ADDR (and "
                         "MASTER_PORT) for every rank",
                         li->launcher, li->world_size);
    if (p > 0) {
        *port = p;
    } else if (li->master_port > 0) {
        *port = li->master_port < 65535 ? li->master_port + 1 : 65534;
    } else {
        char job[160];
        xdev_launch_job_id(job, sizeof job);
        if (job[0] == '\0')
            return XDEV_FAIL(XDEV_ERROR_ENV,
                             "no rendezvous port: set MASTER_PORT or XDEV_RENDEZVOUS_PORT (the "
                             "launcher gives no job id to derive one from)");
        *port = 20000 + (int)(hash32(job) % 30000u);
    }
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ sockets */

/* The messages; integers in network byte order. `job` is a hash of the
 * launcher's job id (0 when it gives none), so that a rank of another job
 * that reaches the same port is turned away rather than given this job's
 * id. Version 2 added `who` and `their` to the answer. */
typedef struct hello {
    char magic[8];
    uint32_t rank, world, type, job;
} hello_t;

/* Why a group cannot form. The answer's `who` is the rank concerned (the
 * one that disagreed, came twice or never came) and `their` what it said
 * (its world size, device type or rank number). */
enum { ANS_OK = 0, ANS_WORLD, ANS_RANK, ANS_TWICE, ANS_TYPE, ANS_MISSING, ANS_JOB };

static const char *type_name(uint32_t t) {
    const char *n = xdev_device_type_name((xdev_device_type_t)t);
    return n != NULL ? n : "unknown";
}

static uint32_t job_hash(void) {
    char job[160];
    xdev_launch_job_id(job, sizeof job);
    return job[0] ? hash32(job) : 0;
}

typedef struct reply {
    char magic[8];
    uint32_t status, world, type, who, their;
    unsigned char id[XDEV_COMMUNICATOR_ID_BYTES];
} reply_t;

/* Move n bytes over a non-blocking socket before the deadline: 1 done,
 * 0 the deadline passed, -1 the connection closed or failed. */
static int xfer(int fd, void *buf, size_t n, bool sending, long long deadline) {
    char *p = buf;
    while (n > 0) {
        long long left = deadline - xdev_comm_now_ms();
        if (left <= 0) return 0;
        struct pollfd pf = {fd, sending ? POLLOUT : POLLIN, 0};
        int r = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
        if (r < 0 && errno != EINTR) return -1; /* EBADF, ENOMEM: no use waiting */
        if (r <= 0) continue;                   /* EINTR, or a second without news */
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

/* Rank 0's side. Every connection is served at once, each with its own
 * deadline, so a client that connects and says nothing (a port scanner, a
 * health check) or writes junk delays no rank: a connection is dropped at
 * its first byte that is not the hello's, at HELLO_MS, or - once PENDING_MAX
 * connections wait - as the oldest when another comes. Every connection in
 * the backlog is taken at once and read at once (a rank sends its hello
 * as soon as it connects, so it is usually there already): a flood of
 * silent connections cannot keep a rank waiting in the backlog, and a rank
 * dropped all the same sees its connection closed and connects again. No
 * more than a hello is read from any connection. Out of descriptors
 * (EMFILE), rank 0 drops the oldest waiting connection, or with none to
 * drop stops taking connections for FD_PAUSE_MS, and says so at the end. */
#define HELLO_MS 5000
#define PENDING_MAX 32
#define FD_PAUSE_MS 100

typedef struct pending {
    int fd;
    long long since, by; /* accepted; dropped if no hello by then */
    size_t got;          /* bytes of h read */
    hello_t h;
} pending_t;

enum { PEER_NONE = 0, PEER_JOINED, PEER_TURNED };

typedef struct server {
    int world;
    xdev_device_type_t type;
    uint32_t job;
    int *fd;              /* each rank's connection, -1 none */
    unsigned char *state; /* PEER_*: accounted for once not NONE */
    int come;             /* ranks accounted for, rank 0 included */
    pending_t pend[PENDING_MAX];
    int npend;
    /* Why the group cannot form: the first rank turned away for its world
     * size or device type, else (when a rank is missing) the first process
     * turned away at all; a process turned away while every rank joined was
     * told so and is no concern of the group's. */
    uint32_t why, who, their;
    bool turned;         /* why is a turned-away rank's */
    int fd_errno;        /* EMFILE or ENFILE when accept ran out of descriptors */
    long long fd_paused; /* no accept before then (out of descriptors) */
} server_t;

static reply_t answer(const server_t *sv, uint32_t why, uint32_t who, uint32_t their) {
    reply_t r = {.status = htonl(why),
                 .world = htonl((uint32_t)sv->world),
                 .type = htonl((uint32_t)sv->type),
                 .who = htonl(who),
                 .their = htonl(their)};
    memcpy(r.magic, HELLO_MAGIC, 8);
    return r;
}

/* A whole hello from connection c: keep it as its rank's, or answer why
 * not and close it. */
static void judge(server_t *sv, int c, hello_t h) {
    h.rank = ntohl(h.rank);
    h.world = ntohl(h.world);
    h.type = ntohl(h.type);
    h.job = ntohl(h.job);
    uint32_t world = (uint32_t)sv->world;
    bool in_range = h.rank > 0 && h.rank < world;
    uint32_t why = h.job != sv->job                 ? ANS_JOB
                   : h.world != world               ? ANS_WORLD
                   : h.type != (uint32_t)sv->type   ? ANS_TYPE
                   : !in_range                      ? ANS_RANK
                   : sv->state[h.rank] != PEER_NONE ? ANS_TWICE
                                                    : ANS_OK;
    if (why == ANS_OK) {
        sv->fd[h.rank] = c;
        sv->state[h.rank] = PEER_JOINED;
        sv->come++;
        return;
    }
    uint32_t their = why == ANS_WORLD ? h.world : why == ANS_TYPE ? h.type : h.rank;
    reply_t no = answer(sv, why, h.rank, their);
    (void)send(c, &no, sizeof no, MSG_NOSIGNAL | MSG_DONTWAIT); /* fits a new socket's buffer */
    close(c);
    if (why == ANS_JOB) return; /* another job's: not ours to count */
    bool turned =
        (why == ANS_WORLD || why == ANS_TYPE) && in_range && sv->state[h.rank] == PEER_NONE;
    if (turned) {
        sv->state[h.rank] = PEER_TURNED; /* it came, and was told */
        sv->come++;
    }
    if (sv->why == ANS_OK || (turned && !sv->turned)) {
        sv->why = why;
        sv->who = h.rank;
        sv->their = their;
        sv->turned = turned;
    }
}

/* Read what pending connection pe sent; false when it is to be dropped (closed,
 * not a hello, or a whole hello judged). */
static bool hear(server_t *sv, pending_t *pe) {
    ssize_t k = recv(pe->fd, (char *)&pe->h + pe->got, sizeof pe->h - pe->got, MSG_DONTWAIT);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (k <= 0) return false;
    size_t had = pe->got;
    pe->got += (size_t)k;
    if (had < 8) {
        size_t m = pe->got < 8 ? pe->got : 8;
        if (memcmp(pe->h.magic + had, HELLO_MAGIC + had, m - had) != 0) return false; /* junk */
    }
    if (pe->got < sizeof pe->h) return true;
    judge(sv, pe->fd, pe->h);
    pe->fd = -1; /* judged: kept or closed there */
    return false;
}

/* Drop the oldest pending connection. */
static void drop_oldest(server_t *sv) {
    close(sv->pend[0].fd);
    memmove(sv->pend, sv->pend + 1, (size_t)(--sv->npend) * sizeof sv->pend[0]);
}

/* Take every connection waiting on the listening socket, reading what it
 * has sent already (a rank's hello is judged here, before a later
 * connection could push it out); with PENDING_MAX waiting, the oldest is
 * dropped for each new one. */
static void take(server_t *sv, int lfd, long long deadline) {
    for (;;) {
        long long now = xdev_comm_now_ms();
        if (now >= deadline) return;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0 && (errno == EMFILE || errno == ENFILE)) {
            sv->fd_errno = errno;
            if (sv->npend > 0) { /* a stranger's, or a rank's that connects again */
                drop_oldest(sv);
                continue;
            }
            sv->fd_paused = now + FD_PAUSE_MS; /* every descriptor is a rank's */
            return;
        }
        if (c < 0) return; /* none left (EAGAIN), or one that gave up meanwhile */
        if (sv->npend == PENDING_MAX) drop_oldest(sv);
        pending_t *pe = &sv->pend[sv->npend++];
        memset(pe, 0, sizeof *pe);
        pe->fd = c;
        pe->since = now;
        pe->by = now + HELLO_MS < deadline ? now + HELLO_MS : deadline;
        if (!hear(sv, pe)) { /* junk, closed, or a whole hello judged */
            if (pe->fd >= 0) close(pe->fd);
            sv->npend--;
        }
        if (sv->come >= sv->world) return;
    }
}

/* Until every rank has come (or was turned away for saying another world
 * size or device type) or the deadline: serve the listening socket and
 * every pending connection in one poll. */
static void gather(server_t *sv, int lfd, long long deadline) {
    struct pollfd pf[PENDING_MAX + 1];
    while (sv->come < sv->world) {
        long long now = xdev_comm_now_ms(), wake = deadline;
        if (now >= deadline) return;
        bool paused = now < sv->fd_paused;
        pf[0] = (struct pollfd){lfd, paused ? 0 : POLLIN, 0};
        if (paused && sv->fd_paused < wake) wake = sv->fd_paused;
        for (int i = 0; i < sv->npend; i++) {
            pf[i + 1] = (struct pollfd){sv->pend[i].fd, POLLIN, 0};
            if (sv->pend[i].by < wake) wake = sv->pend[i].by;
        }
        long long left = wake - now;
        int np = sv->npend;
        if (poll(pf, (nfds_t)np + 1,
                 left < 0      ? 0
                 : left > 1000 ? 1000
                               : (int)left) < 0 &&
            errno != EINTR)
            return;
        now = xdev_comm_now_ms();
        int kept = 0;
        for (int i = 0; i < np; i++) {
            pending_t *pe = &sv->pend[i];
            bool keep = pf[i + 1].revents == 0 || hear(sv, pe);
            if (keep && now >= pe->by) keep = false; /* said nothing in time */
            if (!keep) {
                if (pe->fd >= 0) close(pe->fd);
                continue;
            }
            sv->pend[kept++] = *pe;
        }
        sv->npend = kept;
        if (pf[0].revents & POLLIN) take(sv, lfd, deadline);
    }
}

/* Whether every address addr names is a loopback one (127.0.0.0/8, ::1):
 * then only processes of this host are to reach rank 0; *lo4 says whether
 * one of them is IPv4's. */
static bool loopback_only(const char *addr, bool *lo4) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(addr, NULL, &hints, &res) != 0) return false;
    bool lo = res != NULL;
    *lo4 = false;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            const struct sockaddr_in *a = (const void *)ai->ai_addr;
            lo = lo && (ntohl(a->sin_addr.s_addr) >> 24) == 127;
            *lo4 = true;
        } else if (ai->ai_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const void *)ai->ai_addr;
            lo = lo && IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
        } else {
            lo = false;
        }
    }
    freeaddrinfo(res);
    return lo;
}

/* A listening socket on port: on the loopback interface when the endpoint
 * addr is this host's loopback address (a job on one host: no other host
 * is to reach it), else on every interface (IPv6 and IPv4 where the host
 * has IPv6). */
static xdev_status_t listen_on(const char *addr, int port, int *out) {
    bool lo4 = false, lo = loopback_only(addr, &lo4);
    int fd = lo && lo4 ? -1 : socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    bool v6 = fd >= 0;
    if (!v6) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return XDEV_FAIL(XDEV_ERROR_IO, "rendezvous: socket: %s", strerror(errno));
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6 && !lo) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 a6 = {0};
    struct sockaddr_in a4 = {0};
    int r;
    if (v6) {
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = lo ? in6addr_loopback : in6addr_any;
        a6.sin6_port = htons((uint16_t)port);
        r = bind(fd, (struct sockaddr *)&a6, sizeof a6);
    } else {
        a4.sin_family = AF_INET;
        a4.sin_addr.s_addr = htonl(lo ? INADDR_LOOPBACK : INADDR_ANY);
        a4.sin_port = htons((uint16_t)port);
        r = bind(fd, (struct sockaddr *)&a4, sizeof a4);
    }
    if (r != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank 0 cannot listen on port %d: %s (another job's port? "
                         "set XDEV_RENDEZVOUS_PORT)",
                         port, strerror(e));
    }
    *out = fd;
    return XDEV_SUCCESS;
}

/* Why the group cannot form, as rank 0 says it: sv's first reason. */
static int disagreement(const server_t *sv, char *buf, size_t len) {
    switch (sv->why) {
    case ANS_WORLD:
        return snprintf(buf, len, "rank %u says the world has %u ranks, rank 0 says %d", sv->who,
                        sv->their, sv->world);
    case ANS_TYPE:
        return snprintf(buf, len, "rank %u asked for %s devices, rank 0 for %s", sv->who,
                        type_name(sv->their), type_name((uint32_t)sv->type));
    case ANS_TWICE:
        return snprintf(buf, len, "rank %u came twice (two processes with one rank number?)",
                        sv->who);
    case ANS_RANK:
        return snprintf(buf, len, "a process said it was rank %u, not in 1..%d", sv->their,
                        sv->world - 1);
    default:
        buf[0] = '\0';
        return 0;
    }
}

/* Rank 0: listen, collect every other rank's hello, answer each: the id,
 * or why the group cannot form (a disagreement before a missing rank). */
static xdev_status_t serve(const char *addr, int port, int world, xdev_device_type_t type,
                           const xdev_communicator_id_t *id, long long deadline) {
    struct rlimit nofile = {0, 0};
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
        /* Room for a connection from every rank, the waiting ones and the
         * process's own: raise the soft limit toward the hard one. */
        rlim_t want = (rlim_t)world + PENDING_MAX + 256;
        if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < want &&
            nofile.rlim_max != nofile.rlim_cur) {
            struct rlimit up = {
                nofile.rlim_max == RLIM_INFINITY || nofile.rlim_max > want ? want : nofile.rlim_max,
                nofile.rlim_max};
            if (setrlimit(RLIMIT_NOFILE, &up) == 0) nofile = up;
        }
    }
    server_t sv = {.world = world, .type = type, .job = job_hash(), .come = 1};
    sv.fd = malloc((size_t)world * sizeof *sv.fd);
    sv.state = calloc((size_t)world, 1);
    if (sv.fd == NULL || sv.state == NULL) {
        free(sv.fd);
        free(sv.state);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "rendezvous: no memory for %d ranks", world);
    }
    for (int i = 0; i < world; i++)
        sv.fd[i] = -1;
    int lfd = -1;
    xdev_status_t st = listen_on(addr, port, &lfd);
    if (st != XDEV_SUCCESS) {
        free(sv.fd);
        free(sv.state);
        return st;
    }
    gather(&sv, lfd, deadline);
    close(lfd);
    for (int i = 0; i < sv.npend; i++)
        close(sv.pend[i].fd);
    char missing[160] = "";
    size_t ml = 0;
    int nmissing = 0, first_missing = 0;
    for (int i = 1; i < world; i++)
        if (sv.state[i] == PEER_NONE) {
            if (nmissing < 8 && ml < sizeof missing)
                ml += (size_t)snprintf(missing + ml, sizeof missing - ml, "%s%d",
                                       nmissing ? ", " : "", i);
            if (nmissing++ == 0) first_missing = i;
        }
    if (!sv.turned && !nmissing) sv.why = ANS_OK; /* every rank joined: the group forms */
    reply_t rep = sv.why != ANS_OK ? answer(&sv, sv.why, sv.who, sv.their)
                  : nmissing       ? answer(&sv, ANS_MISSING, (uint32_t)first_missing, 0)
                                   : answer(&sv, ANS_OK, 0, 0);
    if (sv.why == ANS_OK && !nmissing) memcpy(rep.id, id->bytes, sizeof rep.id);
    long long send_deadline = xdev_comm_now_ms() + 5000;
    for (int i = 1; i < world; i++)
        if (sv.fd[i] >= 0) {
            (void)xfer(sv.fd[i], &rep, sizeof rep, true, send_deadline);
            close(sv.fd[i]);
        }
    free(sv.fd);
    free(sv.state);
    char why[200];
    if (disagreement(&sv, why, sizeof why) > 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "rendezvous: %s%s%s%s", why,
                         nmissing > 1 ? "; ranks "
                         : nmissing   ? "; rank "
                                      : "",
                         missing, nmissing ? " never came" : "");
    if (nmissing && sv.fd_errno != 0)
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank 0 ran out of file descriptors (%s) taking the "
                         "connections of %d ranks: its RLIMIT_NOFILE is %lld (soft), %lld (hard); "
                         "rank%s %s%s never joined: raise the limit (ulimit -n) above %d",
                         strerror(sv.fd_errno), world, (long long)nofile.rlim_cur,
                         (long long)nofile.rlim_max, nmissing > 1 ? "s" : "", missing,
                         nmissing > 8 ? ", ..." : "", world + PENDING_MAX + 256);
    if (nmissing)
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank%s %s%s of %d never reached rank 0 on port %d within the "
                         "timeout (XDEV_COMM_TIMEOUT)",
                         nmissing > 1 ? "s" : "", missing, nmissing > 8 ? ", ..." : "", world,
                         port);
    return XDEV_SUCCESS;
}

/* Connect the non-blocking socket s to ai before the deadline (a host that
 * drops the packets does not hold us past it); false with *err set. */
static bool connect_by(int s, const struct addrinfo *ai, long long deadline, int *err) {
    if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) return true;
    if (errno != EINPROGRESS) {
        *err = errno;
        return false;
    }
    for (;;) {
        long long left = deadline - xdev_comm_now_ms();
        if (left <= 0) {
            *err = ETIMEDOUT;
            return false;
        }
        struct pollfd pf = {s, POLLOUT, 0};
        int r = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue;
        int e = 0;
        socklen_t len = sizeof e;
        if (r < 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
        if (e == 0) return true;
        *err = e;
        return false;
    }
}

/* A connection to rank 0 (retrying while it does not listen yet), or -1
 * at the deadline with *last_errno saying why. */
static int dial_rank0(const struct addrinfo *res, long long deadline, int *last_errno) {
    while (xdev_comm_now_ms() < deadline) {
        for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
            int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                           ai->ai_protocol);
            if (s < 0) continue;
            if (connect_by(s, ai, deadline, last_errno)) {
                int one = 1;
                setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                return s;
            }
            close(s);
        }
        struct timespec ts = {0, 100 * 1000 * 1000}; /* rank 0 not up yet: again */
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Other ranks: reach rank 0, say who we are, read the id. A connection
 * rank 0 closed without an answer (it was busy with strangers and dropped
 * ours, or it is restarting) is made again until the deadline. */
static xdev_status_t fetch(const char *addr, int port, int rank, int world, xdev_device_type_t type,
                           xdev_communicator_id_t *id, long long deadline) {
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(addr, ports, &hints, &res);
    if (gai != 0)
        return XDEV_FAIL(XDEV_ERROR_IO, "rendezvous: rank 0's host '%s': %s", addr,
                         gai_strerror(gai));
    hello_t h = {.rank = htonl((uint32_t)rank),
                 .world = htonl((uint32_t)world),
                 .type = htonl((uint32_t)type),
                 .job = htonl(job_hash())};
    memcpy(h.magic, HELLO_MAGIC, 8);
    reply_t rep;
    int last_errno = 0, got = 0, tries = 0;
    while (got <= 0 && xdev_comm_now_ms() < deadline) {
        int fd = dial_rank0(res, deadline, &last_errno);
        if (fd < 0) break;
        tries++;
        /* Rank 0 answers when every rank has come or at its own deadline,
         * which may fall a little after ours (it may have started later):
         * wait for the answer a while past ours, so that we learn which
         * rank is missing. */
        got = xfer(fd, &h, sizeof h, true, deadline);
        if (got > 0) got = xfer(fd, &rep, sizeof rep, false, deadline + ANSWER_GRACE_MS);
        close(fd);
        if (got == 0) break; /* the deadline passed */
        if (got < 0) {
            struct timespec ts = {0, 100 * 1000 * 1000}; /* dropped: again */
            nanosleep(&ts, NULL);
        }
    }
    freeaddrinfo(res);
    if (tries == 0)
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank %d could not reach rank 0 at %s:%d within the timeout "
                         "(XDEV_COMM_TIMEOUT): %s",
                         rank, addr, port, last_errno ? strerror(last_errno) : "no attempt");
    if (got <= 0 || memcmp(rep.magic, HELLO_MAGIC, 8) != 0)
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank %d reached %s:%d but got no answer from rank 0 within "
                         "the timeout (XDEV_COMM_TIMEOUT)",
                         rank, addr, port);
    uint32_t status = ntohl(rep.status), world0 = ntohl(rep.world), type0 = ntohl(rep.type),
             who = ntohl(rep.who), their = ntohl(rep.their);
    switch (status) {
    case ANS_JOB:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rendezvous: rank 0 at %s:%d belongs to another job (its job id "
                         "differs): two jobs share the port? set XDEV_RENDEZVOUS_PORT",
                         addr, port);
    case ANS_OK:
        memcpy(id->bytes, rep.id, sizeof id->bytes);
        return XDEV_SUCCESS;
    case ANS_WORLD:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rendezvous: rank %u says the world has %u ranks, rank 0 says %u", who,
                         their, world0);
    case ANS_TYPE:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rendezvous: rank %u asked for %s devices, rank 0 for %s", who,
                         type_name(their), type_name(type0));
    case ANS_TWICE:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rendezvous: rank %u came twice (two processes with one rank number?)",
                         who);
    case ANS_MISSING:
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank %u never reached rank 0 within the timeout "
                         "(XDEV_COMM_TIMEOUT), so the group of %d cannot form",
                         who, world);
    default:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rendezvous: a process said it was rank %u, not in 1..%u (this is rank "
                         "%d)",
                         their, world0 - 1, rank);
    }
}

/* ------------------------------------------------------------ the call */

xdev_status_t xdev_communicator_init_env(xdev_communicator_t *comm, xdev_device_type_t type) {
    XDEV_REQUIRE_ARG(comm);
    *comm = NULL;
    xdev_launch_info_t li;
    XDEV_CHECK(xdev_launch_info(&li));
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_backend_t *be;
    XDEV_CHECK(xdev_backend_acquire(type, &be));
    int count = be->device_count;
    if (count <= 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_DEVICE, "no %s device for rank %d",
                             xdev_device_type_name(type), li.rank);
    int local = li.local_rank >= 0 ? li.local_rank : li.rank;
    xdev_device_t device = {type, local % count};
    int timeout_s;
    XDEV_CHECK(xdev_comm_timeout_s(XDEV_COMM_TIMEOUT_DEFAULT_S, &timeout_s));
    long long deadline = xdev_comm_now_ms() + (long long)timeout_s * 1000;
    xdev_communicator_id_t id;
    const xdev_transport_t *xp = NULL;
    if (be->flags & XDEV_BACKEND_HOST_MEMORY) XDEV_CHECK(xdev_transport_pick(&xp));
    if (xp != NULL && (xp->flags & XDEV_TRANSPORT_SELF_MEET)) {
        static _Atomic uint64_t calls; /* the nth call of every rank makes the nth group */
        xdev_communicator_id_self_meet(type, xp, atomic_fetch_add(&calls, 1), &id);
    } else if (li.world_size > 1) {
        char addr[256];
        int port = 0;
        XDEV_CHECK(endpoint(&li, addr, sizeof addr, &port));
        if (li.rank == 0) {
            XDEV_CHECK(xdev_communicator_unique_id(type, &id));
            XDEV_CHECK(serve(addr, port, li.world_size, type, &id, deadline));
        } else {
            XDEV_CHECK(fetch(addr, port, li.rank, li.world_size, type, &id, deadline));
        }
    } else {
        XDEV_CHECK(xdev_communicator_unique_id(type, &id));
    }
    XDEV_CHECK(xdev_communicator_init_rank(comm, li.world_size, &id, li.rank, device));
    return XDEV_SUCCESS;
}
