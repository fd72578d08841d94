#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/hip_headers.sh - HIP's headers for the HIP plugin's NVIDIA-platform
# build (-DXDEV_HIP_PLATFORM_NVIDIA=ON, backends/hip/nvidia.cmake) on a GPU
# machine that has CUDA but neither HIP nor a package registry: brought the
# way tests/gpu/run.sh's Check and OpenBLAS are (Debian's package, downloaded
# where apt works, carried in .device-debs/, unpacked there), not vendored.
#
#   where apt works:   bash tests/gpu/hip_headers.sh fetch      # .device-debs/hip/*.deb
#   anywhere:          bash tests/gpu/hip_headers.sh prepare [DIR]
#                      # prints DIR/include, for -DXDEV_HIP_INCLUDE_DIR=
#
# `prepare` copies include/hip out of .device-debs/hip/libamdhip64-dev_*.deb
# and include/rocm_smi out of librocm-smi-dev_*.deb (backends/hip/hip_smi.c
# compiles against it; the library is opened at run time) - or
# /usr/include/hip and /usr/include/rocm_smi where no deb was fetched
# (Debian's packages installed) - into DIR (default /tmp/xdev-hip) and makes
# HIP's NVIDIA half
# (hip/nvidia_detail/nvidia_hip_runtime_api.h, HIP 5.2.3) compile against
# CUDA 13, which removed what those inline wrappers use: the cudaDeviceProp
# fields clockRate, memoryClockRate, computeMode, kernelExecTimeoutEnabled and
# cooperativeMultiDeviceLaunch (read through cudaDeviceGetAttribute instead),
# cudaDevAttrCooperativeMultiDeviceLaunch (the hip attribute then answers
# hipErrorInvalidValue), the int device of cudaMemAdvise and
# cudaMemPrefetchAsync (now a cudaMemLocation, plus flags) and cuCtxCreate's
# three arguments (now four). Each edit is guarded by CUDART_VERSION /
# CUDA_VERSION >= 13000, so the copy still builds against CUDA 12; each is
# checked to have applied (an edit that finds nothing to change fails the
# script, so a different HIP version is noticed, not silently half-fixed).
# HIP's headers are MIT-licensed (Debian's copyright file is copied beside
# them); nothing of them is kept in this repository.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
debs=$top/.device-debs/hip

case "${1:-}" in
fetch)
    mkdir -p "$debs"
    cd "$debs"
    apt-get download libamdhip64-dev librocm-smi-dev >/dev/null 2>&1 ||
        { apt-get update >/dev/null && apt-get download libamdhip64-dev librocm-smi-dev; }
    ls -1 "$debs"
    ;;
prepare)
    dest=${2:-/tmp/xdev-hip}
    rm -rf "$dest"
    mkdir -p "$dest/include"
    # bring PACKAGE FOLDER: include/FOLDER from the package's deb, else from /usr/include.
    bring() {
        local deb
        deb=$(ls "$debs"/"$1"_*.deb 2>/dev/null | tail -1 || true)
        if [ -n "$deb" ]; then
            rm -rf "$dest/deb"
            dpkg-deb -x "$deb" "$dest/deb"
            cp -r "$dest/deb/usr/include/$2" "$dest/include/$2"
            cp "$dest/deb/usr/share/doc/$1/copyright" "$dest/include/$2/COPYRIGHT" 2>/dev/null || true
            rm -rf "$dest/deb"
        elif [ -d "/usr/include/$2" ]; then
            cp -r "/usr/include/$2" "$dest/include/$2"
            cp "/usr/share/doc/$1/copyright" "$dest/include/$2/COPYRIGHT" 2>/dev/null || true
        else
            echo "hip_headers.sh: no $debs/$1_*.deb (run 'fetch' where apt works) and no /usr/include/$2" >&2
            exit 1
        fi
    }
    bring libamdhip64-dev hip
    bring librocm-smi-dev rocm_smi
    f=$dest/include/hip/nvidia_detail/nvidia_hip_runtime_api.h
    [ -f "$f" ] || { echo "hip_headers.sh: $f missing" >&2; exit 1; }
    # edit PATTERN SED-SCRIPT: apply, failing when PATTERN is not in the file.
    edit() {
        grep -q -- "$1" "$f" || { echo "hip_headers.sh: '$1' not found in $f: another HIP version?" >&2; exit 1; }
        sed -i -e "$2" "$f"
    }
    # A cudaMemLocation for the int device HIP's calls take (cudaCpuDeviceId: the host).
    edit '#include <cuda_fp16.h>' '/#include <cuda_fp16.h>/a\
/* xdev tests/gpu/hip_headers.sh: CUDA 13 compatibility of HIP 5.2 (see there) */\
#if CUDART_VERSION >= 13000\
static inline struct cudaMemLocation xdev_hip_nv_location(int device) {\
    struct cudaMemLocation l;\
    memset(&l, 0, sizeof l);\
    l.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;\
    l.id = device == cudaCpuDeviceId ? 0 : device;\
    return l;\
}\
#define XDEV_HIP_NV_LOC(d) xdev_hip_nv_location(d)\
#define XDEV_HIP_NV_PREFETCH_FLAGS 0,\
#else\
#define XDEV_HIP_NV_LOC(d) (d)\
#define XDEV_HIP_NV_PREFETCH_FLAGS\
#endif\
#if CUDA_VERSION >= 13000\
#define XDEV_HIP_NV_CTX_PARAMS NULL,\
#else\
#define XDEV_HIP_NV_CTX_PARAMS\
#endif'
    edit 'hipMemoryAdviseTocudaMemoryAdvise(advice), device));' \
        's/hipMemoryAdviseTocudaMemoryAdvise(advice), device));/hipMemoryAdviseTocudaMemoryAdvise(advice), XDEV_HIP_NV_LOC(device)));/'
    edit 'cudaMemPrefetchAsync(dev_ptr, count, device, stream)' \
        's/cudaMemPrefetchAsync(dev_ptr, count, device, stream)/cudaMemPrefetchAsync(dev_ptr, count, XDEV_HIP_NV_LOC(device), XDEV_HIP_NV_PREFETCH_FLAGS stream)/'
    edit 'cuCtxCreate(ctx, flags, device)' 's/cuCtxCreate(ctx, flags, device)/cuCtxCreate(ctx, XDEV_HIP_NV_CTX_PARAMS flags, device)/'
    # hipChooseDevice: the removed fields are not part of the match.
    edit 'cdprop.clockRate = prop->clockRate;' \
        's/^\([[:space:]]*cdprop\.\(clockRate\|computeMode\|memoryClockRate\) = prop->.*\)$/#if CUDART_VERSION < 13000\n\1\n#endif/'
    # hipGetDeviceProperties: the removed fields through their attributes.
    for pair in clockRate:clockRate:ClockRate memoryClockRate:memoryClockRate:MemoryClockRate \
        computeMode:computeMode:ComputeMode clockInstructionRate:clockRate:ClockRate \
        kernelExecTimeoutEnabled:kernelExecTimeoutEnabled:KernelExecTimeout; do
        IFS=: read -r field from attr <<<"$pair"
        edit "p_prop->$field *= cdprop\.$from;" \
            "s/^\([[:space:]]*\)\(p_prop->$field *= cdprop\.$from;.*\)$/#if CUDART_VERSION < 13000\n\1\2\n#else\n\1(void)cudaDeviceGetAttribute(\&p_prop->$field, cudaDevAttr$attr, device);\n#endif/"
    done
    edit 'p_prop->cooperativeMultiDeviceLaunch = cdprop.cooperativeMultiDeviceLaunch;' \
        's/^\([[:space:]]*\)\(p_prop->cooperativeMultiDeviceLaunch = cdprop\.cooperativeMultiDeviceLaunch;\)$/#if CUDART_VERSION < 13000\n\1\2\n#else\n\1p_prop->cooperativeMultiDeviceLaunch = 0;\n#endif/'
    # hipDeviceGetAttribute: no CUDA 13 attribute, so the default case (hipErrorInvalidValue).
    edit 'case hipDeviceAttributeCooperativeMultiDeviceLaunch:' \
        '/case hipDeviceAttributeCooperativeMultiDeviceLaunch:/i\
#if CUDART_VERSION < 13000'
    edit 'cdattr = cudaDevAttrCooperativeMultiDeviceLaunch;' '/cdattr = cudaDevAttrCooperativeMultiDeviceLaunch;/{n;s/$/\n#endif/}'
    # C++ only (nvcc): texture references (gone since CUDA 12) and
    # cudaLaunchCooperativeKernelMultiDevice (gone in 13) are wrapped in
    # version checks; the __CUDACC__ part (templates over texture
    # references, graph edges without CUDA 13's edge data, capture info _v2)
    # is left out under CUDA 13 entirely: nvcc-compiled code then sees the
    # same hip* calls as C code. xdev's device code uses none of it.
    guard_fn() { # NAME-PATTERN VERSION: the function from its line to the next '}' at column 0
        edit "$1" "/$1/,/^}/{/$1/i\
#if CUDART_VERSION < $2
/^}/a\
#endif
}"
    }
    guard_fn 'hipBindTexture(size_t\* offset,$' 12000
    guard_fn 'hipBindTexture2D($' 12000
    guard_fn 'hipGetTextureAlignmentOffset($' 12000
    guard_fn 'hipLaunchCooperativeKernelMultiDevice(' 13000
    edit '^#ifdef __CUDACC__$' 's/^#ifdef __CUDACC__$/#if defined(__CUDACC__) \&\& CUDART_VERSION < 13000/'
    echo "$dest/include"
    ;;
*)
    echo "usage: $0 fetch | prepare [DIR]" >&2
    exit 2
    ;;
esac
