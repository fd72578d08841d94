/* SPDX-License-Identifier: Apache-2.0 */
/* test_handle_arena.c - the handle arenas (core/base/handle_arena.c,
 * compiled in white-box) that let every public call tell a live handle from
 * a foreign or destroyed one: a slot's start is a slot, and live until
 * freed; a pointer inside a slot, before the arena, past the slots handed
 * out, or NULL is not. Slot sizes of every shape the arenas use (64 times an
 * odd number, times a power of two): xdev_handle_is_slot tests "a multiple
 * of the slot size" with a multiply by the odd part's inverse, not a
 * division, and this checks that test against the division at every byte
 * offset of the first slots. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/handle_arena.h"
#include "xt_check_run.h"

#define MAGIC 0x54455354u /* "TEST" */

/* One arena per slot size; its reserved range stays mapped (arenas never
 * give address space back), its structures are freed at the end. */
static void check_size(size_t slot_size) {
    xdev_handle_arena_t *a = calloc(1, sizeof *a);
    ck_assert_ptr_nonnull(a);
    *a = (xdev_handle_arena_t)XDEV_HANDLE_ARENA_INIT("test", MAGIC, slot_size);
    ck_assert(!xdev_handle_is_slot(a, a)); /* nothing reserved yet */
    enum { N = 5 };
    char *h[N];
    for (int i = 0; i < N; i++) {
        h[i] = xdev_handle_alloc(a);
        ck_assert_ptr_nonnull(h[i]);
        ck_assert_msg(xdev_handle_is_live(a, h[i]), "slot %d of %zu-byte slots not live", i,
                      slot_size);
    }
    char *base = h[0];
    for (size_t off = 0; off < N * slot_size; off++) {
        bool want = off % slot_size == 0;
        ck_assert_msg(xdev_handle_is_slot(a, base + off) == want,
                      "offset %zu of %zu-byte slots: is_slot %d, expected %d", off, slot_size,
                      !want, want);
        ck_assert(xdev_handle_is_live(a, base + off) == want);
    }
    ck_assert(!xdev_handle_is_slot(a, base + N * slot_size)); /* never handed out */
    ck_assert(!xdev_handle_is_slot(a, base - slot_size));     /* before the arena */
    ck_assert(!xdev_handle_is_slot(a, NULL));
    int local = 0;
    ck_assert(!xdev_handle_is_live(a, &local)); /* foreign */
    xdev_handle_free(a, h[2]);
    ck_assert(xdev_handle_is_slot(a, h[2]));  /* destroyed: still a slot ... */
    ck_assert(!xdev_handle_is_live(a, h[2])); /* ... not live */
    ck_assert(xdev_handle_is_live(a, h[3]));
    free(a->free_fifo);
    free(a);
}

START_TEST(slot_starts_only_every_shape) {
    static const size_t sizes[] = {64, 128, 192, 320, 448, 576, 704, 960, 1088, 1216, 4096, 4160};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_size(sizes[i]);
}
END_TEST

int main(void) {
    Suite *s = suite_create("handle_arena");
    TCase *tc = tcase_create("slots");
    tcase_add_test(tc, slot_starts_only_every_shape);
    suite_add_tcase(s, tc);
    return xt_check_run(s);
}
