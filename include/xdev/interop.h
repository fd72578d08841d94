/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/interop.h - memory xdev did not allocate: another library's device
 * memory registered so that every xdev call takes it, existing host memory
 * page-locked (torch's cudaHostRegister), and tensors exchanged both ways in
 * DLPack's format (xdev/dlpack.h), the format PyTorch, JAX, CuPy, NumPy and
 * TVM exchange (tested with PyTorch and NumPy).
 * docs/interop.md has the exchanges end to end. */
#ifndef XDEV_INTEROP_H
#define XDEV_INTEROP_H

#include <stdbool.h>
#include <stdint.h>

#include "xdev/dlpack.h"
#include "xdev/dtype.h"
#include "xdev/memory.h"
#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called once, with its ctx, when registered memory is given back. */
typedef void (*xdev_release_fn)(void *ctx);

/* Make [ptr, ptr + bytes), device memory of `device` that another library
 * allocated, known to xdev: from now on every call takes it as it takes
 * xdev's own allocations (copies infer their direction from it, bounds are
 * checked against `bytes`, xdev_pointer_get_info and xdev_device_of name
 * the device) and xdev_free refuses it. `stream` is where xdev's work on it
 * runs (NULL: the device's current stream); xdev_record_stream adds others
 * (16 streams at most per range).
 * On the CPU backend any host memory can be registered as its device's.
 * The range must not overlap memory xdev knows (XDEV_ERROR_INVALID_VALUE
 * naming what it overlaps); bytes > 0. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_register(xdev_device_t device, void *ptr,
                                                        size_t bytes, xdev_stream_t stream,
                                                        xdev_release_fn release, void *ctx);

/* Give registered memory back (ptr: the start given to register): waits
 * for the work queued so far on its streams (the registration's and those
 * given to xdev_record_stream; never a device-wide synchronize), then xdev
 * forgets it (later calls take it for host memory) and calls release. If a
 * wait fails - from a host function of one of those streams, which would
 * wait for itself - nothing changes and the memory stays registered. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memory_unregister(void *ptr);

/* Page-lock `bytes` of existing host memory at ptr (the default backend's
 * cudaHostRegister / hipHostRegister; the CPU backend takes it as it is):
 * copies to and from it run asynchronously, as from xdev_host_alloc's, and
 * xdev_pointer_get_info reports it as pinned host memory. The range must
 * not overlap memory xdev knows. xdev_host_unregister(ptr) undoes it, once
 * the copies using the memory are done (xdev does not track them:
 * synchronize first; if the backend fails to unpin, nothing changes). */
XDEV_API XDEV_RESULT xdev_status_t xdev_host_register(void *ptr, size_t bytes);
XDEV_API XDEV_RESULT xdev_status_t xdev_host_unregister(void *ptr);

/* ------------------------------------------------------------------ DLPack */

/* A tensor another library gave xdev (xdev_dlpack_import): where its first
 * element is, what the elements are, and the range xdev registered for it. */
typedef struct xdev_tensor_view {
    void *data;              /* the first element (DLPack's data + byte_offset) */
    void *base;              /* start of the registered range: xdev_memory_unregister(base) */
    size_t bytes;            /* length of that range (every element in it) */
    xdev_device_t device;    /* the device whose memory xdev takes it for: host memory of any
                                kind is the CPU backend's device 0, except an xdev export of a
                                CPU device's memory coming back, which is that device's */
    xdev_memory_kind_t kind; /* XDEV_MEMORY_DEVICE; XDEV_MEMORY_PINNED_HOST only for an xdev
                                export of pinned memory coming back */
    xdev_dtype_t dtype;
    int32_t ndim;
    const int64_t *shape;   /* ndim sizes */
    const int64_t *strides; /* ndim strides in elements (filled in for a compact tensor) */
    bool contiguous;        /* compact, row-major: the elements are bytes / element size in a row */
    bool read_only;         /* the producer said not to write (DLPACK_FLAG_BITMASK_READ_ONLY) */
} xdev_tensor_view_t;

/* What an import requires of the tensor (else XDEV_ERROR_INVALID_VALUE). */
#define XDEV_DLPACK_CONTIGUOUS 1u /* compact, row-major */
#define XDEV_DLPACK_WRITABLE 2u   /* not read-only */

/* Take a DLPack tensor: its memory is registered (xdev_memory_register on
 * `stream`, NULL: the device's current stream) and every xdev call takes it
 * until xdev_memory_unregister(view->base), which calls the tensor's
 * deleter once the work queued on its streams is done. The producer must
 * already have ordered its own work before `stream` (DLPack's stream
 * argument: pass it xdev_stream_native_handle(stream)). The shape and
 * strides stay valid until then. A tensor is imported once: a second
 * import of the same one while the first is registered fails; so does one
 * whose memory overlaps another registration (two views of one storage:
 * import it once). An xdev export coming back (xdev -> torch -> xdev) is
 * xdev's own memory: its import registers nothing new. On any failure
 * nothing is taken (the tensor is still the caller's, deleter and all).
 * _unversioned takes the format before DLPack 1.0 (NumPy < 2.1). */
XDEV_API XDEV_RESULT xdev_status_t xdev_dlpack_import(DLManagedTensorVersioned *tensor,
                                                      uint32_t require, xdev_stream_t stream,
                                                      xdev_tensor_view_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_dlpack_import_unversioned(DLManagedTensor *tensor,
                                                                  uint32_t require,
                                                                  xdev_stream_t stream,
                                                                  xdev_tensor_view_t *out);

/* Give a view of xdev memory to another library: ndim sizes in shape and
 * strides in elements (NULL: compact, row-major), every element inside the
 * live allocation that data points into (device or pinned host memory).
 * flags: DLPACK_FLAG_BITMASK_READ_ONLY to forbid writes. The allocation
 * stays alive until the consumer calls the tensor's deleter, even if it is
 * xdev_free'd before (the free then happens at the deleter, ordered after
 * xdev's streams only: the consumer must be done with the data when it
 * calls the deleter, or synchronize first).
 *
 * DLPack's stream handshake: `stream` is where the data is produced (NULL:
 * the device's current stream) and `consumer` the stream the consumer will
 * read it on (xdev_stream_wrap_native wraps a foreign one, e.g. the
 * cudaStream_t torch passes as __dlpack__'s stream): an event recorded on
 * `stream` is waited for by `consumer` - no host wait. consumer NULL: no
 * ordering (the consumer synchronizes itself, or it is the same stream).
 * _unversioned makes the format before DLPack 1.0, which has no flags. */
XDEV_API XDEV_RESULT xdev_status_t xdev_dlpack_export(void *data, int32_t ndim,
                                                      const int64_t *shape, const int64_t *strides,
                                                      xdev_dtype_t dtype, uint64_t flags,
                                                      xdev_stream_t stream, xdev_stream_t consumer,
                                                      DLManagedTensorVersioned **out);
XDEV_API XDEV_RESULT xdev_status_t xdev_dlpack_export_unversioned(
    void *data, int32_t ndim, const int64_t *shape, const int64_t *strides, xdev_dtype_t dtype,
    xdev_stream_t stream, xdev_stream_t consumer, DLManagedTensor **out);

#ifdef __cplusplus
}
#endif

#endif
