/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_state.h - what a tracing session holds (tracer.c records it,
 * tracer_output.c maps device times onto the host clock and writes the
 * file). Everything here is guarded by xdev_tracer.lock. */
#ifndef XDEV_CORE_TRACER_STATE_H
#define XDEV_CORE_TRACER_STATE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "observe/tracer.h"

#define XDEV_TRACE_MAX_RECORDS ((size_t)1 << 21)
#define XDEV_TRACE_MAX_TRACKS 1024

typedef enum {
    XDEV_TREC_SPAN = 0,   /* work on a stream: host enqueue + device execution */
    XDEV_TREC_MEMORY = 1, /* allocator event (instant) + counter */
    XDEV_TREC_MARKER = 2, /* range begin/end, mark: host thread track */
    XDEV_TREC_HOST = 3,   /* host work on no stream (a compile): host thread track */
} xdev_trec_kind_t;

/* The host time of a device timing event: known for the first one of a
 * device (synchronized at creation), else computed from the previous one
 * (tracer_output.c), so that each elapsed time read stays short enough for
 * a float's precision. */
typedef struct xdev_calib {
    xdev_device_record_t *rec;
    void *event;
    uint64_t host_ns;
    uint64_t made_ns; /* when it was recorded (host clock): rebase after a second */
    bool known;
    struct xdev_calib *prev, *next_all;
} xdev_calib_t;

/* A span's arguments are kept as its format and values, and formatted only
 * when the file is written: vsnprintf on every traced call was most of a
 * span's cost. Formats use %d, %zu, %lld, %p, %s (static, JSON-safe
 * strings) and %%. */
#define XDEV_TRACE_ARGS 6
typedef union xdev_targ {
    int64_t i;
    uint64_t u;
    const void *p;
    const char *s;
} xdev_targ_t;

/* A traced host function runs through a trampoline that stamps the host
 * clock around it: exact times, and no timing events in the stream's queue
 * (on CUDA, two events per host function tripled the queue and its host
 * round trips). Shared by the trampoline and the record; the last to let
 * go frees it. */
typedef struct xdev_trace_hostfn {
    xdev_host_fn_t fn;
    void *user;
    _Atomic uint64_t begin, end; /* CLOCK_MONOTONIC ns; 0 = not yet */
    _Atomic int refs;
} xdev_trace_hostfn_t;

typedef struct xdev_trec {
    uint8_t kind;
    char phase;       /* markers: 'B', 'E', 'i' */
    const char *name; /* spans, memory: a static string */
    const char *fmt;  /* spans: the arguments' format (NULL: args holds them) */
    xdev_targ_t argv[XDEV_TRACE_ARGS];
    char label[64]; /* markers: the message, at most 63 bytes cut at a character (trace.h) */
    char args[128]; /* memory, host work: JSON members without braces */
    int pid, tid;   /* track: pid 0 = host (tid = thread), else device (tid = stream) */
    int host_tid;   /* spans: the enqueuing thread */
    uint64_t host_begin, host_end;
    uint64_t dev_begin, dev_end; /* 0 = not known (yet) */
    void *ev_begin, *ev_end;     /* until resolved */
    xdev_trace_hostfn_t *hostfn; /* host functions, until resolved */
    bool host_clock;             /* host functions: timed by their trampoline */
    xdev_calib_t *calib;
    xdev_device_record_t *rec;
    int64_t allocated, reserved; /* memory */
} xdev_trec_t;

/* A device x stream track, or a host thread track. A stream's spans finish
 * in stream order, so its unread spans wait in a FIFO and a pass reads
 * each track from its head until one is not finished: a pass costs what it
 * resolves, not what is pending. */
typedef struct xdev_track {
    int pid;
    const void *native; /* device tracks: the native stream */
    int tid;
    char name[72];   /* a stream's name (63 bytes at most) or its address */
    size_t *pending; /* record indices, [head, len) unread */
    size_t head, len, cap;
} xdev_track_t;

/* One tracing session, from start to stop. While it runs it is reached
 * through xdev_tracer.cur under xdev_tracer.lock; stop detaches it, then
 * waits for its device times and writes it without the lock (a host
 * function on a stream being waited for may itself allocate, and so trace). */
typedef struct xdev_trace_session {
    uint64_t id;
    int pid;   /* the process that started it (a forked child inherits the atexit handler) */
    FILE *out; /* opened at start, so that a bad path fails there */
    char path[4096];
    uint64_t start_ns; /* ts 0 in the file */
    xdev_trec_t *recs;
    size_t count, cap, dropped;
    size_t unresolved; /* spans whose device times are not read yet */
    size_t resolve_at; /* unresolved count that triggers a pass */
    xdev_track_t tracks[XDEV_TRACE_MAX_TRACKS];
    int ntracks;
    xdev_calib_t *calib_now[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];
    xdev_calib_t *calibs; /* every calibration (next_all) */
    void **spare[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];
    int spare_len[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];
    int spare_cap[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];
} xdev_trace_session_t;

typedef struct xdev_tracer_state {
    pthread_mutex_t lock;
    xdev_trace_session_t *cur; /* NULL: not tracing */
} xdev_tracer_state_t;

extern xdev_tracer_state_t xdev_tracer;

uint64_t xdev_tracer_now(void);

/* Device tracks are pid 1 + type * XDEV_MAX_DEVICES + index. */
static inline int xdev_tracer_pid(const xdev_device_record_t *rec) {
    return 1 + (int)rec->id.type * XDEV_MAX_DEVICES + rec->id.index;
}

/* tracer.c: the values `fmt` consumes from ap, into r->argv (false when
 * the format uses a conversion the writer does not know). */
bool xdev_tracer_capture(xdev_trec_t *r, const char *fmt, va_list ap);

/* tracer_output.c. Read the device times of finished spans (with `wait`,
 * of all: waits for the device), giving their events back to the spares.
 * Called with the lock held (wait false) or on a detached session. */
void xdev_tracer_resolve(xdev_trace_session_t *s, bool wait);
/* A timing event of rec's device: a spare, or a new one; NULL when the
 * backend has none. */
void *xdev_tracer_event_get(xdev_trace_session_t *s, xdev_device_record_t *rec);
/* Write a detached session's JSON to its file, close it and free the
 * session and its events. */
xdev_status_t xdev_tracer_write(xdev_trace_session_t *s);

#endif
