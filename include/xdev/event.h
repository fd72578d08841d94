/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/event.h - events: markers in a stream for ordering and timing.
 *
 * As torch.cuda.Event: created without a device and bound to one on the
 * first record; a later record on another device's stream is an error. */
#ifndef XDEV_EVENT_H
#define XDEV_EVENT_H

#include "xdev/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    XDEV_EVENT_DEFAULT = 0,
    XDEV_EVENT_TIMING = 1 << 0,        /* enable_timing: elapsed_time works */
    XDEV_EVENT_BLOCKING_SYNC = 1 << 1, /* synchronize sleeps instead of spinning */
    XDEV_EVENT_INTERPROCESS = 1 << 2,  /* shareable via IPC; not with TIMING */
};

XDEV_API XDEV_RESULT xdev_status_t xdev_event_create(unsigned flags, xdev_event_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_event_destroy(xdev_event_t event);

/* Record on `stream` (NULL = current stream of the current device). */
XDEV_API XDEV_RESULT xdev_status_t xdev_event_record(xdev_event_t event, xdev_stream_t stream);

/* XDEV_SUCCESS when the recorded work is done (or never recorded),
 * XDEV_ERROR_NOT_READY otherwise. */
XDEV_API XDEV_RESULT xdev_status_t xdev_event_query(xdev_event_t event);

/* Wait on the host for the recorded work; returns at once if never recorded. */
XDEV_API XDEV_RESULT xdev_status_t xdev_event_synchronize(xdev_event_t event);

/* Milliseconds between two completed timing events of the same device.
 * Errors: an event not recorded, created without XDEV_EVENT_TIMING, not yet
 * complete (XDEV_ERROR_NOT_READY), or on different devices. */
XDEV_API XDEV_RESULT xdev_status_t xdev_event_elapsed_time(xdev_event_t start, xdev_event_t end,
                                                           float *ms);

/* Device the event was recorded on (error if never recorded). */
XDEV_API XDEV_RESULT xdev_status_t xdev_event_get_device(xdev_event_t event, xdev_device_t *out);
XDEV_API XDEV_RESULT xdev_status_t xdev_event_get_flags(xdev_event_t event, unsigned *out);

/* Native event (cudaEvent_t ...); error if never recorded (created lazily). */
XDEV_API XDEV_RESULT xdev_status_t xdev_event_native_handle(xdev_event_t event, void **out);

#ifdef __cplusplus
}
#endif
#endif
