/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_pool.h - kernel launches on the CPU: what the launch op
 * (cpu_kernel.c), the device's worker pool (cpu_pool.c) and the per-thread
 * block executor (cpu_fiber.c) share. The pool runs the application's
 * kernels and the backend's own loops alike (cpu_parallel.c: fills,
 * conversions, random fills, large copies, the primitives; FFTW's threads).
 *
 * A launch is one host-function op on its stream. When the stream's worker
 * runs it, the grid's blocks are handed out in chunks from an atomic
 * counter to the device's pool workers and to the stream worker itself,
 * which waits until every block ran (so the stream stays in order); a
 * small grid of a kernel that ran fast alone runs on the stream worker
 * only (cpu_pool.c says when). Each
 * thread runs its blocks through its own executor: the block's shared
 * memory and, for kernels declared XDEV_KERNEL_SYNC, one fiber per
 * work-item. */
#ifndef XDEV_CPU_POOL_H
#define XDEV_CPU_POOL_H

#include "cpu/cpu_internal.h"
#include "xdev/kernel_abi.h"

/* Work-items per block at most (the device's max_threads_per_block). */
#define XDEV_CPU_MAX_BLOCK_ITEMS XDEV_KERNEL_MAX_BLOCK_ITEMS
/* Fault code: xdev_barrier() in an XDEV_KERNEL_BLOCK kernel (its regions
 * meet at xdev_block_sync(); cpu_internal.h has the other backend codes). */
#define XDEV_CPU_KFAULT_BARRIER_REGION 102
/* Shared memory per block (static + dynamic), as CUDA gives by default. */
#define XDEV_CPU_DEFAULT_SHARED_BYTES XDEV_KERNEL_DEFAULT_SHARED_BYTES

typedef struct xdev_cpu_pool xdev_cpu_pool_t;
typedef struct xdev_cpu_exec xdev_cpu_exec_t;

/* One launch, from its enqueue until its op has run. The argument bytes are
 * copied into `bytes` (16-aligned each); args[i] points at argument i.
 * The launching thread writes the first cache line and the arguments; the
 * threads that run the launch write only the second (its run's state, set
 * afresh by each run): a record reused by the same stream keeps that line
 * in its worker's cache, and the launching thread never waits for it. */
typedef struct xdev_cpu_launch {
    const xdev_kernel_sig_t *sig;
    xdev_cpu_stream_t *stream;
    uint64_t total;        /* blocks in the grid */
    size_t dynamic_shared; /* bytes per block */
    int grid[3];
    int block[3];
    int device;
    int items; /* block[0] * block[1] * block[2] */
    /* The run's state (the stream worker's run_launch sets it). */
    _Alignas(64) uint64_t chunk;   /* blocks per claim */
    _Atomic uint64_t next_block;   /* first block not yet claimed (linear, x fastest) */
    atomic_int seats;              /* pool workers that may still join (cpu_pool.c) */
    atomic_int fault;              /* first fault code, 0 = none */
    int fault_block[3];            /* written by the thread whose code won */
    size_t fault_cap;              /* its static shared capacity */
    int fault_signo, fault_sicode; /* XDEV_CPU_KFAULT_SIGNAL: the signal */
    void *fault_addr;              /* and its si_addr */
    _Alignas(64) size_t room;      /* bytes[] has room for this many (cpu_kernel.c's records) */
    void *args[XDEV_KERNEL_MAX_PARAMS];
    _Alignas(16) unsigned char bytes[];
} xdev_cpu_launch_t;

/* Record `code` as the launch's fault unless one is recorded already (the
 * first one wins); blocks not yet started are skipped from then on. */
void xdev_cpu_launch_fail(xdev_cpu_launch_t *launch, int code, const int block[3], size_t cap);

/* Record a fault signal the kernel's code raised in `block` (si_signo,
 * si_code, si_addr) as the launch's fault, as xdev_cpu_launch_fail. */
void xdev_cpu_launch_fail_signal(xdev_cpu_launch_t *launch, const int block[3], int signo,
                                 int sicode, void *addr);
/* Install the process's SIGSEGV, SIGBUS, SIGFPE and SIGILL handlers (once,
 * at the first launch; cpu_fiber.c): from then on a kernel's fault fails its
 * launch. False when they could not be installed (faults then end the
 * process, as before). */
bool xdev_cpu_fault_handlers_install(void);

/* --------------------------------------------------------- pool (cpu_pool.c) */

/* The device's pool, created on first use; NULL = out of memory (error set). */
xdev_cpu_pool_t *xdev_cpu_pool_get(xdev_cpu_device_t *d);
/* Run every block of `launch` on the pool's workers and the calling thread;
 * returns once none is running (all ran, or were skipped after a fault). */
void xdev_cpu_pool_run(xdev_cpu_pool_t *pool, xdev_cpu_launch_t *launch);

/* ------------------------------------------------- executor (cpu_fiber.c) */

/* The calling thread's executor, made on first use and freed when the
 * thread ends; NULL = out of memory. */
xdev_cpu_exec_t *xdev_cpu_exec_self(void);
/* Run blocks [first, end) of `launch` (linear indices, x fastest), stopping
 * early once the launch has a fault. */
void xdev_cpu_exec_blocks(xdev_cpu_exec_t *ex, xdev_cpu_launch_t *launch, uint64_t first,
                          uint64_t end);

#endif
