/* SPDX-License-Identifier: Apache-2.0 */
/* test_replay_harness.c - the replay harness's load-time resolution
 * (bench/replay_harness.h, replay_resolve), which every allocator
 * comparison relies on: a seeded churn over scattered addresses, checked
 * against a plain list of what is live. Each free must name the slot its
 * alloc took (or none for an address never allocated), an alloc at a live
 * address must name that block's slot as `old`, no slot may be handed out
 * while it is live, and nslots must be the most live at once. Plain C, no
 * Check: exit 0 pass, 1 fail, naming the first wrong event. */
#include <stdio.h>
#include <stdlib.h>

#include "replay_harness.h"

#define EVENTS 60000
#define ADDRS 40000

int main(void) {
    replay_trace_t t;
    memset(&t, 0, sizeof t);
    t.ev = calloc(EVENTS, sizeof *t.ev);
    uint64_t *live_addr = calloc(ADDRS, sizeof *live_addr); /* what is live, unordered */
    uint32_t *live_slot = calloc(ADDRS, sizeof *live_slot);
    uint8_t *slot_used = calloc(EVENTS, 1);
    if (t.ev == NULL || live_addr == NULL || live_slot == NULL || slot_used == NULL) return 1;
    uint64_t x = 7, *pool = calloc(ADDRS, sizeof *pool);
    if (pool == NULL) return 1;
    for (size_t i = 0; i < ADDRS; i++) { /* scattered: arithmetic runs never collide */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        pool[i] = ((x >> 20) + 1) << 9;
    }
    for (size_t i = 0; i < EVENTS; i++) { /* xorshift: the same trace every run */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        replay_event_t *e = &t.ev[t.n++];
        e->addr = pool[x % ADDRS];
        e->is_free = (x >> 32) % 3 == 0; /* allocs at live addresses happen too */
        if ((x >> 40) % 50 == 0) e->addr += 512, e->is_free = 1; /* never allocated */
        e->size = 512;
    }
    if (replay_resolve(&t) != 0) return 1;
    size_t nlive = 0, most = 0;
    for (size_t i = 0; i < t.n; i++) {
        const replay_event_t *e = &t.ev[i];
        size_t k = 0;
        while (k < nlive && live_addr[k] != e->addr)
            k++;
        uint32_t held = k < nlive ? live_slot[k] : REPLAY_NONE;
        uint32_t want_obj = e->is_free ? held : e->obj;
        if (e->obj != want_obj || (!e->is_free && e->old != held) ||
            (!e->is_free && (e->obj >= EVENTS || slot_used[e->obj]))) {
            fprintf(stderr,
                    "test_replay_harness: event %zu (%s %llu): obj %u old %u, want obj %u "
                    "old %u%s\n",
                    i, e->is_free ? "free" : "alloc", (unsigned long long)e->addr, e->obj, e->old,
                    want_obj, held, e->obj < EVENTS && slot_used[e->obj] ? " (slot live)" : "");
            return 1;
        }
        if (held != REPLAY_NONE) { /* the old block goes: out of the list */
            slot_used[held] = 0;
            live_addr[k] = live_addr[--nlive];
            live_slot[k] = live_slot[nlive];
        }
        if (!e->is_free) {
            slot_used[e->obj] = 1;
            live_addr[nlive] = e->addr;
            live_slot[nlive++] = e->obj;
            if (nlive > most) most = nlive;
        }
    }
    /* an alloc at a live address holds both blocks for a moment */
    if (t.nslots < most || t.nslots > most + 1) {
        fprintf(stderr, "test_replay_harness: %u slots for at most %zu live blocks\n", t.nslots,
                most);
        return 1;
    }
    printf("test_replay_harness: %zu events, %zu live at most, %u slots: ok\n", t.n, most,
           t.nslots);
    free(t.ev);
    free(live_addr);
    free(live_slot);
    free(slot_used);
    free(pool);
    return 0;
}
