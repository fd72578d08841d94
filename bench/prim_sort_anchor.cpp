/* SPDX-License-Identifier: Apache-2.0 */
/* bench/prim_sort_anchor.cpp - prim_bench's sort anchor (bench/prim_anchor.h):
 * libstdc++'s parallel mode sort (__gnu_parallel::sort, a multiway
 * mergesort on OpenMP's threads), the goal issue 44 sets for the CPU
 * backend's radix sort of u32 keys. */
#include <cstdint>
#include <cstdio>
#include <parallel/algorithm>

#include "prim_anchor.h"

extern "C" int prim_gnu_sort_u32(uint32_t *keys, size_t n) {
    if (keys == nullptr && n > 0) {
        fprintf(stderr, "prim_bench gnu side: no keys\n");
        return 1;
    }
    __gnu_parallel::sort(keys, keys + n);
    return 0;
}
