/* xdev/backend.h - the backend ABI: what a backend (built-in or plugin) provides.
 *
 * A plugin is a shared module libxdev-<name>.so exporting one function,
 * XDEV_BACKEND_ENTRY_SYMBOL, that returns an xdev_backend_api_t. The core
 * refuses a plugin whose abi_major differs from its own and accepts an older
 * minor: every table starts with its own size, slots are only ever appended,
 * and a slot past the end of a shorter table reads as NULL (XDEV_BACKEND_SLOT).
 *
 * Conventions for every slot:
 * - device indices are the backend's physical indices (the core applies
 *   XDEV_VISIBLE_DEVICES) and are already validated by the core;
 * - a stream handle is the backend's native stream (cudaStream_t, ...), an
 *   event handle its native event; the core wraps them in public objects;
 * - a failing slot reports through xdev_host_services_t.set_error and returns
 *   that status; slots never abort, exit or print.
 * Optional tables (blas, fft, rng, comm, trace, ipc) may be NULL; the core
 * then falls back or reports XDEV_ERROR_NOT_SUPPORTED naming the backend. */
#ifndef XDEV_BACKEND_H
#define XDEV_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xdev/device.h"
#include "xdev/stream.h"
#include "xdev/system.h"
#include "xdev/blas.h"
#include "xdev/fft.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XDEV_BACKEND_ABI_MAJOR 1u
/* Minor 1: memory.malloc_async/free_async; 2: device.list_processes/utilization. */
#define XDEV_BACKEND_ABI_MINOR 2u
#define XDEV_BACKEND_ENTRY_SYMBOL "xdev_backend_entry"

/* True when `table` (which starts with its size) is long enough to hold `slot`. */
#define XDEV_BACKEND_HAS_SLOT(table, slot)                                                         \
    ((table) != NULL &&                                                                            \
     (table)->size >= offsetof(__typeof__(*(table)), slot) + sizeof((table)->slot))
/* The slot, or NULL when the table is too short (older minor) or the slot unset. */
#define XDEV_BACKEND_SLOT(table, slot) (XDEV_BACKEND_HAS_SLOT(table, slot) ? (table)->slot : NULL)

/* What the core offers a backend; passed to init. */
typedef struct xdev_host_services {
    size_t size;
    uint32_t abi_major;
    uint32_t abi_minor;
    /* Set this thread's error message (printf format) and return `status`.
     * The core prefixes the public call's name. */
    xdev_status_t (*set_error)(xdev_status_t status, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
    /* getenv through the core, so tests and embedders see one environment. */
    const char *(*get_env)(const char *name);
} xdev_host_services_t;

typedef struct xdev_device_vtable {
    size_t size;
    /* Physical devices the backend sees (0 is fine: the backend is then unusable). */
    xdev_status_t (*count)(int *count);
    xdev_status_t (*get_properties)(int device, xdev_device_properties_t *props);
    /* Wait for all work on the device. */
    xdev_status_t (*synchronize)(int device);
    xdev_status_t (*can_access_peer)(int device, int peer, bool *out);
    xdev_status_t (*enable_peer_access)(int device, int peer);
    /* Optional (minor 2), from the vendor's management library (NVML): the
     * processes using the device (fill out[0 .. min(cap, total)), *count =
     * total) and its utilisation. */
    xdev_status_t (*list_processes)(int device, xdev_gpu_process_t *out, size_t cap, size_t *count);
    xdev_status_t (*utilization)(int device, xdev_device_utilization_t *out);
} xdev_device_vtable_t;

typedef struct xdev_stream_vtable {
    size_t size;
    /* priority is XDEV_STREAM_PRIORITY_NORMAL or XDEV_STREAM_PRIORITY_HIGH. */
    xdev_status_t (*create)(int device, int priority, void **out);
    /* Finish pending work, then release. */
    xdev_status_t (*destroy)(int device, void *stream);
    /* The device's default stream (owned by the backend; may be NULL for CUDA's legacy stream). */
    xdev_status_t (*get_default)(int device, void **out);
    /* XDEV_SUCCESS when idle, XDEV_ERROR_NOT_READY when work is pending. */
    xdev_status_t (*query)(int device, void *stream);
    xdev_status_t (*synchronize)(int device, void *stream);
    /* Later work on `stream` waits for the event's last record. */
    xdev_status_t (*wait_event)(int device, void *stream, void *event);
    xdev_status_t (*launch_host_func)(int device, void *stream, xdev_host_fn_t fn, void *user);
} xdev_stream_vtable_t;

typedef struct xdev_event_vtable {
    size_t size;
    /* flags are XDEV_EVENT_* from xdev/event.h. */
    xdev_status_t (*create)(int device, unsigned flags, void **out);
    xdev_status_t (*destroy)(int device, void *event);
    xdev_status_t (*record)(int device, void *event, void *stream);
    /* XDEV_SUCCESS when reached, XDEV_ERROR_NOT_READY otherwise. */
    xdev_status_t (*query)(int device, void *event);
    xdev_status_t (*synchronize)(int device, void *event);
    /* Both events recorded, complete and created with timing (checked by the core). */
    xdev_status_t (*elapsed_time)(int device, void *start, void *end, float *ms);
} xdev_event_vtable_t;

typedef enum xdev_copy_kind {
    XDEV_COPY_HOST_TO_HOST = 0,
    XDEV_COPY_HOST_TO_DEVICE = 1,
    XDEV_COPY_DEVICE_TO_HOST = 2,
    XDEV_COPY_DEVICE_TO_DEVICE = 3, /* same device */
    XDEV_COPY_PEER = 4,             /* two devices of this backend */
} xdev_copy_kind_t;

/* One copy. Host sides have device -1; `*_pinned` says a host side came from
 * this backend's host_alloc. Fields are only ever appended. */
typedef struct xdev_copy_desc {
    size_t size;
    void *dst;
    const void *src;
    size_t bytes;
    xdev_copy_kind_t kind;
    int dst_device;
    int src_device;
    bool dst_pinned;
    bool src_pinned;
} xdev_copy_desc_t;

typedef struct xdev_memory_vtable {
    size_t size;
    xdev_status_t (*malloc)(int device, size_t bytes, void **out);
    xdev_status_t (*free)(int device, void *ptr);
    /* Page-locked host memory. */
    xdev_status_t (*host_alloc)(size_t bytes, void **out);
    xdev_status_t (*host_free)(void *ptr);
    /* Enqueue a copy on `stream` of `device` (the device side, or the
     * destination's device for peer copies). */
    xdev_status_t (*memcpy_async)(const xdev_copy_desc_t *copy, int device, void *stream);
    xdev_status_t (*memset_async)(int device, void *dst, int value, size_t bytes, void *stream);
    xdev_status_t (*mem_get_info)(int device, size_t *free_bytes, size_t *total_bytes);
    /* Optional stream-ordered allocation (cudaMallocAsync), used with
     * XDEV_ALLOC_CONF=backend:async: the memory is usable by work queued on
     * `stream` from now on, and free_async releases it once `stream` reaches
     * the free. */
    xdev_status_t (*malloc_async)(int device, size_t bytes, void *stream, void **out);
    xdev_status_t (*free_async)(int device, void *ptr, void *stream);
} xdev_memory_vtable_t;

/* Optional: profiler markers (NVTX, roctx). msg is never NULL. */
typedef struct xdev_trace_vtable {
    size_t size;
    xdev_status_t (*mark)(const char *msg);
    xdev_status_t (*range_push)(const char *msg);
    xdev_status_t (*range_pop)(void);
} xdev_trace_vtable_t;

/* Bytes of a backend's native IPC handle (cudaIpcMemHandle_t, cudaIpcEventHandle_t). */
#define XDEV_IPC_NATIVE_SIZE 64

/* Optional: sharing memory and events between processes. `base` is the
 * start of a raw allocation from memory.malloc; handles are
 * XDEV_IPC_NATIVE_SIZE opaque bytes; the core adds offsets and devices. */
typedef struct xdev_ipc_vtable {
    size_t size;
    xdev_status_t (*get_mem_handle)(int device, void *base, void *handle);
    /* Map another process's allocation for use on `device`. */
    xdev_status_t (*open_mem_handle)(int device, const void *handle, void **base);
    xdev_status_t (*close_mem_handle)(int device, void *base);
    /* `event` was created with XDEV_EVENT_INTERPROCESS. */
    xdev_status_t (*get_event_handle)(int device, void *event, void *handle);
    /* An event destroyed with event.destroy like any other. */
    xdev_status_t (*open_event_handle)(int device, const void *handle, void **event);
} xdev_ipc_vtable_t;

/* ---------------------------------------------------------------- blas
 * One GEMM or level-1 call, fully described (cuBLAS maps 1:1: gemm ->
 * cublas{S,D,C,Z}gemm / cublasGemmEx for f16/bf16 / *StridedBatched when
 * batch > 1). The core has validated sizes, leading dimensions and
 * operands (device memory of `device` or of peers) before calling; the
 * slot enqueues on `stream` and returns. Descriptors start with their size
 * and only ever grow at the end. */

/* xdev_blas_gemm_desc_t.flags */
#define XDEV_BLAS_FLAG_ALLOW_TF32 (1u << 0) /* f32 may use TF32 tensor cores */

typedef struct xdev_blas_gemm_desc {
    size_t size;
    xdev_dtype_t dtype;
    xdev_blas_op_t transa, transb;
    int64_t m, n, k;
    double alpha, alpha_imag; /* imag parts used by complex dtypes only */
    double beta, beta_imag;   /* beta == 0 (and imag 0): C is not read */
    const void *a;
    int64_t lda, stride_a; /* strides in elements, used when batch > 1 */
    const void *b;
    int64_t ldb, stride_b;
    void *c;
    int64_t ldc, stride_c;
    int64_t batch;  /* >= 1 */
    uint32_t flags; /* XDEV_BLAS_FLAG_* */
    int device;     /* physical */
    void *stream;   /* native */
} xdev_blas_gemm_desc_t;

/* axpy: y = alpha x + y;  dot: *result = x . y;  nrm2: *result = ||x||;
 * scal: x = alpha x. `result` is device memory (cuBLAS pointer mode device). */
typedef struct xdev_blas_vec_desc {
    size_t size;
    xdev_dtype_t dtype;
    int64_t n;
    double alpha;
    const void *x; /* scal writes it (cast away const) */
    int64_t incx;
    void *y; /* axpy writes it, dot reads it */
    int64_t incy;
    void *result;
    int device;
    void *stream;
} xdev_blas_vec_desc_t;

typedef struct xdev_blas_vtable {
    size_t size;
    /* Bit (1u << dtype) set for each xdev_dtype_t `routine` runs with on
     * `device`; a missing bit makes the core report XDEV_ERROR_NOT_SUPPORTED. */
    xdev_status_t (*query_dtypes)(int device, xdev_blas_routine_t routine, uint32_t *mask);
    xdev_status_t (*gemm)(const xdev_blas_gemm_desc_t *desc);
    xdev_status_t (*axpy)(const xdev_blas_vec_desc_t *desc);
    xdev_status_t (*dot)(const xdev_blas_vec_desc_t *desc);
    xdev_status_t (*nrm2)(const xdev_blas_vec_desc_t *desc);
    xdev_status_t (*scal)(const xdev_blas_vec_desc_t *desc);
} xdev_blas_vtable_t;

/* ---------------------------------------------------------------- fft
 * cuFFT's model: a plan (cufftPlanMany / cufftXtMakePlanMany with auto
 * allocation off) for a layout, executed with a direction on a stream with a
 * caller-provided work area (cufftSetWorkArea). The core owns plan caching
 * (per device LRU) and allocates each exec's work area from the caching
 * allocator on the exec's stream. */

/* A plan's layout, normalised by the core: every embedding, stride and
 * distance filled in (no zeros), inembed[0]/onembed[0] = the logical size of
 * dimension 0 on that side. */
typedef struct xdev_fft_plan_desc {
    size_t size;
    xdev_fft_type_t type;
    xdev_fft_precision_t precision;
    int rank;
    int64_t n[XDEV_FFT_MAX_RANK];
    int64_t batch;
    int64_t inembed[XDEV_FFT_MAX_RANK];
    int64_t istride, idist;
    int64_t onembed[XDEV_FFT_MAX_RANK];
    int64_t ostride, odist;
    int device; /* physical */
} xdev_fft_plan_desc_t;

typedef struct xdev_fft_exec_desc {
    size_t size;
    void *plan;
    void *in; /* c2r may overwrite it */
    void *out;
    xdev_fft_direction_t direction; /* r2c: FORWARD, c2r: INVERSE */
    double scale;                   /* multiply the output by this (1.0 = unscaled) */
    void *work;                     /* work_size bytes from plan_create, or NULL if 0 */
    size_t work_size;
    int device;   /* physical */
    void *stream; /* native */
} xdev_fft_exec_desc_t;

typedef struct xdev_fft_vtable {
    size_t size;
    /* Make a plan usable for both directions, in or out of place, on any
     * stream of desc->device; *work_size = bytes each exec needs. */
    xdev_status_t (*plan_create)(const xdev_fft_plan_desc_t *desc, void **plan, size_t *work_size);
    /* The core calls this when the plan leaves the cache, after waiting for
     * the device (device.synchronize), so no exec with it is still queued. */
    xdev_status_t (*plan_destroy)(int device, void *plan);
    /* Enqueue one transform. The core serialises calls on one plan. */
    xdev_status_t (*exec)(const xdev_fft_exec_desc_t *desc);
} xdev_fft_vtable_t;

/* ---------------------------------------------------------------- rng
 * One fill of `count` elements from a Philox4x32-10 word stream. The layout
 * (xdev/rng.h) and the exact arithmetic (xdev/support/philox.h, shared by every
 * backend) make element i a pure function of (seed, offset + i * words per
 * element), so every backend writes the same bits. The core has validated
 * the parameters and the output (device memory of `device` with room for
 * `count` elements) and reserved the words the fill consumes; the slot
 * enqueues on `stream` and returns. */
typedef enum xdev_rng_fill_kind {
    XDEV_RNG_FILL_UNIFORM = 0,   /* [0, 1) */
    XDEV_RNG_FILL_NORMAL = 1,    /* mean + std * z, z from Box-Muller */
    XDEV_RNG_FILL_INTEGERS = 2,  /* low + [0, range) */
    XDEV_RNG_FILL_BERNOULLI = 3, /* 1.0f when the word is < threshold, else 0.0f */
} xdev_rng_fill_kind_t;

/* Element format: 2 words per element for F64 and I64, else 1. */
typedef enum xdev_rng_format {
    XDEV_RNG_FORMAT_F32 = 0,
    XDEV_RNG_FORMAT_F64 = 1,
    XDEV_RNG_FORMAT_I32 = 2,
    XDEV_RNG_FORMAT_I64 = 3,
} xdev_rng_format_t;

typedef struct xdev_rng_fill_desc {
    size_t size;
    xdev_rng_fill_kind_t kind;
    xdev_rng_format_t format; /* UNIFORM, NORMAL: F32/F64; INTEGERS: I32/I64; BERNOULLI: F32 */
    void *out;
    uint64_t count;     /* elements, >= 1 */
    uint64_t seed;      /* the Philox key */
    uint64_t offset;    /* word position of element 0 (a multiple of the words per element) */
    double mean, std;   /* NORMAL (F32 fills use (float)mean, (float)std) */
    int64_t low;        /* INTEGERS */
    uint64_t range;     /* INTEGERS: 1 .. 2^32 (I32), 1 .. 2^64 - 1 (I64) */
    uint64_t threshold; /* BERNOULLI: 0 .. 2^32 */
    int device;         /* physical */
    void *stream;       /* native */
} xdev_rng_fill_desc_t;

typedef struct xdev_rng_vtable {
    size_t size;
    xdev_status_t (*fill)(const xdev_rng_fill_desc_t *desc);
} xdev_rng_vtable_t;

/* Optional tables, defined by the issues that fill them. */
struct xdev_rng_vtable;
struct xdev_comm_vtable;
struct xdev_trace_vtable;
struct xdev_ipc_vtable;

typedef struct xdev_backend_api {
    size_t size; /* sizeof(xdev_backend_api_t) as the backend was built */
    uint32_t abi_major;
    uint32_t abi_minor;
    const char *name; /* "cpu", "cuda", "hip": the device type's name */
    xdev_device_type_t type;
    /* Called once before any other slot. A failure makes the backend
     * unusable; its message becomes the backend's reason. */
    xdev_status_t (*init)(const xdev_host_services_t *host);
    /* Release what init made; optional. */
    void (*shutdown)(void);
    const xdev_device_vtable_t *device;
    const xdev_stream_vtable_t *stream;
    const xdev_event_vtable_t *event;
    const xdev_memory_vtable_t *memory;
    const struct xdev_blas_vtable *blas;   /* optional */
    const struct xdev_fft_vtable *fft;     /* optional */
    const struct xdev_rng_vtable *rng;     /* optional */
    const struct xdev_comm_vtable *comm;   /* optional */
    const struct xdev_trace_vtable *trace; /* optional */
    const struct xdev_ipc_vtable *ipc;     /* optional */
} xdev_backend_api_t;

/* The plugin's exported entry point (named XDEV_BACKEND_ENTRY_SYMBOL). */
typedef const xdev_backend_api_t *(*xdev_backend_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
