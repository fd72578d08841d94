/* SPDX-License-Identifier: Apache-2.0 */
/* hooks.c - the hooks of the folders above runtime/ (hooks.h): registered
 * by core/wiring.c's list while libxdev loads, run by initialisation, a
 * group's end, a stream's destruction and a thread's exit. Registration happens before any xdev
 * call can run, so the lists are read without a lock. */
#include "runtime/hooks.h"

#include <stdbool.h>

#include "base/error_internal.h"

static xdev_init_hook_t g_init[XDEV_INIT_PHASES][XDEV_MAX_HOOKS];
static int g_init_count[XDEV_INIT_PHASES];
static xdev_thread_exit_hook_t g_exit[XDEV_MAX_HOOKS];
static int g_exit_count;
static xdev_backend_loaded_hook_t g_loaded[XDEV_MAX_HOOKS];
static int g_loaded_count;
static xdev_foreign_hook_t g_foreign[XDEV_MAX_HOOKS];
static int g_foreign_count;
static xdev_group_end_hook_t g_group_end[XDEV_MAX_HOOKS];
static int g_group_end_count;
static xdev_stream_destroy_hook_t g_stream_destroy[XDEV_MAX_HOOKS];
static int g_stream_destroy_count;
static bool g_overflow; /* a hook found no room: initialisation says so */

void xdev_hook_init_add(xdev_init_phase_t phase, xdev_init_hook_t fn) {
    if ((unsigned)phase >= XDEV_INIT_PHASES || g_init_count[phase] == XDEV_MAX_HOOKS) {
        g_overflow = true;
        return;
    }
    g_init[phase][g_init_count[phase]++] = fn;
}

void xdev_hook_thread_exit_add(xdev_thread_exit_hook_t fn) {
    if (g_exit_count == XDEV_MAX_HOOKS) {
        g_overflow = true;
        return;
    }
    g_exit[g_exit_count++] = fn;
}

void xdev_hook_backend_loaded_add(xdev_backend_loaded_hook_t fn) {
    if (g_loaded_count == XDEV_MAX_HOOKS) {
        g_overflow = true;
        return;
    }
    g_loaded[g_loaded_count++] = fn;
}

void xdev_hook_foreign_add(xdev_foreign_hook_t fn) {
    if (g_foreign_count == XDEV_MAX_HOOKS) {
        g_overflow = true;
        return;
    }
    g_foreign[g_foreign_count++] = fn;
}

void xdev_hook_group_end_add(xdev_group_end_hook_t fn) {
    if (g_group_end_count == XDEV_MAX_HOOKS) {
        g_overflow = true;
        return;
    }
    g_group_end[g_group_end_count++] = fn;
}

void xdev_hook_stream_destroy_add(xdev_stream_destroy_hook_t fn) {
    if (g_stream_destroy_count == XDEV_MAX_HOOKS) {
        g_overflow = true;
        return;
    }
    g_stream_destroy[g_stream_destroy_count++] = fn;
}

void xdev_hooks_run_stream_destroy(struct xdev_stream *stream) {
    for (int i = 0; i < g_stream_destroy_count; i++)
        g_stream_destroy[i](stream);
}

void xdev_hooks_run_group_end(void) {
    for (int i = 0; i < g_group_end_count; i++)
        g_group_end[i]();
}

void xdev_hooks_run_foreign(struct xdev_device_record *rec, void *ptr, size_t bytes,
                            struct xdev_stream *stream, bool added) {
    for (int i = 0; i < g_foreign_count; i++)
        g_foreign[i](rec, ptr, bytes, stream, added);
}

void xdev_hooks_run_backend_loaded(struct xdev_backend *be) {
    for (int i = 0; i < g_loaded_count; i++)
        g_loaded[i](be);
}

xdev_status_t xdev_hooks_run_init(xdev_init_phase_t phase) {
    if (g_overflow)
        return XDEV_FAIL(XDEV_ERROR_INTERNAL,
                         "more hooks registered than runtime/hooks.h holds (XDEV_MAX_HOOKS %d)",
                         XDEV_MAX_HOOKS);
    for (int i = 0; i < g_init_count[phase]; i++) {
        xdev_status_t st = g_init[phase][i]();
        if (st != XDEV_SUCCESS) return st;
    }
    return XDEV_SUCCESS;
}

void xdev_hooks_run_thread_exit(void) {
    for (int i = 0; i < g_exit_count; i++)
        g_exit[i]();
}
