/* SPDX-License-Identifier: Apache-2.0 */
/* sha256.h - SHA-256 (FIPS 180-4). */
#ifndef XDEV_CORE_SHA256_H
#define XDEV_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* FIPS 180-4 SHA-256, for keys and for the integrity of entries. */
typedef struct xdev_sha256 {
    uint32_t h[8];
    uint64_t bytes; /* message length so far */
    unsigned char block[64];
    size_t fill; /* bytes waiting in block */
} xdev_sha256_t;

void xdev_sha256_init(xdev_sha256_t *s);
void xdev_sha256_update(xdev_sha256_t *s, const void *data, size_t n);
void xdev_sha256_final(xdev_sha256_t *s, unsigned char digest[32]);
void xdev_sha256(const void *data, size_t n, unsigned char digest[32]);
/* 32 bytes to 64 lowercase hex digits and a NUL. */
void xdev_sha256_hex(const unsigned char digest[32], char out[65]);

#endif
