/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_oom.c - the caching allocator's out-of-memory message, in torch's
 * words: what was asked, the device's capacity and free memory, what xdev
 * holds allocated and reserved, and a hint when fragmentation is likely. */
#include <stdio.h>

#include "alloc/alloc_internal.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"

static void format_bytes(char *buf, size_t len, size_t v) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024.0 && u < 4) {
        d /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%zu bytes", v);
    else
        snprintf(buf, len, "%.2f %s", d, units[u]);
}

/* The out-of-memory message, as informative as torch's. */
xdev_status_t xdev_caching_oom_error(xdev_device_allocator_t *da, size_t size,
                                     xdev_status_t backend_st, const char *backend_msg) {
    size_t free_b = 0, total_b = 0;
    if (XDEV_HAS(da->be, memory, mem_get_info))
        (void)xdev_be_memory_mem_get_info(da->rec, &free_b, &total_b);
    xdev_memory_stats_t s; /* the device's figures, all arenas (each lock in turn) */
    xdev_spin_unlock(&da->lock);
    xdev_alloc_stats_copy(da->primary, &s);
    xdev_spin_lock(&da->lock);
    size_t allocated = (size_t)s.allocated_bytes[XDEV_STAT_ALL].current;
    size_t reserved = (size_t)s.reserved_bytes[XDEV_STAT_ALL].current;
    char req[32], tot[32], fr[32], al[32], un[32], lim[128] = "";
    format_bytes(req, sizeof req, size);
    format_bytes(tot, sizeof tot, total_b);
    format_bytes(fr, sizeof fr, free_b);
    format_bytes(al, sizeof al, allocated);
    format_bytes(un, sizeof un, reserved - allocated);
    if (da->limit != SIZE_MAX) {
        char l[32];
        format_bytes(l, sizeof l, da->limit);
        snprintf(lim, sizeof lim, " xdev may reserve at most %s (memory fraction %.3g).", l,
                 da->fraction);
    }
    const char *hint = reserved - allocated > allocated / 4 && reserved > allocated
                           ? " If reserved but unallocated memory is large, try setting "
                             "max_split_size_mb in XDEV_ALLOC_CONF to avoid fragmentation."
                           : "";
    return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                     "%s:%d out of memory: tried to allocate %s. The device has a total capacity "
                     "of %s of which %s is free.%s Of the memory in use, %s is allocated by xdev "
                     "and %s is reserved by xdev but unallocated.%s%s%s",
                     da->be->name, da->index, req, tot, fr, lim, al, un, hint,
                     backend_st == XDEV_ERROR_OUT_OF_MEMORY && backend_msg[0] ? " Backend: " : "",
                     backend_st == XDEV_ERROR_OUT_OF_MEMORY ? backend_msg : "");
}

/* Release cached segments when reserved memory passes the GC threshold. */
