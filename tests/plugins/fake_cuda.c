/* SPDX-License-Identifier: Apache-2.0 */
/* fake_cuda.c - a fake "cuda" backend plugin for the selection tests.
 *
 * Everything lives in host memory: FAKE_DEVICE_COUNT devices, streams that run
 * their work at enqueue, events that complete when recorded. Compiled several
 * times with different definitions:
 *   FAKE_DEVICE_COUNT  visible devices (0: the plugin loads but is unusable)
 *   FAKE_ABI_MAJOR     the ABI major it claims (badabi: one past the core's)
 *   FAKE_OLD_MINOR     tables report a shorter size, as an older minor would:
 *                      the memory table ends before mem_get_info (which is
 *                      still filled in, with a bogus answer, so a core that
 *                      ignores the size is caught) and the API struct lacks
 *                      its last field (ipc).
 *   FAKE_IPC           an ipc table: device memory is a memfd per allocation,
 *                      which another process maps through /proc/<pid>/fd
 *                      (the core's IPC paths, tested without a GPU).
 *   FAKE_HALF_GROUP    a graph table with half of its group (capture_begin and
 *                      capture_end, not launch or destroy): refused at load,
 *                      naming the missing slots (XDEV_SLOT_GROUPS).
 *   FAKE_COMM          a comm table (communicators, as NCCL's): ranks of one
 *                      process whose broadcast copies the root's bytes into
 *                      each rank's recvbuf (the root's part first: the ranks
 *                      of a group are enqueued in order, root 0 first; inside
 *                      a group the copies run at its end, as NCCL launches a
 *                      group's collectives there), so the
 *                      core's native-communicator paths (the cached groups of
 *                      torch.cuda.comm, the watchdog) run without a GPU; it
 *                      counts event records and collectives for the test
 *                      (fake_cuda_counts, exported).
 *   FAKE_FFT           an fft table whose plans (1-D c2c f32 only) need a
 *                      FAKE_FFT_WORK-byte work area, as cuFFT's do, so the
 *                      core's work-area path runs without a GPU: exec
 *                      refuses a missing or smaller work area, computes a
 *                      naive DFT into it and copies that to out; it counts
 *                      plans made and live (fake_fft_counts, exported). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(FAKE_FFT)
#include <math.h>
#endif
#if defined(FAKE_IPC)
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "xdev/backend.h"
#include "xdev/event.h"

#ifndef FAKE_DEVICE_COUNT
#define FAKE_DEVICE_COUNT 2
#endif
#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR XDEV_BACKEND_ABI_MAJOR
#endif
#define FAKE_MAX_DEVICES 2
#define FAKE_TOTAL_MEMORY ((size_t)256 << 20)
#define FAKE_HEADER 64
#define FAKE_MAGIC 0xfa4ecdaU

__attribute__((visibility("default"))) const xdev_backend_api_t *xdev_backend_entry(void);

typedef struct fake_stream {
    unsigned magic;
    int device;
    int priority;
} fake_stream_t;

typedef struct fake_event {
    unsigned magic;
    unsigned flags;
    int recorded;
    double ms;
} fake_event_t;

static const xdev_host_services_t *g_host;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t g_used[FAKE_MAX_DEVICES];
static fake_stream_t g_default_streams[FAKE_MAX_DEVICES];

static xdev_status_t fail(xdev_status_t status, const char *what) {
    if (g_host && g_host->set_error) return g_host->set_error(status, "fake cuda: %s", what);
    return status;
}

static bool valid_device(int device) {
    return device >= 0 && device < FAKE_DEVICE_COUNT;
}

/* ------------------------------------------------------------ lifecycle */
static xdev_status_t fake_init(const xdev_host_services_t *host) {
    if (!host || host->abi_major != XDEV_BACKEND_ABI_MAJOR)
        return XDEV_ERROR_BACKEND; /* cannot report: no services */
    g_host = host;
#if FAKE_ABI_MAJOR != XDEV_BACKEND_ABI_MAJOR
    return fail(XDEV_ERROR_INTERNAL, "init called although the plugin's ABI major differs");
#else
    for (int i = 0; i < FAKE_MAX_DEVICES; i++) {
        g_default_streams[i].magic = FAKE_MAGIC;
        g_default_streams[i].device = i;
        g_default_streams[i].priority = XDEV_STREAM_PRIORITY_NORMAL;
    }
    return XDEV_SUCCESS;
#endif
}

/* Device contexts: one per fake device. */
struct xdev_backend_device {
    int index;
};
static xdev_backend_device_t g_devs[FAKE_MAX_DEVICES] = {{0}, {1}};

static xdev_status_t dev_open(int index, xdev_backend_device_t **out) {
    if (!valid_device(index)) return fail(XDEV_ERROR_INVALID_DEVICE, "bad device");
    *out = &g_devs[index];
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ device */
static xdev_status_t dev_count(int *count) {
    *count = FAKE_DEVICE_COUNT;
    return XDEV_SUCCESS;
}

static xdev_status_t dev_get_properties(xdev_backend_device_t *dev,
                                        xdev_device_properties_t *props) {
    if (!valid_device(dev->index)) return fail(XDEV_ERROR_INVALID_DEVICE, "bad device");
    memset(props, 0, sizeof *props);
    strcpy(props->name, "xdev fake CUDA device");
    props->capability_major = 9;
    props->capability_minor = 0;
    props->total_memory = FAKE_TOTAL_MEMORY;
    props->multiprocessor_count = 132;
    props->physical_index = dev->index;
    props->integrated = false;
    return XDEV_SUCCESS;
}

/* UUIDs with a common prefix ("GPU-fa4ec0da" names both: ambiguous), so
 * that XDEV_VISIBLE_DEVICES' UUID entries are tested without a GPU. */
static xdev_status_t dev_get_properties_ext(xdev_backend_device_t *dev,
                                            xdev_device_properties_ext_t *ext) {
    if (!valid_device(dev->index)) return fail(XDEV_ERROR_INVALID_DEVICE, "bad device");
    snprintf(ext->uuid, sizeof ext->uuid, "GPU-fa4ec0da-%d%d%d%d-4000-8000-00000000000%d",
             dev->index + 1, dev->index + 1, dev->index + 1, dev->index + 1, dev->index);
    snprintf(ext->pci_bus_id, sizeof ext->pci_bus_id, "0000:%02x:00.0", 0x3b + dev->index);
    ext->l2_cache_size = (size_t)50 << 20;
    ext->bf16_supported = true;
    ext->tf32_supported = true;
    snprintf(ext->arch, sizeof ext->arch, "sm_90");
    return XDEV_SUCCESS;
}

static xdev_status_t dev_synchronize(xdev_backend_device_t *dev) {
    return valid_device(dev->index) ? XDEV_SUCCESS : fail(XDEV_ERROR_INVALID_DEVICE, "bad device");
}

static xdev_status_t dev_can_access_peer(xdev_backend_device_t *dev, xdev_backend_device_t *peer,
                                         bool *out) {
    *out = dev != peer;
    return XDEV_SUCCESS;
}

static xdev_status_t dev_enable_peer_access(xdev_backend_device_t *dev,
                                            xdev_backend_device_t *peer) {
    return XDEV_SUCCESS;
}

static const xdev_device_vtable_t g_device = {
    .size = sizeof(xdev_device_vtable_t),
    .count = dev_count,
    .open = dev_open,
    .get_properties = dev_get_properties,
    .synchronize = dev_synchronize,
    .can_access_peer = dev_can_access_peer,
    .enable_peer_access = dev_enable_peer_access,
    .get_properties_ext = dev_get_properties_ext,
};

/* ------------------------------------------------------------ stream */
static xdev_status_t st_create(xdev_backend_device_t *dev, int priority, void **out) {
    fake_stream_t *s = calloc(1, sizeof *s);
    if (!s) return fail(XDEV_ERROR_OUT_OF_MEMORY, "stream allocation failed");
    s->magic = FAKE_MAGIC;
    s->device = dev->index;
    s->priority = priority;
    *out = s;
    return XDEV_SUCCESS;
}

static xdev_status_t st_destroy(xdev_backend_device_t *dev, void *stream) {
    fake_stream_t *s = stream;
    if (!s || s->magic != FAKE_MAGIC) return fail(XDEV_ERROR_INVALID_HANDLE, "bad stream");
    if (s >= g_default_streams && s < g_default_streams + FAKE_MAX_DEVICES)
        return fail(XDEV_ERROR_INVALID_VALUE, "default stream");
    s->magic = 0;
    free(s);
    return XDEV_SUCCESS;
}

static xdev_status_t st_get_default(xdev_backend_device_t *dev, void **out) {
    *out = &g_default_streams[dev->index];
    return XDEV_SUCCESS;
}

static xdev_status_t st_query(xdev_backend_device_t *dev, void *stream) {
    return XDEV_SUCCESS;
}

static xdev_status_t st_synchronize(xdev_backend_device_t *dev, void *stream) {
    return XDEV_SUCCESS;
}

static xdev_status_t st_wait_event(xdev_backend_device_t *dev, void *stream, void *event) {
    return XDEV_SUCCESS;
}

static xdev_status_t st_launch_host_func(xdev_backend_device_t *dev, void *stream,
                                         xdev_host_fn_t fn, void *user) {
    fn(user);
    return XDEV_SUCCESS;
}

static const xdev_stream_vtable_t g_stream = {
    .size = sizeof(xdev_stream_vtable_t),
    .create = st_create,
    .destroy = st_destroy,
    .get_default = st_get_default,
    .query = st_query,
    .synchronize = st_synchronize,
    .wait_event = st_wait_event,
    .launch_host_func = st_launch_host_func,
};

/* ------------------------------------------------------------ event */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static xdev_status_t ev_create(xdev_backend_device_t *dev, unsigned flags, void **out) {
    fake_event_t *e = calloc(1, sizeof *e);
    if (!e) return fail(XDEV_ERROR_OUT_OF_MEMORY, "event allocation failed");
    e->magic = FAKE_MAGIC;
    e->flags = flags;
    *out = e;
    return XDEV_SUCCESS;
}

static xdev_status_t ev_destroy(xdev_backend_device_t *dev, void *event) {
    fake_event_t *e = event;
    if (!e || e->magic != FAKE_MAGIC) return fail(XDEV_ERROR_INVALID_HANDLE, "bad event");
    e->magic = 0;
    free(e);
    return XDEV_SUCCESS;
}

#if defined(FAKE_COMM)
/* What tests/test_comm_cached.c reads (dlsym): event records and collectives so far. */
__attribute__((visibility("default"))) _Atomic long fake_cuda_counts[2];
#define COUNT(i) atomic_fetch_add(&fake_cuda_counts[i], 1)
#else
#define COUNT(i) ((void)0)
#endif

static xdev_status_t ev_record(xdev_backend_device_t *dev, void *event, void *stream) {
    fake_event_t *e = event;
    COUNT(0);
    e->recorded = 1;
    e->ms = now_ms();
    return XDEV_SUCCESS;
}

static xdev_status_t ev_query(xdev_backend_device_t *dev, void *event) {
    return XDEV_SUCCESS;
}

static xdev_status_t ev_synchronize(xdev_backend_device_t *dev, void *event) {
    return XDEV_SUCCESS;
}

static xdev_status_t ev_elapsed_time(xdev_backend_device_t *dev, void *start, void *end,
                                     float *ms) {
    const fake_event_t *a = start, *b = end;
    if (!a->recorded || !b->recorded) return fail(XDEV_ERROR_INVALID_VALUE, "not recorded");
    *ms = (float)(b->ms - a->ms);
    return XDEV_SUCCESS;
}

static const xdev_event_vtable_t g_event = {
    .size = sizeof(xdev_event_vtable_t),
    .create = ev_create,
    .destroy = ev_destroy,
    .record = ev_record,
    .query = ev_query,
    .synchronize = ev_synchronize,
    .elapsed_time = ev_elapsed_time,
};

/* ------------------------------------------------------------ memory */
static void *block_alloc(size_t bytes) {
    unsigned char *raw = malloc(FAKE_HEADER + bytes);
    if (!raw) return NULL;
    memcpy(raw, &bytes, sizeof bytes);
    return raw + FAKE_HEADER;
}

static size_t block_free(void *ptr) {
    unsigned char *raw = (unsigned char *)ptr - FAKE_HEADER;
    size_t bytes;
    memcpy(&bytes, raw, sizeof bytes);
    free(raw);
    return bytes;
}

#if defined(FAKE_IPC)
/* The header of a shared block (both processes see it) and a handle to one. */
typedef struct fake_shared {
    size_t bytes;
    int fd; /* the exporter's memfd */
} fake_shared_t;
typedef struct fake_ipc_handle {
    int pid;
    int fd;
} fake_ipc_handle_t;

static void *dev_block_alloc(size_t bytes) {
    int fd = memfd_create("xdev-fake-cuda", MFD_CLOEXEC);
    if (fd < 0) return NULL;
    unsigned char *raw = MAP_FAILED;
    if (ftruncate(fd, (off_t)(FAKE_HEADER + bytes)) == 0)
        raw = mmap(NULL, FAKE_HEADER + bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (raw == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    fake_shared_t h = {bytes, fd};
    memcpy(raw, &h, sizeof h);
    return raw + FAKE_HEADER;
}

/* Unmap a shared block (the exporter's, closing its memfd, or an opened one). */
static size_t dev_block_unmap(void *ptr, bool owner) {
    unsigned char *raw = (unsigned char *)ptr - FAKE_HEADER;
    fake_shared_t h;
    memcpy(&h, raw, sizeof h);
    if (owner) close(h.fd);
    munmap(raw, FAKE_HEADER + h.bytes);
    return h.bytes;
}

static xdev_status_t ipc_get_mem_handle(xdev_backend_device_t *dev, void *base, void *handle) {
    fake_shared_t h;
    memcpy(&h, (unsigned char *)base - FAKE_HEADER, sizeof h);
    fake_ipc_handle_t w = {(int)getpid(), h.fd};
    memset(handle, 0, XDEV_IPC_NATIVE_SIZE);
    memcpy(handle, &w, sizeof w);
    return XDEV_SUCCESS;
}

static xdev_status_t ipc_open_mem_handle(xdev_backend_device_t *dev, const void *handle,
                                         void **base) {
    fake_ipc_handle_t w;
    memcpy(&w, handle, sizeof w);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", w.pid, w.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail(XDEV_ERROR_INVALID_VALUE, "cannot open the exporter's memfd");
    fake_shared_t h;
    unsigned char *raw = MAP_FAILED;
    if (pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h)
        raw = mmap(NULL, FAKE_HEADER + h.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (raw == MAP_FAILED) return fail(XDEV_ERROR_OUT_OF_MEMORY, "cannot map the exporter's memfd");
    *base = raw + FAKE_HEADER;
    return XDEV_SUCCESS;
}

static xdev_status_t ipc_close_mem_handle(xdev_backend_device_t *dev, void *base) {
    (void)dev_block_unmap(base, false);
    return XDEV_SUCCESS;
}

static const xdev_ipc_vtable_t g_ipc = {
    .size = sizeof(xdev_ipc_vtable_t),
    .get_mem_handle = ipc_get_mem_handle,
    .open_mem_handle = ipc_open_mem_handle,
    .close_mem_handle = ipc_close_mem_handle,
};
#define DEV_ALLOC(bytes) dev_block_alloc(bytes)
#define DEV_FREE(ptr) dev_block_unmap((ptr), true)
#else
#define DEV_ALLOC(bytes) block_alloc(bytes)
#define DEV_FREE(ptr) block_free(ptr)
#endif

static xdev_status_t mem_malloc(xdev_backend_device_t *dev, size_t bytes, void **out) {
    if (!valid_device(dev->index)) return fail(XDEV_ERROR_INVALID_DEVICE, "bad device");
    pthread_mutex_lock(&g_mu);
    if (bytes > FAKE_TOTAL_MEMORY - g_used[dev->index]) {
        pthread_mutex_unlock(&g_mu);
        return g_host->set_error(XDEV_ERROR_OUT_OF_MEMORY,
                                 "fake cuda: cudaErrorMemoryAllocation allocating %zu bytes",
                                 bytes);
    }
    void *p = DEV_ALLOC(bytes);
    if (p) g_used[dev->index] += bytes;
    pthread_mutex_unlock(&g_mu);
    if (!p) return fail(XDEV_ERROR_OUT_OF_MEMORY, "host malloc failed");
    *out = p;
    return XDEV_SUCCESS;
}

static xdev_status_t mem_free(xdev_backend_device_t *dev, void *ptr) {
    size_t bytes = DEV_FREE(ptr);
    pthread_mutex_lock(&g_mu);
    g_used[dev->index] -= bytes;
    pthread_mutex_unlock(&g_mu);
    return XDEV_SUCCESS;
}

static xdev_status_t mem_host_alloc(size_t bytes, void **out) {
    void *p = block_alloc(bytes);
    if (!p) return fail(XDEV_ERROR_OUT_OF_MEMORY, "host malloc failed");
    *out = p;
    return XDEV_SUCCESS;
}

static xdev_status_t mem_host_free(void *ptr) {
    (void)block_free(ptr);
    return XDEV_SUCCESS;
}

static xdev_status_t mem_memcpy_async(xdev_backend_device_t *dev, const xdev_copy_desc_t *copy,
                                      void *stream) {
    if (copy->bytes) memmove(copy->dst, copy->src, copy->bytes);
    return XDEV_SUCCESS;
}

static xdev_status_t mem_memset_async(xdev_backend_device_t *dev, void *dst, int value,
                                      size_t bytes, void *stream) {
    memset(dst, value, bytes);
    return XDEV_SUCCESS;
}

static xdev_status_t mem_get_info(xdev_backend_device_t *dev, size_t *free_bytes,
                                  size_t *total_bytes) {
#if defined(FAKE_OLD_MINOR)
    /* Past the table's reported end: the core must never call it. */
    *free_bytes = 12345;
    *total_bytes = 12345;
    return XDEV_SUCCESS;
#else
    pthread_mutex_lock(&g_mu);
    *free_bytes = FAKE_TOTAL_MEMORY - g_used[dev->index];
    pthread_mutex_unlock(&g_mu);
    *total_bytes = FAKE_TOTAL_MEMORY;
    return XDEV_SUCCESS;
#endif
}

/* The optional stream-ordered slots (malloc_async, free_async) stay NULL. */
static const xdev_memory_vtable_t g_memory = {
#if defined(FAKE_OLD_MINOR)
    .size = offsetof(xdev_memory_vtable_t, mem_get_info),
#else
    .size = sizeof(xdev_memory_vtable_t),
#endif
    .malloc = mem_malloc,
    .free = mem_free,
    .host_alloc = mem_host_alloc,
    .host_free = mem_host_free,
    .memcpy_async = mem_memcpy_async,
    .memset_async = mem_memset_async,
    .mem_get_info = mem_get_info,
};

#if defined(FAKE_HALF_GROUP)
/* Never called: the core refuses the table when the plugin loads. */
static xdev_status_t graph_begin(xdev_backend_device_t *dev, void *stream, int mode) {
    return fail(XDEV_ERROR_INTERNAL, "graph.capture_begin of a refused table was called");
}

static xdev_status_t graph_end(xdev_backend_device_t *dev, void *stream, void **graph) {
    return fail(XDEV_ERROR_INTERNAL, "graph.capture_end of a refused table was called");
}

static const xdev_graph_vtable_t g_graph = {
    .size = sizeof(xdev_graph_vtable_t),
    .capture_begin = graph_begin,
    .capture_end = graph_end,
};
#endif

#if defined(FAKE_COMM)
/* ------------------------------------------------------------ comm
 * A rank is its device; a broadcast's root leaves its send buffer for the
 * other ranks (enqueued after it in the same thread) to copy from. */
typedef struct fake_rank {
    unsigned magic;
    int device;
} fake_rank_t;
static _Thread_local const void *tls_root_send;
/* As NCCL: inside a group a collective runs at the group's end (the
 * outermost one), so a copy queued behind it on its stream before that
 * end would read its output unwritten (what the shadow must not do). */
#define FAKE_GROUP_MAX 256
typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} fake_move_t;
static _Thread_local int tls_group_depth;
static _Thread_local fake_move_t tls_moves[FAKE_GROUP_MAX];
static _Thread_local int tls_nmoves;

static xdev_status_t comm_init_all(xdev_backend_device_t *const *devs, int n, void **comms) {
    for (int i = 0; i < n; i++) {
        fake_rank_t *k = calloc(1, sizeof *k);
        if (k == NULL) return fail(XDEV_ERROR_OUT_OF_MEMORY, "rank allocation failed");
        k->magic = FAKE_MAGIC;
        k->device = devs[i]->index;
        comms[i] = k;
    }
    return XDEV_SUCCESS;
}

static xdev_status_t comm_destroy(void *comm) {
    fake_rank_t *k = comm;
    if (k == NULL || k->magic != FAKE_MAGIC) return fail(XDEV_ERROR_INVALID_HANDLE, "bad rank");
    k->magic = 0;
    free(k);
    return XDEV_SUCCESS;
}

static xdev_status_t comm_abort(void *comm) {
    return XDEV_SUCCESS;
}

static xdev_status_t comm_async_error(void *comm) {
    return XDEV_SUCCESS;
}

static xdev_status_t comm_collective(void *comm, const xdev_collective_desc_t *d, void *stream) {
    fake_rank_t *k = comm;
    if (k == NULL || k->magic != FAKE_MAGIC) return fail(XDEV_ERROR_INVALID_HANDLE, "bad rank");
    if (d->kind != XDEV_COLL_BROADCAST)
        return fail(XDEV_ERROR_NOT_SUPPORTED, "the fake communicators only broadcast");
    /* the ranks' part in order, root first: its bytes are the ones to copy */
    size_t bytes = d->count * (d->dtype == XDEV_DTYPE_U8 ? 1 : 4);
    if (d->send != NULL) tls_root_send = d->send;
    if (tls_root_send == NULL) return fail(XDEV_ERROR_INVALID_VALUE, "the root comes first");
    if (bytes > 0 && d->recv != tls_root_send) {
        if (tls_group_depth == 0)
            memmove(d->recv, tls_root_send, bytes);
        else if (tls_nmoves < FAKE_GROUP_MAX)
            tls_moves[tls_nmoves++] = (fake_move_t){d->recv, tls_root_send, bytes};
        else
            return fail(XDEV_ERROR_NOT_SUPPORTED, "more than 256 collectives in a group");
    }
    COUNT(1);
    return XDEV_SUCCESS;
}

static xdev_status_t comm_group_start(void) {
    tls_group_depth++;
    return XDEV_SUCCESS;
}

static xdev_status_t comm_group_end(void) {
    if (tls_group_depth > 0 && --tls_group_depth == 0) {
        for (int i = 0; i < tls_nmoves; i++)
            memmove(tls_moves[i].dst, tls_moves[i].src, tls_moves[i].bytes);
        tls_nmoves = 0;
    }
    return XDEV_SUCCESS;
}

static const xdev_comm_vtable_t g_comm = {
    .size = sizeof(xdev_comm_vtable_t),
    .init_all = comm_init_all,
    .destroy = comm_destroy,
    .abort = comm_abort,
    .async_error = comm_async_error,
    .collective = comm_collective,
    .group_start = comm_group_start,
    .group_end = comm_group_end,
};
#endif

#if defined(FAKE_FFT)
/* ------------------------------------------------------------ fft */
#define FAKE_FFT_WORK ((size_t)4 << 20)
typedef struct fake_plan {
    unsigned magic;
    int64_t n, batch, istride, idist, ostride, odist;
} fake_plan_t;
/* What tests/test_fft_work_oom.c reads (dlsym): plans made, plans live. */
__attribute__((visibility("default"))) _Atomic long fake_fft_counts[2];

static xdev_status_t fft_plan_create(const xdev_fft_plan_desc_t *d, void **plan,
                                     size_t *work_size) {
    if (d->type != XDEV_FFT_C2C || d->precision != XDEV_FFT_F32 || d->rank != 1)
        return fail(XDEV_ERROR_NOT_SUPPORTED, "the fake FFT does 1-D c2c f32 transforms only");
    /* the result is computed in the work area: it must hold every transform */
    if ((size_t)d->n[0] * (size_t)d->batch * 2 * sizeof(float) > FAKE_FFT_WORK)
        return fail(XDEV_ERROR_NOT_SUPPORTED, "the fake FFT's result exceeds its work area");
    fake_plan_t *p = calloc(1, sizeof *p);
    if (p == NULL) return fail(XDEV_ERROR_OUT_OF_MEMORY, "plan allocation failed");
    *p = (fake_plan_t){FAKE_MAGIC, d->n[0], d->batch, d->istride, d->idist, d->ostride, d->odist};
    atomic_fetch_add(&fake_fft_counts[0], 1);
    atomic_fetch_add(&fake_fft_counts[1], 1);
    *plan = p;
    *work_size = FAKE_FFT_WORK;
    return XDEV_SUCCESS;
}

static xdev_status_t fft_plan_destroy(xdev_backend_device_t *dev, void *plan) {
    fake_plan_t *p = plan;
    if (p == NULL || p->magic != FAKE_MAGIC) return fail(XDEV_ERROR_INVALID_HANDLE, "bad plan");
    p->magic = 0;
    free(p);
    atomic_fetch_sub(&fake_fft_counts[1], 1);
    return XDEV_SUCCESS;
}

/* out[k] = scale * sum_j in[j] e^(sign 2 pi i jk / n), each batch's k in
 * the work area first, then copied out (in == out works). */
static xdev_status_t fft_exec(const xdev_fft_exec_desc_t *x) {
    const fake_plan_t *p = x->plan;
    if (p == NULL || p->magic != FAKE_MAGIC) return fail(XDEV_ERROR_INVALID_HANDLE, "bad plan");
    if (x->work == NULL || x->work_size < FAKE_FFT_WORK)
        return fail(XDEV_ERROR_INVALID_VALUE, "the plan's work area is missing or too small");
    const float *in = x->in;
    float *out = x->out, *w = x->work;
    double sign = x->direction == XDEV_FFT_FORWARD ? -1.0 : 1.0;
    const double two_pi = 6.283185307179586;
    for (int64_t b = 0; b < p->batch; b++) {
        for (int64_t k = 0; k < p->n; k++) {
            double re = 0, im = 0;
            for (int64_t j = 0; j < p->n; j++) {
                const float *v = in + 2 * (b * p->idist + j * p->istride);
                double a = sign * two_pi * (double)((j * k) % p->n) / (double)p->n;
                re += v[0] * cos(a) - v[1] * sin(a);
                im += v[0] * sin(a) + v[1] * cos(a);
            }
            w[2 * (b * p->n + k)] = (float)(re * x->scale);
            w[2 * (b * p->n + k) + 1] = (float)(im * x->scale);
        }
    }
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t k = 0; k < p->n; k++)
            memcpy(out + 2 * (b * p->odist + k * p->ostride), w + 2 * (b * p->n + k),
                   2 * sizeof(float));
    return XDEV_SUCCESS;
}

static const xdev_fft_vtable_t g_fft = {
    .size = sizeof(xdev_fft_vtable_t),
    .plan_create = fft_plan_create,
    .plan_destroy = fft_plan_destroy,
    .exec = fft_exec,
};
#endif

/* ------------------------------------------------------------ entry */
static const xdev_backend_api_t g_api = {
#if defined(FAKE_OLD_MINOR)
    .size = offsetof(xdev_backend_api_t, ipc),
#else
    .size = sizeof(xdev_backend_api_t),
#endif
    .abi_major = FAKE_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .name = "cuda",
    .type = XDEV_DEVICE_CUDA,
    .init = fake_init,
    .device = &g_device,
    .stream = &g_stream,
    .event = &g_event,
    .memory = &g_memory,
#if defined(FAKE_IPC)
    .ipc = &g_ipc,
#endif
#if defined(FAKE_HALF_GROUP)
    .graph = &g_graph,
#endif
#if defined(FAKE_COMM)
    .comm = &g_comm,
#endif
#if defined(FAKE_FFT)
    .fft = &g_fft,
#endif
};

const xdev_backend_api_t *xdev_backend_entry(void) {
    return &g_api;
}
