/* SPDX-License-Identifier: Apache-2.0 */
/* stream_sanitizer.c - the memory side of the stream-order sanitizer
 * (xdev/sanitizer.h): per allocation, the uses still worth checking
 * against, and the reports.
 *
 * An allocation's entry keeps a short list of uses: each the epoch of the
 * work (runtime/stream_order.h), read or write, the bytes it touched, the
 * call's name and its stack. A new use is checked against every listed use
 * it overlaps and conflicts with (one of the two writes) and is reported
 * when not ordered after it. The list stays short because a use makes older
 * ones redundant when it covers their bytes and is ordered after them: what
 * is ordered after the new use is then ordered after them too (clocks are
 * transitive), and what is not conflicts with the new use (a write
 * supersedes reads and writes, a read only reads). Past XDEV_SAN_USES the
 * oldest is dropped (a report may then be missed, never made up). A free
 * drops the entry after its own check. One lock serialises it all. */
#include "runtime/sanitizer_probe.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/call_site.h"
#include "base/error_internal.h"
#include "base/strbuf.h"
#include "alloc/alloc_lookup.h"
#include "runtime/device_record.h"
#include "runtime/hooks.h"
#include "runtime/stream_internal.h"
#include "xdev/sanitizer.h"

#define XDEV_SAN_USES 32                      /* uses kept per allocation */
#define XDEV_SAN_FRAMES XDEV_CALL_SITE_FRAMES /* stack frames kept per use */
#define XDEV_SAN_PRINTED 100

typedef struct use {
    xdev_order_epoch_t ep;
    size_t lo, hi; /* bytes [lo, hi) from the allocation's start */
    uint8_t mode;  /* xdev_san_mode_t */
    bool reported; /* already in a report: not reported again */
    char op[48];   /* the call's name (a kernel's may not outlive its module) */
    int nframes;
    void *frames[XDEV_SAN_FRAMES];
} use_t;

typedef struct entry {
    struct entry *next;
    uintptr_t base;
    size_t size;
    xdev_device_record_t *rec;
    int n;
    use_t uses[XDEV_SAN_USES];
    int nrecorded, caprecorded;
    uint32_t *recorded; /* streams named by xdev_record_stream */
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t **g_buckets;
static size_t g_nbuckets, g_count;
static _Atomic uint64_t g_reports;
static pthread_mutex_t g_handler_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_sanitizer_handler_t g_handler;
static void *g_handler_user;

static size_t slot(uintptr_t base) {
    uint64_t h = (uint64_t)base * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (g_nbuckets - 1);
}

static entry_t *find(uintptr_t base) {
    if (g_nbuckets == 0) return NULL;
    for (entry_t *e = g_buckets[slot(base)]; e != NULL; e = e->next)
        if (e->base == base) return e;
    return NULL;
}

static void drop(entry_t *e) {
    entry_t **pp = &g_buckets[slot(e->base)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    g_count--;
    free(e->recorded);
    free(e);
}

/* Double the buckets when they average more than one entry. */
static void rehash(void) {
    size_t n = g_nbuckets ? 2 * g_nbuckets : 256;
    entry_t **b = calloc(n, sizeof *b);
    if (b == NULL) return; /* keep the old table: slower, not wrong */
    entry_t **old = g_buckets;
    size_t oldn = g_nbuckets;
    g_buckets = b;
    g_nbuckets = n;
    for (size_t i = 0; i < oldn; i++)
        for (entry_t *e = old[i], *next; e != NULL; e = next) {
            next = e->next;
            e->next = b[slot(e->base)];
            b[slot(e->base)] = e;
        }
    free(old);
}

/* The entry of the live allocation ref describes, new or reset when the
 * one kept is of an earlier allocation at the same address. */
static entry_t *entry_for(const xdev_live_ref_t *ref) {
    entry_t *e = find(ref->base);
    if (e != NULL && e->size == ref->size) return e;
    if (e != NULL) drop(e);
    if (g_count >= g_nbuckets) rehash();
    if (g_nbuckets == 0) return NULL;
    e = calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->base = ref->base;
    e->size = ref->size;
    e->rec = &ref->e.be->devices[ref->e.index];
    e->next = g_buckets[slot(e->base)];
    g_buckets[slot(e->base)] = e;
    g_count++;
    return e;
}

/* The live device allocation p points into; false for anything else (the
 * call's own checks have already refused what is wrong, so a failure here
 * leaves no error behind). */
static bool lookup(const void *p, xdev_live_ref_t *ref) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    xdev_status_t st = xdev_live_lookup(p, "ptr", ref);
    xdev_core_error_restore(&saved);
    return st == XDEV_SUCCESS && ref->known && ref->e.kind == XDEV_MEMORY_DEVICE;
}

static int capture_frames(void **frames) {
    return xdev_call_site_capture(frames, XDEV_SAN_FRAMES);
}

/* "from /path/prog+0x1234 (main+0x56)" (base/call_site.h, shared with the
 * sync debug mode's warnings). */
static void describe_site(xdev_strbuf_t *b, void *const *frames, int n) {
    xdev_call_site_describe(b, frames, n);
}

/* The text built, or NULL when it ran out of memory. */
static char *take(xdev_strbuf_t *b) {
    if (!b->failed) return b->buf;
    free(b->buf);
    return NULL;
}

static const char *mode_name(int mode) {
    return mode == XDEV_SAN_WRITE ? "write" : "read";
}

static void describe_use(xdev_strbuf_t *b, const char *op, int mode, size_t lo, size_t hi,
                         uint32_t stream, void *const *frames, int nframes) {
    char sname[160];
    xdev_order_stream_describe(stream, sname, sizeof sname);
    xdev_strbuf_printf(b, "%s (%s of bytes [%zu, %zu)) on %s, called ", op, mode_name(mode), lo, hi,
                       sname);
    describe_site(b, frames, nframes);
}

/* Hand a report to the handler, or print it (first XDEV_SAN_PRINTED). */
static void deliver(char *text) {
    if (text == NULL) return;
    uint64_t n = atomic_fetch_add(&g_reports, 1) + 1;
    pthread_mutex_lock(&g_handler_lock);
    xdev_sanitizer_handler_t fn = g_handler;
    void *user = g_handler_user;
    pthread_mutex_unlock(&g_handler_lock);
    if (fn != NULL)
        fn(text, user);
    else if (n <= XDEV_SAN_PRINTED)
        fprintf(stderr, "%s%s", text,
                n == XDEV_SAN_PRINTED ? "xdev sanitizer: further reports are counted, not "
                                        "printed (xdev_sanitizer_report_count)\n"
                                      : "");
    free(text);
}

static char *race_report(const entry_t *e, const use_t *now, const use_t *before) {
    xdev_strbuf_t b = {0};
    xdev_strbuf_printf(&b,
                       "xdev sanitizer: unordered use of device memory: the allocation at %p "
                       "(%zu bytes, " XDEV_REC_FMT ")\n  ",
                       (void *)e->base, e->size, XDEV_REC_ARGS(e->rec));
    describe_use(&b, now->op, now->mode, now->lo, now->hi, now->ep.stream, now->frames,
                 now->nframes);
    xdev_strbuf_printf(&b, "\n  is not ordered after ");
    describe_use(&b, before->op, before->mode, before->lo, before->hi, before->ep.stream,
                 before->frames, before->nframes);
    xdev_strbuf_printf(&b, "\n  order them: record an event after the earlier use on its stream "
                           "and wait for it on the later one's (xdev_event_record, "
                           "xdev_stream_wait_event), or xdev_stream_wait_stream(later, "
                           "earlier), or synchronize the earlier stream before the later use\n");
    return take(&b);
}

static bool overlaps(const use_t *a, size_t lo, size_t hi) {
    return a->lo < hi && lo < a->hi;
}

/* Check one use against the uses kept for its allocation, drop those it
 * supersedes, keep it (g_lock held). Returns a report of its first race,
 * or NULL. */
static char *check_use(entry_t *e, const use_t *now, const xdev_order_view_t *view) {
    char *report = NULL;
    int kept = 0;
    for (int i = 0; i < e->n; i++) {
        use_t *u = &e->uses[i];
        bool before = xdev_order_before(view, u->ep);
        bool conflict = now->mode == XDEV_SAN_WRITE || u->mode == XDEV_SAN_WRITE;
        if (conflict && !before && !u->reported && overlaps(u, now->lo, now->hi)) {
            if (report == NULL) report = race_report(e, now, u);
            u->reported = true;
        }
        /* superseded: covered, ordered before, and (for a read) a read */
        bool covered = now->lo <= u->lo && u->hi <= now->hi;
        if (covered && before && (now->mode == XDEV_SAN_WRITE || u->mode == XDEV_SAN_READ))
            continue;
        e->uses[kept++] = *u;
    }
    e->n = kept;
    if (e->n == XDEV_SAN_USES) { /* full: forget the oldest */
        memmove(&e->uses[0], &e->uses[1], (XDEV_SAN_USES - 1) * sizeof e->uses[0]);
        e->n--;
    }
    e->uses[e->n++] = *now;
    return report;
}

static void san_uses(xdev_stream_t s, const xdev_san_use_t *uses, int n, const char *op) {
    if (atomic_load_explicit(&s->capture, memory_order_acquire) != NULL) return;
    if (n > XDEV_SAN_MAX_USES) n = XDEV_SAN_MAX_USES;
    xdev_live_ref_t refs[XDEV_SAN_MAX_USES];
    int idx[XDEV_SAN_MAX_USES], m = 0;
    for (int i = 0; i < n; i++) /* lookups first, outside the lock */
        if (uses[i].p != NULL && uses[i].n != 0 && lookup(uses[i].p, &refs[m])) idx[m++] = i;
    if (m == 0) return;
    use_t now = {0};
    snprintf(now.op, sizeof now.op, "%s", op);
    now.nframes = capture_frames(now.frames);
    char *report = NULL;
    xdev_order_view_t view;
    pthread_mutex_lock(&g_lock);
    if (xdev_order_tick(s, &now.ep, &view)) {
        for (int k = 0; k < m; k++) {
            const xdev_san_use_t *u = &uses[idx[k]];
            const xdev_live_ref_t *ref = &refs[k];
            entry_t *e = entry_for(ref);
            if (e == NULL) continue;
            now.mode = (uint8_t)u->mode;
            now.lo = (uintptr_t)u->p - ref->base;
            now.hi = u->n > ref->size - now.lo ? ref->size : now.lo + u->n;
            char *r = check_use(e, &now, &view);
            if (report == NULL)
                report = r;
            else
                free(r);
        }
        xdev_order_view_free(&view);
    }
    pthread_mutex_unlock(&g_lock);
    deliver(report);
}

static void san_record_stream(const void *p, xdev_stream_t s) {
    xdev_live_ref_t ref;
    if (!lookup(p, &ref)) return;
    uint32_t id = xdev_order_stream_id(s);
    if (id == 0) return;
    pthread_mutex_lock(&g_lock);
    entry_t *e = entry_for(&ref);
    bool known = false;
    for (int i = 0; e != NULL && i < e->nrecorded; i++)
        known |= e->recorded[i] == id;
    if (e != NULL && !known) {
        if (e->nrecorded == e->caprecorded) {
            int cap = e->caprecorded ? 2 * e->caprecorded : 4;
            uint32_t *r = realloc(e->recorded, (size_t)cap * sizeof *r);
            if (r != NULL) {
                e->recorded = r;
                e->caprecorded = cap;
            }
        }
        if (e->nrecorded < e->caprecorded) e->recorded[e->nrecorded++] = id;
    }
    pthread_mutex_unlock(&g_lock);
}

static char *free_report(const entry_t *e, xdev_stream_t owner, const use_t *u) {
    xdev_strbuf_t b = {0};
    char sname[160];
    xdev_order_stream_describe(owner->order_id, sname, sizeof sname);
    void *frames[XDEV_SAN_FRAMES];
    int nframes = capture_frames(frames);
    xdev_strbuf_printf(&b,
                       "xdev sanitizer: device memory freed while another stream may use it: "
                       "the allocation at %p (%zu bytes, " XDEV_REC_FMT ")\n  freed for reuse "
                       "on %s, called ",
                       (void *)e->base, e->size, XDEV_REC_ARGS(e->rec), sname);
    describe_site(&b, frames, nframes);
    xdev_strbuf_printf(&b, "\n  is not ordered after ");
    describe_use(&b, u->op, u->mode, u->lo, u->hi, u->ep.stream, u->frames, u->nframes);
    xdev_strbuf_printf(&b, "\n  before freeing: make the freeing stream wait for the other "
                           "(xdev_stream_wait_stream), synchronize, or name the other stream "
                           "with xdev_record_stream\n");
    return take(&b);
}

static void san_free(const void *p, xdev_stream_t owner, bool check) {
    char *report = NULL;
    pthread_mutex_lock(&g_lock);
    entry_t *e = find((uintptr_t)p);
    xdev_order_view_t view;
    if (e != NULL && check && owner != NULL && xdev_order_view(owner, &view)) {
        for (int i = 0; i < e->n && report == NULL; i++) {
            const use_t *u = &e->uses[i];
            bool recorded = false;
            for (int j = 0; j < e->nrecorded; j++)
                recorded |= e->recorded[j] == u->ep.stream;
            if (!recorded && !u->reported && !xdev_order_before(&view, u->ep))
                report = free_report(e, owner, u);
        }
        xdev_order_view_free(&view);
    }
    if (e != NULL) drop(e);
    pthread_mutex_unlock(&g_lock);
    deliver(report);
}

/* ------------------------------------------------------------ public */

bool xdev_sanitizer_enabled(void) {
    xdev_error_state_t saved;
    xdev_core_error_save(&saved);
    bool ok = xdev_core_ensure_init() == XDEV_SUCCESS;
    xdev_core_error_restore(&saved);
    return ok && xdev_sanitizing();
}

xdev_status_t xdev_sanitizer_set_handler(xdev_sanitizer_handler_t handler, void *user_data) {
    pthread_mutex_lock(&g_handler_lock);
    g_handler = handler;
    g_handler_user = handler != NULL ? user_data : NULL;
    pthread_mutex_unlock(&g_handler_lock);
    return XDEV_SUCCESS;
}

uint64_t xdev_sanitizer_report_count(void) {
    return atomic_load(&g_reports);
}

/* Wired when libxdev loads (core/wiring.c): the probes through which alloc/, memory/, interop/,
 * kernel/, math/ and comm/ reach the sanitizer (runtime/sanitizer_probe.h);
 * those folders sit below observe/ and never call it. */
void xdev_stream_sanitizer_wire(void) {
    static const xdev_san_probes_t probes = {
        .uses = san_uses,
        .record_stream = san_record_stream,
        .free = san_free,
    };
    xdev_san_probes_set(&probes);
}
