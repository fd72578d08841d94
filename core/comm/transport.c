/* SPDX-License-Identifier: Apache-2.0 */
/* transport.c - which transport carries the ranks of a host-memory backend
 * (the CPU) in several processes, and loading it (xdev/transport.h).
 *
 * XDEV_HOST_COMM names it: "shm" (built in, one host), "mpi" or any other
 * <name> (the module libxdevcomm-<name>.so, found where backend plugins
 * are), or "auto" (the default): shm, unless the launcher says the job's
 * ranks are not all on this host (a local size below the world size,
 * Slurm's node count above 1), then mpi (refused for torchrun's ranks,
 * which no MPI launcher started). The choice is made once per
 * group, by whoever makes its id, and travels in the id, so every rank of
 * a group uses the same transport whatever its own setting.
 *
 * A module is loaded on first use and kept (its MPI, say, must outlive
 * every group); one that cannot be loaded is tried again at the next use,
 * so the error names its cause each time. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "comm/comm_internal.h"
#include "comm/shm_comm.h"

#define MAX_MODULES 8

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static const xdev_transport_t *g_loaded[MAX_MODULES];
static int g_nloaded;

/* A usable name: 1..15 of [a-z0-9_]. */
static bool name_ok(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n >= XDEV_TRANSPORT_NAME_BYTES) return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

/* Open libxdevcomm-<name>.so and check its table (g_lock held). */
static xdev_status_t load(const char *name, const xdev_transport_t **out) {
    char file[64], path[PATH_MAX + 64], tried[1024];
    snprintf(file, sizeof file, "libxdevcomm-%s.so", name);
    if (!xdev_plugin_find(file, path, sizeof path, tried, sizeof tried))
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "the %s transport (%s) is not installed; tried: %s%s", name, file, tried,
                         strcmp(name, "mpi") == 0
                             ? " (xdev builds it where CMake finds MPI: install Open MPI's "
                               "development files, libopenmpi-dev on Debian, and rebuild)"
                             : "");
    /* RTLD_GLOBAL: MPI libraries dlopen components of their own that look
     * for the library's symbols in the global scope. */
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE, "the %s transport %s cannot be loaded: %s",
                         name, path, e ? e : "unknown error");
    }
    xdev_transport_entry_fn entry;
    *(void **)(&entry) = dlsym(h, XDEV_TRANSPORT_ENTRY_SYMBOL);
    const xdev_transport_t *t = entry != NULL ? entry() : NULL;
    const char *why = entry == NULL                  ? "exports no " XDEV_TRANSPORT_ENTRY_SYMBOL
                      : t == NULL                    ? "returned no table"
                      : t->abi != XDEV_TRANSPORT_ABI ? "speaks another transport ABI"
                      : t->size < sizeof(xdev_transport_t)            ? "has a table too short"
                      : t->name == NULL || strcmp(t->name, name) != 0 ? "names another transport"
                      : !t->unique_id || !t->join || !t->run || !t->abort || !t->leave
                          ? "lacks a slot"
                          : NULL;
    if (why != NULL) {
        dlclose(h);
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "the %s transport %s %s (this libxdev speaks transport ABI %u)", name,
                         path, why, XDEV_TRANSPORT_ABI);
    }
    *out = t; /* the handle stays open for the process's life */
    return XDEV_SUCCESS;
}

xdev_status_t xdev_transport_named(const char *name, const xdev_transport_t **out) {
    if (strcmp(name, "shm") == 0) {
        *out = &xdev_shm_transport;
        return XDEV_SUCCESS;
    }
    if (!name_ok(name))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "'%s' is not a transport's name (1..%d of a-z, 0-9, _)", name,
                         XDEV_TRANSPORT_NAME_BYTES - 1);
    pthread_mutex_lock(&g_lock);
    xdev_status_t st = XDEV_SUCCESS;
    const xdev_transport_t *t = NULL;
    for (int i = 0; i < g_nloaded && t == NULL; i++)
        if (strcmp(g_loaded[i]->name, name) == 0) t = g_loaded[i];
    if (t == NULL && g_nloaded == MAX_MODULES)
        st = XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED, "%d transports are loaded already: no room for %s",
                       MAX_MODULES, name);
    else if (t == NULL && (st = load(name, &t)) == XDEV_SUCCESS)
        g_loaded[g_nloaded++] = t;
    pthread_mutex_unlock(&g_lock);
    if (st == XDEV_SUCCESS) *out = t;
    return st;
}

xdev_status_t xdev_transport_pick(const xdev_transport_t **out) {
    const char *v = xdev_env_get("XDEV_HOST_COMM");
    if (v != NULL && v[0] != '\0' && strcmp(v, "auto") != 0) {
        xdev_status_t st = xdev_transport_named(v, out);
        if (st == XDEV_ERROR_INVALID_VALUE)
            return XDEV_FAIL(XDEV_ERROR_ENV,
                             "XDEV_HOST_COMM='%s' is not auto, shm, mpi or a transport's name", v);
        return st;
    }
    xdev_launch_info_t li;
    bool found = false;
    XDEV_CHECK(xdev_launch_read(&li, &found));
    int nodes = -1; /* Slurm gives no local size: its node count says */
    if (found && strcmp(li.launcher, "slurm") == 0) {
        XDEV_CHECK(xdev_env_int("SLURM_STEP_NUM_NODES", -1, 1, 1 << 24, &nodes));
        if (nodes < 0) XDEV_CHECK(xdev_env_int("SLURM_NNODES", -1, 1, 1 << 24, &nodes));
    }
    bool spread = found && li.world_size > 1 &&
                  ((li.local_world_size > 0 && li.local_world_size < li.world_size) || nodes > 1);
    /* MPI's world is there only for ranks an MPI launcher started. */
    if (spread && strcmp(li.launcher, "torchrun") == 0)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "torchrun started %d CPU ranks on several hosts (%d here): CPU ranks "
                         "across hosts run over MPI, which needs its own launcher (mpirun or "
                         "srun); on one host they meet in shared memory",
                         li.world_size, li.local_world_size);
    return xdev_transport_named(spread ? "mpi" : "shm", out);
}
