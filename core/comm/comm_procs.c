/* SPDX-License-Identifier: Apache-2.0 */
/* comm_procs.c - ranks in several processes (xdev/communicator.h): a
 * group's id and a process's rank in it, through the backend's comm table
 * (ncclGetUniqueId / ncclCommInitRank on CUDA). The id carries a magic and
 * the device type in front of the backend's bytes, so a damaged id or one
 * made for another device type is refused here rather than handed to the
 * library. Host-memory backends (the CPU) meet through shared memory
 * (shm_comm.c). */
#include <string.h>

#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "runtime/device_record.h"
#include "comm/shm_comm.h"
#include "runtime/dispatch.h"

#define ID_MAGIC "xdevcid1" /* 8 bytes, then the type, then the backend's id */
#define ID_HEADER 16

_Static_assert(ID_HEADER + XDEV_COMM_NATIVE_ID_BYTES <= XDEV_COMMUNICATOR_ID_BYTES, "id too small");

/* The backend of `type` with communicators across processes. */
static xdev_status_t procs_backend(xdev_device_type_t type, xdev_backend_t **out) {
    if ((unsigned)type >= XDEV_MAX_DEVICE_TYPES)
        return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE, "unknown device type %d", (int)type);
    xdev_status_t st = xdev_backend_acquire(type, out);
    if (st != XDEV_SUCCESS) return st;
    if ((*out)->flags & XDEV_BACKEND_HOST_MEMORY) return XDEV_SUCCESS; /* shm_comm.c */
    if (!XDEV_HAS(*out, comm, init_rank) || !XDEV_HAS(*out, comm, get_unique_id))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend has no communicators across processes", (*out)->name);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_communicator_unique_id(xdev_device_type_t type, xdev_communicator_id_t *id) {
    XDEV_REQUIRE_ARG(id);
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_backend_t *be;
    XDEV_CHECK(procs_backend(type, &be));
    memset(id, 0, sizeof *id);
    memcpy(id->bytes, ID_MAGIC, 8);
    uint32_t t = (uint32_t)type;
    memcpy(id->bytes + 8, &t, sizeof t);
    if (be->flags & XDEV_BACKEND_HOST_MEMORY)
        XDEV_CHECK(xdev_shm_unique_id(id->bytes + ID_HEADER, XDEV_COMM_NATIVE_ID_BYTES));
    else
        XDEV_CHECK(xdev_be_comm_get_unique_id(be, id->bytes + ID_HEADER));
    return XDEV_SUCCESS;
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
        xdev_shm_group_t *shm = NULL;
        XDEV_CHECK(
            xdev_shm_join(id->bytes + ID_HEADER, XDEV_COMM_NATIVE_ID_BYTES, nranks, rank, &shm));
        xdev_status_t st = xdev_communicator_adopt(NULL, rec, nranks, rank, NULL, shm, comm);
        if (st != XDEV_SUCCESS) xdev_shm_leave(shm);
        XDEV_CHECK(st);
        return XDEV_SUCCESS;
    }
    void *native = NULL;
    XDEV_CHECK(xdev_be_comm_init_rank(rec, nranks, id->bytes + ID_HEADER, rank, &native));
    xdev_status_t st = xdev_communicator_adopt(be, rec, nranks, rank, native, NULL, comm);
    if (st != XDEV_SUCCESS) (void)xdev_be_comm_destroy(be, native);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}
