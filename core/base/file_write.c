/* SPDX-License-Identifier: Apache-2.0 */
/* file_write.c - xdev_write_file (file_write.h). */
#include "base/file_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"

xdev_status_t xdev_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return XDEV_FAIL(XDEV_ERROR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    size_t wrote = fwrite(data, 1, n, f);
    int err = errno;
    if (fclose(f) != 0 && wrote == n) {
        wrote = 0;
        err = errno;
    }
    if (wrote != n) return XDEV_FAIL(XDEV_ERROR_IO, "cannot write '%s': %s", path, strerror(err));
    return XDEV_SUCCESS;
}
