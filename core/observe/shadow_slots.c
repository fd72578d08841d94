/* SPDX-License-Identifier: Apache-2.0 */
/* shadow_slots.c - shadow execution's slots and mirrors (shadow_internal.h).
 *
 * When a backend loads under XDEV_SHADOW=cpu, its table is copied and the
 * copy's allocation and stream-ordered slots are replaced by ones here that
 * call the backend's own slot, then keep what the shadow needs: a mirror of
 * each device allocation (host memory, starting as a copy of the device's
 * bytes), and a record of each call with its arguments. Step 5 of the
 * enqueue path (shadow.c) replays the records (shadow_replay.c) with the
 * CPU backend's original slots (saved here when the CPU backend loaded,
 * before its own table was shadowed) on the CPU's device 0 and a private
 * stream of it (xdev_shadow_device, here too): the CPU device is the
 * shadow device, whatever the real backend is, and the CPU shadowing
 * itself is the same code with separate memory and stream.
 * Kernels are replayed when their module's image is one the CPU takes (a
 * host build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "observe/shadow_internal.h"
#include "runtime/capture.h"
#include "runtime/stream_internal.h"
#include "xdev/event.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic size_t g_nunread; /* mirrors made during a capture, not read yet */

void xdev_shadow_lock(void) {
    pthread_mutex_lock(&g_lock);
}
void xdev_shadow_unlock(void) {
    pthread_mutex_unlock(&g_lock);
}

/* ------------------------------------------------------------ tables */

/* Each loaded backend's own table (before the shadow's slots), by type, and
 * the shadowed copies of its tables the core calls instead. */
static xdev_backend_api_t g_orig[XDEV_MAX_DEVICE_TYPES];
static xdev_memory_vtable_t g_wmem[XDEV_MAX_DEVICE_TYPES];
static xdev_ops_vtable_t g_wops[XDEV_MAX_DEVICE_TYPES];
static xdev_rng_vtable_t g_wrng[XDEV_MAX_DEVICE_TYPES];
static xdev_blas_vtable_t g_wblas[XDEV_MAX_DEVICE_TYPES];
static xdev_graph_vtable_t g_wgraph[XDEV_MAX_DEVICE_TYPES];

/* Device contexts to their backend's type (DEV slots get only the context). */
#define SH_MAX_CTX 256
static struct {
    xdev_backend_device_t *ctx;
    int type;
    bool host_memory;
} g_ctx[SH_MAX_CTX];
static _Atomic int g_nctx;

/* The shadow device: the CPU backend's own table, its device 0, a stream. */
static const xdev_backend_api_t *g_cpu;
static xdev_backend_device_t *g_cpu_dev;
static void *g_cpu_stream;

static int type_of(const xdev_backend_device_t *ctx, bool *host_memory) {
    int n = atomic_load_explicit(&g_nctx, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (g_ctx[i].ctx == ctx) {
            if (host_memory != NULL) *host_memory = g_ctx[i].host_memory;
            return g_ctx[i].type;
        }
    return -1;
}

const xdev_backend_api_t *xdev_shadow_orig(const xdev_backend_device_t *ctx) {
    int t = type_of(ctx, NULL);
    return t >= 0 ? &g_orig[t] : NULL;
}

/* The shadow device's stream (lock held); false without a CPU backend. */
static bool shadow_ready(void) {
    if (g_cpu == NULL) {
        /* The CPU backend loads (and saves its table here) on its first use. */
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        xdev_backend_t *be;
        pthread_mutex_unlock(&g_lock); /* its load runs the backend-loaded hook */
        (void)xdev_backend_acquire(XDEV_DEVICE_CPU, &be);
        pthread_mutex_lock(&g_lock);
        xdev_core_error_restore(&saved);
        if (g_cpu == NULL) return false;
    }
    if (g_cpu_stream == NULL && g_cpu->stream->create(g_cpu_dev, XDEV_STREAM_PRIORITY_NORMAL,
                                                      &g_cpu_stream) != XDEV_SUCCESS)
        g_cpu_stream = NULL;
    return g_cpu_stream != NULL;
}

bool xdev_shadow_device(const xdev_backend_api_t **api, xdev_backend_device_t **dev,
                        void **stream) {
    if (!shadow_ready()) return false;
    *api = g_cpu;
    *dev = g_cpu_dev;
    *stream = g_cpu_stream;
    return true;
}

/* ------------------------------------------------------------ mirrors */

static sh_mirror_t *g_mirrors; /* sorted by base */
static size_t g_nmirrors, g_capmirrors;

sh_mirror_t *xdev_shadow_find(const void *p) {
    uintptr_t a = (uintptr_t)p;
    size_t lo = 0, hi = g_nmirrors;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g_mirrors[mid].base + g_mirrors[mid].size <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < g_nmirrors && g_mirrors[lo].base <= a) return &g_mirrors[lo];
    return NULL;
}

void xdev_shadow_each(void (*fn)(sh_mirror_t *m, void *user), void *user) {
    for (size_t i = 0; i < g_nmirrors; i++)
        fn(&g_mirrors[i], user);
}

/* A private stream of each real device for the shadow's reads of device
 * memory: the default stream may hold the application's work, which may
 * wait for a thread that waits for the shadow's lock. */
static struct {
    xdev_backend_device_t *ctx;
    void *stream;
} g_read[SH_MAX_CTX];
static int g_nread;
static pthread_mutex_t g_read_lock = PTHREAD_MUTEX_INITIALIZER;

static void *read_stream(const xdev_backend_api_t *o, xdev_backend_device_t *ctx) {
    void *s = NULL;
    pthread_mutex_lock(&g_read_lock);
    for (int i = 0; i < g_nread && s == NULL; i++)
        if (g_read[i].ctx == ctx) s = g_read[i].stream;
    if (s == NULL && g_nread < SH_MAX_CTX) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        if (o->stream->create(ctx, XDEV_STREAM_PRIORITY_NORMAL, &s) != XDEV_SUCCESS) s = NULL;
        xdev_core_error_restore(&saved);
        if (s != NULL) g_read[g_nread++] = (__typeof__(g_read[0])){ctx, s};
    }
    pthread_mutex_unlock(&g_read_lock);
    return s;
}

bool xdev_shadow_read_device(const sh_mirror_t *m, const void *p, size_t n, void *out) {
    if (m->host_memory) {
        memcpy(out, p, n);
        return true;
    }
    const xdev_backend_api_t *o = &g_orig[m->type];
    void *s = read_stream(o, m->ctx);
    xdev_copy_desc_t d = {.size = sizeof d,
                          .dst = out,
                          .src = p,
                          .bytes = n,
                          .kind = XDEV_COPY_DEVICE_TO_HOST,
                          .src_device = m->ctx};
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    bool ok = s != NULL && o->memory->memcpy_async(m->ctx, &d, s) == XDEV_SUCCESS &&
              o->stream->synchronize(m->ctx, s) == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    return ok;
}

void *xdev_shadow_mark(xdev_device_record_t *rec, void *native) {
    const xdev_backend_api_t *o = &g_orig[rec->be->type];
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    void *ev = NULL;
    if (o->event->create(rec->ctx, XDEV_EVENT_DEFAULT, &ev) != XDEV_SUCCESS)
        ev = NULL;
    else if (o->event->record(rec->ctx, ev, native) != XDEV_SUCCESS) {
        (void)o->event->destroy(rec->ctx, ev);
        ev = NULL;
    }
    xdev_core_error_restore(&saved);
    return ev;
}

bool xdev_shadow_mark_reached(xdev_device_record_t *rec, void *ev, bool wait) {
    const xdev_backend_api_t *o = &g_orig[rec->be->type];
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_status_t st = wait ? o->event->synchronize(rec->ctx, ev) : o->event->query(rec->ctx, ev);
    if (st != XDEV_ERROR_NOT_READY) (void)o->event->destroy(rec->ctx, ev);
    xdev_core_error_restore(&saved);
    return st != XDEV_ERROR_NOT_READY;
}

/* A collective's output taken in stream order: a copy of [p, p + n) (in m)
 * enqueued now on the real stream `native`, right behind the collective,
 * into staging memory nothing else writes (host memory where the host
 * addresses the device's, else a device allocation of m's device, made on
 * that stream). Reading the device's bytes once the stream passed the
 * collective would race with a later collective already queued on it,
 * which another rank's thread may run (the CPU's host engine: the last rank
 * to arrive writes every rank's output). NULL when it cannot be made (lock
 * held). */
void *xdev_shadow_stage(xdev_device_record_t *rec, void *native, const sh_mirror_t *m,
                        const void *p, size_t n) {
    if (rec->ctx != m->ctx || n == 0) return NULL;
    const xdev_backend_api_t *o = &g_orig[m->type];
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    void *st = NULL;
    bool ok;
    if (m->host_memory)
        ok = posix_memalign(&st, 64, n) == 0;
    else if (XDEV_BACKEND_SLOT(o->memory, malloc_async) != NULL)
        ok = o->memory->malloc_async(m->ctx, n, native, &st) == XDEV_SUCCESS;
    else
        ok = o->memory->malloc(m->ctx, n, &st) == XDEV_SUCCESS;
    if (ok && st != NULL) {
        xdev_copy_desc_t d = {.size = sizeof d,
                              .dst = st,
                              .src = p,
                              .bytes = n,
                              .kind = m->host_memory ? XDEV_COPY_DEVICE_TO_HOST
                                                     : XDEV_COPY_DEVICE_TO_DEVICE,
                              .src_device = m->ctx,
                              .dst_device = m->host_memory ? NULL : m->ctx};
        if (o->memory->memcpy_async(m->ctx, &d, native) != XDEV_SUCCESS) {
            xdev_shadow_unstage(m, st, NULL, 0);
            st = NULL;
        }
    } else {
        st = NULL;
    }
    xdev_core_error_restore(&saved);
    return st;
}

void xdev_shadow_unstage(const sh_mirror_t *m, void *staging, void *out, size_t n) {
    if (staging == NULL) return;
    if (m->host_memory) {
        if (out != NULL) memcpy(out, staging, n);
        free(staging);
        return;
    }
    if (out != NULL) (void)xdev_shadow_read_device(m, staging, n, out);
    const xdev_backend_api_t *o = &g_orig[m->type];
    void *s = read_stream(o, m->ctx);
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    /* On the shadow's own stream: a free that synchronizes the device could
     * wait for a collective whose other ranks are not enqueued yet. */
    if (s == NULL || XDEV_BACKEND_SLOT(o->memory, free_async) == NULL ||
        o->memory->free_async(m->ctx, staging, s) != XDEV_SUCCESS)
        (void)o->memory->free(m->ctx, staging);
    xdev_core_error_restore(&saved);
}

/* Through an event: a stream's synchronize would take the asynchronous
 * error it reports once (a kernel's fault), which is the application's. */
void xdev_shadow_wait_stream(xdev_device_record_t *rec, void *native) {
    const xdev_backend_api_t *o = &g_orig[rec->be->type];
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    void *ev = NULL;
    if (o->event->create(rec->ctx, XDEV_EVENT_DEFAULT, &ev) == XDEV_SUCCESS) {
        if (o->event->record(rec->ctx, ev, native) == XDEV_SUCCESS)
            (void)o->event->synchronize(rec->ctx, ev);
        (void)o->event->destroy(rec->ctx, ev);
    }
    xdev_core_error_restore(&saved);
}

/* A new allocation's mirror, its bytes the device's (so memory never
 * written compares equal). Without room the allocation goes unmirrored:
 * its ops are then reported as not mirrored. */
static void mirror_add(xdev_backend_device_t *ctx, void *p, size_t size) {
    bool host_memory = false;
    int t = type_of(ctx, &host_memory);
    if (t < 0 || p == NULL || size == 0) return;
    void *m = NULL;
    if (posix_memalign(&m, 4096, size) != 0) return;
    /* During a capture (a graph's pool grows) the read waits for a copy,
     * which would invalidate a CUDA capture: the bytes are read later. */
    bool later =
        !host_memory && atomic_load_explicit(&xdev_captures_active, memory_order_acquire) > 0;
    sh_mirror_t e = {.base = (uintptr_t)p,
                     .size = size,
                     .mirror = m,
                     .type = (xdev_device_type_t)t,
                     .ctx = ctx,
                     .host_memory = host_memory,
                     .unread = later};
    if (later || !xdev_shadow_read_device(&e, p, size, m)) memset(m, 0, size);
    pthread_mutex_lock(&g_lock);
    if (g_nmirrors == g_capmirrors) {
        size_t cap = g_capmirrors ? 2 * g_capmirrors : 64;
        sh_mirror_t *r = realloc(g_mirrors, cap * sizeof *r);
        if (r == NULL) {
            pthread_mutex_unlock(&g_lock);
            free(m);
            return;
        }
        g_mirrors = r;
        g_capmirrors = cap;
    }
    size_t i = 0;
    while (i < g_nmirrors && g_mirrors[i].base < e.base)
        i++;
    memmove(&g_mirrors[i + 1], &g_mirrors[i], (g_nmirrors - i) * sizeof e);
    g_mirrors[i] = e;
    g_nmirrors++;
    if (later) atomic_fetch_add_explicit(&g_nunread, 1, memory_order_release);
    pthread_mutex_unlock(&g_lock);
}

void xdev_shadow_read_unread(void) {
    if (atomic_load_explicit(&g_nunread, memory_order_acquire) == 0 ||
        atomic_load_explicit(&xdev_captures_active, memory_order_acquire) > 0)
        return;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nmirrors; i++) {
        sh_mirror_t *e = &g_mirrors[i];
        if (!e->unread) continue;
        if (!xdev_shadow_read_device(e, (void *)e->base, e->size, e->mirror))
            memset(e->mirror, 0, e->size);
        e->unread = false;
        atomic_fetch_sub_explicit(&g_nunread, 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
}

static void mirror_drop(const void *p) {
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_nmirrors; i++)
        if (g_mirrors[i].base == (uintptr_t)p) {
            if (g_mirrors[i].unread) atomic_fetch_sub_explicit(&g_nunread, 1, memory_order_release);
            free(g_mirrors[i].mirror);
            memmove(&g_mirrors[i], &g_mirrors[i + 1], (g_nmirrors - i - 1) * sizeof g_mirrors[0]);
            g_nmirrors--;
            break;
        }
    pthread_mutex_unlock(&g_lock);
}

/* Device memory xdev did not allocate (registered, or a DLPack import;
 * runtime/hooks.h): mirrored from its bytes once the registration's stream
 * reached what was queued on it (the producer's work ordered before it), so
 * that later ops on it are replayed and compared; dropped when given back.
 * What is written there behind xdev's back afterwards the mirror cannot
 * see. */
void xdev_shadow_foreign(xdev_device_record_t *rec, void *ptr, size_t bytes, xdev_stream_t stream,
                         bool added) {
    if (!xdev_shadow_on) return;
    if (!added) {
        mirror_drop(ptr);
        return;
    }
    if (stream != NULL) xdev_shadow_wait_stream(rec, stream->native);
    mirror_add(rec->ctx, ptr, bytes);
}

void *xdev_shadow_to_mirror(const void *p) {
    sh_mirror_t *m = p != NULL ? xdev_shadow_find(p) : NULL;
    return m != NULL ? m->mirror + ((uintptr_t)p - m->base) : NULL;
}

/* ------------------------------------------------------------ the slots */

static xdev_status_t w_malloc(xdev_backend_device_t *dev, size_t bytes, void **out) {
    xdev_status_t st = xdev_shadow_orig(dev)->memory->malloc(dev, bytes, out);
    if (st == XDEV_SUCCESS) mirror_add(dev, *out, bytes);
    return st;
}

static xdev_status_t w_free(xdev_backend_device_t *dev, void *ptr) {
    mirror_drop(ptr);
    return xdev_shadow_orig(dev)->memory->free(dev, ptr);
}

static xdev_status_t w_malloc_async(xdev_backend_device_t *dev, size_t bytes, void *stream,
                                    void **out) {
    xdev_status_t st = xdev_shadow_orig(dev)->memory->malloc_async(dev, bytes, stream, out);
    if (st == XDEV_SUCCESS) mirror_add(dev, *out, bytes);
    return st;
}

static xdev_status_t w_free_async(xdev_backend_device_t *dev, void *ptr, void *stream) {
    mirror_drop(ptr);
    return xdev_shadow_orig(dev)->memory->free_async(dev, ptr, stream);
}

/* A replay: what its capture allocated is read first (SH_STOPPED_CHECK),
 * before the graph writes it; the replay itself is observed by the shadow
 * as one operation (shadow_graph.c). */
static xdev_status_t w_graph_launch(xdev_backend_device_t *dev, void *graph, void *stream) {
    SH_STOPPED_CHECK();
    return xdev_shadow_orig(dev)->graph->launch(dev, graph, stream);
}

static const char *copy_kind(xdev_copy_kind_t k) {
    static const char *const names[] = {"host to host", "host to device", "device to host",
                                        "device to device", "peer"};
    return (unsigned)k < 5 ? names[k] : "?";
}

static xdev_status_t w_memcpy(xdev_backend_device_t *dev, const xdev_copy_desc_t *c, void *s) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(dev)->memory->memcpy_async(dev, c, s);
    sh_rec_t *r = st == XDEV_SUCCESS ? xdev_shadow_pend(SH_COPY, 1, XDEV_DTYPE_U8) : NULL;
    if (r != NULL) {
        memcpy(&r->u.copy, c, c->size < sizeof r->u.copy ? c->size : sizeof r->u.copy);
        snprintf(r->detail, sizeof r->detail, "copy %s of %zu bytes", copy_kind(c->kind), c->bytes);
    }
    return st;
}

static xdev_status_t w_memset(xdev_backend_device_t *dev, void *dst, int value, size_t n, void *s) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(dev)->memory->memset_async(dev, dst, value, n, s);
    sh_rec_t *r = st == XDEV_SUCCESS ? xdev_shadow_pend(SH_MEMSET, 1, XDEV_DTYPE_U8) : NULL;
    if (r != NULL) {
        r->u.memset.dst = dst;
        r->u.memset.value = value;
        r->u.memset.n = n;
        snprintf(r->detail, sizeof r->detail, "memset of %zu bytes to 0x%02x", n,
                 (unsigned)value & 0xffu);
    }
    return st;
}

static xdev_status_t w_fill(xdev_backend_device_t *dev, void *dst, const void *pattern, size_t size,
                            size_t count, void *s) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(dev)->ops->fill(dev, dst, pattern, size, count, s);
    sh_rec_t *r = st == XDEV_SUCCESS && size <= 16
                      ? xdev_shadow_pend(SH_FILL, size <= 8 ? size : 8, XDEV_DTYPE_U8)
                      : NULL;
    if (r != NULL) {
        r->u.fill.dst = dst;
        memcpy(r->u.fill.pattern, pattern, size);
        r->u.fill.size = size;
        r->u.fill.count = count;
        snprintf(r->detail, sizeof r->detail, "fill of %zu elements of %zu bytes", count, size);
    }
    return st;
}

static xdev_status_t w_convert(xdev_backend_device_t *dev, void *dst, xdev_dtype_t dd,
                               const void *src, xdev_dtype_t sd, size_t count, void *s) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(dev)->ops->convert(dev, dst, dd, src, sd, count, s);
    sh_rec_t *r = st == XDEV_SUCCESS ? xdev_shadow_pend(SH_CONVERT, xdev_dtype_size(dd), dd) : NULL;
    if (r != NULL) {
        r->u.convert.dst = dst;
        r->u.convert.dd = dd;
        r->u.convert.src = src;
        r->u.convert.sd = sd;
        r->u.convert.count = count;
        snprintf(r->detail, sizeof r->detail, "convert of %zu elements %s to %s", count,
                 xdev_dtype_name(sd), xdev_dtype_name(dd));
    }
    return st;
}

static xdev_status_t w_add(xdev_backend_device_t *dev, void *dst, const void *src,
                           xdev_dtype_t dtype, size_t count, void *s) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(dev)->ops->add(dev, dst, src, dtype, count, s);
    sh_rec_t *r =
        st == XDEV_SUCCESS ? xdev_shadow_pend(SH_ADD, xdev_dtype_size(dtype), dtype) : NULL;
    if (r != NULL) {
        r->u.add.dst = dst;
        r->u.add.src = src;
        r->u.add.dtype = dtype;
        r->u.add.count = count;
        snprintf(r->detail, sizeof r->detail, "add of %zu %s elements", count,
                 xdev_dtype_name(dtype));
    }
    return st;
}

static xdev_status_t w_rng(const xdev_rng_fill_desc_t *d) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(d->device)->rng->fill(d);
    size_t elem = d->format == XDEV_RNG_FORMAT_F64 || d->format == XDEV_RNG_FORMAT_I64 ? 8 : 4;
    sh_rec_t *r = st == XDEV_SUCCESS ? xdev_shadow_pend(SH_RNG, elem, XDEV_DTYPE_U8) : NULL;
    if (r != NULL) {
        memcpy(&r->u.rng, d, d->size < sizeof r->u.rng ? d->size : sizeof r->u.rng);
        snprintf(r->detail, sizeof r->detail,
                 "random fill (kind %d, %llu elements, seed %llu, offset %llu)", (int)d->kind,
                 (unsigned long long)d->count, (unsigned long long)d->seed,
                 (unsigned long long)d->offset);
    }
    return st;
}

static bool is_float(xdev_dtype_t t) {
    return (XDEV_DTYPE_FLOAT_MASK >> t) & 1u;
}

static xdev_status_t w_gemm(const xdev_blas_gemm_desc_t *d) {
    SH_STOPPED_CHECK();
    xdev_status_t st = xdev_shadow_orig(d->device)->blas->gemm(d);
    size_t es = xdev_dtype_size(d->dtype);
    bool cplx = d->dtype == XDEV_DTYPE_C64 || d->dtype == XDEV_DTYPE_C128;
    sh_rec_t *r =
        st == XDEV_SUCCESS ? xdev_shadow_pend(SH_GEMM, cplx ? es / 2 : es, d->dtype) : NULL;
    if (r != NULL) {
        memcpy(&r->u.gemm, d, d->size < sizeof r->u.gemm ? d->size : sizeof r->u.gemm);
        r->tolerant = is_float(d->dtype);
        snprintf(r->detail, sizeof r->detail,
                 "gemm %s %c%c m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld batch=%lld",
                 xdev_dtype_name(d->dtype), "NTC"[d->transa % 3], "NTC"[d->transb % 3],
                 (long long)d -> m, (long long)d -> n, (long long)d -> k, (long long)d -> lda,
                 (long long)d -> ldb, (long long)d -> ldc, (long long)d -> batch);
    }
    return st;
}

static xdev_status_t vec_slot(xdev_blas_routine_t routine, const xdev_blas_vec_desc_t *d) {
    SH_STOPPED_CHECK();
    const xdev_blas_vtable_t *b = xdev_shadow_orig(d->device)->blas;
    /* indexed by xdev_blas_routine_t: GEMM is 0 */
    static const char *const names[] = {"gemm", "axpy", "dot", "nrm2", "scal"};
    xdev_status_t st = routine == XDEV_BLAS_AXPY   ? b->axpy(d)
                       : routine == XDEV_BLAS_DOT  ? b->dot(d)
                       : routine == XDEV_BLAS_NRM2 ? b->nrm2(d)
                                                   : b->scal(d);
    size_t es = xdev_dtype_size(d->dtype);
    bool cplx = d->dtype == XDEV_DTYPE_C64 || d->dtype == XDEV_DTYPE_C128;
    sh_rec_t *r =
        st == XDEV_SUCCESS ? xdev_shadow_pend(SH_VEC, cplx ? es / 2 : es, d->dtype) : NULL;
    if (r != NULL) {
        r->u.vec.routine = routine;
        memcpy(&r->u.vec.d, d, d->size < sizeof r->u.vec.d ? d->size : sizeof r->u.vec.d);
        r->tolerant = is_float(d->dtype);
        snprintf(r->detail, sizeof r->detail, "%s %s n=%lld incx=%lld incy=%lld",
                 (unsigned)routine < 5 ? names[routine] : "?", xdev_dtype_name(d->dtype),
                 (long long)d->n, (long long)d->incx, (long long)d->incy);
    }
    return st;
}
static xdev_status_t w_axpy(const xdev_blas_vec_desc_t *d) {
    return vec_slot(XDEV_BLAS_AXPY, d);
}
static xdev_status_t w_dot(const xdev_blas_vec_desc_t *d) {
    return vec_slot(XDEV_BLAS_DOT, d);
}
static xdev_status_t w_nrm2(const xdev_blas_vec_desc_t *d) {
    return vec_slot(XDEV_BLAS_NRM2, d);
}
static xdev_status_t w_scal(const xdev_blas_vec_desc_t *d) {
    return vec_slot(XDEV_BLAS_SCAL, d);
}

/* ------------------------------------------------------------ install */

/* Copy a backend's table (as many bytes as its size says) into w. */
#define SH_COPY_TABLE(w, t) memcpy(&(w), (t), (t)->size < sizeof(w) ? (t)->size : sizeof(w))
#define SH_WRAP(w, orig, slot, fn)                                                                 \
    do {                                                                                           \
        if (XDEV_BACKEND_SLOT(orig, slot) != NULL) (w).slot = fn;                                  \
    } while (0)

void xdev_shadow_backend_loaded(xdev_backend_t *be) {
    if (!xdev_shadow_on) return;
    int t = be->type;
    xdev_backend_api_t *api = &be->api_copy;
    g_orig[t] = *api;
    bool host_memory = (be->flags & XDEV_BACKEND_HOST_MEMORY) != 0;
    pthread_mutex_lock(&g_lock);
    int n = atomic_load_explicit(&g_nctx, memory_order_relaxed);
    for (int i = 0; i < be->device_count && n < SH_MAX_CTX; i++, n++)
        g_ctx[n] = (__typeof__(g_ctx[0])){be->devices[i].ctx, t, host_memory};
    atomic_store_explicit(&g_nctx, n, memory_order_release);
    if (t == XDEV_DEVICE_CPU && be->device_count > 0) {
        g_cpu = &g_orig[t];
        g_cpu_dev = be->devices[0].ctx;
    }
    pthread_mutex_unlock(&g_lock);

    const xdev_memory_vtable_t *m = api->memory;
    SH_COPY_TABLE(g_wmem[t], m);
    SH_WRAP(g_wmem[t], m, malloc, w_malloc);
    SH_WRAP(g_wmem[t], m, free, w_free);
    SH_WRAP(g_wmem[t], m, malloc_async, w_malloc_async);
    SH_WRAP(g_wmem[t], m, free_async, w_free_async);
    SH_WRAP(g_wmem[t], m, memcpy_async, w_memcpy);
    SH_WRAP(g_wmem[t], m, memset_async, w_memset);
    api->memory = &g_wmem[t];
    if (api->ops != NULL) {
        const xdev_ops_vtable_t *o = api->ops;
        SH_COPY_TABLE(g_wops[t], o);
        SH_WRAP(g_wops[t], o, fill, w_fill);
        SH_WRAP(g_wops[t], o, convert, w_convert);
        SH_WRAP(g_wops[t], o, add, w_add);
        api->ops = &g_wops[t];
    }
    if (api->rng != NULL) {
        SH_COPY_TABLE(g_wrng[t], api->rng);
        SH_WRAP(g_wrng[t], api->rng, fill, w_rng);
        api->rng = &g_wrng[t];
    }
    if (api->blas != NULL) {
        const xdev_blas_vtable_t *b = api->blas;
        SH_COPY_TABLE(g_wblas[t], b);
        SH_WRAP(g_wblas[t], b, gemm, w_gemm);
        SH_WRAP(g_wblas[t], b, axpy, w_axpy);
        SH_WRAP(g_wblas[t], b, dot, w_dot);
        SH_WRAP(g_wblas[t], b, nrm2, w_nrm2);
        SH_WRAP(g_wblas[t], b, scal, w_scal);
        api->blas = &g_wblas[t];
    }
    if (api->graph != NULL) {
        SH_COPY_TABLE(g_wgraph[t], api->graph);
        SH_WRAP(g_wgraph[t], api->graph, launch, w_graph_launch);
        api->graph = &g_wgraph[t];
    }
    xdev_shadow_install_compute(api, t);
}
