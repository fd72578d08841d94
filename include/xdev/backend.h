/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/backend.h - the backend ABI (version XDEV_BACKEND_ABI_MAJOR.MINOR
 * below): what a backend (built-in or plugin) provides.
 *
 * A plugin is a shared module libxdev-<name>.so exporting one function,
 * XDEV_BACKEND_ENTRY_SYMBOL, that returns an xdev_backend_api_t. A built-in
 * backend hands the same table to xdev_backend_register (below). The core
 * refuses a table whose abi_major differs from its own and accepts an older
 * minor: every table starts with its own size, slots are only ever appended,
 * and a slot past the end of a shorter table reads as NULL (XDEV_BACKEND_SLOT).
 *
 * The tables' slots, what each does, whether it is required and what the
 * core does when an optional one is NULL are listed once, in
 * xdev/backend_slots.h; the tables below are generated from that list.
 *
 * Device contexts: the core opens each visible device once (device.open)
 * and passes the backend's own context (xdev_backend_device_t, a struct the
 * backend defines) as the FIRST argument of every slot that concerns that
 * device (descriptor slots carry it in the descriptor's `device` field), so
 * a backend never re-indexes global arrays or switches devices.
 *
 * Conventions for every slot:
 * - arguments are validated by the core (devices exist, pointers are live
 *   allocations of the right device, sizes fit);
 * - a stream handle is the backend's native stream (cudaStream_t, ...), an
 *   event handle its native event; the core wraps them in public objects;
 * - a failing slot reports through xdev_host_services_t (set_error, or
 *   set_vendor_error with the vendor's own error name) and returns that
 *   status; slots never abort, exit or print.
 * Optional tables (blas, fft, rng, trace, ipc, ops, comm, kernel, graph,
 * prim) and optional
 * slots may be NULL (never a stub returning NOT_SUPPORTED: that would
 * disable the core's fallbacks); the core then falls back or reports
 * XDEV_ERROR_NOT_SUPPORTED naming the backend and the slot. A required slot
 * left NULL makes the core refuse the backend when it loads, naming it.
 * xdev/backend_support.h has what a backend needs to honour the contract
 * bit for bit (Philox, half floats, error helpers); backends/null/ is the
 * skeleton to start a new backend from. */
#ifndef XDEV_BACKEND_H
#define XDEV_BACKEND_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xdev/device.h"
#include "xdev/stream.h"
#include "xdev/system.h"
#include "xdev/blas.h"
#include "xdev/fft.h"
#include "xdev/kernel.h"
#include "xdev/primitives.h"
#include "xdev/backend_slots.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XDEV_BACKEND_ABI_MAJOR 3u
/* The history of the ABI is in CHANGELOG.md. */
#define XDEV_BACKEND_ABI_MINOR 10u
#define XDEV_BACKEND_ENTRY_SYMBOL "xdev_backend_entry"

/* True when `table` (which starts with its size) is long enough to hold `slot`. */
#define XDEV_BACKEND_HAS_SLOT(table, slot)                                                         \
    ((table) != NULL &&                                                                            \
     (table)->size >= offsetof(__typeof__(*(table)), slot) + sizeof((table)->slot))
/* The slot, or NULL when the table is too short (older minor) or the slot unset. */
#define XDEV_BACKEND_SLOT(table, slot) (XDEV_BACKEND_HAS_SLOT(table, slot) ? (table)->slot : NULL)

/* A backend's per-device state, defined by each backend (opaque to the core). */
typedef struct xdev_backend_device xdev_backend_device_t;

/* What the core offers a backend; passed to init. */
typedef struct xdev_host_services {
    size_t size;
    uint32_t abi_major;
    uint32_t abi_minor;
    /* Set this thread's error message (printf format) and return `status`.
     * The core prefixes the public call's name. */
    xdev_status_t (*set_error)(xdev_status_t status, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
    /* The same with a va_list, for a backend's own varargs helper. */
    xdev_status_t (*set_error_v)(xdev_status_t status, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));
    /* A failed vendor call, formatted once into the message as
     * "<what>: <vendor_name>: <vendor_text>" (what_fmt printf-style), e.g.
     * "cudaMalloc(1024 bytes): cudaErrorMemoryAllocation: out of memory". */
    xdev_status_t (*set_vendor_error)(xdev_status_t status, const char *vendor_name,
                                      const char *vendor_text, const char *what_fmt, va_list ap)
        __attribute__((format(printf, 4, 0)));
    /* getenv through the core, so tests and embedders see one environment. */
    const char *(*get_env)(const char *name);
} xdev_host_services_t;

typedef struct xdev_device_vtable {
    size_t size;
    XDEV_SLOTS_DEVICE(XDEV_SLOT_FIELD)
} xdev_device_vtable_t;

typedef struct xdev_stream_vtable {
    size_t size;
    XDEV_SLOTS_STREAM(XDEV_SLOT_FIELD)
} xdev_stream_vtable_t;

typedef struct xdev_event_vtable {
    size_t size;
    XDEV_SLOTS_EVENT(XDEV_SLOT_FIELD)
} xdev_event_vtable_t;

typedef enum xdev_copy_kind {
    XDEV_COPY_HOST_TO_HOST = 0,
    XDEV_COPY_HOST_TO_DEVICE = 1,
    XDEV_COPY_DEVICE_TO_HOST = 2,
    XDEV_COPY_DEVICE_TO_DEVICE = 3, /* same device */
    XDEV_COPY_PEER = 4,             /* two devices of this backend */
} xdev_copy_kind_t;

/* One copy. Host sides have a NULL device; `*_pinned` says a host side came
 * from this backend's host_alloc. Fields are only ever appended. */
typedef struct xdev_copy_desc {
    size_t size;
    void *dst;
    const void *src;
    size_t bytes;
    xdev_copy_kind_t kind;
    xdev_backend_device_t *dst_device;
    xdev_backend_device_t *src_device;
    bool dst_pinned;
    bool src_pinned;
} xdev_copy_desc_t;

typedef struct xdev_memory_vtable {
    size_t size;
    XDEV_SLOTS_MEMORY(XDEV_SLOT_FIELD)
} xdev_memory_vtable_t;

typedef struct xdev_trace_vtable {
    size_t size;
    XDEV_SLOTS_TRACE(XDEV_SLOT_FIELD)
} xdev_trace_vtable_t;

/* Bytes of a backend's native IPC handle (cudaIpcMemHandle_t, cudaIpcEventHandle_t). */
#define XDEV_IPC_NATIVE_SIZE 64

/* Optional: sharing memory and events between processes. `base` is the
 * start of a raw allocation from memory.malloc; handles are
 * XDEV_IPC_NATIVE_SIZE opaque bytes; the core adds offsets and devices. */
typedef struct xdev_ipc_vtable {
    size_t size;
    XDEV_SLOTS_IPC(XDEV_SLOT_FIELD)
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
    int64_t batch;                 /* >= 1 */
    uint32_t flags;                /* XDEV_BLAS_FLAG_* */
    xdev_backend_device_t *device; /* the operands' device */
    void *stream;                  /* native */
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
    xdev_backend_device_t *device;
    void *stream;
} xdev_blas_vec_desc_t;

typedef struct xdev_blas_vtable {
    size_t size;
    XDEV_SLOTS_BLAS(XDEV_SLOT_FIELD)
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
    xdev_backend_device_t *device;
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
    xdev_backend_device_t *device;
    void *stream; /* native */
} xdev_fft_exec_desc_t;

typedef struct xdev_fft_vtable {
    size_t size;
    XDEV_SLOTS_FFT(XDEV_SLOT_FIELD)
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
    xdev_backend_device_t *device;
    void *stream; /* native */
    /* Since ABI 3.2, set only in a capture: device memory holding two
     * uint64_t, the Philox key and a base offset, written before each replay;
     * the fill then uses key = philox_state[0] and element 0's word position
     * philox_state[1] + offset (read when the fill runs, not when enqueued),
     * ignoring `seed`. NULL: seed and offset as above. */
    const uint64_t *philox_state;
} xdev_rng_fill_desc_t;

typedef struct xdev_rng_vtable {
    size_t size;
    XDEV_SLOTS_RNG(XDEV_SLOT_FIELD)
} xdev_rng_vtable_t;

/* ---------------------------------------------------------------- ops (ABI 2.1)
 * Typed fills and conversions (xdev/ops.h). The core has validated the
 * operands (device memory of this device, long enough, no overlap but an
 * in-place same-size convert) and turned the fill value into one element's
 * bytes; the slots enqueue on `stream` and return. A conversion must give
 * the bits of xdev/support/convert.h's xdev_cvt_convert1 for every element. */
typedef struct xdev_ops_vtable {
    size_t size;
    XDEV_SLOTS_OPS(XDEV_SLOT_FIELD)
} xdev_ops_vtable_t;

/* Optional: communicators (ABI 2.4), for backends whose device memory the
 * host cannot address (the core runs the host-memory ones itself). A
 * backend communicator is one rank; the core has checked every argument
 * (xdev/communicator.h) before a slot is called. */
typedef enum xdev_collective_kind {
    XDEV_COLL_ALL_REDUCE = 0,
    XDEV_COLL_BROADCAST = 1,
    XDEV_COLL_REDUCE = 2,
    XDEV_COLL_ALL_GATHER = 3,
    XDEV_COLL_REDUCE_SCATTER = 4,
    XDEV_COLL_SEND = 5,
    XDEV_COLL_RECV = 6,
} xdev_collective_kind_t;

/* One rank's part of a collective, with xdev/communicator.h's meaning of
 * count (all_gather: per rank sent; reduce_scatter: per rank received). */
typedef struct xdev_collective_desc {
    size_t size; /* sizeof(xdev_collective_desc_t) */
    xdev_collective_kind_t kind;
    const void *send;
    void *recv;
    size_t count;
    xdev_dtype_t dtype;
    int op;   /* xdev_reduce_op_t, for the reducing kinds */
    int root; /* root (broadcast, reduce) or peer (send, recv) */
} xdev_collective_desc_t;

typedef struct xdev_comm_vtable {
    size_t size;
    XDEV_SLOTS_COMM(XDEV_SLOT_FIELD)
} xdev_comm_vtable_t;

/* Bytes of a backend's group id (NCCL's ncclUniqueId). */
#define XDEV_COMM_NATIVE_ID_BYTES 128

/* One launch (kernel.launch). args[i] points at argument i's arg_sizes[i]
 * bytes, as cuLaunchKernel's kernelParams. */
typedef struct xdev_launch_desc {
    size_t size;    /* sizeof(xdev_launch_desc_t) */
    void *function; /* from kernel.get_function */
    xdev_dim3_t grid, block;
    size_t shared_bytes; /* dynamic */
    int nargs;
    void *const *args;
    const size_t *arg_sizes;
    const char *name; /* the kernel's, for messages */
} xdev_launch_desc_t;

/* Run-time compilation (kernel.compile). */
typedef struct xdev_compile_desc {
    size_t size;                /* sizeof(xdev_compile_desc_t) */
    const char *source;         /* NUL-terminated, in xdev/kernel_lang.h's dialect */
    const char *name;           /* [A-Za-z0-9_]{1,63}: for messages and file names */
    const char *const *options; /* the caller's compiler options, passed as they are */
    int noptions;
    const char *include_dir; /* xdev's public headers (<xdev/kernel_lang.h>) */
    const char *work_dir;    /* a private temporary directory the backend may write into */
} xdev_compile_desc_t;

typedef struct xdev_compiled {
    size_t size;                /* sizeof(xdev_compiled_t) */
    xdev_image_format_t format; /* what kernel.module_load takes */
    void *data;                 /* malloc'd image bytes; the core frees them */
    size_t data_size;
    char *log; /* malloc'd compiler output, or NULL; the core frees it */
    /* malloc'd: every file the compile read besides the source, one path a
     * line as the compiler named it (headers, xdev's and the system's), or
     * NULL when the backend cannot tell; the core frees it. The cache keys
     * the image on these files' contents (core/kernel/kernel_cache.h). */
    char *deps;
} xdev_compiled_t;

typedef struct xdev_kernel_vtable {
    size_t size;
    XDEV_SLOTS_KERNEL(XDEV_SLOT_FIELD)
} xdev_kernel_vtable_t;

typedef struct xdev_graph_vtable {
    size_t size;
    XDEV_SLOTS_GRAPH(XDEV_SLOT_FIELD)
} xdev_graph_vtable_t;

/* ---------------------------------------------------------------- prim (ABI 3.5)
 * One primitive call (xdev/primitives.h), checked by the core: one
 * descriptor for every prim slot, fields only ever appended (those after
 * `stream` since ABI 3.6, the compare_ fields since 3.9; `size` says which
 * the core filled: a core of 3.9 or later calls select_compare only with
 * them). flags:
 * XDEV_PRIM_EXCLUSIVE (scan), XDEV_PRIM_DESCENDING (sorts) and
 * XDEV_PRIM_FLAG_DETERMINISTIC (floating sums follow the fixed order that
 * xdev/primitives.h defines: the same bits on every backend). What each
 * slot reads (fields a slot does not name are zero):
 *   reduce, scan: op, dtype, in, out, count.
 *   sort: dtype (the key), in/out = keys, count, begin_bit/end_bit (the
 *     core always gives the explicit range, 0 .. key bits for "all"),
 *     values_in/values_out/value_size (all NULL/0: keys only); in == out
 *     (values_in == values_out) sorts in place.
 *   segmented_sort: sort's fields plus offsets/num_segments (num_segments
 *     >= 1; clamp each bound to [0, count], end < begin is empty).
 *   segmented_reduce: op, dtype, in, count, offsets, num_segments, out
 *     (num_segments results).
 *   histogram_even: dtype, in (samples), count, num_bins, lower, upper,
 *     out (num_bins int64_t, which the slot zeroes first).
 *   select_flagged: dtype U8/U16/U32/U64 (the item size: items are moved
 *     as bits), in, count, select_flags with flag_size bytes per flag (an
 *     item is kept when any bit of its flag is set: 1 for the public u8
 *     flags; xdev_prim_select_if passes 0/1 elements of its dtype), out,
 *     num_out.
 *   unique: dtype, in, count, out, num_out.
 *   run_length_encode: dtype, in, count, out (unique items), values_out
 *     (the int64_t run lengths), num_out (the run count).
 *   select_compare (ABI 3.9): dtype F32, F64, I32 or I64, in, count, out,
 *     num_out, compare_op, compare_dtype, compare_value / compare_ivalue:
 *     item i is kept when (compare_dtype)in[i] OP the value, the comparison
 *     of C in that type (IEEE: a NaN compares false but for !=). The core
 *     sends compare_dtype F32 (compare_value holds a float exactly) or F64
 *     for F32 items, F64 for F64 items, I64 (compare_ivalue) for I32 and I64
 *     items (a backend refuses another pair with NOT_SUPPORTED: the core
 *     does not fall back then); kept items are moved to out in input order,
 *     count 0 (in, out NULL) writes *num_out = 0, as select_flagged.
 * Counts (num_out) are written on the device, in stream order. */
#define XDEV_PRIM_FLAG_DETERMINISTIC (1u << 16)

/* select_compare's comparison (ABI 3.9): item OP value. */
typedef enum xdev_prim_compare_op {
    XDEV_PRIM_CMP_LT,
    XDEV_PRIM_CMP_LE,
    XDEV_PRIM_CMP_GT,
    XDEV_PRIM_CMP_GE,
    XDEV_PRIM_CMP_EQ,
    XDEV_PRIM_CMP_NE,
} xdev_prim_compare_op_t;

typedef struct xdev_prim_desc {
    size_t size; /* sizeof(xdev_prim_desc_t) */
    int op;      /* xdev_prim_op_t */
    uint32_t flags;
    xdev_dtype_t dtype;
    const void *in; /* count elements of dtype (NULL when count = 0) */
    void *out;      /* reduce: one element (ARGMIN/ARGMAX: an int64_t); scan: count */
    size_t count;
    void *temp; /* NULL: the size query; else temp_bytes bytes of the device */
    size_t temp_bytes;
    xdev_backend_device_t *device;
    void *stream; /* native */
    /* Since ABI 3.6. */
    const void *values_in;  /* sort pairs: count values of value_size bytes */
    void *values_out;       /* sort pairs; run_length_encode: the int64_t lengths */
    size_t value_size;      /* 1, 2, 4 or 8 (0: keys only) */
    uint32_t begin_bit;     /* sorts: the key image's bits [begin_bit, end_bit) */
    uint32_t end_bit;       /*   (xdev/primitives.h); end_bit <= the key's bits */
    const int64_t *offsets; /* segmented: num_segments + 1 bounds */
    size_t num_segments;
    const void *select_flags; /* select_flagged: count flags */
    size_t flag_size;         /*   of flag_size bytes (1, 2, 4 or 8) */
    int64_t *num_out;         /* select, unique, run_length_encode: the count written */
    size_t num_bins;          /* histogram_even */
    double lower, upper;
    /* Since ABI 3.9. */
    int compare_op;             /* select_compare: xdev_prim_compare_op_t */
    xdev_dtype_t compare_dtype; /*   the type compared in: F32, F64 or I64 */
    double compare_value;       /*   F32 (a float's exact value) and F64 */
    int64_t compare_ivalue;     /*   I64 */
} xdev_prim_desc_t;

typedef struct xdev_prim_vtable {
    size_t size;
    XDEV_SLOTS_PRIM(XDEV_SLOT_FIELD)
} xdev_prim_vtable_t;

typedef struct xdev_backend_api {
    size_t size; /* sizeof(xdev_backend_api_t) as the backend was built */
    uint32_t abi_major;
    uint32_t abi_minor;
    const char *name; /* "cpu", "cuda", "hip", "foo": the device type's name */
    /* The stable type of a shipped name (XDEV_DEVICE_CPU ...); any other
     * backend gives XDEV_DEVICE_TYPE_ANY (xdev assigns its type at
     * registration). */
    xdev_device_type_t type;
    /* Called once before any other slot. A failure makes the backend
     * unusable; its message becomes the backend's reason. */
    xdev_status_t (*init)(const xdev_host_services_t *host);
    /* Optional. Called from libxdev's destructor at process exit (or
     * unload): stop threads the backend owns so none runs into libraries
     * that are being torn down. The vendor runtime may already be gone
     * (its atexit handlers ran first): make no vendor call here. */
    void (*at_exit)(void);
    const xdev_device_vtable_t *device;
    const xdev_stream_vtable_t *stream;
    const xdev_event_vtable_t *event;
    const xdev_memory_vtable_t *memory;
    const xdev_blas_vtable_t *blas;   /* optional */
    const xdev_fft_vtable_t *fft;     /* optional */
    const xdev_rng_vtable_t *rng;     /* optional */
    const xdev_trace_vtable_t *trace; /* optional */
    const xdev_ipc_vtable_t *ipc;     /* optional */
    const xdev_ops_vtable_t *ops;     /* optional */
    const xdev_comm_vtable_t *comm;   /* optional */
    /* XDEV_BACKEND_ACCELERATOR and XDEV_BACKEND_HOST_MEMORY as the
     * backend describes itself; they apply when xdev registered it by name
     * (a plugin found on the plugin path or named in XDEV_BACKEND). */
    uint32_t flags;
    const xdev_kernel_vtable_t *kernel; /* optional; since ABI 3.1 */
    const xdev_graph_vtable_t *graph;   /* optional; since ABI 3.2 */
    const xdev_prim_vtable_t *prim;     /* optional; since ABI 3.5 */
} xdev_backend_api_t;

/* The plugin's exported entry point (named XDEV_BACKEND_ENTRY_SYMBOL). */
typedef const xdev_backend_api_t *(*xdev_backend_entry_fn)(void);

/* ---------------------------------------------------------------- registration
 * The core knows backends only through this table of named factories. The
 * backends xdev ships register themselves when libxdev loads (the CPU backend
 * from backends/cpu/, the cuda and hip plugins from backends/plugins.c, both
 * on core/wiring.c's list); an
 * application may register its own before its first other xdev call. A
 * factory is either an entry point linked into the process (built in) or the
 * name of a plugin, libxdev-<name>.so, loaded on first use. */

/* xdev_backend_factory_t.flags */
#define XDEV_BACKEND_ACCELERATOR (1u << 0) /* XDEV_VISIBLE_DEVICES applies; auto tries it */
#define XDEV_BACKEND_DEFAULT (1u << 1)     /* shipped with xdev: a later registration of the */
                                           /* same name with XDEV_BACKEND_REPLACE replaces it */
#define XDEV_BACKEND_HOST_MEMORY (1u << 2) /* its device memory is ordinary host memory: */
                                           /* other backends copy it as host memory (cpu) */
#define XDEV_BACKEND_REPLACE (1u << 3)     /* this registration replaces the shipped backend */
                                           /* of the same name (keeping its type) */

typedef struct xdev_backend_factory {
    size_t size;                 /* sizeof(xdev_backend_factory_t) */
    const char *name;            /* the device type's name ("cuda"), [a-z0-9_]{1,15} */
    xdev_device_type_t type;     /* XDEV_DEVICE_TYPE_ANY (a type is assigned), or a */
                                 /* shipped name's own (XDEV_DEVICE_CUDA for "cuda") */
    xdev_backend_entry_fn entry; /* built in; NULL: the plugin libxdev-<name>.so */
    uint32_t flags;              /* XDEV_BACKEND_* above */
    int auto_order;              /* XDEV_BACKEND=auto tries accelerators by increasing order */
} xdev_backend_factory_t;

/* Add a backend: a name, given a device type (xdev_device_type_find tells
 * which) - cpu, cuda and hip keep 0, 1, 2; any other name takes the next
 * free one, up to XDEV_MAX_DEVICE_TYPES. Fails with XDEV_ERROR_INVALID_VALUE
 * for a malformed factory (name; a type other than XDEV_DEVICE_TYPE_ANY or a
 * shipped name's own), a name already registered (the message names both;
 * a shipped one is replaced only with XDEV_BACKEND_REPLACE), a full table,
 * or once xdev has initialised. The factory is copied; `name` must stay
 * valid for the life of the process. A plugin needs no registration: xdev
 * finds libxdev-<name>.so by name (XDEV_BACKEND, the plugin path). */
XDEV_API XDEV_RESULT xdev_status_t xdev_backend_register(const xdev_backend_factory_t *factory);

#ifdef __cplusplus
}
#endif
#endif
