/* SPDX-License-Identifier: Apache-2.0 */
/* dtype.c - names and sizes of the element types (xdev/dtype.h). */
#include "xdev/dtype.h"

const char *xdev_dtype_name(xdev_dtype_t dtype) {
    static const char *const names[XDEV_DTYPE_COUNT] = {"f32",  "f64", "c64", "c128", "f16",
                                                        "bf16", "i8",  "i16", "i32",  "i64",
                                                        "u8",   "u16", "u32", "u64"};
    return (unsigned)dtype < XDEV_DTYPE_COUNT ? names[dtype] : NULL;
}

size_t xdev_dtype_size(xdev_dtype_t dtype) {
    static const size_t sizes[XDEV_DTYPE_COUNT] = {4, 8, 8, 16, 2, 2, 1, 2, 4, 8, 1, 2, 4, 8};
    return (unsigned)dtype < XDEV_DTYPE_COUNT ? sizes[dtype] : 0;
}
