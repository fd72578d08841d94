/* SPDX-License-Identifier: Apache-2.0 */
/* test_graph_edges.c - graphs at their edges (part of test_graph; main is
 * test_graph.c's): a thread that exits in the middle of its capture, a
 * pool's use scope left open when its thread exits, forks that never join
 * back (an empty one, one joined only into another fork), two threads
 * ending their global captures side by side (issue 52: CUDA's
 * instantiation is an unsafe call while another global capture is under
 * way), a replay whose backend launch fails, and replays from several
 * threads (racing a destroy, four at once) or with another device
 * current. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_kernels.h"
#include "test_graph_common.h"

/* The fault injector (core/runtime/fault.h): exported for tests, in no public header. */
void xdev_fault_inject_begin(long fail_at);
long xdev_fault_inject_end(bool *fired);
const char *xdev_fault_failed_slot(void);

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    XT_OK(xdev_malloc_device(xt_dev(0), &p, bytes));
    return p;
}

/* memset on the current stream, done when it returns. */
static void set_now(void *d, int v, size_t n) {
    XT_OK(xdev_memset_async(d, v, n, NULL));
    XT_OK(xdev_device_synchronize(xt_dev(0)));
}

/* ------------------------------------------- a thread exits mid-capture */

typedef struct capturer {
    xdev_graph_t g;
    xdev_stream_t s;
    xdev_capture_mode_t mode;
    void *d;
    xdev_status_t begin, work;
} capturer_t;

/* Begins a capture, records a memset, and exits without capture_end. */
static void *capture_and_exit(void *arg) {
    capturer_t *c = arg;
    c->begin = xdev_graph_capture_begin(c->g, c->s, c->mode, NULL);
    c->work = xdev_memset_async(c->d, 5, 256, c->s);
    return NULL;
}

/* graph.h: a global or thread_local capture ends, invalidated, when the
 * thread that began it exits (only that thread may end it, as in CUDA):
 * the streams stop recording at once, capture_end on any thread then says
 * why, and the graph captures again. A relaxed capture stays under way and
 * any thread ends it. */
START_TEST(capture_thread_exits) {
    unsigned char *d = dev_alloc(256);
    const xdev_capture_mode_t modes[] = {XDEV_CAPTURE_GLOBAL, XDEV_CAPTURE_THREAD_LOCAL,
                                         XDEV_CAPTURE_RELAXED};
    for (int i = 0; i < 3; i++) {
        set_now(d, 0, 256);
        xdev_stream_t s = new_stream(0);
        capturer_t c = {.s = s, .mode = modes[i], .d = d};
        XT_OK(xdev_graph_create(&c.g));
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, capture_and_exit, &c), 0);
        pthread_join(t, NULL);
        ck_assert_msg(c.begin == XDEV_SUCCESS && c.work == XDEV_SUCCESS, "mode %d: %s, %s",
                      (int)modes[i], xdev_status_string(c.begin), xdev_status_string(c.work));
        bool capturing = true;
        XT_OK(xdev_stream_is_capturing(s, &capturing));
        unsigned char h[256];
        if (modes[i] == XDEV_CAPTURE_RELAXED) {
            ck_assert_msg(capturing, "a relaxed capture outlives the thread that began it");
            XT_OK(xdev_graph_capture_end(c.g)); /* from another thread */
            XT_OK(xdev_graph_replay(c.g, s));
            XT_OK(xdev_stream_synchronize(s));
            xt_peek(h, d, sizeof h);
            ck_assert_int_eq(h[17], 5);
        } else {
            ck_assert_msg(!capturing,
                          "mode %d: the stream still captures after its capturing thread exited",
                          (int)modes[i]);
            XT_OK(xdev_empty_cache()); /* no capture forbids it any more */
            XT_ERR(XDEV_ERROR_CAPTURE, xdev_graph_capture_end(c.g), "exited", "invalidated");
            XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(c.g, s), "nothing to replay");
            XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_capture_end(c.g), "without capture_begin");
            xt_peek(h, d, sizeof h);
            ck_assert_msg(h[17] == 0, "mode %d: the recorded memset ran", (int)modes[i]);
            /* the stream runs eagerly, the graph captures again */
            XT_OK(xdev_graph_capture_begin(c.g, s, modes[i], NULL));
            XT_OK(xdev_memset_async(d, 6, 256, s));
            XT_OK(xdev_graph_capture_end(c.g));
            XT_OK(xdev_graph_replay(c.g, s));
            XT_OK(xdev_stream_synchronize(s));
            xt_peek(h, d, sizeof h);
            ck_assert_int_eq(h[17], 6);
        }
        XT_OK(xdev_graph_destroy(c.g));
        XT_OK(xdev_stream_destroy(s));
    }
    /* A graph destroyed after its capture was abandoned, without capture_end. */
    xdev_stream_t s = new_stream(0);
    capturer_t c = {.s = s, .mode = XDEV_CAPTURE_GLOBAL, .d = d};
    XT_OK(xdev_graph_create(&c.g));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, capture_and_exit, &c), 0);
    pthread_join(t, NULL);
    XT_OK(c.begin);
    XT_OK(xdev_graph_destroy(c.g));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(d));
}
END_TEST

/* ----------------------------------------- a use scope at thread exit */

typedef struct scoper {
    xdev_mempool_t pool;
    xdev_status_t st;
} scoper_t;

/* Opens a scope, allocates from the pool, frees (the block stays cached in
 * the pool), and exits with the scope open. */
static void *scope_and_exit(void *arg) {
    scoper_t *c = arg;
    void *p = NULL;
    c->st = xdev_mempool_use_begin(c->pool);
    if (c->st == XDEV_SUCCESS) c->st = xdev_malloc_device(xt_dev(0), &p, 1 << 20);
    if (c->st == XDEV_SUCCESS) c->st = xdev_free(p);
    return NULL;
}

/* A scope left open when its thread exits is closed then: it no longer
 * holds the pool, whose memory goes back once the pool is destroyed. */
START_TEST(scope_open_at_thread_exit) {
    XT_OK(xdev_empty_cache());
    size_t before = 0, during = 0, after = 0;
    XT_OK(xdev_memory_reserved(xt_dev(0), &before));
    scoper_t c = {0};
    XT_OK(xdev_mempool_create(xt_dev(0), NULL, &c.pool));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, scope_and_exit, &c), 0);
    pthread_join(t, NULL);
    XT_OK(c.st);
    xdev_mempool_usage_t u;
    XT_OK(xdev_mempool_usage(c.pool, &u));
    ck_assert_msg(u.segments >= 1 && u.allocations == 0, "pool: %zu segments, %zu allocations",
                  u.segments, u.allocations);
    XT_OK(xdev_memory_reserved(xt_dev(0), &during));
    ck_assert_uint_ge(during, before + (1 << 20));
    XT_OK(xdev_mempool_destroy(c.pool));
    XT_OK(xdev_empty_cache());
    XT_OK(xdev_memory_reserved(xt_dev(0), &after));
    ck_assert_msg(after == before,
                  "the pool's memory stayed reserved after destroy (%zu bytes, %zu before): the "
                  "exited thread's scope still holds the pool",
                  after, before);
}
END_TEST

/* ------------------------------------------------- forks that never join */

/* Work joined only into another fork that never joins back is unjoined
 * (CUDA: cudaErrorStreamCaptureUnjoined); the same work joined back through
 * that fork to the origin is not, and a fork with no work has nothing to
 * join, on every backend as on CUDA (the H200 ends such a capture). */
START_TEST(unjoined_fork_shapes) {
    unsigned char *y = dev_alloc(256), *z = dev_alloc(256);
    xdev_stream_t s1 = new_stream(0), s2 = new_stream(0), s3 = new_stream(0);
    xdev_event_t e0, e1, e2;
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e0));
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e1));
    XT_OK(xdev_event_create(XDEV_EVENT_DEFAULT, &e2));
    for (int shape = 0; shape < 4; shape++) {
        xdev_graph_t g;
        XT_OK(xdev_graph_create(&g));
        XT_OK(xdev_graph_capture_begin(g, s1, XDEV_CAPTURE_GLOBAL, NULL));
        XT_OK(xdev_memset_async(z, 2, 256, s1));
        XT_OK(xdev_event_record(e0, s1));
        XT_OK(xdev_stream_wait_event(s2, e0)); /* fork s2 */
        if (shape == 0) {                      /* empty, never joined: nothing to join */
        } else if (shape == 1) {               /* empty, joined back */
            XT_OK(xdev_event_record(e1, s2));
            XT_OK(xdev_stream_wait_event(s1, e1));
        } else {
            XT_OK(xdev_memset_async(y, 3, 256, s2));
            XT_OK(xdev_event_record(e1, s2));
            XT_OK(xdev_stream_wait_event(s3, e0)); /* fork s3 */
            XT_OK(xdev_stream_wait_event(s3, e1)); /* s2's work joins s3 */
            if (shape == 3) {                      /* and s3 joins the origin */
                XT_OK(xdev_event_record(e2, s3));
                XT_OK(xdev_stream_wait_event(s1, e2));
            }
        }
        XT_OK(xdev_memset_async(z, 4, 128, s1));
        xdev_status_t st = xdev_graph_capture_end(g);
        bool joined = shape != 2;
        if (!joined) {
            ck_assert_msg(st == XDEV_ERROR_CAPTURE, "shape %d: capture_end %s: \"%s\"", shape,
                          xdev_status_string(st), st ? xdev_last_error() : "");
            ck_assert_msg(xt_icontains(xdev_last_error(), "join|unjoined"), "shape %d: \"%s\"",
                          shape, xdev_last_error());
            bool c1 = true, c2 = true, c3 = true;
            XT_OK(xdev_stream_is_capturing(s1, &c1));
            XT_OK(xdev_stream_is_capturing(s2, &c2));
            XT_OK(xdev_stream_is_capturing(s3, &c3));
            ck_assert_msg(!c1 && !c2 && !c3, "shape %d: streams still capture", shape);
        } else {
            ck_assert_msg(st == XDEV_SUCCESS, "shape %d: capture_end: \"%s\"", shape,
                          xdev_last_error());
            set_now(y, 0, 256);
            XT_OK(xdev_graph_replay(g, s1));
            XT_OK(xdev_stream_synchronize(s1));
            unsigned char hy[256], hz[256];
            xt_peek(hy, y, sizeof hy);
            xt_peek(hz, z, sizeof hz);
            ck_assert_msg(hz[0] == 4 && hz[200] == 2, "shape %d: z = %d %d", shape, hz[0], hz[200]);
            ck_assert_int_eq(hy[9], shape == 3 ? 3 : 0);
        }
        XT_OK(xdev_graph_destroy(g));
    }
    XT_OK(xdev_event_destroy(e0));
    XT_OK(xdev_event_destroy(e1));
    XT_OK(xdev_event_destroy(e2));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(s2));
    XT_OK(xdev_stream_destroy(s3));
    XT_OK(xdev_free(y));
    XT_OK(xdev_free(z));
}
END_TEST

/* ------------------------------- two global captures on two threads */

typedef struct twin {
    int index;
    xdev_kernel_t k;
    xdev_stream_t s;
    xdev_graph_t g;
    float *x, *y;
    pthread_barrier_t *bar;
    xdev_status_t begin, launch, end;
    char why[512];
} twin_t;

/* Both begin, both launch, then thread 0 ends while thread 1 still
 * captures, then thread 1 ends. */
static void *twin_capture(void *arg) {
    twin_t *t = arg;
    t->begin = xdev_graph_capture_begin(t->g, t->s, XDEV_CAPTURE_GLOBAL, NULL);
    pthread_barrier_wait(t->bar);
    long n = 1024;
    float a = (float)(t->index + 2);
    xdev_launch_config_t cfg = {.grid = {4, 1, 1}, .block = {256, 1, 1}, .stream = t->s};
    t->launch = XDEV_LAUNCH(t->k, &cfg, n, a, t->x, t->y);
    pthread_barrier_wait(t->bar);
    if (t->index == 0) {
        t->end = xdev_graph_capture_end(t->g);
        if (t->end != XDEV_SUCCESS) snprintf(t->why, sizeof t->why, "%s", xdev_last_error());
    }
    pthread_barrier_wait(t->bar);
    if (t->index == 1) {
        t->end = xdev_graph_capture_end(t->g);
        if (t->end != XDEV_SUCCESS) snprintf(t->why, sizeof t->why, "%s", xdev_last_error());
    }
    return NULL;
}

/* graph.h: capture_end makes the graph beside another thread's global
 * capture (instantiating a graph touches no capturing stream), on every
 * backend; both graphs replay what they recorded. */
START_TEST(global_captures_end_side_by_side) {
    xdev_module_t m;
    XT_OK(xdev_module_load(xt_dev(0), conformance_kernels_bundle(), &m));
    xdev_kernel_t k = NULL;
    XT_OK(xdev_module_get_kernel(m, "saxpy", &k));
    const size_t bytes = 1024 * sizeof(float);
    float *x = dev_alloc(bytes);
    float *h = malloc(bytes);
    for (int i = 0; i < 1024; i++)
        h[i] = 1.0f;
    XT_OK(xdev_memcpy(x, h, bytes));
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    twin_t tw[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        tw[i] = (twin_t){.index = i, .k = k, .s = new_stream(0), .x = x, .bar = &bar};
        tw[i].y = dev_alloc(bytes);
        set_now(tw[i].y, 0, bytes);
        XT_OK(xdev_graph_create(&tw[i].g));
        /* warm-up: the launch path is set up outside the captures */
        xdev_launch_config_t cfg = {.grid = {4, 1, 1}, .block = {256, 1, 1}, .stream = tw[i].s};
        long none = 0;
        float zero = 0.0f;
        XT_OK(XDEV_LAUNCH(k, &cfg, none, zero, x, tw[i].y));
        XT_OK(xdev_stream_synchronize(tw[i].s));
    }
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, twin_capture, &tw[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(tw[i].begin == XDEV_SUCCESS && tw[i].launch == XDEV_SUCCESS,
                      "thread %d: begin %s, launch %s", i, xdev_status_string(tw[i].begin),
                      xdev_status_string(tw[i].launch));
        ck_assert_msg(tw[i].end == XDEV_SUCCESS, "thread %d (%s): capture_end %s: \"%s\"", i,
                      i == 0 ? "the other still capturing" : "the other ended",
                      xdev_status_string(tw[i].end), tw[i].why);
    }
    for (int i = 0; i < 2; i++) {
        XT_OK(xdev_graph_replay(tw[i].g, tw[i].s));
        XT_OK(xdev_stream_synchronize(tw[i].s));
        xt_peek(h, tw[i].y, bytes);
        ck_assert_msg(h[0] == (float)(i + 2) && h[1023] == (float)(i + 2),
                      "thread %d's graph: y = %g .. %g", i, (double)h[0], (double)h[1023]);
        XT_OK(xdev_graph_destroy(tw[i].g));
        XT_OK(xdev_stream_destroy(tw[i].s));
        XT_OK(xdev_free(tw[i].y));
    }
    XT_OK(xdev_free(x));
    XT_OK(xdev_module_unload(m));
    free(h);
}
END_TEST

/* ------------------------------------------- a replay whose launch fails */

/* The backend's graph launch fails (the fault injector): the replay says
 * so, and the graph replays again afterwards. */
START_TEST(replay_launch_fails) {
    unsigned char *d = dev_alloc(256);
    xdev_stream_t s = new_stream(0);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_memset_async(d, 8, 256, s));
    XT_OK(xdev_graph_capture_end(g));
    set_now(d, 0, 256);
    bool hit = false;
    for (long n = 1; n <= 16 && !hit; n++) {
        xdev_fault_inject_begin(n);
        xdev_status_t st = xdev_graph_replay(g, s);
        bool fired = false;
        (void)xdev_fault_inject_end(&fired);
        if (!fired) break; /* the replay made fewer than n backend calls */
        hit = strstr(xdev_fault_failed_slot(), "graph.launch") != NULL;
        if (hit)
            ck_assert_msg(st != XDEV_SUCCESS,
                          "the replay whose backend launch failed returned success");
        XT_OK(xdev_stream_synchronize(s));
    }
    ck_assert_msg(hit, "no backend call of the replay was graph.launch");
    unsigned char h[256];
    xt_peek(h, d, sizeof h);
    ck_assert_msg(h[3] == 0, "the failed replay ran");
    XT_OK(xdev_graph_replay(g, s));
    XT_OK(xdev_stream_synchronize(s));
    xt_peek(h, d, sizeof h);
    ck_assert_int_eq(h[3], 8);
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_free(d));
}
END_TEST

/* A graph of device 1 replayed on its stream while device 0 is current:
 * the replay runs on the stream's device (the CUDA plugin launches on a
 * created stream without making its device current, as every
 * stream-ordered call does). */
START_TEST(replay_with_other_device_current) {
    if (!xt_has_devices(__func__, 2, "a replay while another device is current")) return;
    XT_OK(xdev_set_device(xt_dev(0)));
    xdev_stream_t s = new_stream(1);
    void *d = NULL;
    XT_OK(xdev_malloc_stream(&d, 4096, s));
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, s, XDEV_CAPTURE_GLOBAL, NULL));
    XT_OK(xdev_memset_async(d, 7, 4096, s));
    XT_OK(xdev_graph_capture_end(g));
    XT_OK(xdev_memset_async(d, 0, 4096, s));
    XT_OK(xdev_graph_replay(g, s));
    unsigned char h[4096];
    fetch(h, d, sizeof h, s);
    for (size_t i = 0; i < sizeof h; i++)
        ck_assert_msg(h[i] == 7, "byte %zu is %u after the replay", i, h[i]);
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_free(d));
    XT_OK(xdev_stream_destroy(s));
}
END_TEST

/* A replay racing a destroy: every replay either runs or fails cleanly. */
typedef struct racer {
    xdev_graph_t g;
    xdev_stream_t s;
    atomic_int ok, failed;
    atomic_bool stop;
} racer_t;

static void *replay_loop(void *arg) {
    racer_t *r = arg;
    while (!atomic_load(&r->stop)) {
        xdev_status_t st = xdev_graph_replay(r->g, r->s);
        if (st == XDEV_SUCCESS) {
            atomic_fetch_add(&r->ok, 1);
        } else {
            ck_assert_msg(st == XDEV_ERROR_INVALID_HANDLE, "replay during destroy: %s \"%s\"",
                          xdev_status_string(st), xdev_last_error());
            atomic_fetch_add(&r->failed, 1);
            break;
        }
    }
    return NULL;
}

START_TEST(replay_races_destroy) {
    float *d = dev_alloc(1024);
    racer_t r = {0};
    r.s = new_stream(0);
    xdev_stream_t cs = new_stream(0);
    XT_OK(xdev_graph_create(&r.g));
    XT_OK(xdev_graph_capture_begin(r.g, cs, XDEV_CAPTURE_RELAXED, NULL));
    XT_OK(xdev_memset_async(d, 2, 1024, cs));
    XT_OK(xdev_graph_capture_end(r.g));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, replay_loop, &r), 0);
    while (atomic_load(&r.ok) < 20)
        xt_sleep_ms(1);
    XT_OK(xdev_graph_destroy(r.g));
    xt_sleep_ms(5);
    atomic_store(&r.stop, true);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&r.failed), 1);
    XT_OK(xdev_stream_synchronize(r.s));
    XT_OK(xdev_stream_destroy(r.s));
    XT_OK(xdev_stream_destroy(cs));
    XT_OK(xdev_free(d));
}
END_TEST

/* Several threads replay one graph at once, each on its own stream: the
 * graph's lock (a spin lock that sleeps once spinning fails) is contended
 * on every call, and every replay must run (ASan/TSan watch the rest). */
typedef struct {
    xdev_graph_t g;
    xdev_stream_t s;
    int ok;
} replayer_t;

static void *replay_many(void *arg) {
    replayer_t *r = arg;
    for (int i = 0; i < 200; i++)
        if (xdev_graph_replay(r->g, r->s) == XDEV_SUCCESS) r->ok++;
    return NULL;
}

START_TEST(replay_concurrent) {
    enum { THREADS = 4 };
    float *d = dev_alloc(1024);
    xdev_stream_t cs = new_stream(0);
    xdev_graph_t g;
    XT_OK(xdev_graph_create(&g));
    XT_OK(xdev_graph_capture_begin(g, cs, XDEV_CAPTURE_RELAXED, NULL));
    XT_OK(xdev_memset_async(d, 3, 1024, cs));
    XT_OK(xdev_graph_capture_end(g));
    replayer_t r[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i] = (replayer_t){g, new_stream(0), 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, replay_many, &r[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(r[i].ok, 200);
        XT_OK(xdev_stream_synchronize(r[i].s));
        XT_OK(xdev_stream_destroy(r[i].s));
    }
    unsigned char h[1024];
    XT_OK(xdev_memcpy(h, d, sizeof h));
    for (int i = 0; i < 1024; i++)
        ck_assert_int_eq(h[i], 3);
    XT_OK(xdev_graph_destroy(g));
    XT_OK(xdev_stream_destroy(cs));
    XT_OK(xdev_free(d));
}
END_TEST

/* A reset waits for the device; a host function queued before it uses the
 * graph (the header lets a CPU host function call any xdev function). The
 * reset used to hold the graph's lock while it waited for that host
 * function, which waited for the lock: both hung. Now the host function's
 * replay is refused with a message and the reset completes. */
typedef struct reset_race {
    xdev_graph_t g;
    xdev_stream_t s;
    atomic_int go;
    xdev_status_t replay;
    char message[256];
} reset_race_t;

static void replay_from_host(void *arg) {
    reset_race_t *r = arg;
    while (!atomic_load(&r->go))
        xt_sleep_ms(1);
    xt_sleep_ms(50); /* the reset is waiting for this function by now */
    r->replay = xdev_graph_replay(r->g, r->s);
    snprintf(r->message, sizeof r->message, "%s", xdev_last_error());
}

START_TEST(reset_while_host_function_replays) {
    if (xt_type() != XDEV_DEVICE_CPU)
        XT_SKIP("only a CPU host function may call xdev (CUDA refuses runtime calls in one)");
    void *d = dev_alloc(4096);
    xdev_stream_t cs = new_stream(0), s1 = new_stream(0);
    reset_race_t r = {.s = new_stream(0), .replay = XDEV_SUCCESS};
    XT_OK(xdev_graph_create(&r.g));
    XT_OK(xdev_graph_capture_begin(r.g, cs, XDEV_CAPTURE_RELAXED, NULL));
    XT_OK(xdev_memset_async(d, 1, 4096, cs));
    XT_OK(xdev_graph_capture_end(r.g));
    XT_OK(xdev_launch_host_func(s1, replay_from_host, &r));
    atomic_store(&r.go, 1);
    XT_OK(xdev_graph_reset(r.g));
    XT_OK(xdev_stream_synchronize(s1));
    ck_assert_int_eq(r.replay, XDEV_ERROR_INVALID_VALUE);
    ck_assert_msg(strstr(r.message, "being reset") != NULL, "the replay said: %s", r.message);
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_graph_replay(r.g, r.s), "nothing to replay");
    XT_OK(xdev_graph_destroy(r.g));
    XT_OK(xdev_stream_destroy(r.s));
    XT_OK(xdev_stream_destroy(s1));
    XT_OK(xdev_stream_destroy(cs));
    XT_OK(xdev_free(d));
}
END_TEST

void graph_add_edge_tests(TCase *tc);
void graph_add_edge_tests(TCase *tc) {
    tcase_add_test(tc, capture_thread_exits);
    tcase_add_test(tc, scope_open_at_thread_exit);
    tcase_add_test(tc, unjoined_fork_shapes);
    tcase_add_test(tc, global_captures_end_side_by_side);
    tcase_add_test(tc, replay_launch_fails);
    tcase_add_test(tc, replay_with_other_device_current);
    tcase_add_test(tc, replay_races_destroy);
    tcase_add_test(tc, replay_concurrent);
    tcase_add_test(tc, reset_while_host_function_replays);
}
