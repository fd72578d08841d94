# SPDX-License-Identifier: Apache-2.0
# The variables cmake/xdev.pc.in needs beyond XDEV_PC_LIBS_PRIVATE (which
# cmake/XdevCpuMath.cmake collects). Included by the top-level CMakeLists.txt
# just before it configures the template.
#
# xdev.pc stays relocatable - its prefix is found from its own location
# (${pcfiledir}), so `cmake --install --prefix <anywhere>` and a moved tree
# both work - but every path is written normalised: file(RELATIVE_PATH) gives
# "../../" with a trailing slash, which used to render as
# ".../lib/pkgconfig/../..//lib".
#
#   XDEV_PC_PREFIX      ${pcfiledir}/<the way up to the install prefix>
#   XDEV_PC_LIBDIR      ${prefix}/<libdir>, or the absolute libdir when it lies
#   XDEV_PC_INCLUDEDIR  outside the prefix (same for includedir)
#   XDEV_PC_BINDIR      the same for bindir (the xdev_kernels variable: xdev-kernels' path)

# "<prefix-relative path>" -> "${prefix}/<path>" without doubled or trailing
# slashes; an absolute path outside the prefix stays absolute.
function(xdev_pc_dir out full)
  cmake_path(NORMAL_PATH full OUTPUT_VARIABLE full)
  set(prefix "${CMAKE_INSTALL_PREFIX}")
  cmake_path(NORMAL_PATH prefix OUTPUT_VARIABLE prefix)
  cmake_path(IS_PREFIX prefix "${full}" NORMALIZE inside)
  if(inside)
    cmake_path(RELATIVE_PATH full BASE_DIRECTORY "${prefix}" OUTPUT_VARIABLE rel)
    string(REGEX REPLACE "/+$" "" rel "${rel}")
    set(${out} "\${prefix}/${rel}" PARENT_SCOPE)
  else()
    string(REGEX REPLACE "/+$" "" full "${full}")
    set(${out} "${full}" PARENT_SCOPE)
  endif()
endfunction()

set(_xdev_pcdir "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig")
cmake_path(NORMAL_PATH _xdev_pcdir)
set(_xdev_prefix "${CMAKE_INSTALL_PREFIX}")
cmake_path(NORMAL_PATH _xdev_prefix)
cmake_path(RELATIVE_PATH _xdev_prefix BASE_DIRECTORY "${_xdev_pcdir}" OUTPUT_VARIABLE _xdev_up)
string(REGEX REPLACE "/+$" "" _xdev_up "${_xdev_up}")
if(_xdev_up STREQUAL "" OR _xdev_up STREQUAL ".")
  set(XDEV_PC_PREFIX "\${pcfiledir}")
else()
  set(XDEV_PC_PREFIX "\${pcfiledir}/${_xdev_up}")
endif()
xdev_pc_dir(XDEV_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
xdev_pc_dir(XDEV_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
xdev_pc_dir(XDEV_PC_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}")

# The math libraries' -L flags come from their own .pc files, sometimes with
# a trailing slash ("-L/usr/lib/x86_64-linux-gnu/openblas-pthread/").
string(REGEX REPLACE "([^ ])/+( |$)" "\\1\\2" XDEV_PC_LIBS_PRIVATE "${XDEV_PC_LIBS_PRIVATE}")
unset(_xdev_pcdir)
unset(_xdev_prefix)
unset(_xdev_up)
