/* SPDX-License-Identifier: Apache-2.0 */
/* mpi_ops.c - one collective, send or recv of the MPI transport as MPI's
 * nonblocking calls, waited for with the group's deadline (mpi_transport.c).
 *
 * Results are those of xdev's other engines (core/comm/host_reduce.c):
 * f16 and bf16 are reduced in float and rounded once (converted around the
 * MPI call), an average is the sum divided by the number of ranks
 * (integers truncate), min and max of floats follow fmin and fmax.
 * Collectives are posted in the order the core numbered them (seq), which
 * MPI requires of every rank, even when two streams' threads run them at
 * once; a send or recv likewise in its pair's order. MPI counts are ints:
 * elementwise calls go in chunks of 2^30 elements, while all_gather and
 * reduce_scatter take up to 2^31 - 1 elements per rank.
 *
 * A send copies its data and returns (mpi_sends.c keeps it moving), as
 * the shared-memory transport's does, so two ranks that both send before
 * they receive do not wait for each other. It goes as a header (count,
 * dtype) then the data; the recv checks the header and, when the two
 * disagree, takes the data into a scratch buffer and fails, writing
 * nothing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"
#include "xdev/support/convert.h"
#include "xdev/support/half.h"

#define CHUNK ((size_t)1 << 30) /* elements (of the MPI type) per call */
#define TAG_HEADER 1
#define TAG_DATA 2
#define HEADER_MAGIC 0x31703270766478ull /* "xdvp2p1" */

/* ---------------------------------------------------------------- types */

static size_t elem_size(xdev_dtype_t dt) {
    return dt == XDEV_DTYPE_C64 ? 8 : dt == XDEV_DTYPE_C128 ? 16 : xdev_cvt_size((int)dt);
}

static bool is_half(xdev_dtype_t dt) {
    return dt == XDEV_DTYPE_F16 || dt == XDEV_DTYPE_BF16;
}

/* The MPI type a dtype is moved as, and how many of it make one element. */
static MPI_Datatype move_type(xdev_dtype_t dt, size_t *per) {
    size_t es = elem_size(dt);
    *per = es == 16 ? 2 : 1;
    switch (es) {
    case 2:
        return MPI_UINT16_T;
    case 4:
        return MPI_UINT32_T;
    case 8:
    case 16:
        return MPI_UINT64_T;
    default:
        return MPI_BYTE;
    }
}

/* The MPI type a dtype is reduced as (f16 and bf16: as float). */
static MPI_Datatype reduce_type(xdev_dtype_t dt) {
    switch (dt) {
    case XDEV_DTYPE_F64:
        return MPI_DOUBLE;
    case XDEV_DTYPE_I32:
        return MPI_INT32_T;
    case XDEV_DTYPE_I64:
        return MPI_INT64_T;
    default:
        return MPI_FLOAT;
    }
}

static MPI_Op reduce_op(int op, xdev_dtype_t dt) {
    bool floating = dt != XDEV_DTYPE_I32 && dt != XDEV_DTYPE_I64;
    switch (op) {
    case XDEV_REDUCE_PROD:
        return MPI_PROD;
    case XDEV_REDUCE_MIN:
        return floating ? xm_float_op(false) : MPI_MIN;
    case XDEV_REDUCE_MAX:
        return floating ? xm_float_op(true) : MPI_MAX;
    default: /* sum; avg divides the sum afterwards */
        return MPI_SUM;
    }
}

/* f16/bf16 <-> float. */
static void to_float(float *dst, const uint16_t *src, size_t n, xdev_dtype_t dt) {
    for (size_t i = 0; i < n; i++)
        dst[i] = dt == XDEV_DTYPE_F16 ? xdev_f16_to_f32(src[i]) : xdev_bf16_to_f32(src[i]);
}

static void from_float(uint16_t *dst, const float *src, size_t n, xdev_dtype_t dt) {
    for (size_t i = 0; i < n; i++)
        dst[i] = dt == XDEV_DTYPE_F16 ? xdev_f32_to_f16(src[i]) : xdev_f32_to_bf16(src[i]);
}

/* buf[0..n) (reduced as reduce_type(dt)) divided by the ranks. */
static void average(void *buf, size_t n, xdev_dtype_t dt, int ranks) {
    MPI_Datatype t = reduce_type(dt);
    for (size_t i = 0; i < n; i++) {
        if (t == MPI_DOUBLE)
            ((double *)buf)[i] /= (double)ranks;
        else if (t == MPI_INT32_T)
            ((int32_t *)buf)[i] /= (int32_t)ranks;
        else if (t == MPI_INT64_T)
            ((int64_t *)buf)[i] /= (int64_t)ranks;
        else
            ((float *)buf)[i] /= (float)ranks;
    }
}

/* ---------------------------------------------------------------- collectives */

/* The buffers and MPI arguments of one collective. */
typedef struct plan {
    const xdev_collective_desc_t *d;
    MPI_Datatype type;
    MPI_Op op;
    size_t es;        /* bytes of one element as MPI sees it (float for halves) */
    size_t per;       /* MPI elements per xdev element (moves) */
    const void *send; /* what MPI is given (MPI_IN_PLACE too) */
    void *recv;
    void *tmp_in, *tmp_out; /* scratch (freed at the end) */
} plan_t;

static xdev_status_t no_memory(size_t bytes, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: no host memory for %zu bytes of scratch", what, bytes);
    return XDEV_ERROR_OUT_OF_MEMORY;
}

/* Set up p for d on group g: scratch for halves, in-place forms. */
static xdev_status_t prepare(mpi_group_t *g, const xdev_collective_desc_t *d, plan_t *p, char *err,
                             size_t errlen) {
    const char *what = xm_kind_name(d->kind);
    size_t n = (size_t)g->nranks, count = d->count;
    *p = (plan_t){.d = d, .send = d->send, .recv = d->recv, .per = 1};
    bool reduces = d->kind != XDEV_COLL_BROADCAST && d->kind != XDEV_COLL_ALL_GATHER;
    if (!reduces) {
        p->type = move_type(d->dtype, &p->per);
        p->es = elem_size(d->dtype) / p->per;
    } else {
        p->type = reduce_type(d->dtype);
        p->op = reduce_op(d->op, d->dtype);
        p->es = is_half(d->dtype) ? sizeof(float) : elem_size(d->dtype);
    }
    size_t in_n = d->kind == XDEV_COLL_REDUCE_SCATTER ? n * count : count;
    if ((d->kind == XDEV_COLL_ALL_GATHER || d->kind == XDEV_COLL_REDUCE_SCATTER) &&
        count * p->per > INT_MAX) {
        snprintf(err, errlen,
                 "%s of %zu elements per rank: the mpi transport takes at most %d per rank", what,
                 count, INT_MAX);
        return XDEV_ERROR_NOT_SUPPORTED;
    }
    if (reduces && is_half(d->dtype)) { /* reduce in float, round once */
        bool out = d->kind == XDEV_COLL_REDUCE_SCATTER;
        p->tmp_in = malloc(in_n * sizeof(float));
        p->tmp_out = out ? malloc(count * sizeof(float)) : NULL;
        if (p->tmp_in == NULL || (out && p->tmp_out == NULL))
            return no_memory((in_n + count) * sizeof(float), what, err, errlen);
        to_float(p->tmp_in, d->send, in_n, d->dtype);
        p->send = p->tmp_in;
        p->recv = out ? p->tmp_out : p->tmp_in;
        bool leaf = d->kind == XDEV_COLL_REDUCE && d->root != g->rank; /* sends only */
        if (!out && !leaf) p->send = MPI_IN_PLACE;
        return XDEV_SUCCESS;
    }
    size_t bytes = elem_size(d->dtype);
    switch (d->kind) {
    case XDEV_COLL_ALL_REDUCE:
        if (d->send == d->recv) p->send = MPI_IN_PLACE;
        break;
    case XDEV_COLL_REDUCE:
        if (d->send == d->recv && d->root == g->rank) p->send = MPI_IN_PLACE;
        break;
    case XDEV_COLL_BROADCAST:
        if (d->root == g->rank && d->send != d->recv) memcpy(d->recv, d->send, count * bytes);
        break;
    case XDEV_COLL_ALL_GATHER:
        if ((const char *)d->send == (const char *)d->recv + (size_t)g->rank * count * bytes)
            p->send = MPI_IN_PLACE;
        break;
    case XDEV_COLL_REDUCE_SCATTER: { /* recv inside send: MPI's in-place form differs */
        const char *s = d->send, *r = d->recv;
        if (r + count * bytes > s && r < s + in_n * bytes) {
            if ((p->tmp_in = malloc(in_n * bytes)) == NULL)
                return no_memory(in_n * bytes, what, err, errlen);
            memcpy(p->tmp_in, d->send, in_n * bytes);
            p->send = p->tmp_in;
        }
        break;
    }
    default:
        break;
    }
    return XDEV_SUCCESS;
}

/* Post p's MPI calls (chunks of elementwise kinds) into reqs; *nreq. */
static int post(mpi_group_t *g, const plan_t *p, MPI_Request *reqs, int *nreq) {
    const xdev_collective_desc_t *d = p->d;
    size_t total = d->count * p->per;
    int rc = MPI_SUCCESS;
    *nreq = 0;
    if (d->kind == XDEV_COLL_ALL_GATHER) {
        rc = MPI_Iallgather(p->send, (int)total, p->type, p->recv, (int)total, p->type, g->comm,
                            &reqs[(*nreq)++]);
        return rc;
    }
    if (d->kind == XDEV_COLL_REDUCE_SCATTER) {
        rc = MPI_Ireduce_scatter_block(p->send, p->recv, (int)total, p->type, p->op, g->comm,
                                       &reqs[(*nreq)++]);
        return rc;
    }
    for (size_t off = 0; off < total && rc == MPI_SUCCESS; off += CHUNK) {
        int c = (int)(total - off < CHUNK ? total - off : CHUNK);
        const void *s =
            p->send == MPI_IN_PLACE ? MPI_IN_PLACE : (const char *)p->send + off * p->es;
        void *r = p->recv != NULL ? (char *)p->recv + off * p->es : NULL;
        MPI_Request *q = &reqs[(*nreq)++];
        switch (d->kind) {
        case XDEV_COLL_ALL_REDUCE:
            rc = MPI_Iallreduce(s, r, c, p->type, p->op, g->comm, q);
            break;
        case XDEV_COLL_REDUCE:
            rc = MPI_Ireduce(s, r, c, p->type, p->op, d->root, g->comm, q);
            break;
        default: /* broadcast */
            rc = MPI_Ibcast(r, c, p->type, d->root, g->comm, q);
        }
    }
    return rc;
}

/* After the requests: the average's division, halves back, into recv. */
static void finish(mpi_group_t *g, const plan_t *p) {
    const xdev_collective_desc_t *d = p->d;
    bool has_result = d->kind != XDEV_COLL_REDUCE || d->root == g->rank;
    if (d->kind == XDEV_COLL_BROADCAST || d->kind == XDEV_COLL_ALL_GATHER || !has_result) return;
    if (d->op == XDEV_REDUCE_AVG) average(p->recv, d->count, d->dtype, g->nranks);
    if (is_half(d->dtype)) from_float(d->recv, p->recv, d->count, d->dtype);
}

xdev_status_t xm_collective(mpi_group_t *g, const xdev_collective_desc_t *d, uint64_t seq,
                            char *err, size_t errlen) {
    long long deadline = xm_now_ms() + (long long)g->timeout_s * 1000;
    char what[64];
    snprintf(what, sizeof what, "%s #%llu", xm_kind_name(d->kind), (unsigned long long)seq);
    plan_t p;
    xdev_status_t st = prepare(g, d, &p, err, errlen);
    size_t chunks = (d->count * (p.per ? p.per : 1)) / CHUNK + 1;
    MPI_Request one, *reqs = chunks == 1 ? &one : malloc(chunks * sizeof *reqs);
    if (st == XDEV_SUCCESS && reqs == NULL)
        st = no_memory(chunks * sizeof *reqs, what, err, errlen);
    /* This rank's own failure (no memory) leaves the others waiting for
     * it: the group cannot go on. A refusal every rank makes alike (too
     * many elements) spends the number and leaves the group usable. */
    if (st == XDEV_ERROR_OUT_OF_MEMORY) xm_abort(g, err);
    /* The turn is taken and passed even when nothing is posted, so the
     * collectives after this one are not held up. */
    int nreq = 0;
    if (!xm_take_turn(g, &g->next_coll, seq, deadline)) {
        if (st == XDEV_SUCCESS) st = xm_turn_failed(g, what, "collective", err, errlen);
    } else {
        if (st == XDEV_SUCCESS) {
            xm_lock();
            int rc = post(g, &p, reqs, &nreq);
            xm_unlock();
            if (rc != MPI_SUCCESS) st = xm_fail(g, rc, what, err, errlen);
        }
        xm_pass_turn(g, &g->next_coll);
    }
    if (st == XDEV_SUCCESS) st = xm_wait(g, reqs, nreq, deadline, what, err, errlen);
    if (st == XDEV_SUCCESS) finish(g, &p);
    if (reqs != &one) free(reqs);
    /* Scratch a request still holds (the group failed) must stay. */
    if (st == XDEV_SUCCESS || nreq == 0) {
        free(p.tmp_in);
        free(p.tmp_out);
    }
    return st;
}

/* ---------------------------------------------------------------- send and recv */

typedef struct header {
    uint64_t magic, count, dtype;
} header_t;

static const char *dtype_name(uint64_t dt) {
    static const char *const names[] = {"f32", "f64", "c64", "c128", "f16", "bf16",
                                        "i8",  "i16", "i32", "i64",  "u8"};
    return dt < sizeof names / sizeof names[0] ? names[dt] : "an unknown dtype";
}

/* Post the data of `bytes` bytes at buf to or from peer, in chunks. */
static int post_data(mpi_group_t *g, bool sending, void *buf, size_t bytes, int peer,
                     MPI_Request *reqs, int *nreq) {
    int rc = MPI_SUCCESS;
    for (size_t off = 0; off < bytes && rc == MPI_SUCCESS; off += CHUNK) {
        int c = (int)(bytes - off < CHUNK ? bytes - off : CHUNK);
        char *b = (char *)buf + off;
        rc = sending ? MPI_Isend(b, c, MPI_BYTE, peer, TAG_DATA, g->comm, &reqs[(*nreq)++])
                     : MPI_Irecv(b, c, MPI_BYTE, peer, TAG_DATA, g->comm, &reqs[(*nreq)++]);
    }
    return rc;
}

xdev_status_t xm_send(mpi_group_t *g, const xdev_collective_desc_t *d, uint64_t seq, char *err,
                      size_t errlen) {
    long long deadline = xm_now_ms() + (long long)g->timeout_s * 1000;
    char what[64];
    snprintf(what, sizeof what, "xdev_send #%llu to rank %d", (unsigned long long)seq, d->root);
    size_t bytes = d->count * elem_size(d->dtype);
    int n = 1 + (int)(bytes / CHUNK) + 1;
    char *buf = malloc(sizeof(header_t) + bytes);
    MPI_Request *reqs = malloc((size_t)n * sizeof *reqs);
    xdev_status_t st = XDEV_SUCCESS;
    if (buf == NULL || reqs == NULL) {
        st = no_memory(bytes, what, err, errlen);
        xm_abort(g, err); /* the receiver would wait for it */
    } else {
        header_t h = {HEADER_MAGIC, d->count, (uint64_t)d->dtype};
        memcpy(buf, &h, sizeof h);
        if (bytes > 0) memcpy(buf + sizeof h, d->send, bytes);
    }
    int nreq = 0, rc = MPI_SUCCESS;
    if (!xm_take_turn(g, &g->send_turn[d->root], seq, deadline)) {
        if (st == XDEV_SUCCESS) st = xm_turn_failed(g, what, "send", err, errlen);
    } else {
        if (st == XDEV_SUCCESS) {
            xm_lock();
            rc = MPI_Isend(buf, (int)sizeof(header_t), MPI_BYTE, d->root, TAG_HEADER, g->comm,
                           &reqs[nreq++]);
            if (rc == MPI_SUCCESS)
                rc = post_data(g, true, buf + sizeof(header_t), bytes, d->root, reqs, &nreq);
            xm_unlock();
        }
        xm_pass_turn(g, &g->send_turn[d->root]);
    }
    if (st == XDEV_SUCCESS && rc != MPI_SUCCESS) {
        free(reqs); /* buf may be MPI's now: it stays */
        return xm_fail(g, rc, what, err, errlen);
    }
    if (st != XDEV_SUCCESS) {
        free(buf);
        free(reqs);
        return st;
    }
    st = xm_sends_add(reqs, nreq, buf, err, errlen);
    free(reqs);
    return st;
}

/* Take back reqs[0..n) of a recv that failed, so that MPI does not write
 * into their buffers later; false if some could not be (already being
 * received into). */
static bool cancel(MPI_Request *reqs, int n) {
    xm_lock();
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL) MPI_Cancel(&reqs[i]);
    xm_unlock();
    long long until = xm_now_ms() + 1000;
    int done = 0;
    while (!done && xm_now_ms() < until) {
        xm_lock();
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        xm_unlock();
        if (rc != MPI_SUCCESS) return false;
    }
    return done != 0;
}

xdev_status_t xm_recv(mpi_group_t *g, const xdev_collective_desc_t *d, uint64_t seq, char *err,
                      size_t errlen) {
    long long deadline = xm_now_ms() + (long long)g->timeout_s * 1000;
    char what[64];
    snprintf(what, sizeof what, "xdev_recv #%llu from rank %d", (unsigned long long)seq, d->root);
    header_t *h = malloc(sizeof *h); /* MPI's until received or taken back */
    if (h == NULL) {
        xdev_status_t st = no_memory(sizeof *h, what, err, errlen);
        xm_abort(g, err); /* the pair is out of step */
        return st;
    }
    if (!xm_take_turn(g, &g->recv_turn[d->root], seq, deadline)) {
        free(h);
        return xm_turn_failed(g, what, "recv", err, errlen);
    }
    /* The turn is held until the data's receives are posted, so the next
     * recv from this peer cannot take this one's messages. */
    MPI_Request hreq = MPI_REQUEST_NULL;
    xm_lock();
    int rc = MPI_Irecv(h, (int)sizeof *h, MPI_BYTE, d->root, TAG_HEADER, g->comm, &hreq);
    xm_unlock();
    xdev_status_t st = rc != MPI_SUCCESS ? xm_fail(g, rc, what, err, errlen)
                                         : xm_wait(g, &hreq, 1, deadline, what, err, errlen);
    if (st != XDEV_SUCCESS && rc == MPI_SUCCESS && !cancel(&hreq, 1)) h = NULL; /* it stays */
    if (st == XDEV_SUCCESS && h->magic != HEADER_MAGIC) {
        snprintf(err, errlen, "%s: what came is not an xdev send", what);
        xm_abort(g, err);
        st = XDEV_ERROR_INVALID_VALUE;
    }
    if (st != XDEV_SUCCESS) {
        free(h);
        xm_pass_turn(g, &g->recv_turn[d->root]);
        return st;
    }
    header_t got = *h;
    free(h);
    bool match = got.count == d->count && got.dtype == (uint64_t)d->dtype;
    size_t bytes = match ? d->count * elem_size(d->dtype)
                         : (size_t)got.count * elem_size((xdev_dtype_t)got.dtype);
    void *into = match ? d->recv : malloc(bytes ? bytes : 1);
    int n = (int)(bytes / CHUNK) + 1, nreq = 0;
    MPI_Request *reqs = malloc((size_t)n * sizeof *reqs);
    if (into == NULL || reqs == NULL) {
        if (!match) free(into);
        free(reqs);
        xm_pass_turn(g, &g->recv_turn[d->root]);
        snprintf(err, errlen, "%s: no host memory for %zu bytes", what, bytes);
        xm_abort(g, err); /* the data stays unreceived: the pair is out of step */
        return XDEV_ERROR_OUT_OF_MEMORY;
    }
    xm_lock();
    rc = post_data(g, false, into, bytes, d->root, reqs, &nreq);
    xm_unlock();
    xm_pass_turn(g, &g->recv_turn[d->root]);
    st = rc != MPI_SUCCESS ? xm_fail(g, rc, what, err, errlen)
                           : xm_wait(g, reqs, nreq, deadline, what, err, errlen);
    bool taken_back = st == XDEV_SUCCESS || cancel(reqs, nreq);
    free(reqs);
    if (!match && taken_back) free(into);
    if (!match && st == XDEV_SUCCESS) {
        snprintf(err, errlen,
                 "%s asked for %zu elements of %s but the send had %llu of %s: nothing was "
                 "written",
                 what, d->count, dtype_name((uint64_t)d->dtype), (unsigned long long)got.count,
                 dtype_name(got.dtype));
        st = XDEV_ERROR_INVALID_VALUE;
    }
    return st;
}
