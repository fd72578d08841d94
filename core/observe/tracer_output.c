/* SPDX-License-Identifier: Apache-2.0 */
/* tracer_output.c - a trace's device times and its file.
 *
 * Device times: each span holds two backend timing events; a device's
 * calibration events tie its clock to the host's (the first one is waited
 * for on the host at the device's first traced op, each later one - a new
 * one every second, so that elapsed times stay short enough for a float -
 * is placed by its elapsed time from the previous). A span's execution
 * interval is then calibration host time + elapsed(calibration, begin),
 * + elapsed(begin, end). On the CPU backend events carry the worker's
 * clock; on CUDA/HIP they are the driver's events.
 *
 * The file is the Trace Event Format's JSON object form: metadata naming
 * each process (the host, each device) and thread (host threads, device
 * streams), then the events sorted by time. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error_internal.h"
#include "base/strbuf.h"
#include "runtime/dispatch.h"
#include "observe/tracer_state.h"
#include "runtime/stream_names.h"
#include "xdev/event.h"

void *xdev_tracer_event_get(xdev_trace_session_t *t, xdev_device_record_t *rec) {
    int ty = rec->id.type, ix = rec->id.index;
    if (t->spare_len[ty][ix] > 0) return t->spare[ty][ix][--t->spare_len[ty][ix]];
    void *ev = NULL;
    if (!XDEV_HAS(rec->be, event, elapsed_time)) return NULL;
    if (xdev_be_event_create(rec, XDEV_EVENT_TIMING, &ev) != XDEV_SUCCESS) return NULL;
    return ev;
}

/* Keep ev for reuse (destroy it when the list cannot grow). */
static void event_put(xdev_trace_session_t *t, xdev_device_record_t *rec, void *ev) {
    int ty = rec->id.type, ix = rec->id.index;
    if (t->spare_len[ty][ix] == t->spare_cap[ty][ix]) {
        int cap = t->spare_cap[ty][ix] ? t->spare_cap[ty][ix] * 2 : 64;
        void **a = realloc(t->spare[ty][ix], (size_t)cap * sizeof *a);
        if (a == NULL) {
            (void)xdev_be_event_destroy(rec, ev);
            return;
        }
        t->spare[ty][ix] = a;
        t->spare_cap[ty][ix] = cap;
    }
    t->spare[ty][ix][t->spare_len[ty][ix]++] = ev;
}

/* Whether ev has completed: query, or (wait) synchronize. */
static bool event_done(xdev_device_record_t *rec, void *ev, bool wait) {
    return (wait ? xdev_be_event_synchronize(rec, ev) : xdev_be_event_query(rec, ev)) ==
           XDEV_SUCCESS;
}

/* The calibration's host time, computing it from its predecessors. */
static bool calib_known(xdev_calib_t *c, bool wait) {
    if (c->known) return true;
    if (c->prev == NULL || !calib_known(c->prev, wait) || !event_done(c->rec, c->event, wait))
        return false;
    float ms = 0;
    if (xdev_be_event_elapsed_time(c->rec, c->prev->event, c->event, &ms) != XDEV_SUCCESS)
        return false;
    c->host_ns = (uint64_t)((int64_t)c->prev->host_ns + (int64_t)((double)ms * 1e6));
    c->known = true;
    return true;
}

/* A host function's interval from its trampoline's stamps; false while it
 * has not run. Waiting (at stop) polls until `deadline`: a host function
 * may be blocked by the program for ever, and stopping must end. */
static bool hostfn_resolve(xdev_trec_t *r, bool wait, uint64_t deadline) {
    xdev_trace_hostfn_t *h = r->hostfn;
    uint64_t end = atomic_load_explicit(&h->end, memory_order_acquire);
    while (end == 0 && wait && xdev_tracer_now() < deadline) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        end = atomic_load_explicit(&h->end, memory_order_acquire);
    }
    if (end == 0 && !wait) return false;
    if (end != 0) {
        r->dev_begin = atomic_load_explicit(&h->begin, memory_order_relaxed);
        r->dev_end = end;
    }
    r->hostfn = NULL;
    if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1) free(h);
    return true;
}

/* Read one span's device interval; false when not finished yet. */
static bool span_resolve(xdev_trace_session_t *t, xdev_trec_t *r, bool wait, uint64_t deadline) {
    if (r->hostfn != NULL) return hostfn_resolve(r, wait, deadline);
    if (r->ev_end == NULL) return true;
    xdev_device_record_t *rec = r->rec;
    if (!event_done(rec, r->ev_end, wait)) return false;
    if (!calib_known(r->calib, wait)) {
        if (!wait) return false;
    } else {
        float to_begin = 0, dur = 0;
        if (xdev_be_event_elapsed_time(rec, r->calib->event, r->ev_begin, &to_begin) ==
                XDEV_SUCCESS &&
            xdev_be_event_elapsed_time(rec, r->ev_begin, r->ev_end, &dur) == XDEV_SUCCESS) {
            int64_t b = (int64_t)r->calib->host_ns + (int64_t)((double)to_begin * 1e6);
            r->dev_begin = b > 0 ? (uint64_t)b : 1;
            r->dev_end = r->dev_begin + (uint64_t)((double)(dur > 0 ? dur : 0) * 1e6);
        }
    }
    event_put(t, rec, r->ev_begin);
    event_put(t, rec, r->ev_end);
    r->ev_begin = r->ev_end = NULL;
    return true;
}

void xdev_tracer_resolve(xdev_trace_session_t *t, bool wait) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    uint64_t deadline = xdev_tracer_now() + 5000000000u; /* host functions: 5 s at most */
    for (int i = 0; i < t->ntracks; i++) {
        xdev_track_t *k = &t->tracks[i];
        while (k->head < k->len && span_resolve(t, &t->recs[k->pending[k->head]], wait, deadline)) {
            k->head++;
            t->unresolved--;
        }
    }
    xdev_core_error_restore(&saved);
}

/* ------------------------------------------------------------- the file */

typedef struct out_event {
    int64_t ts; /* ns since the session's start */
    size_t seq; /* record index * 4 + part: a stable order among equal times */
} out_event_t;

static int out_cmp(const void *a, const void *b) {
    const out_event_t *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int64_t rel(const xdev_trace_session_t *t, uint64_t ns) {
    return ns > t->start_ns ? (int64_t)(ns - t->start_ns) : 0;
}

/* "ts":microseconds with nanosecond digits. */
static void ts_json(xdev_strbuf_t *sb, const char *key, int64_t ns) {
    xdev_strbuf_printf(sb, ",\"%s\":%lld.%03lld", key, (long long)(ns / 1000),
                       (long long)(ns % 1000));
}

/* A span's arguments from its format and captured values (see
 * xdev_tracer_capture), appended as they would have been printed. */
static void span_args(xdev_strbuf_t *sb, const xdev_trec_t *r) {
    if (r->fmt == NULL) {
        xdev_strbuf_printf(sb, "\"args\":\"format not captured\"");
        return;
    }
    int n = 0;
    for (const char *p = r->fmt; *p != '\0';) {
        const char *pct = strchr(p, '%');
        size_t run = pct ? (size_t)(pct - p) : strlen(p);
        xdev_strbuf_append(sb, p, run);
        if (pct == NULL) break;
        p = pct + 1;
        if (*p == '%') {
            xdev_strbuf_append(sb, "%", 1);
            p++;
        } else if (*p == 'd') {
            xdev_strbuf_printf(sb, "%lld", (long long)r->argv[n++].i);
            p++;
        } else if (*p == 's') {
            xdev_strbuf_printf(sb, "%s", r->argv[n++].s);
            p++;
        } else if (*p == 'p') {
            xdev_strbuf_printf(sb, "%p", r->argv[n++].p);
            p++;
        } else if (*p == 'z') {
            xdev_strbuf_printf(sb, "%llu", (unsigned long long)r->argv[n++].u);
            p += 2;
        } else {
            xdev_strbuf_printf(sb, "%lld", (long long)r->argv[n++].i);
            p += 3;
        }
    }
}

static void args_json(xdev_strbuf_t *sb, const xdev_trec_t *r, const char *more) {
    xdev_strbuf_printf(sb, ",\"args\":{");
    size_t before = sb->len;
    if (r->kind == XDEV_TREC_SPAN)
        span_args(sb, r);
    else
        xdev_strbuf_printf(sb, "%s", r->args);
    if (more[0]) xdev_strbuf_printf(sb, "%s%s", sb->len > before ? "," : "", more);
    xdev_strbuf_printf(sb, "}");
}

/* Part `part` of record r (see the loop in xdev_tracer_write). */
static void event_json(xdev_strbuf_t *sb, const xdev_trace_session_t *t, const xdev_trec_t *r,
                       size_t index, int part, int64_t ts) {
    xdev_strbuf_printf(sb, ",\n{");
    switch (r->kind) {
    case XDEV_TREC_SPAN: {
        bool dev = r->dev_begin != 0;
        if (part == 0) { /* the enqueue, on the calling thread's track */
            xdev_strbuf_printf(sb,
                               "\"name\":\"%s\",\"cat\":\"enqueue\",\"ph\":\"X\",\"pid\":0,"
                               "\"tid\":%d",
                               r->name, r->host_tid);
            ts_json(sb, "ts", ts);
            ts_json(sb, "dur", (int64_t)(r->host_end - r->host_begin));
            args_json(sb, r, "");
        } else if (part == 1) { /* the work, on the stream's track */
            xdev_strbuf_printf(sb,
                               "\"name\":\"%s\",\"cat\":\"stream\",\"ph\":\"X\",\"pid\":%d,"
                               "\"tid\":%d",
                               r->name, r->pid, r->tid);
            ts_json(sb, "ts", ts);
            ts_json(sb, "dur",
                    dev ? (int64_t)(r->dev_end - r->dev_begin)
                        : (int64_t)(r->host_end - r->host_begin));
            char more[96];
            snprintf(more, sizeof more, "\"timing\":\"%s\",\"enqueued_us\":%lld.%03lld",
                     !dev            ? "enqueue (no device timing)"
                     : r->host_clock ? "host function"
                                     : "device",
                     (long long)(rel(t, r->host_begin) / 1000),
                     (long long)(rel(t, r->host_begin) % 1000));
            args_json(sb, r, more);
        } else { /* flow arrow from the enqueue to the work */
            xdev_strbuf_printf(sb,
                               "\"name\":\"%s\",\"cat\":\"flow\",\"ph\":\"%s\",\"id\":%zu,"
                               "\"pid\":%d,\"tid\":%d%s",
                               r->name, part == 2 ? "s" : "f", index, part == 2 ? 0 : r->pid,
                               part == 2 ? r->host_tid : r->tid, part == 2 ? "" : ",\"bp\":\"e\"");
            ts_json(sb, "ts", ts);
        }
        break;
    }
    case XDEV_TREC_MEMORY:
        if (part == 0) {
            xdev_strbuf_printf(sb,
                               "\"name\":\"%s\",\"cat\":\"memory\",\"ph\":\"i\",\"s\":\"t\","
                               "\"pid\":%d,\"tid\":%d",
                               r->name, r->pid, r->tid);
            ts_json(sb, "ts", ts);
            args_json(sb, r, "");
        } else {
            xdev_strbuf_printf(sb, "\"name\":\"memory\",\"ph\":\"C\",\"pid\":%d", r->pid);
            ts_json(sb, "ts", ts);
            xdev_strbuf_printf(sb, ",\"args\":{\"allocated\":%lld,\"reserved\":%lld}",
                               (long long)r->allocated, (long long)r->reserved);
        }
        break;
    case XDEV_TREC_HOST:
        xdev_strbuf_printf(sb, "\"name\":");
        xdev_strbuf_json_string(sb, r->label);
        xdev_strbuf_printf(sb, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d", r->name,
                           r->tid);
        ts_json(sb, "ts", ts);
        ts_json(sb, "dur", (int64_t)(r->host_end - r->host_begin));
        args_json(sb, r, "");
        break;
    case XDEV_TREC_MARKER:
        xdev_strbuf_printf(sb, "\"name\":");
        xdev_strbuf_json_string(sb, r->phase == 'E' ? "" : r->label);
        xdev_strbuf_printf(sb, ",\"cat\":\"marker\",\"ph\":\"%c\",%s\"pid\":0,\"tid\":%d", r->phase,
                           r->phase == 'i' ? "\"s\":\"t\"," : "", r->tid);
        ts_json(sb, "ts", ts);
        break;
    }
    xdev_strbuf_printf(sb, "}");
}

/* Metadata: the host and each device as processes, their tracks as threads. */
static void metadata_json(xdev_strbuf_t *sb, const xdev_trace_session_t *t) {
    xdev_strbuf_printf(sb, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
                           "\"args\":{\"name\":\"host\"}}");
    for (int i = 0; i < t->ntracks; i++) {
        const xdev_track_t *k = &t->tracks[i];
        bool first_of_pid = true;
        for (int j = 0; j < i; j++)
            first_of_pid &= t->tracks[j].pid != k->pid;
        if (k->pid != 0 && first_of_pid) { /* pid = 1 + type * XDEV_MAX_DEVICES + index */
            const xdev_backend_t *loaded = xdev_core_loaded[(k->pid - 1) / XDEV_MAX_DEVICES];
            const char *be = loaded != NULL ? loaded->name : "device";
            xdev_strbuf_printf(sb,
                               ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                               "\"args\":{\"name\":\"%s:%d\"}}",
                               k->pid, be, (k->pid - 1) % XDEV_MAX_DEVICES);
            xdev_strbuf_printf(sb,
                               ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,"
                               "\"tid\":0,\"args\":{\"sort_index\":%d}}",
                               k->pid, k->pid);
        }
        xdev_strbuf_printf(sb,
                           ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                           "\"args\":{\"name\":",
                           k->pid, k->tid);
        /* a name given after the track was made counts too (while the stream lives) */
        char named[XDEV_STREAM_NAME_MAX + 1];
        const xdev_backend_t *owner =
            k->pid != 0 ? xdev_core_loaded[(k->pid - 1) / XDEV_MAX_DEVICES] : NULL;
        bool renamed = owner != NULL &&
                       xdev_stream_names_by_native(&owner->devices[(k->pid - 1) % XDEV_MAX_DEVICES],
                                                   k->native, named, sizeof named);
        xdev_strbuf_json_string(sb, renamed ? named : k->name);
        xdev_strbuf_printf(sb, "}}");
    }
}

/* The session's events in time order. */
static void events_json(xdev_strbuf_t *sb, const xdev_trace_session_t *t) {
    out_event_t *ev = malloc((t->count * 4 + 1) * sizeof *ev);
    if (ev == NULL) {
        sb->failed = true;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++) {
        const xdev_trec_t *r = &t->recs[i];
        int64_t host = rel(t, r->host_begin);
        if (r->kind == XDEV_TREC_SPAN) {
            int64_t dev = r->dev_begin ? rel(t, r->dev_begin) : host;
            ev[n++] = (out_event_t){host, i * 4};
            ev[n++] = (out_event_t){dev, i * 4 + 1};
            if (r->dev_begin) {
                ev[n++] = (out_event_t){host, i * 4 + 2};
                ev[n++] = (out_event_t){dev, i * 4 + 3};
            }
        } else {
            ev[n++] = (out_event_t){host, i * 4};
            if (r->kind == XDEV_TREC_MEMORY) ev[n++] = (out_event_t){host, i * 4 + 1};
        }
    }
    qsort(ev, n, sizeof *ev, out_cmp);
    for (size_t k = 0; k < n && !sb->failed; k++)
        event_json(sb, t, &t->recs[ev[k].seq / 4], ev[k].seq / 4, (int)(ev[k].seq % 4), ev[k].ts);
    free(ev);
}

/* Give every event back to its backend and free the session. */
static void session_free(xdev_trace_session_t *t) {
    for (size_t i = 0; i < t->count; i++) {
        xdev_trec_t *r = &t->recs[i];
        if (r->ev_begin) (void)xdev_be_event_destroy(r->rec, r->ev_begin);
        if (r->ev_end) (void)xdev_be_event_destroy(r->rec, r->ev_end);
        if (r->hostfn && atomic_fetch_sub_explicit(&r->hostfn->refs, 1, memory_order_acq_rel) == 1)
            free(r->hostfn);
    }
    for (int i = 0; i < t->ntracks; i++)
        free(t->tracks[i].pending);
    for (xdev_calib_t *c = t->calibs, *next; c != NULL; c = next) {
        next = c->next_all;
        (void)xdev_be_event_destroy(c->rec, c->event);
        free(c);
    }
    for (int ty = 0; ty < XDEV_MAX_DEVICE_TYPES; ty++)
        for (int ix = 0; ix < XDEV_MAX_DEVICES; ix++) {
            if (t->spare[ty][ix] == NULL) continue;
            xdev_backend_t *be = xdev_core_loaded[ty];
            for (int k = 0; k < t->spare_len[ty][ix]; k++)
                (void)xdev_be_event_destroy(&be->devices[ix], t->spare[ty][ix][k]);
            free(t->spare[ty][ix]);
        }
    free(t->recs);
    free(t);
}

xdev_status_t xdev_tracer_write(xdev_trace_session_t *t) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_strbuf_t sb = {0};
    xdev_strbuf_printf(&sb,
                       "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"xdev\","
                       "\"records\":%zu,\"dropped_records\":%zu},\n\"traceEvents\":[\n",
                       t->count, t->dropped);
    metadata_json(&sb, t);
    events_json(&sb, t);
    xdev_strbuf_printf(&sb, "\n]}\n");
    char path[sizeof t->path];
    memcpy(path, t->path, sizeof path);
    FILE *f = t->out;
    size_t want = sb.len;
    bool ok = !sb.failed && fwrite(sb.buf, 1, want, f) == want;
    ok = (fclose(f) == 0) && ok;
    bool oom = sb.failed;
    free(sb.buf);
    session_free(t);
    xdev_core_error_restore(&saved);
    if (oom) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory to format the trace");
    if (!ok) return XDEV_FAIL(XDEV_ERROR_IO, "cannot write the trace to '%s'", path);
    return XDEV_SUCCESS;
}
