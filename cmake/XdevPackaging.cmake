# SPDX-License-Identifier: Apache-2.0
# XdevPackaging.cmake - what `cpack` makes (docs/building.md#packages), included at
# the end of the top-level CMakeLists.txt:
#
#   Debian packages, one per component, as distributions ship a library's plugins:
#     xdev        libxdev, its headers, the tools, the CMake package, xdev.pc, docs
#     xdev-cuda   lib/xdev/libxdev-cuda.so      (where the CUDA plugin was built)
#     xdev-hip    lib/xdev/libxdev-hip.so       (where the HIP plugin was built)
#     xdev-mpi    lib/xdev/libxdevcomm-mpi.so   (where the MPI transport was built)
#   so a machine without a GPU installs xdev alone and pulls in no CUDA, ROCm or MPI
#   library (each plugin package depends on xdev of the same version); and one
#   tarball of everything (xdev-<version>-Linux.tar.gz).
#
# The packages install under CMAKE_INSTALL_PREFIX, the prefix libxdev was built for
# (it looks for plugins and, for run-time compilation, its headers there): configure
# with -DCMAKE_INSTALL_PREFIX=/usr for a distribution's layout. Dependencies: xdev's and
# the hip and mpi packages' come from dpkg-shlibdeps where it is installed (Debian's
# libraries: OpenBLAS, FFTW, libamdhip64, Open MPI); the CUDA plugin's cuBLAS and cuFFT
# are usually installed outside dpkg (NVIDIA's installer), so its package names only
# xdev and its description the libraries it needs.

set(_xdev_components xdev)
foreach(comp cuda hip)
  if(TARGET xdev-${comp})
    list(APPEND _xdev_components ${comp})
  endif()
endforeach()
if(TARGET xdevcomm-mpi)
  list(APPEND _xdev_components mpi)
endif()

set(CPACK_PACKAGE_NAME xdev)
set(CPACK_PACKAGE_VENDOR "xdev")
set(CPACK_PACKAGE_CONTACT "xdev maintainers <xdev@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Portable multi-backend device runtime (CUDA, HIP, CPU)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_COMPONENTS_ALL ${_xdev_components})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF) # one tarball with everything
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

find_program(XDEV_DPKG_SHLIBDEPS dpkg-shlibdeps)
mark_as_advanced(XDEV_DPKG_SHLIBDEPS)
set(_xdev_shlibdeps OFF)
if(XDEV_DPKG_SHLIBDEPS)
  set(_xdev_shlibdeps ON)
endif()

set(CPACK_COMPONENT_XDEV_DISPLAY_NAME "xdev")
set(CPACK_COMPONENT_XDEV_DESCRIPTION
  "libxdev (the core and the CPU backend), headers, xdev-info, xdev-memviz, xdev-kernels, the CMake package, xdev.pc and the documentation")
set(CPACK_DEBIAN_XDEV_PACKAGE_NAME xdev)
set(CPACK_DEBIAN_XDEV_PACKAGE_SHLIBDEPS ${_xdev_shlibdeps})

set(CPACK_COMPONENT_CUDA_DEPENDS xdev)
set(CPACK_COMPONENT_CUDA_DESCRIPTION
  "The CUDA backend plugin (libxdev-cuda.so). Needs the NVIDIA driver (libcuda.so.1) and the CUDA toolkit's cuBLAS and cuFFT libraries of the version it was built with.")
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME xdev-cuda)
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)

set(CPACK_COMPONENT_HIP_DEPENDS xdev)
set(CPACK_COMPONENT_HIP_DESCRIPTION "The HIP backend plugin (libxdev-hip.so) for AMD GPUs")
set(CPACK_DEBIAN_HIP_PACKAGE_NAME xdev-hip)
set(CPACK_DEBIAN_HIP_PACKAGE_SHLIBDEPS ${_xdev_shlibdeps})

set(CPACK_COMPONENT_MPI_DEPENDS xdev)
set(CPACK_COMPONENT_MPI_DESCRIPTION "The MPI transport (libxdevcomm-mpi.so) for CPU ranks across hosts")
set(CPACK_DEBIAN_MPI_PACKAGE_NAME xdev-mpi)
set(CPACK_DEBIAN_MPI_PACKAGE_SHLIBDEPS ${_xdev_shlibdeps})

include(CPack)
unset(_xdev_components)
unset(_xdev_shlibdeps)
