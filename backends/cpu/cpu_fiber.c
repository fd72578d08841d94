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
 * A kernel without a barrier, or in the block form (XDEV_KERNEL_BLOCK: a
 * loop over the work-items per region between barriers), runs a block by
 * one call of sig->block (the loops the dialect generates) inside the same
 * fault guard; xdev_barrier() there is a fault. A SYNC
 * kernel runs each work-item as a fiber, all sharing the block's context
 * (the executor knows which one runs): a barrier switches to the next
 * work-item, and the last one to arrive releases them all. Fibers are made
 * once per thread and loop over the work-items they are given, so a block
 * costs no fiber set-up; only a fiber abandoned at a barrier (a divergent
 * barrier, a fault) is made again. Stacks are mapped once per thread, with
 * a guard page below each, and kept.
 *
 * A switch is a few instructions on x86-64 and aarch64 (the callee-saved
 * registers, the stack pointer and the floating-point control registers;
 * cpu_fiber_switch.c), so a barrier costs about work-items x 9-17 ns
 * (bench/barrier_cpu_bench measures it: 8.6-16.7 ns on the dev VM).
 * Elsewhere, in code built for shadow stacks, or with
 * -DXDEV_CPU_FIBER_UCONTEXT (CMake option XDEV_CPU_FIBER_UCONTEXT=ON; CI
 * runs the kernel suites so, and ctest cpu_fiber.builds compiles it and the
 * aarch64 switch), fibers are ucontexts, whose swapcontext makes a
 * signal-mask system call per switch (blocks ~15x slower). Switches are
 * announced to ASan (start/finish_switch_fiber) and TSan (a TSan fiber per
 * stack; switches synchronise, as the barrier does).
 *
 * Fault signals: a kernel's SIGSEGV, SIGBUS, SIGFPE or SIGILL on a thread
 * running its blocks jumps back here (see "fault signals" below), fails
 * the launch (XDEV_CPU_KFAULT_SIGNAL) and the thread goes on. */
#include <errno.h>
#include <fenv.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu/cpu_fiber_switch.h"
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

/* ------------------------------------------------------------------ state */

typedef struct fiber {
    xdev_cpu_fiber_ctx_t ctx;
    unsigned char *stack; /* lowest usable byte (the guard page is below) */
    bool made;            /* ctx holds the fiber's loop, ready to take a work-item */
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
    xdev_kctx_t ctx; /* the block's context, shared by its work-items */

    /* Fibers (SYNC kernels). */
    fiber_t *fibers[XDEV_CPU_MAX_BLOCK_ITEMS];
    int nfibers;
    struct {
        void *map;
        size_t map_bytes;
        fiber_t *array;
    } groups[XDEV_CPU_FIBER_GROUPS];
    int ngroups;
    xdev_cpu_fiber_ctx_t main_ctx; /* the thread's own context while fibers run */
    int n;                         /* work-items of the running block */
    int arrived;                   /* of them, waiting at the barrier */
    int finished;                  /* of them, returned */
    int cur;                       /* the one whose fiber has control */
#ifdef XDEV_CPU_ASAN
    void *main_fake_stack;
    const void *main_bottom;
    size_t main_size;
#endif
#ifdef XDEV_CPU_TSAN
    void *main_tsan;
#endif

    /* Fault signals: where the handler jumps while a launch's blocks run. */
    sigjmp_buf guard;
    volatile sig_atomic_t guarded;   /* guard is set (a stream's launch runs) */
    volatile sig_atomic_t armed;     /* and the kernel's code runs: a fault is the kernel's */
    volatile sig_atomic_t on_fibers; /* a fiber has control (not the thread's context) */
    fenv_t fenv;                     /* the thread's floating-point state, restored after */
    sigset_t sigmask;                /* the thread's signal mask, restored after */
    int signo, sicode;               /* the caught fault */
    void *addr;
    void *altstack; /* the thread's signal stack, when we made it */
    size_t altstack_bytes;
};

/* initial-exec: the signal handler reads it (no lazy TLS allocation there). */
static _Thread_local xdev_cpu_exec_t *tls_exec __attribute__((tls_model("initial-exec")));
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

void xdev_cpu_launch_fail_signal(xdev_cpu_launch_t *launch, const int block[3], int signo,
                                 int sicode, void *addr) {
    int none = 0;
    if (!atomic_compare_exchange_strong(&launch->fault, &none, XDEV_CPU_KFAULT_SIGNAL)) return;
    memcpy(launch->fault_block, block, sizeof launch->fault_block);
    launch->fault_cap = 0;
    launch->fault_signo = signo;
    launch->fault_sicode = sicode;
    launch->fault_addr = addr;
}

/* ctx->fault: every context's impl is its thread's executor. */
static void kernel_fault(xdev_kctx_t *ctx, int code) {
    xdev_cpu_exec_t *ex = ctx->impl;
    xdev_cpu_launch_fail(ex->launch, code, ctx->group, ctx->shared_cap);
}

/* ctx->barrier of a kernel not declared XDEV_KERNEL_SYNC. */
static void loop_barrier(xdev_kctx_t *ctx) {
    const xdev_cpu_exec_t *ex = ctx->impl;
    bool regions = (ex->launch->sig->flags & XDEV_KERNEL_REGIONS) != 0;
    kernel_fault(ctx, regions ? XDEV_CPU_KFAULT_BARRIER_REGION : XDEV_KFAULT_BARRIER);
}

/* ---------------------------------------------------------- fault signals */

/* A kernel's own code faulting (a wild pointer, an integer division by
 * zero, an illegal instruction) must fail its launch, as a GPU reports a
 * device fault, not end the process. The handlers, installed once at the
 * first CPU launch, look at the faulting thread's executor: while it runs a
 * launch's blocks (`armed`), a signal the kernel raised (si_code > 0: not
 * sent by kill) is noted and the handler jumps back to the thread's own
 * context in xdev_cpu_exec_blocks (off the alternate signal stack, and off
 * a fiber's stack for a SYNC kernel: the sanitizers are told, as for a
 * switch), which fails the launch and skips the launch's later blocks. Any
 * other fault goes to the handler installed before ours (the
 * application's, ASan's) or gets the default action, as without xdev. */
static const int fault_signals[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
static struct sigaction prev_actions[4];
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static _Atomic bool handlers_ok;

/* An asynchronous SIGBUS (BUS_MCEERR_AO: a memory error the kernel found
 * in the background, the thread need not act) is not the running code's. */
static bool async_signal(int sig, const siginfo_t *si) {
#ifdef BUS_MCEERR_AO
    return sig == SIGBUS && si->si_code == BUS_MCEERR_AO;
#else
    (void)sig, (void)si;
    return false;
#endif
}

/* A fault that is not a kernel's: what would have happened without xdev. */
static void pass_on(int sig, siginfo_t *si, void *uc) {
    int k = 0;
    while (k < 3 && fault_signals[k] != sig)
        k++;
    const struct sigaction *p = &prev_actions[k];
    /* Sent (kill, sigqueue) or asynchronous: returning does not repeat it. */
    bool sent = si == NULL || si->si_code <= 0 || async_signal(sig, si);
    /* SIG_DFL and SIG_IGN are what sa_handler holds whatever the flags say
     * (sa_sigaction shares its storage). */
    if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        bool info = (p->sa_flags & SA_SIGINFO) != 0;
        void (*h)(int) = p->sa_handler;
        void (*hi)(int, siginfo_t *, void *) = p->sa_sigaction;
        if (p->sa_flags & SA_RESETHAND) { /* one shot: later ones get the default */
            prev_actions[k].sa_handler = SIG_DFL;
            prev_actions[k].sa_flags &= ~(SA_SIGINFO | SA_RESETHAND);
        }
        if (info)
            hi(sig, si, uc);
        else
            h(sig);
        return;
    }
    if (p->sa_handler == SIG_IGN && sent) return;
    /* The default action (a fault cannot be ignored: the kernel forces it
     * too): restored, a fault then happens again on return and a sent
     * signal is sent again, both ending the process as they would have. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (sent) raise(sig);
}

static void fault_handler(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    xdev_cpu_exec_t *ex = tls_exec;
    if (ex != NULL && ex->armed && si != NULL && si->si_code > 0 && !async_signal(sig, si)) {
        ex->armed = 0;
        ex->signo = sig;
        ex->sicode = si->si_code;
        ex->addr = si->si_addr;
        if (ex->on_fibers) { /* back to the thread's own stack, as a switch */
#ifdef XDEV_CPU_ASAN
            __sanitizer_start_switch_fiber(NULL, ex->main_bottom, ex->main_size);
#endif
#ifdef XDEV_CPU_TSAN
            __tsan_switch_to_fiber(ex->main_tsan, 0);
#endif
        }
        siglongjmp(ex->guard, 1);
    }
    errno = saved;
    pass_on(sig, si, uc);
    errno = saved;
}

static void handlers_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < 4; k++)
        if (sigaction(fault_signals[k], NULL, &prev_actions[k]) != 0) return;
    for (int k = 0; k < 4; k++)
        if (sigaction(fault_signals[k], &sa, NULL) != 0) {
            for (int j = 0; j < k; j++)
                sigaction(fault_signals[j], &prev_actions[j], NULL);
            return;
        }
    atomic_store(&handlers_ok, true);
}

/* At exit or unload (the CPU backend's at_exit, once its workers are
 * joined): give each signal back the action it had before ours, unless
 * something replaced ours since (that one chains to ours or not: left be).
 * After dlclose ours would point at unmapped code. */
void xdev_cpu_fault_handlers_remove(void) {
    if (!atomic_exchange(&handlers_ok, false)) return;
    for (int k = 0; k < 4; k++) {
        struct sigaction cur;
        if (sigaction(fault_signals[k], NULL, &cur) != 0) continue;
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fault_handler)
            (void)sigaction(fault_signals[k], &prev_actions[k], NULL);
    }
}

bool xdev_cpu_fault_handlers_install(void) {
    pthread_once(&handlers_once, handlers_install);
    return atomic_load_explicit(&handlers_ok, memory_order_relaxed);
}

/* A thread without an alternate signal stack gets one (a fault on a fiber
 * stack's guard page has no stack left to run the handler on); one that
 * has one - the application's, a sanitizer's - keeps it. */
static void exec_altstack(xdev_cpu_exec_t *ex) {
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return;
#if defined(XDEV_CPU_ASAN) || defined(XDEV_CPU_TSAN)
    size_t bytes = 256u * 1024u;
#else
    size_t bytes = 64u * 1024u;
#endif
    long min = sysconf(_SC_SIGSTKSZ);
    if (min > 0 && (size_t)min * 4 > bytes) bytes = (size_t)min * 4;
    void *p =
        mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return; /* faults on this thread use its stack */
    stack_t ss = {.ss_sp = p, .ss_size = bytes, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, bytes);
        return;
    }
    ex->altstack = p;
    ex->altstack_bytes = bytes;
}

/* ----------------------------------------------------------------- fibers */

/* Switch from `from` to `to` (NULL: the thread's own context), telling the
 * sanitizers. Returns when something switches back to `from`. */
static void fiber_switch(xdev_cpu_exec_t *ex, fiber_t *from, fiber_t *to) {
    xdev_cpu_fiber_ctx_t *from_ctx = from != NULL ? &from->ctx : &ex->main_ctx;
    xdev_cpu_fiber_ctx_t *to_ctx = to != NULL ? &to->ctx : &ex->main_ctx;
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
    ex->on_fibers = to != NULL;
    xdev_cpu_fiber_ctx_jump(from_ctx, to_ctx);
#ifdef XDEV_CPU_ASAN
    __sanitizer_finish_switch_fiber(*fake, NULL, NULL);
#endif
}

/* Start loading the saved frame of fiber k (if in the block) into cache a
 * switch ahead: each switch lands on another stack, whose top lines have
 * usually left L1 since that fiber last ran (measured: 10-20% per switch). */
static inline void fiber_prefetch(const xdev_cpu_exec_t *ex, int k) {
#ifdef XDEV_CPU_FIBER_ASM
    if (k < 0 || k >= ex->n) return;
    const char *sp = ex->fibers[k]->ctx.sp;
    __builtin_prefetch(sp);
    __builtin_prefetch(sp + 64);
#else
    (void)ex, (void)k;
#endif
}

/* Work-item `i` reached a barrier or returned: run the next one. At the end
 * of a round every work-item either waits at the barrier (release them:
 * back to the first), or has returned (the block is done); some of each is
 * a divergent barrier, which fails the launch (the waiting ones are
 * abandoned). Rounds run the work-items in index order (tried: alternating
 * up and down rounds, which saves a switch per round, was slower). */
static void fiber_next(xdev_cpu_exec_t *ex, int i) {
    int next;
    if (i + 1 < ex->n) {
        next = i + 1;
    } else if (ex->finished == 0) {
        ex->arrived = 0;
        if (ex->n == 1) return;
        next = 0;
    } else {
        if (ex->arrived != 0) kernel_fault(&ex->ctx, XDEV_KFAULT_BARRIER_DIVERGE);
        fiber_switch(ex, ex->fibers[i], NULL);
        return;
    }
    ex->cur = next;
    fiber_prefetch(ex, next + 1 < ex->n ? next + 1 : 0);
    fiber_switch(ex, ex->fibers[i], ex->fibers[next]);
}

/* ctx->barrier of a SYNC kernel (runs on the work-item's fiber). */
static void fiber_barrier(xdev_kctx_t *ctx) {
    xdev_cpu_exec_t *ex = ctx->impl;
    ex->armed = 0; /* the switch is xdev's code, not the kernel's */
    ex->arrived++;
    fiber_next(ex, ex->cur);
    ex->armed = ex->guarded; /* back in the work-item */
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
        ex->armed = ex->guarded;
        l->sig->item(&ex->ctx, l->args, index % bx, index / bx % by, index / (bx * by));
        ex->armed = 0;
        f->in_item = false;
        ex->finished++;
        fiber_next(ex, index);
    }
}

/* (Re)start fiber i at the top of its loop. A fiber abandoned inside a
 * work-item leaves ASan's poisoned frames on its stack and TSan's record of
 * its calls: both are cleared. The stacks lie 64 KiB and a page apart, so
 * their tops - where a suspended fiber's live lines are - would all fall in
 * the same cache sets (L1's repeat every 4 KiB); fiber i starts i * 5 lines
 * (mod 64) lower, which spreads neighbours over every set (measured: blocks
 * of 1024 work-items 3x faster). */
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
    size_t color = (size_t)(i * 5 % 64) * 64;
    xdev_cpu_fiber_ctx_make(&f->ctx, f->stack, XDEV_CPU_FIBER_STACK - color, fiber_main, i);
    f->made = true;
    f->in_item = false;
}

/* At least n fibers with stacks: grown in groups (doubling, from 32), each
 * group one mapping with a PROT_NONE guard page under every stack (a guard
 * that cannot be set, e.g. at the process's mapping limit, is skipped). */
static bool fibers_reserve(xdev_cpu_exec_t *ex, int n) {
    if (n <= ex->nfibers) return true;
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
    for (int i = 0; i < n; i++)
        if (!ex->fibers[i]->made) fiber_make(ex, i);
    ex->n = n;
    ex->cur = 0;
    ex->arrived = ex->finished = 0;
    fiber_switch(ex, NULL, ex->fibers[0]);
    for (int i = 0; i < n; i++) /* abandoned at a barrier: start afresh next time */
        if (ex->fibers[i]->in_item) ex->fibers[i]->made = false;
}

/* --------------------------------------------------------------- executor */

static void exec_free(void *arg) {
    xdev_cpu_exec_t *ex = arg;
    if (ex->altstack != NULL) {
        stack_t off = {.ss_flags = SS_DISABLE};
        (void)sigaltstack(&off, NULL);
        munmap(ex->altstack, ex->altstack_bytes);
    }
#ifdef XDEV_CPU_TSAN
    for (int i = 0; i < ex->nfibers; i++)
        if (ex->fibers[i]->tsan != NULL) __tsan_destroy_fiber(ex->fibers[i]->tsan);
#endif
    for (int g = 0; g < ex->ngroups; g++) {
        munmap(ex->groups[g].map, ex->groups[g].map_bytes);
        free(ex->groups[g].array);
    }
    tls_exec = NULL; /* first: a signal now must not read the freed executor */
    free(ex->shared);
    free(ex);
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
    exec_altstack(ex);
    pthread_sigmask(SIG_SETMASK, NULL, &ex->sigmask);
    tls_exec = ex;
    return ex;
}

/* Blocks [first, end), unguarded. Not inlined: its locals change after
 * xdev_cpu_exec_blocks' sigsetjmp, which only keeps its own. */
static __attribute__((noinline)) void run_blocks(xdev_cpu_exec_t *ex, xdev_cpu_launch_t *l,
                                                 uint64_t first, uint64_t end) {
    const bool sync = (l->sig->flags & XDEV_KERNEL_USES_BARRIER) != 0;
    const size_t limit = xdev_cpu_state.shared_limit;
    const size_t dyn = (l->dynamic_shared + 63) & ~(size_t)63;
    xdev_kctx_t *c = &ex->ctx;
    ex->launch = l;
    memcpy(c->block, l->block, sizeof c->block);
    memcpy(c->grid, l->grid, sizeof c->grid);
    c->in_region = 0;
    c->dynamic_shared = ex->shared;
    c->shared = dyn < limit ? ex->shared + dyn : ex->shared + limit;
    c->shared_cap = dyn < limit ? limit - dyn : 0;
    c->barrier = sync ? fiber_barrier : loop_barrier;
    c->fault = kernel_fault;
    c->impl = ex;
    const uint64_t gx = (uint64_t)l->grid[0], gy = (uint64_t)l->grid[1];
    int x = (int)(first % gx), y = (int)(first / gx % gy), z = (int)(first / gx / gy);
    for (uint64_t b = first; b < end; b++) {
        if (atomic_load_explicit(&l->fault, memory_order_relaxed) != 0) break;
        c->group[0] = x;
        c->group[1] = y;
        c->group[2] = z;
        if (sync) {
            run_block_fibers(ex, l);
        } else {
            ex->armed = ex->guarded;
            l->sig->block(c, l->args);
            ex->armed = 0;
        }
        if (++x == l->grid[0]) {
            x = 0;
            if (++y == l->grid[1]) {
                y = 0;
                z++;
            }
        }
    }
}

/* The thread left a fault signal of the kernel through the guard: finish
 * the switch back from a fiber, restore the signal mask (the jump left the
 * handler's, which under TSan blocks every signal) and the floating-point state the jump did not
 * restore, forget the fibers left inside work-items, and fail the launch. */
static void recover(xdev_cpu_exec_t *ex, xdev_cpu_launch_t *l) {
    if (ex->on_fibers) {
#ifdef XDEV_CPU_ASAN
        __sanitizer_finish_switch_fiber(ex->main_fake_stack, NULL, NULL);
#endif
        ex->on_fibers = 0;
        for (int i = 0; i < ex->n; i++)
            if (ex->fibers[i]->in_item) ex->fibers[i]->made = false;
    }
    fesetenv(&ex->fenv); /* a kernel's rounding mode does not outlive it */
    pthread_sigmask(SIG_SETMASK, &ex->sigmask, NULL);
    xdev_cpu_launch_fail_signal(l, ex->ctx.group, ex->signo, ex->sicode, ex->addr);
}

void xdev_cpu_exec_blocks(xdev_cpu_exec_t *ex, xdev_cpu_launch_t *l, uint64_t first, uint64_t end) {
    /* The backend's own parallel loops (no stream) are not guarded: a fault
     * there is xdev's bug, and goes where any other fault goes. */
    if (l->stream == NULL || !atomic_load_explicit(&handlers_ok, memory_order_relaxed)) {
        run_blocks(ex, l, first, end);
        return;
    }
    fegetenv(&ex->fenv);
    if (sigsetjmp(ex->guard, 0) != 0) {
        ex->guarded = 0;
        recover(ex, l);
        return;
    }
    ex->guarded = 1; /* run_blocks arms it around each call of the kernel */
    run_blocks(ex, l, first, end);
    ex->guarded = 0;
}
