# SPDX-License-Identifier: Apache-2.0
# backends/hip/nvidia.cmake - libxdev-hip.so for HIP's NVIDIA platform
# (-DXDEV_HIP_PLATFORM_NVIDIA=ON; included by CMakeLists.txt beside it), so
# that the HIP plugin's code - the hip* calls of the shared sources, module
# loading, capture, its error mapping - runs on an NVIDIA GPU (no AMD GPU is
# lent to the project). The same sources as the AMD build (XDEV_HIP_SOURCES)
# with XC_VENDOR_HIP and __HIP_PLATFORM_NVIDIA__ (never the AMD define): HIP's
# headers then make each hip* call an inline wrapper over the CUDA runtime or
# driver, so the plugin links those (the runtime statically, as the CUDA
# plugin does, its symbols kept out of the exports), and NVRTC, which hiprtc
# wraps there (cuda_rtc.c's XC_RTC_LINKED: nothing opened at run time;
# kernels compile to PTX). The device code
# (cuda_rng.cu, cuda_ops.cu, cuda_fft_scale.cu) is compiled by nvcc from the
# same sources, also with XC_VENDOR_HIP. HIP's headers come from
# XDEV_HIP_INCLUDE_DIR: Debian's 5.2.3 need tests/gpu/hip_headers.sh's
# copy to compile against CUDA 13.
#
# ROCm's libraries have no NVIDIA-platform build here (hipBLAS, hipFFT,
# roctx, RCCL; rocPRIM has none at all): the blas, fft, trace and comm
# tables are left out, as in CI's AMD build, and their calls answer
# XDEV_ERROR_NOT_SUPPORTED naming hip (conformance.skip lists those suites).
# rocm-smi (hip_smi.c) is opened at run time and is absent on an NVIDIA
# machine: the process and utilisation slots say so.
xdev_add_backend(hip SOURCES ${XDEV_HIP_SOURCES})
target_include_directories(xdev-hip PRIVATE ${XC_SRC})
target_include_directories(xdev-hip SYSTEM PRIVATE ${XDEV_HIP_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
target_compile_definitions(xdev-hip PRIVATE XC_VENDOR_HIP=1 __HIP_PLATFORM_NVIDIA__=1)
target_link_libraries(xdev-hip PRIVATE CUDA::cudart_static CUDA::cuda_driver CUDA::nvrtc
  ${CMAKE_DL_LIBS})
target_link_options(xdev-hip PRIVATE -Wl,--exclude-libs,ALL)
message(STATUS "xdev: HIP plugin on the NVIDIA platform: no blas, fft, trace or comm table "
  "(hipBLAS, hipFFT, roctx, RCCL have no NVIDIA-platform build here)")

# Device code: nvcc, the CUDA plugin's architectures (sm_80, sm_90, PTX).
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "75-virtual;80-real;90")
  endif()
  enable_language(CUDA)
  add_library(xdev-hip-kernels OBJECT ${XC_SRC}/cuda_rng.cu ${XC_SRC}/cuda_ops.cu
    ${XC_SRC}/cuda_fft_scale.cu)
  set_target_properties(xdev-hip-kernels PROPERTIES COMPILE_OPTIONS "" CUDA_STANDARD 17
    POSITION_INDEPENDENT_CODE ON CUDA_VISIBILITY_PRESET hidden)
  target_compile_definitions(xdev-hip-kernels PRIVATE XC_VENDOR_HIP=1 __HIP_PLATFORM_NVIDIA__=1)
  target_compile_options(xdev-hip-kernels PRIVATE $<$<BOOL:${XDEV_WERROR}>:-Werror=all-warnings>
    -Xcompiler=-Wall,-Wextra,-Wno-missing-field-initializers,-fno-exceptions,-fno-threadsafe-statics)
  target_include_directories(xdev-hip-kernels PRIVATE ${PROJECT_SOURCE_DIR}/include ${XC_SRC})
  target_include_directories(xdev-hip-kernels SYSTEM PRIVATE ${XDEV_HIP_INCLUDE_DIR})
  target_link_libraries(xdev-hip PRIVATE xdev-hip-kernels)
  set_target_properties(xdev-hip PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
    LINKER_LANGUAGE C)
  target_compile_definitions(xdev-hip PRIVATE XC_HAVE_KERNELS=1)
  include(${XC_SRC}/arch_list.cmake)
  xc_define_arch_list(xdev-hip)
else()
  message(STATUS "xdev: no CUDA compiler: the HIP plugin (NVIDIA platform) has no random fills")
endif()

if(XDEV_SANITIZE STREQUAL "")
  target_link_options(xdev-hip PRIVATE -Wl,--no-undefined)
endif()
xdev_target_warnings(xdev-hip)
set_target_properties(xdev-hip PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${XDEV_PLUGIN_OUTPUT_DIR})
add_dependencies(xdev xdev-hip)
install(TARGETS xdev-hip LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/xdev)
