/* SPDX-License-Identifier: Apache-2.0 */
/* foreign.c - memory xdev did not allocate (xdev/interop.h): another
 * library's device memory registered so that every xdev call takes it, and
 * existing host memory page-locked. Each registration is a range in the
 * pointer registry (origin XDEV_PTR_FOREIGN, never overlapping another), so
 * the lookups every call already makes - copies' direction, bounds and
 * use-after-free checks, device_of - see it as they see xdev's own memory.
 *
 * Giving device memory back is stream-ordered the only way a library can
 * promise it to the memory's owner: unregister waits for the work queued on
 * the streams that may use it (the registration's, and those given to
 * xdev_record_stream), then calls the owner's release. DLPack imports
 * (dlpack.c) are registrations whose release is the tensor's deleter; one
 * of xdev's own memory (an xdev export coming back) is an alias of its
 * allocation, with no range of its own. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "alloc/alloc_lookup.h"
#include "interop/foreign.h"
#include "alloc/pointer_registry.h"
#include "runtime/sanitizer_probe.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"
#include "runtime/stream_order.h"
#include "xdev/interop.h"

#define MAX_STREAMS 16 /* the registration's and record_stream's, per range */

struct xdev_foreign {
    uintptr_t base;
    size_t bytes;
    xdev_memory_kind_t kind;
    xdev_device_record_t *rec; /* device memory: its device */
    xdev_backend_t *pinned_by; /* host memory: the backend that page-locked it (NULL: as is) */
    xdev_release_fn release;
    void *ctx;
    const void *token; /* what was imported (a DLPack tensor), or NULL */
    xdev_stream_t streams[MAX_STREAMS];
    int nstreams;
    uint64_t serial;           /* which registration: an address can be reused */
    struct xdev_foreign *next; /* an alias (below): the list of them */
};

/* Registrations and unregistrations, one at a time: a range checked for
 * overlap is inserted before another can be; tokens are unique. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static const void **g_tokens;
static size_t g_ntokens, g_cap_tokens;
static uint64_t g_serial;
/* Imports of memory that is xdev's own (an xdev export coming back, as a
 * torch tensor made from one): no range of their own, xdev's allocation
 * already is one; kept here so that unregister finds them by start. */
static xdev_foreign_t *g_aliases;

/* Whether [ptr, ptr + bytes) lies in a live allocation xdev made for the
 * memory rec stands for: on rec itself, or, when rec is a host-memory
 * device (what host tensors map to), any host-addressable allocation
 * (pinned host memory, a CPU device's). */
bool xdev_own_allocation(const void *ptr, size_t bytes, xdev_live_ref_t *ref) {
    xdev_error_state_t saved; /* a lookup's failure is an answer here, not an error */
    xdev_core_error_save(&saved);
    bool own = xdev_live_lookup(ptr, "ptr", ref) == XDEV_SUCCESS && ref->known &&
               ref->e.origin != XDEV_PTR_FOREIGN && ref->e.origin != XDEV_PTR_IPC &&
               xdev_live_check_extent(ref, ptr, bytes, "ptr") == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    return own;
}

static bool xdev_own_memory(const xdev_device_record_t *rec, void *ptr, size_t bytes) {
    xdev_live_ref_t ref;
    if (!xdev_own_allocation(ptr, bytes, &ref)) return false;
    bool host = (rec->be->flags & XDEV_BACKEND_HOST_MEMORY) != 0;
    if (host &&
        (ref.e.kind == XDEV_MEMORY_PINNED_HOST || (ref.e.be->flags & XDEV_BACKEND_HOST_MEMORY)))
        return true;
    return ref.e.kind == XDEV_MEMORY_DEVICE && ref.e.be == rec->be && ref.e.index == rec->id.index;
}

/* A stream's handle still names a live stream; the check leaves no error. */
static bool stream_alive(xdev_stream_t s) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    bool alive = xdev_stream_check(s, "stream") == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    return alive;
}

/* What a clash with `e` is, for a message. */
static void describe(const xdev_ptr_entry_t *e, char *buf, size_t len) {
    const char *what =
        e->origin == XDEV_PTR_FOREIGN
            ? (e->kind == XDEV_MEMORY_PINNED_HOST ? "host memory registered" : "memory registered")
        : e->origin == XDEV_PTR_IPC          ? "an IPC mapping"
        : e->kind == XDEV_MEMORY_PINNED_HOST ? "xdev's pinned host memory"
                                             : "xdev's device memory";
    snprintf(buf, len, "%s at %p (%zu bytes)", what, (void *)e->base, e->size);
}

/* Insert f's range, or say what it overlaps (g_lock held). */
static xdev_status_t insert_locked(xdev_foreign_t *f) {
    xdev_ptr_entry_t e = {.base = f->base,
                          .size = f->bytes,
                          .kind = f->kind,
                          .be = f->rec != NULL ? f->rec->be : f->pinned_by,
                          .index = f->rec != NULL ? f->rec->id.index : 0,
                          .data = f,
                          .origin = XDEV_PTR_FOREIGN},
                     clash;
    static const xdev_ptr_origin_ops_t ops = {.record_stream = xdev_foreign_record_stream};
    xdev_ptr_origin_ops_set(XDEV_PTR_FOREIGN, &ops); /* before the first range */
    xdev_status_t st = xdev_ptr_insert_exclusive(&e, &clash);
    if (st == XDEV_ERROR_INVALID_VALUE) {
        char what[160];
        describe(&clash, what, sizeof what);
        return XDEV_FAIL(st, "[%p, +%zu bytes) overlaps %s: register each range once",
                         (void *)f->base, f->bytes, what);
    }
    return st;
}

xdev_status_t xdev_foreign_register(xdev_device_record_t *rec, void *ptr, size_t bytes,
                                    xdev_stream_t stream, xdev_release_fn release, void *ctx,
                                    const void *token) {
    if (bytes == 0) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "bytes is 0: nothing to register");
    if ((uintptr_t)ptr + bytes < (uintptr_t)ptr)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%zu bytes at %p run past the address space",
                         bytes, ptr);
    if (stream == NULL) {
        XDEV_CHECK(xdev_core_current_stream(rec, &stream));
    } else {
        XDEV_CHECK(xdev_stream_check(stream, "stream"));
        if (stream->rec != rec)
            return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "stream belongs to " XDEV_REC_FMT " but the memory to " XDEV_REC_FMT,
                             XDEV_REC_ARGS(stream->rec), XDEV_REC_ARGS(rec));
    }
    xdev_foreign_t *f = calloc(1, sizeof *f);
    if (f == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a registration");
    *f = (xdev_foreign_t){.base = (uintptr_t)ptr,
                          .bytes = bytes,
                          .kind = XDEV_MEMORY_DEVICE,
                          .rec = rec,
                          .release = release,
                          .ctx = ctx,
                          .token = token,
                          .streams = {stream},
                          .nstreams = 1};
    pthread_mutex_lock(&g_lock);
    xdev_status_t st = XDEV_SUCCESS;
    for (size_t i = 0; i < g_ntokens && token != NULL; i++)
        if (g_tokens[i] == token)
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "tensor %p is imported already (a DLPack tensor is consumed once; "
                           "give it back with xdev_memory_unregister first)",
                           token);
    if (st == XDEV_SUCCESS && token != NULL && g_ntokens == g_cap_tokens) {
        size_t cap = g_cap_tokens ? 2 * g_cap_tokens : 64;
        const void **n = realloc(g_tokens, cap * sizeof *n);
        if (n == NULL) {
            st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to track an import");
        } else {
            g_tokens = n;
            g_cap_tokens = cap;
        }
    }
    f->serial = ++g_serial;
    bool own_range = false;
    if (st == XDEV_SUCCESS && token != NULL && xdev_own_memory(rec, ptr, bytes)) {
        f->next = g_aliases; /* xdev's own: its allocation is the range */
        g_aliases = f;
    } else if (st == XDEV_SUCCESS) {
        st = insert_locked(f);
        own_range = st == XDEV_SUCCESS;
    }
    if (st == XDEV_SUCCESS && token != NULL) g_tokens[g_ntokens++] = token;
    /* Under g_lock: the range cannot be given back before its hooks ran. */
    if (own_range) xdev_hooks_run_foreign(rec, ptr, bytes, stream, true);
    pthread_mutex_unlock(&g_lock);
    if (st != XDEV_SUCCESS) free(f);
    return st;
}

xdev_status_t xdev_memory_register(xdev_device_t device, void *ptr, size_t bytes,
                                   xdev_stream_t stream, xdev_release_fn release, void *ctx) {
    XDEV_REQUIRE_ARG(ptr);
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    XDEV_CHECK(xdev_foreign_register(rec, ptr, bytes, stream, release, ctx, NULL));
    return XDEV_SUCCESS;
}

/* The registration starting at ptr of `kind`, or why there is none
 * (g_lock held). */
static xdev_status_t find(const void *ptr, xdev_memory_kind_t kind, xdev_foreign_t **out) {
    for (xdev_foreign_t *a = g_aliases; a != NULL && kind == XDEV_MEMORY_DEVICE; a = a->next)
        if (a->base == (uintptr_t)ptr) {
            *out = a;
            return XDEV_SUCCESS;
        }
    xdev_ptr_entry_t e;
    const char *other =
        kind == XDEV_MEMORY_DEVICE ? "xdev_host_unregister" : "xdev_memory_unregister";
    if (!xdev_ptr_lookup(ptr, &e))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p is not registered memory (or was given back already)", ptr);
    if (e.origin == XDEV_PTR_IPC)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p is another process's memory opened by IPC: close it with "
                         "xdev_ipc_close_mem_handle",
                         ptr);
    if (e.origin != XDEV_PTR_FOREIGN)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p is xdev's own %s memory: free it with %s", ptr,
                         e.kind == XDEV_MEMORY_PINNED_HOST ? "pinned host" : "device",
                         e.kind == XDEV_MEMORY_PINNED_HOST ? "xdev_host_free" : "xdev_free");
    if (e.base != (uintptr_t)ptr)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "pointer %p points %zu bytes into memory registered at %p (%zu bytes): "
                         "give back the start of the range",
                         ptr, (size_t)((uintptr_t)ptr - e.base), (void *)e.base, e.size);
    if (e.kind != kind)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "pointer %p was registered as %s: use %s", ptr,
                         e.kind == XDEV_MEMORY_DEVICE ? "device memory" : "host memory", other);
    *out = e.data;
    return XDEV_SUCCESS;
}

/* Remove f from the registry and the tokens (g_lock held); false when
 * another thread gave it back meanwhile. */
static bool forget_locked(xdev_foreign_t *f) {
    xdev_foreign_t **link = &g_aliases;
    while (*link != NULL && *link != f)
        link = &(*link)->next;
    xdev_ptr_entry_t e;
    if (*link != NULL) {
        *link = f->next;
    } else {
        if (!xdev_ptr_lookup((const void *)f->base, &e) || e.origin != XDEV_PTR_FOREIGN ||
            e.data != f || e.base != f->base)
            return false;
        (void)xdev_ptr_remove_origin((const void *)f->base, XDEV_PTR_FOREIGN, &e);
        /* the stream-order sanitizer's uses of the range go with it */
        if (f->kind == XDEV_MEMORY_DEVICE) xdev_san_free((const void *)f->base, NULL, false);
    }
    for (size_t i = 0; i < g_ntokens; i++)
        if (f->token != NULL && g_tokens[i] == f->token) {
            g_tokens[i] = g_tokens[--g_ntokens];
            break;
        }
    return true;
}

xdev_status_t xdev_memory_unregister(void *ptr) {
    XDEV_REQUIRE_ARG(ptr);
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_stream_t streams[MAX_STREAMS];
    int waited = 0;
    uint64_t serial = 0;
    for (;;) {
        pthread_mutex_lock(&g_lock);
        xdev_foreign_t *f = NULL;
        xdev_status_t st = find(ptr, XDEV_MEMORY_DEVICE, &f);
        if (st == XDEV_SUCCESS && serial != 0 && f->serial != serial)
            st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                           "pointer %p was given back (and registered again) by another thread "
                           "meanwhile",
                           ptr);
        if (st == XDEV_SUCCESS && serial != 0 && waited == f->nstreams) { /* all waited for */
            bool alias = false;
            for (xdev_foreign_t *a = g_aliases; a != NULL && !alias; a = a->next)
                alias = a == f;
            bool mine = forget_locked(f);
            if (mine && !alias)
                xdev_hooks_run_foreign(f->rec, (void *)f->base, f->bytes, NULL, false);
            pthread_mutex_unlock(&g_lock);
            if (!mine)
                return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                                     "pointer %p was given back by another thread meanwhile", ptr);
            if (f->release != NULL) f->release(f->ctx);
            free(f);
            return XDEV_SUCCESS;
        }
        int n = st == XDEV_SUCCESS ? f->nstreams : 0;
        if (st == XDEV_SUCCESS) {
            serial = f->serial;
            memcpy(streams, f->streams, sizeof streams);
        }
        pthread_mutex_unlock(&g_lock);
        XDEV_CHECK(st);
        /* Wait, changing nothing: a wait that fails (from a host function of
         * one of the streams) leaves the memory registered. A stream
         * xdev_record_stream adds meanwhile is waited for on the next turn.
         * A stream destroyed meanwhile is skipped: xdev's own streams waited
         * for their work when destroyed; a wrapper of a native stream does
         * not (keep it until the memory is given back). */
        for (int i = waited; i < n; i++) {
            if (!stream_alive(streams[i])) continue;
            st = xdev_be_stream_synchronize(streams[i]->rec, streams[i]->native);
            if (st != XDEV_SUCCESS) {
                char why[512];
                snprintf(why, sizeof why, "%s", xdev_last_error());
                return XDEV_API_FAIL(st,
                                     "%p: waiting for a stream that used it failed (%s); it stays "
                                     "registered",
                                     ptr, why);
            }
            xdev_order_on_host_waits_stream(streams[i]);
        }
        waited = n;
    }
}

xdev_status_t xdev_foreign_record_stream(const xdev_ptr_entry_t *e, xdev_stream_t stream) {
    xdev_status_t st = XDEV_SUCCESS;
    pthread_mutex_lock(&g_lock);
    /* e was read before the lock: the registration may have been given back
     * (and freed) since; it is ours to touch only if still registered. */
    xdev_ptr_entry_t now;
    xdev_foreign_t *f = NULL;
    if (xdev_ptr_lookup((const void *)e->base, &now) && now.origin == XDEV_PTR_FOREIGN &&
        now.base == e->base)
        f = now.data;
    bool known = false;
    for (int i = 0; f != NULL && i < f->nstreams; i++)
        known = known || f->streams[i] == stream;
    if (f == NULL)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "registered memory at %p was given back meanwhile",
                       (void *)e->base);
    else if (!known && f->nstreams == MAX_STREAMS)
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                       "registered memory at %p is used on %d streams already (the most it "
                       "tracks)",
                       (void *)f->base, MAX_STREAMS);
    else if (!known)
        f->streams[f->nstreams++] = stream;
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* ------------------------------------------------------------ host memory */

xdev_status_t xdev_host_register(void *ptr, size_t bytes) {
    XDEV_REQUIRE_ARG(ptr);
    XDEV_CHECK(xdev_core_ensure_init());
    if (bytes == 0)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "bytes is 0: nothing to register");
    if ((uintptr_t)ptr + bytes < (uintptr_t)ptr)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "%zu bytes at %p run past the address space",
                             bytes, ptr);
    xdev_backend_t *be;
    XDEV_CHECK(xdev_backend_acquire(xdev_core_default_type(), &be));
    xdev_foreign_t *f = calloc(1, sizeof *f);
    if (f == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for a registration");
    *f = (xdev_foreign_t){
        .base = (uintptr_t)ptr, .bytes = bytes, .kind = XDEV_MEMORY_PINNED_HOST, .pinned_by = be};
    bool pin = XDEV_HAS(be, memory, host_register); /* the group memory.pin, whole */
    pthread_mutex_lock(&g_lock);
    xdev_status_t st = insert_locked(f);
    if (st == XDEV_SUCCESS && pin) {
        st = xdev_be_memory_host_register(be, ptr, bytes);
        xdev_ptr_entry_t e;
        if (st != XDEV_SUCCESS) (void)xdev_ptr_remove_origin(ptr, XDEV_PTR_FOREIGN, &e);
    }
    pthread_mutex_unlock(&g_lock);
    if (st != XDEV_SUCCESS) free(f);
    XDEV_CHECK(st);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_host_unregister(void *ptr) {
    XDEV_REQUIRE_ARG(ptr);
    XDEV_CHECK(xdev_core_ensure_init());
    pthread_mutex_lock(&g_lock);
    xdev_foreign_t *f = NULL;
    xdev_status_t st = find(ptr, XDEV_MEMORY_PINNED_HOST, &f);
    xdev_backend_t *be = f != NULL ? f->pinned_by : NULL;
    /* The backend first: if it fails, the memory is still page-locked, and
     * still registered, so that it can be tried again. */
    if (st == XDEV_SUCCESS && XDEV_HAS(be, memory, host_unregister))
        st = xdev_be_memory_host_unregister(be, ptr);
    if (st == XDEV_SUCCESS && !forget_locked(f))
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "pointer %p was given back meanwhile", ptr);
    pthread_mutex_unlock(&g_lock);
    XDEV_CHECK(st);
    free(f);
    return XDEV_SUCCESS;
}
