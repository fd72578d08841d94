/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_clock.h - the CPU backend's one clock: CLOCK_MONOTONIC in
 * nanoseconds, for timing events, the pool's and the queues' bounded spins
 * and the compiler's time limit (one helper instead of a copy in each). */
#ifndef XDEV_CPU_CLOCK_H
#define XDEV_CPU_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t xdev_cpu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
