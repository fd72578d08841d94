/* SPDX-License-Identifier: Apache-2.0 */
/* call_site.c - the application's call into libxdev, found on the stack
 * with backtrace and dladdr, so that the sanitizer and the sync debug mode
 * name a call site the same way (call_site.h). */
#include "base/call_site.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stddef.h>
#if defined(__has_include)
#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define XDEV_HAVE_BACKTRACE 1
#endif
#endif

int xdev_call_site_capture(void **frames, int cap) {
#ifdef XDEV_HAVE_BACKTRACE
    return cap > 0 ? backtrace(frames, cap) : 0;
#else
    (void)frames;
    (void)cap;
    return 0;
#endif
}

/* Walks past the walker's own frames (a sanitizer runtime's too) into
 * libxdev, then stops at the first frame of another module. */
static void *pick(void *const *frames, int n, Dl_info *out) {
    Dl_info self;
    const void *self_base = dladdr((void *)xdev_call_site_pick, &self) ? self.dli_fbase : NULL;
    void *found = NULL;
    bool inside = false;
    for (int i = 0; i < n; i++) {
        Dl_info fi;
        if (!dladdr(frames[i], &fi)) continue;
        found = frames[i];
        *out = fi;
        if (fi.dli_fbase == self_base)
            inside = true;
        else if (inside)
            break;
    }
    return found;
}

void *xdev_call_site_pick(void *const *frames, int n) {
    Dl_info info = {0};
    return pick(frames, n, &info);
}

void xdev_call_site_describe(xdev_strbuf_t *b, void *const *frames, int n) {
    Dl_info info = {0};
    void *at = pick(frames, n, &info);
    if (at == NULL) {
        xdev_strbuf_printf(b, "(no stack)");
        return;
    }
    const char *mod = info.dli_fname != NULL && info.dli_fname[0] ? info.dli_fname : "?";
    xdev_strbuf_printf(b, "from %s+0x%" PRIxPTR, mod, (uintptr_t)at - (uintptr_t)info.dli_fbase);
    if (info.dli_sname != NULL)
        xdev_strbuf_printf(b, " (%s+0x%" PRIxPTR ")", info.dli_sname,
                           (uintptr_t)at - (uintptr_t)info.dli_saddr);
}
