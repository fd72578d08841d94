/* SPDX-License-Identifier: Apache-2.0 */
/* shm_comm.c - communicator ranks in several processes for backends whose
 * device memory is host memory (the CPU backend), through POSIX shared
 * memory.
 *
 * The group id names a shared-memory object; the first rank to arrive
 * creates it (O_EXCL), sizes it and initialises its header; the others map
 * the header, check that they were told the same number of ranks (a
 * disagreement fails every rank at once, naming both counts), then map the
 * whole object; the last to join unlinks the name (the mappings stay).
 * Each rank has a staging slot of SLOT bytes. A collective moves through
 * the slots a chunk at a time: every rank copies its part into its slot,
 * all meet at a barrier, each computes its own output from every slot, all
 * meet again before the slots are reused. Before the first chunk the ranks
 * compare what they were asked (kind, count, dtype, op, root): if they
 * disagree nothing is written and every rank reports it. Runs in the
 * rank's stream's host function.
 *
 * No locks are shared between processes. Every shared field is an atomic
 * in the header, and a rank that must wait sleeps on one futex word
 * (`event`) that each change another rank may wait for bumps and wakes.
 * A process killed at any instruction therefore leaves nothing locked, and
 * a wake never depends on a waiter being alive (glibc's process-shared
 * condition variable can block the broadcaster forever when a waiter died,
 * which hung the survivors' xdev_communicator_abort). A rank that has waited one
 * slice looks every POLL_MS at its peers' processes (pid and start time
 * from /proc, so a reused pid is not taken for the rank) and aborts the
 * group naming a peer that died or left, so survivors learn of it within
 * a fraction of a second; otherwise a peer that does not come within
 * XDEV_COMM_TIMEOUT seconds (default 120) aborts the group.
 *
 * Send/recv: the n-th send from rank a to rank b is a shared-memory object
 * of its own, "<group>-a-b-n", made and filled by the send without waiting
 * for the receiver (so two ranks may each send before they receive, as on
 * one process's CPU devices); the n-th recv on b from a waits for it,
 * checks its count and dtype, copies it out and unlinks it; the last rank
 * to leave (or the last alive, when a peer died) unlinks any never
 * received. A message holds /dev/shm pages until its recv runs (a full
 * /dev/shm fails the send, not the process). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "base/env.h"
#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "comm/host_reduce.h"
#include "comm/shm_comm.h"

#define SLOT ((size_t)1 << 20) /* staging bytes per rank */
#define POLL_MS 20             /* a waiting rank's look at its peers' processes */
#define MAX_SHM_RANKS 64
#define READY 0x78736d32u /* "xsm2" */
#define REASON_LEN 224

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "atomics in shared memory must be lock-free");

typedef struct shm_desc {
    int kind, dtype, op, root;
    size_t count;
} shm_desc_t;

/* A rank's place in the header. Its process is written before state
 * becomes JOINED and read only after. */
enum { RANK_ABSENT, RANK_CLAIMED, RANK_JOINED, RANK_LEFT, RANK_DEAD };
typedef struct shm_rank {
    _Atomic int state;
    int pid;
    unsigned long long start; /* the process's start time, /proc/<pid>/stat field 22 */
    unsigned long long pidns; /* its pid namespace's inode; 0 = unknown */
} shm_rank_t;

enum { NOT_ABORTED, ABORTED, ABORTING /* the reason is being written */ };

typedef struct shm_hdr {
    _Atomic uint32_t ready;
    int nranks;
    _Atomic uint32_t event; /* futex word: bumped and woken on every change */
    _Atomic int joined;
    _Atomic int arrived;
    _Atomic uint32_t generation; /* barriers passed */
    _Atomic int aborted;
    char reason[REASON_LEN]; /* why, once aborted == ABORTED */
    shm_rank_t ranks[MAX_SHM_RANKS];
    shm_desc_t desc[MAX_SHM_RANKS];
} shm_hdr_t;

struct xdev_shm_group {
    shm_hdr_t *h;
    size_t map_bytes;
    int nranks, rank;
    int timeout_s;
    unsigned long long pidns; /* this process's pid namespace */
    char *slots;
    char name[96]; /* the group's id: messages are named after it */
    /* This process's collectives run one at a time in the order the core
     * numbered them, though two streams' threads may run two at once
     * (the slots and the per-rank request hold one at a time). */
    pthread_mutex_t turn_m;
    pthread_cond_t turn_cv;
    uint64_t next_coll;
};

/* One send's object: this header, then the data. */
typedef struct shm_msg {
    _Atomic uint32_t ready; /* READY once the data is in */
    int dtype;
    size_t count;
} shm_msg_t;

#define MSG_DATA ((size_t)64)
_Static_assert(sizeof(shm_msg_t) <= MSG_DATA, "message header fits before the data");

/* Size a new shared-memory object and reserve its pages now: ftruncate alone
 * reserves nothing on tmpfs, and a write into a full /dev/shm then kills the
 * process with SIGBUS instead of failing here. 0 or an errno value. */
static int reserve(int fd, size_t bytes) {
    return posix_fallocate(fd, 0, (off_t)bytes);
}

static size_t header_bytes(void) {
    return (sizeof(shm_hdr_t) + 4095) & ~(size_t)4095;
}

/* ------------------------------------------------------------- waiting */

#ifdef __linux__
/* Sleep while *w == seen, ms at most (shared futex: other processes wake it). */
static void futex_wait(_Atomic uint32_t *w, uint32_t seen, long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, seen, &ts, NULL, 0);
}
static void futex_wake_all(_Atomic uint32_t *w) {
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
#else
static void futex_wait(_Atomic uint32_t *w, uint32_t seen, long ms) {
    (void)ms;
    if (atomic_load(w) == seen) nanosleep(&(struct timespec){0, 1000000L}, NULL);
}
static void futex_wake_all(_Atomic uint32_t *w) {
    (void)w;
}
#endif

/* Tell every waiting rank to look again. */
static void notify(shm_hdr_t *h) {
    atomic_fetch_add(&h->event, 1);
    futex_wake_all(&h->event);
}

/* Abort the group; the first reason given is the one every rank reports. */
static void abort_group(shm_hdr_t *h, const char *fmt, ...) {
    int expect = NOT_ABORTED;
    if (atomic_compare_exchange_strong(&h->aborted, &expect, ABORTING)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(h->reason, sizeof h->reason, fmt, ap);
        va_end(ap);
        atomic_store(&h->aborted, ABORTED);
    }
    notify(h);
}

static void abort_reason(shm_hdr_t *h, char *out, size_t len) {
    if (atomic_load(&h->aborted) == ABORTED)
        snprintf(out, len, "%.*s", REASON_LEN, h->reason);
    else
        snprintf(out, len, "aborted while another rank was giving the reason");
}

/* Whether process pid runs (not gone, not a zombie), and its start time.
 * /proc/<pid>/stat: "pid (comm) state f4 ... f22=starttime ..."; comm may
 * hold spaces and parentheses, so fields count from the last ')'. */
static bool proc_running(int pid, unsigned long long *start) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ') return false;
    p += 2; /* field 3, the state */
    if (*p == 'Z' || *p == 'X' || *p == 'x') return false;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL) return false;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return true;
}

static unsigned long long my_pidns(void) {
    struct stat sb;
    return stat("/proc/self/ns/pid", &sb) == 0 ? (unsigned long long)sb.st_ino : 0;
}

/* The first peer (`only`, or any when -1) that joined and whose process is
 * gone, or that left the group, while this rank waits for it: -1 if none.
 * Peers in another pid namespace cannot be looked at: the timeout covers
 * them. */
static int gone_peer(const xdev_shm_group_t *g, int only, bool *left) {
    shm_hdr_t *h = g->h;
    for (int r = 0; r < g->nranks; r++) {
        if (r == g->rank || (only >= 0 && r != only)) continue;
        int s = atomic_load(&h->ranks[r].state);
        *left = s == RANK_LEFT;
        if (s == RANK_LEFT || s == RANK_DEAD) return r;
        if (s != RANK_JOINED || g->pidns == 0 || h->ranks[r].pidns != g->pidns) continue;
        unsigned long long start = 0;
        if (!proc_running(h->ranks[r].pid, &start) || start != h->ranks[r].start) {
            int was = RANK_JOINED;
            atomic_compare_exchange_strong(&h->ranks[r].state, &was, RANK_DEAD);
            return r;
        }
    }
    return -1;
}

typedef bool (*cond_fn)(xdev_shm_group_t *g, void *arg);

static long ms_until(const struct timespec *end) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
}

/* Wait until cond(g, arg): true, or false once the group is aborted (by a
 * rank, by the awaited peer - `peer`, or any when -1 - found dead or gone,
 * or by the timeout; this call gives the last two as the reason). */
static bool wait_for(xdev_shm_group_t *g, cond_fn cond, void *arg, int peer, const char *what) {
    shm_hdr_t *h = g->h;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += g->timeout_s;
    long look = (long)g->timeout_s * 1000 - POLL_MS; /* ms_until(end) at the next look */
    for (;;) {
        uint32_t seen = atomic_load(&h->event);
        if (cond(g, arg)) return true;
        if (atomic_load(&h->aborted) != NOT_ABORTED) return false;
        bool left = false;
        int gone = -1;
        long ms = ms_until(&end);
        if (ms <= look) { /* a slice has passed: are the peers still there? */
            gone = gone_peer(g, peer, &left);
            look = ms - POLL_MS;
        }
        if (gone >= 0) {
            if (cond(g, arg)) return true; /* it did its part before it went */
            abort_group(h, "rank %d (process %d) %s while rank %d waited for it in %s", gone,
                        h->ranks[gone].pid,
                        left ? "left the group (xdev_communicator_destroy)" : "died", g->rank,
                        what);
            return false;
        }
        if (ms <= 0) {
            abort_group(h,
                        "rank %d waited %d s in %s for a rank that never came (XDEV_COMM_TIMEOUT)",
                        g->rank, g->timeout_s, what);
            return false;
        }
        futex_wait(&h->event, seen, ms < POLL_MS ? ms : POLL_MS);
    }
}

/* ---------------------------------------------------------------- joining */

static xdev_status_t shm_unique_id(void *id, size_t len) {
    static _Atomic unsigned seq;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    memset(id, 0, len);
    snprintf(id, len, "/xdev-comm-%ld-%u-%lld", (long)getpid(), atomic_fetch_add(&seq, 1),
             (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    return XDEV_SUCCESS;
}

static bool all_joined(xdev_shm_group_t *g, void *arg) {
    (void)arg;
    return atomic_load(&g->h->joined) >= g->nranks;
}

/* Map the object fd names once its creator has sized it to at least
 * `bytes` and initialised its header: NULL after the timeout (*why says). */
static shm_hdr_t *map_when_ready(int fd, size_t bytes, int timeout_s, const char **why) {
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += timeout_s;
    for (;;) {
        struct stat sb;
        if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= bytes) break;
        if (ms_until(&end) <= 0) {
            *why = "it was never sized: its creator died, or was told more ranks than this one";
            return NULL;
        }
        usleep(1000);
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        *why = "mmap failed";
        return NULL;
    }
    shm_hdr_t *h = p;
    while (atomic_load(&h->ready) != READY) {
        if (ms_until(&end) <= 0) {
            munmap(p, bytes);
            *why = "it was never initialised: its creator died";
            return NULL;
        }
        usleep(1000);
    }
    return h;
}

/* Make the group's object: sized, its pages reserved, its header set. */
static xdev_status_t create_group(int fd, const char *name, size_t bytes, int nranks,
                                  shm_hdr_t **out) {
    int rerr = reserve(fd, bytes);
    if (rerr != 0)
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                         "no shared memory for %s (%zu bytes: header and %d 1 MiB staging "
                         "slots; /dev/shm full?): %s",
                         name, bytes, nranks, strerror(rerr));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "mmap(%s): %s", name, strerror(errno));
    shm_hdr_t *h = p; /* the pages are zero: every counter and state starts at 0 */
    h->nranks = nranks;
    atomic_store(&h->ready, READY);
    *out = h;
    return XDEV_SUCCESS;
}

/* Open the group as a joiner: its header first, to compare the number of
 * ranks before mapping a size that depends on it. */
static xdev_status_t open_group(int fd, const char *name, size_t bytes, int nranks, int rank,
                                int timeout_s, shm_hdr_t **out) {
    const char *why = NULL;
    shm_hdr_t *h = map_when_ready(fd, header_bytes(), timeout_s, &why);
    if (h == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "joining %s: %s (waited %d s)", name, why,
                         timeout_s);
    int theirs = h->nranks;
    if (theirs != nranks) {
        abort_group(h, "rank %d was told the group has %d ranks but its creator %d", rank, nranks,
                    theirs);
        munmap(h, header_bytes());
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the group %s has %d ranks but rank %d was told %d: every rank of the "
                         "group fails",
                         name, theirs, rank, nranks);
    }
    munmap(h, header_bytes());
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "mmap(%s): %s", name, strerror(errno));
    *out = p;
    return XDEV_SUCCESS;
}

static xdev_status_t shm_join(const void *id, size_t len, int nranks, int rank, int timeout_s,
                              xdev_shm_group_t **out) {
    char name[96];
    if (memchr(id, '\0', len) == NULL || ((const char *)id)[0] != '/' || strlen(id) >= sizeof name)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the id names no shared-memory group");
    snprintf(name, sizeof name, "%s", (const char *)id);
    if (nranks < 1 || nranks > MAX_SHM_RANKS)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "nranks = %d: ranks across processes on the cpu backend are 1..%d", nranks,
                         MAX_SHM_RANKS);
    if (rank < 0 || rank >= nranks)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "rank %d is not in 0..%d", rank, nranks - 1);
    xdev_shm_group_t *g = calloc(1, sizeof *g);
    if (g == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a group");
    size_t bytes = header_bytes() + (size_t)nranks * SLOT;
    bool creator = true;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        creator = false;
        fd = shm_open(name, O_RDWR, 0600);
    }
    if (fd < 0) {
        free(g);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "shm_open(%s): %s", name, strerror(errno));
    }
    shm_hdr_t *h = NULL;
    xdev_status_t st = creator ? create_group(fd, name, bytes, nranks, &h)
                               : open_group(fd, name, bytes, nranks, rank, timeout_s, &h);
    close(fd);
    if (st != XDEV_SUCCESS) {
        shm_unlink(name); /* the group failed: nothing of it stays in /dev/shm */
        free(g);
        return st;
    }
    *g = (xdev_shm_group_t){.h = h,
                            .map_bytes = bytes,
                            .nranks = nranks,
                            .rank = rank,
                            .timeout_s = timeout_s,
                            .pidns = my_pidns(),
                            .slots = (char *)h + header_bytes()};
    snprintf(g->name, sizeof g->name, "%s", name);
    shm_rank_t *me = &h->ranks[rank];
    int was = RANK_ABSENT;
    bool ok = atomic_compare_exchange_strong(&me->state, &was, RANK_CLAIMED);
    if (!ok) {
        abort_group(h, "two processes joined as rank %d", rank);
    } else {
        me->pid = (int)getpid();
        if (!proc_running(me->pid, &me->start)) me->start = 0;
        me->pidns = g->pidns;
        atomic_store(&me->state, RANK_JOINED);
        if (atomic_fetch_add(&h->joined, 1) + 1 == nranks)
            shm_unlink(name); /* every rank has it mapped: the name can go */
        notify(h);
        ok = wait_for(g, all_joined, NULL, -1, "joining");
    }
    if (!ok) {
        char why[REASON_LEN + 8];
        abort_reason(h, why, sizeof why);
        int joined = atomic_load(&h->joined);
        shm_unlink(name);
        munmap(h, bytes);
        free(g);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%d of %d ranks joined %s: %s", joined, nranks,
                         name, why);
    }
    pthread_mutex_init(&g->turn_m, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->turn_cv, &ca);
    pthread_condattr_destroy(&ca);
    *out = g;
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ collectives */

static bool passed(xdev_shm_group_t *g, void *gen) {
    return atomic_load(&g->h->generation) != *(uint32_t *)gen;
}

/* Every rank at this point; false when the group is aborted. */
static bool barrier(xdev_shm_group_t *g) {
    shm_hdr_t *h = g->h;
    uint32_t gen = atomic_load(&h->generation);
    if (atomic_fetch_add(&h->arrived, 1) + 1 == g->nranks) {
        atomic_store(&h->arrived, 0);
        atomic_fetch_add(&h->generation, 1);
        notify(h);
        return atomic_load(&h->aborted) == NOT_ABORTED;
    }
    /* Once the group is aborted the counts mean nothing (a rank may have
     * arrived at a barrier after the abort and released it): a barrier
     * passed then is no barrier. Loaded after the generation, so an abort
     * ordered before the release that woke this rank is seen. */
    bool ok = wait_for(g, passed, &gen, -1, "a collective");
    return ok && atomic_load(&h->aborted) == NOT_ABORTED;
}

static char *slot(xdev_shm_group_t *g, int r) {
    return g->slots + (size_t)r * SLOT;
}

/* err = "the group was aborted: <why>". */
static xdev_status_t aborted(xdev_shm_group_t *g, const char *what, char *err, size_t errlen) {
    char why[REASON_LEN + 8];
    abort_reason(g->h, why, sizeof why);
    snprintf(err, errlen, "%s: the group was aborted: %s", what, why);
    return XDEV_ERROR_INVALID_VALUE;
}

static xdev_status_t shm_run(xdev_shm_group_t *g, const xdev_collective_desc_t *d, char *err,
                             size_t errlen) {
    int n = g->nranks, me = g->rank;
    shm_hdr_t *h = g->h;
    h->desc[me] = (shm_desc_t){(int)d->kind, (int)d->dtype, d->op, d->root, d->count};
    if (!barrier(g)) goto aborted;
    for (int r = 0; r < n; r++) {
        const shm_desc_t *a = &h->desc[0], *b = &h->desc[r];
        bool movement = a->kind == XDEV_COLL_BROADCAST || a->kind == XDEV_COLL_ALL_GATHER;
        if (a->kind != b->kind || a->count != b->count || a->dtype != b->dtype ||
            (!movement && a->op != b->op) ||
            ((a->kind == XDEV_COLL_BROADCAST || a->kind == XDEV_COLL_REDUCE) &&
             a->root != b->root)) {
            snprintf(err, errlen,
                     "rank 0 asked for kind %d (count %zu, dtype %d, op %d, root %d) but rank %d "
                     "for kind %d (count %zu, dtype %d, op %d, root %d): nothing was written",
                     a->kind, a->count, a->dtype, a->op, a->root, r, b->kind, b->count, b->dtype,
                     b->op, b->root);
            (void)barrier(g); /* the descs may be overwritten after this */
            return XDEV_ERROR_INVALID_VALUE;
        }
    }
    if (!barrier(g)) goto aborted;
    size_t e = xdev_dtype_size(d->dtype), per = SLOT / e, count = d->count;
    const char *src[MAX_SHM_RANKS];
    for (size_t off = 0; off < count; off += per) {
        size_t k = count - off < per ? count - off : per, bytes = k * e;
        switch (d->kind) {
        case XDEV_COLL_ALL_REDUCE:
        case XDEV_COLL_REDUCE:
            memcpy(slot(g, me), (const char *)d->send + off * e, bytes);
            if (!barrier(g)) goto aborted;
            if (d->kind == XDEV_COLL_ALL_REDUCE || me == d->root) {
                for (int r = 0; r < n; r++)
                    src[r] = slot(g, r);
                xdev_host_reduce((char *)d->recv + off * e, (const void *const *)src, n, k,
                                 d->dtype, (xdev_reduce_op_t)d->op);
            }
            break;
        case XDEV_COLL_BROADCAST:
            if (me == d->root) memcpy(slot(g, me), (const char *)d->send + off * e, bytes);
            if (!barrier(g)) goto aborted;
            memcpy((char *)d->recv + off * e, slot(g, d->root), bytes);
            break;
        case XDEV_COLL_ALL_GATHER:
            memcpy(slot(g, me), (const char *)d->send + off * e, bytes);
            if (!barrier(g)) goto aborted;
            for (int r = 0; r < n; r++)
                memcpy((char *)d->recv + ((size_t)r * count + off) * e, slot(g, r), bytes);
            break;
        case XDEV_COLL_REDUCE_SCATTER:
            for (int part = 0; part < n; part++) { /* part `part` is rank part's result */
                memcpy(slot(g, me), (const char *)d->send + ((size_t)part * count + off) * e,
                       bytes);
                if (!barrier(g)) goto aborted;
                if (me == part) {
                    for (int r = 0; r < n; r++)
                        src[r] = slot(g, r);
                    xdev_host_reduce((char *)d->recv + off * e, (const void *const *)src, n, k,
                                     d->dtype, (xdev_reduce_op_t)d->op);
                }
                if (!barrier(g)) goto aborted;
            }
            continue; /* its barriers are done */
        default:
            snprintf(err, errlen, "kind %d is not a collective", (int)d->kind);
            return XDEV_ERROR_INVALID_VALUE;
        }
        if (!barrier(g)) goto aborted; /* the slots are free again */
    }
    return XDEV_SUCCESS;
aborted:
    return aborted(g, "collective", err, errlen);
}

/* ---------------------------------------------------------------- send/recv */

static void msg_name(const xdev_shm_group_t *g, int src, int dst, uint64_t seq, char *out,
                     size_t len) {
    snprintf(out, len, "%s-%d-%d-%llu", g->name, src, dst, (unsigned long long)seq);
}

/* The seq-th send of this rank to `peer`: its own object, filled now. */
static xdev_status_t shm_send(xdev_shm_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                              char *err, size_t errlen) {
    char name[160];
    if (atomic_load(&g->h->aborted) != NOT_ABORTED) {
        char what[64];
        snprintf(what, sizeof what, "send to rank %d (nothing sent)", d->root);
        return aborted(g, what, err, errlen);
    }
    msg_name(g, g->rank, d->root, seq, name, sizeof name);
    size_t bytes = d->count * xdev_dtype_size(d->dtype);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "send to rank %d: shm_open(%s): %s", d->root, name, strerror(errno));
        return XDEV_ERROR_INVALID_VALUE;
    }
    void *p = MAP_FAILED;
    int rerr = reserve(fd, MSG_DATA + bytes);
    if (rerr == 0) {
        p = mmap(NULL, MSG_DATA + bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) rerr = errno;
    }
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen,
                 "send to rank %d: no shared memory for %zu bytes (%s; a message waits in "
                 "/dev/shm until its recv runs)",
                 d->root, bytes, strerror(rerr));
        shm_unlink(name);
        return XDEV_ERROR_OUT_OF_MEMORY;
    }
    shm_msg_t *m = p;
    m->dtype = (int)d->dtype;
    m->count = d->count;
    if (bytes > 0) memcpy((char *)p + MSG_DATA, d->send, bytes);
    atomic_store(&m->ready, READY);
    munmap(p, MSG_DATA + bytes);
    notify(g->h); /* a recv waiting for it looks again */
    return XDEV_SUCCESS;
}

typedef struct awaited {
    const char *name;
    shm_msg_t *m;
    size_t map;
} awaited_t;

/* The message is there and filled: mapped into a->m. */
static bool msg_ready(xdev_shm_group_t *g, void *arg) {
    (void)g;
    awaited_t *a = arg;
    int fd = shm_open(a->name, O_RDWR, 0600);
    if (fd < 0) return false;
    struct stat sb;
    void *p = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= MSG_DATA)
        p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return false;
    if (atomic_load(&((shm_msg_t *)p)->ready) != READY) {
        munmap(p, (size_t)sb.st_size);
        return false;
    }
    a->m = p;
    a->map = (size_t)sb.st_size;
    return true;
}

/* The seq-th recv of this rank from `peer`. */
static xdev_status_t shm_recv(xdev_shm_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                              char *err, size_t errlen) {
    char name[160];
    int peer = d->root;
    msg_name(g, peer, g->rank, seq, name, sizeof name);
    awaited_t a = {name, NULL, 0};
    if (atomic_load(&g->h->aborted) != NOT_ABORTED || !wait_for(g, msg_ready, &a, peer, "a recv")) {
        char what[64];
        snprintf(what, sizeof what, "recv from rank %d (nothing written)", peer);
        return aborted(g, what, err, errlen);
    }
    shm_msg_t *m = a.m;
    xdev_status_t st = XDEV_SUCCESS;
    if (m->count != d->count || m->dtype != (int)d->dtype) {
        snprintf(err, errlen,
                 "rank %d sent %zu elements of dtype %d but rank %d's matching recv asked for %zu "
                 "of dtype %d: nothing was written",
                 peer, m->count, m->dtype, g->rank, d->count, (int)d->dtype);
        st = XDEV_ERROR_INVALID_VALUE;
    } else if (d->count > 0) {
        memcpy(d->recv, (char *)m + MSG_DATA, d->count * xdev_dtype_size(d->dtype));
    }
    munmap(m, a.map);
    shm_unlink(name);
    return st;
}

static xdev_status_t shm_p2p(xdev_shm_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                             char *err, size_t errlen) {
    return d->kind == XDEV_COLL_SEND ? shm_send(g, d, seq, err, errlen)
                                     : shm_recv(g, d, seq, err, errlen);
}

/* ---------------------------------------------------------------- leaving */

/* Unlink every message of the group never received (whatever the order
 * sends and recvs ran in), found by name: POSIX shared memory objects are
 * the files of /dev/shm on Linux. */
static void sweep(xdev_shm_group_t *g) {
    DIR *dir = opendir("/dev/shm");
    if (dir == NULL) return;
    const char *base = g->name + 1; /* without the leading '/' */
    size_t len = strlen(base);
    char name[300];
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if (strncmp(e->d_name, base, len) == 0 && e->d_name[len] == '-') {
            snprintf(name, sizeof name, "/%s", e->d_name);
            shm_unlink(name);
        }
    closedir(dir);
}

static void shm_abort(xdev_shm_group_t *g) {
    abort_group(g->h, "xdev_communicator_abort on rank %d", g->rank);
}

/* Leave; the last rank whose process is still in the group sweeps its
 * messages. Two leaving at once may both sweep (harmless); as each marks
 * itself before it looks at the others, at least one sees the other gone. */
static void shm_leave(xdev_shm_group_t *g) {
    shm_hdr_t *h = g->h;
    atomic_store(&h->ranks[g->rank].state, RANK_LEFT);
    notify(h);
    bool last = true, left = false;
    for (int r = 0; r < g->nranks && last; r++) {
        if (r == g->rank || atomic_load(&h->ranks[r].state) != RANK_JOINED) continue;
        last = gone_peer(g, r, &left) == r; /* joined and still running: not the last */
    }
    if (last) sweep(g);
    munmap(h, g->map_bytes);
    pthread_cond_destroy(&g->turn_cv);
    pthread_mutex_destroy(&g->turn_m);
    free(g);
}

/* ---------------------------------------------------------------- the table
 * The transport table (xdev/transport.h) over the functions above; their
 * XDEV_FAIL messages go into err as a module's would. */

static xdev_status_t failed(xdev_status_t st, char *err, size_t errlen) {
    if (st != XDEV_SUCCESS) snprintf(err, errlen, "%s", xdev_last_error());
    return st;
}

static xdev_status_t t_unique_id(unsigned char id[XDEV_TRANSPORT_ID_BYTES], char *err,
                                 size_t errlen) {
    return failed(shm_unique_id(id, XDEV_TRANSPORT_ID_BYTES), err, errlen);
}

static xdev_status_t t_join(const xdev_transport_join_t *j, void **group, char *err,
                            size_t errlen) {
    xdev_shm_group_t *g = NULL;
    xdev_status_t st = shm_join(j->id, sizeof j->id, j->nranks, j->rank, j->timeout_s, &g);
    *group = g;
    return failed(st, err, errlen);
}

/* Wait until collective seq is this process's next (or the timeout). */
static bool take_turn(xdev_shm_group_t *g, uint64_t seq) {
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += g->timeout_s;
    int rc = 0;
    pthread_mutex_lock(&g->turn_m);
    while (g->next_coll != seq && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&g->turn_cv, &g->turn_m, &end);
    bool mine = g->next_coll == seq;
    pthread_mutex_unlock(&g->turn_m);
    return mine;
}

static xdev_status_t t_run(void *group, const xdev_collective_desc_t *d, uint64_t seq, char *err,
                           size_t errlen) {
    xdev_shm_group_t *g = group;
    if (d->kind == XDEV_COLL_SEND || d->kind == XDEV_COLL_RECV)
        return shm_p2p(g, d, seq, err, errlen);
    if (!take_turn(g, seq)) {
        abort_group(g->h, "rank %d's collective #%llu waited %d s for its collective before it",
                    g->rank, (unsigned long long)seq, g->timeout_s);
        return aborted(g, "collective", err, errlen);
    }
    xdev_status_t st = shm_run(g, d, err, errlen);
    pthread_mutex_lock(&g->turn_m);
    g->next_coll++;
    pthread_cond_broadcast(&g->turn_cv);
    pthread_mutex_unlock(&g->turn_m);
    return st;
}

static void t_abort(void *group) {
    shm_abort(group);
}

static void t_leave(void *group) {
    shm_leave(group);
}

const xdev_transport_t xdev_shm_transport = {sizeof(xdev_transport_t),
                                             XDEV_TRANSPORT_ABI,
                                             "shm",
                                             0,
                                             t_unique_id,
                                             t_join,
                                             t_run,
                                             t_abort,
                                             t_leave};
