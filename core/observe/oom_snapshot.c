/* SPDX-License-Identifier: Apache-2.0 */
/* oom_snapshot.c - XDEV_OOM_SNAPSHOT=path: at the first out-of-memory of the
 * process, the memory snapshot of the failing device's type in torch's
 * pickle (what PyTorch's memory viewer opens) is written to path, "%p" in it
 * replaced by the process id, and the memory view's page of the whole
 * snapshot to path + ".html", so a crash report has the picture of what held
 * the memory when it ran out. The path is checked when xdev initialises (a
 * malformed one fails xdev_init like every XDEV_* variable); the files are
 * written from the allocator's out-of-memory observer (alloc/alloc_oom.h),
 * with no allocator lock held. */
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/alloc_oom.h"
#include "base/env.h"
#include "base/error_internal.h"
#include "base/file_write.h"
#include "observe/alloc_snapshot.h"
#include "runtime/hooks.h"

#define XDEV_OOM_PATH_MAX 3072 /* the template and its expansion; leaves room for ".html" */

static char g_template[XDEV_OOM_PATH_MAX]; /* "" when unset */
static atomic_bool g_written;              /* the first out-of-memory took the snapshot */

/* The template with %p as `pid` and %% as %, into out; false when it holds
 * another % sequence or does not fit. */
static bool expand(const char *tmpl, long pid, char *out, size_t cap, char *bad) {
    size_t n = 0;
    for (const char *c = tmpl; *c != '\0'; c++) {
        char piece[32];
        const char *add = piece;
        if (*c != '%') {
            piece[0] = *c;
            piece[1] = '\0';
        } else if (c[1] == 'p') {
            snprintf(piece, sizeof piece, "%ld", pid);
            c++;
        } else if (c[1] == '%') {
            add = "%";
            c++;
        } else {
            *bad = c[1];
            return false;
        }
        size_t k = strlen(add);
        if (n + k >= cap) {
            *bad = '\0';
            return false;
        }
        memcpy(out + n, add, k);
        n += k;
    }
    out[n] = '\0';
    return true;
}

/* The settings step: a path that cannot be written to is refused here, not
 * at the out-of-memory, when nobody could be told. */
static xdev_status_t settings_load(void) {
    g_template[0] = '\0';
    const char *v = xdev_env_get("XDEV_OOM_SNAPSHOT");
    if (v == NULL || v[0] == '\0') return XDEV_SUCCESS;
    char path[XDEV_OOM_PATH_MAX], bad = '\0';
    if (strlen(v) >= sizeof g_template || !expand(v, (long)getpid(), path, sizeof path, &bad)) {
        if (bad != '\0')
            return XDEV_FAIL(XDEV_ERROR_ENV,
                             "XDEV_OOM_SNAPSHOT='%s': '%%%c' is not a substitution: %%p is the "
                             "process id, %%%% a percent sign",
                             v, bad);
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_OOM_SNAPSHOT='%.64s...': the path is longer than %d bytes", v,
                         XDEV_OOM_PATH_MAX - 1);
    }
    size_t len = strlen(path);
    if (path[len - 1] == '/')
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_OOM_SNAPSHOT='%s' names a directory: give a file path (the "
                         "snapshot goes there, its page to the path + \".html\")",
                         v);
    char dir[XDEV_OOM_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    struct stat st;
    bool exists = stat(dir, &st) == 0;
    if (!exists || !S_ISDIR(st.st_mode))
        return XDEV_FAIL(XDEV_ERROR_ENV, "XDEV_OOM_SNAPSHOT='%s': the directory '%s' %s", v, dir,
                         exists ? "is not a directory" : "does not exist");
    if (access(dir, W_OK) != 0)
        return XDEV_FAIL(XDEV_ERROR_ENV,
                         "XDEV_OOM_SNAPSHOT='%s': the directory '%s' is not "
                         "writable",
                         v, dir);
    memcpy(g_template, v, strlen(v) + 1);
    return XDEV_SUCCESS;
}

/* The allocator's internal out-of-memory observer: the first call of the
 * process writes both files (a failure to write leaves nothing behind: the
 * allocation's own message is what the caller gets). */
static void on_oom(const xdev_oom_info_t *info, void *user) {
    (void)user;
    if (g_template[0] == '\0' || atomic_exchange(&g_written, true)) return;
    char path[XDEV_OOM_PATH_MAX + 8], bad;
    if (!expand(g_template, (long)getpid(), path, XDEV_OOM_PATH_MAX, &bad)) return;
    void *data = NULL;
    size_t size = 0;
    if (xdev_alloc_snapshot_torch(info->device.type, &data, &size) == XDEV_SUCCESS) {
        (void)xdev_write_file(path, data, size);
        free(data);
    }
    char *json = NULL, *html = NULL;
    size_t n = 0;
    if (xdev_alloc_snapshot_json(&json) == XDEV_SUCCESS &&
        xdev_memviz_html_of(json, strlen(json), &html, &n) == XDEV_SUCCESS) {
        strcat(path, ".html");
        (void)xdev_write_file(path, html, n);
    }
    free(json);
    free(html);
}

/* Wired when libxdev loads (core/wiring.c): the path is a settings step, the
 * writer the allocator's internal out-of-memory observer. */
void xdev_oom_snapshot_wire(void) {
    xdev_hook_init_add(XDEV_INIT_SETTINGS, settings_load);
    xdev_alloc_oom_internal_set(on_oom);
}
