/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_nccl.c - the comm table (communicators) over NCCL,
 * loaded at run time: XDEV_NCCL_PATH (a file) when set, else
 * "libnccl.so.2" through the dynamic linker's search path. Built where
 * CMake finds nccl.h (the toolkit's, or PyTorch's nvidia-nccl wheel); the
 * library itself is only needed by a program that makes a communicator,
 * and its absence is an error naming where xdev looked. The HIP plugin
 * builds the same file over RCCL, NCCL's API for AMD GPUs (rccl/rccl.h,
 * librccl.so.1, XDEV_RCCL_PATH: the XC_CCL_* names of vendor/xc_vendor.h).
 *
 * A rank is an ncclComm_t; ranks of this process come from ncclCommInitAll
 * over the devices' CUDA indices. Each call runs under a guard on the
 * rank's device, so the legacy default stream means that device's. NVLink
 * multicast (NVLS) is left as the environment sets it (NCCL_NVLS_ENABLE). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include XC_CCL_HEADER

static struct {
    pthread_once_t once;
    xdev_status_t status;
    char why[512];
    int version;
    ncclResult_t (*init_all)(ncclComm_t *, int, const int *);
    ncclResult_t (*destroy)(ncclComm_t);
    ncclResult_t (*abort)(ncclComm_t);
    ncclResult_t (*async_error)(ncclComm_t, ncclResult_t *);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                               ncclComm_t, cudaStream_t);
    ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                           ncclComm_t, cudaStream_t);
    ncclResult_t (*all_gather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                               cudaStream_t);
    ncclResult_t (*reduce_scatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                   ncclComm_t, cudaStream_t);
    ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    const char *(*error_string)(ncclResult_t);
    ncclResult_t (*get_version)(int *);
    ncclResult_t (*get_unique_id)(ncclUniqueId *);
    ncclResult_t (*init_rank)(ncclComm_t *, int, ncclUniqueId, int);
} g = {.once = PTHREAD_ONCE_INIT};

_Static_assert(sizeof(ncclUniqueId) == XDEV_COMM_NATIVE_ID_BYTES, "NCCL's (RCCL's) id size");

static void load(void) {
    const char *path = xc_state.host->get_env(XC_CCL_ENV);
    const char *name = path != NULL && path[0] != '\0' ? path : XC_CCL_LIB;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(g.why, sizeof g.why, "%s was not found: dlopen(\"%s\") failed (%s)%s", XC_CCL,
                 name, dlerror(),
                 name == path ? " [" XC_CCL_ENV "]"
                              : "; xdev looked through the dynamic linker's search path "
                                "(LD_LIBRARY_PATH, ld.so.cache); set " XC_CCL_ENV
                                " to the library, " XC_CCL_HINT);
        g.status = XDEV_ERROR_NOT_SUPPORTED;
        return;
    }
    static const struct {
        const char *sym;
        size_t offset;
    } syms[] = {
#define SYM(s, f) {#s, offsetof(__typeof__(g), f)}
        SYM(ncclCommInitAll, init_all),
        SYM(ncclCommDestroy, destroy),
        SYM(ncclCommAbort, abort),
        SYM(ncclCommGetAsyncError, async_error),
        SYM(ncclAllReduce, all_reduce),
        SYM(ncclBroadcast, broadcast),
        SYM(ncclReduce, reduce),
        SYM(ncclAllGather, all_gather),
        SYM(ncclReduceScatter, reduce_scatter),
        SYM(ncclSend, send),
        SYM(ncclRecv, recv),
        SYM(ncclGroupStart, group_start),
        SYM(ncclGroupEnd, group_end),
        SYM(ncclGetErrorString, error_string),
        SYM(ncclGetVersion, get_version),
        SYM(ncclGetUniqueId, get_unique_id),
        SYM(ncclCommInitRank, init_rank),
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *fn = dlsym(h, syms[i].sym);
        if (fn == NULL) {
            snprintf(g.why, sizeof g.why, "%s has no %s (%s 2.12 or later is needed)", name,
                     syms[i].sym, XC_CCL);
            g.status = XDEV_ERROR_NOT_SUPPORTED;
            dlclose(h);
            return;
        }
        memcpy((char *)&g + syms[i].offset, &fn, sizeof fn);
    }
    (void)g.get_version(&g.version);
    g.status = XDEV_SUCCESS; /* the library stays loaded for the process */
}

static xdev_status_t ready(void) {
    pthread_once(&g.once, load);
    if (g.status != XDEV_SUCCESS) return xc_error(g.status, "%s", g.why);
    return XDEV_SUCCESS;
}

static xdev_status_t nccl_fail(ncclResult_t r, const char *what) {
    xdev_status_t st = r == ncclInvalidArgument || r == ncclInvalidUsage ? XDEV_ERROR_INVALID_VALUE
                                                                         : XDEV_ERROR_BACKEND;
    return xc_error(st, "%s: %s %d.%d.%d: %s (ncclResult_t %d)", what, XC_CCL, g.version / 10000,
                    g.version / 100 % 100, g.version % 100, g.error_string(r), (int)r);
}

static bool dtype_of(xdev_dtype_t dt, ncclDataType_t *out) {
    switch (dt) {
    case XDEV_DTYPE_I8:
        *out = ncclInt8;
        return true;
    case XDEV_DTYPE_U8:
        *out = ncclUint8;
        return true;
    case XDEV_DTYPE_I32:
        *out = ncclInt32;
        return true;
    case XDEV_DTYPE_I64:
        *out = ncclInt64;
        return true;
    case XDEV_DTYPE_F16:
        *out = ncclFloat16;
        return true;
    case XDEV_DTYPE_BF16:
        *out = ncclBfloat16;
        return true;
    case XDEV_DTYPE_F32:
        *out = ncclFloat32;
        return true;
    case XDEV_DTYPE_F64:
        *out = ncclFloat64;
        return true;
    default:
        return false;
    }
}

/* xdev_reduce_op_t (sum, prod, min, max, avg) -> ncclRedOp_t. */
static ncclRedOp_t op_of(int op) {
    static const ncclRedOp_t map[] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};
    return map[op];
}

/* A rank: the communicator and its device (for the guard). ncclCommAbort
 * frees the communicator, so an aborted rank only refuses calls (and its
 * destroy only frees the rank). */
typedef struct rank {
    ncclComm_t comm;
    int device;
    _Atomic bool aborted;
} rank_t;

static xdev_status_t comm_init_all(xdev_backend_device_t *const *devs, int n, void **comms) {
    xdev_status_t st = ready();
    if (st != XDEV_SUCCESS) return st;
    int list[XC_MAX_DEVICES] = {0};
    rank_t *ranks[XC_MAX_DEVICES] = {0};
    ncclComm_t nc[XC_MAX_DEVICES] = {0};
    for (int i = 0; i < n; i++) {
        list[i] = devs[i]->index;
        if ((ranks[i] = calloc(1, sizeof *ranks[i])) == NULL) {
            for (int j = 0; j < i; j++)
                free(ranks[j]);
            return xc_error(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for %d ranks", n);
        }
    }
    ncclResult_t r = g.init_all(nc, n, list);
    if (r != ncclSuccess) {
        for (int i = 0; i < n; i++)
            free(ranks[i]);
        return nccl_fail(r, "ncclCommInitAll");
    }
    for (int i = 0; i < n; i++) {
        ranks[i]->comm = nc[i];
        ranks[i]->device = list[i];
        comms[i] = ranks[i];
    }
    return XDEV_SUCCESS;
}

static xdev_status_t comm_destroy(void *comm) {
    rank_t *k = comm;
    if (atomic_load(&k->aborted)) { /* NCCL freed it at the abort */
        free(k);
        return XDEV_SUCCESS;
    }
    ncclResult_t r = g.destroy(k->comm);
    free(k);
    return r == ncclSuccess ? XDEV_SUCCESS : nccl_fail(r, "ncclCommDestroy");
}

static xdev_status_t comm_abort(void *comm) {
    rank_t *k = comm;
    bool was = false;
    if (!atomic_compare_exchange_strong(&k->aborted, &was, true)) return XDEV_SUCCESS; /* once */
    ncclResult_t r = g.abort(k->comm);
    return r == ncclSuccess ? XDEV_SUCCESS : nccl_fail(r, "ncclCommAbort");
}

static xdev_status_t refuse_aborted(void) {
    return xc_error(XDEV_ERROR_INVALID_VALUE,
                    XC_CCL " communicator was aborted (its group failed or was aborted)");
}

static xdev_status_t comm_async_error(void *comm) {
    if (atomic_load(&((rank_t *)comm)->aborted)) return refuse_aborted();
    ncclResult_t res = ncclSuccess;
    ncclResult_t r = g.async_error(((rank_t *)comm)->comm, &res);
    if (r != ncclSuccess) return nccl_fail(r, "ncclCommGetAsyncError");
    if (res != ncclSuccess && res != ncclInProgress) return nccl_fail(res, "asynchronous error");
    return XDEV_SUCCESS;
}

/* Bytes per element of the dtypes moved as bytes (i16, u16, u32, u64, c64, c128). */
static size_t plain_size(xdev_dtype_t dt) {
    switch (dt) {
    case XDEV_DTYPE_I16:
    case XDEV_DTYPE_U16:
        return 2;
    case XDEV_DTYPE_U32:
        return 4;
    case XDEV_DTYPE_C64:
    case XDEV_DTYPE_U64:
        return 8;
    case XDEV_DTYPE_C128:
        return 16;
    default:
        return 0;
    }
}

static xdev_status_t comm_collective(void *comm, const xdev_collective_desc_t *d, void *stream) {
    rank_t *k = comm;
    if (atomic_load(&k->aborted)) return refuse_aborted();
    ncclDataType_t dt;
    size_t count = d->count;
    bool moves = d->kind == XDEV_COLL_BROADCAST || d->kind == XDEV_COLL_ALL_GATHER ||
                 d->kind == XDEV_COLL_SEND || d->kind == XDEV_COLL_RECV;
    if (!dtype_of(d->dtype, &dt)) {
        /* Data movement takes any dtype (xdev/communicator.h): as its bytes. */
        if (!moves || plain_size(d->dtype) == 0)
            return xc_error(XDEV_ERROR_NOT_SUPPORTED, XC_CCL " has no dtype %d to reduce",
                            (int)d->dtype);
        dt = ncclUint8;
        count *= plain_size(d->dtype);
    }
    /* NCCL switches to the communicator's device itself; a guard is needed
     * only where the stream handle means "the current device's". */
    xc_guard_t guard;
    xdev_status_t st = xc_stream_guard_begin(&guard, k->device, stream);
    if (st != XDEV_SUCCESS) return st;
    cudaStream_t s = (cudaStream_t)stream;
    ncclResult_t r = ncclInvalidUsage;
    const char *what = "";
    switch (d->kind) {
    case XDEV_COLL_ALL_REDUCE:
        r = g.all_reduce(d->send, d->recv, count, dt, op_of(d->op), k->comm, s);
        what = "ncclAllReduce";
        break;
    case XDEV_COLL_BROADCAST:
        r = g.broadcast(d->send, d->recv, count, dt, d->root, k->comm, s);
        what = "ncclBroadcast";
        break;
    case XDEV_COLL_REDUCE:
        r = g.reduce(d->send, d->recv, count, dt, op_of(d->op), d->root, k->comm, s);
        what = "ncclReduce";
        break;
    case XDEV_COLL_ALL_GATHER:
        r = g.all_gather(d->send, d->recv, count, dt, k->comm, s);
        what = "ncclAllGather";
        break;
    case XDEV_COLL_REDUCE_SCATTER:
        r = g.reduce_scatter(d->send, d->recv, count, dt, op_of(d->op), k->comm, s);
        what = "ncclReduceScatter";
        break;
    case XDEV_COLL_SEND:
        r = g.send(d->send, count, dt, d->root, k->comm, s);
        what = "ncclSend";
        break;
    case XDEV_COLL_RECV:
        r = g.recv(d->recv, count, dt, d->root, k->comm, s);
        what = "ncclRecv";
        break;
    }
    xc_guard_end(&guard);
    return r == ncclSuccess ? XDEV_SUCCESS : nccl_fail(r, what);
}

/* Groups before any communicator exists (NCCL not loaded yet) bracket
 * nothing: without a communicator there is no NCCL call to group. */
static xdev_status_t comm_group_start(void) {
    pthread_once(&g.once, load);
    if (g.status != XDEV_SUCCESS) return XDEV_SUCCESS;
    ncclResult_t r = g.group_start();
    return r == ncclSuccess ? XDEV_SUCCESS : nccl_fail(r, "ncclGroupStart");
}

static xdev_status_t comm_group_end(void) {
    pthread_once(&g.once, load);
    if (g.status != XDEV_SUCCESS) return XDEV_SUCCESS;
    ncclResult_t r = g.group_end();
    return r == ncclSuccess ? XDEV_SUCCESS : nccl_fail(r, "ncclGroupEnd");
}

static xdev_status_t comm_get_unique_id(void *id) {
    xdev_status_t st = ready();
    if (st != XDEV_SUCCESS) return st;
    ncclUniqueId u;
    ncclResult_t r = g.get_unique_id(&u);
    if (r != ncclSuccess) return nccl_fail(r, "ncclGetUniqueId");
    memcpy(id, &u, sizeof u);
    return XDEV_SUCCESS;
}

static xdev_status_t comm_init_rank(xdev_backend_device_t *dev, int nranks, const void *id,
                                    int rank, void **comm) {
    xdev_status_t st = ready();
    if (st != XDEV_SUCCESS) return st;
    rank_t *k = calloc(1, sizeof *k);
    if (k == NULL) return xc_error(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a rank");
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    xc_guard_t guard; /* ncclCommInitRank binds the rank to the current device */
    if ((st = xc_guard_begin(&guard, dev->index)) != XDEV_SUCCESS) {
        free(k);
        return st;
    }
    ncclResult_t r = g.init_rank(&k->comm, nranks, u, rank);
    xc_guard_end(&guard);
    if (r != ncclSuccess) {
        free(k);
        return nccl_fail(r, "ncclCommInitRank");
    }
    k->device = dev->index;
    *comm = k;
    return XDEV_SUCCESS;
}

const xdev_comm_vtable_t xc_comm_vtable = {
    .size = sizeof(xdev_comm_vtable_t),
    .init_all = comm_init_all,
    .destroy = comm_destroy,
    .abort = comm_abort,
    .async_error = comm_async_error,
    .collective = comm_collective,
    .group_start = comm_group_start,
    .group_end = comm_group_end,
    .get_unique_id = comm_get_unique_id,
    .init_rank = comm_init_rank,
};
