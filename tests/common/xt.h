/* SPDX-License-Identifier: Apache-2.0 */
/* xt.h - shared helpers for the xdev Check suites.
 *
 * Every error-path assertion goes through XT_ERR / XT_ERR_ANY: they check the
 * returned status, xdev_last_status(), that xdev_last_error() is non-empty,
 * names the public call (taken from the call's own text) and mentions each
 * given needle (case-insensitive; "a|b" means a or b). */
#ifndef XT_H
#define XT_H

#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>

#include "xdev/xdev.h"

#define XT_BIT(status) (1u << (unsigned)(status))

/* Status for a NULL stream/event handle. error.h: INVALID_VALUE is "NULL, out
 * of range or malformed argument"; INVALID_HANDLE is "handle unknown or
 * destroyed". One place to change should the contract change. */
#ifndef XT_NULL_HANDLE
#define XT_NULL_HANDLE XDEV_ERROR_INVALID_VALUE
#endif
/* Status for a device type that does not exist (error.h: INVALID_DEVICE is
 * "device index or type that does not exist"). */
#ifndef XT_BAD_TYPE
#define XT_BAD_TYPE XDEV_ERROR_INVALID_DEVICE
#endif
#define XT_SKIP_CODE 77

/* This test program was built with AddressSanitizer or ThreadSanitizer. */
bool xt_sanitized_build(void);
/* Loop-count multiplier: XDEV_TEST_SCALE, else 0.1 under TSan, 0.5 under ASan, else 1. */
double xt_scale(void);
/* Element i of a host array of dtype dt (f16, bf16, f32, f64, i32, i64) as
 * a double: for checking device results on the host. */
double xt_load(xdev_dtype_t dt, const void *h, size_t i);
/* Element i of such an array = v (rounded to the dtype: f16/bf16 to
 * nearest even through float, integers truncated). */
void xt_store(xdev_dtype_t dt, void *h, size_t i, double v);
/* base * xt_scale(), at least `min`. */
int xt_iters(int base, int min);

double xt_now_ms(void);
void xt_sleep_ms(int ms);

/* Case-insensitive substring test; `needle` may hold alternatives "a|b|c". */
bool xt_icontains(const char *hay, const char *needle);

void xt_expect_error(xdev_status_t got, unsigned status_mask, const char *call, const char *file,
                     int line, ...);

#define XT_ERR(expected, call, ...)                                                                \
    xt_expect_error((call), XT_BIT(expected), #call, __FILE__, __LINE__, __VA_ARGS__,              \
                    (const char *)NULL)
#define XT_ERR_ANY(mask, call, ...)                                                                \
    xt_expect_error((call), (mask), #call, __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)

#define XT_OK(call)                                                                                \
    do {                                                                                           \
        xdev_status_t xt_ok_status_ = (call);                                                      \
        ck_assert_msg(xt_ok_status_ == XDEV_SUCCESS, "%s:%d: %s returned %s: \"%s\"", __FILE__,    \
                      __LINE__, #call, xdev_status_string(xt_ok_status_), xdev_last_error());      \
    } while (0)

#define XT_STATUS(expected, call)                                                                  \
    do {                                                                                           \
        xdev_status_t xt_st_ = (call);                                                             \
        ck_assert_msg(xt_st_ == (expected), "%s:%d: %s returned %s, expected %s: \"%s\"",          \
                      __FILE__, __LINE__, #call, xdev_status_string(xt_st_),                       \
                      xdev_status_string(expected), xdev_last_error());                            \
    } while (0)

#define XT_DEV_EQ(a, b)                                                                            \
    do {                                                                                           \
        xdev_device_t xt_a_ = (a), xt_b_ = (b);                                                    \
        ck_assert_msg(xdev_device_equal(xt_a_, xt_b_), "%s:%d: device {%d,%d} != {%d,%d}",         \
                      __FILE__, __LINE__, (int)xt_a_.type, xt_a_.index, (int)xt_b_.type,           \
                      xt_b_.index);                                                                \
    } while (0)

/* A gate a host function can block on until the test opens it. A gate nobody
 * opens within XT_GATE_LIMIT_MS opens itself, saying so on stderr: a backend
 * that runs host functions at enqueue (blocking the launching thread) then
 * fails the test's assertions instead of hanging it until the Check timeout. */
#define XT_GATE_LIMIT_MS 15000
typedef struct xt_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    atomic_int entered;
} xt_gate_t;

void xt_gate_init(xt_gate_t *gate);
void xt_gate_open(xt_gate_t *gate);
void xt_gate_destroy(xt_gate_t *gate);
/* Host function: blocks until the gate opens (user_data = xt_gate_t *). */
void xt_gate_wait_fn(void *gate);
/* Wait (on the host) until a host function entered the gate; false on timeout. */
bool xt_gate_wait_entered(xt_gate_t *gate, int timeout_ms);

/* Opens `gate` from a helper thread after `ms` milliseconds (a safety net so a
 * library that blocks the host where it must not fails instead of hanging). */
typedef struct xt_opener {
    pthread_t thread;
    xt_gate_t *gate;
    int ms;
} xt_opener_t;
void xt_opener_start(xt_opener_t *opener, xt_gate_t *gate, int ms);
void xt_opener_join(xt_opener_t *opener);

/* Host function: sets *(atomic_int *)user_data to 1. */
void xt_flag_fn(void *flag);
/* Host function: increments *(atomic_int *)user_data. */
void xt_count_fn(void *counter);

/* Host function: sleeps `ms` then sets `*flag` (if any) to 1. */
typedef struct xt_sleep_task {
    int ms;
    atomic_int *flag;
} xt_sleep_task_t;
void xt_sleep_fn(void *task);

/* Put the calling thread back into a known state: every device of the default
 * type has its default stream current, the current device is index 0, no error. */
void xt_reset_state(void);

/* ------------------------------------------------------------ the backend under test
 * The conformance suites run against whichever backend XDEV_BACKEND selects
 * (tests/conformance registers every entry once per backend built), so tests
 * name devices through xt_dev(), never xdev_cpu(). What a backend cannot run
 * is skipped with its reason printed: listed in the backend's own
 * conformance.skip (xt_unsupported), or found out at run time (XT_SKIP,
 * XT_REQUIRE_DEVICES, XT_REQUIRE_CPU). */

/* The device type under test: the type XDEV_BACKEND names when it names exactly
 * one ("cpu", "cuda", "hip"; xdev is then not initialised by asking), else
 * xdev_default_device_type() after initialisation. */
xdev_device_type_t xt_type(void);
/* "cpu", "cuda" or "hip". */
const char *xt_type_name(void);
/* {xt_type(), index}: any index, negative and out of range included. */
xdev_device_t xt_dev(int index);
/* Devices of xt_type() (initialises xdev). Fails the test where xdev's default
 * device type is not xt_type(): XDEV_BACKEND was not honoured. */
int xt_device_count(void);
/* On the CPU backend: the device count XDEV_CPU_DEVICES asks for (ctest sets
 * it); -1 on other backends or when it is unset. */
int xt_cpu_devices_env(void);
/* `index` when that device exists, else index % xt_device_count(): for tests
 * whose choice of device is incidental (on one device they all use index 0).
 * Tests that need distinct devices say so with XT_REQUIRE_DEVICES instead. */
int xt_wrap(int index);
/* "cuda:3" for xt_dev(3); from a ring of 8 thread-local buffers. */
const char *xt_name(int index);
/* snprintf into the same ring (error-message needles such as the index "4"). */
const char *xt_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Is memory of xt_type() devices host-addressable (plain loads and stores)?
 * True on the CPU backend only. */
bool xt_host_addressable(void);
/* Reads n bytes of device memory without waiting for the work queued on the
 * owning device's streams: a plain load where host-addressable, else a copy on
 * a private stream of the owning device. */
void xt_peek(void *dst, const void *src, size_t n);

/* Skips. Check has no skip status: a skipped test prints "SKIP <test>: <reason>"
 * to stderr and returns (Check counts it passed); xt_run lists every skip at
 * the end, and exits XT_SKIP_CODE when every test it ran skipped. */
void xt_skip(const char *test, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define XT_SKIP(...)                                                                               \
    do {                                                                                           \
        xt_skip(__func__, __VA_ARGS__);                                                            \
        return;                                                                                    \
    } while (0)
/* True when xt_type() has at least n devices; else records the skip of `part`
 * of the test (the whole test when part is NULL) and returns false. */
bool xt_has_devices(const char *test, int n, const char *part);
#define XT_REQUIRE_DEVICES(n)                                                                      \
    do {                                                                                           \
        if (!xt_has_devices(__func__, (n), NULL)) return;                                          \
    } while (0)
/* For tests of the CPU backend itself (XDEV_CPU_MEMORY capacity, XDEV_CPU_*
 * parsing, its exact messages): skipped on any other backend. */
bool xt_is_cpu(const char *test);
#define XT_REQUIRE_CPU()                                                                           \
    do {                                                                                           \
        if (!xt_is_cpu(__func__)) return;                                                          \
    } while (0)

/* Is `<suite>.<test>` (part NULL) or `<suite>.<test>/<part>` listed as
 * unsupported by the backend under test? The list is the file XT_SKIP_LIST
 * names (ctest sets backends/<backend>/conformance.skip for conformance
 * entries): one entry per line, "<suite>.<test>[/<part>]  <reason>" or
 * "<suite>.*  <reason>" for every test of a suite, '#' comments. A listed test or part is skipped
 * with its reason (and the list's file and line) printed; the function then returns true. Every
 * test asks at its start (START_TEST below); a test asks about a part of itself before running that
 * part. tests/conformance/check_skip_lists.cmake fails on an entry that names no existing test or
 * part. */
bool xt_unsupported(const char *test, const char *part);

/* Check's START_TEST with the question above put first: a backend lists any
 * test it cannot run without the test knowing about that backend. Needs
 * Check >= 0.13 (TTest). */
#undef START_TEST
#define START_TEST(name)                                                                           \
    static void name##_body(int _i);                                                               \
    static void name##_fn(int _i) {                                                                \
        if (!xt_unsupported(#name, NULL)) name##_body(_i);                                         \
    }                                                                                              \
    static const TTest name##_ttest = {"" #name, name##_fn, __FILE__, __LINE__};                   \
    static const TTest *name = &name##_ttest;                                                      \
    static void name##_body(int _i CK_ATTRIBUTE_UNUSED)

/* Directory of libxdev (XT_LIBXDEV_DIR, set by ctest) or NULL. */
const char *xt_libxdev_dir(void);
/* True when a real plugin libxdev-<name>.so sits beside libxdev or in the
 * install libdir (then tests that assume "no such plugin" skip). */
bool xt_plugin_installed(const char *name, char *where, size_t len);

/* Memory statistics of xt_dev(dev); a failure fails the test. */
xdev_memory_stats_t xt_mem_stats(int dev);
/* xt_dev(dev)'s free memory (xdev_mem_get_info), and its allocator's
 * reserved bytes now (all pools); a failure fails the test. */
size_t xt_mem_free(int dev);
int64_t xt_reserved(int dev);

/* A new normal-priority stream on xt_dev(dev); a failure fails the test. */
xdev_stream_t xt_new_stream(int dev);

/* Allocates and frees 16 blocks of 256 B .. 2 KiB on stream s (NULL: the
 * current stream) that no call checks: frees the threads' lookup caches must
 * survive (alloc_lookup.h). A failure fails the test. */
void xt_churn_unchecked(xdev_stream_t s);

/* Run suite argv[1] (default: default_suite), optionally only tcase argv[2].
 * Prints the skipped tests with their reasons. Returns the process exit status:
 * 0, 1 (a test failed or the skip list is malformed), 2 (nothing matched) or
 * XT_SKIP_CODE (all skipped). For a conformance entry (XT_CONFORMANCE=<backend>)
 * it first checks, in a child process, that the backend loads and has a
 * device; if not, it prints xdev's reason and returns XT_SKIP_CODE, or 1 where
 * the backend is required (XT_BACKEND_REQUIRED=1, or named in the comma list
 * XT_REQUIRE_BACKENDS). */
int xt_run(SRunner *runner, const char *default_suite, int argc, char **argv);

#endif
