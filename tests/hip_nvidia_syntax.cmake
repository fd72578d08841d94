# SPDX-License-Identifier: Apache-2.0
# hip_nvidia_syntax.cmake - the HIP plugin's C sources compile for HIP's NVIDIA
# platform (-D__HIP_PLATFORM_NVIDIA__, what -DXDEV_HIP_PLATFORM_NVIDIA=ON
# builds in full for the GPU machine), checked in the AMD build wherever
# HIP's and CUDA's headers are both present: a shared-source change that
# breaks that platform (`enum cudaX`, which becomes `enum hipX` and names no
# type there; a CUDA name CUDA's headers define as a macro mapped to HIP's)
# fails here, not first on the GPU. A syntax check with the plugin's
# warnings as errors: no objects, no nvcc (the device code is not checked).
#
#   cmake -DTOP=<source dir> -DWORK=<scratch dir> -DCC=<C compiler>
#         "-DSOURCES=<a.c;b.c>" "-DINCLUDES=<dirs>" -DCUDA_INCLUDE=<dir> -P hip_nvidia_syntax.cmake
execute_process(COMMAND bash ${TOP}/tests/gpu/hip_headers.sh prepare ${WORK}
  OUTPUT_VARIABLE hip_inc ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tests/gpu/hip_headers.sh prepare failed: ${err}")
endif()
set(flags -std=c11 -fsyntax-only -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wno-unused-parameter -Werror -D_GNU_SOURCE -DXC_VENDOR_HIP=1 -D__HIP_PLATFORM_NVIDIA__=1
  -DXDEV_BACKEND_NAME="hip")
foreach(dir IN LISTS INCLUDES)
  list(APPEND flags -I${dir})
endforeach()
list(APPEND flags -isystem ${hip_inc} -isystem ${CUDA_INCLUDE})
set(failed 0)
foreach(src IN LISTS SOURCES)
  execute_process(COMMAND ${CC} ${flags} ${src} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    math(EXPR failed "${failed} + 1")
    message(SEND_ERROR "${src} does not compile for HIP's NVIDIA platform:\n${err}")
  endif()
endforeach()
list(LENGTH SOURCES n)
if(failed GREATER 0)
  message(FATAL_ERROR "${failed} of ${n} HIP plugin sources do not compile for HIP's NVIDIA platform")
endif()
message(STATUS "hip_nvidia_syntax: ${n} HIP plugin sources compile for HIP's NVIDIA platform (${hip_inc})")
file(REMOVE_RECURSE ${WORK})
