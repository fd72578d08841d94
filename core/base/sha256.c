/* SPDX-License-Identifier: Apache-2.0 */
/* sha256.c - SHA-256 (FIPS 180-4), written from the standard: the kernel
 * cache's keys and the integrity check of its entries. */
#include "base/sha256.h"

#include <string.h>

/* First 32 bits of the fractional parts of the cube roots of the first 64
 * primes (FIPS 180-4, 4.2.2). */
static const uint32_t K256[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u,
};

static inline uint32_t rotr(uint32_t x, unsigned n) {
    return (x >> n) | (x << (32u - n));
}

static inline uint32_t load_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* One round (FIPS 180-4, 6.2.2 step 3) with the working variables named by
 * position, so eight rounds in a row rotate names instead of moving values. */
#define SHA_ROUND(a, b, c, d, e, f, g, h, t)                                                       \
    do {                                                                                           \
        uint32_t t1_ = (h) + (rotr((e), 6) ^ rotr((e), 11) ^ rotr((e), 25)) +                      \
                       (((e) & (f)) ^ (~(e) & (g))) + K256[(t)] + w[(t)];                          \
        uint32_t t2_ = (rotr((a), 2) ^ rotr((a), 13) ^ rotr((a), 22)) +                            \
                       (((a) & (b)) ^ ((a) & (c)) ^ ((b) & (c)));                                  \
        (d) += t1_;                                                                                \
        (h) = t1_ + t2_;                                                                           \
    } while (0)

/* The compression function over n 64-byte blocks. */
static void sha256_blocks(uint32_t hv[8], const unsigned char *p, size_t n) {
    for (; n > 0; n--, p += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; t++)
            w[t] = load_be32(p + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = hv[0], b = hv[1], c = hv[2], d = hv[3];
        uint32_t e = hv[4], f = hv[5], g = hv[6], h = hv[7];
        for (int t = 0; t < 64; t += 8) {
            SHA_ROUND(a, b, c, d, e, f, g, h, t);
            SHA_ROUND(h, a, b, c, d, e, f, g, t + 1);
            SHA_ROUND(g, h, a, b, c, d, e, f, t + 2);
            SHA_ROUND(f, g, h, a, b, c, d, e, t + 3);
            SHA_ROUND(e, f, g, h, a, b, c, d, t + 4);
            SHA_ROUND(d, e, f, g, h, a, b, c, t + 5);
            SHA_ROUND(c, d, e, f, g, h, a, b, t + 6);
            SHA_ROUND(b, c, d, e, f, g, h, a, t + 7);
        }
        hv[0] += a, hv[1] += b, hv[2] += c, hv[3] += d;
        hv[4] += e, hv[5] += f, hv[6] += g, hv[7] += h;
    }
}

void xdev_sha256_init(xdev_sha256_t *s) {
    /* First 32 bits of the fractional parts of the square roots of the first
     * 8 primes (FIPS 180-4, 5.3.3). */
    static const uint32_t h0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->fill = 0;
}

void xdev_sha256_update(xdev_sha256_t *s, const void *data, size_t n) {
    const unsigned char *p = data;
    if (n == 0) return;
    s->bytes += n;
    if (s->fill > 0) {
        size_t take = 64 - s->fill < n ? 64 - s->fill : n;
        memcpy(s->block + s->fill, p, take);
        s->fill += take;
        p += take;
        n -= take;
        if (s->fill < 64) return;
        sha256_blocks(s->h, s->block, 1);
        s->fill = 0;
    }
    if (n >= 64) {
        sha256_blocks(s->h, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    if (n > 0) memcpy(s->block, p, n);
    s->fill = n;
}

/* Padding (5.1.1): a 1 bit, zeros, the length in bits as 64-bit big endian. */
void xdev_sha256_final(xdev_sha256_t *s, unsigned char digest[32]) {
    uint64_t bits = s->bytes * 8u;
    s->block[s->fill++] = 0x80;
    if (s->fill > 56) {
        memset(s->block + s->fill, 0, 64 - s->fill);
        sha256_blocks(s->h, s->block, 1);
        s->fill = 0;
    }
    memset(s->block + s->fill, 0, 56 - s->fill);
    for (int i = 0; i < 8; i++)
        s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_blocks(s->h, s->block, 1);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (unsigned char)(s->h[i] >> 24);
        digest[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        digest[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        digest[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void xdev_sha256(const void *data, size_t n, unsigned char digest[32]) {
    xdev_sha256_t s;
    xdev_sha256_init(&s);
    xdev_sha256_update(&s, data, n);
    xdev_sha256_final(&s, digest);
}

void xdev_sha256_hex(const unsigned char digest[32], char out[65]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
}
