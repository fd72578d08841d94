/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_device_name.c - libFuzzer target for device names (core/runtime/device_name.c):
 * xdev_device_parse on arbitrary text, and xdev_device_format on arbitrary
 * devices and buffer lengths. Checks, beyond "no crash, no out-of-bounds
 * access": an accepted name has a known type and an index >= -1 and formats
 * back to exactly the same text (names are canonical: no spaces, signs or
 * leading zeros); a rejection is XDEV_ERROR_INVALID_VALUE with a message; a
 * formatted name fits its buffer and parses back to the device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/backend.h"
#include "xdev/device.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The names libxdev registers when it loads (backends/cpu, backends/plugins.c). */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const names[] = {"cpu", "cuda", "hip"};
    for (int t = 0; t < 3; t++)
        if (xdev_backend_register(&(xdev_backend_factory_t){
                .size = sizeof(xdev_backend_factory_t),
                .name = names[t],
                .type = (xdev_device_type_t)t,
            }) != XDEV_SUCCESS)
            abort();
    return 0;
}

static void fuzz_parse(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text == NULL) return;
    memcpy(text, data, size);
    text[size] = '\0'; /* the parser sees the text up to the first NUL */
    xdev_device_t d = {(xdev_device_type_t)-7, -7};
    xdev_clear_error();
    xdev_status_t st = xdev_device_parse(text, &d);
    if (st == XDEV_SUCCESS) {
        if (xdev_device_type_name(d.type) == NULL || d.index < -1) abort();
        char buf[XDEV_DEVICE_NAME_MAX];
        if (xdev_device_format(d, buf, sizeof buf) != XDEV_SUCCESS) abort();
        if (strcmp(buf, text) != 0) abort(); /* round trip */
    } else if (st != XDEV_ERROR_INVALID_VALUE || xdev_last_error()[0] == '\0') {
        abort();
    }
    free(text);
}

/* Bytes 1..4: the type, 5..8: the index, 9: the buffer length (0..32). The
 * buffer is exactly that long on the heap, so ASan sees any overrun. */
static void fuzz_format(const uint8_t *data, size_t size) {
    if (size < 10) return;
    int32_t type, index;
    memcpy(&type, data + 1, sizeof type);
    memcpy(&index, data + 5, sizeof index);
    size_t len = data[9] % (XDEV_DEVICE_NAME_MAX + 1);
    char *buf = malloc(len ? len : 1);
    if (buf == NULL) return;
    xdev_device_t d = {(xdev_device_type_t)type, index};
    xdev_status_t st = xdev_device_format(d, buf, len);
    if (st == XDEV_SUCCESS) {
        if (len == 0 || memchr(buf, '\0', len) == NULL) abort();
        xdev_device_t back;
        if (xdev_device_parse(buf, &back) != XDEV_SUCCESS) abort();
        if (back.type != d.type || back.index != (d.index < 0 ? -1 : d.index)) abort();
    } else if (xdev_last_error()[0] == '\0') {
        abort();
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 0 && data[0] == 0xff)
        fuzz_format(data, size);
    else
        fuzz_parse(data, size);
    return 0;
}
