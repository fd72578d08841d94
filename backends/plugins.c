/* SPDX-License-Identifier: Apache-2.0 */
/* backends/plugins.c - the plugin backends xdev ships (cuda, hip), registered
 * by name when libxdev loads (core/wiring.c, the list of what libxdev starts,
 * calls xdev_shipped_plugins_wire; the built-in CPU backend registers itself
 * in backends/cpu/). A factory without an entry point is a plugin: the core
 * loads libxdev-<name>.so on the backend's first use. Any other backend needs
 * no edit here or in the core: it is found by name, as libxdev-<name>.so on
 * XDEV_PLUGIN_PATH, beside libxdev or in the install libdir, or the
 * application registers it with xdev_backend_register.
 * XDEV_BACKEND=auto tries accelerators by auto_order, then the CPU. */
#include "xdev/backend.h"

void xdev_shipped_plugins_wire(void); /* also declared in core/wiring.c */
void xdev_shipped_plugins_wire(void) {
    static const xdev_backend_factory_t plugins[] = {
        {.size = sizeof(xdev_backend_factory_t),
         .name = "cuda",
         .type = XDEV_DEVICE_CUDA,
         .flags = XDEV_BACKEND_ACCELERATOR | XDEV_BACKEND_DEFAULT,
         .auto_order = 10},
        {.size = sizeof(xdev_backend_factory_t),
         .name = "hip",
         .type = XDEV_DEVICE_HIP,
         .flags = XDEV_BACKEND_ACCELERATOR | XDEV_BACKEND_DEFAULT,
         .auto_order = 20},
    };
    /* Nothing can fail at load time but a duplicate, and nobody could be
     * told: a missing backend shows as "no backend is registered". */
    for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++)
        (void)xdev_backend_register(&plugins[i]);
}
