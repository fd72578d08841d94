/* SPDX-License-Identifier: Apache-2.0 */
/* test_select_real.c - selection with the real plugins built beside
 * libxdev (not the fakes of tests/plugins/): explicit cuda and hip with
 * and without a device, their prim tables, auto and a list passing over
 * hip, cuda without an NVIDIA driver, and auto on a machine without a GPU
 * driver not loading the plugins at all. Each scenario is skipped (exit 77,
 * reason printed) where its plugin was not built or the machine has what it
 * assumes absent. Part of test_select (test_select.c's main runs them), kept
 * apart from the fake plugins' scenarios so each file holds one concept. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_select_common.h"
#include "xdev/backend.h"

/* The real CUDA plugin beside libxdev (built wherever the toolkit is): on a
 * machine with a GPU explicit cuda works; without a driver or device (CI)
 * it fails naming the plugin file and the CUDA error, never falling back. */
START_TEST(cuda_real) {
    xdev_status_t st = xdev_init();
    if (st == XDEV_SUCCESS) {
        expect_default(XDEV_DEVICE_CUDA);
        int n = 0;
        XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
        ck_assert_int_ge(n, 1);
        printf("cuda_real: a CUDA device is present (%d)\n", n);
        return;
    }
    XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init(), "XDEV_BACKEND=cuda", "libxdev-cuda.so",
           "cudaError|no cuda device");
    printf("cuda_real: %s\n", xdev_last_error());
    /* the common causes say what to do (no GPU: what to check; an old driver: update it; no
     * driver: install one, cuda_nodriver) */
    const char *m = xdev_last_error();
    if (strstr(m, "cudaErrorInsufficientDriver") != NULL)
        ck_assert_msg(
            (strstr(m, "install a newer driver") || strstr(m, "install the NVIDIA driver")) &&
                strstr(m, "XDEV_BACKEND=cpu"),
            "no next step: %s", m);
    if (strstr(m, "cudaErrorNoDevice") != NULL)
        ck_assert_msg(strstr(m, "CUDA_VISIBLE_DEVICES") && strstr(m, "XDEV_BACKEND=cpu"),
                      "no next step: %s", m);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CPU, &info));
    ck_assert(!info.is_default); /* no silent fallback to the CPU */
}
END_TEST

/* The real plugins' prim tables (issue 44), read from each plugin's own
 * table without a device: CUDA sets every slot of the table it was built
 * with (backends/cuda_hip/cuda_prim*.cu over CUB); HIP too where it was
 * built with rocPRIM (the same sources over vendor/hip_prim.h), which CMake
 * says in XT_HIP_PRIM (1: built with the table, 0: without it). */
static const xdev_prim_vtable_t *real_prim_table(const char *name, void **handle) {
    char where[4096];
    ck_assert_msg(xt_plugin_installed(name, where, sizeof where), "no libxdev-%s.so", name);
    *handle = dlopen(where, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(*handle != NULL, "dlopen %s: %s", where, dlerror());
    xdev_backend_entry_fn entry = (xdev_backend_entry_fn)dlsym(*handle, XDEV_BACKEND_ENTRY_SYMBOL);
    ck_assert_msg(entry != NULL, "%s has no %s", where, XDEV_BACKEND_ENTRY_SYMBOL);
    const xdev_backend_api_t *api = entry();
    ck_assert_msg(api != NULL && api->size >= offsetof(xdev_backend_api_t, prim) + sizeof api->prim,
                  "%s: a table older than the prim slot", where);
    return api->prim;
}

/* Every slot of plugin `name`'s prim table is set. */
static void expect_full_prim_table(const char *name) {
    void *h = NULL;
    const xdev_prim_vtable_t *prim = real_prim_table(name, &h);
    ck_assert_msg(prim != NULL,
                  "libxdev-%s.so has no prim table (xdev_prim_* would be "
                  "XDEV_ERROR_NOT_SUPPORTED on every %s device)",
                  name, name);
    ck_assert_uint_eq(prim->size, sizeof(xdev_prim_vtable_t));
#define XT_PRIM_SLOT_SET(table, slot, ...)                                                         \
    ck_assert_msg(prim->slot != NULL, "libxdev-%s.so: prim." #slot " is NULL", name);
    XDEV_SLOTS_PRIM(XT_PRIM_SLOT_SET)
#undef XT_PRIM_SLOT_SET
    /* Kept loaded: its C++ runtime (CUB, rocPRIM) is not unloaded, as at exit. */
    (void)h;
}

START_TEST(cuda_prim_table) {
    expect_full_prim_table("cuda");
}
END_TEST

START_TEST(hip_prim_table) {
    const char *built = getenv("XT_HIP_PRIM");
    ck_assert_msg(built != NULL && (strcmp(built, "0") == 0 || strcmp(built, "1") == 0),
                  "XT_HIP_PRIM is '%s': tests/CMakeLists.txt says 1 (the HIP plugin was built "
                  "with rocPRIM) or 0",
                  built ? built : "(unset)");
    if (strcmp(built, "1") == 0) {
        expect_full_prim_table("hip");
        printf("hip_prim_table: libxdev-hip.so has every prim slot (rocPRIM)\n");
        return;
    }
    void *h = NULL;
    ck_assert_msg(real_prim_table("hip", &h) == NULL,
                  "libxdev-hip.so has a prim table, but CMake built it without rocPRIM "
                  "(XDEV_HIP_PRIMITIVES=OFF, or no rocprim/rocprim.hpp)");
    printf("hip_prim_table: libxdev-hip.so has no prim table (built without rocPRIM)\n");
    (void)h; /* kept loaded, as above */
}
END_TEST

/* ------------------------------------------------------------ the real hip plugin
 * Built from the CUDA backend's sources wherever the HIP runtime is found
 * (CI: Debian's libamdhip64, no AMD GPU). Without a device, its init fails
 * with the HIP runtime's own reason, which every path below must pass on. */

/* The hip backend's reason, after an init that tried it. */
static void expect_hip_reason(void) {
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_HIP, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_FAILED);
    ck_assert_ptr_nonnull(info.reason);
    ck_assert_msg(xt_icontains(info.reason, "libxdev-hip.so"), "reason: %s", info.reason);
    ck_assert_msg(xt_icontains(info.reason, "hipGetDeviceCount: hipError"), "reason: %s",
                  info.reason);
    printf("hip: %s\n", info.reason);
}

/* An AMD device is present: the plugin works (not expected on CI). */
static bool hip_device_present(void) {
    return xdev_is_available(XDEV_DEVICE_HIP);
}

START_TEST(hip_real) { /* XDEV_BACKEND=hip */
    xdev_status_t st = xdev_init();
    if (st == XDEV_SUCCESS) {
        expect_default(XDEV_DEVICE_HIP);
        printf("hip_real: a HIP device is present\n");
        return;
    }
    XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init(), "XDEV_BACKEND=hip", "libxdev-hip.so",
           "hipGetDeviceCount: hipError");
    printf("hip_real: %s\n", xdev_last_error());
    /* no device or an old driver (what a machine without an AMD GPU gives):
     * the error is named once, followed by what to do */
    const char *m = xdev_last_error(), *first = strstr(m, "hipErrorNoDevice");
    if (first == NULL) first = strstr(m, "hipErrorInsufficientDriver");
    if (first != NULL) {
        ck_assert_msg(strstr(first + 5, first[8] == 'N' ? "hipErrorNoDevice"
                                                        : "hipErrorInsufficientDriver") == NULL,
                      "the error is named twice: %s", m);
        ck_assert_msg(strstr(m, "XDEV_BACKEND=cpu") != NULL, "no way out named: %s", m);
    }
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CPU, &info));
    ck_assert(!info.is_default); /* no silent fallback to the CPU */
}
END_TEST

START_TEST(hip_auto) { /* XDEV_BACKEND unset: auto passes over hip, naming why */
    XT_OK(xdev_init());
    if (hip_device_present()) return;
    expect_hip_reason();
    xdev_device_type_t type = XDEV_MAX_DEVICE_TYPES;
    XT_OK(xdev_default_device_type(&type));
    ck_assert(type != XDEV_DEVICE_HIP);
}
END_TEST

START_TEST(hip_list_cpu) { /* XDEV_BACKEND=hip,cpu: falls through to cpu */
    XT_OK(xdev_init());
    if (hip_device_present()) {
        expect_default(XDEV_DEVICE_HIP);
        return;
    }
    expect_default(XDEV_DEVICE_CPU);
    expect_hip_reason();
}
END_TEST

/* The real CUDA plugin where no NVIDIA driver is installed (libcuda.so.1
 * does not load): "no driver was found" and what to install, not "the
 * driver is older than the runtime". Skipped where a driver is present or
 * the plugin is not built (main). */
START_TEST(cuda_nodriver) {
    XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init(), "XDEV_BACKEND=cuda", "libxdev-cuda.so",
           "no NVIDIA driver was found", "libcuda.so.1", "install the NVIDIA driver",
           "XDEV_BACKEND=cpu");
    const char *m = xdev_last_error();
    printf("cuda_nodriver: %s\n", m);
    ck_assert_msg(strstr(m, "older than") == NULL, "an absent driver called old: %s", m);
}
END_TEST

/* ------------------------------------------------------------ a start without a GPU
 * XDEV_BACKEND unset on a machine without an NVIDIA driver (no /dev/nvidia*,
 * no libcuda.so.1) and without AMD's kernel driver (no /dev/kfd): auto must
 * not dlopen the shipped plugins (their runtimes cost ~80 ms to load and
 * cannot find a device); XDEV_LOG says why each was passed over, and the
 * backend still loads when asked for by name. */
static bool maps_hold(const char *needle) {
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

START_TEST(auto_no_gpu) {
    char log[] = "/tmp/xdev_auto_no_gpu_XXXXXX";
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_eq(dup2(fd, 2), 2);
    xdev_status_t st = xdev_init();
    fflush(stderr);
    ck_assert_int_eq(dup2(saved, 2), 2);
    close(saved);
    close(fd);
    char text[16384] = "";
    FILE *f = fopen(log, "r");
    ck_assert_ptr_nonnull(f);
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = '\0';
    fclose(f);
    unlink(log);
    printf("%s", text);
    XT_OK(st);
    expect_default(XDEV_DEVICE_CPU);
    char where[4096];
    if (xt_plugin_installed("cuda", where, sizeof where)) {
        ck_assert_msg(!maps_hold("libxdev-cuda.so"),
                      "auto loaded %s on a machine without an NVIDIA driver", where);
        ck_assert_msg(strstr(text, "xdev: backend cuda: passed over by auto: no NVIDIA driver "
                                   "found") != NULL,
                      "XDEV_LOG does not say why cuda was passed over:\n%s", text);
        ck_assert_msg(strstr(text, "install the NVIDIA driver") != NULL, "no next step:\n%s", text);
        /* asked for by name, the plugin still loads and gives its own reason */
        ck_assert(!xdev_is_available(XDEV_DEVICE_CUDA));
        ck_assert(maps_hold("libxdev-cuda.so"));
    }
    if (xt_plugin_installed("hip", where, sizeof where)) {
        ck_assert_msg(!maps_hold("libxdev-hip.so"), "auto loaded %s on a machine without /dev/kfd",
                      where);
        ck_assert_msg(strstr(text, "xdev: backend hip: passed over by auto: no AMD GPU driver "
                                   "found") != NULL,
                      "XDEV_LOG does not say why hip was passed over:\n%s", text);
    }
}
END_TEST
/* Where a scenario cannot run here: its real plugin was not built, or the
 * machine has the driver it assumes absent. */
int select_real_skip(const char *scenario) {
    if (strcmp(scenario, "cuda_real") == 0 || strcmp(scenario, "cuda_prim_table") == 0) {
        char where[4096];
        if (!xt_plugin_installed("cuda", where, sizeof where)) {
            printf("SKIP cuda_real: no real libxdev-cuda.so was built (no CUDA toolkit)\n");
            return XT_SKIP_CODE;
        }
    }
    if (strcmp(scenario, "cuda_nodriver") == 0) {
        char where[4096];
        if (!xt_plugin_installed("cuda", where, sizeof where)) {
            printf("SKIP cuda_nodriver: no real libxdev-cuda.so was built (no CUDA toolkit)\n");
            return XT_SKIP_CODE;
        }
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (driver != NULL) {
            dlclose(driver);
            printf("SKIP cuda_nodriver: an NVIDIA driver is installed here (libcuda.so.1 "
                   "loads)\n");
            return XT_SKIP_CODE;
        }
    }
    if (strcmp(scenario, "auto_no_gpu") == 0) {
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (driver != NULL) dlclose(driver);
        const char *dev[] = {"/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd"};
        for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
            if (access(dev[i], F_OK) == 0 || driver != NULL) {
                printf("SKIP auto_no_gpu: a GPU driver is installed here (%s)\n",
                       driver != NULL ? "libcuda.so.1 loads" : dev[i]);
                return XT_SKIP_CODE;
            }
    }
    if (strncmp(scenario, "hip_", 4) == 0 && strcmp(scenario, "hip_missing") != 0) {
        char where[4096];
        if (!xt_plugin_installed("hip", where, sizeof where)) {
            printf("SKIP %s: no real libxdev-hip.so was built (no HIP runtime)\n", scenario);
            return XT_SKIP_CODE;
        }
    }
    return 0;
}

/* The scenarios above, for main's lookup by name. The table is filled at
 * each call: Check's test handles are not constant expressions. */
const scenario_t *select_real_scenarios(size_t *n) {
    static scenario_t table[8];
    const scenario_t s[] = {
        {"cuda_real", cuda_real, false, false},
        {"cuda_prim_table", cuda_prim_table, false, false},
        {"hip_prim_table", hip_prim_table, false, false},
        {"hip_real", hip_real, false, false},
        {"hip_auto", hip_auto, false, false},
        {"hip_list_cpu", hip_list_cpu, false, false},
        {"cuda_nodriver", cuda_nodriver, false, false},
        {"auto_no_gpu", auto_no_gpu, false, false},
    };
    _Static_assert(sizeof s == sizeof table, "the table holds every scenario");
    memcpy(table, s, sizeof s);
    *n = sizeof table / sizeof table[0];
    return table;
}
