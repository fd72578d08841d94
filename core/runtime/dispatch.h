/* dispatch.h - one typed helper per backend slot.
 *
 * Call sites never spell a slot's signature or test it for NULL: they call
 * xdev_be_<table>_<slot>(record, ...), which passes the device's backend
 * context and reports XDEV_ERROR_NOT_SUPPORTED ("the cuda backend does not
 * implement fft.exec") when the backend leaves the slot out (or is an older
 * minor whose table ends before it). Slots that concern no device (host
 * memory, markers, descriptor-driven math) take the backend. */
#ifndef XDEV_CORE_DISPATCH_H
#define XDEV_CORE_DISPATCH_H

#include "runtime/registry.h"

/* The body of every helper: the slot or NOT_SUPPORTED, then the call. */
#define XDEV_DISPATCH(be, table, slot, ...)                                                        \
    do {                                                                                           \
        __typeof__((be)->api->table->slot) xdev_fn_ = XDEV_BACKEND_SLOT((be)->api->table, slot);   \
        if (xdev_fn_ == NULL) return xdev_backend_not_supported((be), #table "." #slot);           \
        return xdev_fn_(__VA_ARGS__);                                                              \
    } while (0)

/* True when the backend implements the slot (for fallbacks). */
#define XDEV_HAS(be, table, slot) (XDEV_BACKEND_SLOT((be)->api->table, slot) != NULL)

/* ---------------------------------------------------------------- device */
static inline xdev_status_t xdev_be_device_get_properties(xdev_device_record_t *r,
                                                          xdev_device_properties_t *p) {
    XDEV_DISPATCH(r->be, device, get_properties, r->ctx, p);
}
static inline xdev_status_t xdev_be_device_synchronize(xdev_device_record_t *r) {
    XDEV_DISPATCH(r->be, device, synchronize, r->ctx);
}
static inline xdev_status_t xdev_be_device_can_access_peer(xdev_device_record_t *r,
                                                           xdev_device_record_t *peer, bool *out) {
    XDEV_DISPATCH(r->be, device, can_access_peer, r->ctx, peer->ctx, out);
}
static inline xdev_status_t xdev_be_device_enable_peer_access(xdev_device_record_t *r,
                                                              xdev_device_record_t *peer) {
    XDEV_DISPATCH(r->be, device, enable_peer_access, r->ctx, peer->ctx);
}
static inline xdev_status_t xdev_be_device_list_processes(xdev_device_record_t *r,
                                                          xdev_gpu_process_t *out, size_t cap,
                                                          size_t *count) {
    XDEV_DISPATCH(r->be, device, list_processes, r->ctx, out, cap, count);
}
static inline xdev_status_t xdev_be_device_utilization(xdev_device_record_t *r,
                                                       xdev_device_utilization_t *out) {
    XDEV_DISPATCH(r->be, device, utilization, r->ctx, out);
}

/* ---------------------------------------------------------------- stream */
static inline xdev_status_t xdev_be_stream_create(xdev_device_record_t *r, int priority,
                                                  void **out) {
    XDEV_DISPATCH(r->be, stream, create, r->ctx, priority, out);
}
static inline xdev_status_t xdev_be_stream_destroy(xdev_device_record_t *r, void *s) {
    XDEV_DISPATCH(r->be, stream, destroy, r->ctx, s);
}
static inline xdev_status_t xdev_be_stream_get_default(xdev_device_record_t *r, void **out) {
    XDEV_DISPATCH(r->be, stream, get_default, r->ctx, out);
}
static inline xdev_status_t xdev_be_stream_query(xdev_device_record_t *r, void *s) {
    XDEV_DISPATCH(r->be, stream, query, r->ctx, s);
}
static inline xdev_status_t xdev_be_stream_synchronize(xdev_device_record_t *r, void *s) {
    XDEV_DISPATCH(r->be, stream, synchronize, r->ctx, s);
}
static inline xdev_status_t xdev_be_stream_wait_event(xdev_device_record_t *r, void *s,
                                                      void *event) {
    XDEV_DISPATCH(r->be, stream, wait_event, r->ctx, s, event);
}
static inline xdev_status_t xdev_be_stream_launch_host_func(xdev_device_record_t *r, void *s,
                                                            xdev_host_fn_t fn, void *user) {
    XDEV_DISPATCH(r->be, stream, launch_host_func, r->ctx, s, fn, user);
}

/* ----------------------------------------------------------------- event */
static inline xdev_status_t xdev_be_event_create(xdev_device_record_t *r, unsigned flags,
                                                 void **out) {
    XDEV_DISPATCH(r->be, event, create, r->ctx, flags, out);
}
static inline xdev_status_t xdev_be_event_destroy(xdev_device_record_t *r, void *e) {
    XDEV_DISPATCH(r->be, event, destroy, r->ctx, e);
}
static inline xdev_status_t xdev_be_event_record(xdev_device_record_t *r, void *e, void *s) {
    XDEV_DISPATCH(r->be, event, record, r->ctx, e, s);
}
static inline xdev_status_t xdev_be_event_query(xdev_device_record_t *r, void *e) {
    XDEV_DISPATCH(r->be, event, query, r->ctx, e);
}
static inline xdev_status_t xdev_be_event_synchronize(xdev_device_record_t *r, void *e) {
    XDEV_DISPATCH(r->be, event, synchronize, r->ctx, e);
}
static inline xdev_status_t xdev_be_event_elapsed_time(xdev_device_record_t *r, void *a, void *b,
                                                       float *ms) {
    XDEV_DISPATCH(r->be, event, elapsed_time, r->ctx, a, b, ms);
}

/* ---------------------------------------------------------------- memory */
static inline xdev_status_t xdev_be_memory_malloc(xdev_device_record_t *r, size_t bytes,
                                                  void **out) {
    XDEV_DISPATCH(r->be, memory, malloc, r->ctx, bytes, out);
}
static inline xdev_status_t xdev_be_memory_free(xdev_device_record_t *r, void *p) {
    XDEV_DISPATCH(r->be, memory, free, r->ctx, p);
}
static inline xdev_status_t xdev_be_memory_host_alloc(xdev_backend_t *be, size_t bytes,
                                                      void **out) {
    XDEV_DISPATCH(be, memory, host_alloc, bytes, out);
}
static inline xdev_status_t xdev_be_memory_host_free(xdev_backend_t *be, void *p) {
    XDEV_DISPATCH(be, memory, host_free, p);
}
static inline xdev_status_t xdev_be_memory_memcpy_async(xdev_device_record_t *r,
                                                        const xdev_copy_desc_t *copy, void *s) {
    XDEV_DISPATCH(r->be, memory, memcpy_async, copy, r->ctx, s);
}
static inline xdev_status_t xdev_be_memory_memset_async(xdev_device_record_t *r, void *dst,
                                                        int value, size_t bytes, void *s) {
    XDEV_DISPATCH(r->be, memory, memset_async, r->ctx, dst, value, bytes, s);
}
static inline xdev_status_t xdev_be_memory_mem_get_info(xdev_device_record_t *r, size_t *free_b,
                                                        size_t *total_b) {
    XDEV_DISPATCH(r->be, memory, mem_get_info, r->ctx, free_b, total_b);
}
static inline xdev_status_t xdev_be_memory_malloc_async(xdev_device_record_t *r, size_t bytes,
                                                        void *s, void **out) {
    XDEV_DISPATCH(r->be, memory, malloc_async, r->ctx, bytes, s, out);
}
static inline xdev_status_t xdev_be_memory_free_async(xdev_device_record_t *r, void *p, void *s) {
    XDEV_DISPATCH(r->be, memory, free_async, r->ctx, p, s);
}
static inline xdev_status_t xdev_be_memory_va_granularity(xdev_device_record_t *r, size_t *g) {
    XDEV_DISPATCH(r->be, memory, va_granularity, r->ctx, g);
}
static inline xdev_status_t xdev_be_memory_va_reserve(xdev_device_record_t *r, size_t bytes,
                                                      void **base) {
    XDEV_DISPATCH(r->be, memory, va_reserve, r->ctx, bytes, base);
}
static inline xdev_status_t xdev_be_memory_va_release(xdev_device_record_t *r, void *base,
                                                      size_t bytes) {
    XDEV_DISPATCH(r->be, memory, va_release, r->ctx, base, bytes);
}
static inline xdev_status_t xdev_be_memory_va_map(xdev_device_record_t *r, void *addr,
                                                  size_t bytes) {
    XDEV_DISPATCH(r->be, memory, va_map, r->ctx, addr, bytes);
}
static inline xdev_status_t xdev_be_memory_va_unmap(xdev_device_record_t *r, void *addr,
                                                    size_t bytes) {
    XDEV_DISPATCH(r->be, memory, va_unmap, r->ctx, addr, bytes);
}

/* ------------------------------------------------------------------ blas */
static inline xdev_status_t xdev_be_blas_query_dtypes(xdev_device_record_t *r,
                                                      xdev_blas_routine_t routine, uint32_t *mask) {
    XDEV_DISPATCH(r->be, blas, query_dtypes, r->ctx, routine, mask);
}
static inline xdev_status_t xdev_be_blas_gemm(xdev_device_record_t *r,
                                              const xdev_blas_gemm_desc_t *d) {
    XDEV_DISPATCH(r->be, blas, gemm, d);
}
/* axpy, dot, nrm2, scal by routine (one descriptor type). */
static inline xdev_status_t xdev_be_blas_vec(xdev_device_record_t *r, xdev_blas_routine_t routine,
                                             const xdev_blas_vec_desc_t *d) {
    switch (routine) {
    case XDEV_BLAS_AXPY:
        XDEV_DISPATCH(r->be, blas, axpy, d);
    case XDEV_BLAS_DOT:
        XDEV_DISPATCH(r->be, blas, dot, d);
    case XDEV_BLAS_NRM2:
        XDEV_DISPATCH(r->be, blas, nrm2, d);
    case XDEV_BLAS_SCAL:
        XDEV_DISPATCH(r->be, blas, scal, d);
    default:
        return xdev_backend_not_supported(r->be, "blas (unknown routine)");
    }
}

/* ------------------------------------------------------------------- fft */
static inline xdev_status_t xdev_be_fft_plan_create(xdev_device_record_t *r,
                                                    const xdev_fft_plan_desc_t *d, void **plan,
                                                    size_t *work) {
    XDEV_DISPATCH(r->be, fft, plan_create, d, plan, work);
}
static inline xdev_status_t xdev_be_fft_plan_destroy(xdev_device_record_t *r, void *plan) {
    XDEV_DISPATCH(r->be, fft, plan_destroy, r->ctx, plan);
}
static inline xdev_status_t xdev_be_fft_exec(xdev_device_record_t *r,
                                             const xdev_fft_exec_desc_t *d) {
    XDEV_DISPATCH(r->be, fft, exec, d);
}

/* ------------------------------------------------------------------- rng */
static inline xdev_status_t xdev_be_rng_fill(xdev_device_record_t *r,
                                             const xdev_rng_fill_desc_t *d) {
    XDEV_DISPATCH(r->be, rng, fill, d);
}

/* ----------------------------------------------------------------- trace */
static inline xdev_status_t xdev_be_trace_mark(xdev_backend_t *be, const char *msg) {
    XDEV_DISPATCH(be, trace, mark, msg);
}
static inline xdev_status_t xdev_be_trace_range_push(xdev_backend_t *be, const char *msg) {
    XDEV_DISPATCH(be, trace, range_push, msg);
}
static inline xdev_status_t xdev_be_trace_range_pop(xdev_backend_t *be) {
    XDEV_DISPATCH(be, trace, range_pop);
}

/* ------------------------------------------------------------------- ipc */
static inline xdev_status_t xdev_be_ipc_get_mem_handle(xdev_device_record_t *r, void *base,
                                                       void *handle) {
    XDEV_DISPATCH(r->be, ipc, get_mem_handle, r->ctx, base, handle);
}
static inline xdev_status_t xdev_be_ipc_open_mem_handle(xdev_device_record_t *r, const void *handle,
                                                        void **base) {
    XDEV_DISPATCH(r->be, ipc, open_mem_handle, r->ctx, handle, base);
}
static inline xdev_status_t xdev_be_ipc_close_mem_handle(xdev_device_record_t *r, void *base) {
    XDEV_DISPATCH(r->be, ipc, close_mem_handle, r->ctx, base);
}
static inline xdev_status_t xdev_be_ipc_get_event_handle(xdev_device_record_t *r, void *event,
                                                         void *handle) {
    XDEV_DISPATCH(r->be, ipc, get_event_handle, r->ctx, event, handle);
}
static inline xdev_status_t xdev_be_ipc_open_event_handle(xdev_device_record_t *r,
                                                          const void *handle, void **event) {
    XDEV_DISPATCH(r->be, ipc, open_event_handle, r->ctx, handle, event);
}

/* ------------------------------------------------------------------- ops */
static inline xdev_status_t xdev_be_ops_fill(xdev_device_record_t *r, void *dst,
                                             const void *pattern, size_t pattern_size, size_t count,
                                             void *stream) {
    XDEV_DISPATCH(r->be, ops, fill, r->ctx, dst, pattern, pattern_size, count, stream);
}
static inline xdev_status_t xdev_be_ops_convert(xdev_device_record_t *r, void *dst,
                                                xdev_dtype_t dst_dtype, const void *src,
                                                xdev_dtype_t src_dtype, size_t count,
                                                void *stream) {
    XDEV_DISPATCH(r->be, ops, convert, r->ctx, dst, dst_dtype, src, src_dtype, count, stream);
}
static inline xdev_status_t xdev_be_ops_add(xdev_device_record_t *r, void *dst, const void *src,
                                            xdev_dtype_t dtype, size_t count, void *stream) {
    XDEV_DISPATCH(r->be, ops, add, r->ctx, dst, src, dtype, count, stream);
}

/* ------------------------------------------------------------------ comm */
static inline xdev_status_t
xdev_be_comm_init_all(xdev_backend_t *be, xdev_backend_device_t *const *devs, int n, void **comms) {
    XDEV_DISPATCH(be, comm, init_all, devs, n, comms);
}
static inline xdev_status_t xdev_be_comm_destroy(xdev_backend_t *be, void *comm) {
    XDEV_DISPATCH(be, comm, destroy, comm);
}
static inline xdev_status_t xdev_be_comm_abort(xdev_backend_t *be, void *comm) {
    XDEV_DISPATCH(be, comm, abort, comm);
}
static inline xdev_status_t xdev_be_comm_async_error(xdev_backend_t *be, void *comm) {
    XDEV_DISPATCH(be, comm, async_error, comm);
}
static inline xdev_status_t xdev_be_comm_collective(xdev_backend_t *be, void *comm,
                                                    const xdev_collective_desc_t *desc,
                                                    void *stream) {
    XDEV_DISPATCH(be, comm, collective, comm, desc, stream);
}
static inline xdev_status_t xdev_be_comm_group_start(xdev_backend_t *be) {
    XDEV_DISPATCH(be, comm, group_start);
}
static inline xdev_status_t xdev_be_comm_group_end(xdev_backend_t *be) {
    XDEV_DISPATCH(be, comm, group_end);
}
static inline xdev_status_t xdev_be_comm_get_unique_id(xdev_backend_t *be, void *id) {
    XDEV_DISPATCH(be, comm, get_unique_id, id);
}
static inline xdev_status_t xdev_be_comm_init_rank(xdev_device_record_t *r, int nranks,
                                                   const void *id, int rank, void **comm) {
    XDEV_DISPATCH(r->be, comm, init_rank, r->ctx, nranks, id, rank, comm);
}

#endif
