/* SPDX-License-Identifier: Apache-2.0 */
/* test_kernel_fault_unload.c - unloading libxdev gives the fault signals
 * back (kernel_faults.unload). The CPU backend's first launch installs
 * handlers for SIGSEGV, SIGBUS, SIGFPE and SIGILL; after dlclose they
 * would point at unmapped code, so the next fault anywhere in the process
 * would jump there. This program is not linked with libxdev: it installs
 * its own SIGSEGV handler, dlopens the library (argv[1]), runs a kernel of
 * the host kernel library (argv[2]) so that xdev's handlers are installed,
 * dlcloses it and checks that each signal's action is what it was before.
 * Exit 0: passed; 77: skipped (the library stayed loaded); else failed. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "xdev/kernel.h"
#include "xdev/memory.h"

static void mine(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
}

static const int sigs[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

/* The handler of `sig` now (sa_sigaction / sa_handler share storage). */
static void *handler_of(int sig) {
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0) return (void *)-2;
    return (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
}

#define SYM(h, name)                                                                               \
    __typeof__(&name) p_##name = (__typeof__(&name))dlsym(h, #name);                               \
    if (p_##name == NULL) {                                                                        \
        fprintf(stderr, "dlsym %s: %s\n", #name, dlerror());                                       \
        return 3;                                                                                  \
    }

/* Load, run one kernel, unload. 0 on success. */
static int run_kernel(void *h, const char *kernel_library) {
    SYM(h, xdev_module_load_image);
    SYM(h, xdev_module_get_kernel);
    SYM(h, xdev_module_unload);
    SYM(h, xdev_malloc_device);
    SYM(h, xdev_free);
    SYM(h, xdev_launch_kernel);
    SYM(h, xdev_device_synchronize);
    SYM(h, xdev_last_error);
    const xdev_device_t cpu0 = {XDEV_DEVICE_CPU, 0};
    xdev_kernel_image_t img = {XDEV_IMAGE_HOST_LIBRARY, kernel_library, 0};
    xdev_module_t m = NULL;
    xdev_kernel_t k = NULL;
    int *out = NULL;
    int n = 64, add = 1;
    if (p_xdev_module_load_image(cpu0, &img, &m) != XDEV_SUCCESS ||
        p_xdev_module_get_kernel(m, "lib_iota", &k) != XDEV_SUCCESS ||
        p_xdev_malloc_device(cpu0, (void **)&out, (size_t)n * sizeof(int)) != XDEV_SUCCESS) {
        fprintf(stderr, "set-up: %s\n", p_xdev_last_error());
        return 4;
    }
    xdev_launch_config_t c = {.grid = {2, 1, 1}, .block = {32, 1, 1}, .stream = NULL};
    xdev_arg_t args[3] = {XDEV_ARG(n), XDEV_ARG(add), XDEV_ARG(out)};
    if (p_xdev_launch_kernel(k, &c, args, 3) != XDEV_SUCCESS ||
        p_xdev_device_synchronize(cpu0) != XDEV_SUCCESS) {
        fprintf(stderr, "launch: %s\n", p_xdev_last_error());
        return 5;
    }
    if (p_xdev_free(out) != XDEV_SUCCESS || p_xdev_module_unload(m) != XDEV_SUCCESS) return 6;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBXDEV KERNEL_LIBRARY\n", argv[0]);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = mine;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0) return 2;
    void *before[4];
    for (int i = 0; i < 4; i++)
        before[i] = handler_of(sigs[i]);

    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 3;
    }
    int rc = run_kernel(h, argv[2]);
    if (rc != 0) return rc;
    if (handler_of(SIGSEGV) == before[0]) {
        fprintf(stderr, "FAIL: the launch did not install xdev's SIGSEGV handler\n");
        return 1;
    }
    if (dlclose(h) != 0) {
        fprintf(stderr, "dlclose: %s\n", dlerror());
        return 3;
    }
    if (dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) != NULL) {
        printf("SKIP: libxdev stayed loaded after dlclose\n");
        return 77;
    }
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *now = handler_of(sigs[i]);
        if (now != before[i]) {
            fprintf(stderr, "FAIL: after unloading libxdev, signal %d's handler is %p, not %p\n",
                    sigs[i], now, before[i]);
            bad = 1;
        }
    }
    if (!bad) printf("signal handlers restored at unload\n");
    return bad;
}
