/* SPDX-License-Identifier: Apache-2.0 */
/* launcher.c - what the launcher that started this process says about it
 * (xdev_launch_info): rank, world size, local rank and size from torchrun's,
 * Open MPI's, MPICH's or Slurm's variables, MASTER_ADDR and MASTER_PORT,
 * and the job's id. Read by the rendezvous (rendezvous.c) and by the choice
 * of a transport (transport.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "comm/comm_internal.h"

/* XDEV_CHECK without naming this file's function: the public caller is
 * blamed (xdev_launch_info, xdev_communicator_init_env). */
#define TRY(call)                                                                                  \
    do {                                                                                           \
        xdev_status_t try_st_ = (call);                                                            \
        if (try_st_ != XDEV_SUCCESS) return try_st_;                                               \
    } while (0)

/* One launcher's names for rank, size, local rank and local size. */
typedef struct launcher {
    const char *name, *rank, *size, *local_rank, *local_size;
} launcher_t;

static const launcher_t k_launchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL},
};

xdev_status_t xdev_launch_read(xdev_launch_info_t *out, bool *found) {
    memset(out, 0, sizeof *out);
    *found = false;
    for (size_t i = 0; i < sizeof k_launchers / sizeof k_launchers[0]; i++) {
        const launcher_t *l = &k_launchers[i];
        if (getenv(l->rank) == NULL) continue;
        int rank, size, lr = -1, ls = -1;
        TRY(xdev_env_int(l->rank, -1, 0, 1 << 24, &rank));
        TRY(xdev_env_int(l->size, -1, 1, 1 << 24, &size));
        if (rank < 0)
            return XDEV_FAIL(XDEV_ERROR_ENV,
                             "%s is set but empty (%s sets it to this "
                             "process's rank)",
                             l->rank, l->name);
        if (size < 0)
            return XDEV_FAIL(XDEV_ERROR_ENV, "%s is set but %s is not (%s sets both)", l->rank,
                             l->size, l->name);
        if (rank >= size)
            return XDEV_FAIL(XDEV_ERROR_ENV, "%s=%d is not below %s=%d", l->rank, rank, l->size,
                             size);
        TRY(xdev_env_int(l->local_rank, -1, 0, 1 << 24, &lr));
        if (l->local_size != NULL) TRY(xdev_env_int(l->local_size, -1, 1, 1 << 24, &ls));
        if (l->local_size == NULL) { /* Slurm: every task on one node? */
            int nodes;
            TRY(xdev_env_int("SLURM_STEP_NUM_NODES", -1, 1, 1 << 24, &nodes));
            if (nodes < 0) TRY(xdev_env_int("SLURM_NNODES", -1, 1, 1 << 24, &nodes));
            if (nodes == 1) ls = size;
        }
        out->launcher = l->name;
        out->rank = rank;
        out->world_size = size;
        out->local_rank = lr;
        out->local_world_size = ls;
        const char *addr = getenv("MASTER_ADDR");
        if (addr != NULL && strlen(addr) >= sizeof out->master_addr)
            return XDEV_FAIL(XDEV_ERROR_ENV, "MASTER_ADDR is longer than %zu bytes",
                             sizeof out->master_addr - 1);
        snprintf(out->master_addr, sizeof out->master_addr, "%s", addr ? addr : "");
        int port;
        TRY(xdev_env_int("MASTER_PORT", -1, 1, 65535, &port));
        out->master_port = port < 0 ? 0 : port;
        *found = true;
        return XDEV_SUCCESS;
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_launch_info(xdev_launch_info_t *out) {
    XDEV_REQUIRE_ARG(out);
    bool found;
    XDEV_CHECK(xdev_launch_read(out, &found));
    if (found) return XDEV_SUCCESS;
    return XDEV_API_FAIL(XDEV_ERROR_NOT_FOUND,
                         "no launcher's variables are set (RANK and WORLD_SIZE from torchrun, "
                         "OMPI_COMM_WORLD_RANK from mpirun, PMI_RANK, SLURM_PROCID from srun)");
}

/* The job's id as the launcher gives it ("" when it gives none): every rank
 * of a job derives the same, two jobs on one host different ones (Slurm's
 * step id alone is 0 in every job: its job id goes first). */
void xdev_launch_job_id(char *buf, size_t len) {
    static const char *const names[] = {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid",
                                        "PMIX_NAMESPACE", "PMI_JOBID", "SLURM_JOB_ID"};
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v == NULL || v[0] == '\0') continue;
        const char *step = i == 4 ? getenv("SLURM_STEP_ID") : NULL;
        snprintf(buf, len, "%s.%s", v, step ? step : "");
        return;
    }
}
