/* SPDX-License-Identifier: Apache-2.0 */
/* tests/api_use/ignored_status.c - must NOT compile with XDEV_NODISCARD and
 * -Werror: the status of xdev_synchronize is dropped (api_use.sh checks the
 * compiler names it; without XDEV_NODISCARD the same file compiles). */
#include <xdev/xdev.h>

int main(void) {
    xdev_synchronize();
    return 0;
}
