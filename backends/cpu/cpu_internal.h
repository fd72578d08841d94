/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_internal.h - types and functions shared by the CPU backend's files.
 *
 * Objects:
 * - xdev_cpu_device_t: one per XDEV_CPU_DEVICES; capacity accounting and the
 *   list of its live streams (for device synchronize and shutdown).
 * - xdev_cpu_stream_t: an in-order queue of ops run by its own worker thread
 *   (cpu_queue.c); the stream vtable around it is cpu_stream.c.
 * - xdev_cpu_event_t: a refcounted marker target (cpu_event.c).
 * - kernels (cpu_kernel.c, cpu_pool.c, cpu_fiber.c, cpu_pool.h): a launch is a
 *   host-function op whose blocks run on the device's worker pool; a fault
 *   stays on its stream until the next synchronize reports it. Run-time
 *   compilation with the system C compiler is cpu_compile.c.
 * Lock order: device mutex -> stream mutex -> event mutex. No thread ever
 * holds two stream or two event mutexes at once. */
#ifndef XDEV_CPU_INTERNAL_H
#define XDEV_CPU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "xdev/backend_support.h"

/* Largest XDEV_CPU_DEVICES accepted. */
#define XDEV_CPU_MAX_DEVICES 64 /* = XDEV_MAX_DEVICES, the core's per-type limit */
/* Alignment of device and host allocations (matches cudaMalloc's guarantee). */
#define XDEV_CPU_ALIGNMENT 256u

typedef struct xdev_cpu_event xdev_cpu_event_t;
typedef struct xdev_cpu_stream xdev_cpu_stream_t;

/* ------------------------------------------------------------------ ops */

typedef enum xdev_cpu_op_kind {
    XDEV_CPU_OP_HOST_FN = 0, /* fn(user) */
    XDEV_CPU_OP_COPY = 1,    /* memmove(dst, src, bytes) */
    XDEV_CPU_OP_SET = 2,     /* memset(dst, value, bytes) */
    XDEV_CPU_OP_RECORD = 3,  /* event record `seq` reached */
    XDEV_CPU_OP_WAIT = 4,    /* block the queue until event record `seq` is reached */
    XDEV_CPU_OP_FREE = 5,    /* release a device block (free_async) */
    XDEV_CPU_OP_JOB = 6,     /* run(user), then release(user) (a graph runs it again and again) */
} xdev_cpu_op_kind_t;

/* One queued op: a node of the stream's intrusive FIFO, recycled through the
 * stream's free list so that a steady-state enqueue does not call malloc. */
typedef struct xdev_cpu_op {
    struct xdev_cpu_op *next;
    xdev_cpu_op_kind_t kind;
    union {
        struct {
            xdev_host_fn_t fn;
            void *user;
        } host;
        struct {
            void (*run)(void *user);
            void (*release)(void *user);
            void *user;
        } job;
        struct {
            void *dst;
            const void *src;
            size_t bytes;
        } copy;
        struct {
            void *dst;
            int value;
            size_t bytes;
        } set;
        struct {
            int device;
            void *ptr;
        } free;
        struct {
            xdev_cpu_event_t *event; /* holds a reference until the op has run */
            uint64_t seq;
        } mark;
    } u;
} xdev_cpu_op_t;

/* Fault code of a launch that could not get a worker's shared memory or
 * fiber stacks (beyond the XDEV_KFAULT_* codes; reported as OUT_OF_MEMORY). */
#define XDEV_CPU_KFAULT_NOMEM 100
/* Fault code of a kernel whose code raised SIGSEGV, SIGBUS, SIGFPE or
 * SIGILL (cpu_fiber.c's handler caught it). */
#define XDEV_CPU_KFAULT_SIGNAL 101

/* A kernel fault waiting for its stream's next synchronize (cpu_kernel.c). */
typedef struct xdev_cpu_kfault {
    int code;              /* XDEV_KFAULT_* (xdev/kernel_abi.h) or XDEV_CPU_KFAULT_NOMEM */
    int block[3];          /* the block that faulted */
    size_t shared_cap;     /* its static shared bytes (XDEV_KFAULT_SHARED's message) */
    size_t dynamic_shared; /* the launch's dynamic shared bytes */
    int signo, sicode;     /* XDEV_CPU_KFAULT_SIGNAL: the signal and its si_code */
    void *addr;            /* and its si_addr */
    char kernel[128];      /* the kernel's name (truncated) */
} xdev_cpu_kfault_t;

/* -------------------------------------------------------------- streams */

struct xdev_cpu_stream {
    int device;
    int priority; /* stored only; scheduling is the OS's */
    bool is_default;
    atomic_int refs; /* owner + device synchronize pins */

    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* worker sleeps here when the queue is empty */
    pthread_cond_t idle_cv; /* synchronize sleeps here */
    /* Under mu: */
    xdev_cpu_op_t *head, *tail; /* pending ops not yet taken by the worker */
    xdev_cpu_op_t *free_ops;    /* recycled nodes */
    size_t free_count;
    bool started;  /* a worker thread was created and not yet joined */
    bool running;  /* that thread is still in its loop (it clears this, retiring or stopping) */
    bool sleeping; /* worker waits on work_cv */
    bool stopping; /* destroy asked the worker to exit */
    pthread_t thread;
    _Atomic bool discard; /* process exit: ops not started are dropped */
    /* Written under mu (enqueued) or by the worker (completed); read lock-free. */
    _Atomic uint64_t enqueued;
    _Atomic uint64_t completed;
    atomic_int sync_waiters;  /* threads in idle_cv; the worker signals only then */
    _Atomic uint64_t wake_at; /* smallest `completed` a sleeping waiter needs (else max) */
    /* The CPUs the worker last polled on and a synchronize polls on (-1:
     * none): a poll on the CPU of the thread it waits for yields at once
     * (cpu_queue.c). */
    atomic_int worker_cpu, sync_cpu;

    /* The device's list of live streams, under the device mutex. */
    xdev_cpu_stream_t *prev, *next;

    /* The first kernel fault since the last synchronize that reported one:
     * `fault` is written and read under mu; the flag is the lock-free check. */
    _Atomic bool fault_pending;
    xdev_cpu_kfault_t fault;

    /* The graph this stream records into (cpu_graph.c), under mu; NULL:
     * ops run. Read without the lock by xdev_cpu_stream_capturing. */
    _Atomic(struct xdev_cpu_graph *) capture;
};

/* A new stream, not yet on the device list, without a thread. NULL = out of
 * memory (error set). */
/* pthread_create with process-directed signals blocked in the new thread. */
int xdev_cpu_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

xdev_cpu_stream_t *xdev_cpu_stream_new(int device, int priority, bool is_default);

/* Take the stream's lock and a free op node, starting the worker if this is
 * the first op. On success the lock is held: fill the node and call
 * xdev_cpu_stream_push_unlock (or xdev_cpu_stream_cancel_unlock). On failure
 * the lock is released and the error set. */
xdev_status_t xdev_cpu_stream_begin_op(xdev_cpu_stream_t *s, xdev_cpu_op_t **op);
void xdev_cpu_stream_push_unlock(xdev_cpu_stream_t *s, xdev_cpu_op_t *op);
/* Run a host function, job (its run part only), copy or set op; false for
 * the other kinds, which the queue runs itself. */
bool xdev_cpu_op_exec(const xdev_cpu_op_t *op, int device);
/* Enqueue an op of kind proto->kind with proto's payload on `stream` of
 * `device` (copies, sets, host functions: ops that hold no reference). */
xdev_status_t xdev_cpu_stream_enqueue(int device, void *stream, const xdev_cpu_op_t *proto);
/* Enqueue a job on `stream` of `device`: run(user) when the stream reaches
 * it, then release(user); while the stream captures, the job is recorded
 * and release runs when the graph is destroyed. On failure nothing is
 * enqueued and the caller still owns user. */
xdev_status_t xdev_cpu_stream_enqueue_job(int device, void *stream, void (*run)(void *),
                                          void (*release)(void *), void *user);
/* Whether s records into a graph now (a job that owns per-stream state,
 * such as GEMM staging, takes its own instead). */
static inline bool xdev_cpu_stream_capturing(xdev_cpu_stream_t *s) {
    return atomic_load_explicit(&s->capture, memory_order_acquire) != NULL;
}
void xdev_cpu_stream_cancel_unlock(xdev_cpu_stream_t *s, xdev_cpu_op_t *op);

/* Ops enqueued so far (a synchronize target). */
uint64_t xdev_cpu_stream_enqueued(xdev_cpu_stream_t *s);
/* Block until `target` ops have completed. Fails (instead of deadlocking)
 * when called from the stream's own worker while target is not reached. */
xdev_status_t xdev_cpu_stream_wait_for(xdev_cpu_stream_t *s, uint64_t target);
/* True when everything enqueued so far has completed. */
bool xdev_cpu_stream_idle(xdev_cpu_stream_t *s);
/* The stream whose worker runs on this thread (NULL on other threads). */
xdev_cpu_stream_t *xdev_cpu_stream_self(void);

/* Finish pending work, stop and join the worker. The stream stays allocated
 * until its last reference goes. */
xdev_status_t xdev_cpu_stream_stop(xdev_cpu_stream_t *s);
void xdev_cpu_stream_retain(xdev_cpu_stream_t *s);
void xdev_cpu_stream_release(xdev_cpu_stream_t *s);

/* ------------------------------------------------------- parallel loops */

/* fn(ctx, begin, end) over [0, n) in chunks that are multiples of `grain`
 * (the last may be shorter), on the device's worker pool and the calling
 * thread (cpu_parallel.c); returns once every chunk ran. Inline when n <=
 * grain or the device has one thread. Call it from a stream's worker. */
typedef void (*xdev_cpu_range_fn)(void *ctx, size_t begin, size_t end);
void xdev_cpu_parallel_for(int device, size_t n, size_t grain, xdev_cpu_range_fn fn, void *ctx);

/* --------------------------------------------------------------- graphs */

struct xdev_cpu_graph;
/* Under s->mu, s capturing: the op joins s's graph (its node is the caller's to recycle). */
void xdev_cpu_graph_append(xdev_cpu_stream_t *s, const xdev_cpu_op_t *op);
/* Event record / wait on a capturing stream, and a wait that joins a stream
 * to a capture (cpu_graph.c). record_captured: under nothing. */
struct xdev_cpu_event;
xdev_status_t xdev_cpu_graph_record(xdev_cpu_stream_t *s, struct xdev_cpu_event *e);
/* A wait of s on e: XDEV_SUCCESS with *handled when the capture machinery
 * took it (a fork or join), else *handled false (an ordinary wait). */
xdev_status_t xdev_cpu_graph_wait(xdev_cpu_stream_t *s, struct xdev_cpu_event *e, bool *handled);
/* The event's captured record (cpu_event.c keeps it): graph, stream, and the
 * stream's op count in the capture at the record; cleared by a plain record. */
void xdev_cpu_event_set_captured(struct xdev_cpu_event *e, uint64_t graph_id,
                                 const xdev_cpu_stream_t *s, uint64_t count);
uint64_t xdev_cpu_event_captured(struct xdev_cpu_event *e, const xdev_cpu_stream_t **s,
                                 uint64_t *count);
extern const xdev_graph_vtable_t xdev_cpu_graph_vtable;

/* --------------------------------------------------------------- events */

/* Run by a worker when it reaches a record / wait op (consume no reference). */
void xdev_cpu_event_reached(xdev_cpu_event_t *e, uint64_t seq);
void xdev_cpu_event_wait_seq(xdev_cpu_event_t *e, uint64_t seq);
/* Drop one reference; the last one frees the event. */
void xdev_cpu_event_release(xdev_cpu_event_t *e);
/* Under the waiting stream's lock: the seq of the event's latest record
 * (0 = never recorded) and, if nonzero, a reference for the wait op. */
uint64_t xdev_cpu_event_capture(xdev_cpu_event_t *e);

/* -------------------------------------------------------------- devices */

/* The CPU backend's device context (xdev/backend.h's xdev_backend_device_t). */
typedef struct xdev_backend_device {
    int index;
    _Atomic size_t used; /* bytes handed out by malloc */
    pthread_mutex_t mu;
    xdev_cpu_stream_t *streams;                  /* live streams, under mu */
    _Atomic(xdev_cpu_stream_t *) default_stream; /* created lazily, under mu */
    _Atomic(struct xdev_cpu_pool *) pool;        /* kernel workers (cpu_pool.c), on first launch */
} xdev_cpu_device_t;

typedef struct xdev_cpu_state {
    const xdev_host_services_t *host;
    bool initialized;
    int count;
    size_t capacity; /* per device, bytes */
    int cores;
    int threads;         /* threads running a device's kernels (XDEV_CPU_THREADS) */
    size_t shared_limit; /* shared bytes per block (48 KiB) */
    int scan_isa;        /* XDEV_CPU_SCAN_ISA: 0 auto, 1 baseline (no vector lanes), 2 avx2 (lanes),
                            3 avx2-cached (lanes, outputs never streamed) */
    char name[256];      /* "CPU (<model>)" */
    xdev_cpu_device_t *devices;
} xdev_cpu_state_t;

extern xdev_cpu_state_t xdev_cpu_state;

/* cpu_telemetry.c: device.get_properties_ext, device.telemetry, device.arch_list. */
xdev_status_t xdev_cpu_get_properties_ext(xdev_cpu_device_t *dev,
                                          xdev_device_properties_ext_t *ext);
xdev_status_t xdev_cpu_telemetry(xdev_cpu_device_t *dev, xdev_telemetry_t what, uint64_t *value);
xdev_status_t xdev_cpu_arch_list(char *buf, size_t len);

/* Report through the host's set_error and return `status`. */
xdev_status_t xdev_cpu_error(xdev_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* `stream` as a CPU stream; NULL means the device's default stream. */
xdev_status_t xdev_cpu_stream_resolve(int device, void *stream, xdev_cpu_stream_t **out);

/* Strict parsers for XDEV_CPU_DEVICES and XDEV_CPU_MEMORY (value NULL =
 * unset); an error names the variable and its value. */
xdev_status_t xdev_cpu_parse_devices(const char *value, int *out);
xdev_status_t xdev_cpu_parse_memory(const char *value, size_t fallback, size_t *out);

/* "CPU (<model name>)" from /proc/cpuinfo, or "CPU". */
void xdev_cpu_read_model_name(char *buf, size_t len);
int xdev_cpu_online_cores(void);

/* What the CPU has, as the backend's code paths choose by it: a mask of
 * XDEV_CPU_FEAT_* bits, asked once (cpu_features.c) and safe from any thread.
 * 0 off x86. */
#define XDEV_CPU_FEAT_AVX2 (1u << 0)    /* AVX2 (the files' 32-byte vector paths) */
#define XDEV_CPU_FEAT_AVX512F (1u << 1) /* AVX-512 Foundation */
#define XDEV_CPU_FEAT_INTEL (1u << 2)   /* the vendor is Intel */
#define XDEV_CPU_FEAT_AMD (1u << 3)     /* the vendor is AMD */
unsigned xdev_cpu_features(void);

/* Give a device block back (its bytes stop counting against the capacity).
 * `ptr` was checked when the free was requested. */
void xdev_cpu_block_release(int device, void *ptr);

/* Vtables defined by the other files. */
extern const xdev_device_vtable_t xdev_cpu_device_vtable;
extern const xdev_stream_vtable_t xdev_cpu_stream_vtable;
extern const xdev_event_vtable_t xdev_cpu_event_vtable;
extern const xdev_memory_vtable_t xdev_cpu_memory_vtable;
extern const xdev_kernel_vtable_t xdev_cpu_kernel_vtable; /* cpu_kernel.c */

/* Kernels (cpu_kernel.c). XDEV_CPU_THREADS, read strictly at init into
 * xdev_cpu_state (an error names the variable), and the shared memory limit. */
xdev_status_t xdev_cpu_kernel_config(const char *(*get_env)(const char *), int count, int cores);
/* The stream's pending kernel fault, if any: reported (message set, status
 * XDEV_ERROR_LAUNCH_FAILURE) and cleared; else XDEV_SUCCESS. Called by stream
 * and device synchronize once the stream's work is done. */
xdev_status_t xdev_cpu_stream_take_fault(xdev_cpu_stream_t *s);
/* Process exit: kernel workers stop claiming blocks (before the streams
 * shut down, so a running launch ends early), then are joined (after). */
void xdev_cpu_pools_stop(void);
void xdev_cpu_pools_join(void);
/* Give SIGSEGV, SIGBUS, SIGFPE and SIGILL back the actions they had before
 * the first launch (cpu_fiber.c; at exit or unload, once the workers are
 * joined): after dlclose xdev's handlers would be unmapped code. */
void xdev_cpu_fault_handlers_remove(void);

/* Run-time compilation with the system C compiler (cpu_compile.c; XDEV_CC,
 * read at each call): the kernel table's compile_target and compile slots. */
xdev_status_t xdev_cpu_kernel_compile_target(xdev_cpu_device_t *dev, char *id, size_t len,
                                             xdev_image_format_t *format);
xdev_status_t xdev_cpu_kernel_compile(xdev_cpu_device_t *dev, const xdev_compile_desc_t *desc,
                                      xdev_compiled_t *out);

/* Wait for every stream of the device (device synchronize). */
xdev_status_t xdev_cpu_device_sync_streams(xdev_cpu_device_t *d);

/* Process exit (the backend's shutdown): every worker finishes the op it is
 * running, drops the rest and is joined, within a bound. */
void xdev_cpu_streams_shutdown(void);

/* Exit variant of xdev_cpu_stream_stop: the worker drops what has not
 * started and ends; join it (or, when a thread destroying the stream is
 * joining it, wait for it to leave its loop) at most until `deadline`
 * (CLOCK_REALTIME). Never frees. False: the worker did not end in time, or
 * it is the calling thread (exit() inside a host function). */
bool xdev_cpu_stream_abandon(xdev_cpu_stream_t *s, const struct timespec *deadline);

#endif
