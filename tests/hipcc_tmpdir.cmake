# SPDX-License-Identifier: Apache-2.0
# tests/hipcc_tmpdir.cmake - every hipcc command of the build runs with a
# TMPDIR of its own under the build tree (ctest hip.hipcc_tmpdir).
#
# hipcc's clang leaves an empty <source>-XXXXXX directory in TMPDIR after each
# compilation, so a build whose hipcc calls used /tmp left thousands there
# (cuda_rng-*, conformance_kernels-*, ...). backends/hip/CMakeLists.txt and
# cmake/xdevKernels.cmake run each hipcc through `cmake -E env TMPDIR=<dir>`
# under the build tree and remove that directory afterwards. This reads the
# generated build rules (Makefiles' build.make, or build.ninja) and fails on
# any command that runs HIPCC without TMPDIR= before it.
#   cmake -DBUILD=<build dir> -DHIPCC=<hipcc path> -P hipcc_tmpdir.cmake
if(NOT BUILD OR NOT HIPCC)
  message(FATAL_ERROR "usage: cmake -DBUILD=<build dir> -DHIPCC=<hipcc> -P hipcc_tmpdir.cmake")
endif()
file(GLOB_RECURSE rules "${BUILD}/build.make" "${BUILD}/build.ninja")
string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" hipcc_re "${HIPCC}")
set(seen 0)
set(bad "")
foreach(f IN LISTS rules)
  file(STRINGS "${f}" lines REGEX "${hipcc_re} ")
  foreach(line IN LISTS lines)
    math(EXPR seen "${seen} + 1")
    string(FIND "${line}" "TMPDIR=" at)
    if(at EQUAL -1)
      string(SUBSTRING "${line}" 0 200 head)
      string(APPEND bad "\n  ${f}: ${head}...")
    endif()
  endforeach()
endforeach()
if(seen EQUAL 0)
  message(FATAL_ERROR "no command runs ${HIPCC} in ${BUILD}'s build rules: nothing was checked")
endif()
if(bad)
  message(FATAL_ERROR "hipcc runs without a TMPDIR of its own (its clang leaves "
    "<source>-XXXXXX in /tmp after every compilation):${bad}")
endif()
message(STATUS "${seen} hipcc command(s), each with a TMPDIR of its own under the build tree")
