/* SPDX-License-Identifier: Apache-2.0 */
/* test_bad_input.c - the device, stream, event, memory and allocator
 * families (test_bad_input_math.c has blas, fft, rng, trace, ipc, system) with
 * inputs a careful C library must refuse with a clear status: NULL
 * out-pointers and required arguments, foreign pointers, double and interior
 * frees, devices that do not exist, destroyed handles, operands on two
 * devices, sizes whose products overflow.
 *
 * Each case is its own Check test, run in its own forked child (CK_FORK, the
 * default; xdev is never initialised in the runner process), so a crash
 * fails one case, not the run. Tables drive the cases that repeat one
 * expectation over many calls (bad devices x device-taking calls).
 * ctest: XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_PLUGIN_PATH=/nonexistent. */
#include "bad_input.h"

/* ------------------------------------------------------------ devices that do not exist */

typedef struct bad_device {
    const char *what;
    xdev_device_t device;
    unsigned mask; /* statuses a careful library may return */
} bad_device_t;

#define BAD_DEV XT_BIT(XDEV_ERROR_INVALID_DEVICE)
static const bad_device_t bad_devices[] = {
    {"cpu:99 (2 cpu devices)", {XDEV_DEVICE_CPU, 99}, BAD_DEV},
    {"cuda:0 with no cuda backend",
     {XDEV_DEVICE_CUDA, 0},
     BAD_DEV | XT_BIT(XDEV_ERROR_BACKEND_UNAVAILABLE)},
    {"cpu index -2", {XDEV_DEVICE_CPU, -2}, BAD_DEV | XT_BIT(XDEV_ERROR_INVALID_VALUE)},
    {"type 77", {(xdev_device_type_t)77, 0}, BAD_DEV},
    {"type -1", {(xdev_device_type_t)-1, 0}, BAD_DEV},
};
#define N_BAD_DEVICES ((int)(sizeof bad_devices / sizeof bad_devices[0]))

/* Wrappers giving every device-taking call one signature. */
static xdev_status_t c_malloc_device(xdev_device_t d) {
    void *p = (void *)&p;
    xdev_status_t st = xdev_malloc_device(d, &p, 64);
    ck_assert_msg(st == XDEV_SUCCESS || p == NULL, "failed xdev_malloc_device left *ptr = %p", p);
    return st;
}
static xdev_status_t c_malloc_managed(xdev_device_t d) {
    void *p = (void *)&p;
    xdev_status_t st = xdev_malloc_managed(d, &p, 64, 0);
    ck_assert_msg(st == XDEV_SUCCESS || p == NULL, "failed xdev_malloc_managed left *ptr = %p", p);
    return st;
}
static xdev_status_t c_stream_create(xdev_device_t d) {
    xdev_stream_t s;
    return xdev_stream_create(d, XDEV_STREAM_PRIORITY_NORMAL, &s);
}
static xdev_status_t c_stream_default(xdev_device_t d) {
    xdev_stream_t s;
    return xdev_stream_default(d, &s);
}
static xdev_status_t c_stream_current(xdev_device_t d) {
    xdev_stream_t s;
    return xdev_stream_current(d, &s);
}
static xdev_status_t c_device_resolve(xdev_device_t d) {
    xdev_device_t r;
    return xdev_device_resolve(d, &r);
}
static xdev_status_t c_properties(xdev_device_t d) {
    xdev_device_properties_t p;
    return xdev_get_device_properties(d, &p);
}
static xdev_status_t c_mem_get_info(xdev_device_t d) {
    size_t f, t;
    return xdev_mem_get_info(d, &f, &t);
}
static xdev_status_t c_memory_stats(xdev_device_t d) {
    xdev_memory_stats_t s;
    return xdev_memory_stats(d, &s);
}
static xdev_status_t c_memory_allocated(xdev_device_t d) {
    size_t n;
    return xdev_memory_allocated(d, &n);
}
static xdev_status_t c_memory_summary(xdev_device_t d) {
    char *s = NULL;
    xdev_status_t st = xdev_memory_summary(d, true, &s);
    free(s);
    return st;
}
static xdev_status_t c_record_history(xdev_device_t d) {
    return xdev_memory_record_history(d, true, 16);
}
static xdev_status_t c_fraction(xdev_device_t d) {
    return xdev_set_per_process_memory_fraction(0.5, d);
}
static xdev_status_t c_generator_create(xdev_device_t d) {
    xdev_generator_t g = NULL;
    xdev_status_t st = xdev_generator_create(d, 1, &g);
    if (st == XDEV_SUCCESS) xdev_generator_destroy(g);
    return st;
}
static xdev_status_t c_initial_seed(xdev_device_t d) {
    uint64_t s;
    return xdev_initial_seed(d, &s);
}
static xdev_status_t c_get_rng_state(xdev_device_t d) {
    unsigned char st[XDEV_RNG_STATE_SIZE];
    return xdev_get_rng_state(d, st, sizeof st);
}
static xdev_status_t c_fft_cache_size(xdev_device_t d) {
    int64_t n;
    return xdev_fft_plan_cache_size(d, &n);
}
static xdev_status_t c_fft_cache_set(xdev_device_t d) {
    return xdev_fft_plan_cache_set_max_size(d, 8);
}
static xdev_status_t c_fft_cache_max_size(xdev_device_t d) {
    int64_t n;
    return xdev_fft_plan_cache_max_size(d, &n);
}
static xdev_status_t c_fft_cache_stats(xdev_device_t d) {
    xdev_fft_plan_cache_stats_t s;
    return xdev_fft_plan_cache_stats(d, &s);
}
static xdev_status_t c_blas_supports(xdev_device_t d) {
    bool b;
    return xdev_blas_supports(d, XDEV_BLAS_GEMM, F32, &b);
}
static xdev_status_t c_can_access_peer(xdev_device_t d) {
    bool b;
    return xdev_device_can_access_peer(d, xdev_cpu(0), &b);
}
static xdev_status_t c_enable_peer(xdev_device_t d) {
    return xdev_device_enable_peer_access(xdev_cpu(0), d);
}
static xdev_status_t c_utilization(xdev_device_t d) {
    xdev_device_utilization_t u;
    return xdev_device_utilization(d, &u);
}

static xdev_status_t c_memory_sleep(xdev_device_t d) {
    return xdev_memory_sleep(d, NULL, XDEV_MEMORY_SLEEP_KEEP);
}
static xdev_status_t c_memory_wake(xdev_device_t d) {
    return xdev_memory_wake(d, NULL);
}

typedef struct device_call {
    const char *name;
    xdev_status_t (*fn)(xdev_device_t);
} device_call_t;

static const device_call_t device_calls[] = {
    {"xdev_malloc_device", c_malloc_device},
    {"xdev_malloc_managed", c_malloc_managed},
    {"xdev_stream_create", c_stream_create},
    {"xdev_stream_default", c_stream_default},
    {"xdev_stream_current", c_stream_current},
    {"xdev_device_resolve", c_device_resolve},
    {"xdev_get_device_properties", c_properties},
    {"xdev_device_synchronize", xdev_device_synchronize},
    {"xdev_mem_get_info", c_mem_get_info},
    {"xdev_memory_stats", c_memory_stats},
    {"xdev_memory_allocated", c_memory_allocated},
    {"xdev_reset_peak_memory_stats", xdev_reset_peak_memory_stats},
    {"xdev_memory_summary", c_memory_summary},
    {"xdev_memory_record_history", c_record_history},
    {"xdev_memory_sleep", c_memory_sleep},
    {"xdev_memory_wake", c_memory_wake},
    {"xdev_set_per_process_memory_fraction", c_fraction},
    {"xdev_generator_create", c_generator_create},
    {"xdev_initial_seed", c_initial_seed},
    {"xdev_get_rng_state", c_get_rng_state},
    {"xdev_fft_plan_cache_size", c_fft_cache_size},
    {"xdev_fft_plan_cache_set_max_size", c_fft_cache_set},
    {"xdev_fft_plan_cache_clear", xdev_fft_plan_cache_clear},
    {"xdev_fft_plan_cache_max_size", c_fft_cache_max_size},
    {"xdev_fft_plan_cache_stats", c_fft_cache_stats},
    {"xdev_fft_plan_cache_reset_stats", xdev_fft_plan_cache_reset_stats},
    {"xdev_blas_supports", c_blas_supports},
    {"xdev_device_can_access_peer", c_can_access_peer},
    {"xdev_device_enable_peer_access", c_enable_peer},
    {"xdev_device_utilization", c_utilization},
};
#define N_DEVICE_CALLS ((int)(sizeof device_calls / sizeof device_calls[0]))

/* One loop iteration per (call, bad device). */
START_TEST(bad_device) {
    const device_call_t *c = &device_calls[_i / N_BAD_DEVICES];
    const bad_device_t *b = &bad_devices[_i % N_BAD_DEVICES];
    if (b->device.type == XDEV_DEVICE_CUDA && xdev_is_available(XDEV_DEVICE_CUDA))
        XT_SKIP("%s: a cuda device is present", c->name);
    xdev_clear_error();
    xdev_status_t st = c->fn(b->device);
    ck_assert_msg(st != XDEV_SUCCESS, "%s on %s succeeded", c->name, b->what);
    EXPECT_NAMED(st, b->mask, c->name, "");
}
END_TEST

START_TEST(set_device_bad) { /* negative index: torch's no-op; others are errors */
    XT_OK(xdev_set_device(xdev_cpu(1)));
    XT_OK(xdev_set_device(xdev_cpu(-2)));
    xdev_device_t d;
    XT_OK(xdev_get_device(&d));
    XT_DEV_EQ(d, xdev_cpu(1));
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device(xdev_cpu(99)), "99");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_device((xdev_device_t){77, 0}), "77");
    XT_OK(xdev_get_device(&d));
    XT_DEV_EQ(d, xdev_cpu(1));
    xdev_device_guard_t g;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_guard_begin(&g, xdev_cpu(99)), "99");
    XT_OK(xdev_get_device(&d));
    XT_DEV_EQ(d, xdev_cpu(1));
}
END_TEST

START_TEST(device_null_args) {
    xdev_device_t d = xdev_cpu(0);
    XT_ERR(VAL, xdev_device_parse(NULL, &d), "NULL");
    XT_ERR(VAL, xdev_device_parse("cpu:0", NULL), "NULL");
    XT_ERR(VAL, xdev_device_format(d, NULL, 16), "NULL");
    XT_ERR(VAL, xdev_default_device_type(NULL), "NULL");
    XT_ERR(VAL, xdev_device_count(XDEV_DEVICE_CPU, NULL), "NULL");
    XT_ERR(VAL, xdev_get_device(NULL), "NULL");
    XT_ERR(VAL, xdev_get_device_index(XDEV_DEVICE_CPU, NULL), "NULL");
    XT_ERR(VAL, xdev_device_resolve(d, NULL), "NULL");
    XT_ERR(VAL, xdev_get_device_properties(d, NULL), "NULL");
    XT_ERR(VAL, xdev_device_guard_begin(NULL, d), "NULL");
    XT_ERR(VAL, xdev_device_guard_end(NULL), "NULL");
    XT_ERR(VAL, xdev_device_can_access_peer(d, d, NULL), "NULL");
    XT_ERR(VAL, xdev_backend_get_info(XDEV_DEVICE_CPU, NULL), "NULL");
    xdev_backend_info_t info;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_backend_get_info((xdev_device_type_t)77, &info), "77");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_count((xdev_device_type_t)77, &(int){0}), "77");
    char small[4];
    XT_ERR(VAL, xdev_device_format(xdev_cpu(12), small, sizeof small), "small");
}
END_TEST

/* ------------------------------------------------------------ streams and events */

START_TEST(stream_null_args) {
    xdev_stream_t s = NULL;
    XT_ERR(VAL, xdev_stream_create(xdev_cpu(0), XDEV_STREAM_PRIORITY_NORMAL, NULL), "NULL");
    XT_ERR(VAL, xdev_stream_create(xdev_cpu(0), 5, &s), "priority");
    XT_ERR(VAL, xdev_stream_wrap_native(xdev_cpu(0), NULL, &s), "NULL");
    XT_ERR(XT_NULL_HANDLE, xdev_stream_destroy(NULL), "stream");
    XT_ERR(XT_NULL_HANDLE, xdev_stream_set_current(NULL), "stream");
    XT_ERR(XT_NULL_HANDLE, xdev_stream_wait_stream(NULL, NULL), "stream");
    XT_OK(xdev_stream_default(xdev_cpu(0), &s));
    XT_ERR(VAL, xdev_stream_native_handle(s, NULL), "NULL");
    XT_ERR(VAL, xdev_stream_get_device(s, NULL), "NULL");
    XT_ERR(VAL, xdev_stream_get_priority(s, NULL), "NULL");
    XT_ERR(VAL, xdev_launch_host_func(s, NULL, NULL), "fn");
    XT_ERR(VAL, xdev_stream_guard_end(NULL), "guard");
    XT_ERR(VAL, xdev_stream_destroy(s), "default");
    XT_OK(xdev_stream_synchronize(s)); /* still usable */
}
END_TEST

START_TEST(stream_destroyed_queries) {
    xdev_stream_t s = destroyed_stream();
    xdev_device_t d;
    int prio;
    void *native;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_destroy(s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_query(s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_synchronize(s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_get_device(s, &d), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_get_priority(s, &prio), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_native_handle(s, &native), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_set_current(s), "");
    xdev_stream_guard_t g;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_guard_begin(&g, s), "");
}
END_TEST

START_TEST(stream_destroyed_enqueue) {
    xdev_stream_t s = destroyed_stream(), live = NULL;
    XT_OK(xdev_stream_default(xdev_cpu(0), &live));
    xdev_event_t e = NULL;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e));
    void *p = dev_alloc(0, 64);
    atomic_int flag = 0;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_launch_host_func(s, xt_flag_fn, &flag), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_memset_async(p, 0, 64, s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_memcpy_async(p, &flag, sizeof flag, s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_record(e, s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_record_event(s, e), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_wait_event(s, e), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_wait_stream(s, live), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_wait_stream(live, s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_record_stream(p, s), "");
    void *q = (void *)&q;
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_malloc_stream(&q, 64, s), "");
    ck_assert_ptr_null(q);
    XT_OK(xdev_synchronize());
    ck_assert_int_eq(atomic_load(&flag), 0);
    XT_OK(xdev_free(p));
    XT_OK(xdev_event_destroy(e));
}
END_TEST

START_TEST(stream_destroyed_math) {
    xdev_stream_t s = destroyed_stream();
    void *a = dev_alloc(0, 256), *b = dev_alloc(0, 256), *c = dev_alloc(0, 256);
    XT_ERR(XDEV_ERROR_INVALID_HANDLE,
           xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2, s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_axpy(F32, 4, 1.0, a, 1, b, 1, s), "");
    int64_t n = 8;
    xdev_fft_desc_t d = xdev_fft_desc_basic(XDEV_FFT_C2C, XDEV_FFT_F32, 1, &n, 1);
    XT_ERR(XDEV_ERROR_INVALID_HANDLE,
           xdev_fft_exec(&d, a, b, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_rng_uniform(NULL, F32, c, 8, s), "");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(b));
    XT_OK(xdev_free(c));
}
END_TEST

START_TEST(event_bad_args) {
    xdev_event_t e = NULL;
    XT_ERR(VAL, xdev_event_create(XDEV_EVENT_DEFAULT, NULL), "NULL");
    XT_ERR(VAL, xdev_event_create(1u << 20, &e), "flags");
    XT_ERR(VAL, xdev_event_create(XDEV_EVENT_TIMING | XDEV_EVENT_INTERPROCESS, &e), "");
    XT_ERR(XT_NULL_HANDLE, xdev_event_destroy(NULL), "event");
    XT_ERR(XT_NULL_HANDLE, xdev_event_record(NULL, NULL), "event");
    XT_ERR(XT_NULL_HANDLE, xdev_event_query(NULL), "event");
    XT_ERR(XT_NULL_HANDLE, xdev_event_synchronize(NULL), "event");
    XT_OK(xdev_event_create(XDEV_EVENT_TIMING, &e));
    float ms = 0;
    XT_ERR(VAL, xdev_event_elapsed_time(e, e, NULL), "NULL");
    XT_ERR_ANY(XT_BIT(VAL) | XT_BIT(XDEV_ERROR_NOT_READY), xdev_event_elapsed_time(e, e, &ms),
               "record");
    unsigned flags;
    xdev_device_t d;
    void *native;
    XT_ERR(VAL, xdev_event_get_flags(e, NULL), "NULL");
    XT_ERR(VAL, xdev_event_get_device(e, NULL), "NULL");
    XT_ERR(VAL, xdev_event_native_handle(e, NULL), "NULL");
    XT_ERR_ANY(XT_BIT(VAL), xdev_event_get_device(e, &d), "record");
    XT_OK(xdev_event_get_flags(e, &flags));
    (void)native;
    XT_OK(xdev_event_destroy(e));
}
END_TEST

START_TEST(event_destroyed) {
    xdev_event_t e = destroyed_event(), live = NULL;
    XT_OK(xdev_event_create(XDEV_EVENT_TIMING, &live));
    XT_OK(xdev_event_record(live, NULL));
    XT_OK(xdev_event_synchronize(live));
    float ms;
    unsigned flags;
    xdev_stream_t s;
    XT_OK(xdev_stream_default(xdev_cpu(0), &s));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_destroy(e), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_record(e, NULL), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_query(e), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_synchronize(e), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_elapsed_time(e, live, &ms), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_elapsed_time(live, e, &ms), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_event_get_flags(e, &flags), "");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_stream_wait_event(s, e), "");
    XT_OK(xdev_event_destroy(live));
}
END_TEST

/* ------------------------------------------------------------ memory */

START_TEST(memory_null_args) {
    void *p = dev_alloc(0, 64);
    unsigned char host[64];
    xdev_pointer_info_t info;
    xdev_device_t d;
    size_t f, t;
    XT_ERR(VAL, xdev_malloc(NULL, 64), "NULL");
    XT_ERR(VAL, xdev_malloc_device(xdev_cpu(0), NULL, 64), "NULL");
    XT_ERR(VAL, xdev_malloc_stream(NULL, 64, NULL), "NULL");
    XT_ERR(VAL, xdev_host_alloc(NULL, 64), "NULL");
    XT_ERR(VAL, xdev_pointer_get_info(p, NULL), "NULL");
    XT_ERR(VAL, xdev_device_of(p, NULL), "NULL");
    XT_ERR(VAL, xdev_device_of(NULL, &d), "");
    XT_ERR(VAL, xdev_mem_get_info(xdev_cpu(0), NULL, &t), "NULL");
    XT_ERR(VAL, xdev_mem_get_info(xdev_cpu(0), &f, NULL), "NULL");
    XT_ERR(VAL, xdev_memcpy(NULL, host, 8), "NULL");
    XT_ERR(VAL, xdev_memcpy(p, NULL, 8), "NULL");
    XT_ERR(VAL, xdev_memcpy_async(NULL, p, 8, NULL), "NULL");
    XT_ERR(VAL, xdev_memset_async(NULL, 0, 8, NULL), "NULL");
    XT_ERR(VAL, xdev_record_stream(NULL, NULL), "NULL");
    XT_OK(xdev_pointer_get_info(NULL, &info)); /* NULL is no one's memory: host */
    ck_assert_int_eq(info.kind, XDEV_MEMORY_HOST);
    XT_OK(xdev_free(NULL));      /* documented no-op */
    XT_OK(xdev_host_free(NULL)); /* as free(NULL) */
    XT_OK(xdev_free(p));
}
END_TEST

START_TEST(memory_foreign_pointers) {
    unsigned char stack[256];
    unsigned char *heap = malloc(256);
    ck_assert_ptr_nonnull(heap);
    memset(stack, 0x11, sizeof stack);
    memset(heap, 0x22, 256);
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_create(xdev_cpu(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    xdev_device_t d;
    void *ptrs[2] = {stack, heap};
    for (int i = 0; i < 2; i++) {
        XT_ERR(VAL, xdev_free(ptrs[i]), "");
        XT_ERR(VAL, xdev_record_stream(ptrs[i], s), "");
        XT_ERR(VAL, xdev_device_of(ptrs[i], &d), "");
        XT_ERR(VAL, xdev_memset_async(ptrs[i], 0, 64, NULL), "");
        XT_ERR(VAL, xdev_memset_async(ptrs[i], 0, 64, s), "");
        XT_ERR(VAL, xdev_host_free(ptrs[i]), "");
    }
    XT_OK(xdev_synchronize());
    for (size_t i = 0; i < sizeof stack; i++)
        ck_assert_uint_eq(stack[i], 0x11);
    for (size_t i = 0; i < 256; i++)
        ck_assert_uint_eq(heap[i], 0x22);
    XT_OK(xdev_stream_destroy(s));
    free(heap);
}
END_TEST

START_TEST(memory_foreign_gemm_operands) {
    float stack[16] = {0};
    float *heap = calloc(16, sizeof(float));
    void *dev = dev_alloc(0, 64);
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, stack, 2, dev, 2, 0.0, dev, 2, NULL), "");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, dev, 2, heap, 2, 0.0, dev, 2, NULL), "");
    XT_ERR(VAL, xdev_gemm(F32, OPN, OPN, 2, 2, 2, 1.0, dev, 2, dev, 2, 0.0, heap, 2, NULL), "");
    XT_ERR(VAL, xdev_axpy(F32, 4, 1.0, stack, 1, dev, 1, NULL), "");
    XT_ERR(VAL, xdev_rng_uniform(NULL, F32, heap, 4, NULL), "");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(dev));
    free(heap);
}
END_TEST

START_TEST(memory_double_free) {
    void *p = dev_alloc(0, 64);
    XT_OK(xdev_free(p));
    XT_ERR(VAL, xdev_free(p), "double free|freed|not allocated");
    void *h = NULL;
    XT_OK(xdev_host_alloc(&h, 64));
    XT_OK(xdev_host_free(h));
    XT_ERR(VAL, xdev_host_free(h), "double free|freed|not allocated");
    xdev_memory_stats_t st;
    XT_OK(xdev_memory_stats(xdev_cpu(0), &st));
    ck_assert_int_eq(st.allocation[XDEV_STAT_ALL].current, 0);
}
END_TEST

START_TEST(memory_interior_free) {
    unsigned char *p = dev_alloc(0, 4096);
    XT_ERR(VAL, xdev_free(p + 1), "interior|inside|start");
    XT_ERR(VAL, xdev_free(p + 2048), "interior|inside|start");
    unsigned char *h = NULL;
    XT_OK(xdev_host_alloc((void **)&h, 4096));
    XT_ERR(VAL, xdev_host_free(h + 16), "interior|inside|start");
    XT_OK(xdev_free(p)); /* the failed frees changed nothing */
    XT_OK(xdev_host_free(h));
}
END_TEST

START_TEST(memory_wrong_free_kind) {
    void *p = dev_alloc(0, 64), *h = NULL;
    XT_OK(xdev_host_alloc(&h, 64));
    XT_ERR(VAL, xdev_host_free(p), "");
    XT_ERR(VAL, xdev_free(h), "");
    XT_OK(xdev_free(p));
    XT_OK(xdev_host_free(h));
}
END_TEST

START_TEST(memory_copy_lengths_overflow) { /* ptr + n wraps around */
    unsigned char *p = dev_alloc(0, 64);
    unsigned char host[64] = {0};
    XT_ERR(VAL, xdev_memcpy(p + 8, host, SIZE_MAX - 4), "");
    XT_ERR(VAL, xdev_memcpy(host, p + 8, SIZE_MAX), "");
    XT_ERR(VAL, xdev_memset_async(p + 8, 0, SIZE_MAX - 7, NULL), "");
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(p));
}
END_TEST

/* ------------------------------------------------------------ allocator */

static void *noop_ctx_malloc_called;
static xdev_status_t bad_alloc_malloc(void *ctx, xdev_device_t d, size_t n, xdev_stream_t s,
                                      void **out) {
    (void)ctx, (void)d, (void)n, (void)s;
    noop_ctx_malloc_called = out;
    return XDEV_ERROR_OUT_OF_MEMORY;
}

START_TEST(allocator_bad_args) {
    xdev_device_t d = xdev_cpu(1);
    size_t n;
    XT_ERR(VAL, xdev_set_per_process_memory_fraction(-0.5, d), "fraction");
    XT_ERR(VAL, xdev_set_per_process_memory_fraction(1.5, d), "fraction");
    XT_ERR(VAL, xdev_set_per_process_memory_fraction(NAN, d), "fraction");
    XT_ERR(VAL, xdev_memory_stats(d, NULL), "NULL");
    XT_ERR(VAL, xdev_memory_allocated(d, NULL), "NULL");
    XT_ERR(VAL, xdev_max_memory_allocated(d, NULL), "NULL");
    XT_ERR(VAL, xdev_memory_reserved(d, NULL), "NULL");
    XT_ERR(VAL, xdev_max_memory_reserved(d, NULL), "NULL");
    XT_ERR(VAL, xdev_memory_summary(d, false, NULL), "NULL");
    XT_ERR(VAL, xdev_memory_snapshot(NULL), "NULL");
    XT_ERR(VAL, xdev_host_memory_stats(NULL), "NULL");
    xdev_memory_stats_t st;
    XT_OK(xdev_memory_stats(d, &st));
    XT_ERR(VAL, xdev_memory_stats_items(NULL, NULL, 0, &n), "NULL");
    XT_ERR(VAL, xdev_memory_stats_items(&st, NULL, 0, NULL), "NULL");
    XT_ERR(VAL, xdev_memory_stats_items(&st, NULL, 4, &n), "NULL");
    xdev_allocator_t a = {0};
    a.size = sizeof a;
    XT_ERR(VAL, xdev_set_allocator(d, &a), ""); /* no malloc / free */
    a.malloc = bad_alloc_malloc;
    a.size = 0;
    XT_ERR(VAL, xdev_set_allocator(d, &a), "size");
    ck_assert_ptr_null(noop_ctx_malloc_called);
}
END_TEST

/* torch 2.x's torch.cuda calls (issue 49): every pointer, kind and mode
 * checked before anything happens. */
START_TEST(parity_bad_args) {
    xdev_device_t d = xdev_cpu(1), none = xdev_cpu(99);
    size_t n;
    uint64_t v;
    unsigned u;
    bool b;
    char buf[8];
    XT_ERR(VAL, xdev_set_sync_debug_mode((xdev_sync_debug_mode_t)7), "mode 7");
    XT_ERR(VAL, xdev_get_sync_debug_mode(NULL), "NULL");
    XT_ERR(VAL, xdev_get_device_properties_ext(d, NULL), "NULL");
    xdev_device_properties_ext_t e = {.size = sizeof(size_t)};
    XT_ERR(VAL, xdev_get_device_properties_ext(d, &e), "size");
    e.size = sizeof e;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_get_device_properties_ext(none, &e), "99");
    XT_ERR(VAL, xdev_device_telemetry(d, XDEV_TELEMETRY_LOAD, NULL), "NULL");
    XT_ERR(VAL, xdev_device_telemetry(d, (xdev_telemetry_t)99, &v), "99");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_telemetry(none, XDEV_TELEMETRY_LOAD, &v), "99");
    XT_ERR(VAL, xdev_device_temperature(d, NULL), "NULL");
    XT_ERR(VAL, xdev_device_power_draw(d, NULL), "NULL");
    XT_ERR(VAL, xdev_device_clock_rate(d, NULL), "NULL");
    XT_ERR(VAL, xdev_device_memory_used(d, NULL), "NULL");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_power_draw(none, &u), "99");
    XT_ERR(VAL, xdev_get_arch_list(XDEV_DEVICE_CPU, NULL, 8), "NULL");
    XT_ERR(VAL, xdev_get_arch_list(XDEV_DEVICE_CPU, buf, 0), "len");
    XT_ERR(VAL, xdev_get_gencode_flags(XDEV_DEVICE_CPU, NULL, 8), "NULL");
    XT_ERR(VAL, xdev_get_gencode_flags(XDEV_DEVICE_CPU, buf, 0), "len");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_get_arch_list((xdev_device_type_t)6, buf, 8), "");
    XT_ERR(VAL, xdev_is_bf16_supported(d, NULL), "NULL");
    XT_ERR(VAL, xdev_is_tf32_supported(d, NULL), "NULL");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_is_tf32_supported(none, &b), "99");
    XT_ERR(VAL, xdev_host_memory_stats_items(NULL, 0, NULL), "NULL");
    XT_ERR(VAL, xdev_host_memory_stats_items(NULL, 3, &n), "NULL");
}
END_TEST

/* Managed memory (xdev/memory.h) and the out-of-memory observers
 * (xdev/allocator.h): arguments, foreign and non-managed pointers, ranges,
 * locations, advice. */
START_TEST(managed_bad_args) {
    xdev_device_t d = xdev_cpu(1);
    void *p = (void *)1;
    XT_ERR(VAL, xdev_malloc_managed(d, NULL, 64, 0), "ptr");
    XT_ERR(VAL, xdev_malloc_managed(d, &p, 64, 3), "flags 0x3");
    ck_assert_ptr_null(p);
    char *m = NULL;
    XT_OK(xdev_malloc_managed(d, (void **)&m, 256, XDEV_MEM_ATTACH_HOST));
    void *dev = NULL;
    XT_OK(xdev_malloc_device(d, &dev, 256));
    char host[16];
    XT_ERR(VAL, xdev_mem_prefetch_async(NULL, 1, XDEV_HOST, NULL), "ptr");
    XT_ERR(VAL, xdev_mem_prefetch_async(host, 1, XDEV_HOST, NULL), "not managed memory");
    XT_ERR(VAL, xdev_mem_prefetch_async(dev, 1, 1, NULL), "not managed memory");
    XT_ERR(VAL, xdev_mem_prefetch_async(m, 257, 1, NULL), "run past the end");
    XT_ERR(VAL, xdev_mem_prefetch_async(m + 256, 1, 1, NULL), "run past the end|not managed");
    XT_ERR(VAL, xdev_mem_prefetch_async(m, 1, 2, NULL), "location 2", "below 2");
    XT_ERR(VAL, xdev_mem_prefetch_async(m, 1, INT32_MIN, NULL), "location");
    xdev_stream_t s0;
    XT_OK(xdev_stream_create(xdev_cpu(0), XDEV_STREAM_PRIORITY_NORMAL, &s0));
    XT_OK(xdev_mem_prefetch_async(m, 256, 0, s0)); /* another device's stream of its backend */
    XT_OK(xdev_stream_destroy(s0));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_mem_prefetch_async(m, 1, 1, s0), "stream");
    XT_ERR(VAL, xdev_mem_advise(NULL, 1, XDEV_MEM_ADVISE_SET_READ_MOSTLY, 1), "ptr");
    XT_ERR(VAL, xdev_mem_advise(host, 1, XDEV_MEM_ADVISE_SET_READ_MOSTLY, 1), "not managed");
    XT_ERR(VAL, xdev_mem_advise(m, 300, XDEV_MEM_ADVISE_SET_READ_MOSTLY, 1), "run past the end");
    XT_ERR(VAL, xdev_mem_advise(m, 1, XDEV_MEM_ADVISE_SET_PREFERRED_LOCATION, 5), "location 5");
    XT_ERR(VAL, xdev_mem_advise(m, 1, (xdev_mem_advice_t)-1, 1), "advice -1");
    XT_ERR(VAL, xdev_mem_advise(m, 1, (xdev_mem_advice_t)99, 1), "advice 99");
    XT_ERR(VAL, xdev_host_free(m), "");
    XT_OK(xdev_free(m));
    XT_ERR(VAL, xdev_mem_advise(m, 1, XDEV_MEM_ADVISE_SET_READ_MOSTLY, 1), "not managed");
    XT_OK(xdev_free(dev));
}
END_TEST

static void oom_noop(const xdev_oom_info_t *info, void *user) {
    (void)info;
    (void)user;
}

START_TEST(oom_observer_bad_args) {
    XT_ERR(VAL, xdev_memory_add_oom_observer(NULL, NULL), "fn");
    XT_ERR(VAL, xdev_memory_remove_oom_observer(NULL, NULL), "fn");
    XT_ERR(VAL, xdev_memory_remove_oom_observer(oom_noop, NULL), "no out-of-memory observer");
    XT_OK(xdev_memory_add_oom_observer(oom_noop, NULL));
    XT_ERR(VAL, xdev_memory_add_oom_observer(oom_noop, NULL), "already registered");
    XT_OK(xdev_memory_add_oom_observer(oom_noop, (void *)1)); /* another user: another observer */
    XT_OK(xdev_memory_remove_oom_observer(oom_noop, NULL));
    XT_OK(xdev_memory_remove_oom_observer(oom_noop, (void *)1));
}
END_TEST

/* Shadow execution's calls (xdev/shadow.h), with the shadow off. */
START_TEST(shadow_bad_args) {
    XT_ERR(VAL, xdev_shadow_report_get(0, NULL), "'out'");
    xdev_shadow_report_t r;
    XT_ERR(XDEV_ERROR_NOT_FOUND, xdev_shadow_report_get(UINT64_MAX, &r), "not kept");
    XT_OK(xdev_shadow_set_handler(NULL, (void *)1)); /* NULL: back to stderr */
    XT_OK(xdev_shadow_clear());
}
END_TEST

/* ------------------------------------------------------------ copies and memset across devices */

START_TEST(memory_cross_device_stream) {
    void *p0 = dev_alloc(0, 64);
    xdev_stream_t s1 = NULL;
    XT_OK(xdev_stream_default(xdev_cpu(1), &s1));
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_memset_async(p0, 0, 64, s1), "");
    unsigned char host[64] = {0};
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_memcpy_async(p0, host, 64, s1), "");
    void *q = NULL;
    XT_OK(xdev_malloc_stream(&q, 64, s1)); /* the stream's device */
    xdev_device_t d;
    XT_OK(xdev_device_of(q, &d));
    XT_DEV_EQ(d, xdev_cpu(1));
    XT_OK(xdev_memcpy(q, p0, 64)); /* copies between devices are always allowed */
    XT_OK(xdev_synchronize());
    XT_OK(xdev_free(q));
    XT_OK(xdev_free(p0));
}
END_TEST

/* ------------------------------------------------------------ runner */

int main(int argc, char **argv) {
    Suite *s = suite_create("bad_input");
    TCase *t = tcase_create("bad_input");
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 30);
    tcase_add_loop_test(t, bad_device, 0, N_DEVICE_CALLS * N_BAD_DEVICES);
    tcase_add_test(t, set_device_bad);
    tcase_add_test(t, device_null_args);
    tcase_add_test(t, stream_null_args);
    tcase_add_test(t, stream_destroyed_queries);
    tcase_add_test(t, stream_destroyed_enqueue);
    tcase_add_test(t, stream_destroyed_math);
    tcase_add_test(t, event_bad_args);
    tcase_add_test(t, event_destroyed);
    tcase_add_test(t, memory_null_args);
    tcase_add_test(t, memory_foreign_pointers);
    tcase_add_test(t, memory_foreign_gemm_operands);
    tcase_add_test(t, memory_double_free);
    tcase_add_test(t, memory_interior_free);
    tcase_add_test(t, memory_wrong_free_kind);
    tcase_add_test(t, memory_copy_lengths_overflow);
    tcase_add_test(t, allocator_bad_args);
    tcase_add_test(t, parity_bad_args);
    tcase_add_test(t, managed_bad_args);
    tcase_add_test(t, oom_observer_bad_args);
    tcase_add_test(t, shadow_bad_args);
    tcase_add_test(t, memory_cross_device_stream);
    suite_add_tcase(s, t);
    return xt_run(srunner_create(s), "bad_input", argc, argv);
}
