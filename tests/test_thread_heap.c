/* SPDX-License-Identifier: Apache-2.0 */
/* test_thread_heap.c - the per-thread heap blocks (core/base/thread_heap.c,
 * compiled in white-box) that keep per-thread state out of libxdev's static
 * TLS (the error message, the thread state, allocation tags, the last
 * compile, the shadow's pending records): a block is zeroed, one per thread,
 * kept until the thread exits, then released and freed with the owner's
 * pointer cleared first; a block wanted again by a later destructor is made
 * anew and freed too (ASan's leak check sees any that is not); threads
 * racing to the first use share one key; a forked child keeps its block. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/thread_heap.h"
#include "xt_check_run.h"

typedef struct block {
    char bytes[1000];
    int thread;
} block_t;

static atomic_int g_released;       /* release calls */
static atomic_int g_slot_was_clear; /* releases that found the owner's pointer NULL */
static _Thread_local void *tls_block;

static void count_release(void *b) {
    (void)b;
    atomic_fetch_add(&g_released, 1);
    if (tls_block == NULL) atomic_fetch_add(&g_slot_was_clear, 1);
}

static xdev_thread_heap_t g_heap = XDEV_THREAD_HEAP_INIT(sizeof(block_t), count_release);

START_TEST(block_is_zeroed_aligned_and_kept) {
    block_t *b = xdev_thread_heap_get(&g_heap, &tls_block);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_eq(tls_block, b);
    ck_assert_uint_eq((uintptr_t)b % _Alignof(max_align_t), 0);
    for (size_t i = 0; i < sizeof b->bytes; i++)
        ck_assert_int_eq(b->bytes[i], 0);
    memset(b, 0x5a, sizeof *b); /* the whole size is the caller's (ASan) */
    ck_assert_ptr_eq(xdev_thread_heap_get(&g_heap, &tls_block), b);
}
END_TEST

/* Each thread writes its number into its own block, waits for the others,
 * and reads it back: blocks are per thread. */
#define THREADS 8
static pthread_barrier_t g_barrier;
static void *use_block(void *arg) {
    int me = (int)(intptr_t)arg;
    pthread_barrier_wait(&g_barrier); /* all race to the heap's first use */
    block_t *b = xdev_thread_heap_get(&g_heap, &tls_block);
    if (b == NULL) return (void *)1;
    b->thread = me;
    pthread_barrier_wait(&g_barrier);
    return (void *)(intptr_t)(b->thread != me || tls_block != b);
}

START_TEST(each_thread_its_own_block_freed_at_exit) {
    pthread_t t[THREADS];
    pthread_barrier_init(&g_barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, use_block, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        ck_assert_ptr_null(bad);
    }
    pthread_barrier_destroy(&g_barrier);
    ck_assert_int_eq(atomic_load(&g_released), THREADS);
    ck_assert_int_eq(atomic_load(&g_slot_was_clear), THREADS);
}
END_TEST

/* A release that needs a block of another heap after that heap's block
 * went (as thread_state.c's exit hooks may set an error message): the
 * block is made again, not read freed, and freed in a later round. */
static _Thread_local void *tls_other;
static atomic_int g_other_made;
static xdev_thread_heap_t g_other = XDEV_THREAD_HEAP_INIT(64, NULL);
static void want_other(void *b) {
    (void)b;
    char *o = xdev_thread_heap_get(&g_other, &tls_other);
    if (o != NULL) {
        o[63] = 'x';
        atomic_fetch_add(&g_other_made, 1);
    }
}
static xdev_thread_heap_t g_first = XDEV_THREAD_HEAP_INIT(16, want_other);
static _Thread_local void *tls_first;
static void *use_both(void *arg) {
    (void)arg;
    if (xdev_thread_heap_get(&g_other, &tls_other) == NULL) return (void *)1;
    if (xdev_thread_heap_get(&g_first, &tls_first) == NULL) return (void *)1;
    return NULL;
}

START_TEST(later_destructor_gets_a_fresh_block) {
    for (int round = 0; round < 20; round++) {
        pthread_t t;
        void *bad = NULL;
        ck_assert_int_eq(pthread_create(&t, NULL, use_both, NULL), 0);
        pthread_join(t, &bad);
        ck_assert_ptr_null(bad);
    }
    ck_assert_int_eq(atomic_load(&g_other_made), 20);
}
END_TEST

START_TEST(forked_child_keeps_its_block) {
    block_t *b = xdev_thread_heap_get(&g_heap, &tls_block);
    ck_assert_ptr_nonnull(b);
    b->thread = 42;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        static xdev_thread_heap_t fresh = XDEV_THREAD_HEAP_INIT(32, NULL);
        static _Thread_local void *tls_fresh;
        block_t *c = xdev_thread_heap_get(&g_heap, &tls_block);
        int ok = c == b && c->thread == 42 && xdev_thread_heap_get(&fresh, &tls_fresh) != NULL;
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("thread_heap");
    TCase *tc = tcase_create("blocks");
    tcase_add_test(tc, block_is_zeroed_aligned_and_kept);
    tcase_add_test(tc, each_thread_its_own_block_freed_at_exit);
    tcase_add_test(tc, later_destructor_gets_a_fresh_block);
    tcase_add_test(tc, forked_child_keeps_its_block);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
