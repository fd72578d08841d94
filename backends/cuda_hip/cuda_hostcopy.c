/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cuda_hip/cuda_hostcopy.c - a host memcpy spread over a few threads,
 * for the pageable side of staged copies (one thread's memcpy into pinned
 * memory is slower than the PCIe link).
 *
 * XDEV_CUDA_COPY_THREADS=N (default 8 but at most half the online CPUs; N
 * from 1 to 16, at most the online CPUs; 1 = the caller alone) sets how
 * many threads copy, the caller included (on an H100 host: 4 threads
 * 15 GB/s, 8 threads 22 GB/s).
 * Workers start on the first large copy, spin briefly between jobs (staged
 * copies come in quick succession) and then sleep on a condition variable.
 * One job runs at a time; concurrent callers queue on job_lock. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"

#define MAX_THREADS 16
#define DEFAULT_THREADS 8
#define MIN_PART ((size_t)256 << 10) /* below this per thread, fewer threads */
#define SPIN_ROUNDS 20000

typedef struct copy_pool {
    pthread_mutex_t job_lock; /* one job at a time */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_cond_t done;
    atomic_uint gen;      /* bumped per job */
    unsigned start_gen;   /* gen when the workers were started: their first "seen" */
    atomic_int remaining; /* worker parts not finished */
    char *dst;
    const char *src;
    size_t bytes, part;
    int parts;
    int nworkers;
    bool started, stop;
    pthread_t threads[MAX_THREADS];
} copy_pool_t;

static copy_pool_t g_pool = {
    .job_lock = PTHREAD_MUTEX_INITIALIZER,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_threads = DEFAULT_THREADS;

/* Copy this worker's part of the current job, if it has one. */
static void do_part(int part) {
    copy_pool_t *p = &g_pool;
    if (part >= p->parts) return;
    size_t off = (size_t)part * p->part;
    if (off >= p->bytes) return;
    size_t n = off + p->part > p->bytes ? p->bytes - off : p->part;
    memcpy(p->dst + off, p->src + off, n);
}

static void *worker_main(void *arg) {
    copy_pool_t *p = &g_pool;
    int id = (int)(intptr_t)arg; /* 1..nworkers; the caller copies part 0 */
    /* Not the current gen: the first job may already be published when this
     * thread starts running. */
    unsigned seen = p->start_gen;
    for (;;) {
        unsigned g = seen;
        for (int i = 0; i < SPIN_ROUNDS && g == seen; i++)
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen && !p->stop)
                pthread_cond_wait(&p->wake, &p->mu);
            bool stop = p->stop;
            pthread_mutex_unlock(&p->mu);
            if (stop) return NULL;
        }
        seen = g;
        do_part(id);
        if (atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* After fork the child has no workers: start over if it copies. */
static void after_fork_child(void) {
    g_pool.started = false;
    g_pool.nworkers = 0;
    pthread_mutex_init(&g_pool.job_lock, NULL);
    pthread_mutex_init(&g_pool.mu, NULL);
}

static const char *threads_env(void) {
    const xdev_host_services_t *host = xc_state.host;
    return host && XDEV_BACKEND_HAS_SLOT(host, get_env) && host->get_env
               ? host->get_env(XC_ENV("COPY_THREADS"))
               : NULL;
}

xdev_status_t xc_hostcopy_check_env(void) {
    const char *v = threads_env();
    long n;
    if (v != NULL && *v != '\0' && !xc_env_int(v, 1, MAX_THREADS, &n))
        return xc_error(XDEV_ERROR_ENV,
                        XC_ENV("COPY_THREADS") "='%s' is malformed (expected an integer from 1 to "
                                               "%d; empty = 8, at most half the online CPUs)",
                        v, MAX_THREADS);
    return XDEV_SUCCESS;
}

/* Values were validated by xc_hostcopy_check_env at plugin init. */
static void read_config(void) {
    const char *v = threads_env();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0 && g_threads > cpus / 2) g_threads = cpus >= 2 ? (int)(cpus / 2) : 1;
    long n;
    if (v != NULL && *v != '\0' && xc_env_int(v, 1, MAX_THREADS, &n)) { /* up to the online CPUs */
        g_threads = (int)n;
        if (cpus > 0 && g_threads > cpus) g_threads = (int)cpus;
    }
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* Start the workers; called with job_lock held. Fewer start if the system refuses. */
static void start_workers(void) {
    copy_pool_t *p = &g_pool;
    p->started = true;
    p->stop = false;
    p->nworkers = 0;
    p->start_gen = atomic_load(&p->gen);
    for (int i = 1; i < g_threads; i++) {
        if (pthread_create(&p->threads[p->nworkers], NULL, worker_main, (void *)(intptr_t)i) != 0)
            break;
        p->nworkers++;
    }
}

void xc_parallel_memcpy(void *dst, const void *src, size_t bytes) {
    pthread_once(&g_once, read_config);
    if (g_threads <= 1 || bytes < 2 * MIN_PART) {
        memcpy(dst, src, bytes);
        return;
    }
    copy_pool_t *p = &g_pool;
    pthread_mutex_lock(&p->job_lock);
    if (!p->started) start_workers();
    int parts = p->nworkers + 1;
    if (bytes / (size_t)parts < MIN_PART) parts = (int)(bytes / MIN_PART);
    if (parts <= 1 || p->nworkers == 0) {
        pthread_mutex_unlock(&p->job_lock);
        memcpy(dst, src, bytes);
        return;
    }
    /* Parts are multiples of 4 KiB so that no two threads share a page. */
    size_t part = (bytes + (size_t)parts - 1) / (size_t)parts;
    part = (part + 4095) & ~(size_t)4095;
    p->dst = dst;
    p->src = src;
    p->bytes = bytes;
    p->part = part;
    p->parts = parts;
    atomic_store_explicit(&p->remaining, p->nworkers, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    do_part(0);
    for (int i = 0;
         i < SPIN_ROUNDS && atomic_load_explicit(&p->remaining, memory_order_acquire) > 0; i++)
        ;
    if (atomic_load_explicit(&p->remaining, memory_order_acquire) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load_explicit(&p->remaining, memory_order_acquire) > 0)
            pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_unlock(&p->job_lock);
}

void xc_hostcopy_shutdown(void) {
    copy_pool_t *p = &g_pool;
    pthread_mutex_lock(&p->job_lock);
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->nworkers; i++)
            pthread_join(p->threads[i], NULL);
        p->started = false;
        p->nworkers = 0;
    }
    pthread_mutex_unlock(&p->job_lock);
}
