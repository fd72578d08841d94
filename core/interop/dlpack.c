/* SPDX-License-Identifier: Apache-2.0 */
/* dlpack.c - tensors in DLPack's format both ways (xdev/interop.h).
 *
 * Import: the tensor's device and dtype are mapped to xdev's (CUDA and ROCm
 * ordinals to the visible device with that backend index; host memory of
 * any kind to the CPU backend's device 0, whose memory is host memory),
 * the range its elements span is registered (foreign.c) with the tensor's
 * deleter as the release, so unregistering gives it back once xdev's work
 * on it is done.
 *
 * Export: a DLManagedTensor(Versioned) whose data is the allocation's start
 * and byte_offset the view's offset (DLPack asks for an aligned data
 * pointer), its shape and strides copied into the same block as the
 * manager context. The allocation is held: xdev_free of it while a consumer
 * still has the tensor is put off until the deleter (dlpack_exports.c
 * counts the holds). The stream handshake is a wait_stream: the consumer's stream
 * waits for an event of the producer's, never the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_internal.h"
#include "alloc/alloc_lookup.h"
#include "alloc/dlpack_exports.h"
#include "interop/foreign.h"
#include "runtime/device_record.h"
#include "runtime/stream_internal.h"
#include "xdev/interop.h"

#define MAX_NDIM 64
#define LIMIT ((int64_t)1 << 48) /* elements a tensor may span, as xdev's allocations */

/* ------------------------------------------------------------ dtypes */

static const struct {
    xdev_dtype_t dt;
    uint8_t code, bits;
} k_dtypes[] = {
    {XDEV_DTYPE_F32, kDLFloat, 32},   {XDEV_DTYPE_F64, kDLFloat, 64},
    {XDEV_DTYPE_F16, kDLFloat, 16},   {XDEV_DTYPE_BF16, kDLBfloat, 16},
    {XDEV_DTYPE_C64, kDLComplex, 64}, {XDEV_DTYPE_C128, kDLComplex, 128},
    {XDEV_DTYPE_I8, kDLInt, 8},       {XDEV_DTYPE_I16, kDLInt, 16},
    {XDEV_DTYPE_I32, kDLInt, 32},     {XDEV_DTYPE_I64, kDLInt, 64},
    {XDEV_DTYPE_U8, kDLUInt, 8},      {XDEV_DTYPE_U16, kDLUInt, 16},
    {XDEV_DTYPE_U32, kDLUInt, 32},    {XDEV_DTYPE_U64, kDLUInt, 64},
};

static xdev_status_t from_dl_dtype(DLDataType t, xdev_dtype_t *out) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (k_dtypes[i].code == t.code && k_dtypes[i].bits == t.bits && t.lanes == 1) {
            *out = k_dtypes[i].dt;
            return XDEV_SUCCESS;
        }
    return XDEV_FAIL(
        XDEV_ERROR_NOT_SUPPORTED,
        "the tensor's dtype (DLPack code %u, %u bits, %u lanes) has no xdev dtype "
        "(xdev takes f16, bf16, f32, f64, c64, c128, i8, i16, i32, i64, u8, u16, u32, u64 scalars)",
        (unsigned)t.code, (unsigned)t.bits, (unsigned)t.lanes);
}

/* Bytes of an element of dt (one of k_dtypes; the caller checked). */
static size_t elem_size(xdev_dtype_t dt) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (k_dtypes[i].dt == dt) return k_dtypes[i].bits / 8u;
    return 1;
}

static DLDataType to_dl_dtype(xdev_dtype_t dt) {
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (k_dtypes[i].dt == dt) return (DLDataType){k_dtypes[i].code, k_dtypes[i].bits, 1};
    return (DLDataType){0, 0, 0};
}

/* ------------------------------------------------------------ shapes */

/* The byte range [*lo, *hi) the elements span, relative to the first one,
 * and whether they are compact row-major; strides NULL: compact. */
static xdev_status_t extent(int32_t ndim, const int64_t *shape, const int64_t *strides, size_t es,
                            int64_t *lo, int64_t *hi, bool *compact) {
    if (ndim < 0 || ndim > MAX_NDIM)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "ndim = %d is not in 0..%d", (int)ndim,
                         MAX_NDIM);
    if (ndim > 0 && shape == NULL)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "shape is NULL for a %d-dimensional tensor",
                         (int)ndim);
    int64_t min = 0, max = 0, expect = 1;
    bool empty = false;
    *compact = true;
    for (int32_t i = ndim - 1; i >= 0; i--) {
        if (shape[i] < 0)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "shape[%d] = %lld is negative", (int)i,
                             (long long)shape[i]);
        int64_t st = strides != NULL ? strides[i] : expect;
        if (shape[i] == 0) empty = true;
        if (shape[i] > 1 && st != expect) *compact = false;
        int64_t steps = shape[i] > 0 ? shape[i] - 1 : 0, mag = st < 0 ? -st : st;
        if (st == INT64_MIN || (mag != 0 && steps > LIMIT / mag))
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "dimension %d (size %lld, stride %lld) reaches past 2^48 elements",
                             (int)i, (long long)shape[i], (long long)st);
        if (st < 0)
            min -= mag * steps;
        else
            max += mag * steps;
        if (max > LIMIT || min < -LIMIT)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the tensor spans more than 2^48 elements");
        if (shape[i] > 0 && expect <= ((int64_t)1 << 48) / shape[i]) expect *= shape[i];
    }
    *lo = empty ? 0 : min * (int64_t)es;
    *hi = empty ? 0 : (max + 1) * (int64_t)es;
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ import */

/* The xdev device of a DLPack device. */
static xdev_status_t from_dl_device(DLDevice d, xdev_device_record_t **out) {
    xdev_device_type_t type;
    switch (d.device_type) {
    case kDLCPU:
    case kDLCUDAHost: /* page-locked host memory: host memory to every backend */
    case kDLROCMHost:
        return xdev_device_lookup((xdev_device_t){XDEV_DEVICE_CPU, 0}, out);
    case kDLCUDA:
    case kDLCUDAManaged:
        type = XDEV_DEVICE_CUDA;
        break;
    case kDLROCM:
        type = XDEV_DEVICE_HIP;
        break;
    default:
        return XDEV_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                         "the tensor is on a DLPack device of type %d, which no xdev backend "
                         "runs (xdev takes CPU, CUDA and ROCm tensors)",
                         (int)d.device_type);
    }
    const char *name = type == XDEV_DEVICE_CUDA ? "cuda" : "hip";
    xdev_backend_t *be;
    xdev_status_t st = xdev_backend_acquire(type, &be);
    if (st != XDEV_SUCCESS) {
        char why[512];
        snprintf(why, sizeof why, "%s", xdev_last_error());
        return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE,
                         "the tensor is on %s device %d, but xdev's %s backend is not usable: %s",
                         name, (int)d.device_id, name, why);
    }
    for (int i = 0; i < be->device_count; i++)
        if (be->devices[i].physical == d.device_id) {
            *out = &be->devices[i];
            return XDEV_SUCCESS;
        }
    return XDEV_FAIL(XDEV_ERROR_INVALID_DEVICE,
                     "the tensor is on %s device %d, which xdev cannot see (%d %s device%s "
                     "visible)",
                     be->name, (int)d.device_id, be->device_count, be->name,
                     be->device_count == 1 ? " is" : "s are");
}

/* Highest address a tensor may reach: user space ends below 2^56 on every
 * 64-bit platform xdev runs on (x86-64 with 5-level paging; aarch64 uses
 * 2^52), and device pointers share that space (unified addressing). */
#define ADDRESS_LIMIT ((uint64_t)1 << 56)

/* data + byte_offset + [lo, hi) must be addresses: no wrap, nothing below
 * 0 or past ADDRESS_LIMIT, and an offset no larger than the biggest tensor
 * xdev takes (a byte_offset of 2^64 - 101 would otherwise register memory
 * before the producer's data, 2^62 a non-canonical address). */
static xdev_status_t check_address_range(const DLTensor *t, size_t es, int64_t lo, int64_t hi) {
    uint64_t data = (uintptr_t)t->data, off = t->byte_offset;
    if (off > (uint64_t)LIMIT * es || data + off < data)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "byte_offset %llu (data %p) reaches past any tensor xdev takes (2^48 "
                         "elements) or wraps the address space",
                         (unsigned long long)off, t->data);
    uint64_t first = data + off;
    /* extent() gives lo <= 0 < hi, both within 2^48 elements */
    if ((uint64_t)-lo > first || first >= ADDRESS_LIMIT || (uint64_t)hi > ADDRESS_LIMIT - first)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the tensor's elements (data %p + byte_offset %llu, bytes %lld to %lld "
                         "from there) are not all at valid addresses (0 to 2^56)",
                         t->data, (unsigned long long)off, (long long)lo, (long long)hi);
    return XDEV_SUCCESS;
}

/* DLPack calls the memory of every CPU device host memory (kDLCPU, 0):
 * when the range is one of xdev's own allocations (an export coming back),
 * its device is the allocation's, not cpu:0. */
static xdev_device_record_t *host_memory_owner(xdev_device_record_t *rec, const void *ptr,
                                               size_t bytes) {
    xdev_live_ref_t ref; /* not xdev's own: keep cpu:0 */
    if (xdev_own_allocation(ptr, bytes, &ref) && ref.e.kind == XDEV_MEMORY_DEVICE &&
        (ref.e.be->flags & XDEV_BACKEND_HOST_MEMORY))
        rec = &ref.e.be->devices[ref.e.index];
    return rec;
}

typedef struct imported {
    void *tensor;
    bool versioned;
    int64_t strides[MAX_NDIM]; /* filled in for a compact tensor */
} imported_t;

/* The registration's release: the producer's deleter, then ours. */
static void give_back(void *ctx) {
    imported_t *im = ctx;
    if (im->versioned) {
        DLManagedTensorVersioned *t = im->tensor;
        if (t->deleter != NULL) t->deleter(t);
    } else {
        DLManagedTensor *t = im->tensor;
        if (t->deleter != NULL) t->deleter(t);
    }
    free(im);
}

static xdev_status_t import(void *tensor, bool versioned, DLTensor *t, uint64_t flags,
                            uint32_t require, xdev_stream_t stream, xdev_tensor_view_t *out) {
    memset(out, 0, sizeof *out);
    if (require & ~(XDEV_DLPACK_CONTIGUOUS | XDEV_DLPACK_WRITABLE))
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "require = %#x has unknown bits", require);
    xdev_dtype_t dt = XDEV_DTYPE_F32;
    XDEV_CHECK(from_dl_dtype(t->dtype, &dt));
    size_t es = elem_size(dt);
    int64_t lo, hi;
    bool compact;
    XDEV_CHECK(extent(t->ndim, t->shape, t->strides, es, &lo, &hi, &compact));
    bool read_only = (flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    if ((require & XDEV_DLPACK_CONTIGUOUS) && !compact)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the tensor is not contiguous (its strides skip or reorder elements) "
                         "and a contiguous one was required: make it contiguous first");
    if ((require & XDEV_DLPACK_WRITABLE) && read_only)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY) and a writable "
                         "one was required");
    if (hi == lo)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "the tensor has no elements: there is no memory to register");
    if (t->data == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "the tensor's data is NULL");
    XDEV_CHECK(check_address_range(t, es, lo, hi));
    xdev_device_record_t *rec;
    XDEV_CHECK(from_dl_device(t->device, &rec));
    if (rec->be->flags & XDEV_BACKEND_HOST_MEMORY)
        rec = host_memory_owner(rec, (char *)t->data + t->byte_offset + lo, (size_t)(hi - lo));
    imported_t *im = calloc(1, sizeof *im);
    if (im == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for an import");
    im->tensor = tensor;
    im->versioned = versioned;
    int64_t e = 1;
    for (int32_t i = t->ndim - 1; i >= 0; i--) {
        im->strides[i] = t->strides != NULL ? t->strides[i] : e;
        e *= t->shape[i] > 0 ? t->shape[i] : 1;
    }
    char *first = (char *)t->data + t->byte_offset;
    xdev_status_t st =
        xdev_foreign_register(rec, first + lo, (size_t)(hi - lo), stream, give_back, im, tensor);
    if (st != XDEV_SUCCESS) {
        free(im);
        return st;
    }
    /* What xdev now takes it for: the registration, or (an export coming
     * back) xdev's own allocation, device or pinned host memory. */
    xdev_live_ref_t ref;
    xdev_device_t device = rec->id;
    xdev_memory_kind_t kind = XDEV_MEMORY_DEVICE;
    if (xdev_live_lookup(first + lo, "data", &ref) == XDEV_SUCCESS && ref.known) {
        kind = ref.e.kind;
        if (kind == XDEV_MEMORY_DEVICE) device = ref.e.be->devices[ref.e.index].id;
    }
    *out = (xdev_tensor_view_t){.data = first,
                                .base = first + lo,
                                .bytes = (size_t)(hi - lo),
                                .device = device,
                                .kind = kind,
                                .dtype = dt,
                                .ndim = t->ndim,
                                .shape = t->shape,
                                .strides = im->strides,
                                .contiguous = compact,
                                .read_only = read_only};
    return XDEV_SUCCESS;
}

xdev_status_t xdev_dlpack_import(DLManagedTensorVersioned *tensor, uint32_t require,
                                 xdev_stream_t stream, xdev_tensor_view_t *out) {
    XDEV_REQUIRE_ARG(tensor);
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    if (tensor->version.major != DLPACK_MAJOR_VERSION)
        return XDEV_API_FAIL(XDEV_ERROR_NOT_SUPPORTED,
                             "the tensor is DLPack %u.%u; xdev takes DLPack %d.x",
                             tensor->version.major, tensor->version.minor, DLPACK_MAJOR_VERSION);
    XDEV_CHECK(import(tensor, true, &tensor->dl_tensor, tensor->flags, require, stream, out));
    return XDEV_SUCCESS;
}

xdev_status_t xdev_dlpack_import_unversioned(DLManagedTensor *tensor, uint32_t require,
                                             xdev_stream_t stream, xdev_tensor_view_t *out) {
    XDEV_REQUIRE_ARG(tensor);
    XDEV_REQUIRE_ARG(out);
    XDEV_CHECK(xdev_core_ensure_init());
    XDEV_CHECK(import(tensor, false, &tensor->dl_tensor, 0, require, stream, out));
    return XDEV_SUCCESS;
}

/* ------------------------------------------------------------ export */

/* One exported tensor: the managed struct the consumer holds, the shape
 * and strides it points to, and the allocation it holds. */
typedef struct exported {
    union {
        DLManagedTensorVersioned v;
        DLManagedTensor u;
    } m;
    uintptr_t alloc;
    xdev_memory_kind_t kind;
    int64_t dims[2 * MAX_NDIM];
} exported_t;

static void drop(exported_t *x) {
    xdev_exports_release(x->alloc, x->kind);
    free(x);
}

static void delete_versioned(DLManagedTensorVersioned *self) {
    if (self != NULL) drop(self->manager_ctx);
}

static void delete_unversioned(DLManagedTensor *self) {
    if (self != NULL) drop(self->manager_ctx);
}

/* The DLPack device of xdev memory. */
static DLDevice to_dl_device(const xdev_ptr_entry_t *e) {
    if (e->kind == XDEV_MEMORY_PINNED_HOST) {
        if (e->be != NULL && e->be->type == XDEV_DEVICE_CUDA) return (DLDevice){kDLCUDAHost, 0};
        if (e->be != NULL && e->be->type == XDEV_DEVICE_HIP) return (DLDevice){kDLROCMHost, 0};
        return (DLDevice){kDLCPU, 0};
    }
    if (e->be->flags & XDEV_BACKEND_HOST_MEMORY) return (DLDevice){kDLCPU, 0};
    int physical = e->be->devices[e->index].physical;
    if (e->be->type == XDEV_DEVICE_CUDA) return (DLDevice){kDLCUDA, physical};
    if (e->be->type == XDEV_DEVICE_HIP) return (DLDevice){kDLROCM, physical};
    return (DLDevice){kDLExtDev, physical};
}

static xdev_status_t export(void *data, int32_t ndim, const int64_t *shape, const int64_t *strides,
                            xdev_dtype_t dtype, xdev_stream_t stream, xdev_stream_t consumer,
                            exported_t **out, DLTensor *t) {
    if (data == NULL) return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "data is NULL");
    if ((unsigned)dtype >= XDEV_DTYPE_COUNT)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "dtype %d is not an xdev dtype", (int)dtype);
    size_t es = elem_size(dtype);
    int64_t lo, hi;
    bool compact;
    XDEV_CHECK(extent(ndim, shape, strides, es, &lo, &hi, &compact));
    xdev_live_ref_t ref;
    XDEV_CHECK(xdev_live_lookup(data, "data", &ref));
    if (!ref.known)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "data (%p) is not memory xdev allocated (xdev_malloc, xdev_host_alloc)",
                         data);
    if (ref.e.origin == XDEV_PTR_FOREIGN || ref.e.origin == XDEV_PTR_IPC)
        return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                         "data (%p) is memory xdev did not allocate (registered, imported or an "
                         "IPC mapping): export it from the library that owns it",
                         data);
    if (hi > lo) {
        XDEV_CHECK(
            xdev_live_check_extent(&ref, (char *)data + lo, (size_t)(hi - lo), "the tensor"));
    }
    xdev_device_record_t *rec =
        ref.e.kind == XDEV_MEMORY_DEVICE ? &ref.e.be->devices[ref.e.index] : NULL;
    if (stream != NULL) XDEV_CHECK(xdev_stream_check(stream, "stream"));
    if (consumer != NULL) XDEV_CHECK(xdev_stream_check(consumer, "consumer"));
    if (rec != NULL && stream != NULL && stream->rec != rec)
        return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                         "stream is on " XDEV_REC_FMT " but data on " XDEV_REC_FMT,
                         XDEV_REC_ARGS(stream->rec), XDEV_REC_ARGS(rec));
    if (consumer != NULL) { /* DLPack's handshake: the consumer's stream waits, not the host */
        if (stream == NULL && rec != NULL) XDEV_CHECK(xdev_core_current_stream(rec, &stream));
        if (stream == NULL)
            return XDEV_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "consumer given for pinned host memory without a producer stream");
        if (consumer->rec->be != stream->rec->be)
            return XDEV_FAIL(XDEV_ERROR_CROSS_DEVICE,
                             "consumer is a %s stream but the producer's is %s's",
                             consumer->rec->be->name, stream->rec->be->name);
    }
    exported_t *x = calloc(1, sizeof *x);
    if (x == NULL) return XDEV_FAIL(XDEV_ERROR_OUT_OF_MEMORY, "no host memory for an export");
    x->alloc = ref.base;
    x->kind = ref.e.kind;
    for (int32_t i = 0; i < ndim; i++) {
        x->dims[i] = shape[i];
        x->dims[MAX_NDIM + i] = strides != NULL ? strides[i] : 0;
    }
    int64_t e = 1;
    if (strides == NULL) /* compact: DLPack 1.x wants strides spelled out */
        for (int32_t i = ndim - 1; i >= 0; i--) {
            x->dims[MAX_NDIM + i] = e;
            e *= shape[i] > 0 ? shape[i] : 1;
        }
    /* Hold the allocation, then make sure it is still the one looked up: an
     * xdev_free racing this export either happened before the hold (the
     * look below fails) or is put off by it. */
    xdev_status_t st = xdev_exports_hold(x->alloc, x->kind);
    xdev_live_ref_t again;
    if (st == XDEV_SUCCESS && (xdev_live_lookup(data, "data", &again) != XDEV_SUCCESS ||
                               !again.known || again.base != ref.base)) {
        xdev_exports_release(x->alloc, x->kind);
        st = XDEV_FAIL(XDEV_ERROR_INVALID_VALUE, "data (%p) was freed while it was exported", data);
    }
    if (st == XDEV_SUCCESS && consumer != NULL) {
        st = xdev_core_stream_wait_stream(consumer, stream);
        if (st != XDEV_SUCCESS) xdev_exports_release(x->alloc, x->kind);
    }
    if (st != XDEV_SUCCESS) {
        free(x);
        return st;
    }
    *t = (DLTensor){.data = (void *)ref.base,
                    .device = to_dl_device(&ref.e),
                    .ndim = ndim,
                    .dtype = to_dl_dtype(dtype),
                    .shape = ndim > 0 ? x->dims : NULL,
                    .strides = ndim > 0 ? x->dims + MAX_NDIM : NULL,
                    .byte_offset = (uint64_t)((uintptr_t)data - ref.base)};
    *out = x;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_dlpack_export(void *data, int32_t ndim, const int64_t *shape,
                                 const int64_t *strides, xdev_dtype_t dtype, uint64_t flags,
                                 xdev_stream_t stream, xdev_stream_t consumer,
                                 DLManagedTensorVersioned **out) {
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    XDEV_CHECK(xdev_core_ensure_init());
    if (flags & ~DLPACK_FLAG_BITMASK_READ_ONLY)
        return XDEV_API_FAIL(XDEV_ERROR_INVALID_VALUE,
                             "flags = %#llx: an export may only say read-only",
                             (unsigned long long)flags);
    exported_t *x;
    DLTensor t;
    XDEV_CHECK(export(data, ndim, shape, strides, dtype, stream, consumer, &x, &t));
    x->m.v = (DLManagedTensorVersioned){.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION},
                                        .manager_ctx = x,
                                        .deleter = delete_versioned,
                                        .flags = flags,
                                        .dl_tensor = t};
    *out = &x->m.v;
    return XDEV_SUCCESS;
}

xdev_status_t xdev_dlpack_export_unversioned(void *data, int32_t ndim, const int64_t *shape,
                                             const int64_t *strides, xdev_dtype_t dtype,
                                             xdev_stream_t stream, xdev_stream_t consumer,
                                             DLManagedTensor **out) {
    XDEV_REQUIRE_ARG(out);
    *out = NULL;
    XDEV_CHECK(xdev_core_ensure_init());
    exported_t *x;
    DLTensor t;
    XDEV_CHECK(export(data, ndim, shape, strides, dtype, stream, consumer, &x, &t));
    x->m.u = (DLManagedTensor){.dl_tensor = t, .manager_ctx = x, .deleter = delete_unversioned};
    *out = &x->m.u;
    return XDEV_SUCCESS;
}
