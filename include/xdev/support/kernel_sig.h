/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/support/kernel_sig.h - the signature a GPU kernel carries in its own
 * image, so a kernel compiled at run time (NVRTC, hiprtc) is checked at
 * launch like one with a host table.
 *
 * For each XDEV_KERNEL(name, ...) the device compilation of
 * xdev/kernel_lang.h defines a global array XDEV_KERNEL_SIG_PREFIX "name" of
 * unsigned ints: XDEV_KERNEL_SIG_MAGIC, then one word per parameter - its
 * size in bytes, or'ed with its kind (XDEV_KPARAM_*) shifted left by
 * XDEV_KERNEL_SIG_KIND_SHIFT - then 0. A backend that finds a kernel reads
 * it (cuModuleGetGlobal) and reports the sizes and kinds in the kernel's
 * attributes. Only #defines here: NVRTC and hiprtc read this file too. */
#ifndef XDEV_SUPPORT_KERNEL_SIG_H
#define XDEV_SUPPORT_KERNEL_SIG_H

/* Parameter kinds (xdev_kernel_sig_t.param_kinds, kernel attributes). */
#define XDEV_KPARAM_VALUE 0u
#define XDEV_KPARAM_POINTER 1u
/* Or'ed into a signature's POINTER for a pointer to const (XDEV_PTR(const
 * T, x)): the stream-order sanitizer counts the kernel as only reading it.
 * Kernel attributes (xdev_kernel_get_attributes) report POINTER alone. */
#define XDEV_KPARAM_READONLY 2u
/* Or'ed into a POINTER whose pointee is float (FLOAT) or double (DOUBLE),
 * const or not: shadow execution compares what the kernel wrote there
 * within its floating tolerance (a GPU compiler contracts a * b + c into one
 * rounding where the host build rounds twice). Older signatures lack them:
 * their outputs are compared bit for bit. */
#define XDEV_KPARAM_FLOAT 4u
#define XDEV_KPARAM_DOUBLE 8u

#define XDEV_KERNEL_SIG_PREFIX "xdev_sig__"
#define XDEV_KERNEL_SIG_MAGIC 0x31677378u /* "xsg1" */
#define XDEV_KERNEL_SIG_KIND_SHIFT 24

#endif
