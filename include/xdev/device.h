/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/device.h - device types, names, the per-thread current device, properties.
 *
 * A device is a (type, index) pair named like a torch device: "cpu:0",
 * "cuda:1", "hip:0", or "cuda" alone (index -1: the current device of that
 * type). Each thread has one current device per type, initially index 0; the
 * default type is the one the selected backend provides (XDEV_BACKEND).
 *
 * Devices of every backend that loads can be used together in one process.
 * Which devices a call acts on when it names none:
 * - a NULL stream: for work on memory (copies, memset, BLAS, FFT, random
 *   fills) the current stream of the device of the operands (see each
 *   header); for a call with no operand to take a device from
 *   (xdev_launch_host_func, xdev_event_record, xdev_malloc_stream, ...) the
 *   current stream of this thread's current device of the DEFAULT type;
 * - xdev_malloc, xdev_get_device, xdev_manual_seed, xdev_seed,
 *   xdev_get/set_rng_state_all: the default type only (torch.cuda's calls);
 * - xdev_synchronize, xdev_manual_seed_all, xdev_seed_all, xdev_empty_cache,
 *   xdev_memory_snapshot: every device of every backend (torch.manual_seed
 *   seeds the CPU and every GPU; a program with work on the CPU and a GPU
 *   waits for both with one call).
 *
 * XDEV_VISIBLE_DEVICES selects and renumbers the accelerators (cuda, hip),
 * as CUDA_VISIBLE_DEVICES does - by index, by UUID ("GPU-" and a prefix of
 * the UUID, as nvidia-smi -L shows it) or by MIG instance ("MIG-<uuid>");
 * the CPU devices are always the XDEV_CPU_DEVICES ones. */
#ifndef XDEV_DEVICE_H
#define XDEV_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xdev/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device types are registered, not enumerated: the backends xdev ships keep
 * the stable numbers below; any other backend (xdev_backend_register, or a
 * plugin libxdev-<name>.so found by name) gets the next free number when it
 * registers, up to XDEV_MAX_DEVICE_TYPES in all. Find a type by its name with
 * xdev_device_type_find("foo") or xdev_device_parse("foo:0"). */
typedef enum xdev_device_type {
    XDEV_DEVICE_TYPE_ANY = -1, /* in a backend factory: let xdev assign the type */
    XDEV_DEVICE_CPU = 0,
    XDEV_DEVICE_CUDA = 1,
    XDEV_DEVICE_HIP = 2,
} xdev_device_type_t;

/* Most device types (backends) one process can have: cpu, cuda, hip and up
 * to five others. */
#define XDEV_MAX_DEVICE_TYPES 8
/* Deprecated (the closed enum's count, 3, until ABI 3): an upper bound for
 * loops over types, now XDEV_MAX_DEVICE_TYPES; a type without a backend has
 * no name (xdev_device_type_name returns NULL). */
#define XDEV_DEVICE_TYPE_COUNT XDEV_MAX_DEVICE_TYPES

typedef struct xdev_device {
    xdev_device_type_t type;
    int index; /* -1 = the current device of this type */
} xdev_device_t;

/* Longest device name xdev_device_format writes, with its NUL. */
#define XDEV_DEVICE_NAME_MAX 32

/* The registered name of a type ("cpu", "cuda", "hip", "foo"); NULL when no
 * backend is registered for it. */
XDEV_API const char *xdev_device_type_name(xdev_device_type_t type);

/* The type registered under `name` ("cuda", "foo"). A name no backend was
 * registered under is XDEV_ERROR_INVALID_VALUE listing the known ones. Plugins
 * found by name (XDEV_BACKEND, the plugin path) are registered when xdev
 * initialises, which this call does. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_type_find(const char *name, xdev_device_type_t *out);

/* Parse "cuda:1", "cpu", "hip:0". Whitespace, signs, empty index, trailing
 * characters and unknown types are XDEV_ERROR_INVALID_VALUE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_parse(const char *name, xdev_device_t *out);

/* Format a device as "cuda:1" (or "cuda" for index -1) into buf. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_format(xdev_device_t device, char *buf, size_t len);

/* The type the selected backend provides (XDEV_BACKEND). */
XDEV_API XDEV_RESULT xdev_status_t xdev_default_device_type(xdev_device_type_t *out);

/* Number of visible devices of a type (torch.cuda.device_count()): 0, with
 * XDEV_SUCCESS and no error left behind, when none is visible or its backend
 * cannot be used (plugin or vendor library missing, no device; the reason is
 * in xdev_backend_get_info). Errors: xdev failed to initialise, an unknown
 * type, or the backend failed on a malformed variable of its own
 * (XDEV_CPU_DEVICES=abc: XDEV_ERROR_ENV). */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_count(xdev_device_type_t type, int *count);

/* True when the type's backend loads and has at least one visible device.
 * Never changes the thread's error state. */
XDEV_API bool xdev_is_available(xdev_device_type_t type);

/* Current device of the default type on this thread. */
XDEV_API XDEV_RESULT xdev_status_t xdev_get_device(xdev_device_t *out);

/* Current device index of a given type on this thread. */
XDEV_API XDEV_RESULT xdev_status_t xdev_get_device_index(xdev_device_type_t type, int *index);

/* Make `device` current for its type on this thread. As in torch, a negative
 * index is a no-op. An index past the device count is XDEV_ERROR_INVALID_DEVICE. */
XDEV_API XDEV_RESULT xdev_status_t xdev_set_device(xdev_device_t device);

/* Resolve index -1 to the current device of that type and check the index. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_resolve(xdev_device_t device, xdev_device_t *out);

/* Device guard: begin makes `device` current and remembers the previous one;
 * end restores it. A negative index makes the guard a no-op (torch's
 * device(-1)). Guards nest. */
typedef struct xdev_device_guard {
    xdev_device_t previous;
    bool active;
} xdev_device_guard_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_device_guard_begin(xdev_device_guard_t *guard,
                                                           xdev_device_t device);
XDEV_API XDEV_RESULT xdev_status_t xdev_device_guard_end(xdev_device_guard_t *guard);

/* Used by XDEV_DEVICE_SCOPE; restores the guard, ignoring the status. */
XDEV_API void xdev_device_guard_cleanup(xdev_device_guard_t *guard);

/* XDEV_DEVICE_SCOPE(dev): `device` is current until the enclosing block ends,
 * however it is left (return, break, goto): GCC/Clang cleanup attribute.
 *
 *   { XDEV_DEVICE_SCOPE(xdev_cuda(1)); ... }
 *
 * XDEV_WITH_DEVICE(dev) { ... } is the portable form; it restores when the
 * block completes normally (do not return or break out of it). */
#define XDEV_CONCAT_(a, b) a##b
#define XDEV_CONCAT(a, b) XDEV_CONCAT_(a, b)
#if defined(__GNUC__)
#define XDEV_DEVICE_SCOPE(dev)                                                                     \
    xdev_device_guard_t XDEV_CONCAT(xdev_scope_guard_, __LINE__)                                   \
        __attribute__((cleanup(xdev_device_guard_cleanup), unused));                               \
    (void)xdev_device_guard_begin(&XDEV_CONCAT(xdev_scope_guard_, __LINE__), (dev))
#endif
#define XDEV_WITH_DEVICE(dev)                                                                      \
    XDEV_WITH_DEVICE_(dev, XDEV_CONCAT(xdev_with_guard_, __LINE__),                                \
                      XDEV_CONCAT(xdev_with_once_, __LINE__))
#define XDEV_WITH_DEVICE_(dev, g, once)                                                            \
    for (xdev_device_guard_t g = {{XDEV_DEVICE_CPU, -1}, false}, *once = &g;                       \
         once && (xdev_device_guard_begin(&g, (dev)), 1); xdev_device_guard_end(&g), once = NULL)

typedef struct xdev_device_properties {
    char name[256];
    int capability_major; /* compute capability (0 on the CPU) */
    int capability_minor;
    size_t total_memory;      /* bytes */
    int multiprocessor_count; /* SMs, CUs, or CPU cores */
    int physical_index;       /* the backend's own index (before XDEV_VISIBLE_DEVICES) */
    bool integrated;          /* memory shared with the host */
} xdev_device_properties_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_get_device_properties(xdev_device_t device,
                                                              xdev_device_properties_t *props);

/* Longest UUID text with its NUL ("MIG-GPU-<uuid>/<gi>/<ci>" fits). */
#define XDEV_UUID_MAX 96

/* What torch 2.x's device properties add to the ones above, in a struct of
 * its own so that xdev_device_properties_t keeps its layout: it starts with
 * its size, which the caller sets (sizeof(xdev_device_properties_ext_t) as
 * the caller was built), and later versions only append fields - xdev
 * writes what fits in `size` and leaves the rest of a longer struct alone. */
typedef struct xdev_device_properties_ext {
    size_t size;              /* set by the caller: sizeof(xdev_device_properties_ext_t) */
    char uuid[XDEV_UUID_MAX]; /* "GPU-<8-4-4-4-12 hex>" (CUDA, nvidia-smi -L), "MIG-<...>" for
                                 a MIG instance, "CPU-<...>" for a CPU device (stable: see
                                 docs/semantics.md); HIP: "GPU-<16 hex>" as ROCm writes it */
    char pci_bus_id[32];      /* "0000:3b:00.0" (domain:bus:device.function); "" for none */
    size_t l2_cache_size;     /* bytes; 0 when the backend cannot say */
    bool is_mig;              /* a MIG instance (CUDA with NVML), not a whole GPU */
    bool bf16_supported;      /* bfloat16 arithmetic runs natively (torch.cuda.is_bf16_supported) */
    bool tf32_supported;      /* TF32 tensor cores (torch.cuda.is_tf32_supported) */
    char arch[32];            /* the device's code target: "sm_90", "gfx942", "x86_64" */
} xdev_device_properties_ext_t;

/* Fill *ext (ext->size set by the caller, at least offsetof the first field
 * after size). A backend that cannot describe its devices this way (an
 * optional slot: device.get_properties_ext) is XDEV_ERROR_NOT_SUPPORTED
 * naming it. */
XDEV_API XDEV_RESULT xdev_status_t
xdev_get_device_properties_ext(xdev_device_t device, xdev_device_properties_ext_t *ext);

/* Wait until all work on all streams of the device has finished. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_synchronize(xdev_device_t device);

/* Wait until the work queued so far on every stream of every device of
 * every loaded backend has finished: the CPU devices too when the default
 * type is cuda, and the GPUs when it is cpu. Backends never loaded hold no
 * work and are not loaded by it. torch.cuda.synchronize() waits for one
 * device; for that use xdev_device_synchronize. Every device is waited for
 * even when one fails; the first failure is returned. Must not be called
 * from a host function (it would wait for its own stream). */
XDEV_API XDEV_RESULT xdev_status_t xdev_synchronize(void);

/* Can `device` access memory of `peer` directly (same type only)? */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_can_access_peer(xdev_device_t device,
                                                               xdev_device_t peer, bool *out);

/* Let kernels on `device` use memory of `peer`. Idempotent. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_enable_peer_access(xdev_device_t device,
                                                                  xdev_device_t peer);

/* Has enable_peer_access(device, peer) succeeded? False for devices that do
 * not exist; never changes the thread's error state. */
XDEV_API bool xdev_device_peer_enabled(xdev_device_t device, xdev_device_t peer);

/* Shorthands for device literals. */
static inline xdev_device_t xdev_cpu(int index) {
    xdev_device_t d = {XDEV_DEVICE_CPU, index};
    return d;
}
static inline xdev_device_t xdev_cuda(int index) {
    xdev_device_t d = {XDEV_DEVICE_CUDA, index};
    return d;
}
static inline xdev_device_t xdev_hip(int index) {
    xdev_device_t d = {XDEV_DEVICE_HIP, index};
    return d;
}
static inline bool xdev_device_equal(xdev_device_t a, xdev_device_t b) {
    return a.type == b.type && a.index == b.index;
}

#ifdef __cplusplus
}
#endif
#endif
