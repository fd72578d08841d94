/* SPDX-License-Identifier: Apache-2.0 */
/* test_threads.c - 8 threads creating streams and events, switching devices,
 * allocating and enqueueing at once: per-thread state stays correct and the
 * run is clean under TSan. Conformance: XDEV_BACKEND=<backend under test>
 * (cpu: XDEV_CPU_DEVICES=4); thread i works on device i % count. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xt.h"

#define NTHREADS 8

typedef struct {
    int id;
    int iters;
    pthread_barrier_t *barrier;
    char failure[256];
    xdev_status_t init_status;
} worker_t;

typedef struct {
    int *slot;
    int value;
} store_t;

static void store_fn(void *arg) {
    store_t *s = arg;
    *s->slot = s->value;
}

#define WFAIL(w, ...)                                                                              \
    do {                                                                                           \
        if (!(w)->failure[0]) snprintf((w)->failure, sizeof(w)->failure, __VA_ARGS__);             \
        return NULL;                                                                               \
    } while (0)
#define WOK(w, call)                                                                               \
    do {                                                                                           \
        xdev_status_t st_ = (call);                                                                \
        if (st_ != XDEV_SUCCESS)                                                                   \
            WFAIL(w, "thread %d: %s -> %s: %s", (w)->id, #call, xdev_status_string(st_),           \
                  xdev_last_error());                                                              \
    } while (0)

static void *worker_main(void *arg) {
    worker_t *w = arg;
    pthread_barrier_wait(w->barrier);
    w->init_status = xdev_init(); /* all threads initialise at once */
    int ndev = 0; /* xt_type() does not initialise xdev: XDEV_BACKEND names the type */
    WOK(w, xdev_device_count(xt_type(), &ndev));
    if (ndev < 1) WFAIL(w, "thread %d: no %s device", w->id, xt_type_name());
    const int dev = w->id % ndev;
    WOK(w, xdev_set_device(xt_dev(dev)));
    xdev_stream_t s[2];
    WOK(w, xdev_stream_create(xt_dev(-1), XDEV_STREAM_PRIORITY_NORMAL, &s[0]));
    WOK(w, xdev_stream_create(xt_dev((dev + 1) % ndev), XDEV_STREAM_PRIORITY_HIGH, &s[1]));
    xdev_event_t ev;
    WOK(w, xdev_event_create(XDEV_EVENT_TIMING, &ev));

    int *slots = calloc((size_t)w->iters, sizeof *slots);
    store_t *stores = calloc((size_t)w->iters, sizeof *stores);
    atomic_int counter = 0;
    for (int i = 0; i < w->iters; i++) {
        /* Per-thread state survives other threads' switching. */
        xdev_device_t cur;
        WOK(w, xdev_get_device(&cur));
        if (cur.index != dev) WFAIL(w, "thread %d: current device %d != %d", w->id, cur.index, dev);
        xdev_stream_t c;
        WOK(w, xdev_stream_current(xt_dev(-1), &c));
        if (c != s[0] && i > 0) WFAIL(w, "thread %d: current stream changed under it", w->id);
        WOK(w, xdev_stream_set_current(s[0]));

        /* A guard to another device, then back. */
        xdev_device_guard_t g;
        WOK(w, xdev_device_guard_begin(&g, xt_dev((dev + 2) % ndev)));
        WOK(w, xdev_device_guard_end(&g));

        stores[i].slot = &slots[i];
        stores[i].value = i + 1;
        xdev_stream_t target = s[i % 2];
        WOK(w, xdev_launch_host_func(target, store_fn, &stores[i]));
        WOK(w, xdev_launch_host_func(target, xt_count_fn, &counter));
        if (i % 8 == 0) {
            WOK(w, xdev_event_record(ev, s[0]));
            WOK(w, xdev_stream_wait_event(s[1], ev));
            WOK(w, xdev_stream_wait_stream(s[0], s[1]));
        }
        if (i % 16 == 0) {
            void *p = NULL;
            unsigned char buf[64], back[64];
            memset(buf, w->id, sizeof buf);
            WOK(w, xdev_malloc(&p, sizeof buf));
            WOK(w, xdev_memcpy(p, buf, sizeof buf));
            WOK(w, xdev_memcpy(back, p, sizeof back));
            WOK(w, xdev_free(p));
            if (memcmp(buf, back, sizeof buf) != 0) WFAIL(w, "thread %d: copy mismatch", w->id);
            /* Thread-local errors under concurrency. */
            char name[32];
            snprintf(name, sizeof name, "bogus%d:0", w->id);
            xdev_device_t d;
            if (xdev_device_parse(name, &d) != XDEV_ERROR_INVALID_VALUE)
                WFAIL(w, "thread %d: parse of %s did not fail", w->id, name);
            if (!strstr(xdev_last_error(), name))
                WFAIL(w, "thread %d: message \"%s\" is not about %s", w->id, xdev_last_error(),
                      name);
        }
        if (i % 32 == 31) {
            /* Create and destroy streams and events while others work. */
            xdev_stream_t tmp;
            xdev_event_t te;
            WOK(w, xdev_stream_create(xt_dev(i % ndev), XDEV_STREAM_PRIORITY_NORMAL, &tmp));
            WOK(w, xdev_event_create(XDEV_EVENT_DEFAULT, &te));
            WOK(w, xdev_launch_host_func(tmp, xt_count_fn, &counter));
            WOK(w, xdev_event_record(te, tmp));
            WOK(w, xdev_event_synchronize(te));
            WOK(w, xdev_event_destroy(te));
            WOK(w, xdev_stream_destroy(tmp));
        }
    }
    WOK(w, xdev_stream_synchronize(s[0]));
    WOK(w, xdev_stream_synchronize(s[1]));
    /* counter: one per iteration plus one per temporary stream. */
    int expected = w->iters + w->iters / 32;
    if (atomic_load(&counter) != expected)
        WFAIL(w, "thread %d: %d host funcs ran, expected %d", w->id, atomic_load(&counter),
              expected);
    for (int i = 0; i < w->iters; i++)
        if (slots[i] != i + 1) WFAIL(w, "thread %d: host func %d did not run", w->id, i);
    WOK(w, xdev_event_destroy(ev));
    WOK(w, xdev_stream_destroy(s[0]));
    WOK(w, xdev_stream_destroy(s[1]));
    xdev_stream_t c;
    WOK(w, xdev_stream_current(xt_dev(dev), &c));
    xdev_stream_t d;
    WOK(w, xdev_stream_default(xt_dev(dev), &d));
    if (c != d) WFAIL(w, "thread %d: current stream not reset after destroy", w->id);
    free(slots);
    free(stores);
    return NULL;
}

START_TEST(eight_threads) {
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, NTHREADS + 1);
    worker_t w[NTHREADS];
    pthread_t th[NTHREADS];
    const int iters = xt_iters(1000, 64);
    for (int i = 0; i < NTHREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        w[i].iters = iters;
        w[i].barrier = &barrier;
    }
    for (int i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    /* Released together: in fork mode these are the process's first xdev
     * calls, so lazy initialisation races too. The main thread joins in. */
    pthread_barrier_wait(&barrier);
    xdev_stream_t mine = NULL;
    XT_OK(xdev_stream_create(xt_dev(xt_wrap(3)), XDEV_STREAM_PRIORITY_NORMAL, &mine));
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < NTHREADS; i++) {
        ck_assert_msg(w[i].failure[0] == '\0', "%s", w[i].failure);
        ck_assert_int_eq(w[i].init_status, XDEV_SUCCESS);
    }
    XT_OK(xdev_stream_destroy(mine));
}
END_TEST

typedef struct {
    xdev_stream_t shared;
    int iters;
    int *order; /* this thread's sequence of observed values */
    atomic_int *global;
} shared_worker_t;

typedef struct {
    atomic_int *global;
    int *slot;
} take_t;

static void take_fn(void *arg) {
    take_t *t = arg;
    *t->slot = atomic_fetch_add(t->global, 1);
}

static void *shared_main(void *arg) {
    shared_worker_t *w = arg;
    take_t *takes = calloc((size_t)w->iters, sizeof *takes);
    for (int i = 0; i < w->iters; i++) {
        takes[i].global = w->global;
        takes[i].slot = &w->order[i];
        if (xdev_launch_host_func(w->shared, take_fn, &takes[i]) != XDEV_SUCCESS) break;
    }
    /* The stream's work keeps pointing at takes[] until it has run. */
    (void)xdev_stream_synchronize(w->shared);
    free(takes);
    return NULL;
}

START_TEST(one_stream_many_producers) {
    xdev_stream_t shared;
    XT_OK(xdev_stream_create(xt_dev(xt_wrap(1)), XDEV_STREAM_PRIORITY_NORMAL, &shared));
    const int iters = xt_iters(2000, 100);
    atomic_int global = 0;
    shared_worker_t w[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i].shared = shared;
        w[i].iters = iters;
        w[i].global = &global;
        w[i].order = calloc((size_t)iters, sizeof(int));
        for (int k = 0; k < iters; k++)
            w[i].order[k] = -1;
        ck_assert_int_eq(pthread_create(&th[i], NULL, shared_main, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    XT_OK(xdev_stream_synchronize(shared));
    ck_assert_int_eq(atomic_load(&global), NTHREADS * iters);
    /* Each producer's functions ran in its enqueue order. */
    for (int i = 0; i < NTHREADS; i++) {
        for (int k = 0; k < iters; k++) {
            ck_assert_msg(w[i].order[k] >= 0, "thread %d func %d never ran", i, k);
            if (k) ck_assert_msg(w[i].order[k] > w[i].order[k - 1], "thread %d out of order", i);
        }
        free(w[i].order);
    }
    XT_OK(xdev_stream_destroy(shared));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, eight_threads);
    tcase_add_test(tc, one_stream_many_producers);
    suite_add_tcase(s, tc);
    return xt_run(srunner_create(s), "threads", argc, argv);
}
