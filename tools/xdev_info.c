/* SPDX-License-Identifier: Apache-2.0 */
/* tools/xdev_info.c - xdev-info: what xdev sees on this machine.
 *
 * Lists every backend type (loaded, failed and why, or not tried), its plugin
 * path, ABI and device count and which one is the default; then every device
 * with its properties; then the XDEV_* environment variables in force. Exits
 * non-zero with xdev's message when xdev_init() fails (for example
 * XDEV_BACKEND=cuda on a machine without a usable CUDA device).
 *
 *   xdev-info            human-readable report
 *   xdev-info --json     the same as one JSON object
 *   xdev-info --version  the library's version and backend ABI
 *   xdev-info --watch [seconds] [--watch-count N]
 *                        every device's telemetry (temperature, power, SM
 *                        clock, memory used, load) every `seconds` (1), N
 *                        times (until interrupted without --watch-count) */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xdev/backend.h"
#include "xdev/version.h"
#include "xdev/xdev.h"

extern char **environ;

/* The variables xdev reads (the first ALWAYS_SHOWN_ENV are printed even when unset). */
static const char *const known_env[] = {
    "XDEV_BACKEND",           "XDEV_PLUGIN_PATH",  "XDEV_VISIBLE_DEVICES",
    "XDEV_CPU_DEVICES",       "XDEV_CPU_MEMORY",   "XDEV_LAUNCH_BLOCKING",
    "XDEV_NO_MEMORY_CACHING", "XDEV_ALLOC_CONF",   "XDEV_ALLOW_TF32",
    "XDEV_CPU_RNG_ISA",       "XDEV_CUDA_STAGING", "XDEV_CUDA_STAGE_CHUNK_KB",
    "XDEV_CUDA_COPY_THREADS", "XDEV_HIP_STAGING",  "XDEV_HIP_STAGE_CHUNK_KB",
    "XDEV_HIP_COPY_THREADS",  "XDEV_TRACE_FILE",   "XDEV_COMM_TIMEOUT",
    "XDEV_NCCL_PATH",         "XDEV_RCCL_PATH",    "XDEV_SYNC_DEBUG",
};
#define KNOWN_ENV_COUNT (sizeof known_env / sizeof known_env[0])
/* The first entries are always shown; the rest only when set. */
#define ALWAYS_SHOWN_ENV 6

static const char *state_name(xdev_backend_state_t state) {
    switch (state) {
    case XDEV_BACKEND_LOADED:
        return "loaded";
    case XDEV_BACKEND_FAILED:
        return "failed";
    case XDEV_BACKEND_NOT_TRIED:
        return "not tried";
    }
    return "unknown";
}

static void usage(FILE *out) {
    fprintf(out, "usage: xdev-info [--json] [--version] [--help] [--watch [seconds] "
                 "[--watch-count N]]\n"
                 "Lists xdev's backends (loaded, or why not), their devices with properties\n"
                 "and telemetry, and the XDEV_* environment variables in force.\n"
                 "  --json     print one JSON object instead of the text report\n"
                 "  --version  print the library's version and its backend ABI, and exit\n"
                 "  --watch    print every device's telemetry every `seconds` (default 1,\n"
                 "             0.05 to 3600) until interrupted, or N times with --watch-count\n"
                 "  --help     print this help\n"
                 "Exit status: 0 when xdev initialises, 1 when it does not (the message says\n"
                 "why, e.g. XDEV_BACKEND names a backend that cannot be used), 2 on bad usage.\n");
}

/* JSON string literal (or null) on stdout. */
static void json_string(const char *s) {
    if (s == NULL) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; ++p) {
        switch (*p) {
        case '"':
            fputs("\\\"", stdout);
            break;
        case '\\':
            fputs("\\\\", stdout);
            break;
        case '\n':
            fputs("\\n", stdout);
            break;
        case '\t':
            fputs("\\t", stdout);
            break;
        default:
            if (*p < 0x20)
                printf("\\u%04x", *p);
            else
                putchar(*p);
        }
    }
    putchar('"');
}

static bool is_known_env(const char *name, size_t len) {
    for (size_t i = 0; i < KNOWN_ENV_COUNT; ++i)
        if (strlen(known_env[i]) == len && strncmp(known_env[i], name, len) == 0) return true;
    return false;
}

/* Every XDEV_* variable to show: the always-shown ones, the other known ones
 * when set, then any other XDEV_* in the environment (sorted by environ). */
typedef void (*env_visit_fn)(const char *name, size_t name_len, const char *value, bool *first);

static void visit_env(env_visit_fn visit) {
    bool first = true;
    for (size_t i = 0; i < KNOWN_ENV_COUNT; ++i) {
        const char *v = getenv(known_env[i]);
        if (i < ALWAYS_SHOWN_ENV || v != NULL) visit(known_env[i], strlen(known_env[i]), v, &first);
    }
    for (char **e = environ; e != NULL && *e != NULL; ++e) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "XDEV_", 5) != 0 || eq == NULL) continue;
        size_t len = (size_t)(eq - *e);
        if (!is_known_env(*e, len)) visit(*e, len, eq + 1, &first);
    }
}

static void text_env(const char *name, size_t len, const char *value, bool *first) {
    (void)first;
    printf("  %-24.*s %s\n", (int)len, name, value != NULL ? value : "(unset)");
}

static void json_env(const char *name, size_t len, const char *value, bool *first) {
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)len, name);
    printf("%s\n    ", *first ? "" : ",");
    json_string(buf);
    fputs(": ", stdout);
    json_string(value);
    *first = false;
}

typedef struct backend_report {
    xdev_status_t status; /* of xdev_backend_get_info */
    char error[512];      /* its message when it failed */
    xdev_backend_info_t info;
    bool registered; /* a backend is registered for the type */
} backend_report_t;

static void collect(backend_report_t reports[XDEV_MAX_DEVICE_TYPES]) {
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; ++t) {
        backend_report_t *r = &reports[t];
        memset(r, 0, sizeof *r);
        r->status = xdev_backend_get_info((xdev_device_type_t)t, &r->info);
        if (r->status != XDEV_SUCCESS) snprintf(r->error, sizeof r->error, "%s", xdev_last_error());
        /* types are registered: one without a backend is not a backend to list */
        r->registered = xdev_device_type_name((xdev_device_type_t)t) != NULL;
    }
}

static const char *type_name(int t) {
    const char *n = xdev_device_type_name((xdev_device_type_t)t);
    return n != NULL ? n : "?";
}

/* One device's telemetry as text: "name value unit" each, or "name n/a". */
static void text_telemetry(xdev_device_t dev, char *out, size_t len) {
    static const char *const units[XDEV_TELEMETRY_COUNT] = {" C", " mW", " MHz", " MiB", "%"};
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < XDEV_TELEMETRY_COUNT; k++) {
        uint64_t v = 0;
        xdev_status_t st = xdev_device_telemetry(dev, (xdev_telemetry_t)k, &v);
        if (k == XDEV_TELEMETRY_MEMORY_USED) v >>= 20;
        int n = st == XDEV_SUCCESS
                    ? snprintf(out + used, len - used, "%s%s %llu%s", used ? ", " : "",
                               xdev_telemetry_name((xdev_telemetry_t)k), (unsigned long long)v,
                               units[k])
                    : snprintf(out + used, len - used, "%s%s n/a", used ? ", " : "",
                               xdev_telemetry_name((xdev_telemetry_t)k));
        if (n < 0 || (size_t)n >= len - used) break;
        used += (size_t)n;
    }
}

/* The extended properties' line of the text report. */
static void text_ext(xdev_device_t dev) {
    xdev_device_properties_ext_t e = {.size = sizeof e};
    if (xdev_get_device_properties_ext(dev, &e) != XDEV_SUCCESS) {
        printf("          (uuid and the rest unavailable: %s)\n", xdev_last_error());
        return;
    }
    printf("          uuid %s, pci %s, L2 %zu KiB, arch %s, MIG %s, bf16 %s, tf32 %s\n", e.uuid,
           e.pci_bus_id[0] ? e.pci_bus_id : "none", e.l2_cache_size >> 10, e.arch,
           e.is_mig ? "yes" : "no", e.bf16_supported ? "yes" : "no",
           e.tf32_supported ? "yes" : "no");
    char tele[512];
    text_telemetry(dev, tele, sizeof tele);
    printf("          %s\n", tele);
}

static void print_text(const backend_report_t reports[XDEV_MAX_DEVICE_TYPES], xdev_status_t init,
                       const char *init_error) {
    printf("xdev %s\n", xdev_version_string());

    printf("\nBackends:\n");
    for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; ++t) {
        const backend_report_t *r = &reports[t];
        const xdev_backend_info_t *b = &r->info;
        if (!r->registered) continue;
        if (r->status != XDEV_SUCCESS) {
            printf("  %-5s (no information: %s: %s)\n", type_name(t), xdev_status_string(r->status),
                   r->error);
            continue;
        }
        printf("  %-5s %s%s\n", b->name != NULL ? b->name : type_name(t), state_name(b->state),
               b->is_default ? "  [default]" : "");
        if (b->state == XDEV_BACKEND_FAILED)
            printf("        reason:  %s\n", b->reason != NULL ? b->reason : "(none given)");
        if (b->state == XDEV_BACKEND_LOADED) {
            printf("        plugin:  %s\n", b->path != NULL ? b->path : "(unknown)");
            printf("        ABI:     %u.%u\n", b->abi_major, b->abi_minor);
            printf("        devices: %d\n", b->device_count);
            char arch[1024], flags[4096];
            if (xdev_get_arch_list((xdev_device_type_t)t, arch, sizeof arch) == XDEV_SUCCESS)
                printf("        arch list: %s\n", arch[0] ? arch : "(no device code)");
            if (xdev_get_gencode_flags((xdev_device_type_t)t, flags, sizeof flags) ==
                    XDEV_SUCCESS &&
                flags[0] != '\0')
                printf("        gencode: %s\n", flags);
        }
    }

    printf("\nDevices:\n");
    int shown = 0;
    for (int t = 0; init == XDEV_SUCCESS && t < XDEV_MAX_DEVICE_TYPES; ++t) {
        const backend_report_t *r = &reports[t];
        if (r->status != XDEV_SUCCESS || r->info.state != XDEV_BACKEND_LOADED) continue;
        for (int i = 0; i < r->info.device_count; ++i) {
            xdev_device_t dev = {(xdev_device_type_t)t, i};
            char name[XDEV_DEVICE_NAME_MAX] = "?";
            xdev_device_properties_t p;
            (void)xdev_device_format(dev, name, sizeof name);
            ++shown;
            if (xdev_get_device_properties(dev, &p) != XDEV_SUCCESS) {
                printf("  %-7s (properties unavailable: %s)\n", name, xdev_last_error());
                continue;
            }
            printf("  %-7s %s\n", name, p.name);
            printf("          capability %d.%d, memory %zu MiB, multiprocessors %d, "
                   "physical index %d%s\n",
                   p.capability_major, p.capability_minor, p.total_memory >> 20,
                   p.multiprocessor_count, p.physical_index, p.integrated ? ", integrated" : "");
            text_ext(dev);
        }
    }
    if (init != XDEV_SUCCESS)
        printf("  (not listed: xdev did not initialise, see below)\n");
    else if (shown == 0)
        printf("  (none)\n");

    printf("\nEnvironment:\n");
    visit_env(text_env);
}

/* The extended properties and telemetry of one device as JSON members
 * (null for what the device cannot report). */
static void json_ext(xdev_device_t dev) {
    xdev_device_properties_ext_t e = {.size = sizeof e};
    if (xdev_get_device_properties_ext(dev, &e) == XDEV_SUCCESS) {
        printf(", \"uuid\": ");
        json_string(e.uuid);
        printf(", \"pci_bus_id\": ");
        json_string(e.pci_bus_id[0] ? e.pci_bus_id : NULL);
        printf(", \"l2_cache_size\": %zu, \"is_mig\": %s, \"bf16\": %s, \"tf32\": %s, "
               "\"arch\": ",
               e.l2_cache_size, e.is_mig ? "true" : "false", e.bf16_supported ? "true" : "false",
               e.tf32_supported ? "true" : "false");
        json_string(e.arch);
    }
    printf(", \"telemetry\": {");
    for (int k = 0; k < XDEV_TELEMETRY_COUNT; k++) {
        uint64_t v = 0;
        printf("%s\"%s\": ", k ? ", " : "", xdev_telemetry_name((xdev_telemetry_t)k));
        if (xdev_device_telemetry(dev, (xdev_telemetry_t)k, &v) == XDEV_SUCCESS)
            printf("%llu", (unsigned long long)v);
        else
            printf("null");
    }
    printf("}");
}

static void print_json(const backend_report_t reports[XDEV_MAX_DEVICE_TYPES], xdev_status_t init,
                       const char *init_error) {
    printf("{\n  \"version\": ");
    json_string(xdev_version_string());
    printf(",\n  \"init\": {\"status\": ");
    json_string(xdev_status_string(init));
    printf(", \"error\": ");
    json_string(init == XDEV_SUCCESS ? NULL : init_error);
    printf("},\n  \"backends\": [");
    for (int t = 0, listed = 0; t < XDEV_MAX_DEVICE_TYPES; ++t) {
        const backend_report_t *r = &reports[t];
        const xdev_backend_info_t *b = &r->info;
        if (!r->registered) continue;
        printf("%s\n    {\"type\": ", listed++ ? "," : "");
        json_string(type_name(t));
        if (r->status != XDEV_SUCCESS) {
            printf(", \"error\": ");
            json_string(r->error);
            printf("}");
            continue;
        }
        printf(", \"state\": ");
        json_string(state_name(b->state));
        printf(", \"reason\": ");
        json_string(b->state == XDEV_BACKEND_FAILED ? b->reason : NULL);
        printf(", \"path\": ");
        json_string(b->state == XDEV_BACKEND_LOADED ? b->path : NULL);
        const bool loaded = b->state == XDEV_BACKEND_LOADED;
        const bool list = loaded && init == XDEV_SUCCESS && b->device_count > 0;
        if (loaded)
            printf(", \"abi\": \"%u.%u\"", b->abi_major, b->abi_minor);
        else
            printf(", \"abi\": null");
        char arch[1024], flags[4096];
        bool has_arch =
            loaded && xdev_get_arch_list((xdev_device_type_t)t, arch, sizeof arch) == XDEV_SUCCESS;
        bool has_flags = loaded && xdev_get_gencode_flags((xdev_device_type_t)t, flags,
                                                          sizeof flags) == XDEV_SUCCESS;
        printf(", \"arch_list\": ");
        json_string(has_arch ? arch : NULL);
        printf(", \"gencode_flags\": ");
        json_string(has_flags ? flags : NULL);
        printf(", \"device_count\": %d, \"default\": %s, \"devices\": [",
               loaded ? b->device_count : 0, b->is_default ? "true" : "false");
        for (int i = 0; list && i < b->device_count; ++i) {
            xdev_device_t dev = {(xdev_device_type_t)t, i};
            char name[XDEV_DEVICE_NAME_MAX] = "?";
            xdev_device_properties_t p;
            (void)xdev_device_format(dev, name, sizeof name);
            printf("%s\n      {\"device\": ", i ? "," : "");
            json_string(name);
            if (xdev_get_device_properties(dev, &p) != XDEV_SUCCESS) {
                printf(", \"error\": ");
                json_string(xdev_last_error());
                printf("}");
                continue;
            }
            printf(", \"name\": ");
            json_string(p.name);
            printf(", \"capability\": \"%d.%d\", \"total_memory\": %zu, "
                   "\"multiprocessors\": %d, \"physical_index\": %d, \"integrated\": %s",
                   p.capability_major, p.capability_minor, p.total_memory, p.multiprocessor_count,
                   p.physical_index, p.integrated ? "true" : "false");
            json_ext(dev);
            printf("}");
        }
        printf("%s]}", list ? "\n    " : "");
    }
    printf("\n  ],\n  \"environment\": {");
    visit_env(json_env);
    printf("\n  }\n}\n");
}

/* --watch: every device's telemetry every `period` seconds, `count` times
 * (0: until interrupted), one timestamped block each. */
static int watch(double period, long count) {
    for (long round = 0; count == 0 || round < count; round++) {
        if (round > 0) {
            struct timespec ts = {(time_t)period, (long)((period - floor(period)) * 1e9)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            }
        }
        time_t now = time(NULL);
        char stamp[64] = "";
        struct tm tm;
        if (gmtime_r(&now, &tm) != NULL) strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
        printf("%s\n", stamp);
        for (int t = 0; t < XDEV_MAX_DEVICE_TYPES; ++t) {
            xdev_backend_info_t b;
            if (xdev_device_type_name((xdev_device_type_t)t) == NULL ||
                xdev_backend_get_info((xdev_device_type_t)t, &b) != XDEV_SUCCESS ||
                b.state != XDEV_BACKEND_LOADED)
                continue;
            for (int i = 0; i < b.device_count; ++i) {
                xdev_device_t dev = {(xdev_device_type_t)t, i};
                char name[XDEV_DEVICE_NAME_MAX] = "?", tele[512];
                (void)xdev_device_format(dev, name, sizeof name);
                text_telemetry(dev, tele, sizeof tele);
                printf("  %-7s %s\n", name, tele);
            }
        }
        fflush(stdout);
    }
    return 0;
}

/* A number in [lo, hi] (the whole text); false otherwise. */
static bool parse_number(const char *s, double lo, double hi, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    bool json = false, watching = false;
    double period = 1.0, count = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--watch") == 0) {
            watching = true;
            if (i + 1 < argc && argv[i + 1][0] != '-' &&
                !parse_number(argv[++i], 0.05, 3600, &period)) {
                fprintf(stderr, "xdev-info: --watch '%s' is not a number of seconds 0.05..3600\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--watch-count") == 0) {
            if (i + 1 >= argc || !parse_number(argv[++i], 1, 1e9, &count) ||
                count != floor(count)) {
                fprintf(stderr, "xdev-info: --watch-count needs a whole number 1..1000000000\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            /* the library's own version (the one loaded), then the headers' if they differ */
            printf("xdev-info %s (backend ABI %u.%u)\n", xdev_version_string(),
                   (unsigned)XDEV_BACKEND_ABI_MAJOR, (unsigned)XDEV_BACKEND_ABI_MINOR);
            if (strcmp(xdev_version_string(), XDEV_VERSION_STRING) != 0)
                printf("built against headers of %s\n", XDEV_VERSION_STRING);
            return 0;
        } else {
            fprintf(stderr, "xdev-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    /* The message is only valid until the next xdev call: keep a copy. */
    char init_error[1024] = "";
    xdev_status_t init = xdev_init();
    if (init != XDEV_SUCCESS) snprintf(init_error, sizeof init_error, "%s", xdev_last_error());

    if (watching && init == XDEV_SUCCESS) return watch(period, (long)count);
    if (count != 0 && !watching) {
        fprintf(stderr, "xdev-info: --watch-count goes with --watch\n");
        return 2;
    }

    /* Report what was found even when init failed: it is what explains why. */
    backend_report_t reports[XDEV_MAX_DEVICE_TYPES];
    collect(reports);
    if (json)
        print_json(reports, init, init_error);
    else
        print_text(reports, init, init_error);

    if (init != XDEV_SUCCESS) {
        fflush(stdout);
        fprintf(stderr, "xdev-info: xdev_init failed: %s: %s\n", xdev_status_string(init),
                init_error);
        return 1;
    }
    return 0;
}
