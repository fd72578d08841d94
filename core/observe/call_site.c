/* SPDX-License-Identifier: Apache-2.0 */
/* call_site.c - the call site of observe/'s reports (call_site.h): a stack
 * walk, and its first frame outside libxdev named by module and symbol. */
#include "observe/call_site.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#if defined(__has_include)
#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define XDEV_HAVE_BACKTRACE 1
#endif
#endif

int xdev_call_site_capture(void **frames) {
#ifdef XDEV_HAVE_BACKTRACE
    return backtrace(frames, XDEV_CALL_SITE_FRAMES);
#else
    (void)frames;
    return 0;
#endif
}

void xdev_call_site_describe(xdev_strbuf_t *b, void *const *frames, int n) {
    Dl_info self;
    const void *self_base = dladdr((void *)xdev_call_site_describe, &self) ? self.dli_fbase : NULL;
    void *pick = NULL;
    Dl_info info = {0};
    bool inside = false; /* past the walker's own frames (a sanitizer runtime's too) */
    for (int i = 0; i < n; i++) {
        Dl_info fi;
        if (!dladdr(frames[i], &fi)) continue;
        pick = frames[i];
        info = fi;
        if (fi.dli_fbase == self_base)
            inside = true;
        else if (inside)
            break;
    }
    if (pick == NULL) {
        xdev_strbuf_printf(b, "(no stack)");
        return;
    }
    const char *mod = info.dli_fname != NULL && info.dli_fname[0] ? info.dli_fname : "?";
    xdev_strbuf_printf(b, "from %s+0x%" PRIxPTR, mod, (uintptr_t)pick - (uintptr_t)info.dli_fbase);
    if (info.dli_sname != NULL)
        xdev_strbuf_printf(b, " (%s+0x%" PRIxPTR ")", info.dli_sname,
                           (uintptr_t)pick - (uintptr_t)info.dli_saddr);
}
