/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/support/pp.h - preprocessor helpers shared by the kernel dialect
 * (xdev/kernel_lang.h) and the launch macros (xdev/kernel.h): counting a
 * variadic list and applying a macro to each element with its index, up to
 * 24 elements. Generated once; plain C99 preprocessor, so nvcc, hipcc and
 * any C or C++ compiler take it. */
#ifndef XDEV_SUPPORT_PP_H
#define XDEV_SUPPORT_PP_H

#define XDEV_PP_CAT(a, b) XDEV_PP_CAT_(a, b)
#define XDEV_PP_CAT_(a, b) a##b
#define XDEV_PP_MAX_ARGS 24

/* The number of arguments (1 .. 24; an empty list counts as 1). */
#define XDEV_PP_NARGS(...)                                                                         \
    XDEV_PP_NARGS_(__VA_ARGS__, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8,  \
                   7, 6, 5, 4, 3, 2, 1, 0)
#define XDEV_PP_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, \
                       _18, _19, _20, _21, _22, _23, _24, N, ...)                                  \
    N

/* m(i, x) for each x at index i, separated by commas (MAPC) or nothing (MAPS). */
#define XDEV_PP_MAPC(m, ...) XDEV_PP_CAT(XDEV_PP_MAPC_, XDEV_PP_NARGS(__VA_ARGS__))(m, __VA_ARGS__)
#define XDEV_PP_MAPS(m, ...) XDEV_PP_CAT(XDEV_PP_MAPS_, XDEV_PP_NARGS(__VA_ARGS__))(m, __VA_ARGS__)
#define XDEV_PP_MAPC_1(m, a0) m(0, a0)
#define XDEV_PP_MAPS_1(m, a0) m(0, a0)
#define XDEV_PP_MAPC_2(m, a0, a1) m(0, a0), m(1, a1)
#define XDEV_PP_MAPS_2(m, a0, a1) m(0, a0) m(1, a1)
#define XDEV_PP_MAPC_3(m, a0, a1, a2) m(0, a0), m(1, a1), m(2, a2)
#define XDEV_PP_MAPS_3(m, a0, a1, a2) m(0, a0) m(1, a1) m(2, a2)
#define XDEV_PP_MAPC_4(m, a0, a1, a2, a3) m(0, a0), m(1, a1), m(2, a2), m(3, a3)
#define XDEV_PP_MAPS_4(m, a0, a1, a2, a3) m(0, a0) m(1, a1) m(2, a2) m(3, a3)
#define XDEV_PP_MAPC_5(m, a0, a1, a2, a3, a4) m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4)
#define XDEV_PP_MAPS_5(m, a0, a1, a2, a3, a4) m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4)
#define XDEV_PP_MAPC_6(m, a0, a1, a2, a3, a4, a5)                                                  \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5)
#define XDEV_PP_MAPS_6(m, a0, a1, a2, a3, a4, a5)                                                  \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5)
#define XDEV_PP_MAPC_7(m, a0, a1, a2, a3, a4, a5, a6)                                              \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6)
#define XDEV_PP_MAPS_7(m, a0, a1, a2, a3, a4, a5, a6)                                              \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6)
#define XDEV_PP_MAPC_8(m, a0, a1, a2, a3, a4, a5, a6, a7)                                          \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7)
#define XDEV_PP_MAPS_8(m, a0, a1, a2, a3, a4, a5, a6, a7)                                          \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7)
#define XDEV_PP_MAPC_9(m, a0, a1, a2, a3, a4, a5, a6, a7, a8)                                      \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8)
#define XDEV_PP_MAPS_9(m, a0, a1, a2, a3, a4, a5, a6, a7, a8)                                      \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8)
#define XDEV_PP_MAPC_10(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9)                                 \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9)
#define XDEV_PP_MAPS_10(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9)                                 \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)
#define XDEV_PP_MAPC_11(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10)                            \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10)
#define XDEV_PP_MAPS_11(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10)                            \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10)
#define XDEV_PP_MAPC_12(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11)                       \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11)
#define XDEV_PP_MAPS_12(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11)                       \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11)
#define XDEV_PP_MAPC_13(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12)                  \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12)
#define XDEV_PP_MAPS_13(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12)                  \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12)
#define XDEV_PP_MAPC_14(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13)             \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13)
#define XDEV_PP_MAPS_14(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13)             \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13)
#define XDEV_PP_MAPC_15(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14)        \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14)
#define XDEV_PP_MAPS_15(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14)        \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14)
#define XDEV_PP_MAPC_16(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)   \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15)
#define XDEV_PP_MAPS_16(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)   \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15)
#define XDEV_PP_MAPC_17(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16)                                                                       \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16)
#define XDEV_PP_MAPS_17(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16)                                                                       \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16)
#define XDEV_PP_MAPC_18(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17)                                                                  \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16), m(17, a17)
#define XDEV_PP_MAPS_18(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17)                                                                  \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16) m(17, a17)
#define XDEV_PP_MAPC_19(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18)                                                             \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16), m(17, a17), m(18, a18)
#define XDEV_PP_MAPS_19(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18)                                                             \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16) m(17, a17)    \
            m(18, a18)
#define XDEV_PP_MAPC_20(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19)                                                        \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16), m(17, a17), m(18, a18), m(19, a19)
#define XDEV_PP_MAPS_20(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19)                                                        \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16) m(17, a17)    \
            m(18, a18) m(19, a19)
#define XDEV_PP_MAPC_21(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20)                                                   \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16), m(17, a17), m(18, a18), m(19, a19), m(20, a20)
#define XDEV_PP_MAPS_21(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20)                                                   \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16) m(17, a17)    \
            m(18, a18) m(19, a19) m(20, a20)
#define XDEV_PP_MAPC_22(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20, a21)                                              \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16), m(17, a17), m(18, a18), m(19, a19), m(20, a20), m(21, a21)
#define XDEV_PP_MAPS_22(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20, a21)                                              \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16) m(17, a17)    \
            m(18, a18) m(19, a19) m(20, a20) m(21, a21)
#define XDEV_PP_MAPC_23(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20, a21, a22)                                         \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16), m(17, a17), m(18, a18), m(19, a19), m(20, a20), m(21, a21), m(22, a22)
#define XDEV_PP_MAPS_23(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20, a21, a22)                                         \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16) m(17, a17)    \
            m(18, a18) m(19, a19) m(20, a20) m(21, a21) m(22, a22)
#define XDEV_PP_MAPC_24(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20, a21, a22, a23)                                    \
    m(0, a0), m(1, a1), m(2, a2), m(3, a3), m(4, a4), m(5, a5), m(6, a6), m(7, a7), m(8, a8),      \
        m(9, a9), m(10, a10), m(11, a11), m(12, a12), m(13, a13), m(14, a14), m(15, a15),          \
        m(16, a16), m(17, a17), m(18, a18), m(19, a19), m(20, a20), m(21, a21), m(22, a22),        \
        m(23, a23)
#define XDEV_PP_MAPS_24(m, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,   \
                        a16, a17, a18, a19, a20, a21, a22, a23)                                    \
    m(0, a0) m(1, a1) m(2, a2) m(3, a3) m(4, a4) m(5, a5) m(6, a6) m(7, a7) m(8, a8) m(9, a9)      \
        m(10, a10) m(11, a11) m(12, a12) m(13, a13) m(14, a14) m(15, a15) m(16, a16) m(17, a17)    \
            m(18, a18) m(19, a19) m(20, a20) m(21, a21) m(22, a22) m(23, a23)

#endif
