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
 * differ, a rank twice). A rank that never comes makes every other fail
 * at the deadline (XDEV_COMM_TIMEOUT, default 120 s) with a message naming
 * it. The port is closed again as soon as the id has gone out. */
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "xdev/communicator.h"
#include "runtime/registry.h"
#include "xdev/device.h"

#define HELLO_MAGIC "xdevrdv1"
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
 * id. */
typedef struct hello {
    char magic[8];
    uint32_t rank, world, type, job;
} hello_t;

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
    uint32_t status, world, type, missing;
    unsigned char id[XDEV_COMMUNICATOR_ID_BYTES];
} reply_t;

/* Move n bytes over a blocking-with-poll socket before the deadline. */
static bool xfer(int fd, void *buf, size_t n, bool sending, long long deadline) {
    char *p = buf;
    while (n > 0) {
        long long left = deadline - xdev_comm_now_ms();
        if (left <= 0) return false;
        struct pollfd pf = {fd, sending ? POLLOUT : POLLIN, 0};
        int r = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* Rank 0: listen, collect every other rank's hello, answer each. */
static xdev_status_t serve(int port, int world, xdev_device_type_t type,
                           const xdev_communicator_id_t *id, long long deadline) {
    const uint32_t job = job_hash();
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = fd >= 0;
    if (!v6) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return XDEV_FAIL(XDEV_ERROR_IO, "rendezvous: socket: %s", strerror(errno));
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 a6 = {0};
    struct sockaddr_in a4 = {0};
    int r;
    if (v6) {
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = in6addr_any;
        a6.sin6_port = htons((uint16_t)port);
        r = bind(fd, (struct sockaddr *)&a6, sizeof a6);
    } else {
        a4.sin_family = AF_INET;
        a4.sin_addr.s_addr = htonl(INADDR_ANY);
        a4.sin_port = htons((uint16_t)port);
        r = bind(fd, (struct sockaddr *)&a4, sizeof a4);
    }
    if (r != 0 || listen(fd, world) != 0) {
        int e = errno;
        close(fd);
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank 0 cannot listen on port %d: %s (another job's port? "
                         "set XDEV_RENDEZVOUS_PORT)",
                         port, strerror(e));
    }
    int *peer = calloc((size_t)world, sizeof *peer); /* socket of each rank, 0 = not come */
    if (peer == NULL) {
        close(fd);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "rendezvous: no memory for %d ranks", world);
    }
    int come = 1, status = ANS_OK, bad_rank = -1;
    while (come < world && xdev_comm_now_ms() < deadline) {
        struct pollfd pf = {fd, POLLIN, 0};
        long long left = deadline - xdev_comm_now_ms();
        if (poll(&pf, 1, left > 1000 ? 1000 : (int)left) <= 0) continue;
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        hello_t h;
        long long hello_deadline = xdev_comm_now_ms() + 5000; /* a peer that says nothing */
        if (hello_deadline > deadline) hello_deadline = deadline;
        if (!xfer(c, &h, sizeof h, false, hello_deadline) ||
            memcmp(h.magic, HELLO_MAGIC, 8) != 0) { /* not one of ours: ignore it */
            close(c);
            continue;
        }
        h.rank = ntohl(h.rank);
        h.world = ntohl(h.world);
        h.type = ntohl(h.type);
        h.job = ntohl(h.job);
        int why = h.job != job                               ? ANS_JOB
                  : h.world != (uint32_t)world               ? ANS_WORLD
                  : h.type != (uint32_t)type                 ? ANS_TYPE
                  : h.rank == 0 || h.rank >= (uint32_t)world ? ANS_RANK
                  : peer[h.rank] != 0                        ? ANS_TWICE
                                                             : ANS_OK;
        if (why != ANS_OK) {
            reply_t no = {.status = htonl((uint32_t)why),
                          .world = htonl((uint32_t)world),
                          .type = htonl((uint32_t)type)};
            memcpy(no.magic, HELLO_MAGIC, 8);
            (void)xfer(c, &no, sizeof no, true, hello_deadline);
            close(c);
            if (status == ANS_OK && why != ANS_JOB) status = why;
            continue;
        }
        peer[h.rank] = c;
        come++;
    }
    close(fd);
    char missing[160] = "";
    size_t ml = 0;
    int nmissing = 0;
    for (int i = 1; i < world; i++)
        if (peer[i] == 0) {
            if (nmissing < 8 && ml < sizeof missing)
                ml += (size_t)snprintf(missing + ml, sizeof missing - ml, "%s%d",
                                       nmissing ? ", " : "", i);
            nmissing++;
            if (bad_rank < 0) bad_rank = i;
        }
    reply_t rep = {.status = htonl(nmissing ? ANS_MISSING : ANS_OK),
                   .world = htonl((uint32_t)world),
                   .type = htonl((uint32_t)type),
                   .missing = htonl((uint32_t)(bad_rank < 0 ? 0 : bad_rank))};
    memcpy(rep.magic, HELLO_MAGIC, 8);
    if (!nmissing) memcpy(rep.id, id->bytes, sizeof rep.id);
    long long send_deadline = xdev_comm_now_ms() + 5000;
    for (int i = 1; i < world; i++)
        if (peer[i] != 0) {
            (void)xfer(peer[i], &rep, sizeof rep, true, send_deadline);
            close(peer[i]);
        }
    free(peer);
    if (nmissing)
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank%s %s%s of %d never reached rank 0 on port %d within the "
                         "timeout (XDEV_COMM_TIMEOUT)%s",
                         nmissing > 1 ? "s" : "", missing, nmissing > 8 ? ", ..." : "", world, port,
                         status == ANS_WORLD  ? "; a process said another world size"
                         : status == ANS_TYPE ? "; a process asked for another device type"
                         : status == ANS_TWICE
                             ? "; a rank came twice (two processes with one RANK?)"
                             : "");
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

/* Other ranks: reach rank 0 (retrying until it listens), say who we are,
 * read the id. */
static xdev_status_t fetch(const char *addr, int port, int rank, int world, xdev_device_type_t type,
                           xdev_communicator_id_t *id, long long deadline) {
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(addr, ports, &hints, &res);
    if (gai != 0)
        return XDEV_FAIL(XDEV_ERROR_IO, "rendezvous: rank 0's host '%s': %s", addr,
                         gai_strerror(gai));
    int fd = -1, last_errno = 0;
    while (fd < 0 && xdev_comm_now_ms() < deadline) {
        for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
            int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                           ai->ai_protocol);
            if (s < 0) continue;
            if (connect_by(s, ai, deadline, &last_errno)) {
                fd = s;
            } else {
                close(s);
            }
        }
        if (fd < 0) {
            struct timespec ts = {0, 100 * 1000 * 1000}; /* rank 0 not up yet: again */
            nanosleep(&ts, NULL);
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank %d could not reach rank 0 at %s:%d within the timeout "
                         "(XDEV_COMM_TIMEOUT): %s",
                         rank, addr, port, last_errno ? strerror(last_errno) : "no attempt");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    hello_t h = {.rank = htonl((uint32_t)rank),
                 .world = htonl((uint32_t)world),
                 .type = htonl((uint32_t)type),
                 .job = htonl(job_hash())};
    memcpy(h.magic, HELLO_MAGIC, 8);
    reply_t rep;
    /* Rank 0 answers when every rank has come or at its own deadline, which
     * may fall a little after ours (it may have started later): wait for the
     * answer a while past ours, so that we learn which rank is missing. */
    bool ok = xfer(fd, &h, sizeof h, true, deadline) &&
              xfer(fd, &rep, sizeof rep, false, deadline + ANSWER_GRACE_MS);
    close(fd);
    if (!ok || memcmp(rep.magic, HELLO_MAGIC, 8) != 0)
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank %d reached %s:%d but got no answer from rank 0 within "
                         "the timeout (XDEV_COMM_TIMEOUT)",
                         rank, addr, port);
    rep.status = ntohl(rep.status);
    rep.world = ntohl(rep.world);
    rep.type = ntohl(rep.type);
    rep.missing = ntohl(rep.missing);
    switch (rep.status) {
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
                         "rendezvous: rank %d says the world has %d ranks, rank 0 says %u", rank,
                         world, rep.world);
    case ANS_TYPE:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rendezvous: rank %d asked for %s devices, rank 0 for %s", rank,
                         type_name((uint32_t)type), type_name(rep.type));
    case ANS_TWICE:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "rendezvous: rank %d came twice (two processes with one rank number?)",
                         rank);
    case ANS_MISSING:
        return XDEV_FAIL(XDEV_ERROR_IO,
                         "rendezvous: rank %u never reached rank 0 within the timeout "
                         "(XDEV_COMM_TIMEOUT), so the group of %d cannot form",
                         rep.missing, world);
    default:
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "rendezvous: rank %d is out of range 1..%d",
                         rank, world - 1);
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
            XDEV_CHECK(serve(port, li.world_size, type, &id, deadline));
        } else {
            XDEV_CHECK(fetch(addr, port, li.rank, li.world_size, type, &id, deadline));
        }
    } else {
        XDEV_CHECK(xdev_communicator_unique_id(type, &id));
    }
    XDEV_CHECK(xdev_communicator_init_rank(comm, li.world_size, &id, li.rank, device));
    return XDEV_SUCCESS;
}
