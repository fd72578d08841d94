/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_fiber.c - runs a kernel's blocks on one thread: the
 * block's shared memory, and fibers for kernels that use xdev_barrier().
 *
 * Every thread that runs blocks (stream workers, pool workers) has an
 * executor, made on first use and freed when the thread ends: a shared
 * memory area of the device's limit (the launch's dynamic bytes first, the
 * static XDEV_SHARED area after them, both 64-byte aligned) and, from the
 * first XDEV_KERNEL_SYNC launch on, fibers.
 *
 * A kernel without a barrier runs a block by one call of sig->block (the
 * loop the dialect generates); xdev_barrier() there is a fault. A SYNC
 * kernel runs each work-item as a fiber (ucontext) with its own copy of the
 * block's context: a barrier switches to the next work-item, and the last
 * one to arrive releases them all (back to the first). Fibers are made once
 * per thread and loop over the work-items they are given, so a block costs
 * no makecontext; only a fiber abandoned at a barrier (a divergent barrier,
 * a fault) is made again. Stacks are mapped once per thread, with a guard
 * page below each, and kept.
 *
 * Fiber switches are announced to ASan (start/finish_switch_fiber) and TSan
 * (a TSan fiber per stack; switches synchronise, as the barrier does). */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "cpu/cpu_pool.h"

#if defined(__SANITIZE_ADDRESS__)
#define XDEV_CPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XDEV_CPU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define XDEV_CPU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XDEV_CPU_TSAN 1
#endif
#endif

#ifdef XDEV_CPU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef XDEV_CPU_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* Stack of one work-item. Sanitizers make frames several times larger. */
#if defined(XDEV_CPU_ASAN) || defined(XDEV_CPU_TSAN)
#define XDEV_CPU_FIBER_STACK (256u * 1024u)
#else
#define XDEV_CPU_FIBER_STACK (64u * 1024u)
#endif
/* Fibers are mapped in groups (each group one mapping); at most this many. */
#define XDEV_CPU_FIBER_GROUPS 16

typedef struct fiber {
    ucontext_t uc;
    unsigned char *stack; /* lowest usable byte (the guard page is below) */
    bool made;            /* uc holds the fiber's loop, ready to take a work-item */
    bool in_item;         /* suspended inside a work-item (at a barrier) */
#ifdef XDEV_CPU_ASAN
    void *fake_stack;
#endif
#ifdef XDEV_CPU_TSAN
    void *tsan;
#endif
} fiber_t;

struct xdev_cpu_exec {
    unsigned char *shared; /* xdev_cpu_state.shared_limit bytes, 64-aligned */
    xdev_cpu_launch_t *launch;
    xdev_kctx_t ctx; /* the block's context (loop mode; the fibers' template) */

    /* Fibers (SYNC kernels). */
    xdev_kctx_t *ctxs; /* one per work-item, XDEV_CPU_MAX_BLOCK_ITEMS */
    fiber_t *fibers[XDEV_CPU_MAX_BLOCK_ITEMS];
    int nfibers;
    struct {
        void *map;
        size_t map_bytes;
        fiber_t *array;
    } groups[XDEV_CPU_FIBER_GROUPS];
    int ngroups;
    ucontext_t main_uc; /* the thread's own context while fibers run */
    int n;              /* work-items of the running block */
    int arrived;        /* of them, waiting at the barrier */
    int finished;       /* of them, returned */
#ifdef XDEV_CPU_ASAN
    void *main_fake_stack;
    const void *main_bottom;
    size_t main_size;
#endif
#ifdef XDEV_CPU_TSAN
    void *main_tsan;
#endif
};

static _Thread_local xdev_cpu_exec_t *tls_exec;
static pthread_key_t exec_key;
static pthread_once_t exec_once = PTHREAD_ONCE_INIT;
static bool exec_key_ok;

/* ------------------------------------------------------------------ faults */

void xdev_cpu_launch_fail(xdev_cpu_launch_t *launch, int code, const int block[3], size_t cap) {
    int none = 0;
    if (code == 0) code = INT_MIN; /* a fault all the same: "unknown code" */
    if (!atomic_compare_exchange_strong(&launch->fault, &none, code)) return;
    memcpy(launch->fault_block, block, sizeof launch->fault_block);
    launch->fault_cap = cap;
}

/* ctx->fault: every context's impl is its thread's executor. */
static void kernel_fault(xdev_kctx_t *ctx, int code) {
    xdev_cpu_exec_t *ex = ctx->impl;
    xdev_cpu_launch_fail(ex->launch, code, ctx->group, ctx->shared_cap);
}

/* ctx->barrier of a kernel not declared XDEV_KERNEL_SYNC. */
static void loop_barrier(xdev_kctx_t *ctx) {
    kernel_fault(ctx, XDEV_KFAULT_BARRIER);
}

/* ----------------------------------------------------------------- fibers */

/* Switch from `from` to `to` (NULL: the thread's own context), telling the
 * sanitizers. Returns when something switches back to `from`. */
static void fiber_switch(xdev_cpu_exec_t *ex, fiber_t *from, fiber_t *to) {
    ucontext_t *from_uc = from != NULL ? &from->uc : &ex->main_uc;
    ucontext_t *to_uc = to != NULL ? &to->uc : &ex->main_uc;
#ifdef XDEV_CPU_ASAN
    void **fake = from != NULL ? &from->fake_stack : &ex->main_fake_stack;
    if (to != NULL)
        __sanitizer_start_switch_fiber(fake, to->stack, XDEV_CPU_FIBER_STACK);
    else
        __sanitizer_start_switch_fiber(fake, ex->main_bottom, ex->main_size);
#endif
#ifdef XDEV_CPU_TSAN
    __tsan_switch_to_fiber(to != NULL ? to->tsan : ex->main_tsan, 0);
#endif
    swapcontext(from_uc, to_uc);
#ifdef XDEV_CPU_ASAN
    __sanitizer_finish_switch_fiber(*fake, NULL, NULL);
#endif
}

/* Work-item `i` reached a barrier or returned: run the next one. At the end
 * of a round every work-item either waits at the barrier (release them:
 * back to the first), or has returned (the block is done); some of each is
 * a divergent barrier, which fails the launch (the waiting ones are
 * abandoned). */
static void fiber_next(xdev_cpu_exec_t *ex, int i) {
    fiber_t *to;
    if (i + 1 < ex->n) {
        to = ex->fibers[i + 1];
    } else if (ex->finished == 0) {
        ex->arrived = 0;
        if (ex->n == 1) return;
        to = ex->fibers[0];
    } else {
        if (ex->arrived != 0) kernel_fault(&ex->ctxs[i], XDEV_KFAULT_BARRIER_DIVERGE);
        to = NULL;
    }
    fiber_switch(ex, ex->fibers[i], to);
}

/* ctx->barrier of a SYNC kernel (runs on work-item's fiber). */
static void fiber_barrier(xdev_kctx_t *ctx) {
    xdev_cpu_exec_t *ex = ctx->impl;
    ex->arrived++;
    fiber_next(ex, (int)(ctx - ex->ctxs));
}

/* A fiber's whole life: run work-item `index` of whichever block is
 * running, hand over, and wait to be given the same item of a later one. */
static void fiber_main(int index) {
    xdev_cpu_exec_t *ex = tls_exec;
#ifdef XDEV_CPU_ASAN
    __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
    fiber_t *f = ex->fibers[index];
    for (;;) {
        const xdev_cpu_launch_t *l = ex->launch;
        int bx = l->block[0], by = l->block[1];
        f->in_item = true;
        l->sig->item(&ex->ctxs[index], l->args, index % bx, index / bx % by, index / (bx * by));
        f->in_item = false;
        ex->finished++;
        fiber_next(ex, index);
    }
}

/* (Re)start fiber i at the top of its loop. A fiber abandoned inside a
 * work-item leaves ASan's poisoned frames on its stack and TSan's record of
 * its calls: both are cleared. */
static void fiber_make(xdev_cpu_exec_t *ex, int i) {
    fiber_t *f = ex->fibers[i];
#ifdef XDEV_CPU_ASAN
    ASAN_UNPOISON_MEMORY_REGION(f->stack, XDEV_CPU_FIBER_STACK);
    f->fake_stack = NULL;
#endif
#ifdef XDEV_CPU_TSAN
    if (f->tsan != NULL) __tsan_destroy_fiber(f->tsan);
    f->tsan = __tsan_create_fiber(0);
#endif
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = XDEV_CPU_FIBER_STACK;
    f->uc.uc_link = NULL; /* fiber_main never returns */
    makecontext(&f->uc, (void (*)(void))fiber_main, 1, i);
    f->made = true;
    f->in_item = false;
}

/* At least n fibers with stacks: grown in groups (doubling, from 32), each
 * group one mapping with a PROT_NONE guard page under every stack (a guard
 * that cannot be set, e.g. at the process's mapping limit, is skipped). */
static bool fibers_reserve(xdev_cpu_exec_t *ex, int n) {
    if (n <= ex->nfibers) return true;
    if (ex->ctxs == NULL) {
        ex->ctxs = calloc(XDEV_CPU_MAX_BLOCK_ITEMS, sizeof *ex->ctxs);
        if (ex->ctxs == NULL) return false;
    }
    if (ex->ngroups == XDEV_CPU_FIBER_GROUPS) return false;
    int want = ex->nfibers < 16 ? 32 : 2 * ex->nfibers;
    if (want < n) want = n;
    if (want > XDEV_CPU_MAX_BLOCK_ITEMS) want = XDEV_CPU_MAX_BLOCK_ITEMS;
    size_t add = (size_t)(want - ex->nfibers);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t slot = XDEV_CPU_FIBER_STACK + page;
    fiber_t *array = calloc(add, sizeof *array);
    void *map = mmap(NULL, add * slot, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (array == NULL || map == MAP_FAILED) {
        free(array);
        if (map != MAP_FAILED) munmap(map, add * slot);
        return false;
    }
    for (size_t k = 0; k < add; k++) {
        unsigned char *base = (unsigned char *)map + k * slot;
        (void)mprotect(base, page, PROT_NONE);
        array[k].stack = base + page;
        ex->fibers[ex->nfibers + (int)k] = &array[k];
    }
    ex->groups[ex->ngroups].map = map;
    ex->groups[ex->ngroups].map_bytes = add * slot;
    ex->groups[ex->ngroups].array = array;
    ex->ngroups++;
    ex->nfibers = want;
    return true;
}

/* One block of a SYNC kernel: work-item i on fiber i, from the thread's own
 * context, which gets control back when the block is done or diverged. */
static void run_block_fibers(xdev_cpu_exec_t *ex, xdev_cpu_launch_t *l) {
    int n = l->items;
    if (!fibers_reserve(ex, n)) {
        xdev_cpu_launch_fail(l, XDEV_CPU_KFAULT_NOMEM, ex->ctx.group, ex->ctx.shared_cap);
        return;
    }
    xdev_kctx_t tmpl = ex->ctx;
    tmpl.barrier = fiber_barrier;
    for (int i = 0; i < n; i++) {
        ex->ctxs[i] = tmpl;
        if (!ex->fibers[i]->made) fiber_make(ex, i);
    }
    ex->n = n;
    ex->arrived = ex->finished = 0;
    fiber_switch(ex, NULL, ex->fibers[0]);
    for (int i = 0; i < n; i++) /* abandoned at a barrier: start afresh next time */
        if (ex->fibers[i]->in_item) ex->fibers[i]->made = false;
}

/* --------------------------------------------------------------- executor */

static void exec_free(void *arg) {
    xdev_cpu_exec_t *ex = arg;
#ifdef XDEV_CPU_TSAN
    for (int i = 0; i < ex->nfibers; i++)
        if (ex->fibers[i]->tsan != NULL) __tsan_destroy_fiber(ex->fibers[i]->tsan);
#endif
    for (int g = 0; g < ex->ngroups; g++) {
        munmap(ex->groups[g].map, ex->groups[g].map_bytes);
        free(ex->groups[g].array);
    }
    free(ex->ctxs);
    free(ex->shared);
    free(ex);
    tls_exec = NULL;
}

static void exec_key_make(void) {
    exec_key_ok = pthread_key_create(&exec_key, exec_free) == 0;
}

xdev_cpu_exec_t *xdev_cpu_exec_self(void) {
    if (tls_exec != NULL) return tls_exec;
    pthread_once(&exec_once, exec_key_make);
    if (!exec_key_ok) return NULL;
    xdev_cpu_exec_t *ex = calloc(1, sizeof *ex);
    size_t bytes = (xdev_cpu_state.shared_limit + 63) & ~(size_t)63;
    if (ex != NULL) ex->shared = aligned_alloc(64, bytes != 0 ? bytes : 64);
    if (ex == NULL || ex->shared == NULL || pthread_setspecific(exec_key, ex) != 0) {
        if (ex != NULL) free(ex->shared);
        free(ex);
        return NULL;
    }
#ifdef XDEV_CPU_ASAN
    pthread_attr_t attr;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &addr, &size);
        pthread_attr_destroy(&attr);
    }
    ex->main_bottom = addr;
    ex->main_size = size;
#endif
#ifdef XDEV_CPU_TSAN
    ex->main_tsan = __tsan_get_current_fiber();
#endif
    tls_exec = ex;
    return ex;
}

void xdev_cpu_exec_blocks(xdev_cpu_exec_t *ex, xdev_cpu_launch_t *l, uint64_t first, uint64_t end) {
    const size_t limit = xdev_cpu_state.shared_limit;
    const size_t dyn = (l->dynamic_shared + 63) & ~(size_t)63;
    xdev_kctx_t *c = &ex->ctx;
    ex->launch = l;
    memcpy(c->block, l->block, sizeof c->block);
    memcpy(c->grid, l->grid, sizeof c->grid);
    c->reserved0 = 0;
    c->dynamic_shared = ex->shared;
    c->shared = dyn < limit ? ex->shared + dyn : ex->shared + limit;
    c->shared_cap = dyn < limit ? limit - dyn : 0;
    c->barrier = loop_barrier;
    c->fault = kernel_fault;
    c->impl = ex;

    const bool sync = (l->sig->flags & XDEV_KERNEL_USES_BARRIER) != 0;
    const uint64_t gx = (uint64_t)l->grid[0], gy = (uint64_t)l->grid[1];
    int x = (int)(first % gx), y = (int)(first / gx % gy), z = (int)(first / gx / gy);
    for (uint64_t b = first; b < end; b++) {
        if (atomic_load_explicit(&l->fault, memory_order_relaxed) != 0) break;
        c->group[0] = x;
        c->group[1] = y;
        c->group[2] = z;
        if (sync)
            run_block_fibers(ex, l);
        else
            l->sig->block(c, l->args);
        if (++x == l->grid[0]) {
            x = 0;
            if (++y == l->grid[1]) {
                y = 0;
                z++;
            }
        }
    }
}
