/* SPDX-License-Identifier: Apache-2.0 */
/* examples/device_agnostic.c - the device-agnostic pattern in C.
 *
 * The PyTorch idiom
 *     args.device = 'cuda' if not args.disable_gpu and torch.cuda.is_available() else 'cpu'
 * becomes: a --disable-gpu flag plus xdev_is_available() pick the device; the rest
 * of the program is the same on every backend. It allocates device memory,
 * copies host data in on a stream it created, copies it back to pinned host
 * memory, runs host work on the stream (scale and sum), copies the scaled data
 * to the device again, times the whole sequence with timing events, then
 * verifies the result and prints where everything lived.
 *
 *   device_agnostic [--disable-gpu] [--n COUNT]
 *
 * Exits non-zero with xdev's message on any failure. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev/xdev.h"

/* Run an xdev call; on failure print what failed and why, and leave through `fail`. */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        xdev_status_t check_status_ = (call);                                                      \
        if (check_status_ != XDEV_SUCCESS) {                                                       \
            fprintf(stderr, "device_agnostic: %s:%d: %s failed: %s: %s\n", __FILE__, __LINE__,     \
                    #call, xdev_status_string(check_status_), xdev_last_error());                  \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* What the host function works on: the pinned copy of the data. */
typedef struct host_work {
    float *data;
    size_t count;
    float scale;
    double sum; /* of the scaled values; read after the stream is synchronized */
} host_work_t;

/* Runs on the host when the stream reaches it, after the device-to-host copy. */
static void scale_and_sum(void *user) {
    host_work_t *w = user;
    double sum = 0.0;
    for (size_t i = 0; i < w->count; ++i) {
        w->data[i] *= w->scale;
        sum += w->data[i];
    }
    w->sum = sum;
}

static const char *kind_name(xdev_memory_kind_t kind) {
    switch (kind) {
    case XDEV_MEMORY_HOST:
        return "pageable host";
    case XDEV_MEMORY_DEVICE:
        return "device";
    case XDEV_MEMORY_PINNED_HOST:
        return "page-locked host";
    case XDEV_MEMORY_MANAGED:
        return "managed";
    }
    return "?";
}

/* Print what xdev knows about a pointer: its kind and, for device memory, its device. */
static xdev_status_t describe(const char *label, const void *ptr) {
    xdev_pointer_info_t info;
    xdev_status_t st = xdev_pointer_get_info(ptr, &info);
    if (st != XDEV_SUCCESS) return st;
    char where[XDEV_DEVICE_NAME_MAX] = "";
    if (info.kind == XDEV_MEMORY_DEVICE) {
        xdev_device_t owner;
        st = xdev_device_of(ptr, &owner);
        if (st != XDEV_SUCCESS) return st;
        st = xdev_device_format(owner, where, sizeof where);
        if (st != XDEV_SUCCESS) return st;
    }
    const char *sep = "";
    if (info.kind == XDEV_MEMORY_DEVICE) {
        sep = " on ";
    } else if (info.kind == XDEV_MEMORY_PINNED_HOST) {
        const char *by = xdev_device_type_name(info.device.type);
        snprintf(where, sizeof where, "%s backend", by != NULL ? by : "?");
        sep = ", pinned by the ";
    }
    printf("  %-12s %p  %s%s%s\n", label, ptr, kind_name(info.kind), sep, where);
    return XDEV_SUCCESS;
}

/* Report a failed release; returns 1 on failure, 0 otherwise. */
static int release(const char *what, xdev_status_t st) {
    if (st == XDEV_SUCCESS) return 0;
    fprintf(stderr, "device_agnostic: %s failed: %s: %s\n", what, xdev_status_string(st),
            xdev_last_error());
    return 1;
}

static void usage(FILE *out) {
    fprintf(out, "usage: device_agnostic [--disable-gpu] [--n COUNT]\n"
                 "  --disable-gpu  use the CPU even when a CUDA or HIP device is available\n"
                 "  --n COUNT      number of floats to move around (default 1048576)\n");
}

int main(int argc, char **argv) {
    bool disable_gpu = false;
    size_t count = (size_t)1 << 20;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--disable-gpu") == 0) {
            disable_gpu = true;
        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
            char *end = NULL;
            unsigned long long n = strtoull(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || n == 0 || n > ((size_t)1 << 30)) {
                fprintf(stderr, "device_agnostic: bad --n '%s'\n", argv[i]);
                return 2;
            }
            count = (size_t)n;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }

    int rc = 1;
    const size_t bytes = count * sizeof(float);
    float *host_in = NULL, *host_out = NULL, *pinned = NULL;
    void *dev_buf = NULL;
    xdev_stream_t stream = NULL;
    xdev_event_t start = NULL, stop = NULL;
    xdev_device_guard_t guard;
    bool guarded = false;

    /* An explicitly requested backend (XDEV_BACKEND) that cannot be used is an error. */
    CHECK(xdev_init());

    /* args.device = 'cuda' if not args.disable_gpu and torch.cuda.is_available() else 'cpu' */
    xdev_device_t device = xdev_cpu(0);
    if (!disable_gpu && xdev_is_available(XDEV_DEVICE_CUDA))
        device = xdev_cuda(0);
    else if (!disable_gpu && xdev_is_available(XDEV_DEVICE_HIP))
        device = xdev_hip(0);

    /* From here on nothing depends on which device was picked. */
    CHECK(xdev_device_guard_begin(&guard, device));
    guarded = true;
    char device_name[XDEV_DEVICE_NAME_MAX];
    xdev_device_properties_t props;
    CHECK(xdev_device_format(device, device_name, sizeof device_name));
    CHECK(xdev_get_device_properties(device, &props));
    printf("device: %s (%s)%s\n", device_name, props.name, disable_gpu ? " [--disable-gpu]" : "");

    host_in = malloc(bytes);
    host_out = malloc(bytes);
    if (host_in == NULL || host_out == NULL) {
        fprintf(stderr, "device_agnostic: out of host memory for %zu bytes\n", bytes);
        goto fail;
    }
    for (size_t i = 0; i < count; ++i)
        host_in[i] = (float)(i % 1000); /* small integers: every sum below is exact */

    CHECK(xdev_malloc_device(device, &dev_buf, bytes));
    CHECK(xdev_host_alloc((void **)&pinned, bytes));
    CHECK(xdev_stream_create(device, XDEV_STREAM_PRIORITY_NORMAL, &stream));
    CHECK(xdev_event_create(XDEV_EVENT_TIMING, &start));
    CHECK(xdev_event_create(XDEV_EVENT_TIMING, &stop));

    /* Everything below is enqueued on one stream and runs in this order. */
    host_work_t work = {pinned, count, 2.0f, 0.0};
    CHECK(xdev_event_record(start, stream));
    CHECK(xdev_memcpy_async(dev_buf, host_in, bytes, stream));  /* host -> device */
    CHECK(xdev_memcpy_async(pinned, dev_buf, bytes, stream));   /* device -> pinned host */
    CHECK(xdev_launch_host_func(stream, scale_and_sum, &work)); /* host work, in stream order */
    CHECK(xdev_memcpy_async(dev_buf, pinned, bytes, stream));   /* scaled data -> device */
    CHECK(xdev_event_record(stop, stream));
    CHECK(xdev_stream_synchronize(stream));

    float ms = 0.0f;
    CHECK(xdev_event_elapsed_time(start, stop, &ms));
    CHECK(xdev_memcpy(host_out, dev_buf, bytes)); /* blocking device -> host */

    /* Verify: every element doubled, and the host function's sum matches. */
    double expected_sum = 0.0;
    for (size_t i = 0; i < count; ++i) {
        float want = 2.0f * host_in[i];
        if (host_out[i] != want) {
            fprintf(stderr, "device_agnostic: element %zu is %g, expected %g\n", i,
                    (double)host_out[i], (double)want);
            goto fail;
        }
        expected_sum += want;
    }
    if (work.sum != expected_sum) {
        fprintf(stderr, "device_agnostic: host function summed %.1f, expected %.1f\n", work.sum,
                expected_sum);
        goto fail;
    }

    printf("memory:\n");
    CHECK(describe("host input", host_in));
    CHECK(describe("device", dev_buf));
    CHECK(describe("pinned", pinned));
    printf("moved %zu floats (%zu bytes) host->device->pinned, scaled and summed on the stream "
           "(sum %.0f), copied back: OK\n",
           count, bytes, work.sum);
    printf("elapsed on the stream: %.3f ms\n", (double)ms);
    rc = 0;

fail:
    /* Release in reverse order; a failure here is reported and fails the run too. */
    if (stop != NULL) rc |= release("xdev_event_destroy(stop)", xdev_event_destroy(stop));
    if (start != NULL) rc |= release("xdev_event_destroy(start)", xdev_event_destroy(start));
    if (stream != NULL) rc |= release("xdev_stream_destroy", xdev_stream_destroy(stream));
    if (pinned != NULL) rc |= release("xdev_host_free", xdev_host_free(pinned));
    if (dev_buf != NULL) rc |= release("xdev_free", xdev_free(dev_buf));
    if (guarded) rc |= release("xdev_device_guard_end", xdev_device_guard_end(&guard));
    free(host_out);
    free(host_in);
    return rc;
}
