/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_fiber_switch.h - the stack switch under the CPU backend's
 * fibers (cpu_fiber.c runs a SYNC kernel's work-items on them): which switch
 * this build has, what a suspended context is, and the two calls on it.
 *
 * Kept apart from the executor because it is its only machine-specific
 * code: the register switches (x86-64, aarch64) are assembly in
 * cpu_fiber_switch.c, with ucontext as the fallback. The jump is inline (a
 * barrier switches once per work-item); making a context is not (once per
 * fiber). Both files must see the same choice, so CMakeLists.txt gives them
 * the same per-file flags (XDEV_CPU_FIBER_UCONTEXT, -fcf-protection). */
#ifndef XDEV_CPU_FIBER_SWITCH_H
#define XDEV_CPU_FIBER_SWITCH_H

#include <stddef.h>

/* The register switch where it is written; ucontext elsewhere. Code built
 * for hardware shadow stacks (x86 CET's -fcf-protection=return/full, arm64
 * GCS) gets ucontext too: a return onto another stack would fault where a
 * shadow stack is on, and glibc's swapcontext switches those. */
#if defined(__CET__)
#define XDEV_CPU_SHADOW_STACK (__CET__ & 2)
#elif defined(__ARM_FEATURE_GCS_DEFAULT)
#define XDEV_CPU_SHADOW_STACK 1
#else
#define XDEV_CPU_SHADOW_STACK 0
#endif
#if !defined(XDEV_CPU_FIBER_UCONTEXT) && !XDEV_CPU_SHADOW_STACK && defined(__ELF__) &&             \
    defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))
#define XDEV_CPU_FIBER_ASM 1
#else
#include <ucontext.h>
#endif

#ifdef XDEV_CPU_FIBER_ASM
/* A suspended fiber (or the thread's own context) is its stack pointer: the
 * rest of its state lies on its stack, pushed by xdev_cpu_fiber_jump. */
typedef struct xdev_cpu_fiber_ctx {
    void *sp;
} xdev_cpu_fiber_ctx_t;

/* Pushes the callee-saved state on the running stack, stores the stack
 * pointer in *save, moves to stack `sp` and pops what was pushed there: the
 * caller resumes once something jumps back to *save. Caller-saved registers
 * need no saving (the compiler assumes a call clobbers them), and the signal
 * mask is the thread's, not the fiber's, so no system call. */
__attribute__((visibility("hidden"))) void xdev_cpu_fiber_jump(void **save, void *sp);

/* Save the running context in `from` and resume `to`; returns when
 * something jumps back to `from`. */
static inline void xdev_cpu_fiber_ctx_jump(xdev_cpu_fiber_ctx_t *from, xdev_cpu_fiber_ctx_t *to) {
    xdev_cpu_fiber_jump(&from->sp, to->sp);
}
#else /* ucontext */
typedef struct xdev_cpu_fiber_ctx {
    ucontext_t uc;
} xdev_cpu_fiber_ctx_t;

static inline void xdev_cpu_fiber_ctx_jump(xdev_cpu_fiber_ctx_t *from, xdev_cpu_fiber_ctx_t *to) {
    swapcontext(&from->uc, &to->uc);
}
#endif

/* Set `c` so that the first jump to it calls entry(arg), which never
 * returns, on the stack [lo, lo + size) (cpu_fiber_switch.c). */
void xdev_cpu_fiber_ctx_make(xdev_cpu_fiber_ctx_t *c, unsigned char *lo, size_t size,
                             void (*entry)(int), int arg);

#endif /* XDEV_CPU_FIBER_SWITCH_H */
