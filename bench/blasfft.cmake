# SPDX-License-Identifier: Apache-2.0
# BLAS and FFT benchmarks (included from bench/CMakeLists.txt), run by hand:
#   build/bench/blas_bench   square GEMM GFLOP/s per dtype, xdev vs direct OpenBLAS
#   build/bench/fft_bench    FFT GFLOP/s per size, xdev vs direct FFTW; plan-cache hit vs create
# The direct columns link OpenBLAS / FFTW (found by cmake/XdevCpuMath.cmake).
add_executable(blas_bench blas_bench.c)
target_link_libraries(blas_bench PRIVATE xdev::xdev)
if(XDEV_OPENBLAS_FOUND)
  target_include_directories(blas_bench PRIVATE ${XDEV_OPENBLAS_INCLUDE_DIRS})
  target_link_libraries(blas_bench PRIVATE ${XDEV_OPENBLAS_LINK_LIBRARIES})
  target_compile_definitions(blas_bench PRIVATE XDEV_BENCH_OPENBLAS=1)
endif()
xdev_target_warnings(blas_bench)

add_executable(fft_bench fft_bench.c)
target_link_libraries(fft_bench PRIVATE xdev::xdev m)
if(XDEV_FFTW_FOUND)
  target_include_directories(fft_bench PRIVATE ${XDEV_FFTW_INCLUDE_DIRS})
  target_link_libraries(fft_bench PRIVATE ${XDEV_FFTW_LINK_LIBRARIES})
  target_compile_definitions(fft_bench PRIVATE XDEV_BENCH_FFTW=1)
endif()
xdev_target_warnings(fft_bench)
