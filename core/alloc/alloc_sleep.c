/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_sleep.c - xdev_memory_sleep / xdev_memory_wake: a tag's device
 * memory given back to the driver and brought back at the same addresses
 * (vLLM's sleep mode, for any allocation xdev made).
 *
 * Why segments, not blocks: only memory the backend can unmap and map again
 * at the same virtual address can sleep, which is the expandable segments'
 * (memory.va_*: CUDA's virtual memory API, mmap on the CPU backend). With
 * expandable segments each tag path has stream pools, and so segments, of
 * its own (caching_allocator.c keys pools by tag), so a tag's memory is a
 * set of whole segments and no mapping unit is shared with another tag.
 * Sleep unmaps each segment's mapped range [base, base + size) after the
 * device has passed all work queued so far (KEEP first copies it to host
 * memory); wake maps the same range again (KEEP copies it back). KEEP's
 * host memory comes from the pinned host cache (xdev_host_alloc), as torch's
 * pinned tensors do for vLLM's sleep mode: pinning tens of GiB costs more
 * than copying them, and the cache keeps the blocks a wake frees for the
 * next sleep (xdev_host_empty_cache returns them). Meanwhile
 * the segment and its pool are marked: the pool hands out no block, the
 * live lookups (alloc_lookup.c) refuse pointers into it, shrinking skips
 * it. The allocator's figures (reserved bytes, the fraction cap) still
 * count a sleeping segment: it comes back; the backend's free memory
 * (xdev_mem_get_info) is what grows.
 *
 * The arenas' locks are held only to pick and mark segments; the waits,
 * copies and (un)mappings run without them, the segments marked as in
 * transition (another sleep or wake of them is NOT_READY). */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "alloc/mempool.h"
#include "base/error_internal.h"
#include "runtime/capture.h"
#include "runtime/device_record.h"
#include "runtime/dispatch.h"
#include "runtime/enqueue.h"
#include "runtime/stream_internal.h"
#include "xdev/memory.h"

#define TAG_PATH_MAX 1023

/* One segment on its way to sleep or back. */
typedef struct sleeper {
    xdev_device_allocator_t *arena;
    xdev_segment_t *seg;
    void *base;
    size_t size;
    void *copy;  /* KEEP: the contents in host memory */
    bool pinned; /* copy from the pinned host cache (else malloc) */
    bool done;   /* unmapped (sleep) / mapped (wake) */
} sleeper_t;

typedef struct job {
    xdev_device_record_t *rec;
    xdev_device_allocator_t *da;
    xdev_device_allocator_t *arenas[XDEV_MAX_ARENAS];
    int n_arenas;
    const char *tag; /* NULL: every segment of the device */
    sleeper_t *list;
    int n, cap;
} job_t;

/* The memory of a sleeping tag was used (a lookup, an allocation). */
xdev_status_t xdev_alloc_asleep_error(const xdev_device_allocator_t *da, const char *tag,
                                      const char *what, const void *ptr) {
    char where[64] = "";
    if (ptr != NULL) snprintf(where, sizeof where, " (%p)", ptr);
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                     "%s%s is memory %s%s%s on %s:%d that is asleep (xdev_memory_sleep): call "
                     "xdev_memory_wake first",
                     what, where, tag ? "tagged '" : "", tag ? tag : "untagged", tag ? "'" : "",
                     da->be->name, da->index);
}

/* Does a segment belong to what `tag` names? A top-level tag names every
 * allocation made under it ("model" covers "model/attn"); NULL names
 * everything. The pools of live memory pools (graphs' and the
 * application's) sleep only with everything: a graph's pool is slept or
 * kept as a whole. */
static bool matches(const xdev_segment_t *seg, const char *tag) {
    if (tag == NULL) return true;
    const xdev_stream_pool_t *p = seg->pool;
    if (p->mempool != 0 && !p->mempool_dead) return false;
    return p->tag != NULL && strcmp(p->tag, tag) == 0;
}

static const char *tag_words(const char *tag, char *buf, size_t len) {
    if (tag == NULL)
        snprintf(buf, len, "memory");
    else
        snprintf(buf, len, "memory tagged '%s'", tag);
    return buf;
}

/* The public call's checks: device, tag; the device's allocator able to
 * sleep anything. */
static xdev_status_t job_begin(job_t *j, xdev_device_t device, const char *tag) {
    memset(j, 0, sizeof *j);
    xdev_status_t st = xdev_device_lookup(device, &j->rec);
    if (st != XDEV_SUCCESS) return st;
    if (tag != NULL) {
        size_t len = strlen(tag);
        if (len == 0 || len > TAG_PATH_MAX)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "tag length %zu is not in 1..%d", len,
                             TAG_PATH_MAX);
        const char *slash = strchr(tag, '/');
        if (slash != NULL)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "'%s' is not a top-level tag: memory sleeps by the first part of its "
                             "tag path ('%.*s'), under which it shares segments",
                             tag, (int)(slash - tag), tag);
        if (!xdev_alloc_tag_known(tag))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "no allocation was ever tagged '%s' in this process (tags are the "
                             "paths xdev_memory_tag_push made: \"a/b\" for b pushed inside a)",
                             tag);
    }
    j->tag = tag;
    if ((st = xdev_alloc_get(j->rec->be, j->rec->id.index, &j->da)) != XDEV_SUCCESS) return st;
    xdev_device_allocator_t *da = j->da;
    if (da->mode != XDEV_ALLOC_MODE_CACHING || !xdev_alloc_settings()->expandable_segments)
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "%s:%d: memory can sleep only in expandable segments (set "
                         "XDEV_ALLOC_CONF=expandable_segments:true before the first allocation, "
                         "and no XDEV_NO_MEMORY_CACHING, backend:async or pluggable allocator): "
                         "other memory cannot be given back and mapped again at the same address",
                         da->be->name, da->index);
    if (!XDEV_HAS(da->be, memory, va_unmap))
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED, "the %s backend has no virtual memory calls",
                         da->be->name);
    return xdev_capture_check_unsafe("xdev_memory_sleep/xdev_memory_wake");
}

static bool job_add(job_t *j, xdev_device_allocator_t *arena, xdev_segment_t *seg) {
    if (j->n == j->cap) {
        int cap = j->cap ? j->cap * 2 : 16;
        sleeper_t *l = realloc(j->list, (size_t)cap * sizeof *l);
        if (l == NULL) return false;
        j->list = l;
        j->cap = cap;
    }
    j->list[j->n++] = (sleeper_t){arena, seg, (void *)seg->base, seg->size, NULL, false, false};
    return true;
}

/* Pick the segments (all arenas locked): those matching in state `want`.
 * A matching segment in transition is NOT_READY; for sleep, one that cannot
 * sleep (an ordinary segment) refuses the whole call. Marks the picked ones
 * `mark`. *other: matching segments, not empty, in the other states. */
static xdev_status_t pick_locked(job_t *j, uint8_t want, uint8_t mark, int *other) {
    char words[300];
    *other = 0;
    for (int a = 0; a < j->n_arenas; a++) {
        xdev_caching_stash_flush(j->arenas[a]);
        for (xdev_segment_t *s = j->arenas[a]->segments; s != NULL; s = s->next) {
            if (!matches(s, j->tag)) continue;
            if (s->shrinking || s->sleep_state == XDEV_SEG_SLEEPING ||
                s->sleep_state == XDEV_SEG_WAKING)
                return XDEV_FAIL(XDEV_ERROR_NOT_READY,
                                 "%s on %s:%d is being put to sleep, woken or shrunk by another "
                                 "thread: try again",
                                 tag_words(j->tag, words, sizeof words), j->da->be->name,
                                 j->da->index);
            if (want == XDEV_SEG_AWAKE && !s->expandable)
                return XDEV_FAIL(
                    XDEV_ERROR_NOT_SUPPORTED,
                    "%s on %s:%d includes an ordinary segment (%zu bytes at %p%s), which cannot "
                    "sleep: only expandable segments can; nothing was put to sleep",
                    tag_words(j->tag, words, sizeof words), j->da->be->name, j->da->index, s->size,
                    (void *)s->base,
                    s->pool->has_custom ? ", from a memory pool's own allocator"
                                        : ", made while an expandable segment was being shrunk");
            if (s->sleep_state != want || s->size == 0) {
                *other += s->size != 0;
                continue;
            }
            if (!job_add(j, j->arenas[a], s))
                return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for the segment list");
        }
    }
    for (int i = 0; i < j->n; i++) {
        xdev_segment_t *s = j->list[i].seg;
        s->sleep_state = mark;
        if (want == XDEV_SEG_AWAKE) s->pool->asleep++;
    }
    if (want == XDEV_SEG_AWAKE) atomic_fetch_add(&j->da->sleeping, j->n);
    /* every cached "this block is live" of these arenas is looked at again */
    for (int a = 0; a < j->n_arenas; a++)
        atomic_fetch_add_explicit(&j->arenas[a]->frees, 1, memory_order_release);
    return XDEV_SUCCESS;
}

/* The picked segments' final state (all arenas locked by the caller). */
static void settle_locked(job_t *j, bool sleeping) {
    for (int i = 0; i < j->n; i++) {
        sleeper_t *s = &j->list[i];
        if (sleeping) {
            s->seg->sleep_state = s->done ? XDEV_SEG_ASLEEP : XDEV_SEG_AWAKE;
            s->seg->sleep_copy = s->done ? s->copy : NULL;
            s->seg->sleep_copy_pinned = s->pinned;
        } else {
            s->seg->sleep_state = s->done ? XDEV_SEG_AWAKE : XDEV_SEG_ASLEEP;
            if (s->done) s->seg->sleep_copy = NULL;
        }
        if (s->seg->sleep_state == XDEV_SEG_AWAKE) {
            s->seg->pool->asleep--;
            atomic_fetch_sub(&j->da->sleeping, 1);
        }
    }
}

static void free_copy(sleeper_t *s) {
    if (s->copy == NULL) return;
    if (s->pinned)
        (void)xdev_host_free(s->copy); /* back to the cache: the copies have finished */
    else
        free(s->copy);
    s->copy = NULL;
}

/* One piece's copy on `stream` through the enqueue path (not waited for). */
typedef struct copy_ctx {
    xdev_copy_desc_t desc;
} copy_ctx_t;

static xdev_status_t copy_call(xdev_enqueue_t *q) {
    const copy_ctx_t *c = q->ctx;
    return xdev_be_memory_memcpy_async(q->stream->rec, &c->desc, q->stream->native);
}

static xdev_status_t copy_piece(job_t *j, xdev_stream_t stream, const sleeper_t *s, size_t off,
                                size_t len, bool to_host) {
    char *dev = (char *)s->base + off, *host = (char *)s->copy + off;
    copy_ctx_t c = {{.size = sizeof(xdev_copy_desc_t),
                     .dst = to_host ? (void *)host : (void *)dev,
                     .src = to_host ? (const void *)dev : (const void *)host,
                     .bytes = len,
                     .kind = to_host ? XDEV_COPY_DEVICE_TO_HOST : XDEV_COPY_HOST_TO_DEVICE,
                     .dst_device = to_host ? NULL : j->rec->ctx,
                     .src_device = to_host ? j->rec->ctx : NULL,
                     .dst_pinned = to_host && s->pinned,
                     .src_pinned = !to_host && s->pinned}};
    xdev_enqueue_t q = {.kind = XDEV_OP_COPY,
                        .name = to_host ? "memory_sleep" : "memory_wake",
                        .stream = stream,
                        .rec = j->rec,
                        .ctx = &c,
                        .call = copy_call,
                        .flags = XDEV_ENQUEUE_WAIT_LATER};
    return xdev_enqueue(&q);
}

/* A segment whose sleep failed after its first `gone` bytes were unmapped
 * (the copies waited for): those mapped back and, KEEP, filled again from
 * the copy, so it is wholly awake; where they cannot be mapped, the rest is
 * copied (KEEP) and unmapped too, so it is wholly asleep (s->done) and a
 * wake brings it back. Either way no part of an awake segment is left
 * unmapped (unless the second way fails as well). */
static void settle_half_asleep(job_t *j, xdev_stream_t stream, sleeper_t *s, size_t gone,
                               size_t copied, bool keep) {
    /* the host copy's end: past the unmapped front, up to the end of the
     * piece whose unmap failed when its copy is done - a failed unmap
     * leaves its range mapped, but not necessarily with its contents
     * (backend_slots.h, va_unmap) */
    const size_t held = copied > gone ? copied : gone;
    if (xdev_segment_map(j->rec, s->seg, 0, gone) == XDEV_SUCCESS) {
        if (keep && held > 0 && copy_piece(j, stream, s, 0, held, false) == XDEV_SUCCESS)
            (void)xdev_be_stream_synchronize(j->rec, stream->native);
        return;
    }
    /* the rest of the copy, not over what it holds already */
    xdev_status_t st = XDEV_SUCCESS;
    if (keep && held < s->size) {
        st = copy_piece(j, stream, s, held, s->size - held, true);
        if (st == XDEV_SUCCESS) st = xdev_be_stream_synchronize(j->rec, stream->native);
    }
    if (st == XDEV_SUCCESS)
        st = xdev_segment_unmap(j->rec, s->seg, gone, s->size - gone, XDEV_UNMAP_FRONT, NULL);
    s->done = st == XDEV_SUCCESS;
}

/* Sleep's work once the device is idle: every segment unmapped, KEEP's
 * pieces each copied to the host first (the copy of piece k+1 runs while
 * piece k, whose copy an event says is done, is unmapped). A failure
 * leaves the segments done so far asleep; one half unmapped is mapped and
 * filled again (its unmapped prefix was copied), to the byte: a piece
 * unmapped in several calls of which a later one failed counts the front
 * the earlier ones gave back (settle_half_asleep). */
static xdev_status_t sleep_segments(job_t *j, bool keep) {
    xdev_stream_t stream;
    xdev_status_t st = xdev_core_default_stream(j->rec, &stream);
    if (st != XDEV_SUCCESS) return st;
    /* a piece at a time (xdev_segment_piece), so that the unmapping of one
     * overlaps the copy of the next */
    const size_t piece = xdev_segment_piece(j->rec);
    void *ev[2] = {NULL, NULL};
    for (int k = 0; keep && k < 2 && st == XDEV_SUCCESS; k++)
        st = xdev_be_event_create(j->rec, XDEV_EVENT_DEFAULT, &ev[k]);
    /* the pieces in order: segment i, offset off */
    int i = 0, pi = 0;
    size_t off = 0, next_off = 0;
    size_t copied = 0; /* where an unmap failed: the end of its piece (copied to the host) */
    int next_i = 0;
    size_t *unmapped = calloc((size_t)(j->n > 0 ? j->n : 1), sizeof *unmapped);
    if (unmapped == NULL && st == XDEV_SUCCESS)
        st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for the segment list");
    /* the first copy */
    if (keep && st == XDEV_SUCCESS && j->n > 0) {
        st = copy_piece(j, stream, &j->list[0], 0,
                        j->list[0].size < piece ? j->list[0].size : piece, true);
        if (st == XDEV_SUCCESS) st = xdev_be_event_record(j->rec, ev[0], stream->native);
    }
    while (st == XDEV_SUCCESS && i < j->n) {
        sleeper_t *s = &j->list[i];
        size_t len = s->size - off < piece ? s->size - off : piece;
        /* the next piece */
        next_i = i;
        next_off = off + len;
        if (next_off >= s->size) next_i++, next_off = 0;
        if (keep && next_i < j->n) {
            const sleeper_t *n = &j->list[next_i];
            size_t nlen = n->size - next_off < piece ? n->size - next_off : piece;
            st = copy_piece(j, stream, n, next_off, nlen, true);
            if (st == XDEV_SUCCESS)
                st = xdev_be_event_record(j->rec, ev[(pi + 1) & 1], stream->native);
        }
        if (st == XDEV_SUCCESS && keep) st = xdev_be_event_synchronize(j->rec, ev[pi & 1]);
        size_t gone = 0; /* on a failure, the piece's front that was unmapped */
        if (st == XDEV_SUCCESS) {
            st = xdev_segment_unmap(j->rec, s->seg, off, len, XDEV_UNMAP_FRONT, &gone);
            if (st != XDEV_SUCCESS) copied = off + len; /* the piece's copy is done */
        }
        unmapped[i] += gone;
        if (st != XDEV_SUCCESS) break;
        s->done = unmapped[i] == s->size;
        i = next_i;
        off = next_off;
        pi++;
    }
    if (keep) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        (void)xdev_be_stream_synchronize(j->rec, stream->native); /* copies still queued */
        for (int k = 0; k < 2; k++)
            if (ev[k] != NULL) (void)xdev_be_event_destroy(j->rec, ev[k]);
        xdev_core_error_restore(&saved);
    }
    if (st != XDEV_SUCCESS && i < j->n && unmapped != NULL && (unmapped[i] > 0 || copied > 0)) {
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        settle_half_asleep(j, stream, &j->list[i], unmapped[i], copied, keep);
        xdev_core_error_restore(&saved);
    }
    free(unmapped);
    return st;
}

/* Wake's work: every segment mapped again a piece at a time, KEEP's
 * contents copied back behind the mapping; the copies waited for. A
 * segment that cannot be mapped whole is unmapped again and stays asleep
 * (so do the ones after it); if that unmapping fails too, the front it
 * leaves mapped is the segment's sleep_mapped, which the next wake keeps. */
static xdev_status_t wake_segments(job_t *j) {
    xdev_stream_t stream;
    xdev_status_t st = xdev_core_default_stream(j->rec, &stream);
    if (st != XDEV_SUCCESS) return st;
    /* a piece at a time, its copy queued behind its mapping; a woken piece
     * is one mapping where the backend can (segment_map.c) */
    const size_t piece = xdev_segment_piece(j->rec);
    const bool whole = xdev_segment_can_map_whole(j->rec);
    for (int i = 0; i < j->n && st == XDEV_SUCCESS; i++) {
        sleeper_t *s = &j->list[i];
        size_t off = 0;
        /* a piece one mapping (read under the arenas' locks only once the
         * segment is awake again: settle_locked) */
        s->seg->whole_end = whole ? s->size : 0;
        while (off < s->size && st == XDEV_SUCCESS) {
            size_t len = s->size - off < piece ? s->size - off : piece;
            if (off >= s->seg->sleep_mapped) st = xdev_segment_map(j->rec, s->seg, off, len);
            if (st == XDEV_ERROR_OUT_OF_MEMORY)
                st = XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY,
                               "no device memory to map the %zu bytes at %p back (%d of %d "
                               "segments woken; the rest stay asleep): %s",
                               s->size, s->base, i, j->n, xdev_last_error());
            if (st != XDEV_SUCCESS) break;
            off += len;
            if (s->copy != NULL) st = copy_piece(j, stream, s, off - len, len, false);
        }
        s->done = st == XDEV_SUCCESS;
        if (s->done) s->seg->sleep_mapped = 0;
        size_t mapped = off > s->seg->sleep_mapped ? off : s->seg->sleep_mapped;
        if (!s->done && mapped > 0) { /* the copies into it first, then its mapped part out */
            xdev_error_state_t saved;
            xdev_core_error_save(&saved);
            (void)xdev_be_stream_synchronize(j->rec, stream->native);
            /* from the back, stopping at a failure: what stays mapped is
             * the front, which the next wake does not map again (a backend
             * may refuse to map over a mapping, or count it twice) */
            size_t gone = 0;
            (void)xdev_segment_unmap(j->rec, s->seg, 0, mapped, XDEV_UNMAP_BACK, &gone);
            s->seg->sleep_mapped = mapped - gone;
            xdev_core_error_restore(&saved);
        }
    }
    xdev_status_t sst = xdev_be_stream_synchronize(j->rec, stream->native);
    return st != XDEV_SUCCESS ? st : sst;
}

static void job_end(job_t *j) {
    free(j->list);
}

xdev_status_t xdev_memory_sleep(xdev_device_t device, const char *tag,
                                xdev_memory_sleep_mode_t mode) {
    if (mode != XDEV_MEMORY_SLEEP_KEEP && mode != XDEV_MEMORY_SLEEP_DISCARD)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "mode %d is neither XDEV_MEMORY_SLEEP_KEEP nor "
                             "XDEV_MEMORY_SLEEP_DISCARD",
                             (int)mode);
    job_t j;
    xdev_status_t bst = job_begin(&j, device, tag);
    if (bst != XDEV_SUCCESS) return xdev_core_blame(bst, __func__);
    j.n_arenas = xdev_alloc_lock_all(j.da, j.arenas);
    int other = 0;
    xdev_status_t st = pick_locked(&j, XDEV_SEG_AWAKE, XDEV_SEG_SLEEPING, &other);
    if (st != XDEV_SUCCESS) j.n = 0; /* nothing was marked */
    xdev_alloc_unlock_all(j.arenas, j.n_arenas);
    if (st == XDEV_SUCCESS && j.n == 0 && (tag != NULL || other > 0)) {
        char words[300];
        st = other > 0 ? XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "%s on %s:%d is already asleep",
                                   tag_words(tag, words, sizeof words), j.da->be->name, j.da->index)
                       : XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                                   "%s:%d holds no memory tagged '%s' (outside live memory "
                                   "pools, which sleep only with everything: tag NULL)",
                                   j.da->be->name, j.da->index, tag);
    }
    /* the work queued so far may use the memory: wait for the device */
    if (st == XDEV_SUCCESS && j.n > 0) st = xdev_be_device_synchronize(j.rec);
    /* KEEP: pinned host memory, else (a default backend without it)
     * malloc'ed */
    for (int i = 0; st == XDEV_SUCCESS && mode == XDEV_MEMORY_SLEEP_KEEP && i < j.n; i++) {
        sleeper_t *s = &j.list[i];
        xdev_error_state_t saved;
        xdev_core_error_save(&saved);
        st = xdev_host_alloc(&s->copy, s->size);
        s->pinned = st == XDEV_SUCCESS;
        if (st == XDEV_ERROR_NOT_SUPPORTED) {
            xdev_core_error_restore(&saved);
            s->copy = malloc(s->size);
            st = s->copy != NULL
                     ? XDEV_SUCCESS
                     : XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for %zu bytes", s->size);
        }
        if (st != XDEV_SUCCESS) {
            s->copy = NULL;
            st = XDEV_FAIL(st, "cannot keep the %zu bytes at %p while asleep: %s", s->size, s->base,
                           xdev_last_error());
        }
    }
    if (st == XDEV_SUCCESS && j.n > 0) st = sleep_segments(&j, mode == XDEV_MEMORY_SLEEP_KEEP);
    if (st != XDEV_SUCCESS) /* what did not go to sleep keeps nothing */
        for (int i = 0; i < j.n; i++)
            if (!j.list[i].done) free_copy(&j.list[i]);
    if (j.n > 0) {
        j.n_arenas = xdev_alloc_lock_all(j.da, j.arenas); /* more may exist by now */
        settle_locked(&j, true);
        xdev_alloc_unlock_all(j.arenas, j.n_arenas);
    }
    job_end(&j);
    return st == XDEV_SUCCESS ? XDEV_SUCCESS : xdev_core_blame(st, __func__);
}

xdev_status_t xdev_memory_wake(xdev_device_t device, const char *tag) {
    job_t j;
    xdev_status_t bst = job_begin(&j, device, tag);
    if (bst != XDEV_SUCCESS) return xdev_core_blame(bst, __func__);
    j.n_arenas = xdev_alloc_lock_all(j.da, j.arenas);
    int other = 0;
    xdev_status_t st = pick_locked(&j, XDEV_SEG_ASLEEP, XDEV_SEG_WAKING, &other);
    if (st != XDEV_SUCCESS) j.n = 0;
    for (int i = 0; i < j.n; i++) {
        j.list[i].copy = j.list[i].seg->sleep_copy;
        j.list[i].pinned = j.list[i].seg->sleep_copy_pinned;
    }
    xdev_alloc_unlock_all(j.arenas, j.n_arenas);
    if (st == XDEV_SUCCESS && j.n == 0) {
        char words[300];
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "no %s on %s:%d is asleep",
                       tag_words(tag, words, sizeof words), j.da->be->name, j.da->index);
    }
    if (st == XDEV_SUCCESS) st = wake_segments(&j);
    for (int i = 0; i < j.n; i++)
        if (j.list[i].done) free_copy(&j.list[i]);
    if (j.n > 0) {
        j.n_arenas = xdev_alloc_lock_all(j.da, j.arenas); /* more may exist by now */
        settle_locked(&j, false);
        xdev_alloc_unlock_all(j.arenas, j.n_arenas);
    }
    job_end(&j);
    return st == XDEV_SUCCESS ? XDEV_SUCCESS : xdev_core_blame(st, __func__);
}

xdev_status_t xdev_mempool_check_awake(xdev_mempool_t p, uint64_t graph) {
    xdev_device_allocator_t *da = NULL;
    if (xdev_alloc_get(p->rec->be, p->rec->id.index, &da) != XDEV_SUCCESS ||
        atomic_load_explicit(&da->sleeping, memory_order_relaxed) == 0)
        return XDEV_SUCCESS; /* (an allocator that cannot be made has no pool memory) */
    bool asleep = false;
    xdev_spin_lock(&da->lock); /* a pool's segments are the primary arena's */
    for (const xdev_stream_pool_t *sp = da->pools; sp != NULL && !asleep; sp = sp->next)
        asleep = sp->mempool == p->id && sp->asleep > 0;
    xdev_spin_unlock(&da->lock);
    if (!asleep) return XDEV_SUCCESS;
    return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                     "graph %llu's memory pool on %s:%d is asleep (xdev_memory_sleep): call "
                     "xdev_memory_wake first",
                     (unsigned long long)graph, da->be->name, da->index);
}
