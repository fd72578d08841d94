/* SPDX-License-Identifier: Apache-2.0 */
/* test_device_ext.c - what torch 2.x's torch.cuda adds about a device:
 * the extended properties (UUID, PCI bus id, L2, MIG, bf16/tf32, arch), the
 * telemetry readings, the arch list and gencode flags. Bad input to every
 * call, and values in range: a reading is a plausible number or
 * XDEV_ERROR_NOT_SUPPORTED with a reason, never anything else.
 * Conformance: XDEV_BACKEND=<backend under test> (cpu: XDEV_CPU_DEVICES=2). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

/* "<PFX>-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (hex), ROCm's "GPU-" and 16
 * hex digits, or a MIG instance's own form. */
static bool uuid_form(const char *u) {
    if (strncmp(u, "MIG-", 4) == 0) return strlen(u) > 4;
    if (strncmp(u, "GPU-", 4) != 0 && strncmp(u, "CPU-", 4) != 0) return false;
    const char *h = u + 4;
    if (xt_type() == XDEV_DEVICE_HIP && strlen(h) == 16 &&
        strspn(h, "0123456789abcdefABCDEF") == 16)
        return true;
    if (strlen(h) != 36) return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? h[i] != '-' : !isxdigit((unsigned char)h[i])) return false;
    }
    return true;
}

START_TEST(properties_ext_bad_input) {
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_device_properties_ext(xt_dev(0), NULL), "ext");
    xdev_device_properties_ext_t e = {.size = 0};
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_device_properties_ext(xt_dev(0), &e), "size");
    e.size = sizeof e;
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_get_device_properties_ext(xt_dev(xt_device_count()), &e),
           "");
    XT_ERR(XT_BAD_TYPE,
           xdev_get_device_properties_ext((xdev_device_t){(xdev_device_type_t)7, 0}, &e), "");
    bool b;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_is_bf16_supported(xt_dev(0), NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_is_tf32_supported(xt_dev(0), NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_is_bf16_supported(xt_dev(xt_device_count()), &b), "");
}
END_TEST

START_TEST(properties_ext_values) {
    int n = xt_device_count();
    char seen[8][XDEV_UUID_MAX];
    for (int i = 0; i < n && i < 8; i++) {
        xdev_device_properties_ext_t e = {.size = sizeof e};
        XT_OK(xdev_get_device_properties_ext(xt_dev(i), &e));
        ck_assert_uint_eq(e.size, sizeof e);
        ck_assert_msg(uuid_form(e.uuid), "%s uuid '%s'", xt_name(i), e.uuid);
        if (xt_type() == XDEV_DEVICE_CPU) {
            ck_assert_msg(strncmp(e.uuid, "CPU-", 4) == 0, "cpu uuid '%s'", e.uuid);
            ck_assert_str_eq(e.pci_bus_id, "");
            ck_assert(!e.is_mig);
            ck_assert(!e.tf32_supported);
        } else {
            ck_assert_msg(strlen(e.pci_bus_id) >= 7 && e.pci_bus_id[4] == ':', "pci bus id '%s'",
                          e.pci_bus_id);
            ck_assert_msg(strncmp(e.uuid, e.is_mig ? "MIG-" : "GPU-", 4) == 0, "uuid '%s' mig %d",
                          e.uuid, e.is_mig);
        }
        ck_assert_msg(e.l2_cache_size < ((size_t)1 << 32), "L2 %zu", e.l2_cache_size);
        ck_assert_msg(e.arch[0] != '\0', "no arch");
        /* stable: the same on a second call; distinct between devices */
        xdev_device_properties_ext_t again = {.size = sizeof again};
        XT_OK(xdev_get_device_properties_ext(xt_dev(i), &again));
        ck_assert_str_eq(again.uuid, e.uuid);
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(seen[j], e.uuid) != 0, "%s and %s share uuid %s", xt_name(j),
                          xt_name(i), e.uuid);
        snprintf(seen[i], sizeof seen[i], "%s", e.uuid);
        bool b16, t32;
        XT_OK(xdev_is_bf16_supported(xt_dev(i), &b16));
        XT_OK(xdev_is_tf32_supported(xt_dev(i), &t32));
        ck_assert_int_eq(b16, e.bf16_supported);
        ck_assert_int_eq(t32, e.tf32_supported);
    }
}
END_TEST

/* A caller built against an older, shorter struct gets only what fits:
 * the bytes past its size are left alone. */
START_TEST(properties_ext_short_struct) {
    unsigned char buf[sizeof(xdev_device_properties_ext_t) + 16];
    memset(buf, 0xa5, sizeof buf);
    xdev_device_properties_ext_t *e = (xdev_device_properties_ext_t *)(void *)buf;
    size_t shorter = offsetof(xdev_device_properties_ext_t, pci_bus_id);
    e->size = shorter;
    XT_OK(xdev_get_device_properties_ext(xt_dev(0), e));
    ck_assert_msg(uuid_form(e->uuid), "uuid '%s'", e->uuid);
    for (size_t i = shorter; i < sizeof buf; i++)
        ck_assert_msg(buf[i] == 0xa5, "byte %zu past the caller's size was written", i);
}
END_TEST

/* ---------------------------------------------------------------- telemetry */

START_TEST(telemetry_bad_input) {
    uint64_t v;
    unsigned u;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_telemetry(xt_dev(0), XDEV_TELEMETRY_LOAD, NULL),
           "value");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_device_telemetry(xt_dev(0), (xdev_telemetry_t)XDEV_TELEMETRY_COUNT, &v), "5");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_telemetry(xt_dev(0), (xdev_telemetry_t)-1, &v),
           "-1");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE,
           xdev_device_telemetry(xt_dev(xt_device_count()), XDEV_TELEMETRY_LOAD, &v), "");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_temperature(xt_dev(0), NULL), "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_power_draw(xt_dev(0), NULL), "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_clock_rate(xt_dev(0), NULL), "NULL");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_device_memory_used(xt_dev(0), NULL), "value");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_device_clock_rate(xt_dev(xt_device_count()), &u), "");
    ck_assert_ptr_null(xdev_telemetry_name((xdev_telemetry_t)XDEV_TELEMETRY_COUNT));
    ck_assert_str_eq(xdev_telemetry_name(XDEV_TELEMETRY_TEMPERATURE), "temperature");
}
END_TEST

/* Each reading: in range, or NOT_SUPPORTED with a reason of some length. */
START_TEST(telemetry_values_in_range) {
    static const uint64_t hi[XDEV_TELEMETRY_COUNT] = {
        150,               /* degrees C */
        5000000,           /* mW: 5 kW */
        10000,             /* MHz */
        (uint64_t)1 << 50, /* bytes */
        100,               /* percent */
    };
    for (int k = 0; k < XDEV_TELEMETRY_COUNT; k++) {
        uint64_t v = UINT64_MAX;
        xdev_status_t st = xdev_device_telemetry(xt_dev(0), (xdev_telemetry_t)k, &v);
        const char *name = xdev_telemetry_name((xdev_telemetry_t)k);
        if (st == XDEV_ERROR_NOT_SUPPORTED) {
            ck_assert_msg(strlen(xdev_last_error()) > 30, "%s: no reason: '%s'", name,
                          xdev_last_error());
            printf("%s %s: not supported: %s\n", xt_name(0), name, xdev_last_error());
            if (xt_type() == XDEV_DEVICE_CPU)
                ck_assert_msg(k != XDEV_TELEMETRY_LOAD && k != XDEV_TELEMETRY_MEMORY_USED,
                              "the CPU always reads %s (/proc)", name);
            continue;
        }
        ck_assert_msg(st == XDEV_SUCCESS, "%s: %s: %s", name, xdev_status_string(st),
                      xdev_last_error());
        ck_assert_msg(v <= hi[k], "%s = %llu out of range", name, (unsigned long long)v);
        if (k == XDEV_TELEMETRY_MEMORY_USED || k == XDEV_TELEMETRY_CLOCK_RATE ||
            k == XDEV_TELEMETRY_TEMPERATURE)
            ck_assert_msg(v > 0, "%s = 0", name);
        printf("%s %s = %llu\n", xt_name(0), name, (unsigned long long)v);
    }
    /* the CPU's power is not read: never a number */
    if (xt_type() == XDEV_DEVICE_CPU) {
        unsigned mw;
        XT_ERR(XDEV_ERROR_NOT_SUPPORTED, xdev_device_power_draw(xt_dev(0), &mw), "power");
    }
    /* the torch names give the same kinds */
    uint64_t used = 0;
    if (xdev_device_memory_used(xt_dev(0), &used) == XDEV_SUCCESS) ck_assert_uint_gt(used, 0);
}
END_TEST

/* ---------------------------------------------------------------- arch list */

START_TEST(arch_list_and_gencode) {
    char buf[1024], small[2];
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_arch_list(xt_type(), NULL, 8), "buf");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_arch_list(xt_type(), buf, 0), "len");
    XT_ERR(XT_BAD_TYPE, xdev_get_arch_list((xdev_device_type_t)7, buf, sizeof buf), "");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_gencode_flags(xt_type(), NULL, 8), "buf");
    XT_OK(xdev_get_arch_list(xt_type(), buf, sizeof buf));
    ck_assert_msg(buf[0] != '\0', "empty arch list");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_get_arch_list(xt_type(), small, sizeof small),
           "too small");
    char flags[4096];
    XT_OK(xdev_get_gencode_flags(xt_type(), flags, sizeof flags));
    printf("%s: arch list '%s', gencode flags '%s'\n", xt_type_name(), buf, flags);
    if (xt_type() == XDEV_DEVICE_CUDA) {
        ck_assert_msg(strstr(buf, "sm_") != NULL, "cuda arch list '%s'", buf);
        ck_assert_msg(strncmp(flags, "-gencode compute=compute_", 25) == 0, "flags '%s'", flags);
    } else if (xt_type() == XDEV_DEVICE_CPU) {
        ck_assert_str_eq(flags, ""); /* no CUDA targets */
        xdev_device_properties_ext_t e = {.size = sizeof e};
        XT_OK(xdev_get_device_properties_ext(xt_dev(0), &e));
        ck_assert_str_eq(buf, e.arch); /* the machine */
    }
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("device_ext");
    TCase *tc = tcase_create("device_ext");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, properties_ext_bad_input);
    tcase_add_test(tc, properties_ext_values);
    tcase_add_test(tc, properties_ext_short_struct);
    tcase_add_test(tc, telemetry_bad_input);
    tcase_add_test(tc, telemetry_values_in_range);
    tcase_add_test(tc, arch_list_and_gencode);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "device_ext", argc, argv);
}
