/* SPDX-License-Identifier: Apache-2.0 */
/* backends/cpu/cpu_queue.c - a CPU stream's queue: ops run in order on one worker thread.
 *
 * Producers append op nodes to an intrusive FIFO under the stream mutex; the
 * worker (started on the first op) takes the whole pending list at once, runs
 * it without the lock, then gives the nodes back to the stream's free list so
 * that steady-state enqueues never call malloc. Progress is two counters:
 * `enqueued` (ops pushed) and `completed` (ops run); synchronize waits for
 * completed >= the enqueued count it saw, query compares them lock-free.
 *
 * The worker only touches idle_cv when a synchronize is waiting
 * (sync_waiters > 0) and its target is reached (wake_at), and producers only signal work_cv when
 * the worker sleeps, so an enqueue is a lock, a few stores and an unlock. A synchronize polls for
 * XDEV_CPU_SPIN_NS before sleeping, a worker out of work at least that long, longer when its last
 * idle spell was short and its work long (xdev_cpu_idle_spin_ns); both yield from the start when
 * the thread they wait for last polled on the same CPU.
 *
 * A worker asleep for XDEV_CPU_IDLE_RETIRE_MS retires (its thread ends; the
 * next enqueue joins it and starts another: one thread creation per idle
 * second at most, nothing on the enqueue fast path), so idle streams keep no
 * thread alive: a program whose main calls pthread_exit() still ends. At
 * process exit the workers finish the op they are running and drop the rest
 * (xdev_cpu_stream_abandon); `running` tells when a worker has left. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_clock.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_pool_policy.h"

/* Recycled op nodes kept per stream; more are freed after they ran. */
#define XDEV_CPU_FREE_OPS_MAX 4096u

/* How long a synchronize polls before it sleeps on its condvar, and the
 * least a worker that ran out of work polls. A futex wake-up costs tens of microseconds on some
 * (virtual) machines; polling this briefly keeps enqueue-then-synchronize
 * round trips in the microsecond range at the cost of a short busy wait. */
#define XDEV_CPU_SPIN_NS 20000

/* How long a worker sleeps without work before its thread ends. */
#define XDEV_CPU_IDLE_RETIRE_MS 1000

/* Set on worker threads so waits on a stream from its own host function fail
 * instead of deadlocking. */
static _Thread_local xdev_cpu_stream_t *tls_worker_stream;

xdev_cpu_stream_t *xdev_cpu_stream_self(void) {
    return tls_worker_stream;
}

xdev_cpu_stream_t *xdev_cpu_stream_new(int device, int priority, bool is_default) {
    xdev_cpu_stream_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                       "cpu:%d cannot allocate a stream: out of host memory", device);
        return NULL;
    }
    s->device = device;
    s->priority = priority;
    s->is_default = is_default;
    atomic_init(&s->refs, 1);
    atomic_init(&s->enqueued, 0);
    atomic_init(&s->completed, 0);
    atomic_init(&s->sync_waiters, 0);
    atomic_init(&s->discard, false);
    atomic_init(&s->wake_at, UINT64_MAX);
    atomic_init(&s->worker_cpu, -1);
    atomic_init(&s->sync_cpu, -1);
    /* Adaptive: the lock is held for a few stores at a time (an enqueue,
     * the worker taking the list), so a thread that finds it taken spins a
     * little before sleeping on it. A worker polls `enqueued`, which the
     * producer bumps just before unlocking: with a plain mutex, the worker
     * that saw it at once slept in the futex and needed a wake-up (issue 50). */
    pthread_mutexattr_t attr;
    int rc = pthread_mutexattr_init(&attr);
    if (rc == 0) {
        (void)pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
        rc = pthread_mutex_init(&s->mu, &attr);
        pthread_mutexattr_destroy(&attr);
    }
    if (rc == 0) {
        rc = pthread_cond_init(&s->work_cv, NULL);
        if (rc == 0) {
            rc = pthread_cond_init(&s->idle_cv, NULL);
            if (rc == 0) return s;
            pthread_cond_destroy(&s->work_cv);
        }
        pthread_mutex_destroy(&s->mu);
    }
    free(s);
    xdev_cpu_error(XDEV_ERROR_BACKEND, "cpu:%d cannot create a stream: pthread init failed (%s)",
                   device, strerror(rc));
    return NULL;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Poll `counter` until it differs from `value` (want_change) or reaches it
 * (!want_change), for at most limit_ns. True when the condition
 * holds. After a few pause-spins it yields, so that on an oversubscribed or
 * single-core machine the thread it waits for gets the CPU. `mine` is where
 * the caller publishes its CPU; when `other` (the CPU the thread it waits
 * for published) is the same one, it yields from the start: that thread
 * runs only when this one lets it (issue 50: a launch + synchronize took 6
 * us on the VM whenever the two threads shared a CPU, 0.4 us otherwise:
 * two rounds of 64 pauses). */
static bool spin_until(_Atomic uint64_t *counter, bool want_change, uint64_t value,
                       atomic_int *mine, const atomic_int *other, int64_t limit_ns) {
    int64_t deadline = 0;
    int cpu = sched_getcpu();
    atomic_store_explicit(mine, cpu, memory_order_relaxed);
    unsigned pauses = cpu >= 0 && atomic_load_explicit(other, memory_order_relaxed) == cpu ? 0 : 64;
    for (unsigned i = 0;; i++) {
        uint64_t v = atomic_load_explicit(counter, memory_order_acquire);
        if (want_change ? v != value : v >= value) return true;
        if (i < pauses) {
            cpu_relax();
            continue;
        }
        if (deadline == 0) deadline = xdev_cpu_now_ns() + limit_ns;
        sched_yield();
        if ((i & 7) == 0 && xdev_cpu_now_ns() > deadline) return false;
    }
}

/* Drop one op at exit: only its event bookkeeping happens (a record is
 * marked reached so nothing waits for it for ever). */
static void skip_op(xdev_cpu_op_t *op) {
    if (op->kind == XDEV_CPU_OP_JOB) op->u.job.release(op->u.job.user);
    if (op->kind == XDEV_CPU_OP_RECORD) xdev_cpu_event_reached(op->u.mark.event, op->u.mark.seq);
    if (op->kind == XDEV_CPU_OP_RECORD || op->kind == XDEV_CPU_OP_WAIT)
        xdev_cpu_event_release(op->u.mark.event);
}

/* Large copies and memsets are spread over the device's worker pool
 * (overlapping copies stay one memmove). */
#define XDEV_CPU_PARALLEL_BYTES (1u << 20)
#define XDEV_CPU_BYTES_GRAIN (256u << 10)

static void copy_range(void *arg, size_t begin, size_t end) {
    const xdev_cpu_op_t *op = arg;
    memcpy((char *)op->u.copy.dst + begin, (const char *)op->u.copy.src + begin, end - begin);
}

static void set_range(void *arg, size_t begin, size_t end) {
    const xdev_cpu_op_t *op = arg;
    memset((char *)op->u.set.dst + begin, op->u.set.value, end - begin);
}

static bool disjoint(const void *a, const void *b, size_t n) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x + n <= y || y + n <= x;
}

bool xdev_cpu_op_exec(const xdev_cpu_op_t *op, int device) {
    switch (op->kind) {
    case XDEV_CPU_OP_HOST_FN:
        op->u.host.fn(op->u.host.user);
        return true;
    case XDEV_CPU_OP_JOB:
        op->u.job.run(op->u.job.user);
        return true;
    case XDEV_CPU_OP_COPY:
        if (op->u.copy.bytes >= XDEV_CPU_PARALLEL_BYTES &&
            disjoint(op->u.copy.dst, op->u.copy.src, op->u.copy.bytes))
            xdev_cpu_parallel_for(device, op->u.copy.bytes, XDEV_CPU_BYTES_GRAIN, copy_range,
                                  (void *)op);
        else if (op->u.copy.bytes != 0)
            memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.bytes);
        return true;
    case XDEV_CPU_OP_SET:
        if (op->u.set.bytes >= XDEV_CPU_PARALLEL_BYTES)
            xdev_cpu_parallel_for(device, op->u.set.bytes, XDEV_CPU_BYTES_GRAIN, set_range,
                                  (void *)op);
        else if (op->u.set.bytes != 0)
            memset(op->u.set.dst, op->u.set.value, op->u.set.bytes);
        return true;
    default:
        return false;
    }
}

/* Run one op. Record/wait ops own a reference to their event, dropped here. */
static void run_op(xdev_cpu_op_t *op, int device) {
    if (xdev_cpu_op_exec(op, device)) {
        if (op->kind == XDEV_CPU_OP_JOB) op->u.job.release(op->u.job.user);
        return;
    }
    switch (op->kind) {
    case XDEV_CPU_OP_RECORD:
        xdev_cpu_event_reached(op->u.mark.event, op->u.mark.seq);
        xdev_cpu_event_release(op->u.mark.event);
        break;
    case XDEV_CPU_OP_FREE:
        xdev_cpu_block_release(op->u.free.device, op->u.free.ptr);
        break;
    case XDEV_CPU_OP_WAIT:
        xdev_cpu_event_wait_seq(op->u.mark.event, op->u.mark.seq);
        xdev_cpu_event_release(op->u.mark.event);
        break;
    default: /* run by xdev_cpu_op_exec above */
        break;
    }
}

/* The absolute CLOCK_REALTIME time `ms` from now (pthread_cond_timedwait). */
static struct timespec deadline_in_ms(int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* The worker: take the whole pending list, run it unlocked, recycle nodes.
 * Exits once `stopping` is set and the queue is empty, so destroy drains,
 * or after an idle spell (retired; see the top of the file). Its last act
 * under the lock is clearing `running` and waking idle_cv (process exit
 * waits there for it). */
static void *worker_main(void *arg) {
    xdev_cpu_stream_t *s = arg;
    tls_worker_stream = s;
    char name[16];
    snprintf(name, sizeof name, "xdev-cpu%d", s->device);
    pthread_setname_np(pthread_self(), name);

    uint64_t taken = 0;        /* ops handed to this worker so far */
    int64_t gap = 0, busy = 0; /* its last idle spell, its work since (the poll's length) */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int64_t idle = 0;
        if (s->head == NULL && !s->stopping) {
            /* Poll before sleeping (cpu_pool_policy.h's rule: long enough
             * for a launch + synchronize loop's next op); producers see
             * sleeping == false meanwhile and do not signal. */
            pthread_mutex_unlock(&s->mu);
            idle = xdev_cpu_now_ns();
            int64_t limit = xdev_cpu_idle_spin_ns(XDEV_CPU_SPIN_NS, gap, busy);
            busy = 0;
            spin_until(&s->enqueued, true, taken, &s->worker_cpu, &s->sync_cpu, limit);
            pthread_mutex_lock(&s->mu);
        }
        struct timespec retire_at = deadline_in_ms(XDEV_CPU_IDLE_RETIRE_MS);
        bool idle_too_long = false;
        while (s->head == NULL && !s->stopping && !idle_too_long) {
            s->sleeping = true;
            idle_too_long = pthread_cond_timedwait(&s->work_cv, &s->mu, &retire_at) == ETIMEDOUT;
            s->sleeping = false;
        }
        if (s->head == NULL) break; /* stopping, or idle too long: end this thread */
        int64_t t0 = xdev_cpu_now_ns();
        if (idle != 0) gap = t0 - idle;
        xdev_cpu_op_t *batch = s->head;
        s->head = s->tail = NULL;
        taken = atomic_load_explicit(&s->enqueued, memory_order_relaxed);
        /* Producers only take nodes meanwhile, so this room is a lower bound. */
        size_t room =
            s->free_count < XDEV_CPU_FREE_OPS_MAX ? XDEV_CPU_FREE_OPS_MAX - s->free_count : 0;
        pthread_mutex_unlock(&s->mu);

        xdev_cpu_op_t *keep_tail = NULL;
        size_t kept = 0;
        for (xdev_cpu_op_t *op = batch, *next; op != NULL; op = next) {
            next = op->next;
            if (atomic_load_explicit(&s->discard, memory_order_relaxed))
                skip_op(op);
            else
                run_op(op, s->device);
            /* seq_cst pairs with xdev_cpu_stream_wait_for's store of wake_at:
             * one of the two sides sees the other. Only a waiter whose
             * target is reached is woken, not every waiter after every op. */
            uint64_t done = atomic_fetch_add(&s->completed, 1) + 1;
            if (atomic_load(&s->sync_waiters) > 0 && done >= atomic_load(&s->wake_at)) {
                pthread_mutex_lock(&s->mu);
                atomic_store(&s->wake_at, UINT64_MAX); /* waiters not done re-arm it */
                pthread_cond_broadcast(&s->idle_cv);
                pthread_mutex_unlock(&s->mu);
            }
            if (kept < room) {
                keep_tail = op;
                kept++;
            } else {
                free(op);
            }
        }

        busy += xdev_cpu_now_ns() - t0;
        pthread_mutex_lock(&s->mu);
        if (keep_tail != NULL) {
            keep_tail->next = s->free_ops;
            s->free_ops = batch;
            s->free_count += kept;
        }
    }
    s->running = false;
    pthread_cond_broadcast(&s->idle_cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Start a backend thread (stream or pool worker) with asynchronous signals
 * blocked (it inherits the mask), so process-directed signals such as
 * SIGINT or SIGALRM go to the application's threads, not to a worker.
 * Faults stay deliverable. */
int xdev_cpu_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg) {
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGTRAP);
    sigdelset(&all, SIGABRT);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static int start_worker(xdev_cpu_stream_t *s) {
    return xdev_cpu_thread_start(&s->thread, worker_main, s);
}

xdev_status_t xdev_cpu_stream_begin_op(xdev_cpu_stream_t *s, xdev_cpu_op_t **op) {
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return xdev_cpu_error(XDEV_ERROR_INVALID_HANDLE,
                              "cpu:%d work enqueued on a stream that is being destroyed",
                              s->device);
    }
    if (!s->running) {
        if (s->started) { /* it retired: its thread has ended or is about to */
            pthread_join(s->thread, NULL);
            s->started = false;
        }
        int rc = start_worker(s);
        if (rc != 0) {
            pthread_mutex_unlock(&s->mu);
            return xdev_cpu_error(XDEV_ERROR_BACKEND,
                                  "cpu:%d cannot start the stream's worker thread: "
                                  "pthread_create failed (%s)",
                                  s->device, strerror(rc));
        }
        s->started = s->running = true;
    }
    xdev_cpu_op_t *node = s->free_ops;
    if (node != NULL) {
        s->free_ops = node->next;
        s->free_count--;
    } else {
        node = malloc(sizeof *node);
        if (node == NULL) {
            pthread_mutex_unlock(&s->mu);
            return xdev_cpu_error(XDEV_ERROR_OUT_OF_MEMORY,
                                  "cpu:%d cannot enqueue on a stream: out of host memory",
                                  s->device);
        }
    }
    *op = node;
    return XDEV_SUCCESS;
}

void xdev_cpu_stream_push_unlock(xdev_cpu_stream_t *s, xdev_cpu_op_t *op) {
    if (atomic_load_explicit(&s->capture, memory_order_relaxed) != NULL) {
        xdev_cpu_graph_append(s, op); /* recorded, not run */
        xdev_cpu_stream_cancel_unlock(s, op);
        return;
    }
    op->next = NULL;
    if (s->tail != NULL)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    atomic_store(&s->enqueued, atomic_load_explicit(&s->enqueued, memory_order_relaxed) + 1);
    /* Wake the worker once per sleep. Signalling under the lock keeps the
     * condvar alive even if another thread destroys the stream right after. */
    if (s->sleeping) {
        s->sleeping = false;
        pthread_cond_signal(&s->work_cv);
    }
    pthread_mutex_unlock(&s->mu);
}

xdev_status_t xdev_cpu_stream_enqueue(int device, void *stream, const xdev_cpu_op_t *proto) {
    xdev_cpu_stream_t *s;
    xdev_status_t st = xdev_cpu_stream_resolve(device, stream, &s);
    if (st != XDEV_SUCCESS) return st;
    xdev_cpu_op_t *op;
    st = xdev_cpu_stream_begin_op(s, &op);
    if (st != XDEV_SUCCESS) return st;
    op->kind = proto->kind;
    op->u = proto->u;
    xdev_cpu_stream_push_unlock(s, op);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_cpu_stream_enqueue_job(int device, void *stream, void (*run)(void *),
                                          void (*release)(void *), void *user) {
    xdev_cpu_op_t op = {.kind = XDEV_CPU_OP_JOB};
    op.u.job.run = run;
    op.u.job.release = release;
    op.u.job.user = user;
    return xdev_cpu_stream_enqueue(device, stream, &op);
}

void xdev_cpu_stream_cancel_unlock(xdev_cpu_stream_t *s, xdev_cpu_op_t *op) {
    op->next = s->free_ops;
    s->free_ops = op;
    s->free_count++;
    pthread_mutex_unlock(&s->mu);
}

uint64_t xdev_cpu_stream_enqueued(xdev_cpu_stream_t *s) {
    return atomic_load(&s->enqueued);
}

bool xdev_cpu_stream_idle(xdev_cpu_stream_t *s) {
    uint64_t enqueued = atomic_load(&s->enqueued);
    return atomic_load(&s->completed) >= enqueued;
}

xdev_status_t xdev_cpu_stream_wait_for(xdev_cpu_stream_t *s, uint64_t target) {
    if (atomic_load(&s->completed) >= target) return XDEV_SUCCESS;
    if (tls_worker_stream == s)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d: a host function cannot wait for its own stream (it "
                              "would wait for itself); wait after it returns, from another "
                              "thread or a later call",
                              s->device);
    bool done =
        spin_until(&s->completed, false, target, &s->sync_cpu, &s->worker_cpu, XDEV_CPU_SPIN_NS);
    /* No synchronize polls now: an idle worker on this CPU pauses before
     * yielding again (a producer that only enqueues is not waiting on it). */
    atomic_store_explicit(&s->sync_cpu, -1, memory_order_relaxed);
    if (done) return XDEV_SUCCESS;
    pthread_mutex_lock(&s->mu);
    atomic_fetch_add(&s->sync_waiters, 1);
    for (;;) {
        if (target < atomic_load(&s->wake_at)) atomic_store(&s->wake_at, target);
        if (atomic_load(&s->completed) >= target) break;
        pthread_cond_wait(&s->idle_cv, &s->mu);
    }
    atomic_fetch_sub(&s->sync_waiters, 1);
    pthread_mutex_unlock(&s->mu);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_cpu_stream_stop(xdev_cpu_stream_t *s) {
    if (tls_worker_stream == s)
        return xdev_cpu_error(XDEV_ERROR_INVALID_VALUE,
                              "cpu:%d: a host function cannot destroy the stream it runs on "
                              "(it would wait for itself); destroy it after the function "
                              "returns",
                              s->device);
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    bool joinable = s->started;
    s->started = false; /* this call joins it: nobody else may */
    if (s->sleeping) {
        s->sleeping = false;
        pthread_cond_signal(&s->work_cv);
    }
    pthread_mutex_unlock(&s->mu);
    /* The worker drains what is queued before it exits. */
    if (joinable) pthread_join(s->thread, NULL);
    return XDEV_SUCCESS;
}

bool xdev_cpu_stream_abandon(xdev_cpu_stream_t *s, const struct timespec *deadline) {
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->discard, true);
    s->stopping = true; /* nothing more is enqueued, and the worker leaves when done */
    if (s->sleeping) {
        s->sleeping = false;
        pthread_cond_signal(&s->work_cv);
    }
    /* exit() from one of this stream's host functions: its worker is us. */
    bool self = tls_worker_stream == s;
    /* Claim the join unless a thread destroying the stream already has (it
     * joins; we only wait for the worker to leave its loop). */
    bool join = s->started && !self;
    if (join) s->started = false;
    int rc = 0;
    while (!join && !self && s->running && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s->idle_cv, &s->mu, deadline);
    bool left = !s->running;
    pthread_mutex_unlock(&s->mu);
    /* Joined, the thread's own exit (OpenBLAS's per-thread cleanup) is over
     * too before the libraries' destructors run. */
    if (join) left = pthread_timedjoin_np(s->thread, NULL, deadline) == 0;
    return left;
}

void xdev_cpu_stream_retain(xdev_cpu_stream_t *s) {
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void xdev_cpu_stream_release(xdev_cpu_stream_t *s) {
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    for (xdev_cpu_op_t *op = s->free_ops, *next; op != NULL; op = next) {
        next = op->next;
        free(op);
    }
    pthread_cond_destroy(&s->idle_cv);
    pthread_cond_destroy(&s->work_cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
