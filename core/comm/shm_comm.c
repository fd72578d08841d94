/* shm_comm.c - communicator ranks in several processes for backends whose
 * device memory is host memory (the CPU backend), through POSIX shared
 * memory.
 *
 * The group id names a shared-memory object; the first rank to arrive
 * creates it (O_EXCL), sizes it and initialises a process-shared mutex and
 * condition variable in its header; the others wait for that, and the last
 * to join unlinks the name (the mappings stay). Each rank has a staging slot
 * of SLOT bytes. A collective moves through the slots a chunk at a time:
 * every rank copies its part into its slot, all meet at a barrier, each
 * computes its own output from every slot, all meet again before the slots
 * are reused. Before the first chunk the ranks compare what they were asked
 * (kind, count, dtype, op, root): if they disagree nothing is written and
 * every rank reports it. A peer that does not arrive within TIMEOUT_S
 * seconds (a dead process) aborts the group. Runs in the rank's stream's
 * host function.
 *
 * Send/recv: the n-th send from rank a to rank b is a shared-memory object
 * of its own, "<group>-a-b-n", made and filled by the send without waiting
 * for the receiver (so two ranks may each send before they receive, as on
 * one process's CPU devices); the n-th recv on b from a waits for it,
 * checks its count and dtype, copies it out and unlinks it; the last rank
 * to leave unlinks any never received. A message holds /dev/shm pages
 * until its recv runs (a full /dev/shm fails the send, not the process).
 * A process that dies without destroying its rank leaves its group's
 * objects behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error_internal.h"
#include "comm/host_reduce.h"
#include "comm/shm_comm.h"

#define SLOT ((size_t)1 << 20) /* staging bytes per rank */
#define TIMEOUT_S 120
#define MAX_SHM_RANKS 64
#define READY 0x78736d31u /* "xsm1" */

typedef struct shm_desc {
    int kind, dtype, op, root;
    size_t count;
} shm_desc_t;

typedef struct shm_hdr {
    _Atomic uint32_t ready;
    int nranks;
    pthread_mutex_t m;
    pthread_cond_t cv;
    int joined;
    int arrived;
    uint64_t generation;
    int aborted;
    shm_desc_t desc[MAX_SHM_RANKS];
    int left; /* ranks that left (the last sweeps) */
} shm_hdr_t;

struct xdev_shm_group {
    shm_hdr_t *h;
    size_t map_bytes;
    int nranks, rank;
    char *slots;
    char name[96]; /* the group's id: messages are named after it */
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

static void deadline_in(struct timespec *ts, int seconds) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += seconds;
}

xdev_status_t xdev_shm_unique_id(void *id, size_t len) {
    static _Atomic unsigned seq;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    memset(id, 0, len);
    snprintf(id, len, "/xdev-comm-%ld-%u-%lld", (long)getpid(), atomic_fetch_add(&seq, 1),
             (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    return XDEV_SUCCESS;
}

/* Wait (h->m held) until cond, the group aborted, or the deadline: false
 * unless cond. */
#define WAIT_UNTIL(h, cond, ts, timed_out)                                                         \
    do {                                                                                           \
        while (!(cond) && !(h)->aborted && !(timed_out))                                           \
            (timed_out) = pthread_cond_timedwait(&(h)->cv, &(h)->m, (ts)) == ETIMEDOUT;            \
    } while (0)

xdev_status_t xdev_shm_join(const void *id, size_t len, int nranks, int rank,
                            xdev_shm_group_t **out) {
    char name[96];
    if (memchr(id, '\0', len) == NULL || ((const char *)id)[0] != '/' || strlen(id) >= sizeof name)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the id names no shared-memory group");
    snprintf(name, sizeof name, "%s", (const char *)id);
    if (nranks > MAX_SHM_RANKS)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "nranks = %d: ranks across processes on the cpu backend are at most %d",
                         nranks, MAX_SHM_RANKS);
    size_t bytes = header_bytes() + (size_t)nranks * SLOT;
    bool creator = true;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        creator = false;
        fd = shm_open(name, O_RDWR, 0600);
    }
    if (fd < 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "shm_open(%s): %s", name, strerror(errno));
    int rerr = creator ? reserve(fd, bytes) : 0;
    if (rerr != 0) {
        close(fd);
        shm_unlink(name);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                         "no shared memory for %s (%zu bytes: header and %d 1 MiB staging "
                         "slots; /dev/shm full?): %s",
                         name, bytes, nranks, strerror(rerr));
    }
    for (int waited = 0; !creator; waited++) { /* the creator sizes it */
        struct stat sb;
        if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= bytes) break;
        if (waited > TIMEOUT_S * 1000) {
            close(fd);
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "%s never reached %zu bytes: another nranks, or its creator died",
                             name, bytes);
        }
        usleep(1000);
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "mmap(%s): %s", name, strerror(errno));
    shm_hdr_t *h = p;
    if (creator) {
        pthread_mutexattr_t ma;
        pthread_condattr_t ca;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
        pthread_condattr_init(&ca);
        pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&h->m, &ma);
        pthread_cond_init(&h->cv, &ca);
        h->nranks = nranks;
        atomic_store(&h->ready, READY);
    }
    for (int waited = 0; atomic_load(&h->ready) != READY; waited++) {
        if (waited > TIMEOUT_S * 1000) {
            munmap(p, bytes);
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s was never initialised", name);
        }
        usleep(1000);
    }
    if (h->nranks != nranks) {
        munmap(p, bytes);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the group has %d ranks but this rank was told %d", h->nranks, nranks);
    }
    struct timespec ts;
    deadline_in(&ts, TIMEOUT_S);
    bool timed_out = false;
    pthread_mutex_lock(&h->m);
    if (++h->joined == nranks) {
        shm_unlink(name); /* every rank has it mapped: the name can go */
        pthread_cond_broadcast(&h->cv);
    }
    WAIT_UNTIL(h, h->joined >= nranks, &ts, timed_out);
    bool ok = h->joined >= nranks && !h->aborted;
    pthread_mutex_unlock(&h->m);
    if (!ok) {
        munmap(p, bytes);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "only %d of %d ranks joined %s within %d s",
                         h->joined, nranks, name, TIMEOUT_S);
    }
    xdev_shm_group_t *g = calloc(1, sizeof *g);
    if (g == NULL) {
        munmap(p, bytes);
        return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a group");
    }
    *g = (xdev_shm_group_t){h, bytes, nranks, rank, (char *)p + header_bytes(), ""};
    snprintf(g->name, sizeof g->name, "%s", name);
    *out = g;
    return XDEV_SUCCESS;
}

/* Every rank at this point; false when the group is aborted or a peer did
 * not come within TIMEOUT_S (which aborts it). */
static bool barrier(xdev_shm_group_t *g) {
    shm_hdr_t *h = g->h;
    struct timespec ts;
    deadline_in(&ts, TIMEOUT_S);
    bool timed_out = false;
    pthread_mutex_lock(&h->m);
    uint64_t gen = h->generation;
    if (++h->arrived == g->nranks) {
        h->arrived = 0;
        h->generation++;
        pthread_cond_broadcast(&h->cv);
    }
    WAIT_UNTIL(h, h->generation != gen, &ts, timed_out);
    if (timed_out) {
        h->aborted = 1;
        pthread_cond_broadcast(&h->cv);
    }
    bool ok = h->generation != gen && !h->aborted;
    pthread_mutex_unlock(&h->m);
    return ok;
}

static char *slot(xdev_shm_group_t *g, int r) {
    return g->slots + (size_t)r * SLOT;
}

xdev_status_t xdev_shm_run(xdev_shm_group_t *g, const xdev_collective_desc_t *d, char *err,
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
    snprintf(err, errlen,
             "the group was aborted (xdev_comm_abort, or a rank did not arrive within %d s)",
             TIMEOUT_S);
    return XDEV_ERROR_INVALID_VALUE;
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
    if (g->h->aborted) {
        snprintf(err, errlen, "send to rank %d: the group was aborted: nothing sent", d->root);
        return XDEV_ERROR_INVALID_VALUE;
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
    shm_hdr_t *h = g->h;
    pthread_mutex_lock(&h->m);
    pthread_cond_broadcast(&h->cv); /* a recv waiting for it looks again */
    pthread_mutex_unlock(&h->m);
    return XDEV_SUCCESS;
}

/* Open the seq-th message from `peer` once it is ready (NULL: aborted or
 * timed out; *bytes_out its mapping's size). */
static shm_msg_t *await_msg(xdev_shm_group_t *g, const char *name, size_t *map_out) {
    shm_hdr_t *h = g->h;
    struct timespec end;
    deadline_in(&end, TIMEOUT_S);
    for (;;) {
        int fd = shm_open(name, O_RDWR, 0600);
        struct stat sb;
        if (fd >= 0 && fstat(fd, &sb) == 0 && (size_t)sb.st_size >= MSG_DATA) {
            void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
            if (p != MAP_FAILED && atomic_load(&((shm_msg_t *)p)->ready) == READY) {
                *map_out = (size_t)sb.st_size;
                return p;
            }
            if (p != MAP_FAILED) munmap(p, (size_t)sb.st_size);
        } else if (fd >= 0) {
            close(fd);
        }
        /* Not there yet: wait for a send's broadcast, a short while at most. */
        struct timespec now, nap;
        clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) {
            xdev_shm_abort(g);
            return NULL;
        }
        nap = now;
        nap.tv_nsec += 10000000; /* 10 ms */
        if (nap.tv_nsec >= 1000000000) {
            nap.tv_sec++;
            nap.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&h->m);
        bool stop = h->aborted;
        if (!stop) pthread_cond_timedwait(&h->cv, &h->m, &nap); /* a send's broadcast wakes it */
        pthread_mutex_unlock(&h->m);
        if (stop) return NULL;
    }
}

/* The seq-th recv of this rank from `peer`. */
static xdev_status_t shm_recv(xdev_shm_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                              char *err, size_t errlen) {
    char name[160];
    int peer = d->root;
    msg_name(g, peer, g->rank, seq, name, sizeof name);
    size_t map = 0;
    shm_msg_t *m = g->h->aborted ? NULL : await_msg(g, name, &map);
    if (m == NULL) {
        snprintf(err, errlen,
                 "recv from rank %d: the group was aborted (xdev_comm_abort, or rank %d did not "
                 "send within %d s)",
                 peer, peer, TIMEOUT_S);
        return XDEV_ERROR_INVALID_VALUE;
    }
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
    munmap(m, map);
    shm_unlink(name);
    return st;
}

xdev_status_t xdev_shm_p2p(xdev_shm_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                           char *err, size_t errlen) {
    return d->kind == XDEV_COLL_SEND ? shm_send(g, d, seq, err, errlen)
                                     : shm_recv(g, d, seq, err, errlen);
}

/* The last rank to leave: unlink every message of the group never received
 * (whatever the order sends and recvs ran in), found by name: POSIX shared
 * memory objects are the files of /dev/shm on Linux. */
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

void xdev_shm_abort(xdev_shm_group_t *g) {
    pthread_mutex_lock(&g->h->m);
    g->h->aborted = 1;
    pthread_cond_broadcast(&g->h->cv);
    pthread_mutex_unlock(&g->h->m);
}

void xdev_shm_leave(xdev_shm_group_t *g) {
    pthread_mutex_lock(&g->h->m);
    bool last = ++g->h->left == g->nranks;
    pthread_mutex_unlock(&g->h->m);
    if (last) sweep(g);
    munmap(g->h, g->map_bytes);
    free(g);
}
