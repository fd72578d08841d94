/* SPDX-License-Identifier: Apache-2.0 */
/* test_abi.c - pins the backend ABI (include/xdev/backend.h).
 *
 * The tables come from one list (xdev/backend_slots.h); what is pinned here
 * is what a released ABI promised: each table's slots are only ever
 * appended. `tables_follow_the_list` walks the list: every slot sits right
 * after the previous one (no gap, no reordering), every `since` is a
 * released or the current minor and never smaller than the slot before it
 * (so a slot inserted in the middle, tagged with the new minor, fails), and
 * the number of slots each released minor had is the number pinned in
 * k_released (so a slot inserted in the middle with an old tag fails too).
 * Appending a slot: bump XDEV_BACKEND_ABI_MINOR, tag the slot with it; at
 * release add the new minor's counts to k_released. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xdev/backend.h"
#include "xt.h"

#define P sizeof(void *)
#define SLOT_AT(type, slot, k)                                                                     \
    ck_assert_msg(offsetof(type, slot) == (size_t)(k)*P, #type "." #slot " at %zu, pinned %zu",    \
                  offsetof(type, slot), (size_t)(k)*P)
#define SIZE_IS(type, n)                                                                           \
    ck_assert_msg(sizeof(type) == (size_t)(n), "sizeof(" #type ") = %zu, pinned %zu",              \
                  sizeof(type), (size_t)(n))

START_TEST(version_and_symbol) {
    ck_assert_uint_eq(XDEV_BACKEND_ABI_MAJOR, 3);
    ck_assert_uint_eq(XDEV_BACKEND_ABI_MINOR, 10); /* bump with every appended slot */
    ck_assert_str_eq(XDEV_BACKEND_ENTRY_SYMBOL, "xdev_backend_entry");
    ck_assert_uint_eq(sizeof(size_t), P); /* the pins below count in pointer units */
}
END_TEST

/* ---------------------------------------------------------- the slot list */

typedef struct slot_row {
    const char *table, *slot;
    size_t offset, table_size;
    unsigned since;
    bool required;
} slot_row_t;

#define ROW(table, slot, need, kind, since, p, a)                                                  \
    {#table,                                                                                       \
     #slot,                                                                                        \
     offsetof(xdev_##table##_vtable_t, slot),                                                      \
     sizeof(xdev_##table##_vtable_t),                                                              \
     since,                                                                                        \
     sizeof #need == sizeof "REQUIRED" && #need[0] == 'R'},
#define ROWS_OF(table, list) list(ROW)
static const slot_row_t k_rows[] = {XDEV_BACKEND_TABLES(ROWS_OF)};

/* The slots each released ABI 3 minor had, per table. */
typedef struct released {
    const char *table;
    unsigned minor;
    size_t slots;
} released_t;
static const released_t k_released[] = {
    {"device", 0, 8}, {"stream", 0, 7}, {"event", 0, 6}, {"memory", 0, 14}, {"blas", 0, 6},
    {"fft", 0, 3},    {"rng", 0, 1},    {"trace", 0, 3}, {"ipc", 0, 5},     {"ops", 0, 3},
    {"comm", 0, 9},   {"kernel", 1, 7}, {"prim", 5, 2},
};

START_TEST(tables_follow_the_list) {
    size_t n = sizeof k_rows / sizeof k_rows[0];
    for (size_t i = 0, k = 0; i < n; i++, k++) {
        const slot_row_t *r = &k_rows[i];
        bool first = i == 0 || strcmp(k_rows[i - 1].table, r->table) != 0;
        if (first) k = 0;
        ck_assert_msg(r->offset == sizeof(size_t) + k * P, "%s.%s at %zu, expected %zu (slot %zu)",
                      r->table, r->slot, r->offset, sizeof(size_t) + k * P, k);
        ck_assert_msg(r->since <= XDEV_BACKEND_ABI_MINOR, "%s.%s: since %u > the current minor %u",
                      r->table, r->slot, r->since, XDEV_BACKEND_ABI_MINOR);
        ck_assert_msg(first || r->since >= k_rows[i - 1].since,
                      "%s.%s (since %u) comes after %s (since %u): slots are appended", r->table,
                      r->slot, r->since, k_rows[i - 1].slot, k_rows[i - 1].since);
        bool last = i + 1 == n || strcmp(k_rows[i + 1].table, r->table) != 0;
        if (last)
            ck_assert_msg(r->table_size == sizeof(size_t) + (k + 1) * P,
                          "the %s table is %zu bytes for %zu slots", r->table, r->table_size,
                          k + 1);
    }
    for (size_t j = 0; j < sizeof k_released / sizeof k_released[0]; j++) {
        size_t count = 0;
        bool seen = false;
        for (size_t i = 0; i < n; i++)
            if (strcmp(k_rows[i].table, k_released[j].table) == 0) {
                seen = true;
                count += k_rows[i].since <= k_released[j].minor;
            }
        ck_assert_msg(seen, "table %s of ABI 3.%u is gone", k_released[j].table,
                      k_released[j].minor);
        ck_assert_msg(count == k_released[j].slots,
                      "ABI 3.%u's %s table had %zu slots; the list gives %zu with since <= %u",
                      k_released[j].minor, k_released[j].table, k_released[j].slots, count,
                      k_released[j].minor);
    }
}
END_TEST

/* The groups' slots (XDEV_SLOT_GROUPS), one row each; offsetof makes a
 * misspelt slot a compile error. */
typedef struct group_row {
    const char *table, *group, *slot;
} group_row_t;
#define GROUP_ROW(t, s) {#t, NULL, #s},
#define GROUP_ROWS(t, g, ...) {#t, #g, NULL}, XDEV_SLOT_EACH(GROUP_ROW, t, __VA_ARGS__)
static const group_row_t k_group_rows[] = {XDEV_SLOT_GROUPS(GROUP_ROWS)};
#define GROUP_OFFSET(t, s) (void)offsetof(xdev_##t##_vtable_t, s);
#define GROUP_OFFSETS(t, g, ...) XDEV_SLOT_EACH(GROUP_OFFSET, t, __VA_ARGS__)

/* A group is OPTIONAL slots of one table, appended by one minor (so a table
 * of an older minor has all or none of it), of two slots or more; a slot is
 * in one group at most. */
START_TEST(groups_are_whole) {
    XDEV_SLOT_GROUPS(GROUP_OFFSETS)
    size_t n = sizeof k_rows / sizeof k_rows[0], ng = sizeof k_group_rows / sizeof k_group_rows[0];
    const char *group = NULL;
    size_t members = 0;
    unsigned since = 0;
    for (size_t j = 0; j <= ng; j++) {
        const group_row_t *g = j < ng ? &k_group_rows[j] : NULL;
        if (g == NULL || g->group != NULL) { /* a group's header row, or the end */
            ck_assert_msg(group == NULL || members >= 2, "group %s has %zu slot", group, members);
            if (g == NULL) break;
            group = g->group;
            members = 0;
            continue;
        }
        const slot_row_t *r = NULL;
        for (size_t i = 0; i < n && r == NULL; i++)
            if (strcmp(k_rows[i].table, g->table) == 0 && strcmp(k_rows[i].slot, g->slot) == 0)
                r = &k_rows[i];
        ck_assert_msg(r != NULL, "group %s.%s: no slot %s", g->table, group, g->slot);
        ck_assert_msg(!r->required, "group %s.%s: %s is REQUIRED", g->table, group, g->slot);
        if (members++ == 0) since = r->since;
        ck_assert_msg(r->since == since, "group %s.%s: %s is since %u, the group's first since %u",
                      g->table, group, g->slot, r->since, since);
        for (size_t k = j + 1; k < ng; k++)
            ck_assert_msg(k_group_rows[k].group != NULL ||
                              strcmp(k_group_rows[k].table, g->table) != 0 ||
                              strcmp(k_group_rows[k].slot, g->slot) != 0,
                          "%s.%s is in two groups", g->table, g->slot);
    }
}
END_TEST

START_TEST(host_services_layout) {
    SLOT_AT(xdev_host_services_t, size, 0);
    ck_assert_uint_eq(offsetof(xdev_host_services_t, abi_major), P);
    ck_assert_uint_eq(offsetof(xdev_host_services_t, abi_minor), P + 4);
    SLOT_AT(xdev_host_services_t, set_error, 2);
    SLOT_AT(xdev_host_services_t, set_error_v, 3);
    SLOT_AT(xdev_host_services_t, set_vendor_error, 4);
    SLOT_AT(xdev_host_services_t, get_env, 5);
    SIZE_IS(xdev_host_services_t, 6 * P);
}
END_TEST

START_TEST(backend_api_layout) {
#if UINTPTR_MAX == 0xffffffffffffffffu
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, size), 0);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, abi_major), 8);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, abi_minor), 12);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, name), 16);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, type), 24);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, init), 32);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, at_exit), 40);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, device), 48);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, stream), 56);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, event), 64);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, memory), 72);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, blas), 80);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, fft), 88);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, rng), 96);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, trace), 104);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, ipc), 112);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, ops), 120);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, comm), 128);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, flags), 136);
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, kernel), 144); /* 3.1 */
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, graph), 152);  /* 3.2 */
    ck_assert_uint_eq(offsetof(xdev_backend_api_t, prim), 160);   /* 3.5 */
    SIZE_IS(xdev_backend_api_t, 168);
    /* 3.5: the primitives' descriptor */
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, op), 8);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, flags), 12);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, dtype), 16);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, in), 24);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, out), 32);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, count), 40);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, temp), 48);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, temp_bytes), 56);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, device), 64);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, stream), 72);
    /* 3.6: sort, segmented, histogram and select fields, appended */
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, values_in), 80);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, values_out), 88);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, value_size), 96);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, begin_bit), 104);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, end_bit), 108);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, offsets), 112);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, num_segments), 120);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, select_flags), 128);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, flag_size), 136);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, num_out), 144);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, num_bins), 152);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, lower), 160);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, upper), 168);
    /* 3.9: select_compare's comparison, appended */
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, compare_op), 176);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, compare_dtype), 180);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, compare_value), 184);
    ck_assert_uint_eq(offsetof(xdev_prim_desc_t, compare_ivalue), 192);
    SIZE_IS(xdev_prim_desc_t, 200);
    /* the prim table: ten slots after its size, select_compare (3.9) last */
    ck_assert_uint_eq(offsetof(xdev_prim_vtable_t, select_compare), 10 * P);
    SIZE_IS(xdev_prim_vtable_t, 11 * P);
    ck_assert_int_eq(XDEV_PRIM_CMP_LT, 0);
    ck_assert_int_eq(XDEV_PRIM_CMP_NE, 5);
    ck_assert_int_eq(XDEV_PRIM_DESCENDING, 2);
    /* dtypes are values on the wire of every slot: appended only */
    ck_assert_int_eq(XDEV_DTYPE_U8, 10);
    ck_assert_int_eq(XDEV_DTYPE_U16, 11);
    ck_assert_int_eq(XDEV_DTYPE_U32, 12);
    ck_assert_int_eq(XDEV_DTYPE_U64, 13);
    ck_assert_int_eq(XDEV_DTYPE_COUNT, 14);
    ck_assert_int_eq(XDEV_PRIM_CHUNK, 4096); /* the deterministic order's constants */
    ck_assert_int_eq(XDEV_PRIM_LANES, 32);
    ck_assert_int_eq(XDEV_PRIM_ARGMAX, 5);
    /* 3.2: a capture's Philox state, appended to the fill descriptor */
    ck_assert_uint_eq(offsetof(xdev_rng_fill_desc_t, philox_state), 104);
    /* 3.1: the kernel table's launch descriptor and the host kernel ABI */
    ck_assert_uint_eq(offsetof(xdev_launch_desc_t, function), 8);
    ck_assert_uint_eq(offsetof(xdev_launch_desc_t, grid), 16);
    ck_assert_uint_eq(offsetof(xdev_launch_desc_t, shared_bytes), 40);
    ck_assert_uint_eq(offsetof(xdev_launch_desc_t, nargs), 48);
    ck_assert_uint_eq(offsetof(xdev_launch_desc_t, args), 56);
    ck_assert_uint_eq(offsetof(xdev_launch_desc_t, arg_sizes), 64);
    ck_assert_uint_eq(offsetof(xdev_launch_desc_t, name), 72);
    SIZE_IS(xdev_launch_desc_t, 80);
    ck_assert_uint_eq(offsetof(xdev_kctx_t, shared), 40);
    ck_assert_uint_eq(offsetof(xdev_kctx_t, barrier), 72);
    ck_assert_uint_eq(offsetof(xdev_kctx_t, fault), 80);
    SIZE_IS(xdev_kctx_t, 96);
    ck_assert_uint_eq(offsetof(xdev_kernel_sig_t, nparams), 24);
    ck_assert_uint_eq(offsetof(xdev_kernel_sig_t, param_kinds), 40);
    ck_assert_uint_eq(offsetof(xdev_kernel_sig_t, param_names), 48);
    SIZE_IS(xdev_kernel_sig_t, 56);
    ck_assert_int_eq(XDEV_COMM_NATIVE_ID_BYTES, 128);
    ck_assert_uint_eq(offsetof(xdev_collective_desc_t, kind), 8);
    ck_assert_uint_eq(offsetof(xdev_collective_desc_t, send), 16);
    ck_assert_uint_eq(offsetof(xdev_collective_desc_t, recv), 24);
    ck_assert_uint_eq(offsetof(xdev_collective_desc_t, count), 32);
    ck_assert_uint_eq(offsetof(xdev_collective_desc_t, dtype), 40);
    ck_assert_uint_eq(offsetof(xdev_collective_desc_t, op), 44);
    ck_assert_uint_eq(offsetof(xdev_collective_desc_t, root), 48);
    SIZE_IS(xdev_collective_desc_t, 56);
    ck_assert_int_eq(XDEV_COLL_RECV, 6);
    /* 2.1: typed fills and conversions. */
    SIZE_IS(xdev_ops_vtable_t, 4 * P);
    SLOT_AT(xdev_ops_vtable_t, size, 0);
    SLOT_AT(xdev_ops_vtable_t, fill, 1);
    SLOT_AT(xdev_ops_vtable_t, convert, 2);
    SLOT_AT(xdev_ops_vtable_t, add, 3); /* 2.2 */
    /* The factory an application registers (xdev_backend_register). */
    ck_assert_uint_eq(offsetof(xdev_backend_factory_t, name), 8);
    ck_assert_uint_eq(offsetof(xdev_backend_factory_t, type), 16);
    ck_assert_uint_eq(offsetof(xdev_backend_factory_t, entry), 24);
    ck_assert_uint_eq(offsetof(xdev_backend_factory_t, flags), 32);
    ck_assert_uint_eq(offsetof(xdev_backend_factory_t, auto_order), 36);
    SIZE_IS(xdev_backend_factory_t, 40);
#else
    printf("SKIP backend_api_layout: pins are for LP64 targets\n");
#endif
}
END_TEST

START_TEST(copy_desc_layout) {
#if UINTPTR_MAX == 0xffffffffffffffffu
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, size), 0);
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, dst), 8);
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, src), 16);
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, bytes), 24);
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, kind), 32);
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, dst_device), 40); /* 2.0: contexts */
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, src_device), 48);
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, dst_pinned), 56);
    ck_assert_uint_eq(offsetof(xdev_copy_desc_t, src_pinned), 57);
    SIZE_IS(xdev_copy_desc_t, 64);
#else
    printf("SKIP copy_desc_layout: pins are for LP64 targets\n");
#endif
    ck_assert_int_eq(XDEV_COPY_HOST_TO_HOST, 0);
    ck_assert_int_eq(XDEV_COPY_HOST_TO_DEVICE, 1);
    ck_assert_int_eq(XDEV_COPY_DEVICE_TO_HOST, 2);
    ck_assert_int_eq(XDEV_COPY_DEVICE_TO_DEVICE, 3);
    ck_assert_int_eq(XDEV_COPY_PEER, 4);
}
END_TEST

START_TEST(shared_public_types_layout) {
    /* Structs and values a backend fills or receives are part of the ABI too. */
    SIZE_IS(xdev_device_t, 8);
    ck_assert_uint_eq(offsetof(xdev_device_properties_t, name), 0);
    ck_assert_uint_eq(offsetof(xdev_device_properties_t, capability_major), 256);
    ck_assert_uint_eq(offsetof(xdev_device_properties_t, capability_minor), 260);
#if UINTPTR_MAX == 0xffffffffffffffffu
    ck_assert_uint_eq(offsetof(xdev_device_properties_t, total_memory), 264);
    ck_assert_uint_eq(offsetof(xdev_device_properties_t, multiprocessor_count), 272);
    ck_assert_uint_eq(offsetof(xdev_device_properties_t, physical_index), 276);
    ck_assert_uint_eq(offsetof(xdev_device_properties_t, integrated), 280);
    SIZE_IS(xdev_device_properties_t, 288);
    /* torch 2.x's properties (ABI 3.8): a struct of its own, size first */
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, size), 0);
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, uuid), P);
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, pci_bus_id), P + 96);
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, l2_cache_size), P + 128);
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, is_mig), 2 * P + 128);
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, bf16_supported), 2 * P + 129);
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, tf32_supported), 2 * P + 130);
    ck_assert_uint_eq(offsetof(xdev_device_properties_ext_t, arch), 2 * P + 131);
    SIZE_IS(xdev_device_properties_ext_t, 184);
#endif
    ck_assert_int_eq(XDEV_DEVICE_CPU, 0);
    ck_assert_int_eq(XDEV_DEVICE_CUDA, 1);
    ck_assert_int_eq(XDEV_DEVICE_HIP, 2);
    ck_assert_int_eq(XDEV_STREAM_PRIORITY_NORMAL, 0);
    ck_assert_int_eq(XDEV_STREAM_PRIORITY_HIGH, -1);
    ck_assert_int_eq(XDEV_ERROR_NOT_READY, 6);
    ck_assert_int_eq(XDEV_ERROR_INTERNAL, 11);
    ck_assert_int_eq(XDEV_ERROR_IO, 12);
    ck_assert_int_eq(XDEV_ERROR_NOT_FOUND, 13);
    ck_assert_int_eq(XDEV_ERROR_LAUNCH_FAILURE, 14);
    ck_assert_int_eq(XDEV_ERROR_COMPILE, 15);
    ck_assert_int_eq(XDEV_ERROR_CAPTURE, 16);
}
END_TEST

static xdev_status_t dummy_info(xdev_backend_device_t *device, size_t *f, size_t *t) {
    return XDEV_SUCCESS;
}
static xdev_status_t dummy_memset(xdev_backend_device_t *device, void *dst, int v, size_t n,
                                  void *s) {
    return XDEV_SUCCESS;
}

START_TEST(slot_macro_respects_size) {
    xdev_memory_vtable_t t;
    memset(&t, 0, sizeof t);
    t.memset_async = dummy_memset;
    t.mem_get_info = dummy_info;
    t.malloc_async = NULL;

    t.size = sizeof t;
    ck_assert(XDEV_BACKEND_HAS_SLOT(&t, mem_get_info));
    ck_assert_ptr_eq(XDEV_BACKEND_SLOT(&t, mem_get_info), dummy_info);
    ck_assert_ptr_eq(XDEV_BACKEND_SLOT(&t, memset_async), dummy_memset);
    ck_assert_ptr_null(XDEV_BACKEND_SLOT(&t, malloc)); /* in range but unset */

    /* An older minor without the last slot. */
    t.size = offsetof(xdev_memory_vtable_t, mem_get_info);
    ck_assert(!XDEV_BACKEND_HAS_SLOT(&t, mem_get_info));
    ck_assert_ptr_null(XDEV_BACKEND_SLOT(&t, mem_get_info));
    ck_assert_ptr_eq(XDEV_BACKEND_SLOT(&t, memset_async), dummy_memset);

    /* One byte short of the slot's end. */
    t.size = offsetof(xdev_memory_vtable_t, mem_get_info) + sizeof t.mem_get_info - 1;
    ck_assert_ptr_null(XDEV_BACKEND_SLOT(&t, mem_get_info));

    t.size = 0;
    ck_assert_ptr_null(XDEV_BACKEND_SLOT(&t, memset_async));

    const xdev_memory_vtable_t *none = NULL;
    ck_assert(!XDEV_BACKEND_HAS_SLOT(none, malloc));
    ck_assert_ptr_null(XDEV_BACKEND_SLOT(none, malloc));

    /* A prim table of a backend built before 3.9 ends at run_length_encode:
     * no select_compare (select_if then compiles its predicate). */
    xdev_prim_vtable_t p;
    memset(&p, 0xff, sizeof p); /* what lies past a short table is not read */
    p.size = offsetof(xdev_prim_vtable_t, select_compare);
    ck_assert(XDEV_BACKEND_HAS_SLOT(&p, run_length_encode));
    ck_assert(!XDEV_BACKEND_HAS_SLOT(&p, select_compare));
    ck_assert_ptr_null(XDEV_BACKEND_SLOT(&p, select_compare));

    /* Works on the API struct too (optional tables at its end). */
    xdev_backend_api_t api;
    memset(&api, 0, sizeof api);
    api.ipc = (const struct xdev_ipc_vtable *)&t;
    api.size = sizeof api;
    ck_assert_ptr_eq(XDEV_BACKEND_SLOT(&api, ipc), (const void *)&t);
    api.size = offsetof(xdev_backend_api_t, ipc);
    ck_assert_ptr_null(XDEV_BACKEND_SLOT(&api, ipc));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("abi");
    TCase *tc = tcase_create("abi");
    tcase_add_test(tc, version_and_symbol);
    tcase_add_test(tc, tables_follow_the_list);
    tcase_add_test(tc, groups_are_whole);
    tcase_add_test(tc, host_services_layout);
    tcase_add_test(tc, backend_api_layout);
    tcase_add_test(tc, copy_desc_layout);
    tcase_add_test(tc, shared_public_types_layout);
    tcase_add_test(tc, slot_macro_respects_size);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "abi", argc, argv);
}
