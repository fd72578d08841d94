/* SPDX-License-Identifier: Apache-2.0 */
/* backends/plugins.c - the plugin backends xdev ships (cuda, hip), registered
 * by name when libxdev loads (core/wiring.c, the list of what libxdev starts,
 * calls xdev_shipped_plugins_wire; the built-in CPU backend registers itself
 * in backends/cpu/). A factory without an entry point is a plugin: the core
 * loads libxdev-<name>.so on the backend's first use. Any other backend needs
 * no edit here or in the core: it is found by name, as libxdev-<name>.so on
 * XDEV_PLUGIN_PATH, beside libxdev or in the install libdir, or the
 * application registers it with xdev_backend_register.
 * XDEV_BACKEND=auto tries accelerators by auto_order, then the CPU.
 *
 * Each shipped plugin also has a presence probe (xdev_shipped_plugin_present):
 * a few stat calls that tell, before any dlopen, that its driver is plainly
 * not installed. Loading libxdev-cuda.so pulls in cuBLAS and cuFFT and the
 * HIP plugin the HIP runtime (~80 ms together), only to find no device; auto
 * passes over a plugin so ruled out and XDEV_LOG says why. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* Whether any of `files` exists (a device node of the driver). */
static bool any_exists(const char *const *files, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (access(files[i], F_OK) == 0) return true;
    return false;
}

bool xdev_shipped_plugin_present(const char *name, char *why, size_t len); /* core/wiring.c */
bool xdev_shipped_plugin_present(const char *name, char *why, size_t len) {
    if (strcmp(name, "cuda") == 0) {
        /* the driver's nodes (/dev/dxg: WSL2), else its library: either one
         * and the plugin is loaded, to report what it finds */
        static const char *const nodes[] = {"/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg"};
        if (any_exists(nodes, sizeof nodes / sizeof nodes[0])) return true;
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (driver != NULL) {
            dlclose(driver);
            return true;
        }
        snprintf(why, len,
                 "no NVIDIA driver found (no /dev/nvidiactl, /dev/nvidia0 or /dev/dxg, and "
                 "libcuda.so.1 does not load): install the NVIDIA driver (nvidia-smi then shows "
                 "the GPU) to use CUDA");
        return false;
    }
    if (strcmp(name, "hip") == 0) {
        static const char *const nodes[] = {"/dev/kfd"};
        if (any_exists(nodes, 1)) return true;
        snprintf(why, len,
                 "no AMD GPU driver found (no /dev/kfd): install the amdgpu kernel driver and "
                 "ROCm (rocm-smi then shows the GPU) to use HIP");
        return false;
    }
    return true;
}
