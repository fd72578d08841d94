/* SPDX-License-Identifier: Apache-2.0 */
/* test_alloc_unmap_fault.c - an expandable segment's unmapping that fails
 * part way (CPU backend, entry allocator.unmap_fault).
 *
 * Why: a range of a woken segment unmaps in several backend calls (one per
 * whole piece, memory.va_unmap_whole, then the units grown after the wake),
 * so a later call can fail after earlier ones gave their memory back. The
 * allocator must then know exactly what is still mapped: memory it hands out
 * must be usable, and its reserved bytes must move with the device's free
 * memory. The fault injector does not fail releases (fault.c), so this suite
 * fails the CPU backend's unmap itself: an mmap(PROT_NONE, MAP_FIXED) over
 * part of a reservation, which this executable's mmap (the one libxdev
 * calls) fails on its n-th call when armed; and likewise its map (an
 * mmap(PROT_READ | PROT_WRITE, MAP_FIXED)). */

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xt.h"

#define MIB ((size_t)1 << 20)

/* ------------------------------------------- the failing unmap and map */
static _Atomic long g_fail_at, g_fail_map_at; /* 0: unarmed */
static _Atomic long g_unmaps, g_maps;         /* calls counted while armed */

/* Is this call the armed n-th one of its kind? */
static bool trips(_Atomic long *fail_at, _Atomic long *calls) {
    return atomic_load(fail_at) > 0 && atomic_fetch_add(calls, 1) + 1 == atomic_load(fail_at);
}

/* The mmap this one stands in front of (a sanitizer's, else libc's), found
 * by main: calls before that (a sanitizer's runtime starting) go straight to
 * the system call, and this function is not instrumented by TSan, whose
 * runtime is not ready for an instrumented function then. */
static void *(*g_real_mmap)(void *, size_t, int, int, int, off_t);

__attribute__((visibility("default"), no_sanitize("thread"))) void *
mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (g_real_mmap == NULL) return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    bool fixed = (flags & MAP_FIXED) != 0;
    if (fixed && prot == PROT_NONE && trips(&g_fail_at, &g_unmaps)) {
        /* a failed unmap leaves its range mapped, but need not keep its
         * contents (backend_slots.h, va_unmap; CUDA maps new memory back):
         * the worst case, new zeroed memory */
        (void)g_real_mmap(addr, len, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        errno = ENOMEM;
        return MAP_FAILED;
    }
    if (fixed && prot == (PROT_READ | PROT_WRITE) && trips(&g_fail_map_at, &g_maps)) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return g_real_mmap(addr, len, prot, flags, fd, off);
}

/* Fail the n-th unmap from now on (0: none, and stop counting). */
static void fail_unmap(long n) {
    atomic_store(&g_unmaps, 0);
    atomic_store(&g_fail_at, n);
}

/* The same for maps. */
static void fail_map(long n) {
    atomic_store(&g_maps, 0);
    atomic_store(&g_fail_map_at, n);
}

/* ------------------------------------------------------------------ helpers */
static void setup(void) {
    xt_reset_state();
    XT_OK(xdev_synchronize());
    XT_OK(xdev_empty_cache());
}

static void *tagged(const char *tag, size_t n) {
    XT_OK(xdev_memory_tag_push(tag));
    void *p = NULL;
    XT_OK(xdev_malloc(&p, n));
    XT_OK(xdev_memory_tag_pop());
    return p;
}

/* Byte i of seed's pattern is (i * 31 + seed) mod 256, which repeats every
 * 256 bytes: n bytes of it (n a multiple of 256), built from one period by
 * copies (quick under the sanitizers, unlike a loop over tens of MiB). */
static unsigned char *pattern(size_t n, unsigned seed) {
    unsigned char *h = malloc(n);
    ck_assert_ptr_nonnull(h);
    for (size_t i = 0; i < 256 && i < n; i++)
        h[i] = (unsigned char)(i * 31u + seed);
    for (size_t done = 256; done < n; done *= 2)
        memcpy(h + done, h, done < n - done ? done : n - done);
    return h;
}

/* Fill n bytes at p with seed's pattern (through the device). */
static void fill(void *p, size_t n, unsigned seed) {
    unsigned char *h = pattern(n, seed);
    XT_OK(xdev_memcpy(p, h, n));
    free(h);
}

static bool holds(const void *p, size_t n, unsigned seed) {
    unsigned char *want = pattern(n, seed), *h = malloc(n);
    XT_OK(xdev_memcpy(h, p, n));
    bool same = memcmp(h, want, n) == 0;
    free(h);
    free(want);
    return same;
}

/* Every byte the allocator holds mapped and free in tag's segment (after
 * `used` bytes in use at its start) is usable: allocated, written, read. */
static void free_tail_usable(const char *tag, void *start, size_t used) {
    size_t tail = (size_t)xt_reserved(0) - used;
    if (tail == 0) return;
    void *p = tagged(tag, tail);
    ck_assert_ptr_eq(p, (char *)start + used); /* the segment's free tail, nothing new */
    fill(p, tail, 7);
    ck_assert(holds(p, tail, 7));
    XT_OK(xdev_free(p));
}

/* --------------------------------------------------------------------- tests */

/* A woken segment of 66 MiB is pieces [0,32) [32,64) [64,66) MiB, each one
 * mapping. With [2, 66) free, empty_cache cuts [32, 66) and unmaps it in
 * two calls; the second fails. What the allocator keeps must be mapped, and
 * its reserved bytes must drop by what the device got back. */
START_TEST(shrink_second_unmap_fails) {
    void *a = tagged("cut", 2 * MIB), *b = tagged("cut", 64 * MIB);
    ck_assert_ptr_eq(b, (char *)a + 2 * MIB);
    fill(a, 2 * MIB, 1);
    XT_OK(xdev_memory_sleep(xt_dev(0), "cut", XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_wake(xt_dev(0), "cut"));
    XT_OK(xdev_free(b));
    ck_assert_int_eq(xt_reserved(0), (int64_t)(66 * MIB));
    size_t free0 = xt_mem_free(0);
    xdev_status_t status0 = xdev_last_status();
    fail_unmap(2);
    XT_OK(xdev_empty_cache());
    long calls = atomic_load(&g_unmaps);
    fail_unmap(0);
    ck_assert_msg(calls >= 2, "%ld unmap calls: the failure was not reached", calls);
    /* a release that failed is kept, not an error of the call */
    ck_assert_int_eq(xdev_last_status(), status0);
    int64_t gone = (int64_t)(66 * MIB) - xt_reserved(0);
    ck_assert_msg((int64_t)(xt_mem_free(0) - free0) == gone,
                  "the device got %zu MiB back, the allocator released %lld MiB",
                  (xt_mem_free(0) - free0) / MIB, (long long)(gone / (int64_t)MIB));
    ck_assert(holds(a, 2 * MIB, 1));
    free_tail_usable("cut", a, 2 * MIB);
    /* the rest goes at the next empty_cache, and the memory is still usable */
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(xt_reserved(0), (int64_t)(32 * MIB));
    ck_assert_uint_eq(xt_mem_free(0) - free0, 34 * MIB);
    void *c = tagged("cut", 40 * MIB);
    ck_assert_ptr_eq(c, b);
    fill(c, 40 * MIB, 3);
    ck_assert(holds(c, 40 * MIB, 3));
    ck_assert(holds(a, 2 * MIB, 1));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(c));
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(xt_reserved(0), 0);
}
END_TEST

/* A segment woken at 34 MiB (pieces [0,32) [32,34)) then grown by a unit to
 * 36 MiB: sleep unmaps its second 32 MiB piece in two calls, [32,34) whole
 * and [34,36) by units. */
static void *woken_then_grown(const char *tag, void **c, unsigned seed) {
    void *a = tagged(tag, 34 * MIB);
    fill(a, 34 * MIB, seed);
    XT_OK(xdev_memory_sleep(xt_dev(0), tag, XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_wake(xt_dev(0), tag));
    *c = tagged(tag, 2 * MIB);
    ck_assert_ptr_eq(*c, (char *)a + 34 * MIB);
    fill(*c, 2 * MIB, seed + 1);
    return a;
}

/* That segment's sleep with its third unmap ([34,36)) failing: the sleep
 * fails and the segment stays awake, all of it mapped again, with its
 * contents. */
START_TEST(sleep_second_call_of_a_piece_fails) {
    void *c = NULL, *a = woken_then_grown("half", &c, 11);
    size_t free0 = xt_mem_free(0);
    int64_t res0 = xt_reserved(0);
    fail_unmap(3);
    xdev_status_t st = xdev_memory_sleep(xt_dev(0), "half", XDEV_MEMORY_SLEEP_KEEP);
    long calls = atomic_load(&g_unmaps);
    fail_unmap(0);
    ck_assert_msg(calls >= 3, "%ld unmap calls: the failure was not reached", calls);
    ck_assert_msg(st != XDEV_SUCCESS, "the sleep succeeded although an unmap failed");
    /* awake, wholly mapped, contents intact */
    ck_assert_uint_eq(xt_mem_free(0), free0);
    ck_assert_int_eq(xt_reserved(0), res0);
    ck_assert(holds(a, 34 * MIB, 11));
    ck_assert(holds(c, 2 * MIB, 12));
    /* and it can sleep and wake again */
    XT_OK(xdev_memory_sleep(xt_dev(0), "half", XDEV_MEMORY_SLEEP_KEEP));
    XT_OK(xdev_memory_wake(xt_dev(0), "half"));
    ck_assert(holds(a, 34 * MIB, 11));
    ck_assert(holds(c, 2 * MIB, 12));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(c));
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(xt_reserved(0), 0);
}
END_TEST

/* As above, and mapping the unmapped front back fails too: the segment
 * cannot be wholly awake, so it goes wholly to sleep (the call still fails)
 * and a wake brings it back with its contents. */
START_TEST(sleep_rollback_map_fails) {
    void *c = NULL, *a = woken_then_grown("both", &c, 21);
    size_t free0 = xt_mem_free(0);
    fail_unmap(3);
    fail_map(1);
    xdev_status_t st = xdev_memory_sleep(xt_dev(0), "both", XDEV_MEMORY_SLEEP_KEEP);
    long maps = atomic_load(&g_maps);
    fail_unmap(0);
    fail_map(0);
    ck_assert_msg(maps >= 1, "the rollback mapped nothing");
    ck_assert_msg(st != XDEV_SUCCESS, "the sleep succeeded although an unmap failed");
    /* wholly asleep: the device has all of it back, and it is refused */
    ck_assert_uint_eq(xt_mem_free(0), free0 + 36 * MIB);
    ck_assert_int_eq(xdev_memset_async(a, 0, 16, NULL), XDEV_ERROR_INVALID_VALUE);
    XT_OK(xdev_memory_wake(xt_dev(0), "both"));
    ck_assert_uint_eq(xt_mem_free(0), free0);
    ck_assert(holds(a, 34 * MIB, 21));
    ck_assert(holds(c, 2 * MIB, 22));
    XT_OK(xdev_free(a));
    XT_OK(xdev_free(c));
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(xt_reserved(0), 0);
}
END_TEST

/* A wake of a 66 MiB segment (pieces [0,32) [32,64) [64,66) MiB) whose
 * third map fails, and whose undoing fails at its first unmap ([32,64),
 * from the back): [0,64) stays mapped. The segment stays asleep with its
 * contents, and the next wake maps only what is not mapped: the device's
 * free memory comes back to what it was before the sleep, not 64 MiB less
 * (the CPU backend counts a range mapped twice twice; CUDA refuses it). */
START_TEST(wake_rollback_unmap_fails) {
    void *a = tagged("wake", 66 * MIB);
    fill(a, 66 * MIB, 31);
    size_t free0 = xt_mem_free(0);
    XT_OK(xdev_memory_sleep(xt_dev(0), "wake", XDEV_MEMORY_SLEEP_KEEP));
    ck_assert_uint_eq(xt_mem_free(0), free0 + 66 * MIB);
    fail_map(3);
    fail_unmap(1);
    xdev_status_t st = xdev_memory_wake(xt_dev(0), "wake");
    long maps = atomic_load(&g_maps), unmaps = atomic_load(&g_unmaps);
    fail_map(0);
    fail_unmap(0);
    ck_assert_msg(maps >= 3 && unmaps >= 1, "%ld maps, %ld unmaps: the failures were not reached",
                  maps, unmaps);
    ck_assert_int_eq(st, XDEV_ERROR_OUT_OF_MEMORY);
    /* asleep, with [0, 64) still mapped */
    ck_assert_int_eq(xdev_memset_async(a, 0, 16, NULL), XDEV_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(xt_mem_free(0), free0 + 2 * MIB);
    XT_OK(xdev_memory_wake(xt_dev(0), "wake"));
    ck_assert_msg(xt_mem_free(0) == free0,
                  "after the wake the device has %lld MiB less than before",
                  (long long)((int64_t)free0 - (int64_t)xt_mem_free(0)) / (long long)MIB);
    ck_assert(holds(a, 66 * MIB, 31));
    XT_OK(xdev_free(a));
    XT_OK(xdev_empty_cache());
    ck_assert_int_eq(xt_reserved(0), 0);
}
END_TEST

int main(int argc, char **argv) {
    *(void **)&g_real_mmap = dlsym(RTLD_NEXT, "mmap");
    Suite *su = suite_create("alloc_unmap_fault");
    TCase *tc = tcase_create("unmap_fault");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, shrink_second_unmap_fails);
    tcase_add_test(tc, sleep_second_call_of_a_piece_fails);
    tcase_add_test(tc, sleep_rollback_map_fails);
    tcase_add_test(tc, wake_rollback_unmap_fails);
    suite_add_tcase(su, tc);
    return xt_run(srunner_create(su), "alloc_unmap_fault", argc, argv);
}
