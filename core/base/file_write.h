/* SPDX-License-Identifier: Apache-2.0 */
/* file_write.h - one way to write a whole file from memory (snapshots,
 * their pages), so that every caller reports a failure the same way. */
#ifndef XDEV_CORE_FILE_WRITE_H
#define XDEV_CORE_FILE_WRITE_H

#include <stddef.h>

#include "xdev/error.h"

/* data[0..n) into `path`, created or truncated. XDEV_ERROR_IO naming the
 * path and the system's reason when it cannot be opened, written or
 * closed (a full disk shows at the close). */
xdev_status_t xdev_write_file(const char *path, const void *data, size_t n);

#endif
