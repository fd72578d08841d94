/* SPDX-License-Identifier: Apache-2.0 */
/* pickle.h - a writer of Python's pickle format (protocol 2), just enough
 * for plain data: dicts, lists, pairs, strings, integers, booleans. It
 * exists so that a memory snapshot can be handed to PyTorch's own memory
 * viewer, which reads a pickled dict (xdev_memory_snapshot_torch). The
 * opcodes are those of Python's pickle documentation (pickletools). */
#ifndef XDEV_CORE_PICKLE_H
#define XDEV_CORE_PICKLE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"

void xdev_pickle_begin(xdev_strbuf_t *sb); /* PROTO 2 */
void xdev_pickle_end(xdev_strbuf_t *sb);   /* STOP */
/* A dict: begin, then key and value pairs, then end (a list likewise). */
void xdev_pickle_dict_begin(xdev_strbuf_t *sb);
void xdev_pickle_dict_end(xdev_strbuf_t *sb);
void xdev_pickle_list_begin(xdev_strbuf_t *sb);
void xdev_pickle_list_end(xdev_strbuf_t *sb);
/* A str: bytes of s that are not UTF-8 become U+FFFD. */
void xdev_pickle_str(xdev_strbuf_t *sb, const char *s);
void xdev_pickle_int(xdev_strbuf_t *sb, int64_t v);
void xdev_pickle_uint(xdev_strbuf_t *sb, uint64_t v);
void xdev_pickle_bool(xdev_strbuf_t *sb, bool v);
/* The two values pushed last become a tuple. */
void xdev_pickle_tuple2(xdev_strbuf_t *sb);

#endif
