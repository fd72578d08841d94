# SPDX-License-Identifier: Apache-2.0
# The CPU backend's math libraries: OpenBLAS (CBLAS) for BLAS and FFTW3
# (double and float) for FFT, found through pkg-config (Debian:
# libopenblas-dev, libfftw3-dev; cmake/install-deps.sh installs them) and
# linked PRIVATE into libxdev. Without one of them the CPU backend reports
# XDEV_ERROR_NOT_SUPPORTED for that family instead of failing the build.
# Included from the top-level CMakeLists.txt after the xdev target exists.
find_package(PkgConfig REQUIRED)
include(CheckSymbolExists)

pkg_check_modules(XDEV_OPENBLAS openblas)
if(XDEV_OPENBLAS_FOUND)
  target_include_directories(xdev PRIVATE ${XDEV_OPENBLAS_INCLUDE_DIRS})
  target_link_libraries(xdev PRIVATE ${XDEV_OPENBLAS_LINK_LIBRARIES})
  target_compile_definitions(xdev PRIVATE XDEV_HAVE_OPENBLAS=1)
  # bf16 GEMM uses cblas_sbgemm when OpenBLAS was built with BUILD_BFLOAT16.
  set(CMAKE_REQUIRED_INCLUDES ${XDEV_OPENBLAS_INCLUDE_DIRS})
  set(CMAKE_REQUIRED_LIBRARIES ${XDEV_OPENBLAS_LINK_LIBRARIES})
  check_symbol_exists(cblas_sbgemm cblas.h XDEV_HAVE_CBLAS_SBGEMM)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_LIBRARIES)
  if(XDEV_HAVE_CBLAS_SBGEMM)
    target_compile_definitions(xdev PRIVATE XDEV_HAVE_CBLAS_SBGEMM=1)
  endif()
  string(APPEND XDEV_PC_LIBS_PRIVATE " ${XDEV_OPENBLAS_LDFLAGS}")
else()
  message(WARNING "OpenBLAS not found (pkg-config openblas): the cpu backend will have no BLAS; "
    "install libopenblas-dev")
endif()

pkg_check_modules(XDEV_FFTW fftw3 fftw3f)
if(XDEV_FFTW_FOUND)
  target_include_directories(xdev PRIVATE ${XDEV_FFTW_INCLUDE_DIRS})
  target_link_libraries(xdev PRIVATE ${XDEV_FFTW_LINK_LIBRARIES})
  target_compile_definitions(xdev PRIVATE XDEV_HAVE_FFTW=1)
  string(APPEND XDEV_PC_LIBS_PRIVATE " ${XDEV_FFTW_LDFLAGS}")
  # FFTW's threads (libfftw3-dev ships them): large transforms run their
  # parallel loops on the CPU device's worker pool (backends/cpu/cpu_fft.c).
  find_library(XDEV_FFTW_THREADS fftw3_threads HINTS ${XDEV_FFTW_LIBRARY_DIRS})
  find_library(XDEV_FFTWF_THREADS fftw3f_threads HINTS ${XDEV_FFTW_LIBRARY_DIRS})
  if(XDEV_FFTW_THREADS AND XDEV_FFTWF_THREADS)
    target_link_libraries(xdev PRIVATE ${XDEV_FFTW_THREADS} ${XDEV_FFTWF_THREADS})
    target_compile_definitions(xdev PRIVATE XDEV_HAVE_FFTW_THREADS=1)
    string(APPEND XDEV_PC_LIBS_PRIVATE " -lfftw3_threads -lfftw3f_threads")
  endif()
else()
  message(WARNING "FFTW3 not found (pkg-config fftw3 fftw3f): the cpu backend will have no FFT; "
    "install libfftw3-dev")
endif()
string(REPLACE ";" " " XDEV_PC_LIBS_PRIVATE "${XDEV_PC_LIBS_PRIVATE}")

