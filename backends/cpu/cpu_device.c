/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_device.c - the device vtable: counts, properties, device-wide sync, peers.
 *
 * Every CPU device is the same host: properties name the host CPU, report
 * the configured capacity as its memory and the online cores as its
 * "multiprocessors". All devices share host memory, so any two are peers. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpu/cpu_internal.h"

void xdev_cpu_read_model_name(char *buf, size_t len) {
    snprintf(buf, len, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *colon = strchr(line, ':');
        if (colon == NULL) continue;
        char *model = colon + 1;
        while (isspace((unsigned char)*model))
            model++;
        size_t n = strlen(model);
        while (n > 0 && isspace((unsigned char)model[n - 1]))
            model[--n] = '\0';
        if (n > 0) snprintf(buf, len, "CPU (%s)", model);
        break;
    }
    fclose(f);
}

int xdev_cpu_online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 1 << 20 ? (int)n : 1;
}

static xdev_status_t device_count(int *count) {
    *count = xdev_cpu_state.initialized ? xdev_cpu_state.count : 0;
    return XDEV_SUCCESS;
}

/* The device's context is its entry in the device table (init made it). */
static xdev_status_t device_open(int index, xdev_backend_device_t **out) {
    if (!xdev_cpu_state.initialized || index < 0 || index >= xdev_cpu_state.count)
        return xdev_cpu_error(XDEV_ERROR_INVALID_DEVICE, "cpu:%d no such device (%d cpu devices)",
                              index, xdev_cpu_state.count);
    *out = &xdev_cpu_state.devices[index];
    return XDEV_SUCCESS;
}

static xdev_status_t device_get_properties(xdev_cpu_device_t *dev,
                                           xdev_device_properties_t *props) {
    int device = dev->index;
    memset(props, 0, sizeof *props);
    snprintf(props->name, sizeof props->name, "%s", xdev_cpu_state.name);
    props->capability_major = 0;
    props->capability_minor = 0;
    props->total_memory = xdev_cpu_state.capacity;
    props->multiprocessor_count = xdev_cpu_state.cores;
    props->physical_index = device;
    props->integrated = true;
    return XDEV_SUCCESS;
}

static xdev_status_t device_synchronize(xdev_cpu_device_t *dev) {
    xdev_cpu_device_t *d = dev;
    return xdev_cpu_device_sync_streams(d);
}

static xdev_status_t device_can_access_peer(xdev_cpu_device_t *dev, xdev_cpu_device_t *peer,
                                            bool *out) {
    (void)dev;
    (void)peer;
    *out = true;
    return XDEV_SUCCESS;
}

static xdev_status_t device_enable_peer_access(xdev_cpu_device_t *dev, xdev_cpu_device_t *peer) {
    (void)dev;
    (void)peer;
    return XDEV_SUCCESS;
}

const xdev_device_vtable_t xdev_cpu_device_vtable = {
    .size = sizeof(xdev_device_vtable_t),
    .count = device_count,
    .open = device_open,
    .get_properties = device_get_properties,
    .synchronize = device_synchronize,
    .can_access_peer = device_can_access_peer,
    .enable_peer_access = device_enable_peer_access,
    .get_properties_ext = xdev_cpu_get_properties_ext,
    .telemetry = xdev_cpu_telemetry,
    .arch_list = xdev_cpu_arch_list,
};
