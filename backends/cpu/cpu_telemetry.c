/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_telemetry.c - what the CPU device says of itself beyond
 * xdev_device_properties_t (device.get_properties_ext), its readings
 * (device.telemetry) and its arch list (device.arch_list).
 *
 * Only what the host really exposes is reported; the rest is
 * XDEV_ERROR_NOT_SUPPORTED with the reason, never a made-up number:
 * - UUID: "CPU-" and a UUID (version 8, RFC 9562) hashed from the machine's
 *   id (/etc/machine-id, else /var/lib/dbus/machine-id, else the host name)
 *   and the device index: the same on every run of one machine, different
 *   between machines and between cpu:0 and cpu:1;
 * - L2 size: sysconf, else /sys/devices/system/cpu/cpu0/cache;
 * - bf16: the cores' own bfloat16 instructions (x86 avx512_bf16 or amx_bf16,
 *   Arm bf16 in /proc/cpuinfo); tf32: never (a GPU tensor-core format);
 * - temperature: a CPU package sensor (hwmon coretemp/k10temp/zenpower/
 *   cpu_thermal, or the x86_pkg_temp / cpu-thermal thermal zone);
 * - clock: the mean current frequency of the cores (cpufreq, else
 *   /proc/cpuinfo's "cpu MHz");
 * - memory used: the host's MemTotal - MemAvailable (/proc/meminfo);
 * - load: percent of every core busy (/proc/stat) since the previous
 *   reading, or over 100 ms on the first;
 * - power: not read (RAPL's counters are root-only on current kernels). */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_internal.h"

/* The first line of a small file, trailing space removed; false if absent. */
static bool read_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return false;
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok) return false;
    size_t n = strlen(buf);
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    return n > 0;
}

static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* splitmix64's finalizer: every input bit moves about half the output bits
 * (FNV alone leaves cpu:0's and cpu:1's UUIDs alike). */
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void cpu_uuid(int index, char *out, size_t len) {
    char id[256] = "";
    if (!read_line("/etc/machine-id", id, sizeof id) &&
        !read_line("/var/lib/dbus/machine-id", id, sizeof id) && gethostname(id, sizeof id) != 0)
        snprintf(id, sizeof id, "unknown");
    id[sizeof id - 1] = '\0';
    char idx[32];
    snprintf(idx, sizeof idx, ":cpu:%d", index);
    uint64_t hi = mix(fnv1a(fnv1a(0xcbf29ce484222325ULL, id), idx));
    uint64_t lo = mix(fnv1a(fnv1a(0x84222325cbf29ce4ULL ^ hi, idx), id));
    hi = (hi & ~0xf000ULL) | 0x8000ULL;                        /* version 8 */
    lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL; /* variant 10 */
    snprintf(out, len, "CPU-%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
             hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48, lo & (uint64_t)0xffffffffffff);
}

static size_t l2_size(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
    long n = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (n > 0) return (size_t)n;
#endif
    for (int i = 0; i < 8; i++) {
        char path[128], line[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!read_line(path, line, sizeof line) || strcmp(line, "2") != 0) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!read_line(path, line, sizeof line)) return 0;
        char *end = NULL;
        unsigned long long v = strtoull(line, &end, 10);
        if (end && (*end == 'K' || *end == 'k')) v <<= 10;
        if (end && (*end == 'M' || *end == 'm')) v <<= 20;
        return (size_t)v;
    }
    return 0;
}

/* A word among /proc/cpuinfo's "flags" (x86) or "Features" (Arm). */
static bool cpu_flag(const char *const *words) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "flags", 5) != 0 && strncmp(line, "Features", 8) != 0) continue;
        for (char *save = NULL,
                  *w = strtok_r(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \t\n", &save);
             w != NULL && !found; w = strtok_r(NULL, " \t\n", &save))
            for (int i = 0; words[i] != NULL; i++)
                if (strcmp(w, words[i]) == 0) found = true;
        break; /* the first core's line speaks for all */
    }
    fclose(f);
    return found;
}

static void machine(char *buf, size_t len) {
    struct utsname u;
    const char *m = uname(&u) == 0 ? u.machine : "unknown";
    size_t n = strnlen(m, len - 1);
    memcpy(buf, m, n);
    buf[n] = '\0';
}

xdev_status_t xdev_cpu_get_properties_ext(xdev_cpu_device_t *dev,
                                          xdev_device_properties_ext_t *ext) {
    xdev_device_properties_ext_t p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    cpu_uuid(dev->index, p.uuid, sizeof p.uuid);
    p.l2_cache_size = l2_size();
    static const char *const bf16[] = {"avx512_bf16", "amx_bf16", "bf16", NULL};
    p.bf16_supported = cpu_flag(bf16);
    machine(p.arch, sizeof p.arch);
    size_t n = ext->size < sizeof p ? ext->size : sizeof p;
    memcpy((char *)ext + sizeof ext->size, (char *)&p + sizeof p.size, n - sizeof ext->size);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_cpu_arch_list(char *buf, size_t len) {
    machine(buf, len);
    return XDEV_SUCCESS;
}

/* ---------------------------------------------------------------- readings */

static bool read_u64(const char *path, uint64_t *out) {
    char line[64];
    if (!read_line(path, line, sizeof line)) return false;
    char *end = NULL;
    unsigned long long v = strtoull(line, &end, 10);
    if (end == line) return false;
    *out = v;
    return true;
}

/* Millidegrees of the first CPU package sensor found. */
static bool temperature(uint64_t *celsius) {
    static const char *const hw[] = {"coretemp", "k10temp", "zenpower", "cpu_thermal", NULL};
    static const char *const zones[] = {"x86_pkg_temp", "cpu-thermal", "cpu_thermal", NULL};
    char path[512], name[64];
    uint64_t milli = 0;
    for (int i = 0; i < 64; i++) {
        snprintf(path, sizeof path, "/sys/class/hwmon/hwmon%d/name", i);
        if (!read_line(path, name, sizeof name)) continue;
        for (int k = 0; hw[k] != NULL; k++) {
            if (strcmp(name, hw[k]) != 0) continue;
            snprintf(path, sizeof path, "/sys/class/hwmon/hwmon%d/temp1_input", i);
            if (read_u64(path, &milli)) {
                *celsius = (milli + 500) / 1000;
                return true;
            }
        }
    }
    for (int i = 0; i < 64; i++) {
        snprintf(path, sizeof path, "/sys/class/thermal/thermal_zone%d/type", i);
        if (!read_line(path, name, sizeof name)) continue;
        for (int k = 0; zones[k] != NULL; k++) {
            if (strcmp(name, zones[k]) != 0) continue;
            snprintf(path, sizeof path, "/sys/class/thermal/thermal_zone%d/temp", i);
            if (read_u64(path, &milli)) {
                *celsius = (milli + 500) / 1000;
                return true;
            }
        }
    }
    return false;
}

/* Mean current frequency of the online cores, MHz. */
static bool clock_mhz(uint64_t *mhz) {
    uint64_t sum = 0, n = 0;
    for (int i = 0; i < 4096; i++) {
        char path[128];
        uint64_t khz;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", i);
        if (!read_u64(path, &khz)) {
            if (i > 0 && access(path, F_OK) != 0) {
                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", i);
                if (access(path, F_OK) != 0) break; /* past the last core */
            }
            continue;
        }
        sum += khz;
        n++;
    }
    if (n > 0) {
        *mhz = (sum / n + 500) / 1000;
        return true;
    }
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return false;
    char line[512];
    double total = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        double v;
        if (strncmp(line, "cpu MHz", 7) == 0 && sscanf(strchr(line, ':') + 1, "%lf", &v) == 1 &&
            v > 0) {
            total += v;
            n++;
        }
    }
    fclose(f);
    if (n == 0) return false;
    *mhz = (uint64_t)(total / (double)n + 0.5);
    return true;
}

static bool memory_used(uint64_t *bytes) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL) return false;
    char line[256];
    unsigned long long total = 0, avail = 0;
    bool t = false, a = false;
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "MemTotal: %llu kB", &total) == 1) t = true;
        if (sscanf(line, "MemAvailable: %llu kB", &avail) == 1) a = true;
    }
    fclose(f);
    if (!t || !a || avail > total) return false;
    *bytes = (uint64_t)(total - avail) * 1024u;
    return true;
}

/* /proc/stat's first line: busy and total jiffies of every core. */
static bool cpu_times(uint64_t *busy, uint64_t *total) {
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL) return false;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4) return false;
    uint64_t sum = 0;
    for (int i = 0; i < 8; i++)
        sum += v[i];
    *total = sum;
    *busy = sum - v[3] - v[4]; /* idle, iowait */
    return true;
}

static bool load_percent(uint64_t *pct) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t prev_busy, prev_total;
    static bool have_prev;
    uint64_t busy, total;
    pthread_mutex_lock(&lock);
    bool ok = true;
    if (!have_prev) {
        ok = cpu_times(&prev_busy, &prev_total);
        if (ok) nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    ok = ok && cpu_times(&busy, &total);
    if (ok && total > prev_total) {
        *pct = ((busy - prev_busy) * 100 + (total - prev_total) / 2) / (total - prev_total);
        if (*pct > 100) *pct = 100;
        prev_busy = busy;
        prev_total = total;
        have_prev = true;
    } else if (ok) {
        /* no jiffy passed since the last reading: wait for one */
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        ok = cpu_times(&busy, &total) && total > prev_total;
        if (ok) {
            *pct = ((busy - prev_busy) * 100) / (total - prev_total);
            if (*pct > 100) *pct = 100;
            prev_busy = busy;
            prev_total = total;
        }
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

xdev_status_t xdev_cpu_telemetry(xdev_cpu_device_t *dev, xdev_telemetry_t what, uint64_t *value) {
    (void)dev; /* every CPU device is the same host */
    switch (what) {
    case XDEV_TELEMETRY_TEMPERATURE:
        if (temperature(value)) return XDEV_SUCCESS;
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "the host exposes no CPU temperature sensor (no coretemp, k10temp, "
                              "zenpower or cpu_thermal hwmon, no x86_pkg_temp or cpu-thermal "
                              "thermal zone under /sys)");
    case XDEV_TELEMETRY_POWER_DRAW:
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "the CPU device has no power reading (RAPL's energy counters are "
                              "readable by root only; xdev does not read them)");
    case XDEV_TELEMETRY_CLOCK_RATE:
        if (clock_mhz(value)) return XDEV_SUCCESS;
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "the host exposes no CPU frequency (no cpufreq scaling_cur_freq, "
                              "no 'cpu MHz' in /proc/cpuinfo)");
    case XDEV_TELEMETRY_MEMORY_USED:
        if (memory_used(value)) return XDEV_SUCCESS;
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED,
                              "/proc/meminfo has no MemTotal and MemAvailable to read");
    case XDEV_TELEMETRY_LOAD:
        if (load_percent(value)) return XDEV_SUCCESS;
        return xdev_cpu_error(XDEV_ERROR_NOT_SUPPORTED, "/proc/stat cannot be read");
    }
    return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE, "telemetry kind %d", (int)what);
}
