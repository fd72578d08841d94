/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/kernel.h - loading kernel modules and launching kernels on streams.
 *
 * Kernels are written once in the dialect of xdev/kernel_lang.h and built
 * by xdev_add_kernels(target SOURCES ...) in CMake, which compiles each file
 * for every toolchain it finds (nvcc, hipcc, the host compiler) and embeds
 * the results in the target together with a generated bundle:
 *
 *   #include "my_kernels.h"              // generated: my_kernels_bundle()
 *   xdev_module_t m;
 *   xdev_kernel_t saxpy;
 *   xdev_module_load(dev, my_kernels_bundle(), &m);
 *   xdev_module_get_kernel(m, "saxpy", &saxpy);
 *   xdev_launch_config_t cfg = {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}};
 *   XDEV_LAUNCH(saxpy, &cfg, n, a, x, y);  // arguments are lvalues
 *   xdev_module_unload(m);
 *
 * A launch is enqueued on cfg.stream (NULL: the device's current stream)
 * like any other operation: stream ordered, XDEV_LAUNCH_BLOCKING waits for
 * it, it appears in the stream trace and as an NVTX / roctx range, and it
 * may be called from several threads. Launch-time checks (always on): the
 * argument count, each argument's size, each pointer argument is live
 * memory of the kernel's device (or NULL) within the bytes its allocation
 * requested (up to one past the end; the allocator's rounding does not
 * count), grid and block sizes and shared bytes within the device's limits.
 * A failure is a status with a message naming the argument or the limit;
 * nothing is enqueued.
 *
 * Which kernels are checked in full: every kernel written in the dialect
 * (xdev/kernel_lang.h), whether embedded by xdev_add_kernels or compiled at
 * run time by xdev_module_compile, on every backend - the host build
 * carries its signature, and the GPU image carries it too
 * (xdev/support/kernel_sig.h; parameter names in messages only where a host
 * build is loaded). Not checked in full: a native image loaded with
 * xdev_module_load_image from code not written in the dialect (hand-written
 * CUDA, PTX, HIP code objects): its count and sizes are checked where the
 * backend reports them (CUDA driver 12.4+; not HIP), its pointers not at
 * all.
 *
 * A kernel that faults or calls xdev_trap() fails asynchronously: as on
 * CUDA, the stream's next synchronisation reports it.
 *
 * On the CPU a fault is: xdev_trap(), a barrier in a kernel not declared
 * XDEV_KERNEL_SYNC or one some work-items skip, XDEV_SHARED over the
 * block's shared memory (the work-item returns at the declaration), and a
 * SIGSEGV, SIGBUS, SIGFPE or SIGILL raised by the kernel's own code (a wild
 * pointer, an integer division by zero). The stream's next synchronisation,
 * or the device's if it comes first, returns XDEV_ERROR_LAUNCH_FAILURE
 * naming the kernel, the block and, for a signal, the faulting address;
 * the launch's later blocks do not run, blocks that ran keep what they
 * wrote. Unlike CUDA's sticky error the device stays usable: the fault is
 * reported once, work queued after it runs, and other streams are not
 * affected. Device memory is the process's memory, though: a kernel that
 * wrote through a bad pointer before it faulted may have changed any of
 * it. The signal handlers are installed at the first CPU launch, keeping
 * the ones installed before: a fault outside kernels (or one sent with
 * kill) reaches them, or the default action, as without xdev. A handler
 * the application installs after the first launch takes kernels' faults
 * too (chain to the previous handler to keep xdev's). Only the kernel's own
 * code is guarded: a fault in xdev's or the C library's code during a
 * launch, and an asynchronous SIGBUS (BUS_MCEERR_AO), are passed on as
 * well. The previous handlers are put back when the CPU backend shuts down
 * (exit, or libxdev unloaded). */
#ifndef XDEV_KERNEL_H
#define XDEV_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "xdev/device.h"
#include "xdev/dtype.h"
#include "xdev/error.h"
#include "xdev/kernel_abi.h"
#include "xdev/stream.h"
#include "xdev/support/pp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xdev_module *xdev_module_t;
typedef struct xdev_kernel *xdev_kernel_t;

/* What an image holds. */
typedef enum xdev_image_format {
    XDEV_IMAGE_PTX = 1,      /* CUDA: NUL-terminated PTX text */
    XDEV_IMAGE_CUBIN = 2,    /* CUDA: one architecture's code */
    XDEV_IMAGE_FATBIN = 3,   /* CUDA: several architectures' code and PTX */
    XDEV_IMAGE_HIP_CODE = 4, /* HIP: a code object or offload bundle (hipcc --genco) */
    /* Host kernels (the CPU backend): `data` is an array of `size` pointers
     * to xdev_kernel_sig_t (what xdev_add_kernels generates). */
    XDEV_IMAGE_HOST_TABLE = 5,
    /* Host kernels in a shared library: `data` is its NUL-terminated path;
     * the library exports `xdev_kernel_table` (const xdev_kernel_sig_t
     * *const[]) and `xdev_kernel_table_size` (int), as a library built with
     * xdev_add_kernels does. */
    XDEV_IMAGE_HOST_LIBRARY = 6,
} xdev_image_format_t;

typedef struct xdev_kernel_image {
    xdev_image_format_t format;
    const void *data;
    size_t size; /* bytes (PTX, cubin, fatbin, HIP code), or entries (HOST_TABLE) */
} xdev_kernel_image_t;

/* What xdev_add_kernels embeds: the signatures (and host entries) of every
 * kernel of the target, and one image per kernel file and device toolchain. */
typedef struct xdev_kernel_bundle {
    size_t size; /* sizeof(xdev_kernel_bundle_t) */
    const char *name;
    const xdev_kernel_sig_t *const *kernels;
    int nkernels;
    const xdev_kernel_image_t *images;
    int nimages;
} xdev_kernel_bundle_t;

/* Load the bundle's code for `device`: the images of the device's kind (the
 * host table on the CPU). XDEV_ERROR_NOT_SUPPORTED names what is missing:
 * a backend without kernels, or a bundle built without the device's
 * toolchain (e.g. no nvcc when it was built). */
XDEV_API XDEV_RESULT xdev_status_t xdev_module_load(xdev_device_t device,
                                                    const xdev_kernel_bundle_t *bundle,
                                                    xdev_module_t *out);

/* Load one native image (PTX / cubin / fatbin on CUDA, a code object on
 * HIP, a host table or shared library on the CPU). Kernels written in the
 * dialect carry their signature in the image and are checked in full;
 * others only as the backend can describe them (see the top of this file). */
XDEV_API XDEV_RESULT xdev_status_t xdev_module_load_image(xdev_device_t device,
                                                          const xdev_kernel_image_t *image,
                                                          xdev_module_t *out);

/* Unload: kernels of the module become invalid handles. Launches already
 * queued complete first (the call waits for the device). */
XDEV_API XDEV_RESULT xdev_status_t xdev_module_unload(xdev_module_t module);

/* The kernel called `name` (XDEV_ERROR_NOT_FOUND lists what the module
 * has). The handle lives until the module is unloaded. */
XDEV_API XDEV_RESULT xdev_status_t xdev_module_get_kernel(xdev_module_t module, const char *name,
                                                          xdev_kernel_t *out);

/* ------------------------------------------------------------ run time
 * Kernel source in the dialect, compiled at run time for one device: CUDA
 * through NVRTC (XDEV_NVRTC_PATH), HIP through hiprtc, the CPU through the
 * system C compiler (XDEV_CC, default cc; killed after XDEV_CC_TIMEOUT_S
 * seconds, default 120) into a shared object. Compiled images are kept in an
 * on-disk cache keyed by what changes them: source, options, backend, the
 * compiler's identity, the device's architecture, xdev's version and the
 * dialect's, and the content of every file the compiler read (headers
 * through -I, xdev's, the system's: the CPU compiler lists them; for NVRTC
 * and hiprtc, every file under the -I directories the options name). A
 * compile that read a file changed less than a second before it started is
 * not cached. Where: XDEV_CACHE_DIR, else $XDG_CACHE_HOME/xdev, else
 * ~/.cache/xdev; XDEV_KERNEL_CACHE=0 turns it off, XDEV_KERNEL_CACHE_MAX_MB
 * bounds it. A damaged entry is rebuilt, never loaded; a cache that cannot be
 * written only costs the next run a compile. */
typedef struct xdev_compile_options {
    size_t size;                /* sizeof(xdev_compile_options_t) */
    const char *name;           /* NULL or [A-Za-z0-9_]{1,63}: in messages ("kernels") */
    const char *const *options; /* compiler options, as they are (-DBLOCK=128, -O3) */
    int noptions;
} xdev_compile_options_t;

/* Compile `source` for `device` (or take it from the cache) and load it.
 * Source or options the compiler refuses: XDEV_ERROR_COMPILE, the message
 * quoting the start of the compiler's log, xdev_compile_log() all of it.
 * No compiler: XDEV_ERROR_NOT_SUPPORTED naming what was tried. */
XDEV_API XDEV_RESULT xdev_status_t xdev_module_compile(xdev_device_t device, const char *source,
                                                       const xdev_compile_options_t *options,
                                                       xdev_module_t *out);

/* The compiler's whole output for this thread's last xdev_module_compile
 * that ran the compiler ("" when none, or a cache hit); valid until the
 * thread's next compilation. */
XDEV_API const char *xdev_compile_log(void);

/* How this thread's last xdev_module_compile (xdev_elementwise's too) got
 * its image: from the on-disk cache or from the compiler, and what it took.
 * The same is written to stderr under XDEV_LOG=1 ("xdev: compile <name> for
 * <device>: cache hit, 0.41 ms") and, while tracing, as a "compile" span on
 * the calling thread's host track with the result and the time. */
typedef enum xdev_compile_cache {
    XDEV_COMPILE_CACHE_NONE = 0, /* no compile on this thread yet, or one that failed before it
                                    looked in the cache (bad arguments, no compiler slot) */
    XDEV_COMPILE_CACHE_HIT = 1,  /* loaded from the cache: no compiler ran */
    XDEV_COMPILE_CACHE_MISS = 2, /* compiled (and stored, where `stored` says so) */
    XDEV_COMPILE_CACHE_OFF = 3,  /* XDEV_KERNEL_CACHE=0: compiled, not looked up or stored */
} xdev_compile_cache_t;

typedef struct xdev_compile_info {
    size_t size; /* sizeof(xdev_compile_info_t), set by the caller */
    xdev_compile_cache_t cache;
    bool stored;          /* a miss whose image went into the cache */
    xdev_status_t status; /* what xdev_module_compile returned */
    double milliseconds;  /* the whole call: key, lookup, compile, load */
    char key[65];         /* the image's cache key (hex SHA-256), "" when none */
} xdev_compile_info_t;

/* Fill *info for this thread's last compile. NULL info or a size below
 * sizeof(xdev_compile_info_t): XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_compile_last_info(xdev_compile_info_t *info);

/* out[i] = expression for i < count, where the expression is one C
 * expression over in0 .. in{ninputs-1} (element i of inputs[0..]) and the
 * dialect's math, e.g. "in0 * 2.5f + in1" or "fmaxf(in0, 0.0f)"; every
 * operand has `dtype` (XDEV_DTYPE_F32, F64, I32 or I64) and is device memory
 * of one device, where the kernel runs, on `stream` (NULL: that device's
 * current stream). The kernel is generated, compiled (xdev_module_compile,
 * so cached on disk too) the first time this process asks for that
 * expression, dtype, input count and device, then only launched. At most 8
 * inputs; an expression with statements, comments, strings or '#' is
 * XDEV_ERROR_INVALID_VALUE, one the compiler refuses XDEV_ERROR_COMPILE.
 * out and each input must hold `count` elements from the pointer given,
 * within the bytes requested for its allocation (xdev/memory.h): else
 * XDEV_ERROR_INVALID_VALUE naming the operand ("out", "inputs[1]"), and
 * nothing is launched. */
XDEV_API XDEV_RESULT xdev_status_t xdev_elementwise(const char *expression, xdev_dtype_t dtype,
                                                    int ninputs, const void *const *inputs,
                                                    void *out, size_t count, xdev_stream_t stream);

/* Unload every kernel xdev_elementwise compiled in this process (each waits
 * for its launches); later calls compile (or find on disk) again. The
 * first failure is returned; the others are still unloaded. */
XDEV_API XDEV_RESULT xdev_status_t xdev_elementwise_cache_clear(void);

typedef struct xdev_kernel_attributes {
    const char *name;
    xdev_device_t device;
    int nparams;                /* -1: unknown (a native image the backend can't describe) */
    int max_threads_per_block;  /* for this kernel on this device */
    size_t static_shared_bytes; /* 0 where unknown (host kernels claim theirs as they run) */
    int uses_barrier;           /* declared XDEV_KERNEL_SYNC (host kernels) */
    uint32_t param_sizes[XDEV_KERNEL_MAX_PARAMS]; /* 0: unknown */
    uint8_t param_kinds[XDEV_KERNEL_MAX_PARAMS];  /* XDEV_KPARAM_*; VALUE where unknown */
    /* How a host backend (the CPU) runs the kernel's blocks, from its host
     * compilation (also the "cpu_form" of its launches' trace spans):
     * XDEV_KERNEL_FORM_LOOP (XDEV_KERNEL: one loop over the work-items),
     * _REGIONS (XDEV_KERNEL_BLOCK: a loop per region between barriers),
     * _FIBERS (XDEV_KERNEL_SYNC: a fiber per work-item, switched at each
     * barrier, the slow form); 0 where no host compilation describes it. */
    int cpu_form;
} xdev_kernel_attributes_t;

#define XDEV_KERNEL_FORM_LOOP 1
#define XDEV_KERNEL_FORM_REGIONS 2
#define XDEV_KERNEL_FORM_FIBERS 3

XDEV_API XDEV_RESULT xdev_status_t xdev_kernel_get_attributes(xdev_kernel_t kernel,
                                                              xdev_kernel_attributes_t *out);

typedef struct xdev_dim3 {
    unsigned x, y, z;
} xdev_dim3_t;

typedef struct xdev_launch_config {
    xdev_dim3_t grid;     /* blocks per dimension, each >= 1 */
    xdev_dim3_t block;    /* work-items per block per dimension, each >= 1 */
    size_t shared_bytes;  /* dynamic shared memory per block */
    xdev_stream_t stream; /* NULL: the kernel's device's current stream */
} xdev_launch_config_t;

/* One argument: its bytes (copied at launch, as CUDA does) and size. */
typedef struct xdev_arg {
    const void *value;
    size_t size;
} xdev_arg_t;

/* Device limits a launch is checked against. */
typedef struct xdev_launch_limits {
    unsigned max_block[3]; /* per dimension */
    unsigned max_threads_per_block;
    unsigned max_grid[3];
    size_t max_shared_bytes; /* static + dynamic per block */
    int warp_size;           /* 32 on NVIDIA, 64 on most AMD, 1 on the CPU */
} xdev_launch_limits_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_device_launch_limits(xdev_device_t device,
                                                             xdev_launch_limits_t *out);

/* Enqueue `kernel` with `nargs` arguments. */
XDEV_API XDEV_RESULT xdev_status_t xdev_launch_kernel(xdev_kernel_t kernel,
                                                      const xdev_launch_config_t *config,
                                                      const xdev_arg_t *args, int nargs);

/* XDEV_LAUNCH(kernel, &config, a, b, ...): the arguments are lvalues whose
 * types match the kernel's parameters (sizes are checked). A kernel
 * without parameters: xdev_launch_kernel(kernel, &config, NULL, 0). */
#define XDEV_ARG(x)                                                                                \
    { (const void *)&(x), sizeof(x) }
#define XDEV__LAUNCH_ARG(i, x) XDEV_ARG(x)
#define XDEV_LAUNCH(kernel, config, ...)                                                           \
    xdev_launch_kernel((kernel), (config),                                                         \
                       (const xdev_arg_t[]){XDEV_PP_MAPC(XDEV__LAUNCH_ARG, __VA_ARGS__)},          \
                       XDEV_PP_NARGS(__VA_ARGS__))

#ifdef __cplusplus
}
#endif
#endif
