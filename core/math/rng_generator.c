/* SPDX-License-Identifier: Apache-2.0 */
/* rng_generator.c - random generators: the per-device default generators
 * and torch.cuda's seeding API over them, explicit generator objects, and
 * the versioned state bytes (see xdev/rng.h and rng_internal.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/error_internal.h"
#include "runtime/device_record.h"
#include "runtime/process.h"
#include "math/rng_internal.h"

/* ------------------------------------------------------------- defaults */

/* Zeroed: every lock unlocked, every generator not yet initialised. */
static xdev_rng_gen_t g_defaults[XDEV_MAX_DEVICE_TYPES][XDEV_MAX_DEVICES];

/* manual_seed_all: epoch 0 = never called. The seed and the epoch change
 * together under the lock; the epoch alone is read without it, to learn
 * whether a default generator must take the lock and adopt the seed. */
static pthread_mutex_t g_all_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_all_epoch;
static uint64_t g_all_seed;

xdev_rng_gen_t *xdev_rng_default_lock(xdev_device_type_t type, int index) {
    xdev_rng_gen_t *g = &g_defaults[type][index];
    xdev_spin_lock(&g->lock);
    if (!g->ready) {
        g->seed = XDEV_RNG_DEFAULT_SEED;
        g->offset = 0;
        g->epoch = 0;
        g->ready = true;
    }
    /* acquire: a later epoch is read with the seed stored before it */
    if (atomic_load_explicit(&g_all_epoch, memory_order_acquire) > g->epoch) {
        pthread_mutex_lock(&g_all_lock);
        g->seed = g_all_seed;
        g->offset = 0;
        g->epoch = atomic_load_explicit(&g_all_epoch, memory_order_relaxed);
        pthread_mutex_unlock(&g_all_lock);
    }
    return g;
}

xdev_rng_gen_t *xdev_rng_generator_lock(xdev_generator_t g) {
    xdev_spin_lock(&g->gen.lock);
    return &g->gen;
}

void xdev_rng_unlock(xdev_rng_gen_t *g) {
    xdev_spin_unlock(&g->lock);
}

/* The default generator of `device` (index -1: current), locked. */
static xdev_status_t default_for(xdev_device_t device, xdev_rng_gen_t **out) {
    xdev_device_record_t *rec;
    xdev_status_t st = xdev_device_lookup(device, &rec);
    if (st != XDEV_SUCCESS) return st;
    *out = xdev_rng_default_lock(rec->id.type, rec->id.index);
    return XDEV_SUCCESS;
}

/* The default generator of the current device of the default type, locked. */
static xdev_status_t default_current(xdev_rng_gen_t **out) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    xdev_device_t cur = {xdev_core_default_type(), -1};
    return default_for(cur, out);
}

static void reseed(xdev_rng_gen_t *g, uint64_t seed) {
    g->seed = seed;
    g->offset = 0;
}

/* A non-deterministic seed: getrandom, else /dev/urandom, else time and
 * addresses mixed (splitmix64). */
static uint64_t random_seed(void) {
    uint64_t s = 0;
    for (int tries = 0; tries < 4; tries++) {
        ssize_t n = getrandom(&s, sizeof s, 0);
        if (n == (ssize_t)sizeof s) return s;
        if (n < 0 && errno != EINTR) break;
    }
    FILE *f = fopen("/dev/urandom", "rb");
    if (f != NULL) {
        size_t got = fread(&s, 1, sizeof s, f);
        fclose(f);
        if (got == sizeof s) return s;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    z ^= (uint64_t)(uintptr_t)&s ^ ((uint64_t)getpid() << 32);
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

xdev_status_t xdev_manual_seed(uint64_t seed) {
    xdev_rng_gen_t *g;
    XDEV_CHECK(default_current(&g));
    reseed(g, seed);
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_manual_seed_all(uint64_t seed) {
    XDEV_CHECK(xdev_process_check()); /* takes a lock: not in a forked child */
    pthread_mutex_lock(&g_all_lock);
    g_all_seed = seed;
    atomic_fetch_add_explicit(&g_all_epoch, 1, memory_order_release);
    pthread_mutex_unlock(&g_all_lock);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_seed(void) {
    xdev_rng_gen_t *g;
    XDEV_CHECK(default_current(&g));
    reseed(g, random_seed());
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_seed_all(void) {
    return xdev_manual_seed_all(random_seed());
}

xdev_status_t xdev_initial_seed(xdev_device_t device, uint64_t *seed) {
    XDEV_REQUIRE_ARG(seed);
    xdev_rng_gen_t *g;
    XDEV_CHECK(default_for(device, &g));
    *seed = g->seed;
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- state bytes */

static const unsigned char k_magic[4] = {'X', 'R', 'N', 'G'};

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static xdev_status_t check_out_buffer(const void *state, size_t len) {
    if (state == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'state' is NULL");
    if (len < XDEV_RNG_STATE_SIZE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the state buffer holds %zu bytes; an RNG state needs %d "
                         "(XDEV_RNG_STATE_SIZE)",
                         len, XDEV_RNG_STATE_SIZE);
    return XDEV_SUCCESS;
}

static void encode(const xdev_rng_gen_t *g, void *state) {
    unsigned char *p = state;
    memcpy(p, k_magic, 4);
    put_u32(p + 4, XDEV_RNG_STATE_VERSION);
    put_u64(p + 8, g->seed);
    put_u64(p + 16, g->offset);
}

/* Parse and check state bytes. */
static xdev_status_t decode(const void *state, size_t len, uint64_t *seed, uint64_t *offset) {
    if (state == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'state' is NULL");
    const unsigned char *p = state;
    if (len < 8)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the state is %zu bytes: too short for an RNG state (%d bytes, "
                         "XDEV_RNG_STATE_SIZE)",
                         len, XDEV_RNG_STATE_SIZE);
    if (memcmp(p, k_magic, 4) != 0)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "malformed state: it does not start with the magic \"XRNG\" (bytes %02x "
                         "%02x %02x %02x); pass bytes from xdev_get_rng_state",
                         p[0], p[1], p[2], p[3]);
    uint32_t version = get_u32(p + 4);
    if (version != XDEV_RNG_STATE_VERSION)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "unknown state version %u: this build reads version %u", (unsigned)version,
                         XDEV_RNG_STATE_VERSION);
    if (len != XDEV_RNG_STATE_SIZE)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "malformed state: a version %u state is %d bytes, not %zu",
                         XDEV_RNG_STATE_VERSION, XDEV_RNG_STATE_SIZE, len);
    *seed = get_u64(p + 8);
    *offset = get_u64(p + 16);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_get_rng_state(xdev_device_t device, void *state, size_t len) {
    XDEV_CHECK(check_out_buffer(state, len));
    xdev_rng_gen_t *g;
    XDEV_CHECK(default_for(device, &g));
    encode(g, state);
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_set_rng_state(xdev_device_t device, const void *state, size_t len) {
    uint64_t seed, offset;
    XDEV_CHECK(decode(state, len, &seed, &offset));
    xdev_rng_gen_t *g;
    XDEV_CHECK(default_for(device, &g));
    g->seed = seed;
    g->offset = offset;
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

/* The default type's backend (its devices are the _all ones). */
static xdev_status_t default_backend(xdev_backend_t **be) {
    xdev_status_t st = xdev_core_ensure_init();
    if (st != XDEV_SUCCESS) return st;
    return xdev_backend_acquire(xdev_core_default_type(), be);
}

xdev_status_t xdev_get_rng_state_all(void *states, size_t len, size_t *count) {
    xdev_backend_t *be;
    XDEV_CHECK(default_backend(&be));
    size_t n = (size_t)be->device_count;
    if (count != NULL) *count = n;
    if (states == NULL && len == 0) return XDEV_SUCCESS; /* asking for the count */
    if (states == NULL) return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'states' is NULL");
    if (len < n * XDEV_RNG_STATE_SIZE)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "the buffer holds %zu bytes; %zu %s devices need %zu (count * "
                             "XDEV_RNG_STATE_SIZE)",
                             len, n, be->name, n * XDEV_RNG_STATE_SIZE);
    for (size_t i = 0; i < n; i++) {
        xdev_rng_gen_t *g = xdev_rng_default_lock(be->type, (int)i);
        encode(g, (unsigned char *)states + i * XDEV_RNG_STATE_SIZE);
        xdev_rng_unlock(g);
    }
    return XDEV_SUCCESS;
}

xdev_status_t xdev_set_rng_state_all(const void *states, size_t len) {
    xdev_backend_t *be;
    XDEV_CHECK(default_backend(&be));
    size_t n = (size_t)be->device_count;
    if (states == NULL) return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE, "argument 'states' is NULL");
    if (len != n * XDEV_RNG_STATE_SIZE)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "len = %zu bytes, but %zu %s devices take exactly %zu (count * "
                             "XDEV_RNG_STATE_SIZE)",
                             len, n, be->name, n * XDEV_RNG_STATE_SIZE);
    uint64_t seeds[XDEV_MAX_DEVICES], offsets[XDEV_MAX_DEVICES];
    for (size_t i = 0; i < n; i++) {
        xdev_status_t st = decode((const unsigned char *)states + i * XDEV_RNG_STATE_SIZE,
                                  XDEV_RNG_STATE_SIZE, &seeds[i], &offsets[i]);
        if (st != XDEV_SUCCESS) {
            char why[512];
            snprintf(why, sizeof why, "%s", xdev_last_error());
            return XDEV_API_FAIL(st, "state %zu (%s:%zu): %s", i, be->name, i, why);
        }
    }
    for (size_t i = 0; i < n; i++) {
        xdev_rng_gen_t *g = xdev_rng_default_lock(be->type, (int)i);
        g->seed = seeds[i];
        g->offset = offsets[i];
        xdev_rng_unlock(g);
    }
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- generator objects */

#define GEN_MAGIC 0x474e5247u /* "GRNG" */
#define GEN_SLOT ((sizeof(struct xdev_generator) + 63) / 64 * 64)

static xdev_handle_arena_t g_gen_arena = XDEV_HANDLE_ARENA_INIT("generator", GEN_MAGIC, GEN_SLOT);

xdev_status_t xdev_generator_check(xdev_generator_t g, const char *arg) {
    xdev_status_t pst = xdev_process_check(); /* a forked child, or exiting */
    if (pst != XDEV_SUCCESS) return pst;
    if (g == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "generator argument '%s' is NULL", arg);
    if (xdev_handle_is_live(&g_gen_arena, g)) return XDEV_SUCCESS;
    if (xdev_handle_is_slot(&g_gen_arena, g))
        return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "generator '%s' (%p) has been destroyed", arg,
                         (void *)g);
    return XDEV_FAIL(XDEV_ERROR_INVALID_HANDLE, "'%s' (%p) is not an xdev generator", arg,
                     (void *)g);
}

xdev_status_t xdev_generator_create(xdev_device_t device, uint64_t seed, xdev_generator_t *out) {
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    XDEV_CHECK(xdev_core_ensure_init());
    xdev_device_record_t *rec;
    XDEV_CHECK(xdev_device_lookup(device, &rec));
    xdev_generator_t g = xdev_handle_alloc(&g_gen_arena);
    if (g == NULL)
        return XDEV_API_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no memory for a generator handle");
    g->device = rec->id;
    memset(&g->gen.lock, 0, sizeof g->gen.lock); /* unlocked; the slot may be reused */
    g->gen.seed = seed;
    g->gen.offset = 0;
    g->gen.ready = true;
    *out = g;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_destroy(xdev_generator_t gen) {
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    xdev_handle_free(&g_gen_arena, gen);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_manual_seed(xdev_generator_t gen, uint64_t seed) {
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    xdev_rng_gen_t *g = xdev_rng_generator_lock(gen);
    reseed(g, seed);
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_initial_seed(xdev_generator_t gen, uint64_t *seed) {
    XDEV_REQUIRE_ARG(seed);
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    xdev_rng_gen_t *g = xdev_rng_generator_lock(gen);
    *seed = g->seed;
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_get_offset(xdev_generator_t gen, uint64_t *offset) {
    XDEV_REQUIRE_ARG(offset);
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    xdev_rng_gen_t *g = xdev_rng_generator_lock(gen);
    *offset = g->offset;
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_set_offset(xdev_generator_t gen, uint64_t offset) {
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    xdev_rng_gen_t *g = xdev_rng_generator_lock(gen);
    g->offset = offset;
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_get_state(xdev_generator_t gen, void *state, size_t len) {
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    XDEV_CHECK(check_out_buffer(state, len));
    xdev_rng_gen_t *g = xdev_rng_generator_lock(gen);
    encode(g, state);
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_set_state(xdev_generator_t gen, const void *state, size_t len) {
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    uint64_t seed, offset;
    XDEV_CHECK(decode(state, len, &seed, &offset));
    xdev_rng_gen_t *g = xdev_rng_generator_lock(gen);
    g->seed = seed;
    g->offset = offset;
    xdev_rng_unlock(g);
    return XDEV_SUCCESS;
}

xdev_status_t xdev_generator_get_device(xdev_generator_t gen, xdev_device_t *out) {
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_generator_check(gen, "gen"));
    *out = gen->device;
    return XDEV_SUCCESS;
}
