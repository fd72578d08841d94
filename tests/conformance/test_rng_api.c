/* SPDX-License-Identifier: Apache-2.0 */
/* test_rng_api.c - the random-number API (xdev/rng.h): torch.cuda's seeding
 * functions, state bytes, generator objects, per-device independence, bad
 * input, stream order, concurrent fills and the backend ABI's rng pins.
 * Linked into test_rng (the values are checked in test_rng.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng_test.h"
#include "xt.h"

/* n uniform f32 from the default generator of xt_dev(dev), fetched. */
static void draw(int dev, float *host, size_t n) {
    float *d = rt_dalloc(xt_dev(dev), n * 4);
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, d, n, NULL));
    rt_fetch(host, d, n * 4);
    XT_OK(xdev_free(d));
}

static uint64_t seed_of(int dev) {
    uint64_t s = 0;
    XT_OK(xdev_initial_seed(xt_dev(dev), &s));
    return s;
}

/* ------------------------------------------------------------- seeding */

START_TEST(seeding_api) {
    /* xdev_manual_seed acts on the current device; index -1 means it too. */
    XT_OK(xdev_manual_seed(5));
    ck_assert_uint_eq(seed_of(0), 5);
    ck_assert_uint_eq(seed_of(-1), 5);
    if (xt_has_devices(__func__, 2, "current device only")) {
        XT_OK(xdev_manual_seed_all(11));
        XT_OK(xdev_set_device(xt_dev(1)));
        XT_OK(xdev_manual_seed(12));
        ck_assert_uint_eq(seed_of(1), 12);
        ck_assert_uint_eq(seed_of(0), 11);
        XT_OK(xdev_set_device(xt_dev(0)));
    }
    /* manual_seed_all: every device; it restarts the offset. */
    float a[8], b[8];
    XT_OK(xdev_manual_seed_all(99));
    draw(0, a, 8);
    XT_OK(xdev_manual_seed_all(99));
    draw(0, b, 8);
    ck_assert_mem_eq(a, b, sizeof a);
    for (int i = 0; i < xt_device_count(); i++)
        ck_assert_uint_eq(seed_of(i), 99);
    /* It also reaches the CPU backend's devices (another loaded backend). */
    uint64_t s = 0;
    XT_OK(xdev_initial_seed(xdev_cpu(0), &s));
    ck_assert_uint_eq(s, 99);
    /* seed / seed_all: non-deterministic, seed_all the same on every device. */
    XT_OK(xdev_seed());
    uint64_t r1 = seed_of(0);
    XT_OK(xdev_seed());
    ck_assert_msg(seed_of(0) != r1, "two xdev_seed() calls gave the same seed %llu",
                  (unsigned long long)r1);
    XT_OK(xdev_seed_all());
    for (int i = 1; i < xt_device_count(); i++)
        ck_assert_uint_eq(seed_of(i), seed_of(0));
    /* The default seed is torch's. */
    ck_assert_uint_eq(XDEV_RNG_DEFAULT_SEED, 67280421310721ull);
}
END_TEST

/* ------------------------------------------------------------- states */

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

START_TEST(state_save_restore) {
    unsigned char st[XDEV_RNG_STATE_SIZE + 8], st2[XDEV_RNG_STATE_SIZE];
    float a[1000], b[1000];
    XT_OK(xdev_manual_seed(1234));
    draw(0, a, 3); /* offset 3 */
    XT_OK(xdev_get_rng_state(xt_dev(0), st, sizeof st));
    ck_assert_mem_eq(st, "XRNG\x01\0\0\0", 8);
    ck_assert_uint_eq(le64(st + 8), 1234);
    ck_assert_uint_eq(le64(st + 16), 3);
    draw(0, a, 1000);
    XT_OK(xdev_set_rng_state(xt_dev(0), st, XDEV_RNG_STATE_SIZE));
    draw(0, b, 1000);
    ck_assert_mem_eq(a, b, sizeof a);
    /* The _all forms: every device of the default type, in index order. */
    size_t count = 0;
    XT_OK(xdev_get_rng_state_all(NULL, 0, &count));
    ck_assert_uint_eq(count, (size_t)xt_device_count());
    unsigned char *all = malloc(count * XDEV_RNG_STATE_SIZE);
    XT_OK(xdev_get_rng_state_all(all, count * XDEV_RNG_STATE_SIZE, &count));
    XT_OK(xdev_get_rng_state(xt_dev(0), st2, sizeof st2));
    ck_assert_mem_eq(all, st2, XDEV_RNG_STATE_SIZE);
    draw(0, a, 1000);
    XT_OK(xdev_set_rng_state_all(all, count * XDEV_RNG_STATE_SIZE));
    draw(0, b, 1000);
    ck_assert_mem_eq(a, b, sizeof a);
    free(all);
    /* An explicit generator: state and offset. */
    xdev_generator_t g;
    XT_OK(xdev_generator_create(xt_dev(0), 77, &g));
    float *d = rt_dalloc(xt_dev(0), sizeof a);
    XT_OK(xdev_generator_get_state(g, st, sizeof st));
    XT_OK(xdev_rng_uniform(g, XDEV_DTYPE_F32, d, 1000, NULL));
    rt_fetch(a, d, sizeof a);
    XT_OK(xdev_generator_set_state(g, st, XDEV_RNG_STATE_SIZE));
    XT_OK(xdev_rng_uniform(g, XDEV_DTYPE_F32, d, 1000, NULL));
    rt_fetch(b, d, sizeof b);
    ck_assert_mem_eq(a, b, sizeof a);
    uint64_t off = 0, seed = 0;
    XT_OK(xdev_generator_get_offset(g, &off));
    ck_assert_uint_eq(off, 1000);
    /* An f64 fill after an odd offset starts at the next even word. */
    XT_OK(xdev_rng_uniform(g, XDEV_DTYPE_F32, d, 1, NULL));
    XT_OK(xdev_rng_uniform(g, XDEV_DTYPE_F64, d, 10, NULL));
    XT_OK(xdev_generator_get_offset(g, &off));
    ck_assert_uint_eq(off, 1002 + 20);
    XT_OK(xdev_generator_initial_seed(g, &seed));
    ck_assert_uint_eq(seed, 77);
    xdev_device_t where;
    XT_OK(xdev_generator_get_device(g, &where));
    XT_DEV_EQ(where, xt_dev(0));
    XT_OK(xdev_generator_destroy(g));
    XT_OK(xdev_free(d));
}
END_TEST

/* Each device has its own default generator: drawing on one does not move
 * another's offset; with equal seeds they give the same numbers. */
START_TEST(per_device_independence) {
    XT_REQUIRE_DEVICES(2);
    float a[64], b[64], c[64];
    XT_OK(xdev_manual_seed_all(31337));
    draw(0, a, 64);
    draw(0, c, 64); /* device 0 moved on ... */
    draw(1, b, 64); /* ... device 1 did not */
    ck_assert_mem_eq(a, b, sizeof a);
    ck_assert(memcmp(a, c, sizeof a) != 0);
    /* Seeding device 1 alone leaves device 0 alone. */
    XT_OK(xdev_set_device(xt_dev(1)));
    XT_OK(xdev_manual_seed(1));
    XT_OK(xdev_set_device(xt_dev(0)));
    ck_assert_uint_eq(seed_of(0), 31337);
    unsigned char s0[XDEV_RNG_STATE_SIZE], s1[XDEV_RNG_STATE_SIZE];
    XT_OK(xdev_get_rng_state(xt_dev(0), s0, sizeof s0));
    XT_OK(xdev_get_rng_state(xt_dev(1), s1, sizeof s1));
    ck_assert(memcmp(s0, s1, sizeof s0) != 0);
    /* A generator of device 1 fills device 1's memory only. */
    xdev_generator_t g1;
    XT_OK(xdev_generator_create(xt_dev(1), 5, &g1));
    float *d0 = rt_dalloc(xt_dev(0), 16), *d1 = rt_dalloc(xt_dev(1), 16);
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_rng_uniform(g1, XDEV_DTYPE_F32, d0, 4, NULL), xt_name(1),
           xt_name(0));
    XT_OK(xdev_rng_uniform(g1, XDEV_DTYPE_F32, d1, 4, NULL));
    xdev_stream_t other;
    XT_OK(xdev_stream_default(xt_dev(1), &other));
    XT_ERR(XDEV_ERROR_CROSS_DEVICE, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, d0, 4, other), "stream");
    XT_OK(xdev_generator_destroy(g1));
    XT_OK(xdev_free(d0));
    XT_OK(xdev_free(d1));
}
END_TEST

/* ------------------------------------------------------------- bad input */

START_TEST(bad_input) {
    float *d = rt_dalloc(xt_dev(0), 64 * 4), host[64];
    const xdev_dtype_t F32 = XDEV_DTYPE_F32;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, F32, NULL, 4, NULL), "'out'", "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, F32, host, 4, NULL), "device memory");
    void *pinned = NULL;
    XT_OK(xdev_host_alloc(&pinned, 256));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_normal(NULL, F32, pinned, 4, 0, 1, NULL), "pinned");
    XT_OK(xdev_host_free(pinned));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, F32, d, 65, NULL), "past the end");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, XDEV_DTYPE_F64, d, 33, NULL),
           "past the end");
    XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_rng_uniform(NULL, XDEV_DTYPE_C64, d, 4, NULL), "c64");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(NULL, (xdev_dtype_t)99, d, 4, NULL),
           "dtype 99");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_normal(NULL, F32, d, 4, 0, -1, NULL), "std");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_normal(NULL, F32, d, 4, NAN, 1, NULL), "finite");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_normal(NULL, F32, d, 4, 1e300, 1, NULL), "f32");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_bernoulli(NULL, d, 4, 1.5, NULL), "p = 1.5");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_bernoulli(NULL, d, 4, NAN, NULL), "[0, 1]");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_integers(NULL, XDEV_RNG_INT32, d, 4, 5, 5, NULL),
           "empty");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_rng_integers(NULL, XDEV_RNG_INT32, d, 4, 0, (int64_t)1 << 40, NULL), "int32");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_integers(NULL, (xdev_rng_int_t)7, d, 4, 0, 9, NULL),
           "type 7");
    /* n = 0 is a no-op that consumes nothing. */
    uint64_t off = 1;
    xdev_generator_t g;
    XT_OK(xdev_generator_create(xt_dev(0), 1, &g));
    XT_OK(xdev_rng_uniform(g, F32, d, 0, NULL));
    XT_OK(xdev_generator_get_offset(g, &off));
    ck_assert_uint_eq(off, 0);
    /* The offset cannot pass 2^64 words. */
    XT_OK(xdev_generator_set_offset(g, UINT64_MAX - 3));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_rng_uniform(g, XDEV_DTYPE_F64, d, 2, NULL), "2^64");
    /* Generators: NULL pointers, dead and foreign handles, another device. */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_generator_create(xt_dev(0), 1, NULL), "out");
    xdev_generator_t none = g;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_generator_create(xt_dev(99), 1, &none), "99");
    ck_assert_ptr_null(none);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_generator_get_offset(g, NULL), "offset");
    XT_OK(xdev_generator_destroy(g));
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_rng_uniform(g, F32, d, 4, NULL), "destroyed");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_generator_destroy(g), "destroyed");
    XT_ERR(XDEV_ERROR_INVALID_HANDLE, xdev_generator_manual_seed((xdev_generator_t)host, 1),
           "not an xdev generator");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_generator_manual_seed(NULL, 1), "NULL");
    /* States: too short, wrong magic, unknown version, wrong length, NULL. */
    unsigned char st[XDEV_RNG_STATE_SIZE], bad[XDEV_RNG_STATE_SIZE + 4];
    XT_OK(xdev_get_rng_state(xt_dev(0), st, sizeof st));
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_rng_state(xt_dev(0), st, 16), "16 bytes", "24");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_rng_state(xt_dev(0), NULL, 24), "state");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state(xt_dev(0), st, 4), "too short");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state(xt_dev(0), NULL, 24), "state");
    memcpy(bad, st, sizeof st);
    bad[0] = 'Y';
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state(xt_dev(0), bad, sizeof st), "magic");
    memcpy(bad, st, sizeof st);
    bad[4] = 2;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state(xt_dev(0), bad, sizeof st), "version 2");
    memcpy(bad, st, sizeof st);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state(xt_dev(0), bad, 20), "malformed");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state(xt_dev(0), bad, sizeof bad), "28");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_set_rng_state(xt_dev(99), st, sizeof st), "99");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state_all(st, 1), "len = 1");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_rng_state_all(st, 1, NULL), "1 bytes");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_initial_seed(xt_dev(0), NULL), "seed");
    if (xt_device_count() == 1) {
        bad[4] = 9;
        XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_set_rng_state_all(bad, XDEV_RNG_STATE_SIZE),
               "state 0", "version 9");
    }
    XT_OK(xdev_free(d));
}
END_TEST

/* ------------------------------------------------------------- ordering */

/* A fill is enqueued behind the work already on its stream, and the stream
 * is the output's device's current one when none is given. */
START_TEST(stream_ordered) {
    if (xdev_launch_blocking())
        XT_SKIP("XDEV_LAUNCH_BLOCKING=1 makes every enqueue wait for its stream");
    float *d = rt_dalloc(xt_dev(0), 256 * 4), h[256];
    xdev_stream_t s, other;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &other));
    /* Warm-up on s: CUDA loads a kernel's module at its first launch (lazy
     * loading), which waits for the device; the fill below then only enqueues. */
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, d, 256, s));
    XT_OK(xdev_memset_async(d, 0xff, 256 * 4, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_stream_set_current(s));
    if (xt_device_count() > 1) XT_OK(xdev_set_device(xt_dev(1))); /* does not matter */
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 10000);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_rng_uniform(NULL, XDEV_DTYPE_F32, d, 256, NULL)); /* on s */
    ck_assert(xt_gate_wait_entered(&gate, 5000));
    XT_STATUS(XDEV_ERROR_NOT_READY, xdev_stream_query(s));
    XT_OK(xdev_memcpy_async(h, d, sizeof h, other));
    XT_OK(xdev_stream_synchronize(other));
    ck_assert_msg(h[0] != h[0], "the fill ran before the work queued ahead of it");
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy_async(h, d, sizeof h, s));
    XT_OK(xdev_stream_synchronize(s));
    ck_assert(h[0] >= 0.0f && h[0] < 1.0f && h[255] >= 0.0f && h[255] < 1.0f);
    xt_opener_join(&opener);
    xt_gate_destroy(&gate);
    xt_reset_state();
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(other));
    XT_OK(xdev_free(d));
}
END_TEST

/* Threads filling from one default generator at once get disjoint words:
 * every fill's words are found at a distinct multiple of M in the stream,
 * and together they cover it without a gap. */
enum { THREADS = 4, FILLS = 16, M = 1024 };
static const uint64_t k_thread_seed = 4242;

typedef struct thread_arg {
    int32_t *dev; /* FILLS * M raw words */
} thread_arg_t;

static void *fill_thread(void *p) {
    thread_arg_t *a = p;
    for (int i = 0; i < FILLS; i++)
        if (xdev_rng_integers(NULL, XDEV_RNG_INT32, a->dev + (size_t)i * M, M, INT32_MIN,
                              (int64_t)INT32_MAX + 1, NULL) != XDEV_SUCCESS)
            return (void *)1;
    return NULL;
}

START_TEST(concurrent_fills_do_not_overlap) {
    XT_OK(xdev_set_device(xt_dev(0)));
    XT_OK(xdev_manual_seed(k_thread_seed));
    pthread_t t[THREADS];
    thread_arg_t args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i].dev = rt_dalloc(xt_dev(0), (size_t)FILLS * M * 4);
        ck_assert_int_eq(pthread_create(&t[i], NULL, fill_thread, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
    }
    /* The reference stream, raw words; index each M-word slot by its first word. */
    enum { TOTAL = THREADS * FILLS * M };
    uint32_t *ref = malloc(TOTAL * 4);
    for (uint64_t b = 0; b < TOTAL / 4; b++)
        rt_block(k_thread_seed, b, ref + 4 * b);
    bool seen[THREADS * FILLS] = {false};
    int32_t *h = malloc((size_t)FILLS * M * 4);
    for (int i = 0; i < THREADS; i++) {
        rt_fetch(h, args[i].dev, (size_t)FILLS * M * 4);
        for (int f = 0; f < FILLS; f++) {
            const uint32_t first = (uint32_t)h[f * M] ^ 0x80000000u;
            int slot = -1;
            for (int s = 0; s < THREADS * FILLS && slot < 0; s++)
                if (ref[(size_t)s * M] == first) slot = s;
            ck_assert_msg(slot >= 0, "thread %d fill %d: its words are not at a multiple of %d", i,
                          f, M);
            ck_assert_msg(!seen[slot], "two fills used words %d..%d", slot * M, slot * M + M - 1);
            seen[slot] = true;
            for (int k = 0; k < M; k++)
                ck_assert_uint_eq((uint32_t)h[f * M + k] ^ 0x80000000u, ref[(size_t)slot * M + k]);
        }
        XT_OK(xdev_free(args[i].dev));
    }
    unsigned char st[XDEV_RNG_STATE_SIZE];
    XT_OK(xdev_get_rng_state(xt_dev(0), st, sizeof st));
    uint64_t off = 0;
    for (int i = 7; i >= 0; i--)
        off = (off << 8) | st[16 + i];
    ck_assert_uint_eq(off, TOTAL);
    free(ref), free(h);
}
END_TEST

/* ------------------------------------------------------------- ABI pins */

#define SLOT_AT(type, slot, k)                                                                     \
    ck_assert_msg(offsetof(type, slot) == (size_t)(k) * sizeof(void *), #type "." #slot " moved")

START_TEST(abi_layout) {
    if (sizeof(void *) != 8) XT_SKIP("the pins are for LP64");
    SLOT_AT(xdev_rng_vtable_t, size, 0);
    SLOT_AT(xdev_rng_vtable_t, fill, 1);
    ck_assert_uint_eq(sizeof(xdev_rng_vtable_t), 2 * sizeof(void *));
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, kind), 8);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, format), 12);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, out), 16);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, count), 24);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, seed), 32);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, offset), 40);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, mean), 48);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, std), 56);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, low), 64);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, range), 72);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, threshold), 80);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, device), 88);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, stream), 96);
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, philox_state), 104); /* ABI 3.2 */
    ck_assert_uint_eq(sizeof(xdev_rng_fill_desc_t), 112);
    ck_assert_int_eq(XDEV_RNG_FILL_BERNOULLI, 3);
    ck_assert_int_eq(XDEV_RNG_FORMAT_I64, 3);
    ck_assert_int_eq(XDEV_RNG_STATE_SIZE, 24);
}
END_TEST

/* XDEV_CPU_RNG_ISA=avx9 (suite isa_bad): every CPU fill fails, naming it. */
START_TEST(isa_malformed) {
    float *d = rt_dalloc(xdev_cpu(0), 16);
    for (int i = 0; i < 2; i++)
        XT_ERR(XDEV_ERROR_ENV, xdev_rng_uniform(NULL, XDEV_DTYPE_F32, d, 4, NULL),
               "XDEV_CPU_RNG_ISA='avx9'");
    XT_OK(xdev_free(d));
}
END_TEST

void rt_add_isa_test(TCase *tc);
void rt_add_isa_test(TCase *tc) {
    tcase_add_test(tc, isa_malformed);
}

void rt_add_api_tests(TCase *tc);
void rt_add_api_tests(TCase *tc) {
    tcase_add_test(tc, seeding_api);
    tcase_add_test(tc, state_save_restore);
    tcase_add_test(tc, per_device_independence);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, stream_ordered);
    tcase_add_test(tc, concurrent_fills_do_not_overlap);
    tcase_add_test(tc, abi_layout);
}
