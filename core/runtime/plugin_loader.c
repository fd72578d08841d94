/* SPDX-License-Identifier: Apache-2.0 */
/* plugin_loader.c - find, dlopen and check backend plugins.
 *
 * libxdev-<name>.so is looked for in each directory of XDEV_PLUGIN_PATH
 * (colon-separated), then in libxdev's folder's xdev/ (installed plugins)
 * and that folder itself (the build tree), then the same two under the
 * install libdir.
 * The first file that exists is the one used: if it fails to load, that
 * failure is the reason (a broken plugin is not silently skipped). When
 * xdev initialises, every libxdev-<name>.so in those directories whose name
 * is not registered yet is registered by name (xdev_plugin_discover): a
 * backend xdev has never heard of is used by naming it. */
#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/env.h"
#include "base/error_internal.h"
#include "runtime/registry.h"

#ifndef XDEV_INSTALL_LIBDIR
#define XDEV_INSTALL_LIBDIR "/usr/local/lib"
#endif

/* Append to the backend's reason string. */
static void reason_add(xdev_backend_t *be, const char *fmt, const char *a, const char *b) {
    size_t used = strlen(be->reason);
    if (used + 1 < sizeof be->reason)
        if (snprintf(be->reason + used, sizeof be->reason - used, fmt, a, b) < 0)
            be->reason[used] = '\0'; /* a reason that does not fit is cut, never overrun */
}

/* Directory holding libxdev itself, or "" if unknown. */
static void self_dir(char *buf, size_t len) {
    Dl_info info;
    buf[0] = '\0';
    if (dladdr((void *)xdev_core_ensure_init, &info) && info.dli_fname != NULL) {
        char tmp[PATH_MAX];
        /* a path that does not fit is not searched (buf stays empty) */
        if (snprintf(tmp, sizeof tmp, "%s", info.dli_fname) >= (int)sizeof tmp) return;
        if (snprintf(buf, len, "%s", dirname(tmp)) >= (int)len) buf[0] = '\0';
    }
}

/* Try one candidate file. Returns 1 loaded, 0 not present, -1 present but broken. */
static int try_candidate(xdev_backend_t *be, const char *path, const xdev_backend_api_t **api) {
    if (access(path, F_OK) != 0) {
        bool first = be->reason[strlen(be->reason) - 2] == ':';
        reason_add(be, "%s%s (not found)", first ? "" : ", ", path);
        return 0;
    }
    be->reason[0] = '\0'; /* this file is the one: its failure is the reason */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *err = dlerror();
        reason_add(be, "dlopen failed: %s%s", err ? err : "unknown error", "");
        return -1;
    }
    xdev_backend_entry_fn entry;
    *(void **)(&entry) = dlsym(h, XDEV_BACKEND_ENTRY_SYMBOL);
    if (entry == NULL) {
        reason_add(be, "plugin %s does not export the entry point %s()", path,
                   XDEV_BACKEND_ENTRY_SYMBOL);
        dlclose(h);
        return -1;
    }
    const xdev_backend_api_t *a = entry();
    char origin[PATH_MAX + 16];
    if (snprintf(origin, sizeof origin, "plugin %s", path) >= (int)sizeof origin)
        origin[sizeof origin - 1] = '\0'; /* a long path is only cut in the message */
    if (xdev_backend_api_validate(a, origin, be->name, be->type) != XDEV_SUCCESS) {
        reason_add(be, "%s%s", xdev_last_error(), "");
        dlclose(h);
        return -1;
    }
    if (snprintf(be->path, sizeof be->path, "%s", path) >= (int)sizeof be->path)
        be->path[sizeof be->path - 1] = '\0';
    be->dl_handle = h;
    *api = a;
    return 1;
}

/* Call fn(dir, arg) for each directory searched for plugins, in order:
 * XDEV_PLUGIN_PATH's; beside libxdev, its xdev/ folder (where `cmake
 * --install` puts the shipped plugins) then its own folder (the build
 * tree, and installs that put plugins beside the library); then the same
 * two under the install libdir, unless that is libxdev's. Stops at fn's
 * first nonzero return and returns it. One path buffer at a time: loading
 * may run on a thread with a small stack. */
/* fn on dir/xdev, then on dir itself, in dir's own buffer (len bytes):
 * "/xdev" is appended and taken off again. */
static int sub_then_dir(char *dir, size_t len, int (*fn)(const char *dir, void *arg), void *arg) {
    size_t n = strlen(dir);
    if (n + sizeof "/xdev" <= len) {
        memcpy(dir + n, "/xdev", sizeof "/xdev");
        int r = fn(dir, arg);
        dir[n] = '\0';
        if (r != 0) return r;
    }
    return fn(dir, arg);
}

/* fn on each directory of XDEV_PLUGIN_PATH, in order (each_plugin_dir). */
static int each_user_dir(int (*fn)(const char *dir, void *arg), void *arg) {
    char dir[PATH_MAX];
    int r = 0;
    const char *env = xdev_env_get("XDEV_PLUGIN_PATH");
    for (const char *p = env; p != NULL && *p && r == 0;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0 && len < PATH_MAX - 80) {
            snprintf(dir, sizeof dir, "%.*s", (int)len, p);
            r = fn(dir, arg);
        }
        if (colon == NULL) break;
        p = colon + 1;
    }
    return r;
}

static int each_plugin_dir(int (*fn)(const char *dir, void *arg), void *arg) {
    char dir[PATH_MAX];
    int r = each_user_dir(fn, arg);
    if (r != 0) return r;
    self_dir(dir, sizeof dir);
    bool self_is_install = strcmp(dir, XDEV_INSTALL_LIBDIR) == 0;
    if (dir[0] != '\0' && (r = sub_then_dir(dir, sizeof dir, fn, arg)) != 0) return r;
    if (self_is_install) return 0;
    snprintf(dir, sizeof dir, "%s", XDEV_INSTALL_LIBDIR);
    return sub_then_dir(dir, sizeof dir, fn, arg);
}

/* Register by name each libxdev-<name>.so in dir (each_plugin_dir). */
static int discover_in(const char *dir, void *arg) {
    (void)arg;
    DIR *d = opendir(dir);
    if (d == NULL) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len > 12 && strncmp(e->d_name, "libxdev-", 8) == 0 &&
            strcmp(e->d_name + len - 3, ".so") == 0)
            (void)xdev_backend_table_add_plugin(e->d_name + 8, len - 11);
    }
    closedir(d);
    return 0;
}

void xdev_plugin_discover(void) {
    (void)each_plugin_dir(discover_in, NULL);
}

static int print_dir(const char *dir, void *arg) {
    fprintf((FILE *)arg, "xdev: plugins are looked for in %s\n", dir);
    return 0;
}

void xdev_plugin_dirs_print(FILE *f) {
    (void)each_plugin_dir(print_dir, f);
}

typedef struct load_try {
    xdev_backend_t *be;
    const char *file;
    const xdev_backend_api_t **api;
} load_try_t;

/* try_candidate on dir/<file>: nonzero (found) stops the search. */
static int load_from(const char *dir, void *arg) {
    load_try_t *t = arg;
    char path[PATH_MAX + 64];
    if (snprintf(path, sizeof path, "%s/%s", dir, t->file) >= (int)sizeof path) return 0;
    return try_candidate(t->be, path, t->api);
}

xdev_status_t xdev_plugin_load(xdev_backend_t *be, const xdev_backend_api_t **api) {
    char file[64];
    snprintf(file, sizeof file, "libxdev-%s.so", be->name);
    be->reason[0] = '\0';
    reason_add(be, "plugin %s%s not found; tried: ", file, "");
    load_try_t t = {be, file, api};
    return each_plugin_dir(load_from, &t) > 0 ? XDEV_SUCCESS : XDEV_ERROR_BACKEND_UNAVAILABLE;
}

/* dir/<file> when it exists (each_plugin_dir); else its path joins the
 * list of places tried. */
typedef struct find_try {
    const char *file;
    char *path, *tried;
    size_t plen, tlen;
} find_try_t;

static int find_in(const char *dir, void *arg) {
    find_try_t *t = arg;
    if (snprintf(t->path, t->plen, "%s/%s", dir, t->file) >= (int)t->plen) return 0;
    if (access(t->path, F_OK) == 0) return 1;
    size_t used = strlen(t->tried);
    if (used + 1 < t->tlen)
        snprintf(t->tried + used, t->tlen - used, "%s%s", used ? ", " : "", t->path);
    return 0;
}

bool xdev_plugin_find(const char *file, char *path, size_t plen, char *tried, size_t tlen) {
    tried[0] = '\0';
    find_try_t t = {file, path, tried, plen, tlen};
    return each_plugin_dir(find_in, &t) > 0;
}

bool xdev_plugin_on_user_path(const char *file) {
    char path[PATH_MAX], tried[8];
    tried[0] = '\0';
    find_try_t t = {file, path, tried, sizeof path, sizeof tried};
    return each_user_dir(find_in, &t) > 0;
}

/* Does the table say it is the backend it was loaded as? A plugin is found
 * by its file's name, so a table naming another backend is a misnamed (or
 * misbuilt) file: say which name each gives and how to make them agree. */
static xdev_status_t check_identity(const xdev_backend_api_t *api, const char *origin,
                                    const char *expected_name, xdev_device_type_t expected) {
    const char *ours = expected_name != NULL && expected_name[0] ? expected_name : "?";
    if (api->name == NULL || api->name[0] == '\0')
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "%s gives no backend name in its table (xdev_backend_api_t.name is %s): "
                         "it must be '%s', the name it was loaded as",
                         origin, api->name == NULL ? "NULL" : "empty", ours);
    if (expected_name == NULL || strcmp(api->name, expected_name) != 0)
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "%s is the '%s' backend (the name its table gives), not '%s' as it was "
                         "loaded: a plugin is found by name, so the file must be libxdev-%s.so "
                         "(rename it), or the plugin rebuilt with the name '%s'",
                         origin, api->name, ours, api->name, ours);
    if (api->type != expected && api->type != XDEV_DEVICE_TYPE_ANY)
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "%s, the '%s' backend, gives device type %d in its table, but '%s' is "
                         "device type %d in this libxdev: give XDEV_DEVICE_TYPE_ANY (the type is "
                         "then assigned by name) or %d",
                         origin, api->name, (int)api->type, ours, (int)expected, (int)expected);
    return XDEV_SUCCESS;
}

/* One slot of a group, as a table sets it or not. */
typedef struct group_slot {
    const char *name; /* "table.slot" */
    bool set;
} group_slot_t;

/* A group is all set or all NULL (xdev/backend_slots.h, XDEV_SLOT_GROUPS):
 * otherwise the backend is refused here, once, naming the group and each
 * slot it lacks, rather than half-working at every call site. */
static xdev_status_t check_group(const char *origin, const char *group, const group_slot_t *slots,
                                 size_t n) {
    size_t set = 0;
    for (size_t i = 0; i < n; i++)
        set += slots[i].set;
    if (set == 0 || set == n) return XDEV_SUCCESS;
    char missing[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof missing; i++) {
        if (slots[i].set) continue;
        int w = snprintf(missing + used, sizeof missing - used, "%s%s", used ? ", " : "",
                         slots[i].name);
        if (w < 0) break;
        used += (size_t)w;
    }
    return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                     "%s sets %zu of the %zu slots of the group %s: it lacks %s (a backend sets "
                     "all of a group's slots or none)",
                     origin, set, n, group, missing);
}

xdev_status_t xdev_backend_api_validate(const xdev_backend_api_t *api, const char *origin,
                                        const char *expected_name, xdev_device_type_t expected) {
    if (api == NULL) return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE, "%s returned no API", origin);
    if (api->abi_major != XDEV_BACKEND_ABI_MAJOR)
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "%s speaks backend ABI %u.%u but this libxdev speaks %u.%u: the major "
                         "versions must match",
                         origin, api->abi_major, api->abi_minor, XDEV_BACKEND_ABI_MAJOR,
                         XDEV_BACKEND_ABI_MINOR);
    if (api->size < offsetof(xdev_backend_api_t, memory) + sizeof api->memory)
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE,
                         "%s: its API struct is %zu bytes, too short for ABI %u", origin, api->size,
                         XDEV_BACKEND_ABI_MAJOR);
    xdev_status_t st = check_identity(api, origin, expected_name, expected);
    if (st != XDEV_SUCCESS) return st;
    /* Every slot the list marks REQUIRED (xdev/backend_slots.h); any other
     * may be NULL, and the core then falls back or reports NOT_SUPPORTED. */
    const char *missing = api->init == NULL ? "init" : NULL;
#define XDEV_REQUIRE_SLOT(t, s, need, kind, since, p, a) XDEV_REQUIRE_SLOT_##need(t, s)
#define XDEV_REQUIRE_SLOT_REQUIRED(t, s)                                                           \
    if (missing == NULL && XDEV_BACKEND_SLOT(api->t, s) == NULL) missing = #t "." #s;
#define XDEV_REQUIRE_SLOT_OPTIONAL(t, s)
#define XDEV_REQUIRE_TABLE(table, list) list(XDEV_REQUIRE_SLOT)
    XDEV_BACKEND_TABLES(XDEV_REQUIRE_TABLE)
    if (missing != NULL)
        return XDEV_FAIL(XDEV_ERROR_BACKEND_UNAVAILABLE, "%s lacks the required slot %s", origin,
                         missing);
        /* Every group whole or absent; a table the API struct (an older minor)
         * ends before has none of its slots. */
#define XDEV_GROUP_SLOT(t, s) {#t "." #s, XDEV_BACKEND_SLOT(XDEV_BACKEND_SLOT(api, t), s) != NULL},
#define XDEV_CHECK_GROUP(t, g, ...)                                                                \
    if (st == XDEV_SUCCESS) {                                                                      \
        const group_slot_t slots[] = {XDEV_SLOT_EACH(XDEV_GROUP_SLOT, t, __VA_ARGS__)};            \
        st = check_group(origin, #t "." #g, slots, sizeof slots / sizeof slots[0]);                \
    }
    XDEV_SLOT_GROUPS(XDEV_CHECK_GROUP)
    return st;
}
