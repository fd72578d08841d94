/* SPDX-License-Identifier: Apache-2.0 */
/* call_site.h - where the application called into xdev, as observe/'s
 * reports name it: the stream-order sanitizer's (stream_sanitizer.c) and the
 * shadow execution's (shadow.c) say "from /path/prog+0x1234 (main+0x56)",
 * the first frame outside libxdev, in one form, written here once. */
#ifndef XDEV_CORE_CALL_SITE_H
#define XDEV_CORE_CALL_SITE_H

#include "base/strbuf.h"

/* Stack frames kept per call. */
#define XDEV_CALL_SITE_FRAMES 10

/* This thread's stack, up to XDEV_CALL_SITE_FRAMES frames; returns how
 * many (0 where the platform has no backtrace). */
int xdev_call_site_capture(void **frames);

/* Append "from <module>+0x<offset> (<symbol>+0x<offset>)" for the first of
 * frames[0..n) outside libxdev (the last one when libxdev is linked in), or
 * "(no stack)"; addr2line -e <module> <offset> names the line. */
void xdev_call_site_describe(xdev_strbuf_t *b, void *const *frames, int n);

#endif
