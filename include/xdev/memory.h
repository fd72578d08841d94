/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/memory.h - device memory, pinned host memory, copies and memset.
 *
 * xdev remembers every pointer it hands out (device and pinned host) so a
 * copy infers its direction from the pointers; memory xdev did not allocate
 * is host (pageable) memory. Interior pointers resolve to their allocation.
 *
 * Every call that takes a pointer and a length checks both against the
 * live allocation: n bytes from ptr must lie within the bytes requested for
 * it (not the rounded block, not the segment around it), else
 * XDEV_ERROR_INVALID_VALUE "... run past the end of its allocation ...". A
 * pointer into memory that was freed is XDEV_ERROR_INVALID_VALUE ("use
 * after free") as long as xdev still holds that memory in its cache; once
 * the memory went back to the system xdev cannot tell it from any other
 * host pointer. Requests above 2^48 bytes fail with XDEV_ERROR_OUT_OF_MEMORY. */
#ifndef XDEV_MEMORY_H
#define XDEV_MEMORY_H

#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocate on the current device of the default type. Size 0 gives NULL. */
XDEV_API XDEV_RESULT xdev_status_t xdev_malloc(void **ptr, size_t size);

/* Allocate on a given device (index -1 = current of that type). */
XDEV_API XDEV_RESULT xdev_status_t xdev_malloc_device(xdev_device_t device, void **ptr,
                                                      size_t size);

/* Free device memory from xdev_malloc*. NULL is a no-op; an unknown pointer,
 * an interior pointer or a double free is XDEV_ERROR_INVALID_VALUE. The free
 * is stream-ordered in the caching allocator (later work on the block's
 * stream may reuse it at once; record_stream orders other streams). With
 * XDEV_NO_MEMORY_CACHING=1 it waits for the device, as cudaFree does; from a
 * host function of that device it cannot wait for its own stream and fails
 * without changing anything (the allocation stays live: free it later).
 * Allowed inside host functions (as is xdev_malloc); no allocator call ever
 * waits for a stream while holding a lock such a host function needs. */
XDEV_API XDEV_RESULT xdev_status_t xdev_free(void *ptr);

/* Page-locked host memory for fast asynchronous copies (the default type's
 * backend pins it). Size 0 gives NULL. */
XDEV_API XDEV_RESULT xdev_status_t xdev_host_alloc(void **ptr, size_t size);
XDEV_API XDEV_RESULT xdev_status_t xdev_host_free(void *ptr);

/* What xdev knows of a pointer. */
typedef enum xdev_memory_kind {
    XDEV_MEMORY_HOST = 0,        /* not allocated by xdev: pageable host memory */
    XDEV_MEMORY_DEVICE = 1,      /* from xdev_malloc* */
    XDEV_MEMORY_PINNED_HOST = 2, /* from xdev_host_alloc */
    XDEV_MEMORY_MANAGED = 3,     /* from xdev_malloc_managed: the host and the devices address it */
} xdev_memory_kind_t;

/* What xdev_pointer_get_info reports for a pointer anywhere inside a live
 * allocation (interior pointers included). Memory xdev does not manage -
 * including memory it manages that is not allocated now, e.g. after
 * xdev_free - is kind XDEV_MEMORY_HOST with base NULL and sizes 0. */
typedef struct xdev_pointer_info {
    xdev_memory_kind_t kind;
    xdev_device_t device; /* owning device (device memory); backend's device 0 for pinned */
    void *base;           /* start of the allocation (NULL for host memory) */
    size_t size;          /* bytes requested: what the caller may use, and the bound every
                             copy, memset, BLAS, FFT and RNG call checks */
    size_t block_size;    /* bytes the allocator set aside for it (size rounded up) */
} xdev_pointer_info_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_pointer_get_info(const void *ptr, xdev_pointer_info_t *out);

/* torch.cuda.device_of: the device that owns ptr; XDEV_ERROR_INVALID_VALUE
 * for memory xdev did not allocate on a device. */
XDEV_API XDEV_RESULT xdev_status_t xdev_device_of(const void *ptr, xdev_device_t *out);

/* Copy n bytes, blocking the host until the copy is done. Direction is
 * inferred; copies between devices are always allowed (torch's copy_ rule).
 *
 * Which work it waits for (torch's rule for a blocking copy): it is queued
 * on the current stream of the device involved (between two devices: on
 * the destination's current stream, after the source's current stream), so
 * it runs after what is queued on those streams, and the host waits for it.
 * Work queued on other streams is not waited for: after a kernel or copy on
 * a stream you created, synchronize that stream (xdev_stream_synchronize)
 * or make the current stream wait for it (xdev_stream_wait_stream) first,
 * or the copy may read the memory before that work wrote it.
 *
 * If the wait itself fails without having waited - from a host function of
 * the stream the copy is queued on, which cannot wait for itself - the
 * error is returned but the copy stays queued and runs later: dst and src
 * must stay valid until that stream has passed it. (A backend that reports
 * an earlier asynchronous error at the wait has waited first.) */
XDEV_API XDEV_RESULT xdev_status_t xdev_memcpy(void *dst, const void *src, size_t n);

/* Enqueue a copy on `stream` (NULL = current stream of the device side, the
 * destination's device when both are devices). The stream must belong to
 * the device that runs the copy: the device side of a host<->device copy,
 * either device of a peer copy, and the GPU side of a copy between a CPU
 * device and a GPU (whose memory the CPU workers cannot reach); other
 * streams are XDEV_ERROR_CROSS_DEVICE. Such a CPU<->GPU copy also waits, on
 * the host, for the CPU device's current stream. Pageable host memory must
 * stay valid until the stream reaches the copy. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memcpy_async(void *dst, const void *src, size_t n,
                                                     xdev_stream_t stream);

/* Enqueue setting n bytes of device memory to (unsigned char)value. */
XDEV_API XDEV_RESULT xdev_status_t xdev_memset_async(void *dst, int value, size_t n,
                                                     xdev_stream_t stream);

/* ------------------------------------------------------------ managed memory
 * Memory that the host and the devices of one backend all address
 * (cudaMallocManaged, hipMallocManaged; on the CPU device plain host
 * memory): the host reads and writes it directly, kernels and every xdev
 * call take it like device memory of the device it was allocated on (copies,
 * memset, element-wise, BLAS...; xdev_device_of names that device), and the
 * driver moves its pages where they are used. It is not from the caching
 * allocator: each allocation is the backend's own, counted apart in the
 * statistics ("managed_*" of xdev_memory_stats_t), not capped by the memory
 * fraction, shown as its own segment ("segment_type": "managed") in the
 * snapshots and the memory view, and XDEV_MEMORY_MANAGED in
 * xdev_pointer_get_info. Free it with xdev_free, which first waits for the
 * device (as cudaFree does; from a host function of the device it fails and
 * the allocation stays live). IPC refuses it. A backend without managed
 * memory (its memory.managed slots) answers XDEV_ERROR_NOT_SUPPORTED,
 * naming the backend. */

/* The host as a location of xdev_mem_prefetch_async and xdev_mem_advise
 * (where a device index is expected; -1 here never means "the current
 * device"). */
#define XDEV_HOST (-1)

/* xdev_malloc_managed flags (cudaMemAttachGlobal / cudaMemAttachHost):
 * GLOBAL (also 0): any stream of any device may use it; HOST: at first only
 * the host (the driver may keep it there until the device uses it). */
#define XDEV_MEM_ATTACH_GLOBAL 1u
#define XDEV_MEM_ATTACH_HOST 2u

/* Allocate `size` bytes of managed memory on `device` (index -1 = the
 * current device of that type). Size 0 gives NULL. */
XDEV_API XDEV_RESULT xdev_status_t xdev_malloc_managed(xdev_device_t device, void **ptr,
                                                       size_t size, unsigned flags);

/* Enqueue on `stream` the migration of [ptr, ptr + bytes) of one managed
 * allocation to device `location` (an index of the allocation's device
 * type) or to the host (XDEV_HOST): later work on the stream finds it there
 * (cudaMemPrefetchAsync). NULL stream: the current stream of the
 * allocation's device; a stream of another backend is
 * XDEV_ERROR_CROSS_DEVICE. bytes 0 is a no-op (after the checks). A pointer
 * that is not managed memory, a range past the allocation's end or a
 * location that is no device is XDEV_ERROR_INVALID_VALUE. On the CPU device
 * it checks its input and orders nothing else (the memory is where it is). */
XDEV_API XDEV_RESULT xdev_status_t xdev_mem_prefetch_async(const void *ptr, size_t bytes,
                                                           int location, xdev_stream_t stream);

/* Advice for a range of managed memory (cudaMemoryAdvise's values). */
typedef enum xdev_mem_advice {
    XDEV_MEM_ADVISE_SET_READ_MOSTLY = 1, /* copies may be kept where it is read */
    XDEV_MEM_ADVISE_UNSET_READ_MOSTLY = 2,
    XDEV_MEM_ADVISE_SET_PREFERRED_LOCATION = 3, /* keep its pages at `location` */
    XDEV_MEM_ADVISE_UNSET_PREFERRED_LOCATION = 4,
    XDEV_MEM_ADVISE_SET_ACCESSED_BY = 5, /* `location` maps it, to avoid faults */
    XDEV_MEM_ADVISE_UNSET_ACCESSED_BY = 6,
} xdev_mem_advice_t;

/* Give `advice` for [ptr, ptr + bytes) of one managed allocation, about
 * `location` (a device index of its type, or XDEV_HOST; checked for every
 * advice, used by the location and accessed-by ones). Not stream-ordered:
 * it applies from now on (cudaMemAdvise). Checks as xdev_mem_prefetch_async;
 * an advice outside the enum is XDEV_ERROR_INVALID_VALUE. The CPU device
 * checks and ignores it. */
XDEV_API XDEV_RESULT xdev_status_t xdev_mem_advise(const void *ptr, size_t bytes,
                                                   xdev_mem_advice_t advice, int location);

/* Free and total memory of a device in bytes (cudaMemGetInfo). */
XDEV_API XDEV_RESULT xdev_status_t xdev_mem_get_info(xdev_device_t device, size_t *free_bytes,
                                                     size_t *total_bytes);

#ifdef __cplusplus
}
#endif
#endif
