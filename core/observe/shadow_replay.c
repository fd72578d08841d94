/* SPDX-License-Identifier: Apache-2.0 */
/* shadow_replay.c - shadow execution's records and their replays
 * (shadow_internal.h).
 *
 * The slots in front of a backend's table (shadow_slots.c, shadow_compute.c)
 * add a record of each call to the calling thread's list; step 5 of the
 * enqueue path (shadow.c) replays the list here, in order, on the shadow
 * device - the CPU backend's original slots on its device 0 and a private
 * stream (xdev_shadow_device) - with the mirrors in place of the real
 * device's pointers, then the list is emptied. Kernels, FFTs and the
 * primitives are replayed by shadow_compute.c's dispatch. Apart from the
 * slots because this is the other half of their work: what the slots keep,
 * the replay spends. */
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "base/thread_heap.h"
#include "observe/shadow_internal.h"

/* ------------------------------------------------------------ pending */

/* On the heap (made at a thread's first op under the shadow, freed at its
 * exit): SH_PENDING records would be ~3 KiB of every thread's static TLS,
 * which dlopen (Python's ctypes) cannot always find (ctest tls.*). */
static void drop_pending(void *p) {
    xdev_shadow_pending_clear(p);
}
static xdev_thread_heap_t g_pending = XDEV_THREAD_HEAP_INIT(sizeof(sh_pending_t), drop_pending);
static _Thread_local void *t_pending; /* this thread's sh_pending_t, or NULL */

sh_pending_t *xdev_shadow_pending(void) {
    return xdev_thread_heap_get(&g_pending, &t_pending);
}

void xdev_shadow_pending_clear(sh_pending_t *p) {
    for (int i = 0; i < p->n; i++) {
        free(p->recs[i].scratch);
        if (p->recs[i].kind == SH_LAUNCH) free(p->recs[i].u.launch.heap);
        xdev_shadow_record_release(&p->recs[i]);
        p->recs[i].scratch = NULL;
    }
    p->n = 0;
    p->overflow = false;
}

sh_rec_t *xdev_shadow_pend(sh_kind_t kind, size_t elem, xdev_dtype_t dtype) {
    sh_pending_t *p = xdev_shadow_pending();
    if (p == NULL) return NULL; /* no host memory: the op is reported as not mirrored */
    if (p->n == SH_PENDING) {
        p->overflow = true;
        return NULL;
    }
    sh_rec_t *r = &p->recs[p->n++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->elem = elem;
    r->dtype = dtype;
    return r;
}

/* ------------------------------------------------------------ replay */

/* A written operand that is not a mirror (host memory): the replay writes a
 * scratch buffer, compared with the host's bytes in step 5. */
static void *scratch_for(sh_rec_t *r, void *host_dst, size_t n) {
    free(r->scratch);
    r->scratch = malloc(n ? n : 1);
    r->host_dst = r->scratch != NULL ? host_dst : NULL;
    r->scratch_n = r->scratch != NULL ? n : 0;
    return r->scratch;
}

#define SH_NEED(ptr)                                                                               \
    do {                                                                                           \
        if ((ptr) == NULL) {                                                                       \
            r->unmirrored = "an operand is outside the mirrored device allocations";               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Replay one record on the shadow device: the CPU backend's own table c,
 * its device dv and stream s (xdev_shadow_device; lock held). */
static void replay_one(sh_rec_t *r, const xdev_backend_api_t *c, xdev_backend_device_t *dv,
                       void *s) {
    xdev_status_t st = XDEV_SUCCESS;
    switch (r->kind) {
    case SH_COPY: {
        xdev_copy_desc_t d = r->u.copy;
        bool to_dev = d.kind != XDEV_COPY_DEVICE_TO_HOST && d.kind != XDEV_COPY_HOST_TO_HOST;
        bool from_dev = d.kind != XDEV_COPY_HOST_TO_DEVICE && d.kind != XDEV_COPY_HOST_TO_HOST;
        if (!to_dev && !from_dev) return; /* host to host: no mirror involved */
        d.dst = to_dev ? xdev_shadow_to_mirror(d.dst) : scratch_for(r, d.dst, d.bytes);
        d.src = from_dev ? xdev_shadow_to_mirror(d.src) : d.src;
        if (from_dev && d.src == NULL) SH_NEED(NULL);
        if (to_dev) SH_NEED(d.dst);
        if (d.dst == NULL) { /* no scratch */
            r->unmirrored = "no host memory for the copy's expected bytes";
            return;
        }
        d.kind = XDEV_COPY_HOST_TO_HOST; /* mirrors and scratch are all host memory */
        d.dst_device = d.src_device = NULL;
        d.dst_pinned = d.src_pinned = false;
        st = c->memory->memcpy_async(dv, &d, s);
        break;
    }
    case SH_MEMSET: {
        void *m = xdev_shadow_to_mirror(r->u.memset.dst);
        SH_NEED(m);
        st = c->memory->memset_async(dv, m, r->u.memset.value, r->u.memset.n, s);
        break;
    }
    case SH_FILL: {
        void *m = xdev_shadow_to_mirror(r->u.fill.dst);
        SH_NEED(m);
        st = XDEV_BACKEND_SLOT(c->ops, fill) == NULL
                 ? XDEV_ERROR_NOT_SUPPORTED
                 : c->ops->fill(dv, m, r->u.fill.pattern, r->u.fill.size, r->u.fill.count, s);
        break;
    }
    case SH_CONVERT: {
        void *m = xdev_shadow_to_mirror(r->u.convert.dst);
        const void *src = xdev_shadow_to_mirror(r->u.convert.src);
        SH_NEED(m);
        SH_NEED(src);
        st = c->ops->convert(dv, m, r->u.convert.dd, src, r->u.convert.sd, r->u.convert.count, s);
        break;
    }
    case SH_ADD: {
        void *m = xdev_shadow_to_mirror(r->u.add.dst);
        const void *src = xdev_shadow_to_mirror(r->u.add.src);
        SH_NEED(m);
        SH_NEED(src);
        st = c->ops->add(dv, m, src, r->u.add.dtype, r->u.add.count, s);
        break;
    }
    case SH_RNG: {
        xdev_rng_fill_desc_t d = r->u.rng;
        d.out = xdev_shadow_to_mirror(d.out);
        SH_NEED(d.out);
        if (d.philox_state != NULL) { /* a captured fill's cell: device memory, mirrored */
            d.philox_state = xdev_shadow_to_mirror(d.philox_state);
            SH_NEED(d.philox_state);
        }
        d.device = dv;
        d.stream = s;
        st = c->rng->fill(&d);
        break;
    }
    case SH_GEMM: {
        xdev_blas_gemm_desc_t d = r->u.gemm;
        d.a = xdev_shadow_to_mirror(d.a);
        d.b = xdev_shadow_to_mirror(d.b);
        d.c = xdev_shadow_to_mirror(d.c);
        SH_NEED(d.a);
        SH_NEED(d.b);
        SH_NEED(d.c);
        d.device = dv;
        d.stream = s;
        st = c->blas->gemm(&d);
        break;
    }
    case SH_VEC: {
        xdev_blas_vec_desc_t d = r->u.vec.d;
        d.x = xdev_shadow_to_mirror(d.x);
        SH_NEED(d.x);
        if (d.y != NULL) {
            d.y = xdev_shadow_to_mirror(d.y);
            SH_NEED(d.y);
        }
        if (d.result != NULL) {
            void *m = xdev_shadow_to_mirror(d.result);
            d.result = m != NULL ? m : scratch_for(r, d.result, xdev_dtype_size(d.dtype));
            SH_NEED(d.result);
        }
        d.device = dv;
        d.stream = s;
        xdev_blas_routine_t k = r->u.vec.routine;
        st = k == XDEV_BLAS_AXPY   ? c->blas->axpy(&d)
             : k == XDEV_BLAS_DOT  ? c->blas->dot(&d)
             : k == XDEV_BLAS_NRM2 ? c->blas->nrm2(&d)
                                   : c->blas->scal(&d);
        break;
    }
    case SH_LAUNCH:
    case SH_FFT:
    default: /* the primitives: shadow_compute.c's dispatch tells them (sh_kind_is_prim) */
        if (r->unmirrored != NULL) return;
        st = xdev_shadow_replay_compute(r, c, dv, s);
        break;
    }
    if (st != XDEV_SUCCESS) r->unmirrored = "the CPU backend refused the replay";
}

void xdev_shadow_replay(sh_pending_t *p) {
    if (p->n == 0) return;
    const xdev_backend_api_t *c;
    xdev_backend_device_t *dv;
    void *s;
    if (!xdev_shadow_device(&c, &dv, &s)) {
        for (int i = 0; i < p->n; i++)
            p->recs[i].unmirrored = "the CPU backend (the shadow device) is unavailable";
        return;
    }
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    for (int i = 0; i < p->n; i++)
        replay_one(&p->recs[i], c, dv, s);
    if (c->stream->synchronize(dv, s) != XDEV_SUCCESS)
        for (int i = 0; i < p->n; i++)
            if (p->recs[i].unmirrored == NULL)
                p->recs[i].unmirrored = "the replay failed on the CPU backend";
    xdev_core_error_restore(&saved);
}
