/* SPDX-License-Identifier: Apache-2.0 */
/* stream_names.h - the names given to streams (xdev_stream_set_name), kept
 * apart from the stream objects so that what shows streams after the fact -
 * the tracer by native handle, snapshots by handle - can ask for a name
 * without touching a stream that may be gone: a destroyed stream's name is
 * forgotten with it. */
#ifndef XDEV_CORE_STREAM_NAMES_H
#define XDEV_CORE_STREAM_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/registry.h"

/* Longest name, in bytes (the terminating NUL not counted). */
#define XDEV_STREAM_NAME_MAX 63

/* Name the stream `handle` (native `native` of rec); "" forgets it. False:
 * no host memory for the table. */
bool xdev_stream_names_set(const void *handle, const xdev_device_record_t *rec, const void *native,
                           const char *name);

/* The name of a stream by its handle, or by its device and native handle,
 * into buf (len bytes, at least XDEV_STREAM_NAME_MAX + 1); false when it
 * has none (buf is then ""). */
bool xdev_stream_names_by_handle(const void *handle, char *buf, size_t len);
bool xdev_stream_names_by_native(const xdev_device_record_t *rec, const void *native, char *buf,
                                 size_t len);

/* fn(handle, rec, name, arg) for every named stream, in naming order, under
 * the table's lock (fn must not name streams). */
void xdev_stream_names_each(void (*fn)(const void *handle, const xdev_device_record_t *rec,
                                       const char *name, void *arg),
                            void *arg);

#endif
