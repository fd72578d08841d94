/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_alloc_conf.c - libFuzzer target for the XDEV_ALLOC_CONF parser: any
 * input must either parse into sane settings or fail with a message, never
 * crash, read out of bounds or loop. Built with clang -fsanitize=fuzzer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (text == NULL) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    xdev_alloc_config_t cfg;
    char err[256];
    err[0] = '\0';
    if (xdev_alloc_config_parse(text, &cfg, err, sizeof err)) {
        if (cfg.max_split_size != SIZE_MAX && cfg.max_split_size <= ((size_t)20 << 20)) abort();
        if (!(cfg.gc_threshold >= 0.0 && cfg.gc_threshold < 1.0)) abort();
        for (int i = 0; i < XDEV_ROUNDUP_INTERVALS; i++)
            if (cfg.roundup_divisions[i] > 64 ||
                (cfg.roundup_divisions[i] & (cfg.roundup_divisions[i] - 1)) != 0)
                abort();
    } else if (err[0] == '\0') {
        abort(); /* a rejection must say why */
    }
    free(text);
    return 0;
}
