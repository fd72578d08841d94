/* SPDX-License-Identifier: Apache-2.0 */
/* ipc.c - sharing device memory and events between processes through the
 * backend's optional ipc table (cudaIpc* on CUDA).
 *
 * A memory handle names the segment that holds the pointer (the pointer
 * registry knows segments: the caching allocator registers each one) plus the
 * pointer's offset, so interior and sub-allocated pointers can be shared.
 * Opened segments are cached by their native handle and reference counted
 * (CUDA maps a segment once per process); they enter the pointer registry as
 * device memory of the handle's device so that copies infer their direction.
 * A mapping spans the exporter's whole segment, neighbours included, so each
 * open also records the range its handle exported (the pointer to the end of
 * the allocation's requested bytes): xdev_live_lookup measures every call on
 * an opened pointer against that range, not the segment (docs/bounds.md).
 * Closing drops that open and a reference; xdev_ipc_collect unmaps
 * unreferenced segments. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/alloc_lookup.h"
#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/event_internal.h"
#include "alloc/pointer_registry.h"
#include "runtime/process.h"
#include "runtime/registry.h"
#include "xdev/ipc.h"

#define IPC_MAGIC_MEM 0x4d504958u   /* "XIPM" */
#define IPC_MAGIC_EVENT 0x45504958u /* "XIPE" */
#define IPC_VERSION 1u

/* The bytes of a handle (same machine, so host byte order). */
typedef struct ipc_wire {
    uint32_t magic;
    uint16_t version;
    uint16_t type;     /* xdev_device_type_t */
    int32_t index;     /* exporter's device index */
    uint32_t pid;      /* exporter */
    uint64_t seg_size; /* bytes of the shared segment (memory) */
    uint64_t offset;   /* pointer - segment base (memory) */
    uint64_t bytes;    /* usable from the pointer to the end of its allocation */
    unsigned char native[XDEV_IPC_NATIVE_SIZE];
} ipc_wire_t;

_Static_assert(sizeof(ipc_wire_t) <= XDEV_IPC_HANDLE_SIZE, "IPC handle layout too large");

/* One xdev_ipc_open_mem_handle: the part of its mapping the opener may use. */
typedef struct ipc_open {
    struct ipc_open *next;
    uintptr_t ptr; /* what the open returned */
    size_t bytes;  /* from ptr to the end of the exported allocation's requested bytes */
} ipc_open_t;

/* One segment opened from another process. */
typedef struct ipc_mapping {
    struct ipc_mapping *next;
    xdev_backend_t *be;
    int index;
    unsigned char native[XDEV_IPC_NATIVE_SIZE];
    void *base;
    size_t size;
    long refs;         /* opens not closed: the length of `opens` */
    ipc_open_t *opens; /* newest first */
} ipc_mapping_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ipc_mapping_t *g_mappings;

/* The open of IPC mapping `mapping` (an XDEV_PTR_IPC entry's data) that
 * ptr is in, for alloc/'s live lookups (pointer_registry.h's origin ops):
 * 1 (base = the pointer xdev_ipc_open_mem_handle returned, size = the
 * exported allocation's requested bytes from there), 0 in no open
 * allocation (past the exported one, or closed), -1 the mapping is gone
 * (collected). */
static int ipc_live_extent(const void *mapping, const void *ptr, uintptr_t *base, size_t *size);
static const xdev_ptr_origin_ops_t g_origin_ops = {.live_extent = ipc_live_extent};

static xdev_status_t not_supported(const xdev_backend_t *be, const char *what) {
    return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED, "the %s backend cannot share %s between processes",
                     be->name, what);
}

/* Check a handle's bytes and find its device. */
static xdev_status_t parse(const unsigned char *bytes, uint32_t magic, ipc_wire_t *w,
                           xdev_device_record_t **rec) {
    memcpy(w, bytes, sizeof *w);
    if (w->magic != magic || w->version != IPC_VERSION)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "not an xdev IPC %s handle (bad magic or version %u)",
                         magic == IPC_MAGIC_MEM ? "memory" : "event", (unsigned)w->version);
    if (w->pid == (uint32_t)getpid())
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the handle was exported by this process (pid %u): use the original "
                         "%s",
                         (unsigned)w->pid, magic == IPC_MAGIC_MEM ? "pointer" : "event");
    return xdev_device_lookup((xdev_device_t){(xdev_device_type_t)w->type, w->index}, rec);
}

xdev_status_t xdev_ipc_get_mem_handle(const void *ptr, xdev_ipc_mem_handle_t *out) {
    XDEV_REQUIRE_ARG(ptr);
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_live_ref_t ref; /* refuses freed memory */
    XDEV_CHECK(xdev_live_lookup(ptr, "ptr", &ref));
    xdev_ptr_entry_t e = ref.e;
    if (!ref.known || e.kind != XDEV_MEMORY_DEVICE)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "pointer %p is not device memory allocated by xdev", ptr);
    if (e.origin == XDEV_PTR_IPC)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "pointer %p was opened from another process's IPC handle; share "
                             "that process's handle instead",
                             ptr);
    if (e.origin == XDEV_PTR_FOREIGN)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "pointer %p is memory another library allocated (registered with "
                             "xdev_memory_register, or a DLPack import): share it with that "
                             "library's own IPC",
                             ptr);
    if (e.origin == XDEV_PTR_MANAGED)
        return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "pointer %p is managed memory (xdev_malloc_managed), which cannot be "
                             "shared with another process (cudaIpcGetMemHandle refuses it); "
                             "allocate memory to share with xdev_malloc",
                             ptr);
    if (e.origin == XDEV_PTR_EXPANDABLE)
        return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "pointer %p is in an expandable segment (XDEV_ALLOC_CONF="
                             "expandable_segments:true), whose memory is mapped in chunks that "
                             "cannot be shared with another process; allocate memory to share "
                             "without expandable segments",
                             ptr);
    size_t into = (size_t)((uintptr_t)ptr - ref.base);
    if (into >= ref.size && !(into == 0 && ref.size == 0))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "ptr (%p) is %zu bytes into a %zu-byte allocation at %p: past the "
                             "bytes requested (the allocator's rounding is not the caller's to "
                             "share)",
                             ptr, into, ref.size, (void *)ref.base);
    if (!XDEV_HAS(e.be, ipc, get_mem_handle)) XDEV_CHECK(not_supported(e.be, "memory"));
    ipc_wire_t w;
    memset(&w, 0, sizeof w);
    w.magic = IPC_MAGIC_MEM;
    w.version = IPC_VERSION;
    w.type = (uint16_t)e.be->type;
    w.index = e.index;
    w.pid = (uint32_t)getpid();
    w.seg_size = e.size;
    w.offset = (uintptr_t)ptr - e.base;
    w.bytes = ref.size - into; /* what the opener may use: ipc_live_extent */
    XDEV_CHECK(xdev_be_ipc_get_mem_handle(&e.be->devices[e.index], (void *)e.base, w.native));
    memset(out, 0, sizeof *out);
    memcpy(out->bytes, &w, sizeof w);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_ipc_mem_handle_info(const xdev_ipc_mem_handle_t *handle, xdev_device_t *device,
                                       size_t *bytes) {
    XDEV_REQUIRE_ARG(handle);
    ipc_wire_t w;
    memcpy(&w, handle->bytes, sizeof w);
    if (w.magic != IPC_MAGIC_MEM || w.version != IPC_VERSION)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "not an xdev IPC memory handle");
    if (device != NULL) *device = (xdev_device_t){(xdev_device_type_t)w.type, w.index};
    if (bytes != NULL) *bytes = (size_t)w.bytes;
    return XDEV_SUCCESS;
}

/* Unmap a mapping no open references, already unlinked from g_mappings;
 * called with g_lock held. */
static xdev_status_t unmap_locked(ipc_mapping_t *m) {
    xdev_ptr_entry_t e;
    (void)xdev_ptr_remove(m->base, XDEV_MEMORY_DEVICE, &e);
    xdev_device_record_t *mrec = &m->be->devices[m->index];
    xdev_status_t st = XDEV_HAS(m->be, ipc, close_mem_handle)
                           ? xdev_be_ipc_close_mem_handle(mrec, m->base)
                           : XDEV_SUCCESS;
    free(m);
    return st;
}

/* A handle's segment size comes from the exporter: one larger than the
 * device's memory cannot be a real segment, and would make the range xdev
 * records for the mapping cover addresses that are not the mapping's. */
static xdev_status_t check_segment_size(xdev_device_record_t *rec, uint64_t seg_size) {
    xdev_device_properties_t props;
    memset(&props, 0, sizeof props);
    xdev_error_state_t saved; /* no answer: the mapping's own overlap check still applies */
    xdev_core_error_save(&saved);
    bool known = xdev_be_device_get_properties(rec, &props) == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    if (!known || props.total_memory == 0) return XDEV_SUCCESS;
    if (seg_size > props.total_memory)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "corrupt handle: its segment of %llu bytes is larger than " XDEV_REC_FMT
                         "'s %zu bytes of memory",
                         (unsigned long long)seg_size, XDEV_REC_ARGS(rec), props.total_memory);
    return XDEV_SUCCESS;
}

/* Map the segment, or take another reference on its cached mapping, and
 * record the open `o` (the range the handle exported) on it; called with
 * g_lock held. */
static xdev_status_t open_locked(const ipc_wire_t *w, xdev_device_record_t *rec, ipc_open_t *o,
                                 void **base) {
    xdev_backend_t *be = rec->be;
    ipc_mapping_t **pm = &g_mappings;
    while (*pm != NULL && ((*pm)->be != be || (*pm)->index != w->index ||
                           memcmp((*pm)->native, w->native, sizeof(*pm)->native) != 0))
        pm = &(*pm)->next;
    ipc_mapping_t *m = *pm;
    if (m != NULL && m->size != w->seg_size) {
        if (m->refs > 0)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "corrupt handle: its segment is open here with %zu bytes, the "
                             "handle says %llu",
                             m->size, (unsigned long long)w->seg_size);
        *pm = m->next; /* a closed, cached mapping of a segment since replaced: map anew */
        xdev_status_t st = unmap_locked(m);
        if (st != XDEV_SUCCESS) return st;
        m = NULL;
    }
    if (m == NULL) {
        if (!XDEV_HAS(be, ipc, open_mem_handle)) return not_supported(be, "memory");
        xdev_status_t st = check_segment_size(rec, w->seg_size);
        if (st != XDEV_SUCCESS) return st;
        m = calloc(1, sizeof *m);
        if (m == NULL)
            return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for an IPC mapping");
        st = xdev_be_ipc_open_mem_handle(rec, w->native, &m->base);
        if (st != XDEV_SUCCESS) {
            free(m);
            return st;
        }
        m->be = be;
        m->index = w->index;
        memcpy(m->native, w->native, sizeof m->native);
        m->size = (size_t)w->seg_size;
        xdev_ptr_entry_t e = {(uintptr_t)m->base, m->size, XDEV_MEMORY_DEVICE, be,
                              w->index,           m,       XDEV_PTR_IPC,       NULL};
        xdev_ptr_origin_ops_set(XDEV_PTR_IPC, &g_origin_ops); /* before the first range */
        xdev_ptr_entry_t clash;
        st = xdev_ptr_insert_exclusive(&e, &clash);
        if (st == XDEV_ERROR_INVALID_VALUE)
            st =
                XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                          "the handle's segment (%llu bytes, mapped at %p) overlaps memory xdev "
                          "knows at %p (+%zu bytes): the handle's size is not the mapping's "
                          "(a corrupt or forged handle)",
                          (unsigned long long)w->seg_size, m->base, (void *)clash.base, clash.size);
        if (st != XDEV_SUCCESS) {
            if (XDEV_HAS(be, ipc, close_mem_handle))
                (void)xdev_be_ipc_close_mem_handle(rec, m->base);
            free(m);
            return st;
        }
        m->next = g_mappings;
        g_mappings = m;
    }
    o->ptr = (uintptr_t)m->base + (uintptr_t)w->offset;
    o->bytes = (size_t)w->bytes;
    o->next = m->opens;
    m->opens = o;
    m->refs++;
    *base = m->base;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_ipc_open_mem_handle(const xdev_ipc_mem_handle_t *handle, void **ptr) {
    XDEV_REQUIRE_ARG(handle);
    XDEV_REQUIRE_ARG(ptr);
    *ptr = NULL;
    XDEV_CHECK(xdev_core_ensure_init());
    ipc_wire_t w;
    xdev_device_record_t *rec;
    XDEV_CHECK(parse(handle->bytes, IPC_MAGIC_MEM, &w, &rec));
    if (w.offset >= w.seg_size || w.bytes > w.seg_size - w.offset)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "corrupt handle: %llu bytes at offset %llu run past its %llu-byte "
                             "segment",
                             (unsigned long long)w.bytes, (unsigned long long)w.offset,
                             (unsigned long long)w.seg_size);
    ipc_open_t *o = calloc(1, sizeof *o);
    if (o == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to record an IPC open");
    void *base = NULL;
    pthread_mutex_lock(&g_lock);
    xdev_status_t st = open_locked(&w, rec, o, &base);
    pthread_mutex_unlock(&g_lock);
    if (st != XDEV_SUCCESS) free(o);
    XDEV_CHECK(st);
    *ptr = (char *)base + w.offset;
    return XDEV_SUCCESS;
}

/* The open of m that ptr belongs to: the one that returned ptr, else (an
 * interior pointer) the one with the lowest start whose range holds it;
 * *link is where it hangs. NULL: none. Called with g_lock held. */
static ipc_open_t *find_open(ipc_mapping_t *m, uintptr_t p, ipc_open_t ***link) {
    ipc_open_t *best = NULL;
    for (ipc_open_t **lo = &m->opens; *lo != NULL; lo = &(*lo)->next) {
        ipc_open_t *o = *lo;
        if (o->ptr == p) {
            *link = lo;
            return o;
        }
        if (p > o->ptr && p - o->ptr < o->bytes && (best == NULL || o->ptr < best->ptr)) {
            best = o;
            *link = lo;
        }
    }
    return best;
}

static int ipc_live_extent(const void *mapping, const void *ptr, uintptr_t *base, size_t *size) {
    int live = -1;
    pthread_mutex_lock(&g_lock);
    ipc_mapping_t *m = g_mappings;
    while (m != NULL && m != mapping)
        m = m->next;
    if (m != NULL) {
        ipc_open_t **link;
        ipc_open_t *o = find_open(m, (uintptr_t)ptr, &link);
        live = o != NULL;
        if (o != NULL) {
            *base = o->ptr;
            *size = o->bytes;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return live;
}

xdev_status_t xdev_ipc_close_mem_handle(void *ptr) {
    XDEV_REQUIRE_ARG(ptr);
    XDEV_CHECK(xdev_process_check()); /* takes locks: not in a forked child */
    xdev_ptr_entry_t e;
    bool found = xdev_ptr_lookup(ptr, &e);
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    ipc_mapping_t *m = g_mappings;
    while (m != NULL && (!found || m != e.data))
        m = m->next;
    if (m == NULL)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "pointer %p is not memory opened with xdev_ipc_open_mem_handle", ptr);
    else if (m->refs == 0)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "pointer %p: its IPC mapping has already been closed as often as opened",
                       ptr);
    else {
        ipc_open_t **link;
        ipc_open_t *o = find_open(m, (uintptr_t)ptr, &link);
        if (o == NULL)
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "pointer %p is in an IPC mapping but in no allocation opened there "
                           "now (its handle was closed, or the pointer is past the exported "
                           "allocation)",
                           ptr);
        else {
            *link = o->next;
            free(o);
            m->refs--;
        }
    }
    pthread_mutex_unlock(&g_lock);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_ipc_collect(void) {
    XDEV_CHECK(xdev_process_check()); /* takes a lock: not in a forked child */
    xdev_status_t first = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    for (ipc_mapping_t **pm = &g_mappings; *pm != NULL;) {
        ipc_mapping_t *m = *pm;
        if (m->refs > 0) {
            pm = &m->next;
            continue;
        }
        *pm = m->next;
        xdev_status_t st = unmap_locked(m);
        if (st != XDEV_SUCCESS && first == XDEV_SUCCESS) first = st;
    }
    pthread_mutex_unlock(&g_lock);
    XDEV_CHECK(first);
    return XDEV_SUCCESS;
}

/* Bind a never-recorded event to the current device of the default type
 * (torch creates an event on ipc_handle()); called with event->lock held. */
static xdev_status_t bind_event_locked(xdev_event_t event) {
    xdev_device_record_t *rec;
    xdev_device_t cur = {xdev_core_default_type(), -1};
    xdev_status_t st = xdev_device_lookup(cur, &rec);
    if (st != XDEV_SUCCESS) return st;
    st = xdev_be_event_create(rec, event->flags, &event->native);
    if (st != XDEV_SUCCESS) return st;
    event->device = rec->id;
    atomic_store_explicit(&event->rec, rec, memory_order_release);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_ipc_get_event_handle(xdev_event_t event, xdev_ipc_event_handle_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_event_check(event, "event"));
    if (!(event->flags & XDEV_EVENT_INTERPROCESS))
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the event was created without XDEV_EVENT_INTERPROCESS");
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&event->lock);
    if (atomic_load_explicit(&event->rec, memory_order_relaxed) == NULL)
        st = bind_event_locked(event);
    xdev_device_record_t *erec = atomic_load_explicit(&event->rec, memory_order_relaxed);
    ipc_wire_t w;
    memset(&w, 0, sizeof w);
    if (st == XDEV_SUCCESS) {
        st = XDEV_HAS(erec->be, ipc, get_event_handle)
                 ? xdev_be_ipc_get_event_handle(erec, event->native, w.native)
                 : not_supported(erec->be, "events");
    }
    if (st == XDEV_SUCCESS) {
        w.magic = IPC_MAGIC_EVENT;
        w.version = IPC_VERSION;
        w.type = (uint16_t)erec->id.type;
        w.index = erec->id.index;
        w.pid = (uint32_t)getpid();
    }
    pthread_mutex_unlock(&event->lock);
    XDEV_CHECK(st);
    memset(out, 0, sizeof *out);
    memcpy(out->bytes, &w, sizeof w);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_ipc_open_event_handle(const xdev_ipc_event_handle_t *handle, xdev_event_t *out) {
    XDEV_REQUIRE_ARG(handle);
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    ipc_wire_t w;
    xdev_device_record_t *rec;
    XDEV_CHECK(parse(handle->bytes, IPC_MAGIC_EVENT, &w, &rec));
    if (!XDEV_HAS(rec->be, ipc, open_event_handle)) XDEV_CHECK(not_supported(rec->be, "events"));
    void *native = NULL;
    XDEV_CHECK(xdev_be_ipc_open_event_handle(rec, w.native, &native));
    xdev_event_t e = xdev_core_event_new(XDEV_EVENT_INTERPROCESS);
    if (e == NULL) {
        (void)xdev_be_event_destroy(rec, native);
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for an event handle");
    }
    pthread_mutex_lock(&e->lock);
    e->native = native;
    e->device = rec->id;
    atomic_store_explicit(&e->rec, rec, memory_order_release);
    pthread_mutex_unlock(&e->lock);
    *out = e;
    return XDEV_SUCCESS;
}
