/* SPDX-License-Identifier: Apache-2.0 */
/* tests/common/xt_plugin.h - a symbol of the fake cuda plugin xdev has
 * loaded from XDEV_PLUGIN_PATH (tests/plugins/fake_cuda.c exports counters
 * its tests read), for test programs with xt_die.h's CHECK: a plugin that is
 * not loaded, or lacks the symbol, fails naming why (`hint`). Needs
 * _GNU_SOURCE for RTLD_NOLOAD and linking with dl. */
#ifndef XT_PLUGIN_H
#define XT_PLUGIN_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "xt_die.h"

static inline void *xt_plugin_symbol(const char *name, const char *hint) {
    const char *dir = getenv("XDEV_PLUGIN_PATH");
    CHECK(dir != NULL, "XDEV_PLUGIN_PATH is not set");
    char path[4096];
    snprintf(path, sizeof path, "%s/libxdev-cuda.so", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    CHECK(h != NULL, "the plugin %s is not loaded: %s", path, dlerror());
    void *sym = dlsym(h, name);
    CHECK(sym != NULL, "the plugin has no %s (%s)", name, hint);
    return sym;
}

#endif
