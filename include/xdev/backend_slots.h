/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/backend_slots.h - the one list of backend slots (of the ABI in xdev/backend.h).
 *
 * Every table of the backend ABI (xdev/backend.h), the core's typed dispatch
 * helpers, the null skeleton's declarations and the ABI pins of tests/
 * test_abi.c are generated from the lists below, so adding a slot is one
 * line here (at the END of its table: slots are only ever appended) plus its
 * implementations.
 *
 * Each entry is X(table, slot, need, kind, since, (params), (args)):
 * - need: REQUIRED (a backend that leaves it NULL is refused when it loads,
 *   naming the slot) or OPTIONAL (NULL is allowed; what the core then does -
 *   a fallback, or XDEV_ERROR_NOT_SUPPORTED naming the backend and the
 *   slot - is written beside the entry);
 * - kind, the one convention for the device context: DEV - the slot concerns
 *   one device and takes that device's context first (xdev_backend_device_t
 *   *dev), then (params); DEV0 - the context alone; DESC - a descriptor
 *   slot: the device is the descriptor's `device` field, the slot takes
 *   (params); HOST - no device (host memory, markers, communicator handles):
 *   the slot takes (params); HOST0 - no parameter at all;
 * - since: the ABI 3 minor that appended the slot (entries of a table are in
 *   non-decreasing order of it; test_abi.c checks this and the count of
 *   slots each released minor had);
 * - params / args: the slot's parameters after the context, and their names.
 * All slots return xdev_status_t.
 *
 * Optional slots that only work together form a group (XDEV_SLOT_GROUPS,
 * after the tables): a backend sets all of a group's slots or none. The
 * core checks this once, when a backend loads, and refuses a table that
 * sets part of a group, naming the backend, the group and the slots it
 * lacks; the core's call sites then test one slot of a group for all. */
#ifndef XDEV_BACKEND_SLOTS_H
#define XDEV_BACKEND_SLOTS_H

/* ------------------------------------------------------------------ device */
#define XDEV_SLOTS_DEVICE(X)                                                                       \
    /* Physical devices the backend sees (0 is fine: the backend is then unusable). */             \
    X(device, count, REQUIRED, HOST, 0, (int *count), (count))                                     \
    /* The context of physical device `index` (0 <= index < count), opened once per visible        \
     * device when the backend loads; it lives as long as the process. Opening must be cheap:      \
     * no vendor context is created. */                                                            \
    X(device, open, REQUIRED, HOST, 0, (int index, xdev_backend_device_t **out), (index, out))     \
    X(device, get_properties, REQUIRED, DEV, 0, (xdev_device_properties_t * props), (props))       \
    /* Wait for all work on the device. */                                                         \
    X(device, synchronize, REQUIRED, DEV0, 0, (), ())                                              \
    /* NULL: no peer access (xdev_device_can_access_peer says false). */                           \
    X(device, can_access_peer, OPTIONAL, DEV, 0, (xdev_backend_device_t * peer, bool *out),        \
      (peer, out))                                                                                 \
    /* NULL: xdev_device_enable_peer_access is NOT_SUPPORTED. */                                   \
    X(device, enable_peer_access, OPTIONAL, DEV, 0, (xdev_backend_device_t * peer), (peer))        \
    /* From the vendor's management library (NVML): the processes using the device (fill           \
     * out[0 .. min(cap, total)), *count = total). NULL: NOT_SUPPORTED. */                         \
    X(device, list_processes, OPTIONAL, DEV, 0,                                                    \
      (xdev_gpu_process_t * out, size_t cap, size_t * count), (out, cap, count))                   \
    /* The device's utilisation. NULL: NOT_SUPPORTED. */                                           \
    X(device, utilization, OPTIONAL, DEV, 0, (xdev_device_utilization_t * out), (out))             \
    /* torch 2.x's properties (uuid, PCI bus id, L2 size, MIG, bf16/tf32, arch): fill the          \
     * fields that fit in ext->size (the core passes a zeroed struct of its own size). NULL:       \
     * xdev_get_device_properties_ext is NOT_SUPPORTED naming the backend, and                     \
     * XDEV_VISIBLE_DEVICES cannot select its devices by UUID. */                                  \
    X(device, get_properties_ext, OPTIONAL, DEV, 8, (xdev_device_properties_ext_t * ext), (ext))   \
    /* One reading (xdev/system.h: what, in which unit). A quantity the backend cannot read        \
     * honestly is XDEV_ERROR_NOT_SUPPORTED with the reason, never a made-up number. NULL:         \
     * every reading is NOT_SUPPORTED naming the backend. */                                       \
    X(device, telemetry, OPTIONAL, DEV, 8, (xdev_telemetry_t what, uint64_t * value),              \
      (what, value))                                                                               \
    /* The code targets the backend's own device code was built for, space-separated in            \
     * torch's names ("sm_80 sm_90 compute_90", "gfx90a gfx942"; a NUL-terminated text cut to      \
     * len). NULL: xdev_get_arch_list is NOT_SUPPORTED naming the backend. */                      \
    X(device, arch_list, OPTIONAL, HOST, 8, (char *buf, size_t len), (buf, len))

/* ------------------------------------------------------------------ stream */
#define XDEV_SLOTS_STREAM(X)                                                                       \
    /* priority is XDEV_STREAM_PRIORITY_NORMAL or XDEV_STREAM_PRIORITY_HIGH. */                    \
    X(stream, create, REQUIRED, DEV, 0, (int priority, void **out), (priority, out))               \
    /* Finish pending work, then release. */                                                       \
    X(stream, destroy, REQUIRED, DEV, 0, (void *stream), (stream))                                 \
    /* The device's default stream (owned by the backend; may be NULL for CUDA's legacy one). */   \
    X(stream, get_default, REQUIRED, DEV, 0, (void **out), (out))                                  \
    /* XDEV_SUCCESS when idle, XDEV_ERROR_NOT_READY when work is pending. */                       \
    X(stream, query, REQUIRED, DEV, 0, (void *stream), (stream))                                   \
    X(stream, synchronize, REQUIRED, DEV, 0, (void *stream), (stream))                             \
    /* Later work on `stream` waits for the event's last record. */                                \
    X(stream, wait_event, REQUIRED, DEV, 0, (void *stream, void *event), (stream, event))          \
    X(stream, launch_host_func, REQUIRED, DEV, 0, (void *stream, xdev_host_fn_t fn, void *user),   \
      (stream, fn, user))

/* ------------------------------------------------------------------- event */
#define XDEV_SLOTS_EVENT(X)                                                                        \
    /* flags are XDEV_EVENT_* from xdev/event.h. */                                                \
    X(event, create, REQUIRED, DEV, 0, (unsigned flags, void **out), (flags, out))                 \
    X(event, destroy, REQUIRED, DEV, 0, (void *event), (event))                                    \
    X(event, record, REQUIRED, DEV, 0, (void *event, void *stream), (event, stream))               \
    /* XDEV_SUCCESS when reached, XDEV_ERROR_NOT_READY otherwise. */                               \
    X(event, query, REQUIRED, DEV, 0, (void *event), (event))                                      \
    X(event, synchronize, REQUIRED, DEV, 0, (void *event), (event))                                \
    /* Both events recorded, complete and created with timing (checked by the core).               \
     * NULL: xdev_event_elapsed_time is NOT_SUPPORTED. */                                          \
    X(event, elapsed_time, OPTIONAL, DEV, 0, (void *start, void *end, float *ms), (start, end, ms))

/* ------------------------------------------------------------------ memory */
#define XDEV_SLOTS_MEMORY(X)                                                                       \
    X(memory, malloc, REQUIRED, DEV, 0, (size_t bytes, void **out), (bytes, out))                  \
    X(memory, free, REQUIRED, DEV, 0, (void *ptr), (ptr))                                          \
    /* Page-locked host memory (group memory.host). NULL: xdev_host_alloc is NOT_SUPPORTED. */     \
    X(memory, host_alloc, OPTIONAL, HOST, 0, (size_t bytes, void **out), (bytes, out))             \
    X(memory, host_free, OPTIONAL, HOST, 0, (void *ptr), (ptr))                                    \
    /* Enqueue a copy on `stream` of `dev` (the device side, or the destination's device for       \
     * a peer copy). */                                                                            \
    X(memory, memcpy_async, REQUIRED, DEV, 0, (const xdev_copy_desc_t *copy, void *stream),        \
      (copy, stream))                                                                              \
    X(memory, memset_async, REQUIRED, DEV, 0, (void *dst, int value, size_t bytes, void *stream),  \
      (dst, value, bytes, stream))                                                                 \
    /* NULL: the allocator knows no capacity (xdev_mem_get_info is NOT_SUPPORTED). */              \
    X(memory, mem_get_info, OPTIONAL, DEV, 0, (size_t * free_bytes, size_t * total_bytes),         \
      (free_bytes, total_bytes))                                                                   \
    /* Stream-ordered allocation (cudaMallocAsync), for XDEV_ALLOC_CONF=backend:async: the         \
     * memory is usable by work queued on `stream` from now on; free_async releases it once        \
     * `stream` reaches the free (group memory.async). NULL: backend:async is refused, naming      \
     * the slot. */                                                                                \
    X(memory, malloc_async, OPTIONAL, DEV, 0, (size_t bytes, void *stream, void **out),            \
      (bytes, stream, out))                                                                        \
    X(memory, free_async, OPTIONAL, DEV, 0, (void *ptr, void *stream), (ptr, stream))              \
    /* Virtual memory, for XDEV_ALLOC_CONF=expandable_segments:true (group memory.va; NULL:        \
     * expandable segments are refused, naming the slot). va_granularity: the unit every size      \
     * and address below is a multiple of. va_reserve: `bytes` of address space with nothing       \
     * behind it. va_map: back [addr, addr + bytes) inside a reservation with new device           \
     * memory, readable and writable by the device and by the peers that enabled access to it      \
     * (a failure for lack of memory is XDEV_ERROR_OUT_OF_MEMORY). va_unmap: give that memory      \
     * back (called only after the device has passed all work using it); a failure must leave the  \
     * whole range mapped (the core hands it out again), its contents need not survive.            \
     * va_release: the reservation, wholly unmapped. */                                            \
    X(memory, va_granularity, OPTIONAL, DEV, 0, (size_t * granularity), (granularity))             \
    X(memory, va_reserve, OPTIONAL, DEV, 0, (size_t bytes, void **base), (bytes, base))            \
    X(memory, va_release, OPTIONAL, DEV, 0, (void *base, size_t bytes), (base, bytes))             \
    X(memory, va_map, OPTIONAL, DEV, 0, (void *addr, size_t bytes), (addr, bytes))                 \
    X(memory, va_unmap, OPTIONAL, DEV, 0, (void *addr, size_t bytes), (addr, bytes))               \
    /* Page-lock `bytes` of existing host memory at ptr for fast copies to and from every          \
     * device (cudaHostRegister, portable), and undo it (group memory.pin). NULL:                  \
     * xdev_host_register takes the memory as it is (a backend whose copies need no pinning, as    \
     * the CPU's). */                                                                              \
    X(memory, host_register, OPTIONAL, HOST, 4, (void *ptr, size_t bytes), (ptr, bytes))           \
    X(memory, host_unregister, OPTIONAL, HOST, 4, (void *ptr), (ptr))                              \
    /* Managed memory (group memory.managed; NULL: xdev_malloc_managed, xdev_mem_prefetch_async    \
     * and xdev_mem_advise are NOT_SUPPORTED, naming the backend). malloc_managed: `bytes` (> 0)   \
     * that the host and every device of the backend address (cudaMallocManaged); flags:           \
     * XDEV_MEM_ATTACH_* of xdev/memory.h. free_managed: its release (the core has waited for the  \
     * device). mem_prefetch: enqueue on `stream` of `dev` the migration of [ptr, ptr + bytes) to  \
     * `target`'s memory, or to the host when target is NULL. mem_advise: advice                   \
     * (xdev_mem_advice_t) for the range concerning `target` (NULL: the host), not stream-ordered; \
     * dev is the allocation's device. The core has checked the range lies in one managed          \
     * allocation of this backend. */                                                              \
    X(memory, malloc_managed, OPTIONAL, DEV, 7, (size_t bytes, unsigned flags, void **out),        \
      (bytes, flags, out))                                                                         \
    X(memory, free_managed, OPTIONAL, DEV, 7, (void *ptr), (ptr))                                  \
    X(memory, mem_prefetch, OPTIONAL, DEV, 7,                                                      \
      (const void *ptr, size_t bytes, xdev_backend_device_t *target, void *stream),                \
      (ptr, bytes, target, stream))                                                                \
    X(memory, mem_advise, OPTIONAL, DEV, 7,                                                        \
      (const void *ptr, size_t bytes, int advice, xdev_backend_device_t *target),                  \
      (ptr, bytes, advice, target))                                                                \
    /* Whole-range mappings (group memory.va_whole, with memory.va; NULL: xdev_memory_wake maps    \
     * with va_map). va_map_whole: as va_map, but [addr, addr + bytes) becomes one mapping of the  \
     * backend (CUDA: one cuMemCreate, cuMemMap and cuMemSetAccess for the range instead of one    \
     * per granularity unit, which costs about 30 times less a byte on an H200). va_unmap_whole:   \
     * give back exactly such a range. The core never unmaps part of one, nor one with va_unmap.   \
     */                                                                                            \
    X(memory, va_map_whole, OPTIONAL, DEV, 10, (void *addr, size_t bytes), (addr, bytes))          \
    X(memory, va_unmap_whole, OPTIONAL, DEV, 10, (void *addr, size_t bytes), (addr, bytes))

/* ------------------------------------------------------------------- trace */
/* Profiler markers (NVTX, roctx); msg is never NULL. NULL: markers are no-ops. */
#define XDEV_SLOTS_TRACE(X)                                                                        \
    X(trace, mark, OPTIONAL, HOST, 0, (const char *msg), (msg))                                    \
    X(trace, range_push, OPTIONAL, HOST, 0, (const char *msg), (msg))                              \
    X(trace, range_pop, OPTIONAL, HOST0, 0, (), ())                                                \
    /* A stream's name for the vendor's profiler (nvtxNameCudaStreamA), given whenever             \
     * xdev_stream_set_name sets one. NULL: the name stays xdev's own (its trace, snapshots). */   \
    X(trace, name_stream, OPTIONAL, DEV, 3, (void *stream, const char *name), (stream, name))

/* --------------------------------------------------------------------- ipc */
/* Sharing memory and events between processes. `base` is the start of a raw
 * allocation from memory.malloc; handles are XDEV_IPC_NATIVE_SIZE opaque
 * bytes; the core adds offsets and devices. NULL: the xdev_ipc_* calls are
 * NOT_SUPPORTED, naming the backend. */
#define XDEV_SLOTS_IPC(X)                                                                          \
    X(ipc, get_mem_handle, OPTIONAL, DEV, 0, (void *base, void *handle), (base, handle))           \
    /* Map another process's allocation for use on `dev`. */                                       \
    X(ipc, open_mem_handle, OPTIONAL, DEV, 0, (const void *handle, void **base), (handle, base))   \
    X(ipc, close_mem_handle, OPTIONAL, DEV, 0, (void *base), (base))                               \
    /* `event` was created with XDEV_EVENT_INTERPROCESS. */                                        \
    X(ipc, get_event_handle, OPTIONAL, DEV, 0, (void *event, void *handle), (event, handle))       \
    /* An event destroyed with event.destroy like any other. */                                    \
    X(ipc, open_event_handle, OPTIONAL, DEV, 0, (const void *handle, void **event), (handle, event))

/* -------------------------------------------------------------------- blas */
/* NULL: the BLAS calls are NOT_SUPPORTED, naming the backend and the slot. */
#define XDEV_SLOTS_BLAS(X)                                                                         \
    /* Bit (1u << dtype) set for each xdev_dtype_t `routine` runs with on the device; a missing    \
     * bit makes the core report XDEV_ERROR_NOT_SUPPORTED. NULL: every dtype the core knows. */    \
    X(blas, query_dtypes, OPTIONAL, DEV, 0, (xdev_blas_routine_t routine, uint32_t * mask),        \
      (routine, mask))                                                                             \
    X(blas, gemm, OPTIONAL, DESC, 0, (const xdev_blas_gemm_desc_t *desc), (desc))                  \
    X(blas, axpy, OPTIONAL, DESC, 0, (const xdev_blas_vec_desc_t *desc), (desc))                   \
    X(blas, dot, OPTIONAL, DESC, 0, (const xdev_blas_vec_desc_t *desc), (desc))                    \
    X(blas, nrm2, OPTIONAL, DESC, 0, (const xdev_blas_vec_desc_t *desc), (desc))                   \
    X(blas, scal, OPTIONAL, DESC, 0, (const xdev_blas_vec_desc_t *desc), (desc))

/* --------------------------------------------------------------------- fft */
/* NULL: the FFT calls are NOT_SUPPORTED, naming the backend and the slot. */
#define XDEV_SLOTS_FFT(X)                                                                          \
    /* A plan usable for both directions, in or out of place, on any stream of desc->device;       \
     * *work_size = bytes each exec needs. */                                                      \
    X(fft, plan_create, OPTIONAL, DESC, 0,                                                         \
      (const xdev_fft_plan_desc_t *desc, void **plan, size_t *work_size), (desc, plan, work_size)) \
    /* Called when the plan leaves the cache, after device.synchronize. */                         \
    X(fft, plan_destroy, OPTIONAL, DEV, 0, (void *plan), (plan))                                   \
    /* Enqueue one transform. The core serialises calls on one plan. */                            \
    X(fft, exec, OPTIONAL, DESC, 0, (const xdev_fft_exec_desc_t *desc), (desc))

/* --------------------------------------------------------------------- rng */
/* NULL: the random fills are NOT_SUPPORTED, naming the backend. */
#define XDEV_SLOTS_RNG(X)                                                                          \
    X(rng, fill, OPTIONAL, DESC, 0, (const xdev_rng_fill_desc_t *desc), (desc))

/* --------------------------------------------------------------------- ops */
/* Typed fills and conversions (xdev/ops.h). NULL: those calls are
 * NOT_SUPPORTED, naming the backend and the slot; reduce_add without
 * ops.add is NOT_SUPPORTED where no communicator sums instead. */
#define XDEV_SLOTS_OPS(X)                                                                          \
    /* dst[i] = the `pattern_size`-byte element at `pattern`, i < count; pattern_size is 1, 2,     \
     * 4, 8 or 16 and dst is aligned to it. */                                                     \
    X(ops, fill, OPTIONAL, DEV, 0,                                                                 \
      (void *dst, const void *pattern, size_t pattern_size, size_t count, void *stream),           \
      (dst, pattern, pattern_size, count, stream))                                                 \
    /* count elements from src (src_dtype) to dst (dst_dtype); dtypes among f16, bf16, f32, f64,   \
     * i32, i64; both buffers aligned to their element. */                                         \
    X(ops, convert, OPTIONAL, DEV, 0,                                                              \
      (void *dst, xdev_dtype_t dst_dtype, const void *src, xdev_dtype_t src_dtype, size_t count,   \
       void *stream),                                                                              \
      (dst, dst_dtype, src, src_dtype, count, stream))                                             \
    /* dst[i] += src[i], i < count; dtype among f16, bf16, f32, f64, i32, i64 (f16/bf16 summed     \
     * in f32 and rounded to nearest even, integers wrap); equal or disjoint buffers. */           \
    X(ops, add, OPTIONAL, DEV, 0,                                                                  \
      (void *dst, const void *src, xdev_dtype_t dtype, size_t count, void *stream),                \
      (dst, src, dtype, count, stream))

/* -------------------------------------------------------------------- comm */
/* Communicators, for backends whose device memory the host cannot address
 * (the core runs host-memory ones itself). NULL: xdev_communicator_init_all and
 * init_rank are NOT_SUPPORTED (torch.cuda.comm calls fall back to copies). */
#define XDEV_SLOTS_COMM(X)                                                                         \
    /* The ranks of a group over devs[0..n) of this process: comms[i] is rank i's handle.          \
     * XDEV_ERROR_NOT_SUPPORTED when the library that does the work (NCCL) cannot be found:        \
     * the message says where it looked. */                                                        \
    X(comm, init_all, OPTIONAL, HOST, 0,                                                           \
      (xdev_backend_device_t *const *devs, int n, void **comms), (devs, n, comms))                 \
    X(comm, destroy, OPTIONAL, HOST, 0, (void *comm), (comm))                                      \
    X(comm, abort, OPTIONAL, HOST, 0, (void *comm), (comm))                                        \
    /* XDEV_SUCCESS, or the rank's asynchronous error (its message set). */                        \
    X(comm, async_error, OPTIONAL, HOST, 0, (void *comm), (comm))                                  \
    /* Enqueue this rank's part on `stream` (native, on the rank's device). */                     \
    X(comm, collective, OPTIONAL, HOST, 0,                                                         \
      (void *comm, const xdev_collective_desc_t *desc, void *stream), (comm, desc, stream))        \
    /* The calling thread's group brackets (ncclGroupStart/End). */                                \
    X(comm, group_start, OPTIONAL, HOST0, 0, (), ())                                               \
    X(comm, group_end, OPTIONAL, HOST0, 0, (), ())                                                 \
    /* A new group's id (XDEV_COMM_NATIVE_ID_BYTES opaque bytes, ncclGetUniqueId). */              \
    X(comm, get_unique_id, OPTIONAL, HOST, 0, (void *id), (id))                                    \
    /* This process's rank of nranks on dev joining the group the id names                         \
     * (ncclCommInitRank: returns once every rank has joined). */                                  \
    X(comm, init_rank, OPTIONAL, DEV, 0, (int nranks, const void *id, int rank, void **comm),      \
      (nranks, id, rank, comm))

/* ------------------------------------------------------------------ kernel */
/* Modules and launches (xdev/kernel.h). module_load, get_function and
 * launch are the group kernel.module; NULL: the xdev_module_* calls are
 * NOT_SUPPORTED, naming the backend. */
#define XDEV_SLOTS_KERNEL(X)                                                                       \
    /* The device's launch limits. NULL: CUDA's (1024 threads, blocks of 1024 x 1024 x 64,         \
     * grids of 2^31-1 x 65535 x 65535, 48 KiB shared, warp 32). */                                \
    X(kernel, limits, OPTIONAL, DEV, 1, (xdev_launch_limits_t * out), (out))                       \
    /* A module from one image. An image of a format the backend does not take is                  \
     * XDEV_ERROR_NOT_SUPPORTED (the core tries the next image of a bundle); a host backend        \
     * takes XDEV_IMAGE_HOST_TABLE (the core opens HOST_LIBRARY images itself). */                 \
    X(kernel, module_load, OPTIONAL, DEV, 1, (const xdev_kernel_image_t *image, void **module),    \
      (image, module))                                                                             \
    /* Called after device.synchronize, once no launch uses the module. */                         \
    X(kernel, module_unload, OPTIONAL, DEV, 1, (void *module), (module))                           \
    /* The kernel `name` of `module`: XDEV_ERROR_NOT_FOUND when absent (the core writes the        \
     * message). Fill what is known of `attrs` (the core zeroed it and set nparams to -1). */      \
    X(kernel, get_function, OPTIONAL, DEV, 1,                                                      \
      (void *module, const char *name, void **function, xdev_kernel_attributes_t *attrs),          \
      (module, name, function, attrs))                                                             \
    /* Enqueue a launch on `stream` (checked by the core); the argument bytes are the caller's     \
     * only during the call. */                                                                    \
    X(kernel, launch, OPTIONAL, DEV, 1, (const xdev_launch_desc_t *desc, void *stream),            \
      (desc, stream))                                                                              \
    /* Run-time compilation (group kernel.compile; NULL: xdev_module_compile is NOT_SUPPORTED,     \
     * naming the backend). compile_target: what, besides the source and options, decides the      \
     * compiled image - the compiler's identity and version and the device's architecture, one     \
     * line (e.g. "nvrtc 13.0 sm_90") for the core's cache key - and the image format compile      \
     * produces. XDEV_ERROR_NOT_SUPPORTED when no compiler is found (the message says where it     \
     * looked). */                                                                                 \
    X(kernel, compile_target, OPTIONAL, DEV, 1,                                                    \
      (char *id, size_t len, xdev_image_format_t *format), (id, len, format))                      \
    /* Compile desc->source for the device: *out gets malloc'd image bytes (a HOST_LIBRARY's are   \
     * the shared object's) and the compiler's output in out->log (malloc'd, also on failure).     \
     * Source that does not compile, or an option the compiler refuses: XDEV_ERROR_COMPILE. */     \
    X(kernel, compile, OPTIONAL, DEV, 1, (const xdev_compile_desc_t *desc, xdev_compiled_t *out),  \
      (desc, out))

/* ------------------------------------------------------------------- graph */
/* Stream capture and replay (xdev/graph.h), the group graph.capture. NULL:
 * capture is XDEV_ERROR_NOT_SUPPORTED, naming the backend. The core checks what the
 * capture may contain (it refuses synchronizes, blocking copies and the like
 * itself); the backend records what is enqueued on `stream` - and on every
 * stream that waits on an event recorded on a capturing stream (fork/join) -
 * until capture_end. A backend refuses to end a capture whose forked streams
 * did not join back (XDEV_ERROR_CAPTURE, saying so). */
#define XDEV_SLOTS_GRAPH(X)                                                                        \
    /* Start recording on `stream`; mode is xdev_capture_mode_t (xdev/graph.h). */                 \
    X(graph, capture_begin, OPTIONAL, DEV, 2, (void *stream, int mode), (stream, mode))            \
    /* Stop recording on `stream` and give what it recorded as a graph ready to launch (*graph).   \
     * On failure recording has stopped all the same and nothing is returned. */                   \
    X(graph, capture_end, OPTIONAL, DEV, 2, (void *stream, void **graph), (stream, graph))         \
    /* Enqueue one replay of `graph` on `stream` (of the same device). */                          \
    X(graph, launch, OPTIONAL, DEV, 2, (void *graph, void *stream), (graph, stream))               \
    /* Called once no replay is pending (the core synchronized the device). */                     \
    X(graph, destroy, OPTIONAL, DEV, 2, (void *graph), (graph))

/* ------------------------------------------------------------------- prim */
/* Device-wide parallel primitives (xdev/primitives.h). The core has checked
 * the descriptor (dtype, op, operands against their allocations, alignment,
 * overlaps). Each slot is called twice: first with desc->temp NULL, when it
 * only writes to *temp_bytes the temporary bytes the call needs on the
 * device (0: none) and enqueues nothing; then, with desc->temp pointing at
 * that many bytes from the caching allocator on desc->stream (NULL when 0),
 * it enqueues the work on desc->stream. NULL (the table or a slot): the
 * primitive is XDEV_ERROR_NOT_SUPPORTED, naming the backend and the
 * primitive. A dtype or op the backend cannot run: XDEV_ERROR_NOT_SUPPORTED
 * from the slot, saying which. */
#define XDEV_SLOTS_PRIM(X)                                                                         \
    /* *out = op over in[0 .. count) (xdev_prim_reduce). */                                        \
    X(prim, reduce, OPTIONAL, DESC, 5, (const xdev_prim_desc_t *desc, size_t *temp_bytes),         \
      (desc, temp_bytes))                                                                          \
    /* out[i] = op over in[0 .. i] or [0 .. i-1] (xdev_prim_scan; in == out allowed). */           \
    X(prim, scan, OPTIONAL, DESC, 5, (const xdev_prim_desc_t *desc, size_t *temp_bytes),           \
      (desc, temp_bytes))                                                                          \
    /* Radix sort of keys, or of pairs when desc->values_in is set (xdev_prim_sort_keys/_pairs).   \
     */                                                                                            \
    X(prim, sort, OPTIONAL, DESC, 6, (const xdev_prim_desc_t *desc, size_t *temp_bytes),           \
      (desc, temp_bytes))                                                                          \
    /* Each segment sorted on its own (xdev_prim_segmented_sort). */                               \
    X(prim, segmented_sort, OPTIONAL, DESC, 6, (const xdev_prim_desc_t *desc, size_t *temp_bytes), \
      (desc, temp_bytes))                                                                          \
    /* out[s] = op over segment s (xdev_prim_segmented_reduce). */                                 \
    X(prim, segmented_reduce, OPTIONAL, DESC, 6,                                                   \
      (const xdev_prim_desc_t *desc, size_t *temp_bytes), (desc, temp_bytes))                      \
    /* Counts in even bins (xdev_prim_histogram_even). */                                          \
    X(prim, histogram_even, OPTIONAL, DESC, 6, (const xdev_prim_desc_t *desc, size_t *temp_bytes), \
      (desc, temp_bytes))                                                                          \
    /* Compaction by flags (xdev_prim_select_flagged; xdev_prim_select_if runs on it too). */      \
    X(prim, select_flagged, OPTIONAL, DESC, 6, (const xdev_prim_desc_t *desc, size_t *temp_bytes), \
      (desc, temp_bytes))                                                                          \
    /* First item of each run of equal items (xdev_prim_unique). */                                \
    X(prim, unique, OPTIONAL, DESC, 6, (const xdev_prim_desc_t *desc, size_t *temp_bytes),         \
      (desc, temp_bytes))                                                                          \
    /* Runs and their lengths (xdev_prim_run_length_encode). */                                    \
    X(prim, run_length_encode, OPTIONAL, DESC, 6,                                                  \
      (const xdev_prim_desc_t *desc, size_t *temp_bytes), (desc, temp_bytes))                      \
    /* Compaction by a comparison with a constant, no flags (xdev_prim_select_if with a            \
     * predicate `in0 OP literal`: the core falls back to select_flagged without it). */           \
    X(prim, select_compare, OPTIONAL, DESC, 9, (const xdev_prim_desc_t *desc, size_t *temp_bytes), \
      (desc, temp_bytes))

/* Every table: T(table, list macro) in the order of xdev_backend_api_t. */
#define XDEV_BACKEND_TABLES(T)                                                                     \
    T(device, XDEV_SLOTS_DEVICE)                                                                   \
    T(stream, XDEV_SLOTS_STREAM)                                                                   \
    T(event, XDEV_SLOTS_EVENT)                                                                     \
    T(memory, XDEV_SLOTS_MEMORY)                                                                   \
    T(blas, XDEV_SLOTS_BLAS)                                                                       \
    T(fft, XDEV_SLOTS_FFT)                                                                         \
    T(rng, XDEV_SLOTS_RNG)                                                                         \
    T(trace, XDEV_SLOTS_TRACE)                                                                     \
    T(ipc, XDEV_SLOTS_IPC)                                                                         \
    T(ops, XDEV_SLOTS_OPS)                                                                         \
    T(comm, XDEV_SLOTS_COMM)                                                                       \
    T(kernel, XDEV_SLOTS_KERNEL)                                                                   \
    T(graph, XDEV_SLOTS_GRAPH)                                                                     \
    T(prim, XDEV_SLOTS_PRIM)

/* ------------------------------------------------------------- slot groups */
/* Slots that only work together: G(table, group, slots...), every slot
 * OPTIONAL, in at most one group, and all of a group appended by one minor
 * (test_abi.c checks these), so that a table of an older minor, which ends
 * before a group, has none of it. A backend that sets some but not all of a
 * group is refused when it loads (built in or plugin). A new group, or a
 * slot added to one, is a rule a backend that loaded before may break: do
 * it only with the slots it groups. */
#define XDEV_SLOT_GROUPS(G)                                                                        \
    G(memory, host, host_alloc, host_free)                                                         \
    G(memory, async, malloc_async, free_async)                                                     \
    G(memory, va, va_granularity, va_reserve, va_release, va_map, va_unmap)                        \
    G(memory, pin, host_register, host_unregister)                                                 \
    G(memory, managed, malloc_managed, free_managed, mem_prefetch, mem_advise)                     \
    G(memory, va_whole, va_map_whole, va_unmap_whole)                                              \
    G(trace, range, range_push, range_pop)                                                         \
    G(fft, plan, plan_create, plan_destroy, exec)                                                  \
    G(comm, bracket, group_start, group_end)                                                       \
    G(comm, rank, get_unique_id, init_rank)                                                        \
    G(kernel, module, module_load, get_function, launch)                                           \
    G(kernel, compile, compile_target, compile)                                                    \
    G(graph, capture, capture_begin, capture_end, launch, destroy)

/* ------------------------------------------------------- expansion helpers */
#define XDEV_SLOT_STRIP(...) __VA_ARGS__
/* A slot's full parameter list, in parentheses, by kind. */
#define XDEV_SLOT_PARAMS_DEV(p) (xdev_backend_device_t * dev, XDEV_SLOT_STRIP p)
#define XDEV_SLOT_PARAMS_DEV0(p) (xdev_backend_device_t * dev)
#define XDEV_SLOT_PARAMS_DESC(p) p
#define XDEV_SLOT_PARAMS_HOST(p) p
#define XDEV_SLOT_PARAMS_HOST0(p) (void)
#define XDEV_SLOT_PARAMS(kind, p) XDEV_SLOT_PARAMS_##kind(p)
/* M(table, slot) for each of a group's slots (up to 8). */
#define XDEV_SLOT_EACH(M, t, ...)                                                                  \
    XDEV_SLOT_EACH_N_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)(M, t, __VA_ARGS__)
#define XDEV_SLOT_EACH_N_(s1, s2, s3, s4, s5, s6, s7, s8, n, ...) XDEV_SLOT_EACH_##n
#define XDEV_SLOT_EACH_1(M, t, s) M(t, s)
#define XDEV_SLOT_EACH_2(M, t, s, ...) M(t, s) XDEV_SLOT_EACH_1(M, t, __VA_ARGS__)
#define XDEV_SLOT_EACH_3(M, t, s, ...) M(t, s) XDEV_SLOT_EACH_2(M, t, __VA_ARGS__)
#define XDEV_SLOT_EACH_4(M, t, s, ...) M(t, s) XDEV_SLOT_EACH_3(M, t, __VA_ARGS__)
#define XDEV_SLOT_EACH_5(M, t, s, ...) M(t, s) XDEV_SLOT_EACH_4(M, t, __VA_ARGS__)
#define XDEV_SLOT_EACH_6(M, t, s, ...) M(t, s) XDEV_SLOT_EACH_5(M, t, __VA_ARGS__)
#define XDEV_SLOT_EACH_7(M, t, s, ...) M(t, s) XDEV_SLOT_EACH_6(M, t, __VA_ARGS__)
#define XDEV_SLOT_EACH_8(M, t, s, ...) M(t, s) XDEV_SLOT_EACH_7(M, t, __VA_ARGS__)
/* The field a table has for a slot. */
#define XDEV_SLOT_FIELD(table, slot, need, kind, since, p, a)                                      \
    xdev_status_t(*slot) XDEV_SLOT_PARAMS(kind, p);

#endif
