/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_fiber_switch.c - the register switches of the CPU
 * backend's fibers, and how a new fiber's first context is made
 * (cpu_fiber_switch.h says which switch a build has; cpu_fiber.c uses it).
 *
 * Apart from the executor because this is the machine-specific part: a
 * switch is a few instructions on x86-64 and aarch64 (the callee-saved
 * registers, the stack pointer and the floating-point control registers),
 * where ucontext's swapcontext makes a signal-mask system call per switch.
 * Elsewhere, in code built for shadow stacks, or with
 * -DXDEV_CPU_FIBER_UCONTEXT, only the ucontext version of
 * xdev_cpu_fiber_ctx_make is built (ctest cpu_fiber.builds compiles this
 * file's ucontext and aarch64 variants). */
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_fiber_switch.h"

#ifdef XDEV_CPU_FIBER_ASM
/* Where a new fiber's first jump returns to: calls entry(arg), which never
 * returns, with the two taken from the callee-saved registers
 * xdev_cpu_fiber_ctx_make set. */
__attribute__((visibility("hidden"))) void xdev_cpu_fiber_start(void);

#if defined(__x86_64__)
/* System V x86-64: rbx, rbp, r12-r15, rsp, and the control bits of MXCSR
 * and of the x87 control word (callee-saved by the ABI). The frame, from
 * the saved sp up: MXCSR (4 bytes), x87 CW (2), pad (2), r15, r14, r13,
 * r12, rbx, rbp, return address: 64 bytes. */
__asm__(".text\n"
        ".globl xdev_cpu_fiber_jump\n"
        ".hidden xdev_cpu_fiber_jump\n"
        ".type xdev_cpu_fiber_jump, @function\n"
        ".p2align 4\n"
        "xdev_cpu_fiber_jump:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size xdev_cpu_fiber_jump, .-xdev_cpu_fiber_jump\n"
        /* Entered by the ret above with rsp 16-aligned; rip undefined ends
         * a debugger's backtrace here. */
        ".globl xdev_cpu_fiber_start\n"
        ".hidden xdev_cpu_fiber_start\n"
        ".type xdev_cpu_fiber_start, @function\n"
        ".p2align 4\n"
        "xdev_cpu_fiber_start:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined rip\n"
        "    movq %r12, %rdi\n"
        "    callq *%r13\n"
        "    ud2\n"
        "    .cfi_endproc\n"
        ".size xdev_cpu_fiber_start, .-xdev_cpu_fiber_start\n");
#define FIBER_FRAME_BYTES 64
#elif defined(__aarch64__)
/* AAPCS64: x19-x28, x29 (frame pointer), x30 (return address), sp, d8-d15
 * (the low halves of v8-v15) and FPCR. The frame, from the saved sp up:
 * x19..x30 (96 bytes), d8..d15 (64), FPCR (8), pad (8): 176 bytes. FPCR
 * is written only when the two differ (a write can stall the pipeline on
 * some cores). The hint is BTI c, a no-op without branch protection. */
__asm__(".text\n"
        ".globl xdev_cpu_fiber_jump\n"
        ".hidden xdev_cpu_fiber_jump\n"
        ".type xdev_cpu_fiber_jump, %function\n"
        ".p2align 4\n"
        "xdev_cpu_fiber_jump:\n"
        "    hint #34\n"
        "    sub sp, sp, #176\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        "    mrs x9, fpcr\n"
        "    str x9, [sp, #160]\n"
        "    mov x9, sp\n"
        "    str x9, [x0]\n"
        "    mov sp, x1\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    ldr x10, [sp, #160]\n"
        "    cmp x9, x10\n"
        "    b.eq 1f\n"
        "    msr fpcr, x10\n"
        "1:  add sp, sp, #176\n"
        "    ret\n"
        ".size xdev_cpu_fiber_jump, .-xdev_cpu_fiber_jump\n"
        ".globl xdev_cpu_fiber_start\n"
        ".hidden xdev_cpu_fiber_start\n"
        ".type xdev_cpu_fiber_start, %function\n"
        ".p2align 4\n"
        "xdev_cpu_fiber_start:\n"
        "    .cfi_startproc\n"
        "    .cfi_undefined x30\n"
        "    mov x0, x19\n"
        "    blr x20\n"
        "    brk #0\n"
        "    .cfi_endproc\n"
        ".size xdev_cpu_fiber_start, .-xdev_cpu_fiber_start\n");
#define FIBER_FRAME_BYTES 176
#endif

/* Set `c` so that the first jump to it calls entry(arg) on the stack
 * [lo, lo + size): at its top, a frame as xdev_cpu_fiber_jump leaves one, returning to
 * xdev_cpu_fiber_start, with zero frame-pointer and return-address words so
 * that stack walks (ASan's, a debugger's) stop there, and the calling
 * thread's floating-point control registers. */
void xdev_cpu_fiber_ctx_make(xdev_cpu_fiber_ctx_t *c, unsigned char *lo, size_t size,
                             void (*entry)(int), int arg) {
    uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
    uint64_t *f = (uint64_t *)(top - 16 - FIBER_FRAME_BYTES);
    memset(f, 0, 16 + FIBER_FRAME_BYTES);
#if defined(__x86_64__)
    uint32_t mxcsr;
    uint16_t fcw;
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fcw));
    f[0] = mxcsr | (uint64_t)fcw << 32;
    f[3] = (uintptr_t)entry;        /* r13 */
    f[4] = (uint64_t)(unsigned)arg; /* r12 */
    f[7] = (uintptr_t)xdev_cpu_fiber_start;
#else
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    f[0] = (uint64_t)(unsigned)arg;          /* x19 */
    f[1] = (uintptr_t)entry;                 /* x20 */
    f[11] = (uintptr_t)xdev_cpu_fiber_start; /* x30 */
    f[20] = fpcr;
#endif
    c->sp = f;
}
#else /* ucontext */
void xdev_cpu_fiber_ctx_make(xdev_cpu_fiber_ctx_t *c, unsigned char *lo, size_t size,
                             void (*entry)(int), int arg) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = lo;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL; /* entry never returns */
    makecontext(&c->uc, (void (*)(void))entry, 1, arg);
}
#endif
