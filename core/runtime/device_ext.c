/* SPDX-License-Identifier: Apache-2.0 */
/* device_ext.c - what torch 2.x's torch.cuda adds about a device: the
 * extended properties (UUID, PCI bus id, L2, MIG, bf16/tf32, arch), the
 * telemetry readings, the arch list and gencode flags. Each goes through an
 * optional device slot of ABI 3.9 (xdev/backend_slots.h); a backend without
 * it is XDEV_ERROR_NOT_SUPPORTED naming the backend and the slot. */
#include <stdio.h>
#include <string.h>

#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/registry.h"
#include "xdev/system.h"

xdev_status_t xdev_core_props_ext(xdev_device_record_t *rec, xdev_device_properties_ext_t *out) {
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    if (!XDEV_HAS(rec->be, device, get_properties_ext))
        return xdev_backend_not_supported(rec->be, "device.get_properties_ext (UUID, PCI bus id, "
                                                   "L2 size, MIG, bf16/tf32)");
    xdev_status_t st = xdev_be_device_get_properties_ext(rec, out);
    out->size = sizeof *out;
    return st;
}

xdev_status_t xdev_get_device_properties_ext(xdev_device_t device,
                                             xdev_device_properties_ext_t *ext) {
    XDEV_REQUIRE_ARG(ext);
    const size_t first = offsetof(xdev_device_properties_ext_t, uuid);
    if (ext->size < first + 1)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "ext->size is %zu: set it to sizeof(xdev_device_properties_ext_t) "
                             "(%zu in this xdev)",
                             ext->size, sizeof *ext);
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_device_properties_ext_t full;
    XDEV_CHECK(xdev_core_props_ext(rec, &full));
    size_t n = ext->size < sizeof full ? ext->size : sizeof full;
    memcpy((char *)ext + sizeof ext->size, (char *)&full + sizeof full.size,
           n - sizeof ext->size); /* a longer struct (a newer caller) keeps its tail */
    return XDEV_SUCCESS;
}

const char *xdev_telemetry_name(xdev_telemetry_t what) {
    static const char *const names[XDEV_TELEMETRY_COUNT] = {"temperature", "power_draw",
                                                            "clock_rate", "memory_used", "load"};
    return (unsigned)what < XDEV_TELEMETRY_COUNT ? names[what] : NULL;
}

/* One reading, unprefixed: each public call below names itself. */
static xdev_status_t reading(xdev_device_t device, xdev_telemetry_t what, uint64_t *value) {
    if (value == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'value' is NULL");
    if ((unsigned)what >= XDEV_TELEMETRY_COUNT)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "telemetry kind %d is not an xdev_telemetry_t (0..%d)", (int)what,
                         XDEV_TELEMETRY_COUNT - 1);
    xdev_device_record_t *rec;
    xdev_status_t st = xdev_device_lookup(device, &rec);
    if (st != XDEV_SUCCESS) return st;
    if (!XDEV_HAS(rec->be, device, telemetry))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the %s backend cannot report %s (it does not implement "
                         "device.telemetry)",
                         rec->be->name, xdev_telemetry_name(what));
    return xdev_be_device_telemetry(rec, what, value);
}

xdev_status_t xdev_device_telemetry(xdev_device_t device, xdev_telemetry_t what, uint64_t *value) {
    XDEV_CHECK(reading(device, what, value));
    return XDEV_SUCCESS;
}

/* A reading that must fit an unsigned (degrees, milliwatts, MHz). */
static xdev_status_t reading_u(xdev_device_t device, xdev_telemetry_t what, unsigned *out) {
    if (out == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the output argument is NULL");
    uint64_t v = 0;
    xdev_status_t st = reading(device, what, &v);
    if (st != XDEV_SUCCESS) return st;
    if (v > UINT32_MAX)
        return XDEV_FAIL(XDEV_ERROR_INTERNAL, "%s reading %llu does not fit",
                         xdev_telemetry_name(what), (unsigned long long)v);
    *out = (unsigned)v;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_temperature(xdev_device_t device, unsigned *celsius) {
    XDEV_CHECK(reading_u(device, XDEV_TELEMETRY_TEMPERATURE, celsius));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_power_draw(xdev_device_t device, unsigned *milliwatts) {
    XDEV_CHECK(reading_u(device, XDEV_TELEMETRY_POWER_DRAW, milliwatts));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_clock_rate(xdev_device_t device, unsigned *mhz) {
    XDEV_CHECK(reading_u(device, XDEV_TELEMETRY_CLOCK_RATE, mhz));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_device_memory_used(xdev_device_t device, uint64_t *bytes) {
    XDEV_CHECK(reading(device, XDEV_TELEMETRY_MEMORY_USED, bytes));
    return XDEV_SUCCESS;
}

/* The backend's arch list into buf (XDEV_ERROR_INVALID_VALUE when it does
 * not fit, naming the size needed). */
static xdev_status_t arch_list(xdev_device_type_t type, char *text, size_t cap) {
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(xdev_core_check_type(type));
    xdev_backend_t *be;
    XDEV_CHECK(xdev_backend_acquire(type, &be));
    if (!XDEV_HAS(be, device, arch_list))
        return xdev_backend_not_supported(be, "device.arch_list (the targets it was built for)");
    text[0] = '\0';
    return xdev_be_device_arch_list(be, text, cap);
}

static xdev_status_t give(const char *text, char *buf, size_t len) {
    size_t need = strlen(text) + 1;
    if (need > len) {
        snprintf(buf, len, "%s", text);
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the buffer of %zu bytes is too small: %zu needed", len, need);
    }
    memcpy(buf, text, need);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_get_arch_list(xdev_device_type_t type, char *buf, size_t len) {
    XDEV_REQUIRE_ARG(buf);
    if (len == 0) return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "len is 0");
    buf[0] = '\0';
    char text[1024];
    XDEV_CHECK(arch_list(type, text, sizeof text));
    XDEV_CHECK(give(text, buf, len));
    return XDEV_SUCCESS;
}

/* torch's rule: sm_XY -> "-gencode compute=compute_XY,code=sm_XY", compute_XY
 * -> "... code=compute_XY"; targets of other vendors give nothing. */
xdev_status_t xdev_get_gencode_flags(xdev_device_type_t type, char *buf, size_t len) {
    XDEV_REQUIRE_ARG(buf);
    if (len == 0) return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "len is 0");
    buf[0] = '\0';
    char text[1024], flags[4096] = "";
    XDEV_CHECK(arch_list(type, text, sizeof text));
    size_t used = 0;
    for (char *save = NULL, *tok = strtok_r(text, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save)) {
        const char *num = strncmp(tok, "sm_", 3) == 0        ? tok + 3
                          : strncmp(tok, "compute_", 8) == 0 ? tok + 8
                                                             : NULL;
        if (num == NULL || *num == '\0') continue;
        int n = snprintf(flags + used, sizeof flags - used, "%s-gencode compute=compute_%s,code=%s",
                         used ? " " : "", num, tok);
        if (n < 0 || (size_t)n >= sizeof flags - used) break;
        used += (size_t)n;
    }
    XDEV_CHECK(give(flags, buf, len));
    return XDEV_SUCCESS;
}

static xdev_status_t ext_flag(xdev_device_t device, bool *out, bool want_tf32) {
    xdev_device_record_t *rec;
    xdev_status_t st = xdev_device_lookup(device, &rec);
    if (st != XDEV_SUCCESS) return st;
    xdev_device_properties_ext_t e;
    st = xdev_core_props_ext(rec, &e);
    if (st == XDEV_SUCCESS) *out = want_tf32 ? e.tf32_supported : e.bf16_supported;
    return st;
}

xdev_status_t xdev_is_bf16_supported(xdev_device_t device, bool *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(ext_flag(device, out, false));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_is_tf32_supported(xdev_device_t device, bool *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(ext_flag(device, out, true));
    return XDEV_SUCCESS;
}
