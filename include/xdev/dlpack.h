/* SPDX-License-Identifier: Apache-2.0 */
/* xdev/dlpack.h - the DLPack exchange format, version 1.1, as its
 * specification lays it out (https://dmlc.github.io/dlpack/latest/): the
 * structs PyTorch, JAX, CuPy, NumPy and TVM hand each other tensors in,
 * written out here so that xdev needs no other header (Debian's dlpack.h
 * predates the versioned struct).
 *
 * The include guard is the one DLPack's own dlpack.h uses, so whichever is
 * included first is the one a program sees; the layouts are the same. If
 * you include another dlpack.h, include it first and make sure it is 1.0
 * or later (it must declare DLManagedTensorVersioned).
 *
 * xdev's calls that take and make these are in xdev/interop.h. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
extern "C" {
#else
#define DLPACK_EXTERN_C
#endif

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
#define DLPACK_DLL

/* A version of the format: a consumer refuses a tensor of a newer major. */
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* Where a tensor's memory is. */
typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3, /* page-locked host memory (cudaMallocHost, cudaHostRegister) */
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id; /* the vendor's ordinal (CUDA's, within CUDA_VISIBLE_DEVICES) */
} DLDevice;

/* What an element is: `code`, `bits` per lane, `lanes` (1 for scalars). */
typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
    kDLFloat8_e3m4 = 7,
    kDLFloat8_e4m3 = 8,
    kDLFloat8_e4m3b11fnuz = 9,
    kDLFloat8_e4m3fn = 10,
    kDLFloat8_e4m3fnuz = 11,
    kDLFloat8_e5m2 = 12,
    kDLFloat8_e5m2fnuz = 13,
    kDLFloat8_e8m0fnu = 14,
    kDLFloat6_e2m3fn = 15,
    kDLFloat6_e3m2fn = 16,
    kDLFloat4_e2m1fn = 17,
} DLDataTypeCode;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

/* A tensor: data + byte_offset is its first element; shape[ndim] and,
 * unless NULL (compact, row-major), strides[ndim] in elements. */
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

/* The format before 1.0 (NumPy < 2.1 speaks only this): the consumer calls
 * deleter(self) once it no longer needs the tensor. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* flags of DLManagedTensorVersioned */
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0) /* the consumer must not write */
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1) /* the producer made a copy */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (UINT64_C(1) << 2)

/* The format from 1.0: the same, with a version and flags in front. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif
