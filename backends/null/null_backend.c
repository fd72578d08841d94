/* backends/null/null_backend.c - the skeleton a new backend starts from.
 *
 * Every table and every slot of ABI 2.0 is present. init keeps the host
 * services, device.count reports 0 devices (so the backend loads and xdev
 * says "no device" cleanly), and every other slot reports
 * XDEV_ERROR_NOT_SUPPORTED naming itself. Copy the folder, rename, and fill
 * the slots one by one (README.md in this folder lists the steps). The name
 * and device type are macros only so that the tests can build it as an
 * existing type: a real backend adds its own xdev_device_type_t entry. */
#include <stdarg.h>

#include "xdev/backend_support.h"

#ifndef NULL_BACKEND_NAME
#define NULL_BACKEND_NAME "null"
#endif
#ifndef NULL_BACKEND_TYPE
#define NULL_BACKEND_TYPE XDEV_DEVICE_HIP
#endif

/* The backend's device context: whatever a slot needs about one device. */
struct xdev_backend_device {
    int index;
};

static const xdev_host_services_t *g_host;

/* Every unimplemented slot ends here. */
static xdev_status_t missing(const char *slot) {
    return xdev_support_fail(g_host, XDEV_ERROR_NOT_SUPPORTED,
                             "the " NULL_BACKEND_NAME " backend does not implement %s", slot);
}

#define UNUSED(x) (void)(x)

static xdev_status_t null_init(const xdev_host_services_t *host) {
    g_host = host;
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------- device */
static xdev_status_t dev_count(int *count) {
    *count = 0;
    return XDEV_SUCCESS;
}
static xdev_status_t dev_open(int index, xdev_backend_device_t **out) {
    UNUSED(index), UNUSED(out);
    return missing("device.open");
}
static xdev_status_t dev_get_properties(xdev_backend_device_t *d, xdev_device_properties_t *p) {
    UNUSED(d), UNUSED(p);
    return missing("device.get_properties");
}
static xdev_status_t dev_synchronize(xdev_backend_device_t *d) {
    UNUSED(d);
    return missing("device.synchronize");
}
static xdev_status_t dev_can_access_peer(xdev_backend_device_t *d, xdev_backend_device_t *p,
                                         bool *out) {
    UNUSED(d), UNUSED(p), UNUSED(out);
    return missing("device.can_access_peer");
}
static xdev_status_t dev_enable_peer_access(xdev_backend_device_t *d, xdev_backend_device_t *p) {
    UNUSED(d), UNUSED(p);
    return missing("device.enable_peer_access");
}
static xdev_status_t dev_list_processes(xdev_backend_device_t *d, xdev_gpu_process_t *out,
                                        size_t cap, size_t *count) {
    UNUSED(d), UNUSED(out), UNUSED(cap), UNUSED(count);
    return missing("device.list_processes");
}
static xdev_status_t dev_utilization(xdev_backend_device_t *d, xdev_device_utilization_t *out) {
    UNUSED(d), UNUSED(out);
    return missing("device.utilization");
}
static const xdev_device_vtable_t g_device = {
    .size = sizeof(xdev_device_vtable_t),
    .count = dev_count,
    .open = dev_open,
    .get_properties = dev_get_properties,
    .synchronize = dev_synchronize,
    .can_access_peer = dev_can_access_peer,
    .enable_peer_access = dev_enable_peer_access,
    .list_processes = dev_list_processes,
    .utilization = dev_utilization,
};

/* ------------------------------------------------------------- stream */
static xdev_status_t st_create(xdev_backend_device_t *d, int priority, void **out) {
    UNUSED(d), UNUSED(priority), UNUSED(out);
    return missing("stream.create");
}
static xdev_status_t st_destroy(xdev_backend_device_t *d, void *s) {
    UNUSED(d), UNUSED(s);
    return missing("stream.destroy");
}
static xdev_status_t st_get_default(xdev_backend_device_t *d, void **out) {
    UNUSED(d), UNUSED(out);
    return missing("stream.get_default");
}
static xdev_status_t st_query(xdev_backend_device_t *d, void *s) {
    UNUSED(d), UNUSED(s);
    return missing("stream.query");
}
static xdev_status_t st_synchronize(xdev_backend_device_t *d, void *s) {
    UNUSED(d), UNUSED(s);
    return missing("stream.synchronize");
}
static xdev_status_t st_wait_event(xdev_backend_device_t *d, void *s, void *e) {
    UNUSED(d), UNUSED(s), UNUSED(e);
    return missing("stream.wait_event");
}
static xdev_status_t st_launch_host_func(xdev_backend_device_t *d, void *s, xdev_host_fn_t fn,
                                         void *user) {
    UNUSED(d), UNUSED(s), UNUSED(fn), UNUSED(user);
    return missing("stream.launch_host_func");
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

/* -------------------------------------------------------------- event */
static xdev_status_t ev_create(xdev_backend_device_t *d, unsigned flags, void **out) {
    UNUSED(d), UNUSED(flags), UNUSED(out);
    return missing("event.create");
}
static xdev_status_t ev_destroy(xdev_backend_device_t *d, void *e) {
    UNUSED(d), UNUSED(e);
    return missing("event.destroy");
}
static xdev_status_t ev_record(xdev_backend_device_t *d, void *e, void *s) {
    UNUSED(d), UNUSED(e), UNUSED(s);
    return missing("event.record");
}
static xdev_status_t ev_query(xdev_backend_device_t *d, void *e) {
    UNUSED(d), UNUSED(e);
    return missing("event.query");
}
static xdev_status_t ev_synchronize(xdev_backend_device_t *d, void *e) {
    UNUSED(d), UNUSED(e);
    return missing("event.synchronize");
}
static xdev_status_t ev_elapsed_time(xdev_backend_device_t *d, void *a, void *b, float *ms) {
    UNUSED(d), UNUSED(a), UNUSED(b), UNUSED(ms);
    return missing("event.elapsed_time");
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

/* ------------------------------------------------------------- memory */
static xdev_status_t mem_malloc(xdev_backend_device_t *d, size_t n, void **out) {
    UNUSED(d), UNUSED(n), UNUSED(out);
    return missing("memory.malloc");
}
static xdev_status_t mem_free(xdev_backend_device_t *d, void *p) {
    UNUSED(d), UNUSED(p);
    return missing("memory.free");
}
static xdev_status_t mem_host_alloc(size_t n, void **out) {
    UNUSED(n), UNUSED(out);
    return missing("memory.host_alloc");
}
static xdev_status_t mem_host_free(void *p) {
    UNUSED(p);
    return missing("memory.host_free");
}
static xdev_status_t mem_memcpy_async(const xdev_copy_desc_t *c, xdev_backend_device_t *d,
                                      void *s) {
    UNUSED(c), UNUSED(d), UNUSED(s);
    return missing("memory.memcpy_async");
}
static xdev_status_t mem_memset_async(xdev_backend_device_t *d, void *dst, int v, size_t n,
                                      void *s) {
    UNUSED(d), UNUSED(dst), UNUSED(v), UNUSED(n), UNUSED(s);
    return missing("memory.memset_async");
}
static xdev_status_t mem_get_info(xdev_backend_device_t *d, size_t *f, size_t *t) {
    UNUSED(d), UNUSED(f), UNUSED(t);
    return missing("memory.mem_get_info");
}
static xdev_status_t mem_malloc_async(xdev_backend_device_t *d, size_t n, void *s, void **out) {
    UNUSED(d), UNUSED(n), UNUSED(s), UNUSED(out);
    return missing("memory.malloc_async");
}
static xdev_status_t mem_free_async(xdev_backend_device_t *d, void *p, void *s) {
    UNUSED(d), UNUSED(p), UNUSED(s);
    return missing("memory.free_async");
}
static xdev_status_t mem_va_granularity(xdev_backend_device_t *d, size_t *g) {
    UNUSED(d), UNUSED(g);
    return missing("memory.va_granularity");
}
static xdev_status_t mem_va_reserve(xdev_backend_device_t *d, size_t n, void **base) {
    UNUSED(d), UNUSED(n), UNUSED(base);
    return missing("memory.va_reserve");
}
static xdev_status_t mem_va_release(xdev_backend_device_t *d, void *base, size_t n) {
    UNUSED(d), UNUSED(base), UNUSED(n);
    return missing("memory.va_release");
}
static xdev_status_t mem_va_map(xdev_backend_device_t *d, void *p, size_t n) {
    UNUSED(d), UNUSED(p), UNUSED(n);
    return missing("memory.va_map");
}
static xdev_status_t mem_va_unmap(xdev_backend_device_t *d, void *p, size_t n) {
    UNUSED(d), UNUSED(p), UNUSED(n);
    return missing("memory.va_unmap");
}
static const xdev_memory_vtable_t g_memory = {
    .size = sizeof(xdev_memory_vtable_t),
    .malloc = mem_malloc,
    .free = mem_free,
    .host_alloc = mem_host_alloc,
    .host_free = mem_host_free,
    .memcpy_async = mem_memcpy_async,
    .memset_async = mem_memset_async,
    .mem_get_info = mem_get_info,
    .malloc_async = mem_malloc_async,
    .free_async = mem_free_async,
    .va_granularity = mem_va_granularity,
    .va_reserve = mem_va_reserve,
    .va_release = mem_va_release,
    .va_map = mem_va_map,
    .va_unmap = mem_va_unmap,
};

/* ------------------------------------------------ optional: blas, fft, rng */
static xdev_status_t blas_query(xdev_backend_device_t *d, xdev_blas_routine_t r, uint32_t *m) {
    UNUSED(d), UNUSED(r), UNUSED(m);
    return missing("blas.query_dtypes");
}
static xdev_status_t blas_gemm(const xdev_blas_gemm_desc_t *x) {
    UNUSED(x);
    return missing("blas.gemm");
}
static xdev_status_t blas_axpy(const xdev_blas_vec_desc_t *x) {
    UNUSED(x);
    return missing("blas.axpy");
}
static xdev_status_t blas_dot(const xdev_blas_vec_desc_t *x) {
    UNUSED(x);
    return missing("blas.dot");
}
static xdev_status_t blas_nrm2(const xdev_blas_vec_desc_t *x) {
    UNUSED(x);
    return missing("blas.nrm2");
}
static xdev_status_t blas_scal(const xdev_blas_vec_desc_t *x) {
    UNUSED(x);
    return missing("blas.scal");
}
static const xdev_blas_vtable_t g_blas = {
    .size = sizeof(xdev_blas_vtable_t),
    .query_dtypes = blas_query,
    .gemm = blas_gemm,
    .axpy = blas_axpy,
    .dot = blas_dot,
    .nrm2 = blas_nrm2,
    .scal = blas_scal,
};

static xdev_status_t fft_plan_create(const xdev_fft_plan_desc_t *x, void **plan, size_t *work) {
    UNUSED(x), UNUSED(plan), UNUSED(work);
    return missing("fft.plan_create");
}
static xdev_status_t fft_plan_destroy(xdev_backend_device_t *d, void *plan) {
    UNUSED(d), UNUSED(plan);
    return missing("fft.plan_destroy");
}
static xdev_status_t fft_exec(const xdev_fft_exec_desc_t *x) {
    UNUSED(x);
    return missing("fft.exec");
}
static const xdev_fft_vtable_t g_fft = {
    .size = sizeof(xdev_fft_vtable_t),
    .plan_create = fft_plan_create,
    .plan_destroy = fft_plan_destroy,
    .exec = fft_exec,
};

/* A real backend writes the bits of xdev/support/philox.h, on its device. */
static xdev_status_t rng_fill(const xdev_rng_fill_desc_t *x) {
    UNUSED(x);
    return missing("rng.fill");
}
static const xdev_rng_vtable_t g_rng = {.size = sizeof(xdev_rng_vtable_t), .fill = rng_fill};

/* ---------------------------------------------------- optional: trace, ipc */
static xdev_status_t tr_mark(const char *m) {
    UNUSED(m);
    return missing("trace.mark");
}
static xdev_status_t tr_push(const char *m) {
    UNUSED(m);
    return missing("trace.range_push");
}
static xdev_status_t tr_pop(void) {
    return missing("trace.range_pop");
}
static const xdev_trace_vtable_t g_trace = {
    .size = sizeof(xdev_trace_vtable_t),
    .mark = tr_mark,
    .range_push = tr_push,
    .range_pop = tr_pop,
};

static xdev_status_t ipc_get_mem(xdev_backend_device_t *d, void *base, void *h) {
    UNUSED(d), UNUSED(base), UNUSED(h);
    return missing("ipc.get_mem_handle");
}
static xdev_status_t ipc_open_mem(xdev_backend_device_t *d, const void *h, void **base) {
    UNUSED(d), UNUSED(h), UNUSED(base);
    return missing("ipc.open_mem_handle");
}
static xdev_status_t ipc_close_mem(xdev_backend_device_t *d, void *base) {
    UNUSED(d), UNUSED(base);
    return missing("ipc.close_mem_handle");
}
static xdev_status_t ipc_get_event(xdev_backend_device_t *d, void *e, void *h) {
    UNUSED(d), UNUSED(e), UNUSED(h);
    return missing("ipc.get_event_handle");
}
static xdev_status_t ipc_open_event(xdev_backend_device_t *d, const void *h, void **e) {
    UNUSED(d), UNUSED(h), UNUSED(e);
    return missing("ipc.open_event_handle");
}
static const xdev_ipc_vtable_t g_ipc = {
    .size = sizeof(xdev_ipc_vtable_t),
    .get_mem_handle = ipc_get_mem,
    .open_mem_handle = ipc_open_mem,
    .close_mem_handle = ipc_close_mem,
    .get_event_handle = ipc_get_event,
    .open_event_handle = ipc_open_event,
};

/* ---------------------------------------------------- optional: ops (ABI 2.1, add 2.2)
 * Typed fills and conversions: the bits of xdev/support/convert.h; add:
 * the sum the collectives' reduce_add needs. */
static xdev_status_t ops_fill(xdev_backend_device_t *d, void *dst, const void *pattern,
                              size_t pattern_size, size_t count, void *stream) {
    UNUSED(d), UNUSED(dst), UNUSED(pattern), UNUSED(pattern_size), UNUSED(count), UNUSED(stream);
    return missing("ops.fill");
}
static xdev_status_t ops_convert(xdev_backend_device_t *d, void *dst, xdev_dtype_t dst_dtype,
                                 const void *src, xdev_dtype_t src_dtype, size_t count,
                                 void *stream) {
    UNUSED(d), UNUSED(dst), UNUSED(dst_dtype), UNUSED(src), UNUSED(src_dtype), UNUSED(count);
    UNUSED(stream);
    return missing("ops.convert");
}
static xdev_status_t ops_add(xdev_backend_device_t *d, void *dst, const void *src,
                             xdev_dtype_t dtype, size_t count, void *stream) {
    UNUSED(d), UNUSED(dst), UNUSED(src), UNUSED(dtype), UNUSED(count), UNUSED(stream);
    return missing("ops.add");
}
static const xdev_ops_vtable_t g_ops = {
    .size = sizeof(xdev_ops_vtable_t),
    .fill = ops_fill,
    .convert = ops_convert,
    .add = ops_add,
};

/* ------------------------------------------------ optional: comm (ABI 2.4) */
static xdev_status_t comm_init_all(xdev_backend_device_t *const *devs, int n, void **comms) {
    UNUSED(devs), UNUSED(n), UNUSED(comms);
    return missing("comm.init_all");
}
static xdev_status_t comm_destroy(void *comm) {
    UNUSED(comm);
    return missing("comm.destroy");
}
static xdev_status_t comm_abort(void *comm) {
    UNUSED(comm);
    return missing("comm.abort");
}
static xdev_status_t comm_async_error(void *comm) {
    UNUSED(comm);
    return missing("comm.async_error");
}
static xdev_status_t comm_collective(void *comm, const xdev_collective_desc_t *desc, void *stream) {
    UNUSED(comm), UNUSED(desc), UNUSED(stream);
    return missing("comm.collective");
}
static xdev_status_t comm_group_start(void) {
    return missing("comm.group_start");
}
static xdev_status_t comm_group_end(void) {
    return missing("comm.group_end");
}
static xdev_status_t comm_get_unique_id(void *id) {
    UNUSED(id);
    return missing("comm.get_unique_id");
}
static xdev_status_t comm_init_rank(xdev_backend_device_t *d, int nranks, const void *id, int rank,
                                    void **comm) {
    UNUSED(d), UNUSED(nranks), UNUSED(id), UNUSED(rank), UNUSED(comm);
    return missing("comm.init_rank");
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
    .get_unique_id = comm_get_unique_id,
    .init_rank = comm_init_rank,
};

/* Process exit: stop the threads this backend owns (it owns none). */
static void null_at_exit(void) {}

static const xdev_backend_api_t g_api = {
    .size = sizeof(xdev_backend_api_t),
    .abi_major = XDEV_BACKEND_ABI_MAJOR,
    .abi_minor = XDEV_BACKEND_ABI_MINOR,
    .name = NULL_BACKEND_NAME,
    .type = NULL_BACKEND_TYPE,
    .init = null_init,
    .at_exit = null_at_exit,
    .device = &g_device,
    .stream = &g_stream,
    .event = &g_event,
    .memory = &g_memory,
    .blas = &g_blas,
    .fft = &g_fft,
    .rng = &g_rng,
    .trace = &g_trace,
    .ipc = &g_ipc,
    .ops = &g_ops,
    .comm = &g_comm,
};

XDEV_API const xdev_backend_api_t *xdev_backend_entry(void);

/* The plugin's one export (XDEV_BACKEND_ENTRY_SYMBOL). */
const xdev_backend_api_t *xdev_backend_entry(void) {
    return &g_api;
}
