/* SPDX-License-Identifier: Apache-2.0 */
/* backend_table.c - the registered backend factories (xdev_backend_register).
 *
 * The core knows no backend by itself: each registers a named factory here
 * (the shipped ones from constructors when libxdev loads, an application's
 * before its first xdev call). The table is indexed by device type; names
 * and types are unique: cpu, cuda and hip keep their stable types, any other
 * name is given the next free one. Plugins named in XDEV_BACKEND or found on
 * the plugin path are registered here by name as initialisation starts.
 * The table is sealed when initialisation starts, so every
 * later reader sees a fixed table; the lock covers the registration window
 * and the name queries that may run beside it (xdev_device_parse). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/error_internal.h"
#include "runtime/registry.h"

typedef struct entry {
    bool used;
    xdev_backend_factory_t f;
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t g_table[XDEV_MAX_DEVICE_TYPES];
static _Atomic bool g_sealed; /* once set, the table never changes: readers need no lock */
static char g_found_names[XDEV_MAX_DEVICE_TYPES][16]; /* plugins registered by name */

/* Readers lock only while registration is open: once sealed the table is
 * fixed, and a lock a thread held at fork() must never block the child. */
static bool read_lock(void) {
    if (atomic_load_explicit(&g_sealed, memory_order_acquire)) return false;
    pthread_mutex_lock(&g_lock);
    return true;
}

static void read_unlock(bool locked) {
    if (locked) pthread_mutex_unlock(&g_lock);
}

/* The type registered under name[0..len), or -1; the caller holds g_lock
 * or the table is sealed. */
static int find_locked(const char *name, size_t len) {
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; t++)
        if (g_table[t].used && strlen(g_table[t].f.name) == len &&
            strncmp(g_table[t].f.name, name, len) == 0)
            return t;
    return -1;
}

/* [a-z0-9_]{1,15}: usable in XDEV_BACKEND lists, device names, file names. */
static bool good_name(const char *s) {
    size_t n = 0;
    for (; s[n] != '\0'; n++)
        if (n >= 15 ||
            !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
            return false;
    return n > 0 && strcmp(s, "auto") != 0;
}

/* The type a factory gets: a shipped name keeps its stable number; any other
 * name the first free one from XDEV_DEVICE_HIP + 1. -1 with *why set when
 * the factory cannot have one. Called with g_lock held. */
static int assign_type(const xdev_backend_factory_t *f, const char **why) {
    static const char *const shipped[] = {"cpu", "cuda", "hip"};
    for (int t = 0; t <= XDEV_DEVICE_HIP; t++)
        if (strcmp(f->name, shipped[t]) == 0) {
            if (f->type != XDEV_DEVICE_TYPE_ANY && f->type != (xdev_device_type_t)t) {
                *why = "a shipped name keeps its own device type (or give XDEV_DEVICE_TYPE_ANY)";
                return -1;
            }
            return t;
        }
    if (f->type != XDEV_DEVICE_TYPE_ANY) {
        *why = "types 0..2 belong to cpu, cuda and hip: a new backend registers with "
               "XDEV_DEVICE_TYPE_ANY and is given a type";
        return -1;
    }
    for (int t = XDEV_DEVICE_HIP + 1; t < XDEV_MAX_DEVICE_TYPES; t++)
        if (!g_table[t].used) return t;
    *why = "every one of the XDEV_MAX_DEVICE_TYPES types is taken";
    return -1;
}

/* Register (under g_lock): the checks of xdev_backend_register but the seal. */
static xdev_status_t add_locked(const xdev_backend_factory_t *factory) {
    int same_name = find_locked(factory->name, strlen(factory->name));
    const char *why = NULL;
    int type = same_name;
    if (same_name >= 0) {
        const xdev_backend_factory_t *old = &g_table[same_name].f;
        if (!(old->flags & XDEV_BACKEND_DEFAULT))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "backend name '%s' is already registered (device type %d, %s): two "
                             "backends cannot share a name",
                             factory->name, same_name, old->entry ? "built in" : "a plugin");
        if (!(factory->flags & XDEV_BACKEND_REPLACE))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "backend name '%s' is the one xdev ships (device type %d): to replace "
                             "it, register with the same name and the flag XDEV_BACKEND_REPLACE",
                             factory->name, same_name);
        if (factory->type != XDEV_DEVICE_TYPE_ANY && (int)factory->type != same_name)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "backend '%s' replaces the shipped one of device type %d, not %d",
                             factory->name, same_name, (int)factory->type);
    } else {
        type = assign_type(factory, &why);
        if (type < 0)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "backend '%s' (device type %d): %s",
                             factory->name, (int)factory->type, why);
    }
    entry_t *e = &g_table[type];
    memset(&e->f, 0, sizeof e->f);
    memcpy(&e->f, factory,
           factory->size < sizeof e->f ? factory->size : sizeof e->f); /* older, shorter */
    e->f.size = sizeof e->f;
    e->f.type = (xdev_device_type_t)type;
    e->used = true;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_backend_register(const xdev_backend_factory_t *factory) {
    XDEV_REQUIRE_ARG(factory);
    if (factory->size < offsetof(xdev_backend_factory_t, auto_order) + sizeof(int))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "factory size %zu is too small (expected %zu)", factory->size,
                             sizeof(xdev_backend_factory_t));
    if (factory->name == NULL || !good_name(factory->name))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "backend name '%s' is not 1 to 15 of [a-z0-9_] (and not 'auto')",
                             factory->name ? factory->name : "(null)");
    xdev_status_t st;
    pthread_mutex_lock(&g_lock);
    if (g_sealed)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "backend '%s': xdev is already initialised; register backends before the "
                       "first other xdev call",
                       factory->name);
    else
        st = add_locked(factory);
    pthread_mutex_unlock(&g_lock);
    return st == XDEV_SUCCESS ? st : xdev_core_blame(st, __func__);
}

bool xdev_backend_table_add_plugin(const char *name, size_t len) {
    char copy[16];
    if (len == 0 || len >= sizeof copy) return false;
    memcpy(copy, name, len);
    copy[len] = '\0';
    if (!good_name(copy)) return false;
    pthread_mutex_lock(&g_lock);
    bool added = false;
    if (!g_sealed && find_locked(copy, len) < 0) {
        int slot = -1; /* the factory keeps its name: a copy that lives as long as the table */
        for (int i = 0; i < XDEV_MAX_DEVICE_TYPES && slot < 0; i++)
            if (g_found_names[i][0] == '\0') slot = i;
        if (slot >= 0) {
            memcpy(g_found_names[slot], copy, len + 1);
            xdev_backend_factory_t f = {
                .size = sizeof f, .name = g_found_names[slot], .type = XDEV_DEVICE_TYPE_ANY};
            xdev_error_state_t saved; /* a full table is simply not registered */
            xdev_core_error_save(&saved);
            added = add_locked(&f) == XDEV_SUCCESS;
            xdev_core_error_restore(&saved);
            if (!added) g_found_names[slot][0] = '\0';
        }
    }
    pthread_mutex_unlock(&g_lock);
    return added;
}

void xdev_backend_table_seal(void) {
    pthread_mutex_lock(&g_lock);
    atomic_store_explicit(&g_sealed, true, memory_order_release);
    pthread_mutex_unlock(&g_lock);
}

bool xdev_backend_table_get(xdev_device_type_t type, xdev_backend_factory_t *out) {
    if ((unsigned)type >= XDEV_MAX_DEVICE_TYPES) return false;
    bool locked = read_lock();
    bool used = g_table[type].used;
    if (used) *out = g_table[type].f;
    read_unlock(locked);
    return used;
}

int xdev_backend_table_find_nocase(const char *name, size_t len) {
    bool locked = read_lock();
    int found = -1;
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES && found < 0; t++)
        if (g_table[t].used && strlen(g_table[t].f.name) == len &&
            strncasecmp(g_table[t].f.name, name, len) == 0)
            found = t;
    read_unlock(locked);
    return found;
}

int xdev_backend_table_find(const char *name, size_t len) {
    bool locked = read_lock();
    int found = find_locked(name, len);
    read_unlock(locked);
    return found;
}

const char *xdev_device_type_name(xdev_device_type_t type) {
    if ((unsigned)type >= XDEV_MAX_DEVICE_TYPES) return NULL;
    bool locked = read_lock();
    const char *name = g_table[type].used ? g_table[type].f.name : NULL;
    read_unlock(locked);
    return name;
}

/* Accelerators by auto_order (then type), then the others by type. */
int xdev_backend_table_order(xdev_device_type_t *types, int cap) {
    int n = 0;
    bool locked = read_lock();
    for (int pass = 0; pass < 2; pass++) {
        bool want_accel = pass == 0;
        int start = n;
        for (int t = 0; t < XDEV_MAX_DEVICE_TYPES && n < cap; t++) {
            const entry_t *e = &g_table[t];
            if (!e->used || ((e->f.flags & XDEV_BACKEND_ACCELERATOR) != 0) != want_accel) continue;
            int i = n++; /* insertion sort by auto_order within the pass */
            while (i > start && want_accel &&
                   g_table[types[i - 1]].f.auto_order > e->f.auto_order) {
                types[i] = types[i - 1];
                i--;
            }
            types[i] = (xdev_device_type_t)t;
        }
    }
    read_unlock(locked);
    return n;
}

void xdev_backend_table_names(char *buf, size_t len, const char *last) {
    xdev_device_type_t order[XDEV_MAX_DEVICE_TYPES];
    int n = xdev_backend_table_order(order, XDEV_MAX_DEVICE_TYPES);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? last : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, xdev_device_type_name(order[i]));
        if (w < 0) break;
        used += (size_t)w;
    }
}
