/* xt.c - shared helpers for the xdev Check suites. */
#include "xt.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void xt_gate_wait_fn(void *user) {
    xt_gate_t *gate = user;
    atomic_fetch_add(&gate->entered, 1);
    pthread_mutex_lock(&gate->mu);
    while (!gate->open)
        pthread_cond_wait(&gate->cv, &gate->mu);
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
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += o->ms / 1000;
    deadline.tv_nsec += (long)(o->ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
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

int xt_run(SRunner *runner, const char *default_suite, int argc, char **argv) {
    const char *suite = argc > 1 ? argv[1] : default_suite;
    const char *tcase = argc > 2 ? argv[2] : NULL;
    srunner_run(runner, suite, tcase, CK_NORMAL);
    int run = srunner_ntests_run(runner);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    if (run == 0) {
        fprintf(stderr, "no test matched suite '%s'%s%s\n", suite, tcase ? " tcase " : "",
                tcase ? tcase : "");
        return 2;
    }
    return failed == 0 ? 0 : 1;
}
