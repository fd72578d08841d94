# SPDX-License-Identifier: Apache-2.0
# xdevBackend.cmake - xdev_add_backend(): build a backend plugin for xdev.
#
#   xdev_add_backend(<name> SOURCES <files...>)
#
# makes the module libxdev-<name>.so (target xdev-<name>) from the sources,
# compiled as C11 against xdev's public headers (xdev/backend.h and
# xdev/backend_support.h; the plugin does not link libxdev: the core hands
# it everything through xdev_host_services_t), with XDEV_BACKEND_NAME
# defined to "<name>" and every symbol hidden but the entry point (declare
# it XDEV_API). xdev loads it by name: put its directory on XDEV_PLUGIN_PATH,
# or install it into the xdev/ folder beside libxdev (<libdir>/xdev, where
# xdev's own plugins are), and use XDEV_BACKEND=<name> or "<name>:0".
# Installed with xdev's CMake package (find_package(xdev) includes it) and
# used by xdev's own build for its plugins (backends/cuda, backends/hip) and
# the skeleton in backends/null.
function(xdev_add_backend name)
  cmake_parse_arguments(B "" "" "SOURCES" ${ARGN})
  if(NOT name MATCHES "^[a-z0-9_]+$" OR name STREQUAL "auto")
    message(FATAL_ERROR "xdev_add_backend: '${name}' is not a backend name (1 to 15 of [a-z0-9_], not 'auto')")
  endif()
  string(LENGTH "${name}" len)
  if(len GREATER 15)
    message(FATAL_ERROR "xdev_add_backend: '${name}' is longer than 15 characters")
  endif()
  if(NOT B_SOURCES)
    message(FATAL_ERROR "xdev_add_backend(${name}): no SOURCES")
  endif()
  find_package(Threads REQUIRED)
  add_library(xdev-${name} MODULE ${B_SOURCES})
  target_include_directories(xdev-${name} PRIVATE
    $<TARGET_PROPERTY:xdev::xdev,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(xdev-${name} PRIVATE XDEV_BACKEND_NAME="${name}" _GNU_SOURCE)
  target_link_libraries(xdev-${name} PRIVATE Threads::Threads)
  set_target_properties(xdev-${name} PROPERTIES
    PREFIX "lib" OUTPUT_NAME "xdev-${name}" SUFFIX ".so"
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF C_VISIBILITY_PRESET hidden)
endfunction()
