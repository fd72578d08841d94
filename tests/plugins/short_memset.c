/* SPDX-License-Identifier: Apache-2.0 */
/* short_memset.c - the backend template (backends/null) with one injected
 * fault: its memset writes one byte too few. Built as the plugin
 * "shortmemset" for the shadow execution's tests (tests/test_shadow.c):
 * XDEV_BACKEND=shortmemset XDEV_SHADOW=cpu must name that memset, its call
 * site and its last byte. The template is included unchanged; its entry
 * point is renamed and this file's hands out a copy of its table whose
 * memset slot is the faulty one. */
#define xdev_backend_entry null_template_entry
#include "../../backends/null/null_backend.c"
#undef xdev_backend_entry

/* The template's memset, one byte short (a fault only a comparison sees). */
static xdev_status_t short_memset(xdev_backend_device_t *dev, void *dst, int value, size_t bytes,
                                  void *stream) {
    return null_memory_memset_async(dev, dst, value, bytes > 1 ? bytes - 1 : bytes, stream);
}

static xdev_memory_vtable_t g_short_memory;
static xdev_backend_api_t g_short_api;

XDEV_API const xdev_backend_api_t *xdev_backend_entry(void);
const xdev_backend_api_t *xdev_backend_entry(void) {
    g_short_memory = g_memory;
    g_short_memory.memset_async = short_memset;
    g_short_api = *null_template_entry();
    g_short_api.memory = &g_short_memory;
    return &g_short_api;
}
