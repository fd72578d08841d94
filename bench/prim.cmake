# SPDX-License-Identifier: Apache-2.0
# Parallel-primitives benchmark (included from bench/CMakeLists.txt; run by
# tests/gpu/run.sh's bench-prim step, or by hand):
#   build/bench/prim_bench --device cuda:0   every primitive (reduce, scan, sorts, segmented
#                                           reduce and sort, histogram, selects, unique, rle;
#                                           --prims LIST for some), 2^24 .. 2^28: xdev vs CUB
#                                           called directly (the f32 sums also xdev
#                                           deterministic), outputs checked
#                                           (bench/prim_bench_gpu.c)
#   build/bench/prim_bench --device cpu:0    reduce and scan bytes/s vs the same run's copy;
#                                           sort of 2^26 u32 vs __gnu_parallel::sort
#                                           (--dtype f32|f64|i32|i64, --exclusive 1: the
#                                           other sums issue 44 names)
# The anchors are sides of the same program (bench/prim_anchor.h): the CUB one
# (bench/gpu/prim_cub_anchor.cu) where the CUDA plugin and nvcc are, the
# __gnu_parallel::sort one (bench/prim_sort_anchor.cpp) where C++ and OpenMP
# are; a side not built makes the program print ANCHOR MISSING and exit 3.
add_executable(prim_bench prim_bench.c prim_bench_gpu.c)
target_link_libraries(prim_bench PRIVATE xdev::xdev)
xdev_target_warnings(prim_bench)

# OpenMP for C++ before CUDA is enabled in this directory: once it is, CMake
# 4's FindOpenMP try_compiles CUDA too and fails on an empty CUDA_ARCHITECTURES
# (the GPU machine's CMake 4.4 refused to configure).
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  find_package(OpenMP COMPONENTS CXX QUIET)
endif()

if(TARGET xdev-cuda AND CMAKE_CUDA_COMPILER)
  enable_language(CUDA)
  add_library(prim_cub_anchor OBJECT gpu/prim_cub_anchor.cu)
  # The plugin's architectures and nvcc flags (backends/cuda/CMakeLists.txt).
  get_target_property(prim_archs xdev-cuda CUDA_ARCHITECTURES)
  set_target_properties(prim_cub_anchor PROPERTIES CUDA_STANDARD 17
    CUDA_ARCHITECTURES "${prim_archs}" COMPILE_OPTIONS "")
  target_compile_options(prim_cub_anchor PRIVATE $<$<BOOL:${XDEV_WERROR}>:-Werror=all-warnings>
    -Xcompiler=-Wall,-Wextra)
  target_include_directories(prim_cub_anchor PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(prim_bench PRIVATE prim_cub_anchor CUDA::cudart_static)
  target_compile_definitions(prim_bench PRIVATE PRIM_BENCH_CUB=1)
  set_target_properties(prim_bench PROPERTIES LINKER_LANGUAGE CXX
    CUDA_ARCHITECTURES "${prim_archs}")
else()
  message(STATUS "xdev: prim_bench has no CUB side (no CUDA plugin or nvcc)")
endif()

if(CMAKE_CXX_COMPILER AND OpenMP_CXX_FOUND)
  add_library(prim_sort_anchor OBJECT prim_sort_anchor.cpp)
  set_target_properties(prim_sort_anchor PROPERTIES CXX_STANDARD 17 COMPILE_OPTIONS "")
  target_compile_options(prim_sort_anchor PRIVATE -O3 -Wall -Wextra
    $<$<BOOL:${XDEV_WERROR}>:-Werror>)
  target_link_libraries(prim_sort_anchor PRIVATE OpenMP::OpenMP_CXX)
  target_link_libraries(prim_bench PRIVATE prim_sort_anchor OpenMP::OpenMP_CXX)
  target_compile_definitions(prim_bench PRIVATE PRIM_BENCH_GNU_SORT=1)
  set_target_properties(prim_bench PROPERTIES LINKER_LANGUAGE CXX)
else()
  message(STATUS "xdev: prim_bench has no __gnu_parallel::sort side (no C++ compiler or OpenMP)")
endif()
