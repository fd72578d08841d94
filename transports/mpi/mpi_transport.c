/* SPDX-License-Identifier: Apache-2.0 */
/* mpi_transport.c - the "mpi" transport (xdev/transport.h): the ranks of a
 * host-memory backend (the CPU) in processes that mpirun or srun started,
 * on any number of hosts, meet in MPI and run their collectives through
 * it. libxdevcomm-mpi.so links the MPI library; libxdev loads it only when
 * a group asks for it, so a program that never does pays nothing for MPI.
 *
 * MPI is started (MPI_Init_thread, MPI_THREAD_MULTIPLE) by the first join
 * unless the application started it, and then finalised at exit by this
 * module, unless a group failed with requests MPI cannot take back
 * (finalising would wait for them forever).
 *
 * A group is every process of MPI's world: join checks, on every rank at
 * once, that the world has nranks processes, each given the same id and a
 * rank of its own,
 * then orders a communicator by xdev rank (MPI_Comm_split). Every wait has
 * the deadline XDEV_COMM_TIMEOUT sets: MPI's nonblocking calls are polled,
 * so a rank that died or hangs makes the others fail with a message. A
 * rank whose process was on this host and is gone is named, within half a
 * second; one on another host is known only by the deadline passing. */
#define _GNU_SOURCE /* gethostname, nanosleep */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_internal.h"

#define LOOK_MS 500 /* how often a long wait looks for ranks gone */

static pthread_mutex_t g_start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_started, g_we_started, g_multiple;
static pthread_mutex_t g_serial = PTHREAD_MUTEX_INITIALIZER;
/* Requests were left that never completed: MPI_Finalize would wait. */
static _Atomic bool g_broken;
/* Calls under way in any group, and whether the process is finalising MPI
 * (at exit, while stream threads may still run queued collectives): a
 * call that comes after that fails instead of calling MPI (g_life). */
static pthread_mutex_t g_life = PTHREAD_MUTEX_INITIALIZER;
static int g_busy;
static bool g_finalizing;

void xm_lock(void) {
    pthread_mutex_lock(&g_serial);
}

void xm_unlock(void) {
    pthread_mutex_unlock(&g_serial);
}

long long xm_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *xm_kind_name(xdev_collective_kind_t kind) {
    static const char *const names[] = {"xdev_all_reduce", "xdev_broadcast",      "xdev_reduce",
                                        "xdev_all_gather", "xdev_reduce_scatter", "xdev_send",
                                        "xdev_recv"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "a collective";
}

/* ---------------------------------------------------------------- failing */

void xm_abort(mpi_group_t *g, const char *why) {
    if (g == NULL) return;
    pthread_mutex_lock(&g->m);
    if (!atomic_load(&g->aborted)) snprintf(g->why, sizeof g->why, "%s", why);
    atomic_store(&g->aborted, true);
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->m);
}

xdev_status_t xm_fail(mpi_group_t *g, int rc, const char *what, char *err, size_t errlen) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", rc);
    snprintf(err, errlen, "%s: MPI failed: %s", what, text);
    xm_abort(g, err);
    return XDEV_ERROR_IO;
}

/* The ranks on this host whose process is gone, as "rank 2 (pid 4242)",
 * into buf; the number of ranks on other hosts into *remote. */
static int gone_ranks(const mpi_group_t *g, char *buf, size_t len, int *remote) {
    int found = 0;
    *remote = 0;
    buf[0] = '\0';
    for (int r = 0; r < g->nranks; r++) {
        if (r == g->rank) continue;
        if (g->host[r] != g->host[g->rank]) {
            ++*remote;
            continue;
        }
        if (kill((pid_t)g->pid[r], 0) == 0 || errno != ESRCH) continue;
        size_t used = strlen(buf);
        if (used + 1 < len)
            snprintf(buf + used, len - used, "%srank %d (pid %ld)", found ? ", " : "", r,
                     g->pid[r]);
        found++;
    }
    return found;
}

/* A wait that reached its deadline: err says what is known of why. */
static xdev_status_t overdue(mpi_group_t *g, const char *what, char *err, size_t errlen) {
    if (g == NULL) {
        snprintf(err, errlen,
                 "%s did not complete within XDEV_COMM_TIMEOUT: not every process of MPI's "
                 "world came (one never called it, died or hangs)",
                 what);
        return XDEV_ERROR_IO;
    }
    char gone[160];
    int remote;
    int n = gone_ranks(g, gone, sizeof gone, &remote);
    if (n > 0)
        snprintf(err, errlen, "%s did not complete within %d s: %s on this host %s gone", what,
                 g->timeout_s, gone, n > 1 ? "are" : "is");
    else if (remote > 0)
        snprintf(err, errlen,
                 "%s did not complete within %d s: a rank died or hangs (every rank on this "
                 "host is alive; %d run on other hosts, which cannot be looked at from here)",
                 what, g->timeout_s, remote);
    else
        snprintf(err, errlen,
                 "%s did not complete within %d s: a rank hangs or took another path (every "
                 "rank's process is alive)",
                 what, g->timeout_s);
    xm_abort(g, err);
    return XDEV_ERROR_IO;
}

xdev_status_t xm_wait(mpi_group_t *g, MPI_Request *reqs, int n, long long deadline_ms,
                      const char *what, char *err, size_t errlen) {
    /* Spin (yielding) for a while, as a blocking MPI call would; then look
     * every 20 us, so a long wait does not hold a core. Every LOOK_MS the
     * ranks on this host are looked at: one whose process is gone fails the
     * wait at once rather than at the deadline. */
    long long spin_until = xm_now_ms() + 10, look_at = spin_until + LOOK_MS;
    for (;;) {
        int done = 0;
        xm_lock();
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        xm_unlock();
        if (rc != MPI_SUCCESS) {
            atomic_store(&g_broken, true);
            return xm_fail(g, rc, what, err, errlen);
        }
        if (done) return XDEV_SUCCESS;
        if (g != NULL && atomic_load(&g->aborted)) {
            atomic_store(&g_broken, true);
            pthread_mutex_lock(&g->m);
            snprintf(err, errlen, "%s: the group was aborted: %s", what, g->why);
            pthread_mutex_unlock(&g->m);
            return XDEV_ERROR_INVALID_VALUE;
        }
        long long now = xm_now_ms();
        if (now >= deadline_ms) {
            atomic_store(&g_broken, true);
            return overdue(g, what, err, errlen);
        }
        if (g != NULL && now >= look_at) {
            look_at = now + LOOK_MS;
            char gone[160];
            int remote;
            if (gone_ranks(g, gone, sizeof gone, &remote) > 0) {
                atomic_store(&g_broken, true);
                snprintf(err, errlen, "%s cannot complete: %s on this host ended", what, gone);
                xm_abort(g, err);
                return XDEV_ERROR_IO;
            }
        }
        if (now < spin_until) {
            sched_yield();
        } else {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---------------------------------------------------------------- turns */

bool xm_take_turn(mpi_group_t *g, const uint64_t *turn, uint64_t seq, long long deadline_ms) {
    struct timespec end = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000};
    pthread_mutex_lock(&g->m);
    int rc = 0;
    while (*turn != seq && !atomic_load(&g->aborted) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&g->cv, &g->m, &end);
    bool mine = *turn == seq && !atomic_load(&g->aborted);
    pthread_mutex_unlock(&g->m);
    return mine;
}

xdev_status_t xm_turn_failed(mpi_group_t *g, const char *what, const char *before, char *err,
                             size_t errlen) {
    pthread_mutex_lock(&g->m);
    bool aborted = atomic_load(&g->aborted);
    if (aborted) snprintf(err, errlen, "%s: the group was aborted: %s", what, g->why);
    pthread_mutex_unlock(&g->m);
    if (aborted) return XDEV_ERROR_INVALID_VALUE;
    snprintf(err, errlen, "%s waited %d s (XDEV_COMM_TIMEOUT) for the %s before it to start", what,
             g->timeout_s, before);
    xm_abort(g, err);
    return XDEV_ERROR_IO;
}

void xm_pass_turn(mpi_group_t *g, uint64_t *turn) {
    pthread_mutex_lock(&g->m);
    ++*turn;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->m);
}

/* ---------------------------------------------------------------- MPI itself */

/* fmin and fmax as MPI ops, so that a NaN loses to a number as in xdev's
 * other engines (MPI_MIN and MPI_MAX compare with < and >). */
static MPI_Op g_fmin = MPI_OP_NULL, g_fmax = MPI_OP_NULL;

#define FLOAT_OP(NAME, FN)                                                                         \
    static void NAME(void *in, void *inout, int *len, MPI_Datatype *type) {                        \
        if (*type == MPI_DOUBLE) {                                                                 \
            for (int i = 0; i < *len; i++)                                                         \
                ((double *)inout)[i] = FN(((double *)inout)[i], ((double *)in)[i]);                \
        } else {                                                                                   \
            for (int i = 0; i < *len; i++)                                                         \
                ((float *)inout)[i] = FN##f(((float *)inout)[i], ((float *)in)[i]);                \
        }                                                                                          \
    }
FLOAT_OP(op_fmin, fmin)
FLOAT_OP(op_fmax, fmax)

MPI_Op xm_float_op(bool max) {
    return max ? g_fmax : g_fmin;
}

/* At exit: finalise the MPI this module started, unless that would wait
 * for requests that will never complete or for a call still under way. */
static void finish(void) {
    pthread_mutex_lock(&g_life);
    g_finalizing = true;
    int busy = g_busy;
    pthread_mutex_unlock(&g_life);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (busy > 0 || !xm_sends_drain(xm_now_ms() + 10000)) atomic_store(&g_broken, true);
    xm_sends_stop();
    if (atomic_load(&g_broken)) return; /* mpirun then says this rank ended without MPI_Finalize */
    if (g_fmin != MPI_OP_NULL) MPI_Op_free(&g_fmin);
    if (g_fmax != MPI_OP_NULL) MPI_Op_free(&g_fmax);
    MPI_Finalize();
}

static xdev_status_t start(char *err, size_t errlen) {
    pthread_mutex_lock(&g_start_lock);
    xdev_status_t st = XDEV_SUCCESS;
    if (!g_started) {
        int inited = 0, finalized = 0, level = MPI_THREAD_SINGLE;
        MPI_Initialized(&inited); /* these two may be called at any time, from any thread */
        MPI_Finalized(&finalized);
        if (finalized) {
            snprintf(err, errlen, "MPI was finalised already: the mpi transport cannot start it");
            st = XDEV_ERROR_INVALID_VALUE;
        } else if (!inited) {
            int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &level);
            if (rc != MPI_SUCCESS) {
                snprintf(err, errlen, "MPI_Init_thread failed (code %d)", rc);
                st = XDEV_ERROR_BACKEND_UNAVAILABLE;
            } else {
                g_we_started = true;
                atexit(finish);
            }
        } else {
            xm_lock();
            MPI_Query_thread(&level);
            xm_unlock();
        }
        if (st == XDEV_SUCCESS && level < MPI_THREAD_SERIALIZED) {
            snprintf(err, errlen,
                     "MPI gives thread level %d: xdev's collectives run on stream threads and "
                     "need MPI_THREAD_SERIALIZED at least (MPI_THREAD_MULTIPLE: start MPI with "
                     "MPI_Init_thread, or let xdev start it)",
                     level);
            st = XDEV_ERROR_NOT_SUPPORTED;
        }
        if (st == XDEV_SUCCESS) {
            g_multiple = level >= MPI_THREAD_MULTIPLE;
            xm_lock();
            MPI_Op_create(op_fmin, 1, &g_fmin);
            MPI_Op_create(op_fmax, 1, &g_fmax);
            xm_unlock();
            g_started = true;
        }
    }
    pthread_mutex_unlock(&g_start_lock);
    return st;
}

/* ---------------------------------------------------------------- the table */

static xdev_status_t t_unique_id(unsigned char id[XDEV_TRANSPORT_ID_BYTES], char *err,
                                 size_t errlen) {
    (void)err;
    (void)errlen;
    /* Random, and never all zeros but the first 8 bytes (init_env's ids). */
    uint64_t a = 0, b = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f == NULL || fread(&a, sizeof a, 1, f) != 1 || fread(&b, sizeof b, 1, f) != 1) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        a = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)getpid();
        b = (uint64_t)ts.tv_sec;
    }
    if (f != NULL) fclose(f);
    memset(id, 0, XDEV_TRANSPORT_ID_BYTES);
    b |= 1;
    memcpy(id, &a, sizeof a);
    memcpy(id + 8, &b, sizeof b);
    return XDEV_SUCCESS;
}

static uint64_t fnv(uint64_t h, const char *p) {
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* Who can see whose processes: a hash of the host's name, its boot and
 * this process's pid namespace, so that two ranks are taken for one host
 * (their pids looked at with kill) only when they share all three (two
 * containers of one name, or two hosts of one name, differ). */
static uint64_t host_hash(void) {
    char name[256] = "", boot[64] = "", ns[64] = "";
    gethostname(name, sizeof name - 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, sizeof boot, f) == NULL) boot[0] = '\0';
        fclose(f);
    }
    ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    ns[n > 0 ? n : 0] = '\0';
    return fnv(fnv(fnv(1469598103934665603ull, name), boot), ns);
}

/* What each process says at join, and what they must agree on. */
enum { I_TAG0, I_TAG1, I_NRANKS, I_RANK, I_PID, I_HOST, I_N };

static xdev_status_t agree(const xdev_transport_join_t *j, const uint64_t *me, const uint64_t *all,
                           int world, char *err, size_t errlen) {
    if (world != j->nranks) {
        snprintf(err, errlen,
                 "MPI's world has %d process%s but the group %d ranks: the mpi transport makes "
                 "a group of every process mpirun or srun started%s",
                 world, world == 1 ? "" : "es", j->nranks,
                 world == 1 ? " (this process was not started by mpirun or srun, or MPI could "
                              "not reach them)"
                            : "");
        return XDEV_ERROR_INVALID_VALUE;
    }
    for (int w = 0; w < world; w++) {
        const uint64_t *o = &all[w * I_N];
        if (o[I_NRANKS] != (uint64_t)j->nranks) {
            snprintf(err, errlen,
                     "MPI's world rank %d was told the group has %d ranks, this one %d: every "
                     "rank of the group fails",
                     w, (int)o[I_NRANKS], j->nranks);
            return XDEV_ERROR_INVALID_VALUE;
        }
        if (o[I_TAG0] != me[I_TAG0] || o[I_TAG1] != me[I_TAG1]) {
            snprintf(err, errlen,
                     "MPI's world rank %d joined with another id than this rank: every process "
                     "of MPI's world joins one group, with the id xdev_communicator_unique_id "
                     "made for it",
                     w);
            return XDEV_ERROR_INVALID_VALUE;
        }
        for (int v = 0; v < w; v++)
            if (all[v * I_N + I_RANK] == o[I_RANK]) {
                snprintf(err, errlen, "MPI's world ranks %d and %d both joined as rank %d", v, w,
                         (int)o[I_RANK]);
                return XDEV_ERROR_INVALID_VALUE;
            }
    }
    return XDEV_SUCCESS;
}

static void group_free(mpi_group_t *g) {
    if (g == NULL) return;
    free(g->send_turn);
    free(g->pid);
    free(g->host);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->m);
    free(g);
}

static mpi_group_t *group_new(int nranks) {
    mpi_group_t *g = calloc(1, sizeof *g);
    if (g == NULL) return NULL;
    pthread_mutex_init(&g->m, NULL);
    pthread_condattr_t ca; /* deadlines are CLOCK_MONOTONIC (xm_now_ms) */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    g->send_turn = calloc(2 * (size_t)nranks, sizeof *g->send_turn);
    g->pid = calloc((size_t)nranks, sizeof *g->pid);
    g->host = calloc((size_t)nranks, sizeof *g->host);
    if (g->send_turn == NULL || g->pid == NULL || g->host == NULL) {
        group_free(g);
        return NULL;
    }
    g->recv_turn = g->send_turn + nranks;
    g->nranks = nranks;
    return g;
}

/* What a join hands to MPI: on the heap, and left there when the join
 * fails with a request pending (MPI would write into it when a late rank
 * comes). */
typedef struct joining {
    MPI_Comm dup;
    uint64_t mine[I_N];
    uint64_t all[];
} joining_t;

static xdev_status_t t_join(const xdev_transport_join_t *j, void **out, char *err, size_t errlen) {
    *out = NULL;
    xdev_status_t st = start(err, errlen);
    if (st != XDEV_SUCCESS) return st;
    int world = 0;
    xm_lock();
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    xm_unlock();
    long long deadline = xm_now_ms() + (long long)j->timeout_s * 1000;
    joining_t *jn = calloc(1, sizeof *jn + (size_t)world * I_N * sizeof(uint64_t));
    mpi_group_t *g = group_new(j->nranks);
    if (jn == NULL || g == NULL) {
        free(jn);
        group_free(g);
        snprintf(err, errlen, "no host memory for a group of %d ranks", j->nranks);
        return XDEV_ERROR_OUT_OF_MEMORY;
    }
    /* A world of our own (idup: a rank that never comes must not hang the
     * others), then everyone's id, rank and process. */
    jn->dup = MPI_COMM_NULL;
    MPI_Request req;
    xm_lock();
    int rc = MPI_Comm_idup(MPI_COMM_WORLD, &jn->dup, &req);
    xm_unlock();
    bool pending = rc == MPI_SUCCESS;
    st = rc != MPI_SUCCESS ? xm_fail(NULL, rc, "joining (MPI_Comm_idup)", err, errlen)
                           : xm_wait(NULL, &req, 1, deadline, "joining the group", err, errlen);
    if (st == XDEV_SUCCESS) {
        memcpy(&jn->mine[I_TAG0], j->id, 8);
        memcpy(&jn->mine[I_TAG1], j->id + 8, 8);
        jn->mine[I_NRANKS] = (uint64_t)j->nranks;
        jn->mine[I_RANK] = (uint64_t)j->rank;
        jn->mine[I_PID] = (uint64_t)getpid();
        jn->mine[I_HOST] = host_hash();
        xm_lock();
        MPI_Comm_set_errhandler(jn->dup, MPI_ERRORS_RETURN);
        rc = MPI_Iallgather(jn->mine, I_N, MPI_UINT64_T, jn->all, I_N, MPI_UINT64_T, jn->dup, &req);
        xm_unlock();
        pending = rc == MPI_SUCCESS;
        st = rc != MPI_SUCCESS ? xm_fail(NULL, rc, "joining (MPI_Iallgather)", err, errlen)
                               : xm_wait(NULL, &req, 1, deadline, "joining the group", err, errlen);
    }
    if (st == XDEV_SUCCESS) {
        pending = false;
        st = agree(j, jn->mine, jn->all, world, err, errlen);
    }
    MPI_Comm comm = MPI_COMM_NULL;
    if (st == XDEV_SUCCESS) { /* everyone is here: order a communicator by xdev rank */
        xm_lock();
        rc = MPI_Comm_split(jn->dup, 0, j->rank, &comm);
        if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        xm_unlock();
        if (rc != MPI_SUCCESS) st = xm_fail(NULL, rc, "joining (MPI_Comm_split)", err, errlen);
    }
    if (st == XDEV_SUCCESS) {
        for (int w = 0; w < world; w++) {
            int r = (int)jn->all[w * I_N + I_RANK];
            g->pid[r] = (long)jn->all[w * I_N + I_PID];
            g->host[r] = jn->all[w * I_N + I_HOST];
        }
        g->comm = comm;
        g->rank = j->rank;
        g->timeout_s = j->timeout_s;
    }
    if (pending) { /* MPI still holds jn: it stays */
        group_free(g);
        return st;
    }
    if (jn->dup != MPI_COMM_NULL) {
        xm_lock();
        MPI_Comm_free(&jn->dup);
        xm_unlock();
    }
    free(jn);
    if (st != XDEV_SUCCESS) {
        group_free(g);
        return st;
    }
    *out = g;
    return XDEV_SUCCESS;
}

static xdev_status_t t_run(void *group, const xdev_collective_desc_t *d, uint64_t seq, char *err,
                           size_t errlen) {
    mpi_group_t *g = group;
    if (atomic_load(&g->aborted)) {
        pthread_mutex_lock(&g->m);
        snprintf(err, errlen, "%s: the group was aborted: %s", xm_kind_name(d->kind), g->why);
        pthread_mutex_unlock(&g->m);
        return XDEV_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&g_life);
    bool late = g_finalizing;
    if (!late) g_busy++;
    pthread_mutex_unlock(&g_life);
    if (late) {
        snprintf(err, errlen,
                 "%s: the process is exiting and MPI is being finalised: the collective did "
                 "not run (synchronize before exit)",
                 xm_kind_name(d->kind));
        xm_abort(g, err);
        return XDEV_ERROR_INVALID_VALUE;
    }
    if (!g_multiple) xm_sends_poll(); /* no thread moves them on */
    xdev_status_t st = d->kind == XDEV_COLL_SEND   ? xm_send(g, d, seq, err, errlen)
                       : d->kind == XDEV_COLL_RECV ? xm_recv(g, d, seq, err, errlen)
                                                   : xm_collective(g, d, seq, err, errlen);
    pthread_mutex_lock(&g_life);
    g_busy--;
    pthread_mutex_unlock(&g_life);
    return st;
}

static void t_abort(void *group) {
    mpi_group_t *g = group;
    char why[64];
    snprintf(why, sizeof why, "xdev_communicator_abort on rank %d", g->rank);
    xm_abort(g, why);
}

static void t_leave(void *group) {
    mpi_group_t *g = group;
    /* Its sends delivered (the receivers have had the timeout to post
     * theirs), so that no xdev thread calls MPI once the last group is
     * gone: the program may finalise MPI next. */
    long long deadline = xm_now_ms() + (long long)g->timeout_s * 1000;
    if (!atomic_load(&g->aborted) && !(xm_sends_drain(deadline) && xm_sends_quiesce(deadline)))
        xm_abort(g, "sends never received when the rank left");
    /* A group that failed may have requests MPI still holds on its
     * communicator: it stays (a few hundred bytes), rather than be freed
     * under them. */
    if (!atomic_load(&g->aborted)) {
        xm_lock();
        MPI_Comm_free(&g->comm);
        xm_unlock();
    }
    group_free(g);
}

static const xdev_transport_t k_table = {sizeof(xdev_transport_t),
                                         XDEV_TRANSPORT_ABI,
                                         "mpi",
                                         XDEV_TRANSPORT_SELF_MEET,
                                         t_unique_id,
                                         t_join,
                                         t_run,
                                         t_abort,
                                         t_leave};

XDEV_API const xdev_transport_t *xdev_transport_entry(void);
const xdev_transport_t *xdev_transport_entry(void) {
    return &k_table;
}
