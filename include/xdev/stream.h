/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/stream.h - streams: in-order queues of work on one device.
 *
 * Follows torch.cuda: every device has a default stream; every thread has a
 * current stream per device (initially the default one); work on one stream
 * runs in order, work on different streams may overlap unless ordered with
 * events, wait_event or wait_stream. Handles are opaque; a destroyed handle
 * is detected (XDEV_ERROR_INVALID_HANDLE) until its slot is reused. */
#ifndef XDEV_STREAM_H
#define XDEV_STREAM_H

#include "xdev/device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xdev_stream *xdev_stream_t;
typedef struct xdev_event *xdev_event_t;

/* torch's two priority levels; lower = higher priority, as in CUDA. */
#define XDEV_STREAM_PRIORITY_NORMAL 0
#define XDEV_STREAM_PRIORITY_HIGH (-1)

/* A function run on the host when the stream reaches it (cudaLaunchHostFunc).
 * It must not call xdev functions that wait on the same stream (they fail
 * rather than deadlock). On the CPU backend it may call any other xdev
 * function, allocation included. On CUDA it runs on a driver thread that may
 * not call the CUDA runtime: xdev calls that need the device fail there with
 * XDEV_ERROR_BACKEND (cudaErrorNotPermitted), cleanly. */
typedef void (*xdev_host_fn_t)(void *user_data);

/* Create a stream on `device` (index -1 = current) with a priority of
 * XDEV_STREAM_PRIORITY_NORMAL or XDEV_STREAM_PRIORITY_HIGH. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_create(xdev_device_t device, int priority,
                                                      xdev_stream_t *out);

/* Wait for the work queued on the stream so far, then release it. Calls
 * made with the handle afterwards fail with XDEV_ERROR_INVALID_HANDLE, also
 * on other threads, and a thread whose current stream it was falls back to
 * the device's default stream. Destroying a stream while another thread is
 * inside a call on it is safe: that call finishes (or fails cleanly) and the
 * native queue is released once no thread uses it. Default streams belong
 * to xdev: destroying one is XDEV_ERROR_INVALID_VALUE. From a host function
 * of the stream itself it fails (the stream stays usable). */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_destroy(xdev_stream_t stream);

/* Wrap a native stream (cudaStream_t, hipStream_t, or an xdev CPU queue) that
 * the caller keeps owning; destroying the wrapper does not destroy it. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_wrap_native(xdev_device_t device, void *native,
                                                           xdev_stream_t *out);

/* The native handle (cudaStream_t ...) for interop with vendor libraries. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_native_handle(xdev_stream_t stream, void **out);

/* Give a stream a name ("copy", "compute"): up to 63 bytes of UTF-8, NULL
 * or "" to remove it. The stream trace names the stream's track with it,
 * memory snapshots list it (a "stream_names" key) and the memory view
 * shows it instead of the stream's address; on CUDA, Nsight Systems shows
 * it too (NVTX). Default streams can be named. A longer name, or one that
 * is not UTF-8, is XDEV_ERROR_INVALID_VALUE and changes nothing. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_set_name(xdev_stream_t stream, const char *name);

/* The stream's name into buf (len bytes; "" when it has none). A buffer too
 * small for it is XDEV_ERROR_INVALID_VALUE saying the size needed. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_get_name(xdev_stream_t stream, char *buf,
                                                        size_t len);

/* The default stream of a device. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_default(xdev_device_t device, xdev_stream_t *out);

/* This thread's current stream on a device (index -1 = current device). */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_current(xdev_device_t device, xdev_stream_t *out);

/* Make `stream` current for its device on this thread and, as
 * torch.cuda.stream does, make its device the current device. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_set_current(xdev_stream_t stream);

XDEV_API XDEV_RESULT xdev_status_t xdev_stream_get_device(xdev_stream_t stream, xdev_device_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_get_priority(xdev_stream_t stream, int *out);

/* XDEV_SUCCESS when all work has finished, XDEV_ERROR_NOT_READY otherwise. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_query(xdev_stream_t stream);
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_synchronize(xdev_stream_t stream);

/* Work enqueued on `stream` after this call waits for `event`'s recorded
 * work. Only the stream waits; the host returns at once. An event never
 * recorded is a no-op (as in CUDA). */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_wait_event(xdev_stream_t stream, xdev_event_t event);

/* Work enqueued on `stream` after this call waits for everything enqueued on
 * `other` so far. */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_wait_stream(xdev_stream_t stream,
                                                           xdev_stream_t other);

/* Same as xdev_event_record(event, stream). */
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_record_event(xdev_stream_t stream,
                                                            xdev_event_t event);

/* Run fn(user_data) on the host when the stream reaches this point. NULL
 * stream = the current stream of the current device. */
XDEV_API XDEV_RESULT xdev_status_t xdev_launch_host_func(xdev_stream_t stream, xdev_host_fn_t fn,
                                                         void *user_data);

/* Stream guard: begin makes `stream` current (and its device), end restores
 * both. XDEV_STREAM_SCOPE(s) restores when the block is left (GCC/Clang).
 * A NULL stream is a no-op (torch's `stream(None)`), as the device guard is
 * for a negative index: end then restores nothing. */
typedef struct xdev_stream_guard {
    xdev_stream_t previous_stream; /* previous current stream of the stream's device */
    xdev_device_guard_t device_guard;
    bool active;
} xdev_stream_guard_t;

XDEV_API XDEV_RESULT xdev_status_t xdev_stream_guard_begin(xdev_stream_guard_t *guard,
                                                           xdev_stream_t stream);
XDEV_API XDEV_RESULT xdev_status_t xdev_stream_guard_end(xdev_stream_guard_t *guard);
XDEV_API void xdev_stream_guard_cleanup(xdev_stream_guard_t *guard);

#if defined(__GNUC__)
#define XDEV_STREAM_SCOPE(s)                                                                       \
    xdev_stream_guard_t XDEV_CONCAT(xdev_stream_scope_, __LINE__)                                  \
        __attribute__((cleanup(xdev_stream_guard_cleanup), unused));                               \
    (void)xdev_stream_guard_begin(&XDEV_CONCAT(xdev_stream_scope_, __LINE__), (s))
#endif
#define XDEV_WITH_STREAM(s)                                                                        \
    XDEV_WITH_STREAM_(s, XDEV_CONCAT(xdev_with_sguard_, __LINE__),                                 \
                      XDEV_CONCAT(xdev_with_sonce_, __LINE__))
#define XDEV_WITH_STREAM_(s, g, once)                                                              \
    for (xdev_stream_guard_t g = {0}, *once = &g; once && (xdev_stream_guard_begin(&g, (s)), 1);   \
         xdev_stream_guard_end(&g), once = NULL)

#ifdef __cplusplus
}
#endif
#endif
