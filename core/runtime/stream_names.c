/* SPDX-License-Identifier: Apache-2.0 */
/* stream_names.c - stream names: xdev_stream_set_name / _get_name, and the
 * table behind them (stream_names.h): a small array under one lock,
 * searched linearly (a program names a handful of streams; lookups happen
 * when a trace or snapshot is written, and once per new trace track). */
#include "runtime/stream_names.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/utf8.h"
#include "runtime/dispatch.h"
#include "runtime/stream_internal.h"
#include "xdev/stream.h"

typedef struct named {
    const void *handle;
    const xdev_device_record_t *rec;
    const void *native;
    char name[XDEV_STREAM_NAME_MAX + 1];
} named_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static named_t *g_names;
static size_t g_count, g_cap;

static named_t *find_locked(const void *handle) {
    for (size_t i = 0; i < g_count; i++)
        if (g_names[i].handle == handle) return &g_names[i];
    return NULL;
}

bool xdev_stream_names_set(const void *handle, const xdev_device_record_t *rec, const void *native,
                           const char *name) {
    bool ok = true;
    pthread_mutex_lock(&g_lock);
    named_t *e = find_locked(handle);
    if (name[0] == '\0') {
        if (e != NULL) *e = g_names[--g_count]; /* order kept only among the rest */
    } else {
        if (e == NULL && g_count == g_cap) {
            size_t cap = g_cap ? 2 * g_cap : 16;
            named_t *more = realloc(g_names, cap * sizeof *more);
            if (more == NULL) {
                ok = false;
            } else {
                g_names = more;
                g_cap = cap;
            }
        }
        if (ok) {
            if (e == NULL) e = &g_names[g_count++];
            e->handle = handle;
            e->rec = rec;
            e->native = native;
            snprintf(e->name, sizeof e->name, "%s", name); /* the caller checked the length */
        }
    }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

static bool copy_out(const named_t *e, char *buf, size_t len) {
    if (len > 0) buf[0] = '\0';
    if (e == NULL || len == 0) return false;
    snprintf(buf, len, "%s", e->name);
    return true;
}

bool xdev_stream_names_by_handle(const void *handle, char *buf, size_t len) {
    pthread_mutex_lock(&g_lock);
    bool found = copy_out(find_locked(handle), buf, len);
    pthread_mutex_unlock(&g_lock);
    return found;
}

bool xdev_stream_names_by_native(const xdev_device_record_t *rec, const void *native, char *buf,
                                 size_t len) {
    pthread_mutex_lock(&g_lock);
    const named_t *e = NULL;
    for (size_t i = 0; i < g_count && e == NULL; i++)
        if (g_names[i].rec == rec && g_names[i].native == native) e = &g_names[i];
    bool found = copy_out(e, buf, len);
    pthread_mutex_unlock(&g_lock);
    return found;
}

void xdev_stream_names_each(void (*fn)(const void *handle, const xdev_device_record_t *rec,
                                       const char *name, void *arg),
                            void *arg) {
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_count; i++)
        fn(g_names[i].handle, g_names[i].rec, g_names[i].name, arg);
    pthread_mutex_unlock(&g_lock);
}

xdev_status_t xdev_stream_set_name(xdev_stream_t stream, const char *name) {
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    if (name == NULL) name = "";
    size_t n = strlen(name), bad = 0;
    if (n > XDEV_STREAM_NAME_MAX)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "name is %zu bytes; a stream's name is at most %d bytes", n,
                             XDEV_STREAM_NAME_MAX);
    if (!xdev_utf8_valid(name, n, &bad))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "name is not UTF-8 (byte %zu begins no character): traces and "
                             "snapshots are JSON",
                             bad);
    if (!xdev_stream_names_set(stream, stream->rec, stream->native, name))
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to keep the name");
    /* the vendor's profiler too; it has no "unnamed": a removed name stays there */
    if (n > 0 && XDEV_HAS(stream->be, trace, name_stream))
        XDEV_CHECK(xdev_be_trace_name_stream(stream->rec, stream->native, name));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_stream_get_name(xdev_stream_t stream, char *buf, size_t len) {
    XDEV_REQUIRE_ARG(buf);
    XDEV_CHECK(xdev_stream_check(stream, "stream"));
    char name[XDEV_STREAM_NAME_MAX + 1];
    (void)xdev_stream_names_by_handle(stream, name, sizeof name);
    size_t n = strlen(name);
    if (len <= n)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "buffer of %zu bytes too small for the name (need %zu)", len, n + 1);
    memcpy(buf, name, n + 1);
    return XDEV_SUCCESS;
}
