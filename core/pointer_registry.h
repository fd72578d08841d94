/* pointer_registry.h - every allocation xdev handed out, by address range,
 * so that copies infer their direction, device_of works on interior
 * pointers, and a foreign pointer or double free is an error, not a crash. */
#ifndef XDEV_CORE_POINTER_REGISTRY_H
#define XDEV_CORE_POINTER_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "registry.h"
#include "xdev/memory.h"

typedef struct xdev_ptr_entry {
    uintptr_t base;
    size_t size;
    xdev_memory_kind_t kind;
    xdev_backend_t *be;
    int index;  /* logical device (DEVICE kind) */
    void *data; /* owner's record (the pinned cache's block) */
} xdev_ptr_entry_t;

/* Record an allocation; XDEV_ERROR_OUT_OF_MEMORY if the table cannot grow. */
xdev_status_t xdev_ptr_insert(const xdev_ptr_entry_t *entry);

/* Find the allocation containing addr (interior pointers included). */
bool xdev_ptr_lookup(const void *addr, xdev_ptr_entry_t *out);

/* Remove the allocation that starts exactly at base and has `kind`. On
 * failure sets a message that says why: unknown pointer, interior pointer
 * (with its allocation), wrong kind (with the right free function). */
xdev_status_t xdev_ptr_remove(const void *base, xdev_memory_kind_t kind, xdev_ptr_entry_t *out);

#endif
