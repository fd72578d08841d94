/* backend_table.c - the registered backend factories (xdev_backend_register).
 *
 * The core knows no backend by itself: each registers a named factory here
 * (the shipped ones from constructors when libxdev loads, an application's
 * before its first xdev call). The table is indexed by device type; names
 * and types are unique. It is sealed when initialisation starts, so every
 * later reader sees a fixed table; the lock covers the registration window
 * and the name queries that may run beside it (xdev_device_parse). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"
#include "runtime/registry.h"

typedef struct entry {
    bool used;
    xdev_backend_factory_t f;
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t g_table[XDEV_DEVICE_TYPE_COUNT];
static bool g_sealed;

/* [a-z0-9_]{1,15}: usable in XDEV_BACKEND lists, device names, file names. */
static bool good_name(const char *s) {
    size_t n = 0;
    for (; s[n] != '\0'; n++)
        if (n >= 15 ||
            !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
            return false;
    return n > 0 && strcmp(s, "auto") != 0;
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
    if ((unsigned)factory->type >= XDEV_DEVICE_TYPE_COUNT)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "backend '%s': device type %d is not an xdev_device_type_t entry",
                             factory->name, (int)factory->type);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    entry_t *e = &g_table[factory->type];
    int same_name = -1;
    for (int t = 0; t < XDEV_DEVICE_TYPE_COUNT; t++)
        if (g_table[t].used && strcmp(g_table[t].f.name, factory->name) == 0) same_name = t;
    if (g_sealed) {
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "backend '%s': xdev is already initialised; register backends before the "
                       "first other xdev call",
                       factory->name);
    } else if (same_name >= 0 && same_name != (int)factory->type) {
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "backend name '%s' is already registered for device type %d", factory->name,
                       same_name);
    } else if (e->used && !(e->f.flags & XDEV_BACKEND_DEFAULT)) {
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "device type %d already has the backend '%s' registered", (int)factory->type,
                       e->f.name);
    } else {
        memset(&e->f, 0, sizeof e->f);
        memcpy(&e->f, factory,
               factory->size < sizeof e->f ? factory->size : sizeof e->f); /* older, shorter */
        e->f.size = sizeof e->f;
        e->used = true;
    }
    pthread_mutex_unlock(&g_lock);
    return st == XDEV_SUCCESS ? st : xdev_core_blame(st, __func__);
}

void xdev_backend_table_seal(void) {
    pthread_mutex_lock(&g_lock);
    g_sealed = true;
    pthread_mutex_unlock(&g_lock);
}

bool xdev_backend_table_get(xdev_device_type_t type, xdev_backend_factory_t *out) {
    if ((unsigned)type >= XDEV_DEVICE_TYPE_COUNT) return false;
    pthread_mutex_lock(&g_lock);
    bool used = g_table[type].used;
    if (used) *out = g_table[type].f;
    pthread_mutex_unlock(&g_lock);
    return used;
}

int xdev_backend_table_find(const char *name, size_t len) {
    int found = -1;
    pthread_mutex_lock(&g_lock);
    for (int t = 0; t < XDEV_DEVICE_TYPE_COUNT && found < 0; t++)
        if (g_table[t].used && strlen(g_table[t].f.name) == len &&
            strncmp(g_table[t].f.name, name, len) == 0)
            found = t;
    pthread_mutex_unlock(&g_lock);
    return found;
}

const char *xdev_device_type_name(xdev_device_type_t type) {
    if ((unsigned)type >= XDEV_DEVICE_TYPE_COUNT) return NULL;
    pthread_mutex_lock(&g_lock);
    const char *name = g_table[type].used ? g_table[type].f.name : NULL;
    pthread_mutex_unlock(&g_lock);
    return name;
}

/* Accelerators by auto_order (then type), then the others by type. */
int xdev_backend_table_order(xdev_device_type_t *types, int cap) {
    int n = 0;
    pthread_mutex_lock(&g_lock);
    for (int pass = 0; pass < 2; pass++) {
        bool want_accel = pass == 0;
        int start = n;
        for (int t = 0; t < XDEV_DEVICE_TYPE_COUNT && n < cap; t++) {
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
    pthread_mutex_unlock(&g_lock);
    return n;
}

void xdev_backend_table_names(char *buf, size_t len, const char *last) {
    xdev_device_type_t order[XDEV_DEVICE_TYPE_COUNT];
    int n = xdev_backend_table_order(order, XDEV_DEVICE_TYPE_COUNT);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? last : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, xdev_device_type_name(order[i]));
        if (w < 0) break;
        used += (size_t)w;
    }
}
