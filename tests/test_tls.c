/* SPDX-License-Identifier: Apache-2.0 */
/* test_tls.c - libxdev's static TLS stays small enough to dlopen.
 *
 * libxdev keeps its per-thread pointer in initial-exec TLS (fast current
 * stream and device guards; runtime/thread_state.h), which makes the whole
 * library's TLS block static TLS. A library dlopen'ed later (Python ctypes,
 * JNI, a plugin host) gets it from glibc's spare static TLS, of which 512
 * bytes are reserved for this use (glibc.rtld.optional_static_tls): more
 * than that and dlopen can fail with "cannot allocate memory in static TLS
 * block" (it did, from Python, when the error message lived in TLS). This
 * test finds libxdev's PT_TLS segment and checks its size; ctest also loads
 * libxdev from Python (tls.dlopen_python) where Python is present. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "xdev/xdev.h"

#define TLS_LIMIT 512

static const char *g_path;
static long g_tls = -1;

static int find_tls(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    if (info->dlpi_name == NULL || strcmp(info->dlpi_name, g_path) != 0) return 0;
    g_tls = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS) g_tls = (long)info->dlpi_phdr[i].p_memsz;
    return 1;
}

int main(void) {
    Dl_info di;
    if (dladdr((void *)xdev_last_error, &di) == 0 || di.dli_fname == NULL) {
        printf("FAIL: dladdr cannot name the library holding xdev_last_error\n");
        return 1;
    }
    g_path = di.dli_fname;
    dl_iterate_phdr(find_tls, NULL);
    if (g_tls < 0) {
        printf("FAIL: %s not among the loaded objects\n", g_path);
        return 1;
    }
    printf("%s: PT_TLS %ld bytes (limit %d)\n", g_path, g_tls, TLS_LIMIT);
    if (g_tls > TLS_LIMIT) {
        printf("FAIL: libxdev's TLS is %ld bytes, over %d: keep per-thread buffers on the heap\n",
               g_tls, TLS_LIMIT);
        return 1;
    }
    /* The message buffer moved to the heap: a failure still reads back. */
    if (xdev_last_error()[0] != '\0') {
        printf("FAIL: fresh thread has message '%s'\n", xdev_last_error());
        return 1;
    }
    xdev_status_t st = xdev_set_device((xdev_device_t){XDEV_DEVICE_CPU, 9999});
    if (st == XDEV_SUCCESS || strstr(xdev_last_error(), "xdev_set_device") == NULL) {
        printf("FAIL: bad device index: status %d, message '%s'\n", st, xdev_last_error());
        return 1;
    }
    xdev_clear_error();
    if (xdev_last_error()[0] != '\0' || xdev_last_status() != XDEV_SUCCESS) {
        printf("FAIL: xdev_clear_error left '%s'\n", xdev_last_error());
        return 1;
    }
    printf("ok\n");
    return 0;
}
