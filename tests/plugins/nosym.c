/* SPDX-License-Identifier: Apache-2.0 */
/* nosym.c - a "cuda" plugin that loads but does not export xdev_backend_entry. */
#include <stddef.h>

__attribute__((visibility("default"))) const void *xdev_backend_entry_v0(void);

const void *xdev_backend_entry_v0(void) {
    return NULL;
}
