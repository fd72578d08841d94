# SPDX-License-Identifier: Apache-2.0
# libFuzzer targets for the parsers of untrusted text, linked in directly
# (they are internal): XDEV_ALLOC_CONF (core/alloc/alloc_config.c), the
# XDEV_* environment parsers (core/base/env.c) and device names
# (core/runtime/device_name.c). clang only (-DXDEV_BUILD_FUZZ=ON); included
# from tests/CMakeLists.txt. ctest runs each briefly from its seed corpus
# (fuzz/corpus/<name>/, one input per file, named for what it holds); the
# docs/building.md says how to run them longer.
option(XDEV_BUILD_FUZZ "Build the libFuzzer targets (clang)" OFF)
if(NOT XDEV_BUILD_FUZZ)
  return()
endif()

# xdev_add_fuzzer(<name> <seconds> <max_len> <sources>...)
function(xdev_add_fuzzer name seconds max_len)
  add_executable(fuzz_${name} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${name}.c ${ARGN})
  target_include_directories(fuzz_${name} PRIVATE ${PROJECT_SOURCE_DIR}/core
    ${PROJECT_SOURCE_DIR}/include ${XDEV_GENERATED_INCLUDE_DIR})
  target_compile_definitions(fuzz_${name} PRIVATE _GNU_SOURCE)
  target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  xdev_target_warnings(fuzz_${name})
  # A copy: libFuzzer adds what it finds to the first corpus folder.
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-${name})
  file(COPY ${CMAKE_CURRENT_LIST_DIR}/corpus/${name}/ DESTINATION ${corpus})
  add_test(NAME fuzz.${name}
    COMMAND fuzz_${name} -max_total_time=${seconds} -max_len=${max_len} -timeout=5 ${corpus})
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 120)
endfunction()

set(core ${PROJECT_SOURCE_DIR}/core)
xdev_add_fuzzer(alloc_conf 20 256 ${core}/alloc/alloc_config.c)
xdev_add_fuzzer(env 10 128 ${core}/base/env.c ${core}/base/error.c ${core}/base/thread_heap.c)
# Device names come from the registered backends (backend_table.c); the
# fuzzer registers cpu, cuda and hip itself, as libxdev does at load.
xdev_add_fuzzer(device_name 10 128 ${core}/runtime/device_name.c
  ${core}/runtime/backend_table.c ${core}/base/error.c ${core}/base/thread_heap.c)
