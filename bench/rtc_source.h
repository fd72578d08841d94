/* SPDX-License-Identifier: Apache-2.0 */
/* bench/rtc_source.h - the kernel source the run-time compile benchmarks
 * compile (kernel_rtc_bench, gpu/nvrtc_bench): one text for every side. */
#ifndef XDEV_BENCH_RTC_SOURCE_H
#define XDEV_BENCH_RTC_SOURCE_H

static const char xdev_bench_rtc_source[] =
    "#include <xdev/kernel_lang.h>\n"
    "XDEV_KERNEL(rtc_bench, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),\n"
    "            XDEV_PTR(float, y)) {\n"
    "    long i = xdev_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + y[i] + (float)SALT;\n"
    "}\n";

#endif
