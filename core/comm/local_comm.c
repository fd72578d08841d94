/* SPDX-License-Identifier: Apache-2.0 */
/* local_comm.c - torch.cuda.comm over the devices of one process
 * (xdev/comm.h): broadcast, broadcast_coalesced, reduce_add, scatter,
 * gather, built from the core's stream-ordered copies, stream waits, the
 * caching allocator's stream-ordered temporaries and the backends' ops.add;
 * reduce_add goes through a cached communicator group where the backend
 * has native ones (NCCL: comm_cache.c), as torch's does.
 *
 * Every cross-device piece is ordered as torch orders a copy between
 * devices: the source device's current stream waits for the destination's
 * stream, the copy runs on the source stream, and the destination's stream
 * waits for the source's. Nothing waits on the host. */
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "alloc/alloc_internal.h"
#include "memory/copy.h"
#include "runtime/enqueue.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "xdev/comm.h"
#include "xdev/communicator.h"

/* xdev/comm.h's C macros that take plain void *[] arrays are for callers:
 * the definitions below are the functions themselves. */
#undef xdev_comm_broadcast_coalesced
#undef xdev_comm_reduce_add
#undef xdev_comm_gather

#define BUCKET_DEFAULT ((size_t)10 << 20)
#define PACK_ALIGN ((size_t)256)

/* The same device type for every buffer of a call. */
static xdev_status_t same_type(const xdev_device_record_t *first, const xdev_device_record_t *r,
                               const char *what) {
    if (r->be == first->be) return XDEV_SUCCESS;
    return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                     "%s is on %s:%d but the call's first buffer is on %s:%d: the buffers of "
                     "one collective are on devices of one type",
                     what, r->be->name, r->id.index, first->be->name, first->id.index);
}

/* Fail when two of recs[0..n) are the same device. */
static xdev_status_t distinct(xdev_device_record_t *const *recs, int n, const char *arg) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (recs[i] == recs[j])
                return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "%s[%d] and %s[%d] are both on " XDEV_REC_FMT
                                 ": each device appears once",
                                 arg, j, arg, i, XDEV_REC_ARGS(recs[i]));
    return XDEV_SUCCESS;
}

static xdev_status_t count_ok(int n, const char *arg) {
    if (n < 1 || n > XDEV_MAX_DEVICES)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s = %d is not in 1..%d", arg, n,
                         XDEV_MAX_DEVICES);
    return XDEV_SUCCESS;
}

/* n bytes from src (on srec) to dst (on drec), ordered as described at the
 * top; dstream (NULL: drec's current stream) is the destination's stream. */
static xdev_status_t cross_copy(void *dst, xdev_device_record_t *drec, xdev_stream_t dstream,
                                const void *src, xdev_device_record_t *srec, size_t n) {
    if (n == 0) return XDEV_SUCCESS;
    xdev_stream_t ss, ds = dstream;
    xdev_status_t st = xdev_core_current_stream(srec, &ss);
    if (st == XDEV_SUCCESS && ds == NULL) st = xdev_core_current_stream(drec, &ds);
    if (st != XDEV_SUCCESS) return st;
    if (srec == drec) { /* one device: the destination's stream runs it */
        st = xdev_core_stream_wait_stream(ds, ss);
        return st == XDEV_SUCCESS ? xdev_core_memcpy_async(dst, src, n, ds) : st;
    }
    st = xdev_core_stream_wait_stream(ss, ds);
    if (st == XDEV_SUCCESS) st = xdev_core_memcpy_async(dst, src, n, ss);
    if (st == XDEV_SUCCESS) st = xdev_core_stream_wait_stream(ds, ss);
    return st;
}

/* The ranges [a, a + n) and [b, b + m) overlap. */
static bool overlap(const void *a, size_t n, const void *b, size_t m) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + m && y < x + n;
}

/* One broadcast of `bytes` from src on recs[0] into bufs[i] on recs[i], as
 * a broadcast of the cached group over recs[0..m) (NCCL on CUDA: the path
 * torch.cuda.comm takes), root 0, every rank on its device's current
 * stream; bufs[0] is the root's own output (src itself: none). False when
 * the backend has no group for these devices (the caller copies instead);
 * else *st is the result. A peer copy from one source to each destination
 * is bound by the source's outgoing links; the collective pipelines the
 * bytes through every device's. */
static bool broadcast_by_comm(xdev_device_record_t *const *recs, int m, const void *src,
                              void *const *bufs, size_t bytes, xdev_status_t *st) {
    xdev_communicator_t *comms;
    if (m < 2 || m > XDEV_MAX_DEVICES || !xdev_comm_cache_get(recs, m, &comms)) return false;
    xdev_status_t s = xdev_group_start();
    if (s == XDEV_SUCCESS) {
        for (int i = 0; i < m && s == XDEV_SUCCESS; i++) /* the buffers are checked */
            s = xdev_comm_cached_collective(comms[i], XDEV_COLL_BROADCAST, i == 0 ? src : NULL,
                                            bufs[i], bytes, XDEV_DTYPE_U8, 0);
        xdev_status_t end = xdev_group_end();
        if (s == XDEV_SUCCESS) s = end;
    }
    xdev_comm_cache_put(comms, s != XDEV_SUCCESS);
    *st = s;
    return true;
}

xdev_status_t xdev_comm_broadcast(const void *src, size_t bytes, void *const *dsts, int n) {
    XDEV_REQUIRE_ARG(dsts);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(count_ok(n, "n"));
    xdev_device_record_t *srec, *recs[XDEV_MAX_DEVICES] = {0};
    XDEV_CHECK(xdev_comm_buffer_device(src, bytes, "src", -1, &srec));
    for (int i = 0; i < n; i++) {
        XDEV_CHECK(xdev_comm_buffer_device(dsts[i], bytes, "dsts", i, &recs[i]));
        XDEV_CHECK(same_type(srec, recs[i], "a destination"));
        if (dsts[i] != src && overlap(dsts[i], bytes, src, bytes))
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "dsts[%d] overlaps src", i);
    }
    XDEV_CHECK(distinct(recs, n, "dsts"));
    if (bytes == 0) return XDEV_SUCCESS;
    /* The group: the source's device first (its output a destination there,
     * else src itself), then the other destinations in order. */
    xdev_device_record_t *members[XDEV_MAX_DEVICES + 1] = {srec};
    void *outs[XDEV_MAX_DEVICES + 1] = {(void *)src};
    int m = 1;
    for (int i = 0; i < n; i++) {
        if (recs[i] == srec) {
            outs[0] = dsts[i];
            continue;
        }
        members[m] = recs[i];
        outs[m++] = dsts[i];
    }
    xdev_status_t st;
    if (broadcast_by_comm(members, m, src, outs, bytes, &st)) {
        XDEV_CHECK(st);
        return XDEV_SUCCESS;
    }
    for (int i = 0; i < n; i++)
        if (dsts[i] != src) XDEV_CHECK(cross_copy(dsts[i], recs[i], NULL, src, srec, bytes));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_scatter(const void *src, size_t bytes, void *const *dsts,
                                const size_t *chunk_bytes, int n, const xdev_stream_t *streams) {
    XDEV_REQUIRE_ARG(dsts);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(count_ok(n, "n"));
    if (chunk_bytes == NULL && bytes % (size_t)n != 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "bytes = %zu does not split into %d equal chunks; pass chunk_bytes",
                             bytes, n);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t c = chunk_bytes ? chunk_bytes[i] : bytes / (size_t)n;
        if (c > bytes - total)
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "the chunks add up to more than bytes = %zu (at chunk %d)", bytes,
                                 i);
        total += c;
    }
    if (total != bytes)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the chunks add up to %zu bytes, not bytes = %zu", total, bytes);
    xdev_device_record_t *srec, *recs[XDEV_MAX_DEVICES] = {0};
    XDEV_CHECK(xdev_comm_buffer_device(src, bytes, "src", -1, &srec));
    for (int i = 0; i < n; i++) {
        size_t c = chunk_bytes ? chunk_bytes[i] : bytes / (size_t)n;
        XDEV_CHECK(xdev_comm_buffer_device(dsts[i], c, "dsts", i, &recs[i]));
        XDEV_CHECK(same_type(srec, recs[i], "a destination"));
        if (overlap(dsts[i], c, src, bytes))
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "dsts[%d] overlaps src", i);
        xdev_stream_t s = streams ? streams[i] : NULL;
        if (s != NULL) {
            XDEV_CHECK(xdev_stream_check(s, "streams[i]"));
            if (s->rec != recs[i])
                return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                                     "streams[%d] belongs to " XDEV_REC_FMT
                                     " but dsts[%d] is on " XDEV_REC_FMT,
                                     i, XDEV_REC_ARGS(s->rec), i, XDEV_REC_ARGS(recs[i]));
        }
    }
    XDEV_CHECK(distinct(recs, n, "dsts"));
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t c = chunk_bytes ? chunk_bytes[i] : bytes / (size_t)n;
        XDEV_CHECK(cross_copy(dsts[i], recs[i], streams ? streams[i] : NULL,
                              (const char *)src + off, srec, c));
        off += c;
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_gather(const void *const *srcs, const size_t *chunk_bytes, int n,
                               void *dst) {
    XDEV_REQUIRE_ARG(srcs);
    XDEV_REQUIRE_ARG(chunk_bytes);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(count_ok(n, "n"));
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (chunk_bytes[i] > SIZE_MAX - total)
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "the chunk sizes overflow");
        total += chunk_bytes[i];
    }
    xdev_device_record_t *drec, *recs[XDEV_MAX_DEVICES] = {0};
    XDEV_CHECK(xdev_comm_buffer_device(dst, total, "dst", -1, &drec));
    for (int i = 0; i < n; i++) {
        XDEV_CHECK(xdev_comm_buffer_device(srcs[i], chunk_bytes[i], "srcs", i, &recs[i]));
        XDEV_CHECK(same_type(drec, recs[i], "a source"));
        if (overlap(srcs[i], chunk_bytes[i], dst, total))
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "srcs[%d] overlaps dst", i);
    }
    XDEV_CHECK(distinct(recs, n, "srcs"));
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        XDEV_CHECK(cross_copy((char *)dst + off, drec, NULL, srcs[i], recs[i], chunk_bytes[i]));
        off += chunk_bytes[i];
    }
    return XDEV_SUCCESS;
}

static bool addable(xdev_dtype_t t) {
    return t == XDEV_DTYPE_F16 || t == XDEV_DTYPE_BF16 || t == XDEV_DTYPE_F32 ||
           t == XDEV_DTYPE_F64 || t == XDEV_DTYPE_I32 || t == XDEV_DTYPE_I64;
}

/* The enqueue path's step of one add (runtime/enqueue.h). */
typedef struct {
    void *dst;
    const void *src;
    xdev_dtype_t dtype;
    size_t count;
} add_op_t;

static xdev_status_t add_call(xdev_enqueue_t *q) {
    const add_op_t *o = q->ctx;
    return xdev_be_ops_add(q->rec, o->dst, o->src, o->dtype, o->count, q->stream->native);
}

/* dst += src on dst's device and current stream ds (src on that device). */
static xdev_status_t add_on(xdev_device_record_t *drec, xdev_stream_t ds, void *dst,
                            const void *src, xdev_dtype_t dtype, size_t count) {
    add_op_t o = {dst, src, dtype, count};
    size_t bytes = count * xdev_dtype_size(dtype);
    const xdev_op_use_t uses[2] = {{src, bytes, XDEV_OP_READ, 0}, {dst, bytes, XDEV_OP_WRITE, 0}};
    xdev_enqueue_t q = {
        .kind = XDEV_OP_REDUCE_ADD,
        .name = "xdev_comm_reduce_add",
        .stream = ds,
        .rec = drec,
        .ctx = &o,
        .flags = XDEV_ENQUEUE_NO_SPAN, /* the collective's adds were never traced one by one */
        .uses = uses,
        .nuses = 2,
        .call = add_call,
    };
    return xdev_enqueue(&q);
}

/* reduce_add as one reduce of a cached group (NCCL on CUDA), root the
 * source on dst's device, every rank on its device's current stream. */
static xdev_status_t reduce_by_comm(xdev_communicator_t *comms, const void *const *srcs, int n,
                                    void *dst, size_t count, xdev_dtype_t dtype, int root) {
    xdev_status_t st = xdev_group_start();
    if (st != XDEV_SUCCESS) return st;
    for (int i = 0; i < n && st == XDEV_SUCCESS; i++) /* the buffers are checked */
        st = xdev_comm_cached_collective(comms[i], XDEV_COLL_REDUCE, srcs[i],
                                         i == root ? dst : NULL, count, dtype, root);
    xdev_status_t end = xdev_group_end();
    return st != XDEV_SUCCESS ? st : end;
}

xdev_status_t xdev_comm_reduce_add(const void *const *srcs, int n, void *dst, size_t count,
                                   xdev_dtype_t dtype) {
    XDEV_REQUIRE_ARG(srcs);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(count_ok(n, "n"));
    if (!addable(dtype))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "dtype %d: reduce_add sums f16, bf16, f32, f64, i32 or i64",
                             (int)dtype);
    size_t es = xdev_dtype_size(dtype);
    if (count > SIZE_MAX / es)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "count = %zu overflows", count);
    size_t bytes = count * es;
    xdev_device_record_t *drec, *recs[XDEV_MAX_DEVICES] = {0};
    XDEV_CHECK(xdev_comm_buffer_device(dst, bytes, "dst", -1, &drec));
    if ((uintptr_t)dst % es != 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "dst is not aligned to its %zu-byte element",
                             es);
    int in_place = -1;
    for (int i = 0; i < n; i++) {
        XDEV_CHECK(xdev_comm_buffer_device(srcs[i], bytes, "srcs", i, &recs[i]));
        XDEV_CHECK(same_type(drec, recs[i], "a source"));
        if ((uintptr_t)srcs[i] % es != 0)
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "srcs[%d] is not aligned to its %zu-byte element", i, es);
        if (srcs[i] == dst)
            in_place = i;
        else if (overlap(srcs[i], bytes, dst, bytes))
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "srcs[%d] overlaps dst without being dst", i);
    }
    XDEV_CHECK(distinct(recs, n, "srcs"));
    if (count == 0) return XDEV_SUCCESS;
    int root = -1;
    for (int i = 0; i < n; i++)
        if (recs[i] == drec) root = i;
    xdev_communicator_t *comms;
    if (root >= 0 && xdev_comm_cache_get(recs, n, &comms)) {
        xdev_status_t st = reduce_by_comm(comms, srcs, n, dst, count, dtype, root);
        xdev_comm_cache_put(comms, st != XDEV_SUCCESS);
        XDEV_CHECK(st);
        return XDEV_SUCCESS;
    }
    if (!XDEV_HAS(drec->be, ops, add)) /* the copies-and-adds path */
        return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "the %s backend does not implement ops.add (ABI 2.2), which "
                             "reduce_add sums with where no communicator does",
                             drec->be->name);
    xdev_stream_t ds;
    XDEV_CHECK(xdev_core_current_stream(drec, &ds));
    /* torch's order: the source on dst's device (dst itself when in place)
     * first, then the others in order; with none there, src0 + src1 + ... */
    int first = in_place >= 0 ? in_place : root >= 0 ? root : 0;
    if (in_place < 0) XDEV_CHECK(cross_copy(dst, drec, ds, srcs[first], recs[first], bytes));
    for (int i = 0; i < n; i++) {
        if (i == first) continue;
        if (recs[i] == drec) {
            XDEV_CHECK(add_on(drec, ds, dst, srcs[i], dtype, count));
            continue;
        }
        void *tmp = NULL; /* stream-ordered on ds: reused only by work after the add */
        xdev_status_t st = xdev_alloc_malloc_on(ds, bytes, &tmp);
        if (st == XDEV_SUCCESS) st = cross_copy(tmp, drec, ds, srcs[i], recs[i], bytes);
        if (st == XDEV_SUCCESS) st = add_on(drec, ds, dst, tmp, dtype, count);
        if (tmp != NULL) (void)xdev_alloc_free(tmp);
        XDEV_CHECK(st);
    }
    return XDEV_SUCCESS;
}

/* A buffer's room in a bucket: its size rounded up to PACK_ALIGN. */
static size_t packed_size(size_t n) {
    return (n + PACK_ALIGN - 1) / PACK_ALIGN * PACK_ALIGN;
}

/* One bucket of broadcast_coalesced: buffers [j0, j1), `packed` bytes
 * together, packed on the source device, sent once to each destination
 * (one broadcast of the group members = {source, destinations}, or a copy
 * to each), unpacked there. */
static xdev_status_t bucket(const void *const *srcs, const size_t *sizes, int nbuf, int j0, int j1,
                            size_t packed, void *const *dsts, xdev_device_record_t *const *members,
                            int ndev) {
    xdev_device_record_t *srec = members[0];
    xdev_stream_t ss, ds[XDEV_MAX_DEVICES];
    void *bufs[XDEV_MAX_DEVICES + 1] = {0}; /* [0] the packed source, [1 + d] its copy on d */
    xdev_status_t st = xdev_core_current_stream(srec, &ss);
    if (st == XDEV_SUCCESS) st = xdev_alloc_malloc_on(ss, packed, &bufs[0]);
    size_t off = 0;
    for (int j = j0; j < j1 && st == XDEV_SUCCESS; j++) {
        if (sizes[j] > 0) st = xdev_core_memcpy_async((char *)bufs[0] + off, srcs[j], sizes[j], ss);
        off += packed_size(sizes[j]);
    }
    for (int d = 0; d < ndev && st == XDEV_SUCCESS; d++) {
        st = xdev_core_current_stream(members[1 + d], &ds[d]);
        if (st == XDEV_SUCCESS) st = xdev_alloc_malloc_on(ds[d], packed, &bufs[1 + d]);
    }
    xdev_status_t bst;
    if (st == XDEV_SUCCESS && broadcast_by_comm(members, ndev + 1, bufs[0], bufs, packed, &bst))
        st = bst;
    else
        for (int d = 0; d < ndev && st == XDEV_SUCCESS; d++)
            st = cross_copy(bufs[1 + d], members[1 + d], ds[d], bufs[0], srec, packed);
    for (int d = 0; d < ndev && st == XDEV_SUCCESS; d++) {
        off = 0;
        for (int j = j0; j < j1 && st == XDEV_SUCCESS; j++) {
            void *out = dsts[(size_t)d * (size_t)nbuf + (size_t)j];
            if (sizes[j] > 0)
                st = xdev_core_memcpy_async(out, (char *)bufs[1 + d] + off, sizes[j], ds[d]);
            off += packed_size(sizes[j]);
        }
    }
    for (int i = 0; i <= ndev; i++) /* each on the stream it was taken on, after its uses */
        if (bufs[i] != NULL) (void)xdev_alloc_free(bufs[i]);
    return st;
}

typedef struct span {
    uintptr_t at;
    size_t bytes;
    size_t index; /* in dsts */
} span_t;

static int by_address(const void *a, const void *b) {
    uintptr_t x = ((const span_t *)a)->at, y = ((const span_t *)b)->at;
    return x < y ? -1 : x > y;
}

/* No two outputs of broadcast_coalesced overlap (each would receive two
 * buffers' bytes, in an undefined order): sorted by address, each ends
 * before the next begins. O(n log n) for up to 2^20 buffers per device. */
static xdev_status_t outputs_apart(void *const *dsts, const size_t *sizes, int nbuf, int ndev) {
    size_t n = (size_t)nbuf * (size_t)ndev, k = 0;
    span_t *v = malloc(n * sizeof *v);
    if (v == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to check %zu outputs", n);
    for (size_t i = 0; i < n; i++)
        if (sizes[i % (size_t)nbuf] > 0)
            v[k++] = (span_t){(uintptr_t)dsts[i], sizes[i % (size_t)nbuf], i};
    qsort(v, k, sizeof *v, by_address);
    for (size_t i = 1; i < k; i++)
        if (v[i - 1].at + v[i - 1].bytes > v[i].at) {
            size_t a = v[i - 1].index, b = v[i].index;
            free(v);
            return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                 "dsts[%zu] (destination %zu, buffer %zu) overlaps dsts[%zu] "
                                 "(destination %zu, buffer %zu): outputs must not overlap",
                                 a < b ? a : b, (a < b ? a : b) / (size_t)nbuf,
                                 (a < b ? a : b) % (size_t)nbuf, a < b ? b : a,
                                 (a < b ? b : a) / (size_t)nbuf, (a < b ? b : a) % (size_t)nbuf);
        }
    free(v);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_comm_broadcast_coalesced(const void *const *srcs, const size_t *sizes, int nbuf,
                                            void *const *dsts, int ndev, size_t bucket_bytes) {
    XDEV_REQUIRE_ARG(srcs);
    XDEV_REQUIRE_ARG(sizes);
    XDEV_REQUIRE_ARG(dsts);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(count_ok(ndev, "ndev"));
    if (nbuf < 1 || nbuf > (1 << 20))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "nbuf = %d is not in 1..2^20", nbuf);
    if (bucket_bytes == 0) bucket_bytes = BUCKET_DEFAULT;
    xdev_device_record_t *srec = NULL, *r, *members[XDEV_MAX_DEVICES + 1] = {0};
    xdev_device_record_t **drecs = members + 1; /* members: the source, then the destinations */
    for (int j = 0; j < nbuf; j++) {
        XDEV_CHECK(xdev_comm_buffer_device(srcs[j], sizes[j], "srcs", j, &r));
        if (srec == NULL) srec = r;
        if (r != srec)
            return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                                 "srcs[%d] is on " XDEV_REC_FMT " but srcs[0] on " XDEV_REC_FMT
                                 ": the buffers broadcast together are on one device",
                                 j, XDEV_REC_ARGS(r), XDEV_REC_ARGS(srec));
    }
    for (int d = 0; d < ndev; d++)
        for (int j = 0; j < nbuf; j++) {
            void *out = dsts[(size_t)d * (size_t)nbuf + (size_t)j];
            XDEV_CHECK(xdev_comm_buffer_device(out, sizes[j], "dsts", d * nbuf + j, &r));
            XDEV_CHECK(same_type(srec, r, "a destination"));
            if (j == 0) drecs[d] = r;
            if (r != drecs[d])
                return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                                     "destination %d's buffers are on " XDEV_REC_FMT
                                     " and " XDEV_REC_FMT
                                     ": each destination's buffers are on one device",
                                     d, XDEV_REC_ARGS(drecs[d]), XDEV_REC_ARGS(r));
            if (r == srec)
                return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                     "destination %d is the source device " XDEV_REC_FMT
                                     " (the sources already are its copy)",
                                     d, XDEV_REC_ARGS(r));
        }
    XDEV_CHECK(distinct(drecs, ndev, "destination devices"));
    XDEV_CHECK(outputs_apart(dsts, sizes, nbuf, ndev));
    members[0] = srec;
    for (int j = 0; j < nbuf;) {
        int j1 = j;
        size_t packed = 0;
        while (j1 < nbuf && sizes[j1] < bucket_bytes &&
               packed + packed_size(sizes[j1]) <= bucket_bytes) {
            packed += packed_size(sizes[j1]);
            j1++;
        }
        if (j1 - j >= 2) {
            XDEV_CHECK(bucket(srcs, sizes, nbuf, j, j1, packed, dsts, members, ndev));
            j = j1;
            continue;
        }
        /* a large buffer, or one alone: sent directly */
        void *outs[XDEV_MAX_DEVICES + 1] = {(void *)srcs[j]};
        for (int d = 0; d < ndev; d++)
            outs[1 + d] = dsts[(size_t)d * (size_t)nbuf + (size_t)j];
        xdev_status_t st;
        if (sizes[j] > 0 && broadcast_by_comm(members, ndev + 1, srcs[j], outs, sizes[j], &st)) {
            XDEV_CHECK(st);
        } else {
            for (int d = 0; d < ndev; d++)
                XDEV_CHECK(cross_copy(outs[1 + d], drecs[d], NULL, srcs[j], srec, sizes[j]));
        }
        j++;
    }
    return XDEV_SUCCESS;
}
