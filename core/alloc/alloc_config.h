/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_config.h - XDEV_ALLOC_CONF, the caching allocator's settings.
 *
 * Format (as PYTORCH_CUDA_ALLOC_CONF): comma-separated key:value pairs,
 *   max_split_size_mb:<int > 20>      blocks larger than this are never split
 *   roundup_power2_divisions:<n>      round sizes up to n steps per power of two
 *   roundup_power2_divisions:[256:1,512:2,>:8]   per size (MiB) interval
 *   garbage_collection_threshold:<0..1 exclusive>
 *   expandable_segments:true|false    one growing segment per stream and pool,
 *                                     mapped in chunks (backend virtual memory)
 *   backend:native|async              async = the backend's stream-ordered allocator
 *   pinned_max_cached_mb:<int>        cap on cached pinned host memory
 *   trim_before_grow:true|false       return free segments before passing the
 *                                     high-water mark (default true)
 *   thread_arenas:<1..64>             caches per device that contending threads
 *                                     spread over (default 16; 1 = one lock)
 * Unknown keys and malformed values are errors naming the key. The parser is
 * pure (no globals) so a fuzzer can drive it. */
#ifndef XDEV_CORE_ALLOC_CONFIG_H
#define XDEV_CORE_ALLOC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* Size intervals for roundup_power2_divisions: [1,2),[2,4),...,[2^15, inf) MiB,
 * sizes under 1 MiB use the first. */
#define XDEV_ROUNDUP_INTERVALS 16

/* Most arenas (independent caches) a device's allocator may split into. */
#define XDEV_MAX_ARENAS 64
#define XDEV_DEFAULT_ARENAS 16

typedef struct xdev_alloc_config {
    size_t max_split_size;                              /* SIZE_MAX: no limit */
    unsigned roundup_divisions[XDEV_ROUNDUP_INTERVALS]; /* 0: no power-of-two rounding */
    double gc_threshold;                                /* 0: off */
    bool backend_async;
    size_t pinned_max_cached; /* SIZE_MAX: no limit */
    bool trim_before_grow;    /* xdev's growth policy (default on) */
    int thread_arenas;        /* arenas per device, 1..XDEV_MAX_ARENAS (default 16) */
    bool expandable_segments; /* default off */
} xdev_alloc_config_t;

void xdev_alloc_config_defaults(xdev_alloc_config_t *cfg);

/* Parse `text` over the defaults. On error returns false and writes a message
 * naming the key into err. NULL or "" gives the defaults. */
bool xdev_alloc_config_parse(const char *text, xdev_alloc_config_t *cfg, char *err, size_t errlen);

#endif
