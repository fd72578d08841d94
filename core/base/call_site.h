/* SPDX-License-Identifier: Apache-2.0 */
/* call_site.h - where the application called into libxdev, named one way
 * for every report that names it (the stream-order sanitizer's uses, the
 * sync debug mode's warnings): "from /path/prog+0x1234 (main+0x56)". */
#ifndef XDEV_CORE_CALL_SITE_H
#define XDEV_CORE_CALL_SITE_H

#include "base/strbuf.h"

/* Frames worth keeping to find the caller past libxdev's own frames. */
#define XDEV_CALL_SITE_FRAMES 16

/* This thread's stack, innermost first, into frames[0 .. cap); the count
 * (0 where the C library has no backtrace). */
int xdev_call_site_capture(void **frames, int cap);

/* The first frame outside libxdev, where the application called in (the
 * last frame when libxdev is linked in); NULL when none can be named. Its
 * address identifies the call site. */
void *xdev_call_site_pick(void *const *frames, int n);

/* "from /path/prog+0x1234 (main+0x56)", or "(no stack)"; addr2line -e
 * /path/prog 0x1234 names the line. */
void xdev_call_site_describe(xdev_strbuf_t *b, void *const *frames, int n);

#endif
