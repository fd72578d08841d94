/* SPDX-License-Identifier: Apache-2.0 */
/* dlpack_exports.h - xdev allocations held by DLPack exports
 * (dlpack_exports.c): a free of one while a consumer holds it is put off
 * until the last consumer's deleter. */
#ifndef XDEV_CORE_DLPACK_EXPORTS_H
#define XDEV_CORE_DLPACK_EXPORTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "xdev/memory.h"

/* Allocations held now (the free paths look only when this is nonzero). */
extern _Atomic long xdev_exports_live;

/* Hold the allocation starting at base (of kind). */
xdev_status_t xdev_exports_hold(uintptr_t base, xdev_memory_kind_t kind);
/* Drop a hold; the last one frees the allocation if a free was put off. */
void xdev_exports_release(uintptr_t base, xdev_memory_kind_t kind);
/* A free of ptr by the free function of `kind`: 0 not held (free it now),
 * 1 put off until the last deleter, -1 refused (freed twice while held, or
 * with the other kind's function; XDEV_FAIL set). */
int xdev_exports_defer_free(const void *ptr, xdev_memory_kind_t kind);

static inline int xdev_exports_check_free(const void *ptr, xdev_memory_kind_t kind) {
    return atomic_load_explicit(&xdev_exports_live, memory_order_acquire) > 0
               ? xdev_exports_defer_free(ptr, kind)
               : 0;
}

#endif
