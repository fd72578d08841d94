/* SPDX-License-Identifier: Apache-2.0 */
/* xt.c - shared helpers for the xdev Check suites. */
#include "xt.h"
#include "xdev/support/half.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XT_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define XT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define XT_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define XT_ASAN 1
#endif

bool xt_sanitized_build(void) {
#if defined(XT_TSAN) || defined(XT_ASAN)
    return true;
#else
    return false;
#endif
}

double xt_scale(void) {
    const char *env = getenv("XDEV_TEST_SCALE");
    if (env && *env) {
        double v = strtod(env, NULL);
        if (v > 0) return v;
    }
#if defined(XT_TSAN)
    return 0.1;
#elif defined(XT_ASAN)
    return 0.5;
#else
    return 1.0;
#endif
}

int xt_iters(int base, int min) {
    int n = (int)(base * xt_scale());
    return n < min ? min : n;
}

double xt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void xt_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static bool icontains_one(const char *hay, const char *needle, size_t n) {
    if (n == 0) return true;
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return true;
    }
    return false;
}

bool xt_icontains(const char *hay, const char *needle) {
    if (!hay || !needle) return false;
    const char *p = needle;
    for (;;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (icontains_one(hay, p, n)) return true;
        if (!bar) return false;
        p = bar + 1;
    }
}

static void mask_names(unsigned mask, char *buf, size_t len) {
    buf[0] = '\0';
    for (int s = 0; s < 32; s++) {
        if (!(mask & (1u << s))) continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", used ? " or " : "",
                 xdev_status_string((xdev_status_t)s));
    }
}

void xt_expect_error(xdev_status_t got, unsigned status_mask, const char *call, const char *file,
                     int line, ...) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", xdev_last_error() ? xdev_last_error() : "(null)");
    xdev_status_t last = xdev_last_status();
    char want[512];
    mask_names(status_mask, want, sizeof want);

    ck_assert_msg((unsigned)got < 32 && (status_mask & (1u << (unsigned)got)),
                  "%s:%d: %s returned %s, expected %s (message: \"%s\")", file, line, call,
                  xdev_status_string(got), want, msg);
    ck_assert_msg(last == got, "%s:%d: %s: xdev_last_status() = %s, but the call returned %s", file,
                  line, call, xdev_status_string(last), xdev_status_string(got));
    ck_assert_msg(msg[0] != '\0', "%s:%d: %s returned %s but xdev_last_error() is empty", file,
                  line, call, xdev_status_string(got));

    /* The message names the public call. */
    if (strncmp(call, "xdev_", 5) == 0) {
        char fname[128];
        size_t n = strcspn(call, "( ");
        if (n >= sizeof fname) n = sizeof fname - 1;
        memcpy(fname, call, n);
        fname[n] = '\0';
        ck_assert_msg(strstr(msg, fname) != NULL,
                      "%s:%d: error message does not name the call %s: \"%s\"", file, line, fname,
                      msg);
    }

    va_list ap;
    va_start(ap, line);
    for (const char *needle = va_arg(ap, const char *); needle; needle = va_arg(ap, const char *)) {
        ck_assert_msg(xt_icontains(msg, needle),
                      "%s:%d: %s: error message does not mention \"%s\": \"%s\"", file, line, call,
                      needle, msg);
    }
    va_end(ap);
}

void xt_gate_init(xt_gate_t *gate) {
    pthread_mutex_init(&gate->mu, NULL);
    pthread_cond_init(&gate->cv, NULL);
    gate->open = 0;
    atomic_init(&gate->entered, 0);
}

void xt_gate_open(xt_gate_t *gate) {
    pthread_mutex_lock(&gate->mu);
    gate->open = 1;
    pthread_cond_broadcast(&gate->cv);
    pthread_mutex_unlock(&gate->mu);
}

void xt_gate_destroy(xt_gate_t *gate) {
    pthread_cond_destroy(&gate->cv);
    pthread_mutex_destroy(&gate->mu);
}

static void deadline_in(struct timespec *ts, int ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void xt_gate_wait_fn(void *user) {
    xt_gate_t *gate = user;
    atomic_fetch_add(&gate->entered, 1);
    struct timespec deadline;
    deadline_in(&deadline, XT_GATE_LIMIT_MS);
    pthread_mutex_lock(&gate->mu);
    while (!gate->open) {
        if (pthread_cond_timedwait(&gate->cv, &gate->mu, &deadline) == ETIMEDOUT && !gate->open) {
            fprintf(stderr,
                    "xt_gate: a host function waited %d ms for a gate nobody opened; opening it "
                    "(does launch_host_func run the function on the launching thread?)\n",
                    XT_GATE_LIMIT_MS);
            gate->open = 1;
            pthread_cond_broadcast(&gate->cv);
        }
    }
    pthread_mutex_unlock(&gate->mu);
}

bool xt_gate_wait_entered(xt_gate_t *gate, int timeout_ms) {
    double end = xt_now_ms() + timeout_ms;
    while (atomic_load(&gate->entered) == 0) {
        if (xt_now_ms() > end) return false;
        xt_sleep_ms(1);
    }
    return true;
}

/* Opens the gate after o->ms, or returns as soon as someone else opened it. */
static void *opener_main(void *arg) {
    xt_opener_t *o = arg;
    xt_gate_t *gate = o->gate;
    struct timespec deadline;
    deadline_in(&deadline, o->ms);
    pthread_mutex_lock(&gate->mu);
    while (!gate->open) {
        if (pthread_cond_timedwait(&gate->cv, &gate->mu, &deadline) == ETIMEDOUT) break;
    }
    gate->open = 1;
    pthread_cond_broadcast(&gate->cv);
    pthread_mutex_unlock(&gate->mu);
    return NULL;
}

void xt_opener_start(xt_opener_t *opener, xt_gate_t *gate, int ms) {
    opener->gate = gate;
    opener->ms = ms;
    ck_assert_int_eq(pthread_create(&opener->thread, NULL, opener_main, opener), 0);
}

void xt_opener_join(xt_opener_t *opener) {
    pthread_join(opener->thread, NULL);
}

void xt_flag_fn(void *flag) {
    atomic_store((atomic_int *)flag, 1);
}

void xt_count_fn(void *counter) {
    atomic_fetch_add((atomic_int *)counter, 1);
}

void xt_sleep_fn(void *user) {
    xt_sleep_task_t *task = user;
    xt_sleep_ms(task->ms);
    if (task->flag) atomic_store(task->flag, 1);
}

void xt_reset_state(void) {
    xdev_device_type_t type = XDEV_DEVICE_CPU;
    int count = 0;
    if (xdev_default_device_type(&type) == XDEV_SUCCESS &&
        xdev_device_count(type, &count) == XDEV_SUCCESS) {
        for (int i = 0; i < count; i++) {
            xdev_device_t d = {type, i};
            xdev_stream_t s = NULL;
            if (xdev_stream_default(d, &s) == XDEV_SUCCESS) (void)xdev_stream_set_current(s);
        }
        xdev_device_t d0 = {type, 0};
        if (count > 0) (void)xdev_set_device(d0);
    }
    xdev_clear_error();
}

/* ------------------------------------------------------------ the backend under test */
static atomic_int g_type = -1; /* cached xt_type() */

xdev_device_type_t xt_type(void) {
    int t = atomic_load(&g_type);
    if (t >= 0) return (xdev_device_type_t)t;
    const char *env = getenv("XDEV_BACKEND");
    for (int i = 0; env && i < XDEV_MAX_DEVICE_TYPES; i++) {
        const char *name = xdev_device_type_name((xdev_device_type_t)i);
        if (name && strcmp(env, name) == 0) t = i;
    }
    if (t < 0) {
        xdev_device_type_t def = XDEV_DEVICE_CPU;
        xdev_status_t st = xdev_default_device_type(&def);
        ck_assert_msg(st == XDEV_SUCCESS, "xt_type: no default device type (%s): %s",
                      xdev_status_string(st), xdev_last_error());
        t = (int)def;
    }
    atomic_store(&g_type, t);
    return (xdev_device_type_t)t;
}

const char *xt_type_name(void) {
    return xdev_device_type_name(xt_type());
}

xdev_device_t xt_dev(int index) {
    xdev_device_t d = {xt_type(), index};
    return d;
}

int xt_device_count(void) {
    xdev_device_type_t want = xt_type(), def = want;
    xdev_status_t st = xdev_default_device_type(&def);
    ck_assert_msg(st == XDEV_SUCCESS, "xt_device_count: xdev_default_device_type: %s: %s",
                  xdev_status_string(st), xdev_last_error());
    ck_assert_msg(def == want, "XDEV_BACKEND selects %s but xdev's default device type is %s",
                  xdev_device_type_name(want), xdev_device_type_name(def));
    int n = -1;
    st = xdev_device_count(want, &n);
    ck_assert_msg(st == XDEV_SUCCESS, "xt_device_count: xdev_device_count(%s): %s: %s",
                  xdev_device_type_name(want), xdev_status_string(st), xdev_last_error());
    return n;
}

int xt_cpu_devices_env(void) {
    const char *env = getenv("XDEV_CPU_DEVICES");
    if (xt_type() != XDEV_DEVICE_CPU || env == NULL || *env == '\0') return -1;
    return atoi(env);
}

int xt_wrap(int index) {
    int n = xt_device_count();
    return index < n || index < 0 || n <= 0 ? index : index % n;
}

#define XT_RING 8
#define XT_RING_LEN 128
static _Thread_local char g_ring[XT_RING][XT_RING_LEN];
static _Thread_local unsigned g_ring_next;

static char *ring_slot(void) {
    return g_ring[g_ring_next++ % XT_RING];
}

const char *xt_fmt(const char *fmt, ...) {
    char *buf = ring_slot();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, XT_RING_LEN, fmt, ap);
    va_end(ap);
    return buf;
}

const char *xt_name(int index) {
    return xt_fmt("%s:%d", xt_type_name(), index);
}

bool xt_host_addressable(void) {
    return xt_type() == XDEV_DEVICE_CPU;
}

void xt_peek(void *dst, const void *src, size_t n) {
    if (xt_host_addressable()) {
        memcpy(dst, src, n);
        return;
    }
    xdev_device_t dev;
    xdev_stream_t side = NULL;
    XT_OK(xdev_device_of(src, &dev));
    XT_OK(xdev_stream_create(dev, XDEV_STREAM_PRIORITY_NORMAL, &side));
    XT_OK(xdev_memcpy_async(dst, src, n, side));
    XT_OK(xdev_stream_synchronize(side));
    XT_OK(xdev_stream_destroy(side));
}

/* ------------------------------------------------------------ skips
 * Check runs each test in a forked child by default: skips are recorded in a
 * shared anonymous mapping that xt_run creates before the children exist. */
#define XT_MAX_SKIPS 64
#define XT_SKIP_LEN 512
typedef struct xt_skips {
    atomic_int count; /* records made (may exceed XT_MAX_SKIPS) */
    atomic_int whole; /* of those, whole tests skipped */
    char line[XT_MAX_SKIPS][XT_SKIP_LEN];
} xt_skips_t;
static xt_skips_t *g_skips;

static xt_skips_t *skips_map(void) {
    if (g_skips == NULL) {
        void *p =
            mmap(NULL, sizeof *g_skips, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
        g_skips = p;
    }
    return g_skips;
}

/* START_TEST(x) defines x_fn, which runs x_body (xt.h): __func__ in a test
 * is "x_body". Strips either suffix in place. */
static void base_name(char *name) {
    static const char *const suffix[] = {"_body", "_fn"};
    size_t len = strlen(name);
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(suffix[i]);
        if (len > n && strcmp(name + len - n, suffix[i]) == 0) {
            name[len - n] = '\0';
            return;
        }
    }
}

static void skip_record(const char *test, const char *part, bool whole, const char *reason) {
    char name[128];
    snprintf(name, sizeof name, "%s", test ? test : "?");
    base_name(name);
    char line[XT_SKIP_LEN];
    snprintf(line, sizeof line, "%s%s%s%s: %s", name, part ? " (" : "", part ? part : "",
             part ? ")" : "", reason);
    fprintf(stderr, "SKIP %s\n", line);
    fflush(stderr);
    xt_skips_t *sk = skips_map();
    if (sk == NULL) return;
    int i = atomic_fetch_add(&sk->count, 1);
    if (whole) atomic_fetch_add(&sk->whole, 1);
    if (i < XT_MAX_SKIPS) snprintf(sk->line[i], XT_SKIP_LEN, "%s", line);
}

void xt_skip(const char *test, const char *fmt, ...) {
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    skip_record(test, NULL, true, reason);
}

bool xt_has_devices(const char *test, int n, const char *part) {
    int have = xt_device_count();
    if (have >= n) return true;
    char reason[128];
    snprintf(reason, sizeof reason, "needs %d %s device%s, %d present", n, xt_type_name(),
             n == 1 ? "" : "s", have);
    skip_record(test, part, part == NULL, reason);
    return false;
}

bool xt_is_cpu(const char *test) {
    if (xt_type() == XDEV_DEVICE_CPU) return true;
    char reason[160];
    snprintf(reason, sizeof reason,
             "tests the cpu backend itself (XDEV_CPU_* settings, capacity, its messages); the "
             "backend under test is %s",
             xt_type_name());
    skip_record(test, NULL, true, reason);
    return false;
}

const char *xt_libxdev_dir(void) {
    const char *dir = getenv("XT_LIBXDEV_DIR");
    return dir && *dir ? dir : NULL;
}

bool xt_plugin_installed(const char *name, char *where, size_t len) {
    const char *dirs[2] = {xt_libxdev_dir(), XT_INSTALL_LIBDIR};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i]) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/libxdev-%s.so", dirs[i], name);
        if (access(path, F_OK) == 0) {
            if (where) snprintf(where, len, "%s", path);
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------ the backend's skip list
 * Loaded once by xt_run (before Check forks the tests, so every child has
 * it); entries of other suites are kept and ignored. */
#define XT_LIST_MAX 128
typedef struct xt_list_entry {
    char key[160]; /* "<suite>.<test>" or "<suite>.<test>/<part>" */
    char reason[256];
    int line;
} xt_list_entry_t;
static xt_list_entry_t g_list[XT_LIST_MAX];
static int g_list_count;
static char g_list_where[256]; /* "backends/cuda/conformance.skip" */
static char g_suite[64];       /* the suite xt_run runs */

/* Parses XT_SKIP_LIST into g_list. Returns false with `err` filled for a
 * list that is named but missing or malformed: a typo there must not turn
 * into tests that silently run (or silently skip). */
static bool list_load(char *err, size_t len) {
    const char *path = getenv("XT_SKIP_LIST");
    if (path == NULL || *path == '\0') return true;
    const char *tail = strstr(path, "backends/");
    snprintf(g_list_where, sizeof g_list_where, "%s", tail ? tail : path);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, len, "XT_SKIP_LIST=%s: %s", path, strerror(errno));
        return false;
    }
    char buf[512];
    int line = 0;
    bool ok = true;
    while (ok && fgets(buf, sizeof buf, f)) {
        line++;
        char *p = buf;
        while (isspace((unsigned char)*p))
            p++;
        size_t n = strlen(p);
        while (n > 0 && isspace((unsigned char)p[n - 1]))
            p[--n] = '\0';
        if (*p == '\0' || *p == '#') continue;
        size_t key_len = strcspn(p, " \t");
        const char *reason = p + key_len;
        while (isspace((unsigned char)*reason))
            reason++;
        if (*reason == '\0' || memchr(p, '.', key_len) == NULL) {
            snprintf(err, len, "%s:%d: want '<suite>.<test>[/<part>]  <reason>': %s", g_list_where,
                     line, p);
            ok = false;
        } else if (g_list_count == XT_LIST_MAX || key_len >= sizeof g_list[0].key) {
            snprintf(err, len, "%s:%d: too many or too long entries", g_list_where, line);
            ok = false;
        } else {
            xt_list_entry_t *e = &g_list[g_list_count++];
            memcpy(e->key, p, key_len);
            e->key[key_len] = '\0';
            snprintf(e->reason, sizeof e->reason, "%s", reason);
            e->line = line;
        }
    }
    fclose(f);
    return ok;
}

bool xt_unsupported(const char *test, const char *part) {
    if (g_list_count == 0 || test == NULL) return false;
    char name[128], key[200];
    snprintf(name, sizeof name, "%s", test);
    base_name(name);
    snprintf(key, sizeof key, "%s.%s%s%s", g_suite, name, part ? "/" : "", part ? part : "");
    char whole[80]; /* "<suite>.*": every test of the suite */
    snprintf(whole, sizeof whole, "%s.*", g_suite);
    for (int i = 0; i < g_list_count; i++) {
        if (strcmp(g_list[i].key, key) != 0 && (part != NULL || strcmp(g_list[i].key, whole) != 0))
            continue;
        char reason[sizeof g_list[0].reason + sizeof g_list_where + 32];
        snprintf(reason, sizeof reason, "%s [%s:%d]", g_list[i].reason, g_list_where,
                 g_list[i].line);
        skip_record(name, part, part == NULL, reason);
        return true;
    }
    return false;
}

/* Does the entry's XDEV_ALLOC_CONF turn expandable segments on? */
static bool expandable_asked(void) {
    const char *conf = getenv("XDEV_ALLOC_CONF");
    return conf != NULL && (strstr(conf, "expandable_segments:true") != NULL ||
                            strstr(conf, "expandable_segments:True") != NULL);
}

/* ------------------------------------------------------------ is the backend usable here?
 * Asked in a child so that this process starts the suite with xdev not yet
 * initialised (Check forks each test; xdev refuses use in the child of an
 * initialised process, as CUDA does). Returns 0 and an empty reason when the
 * backend loads with a device, 0 and the reason when it does not (starting
 * with '~' when the backend works but refuses the entry's expandable
 * segments), -1 when the probe itself failed (reason says how). */
static int backend_probe(const char *backend, char *reason, size_t len) {
    reason[0] = '\0';
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(reason, len, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(reason, len, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        /* Does the backend work here at all? An entry's own device selection
         * (device.visible asks for 3,1) is the test's business: it skips,
         * naming the devices it needs, where the machine has too few. */
        unsetenv("XDEV_VISIBLE_DEVICES");
        char msg[512] = "";
        xdev_device_type_t type = XDEV_DEVICE_CPU;
        int count = 0;
        if (xdev_default_device_type(&type) != XDEV_SUCCESS)
            snprintf(msg, sizeof msg, "%s", xdev_last_error());
        else if (strcmp(xdev_device_type_name(type), backend) != 0)
            snprintf(msg, sizeof msg, "XDEV_BACKEND=%s gave a %s default device", backend,
                     xdev_device_type_name(type));
        else if (xdev_device_count(type, &count) != XDEV_SUCCESS)
            snprintf(msg, sizeof msg, "%s", xdev_last_error());
        else if (count < 1)
            snprintf(msg, sizeof msg, "no %s device", backend);
        else if (expandable_asked()) {
            /* the entry runs under expandable segments: a backend without
             * virtual memory slots refuses them (HIP's NVIDIA platform, the
             * null backend); '~' marks a setting, not the backend, missing */
            void *p = NULL;
            xdev_status_t st = xdev_malloc(&p, 1);
            if (st == XDEV_ERROR_NOT_SUPPORTED)
                snprintf(msg, sizeof msg, "~%s", xdev_last_error());
            else if (st == XDEV_SUCCESS)
                (void)xdev_free(p);
        }
        size_t n = strlen(msg);
        ssize_t w = n ? write(fds[1], msg, n) : 0;
        _exit(w == (ssize_t)n ? 0 : 3);
    }
    close(fds[1]);
    size_t used = 0;
    ssize_t r;
    while (used + 1 < len && (r = read(fds[0], reason + used, len - 1 - used)) != 0) {
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        used += (size_t)r;
    }
    reason[used] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(reason, len, "the probe of %s died (%s %d)", backend,
                 WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return -1;
    }
    return 0;
}

/* Is `backend` required to be usable (XT_BACKEND_REQUIRED=1, or named in
 * XT_REQUIRE_BACKENDS="cpu,cuda")? */
static bool backend_required(const char *backend) {
    const char *req = getenv("XT_BACKEND_REQUIRED");
    if (req && strcmp(req, "1") == 0) return true;
    const char *list = getenv("XT_REQUIRE_BACKENDS");
    size_t n = strlen(backend);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, backend, n) == 0) return true;
        p += len;
        if (*p == ',') p++;
    }
    return false;
}

int xt_run(SRunner *runner, const char *default_suite, int argc, char **argv) {
    const char *suite = argc > 1 ? argv[1] : default_suite;
    const char *tcase = argc > 2 ? argv[2] : NULL;
    xt_skips_t *sk = skips_map(); /* before the forked children exist */
    snprintf(g_suite, sizeof g_suite, "%s", suite);
    char err[640];
    if (!list_load(err, sizeof err)) {
        fprintf(stderr, "FAIL: the backend's skip list: %s\n", err);
        srunner_free(runner);
        return 1;
    }
    const char *backend = getenv("XT_CONFORMANCE");
    if (backend && *backend) {
        int rc = backend_probe(backend, err, sizeof err);
        if (rc == 0 && err[0] == '~') { /* the entry's setting: skipped wherever */
            fprintf(stderr,
                    "SKIP %s: the %s backend cannot run this entry's XDEV_ALLOC_CONF=%s: %s\n",
                    suite, backend, getenv("XDEV_ALLOC_CONF"), err + 1);
            srunner_free(runner);
            return XT_SKIP_CODE;
        }
        if (rc != 0 || err[0] != '\0') {
            bool fail = rc != 0 || backend_required(backend);
            fprintf(stderr, "%s %s: the %s backend cannot run here: %s\n", fail ? "FAIL" : "SKIP",
                    suite, backend, err);
            srunner_free(runner);
            return fail ? 1 : XT_SKIP_CODE;
        }
    }
    srunner_run(runner, suite, tcase, CK_NORMAL);
    int run = srunner_ntests_run(runner);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    if (run == 0) {
        fprintf(stderr, "no test matched suite '%s'%s%s\n", suite, tcase ? " tcase " : "",
                tcase ? tcase : "");
        return 2;
    }
    int skipped = sk ? atomic_load(&sk->count) : 0;
    int whole = sk ? atomic_load(&sk->whole) : 0;
    if (skipped > 0) {
        fprintf(stderr, "%d test%s skipped%s:\n", skipped, skipped == 1 ? "" : "s",
                whole < skipped ? " (in whole or in part)" : "");
        for (int i = 0; i < skipped && i < XT_MAX_SKIPS; i++)
            fprintf(stderr, "  %s\n", sk->line[i]);
        if (skipped > XT_MAX_SKIPS) fprintf(stderr, "  ... %d more\n", skipped - XT_MAX_SKIPS);
    }
    if (failed != 0) return 1;
    return whole >= run ? XT_SKIP_CODE : 0;
}

xdev_memory_stats_t xt_mem_stats(int dev) {
    xdev_memory_stats_t s;
    XT_OK(xdev_memory_stats(xt_dev(dev), &s));
    return s;
}

size_t xt_mem_free(int dev) {
    size_t f = 0, t = 0;
    XT_OK(xdev_mem_get_info(xt_dev(dev), &f, &t));
    return f;
}

int64_t xt_reserved(int dev) {
    return xt_mem_stats(dev).reserved_bytes[XDEV_STAT_ALL].current;
}

xdev_stream_t xt_new_stream(int dev) {
    xdev_stream_t s = NULL;
    XT_OK(xdev_stream_create(xt_dev(dev), XDEV_STREAM_PRIORITY_NORMAL, &s));
    return s;
}

void xt_churn_unchecked(xdev_stream_t s) {
    for (int i = 0; i < 16; i++) {
        void *t = NULL;
        XT_OK(xdev_malloc_stream(&t, (size_t)256 << (i % 4), s));
        XT_OK(xdev_free(t));
    }
}

double xt_load(xdev_dtype_t dt, const void *h, size_t i) {
    switch (dt) {
    case XDEV_DTYPE_F32:
        return ((const float *)h)[i];
    case XDEV_DTYPE_F64:
        return ((const double *)h)[i];
    case XDEV_DTYPE_F16:
        return xdev_f16_to_f32(((const uint16_t *)h)[i]);
    case XDEV_DTYPE_BF16:
        return xdev_bf16_to_f32(((const uint16_t *)h)[i]);
    case XDEV_DTYPE_I32:
        return ((const int32_t *)h)[i];
    default:
        return (double)((const int64_t *)h)[i];
    }
}

void xt_store(xdev_dtype_t dt, void *h, size_t i, double v) {
    switch (dt) {
    case XDEV_DTYPE_F32:
        ((float *)h)[i] = (float)v;
        break;
    case XDEV_DTYPE_F64:
        ((double *)h)[i] = v;
        break;
    case XDEV_DTYPE_F16:
        ((uint16_t *)h)[i] = xdev_f32_to_f16((float)v);
        break;
    case XDEV_DTYPE_BF16:
        ((uint16_t *)h)[i] = xdev_f32_to_bf16((float)v);
        break;
    case XDEV_DTYPE_I32:
        ((int32_t *)h)[i] = (int32_t)v;
        break;
    default:
        ((int64_t *)h)[i] = (int64_t)v;
    }
}
