/* SPDX-License-Identifier: Apache-2.0 */
/* test_select.c - backend selection, plugin loading and environment parsing.
 *
 * xdev initialises once per process, so every scenario is its own ctest entry
 * (`test_select <scenario>`) with its own environment; see CMakeLists.txt.
 * The fake "cuda" plugins live in tests/plugins/. Scenarios that assume no
 * real cuda/hip plugin is installed skip (exit 77) when one is. The real
 * plugins' scenarios are in test_select_real.c; main here runs either. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_select_common.h"
#include "xdev/backend.h"

static const char *plugin_dir(void) {
    const char *p = getenv("XDEV_PLUGIN_PATH");
    ck_assert_msg(p && *p, "XDEV_PLUGIN_PATH not set for this scenario");
    return p;
}

/* xdev_init fails with `status`; the message mentions every needle; a second
 * call returns the same status. */
static void expect_init_fails(xdev_status_t status, const char *needle1, const char *needle2) {
    XT_ERR(status, xdev_init(), needle1 ? needle1 : "", needle2 ? needle2 : "");
    char first[4096];
    snprintf(first, sizeof first, "%s", xdev_last_error());
    xdev_clear_error();
    XT_STATUS(status, xdev_init());
    printf("xdev_init: %s: %s\n", xdev_status_string(status), first);
}

/* ------------------------------------------------------------ cpu and auto */
START_TEST(cpu_explicit) {
    expect_default(XDEV_DEVICE_CPU);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CPU, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
    ck_assert_str_eq(info.name, "cpu");
    ck_assert_str_eq(info.path, "built-in");
    ck_assert_int_eq(info.device_count, 1); /* XDEV_CPU_DEVICES unset: 1 */
    ck_assert(info.is_default);
    ck_assert(!xdev_launch_blocking()); /* XDEV_LAUNCH_BLOCKING=0 */
}
END_TEST

START_TEST(auto_cpu) {
    expect_default(XDEV_DEVICE_CPU);
    ck_assert(!xdev_is_available(XDEV_DEVICE_CUDA));
    ck_assert(!xdev_is_available(XDEV_DEVICE_HIP));
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_FAILED);
    ck_assert(!info.is_default);
    ck_assert_ptr_nonnull(info.reason);
    ck_assert_msg(xt_icontains(info.reason, "/nonexistent"), "reason: %s", info.reason);
    ck_assert_msg(xt_icontains(info.reason, "libxdev-cuda.so"), "reason: %s", info.reason);
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CPU, &info));
    ck_assert(info.is_default);
}
END_TEST

START_TEST(auto_good) {
    expect_default(XDEV_DEVICE_CUDA);
    int n = 0;
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    ck_assert_int_eq(n, 2);
}
END_TEST

START_TEST(auto_nodevice) {
    expect_default(XDEV_DEVICE_CPU);
    ck_assert(!xdev_is_available(XDEV_DEVICE_CUDA));
    int n = -1;
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    ck_assert_int_eq(n, 0);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert(!info.is_default);
    ck_assert_int_eq(info.device_count, 0);
}
END_TEST

/* ------------------------------------------------------------ the fake cuda plugin */
static void host_fn_add(void *arg) {
    *(int *)arg += 1;
}

START_TEST(cuda_good) {
    expect_default(XDEV_DEVICE_CUDA);
    int n = 0;
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    ck_assert_int_eq(n, 2);
    XT_OK(xdev_device_count(XDEV_DEVICE_CPU, &n));
    ck_assert_int_eq(n, 2); /* cpu is usable beside cuda */
    ck_assert(xdev_is_available(XDEV_DEVICE_CUDA));
    ck_assert(xdev_is_available(XDEV_DEVICE_CPU));

    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
    ck_assert_str_eq(info.name, "cuda");
    ck_assert(info.is_default);
    ck_assert_int_eq(info.device_count, 2);
    ck_assert_uint_eq(info.abi_major, XDEV_BACKEND_ABI_MAJOR);
    ck_assert_uint_eq(info.abi_minor, XDEV_BACKEND_ABI_MINOR);
    ck_assert_ptr_nonnull(info.path);
    ck_assert_msg(strstr(info.path, plugin_dir()) && strstr(info.path, "libxdev-cuda.so"),
                  "path %s not in %s", info.path, plugin_dir());
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CPU, &info));
    ck_assert(!info.is_default);
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_HIP, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_FAILED);
    ck_assert_msg(info.reason && strstr(info.reason, "libxdev-hip.so"), "hip reason: %s",
                  info.reason ? info.reason : "(null)");

    /* Names and current devices per type. */
    char buf[XDEV_DEVICE_NAME_MAX];
    XT_OK(xdev_device_format(xdev_cuda(1), buf, sizeof buf));
    ck_assert_str_eq(buf, "cuda:1");
    xdev_device_t d;
    XT_OK(xdev_device_parse("cuda", &d));
    XT_OK(xdev_set_device(xdev_cuda(1)));
    XT_OK(xdev_device_resolve(d, &d));
    XT_DEV_EQ(d, xdev_cuda(1));
    XT_OK(xdev_set_device(xdev_cpu(1)));
    XT_OK(xdev_get_device(&d));
    XT_DEV_EQ(d, xdev_cuda(1)); /* default type's current device unchanged */
    int idx = -1;
    XT_OK(xdev_get_device_index(XDEV_DEVICE_CPU, &idx));
    ck_assert_int_eq(idx, 1);
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xdev_cuda(2)), "2");
    XT_OK(xdev_set_device(xdev_cuda(0)));

    xdev_device_properties_t p;
    XT_OK(xdev_get_device_properties(xdev_cuda(1), &p));
    ck_assert_str_eq(p.name, "xdev fake CUDA device");
    ck_assert_int_eq(p.capability_major, 9);
    ck_assert_int_eq(p.physical_index, 1);
    ck_assert_uint_eq(p.total_memory, (size_t)256 << 20);

    /* Streams and host functions on the plugin. */
    xdev_stream_t s, def;
    XT_OK(xdev_stream_create(xdev_cuda(1), XDEV_STREAM_PRIORITY_HIGH, &s));
    XT_OK(xdev_stream_default(xdev_cuda(1), &def));
    ck_assert_ptr_ne(s, def);
    int prio = 0;
    XT_OK(xdev_stream_get_priority(s, &prio));
    ck_assert_int_eq(prio, XDEV_STREAM_PRIORITY_HIGH);
    int calls = 0;
    XT_OK(xdev_launch_host_func(s, host_fn_add, &calls));
    XT_OK(xdev_launch_host_func(NULL, host_fn_add, &calls)); /* current: cuda:0 default */
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_synchronize());
    ck_assert_int_eq(calls, 2);
    void *native = NULL;
    XT_OK(xdev_stream_native_handle(s, &native));
    ck_assert_ptr_nonnull(native);

    /* Events: timing through the plugin, bound to cuda:1. */
    xdev_event_t a, b;
    XT_OK(xdev_event_create(XDEV_EVENT_TIMING, &a));
    XT_OK(xdev_event_create(XDEV_EVENT_TIMING, &b));
    xt_sleep_task_t nap = {20, NULL};
    XT_OK(xdev_event_record(a, s));
    XT_OK(xdev_launch_host_func(s, xt_sleep_fn, &nap));
    XT_OK(xdev_event_record(b, s));
    XT_OK(xdev_event_synchronize(b));
    float ms = -1;
    XT_OK(xdev_event_elapsed_time(a, b, &ms));
    ck_assert_msg(ms >= 18.0f && ms < 200.0f, "elapsed %.3f ms", (double)ms);
    XT_OK(xdev_event_get_device(a, &d));
    XT_DEV_EQ(d, xdev_cuda(1));
    xdev_stream_t cpu_s;
    XT_OK(xdev_stream_default(xdev_cpu(0), &cpu_s));
    ck_assert(xdev_event_record(a, cpu_s) != XDEV_SUCCESS); /* bound to cuda:1 */
    ck_assert(xdev_last_error()[0] != '\0');
    XT_OK(xdev_event_destroy(a));
    XT_OK(xdev_event_destroy(b));

    /* Memory on both backends, copies between them. */
    enum { N = 4096 };
    unsigned char src[N], out[N];
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(i * 31 + 7);
    void *dcpu = NULL, *dcu0 = NULL, *dcu1 = NULL, *pinned = NULL;
    XT_OK(xdev_malloc(&dcu0, N)); /* default type, current device: cuda:0 */
    XT_OK(xdev_device_of(dcu0, &d));
    XT_DEV_EQ(d, xdev_cuda(0));
    XT_OK(xdev_malloc_device(xdev_cuda(1), &dcu1, N));
    XT_OK(xdev_malloc_device(xdev_cpu(0), &dcpu, N));
    XT_OK(xdev_host_alloc(&pinned, N));
    xdev_pointer_info_t pi;
    XT_OK(xdev_pointer_get_info(pinned, &pi));
    ck_assert_int_eq(pi.kind, XDEV_MEMORY_PINNED_HOST);
    XT_DEV_EQ(pi.device, xdev_cuda(0)); /* default type's backend pins */
    XT_OK(xdev_pointer_get_info((char *)dcu1 + 5, &pi));
    ck_assert_int_eq(pi.kind, XDEV_MEMORY_DEVICE);
    XT_DEV_EQ(pi.device, xdev_cuda(1));
    ck_assert_ptr_eq(pi.base, dcu1);

    XT_OK(xdev_memcpy(dcpu, src, N));    /* host -> cpu:0 */
    XT_OK(xdev_memcpy(dcu0, dcpu, N));   /* cpu:0 -> cuda:0 */
    XT_OK(xdev_memcpy(dcu1, dcu0, N));   /* cuda:0 -> cuda:1 */
    XT_OK(xdev_memcpy(pinned, dcu1, N)); /* cuda:1 -> pinned */
    XT_OK(xdev_memcpy(out, pinned, N));
    ck_assert_int_eq(memcmp(out, src, N), 0);

    memset(out, 0, N);
    XT_OK(xdev_memset_async(dcpu, 0, N, NULL));
    /* NULL stream: the GPU side's current stream, and the host first waits
     * for the CPU device's current stream (memory.h), so the copy is ordered
     * after the memset just queued there. */
    XT_OK(xdev_memcpy_async(dcpu, dcu1, N, NULL));
    XT_OK(xdev_memset_async(dcu0, 0x7e, 16, NULL));
    XT_OK(xdev_stream_current(xdev_cpu(0), &cpu_s));
    XT_OK(xdev_stream_synchronize(cpu_s));
    XT_OK(xdev_synchronize());
    XT_OK(xdev_memcpy(out, dcpu, N));
    ck_assert_int_eq(memcmp(out, src, N), 0);
    XT_OK(xdev_memcpy(out, dcu0, 32));
    ck_assert_uint_eq(out[0], 0x7e);
    ck_assert_uint_eq(out[16], src[16]);

    /* The CPU workers cannot reach GPU memory: a CPU<->GPU copy runs on the
     * GPU side's stream; a CPU stream is refused (memory.h). */
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_memcpy_async(dcpu, dcu1, N, cpu_s), "cuda:1", "cpu:0");
    xdev_stream_t cu1_s = NULL;
    XT_OK(xdev_stream_current(xdev_cuda(1), &cu1_s));
    XT_OK(xdev_memset_async(dcpu, 0, N, cpu_s));
    XT_OK(xdev_memcpy_async(dcpu, dcu1, N, cu1_s));
    XT_OK(xdev_stream_synchronize(cu1_s));
    XT_OK(xdev_memcpy(out, dcpu, N));
    ck_assert_int_eq(memcmp(out, src, N), 0);

    size_t free_b = 0, total_b = 0;
    XT_OK(xdev_mem_get_info(xdev_cuda(0), &free_b, &total_b));
    ck_assert_uint_eq(total_b, (size_t)256 << 20);
    ck_assert_uint_lt(free_b, total_b);

    /* A plugin's error comes back with the call's name and the vendor's error. */
    void *huge = NULL;
    XT_ERR(XDEV_ERROR_OUT_OF_MEMORY, xdev_malloc_device(xdev_cuda(1), &huge, (size_t)1 << 30),
           "cudaErrorMemoryAllocation");

    XT_OK(xdev_free(dcpu));
    XT_OK(xdev_free(dcu0));
    XT_OK(xdev_free(dcu1));
    XT_OK(xdev_host_free(pinned));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

START_TEST(list_good) {
    expect_default(XDEV_DEVICE_CUDA);
}
END_TEST

START_TEST(plugin_path_list) {
    expect_default(XDEV_DEVICE_CUDA);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_LOADED);
}
END_TEST

START_TEST(cuda_visible) {
    expect_default(XDEV_DEVICE_CUDA);
    int n = 0;
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    ck_assert_int_eq(n, 1);
    XT_OK(xdev_device_count(XDEV_DEVICE_CPU, &n));
    ck_assert_int_eq(n, 2); /* XDEV_VISIBLE_DEVICES selects accelerators, never the CPU */
    xdev_device_properties_t p;
    XT_OK(xdev_get_device_properties(xdev_cuda(0), &p));
    ck_assert_int_eq(p.physical_index, 1);
    XT_OK(xdev_get_device_properties(xdev_cpu(0), &p));
    ck_assert_int_eq(p.physical_index, 0);
    XT_OK(xdev_get_device_properties(xdev_cpu(1), &p));
    ck_assert_int_eq(p.physical_index, 1);
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xdev_cuda(1)), "1");
}
END_TEST

/* XDEV_VISIBLE_DEVICES=GPU-FA4EC0DA-2222,0 (the fake plugin's UUIDs): a UUID
 * prefix in any case selects physical 1 first, then an index; the extended
 * properties follow the renumbering. */
START_TEST(cuda_visible_uuid) {
    expect_default(XDEV_DEVICE_CUDA);
    int n = 0;
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    ck_assert_int_eq(n, 2);
    xdev_device_properties_t p;
    XT_OK(xdev_get_device_properties(xdev_cuda(0), &p));
    ck_assert_int_eq(p.physical_index, 1);
    XT_OK(xdev_get_device_properties(xdev_cuda(1), &p));
    ck_assert_int_eq(p.physical_index, 0);
    xdev_device_properties_ext_t e = {.size = sizeof e};
    XT_OK(xdev_get_device_properties_ext(xdev_cuda(0), &e));
    ck_assert_str_eq(e.uuid, "GPU-fa4ec0da-2222-4000-8000-000000000001");
    ck_assert_str_eq(e.pci_bus_id, "0000:3c:00.0");
    XT_OK(xdev_get_device_properties_ext(xdev_cuda(1), &e));
    ck_assert_str_eq(e.uuid, "GPU-fa4ec0da-1111-4000-8000-000000000000");
}
END_TEST

/* A UUID entry that selects no device, several, or one twice: the cuda
 * backend cannot be used and says why (XT_REASON); the CPU is unaffected. */
START_TEST(cuda_visible_uuid_reason) {
    const char *want = getenv("XT_REASON");
    ck_assert_msg(want && *want, "XT_REASON not set");
    expect_default(XDEV_DEVICE_CPU);
    int n = -1;
    XT_OK(xdev_device_count(XDEV_DEVICE_CUDA, &n));
    ck_assert_int_eq(n, 0);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_msg(strstr(info.reason, want) != NULL, "reason '%s' lacks '%s'", info.reason, want);
    ck_assert_msg(strstr(info.reason, getenv("XDEV_VISIBLE_DEVICES")) != NULL ||
                      strstr(info.reason, "GPU-") != NULL,
                  "reason '%s' names no entry", info.reason);
}
END_TEST

START_TEST(list_fallback) {
    expect_default(XDEV_DEVICE_CPU);
}
END_TEST

START_TEST(list_nodevice) {
    expect_default(XDEV_DEVICE_CPU);
}
END_TEST

/* ------------------------------------------------------------ failures */
START_TEST(cuda_missing) {
    XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init(), "cuda", "libxdev-cuda.so", "/nonexistent");
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", xdev_last_error());
    printf("xdev_init: %s\n", msg);
    /* Every place searched is listed: XDEV_PLUGIN_PATH, beside libxdev, install libdir. */
    if (xt_libxdev_dir())
        ck_assert_msg(strstr(msg, xt_libxdev_dir()), "message does not list %s: %s",
                      xt_libxdev_dir(), msg);
    ck_assert_msg(strstr(msg, XT_INSTALL_LIBDIR), "message does not list %s: %s", XT_INSTALL_LIBDIR,
                  msg);
    XT_STATUS(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init());
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_FAILED);
    ck_assert_msg(info.reason && strstr(info.reason, "/nonexistent"), "reason: %s",
                  info.reason ? info.reason : "(null)");
    ck_assert(!xdev_is_available(XDEV_DEVICE_CUDA));
}
END_TEST

START_TEST(hip_missing) {
    expect_init_fails(XDEV_ERROR_BACKEND_UNAVAILABLE, "hip", "libxdev-hip.so");
}
END_TEST

START_TEST(cuda_badabi) {
    char major[16], theirs[16];
    snprintf(major, sizeof major, "%u", XDEV_BACKEND_ABI_MAJOR);
    /* The plugin's major: one past ours, or XT_PLUGIN_MAJOR (a 1.x plugin). */
    const char *want = getenv("XT_PLUGIN_MAJOR");
    snprintf(theirs, sizeof theirs, "%u",
             want ? (unsigned)atoi(want) : XDEV_BACKEND_ABI_MAJOR + 1u);
    expect_init_fails(XDEV_ERROR_BACKEND_UNAVAILABLE, "abi", "major");
    XT_STATUS(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init());
    const char *msg = xdev_last_error();
    ck_assert_msg(strstr(msg, major) && strstr(msg, theirs),
                  "message lacks the majors %s and %s: %s", major, theirs, msg);
    ck_assert_msg(strstr(msg, "libxdev-cuda.so"), "message lacks the plugin: %s", msg);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_FAILED);
    ck_assert_msg(info.reason && xt_icontains(info.reason, "abi"), "reason: %s",
                  info.reason ? info.reason : "(null)");
}
END_TEST

START_TEST(cuda_nosym) {
    expect_init_fails(XDEV_ERROR_BACKEND_UNAVAILABLE, XDEV_BACKEND_ENTRY_SYMBOL, "libxdev-cuda.so");
}
END_TEST

START_TEST(cuda_nodevice) {
    expect_init_fails(XDEV_ERROR_BACKEND_UNAVAILABLE, "cuda",
                      "no device|0 device|no cuda device|zero device|without device|no visible");
    ck_assert(!xdev_is_available(XDEV_DEVICE_CUDA));
}
END_TEST

START_TEST(cuda_oldminor) {
    expect_default(XDEV_DEVICE_CUDA);
    void *p = NULL;
    XT_OK(xdev_malloc(&p, 128));
    size_t f = 0, t = 0;
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_mem_get_info(xdev_cuda(0), &f, &t), "cuda",
           "mem_get_info");
    ck_assert_msg(f != 12345 && t != 12345, "the core called a slot past the table's size");
    XT_OK(xdev_free(p));
}
END_TEST

/* A name no backend registered is a plugin to look for: its absence is the
 * error, with the paths tried. */
START_TEST(bogus_backend) {
    /* a name that is no backend: the message says which ones can be used here */
    XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init(), "bogus", "XDEV_BACKEND",
           "libxdev-bogus.so not found; tried", "usable here: cpu");
    printf("xdev_init: %s: %s\n", xdev_status_string(xdev_last_status()), xdev_last_error());
}
END_TEST

START_TEST(env_malformed) {
    const char *var = getenv("XT_BAD_VAR");
    ck_assert_msg(var && *var, "XT_BAD_VAR not set");
    const char *value = getenv(var);
    ck_assert_msg(value != NULL, "%s not set", var);
    expect_init_fails(XDEV_ERROR_ENV, var, value);
}
END_TEST

/* XDEV_TRACE_FILE naming a directory: one clean message naming the variable
 * and the path once, then the system's reason (the message was once
 * formatted from itself: "XDEV_TRACE_FILE=/tmp: XDEV_TRACE_FILE=/tmp:
 *  writing: Is a directory"). */
START_TEST(env_trace_dir) {
    const char *dir = getenv("XDEV_TRACE_FILE");
    ck_assert_msg(dir && *dir, "XDEV_TRACE_FILE not set");
    XT_ERR(XDEV_ERROR_ENV, xdev_init(), "XDEV_TRACE_FILE");
    char want[4096];
    snprintf(want, sizeof want,
             "xdev_init: xdev could not initialise: XDEV_TRACE_FILE=%s: cannot open it for "
             "writing: %s",
             dir, strerror(EISDIR));
    ck_assert_str_eq(xdev_last_error(), want);
    /* later calls report the same reason */
    XT_ERR(XDEV_ERROR_ENV, xdev_device_count(XDEV_DEVICE_CPU, &(int){0}), want + 11);
}
END_TEST

/* ------------------------------------------------------------ messages (issue 41)
 * What a user meets first, each as its own scenario: the message names the
 * real problem and the way out. */

/* XDEV_BACKEND=cpu,cpu: the duplicate named, and the names accepted include
 * the plugins: those found on the plugin path (libxdev-other.so here) and
 * any other name, looked for as libxdev-<name>.so. */
START_TEST(list_twice) {
    XT_ERR(XDEV_ERROR_ENV, xdev_init(), "XDEV_BACKEND='cpu,cpu'", "'cpu' is listed twice");
    const char *m = xdev_last_error();
    printf("xdev_init: %s\n", m);
    ck_assert_msg(strstr(m, "other") != NULL, "the plugin found (other) is not listed: %s", m);
    ck_assert_msg(strstr(m, "libxdev-<name>.so") != NULL,
                  "the message does not say that a name is a plugin to look for: %s", m);
    ck_assert_msg(strstr(m, "among cuda, hip and cpu") == NULL, "only the shipped names: %s", m);
}
END_TEST

/* XDEV_CPU_THREADS=0 with XDEV_BACKEND unset: the variable is the error, not
 * "no backend can be used". */
START_TEST(cpu_threads_zero) {
    xdev_device_type_t type = XDEV_DEVICE_CPU;
    if (xdev_init() == XDEV_SUCCESS && xdev_default_device_type(&type) == XDEV_SUCCESS &&
        type != XDEV_DEVICE_CPU) { /* a GPU machine: auto never reaches the CPU */
        printf("cpu_threads_zero: auto chose %s; cpu's own failure:\n",
               xdev_device_type_name(type));
        XT_ERR(XDEV_ERROR_ENV, xdev_device_count(XDEV_DEVICE_CPU, &(int){0}),
               "XDEV_CPU_THREADS='0'");
        return;
    }
    xdev_clear_error();
    expect_init_fails(XDEV_ERROR_ENV, "XDEV_CPU_THREADS='0'", "1..1024");
    XT_STATUS(XDEV_ERROR_ENV, xdev_init());
    const char *m = xdev_last_error();
    ck_assert_msg(strstr(m, "no backend can be used") == NULL,
                  "a malformed variable reported as no backend: %s", m);
    ck_assert_msg(strncmp(m, "xdev_init: xdev could not initialise: XDEV_CPU_THREADS='0'",
                          strlen("xdev_init: xdev could not initialise: XDEV_CPU_THREADS='0'")) ==
                      0,
                  "the variable is not the first thing named: %s", m);
}
END_TEST

/* A plugin file whose table names another backend (libxdev-other.so saying
 * it is cuda): both names and what to do, not "type 1 (cuda), not 4 ()". */
START_TEST(plugin_misnamed) {
    XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init(), "libxdev-other.so", "'cuda'", "'other'",
           "libxdev-cuda.so");
    const char *m = xdev_last_error();
    printf("xdev_init: %s\n", m);
    ck_assert_msg(strstr(m, "()") == NULL, "an empty name in the message: %s", m);
}
END_TEST

/* A plugin that sets half of a slot group (graph.capture_begin and
 * capture_end, not launch or destroy) is refused at load, naming the
 * group and each missing slot; it is never initialised. */
START_TEST(plugin_half_group) {
    XT_ERR(XDEV_ERROR_BACKEND_UNAVAILABLE, xdev_init(), "libxdev-cuda.so", "graph.capture",
           "graph.launch", "graph.destroy");
    const char *m = xdev_last_error();
    printf("xdev_init: %s\n", m);
    ck_assert_msg(strstr(m, "graph.capture_begin") == NULL, "a set slot named missing: %s", m);
    xdev_backend_info_t info;
    XT_OK(xdev_backend_get_info(XDEV_DEVICE_CUDA, &info));
    ck_assert_int_eq(info.state, XDEV_BACKEND_FAILED);
    ck_assert_msg(info.reason && strstr(info.reason, "graph.launch"), "reason: %s",
                  info.reason ? info.reason : "(null)");
}
END_TEST

int main(int argc, char **argv) {
    const scenario_t fakes[] = {
        {"cpu_explicit", cpu_explicit, false, false},
        {"auto_cpu", auto_cpu, true, true},
        {"auto_good", auto_good, false, false},
        {"auto_nodevice", auto_nodevice, false, true},
        {"cuda_good", cuda_good, false, false},
        {"list_good", list_good, false, false},
        {"plugin_path_list", plugin_path_list, false, false},
        {"cuda_visible", cuda_visible, false, false},
        {"cuda_visible_uuid", cuda_visible_uuid, false, false},
        {"cuda_visible_uuid_reason", cuda_visible_uuid_reason, false, false},
        {"list_fallback", list_fallback, true, false},
        {"list_nodevice", list_nodevice, false, false},
        {"cuda_missing", cuda_missing, true, false},
        {"hip_missing", hip_missing, false, true},
        {"cuda_badabi", cuda_badabi, false, false},
        {"cuda_nosym", cuda_nosym, false, false},
        {"cuda_nodevice", cuda_nodevice, false, false},
        {"cuda_oldminor", cuda_oldminor, false, false},
        {"bogus", bogus_backend, false, false},
        {"env_malformed", env_malformed, false, false},
        {"env_trace_dir", env_trace_dir, false, false},
        {"list_twice", list_twice, false, false},
        {"cpu_threads_zero", cpu_threads_zero, false, false},
        {"plugin_misnamed", plugin_misnamed, false, false},
        {"plugin_half_group", plugin_half_group, false, false},
    };
    size_t n_real = 0;
    const scenario_t *real = select_real_scenarios(&n_real);
    const struct {
        const scenario_t *at;
        size_t n;
    } tables[] = {{fakes, sizeof fakes / sizeof fakes[0]}, {real, n_real}};
    if (argc >= 2) {
        int skip = select_real_skip(argv[1]);
        if (skip != 0) return skip;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s <scenario>\n", argv[0]);
        return 2;
    }
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (size_t i = 0; i < tables[t].n; i++) {
            const scenario_t *sc = &tables[t].at[i];
            if (strcmp(sc->name, argv[1]) != 0) continue;
            char where[4096];
            if ((sc->needs_no_cuda && xt_plugin_installed("cuda", where, sizeof where)) ||
                (sc->needs_no_hip && xt_plugin_installed("hip", where, sizeof where))) {
                printf("SKIP %s: a real plugin is installed at %s\n", argv[1], where);
                return XT_SKIP_CODE;
            }
            Suite *s = suite_create(sc->name);
            TCase *tc = tcase_create(sc->name);
            tcase_set_timeout(tc, 60);
            tcase_add_test(tc, sc->test);
            suite_add_tcase(s, tc);
            return xt_run(srunner_create(s), sc->name, 2, argv);
        }
    fprintf(stderr, "unknown scenario '%s'\n", argv[1]);
    return 2;
}
