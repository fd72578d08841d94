/* SPDX-License-Identifier: Apache-2.0 */
/* comm_procs.c - ranks in several processes (xdev/communicator.h): a
 * group's id and a process's rank in it, through the backend's comm table
 * (ncclGetUniqueId / ncclCommInitRank on CUDA). The id carries a magic and
 * the device type in front of the backend's bytes, so a damaged id or one
 * made for another device type is refused here rather than handed to the
 * library. Host-memory backends (the CPU) meet through a transport
 * (transport.c: shared memory on one host, MPI across hosts), whose name
 * the id carries after the header, then the transport's own bytes.
 *
 *   bytes  0..8    "xdevcid2"
 *          8..12   the device type
 *         16..     the backend's id (XDEV_COMM_NATIVE_ID_BYTES), or
 *         16..32   the transport's name and 32..160 its id */
#include <string.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"

#define ID_MAGIC "xdevcid2"
#define ID_HEADER 16
#define ID_TRANSPORT (ID_HEADER + XDEV_TRANSPORT_NAME_BYTES)

_Static_assert(ID_HEADER + XDEV_COMM_NATIVE_ID_BYTES <= XDEV_COMMUNICATOR_ID_BYTES, "id too small");
_Static_assert(ID_TRANSPORT + XDEV_TRANSPORT_ID_BYTES <= XDEV_COMMUNICATOR_ID_BYTES,
               "id too small");

static void id_header(xdev_communicator_id_t *id, xdev_device_type_t type) {
    memset(id, 0, sizeof *id);
    memcpy(id->bytes, ID_MAGIC, 8);
    uint32_t t = (uint32_t)type;
    memcpy(id->bytes + 8, &t, sizeof t);
}

void xdev_communicator_id_self_meet(xdev_device_type_t type, const xdev_transport_t *xp,
                                    uint64_t call, xdev_communicator_id_t *id) {
    id_header(id, type);
    snprintf((char *)id->bytes + ID_HEADER, XDEV_TRANSPORT_NAME_BYTES, "%s", xp->name);
    memcpy(id->bytes + ID_TRANSPORT, &call, sizeof call);
}

/* A transport's failure: its message (err) as the call's. */
static xdev_status_t transport_fail(const xdev_transport_t *xp, xdev_status_t st, const char *err) {
    if (err[0] != '\0') return XDEV_FAIL(st, "%s", err);
    return XDEV_FAIL(st, "the %s transport failed and said nothing", xp->name);
}

/* The backend of `type` with communicators across processes. */
static xdev_status_t procs_backend(xdev_device_type_t type, xdev_backend_t **out) {
    if ((unsigned)type >= XDEV_MAX_DEVICE_TYPES)
        return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE, "unknown device type %d", (int)type);
    xdev_status_t st = xdev_backend_acquire(type, out);
    if (st != XDEV_SUCCESS) return st;
    if ((*out)->flags & XDEV_BACKEND_HOST_MEMORY) return XDEV_SUCCESS; /* shm_comm.c */
    if (!XDEV_HAS(*out, comm, init_rank)) /* the group comm.rank, whole */
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend has no communicators across processes", (*out)->name);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_unique_id(xdev_device_type_t type, xdev_communicator_id_t *id) {
    XDEV_REQUIRE_ARG(id);
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_backend_t *be;
    XDEV_CHECK(procs_backend(type, &be));
    id_header(id, type);
    if (be->flags & XDEV_BACKEND_HOST_MEMORY) {
        const xdev_transport_t *xp;
        XDEV_CHECK(xdev_transport_pick(&xp));
        snprintf((char *)id->bytes + ID_HEADER, XDEV_TRANSPORT_NAME_BYTES, "%s", xp->name);
        char err[512] = "";
        xdev_status_t st = xp->unique_id(id->bytes + ID_TRANSPORT, err, sizeof err);
        if (st != XDEV_SUCCESS) XDEV_CHECK(transport_fail(xp, st, err));
    } else {
        XDEV_CHECK(xdev_be_comm_get_unique_id(be, id->bytes + ID_HEADER));
    }
    return XDEV_SUCCESS;
}

/* Join the group of host-memory ranks `id` names through its transport. */
static xdev_status_t join_transport(const xdev_communicator_id_t *id, int nranks, int rank,
                                    xdev_device_record_t *rec, xdev_communicator_t *comm) {
    char name[XDEV_TRANSPORT_NAME_BYTES];
    memcpy(name, id->bytes + ID_HEADER, sizeof name);
    if (name[sizeof name - 1] != '\0')
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the id names no transport (damaged)");
    const xdev_transport_t *xp;
    xdev_status_t st = xdev_transport_named(name, &xp);
    if (st == XDEV_ERROR_INVALID_VALUE)
        return XDEV_FAIL(st, "the id names no transport (damaged): %s", xdev_last_error());
    XDEV_CHECK(st);
    xdev_transport_join_t j = {sizeof j, {0}, nranks, rank, 0, NULL};
    memcpy(j.id, id->bytes + ID_TRANSPORT, sizeof j.id);
    XDEV_CHECK(xdev_comm_timeout_s(XDEV_COMM_TIMEOUT_DEFAULT_S, &j.timeout_s));
    xdev_launch_info_t li;
    bool found = false;
    if (xdev_launch_read(&li, &found) == XDEV_SUCCESS && found) j.launcher = li.launcher;
    void *xg = NULL;
    char err[512] = "";
    st = xp->join(&j, &xg, err, sizeof err);
    if (st != XDEV_SUCCESS) return transport_fail(xp, st, err);
    st = xdev_communicator_adopt(NULL, rec, nranks, rank, NULL, xp, xg, comm);
    if (st != XDEV_SUCCESS) xp->leave(xg);
    return st;
}

xdev_status_t xdev_communicator_init_rank(xdev_communicator_t *comm, int nranks,
                                          const xdev_communicator_id_t *id, int rank,
                                          xdev_device_t device) {
    XDEV_REQUIRE_ARG(comm);
    XDEV_REQUIRE_ARG(id);
    XDEV_CHECK(xdev_core_ensure_init());
    if (memcmp(id->bytes, ID_MAGIC, 8) != 0)
        return XDEV_API_FAIL(
            XDEV_ERROR_INVALID_VALUE,
            "id is not a communicator id from xdev_communicator_unique_id (damaged, or "
            "never made)");
    uint32_t t;
    memcpy(&t, id->bytes + 8, sizeof t);
    if (nranks < 1 || nranks > (1 << 24))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "nranks = %d is not in 1..2^24", nranks);
    if (rank < 0 || rank >= nranks)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "rank %d is not in 0..%d", rank, nranks - 1);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    if ((uint32_t)rec->be->type != t)
        return XDEV_API_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "the id was made for device type %u but the device is " XDEV_REC_FMT,
                             t, XDEV_REC_ARGS(rec));
    xdev_backend_t *be;
    XDEV_CHECK(procs_backend(rec->be->type, &be));
    if (be->flags & XDEV_BACKEND_HOST_MEMORY) {
        XDEV_CHECK(join_transport(id, nranks, rank, rec, comm));
        return XDEV_SUCCESS;
    }
    void *native = NULL;
    XDEV_CHECK(xdev_be_comm_init_rank(rec, nranks, id->bytes + ID_HEADER, rank, &native));
    xdev_status_t st = xdev_communicator_adopt(be, rec, nranks, rank, native, NULL, NULL, comm);
    if (st != XDEV_SUCCESS) (void)xdev_be_comm_destroy(be, native);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}
