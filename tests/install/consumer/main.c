/* SPDX-License-Identifier: Apache-2.0 */
/* Prints the xdev version and the device count of the default type. */
#include <stdio.h>

#include <xdev/xdev.h>

int main(void) {
    xdev_status_t st = xdev_init();
    if (st != XDEV_SUCCESS) {
        fprintf(stderr, "xdev_init: %s: %s\n", xdev_status_string(st), xdev_last_error());
        return 1;
    }
    xdev_device_type_t type;
    int count = 0;
    if (xdev_default_device_type(&type) != XDEV_SUCCESS ||
        xdev_device_count(type, &count) != XDEV_SUCCESS) {
        fprintf(stderr, "xdev: %s\n", xdev_last_error());
        return 1;
    }
    printf("xdev %s\n", xdev_version_string());
    printf("devices: %d %s\n", count, xdev_device_type_name(type));
    return 0;
}
